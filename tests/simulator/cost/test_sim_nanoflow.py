"""NanoFlow's intra-device overlap: theory.nanoflow's flow-shop makespan against an event-by-event run of the
same schedule and its closed form for identical nano-batches, and the DES's decode passes against
nano-batches priced op by op here (simulator.cost.nanoflow)."""
from __future__ import annotations


import numpy as np
import pytest

import simulator
from models.opgraph import attention_ops, dense_ops
from models.ops import COLLECTIVE_KINDS
from models.step import StepShape
from profiles.hardware import get_hardware
from sim_helpers import assert_bulk_equals_step, replica_kind, scenario
from simulator.cost.nanoflow import nano_sizes
from simulator.errors import ScenarioError
from theory.nanoflow import flow_shop_makespan, identical_makespan, simulate_schedule

DATA = dict(cluster={"hardware": "a100-80gb", "model": "llama-2-70b", "parallelism": {"tp": 8},
                     "latency": {"nano_batches": 2}},
            workload={"arrival": {"process": "poisson", "qps": 1000.0},
                      "prompt_tokens": {"kind": "fixed", "value": 256},
                      "output_tokens": {"kind": "fixed", "value": 64}, "num_requests": 256},
            scheduler={"kind": "vllm", "max_batch_size": 512, "max_batched_tokens": 8192})


def test_makespan_recursion_is_the_event_run_and_within_its_bounds():
    rng = np.random.default_rng(17)
    for _ in range(300):
        t = rng.exponential(1.0, size=(int(rng.integers(1, 7)), 3))
        m = flow_shop_makespan(t)
        assert m == pytest.approx(simulate_schedule(t), rel=1e-12)
        assert t.sum(axis=0).max() - 1e-12 <= m <= t.sum() + 1e-12


@pytest.mark.parametrize("k", [1, 2, 3, 8])
def test_identical_nano_batches_follow_the_closed_form(k):
    t = np.array([0.7, 0.2, 0.4])
    assert flow_shop_makespan(np.tile(t, (k, 1))) == pytest.approx(identical_makespan(t, k), rel=1e-12)
    # k nano-batches of 1/k of the work: the ideal max_r T_r + the one nano-batch that cannot overlap
    assert identical_makespan(t / k, k) == pytest.approx(t.max() + (t.sum() - t.max()) / k, rel=1e-12)


@pytest.mark.parametrize("seqs,k", [(1, 2), (5, 2), (7, 3), (64, 4), (3, 8)])
def test_nano_sizes_split_the_batch_evenly(seqs, k):
    sizes = nano_sizes(seqs, k)
    assert sum(sizes) == seqs and len(sizes) == min(seqs, k) and max(sizes) - min(sizes) <= 1


def _target(nano_batches: int):
    data = scenario(**{**DATA, "cluster": {**DATA["cluster"], "latency": {"nano_batches": nano_batches}}})
    return replica_kind(data).cost.target


@pytest.mark.parametrize("seqs,ctx_per_seq", [(8, 300), (256, 700), (601, 1500)])
def test_decode_pass_is_the_makespan_of_nano_batches_priced_op_by_op(seqs, ctx_per_seq):
    serial, nano = _target(1), _target(2)
    hw = get_hardware("a100-80gb")
    peak, bw = hw.peak_flops["bf16"], hw.hbm_bandwidth_bytes_per_s
    stages, flops, nbytes = [], 0.0, 0.0
    for n in nano_sizes(seqs, 2):
        shape = StepShape(decode_seqs=n, query_tokens_per_seq=1,
                          decode_context_tokens=round(seqs * ctx_per_seq * n / seqs))
        row = np.zeros(3)
        ops = dense_ops(nano.spec, n, n, nano.parallelism, "bf16") + \
            attention_ops(nano.spec, shape, nano.parallelism, "bf16")
        for op in ops:
            r = 2 if op.kind in COLLECTIVE_KINDS else (0 if op.flops * bw >= op.bytes * peak else 1)
            row[r] += op.count * nano.latency.op_seconds(op)
            flops += op.count * op.flops
            nbytes += op.count * op.bytes
        stages.append(row)
    got = nano.exact_decode(seqs, 1, seqs * ctx_per_seq)
    assert got[0] == pytest.approx(flow_shop_makespan(np.array(stages)), rel=1e-12)
    assert got[1] == pytest.approx(flops, rel=1e-12) and got[2] == pytest.approx(nbytes, rel=1e-12)
    plain = serial.exact_decode(seqs, 1, seqs * ctx_per_seq)
    assert got[2] >= plain[2]                   # each nano-batch re-reads the weights
    assert got[0] <= np.array(stages).sum() + 1e-15  # never slower than running the nano-batches serially


def test_one_nano_batch_is_the_plain_pass_and_mixed_steps_stay_serial():
    serial, nano1, nano2 = _target(1), _target(1), _target(2)
    assert type(nano1) is type(serial)
    ctx = np.array([64 * 900])
    assert (nano2.decode_attention(64, 1, ctx) == serial.decode_attention(64, 1, ctx)).all()
    assert (nano2.exact_decode(1, 1, 900) == serial.exact_decode(1, 1, 900)).all()


def test_overlap_pays_at_large_batch_only():
    serial, nano = _target(1), _target(2)
    big = nano.exact_decode(512, 1, 512 * 1000)[0] / serial.exact_decode(512, 1, 512 * 1000)[0]
    small = nano.exact_decode(4, 1, 4 * 1000)[0] / serial.exact_decode(4, 1, 4 * 1000)[0]
    assert big < 0.95 and small > 1.0  # small nano-batches re-read the weights for nothing to overlap


def test_bulk_equals_step_mode_and_nano_batches_are_checked():
    data = scenario(**DATA)
    assert_bulk_equals_step(data)
    bad = scenario(**{**DATA, "cluster": {**DATA["cluster"], "latency": {"nano_batches": 2}}},
                   drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                   speculation={"kind": "chain", "alignment": "realign"})
    with pytest.raises(ScenarioError, match="nano_batches"):
        simulator.run(bad)


@pytest.mark.parametrize("times", [[[float("nan"), 1.0]], [[-1.0, 2.0]]])
def test_makespans_refuse_negative_and_nan_stage_times(times):
    """flow_shop_makespan let NaN through (a nan makespan); identical_makespan checked nothing ([-1, 2] over 3
    nano-batches gave 5 s)."""
    with pytest.raises(ValueError, match="non-negative seconds"):
        flow_shop_makespan(times)
    with pytest.raises(ValueError, match="non-negative seconds"):
        identical_makespan(times[0], 3)


@pytest.mark.parametrize("hardware,dtype", [("h100-sxm", "fp8_block"), ("b200", "nvfp4"), ("h100-sxm", "int4")])
def test_ops_are_split_by_the_weights_own_tensor_core_rate(hardware, dtype):
    """The compute-or-memory split of a nano-batch's ops uses the GPU's rate for the weights' dtype, as every
    other pricer does (HardwareSpec.matmul_flops): fp8_block GEMMs were judged at the bf16 rate (half the fp8
    one), nvfp4 ones at a quarter of the fp4 one, so GEMMs between the two ridges were called compute-bound."""
    data = scenario(cluster={**DATA["cluster"], "hardware": hardware, "model": "llama-3-8b", "dtype": dtype,
                             "parallelism": {"tp": 1}},
                    workload=DATA["workload"], scheduler=DATA["scheduler"])
    nano = replica_kind(data).cost.target
    assert nano.peak_flops_per_s == get_hardware(hardware).matmul_flops(dtype)
