"""One model replica: continuous batching with a paged KV cache and speculative decoding (chain, tree,
multi-draft; simulator.speculation.shapes), optionally under a control policy
(simulator.speculation.control, step by step). Batching schedulers: `BATCHING` at the end.

The replica forms one step at a time (`plan_step` → `apply_step`) or, when its batch cannot change
until the next arrival or the first finish, a bulk of decode steps at once (`plan_bulk` → `apply_bulk`).
Both paths produce identical results: they price steps with the same function, draw acceptance from the
same counter-based stream (simulator.speculation.acceptance) and allocate KV blocks by the same rule.

KV blocks are counted, not placed: a request holds ceil(tokens / block_size) blocks; fragmentation is
zero under paging by construction, so counting is exact for capacity purposes.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from models.step import chunk_attention_pairs
from simulator.speculation.acceptance import ChainAcceptance
from simulator.config.scenario import SchedulerConfig
from simulator.core.bulk import DecodeProfile
from simulator.core.state import RequestState
from simulator.core.steplog import StepLog
from simulator.cost.step_cost import StepCostModel

@dataclass
class StepPlan:
    prefill_ids: list[int]
    prefill_chunks: list[int]
    decode_ids: np.ndarray
    prefill_attn_pairs: int
    decode_context_tokens: int
    queued: int = 0   # waiting requests when the step was formed
    running: int = 0  # admitted requests when the step was formed
    counts: np.ndarray | None = None  # per-decode-request draft counts chosen by a policy (None: fixed)

    @property
    def empty(self) -> bool:
        return not self.prefill_ids and not len(self.decode_ids)


class Replica:
    def __init__(self, index: int, state: RequestState, sched: SchedulerConfig, cost: StepCostModel,
                 acceptance: ChainAcceptance | None, total_blocks: int, log: StepLog, policy=None):
        self.index = index
        self.s = state
        self.sched = sched
        self.batching = BATCHING[sched.kind]
        self.cost = cost
        self.acceptance = acceptance
        self.depth = acceptance.depth if acceptance is not None else 0
        # draft tokens verified per request per step (tree nodes for trees) and verify query tokens
        self.draft_tokens = acceptance.draft_tokens if acceptance is not None else 0
        self.q = cost.q if acceptance is not None else 1
        self.policy = policy  # a simulator.speculation.control.ControlPolicy, or None (fixed shape)
        self.total_blocks = total_blocks
        self.used_blocks = 0
        self.log = log
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.prefilling = 0  # running requests whose prefill is not complete
        self.pending_finish_s = np.zeros(0)  # sorted finish times inside the bulk in flight
        self.clock_s = 0.0
        self.last_step_s = 0.0  # duration of the latest decode-only step (sizes bulk plans; no effect on results)
        self.arrivals = None   # simulator.core.timeline.OwnArrivals when routed ahead of time, else None
        self.cuttable_end_s = -np.inf  # end of a bulk in flight that an arrival routed here would cut
        self.profile = DecodeProfile(self)  # the decoding requests' futures, for bulks (simulator.core.bulk)

    # ---- load seen by the router -------------------------------------------------------------------
    def outstanding_at(self, now_s: float) -> int:
        """Requests routed here and not finished at `now_s`. A bulk in flight has applied none of its
        finishes yet, so those that happen before `now_s` are subtracted (as in step-by-step mode, where
        a finish at exactly `now_s` is processed after an arrival at `now_s`)."""
        pending = self.pending_finish_s
        early = int(np.searchsorted(pending, now_s, side="left")) if len(pending) else 0
        return len(self.waiting) + len(self.running) - early

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def blocks_for(self, tokens) -> np.ndarray | int:
        return -(-tokens // self.sched.block_size)

    def fits(self, r: int) -> bool:
        """Request `r` can ever run here: its whole life (prompt + output + a verify window) fits in KV."""
        s = self.s
        return self.blocks_for(int(s.prompt[r] + s.output[r] + self.q)) <= self.total_blocks

    def fits_mask(self, ids: np.ndarray) -> np.ndarray:
        """`fits` of many requests at once."""
        s = self.s
        return self.blocks_for(s.prompt[ids] + s.output[ids] + self.q) <= self.total_blocks

    # ---- admission / preemption --------------------------------------------------------------------
    def _is_decoding(self, r: int) -> bool:
        return self.s.prefilled[r] >= self.s.prefill_target[r]

    def _head_admissible(self, token_room: int, batch_len: int) -> bool:
        if not self.waiting or len(self.running) >= self.sched.max_batch_size:
            return False
        r = self.waiting[0]
        need = self.blocks_for(int(self.s.prefill_target[r]))
        if need > self.total_blocks - self.used_blocks:
            return False
        return token_room > 0 and (batch_len == 0 or self.s.prefill_target[r] <= token_room)

    def _admit_head(self, now_s: float) -> int:
        r = self.waiting.popleft()
        s = self.s
        need = int(self.blocks_for(int(s.prefill_target[r])))
        s.blocks[r] = need
        self.used_blocks += need
        s.prefilled[r] = 0
        s.ctx[r] = 0
        if np.isnan(s.admit_s[r]):
            s.admit_s[r] = now_s
        self.running.append(r)
        self.prefilling += 1
        return r

    def _preempt(self, r: int) -> None:
        """Preemption by recompute: free the request's KV; on re-admission it re-prefills prompt + emitted."""
        s = self.s
        if not self._is_decoding(r):
            self.prefilling -= 1
        self.used_blocks -= int(s.blocks[r])
        s.blocks[r] = 0
        s.ctx[r] = 0
        s.prefilled[r] = 0
        s.prefill_target[r] = s.prompt[r] + s.emitted[r]
        s.preemptions[r] += 1
        self.running.remove(r)
        self.waiting.appendleft(r)

    def _reserve_decode_blocks(self, decode_ids: list[int]) -> list[int]:
        """Make room for each decode request's ctx + q tokens, preempting the most recently admitted
        requests (LIFO, as vLLM does) until they fit. Returns the surviving decode ids."""
        self.profile.dissolve()   # the step-by-step path reads and writes the requests' state
        s = self.s
        while decode_ids:
            ids = np.asarray(decode_ids)
            need = self.blocks_for(s.ctx[ids] + self.q)
            extra = np.maximum(need - s.blocks[ids], 0)
            if int(extra.sum()) <= self.total_blocks - self.used_blocks:
                s.blocks[ids] += extra
                self.used_blocks += int(extra.sum())
                return decode_ids
            victim = self.running[-1]
            self._preempt(victim)
            if victim in decode_ids:
                decode_ids = [r for r in decode_ids if r != victim]
        return decode_ids

    # ---- step formation ----------------------------------------------------------------------------
    def plan_step(self, now_s: float) -> StepPlan:
        plan = self._plan(now_s)
        plan.queued, plan.running = len(self.waiting), len(self.running)
        if self.policy is not None and len(plan.decode_ids):
            plan.counts = self.policy.counts(self, plan.decode_ids, plan.queued)
        return plan

    def _plan(self, now_s: float) -> StepPlan:
        return self.batching.plan(self, now_s)

    def _plan_vllm(self, now_s: float) -> StepPlan:
        """Prefill-first: if any waiting request can be admitted, this step prefills the admitted ones
        (FCFS, up to max_batched_tokens; a lone prompt longer than the budget is admitted alone)."""
        prefill_ids: list[int] = []
        room = self.sched.max_batched_tokens
        while self._head_admissible(room if prefill_ids else max(room, 1), len(prefill_ids)):
            r = self._admit_head(now_s)
            prefill_ids.append(r)
            room -= int(self.s.prefill_target[r])
        if prefill_ids:
            chunks = [int(self.s.prefill_target[r]) for r in prefill_ids]
            pairs = sum(chunk_attention_pairs(c, 0) for c in chunks)
            return StepPlan(prefill_ids, chunks, np.zeros(0, dtype=np.int64), pairs, 0)
        decode_ids = self._reserve_decode_blocks(list(self.running))
        ids = np.asarray(decode_ids, dtype=np.int64)
        return StepPlan([], [], ids, 0, int(self.s.ctx[ids].sum()))

    def _plan_sarathi(self, now_s: float) -> StepPlan:
        """Chunked prefill (Sarathi-Serve): all decodes run every step; prompt chunks fill the rest of a
        `chunk_tokens` token budget, partially prefilled requests first, then new admissions (FCFS)."""
        s = self.s
        decode_ids = self._reserve_decode_blocks([r for r in self.running if self._is_decoding(r)])
        room = self.sched.chunk_tokens - len(decode_ids) * self.q
        prefill_ids, chunks = [], []
        pairs = 0
        for r in self.running:
            if room <= 0:
                break
            if not self._is_decoding(r):
                c = int(min(room, s.prefill_target[r] - s.prefilled[r]))
                prefill_ids.append(r), chunks.append(c)
                pairs += chunk_attention_pairs(c, int(s.prefilled[r]))
                room -= c
        while room > 0 and self.waiting and len(self.running) < self.sched.max_batch_size:
            r = self.waiting[0]
            if self.blocks_for(int(s.prefill_target[r])) > self.total_blocks - self.used_blocks:
                break
            self._admit_head(now_s)
            c = int(min(room, s.prefill_target[r]))
            prefill_ids.append(r), chunks.append(c)
            pairs += chunk_attention_pairs(c, 0)
            room -= c
        ids = np.asarray(decode_ids, dtype=np.int64)
        return StepPlan(prefill_ids, chunks, ids, pairs, int(s.ctx[ids].sum()))

    # ---- executing one step ------------------------------------------------------------------------
    def _sample_tau(self, ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        if self.acceptance is None:
            return np.zeros(np.broadcast(ids, step_index).shape, dtype=np.int64)
        return self.acceptance.draw(ids, step_index, self.s.emitted[ids])

    def step_costs(self, plan: StepPlan):
        if plan.counts is not None:
            return self.policy.price(plan, self)
        return self.cost.step(sum(plan.prefill_chunks), len(plan.prefill_ids), plan.prefill_attn_pairs,
                              len(plan.decode_ids), plan.decode_context_tokens)

    def apply_step(self, plan: StepPlan, start_s: float, end_s: float, costs, finished: list[int]) -> None:
        s = self.s
        draft, target = costs
        blocks_used = self.used_blocks
        if not plan.prefill_ids:  # a prefill step's duration says nothing about the next decode steps
            self.last_step_s = end_s - start_s
        emitted_total = 0
        for r, c in zip(plan.prefill_ids, plan.prefill_chunks):
            s.prefilled[r] += c
            s.ctx[r] += c
            if s.prefilled[r] >= s.prefill_target[r]:
                self.prefilling -= 1
                s.emitted[r] += 1
                emitted_total += 1
                if np.isnan(s.first_token_s[r]):
                    s.first_token_s[r] = end_s
        ids = plan.decode_ids
        tau_sum = 0
        if len(ids):
            tau = self._sample_tau(ids, s.decode_steps[ids])
            drafted = self.draft_tokens
            if plan.counts is not None:  # a policy verified fewer drafts: nested draws, truncate
                tau = np.minimum(tau, plan.counts)
                drafted = np.where(plan.counts == self.depth, self.draft_tokens, plan.counts)
            inc = np.minimum(tau + 1, s.output[ids] - s.emitted[ids])
            s.emitted[ids] += inc
            s.ctx[ids] += inc
            s.decode_steps[ids] += 1
            s.accepted[ids] += tau
            s.drafted[ids] += drafted
            tau_sum, emitted_total = int(tau.sum()), emitted_total + int(inc.sum())
        ds, ts = self.cost.flops_scales  # per-GPU op-graph FLOPs/bytes → replica totals
        self.log.append_row(replica=self.index, start_s=start_s, duration_s=end_s - start_s,
                        prefill_tokens=sum(plan.prefill_chunks), prefill_seqs=len(plan.prefill_ids),
                        decode_seqs=len(ids), query_tokens_per_seq=self._logged_q(plan),
                        decode_context_tokens=plan.decode_context_tokens, draft_s=draft.seconds,
                        verify_s=target.seconds - target.engine_s, engine_s=target.engine_s, accepted_tokens=tau_sum, emitted_tokens=emitted_total,
                        flops=ds * draft.flops + ts * target.flops, bytes=ds * draft.bytes + ts * target.bytes,
                        kv_blocks_used=blocks_used, kv_blocks_total=self.total_blocks,
                        queued_requests=plan.queued, running_requests=plan.running)
        self._finish_done(plan.prefill_ids + ids.tolist(), end_s, finished)

    def _logged_q(self, plan: StepPlan) -> int:
        if plan.counts is None or not len(plan.counts):
            return self.q
        if (plan.counts == self.depth).all():
            return self.q
        return int(round(float((plan.counts + 1).mean())))

    def _finish_done(self, candidates, end_s: float, finished: list[int]) -> None:
        s = self.s
        for r in candidates:
            if s.emitted[r] >= s.output[r] and np.isnan(s.finish_s[r]):
                s.finish_s[r] = end_s
                self.used_blocks -= int(s.blocks[r])
                s.blocks[r] = 0
                self.running.remove(r)
                finished.append(r)

    # ---- bulk of decode-only steps -----------------------------------------------------------------
    def bulk_ready(self) -> bool:
        """True when the next steps are decode-only and the batch cannot change before a finish, an
        arrival, or KV exhaustion: nothing is mid-prefill and the waiting head cannot be admitted (its
        admissibility only shrinks while decodes grow their KV)."""
        if not self.running or self.prefilling or self.policy is not None:
            return False
        return not self._head_admissible(self.batching.admission_room(self), 0)


class BatchingScheduler:
    """A batching scheduler: how a replica forms a step (`plan`) and the token room a waiting request
    must fit for the batch to change (`admission_room`, which decides when bulk stepping is safe)."""

    def __init__(self, plan, admission_room):
        self.plan, self.admission_room = plan, admission_room


# scheduler.kind -> BatchingScheduler (a new one: a plan method plus one line here)
BATCHING = {
    "vllm": BatchingScheduler(Replica._plan_vllm, lambda rep: max(rep.sched.max_batched_tokens, 1)),
    "sarathi": BatchingScheduler(Replica._plan_sarathi, lambda rep: rep.sched.chunk_tokens - len(rep.running) * rep.q),
}
