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
