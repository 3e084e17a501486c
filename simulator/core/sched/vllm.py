"""`scheduler.kind: vllm` — prefill-first continuous batching (vLLM V0's default; SGLang's, prefill batches apart
from decode batches): if any waiting request can be admitted, the step prefills the admitted ones (FCFS, up to
`max_batched_tokens`; a lone prompt longer than the budget is admitted alone, whole; at most
`limits.prefill_requests` of them where set: SGLang's prefill_only_one_req), else it decodes every running request.

With `limits.prefill_input_tokens` set (SGLang with chunked prefill: simulator.cluster.factory.engine_batch_rules)
prompts are chunked as SGLang's PrefillAdder chunks them (managers/schedule_policy.py, read in v0.4.2, v0.4.5 and
v0.5.9): the request being chunked goes first with the next chunk of at most `max_batched_tokens`
(chunked_prefill_size) tokens (`add_chunked_req`), then waiting requests FCFS, each whole while it fits the tokens
left, else truncated to them (`add_one_req`: `trunc_len = self.rem_chunk_tokens`), which ends the step; a prompt
of at least `prefill_input_tokens` (max_prefill_tokens) less the step's tokens is not started behind others
(`real_input_tokens >= self.rem_input_tokens and len(self.can_run_list) != 0`), a prompt counted less its prefix
match (extend_input_len, as the chunks and rem_total_tokens count it; the match is the cache's when the step is
formed: SGLang caches a batch's prompts after it has run, simulator.core.kv.prefix_cache). A step with prompt chunks
decodes nobody (enable_mixed_chunk off). Approximations, named: SGLang rounds a truncated chunk down to its page size
(0.5.x) and compares with `>` rather than `>=` in 0.4.x; neither is modelled.

With `limits.output_reserve` set (SGLang: simulator.cluster.factory.engine_batch_rules) a waiting request also needs
its prompt plus its clipped output to fit in the KV left after the running requests' future output × SGLang's
new_token_ratio, which decays each decode step and is reset by a retraction or an idle batch
(simulator.core.sched.sglang_reserve). Bulks of decode steps then run only while nobody waits or the batch is full
(the reserve's room grows as the ratio decays), and count their steps into the ratio (`after_bulk`).

With `limits.queue_order` set (SGLang's --schedule-policy: simulator.core.sched.queue_order) the waiting queue is
sorted by it before each step takes from its head, and before `admissible` reads the head."""
from __future__ import annotations

from models.step import chunk_attention_pairs
from simulator.core.sched import (NO_IDS, BatchLimits, Prefills, StepPlan, grow_decodes, head_admissible,
                                  plain_head_admissible)
from simulator.core.sched.sglang_reserve import NewTokenRatio


