"""scheduler.kind vllm_v1 against step sequences worked out by hand from vLLM V1's Scheduler.schedule rules
(simulator.core.sched.vllm_v1): one token budget, running requests first in admission order, waiting ones only
when nobody was preempted, KV blocks per scheduled chunk, LIFO preemption by recompute."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import simulator
from simulator.core.kv.block_pool import BlockPool
from simulator.core.replica import Replica
from simulator.core.sched import BatchLimits
from simulator.core.sched.vllm_v1 import VllmV1
from simulator.core.state import RequestState
from simulator.core.steplog import StepLog
from simulator.core.workload import RequestTable
from simulator.cost.step_cost import Cost, StepCost
from sim_helpers import assert_bulk_equals_step, scenario


def _replica(prompts, outputs, total_blocks, **sched):
    table = RequestTable(np.zeros(len(prompts)), np.array(prompts), np.array(outputs))
    state = RequestState(table)
    limits = BatchLimits(sched["max_batch_size"], sched["max_batched_tokens"], 512)
    cost = SimpleNamespace(flops_scales=(1.0, 1.0))   # all apply_step reads of the step cost
    rep = Replica(0, state, VllmV1(limits), BlockPool(state, total_blocks, sched["block_size"]), limits, cost=cost,
                  acceptance=None, log=StepLog())
    rep.waiting.extend(range(len(prompts)))
    return rep


def _execute(rep, plan):
    """The replica's own apply_step, with zero step costs (the plan alone is under test)."""
    zero = Cost(0.0, 0.0, 0.0)
    rep.apply_step(plan, 0.0, 0.0, StepCost(zero, zero), [])


def _compositions(rep, steps):
    out = []
    for _ in range(steps):
        plan = rep.plan_step(0.0)
        out.append((list(zip(plan.prefill_ids, plan.prefill_chunks)), plan.decode_ids.tolist(),
                    rep.kv.used_blocks))
        _execute(rep, plan)
    return out


def test_running_first_then_waiting_within_one_budget():
    # A: 10-token prompt, 3 outputs; B: 6, 2; C: 3, 2. Budget 8 tokens, at most 2 running, blocks of 4.
    rep = _replica([10, 6, 3], [3, 2, 2], total_blocks=100, max_batch_size=2, max_batched_tokens=8, block_size=4)
    assert _compositions(rep, 5) == [
        ([(0, 8)], [], 2),            # A's first chunk (8 of 10 tokens: 2 blocks)
        ([(0, 2), (1, 6)], [], 5),    # running A finishes its prompt first, then B fills the budget
        ([], [0, 1], 5),              # both decode; C waits: 2 requests run (max_num_seqs); B finishes
        ([(2, 3)], [0], 4),           # A decodes (and finishes), C is admitted in the same step
        ([], [2], 1),
    ]


def test_blocks_grow_with_each_chunk_not_at_admission():
    rep = _replica([40], [1], total_blocks=100, max_batch_size=4, max_batched_tokens=16, block_size=4)
    assert [used for _, _, used in _compositions(rep, 3)] == [4, 8, 10]


def test_preemption_is_lifo_and_stops_admission_in_that_step():
    # 5 blocks of 4 tokens, budget 5 tokens. A (8-token prompt, 6 outputs), B (8, 6), C (2, 1).
    rep = _replica([8, 8, 2], [6, 6, 1], total_blocks=5, max_batch_size=4, max_batched_tokens=5, block_size=4)
    steps = _compositions(rep, 6)
    assert steps[:4] == [
        ([(0, 5)], [], 2),
        ([(0, 3), (1, 2)], [], 3),    # A's rest, then B's first chunk (1 block for 2 tokens)
        ([(1, 4)], [0], 5),           # A decodes (9 tokens: a 3rd block), B's next chunk
        ([(1, 2)], [0], 5),           # C would need a block: none free
    ]
    # B's first decode needs a 3rd block and none is free: B, the newest running request, is preempted;
    # C (1 block) would now fit but nobody is admitted in a step that preempted.
    assert steps[4] == ([], [0], 3)
    assert rep.s.preemptions.tolist() == [0, 1, 0]
    assert steps[5] == ([(1, 4)], [0], 4)                     # B re-admitted first (head of the queue)
    assert rep.s.prefill_target[1] == 8 + 1                   # recompute: prompt + its emitted token


