"""Bulk advance of decode-only steps: many steps of one replica computed as arrays in one event.

Valid while no step can admit a request and nothing is mid-prefill (see `Replica.bulk_ready`):
- waiting queue empty: the batch can only grow by an arrival, so the bulk ends at the first step boundary
  at or after the next arrival; requests finishing inside the bulk just leave the batch.
- waiting queue non-empty with a blocked head: arrivals join the tail and cannot unblock it (FCFS), but a
  finish frees a batch slot and KV blocks, so the bulk ends at the first step in which a request finishes.
- either way it ends before the first step that would need a preemption (KV exhaustion).
- closed-loop workloads (`Replica.stop_bulk_at_finish`): a finish sends the next request at that instant,
  so the bulk ends at the first step in which a request finishes.

Every quantity is computed by the same rules as the step-by-step path (same cost function, same
counter-based acceptance draws, same block arithmetic), so both modes give identical outputs; the test
suite checks this on every scheduling scenario.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


MAX_BULK_STEPS = 256
NEVER = np.iinfo(np.int64).max
_ROWS = np.arange(MAX_BULK_STEPS)[:, None]  # step index within a bulk, as a column


@dataclass
class BulkPlan:
    ids: np.ndarray           # (B,) requests decoding at the start of the bulk
    steps: int
    active: np.ndarray        # (steps, B) request b decodes in step k
    tau: np.ndarray | None    # (steps, B) accepted draft tokens (0 where inactive); None: plain decoding
    emitted: np.ndarray | None  # (steps, B) tokens emitted (capped at the output length); None: = active
    finish_step: np.ndarray   # (B,) step in which the request finishes, NEVER if not in this bulk
    decode_seqs: np.ndarray   # (steps,)
    context_sums: np.ndarray  # (steps,)
    starts_s: np.ndarray
    ends_s: np.ndarray
    draft: np.ndarray         # (steps, 3) seconds, flops, bytes
    target: np.ndarray        # (steps, 3)
    blocks_used: np.ndarray   # (steps,) replica blocks in use during each step
    final_blocks: np.ndarray  # (B,) blocks held after the bulk (0 for finished requests)
    blocks_delta: int         # change of the replica's blocks in use over the bulk
    finishes: bool            # some request finishes inside the bulk
    queued: int               # waiting requests when the bulk was planned
    held: np.ndarray | None = None  # (steps, B) private blocks each request holds in each step (prefix cache)


def plan_bulk(rep, now_s: float, next_arrival_s: float, stop_at_arrival: bool | None = None) -> BulkPlan | None:
    """Plan decode steps of replica `rep` from `now_s`; None when the very next step needs preemption.
    stop_at_arrival: end at the first step boundary at or after `next_arrival_s` (default: only when the
    waiting queue is empty; a disaggregated decode replica, whose arrivals are KV transfers that join
    the batch directly, always stops there).

    Written for few numpy calls per bulk (a bulk is ~10 steps of ~20 requests at serving loads, so call
    overhead, not arithmetic, is the cost): every (steps × requests) array is built once."""
    s = rep.s
    ids = np.array(rep.running, dtype=np.int64)
    remaining = s.output[ids] - s.emitted[ids]
    blocked_head = bool(rep.waiting)
    k_max = min(int(remaining.min() if blocked_head else remaining.max()), MAX_BULK_STEPS)
    if stop_at_arrival is None:
        stop_at_arrival = not blocked_head
    if stop_at_arrival and rep.last_step_s > 0 and math.isfinite(next_arrival_s):
        # Steps beyond the next arrival are discarded; plan ~1.5× the expected number (a short plan
        # only costs one more event, never accuracy).
        k_max = max(1, min(k_max, int(1.5 * (next_arrival_s - now_s) / rep.last_step_s) + 4))
    rows = _ROWS[:k_max]
    if rep.acceptance is not None:
        tau = rep.acceptance.draws(ids, s.decode_steps[ids], s.emitted[ids], k_max)
        cum = np.cumsum(tau + 1, axis=0)   # tokens emitted by the end of step k (uncapped)
        cum_before = cum - tau - 1
        done = cum >= remaining
        finish_step = np.where(done[-1], done.argmax(axis=0), NEVER)  # cum is increasing down the rows
    else:  # plain decoding: one token per step
        tau = None
        cum_before = rows
        finish_step = np.where(remaining <= k_max, remaining - 1, NEVER)
    first_finish, last_finish = int(finish_step.min()), int(finish_step.max())
    if blocked_head or rep.stop_bulk_at_finish:
        n = min(k_max, first_finish + 1)
    else:
        n = k_max if last_finish == NEVER else min(k_max, last_finish + 1)
    active = rows[:n] <= finish_step
    ctx = s.ctx[ids] + cum_before[:n]
    blocks0 = s.blocks[ids]
    blocks0_sum = int(blocks0.sum())
    # Context only grows, so the blocks a request needs never decrease along a bulk.
    block = rep.sched.block_size
    held = (ctx + (rep.q + block - 1)) // block  # = blocks_for(ctx + q), less the blocks of shared cached units
    held = np.maximum(held if rep.kv is None else held - s.unit_blocks[ids], blocks0)
    blocks_used = (held * active).sum(axis=1) + (rep.used_blocks - blocks0_sum)
    if rep.kv is not None and rep.kv.cache is not None:  # cached units freed by requests finished earlier
        frees = rep.kv.cache.unit_frees(ids, finish_step)
        if frees.any():
            blocks_used -= (frees * (finish_step < rows)).sum(axis=1)
    if blocks_used.max() > rep.total_blocks:
        n = int((blocks_used > rep.total_blocks).argmax())
        if n == 0:
            return None
        active, ctx = active[:n], ctx[:n]
    decode_seqs = active.sum(axis=1)
    context_sums = (ctx * active).sum(axis=1)
    draft, target = rep.cost.decode_steps(decode_seqs, context_sums, monotone=True)
    if rep.kv is not None and rep.kv.shared_attention:
        target = rep.cost.with_shared_prefix(draft, target, decode_seqs, context_sums,
                                             _shared_per_step(rep, ids, active))
    bounds = np.cumsum(np.concatenate(([now_s], draft[:, 0] + target[:, 0])))
    if stop_at_arrival:  # stop at the first step boundary at or after the next arrival
        first = int(np.searchsorted(bounds[1:], next_arrival_s))  # bounds are non-decreasing
        if first < n:
            n = first + 1
            bounds, draft, target, active = bounds[:n + 1], draft[:n], target[:n], active[:n]
    if tau is None:
        emitted = None
    else:
        emitted = (np.minimum(cum[:n], remaining) - np.minimum(cum_before[:n], remaining)) * active
        tau = tau[:n] * active
    finishes = first_finish < n
    if finishes:
        ended = finish_step < n
        finish_step, final_blocks = np.where(ended, finish_step, NEVER), np.where(ended, 0, held[n - 1])
    else:
        finish_step, final_blocks = np.full(len(ids), NEVER), held[n - 1]
    return BulkPlan(ids, n, active, tau, emitted, finish_step, decode_seqs[:n], context_sums[:n],
                    bounds[:n], bounds[1:], draft, target, blocks_used[:n], final_blocks,
                    int(final_blocks.sum()) - blocks0_sum, finishes, len(rep.waiting), held[:n])


def _shared_per_step(rep, ids: np.ndarray, active: np.ndarray) -> list:
    """Shared-prefix aggregates of each step's decode requests (they change only when one finishes)."""
    out, last_key, last = [], None, None
    for row in active:
        key = row.tobytes()
        if key != last_key:
            last_key, last = key, rep.kv.cache.shared_context(ids[row])
        out.append(last)
    return out


