"""One model replica: its requests' columns and queues, continuous batching with speculative decoding (chain,
tree, multi-draft; simulator.speculation.shapes), optionally under a control policy
(simulator.speculation.control, step by step).

Its batching scheduler (simulator.core.sched) forms steps and its KV manager (simulator.core.kv) holds their
KV; the replica applies what they decide. It advances one step at a time (`plan_step` → `apply_step`) or,
when its batch cannot change until the next arrival or the first finish, a bulk of decode steps at once
(simulator.core.bulk). Both paths give identical results: they price steps with the same function, draw
acceptance from the same counter-based stream (simulator.speculation.acceptance) and grow KV by the same
rule.

Parallel sampling (`RequestState.samples` > 1, simulator.core.state): a request's sequences decode in
lockstep, one decode row each, and `max_batch_size` counts sequences (`batch_full`); such replicas run
step by step.
"""
from __future__ import annotations

import math
from collections import deque

import numpy as np

from simulator.core.bulk import DecodeProfile
from simulator.core.bulk_replay import ReplayProfile
from simulator.core.kv.block_pool import BlockPool
from simulator.core.sched import Scheduler, StepPlan


class Replica:
    def __init__(self, index: int, state, scheduler: Scheduler, kv, limits, cost, acceptance, log, policy=None):
        self.index, self.s, self.scheduler, self.kv, self.limits = index, state, scheduler, kv, limits
        self.cost, self.acceptance, self.log = cost, acceptance, log
        # draft depth, draft tokens verified per request per step (tree nodes for trees), verify query tokens
        self.depth, self.draft_tokens, self.q = (0, 0, 1) if acceptance is None else \
            (acceptance.depth, acceptance.draft_tokens, cost.q)
        self.policy = policy  # a simulator.speculation.control.ControlPolicy, or None (fixed shape)
        self.waiting, self.running = deque(), []   # FCFS queue; admitted requests in admission order
        self.prefilling = 0  # running requests whose prefill is not complete
        self.pending_finish_s = np.zeros(0)  # sorted finish times inside the bulk in flight
        self.clock_s = 0.0
        self.last_step_s = 0.0  # duration of the latest decode-only step (sizes bulk plans; no effect on results)
        self.arrivals = None   # simulator.core.timeline.OwnArrivals when routed ahead of time, else None
        self.cuttable_end_s = -np.inf  # end of a bulk (or wait) in flight that an arrival routed here would cut
        # the decoding requests' futures, for bulks (simulator.core.bulk; simulator.core.bulk_replay where the KV
        # manager sees a bulk's growth and finishes one by one)
        self.profile = (ReplayProfile if getattr(kv, "bulk_replay", False) else DecodeProfile)(self)
        self.multi_sample = bool((state.samples > 1).any())  # some request decodes several sequences
        self.paused = None   # simulator.core.pauses.PausedRequests when requests may leave the batch for a while
        self.held_rows = 0   # decode rows (sequences) of paused requests that keep their KV: they keep their batch slots
        # the plain block pool and one sequence per request: schedulers may read the pool's rule inline
        self.plain_kv = type(kv) is BlockPool and not self.multi_sample
        self._bulk_rule = None   # `bulk_ready`'s rule of the setup, read at its first call
        # `bulk_ready` found the waiting head admissible: the step planned next, at once and at this boundary,
        # admits it, and a scheduler that `reuses_head_verdict` does not check it again (`plan_step`)
        self.head_verdict = False
        self._tells_verdict = getattr(scheduler, "reuses_head_verdict", False)

    @property
    def parallel_safe(self) -> bool:
        """Its state read after a run is its clock and the requests' and the step log's (no policy, KV
        counters or pause state): it may run in a worker process (simulator.core.parallel)."""
        return self.policy is None and not self.kv.summarized and self.paused is None

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def life_tokens(self, ids):
        """The most KV tokens request(s) `ids` hold here in their life: prompt + output + a verify window."""
        s = self.s
        return s.prompt[ids] + s.output[ids] + self.q

    def decode_kv_tokens(self, ctx):
        """The KV tokens a decoding request of context `ctx` (an int or an array) asks for in a step: ctx + q, as
        vLLM's allocate_slots asks for computed + new tokens, at most `limits.decode_kv_cap` where the scheduler
        caps them (vLLM V1 near max_model_len: sched.vllm_v1's docstring), and `limits.kv_lookahead` slots beyond
        them (BatchLimits.with_lookahead)."""
        limits = self.limits
        need = ctx + self.q
        cap = limits.decode_kv_cap
        if cap is not None:
            need = np.minimum(need, cap)
        return limits.with_lookahead(need, limits.kv_lookahead)

    def peak_tokens(self, ids):
        """The most KV slots request(s) `ids` ask for in their life here: their prompt, then, at their last
        decode step, `decode_kv_tokens` of their context (prompt + output − 2: the last output token is sampled,
        never computed), what sched.grow_decodes and vllm_v1's _grow ask for."""
        s = self.s
        return np.maximum(self.decode_kv_tokens(s.prompt[ids] + s.output[ids] - 2), s.prompt[ids])

    def fits(self, ids):
        """Request(s) `ids` can ever run here: their peak (`peak_tokens`) fits in KV. (It took `life_tokens`,
        two tokens more: a request of exactly max_model_len tokens on a deployment vLLM's start-up check passes
        with one block to spare was dropped as exceeds_kv_capacity.)"""
        return self.kv.blocks(ids, self.peak_tokens(ids)) <= self.kv.total_blocks

    # ---- what schedulers read (simulator.core.sched) --------------------------------------------------
    def decoding(self, r: int) -> bool:
        return self.s.prefilled.item(r) >= self.s.prefill_target.item(r)

    def batch_full(self) -> bool:
        """The waiting head cannot join: the batch's sequences (those of requests paused with their KV
        included, `held_rows`) would exceed max_batch_size."""
        if not self.multi_sample:
            return len(self.running) + self.held_rows >= self.limits.max_batch_size
        s = self.s
        rows = int(s.samples[self.running].sum()) if self.running else 0
        return rows + self.held_rows + int(s.samples[self.waiting[0]]) > self.limits.max_batch_size

    def decode_rows(self, ids) -> int:
        """Decode rows of the decode requests `ids`: one per sequence."""
        return int(self.s.samples[ids].sum()) if self.multi_sample else len(ids)

    def decode_context(self, ids: np.ndarray) -> int:
        """Σ context over the decode rows of `ids` (every sequence attends its own context)."""
        s = self.s
        return int((s.samples[ids] * s.ctx[ids]).sum()) if self.multi_sample else int(s.ctx[ids].sum())

    def blocks_held(self, ids) -> np.ndarray:
        """Blocks the running requests `ids` hold now, decoding in the bulk profile or not (without settling
        it: a check between bulks must not cost a re-join of the batch)."""
        return self.profile.blocks_held(ids)

    def settle(self) -> None:
        """Write the bulk profile's decoding requests back to the columns (before a step reads them; the
        profile keeps them until the step is applied, DecodeProfile.after_step)."""
        self.profile.dissolve()

    # ---- what schedulers do ----------------------------------------------------------------------------
    def admit_head(self, now_s: float, reserve: bool = True) -> int:
        """Admit the waiting head: its KV manager reserves its prompt (`reserve` False: per chunk) and says
        what it holds already (`prefilled` = cached tokens), or resumes a request swapped to host memory."""
        r = self.waiting.popleft()
        s = self.s
        at = s.at   # (memoryviews: cheaper scalar reads and writes, simulator.core.state.ScalarViews)
        if math.isnan(at.admit_s[r]):
            at.admit_s[r] = now_s
        self.running.append(r)
        tokens, resumed = self.kv.admit(r, reserve)
        at.ctx[r] = tokens
        if resumed:   # decodes from the next decode step
            s.prefilled[r] = s.prefill_target[r]
        else:
            at.prefilled[r] = tokens
            self.prefilling += 1
        return r

    def unadmit_head(self, r: int) -> None:
        """Put r, admitted in the step being formed but whose first blocks did not fit, back at the head of the
        waiting queue, as if never admitted (vLLM V1: allocate_slots returns None for a waiting request and the
        scheduler stops admitting; no preemption). Its blocks are freed (a prefix cache keeps its units)."""
        s = self.s
        self.prefilling -= 1
        self.kv.release(r, "all")
        s.ctx[r] = s.prefilled[r] = 0
        if s.preemptions[r] == 0:
            s.admit_s[r] = math.nan
        self.running.remove(r)
        self.waiting.appendleft(r)

    def preempt(self, r: int) -> None:
        """Preemption by recompute: free the request's KV; on re-admission it re-prefills prompt + emitted.
        With `kv_cache.preemption: swap` a decoding request's KV may go to host memory instead."""
        s = self.s
        decoding = self.decoding(r)
        if not decoding:
            self.prefilling -= 1
        if not self.kv.preempt(r, decoding):
            s.ctx[r] = 0
            s.prefilled[r] = 0
            s.prefill_target[r] = s.prompt[r] + s.emitted[r]
        s.preemptions[r] += 1
        self.running.remove(r)
        self.waiting.appendleft(r)

    # ---- one step --------------------------------------------------------------------------------------
    def plan_step(self, now_s: float) -> StepPlan:
        if self.head_verdict:   # (set by `bulk_ready` just before: nothing changed in between)
            self.head_verdict = False
            plan = self.scheduler.plan(self, now_s, head_ok=True)
        else:
            plan = self.scheduler.plan(self, now_s)
        plan.queued, plan.running = len(self.waiting), len(self.running)
        if self.policy is not None and len(plan.decode_ids):
            plan.counts = self.policy.counts(self, plan.decode_ids, plan.queued)
        if not self.plain_kv:   # (the plain pool adds nothing to a plan: BlockPool.on_plan)
            self.kv.on_plan(plan)
        return plan

    def step_costs(self, plan: StepPlan):   # -> simulator.cost.step_cost.StepCost
        if plan.counts is not None:
            costs = self.policy.price(plan, self)
        else:
            ids = plan.decode_ids   # (none in a prefill-first step: one per arrival, no call for its rows)
            costs = self.cost.step(sum(plan.prefill_chunks), len(plan.prefill_ids), plan.prefill_attn_pairs,
                                   self.decode_rows(ids) if len(ids) else 0, plan.decode_context_tokens, plan.shared,
                                   host=not plan.host_free)
        if plan.io_tokens:
            costs = costs.with_kv_io(self.kv.io_seconds(plan.io_tokens, plan.io_transfers))
        return costs

    def apply_step(self, plan: StepPlan, start_s: float, end_s: float, costs, finished: list[int]) -> None:
        s = self.s
        blocks_used = self.kv.used_blocks
        if not plan.prefill_ids:  # a prefill step's duration says nothing about the next decode steps
            self.last_step_s = end_s - start_s
        emitted_total = 0
        at = s.at   # (memoryviews of the columns: Python ints and floats, simulator.core.state.ScalarViews)
        for r, c in zip(plan.prefill_ids, plan.prefill_chunks):
            prefilled = at.prefilled[r] + c
            at.prefilled[r] = prefilled
            at.ctx[r] = at.ctx[r] + c   # (Python ints: a NumPy scalar's += costs more than the step's work)
            if prefilled >= at.prefill_target[r]:
                self.prefilling -= 1
                at.emitted[r] = at.emitted[r] + 1
                # each sequence's first token, from the prompt's logits
                emitted_total += s.samples.item(r) if self.multi_sample else 1
                if math.isnan(at.first_token_s[r]):
                    at.first_token_s[r] = end_s
        ids = plan.decode_ids
        decodes = len(ids)   # (read once: none in a prefill-first step, one per arrival)
        tau_sum = 0
        if decodes:
            acc = self.acceptance
            tau = np.zeros(decodes, dtype=np.int64) if acc is None else acc.draw(ids, s.decode_steps[ids], s.emitted[ids])
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
            tau_sum = int(tau.sum())
            emitted_total += int((inc * s.samples[ids]).sum()) if self.multi_sample else int(inc.sum())
        self.log.append_step(self, plan, start_s, end_s, costs, tau_sum, emitted_total, blocks_used)
        if self.paused is not None:   # some of them leave the batch for a while (simulator.core.pauses)
            candidates = plan.prefill_ids + ids.tolist() if decodes else plan.prefill_ids
            candidates = self.paused.hook.after_step(self, candidates, end_s)
        elif decodes:   # only the decodes that emitted their last token can finish (checked at once)
            candidates = plan.prefill_ids + ids[s.emitted[ids] >= s.output[ids]].tolist()
        else:
            candidates = plan.prefill_ids
        self.finish_done(candidates, end_s, finished)
        self.profile.after_step(ids)

    def finish_done(self, candidates, end_s: float, finished: list[int]) -> None:
        at = self.s.at
        for r in candidates:
            if at.emitted[r] >= at.output[r] and math.isnan(at.finish_s[r]):
                at.finish_s[r] = end_s
                self.kv.release(r, "shared")
                self.running.remove(r)
                finished.append(r)

    # ---- bulks of decode-only steps --------------------------------------------------------------------
    def bulk_ready(self) -> bool:
        """True when the next steps are decode-only and the batch cannot change before a finish, an
        arrival, or KV exhaustion: nothing is mid-prefill and the waiting head cannot be admitted (its
        admissibility only shrinks while decodes grow their KV). Bulks (simulator.core.bulk) need a fixed
        shape, one sequence per request and a KV manager whose growth they can count (`kv.bulk_capable`:
        not parallel samples' forks, hybrid state, sliding windows, or a prefix cache pricing shared-prefix
        attention; simulator.core.kv.prefix_cache.PrefixCachePool)."""
        if not self.running or self.prefilling:
            return False
        every = self._bulk_rule
        if every is None:   # (the first time: what does not change in a run, read once)
            every = self._bulk_rule = self._bulk_rule_of_setup()
        if every is not True and (every is False or not every(self)):
            return False
        return not self.admits_head()

    def admits_head(self) -> bool:
        """`head_admissible`, where the next step is formed at once and here (nothing mid-prefill): the scheduler's
        first admission check in that step would repeat this one (its arguments are the same: admission_room, no
        prompt in the step yet), so it is told the verdict instead (`head_verdict`)."""
        if self.head_admissible():
            self.head_verdict = self._tells_verdict
            return True
        return False

    def _bulk_rule_of_setup(self):
        """What `bulk_ready` reads of the replica's setup (fixed once it runs): False when its policy, KV
        manager, pauses or scheduler never allow bulks; else the scheduler's `decodes_every_running`, or True
        without one."""
        if self.policy is not None or not self.kv.bulk_capable or self.paused is not None \
                or not getattr(self.scheduler, "allows_bulks", True):
            return False
        return getattr(self.scheduler, "decodes_every_running", True)   # (simulator.core.sched.Scheduler)

    def head_admissible(self) -> bool:
        """The waiting head would be admitted by the next step (the batching scheduler's rule; with nobody
        waiting there is no head)."""
        if not self.waiting:   # (a test, not a bool() call: this runs at every arrival of a prefill-first fleet)
            return False
        scheduler = self.scheduler
        return scheduler.admissible(self, scheduler.admission_room(self))