def test_a_whole_run_finishes_every_request_and_matches_step_mode():
    from sim_helpers import assert_bulk_equals_step
    data = scenario(scheduler={"kind": "vllm_v1", "max_batch_size": 16, "max_batched_tokens": 256},
                    drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                    acceptance={"kind": "constant", "alpha": 0.6})
    result = simulator.run(data)
    assert result.requests.finish_s.notna().all()
    steps = result.steps
    assert (steps.prefill_tokens + steps.decode_seqs * 4 <= 256).all()   # the token budget holds
    assert ((steps.prefill_seqs > 0) & (steps.decode_seqs > 0)).any()    # prompts ride on decode steps
    assert_bulk_equals_step(data)


def _budget_below_the_batch(kind: str, step_mode: str, tmp_path):
    """Eight 1-token prompts at t = 0, 20 tokens out each, draft γ = 1 (q = 2 tokens per decoding request),
    max_batched_tokens 8 = max_batch_size: step 1 prefills all eight (one token each), then 8 × 2 = 16
    tokens of decodes do not fit the budget of 8. An n-gram drafter: vLLM 0.17 - 0.27 with a draft model would keep
    max_num_seqs of the 8 tokens for the proposer's rows and refuse the deployment (max_num_scheduled_tokens 0:
    profiles.engine_time.batch_defaults.vllm_drafting_slots), and the release this scenario runs is one of those."""
    path = tmp_path / "trace.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + "0.0,1,20\n" * 8)
    data = scenario(workload={"num_requests": 8},
                    scheduler={"kind": kind, "max_batch_size": 8, "max_batched_tokens": 8},
                    drafter={"kind": "ngram", "gamma": 1},
                    acceptance={"kind": "constant", "alpha": 0.6}, simulation={"step_mode": step_mode})
    data["workload"]["arrival"] = {"process": "trace", "trace_csv": str(path)}
    for k in ("prompt_tokens", "output_tokens"):
        data["workload"].pop(k)
    return simulator.run(data)


@pytest.mark.parametrize("kind", ["vllm_v1", "trtllm"])
def test_a_budget_below_the_batch_decodes_part_of_it_in_bulk_mode_too(kind, tmp_path):
    """vLLM V1 (rule 2: a running request whose q tokens do not fit what is left is skipped) and TensorRT-LLM's
    micro-batch walk (microBatchScheduler.cpp: the first generation request that does not fit ends the walk)
    both decode 4 of the 8 running requests in step 2 (4 × 2 = 8 tokens). Bulk mode stepped all eight,
    16 tokens against a budget of 8 (found by fuzzing bulk against step-by-step; DeepSeek-V3 + MTP under
    max_batched_tokens 256 at 200 req/s)."""
    runs = {mode: _budget_below_the_batch(kind, mode, tmp_path) for mode in ("step", "bulk")}
    for run in runs.values():
        steps = run.steps
        assert (int(steps.prefill_seqs.iloc[0]), int(steps.prefill_tokens.iloc[0])) == (8, 8)
        assert (int(steps.decode_seqs.iloc[1]), int(steps.running_requests.iloc[1])) == (4, 8)
        assert (steps.prefill_tokens + steps.decode_seqs * 2 <= 8).all()   # the token budget holds
        assert run.requests.finish_s.notna().all()
    import pandas as pd
    pd.testing.assert_frame_equal(runs["step"].requests, runs["bulk"].requests)
    pd.testing.assert_frame_equal(runs["step"].steps, runs["bulk"].steps)


ONE_BLOCK_UTIL = 0.20219354524743693   # an H100, Llama-3-8B bf16: one 16-token KV block (test_sim_invariants)


def _near_max_model_len(kind: str, util: float, n: int, output, max_model_len: int, alpha: float, mode: str = "bulk"):
    return scenario(workload={"num_requests": n, "prompt_tokens": {"kind": "fixed", "value": 40 if n > 1 else 8},
                              "output_tokens": output},
                    cluster={"hardware": "h100-sxm", "model": "llama-3-8b", "max_model_len": max_model_len,
                             "gpu_memory_utilization": util},
                    drafter={"kind": "ngram", "gamma": 3}, acceptance={"kind": "constant", "alpha": alpha},
                    scheduler={"kind": kind, "max_batch_size": 64}, simulation={"step_mode": mode},
                    outputs={"steps": "full", "plots": False})


