"""The two replica kinds of a disaggregated cluster (simulator.cluster.handoff): prefill-only and decode-only.

Both reuse `Replica`'s continuous batching, step pricing and KV block counting; they differ in where a
request enters and leaves:

- `PrefillReplica`: admits prompts exactly as a co-located replica does (vllm prefill-first or sarathi
  chunks), emits the first token when a prompt's last chunk is computed (TTFT counts it there) and then
  hands the request off (`handoff`). Its KV blocks stay held (`held`) until the KV has left the replica
  (`release`), so a slow transfer back-pressures the prefill pool's memory, as in DistServe/vLLM.
- `DecodeReplica`: requests are routed here at hand-off and queue in `waiting` (FCFS) until the replica
  *reserves* their KV blocks; the KV transfer starts at reservation; when it has arrived the request
  sits in `inbox` and joins the running batch at the first step boundary at or after its arrival.

Decode-side KV reservation (a choice, documented here): at reservation the decode replica sets aside
blocks for the request's whole life, prompt + output + γ + 1 tokens (more where the deployment asks for
lookahead slots beyond them: `reservation_tokens`), and one batch slot
(running + in transfer + arrived ≤ max_batch_size). A decode replica therefore never preempts. This is
the output length as a perfect `max_tokens`: it is optimistic about memory for requests that stop early
in reality, and it is exact for the fixed-length workloads the DistServe comparison uses.
Reservations are made at the replica's step boundaries (and at once when it is idle), i.e. by its
scheduler loop, which keeps the step-by-step and bulk modes identical.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from simulator.core.replica import Replica
from simulator.core.sched import StepPlan


class PrefillReplica(Replica):
    """A replica of the prefill pool (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.handoff: list[int] = []     # requests whose prefill completed in the latest step
        self.held: dict[int, tuple[int, int]] = {}   # request -> (its blocks, KV tokens) until its transfer completes

    def can_admit_head(self) -> bool:
        if not self.waiting or len(self.running) >= self.limits.max_batch_size:
            return False
        order = getattr(self.scheduler, "queue_order", None)
        if order is not None:   # the head SGLang's --schedule-policy would take (simulator.core.sched.queue_order)
            order.order(self)
        return self.kv.need(self.waiting[0])[0] <= self.kv.total_blocks - self.kv.used_blocks

    def has_work(self) -> bool:
        """Running prefills, or a waiting prompt that fits and that the batching scheduler would admit (one
        blocked by KV still being sent waits for a `release`). Its blocks alone are not enough: TensorRT-LLM's
        GUARANTEED_NO_EVICT admits a prompt only where the blocks of its whole prompt are free (sched.trtllm),
        while `can_admit_head` counts the prefix-cache blocks it shares with requests held here for their
        transfer as its own; the replica then planned empty steps at one clock forever (a hang)."""
        return bool(self.running) or (self.can_admit_head() and self.head_admissible())

    def life_tokens(self, ids):
        """A request holds KV here for its prompt only (it leaves at hand-off)."""
        return self.s.prompt[ids]

    def fits(self, ids):
        return self.kv.blocks_for(self.life_tokens(ids)) <= self.kv.total_blocks

    def bulk_ready(self) -> bool:
        return False  # prefill steps only

    def completing(self, plan: StepPlan) -> list[int]:
        """Requests of `plan` whose prefill completes with it and that will decode afterwards."""
        s = self.s
        return [r for r, c in zip(plan.prefill_ids, plan.prefill_chunks)
                if s.prefilled[r] + c >= s.prefill_target[r] and s.output[r] > 1]

    def apply_step(self, plan: StepPlan, start_s: float, end_s: float, costs, finished: list[int]) -> None:
        super().apply_step(plan, start_s, end_s, costs, finished)
        s = self.s
        self.handoff = []
        for r in plan.prefill_ids:
            if s.prefilled[r] >= s.prefill_target[r] and np.isnan(s.finish_s[r]):
                self.running.remove(r)
                self.held[r] = (int(s.blocks[r]), int(s.ctx[r]))
                s.blocks[r] = 0
                s.unit_blocks[r] = 0   # the prefix cache keeps its units (released with the request)
                self.handoff.append(r)

    def release(self, r: int) -> None:
        """The request's KV has left: free its blocks (with prefix caching its prompt's units stay cached
        here for later prompts, as Mooncake's prefill nodes keep them)."""
        private, ctx = self.held.pop(r)
        self.kv.free(r, ctx, private, "shared")


class DecodeReplica(Replica):
    """A replica of the decode pool (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.routed: deque[tuple[float, int]] = deque()   # (hand-off time, request) not yet seen by the scheduler
        self.inbox: deque[tuple[float, int]] = deque()    # (KV arrival time, request)
        self.in_transfer = 0
        self.decode_start_s: dict[int, float] = {}
        # Blocks reserved for requests not running here yet; written to the shared state's `blocks` when
        # the request joins the batch (with layer-wise overlap the reservation precedes the prefill's end,
        # while the prefill replica still accounts the request's blocks there).
        self.reserved: dict[int, int] = {}

    def has_work(self) -> bool:
        """Requests in the batch (those waiting for a reservation or their KV do not run here yet)."""
        return bool(self.running)

    def reservation_tokens(self, ids):
        """KV tokens reserved for request(s) `ids` (an int or an array) at hand-off (module docstring): prompt +
        output + q, or their peak ask where it is more (`peak_tokens`: the lookahead slots a vLLM V1 deployment asks
        for beyond context + q at every decode step, BatchLimits.kv_lookahead). Reserving less left such a request's
        last steps short of a block: the replica preempted the newest request, which was then reserved and sent a
        second time (a KeyError when its prefill replica released it again)."""
        s = self.s
        return np.maximum(s.prompt[ids] + s.output[ids] + self.q, self.peak_tokens(ids))

    def fits(self, ids):
        s = self.s
        return (s.output[ids] <= 1) | (self.kv.blocks_for(self.reservation_tokens(ids)) <= self.kv.total_blocks)

    def can_reserve_head(self) -> bool:
        if not self.waiting:
            return False
        if len(self.running) + self.in_transfer + len(self.inbox) >= self.limits.max_batch_size:
            return False
        return self.kv.blocks_for(self.reservation_tokens(self.waiting[0])) <= self.kv.free_blocks

    def next_event_s(self) -> float:
        """Earliest time at which something not yet seen by the scheduler becomes visible."""
        times = [q[0][0] for q in (self.routed, self.inbox) if q]
        return min(times) if times else np.inf

    def collect(self, now_s: float) -> list[int]:
        """At a step boundary `now_s`: take routed requests and arrived KV visible by then, then reserve
        blocks for the waiting head(s). Returns the requests whose reservation was made now (their KV
        transfers start at `now_s`)."""
        s = self.s
        while self.routed and self.routed[0][0] <= now_s:
            self.waiting.append(self.routed.popleft()[1])
        while self.inbox and self.inbox[0][0] <= now_s:
            r = self.inbox.popleft()[1]
            s.blocks[r] = self.reserved.pop(r)
            self.running.append(r)
            self.decode_start_s[r] = now_s
        reserved = []
        while self.can_reserve_head():
            r = self.waiting.popleft()
            need = int(self.kv.blocks_for(self.reservation_tokens(r)))
            self.reserved[r] = need
            self.kv.take(need)
            self.in_transfer += 1
            reserved.append(r)
        return reserved

    def kv_arrived(self, r: int, at_s: float) -> None:
        self.in_transfer -= 1
        self.inbox.append((at_s, r))

    def bulk_ready(self) -> bool:
        return bool(self.running) and self.policy is None

    def outstanding_at(self, now_s: float) -> int:
        """Requests handed off here and not finished at `now_s` (the decode router's load). A bulk in flight
        has applied none of its finishes yet, so those that happen before `now_s` are subtracted (as in
        step-by-step mode, where a finish at exactly `now_s` is processed after an arrival at `now_s`)."""
        pending = self.pending_finish_s
        early = int(pending.searchsorted(now_s, side="left")) if len(pending) else 0
        return len(self.waiting) + len(self.running) - early + len(self.routed) + self.in_transfer + len(self.inbox)
