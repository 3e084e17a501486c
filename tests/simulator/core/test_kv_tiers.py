"""KV offload to host memory (swap preemption, the host tier of the prefix cache) priced over the host link,
and shared-prefix attention (Hydragen/BatchLLM) priced from the op graph: each against its formula."""
from __future__ import annotations

import numpy as np
import pytest

import simulator
from models import get_model
from models.opgraph import attention_ops
from models.step import Parallelism, StepShape
from profiles.hardware import get_hardware
from profiles.roofline import RooflineLatencyModel
from sim_helpers import merge, scenario

# Long outputs on a quarter of an H100's memory: the decode batch outgrows the KV and requests are preempted.
PRESSURE = scenario(workload={"arrival": {"process": "poisson", "qps": 30.0}, "num_requests": 150,
                              "prompt_tokens": {"kind": "fixed", "value": 1000},
                              "output_tokens": {"kind": "uniform", "low": 400, "high": 1200}},
                    cluster={"model": "llama-3-8b", "gpu_memory_utilization": 0.215,
                             "latency": {"source": "roofline"}},
                    scheduler={"kind": "vllm", "max_batch_size": 256})
SWAP = {"cluster": {"kv_cache": {"host_memory_gib": 64.0, "preemption": "swap"}}}


def test_swap_moves_the_kv_over_the_host_link_instead_of_recomputing_it():
    recompute = simulator.run(merge(PRESSURE, {"cluster": {"kv_cache": {"host_memory_gib": 64.0}}}))
    swap = simulator.run(merge(PRESSURE, SWAP))
    assert recompute.summary["preemptions"] > 0 and swap.summary["preemptions"] > 0
    prompts = swap.requests["prompt_tokens"].sum()
    # recompute re-prefills the preempted requests' tokens; swap prefills every prompt once
    assert recompute.steps["prefill_tokens"].sum() > prompts == swap.steps["prefill_tokens"].sum()
    assert recompute.summary["kv_swapped_tokens"] == 0 and recompute.steps["kv_io_s"].sum() == 0
    # each swapped token crosses the host link twice (out, then back in): per GPU, its KV bytes / bandwidth
    hw, spec = get_hardware("h100-sxm"), get_model("llama-3-8b")
    per_token_s = spec.kv_bytes_per_token_per_gpu(Parallelism(), "bf16") / hw.host_link_bandwidth_bytes_per_s
    tokens = swap.summary["kv_swapped_tokens"]
    transfers = 2 * int(swap.requests["preemptions"].sum())
    assert swap.steps["kv_io_s"].sum() == pytest.approx(2 * tokens * per_token_s + transfers * hw.host_link_latency_s)
    steps = swap.steps
    assert np.allclose(steps["duration_s"], steps["draft_s"] + steps["verify_s"] + steps["engine_s"] + steps["kv_io_s"])
    # the KV capacity on the GPU is the same; host memory adds room for the swapped requests only
    assert swap.summary["kv_tokens_per_replica"] == recompute.summary["kv_tokens_per_replica"]


def test_swap_falls_back_to_recompute_when_host_memory_is_full():
    tiny = simulator.run(merge(PRESSURE, merge(SWAP, {"cluster": {"kv_cache": {"host_memory_gib": 0.4}}})))
    host_tokens = int(0.4 * 2**30 / get_model("llama-3-8b").kv_bytes_per_token("bf16"))
    assert host_tokens == 3276                                          # room for two or three swapped requests
    assert tiny.summary["preemptions"] > 0
    assert tiny.steps["prefill_tokens"].sum() > tiny.requests["prompt_tokens"].sum()   # some recomputed
    assert 0 < tiny.summary["kv_swapped_tokens"]