@pytest.mark.parametrize("mode", ["bulk", "step"])
def test_a_request_of_max_model_len_asks_for_at_most_max_model_len_minus_one_kv_tokens(mode):
    """vllm/v1/core/sched/scheduler.py Scheduler.schedule (v0.11.0, v0.19.1): `num_new_tokens = min(num_new_tokens,
    self.max_model_len - 1 - request.num_computed_tokens)`. max_model_len 16, one 16-token block (vLLM's start-up
    check passes), prompt 8 + output 8, n-gram γ = 3 (q = 4), nothing accepted (α = 0), by hand:
    prefill 8 tokens (1 block); decodes at contexts 8, 9, ..., 14, one token each; at context c the step asks for
    min(c + 4, 15) KV tokens: 12, 13, 14, 15, 15, 15, 15, one block throughout. Before, the request's peak was
    taken as 14 + 4 = 18 tokens (two blocks) and it was dropped as exceeds_kv_capacity."""
    data = _near_max_model_len("vllm_v1", ONE_BLOCK_UTIL, 1, {"kind": "fixed", "value": 8}, 16, 0.0, mode)
    result = simulator.run(data)
    assert not result.requests.dropped.iloc[0]
    steps = result.steps
    assert steps.prefill_tokens.tolist() == [8] + [0] * 7
    assert steps.decode_context_tokens.tolist() == [0, 8, 9, 10, 11, 12, 13, 14]
    assert steps.emitted_tokens.tolist() == [1] * 8
    assert steps.kv_blocks_used.tolist() == [1] * 8 and set(steps.kv_blocks_total) == {1}


def test_the_cap_is_vllm_v1s_only():
    """vLLM V1 caps a decoding request's KV at max_model_len − 1 (BatchLimits.decode_kv_cap); the other scheduler
    kinds keep context + q (the same request under kind vllm is still dropped: its last step asks 18 tokens)."""
    v1 = simulator.prepare(_near_max_model_len("vllm_v1", ONE_BLOCK_UTIL, 1, {"kind": "fixed", "value": 8}, 16, 0.0))
    rep = v1.cluster.replicas[0]
    assert rep.limits.decode_kv_cap == 15
    assert rep.decode_kv_tokens(14) == 15 and rep.decode_kv_tokens(np.array([8, 11, 12])).tolist() == [12, 15, 15]
    v0 = _near_max_model_len("vllm", ONE_BLOCK_UTIL, 1, {"kind": "fixed", "value": 8}, 16, 0.0)
    assert simulator.prepare(v0).cluster.replicas[0].limits.decode_kv_cap is None
    assert simulator.run(v0).requests.drop_reason.tolist() == ["exceeds_kv_capacity"]


def test_requests_near_max_model_len_bulk_equals_step():
    """Eight requests of 58 - 64 tokens (prompt 40) with max_model_len 64 on four 16-token blocks, α = 0.6:
    every one is served (before, those of 63 and 64 tokens were dropped: peak L − 2 + 4 > 64), and bulk and
    step-by-step mode agree with the capped growth in the speculating trajectories."""
    data = _near_max_model_len("vllm_v1", ONE_BLOCK_UTIL + 7.6e-5, 8, {"kind": "uniform", "low": 18, "high": 24},
                               64, 0.6)
    prepared = simulator.prepare(data)
    assert prepared.cluster.replicas[0].kv.total_blocks == 4
    result = simulator.run(data)
    assert not result.requests.dropped.any()
    assert (result.requests.prompt_tokens + result.requests.output_tokens).max() == 64
    assert_bulk_equals_step(data)