def _replay_blocks(rep, plan: BulkPlan) -> None:
    """Block moves of a bulk in step order, for a replica whose free queue decides evictions (prefix
    caching): each step's new blocks leave the queue, then the step's finished requests free theirs —
    what step-by-step mode does, so both modes evict the same cached units."""
    s, cache = rep.s, rep.kv.cache
    ids = plan.ids
    previous = s.blocks[ids].copy()
    for k in range(plan.steps):
        grow = int(((plan.held[k] - previous) * plan.active[k]).sum())
        if grow:
            cache.take(grow)
            rep.used_blocks += grow
        previous = np.where(plan.active[k], plan.held[k], previous)
        for b in np.flatnonzero(plan.finish_step == k):
            r = int(ids[b])
            rep.used_blocks -= cache.release(r, int(s.ctx[r]), int(previous[b]), "shared")
            s.unit_blocks[r] = 0


def apply_bulk(rep, plan: BulkPlan, finished: list[int]) -> None:
    s = rep.s
    ids, n = plan.ids, plan.steps
    steps_taken = plan.active.sum(axis=0)
    if plan.tau is None:  # plain decoding: one token per step, nothing drafted
        emitted, per_step_accepted, per_step_emitted = steps_taken, 0, plan.decode_seqs
    else:
        emitted = plan.emitted.sum(axis=0)
        s.accepted[ids] += plan.tau.sum(axis=0)
        s.drafted[ids] += rep.draft_tokens * steps_taken
        per_step_accepted, per_step_emitted = plan.tau.sum(axis=1), plan.emitted.sum(axis=1)
    s.emitted[ids] += emitted
    s.ctx[ids] += emitted
    s.decode_steps[ids] += steps_taken
    if rep.kv is not None and rep.kv.cache is not None:
        _replay_blocks(rep, plan)
    else:
        rep.used_blocks += plan.blocks_delta
    s.blocks[ids] = plan.final_blocks
    queued = plan.queued
    if len(rep.waiting) > queued:  # arrivals that joined behind a blocked head during the bulk
        joined = s.arrival_s[list(rep.waiting)[queued:]]
        queued = queued + np.searchsorted(joined, plan.starts_s, side="right")
    rep.last_step_s = float(plan.ends_s[-1] - plan.starts_s[-1])
    rep.log.append_bulk(
        n, replica=rep.index, start_s=plan.starts_s, duration_s=plan.ends_s - plan.starts_s,
        prefill_tokens=0, prefill_seqs=0, decode_seqs=plan.decode_seqs, query_tokens_per_seq=rep.q,
        decode_context_tokens=plan.context_sums, accepted_tokens=per_step_accepted,
        emitted_tokens=per_step_emitted, kv_blocks_used=plan.blocks_used, kv_blocks_total=rep.total_blocks,
        queued_requests=queued, running_requests=plan.decode_seqs,
        costs=(plan.draft, plan.target, rep.cost.flops_scales))
    if plan.finishes:
        done = np.flatnonzero(plan.finish_step != NEVER)
        order = done[np.argsort(plan.finish_step[done], kind="stable")]
        for r, k in zip(ids[order].tolist(), plan.finish_step[order].tolist()):
            s.finish_s[r] = plan.ends_s[k]
            rep.running.remove(r)
            finished.append(r)
