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
        assert a[1].seconds == b[1].seconds and a[1].engine_s == b[1].engine_s, shape
        assert a[1].seconds > 0


def test_trtllm_takes_its_kv_fraction_of_the_memory_the_weights_leave():
    """TensorRT-LLM sizes its KV cache as (total − peak) × free_gpu_memory_fraction (tensorrt_llm/_torch/pyexecutor/
    _util.py KvCacheCreator._cal_max_tokens at commit d8ae02c), vLLM as total × gpu_memory_utilization − weights.
    Before, a trtllm replica got vLLM's rule: Llama-3.3-70B FP8 at TP2 on H100 held 9.2 % fewer KV tokens."""
    from models import get_model
    from models.step import Parallelism
    from profiles.hardware import get_hardware
    from simulator.cluster.factory import kv_capacity_tokens
    hw, spec, par = get_hardware("h100-sxm"), get_model("llama-3.3-70b"), Parallelism(tp=2)
    weights = spec.weight_bytes("fp8") / 2
    per_token = spec.kv_bytes_per_token_per_gpu(par, "fp8")
    trt = kv_capacity_tokens(hw, spec, par, "fp8", 0.9, framework="trtllm")
    assert trt == int((hw.hbm_bytes - weights) * 0.9 // per_token)
    assert kv_capacity_tokens(hw, spec, par, "fp8", 0.9) == int((hw.hbm_bytes * 0.9 - weights) // per_token)
    assert kv_capacity_tokens(hw, spec, par, "fp8", 0.9, framework="sglang") < trt
    # the scenario path: cluster.latency.framework trtllm gets TensorRT-LLM's rule
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