def test_a_waiting_request_whose_first_blocks_do_not_fit_stays_waiting_unpreempted():
    """vLLM V1's waiting pass: `allocate_slots` returns None -> `break`; the request stays waiting and nobody is
    preempted. Here the KV manager's `need` misses one block (as a prefix hit's lookahead slots can): before, the
    scheduler preempted the request it had just admitted and still scheduled its chunk (a pool of a prefix cache
    ended a run with -116 blocks in use); now it goes back to the waiting queue's head as if never admitted."""

    class Short(BlockPool):   # `need` one block short of what the first chunk takes
        def need(self, r, tokens=None):
            blocks, target = super().need(r, tokens)
            return blocks - 1, target

    limits = BatchLimits(8, 128, 512)
    state = RequestState(RequestTable(np.zeros(2), np.array([32, 64]), np.array([4, 4])))
    cost = SimpleNamespace(flops_scales=(1.0, 1.0))
    rep = Replica(0, state, VllmV1(limits), Short(state, 5, 16), limits, cost=cost, acceptance=None, log=StepLog())
    rep.waiting.extend([0, 1])
    plan = rep.plan_step(0.0)
    # request 0 (2 blocks) is admitted; request 1 (4 blocks, `need` says 3 of the 3 left) does not fit
    assert plan.prefill_ids == [0] and rep.running == [0] and list(rep.waiting) == [1]
    assert state.preemptions.tolist() == [0, 0] and np.isnan(state.admit_s[1]) and rep.prefilling == 1
    assert rep.kv.used_blocks == 2 and state.blocks.tolist() == [2, 0]


def _shared_prefix_walk(limits: BatchLimits, steps: int):
    """Two requests sharing a prefix on a 7-block prefix-cache pool (blocks of 16 tokens) under vllm_v1 with
    `limits`: A, 80 prompt tokens (shared units 1, 2; own 11, 12, 13), 4 out; B, 96 (1, 2; own 21..24), 2 out.
    (replica, state, pool, walk): per step, its (request, chunk) prefills, decodes, blocks in use, hit tokens and
    the cached units."""
    from simulator.core.kv.prefix_cache import PrefixCache, PrefixCachePool
    from simulator.core.prefixes import PrefixKeys
    state = RequestState(RequestTable(np.zeros(2), np.array([80, 96]), np.array([4, 2])))
    keys = PrefixKeys.from_lists([[1, 2, 11, 12, 13], [1, 2, 21, 22, 23, 24]], 16)
    kv = PrefixCachePool(state, 7, 16, PrefixCache(7, 16, 16, keys), False)
    rep = Replica(0, state, VllmV1(limits), kv, limits, cost=SimpleNamespace(flops_scales=(1.0, 1.0)),
                  acceptance=None, log=StepLog())
    rep.waiting.extend(range(2))
    walk = []
    for _ in range(steps):
        plan = rep.plan_step(0.0)
        walk.append((list(zip(plan.prefill_ids, plan.prefill_chunks)), plan.decode_ids.tolist(), kv.used_blocks,
                     kv.hit_tokens, sorted(kv.cache.refs)))
        _execute(rep, plan)
    return rep, state, kv, walk


def test_with_a_prefix_cache_a_prompt_is_admitted_when_its_hit_and_first_chunk_fit():
    """vLLM's waiting loop (`Scheduler.schedule`, vllm/v1/core/sched/scheduler.py, read in the 0.10.2 wheel 2026-11-29;
    the same through 0.18.x, while 0.19+ first check the whole prompt by default, `scheduler_reserve_full_isl`:
    test_with_a_prefix_cache_the_whole_prompt_check_counts_the_hit) calls `KVCacheManager.allocate_slots(request, num_new_tokens, num_new_local_computed_tokens,
    new_computed_blocks, ...)`: it needs cdiv(computed + new, 16) blocks less the hit's, plus the hit's free cached
    ones (`get_num_blocks_to_allocate`), returns None (the request stays waiting) when they exceed the free blocks, and
    else caches the full blocks of the computed + scheduled tokens (`cache_blocks`). Preemption frees a request's
    blocks to the free queue, its units staying cached (`free`, block_pool.py)."""
    # A: 80 tokens (shared prefix S = units 1, 2; own 11, 12, 13), 4 out; B: 96 (S; own 21..24), 2 out. 7 blocks of 16
    # tokens, a budget of 48 tokens.
    rep, state, kv, walk = _shared_prefix_walk(BatchLimits(8, 48, 512), 8)
    assert walk == [
        ([(0, 48)], [], 3, 0, [1, 2, 11]),                 # A's first chunk: 3 blocks, its 3 full units cached
        # A's rest (5 blocks); B hits S (in use: no block) and its first 16 tokens need 1 block of the 2 free, so it
        # is admitted (its whole prompt, 6 blocks less S's 2, would not fit); its unit 21 cached as allocated
        ([(0, 32), (1, 16)], [], 6, 32, [1, 2, 11, 12, 13, 21]),
        # A's first decode takes the 7th block; B's next 47 tokens need 3 more: B, the newest, is preempted, its
        # unit 21 back in the free queue, still cached
        ([], [0], 6, 32, [1, 2, 11, 12, 13]),
        # B would hit S and 21 (48 tokens) and need 6 blocks for 95 tokens: 3 new + 21's free one > 1 free: waits
        ([], [0], 6, 32, [1, 2, 11, 12, 13]),
        ([], [0], 6, 32, [1, 2, 11, 12, 13]),              # A's last token; it finishes, its units cached, free
        ([(1, 48)], [], 6, 80, [1, 2, 21, 22, 23, 24]),    # B hits S and its own 21 (48 tokens), 3 new blocks
        ([], [1], 7, 80, [1, 2, 21, 22, 23, 24]),          # B's decode: a 7th block, evicting A's unit 11
        ([], [], 0, 80, []),
    ]
    assert state.preemptions.tolist() == [0, 1]
    assert kv.cache.free_blocks == kv.total_blocks and not kv.cache.growing   # every block came back


