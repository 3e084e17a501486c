"""SGLang's reserve for the running requests' future output (simulator.core.sched.sglang_reserve), hand-worked from
SGLang's managers/schedule_policy.py (`PrefillAdder.__init__`, `add_one_req`) and managers/scheduler.py
(`Scheduler.__init__`, `update_running_batch`, the idle reset of the event loops), read in 0.4.0, 0.4.5, 0.5.9 and
main (00550cd)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import simulator
from simulator.core.kv.block_pool import BlockPool
from simulator.core.replica import Replica
from simulator.core.sched import BatchLimits
from simulator.core.sched.sglang_reserve import SGLANG_OUTPUT_RESERVE, NewTokenRatio, OutputReserve
from simulator.core.sched.vllm import Vllm
from simulator.core.state import RequestState
from simulator.core.steplog import StepLog
from simulator.core.workload import RequestTable
from simulator.cost.step_cost import Cost, StepCost
from sim_helpers import merge, scenario


def test_sglangs_default_constants():
    """Scheduler.__init__ with SGLang's defaults: init 0.7 × schedule_conservativeness 1.0, floor 0.7 × 0.14,
    (init − floor) / 600 a decode batch; CLIP_MAX_NEW_TOKENS 4096; retract_decode_steps 20."""
    rule = SGLANG_OUTPUT_RESERVE
    assert rule.init == 0.7
    assert rule.min_ratio == pytest.approx(0.098)
    assert rule.decay == pytest.approx((0.7 - 0.098) / 600)
    assert (rule.clip_new_tokens, rule.retract_decode_steps) == (4096, 20)


def _walk(steps: int):
    """A 70-token pool (blocks of 1 token, SGLang's page size), no token budget to speak of; A: 20-token prompt,
    40 out; B: 10, 28. The ratio decays over 6 decode batches (SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS=6) to make the
    decay visible: 0.7 → 0.098 by (0.7 − 0.098) / 6 = 0.10033 a decode step."""
    table = RequestTable(np.zeros(2), np.array([20, 10]), np.array([40, 28]))
    state = RequestState(table)
    limits = BatchLimits(8, 1000, 512, output_reserve=OutputReserve(decay_steps=6))
    rep = Replica(0, state, Vllm(limits), BlockPool(state, 70, 1), limits,
                  cost=SimpleNamespace(flops_scales=(1.0, 1.0)), acceptance=None, log=StepLog())
    rep.waiting.extend([0, 1])
    zero = Cost(0.0, 0.0, 0.0)
    out = []
    for _ in range(steps):
        plan = rep.plan_step(0.0)
        out.append((list(zip(plan.prefill_ids, plan.prefill_chunks)), plan.decode_ids.tolist(),
                    round(rep.scheduler.reserve.ratio, 5)))
        rep.apply_step(plan, 0.0, 0.0, StepCost(zero, zero), [])
    return out, rep


def test_a_hand_worked_sequence():
    steps, rep = _walk(42)
    assert steps[:8] == [
        # 1: nothing runs: A is admitted. B: 70 − 20 (A's prompt) − 40 (A's whole output, ratio 1 in the batch
        #    that admits it) = 10 tokens left; B needs 10 + 28 = 38 ≥ 10: NO_TOKEN (prefill batches leave the ratio)
        ([(0, 20)], [], 0.7),
        # 2: 70 − 20 held − 0.7 × (40 − 1) = 22.7 < 38: A decodes alone (B's 10 prompt tokens would fit the pool);
        #    the decode batch decays the ratio
        ([], [0], 0.59967),
        ([], [0], 0.49933),      # 3: 70 − 21 − 0.59967 × 38 = 26.21
        ([], [0], 0.399),        # 4: 70 − 22 − 0.49933 × 37 = 29.53
        ([], [0], 0.29867),      # 5: 70 − 23 − 0.399 × 36 = 32.64
        ([], [0], 0.19833),      # 6: 70 − 24 − 0.29867 × 35 = 35.55
        # 7: 70 − 25 − 0.19833 × 34 = 38.26 > 38: B is admitted (a prefill batch: the ratio stays)
        ([(1, 10)], [], 0.19833),
        ([], [0, 1], 0.098),     # 8: the floor, 0.7 × 0.14
    ]
    # 25: A (context 42) and B (context 27) need 2 more tokens, 1 is free: B, the newest, is retracted (draftsim's
    # LIFO) and the ratio becomes min(1, (A's 23 decoded + 20) / (40 + 1)) = 1 (ScheduleBatch.retract_decode)
    assert steps[23] == ([], [0, 1], 0.098)
    assert steps[24] == ([], [0], 1.0)
    assert rep.s.preemptions.tolist() == [0, 1]
    assert steps[25] == ([], [0], 0.89967)   # decaying again from 1
    # 42: A finished in step 41; nothing runs: the ratio is reset to 0.7 (the idle reset) and B re-prefills its
    # prompt and its 18 emitted tokens
    assert steps[40] == ([], [0], 0.098)
    assert steps[41] == ([(1, 28)], [], 0.7)


def test_without_the_reserve_b_joins_at_once():
    """The same requests on a vLLM-style scheduler (no reserve): B's 10 prompt tokens fit beside A's 20 in step 1."""
    table = RequestTable(np.zeros(2), np.array([20, 10]), np.array([40, 28]))
    state = RequestState(table)
    limits = BatchLimits(8, 1000, 512)
    rep = Replica(0, state, Vllm(limits), BlockPool(state, 70, 1), limits,
                  cost=SimpleNamespace(flops_scales=(1.0, 1.0)), acceptance=None, log=StepLog())
    rep.waiting.extend([0, 1])
    assert rep.plan_step(0.0).prefill_ids == [0, 1]


def _pressure(**over) -> dict:
    data = scenario(seed=3, workload={"arrival": {"process": "poisson", "qps": 20.0}, "num_requests": 300,
                                      "prompt_tokens": {"kind": "uniform", "low": 200, "high": 1500},
                                      "output_tokens": {"kind": "uniform", "low": 50, "high": 600}},
                    cluster={"engine": {"framework": "sglang", "version": "0.5.23"},
                             "gpu_memory_utilization": 0.215, "max_model_len": 4096}, **over)
    data.pop("scheduler")   # (SGLang's own: prefill-first, its chunked_prefill_size)
    return data


@pytest.mark.parametrize("over", [{}, {"cluster": {"kv_cache": {"prefix_caching": True}}},
                                  {"cluster": {"kv_cache": {"prefix_caching": True}},   # prompts cached after
                                   "workload": {"shared_prefix": {"prompts": 4, "tokens": 512}}},   # their batch
                                  # (a draft of the target's vocabulary: SGLang 0.5.23 refuses llama-68m's,
                                  # profiles.engine_time.draft_vocabulary; its weights take 0.03 more of the GPU)
                                  {"drafter": {"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3},
                                   "acceptance": {"kind": "constant", "alpha": 0.6},
                                   "cluster": {"gpu_memory_utilization": 0.245}}],
                         ids=["plain", "radix", "radix_shared", "draft_model"])
def test_bulk_equals_step_under_memory_pressure_and_conserves(over):
    import pandas as pd
    data = merge(_pressure(), over)
    bulk = simulator.run(data)
    step = simulator.run(merge(data, {"simulation": {"step_mode": "step"}}))
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    req = bulk.requests
    assert len(req) == 300 and req.finish_s.notna().all()   # every request finishes (none is too long to fit)
    for rep in bulk.built.replicas:   # every block came back, and the ratio is SGLang's
        assert rep.kv.used_blocks == 0
        reserve = rep.scheduler.reserve
        assert SGLANG_OUTPUT_RESERVE.min_ratio <= reserve.ratio <= 1.0


def test_the_reserve_retracts_less_than_admitting_by_prompt_alone(monkeypatch):
    """The point of SGLang's reserve: under memory pressure it admits fewer requests at once, so fewer are
    retracted than by the same deployment admitting whenever the prompt's blocks fit (draftsim before)."""
    with_reserve = simulator.run(_pressure()).summary["preemptions"]
    monkeypatch.setattr(NewTokenRatio, "admits", lambda self, view, prefills: True)
    without = simulator.run(_pressure()).summary["preemptions"]
    assert with_reserve * 5 < without


def test_a_hit_that_running_requests_hold_is_not_charged():
    """PrefillAdder.add_one_req charges extend_input_len (the prompt less its prefix match) + the clipped output
    against rem_total_tokens = available + evictable − the running requests' reserve; a hit on tokens a running
    request holds (locked: neither available nor evictable) costs nothing. A 200-token pool (1-token pages): A
    (100 tokens: a 64-token system prompt S and 36 of its own, 40 out) prefills alone; then B (S + 36 own, 10 out)
    waits: 200 − 100 held − 0.7 × (40 − 1) = 72.7 left; B needs 36 + 10 = 46 < 72.7: admitted with A decoding
    (charging its whole 100-token prompt, 110 ≥ 72.7, it was not)."""
    from simulator.core.kv.prefix_cache import PrefixCache, PrefixCachePool
    from simulator.core.prefixes import PrefixKeys
    table = RequestTable(np.zeros(2), np.array([100, 100]), np.array([40, 10]))
    state = RequestState(table)
    keys = PrefixKeys.from_lists([[1, 2, 3, 4, 11, 12], [1, 2, 3, 4, 21, 22]], 16)
    kv = PrefixCachePool(state, 200, 1, PrefixCache(200, 1, 16, keys, deferred=True), False)
    limits = BatchLimits(8, 1000, 512, output_reserve=SGLANG_OUTPUT_RESERVE)
    rep = Replica(0, state, Vllm(limits), kv, limits, cost=SimpleNamespace(flops_scales=(1.0, 1.0)),
                  acceptance=None, log=StepLog())
    rep.waiting.append(0)
    zero = Cost(0.0, 0.0, 0.0)
    plan = rep.plan_step(0.0)
    assert plan.prefill_ids == [0]
    rep.apply_step(plan, 0.0, 0.0, StepCost(zero, zero), [])
    rep.waiting.append(1)
    assert kv.hit_in_use_tokens(1) == 64
    plan = rep.plan_step(0.0)
    assert list(zip(plan.prefill_ids, plan.prefill_chunks)) == [(1, 36)]
