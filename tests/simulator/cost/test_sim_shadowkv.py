"""ShadowKV (simulator.cost.shadowkv): the KV capacity follows the GPU fraction (r + D/chunk)/(2D), and a decode
pass is the sparse attention + landmark scoring + max(key reconstruction, value fetch) priced here part by
part; bulk ≡ step mode; combinations it does not model are refused."""
from __future__ import annotations


import pytest

import simulator
from models.ops import GEMM, Op
from profiles.hardware import get_hardware
from sim_helpers import replica_kind, scenario
from simulator.cost.step_cost import ForwardCost
from simulator.errors import ScenarioError

SHADOW = {"kind": "shadowkv", "rank": 160, "sparse_budget": 512, "chunk_tokens": 8}
CLUSTER = {"hardware": "a100-80gb", "model": "llama-3.1-8b"}
DATA = dict(cluster={**CLUSTER, "kv_cache": {"layout": SHADOW}},
            workload={"arrival": {"process": "poisson", "qps": 50.0},
                      "prompt_tokens": {"kind": "fixed", "value": 4096},
                      "output_tokens": {"kind": "fixed", "value": 64}, "num_requests": 24})


def _kind(kv_layout):
    return replica_kind(scenario(**{**DATA, "cluster": {**CLUSTER, "kv_cache": {"layout": kv_layout}}}))


@pytest.mark.parametrize("rank,chunk", [(160, 8), (64, 32), (512, 4)])
def test_kv_capacity_grows_by_the_gpu_fraction(rank, chunk):
    paged, shadow = _kind({"kind": "paged"}), _kind({**SHADOW, "rank": rank, "chunk_tokens": chunk})
    d = 8 * 128  # llama-3.1-8b: 8 KV heads of 128
    assert shadow.kv_tokens / paged.kv_tokens == pytest.approx(2 * d / (rank + d / chunk), rel=1e-4)


@pytest.mark.parametrize("seqs,ctx_per_seq", [(1, 300), (4, 4000), (16, 30000)])
def test_decode_pass_is_its_parts(seqs, ctx_per_seq):
    t = _kind(SHADOW).cost.target
    plain = ForwardCost(t.spec, t.parallelism, t.latency, t.dtype)
    hw, ctx = get_hardware("a100-80gb"), seqs * ctx_per_seq
    selected = min(ctx, seqs * 512)
    sparse = plain.exact_decode(seqs, 1, selected)
    landmarks = plain.exact_decode(seqs, 1, ctx // 8) - plain.dense(seqs, seqs)
    d, layers = 1024, 32
    rebuild_op = Op.make(GEMM, "rebuild", 2.0 * selected * d * 160,
                         2 * (selected * 160 + selected * d + seqs * 160 * d), layers, m=selected, n=d, k=160)
    rebuild_s = layers * t.latency.op_seconds(rebuild_op)
    fetch_s = layers * (hw.host_link_latency_s + selected * d * 2 / hw.host_link_bandwidth_bytes_per_s)
    got = t.exact_decode(seqs, 1, ctx)
    assert got[0] == pytest.approx(sparse[0] + landmarks[0] + max(rebuild_s, fetch_s), rel=1e-12)
    assert got[1] == pytest.approx(sparse[1] + landmarks[1] + rebuild_op.flops * layers, rel=1e-12)


def test_attention_stops_growing_past_the_budget_but_landmarks_do_not():
    t = _kind(SHADOW).cost.target
    plain = ForwardCost(t.spec, t.parallelism, t.latency, t.dtype)
    step = lambda cost, c: cost.exact_decode(8, 1, 8 * c)[0]
    shadow_slope = step(t, 40_000) - step(t, 20_000)
    plain_slope = step(plain, 40_000) - step(plain, 20_000)
    assert 0 < shadow_slope < plain_slope / 4   # only the landmarks (1 per 8 tokens) grow with the context


@pytest.mark.parametrize("override", [
    {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 3}},
    {"cluster": {**CLUSTER, "kv_cache": {"layout": SHADOW}, "latency": {"nano_batches": 2}}},
])
def test_unmodelled_combinations_are_refused(override):
    with pytest.raises(ScenarioError, match="kv_cache"):
        simulator.run(scenario(**{**DATA, **override}))
