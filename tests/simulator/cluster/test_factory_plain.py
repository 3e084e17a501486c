"""`build_replica_kind(drafter=None)`: plain decoding without the speculation sections (what `draftsim estimate`
passes, so that it need not build the scenario schema) is the replica the scenario's defaults give — no
drafter, chain, constant acceptance, fixed policy — step price for step price, engine time included."""
from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cluster.factory import build_replica_kind
from simulator.config.scenario import ConstantAcceptanceConfig, NoDrafterConfig
from simulator.config.serving import LatencyConfig, MoeConfig, ParallelismConfig, SchedulerConfig
from simulator.config.speculation import ChainConfig, FixedPolicyConfig

CASES = [("llama-3-8b", "h100-sxm", 1, "bf16"), ("llama-3.1-70b", "h100-sxm", 4, "fp8"),
         ("qwen3-30b-a3b", "h100-sxm", 1, "bf16"), ("llama-2-7b", "a100-80gb", 1, "bf16"),
         ("qwen3-next-80b-a3b", "h100-sxm", 4, "bf16")]
SHAPES = [(0, 0, 0, 1, 100), (0, 0, 0, 64, 64 * 4096), (512, 1, 512 * 513 // 2, 0, 0),
          (2048, 4, 2048 * 1024 + 4 * 256 * 257 // 2, 8, 8 * 1500)]   # (prefill tokens, seqs, pairs, decode seqs, ctx)


def _kind(model, hardware, tp, dtype, memory_utilization, **speculation):
    return build_replica_kind(model=model, hardware=hardware, parallelism=ParallelismConfig(tp=tp), dtype=dtype,
                              latency=LatencyConfig(), moe=MoeConfig(), memory_utilization=memory_utilization,
                              base_dir=Path.cwd(), scheduler=SchedulerConfig(), **speculation)


@pytest.mark.parametrize("memory_utilization", [None, 0.9])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_no_drafter_is_the_scenario_defaults(case, memory_utilization):
    plain = _kind(*case, memory_utilization)
    defaults = _kind(*case, memory_utilization, drafter=NoDrafterConfig(), speculation=ChainConfig(),
                     acceptance=ConstantAcceptanceConfig(), policy=FixedPolicyConfig())
    assert plain.drafter is None and plain.speculation is None and plain.policy is None
    assert (plain.kv_tokens, plain.kv_dtype, plain.state_bytes_per_request) == \
        (defaults.kv_tokens, defaults.kv_dtype, defaults.state_bytes_per_request)
    assert plain.engine.describe() == defaults.engine.describe()
    for shape in SHAPES:
        a, b = plain.cost.step(*shape), defaults.cost.step(*shape)
        assert a.target.seconds == b.target.seconds and a.target.engine_s == b.target.engine_s, shape
        assert a.target.seconds > 0


def test_trtllm_takes_its_kv_fraction_of_the_memory_the_weights_leave():
    """TensorRT-LLM sizes its KV cache as (total − peak) × free_gpu_memory_fraction (tensorrt_llm/_torch/pyexecutor/
    _util.py KvCacheCreator._cal_max_tokens at commit d8ae02c), vLLM as total × gpu_memory_utilization − weights.
    Before, a trtllm replica got vLLM's rule: Llama-3.3-70B FP8 at TP2 on H100 held 9.2 % fewer KV tokens."""
    from models import get_model
    from models.step import Parallelism
    from profiles.hardware import get_hardware
    from simulator.cluster.replica_memory import kv_capacity_tokens
    hw, spec, par = get_hardware("h100-sxm"), get_model("llama-3.3-70b"), Parallelism(tp=2)
    weights = spec.weight_bytes("fp8") / 2
    per_token = spec.kv_bytes_per_token_per_gpu(par, "fp8")
    trt = kv_capacity_tokens(hw, spec, par, "fp8", 0.9, framework="trtllm", kv_dtype="fp8")
    assert trt == int((hw.hbm_bytes - weights) * 0.9 // per_token)
    assert kv_capacity_tokens(hw, spec, par, "fp8", 0.9, kv_dtype="fp8") == int((hw.hbm_bytes * 0.9 - weights) // per_token)
    assert kv_capacity_tokens(hw, spec, par, "fp8", 0.9, framework="sglang", kv_dtype="fp8") < trt
    # the scenario path: cluster.latency.framework trtllm gets TensorRT-LLM's rule (and its FP8 recipe's fp8 KV
    # cache: profiles.engine_time.kv_cache_auto)
    import simulator
    base = {"workload": {"num_requests": 2, "arrival": {"process": "closed_loop", "concurrency": 1},
                         "prompt_tokens": {"kind": "fixed", "value": 16}, "output_tokens": {"kind": "fixed", "value": 2}},
            "cluster": {"hardware": "h100-sxm", "model": "llama-3.3-70b", "dtype": "fp8", "parallelism": {"tp": 2},
                        "latency": {"framework": "trtllm", "source": "roofline"}},
            "drafter": {"kind": "none"}, "outputs": {"plots": False}}
    assert simulator.run(base).summary["kv_tokens_per_replica"] == trt
    # weights beyond the GPU are refused naming its whole memory (TensorRT-LLM's fraction applies after them)
    from simulator.errors import ScenarioError
    with pytest.raises(ScenarioError, match="offers 74.5 GiB;"):
        kv_capacity_tokens(hw, get_model("llama-3.3-70b"), Parallelism(tp=1), "bf16", 0.9, framework="trtllm")


def _run_kind(framework, dtype="fp8", model="llama-3-8b", kv_dtype=None, version=None):
    return build_replica_kind(model=model, hardware="h100-sxm", parallelism=ParallelismConfig(tp=1), dtype=dtype,
                              latency=LatencyConfig(framework=framework, source="roofline", engine_version=version),
                              moe=MoeConfig(), memory_utilization=0.9, base_dir=Path.cwd(),
                              scheduler=SchedulerConfig(max_batch_size=256), kv_dtype=kv_dtype)


def test_fp8_weights_keep_a_16_bit_kv_cache_under_vllm_and_an_fp8_one_under_trtllm():
    """vLLM's and SGLang's --kv-cache-dtype auto is the model's dtype unless the checkpoint declares a quantized KV
    cache, and a catalog model's fp8 weights are their own fp8 quantization's (no KV declaration), while TensorRT-LLM's
    FP8 recipe quantizes the KV cache (profiles.engine_time.kv_cache_auto). Before, draftsim gave every engine an fp8
    KV cache for fp8 weights: twice the KV tokens vLLM holds. Hand-worked for Llama-3-8B (32 layers, 8 KV heads of
    128) on one H100 SXM at a 0.9 memory fraction."""
    from models import get_model
    from models.step import Parallelism
    from profiles.hardware import get_hardware
    spec, hw = get_model("llama-3-8b"), get_hardware("h100-sxm")
    bf16_token, fp8_token = 2 * 32 * 8 * 128 * 2, 2 * 32 * 8 * 128 * 1    # K and V, layers, KV heads, head dim
    assert spec.kv_bytes_per_token_per_gpu(Parallelism(), "bf16") == bf16_token == 131072
    assert spec.kv_bytes_per_token_per_gpu(Parallelism(), "fp8") == fp8_token == 65536
    vllm, sglang, trt = _run_kind("vllm"), _run_kind("sglang"), _run_kind("trtllm")
    assert (vllm.kv_dtype, sglang.kv_dtype, trt.kv_dtype) == ("bf16", "bf16", "fp8")
    # TensorRT-LLM: (HBM − weights) × 0.9 over 1 byte per K/V element
    assert trt.kv_tokens == int((hw.hbm_bytes - spec.weight_bytes("fp8")) * 0.9 // fp8_token)
    # vLLM: the same free bytes as with an fp8 cache, over twice the bytes per token: half the tokens
    vllm_fp8 = _run_kind("vllm", kv_dtype="fp8")
    assert vllm_fp8.kv_dtype == "fp8"
    free = vllm_fp8.kv_tokens * fp8_token
    assert vllm.kv_tokens == int(free // bf16_token) == vllm_fp8.kv_tokens // 2
    # an explicit kv_dtype still wins, both ways
    assert _run_kind("trtllm", kv_dtype="bf16").kv_dtype == "bf16"


@pytest.mark.parametrize("framework, version, kv", [("vllm", "0.13.0", "bf16"), ("vllm", "0.14.0", "fp8"),
                                                    ("sglang", "0.5.2", "bf16"), ("sglang", "0.5.3", "fp8"),
                                                    ("trtllm", "1.0.0", "fp8")])
def test_nvfp4_weights_take_the_declared_fp8_kv_cache_where_the_release_reads_it(framework, version, kv):
    """NVIDIA's ModelOpt NVFP4 checkpoints declare kv_cache_quant_algo FP8: vLLM's auto reads it from 0.14.0
    (resolve_kv_cache_dtype_string), SGLang's from 0.5.3 (ModelOptFp4Config.kv_cache_quant_algo), TensorRT-LLM's
    always; older releases keep the model's bf16."""
    kind = build_replica_kind(model="llama-3-8b", hardware="b200", parallelism=ParallelismConfig(tp=1), dtype="nvfp4",
                              latency=LatencyConfig(framework=framework, source="roofline", engine_version=version),
                              moe=MoeConfig(), memory_utilization=0.9, base_dir=Path.cwd(),
                              scheduler=SchedulerConfig(max_batch_size=256))
    assert kind.kv_dtype == kv