def test_host_tier_loads_evicted_prefixes_instead_of_recomputing_them():
    base = scenario(workload={"arrival": {"process": "poisson", "qps": 20.0}, "num_requests": 600,
                              "prompt_tokens": {"kind": "fixed", "value": 64}, "output_tokens": {"kind": "fixed", "value": 4},
                              "shared_prefix": {"prompts": 300, "tokens": 2048}},
                    cluster={"model": "llama-3-8b", "gpu_memory_utilization": 0.25, "kv_cache": {"prefix_caching": True}})
    gpu_only = simulator.run(base)
    tiered = simulator.run(merge(base, {"cluster": {"kv_cache": {"host_memory_gib": 200.0}}}))
    loaded = tiered.summary["prefix_cache_host_loaded_tokens"]
    assert loaded > 0 and tiered.summary["prefix_cache_hit_rate"] > gpu_only.summary["prefix_cache_hit_rate"] + 0.1
    hw, spec = get_hardware("h100-sxm"), get_model("llama-3-8b")
    per_token_s = spec.kv_bytes_per_token("bf16") / hw.host_link_bandwidth_bytes_per_s
    io = tiered.steps["kv_io_s"].sum()
    assert loaded * per_token_s < io <= loaded * per_token_s + len(tiered.requests) * hw.host_link_latency_s


def test_shared_prefix_attention_reads_the_shared_blocks_once():
    spec, par = get_model("llama-3.1-8b"), Parallelism()
    seqs, ctx, shared, prefix = 32, 32 * 3000, 24 * 2048, 2048      # 24 requests share a 2,048-token prompt
    plain = attention_ops(spec, StepShape(decode_seqs=seqs, decode_context_tokens=ctx), par)
    split = attention_ops(spec, StepShape(decode_seqs=seqs, decode_context_tokens=ctx, shared_context_tokens=shared,
                                          shared_prefix_tokens=prefix, shared_prefix_seqs=24), par)
    kv_per_token = spec.kv_bytes_per_token_per_gpu(par, "bf16") / spec.num_layers
    assert [op.kind for op in split] == ["attn_decode", "attn_shared"]
    assert sum(op.flops for op in split) == pytest.approx(plain[0].flops)           # same math
    saved = plain[0].bytes - sum(op.bytes for op in split)
    query_bytes = 2 * spec.num_heads * 2 * spec.head_dim     # q in and partial o out of one query, bf16
    # 23 of 24 reads of the prefix saved; the sharers' queries pass through the second kernel too
    assert saved == pytest.approx((shared - prefix) * kv_per_token - 24 * query_bytes)
    roof = RooflineLatencyModel("h100-sxm")
    assert sum(roof.op_seconds(op) * op.count for op in split) < roof.op_seconds(plain[0]) * plain[0].count


def test_shared_prefix_attention_makes_decode_of_a_shared_prompt_cheaper_in_the_des():
    base = scenario(workload={"arrival": {"process": "poisson", "qps": 40.0}, "num_requests": 300,
                              "prompt_tokens": {"kind": "fixed", "value": 32}, "output_tokens": {"kind": "fixed", "value": 200},
                              "shared_prefix": {"prompts": 1, "tokens": 4096}},
                    cluster={"model": "llama-3.1-8b", "kv_cache": {"prefix_caching": True}})
    plain = simulator.run(base)
    hydragen = simulator.run(merge(base, {"cluster": {"kv_cache": {"shared_prefix_attention": True}}}))
    assert hydragen.summary["tpot_p50_s"] < plain.summary["tpot_p50_s"]
    assert hydragen.steps["bytes"].sum() < plain.steps["bytes"].sum()
    assert hydragen.steps["flops"].sum() == pytest.approx(plain.steps["flops"].sum(), rel=0.02)


@pytest.mark.parametrize("kv_cache,message", [
    ({"preemption": "swap"}, "preemption 'swap' needs host_memory_gib > 0"),
    ({"shared_prefix_attention": True}, "shared_prefix_attention needs prefix_caching: true"),
    ({"host_memory_gib": -1}, "cluster.kv_cache.host_memory_gib"),
    ({"eviction": "fifo"}, "cluster.kv_cache.eviction: unknown field"),
])
def test_bad_kv_cache_settings_name_the_field(tmp_path, capsys, kv_cache, message):
    import yaml
    from simulator.cli import main
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(cluster={"model": "llama-3-8b", "kv_cache": kv_cache})))
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and not (tmp_path / "o").exists()