def test_a_request_preempted_mid_prompt_keeps_its_computed_units_cached():
    """vLLM frees a preempted request's blocks into the free queue with their hashes (block_pool.py `free_blocks`):
    re-admitted before they are evicted, it hits them instead of computing its chunks again."""
    from simulator.core.kv.prefix_cache import PrefixCache, PrefixCachePool
    table = RequestTable(np.zeros(1), np.array([64]), np.array([1]))
    state = RequestState(table)
    kv = PrefixCachePool(state, 8, 16, PrefixCache(8, 16, 16, None), False)
    kv.admit(0, reserve=False)
    assert kv.used_blocks == 0 and kv.grow(0, 32)
    kv.cache_prompt(0, 32)
    assert (kv.used_blocks, int(state.blocks[0]), int(state.unit_blocks[0])) == (2, 0, 2)
    state.ctx[0] = 32
    kv.preempt(0, decoding=False)
    assert kv.used_blocks == 0 and kv.cached(0, 64) == 32


def _whole_prompt_limits(version: str, max_batch_size: int, max_batched_tokens: int) -> BatchLimits:
    """BatchLimits with the whole-prompt admission rule of vLLM `version` as the factory sets it."""
    from simulator.cluster.factory import engine_batch_rules
    rules = engine_batch_rules(("vllm", version), SimpleNamespace(kind="vllm_v1"), None, 0)
    return BatchLimits(max_batch_size, max_batched_tokens, 512, admit_whole_prompt=rules.admit_whole_prompt,
                       whole_prompt_window_cap=rules.whole_prompt_window_cap)


def test_the_whole_prompt_admission_rule_per_release():
    """`scheduler_reserve_full_isl` (default True) appears in vLLM 0.19.0 (config/scheduler.py SchedulerConfig; absent
    from 0.18.0 and 0.15.0); the sliding-window cap of its check (`max_admission_blocks_per_request`) in 0.20.0; both
    kept through 0.33.0 (wheels read 2026-11-29). Only vLLM V1's scheduler takes it."""
    from simulator.cluster.factory import engine_batch_rules
    v1 = SimpleNamespace(kind="vllm_v1")
    got = {v: (lambda r: (r.admit_whole_prompt, r.whole_prompt_window_cap))(engine_batch_rules(("vllm", v), v1, None, 0))
           for v in ("0.10.2", "0.15.0", "0.18.0", "0.19.0", "0.20.0", "0.24.0", "0.33.0")}
    assert got == {"0.10.2": (False, False), "0.15.0": (False, False), "0.18.0": (False, False),
                   "0.19.0": (True, False), "0.20.0": (True, True), "0.24.0": (True, True), "0.33.0": (True, True)}
    assert not engine_batch_rules(("sglang", "0.5.2"), SimpleNamespace(kind="vllm"), None, 0).admit_whole_prompt


