"""Expert parallelism in the DES (simulator.cost.moe, build.py's EP memory model): the step cost equals
the op-graph pricing with its all-to-alls re-priced on the topology, EP=1 has no all-to-all, skew and
pre-scheduling move the cost the way the formulas say, verification touches more experts, bad input."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from models import get_model
from models.moe_routing import (ExpertPlacement, UniformRouting, expected_ep_load, verification_distinct_experts,
                                weight_bytes_per_gpu)
from models.opgraph import dense_ops
from models.ops import ALLTOALL
from models.step import Parallelism, chunk_attention_pairs
from profiles.hardware import get_hardware
from profiles.roofline import RooflineLatencyModel
from simulator.api import run
from simulator.cli import main
from simulator.errors import ScenarioError
from simulator.cost.moe import make_ep_forward_cost
from simulator.cost.collectives import Topology, ep_alltoall_s
from simulator.config.scenario import MoeConfig
from simulator.cost.step_cost import ForwardCost, _price
from sim_helpers import scenario, vllm_requested_bytes

SPEC = get_model("qwen3-30b-a3b")
H100 = get_hardware("h100-sxm")
LAT = RooflineLatencyModel("h100-sxm")
A_BYTES = 2.0   # bf16 activations


def ep_cost(ep: int, tp: int = 1, **moe):
    return make_ep_forward_cost(SPEC, Parallelism(tp, 1, ep), LAT, "bf16", H100, MoeConfig(**moe), base_dir=None)


def moe_scenario(**cluster) -> dict:
    return scenario(cluster={"hardware": "h100-sxm", "model": "qwen3-30b-a3b", "dtype": "bf16", **cluster},
                    workload={"num_requests": 150, "arrival": {"qps": 30.0}})


@pytest.mark.parametrize("ep,tp,tokens", [(8, 1, 64), (8, 2, 300), (16, 1, 1000)])
def test_ep_step_cost_equals_the_op_graph_with_alltoall_on_the_topology(ep, tp, tokens):
    """Uniform routing, no pre-scheduling: the op graph's own EP ops (uniform expectations) priced by the
    latency model, except dispatch/combine, which take ep_alltoall_s of the expected send matrix."""
    cost = ep_cost(ep, tp)
    par = Parallelism(tp, 1, ep)
    ops = dense_ops(SPEC, tokens, tokens, par, "bf16")
    a2a_ops = [op for op in ops if op.name in ("moe_dispatch", "moe_combine")]
    assert len(a2a_ops) == 2 and all(op.count == SPEC.num_moe_layers for op in a2a_ops)
    unit = expected_ep_load(UniformRouting(SPEC.num_experts), ExpertPlacement.contiguous(SPEC.num_experts, ep), 1,
                            SPEC.experts_per_token).send_tokens
    topo = Topology.from_hardware(H100, num_nodes=math.ceil(ep / 8))
    a2a = 2 * SPEC.num_moe_layers * ep_alltoall_s(topo, unit * tokens / ep, SPEC.hidden_size * A_BYTES)
    expected = _price(LAT, [op for op in ops if op not in a2a_ops]) + np.array(
        [a2a, 0.0, sum(op.count * op.bytes for op in a2a_ops)])
    np.testing.assert_allclose(cost.dense(tokens, tokens), expected, rtol=1e-9)
    assert cost.alltoall_seconds(tokens) == pytest.approx(a2a, rel=1e-12)
    if ep == 16:   # two nodes: the NICs carry the cross-node half
        assert a2a > 3 * 2 * SPEC.num_moe_layers * ep_alltoall_s(Topology.from_hardware(H100, 2),
                                                                 unit[:8, :8] * tokens / ep, SPEC.hidden_size * A_BYTES)


def test_des_steps_are_priced_by_the_ep_cost_and_ep1_has_no_alltoall():
    res = run(moe_scenario(parallelism={"tp": 1, "ep": 8}), step_mode="step")
    cost = res.built.replicas[0].cost
    steps = res.steps
    pre = steps[(steps.prefill_seqs == 1) & (steps.decode_seqs == 0)].iloc[0]
    tokens = int(pre.prefill_tokens)
    # a one-prompt prefill step: the EP dense part (op graph + topology all-to-all) + exact attention
    expected = cost.target.dense(tokens, 1)[0] + cost.target.prefill_attention(
        tokens, 1, chunk_attention_pairs(tokens, 0))[0]
    assert pre.verify_s == pytest.approx(expected, rel=1e-12)   # the engine's per-step time is engine_s
    assert pre.duration_s == pytest.approx(expected + pre.engine_s, rel=1e-12) and pre.engine_s > 0
    assert pre.alltoall_s == pytest.approx(cost.target.alltoall_seconds(tokens), rel=1e-12)
    assert 0 < pre.alltoall_s < pre.duration_s
    dec = steps[steps.prefill_seqs == 0]
    assert (dec.alltoall_s > 0).all() and 0 < res.summary["alltoall_time_fraction"] < 1
    plain = run(moe_scenario(parallelism={"tp": 8}))
    assert "alltoall_s" not in plain.steps and "alltoall_time_fraction" not in plain.summary
    ops = dense_ops(SPEC, 256, 256, Parallelism(8, 1, 1), "bf16")
    assert not [op for op in ops if op.kind == ALLTOALL and op.name.startswith("moe")]
    assert isinstance(plain.built.replicas[0].cost.target, ForwardCost)
    assert not hasattr(plain.built.replicas[0].cost.target, "alltoall_seconds")


def test_prescheduling_scales_the_alltoall_volume_by_one_minus_hit_rate():
    base, pre = ep_cost(16), ep_cost(16, prescheduling_hit_rate=0.72)
    topo = Topology.from_hardware(H100, 2)
    latency = 2 * SPEC.num_moe_layers * topo.scaleout_latency_s   # latency does not shrink
    for t in (32, 512):
        assert pre.alltoall_seconds(t) - latency == pytest.approx((1 - 0.72) * (base.alltoall_seconds(t) - latency),
                                                                  rel=1e-9)
    assert pre.dense(512, 512)[0] < base.dense(512, 512)[0]


def test_skewed_routing_makes_the_straggler_slower():
    uni, zipf = ep_cost(8), ep_cost(8, routing="zipf", zipf_exponent=1.2)
    rows_u, _ = uni.load.straggler(512.0)
    rows_z, _ = zipf.load.straggler(512.0)
    assert rows_u == pytest.approx(512 * SPEC.experts_per_token / 8)
    assert rows_z > 1.5 * rows_u
    assert zipf.dense(512, 512)[0] > uni.dense(512, 512)[0]
    assert zipf.alltoall_seconds(512) >= uni.alltoall_seconds(512) * 0.5   # dedup'd traffic stays same order


def test_verifying_gamma_plus_one_tokens_touches_more_experts():
    cost = ep_cost(8)
    seqs = 16
    pi = UniformRouting(SPEC.num_experts).inclusion_probabilities(SPEC.experts_per_token)
    touched = {}
    for q in (1, 4):
        _, touched[q] = cost.load.straggler(float(seqs * q))
        assert touched[q] * 8 == pytest.approx(verification_distinct_experts(pi, seqs, q), rel=1e-9)
    assert touched[4] > touched[1]
    gemm = lambda t: sum(op.count * LAT.op_seconds(op) for op in cost.ep_ops(t) if op.kind != ALLTOALL)  # noqa: E731
    assert gemm(seqs * 4) > gemm(seqs)


def test_ep_memory_model_shards_experts_and_pools_the_attention_groups():
    res = run(moe_scenario(parallelism={"tp": 2, "ep": 8}))
    par = Parallelism(2, 1, 8)
    free = vllm_requested_bytes(H100, SPEC, par, "bf16", 0.9) - weight_bytes_per_gpu(SPEC, par, "bf16")
    assert res.summary["kv_tokens_per_replica"] == int(free // SPEC.kv_bytes_per_token_per_gpu(par, "bf16")) * 4
    assert res.summary["gpus_per_replica"] == 8


def test_ep_runs_are_identical_in_step_and_bulk_modes_with_speculation():
    data = moe_scenario(parallelism={"tp": 1, "ep": 16}, moe={"routing": "zipf", "prescheduling_hit_rate": 0.5})
    data["drafter"] = {"kind": "draft_model", "model": "qwen2.5-coder-0.5b", "gamma": 3}
    data["acceptance"] = {"kind": "constant", "alpha": 0.7}
    a, b = run(data, step_mode="bulk"), run(data, step_mode="step")
    pd.testing.assert_frame_equal(a.requests, b.requests)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    assert (a.steps[a.steps.decode_seqs > 0].query_tokens_per_seq == 4).all()
    assert a.summary["requests_finished"] == 150


@pytest.mark.parametrize("cluster,field", [
    ({"parallelism": {"tp": 1, "ep": 3}}, "cluster.parallelism.ep"),          # 3 does not divide 128 experts
    ({"parallelism": {"tp": 2, "ep": 4}, "model": "llama-3-8b"}, "cluster.parallelism.ep"),   # dense model
    ({"parallelism": {"tp": 4, "ep": 6}}, "cluster.parallelism.ep"),          # not a multiple of tp
    ({"parallelism": {"ep": 8}, "moe": {"routing": "trace"}}, "cluster.moe"),
    ({"parallelism": {"ep": 8}, "moe": {"routing": "trace", "routing_trace": "missing.npy"}},
     "cluster.moe.routing_trace"),
])
def test_bad_ep_input_names_the_field(cluster, field, tmp_path, capsys):
    import yaml
    data = moe_scenario(**cluster)
    with pytest.raises(ScenarioError) as err:
        run(data, base_dir=tmp_path)
    assert str(err.value).startswith(field), str(err.value)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert field in capsys.readouterr().err


def test_moe_section_needs_an_expert_parallel_pool():
    """cluster.moe prices EP's all-to-alls: read by nothing where every pool has ep 1 (a dense model's only
    layout), so refused there, unless it writes only the defaults; one expert-parallel pool is enough."""
    from simulator.config.scenario import parse_scenario
    for cluster in ({"model": "llama-3-8b", "moe": {"routing": "zipf"}}, {"moe": {"prescheduling_hit_rate": 0.5}},
                    {"moe": {"routing": "zipf"}, "disaggregation": {"prefill": {}, "decode": {}}}):
        with pytest.raises(ScenarioError, match="^cluster.moe: .*every pool has ep 1"):
            parse_scenario(moe_scenario(**cluster))
    parse_scenario(scenario(cluster={"moe": {"routing": "uniform", "prescheduling_hit_rate": 0.0}}))   # defaults
    parse_scenario(moe_scenario(moe={"routing": "zipf"}, disaggregation={
        "prefill": {"parallelism": {"ep": 1}}, "decode": {"parallelism": {"ep": 8}}}))


def test_trace_routing_replays_recorded_choices(tmp_path):
    rng = np.random.default_rng(0)
    choices = np.stack([rng.choice(32, SPEC.experts_per_token, replace=False) for _ in range(500)])  # hot: 0..31
    np.save(tmp_path / "routing.npy", choices)
    data = moe_scenario(parallelism={"ep": 8}, moe={"routing": "trace", "routing_trace": "routing.npy"})
    res = run(data, base_dir=tmp_path)
    rows, _ = res.built.replicas[0].cost.target.load.straggler(100.0)
    assert rows == pytest.approx(100 * SPEC.experts_per_token * (choices < 16).sum() / choices.size, rel=1e-9)