class Vllm:
    # plan(..., head_ok=True): the caller has just found the waiting head admissible with `admissible(view,
    # admission_room(view))` (Replica.bulk_ready), nothing mid-prefill: the first admission check is not repeated
    reuses_head_verdict = True

    def __init__(self, limits: BatchLimits):
        self.limits = limits
        rule = limits.output_reserve
        self.reserve = None if rule is None else NewTokenRatio(rule)
        self.queue_order = limits.queue_order   # None: arrival order
        if self.reserve is not None:   # (read by Replica.bulk_ready: simulator.core.sched.Scheduler)
            self.decodes_every_running = self._bulk_allowed
        # whole prompts in arrival order, none held back by SGLang's reserve: `_plan_plain` forms the plain pool's steps
        self._whole_fcfs = limits.prefill_input_tokens is None and self.reserve is None and self.queue_order is None
        # Its steps with prompts decode nobody and complete every prompt they start, and nothing but the waiting head's
        # admissibility decides whether the next step has prompts: a bulk may run through arrivals, their prefill
        # steps folded in (simulator.core.bulk_arrivals; Scheduler's optional attributes)
        self.prefills_apart = self._whole_fcfs
        # the token room a waiting request finds in a decode-only step (`admission_room`): fixed by the limits, and
        # read at every check of the waiting head (per arrival in a prefill-first fleet)
        self._admission_room = max(limits.max_batched_tokens, 1)

    def plan(self, view, now_s: float, head_ok: bool = False) -> StepPlan:
        if self._whole_fcfs and getattr(view, "plain_kv", False):
            return self._plan_plain(view, now_s, head_ok)
        if self.queue_order is not None:   # (SchedulePolicy.calc_priority: queue_order's docstring)
            self.queue_order.order(view)
        prefills = Prefills()
        limits = self.limits
        room = limits.max_batched_tokens
        chunking = limits.prefill_input_tokens is not None
        if chunking and view.prefilling:   # the request being chunked first (module docstring)
            for r in view.running:
                if room <= 0:
                    break
                if not view.decoding(r):
                    room -= prefills.add(view, r, room)
        admissible = plain_head_admissible if getattr(view, "plain_kv", False) else head_admissible
        reserve = self.reserve
        if reserve is not None and not view.running:
            reserve.reset()
        most, admitted = limits.prefill_requests, 0
        known = head_ok   # (the first check's outcome, from the caller: `reuses_head_verdict`)
        while (most is None or admitted < most) and (known or admissible(
                view, room if prefills.ids else max(room, 1), 0 if chunking else len(prefills.ids))):
            known = False
            if chunking and prefills.ids and self._too_long_behind(view, prefills):
                break
            if reserve is not None and not reserve.admits(view, prefills):
                break
            r = view.admit_head(now_s)
            if view.decoding(r):   # swapped back in: decodes from the next decode step
                continue
            room -= prefills.add(view, r, room if chunking else None)
            admitted += 1
        if prefills.ids:
            return prefills.plan(view, ())
        decode_ids = list(view.running)
        kept = grow_decodes(view, decode_ids)
        if reserve is not None and decode_ids:   # (Scheduler.update_running_batch: sglang_reserve's docstring)
            if len(kept) < len(decode_ids):
                reserve.after_retract(view, kept)
            else:
                reserve.decay()
        return prefills.plan(view, kept)

    def _plan_plain(self, view, now_s: float, head_ok: bool) -> StepPlan:
        """`plan` for the plain block pool with one sequence per request (`Replica.plain_kv`), whole prompts in
        arrival order and no reserve (`_whole_fcfs`): the same steps, formed without `Prefills` (the hot path of a
        prefill-first fleet: one per arrival). That pool admits a request with nothing computed and never resumes
        one (BlockPool.admit), so an admitted request's chunk is its whole prefill target from token 0."""
        s, limits = view.s, self.limits
        room, most = limits.max_batched_tokens, limits.prefill_requests
        ids, chunks, pairs = [], [], 0
        known = head_ok   # (the first check's outcome, from the caller: `reuses_head_verdict`)
        while (most is None or len(ids) < most) and (known or view.waiting and plain_head_admissible(
                view, room if ids else max(room, 1), len(ids))):   # (nobody waits after one arrival: no call)
            known = False
            r = view.admit_head(now_s)
            c = s.at.prefill_target[r]   # (a memoryview: simulator.core.state.ScalarViews)
            if c <= 0:   # nothing to compute: it decodes from the next decode step, as `plan` has it
                continue
            ids.append(r)
            chunks.append(c)
            pairs += chunk_attention_pairs(c, 0)
            room -= c
        if ids:
            return StepPlan(ids, chunks, NO_IDS, pairs, 0)
        return Prefills().plan(view, grow_decodes(view, list(view.running)))

    def _bulk_allowed(self, view) -> bool:
        """Bulks under SGLang's reserve: nobody waits, or the batch is full (module docstring); and no prompt waits
        to be cached until the next step is formed (SGLang's overlap loop: simulator.core.kv.prefix_cache)."""
        return (not view.waiting or view.batch_full()) and not view.kv.inserts_held()

    def after_bulk(self, steps: int) -> None:
        """A bulk of `steps` decode steps was applied (simulator.core.bulk.apply_bulk)."""
        if self.reserve is not None:
            self.reserve.decay(steps)

    def _too_long_behind(self, view, prefills) -> bool:
        """The waiting head's prompt is not started behind the step's other prompts: at least max_prefill_tokens
        (`limits.prefill_input_tokens`) less the step's tokens (module docstring)."""
        s, r = view.s, view.waiting[0]
        target = s.prefill_target.item(r)
        rest = target - s.prefilled.item(r) - view.kv.cached(r, target)   # (extend_input_len: the hit is not charged)
        return rest >= self.limits.prefill_input_tokens - sum(prefills.chunks)

    def admission_room(self, view) -> int:
        return self._admission_room

    def admissible(self, view, token_room: int) -> bool:
        if self.queue_order is not None:
            self.queue_order.order(view)
        if getattr(view, "plain_kv", False):
            fits = plain_head_admissible(view, token_room, 0)
        else:
            fits = head_admissible(view, token_room, 0)
        return fits and (self.reserve is None or self.reserve.admits(view, Prefills()))