@pytest.mark.parametrize("version", ["0.15.0", "0.20.0", "0.24.0"])
def test_a_prompt_whose_first_chunk_fits_but_whole_prompt_does_not(version):
    """Two 64-token prompts (4 blocks of 16 each), 6 blocks, a 48-token budget. Step 1: A's first 48 tokens (3 blocks).
    Step 2: A's last 16 (4 blocks, 2 free); 32 tokens of budget left for B, whose first chunk needs 2 blocks.
    vLLM 0.15.0 (`Scheduler.schedule`'s waiting loop: `allocate_slots` for the chunk only) admits B (6 blocks in use),
    and at step 3 A's first decode needs a 5th block: B, the newest, is preempted (recompute) and computes its chunk
    again later. vLLM 0.20.0 (`can_fit_full_sequence(request, ...)` before `allocate_slots`, kv_cache_manager.py) and
    0.24.0 (`allocate_slots(..., full_sequence_must_fit=True)`, watermark 0.0) ask for B's 4 blocks of its whole
    prompt against 2 free: `break`, B waits until A is done and nobody is preempted."""
    limits = _whole_prompt_limits(version, 8, 48)
    table = RequestTable(np.zeros(2), np.array([64, 64]), np.array([3, 2]))
    state = RequestState(table)
    rep = Replica(0, state, VllmV1(limits), BlockPool(state, 6, 16), limits, cost=SimpleNamespace(flops_scales=(1.0, 1.0)),
                  acceptance=None, log=StepLog())
    rep.waiting.extend([0, 1])
    walk = _compositions(rep, 8)
    if version == "0.15.0":
        assert walk[:4] == [
            ([(0, 48)], [], 3),
            ([(0, 16), (1, 32)], [], 6),   # B admitted by its first chunk's 2 blocks
            ([], [0], 5),                  # A's decode takes a 5th block: B preempted, its 2 blocks freed
            ([], [0], 5),                  # A's last token (3 out); B's 4 blocks do not fit beside A's 5
        ]
        assert state.preemptions.tolist() == [0, 1]
    else:
        assert walk[:6] == [
            ([(0, 48)], [], 3),
            ([(0, 16)], [], 4),            # B's whole prompt: 4 blocks > 2 free, it waits
            ([], [0], 5),
            ([], [0], 5),                  # A's last token; it finishes, its 5 blocks freed
            ([(1, 48)], [], 3),            # B's whole prompt fits now: its first chunk
            ([(1, 16)], [], 4),
        ]
        assert state.preemptions.tolist() == [0, 0]
    assert rep.kv.used_blocks == 0 and not rep.running and not rep.waiting   # every request done, every block back


def test_with_a_prefix_cache_the_whole_prompt_check_counts_the_hit():
    """The case of test_with_a_prefix_cache_a_prompt_is_admitted_when_its_hit_and_first_chunk_fit under vLLM 0.20+
    (`can_fit_full_sequence` / `full_sequence_must_fit`: `get_num_blocks_to_allocate` for all 96 tokens of B, its hit
    S counted as computed, S's blocks in the free queue counted as taken): at step 2 B's whole prompt needs 6 - 2 = 4
    blocks (S in use by A) against 2 free, so B waits instead of being admitted and preempted at step 3; once A is
    done B's need is 6 - 2 + 2 (S's blocks now free cached) = 6 of 7 free."""
    rep, state, kv, walk = _shared_prefix_walk(_whole_prompt_limits("0.20.0", 8, 48), 9)
    assert walk == [
        ([(0, 48)], [], 3, 0, [1, 2, 11]),
        ([(0, 32)], [], 5, 0, [1, 2, 11, 12, 13]),          # B: 4 blocks > 2 free, waits
        ([], [0], 6, 0, [1, 2, 11, 12, 13]),                # B: 4 > 1
        ([], [0], 6, 0, [1, 2, 11, 12, 13]),
        ([], [0], 6, 0, [1, 2, 11, 12, 13]),                # A's last token; it finishes
        ([(1, 48)], [], 5, 32, [1, 2, 21, 22, 23]),         # B hits S (free cached, touched), 3 new blocks
        ([(1, 16)], [], 6, 32, [1, 2, 21, 22, 23, 24]),
        ([], [1], 7, 32, [1, 2, 21, 22, 23, 24]),
        ([], [], 0, 32, []),
    ]
    assert state.preemptions.tolist() == [0, 0]
    assert kv.cache.free_blocks == kv.total_blocks and not kv.cache.growing
