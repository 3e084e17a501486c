"""Small scenario builders shared by the simulator tests."""
from __future__ import annotations

import copy


def scenario(**overrides) -> dict:
    """A small, fast scenario dict; keyword overrides replace top-level sections (deep-merged)."""
    base = {
        "name": "t",
        "seed": 7,
        "workload": {
            "arrival": {"process": "poisson", "qps": 4.0},
            "prompt_tokens": {"kind": "uniform", "low": 64, "high": 512},
            "output_tokens": {"kind": "uniform", "low": 16, "high": 128},
            "num_requests": 300,
        },
        "cluster": {"hardware": "h100-sxm", "model": "llama-3-8b", "dtype": "bf16"},
        "drafter": {"kind": "none"},
        "scheduler": {"kind": "vllm", "max_batch_size": 64},
        "slo": {"ttft_s": 1.0, "tpot_s": 0.05},
        "outputs": {"plots": False},
    }
    return merge(base, overrides)


def merge(base: dict, overrides: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and "kind" not in value:
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def assert_bulk_equals_step(data: dict) -> None:
    """Bulk mode and step-by-step mode give identical requests and steps for the scenario `data`."""
    import pandas as pd

    import simulator
    bulk = simulator.run(data)
    step = simulator.run(merge(data, {"simulation": {"step_mode": "step"}}))
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)


def replica_kind(data):
    """The ReplicaKind the one replica factory builds for the colocated cluster of `data` (a scenario dict
    or a parsed Scenario), acceptance seed 1, paths relative to the repository root."""
    from pathlib import Path

    from simulator.cluster.build import pool_kind
    from simulator.config.scenario import parse_scenario
    sc = parse_scenario(data) if isinstance(data, dict) else data
    return pool_kind(sc, None, "cluster", 1, Path(__file__).resolve().parent.parent)


def run_outputs(result) -> tuple:
    """A run's requests and steps as column arrays, and its summary.json text (for `assert_same_outputs`)."""
    import json

    requests = {name: result.requests[name].to_numpy() for name in result.requests.columns}
    steps = {name: result.steps[name].to_numpy() for name in result.steps.columns}
    return requests, steps, json.dumps(result.summary, sort_keys=True, default=str)


def assert_same_outputs(a: tuple, b: tuple) -> None:
    """Two `run_outputs` are identical: the summary (latency_source's counts of distinct shapes priced
    included) to the character, every request and step column to the bit."""
    import numpy as np

    assert a[2] == b[2]
    for frame_a, frame_b in zip(a[:2], b[:2]):
        assert frame_a.keys() == frame_b.keys()
        for name in frame_a:
            x, y = frame_a[name], frame_b[name]
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


def vllm_requested_bytes(hw, target, par, dtype: str, util: float, max_batched_tokens: int = 8192,
                         max_num_seqs: int = 64, version: str | None = None) -> float:
    """What vLLM's accounting leaves for weights and KV on one GPU before the checkpoint's weights come off:
    the memory CUDA reports × `util` minus the start-up profile (the MXFP4 layout's extra bytes, the profile
    run's activation peak, the non-torch memory: simulator.cluster.vllm_memory). The defaults are `scenario`'s
    scheduler (max_batch_size 64, max_batched_tokens 8192)."""
    from simulator.cluster.vllm_memory import ProfileRun, device_total_bytes, profile_overhead_bytes
    run = ProfileRun(version, max_batched_tokens, max_num_seqs)
    return device_total_bytes(hw) * util - profile_overhead_bytes(hw, target, par, dtype, run)


def bare_replica(scheduler, pool, prompts, outputs, limits, q: int = 1):
    """A replica without a cost model or acceptance (every draft rejected: one token a step, q verified and held) of
    requests `prompts`/`outputs` all waiting at t = 0, for hand-worked scheduler and KV sequences; `pool(state)` makes
    its KV manager."""
    from types import SimpleNamespace

    import numpy as np

    from simulator.core.replica import Replica
    from simulator.core.state import RequestState
    from simulator.core.steplog import StepLog
    from simulator.core.workload import RequestTable
    state = RequestState(RequestTable(np.zeros(len(prompts)), np.array(prompts), np.array(outputs)))
    cost = SimpleNamespace(flops_scales=(1.0, 1.0))   # all apply_step reads of the step cost
    rep = Replica(0, state, scheduler, pool(state), limits, cost=cost, acceptance=None, log=StepLog())
    rep.q = q
    rep.waiting.extend(range(len(prompts)))
    return rep


def step_plans(rep, steps: int) -> list:
    """(plan, KV blocks used once it is formed) of `steps` steps of a `bare_replica`, each applied at no cost."""
    from simulator.cost.step_cost import Cost, StepCost
    zero = Cost(0.0, 0.0, 0.0)
    out = []
    for _ in range(steps):
        plan = rep.plan_step(0.0)
        out.append((plan, rep.kv.used_blocks))
        rep.apply_step(plan, 0.0, 0.0, StepCost(zero, zero), [])
    return out
