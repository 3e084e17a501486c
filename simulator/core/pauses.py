"""Per-request pauses: a request leaves its replica's batch until a time, then rejoins it. What decides the
pauses is a `PauseHook` (today iterative retrieval, simulator.speculation.ralmspec); this module keeps the
paused requests of one replica and what happens to their KV.

How the replica's timeline (simulator.core.timeline) sees them, the same way it sees arrivals:
- after every step the hook may pause some of the requests that emitted tokens (`Replica.apply_step`);
  a paused request is out of `running`, so no step decodes it and it cannot be preempted; one that keeps
  its KV stays in the engine and keeps its batch slot too (`Replica.held_rows`: running + paused with KV
  <= max_batch_size), so that rejoining `running` when its pause ends never takes the batch past
  max_batch_size;
- a request whose pause has ended rejoins at the first step boundary at or after its resume time
  (`rejoin`, before the step formed there), as an arrival routed to this replica joins `waiting`;
- a replica with nothing to run but paused requests sleeps until the earliest resume (or an arrival);
- at its resume the hook may roll the request back by some of its newest tokens (their KV is dropped)
  or end it (it finishes at its resume time, not at the next step boundary).

Its KV while paused (`release_kv`): kept resident (False: the request holds its blocks and rejoins
`running`, as a serving engine keeps a request that waits inside it), or released at a pause the hook
marks as long (True: the request re-enters `waiting` at its resume, at the tail as a re-submitted request
does, and is admitted and re-prefilled over prompt + emitted tokens like a request preempted by
recompute, without counting as a preemption; a pessimistic bound for an engine whose prefix cache would
keep part of it). Short pauses (`may_release` False, e.g. a host-side cache lookup) always keep it.
Replicas with a hook run step by step (`Replica.bulk_ready` is False): with a pause every
`interval` tokens per request, some request of a batch reaches one every few steps, so bulks would be a
step or two long (the bulk planner is untouched).
"""
from __future__ import annotations

import heapq
import math
from typing import Protocol


class PauseHook(Protocol):
    def after_step(self, rep, candidates: list[int], end_s: float) -> list[int]:
        """Pause some of `candidates` (requests that just emitted tokens) with `rep.paused.pause`;
        returns the others, which may finish."""

    def resume(self, rep, r: int, resume_s: float) -> tuple[int, bool]:
        """Request `r` rejoins at `resume_s`: (its newest tokens to roll back, whether it is then complete)."""


class PausedRequests:
    """The paused requests of one replica: a heap of (resume time, pause order, request)."""

    def __init__(self, hook: PauseHook, release_kv: bool = False):
        self.hook = hook
        self.release_kv = release_kv
        self.released_tokens = 0   # KV tokens released at pauses (re-prefilled at re-admission)
        self._released: set[int] = set()   # paused requests whose KV was released
        self._heap: list[tuple[float, int, int]] = []
        self._order = 0

    def __len__(self) -> int:
        return len(self._heap)

    def pause(self, rep, r: int, until_s: float, may_release: bool = True) -> None:
        """Request r (running on `rep`, decoding) leaves the batch until `until_s`; its KV is released
        when the replica releases KV at pauses and the pause `may_release` it."""
        rep.running.remove(r)
        if self.release_kv and may_release:
            self._released.add(r)
            s = rep.s
            self.released_tokens += int(s.ctx[r])
            rep.kv.release(r, "all")
            s.ctx[r] = 0
            s.prefilled[r] = 0
        else:
            rep.held_rows += int(rep.s.samples[r])
        heapq.heappush(self._heap, (until_s, self._order, r))
        self._order += 1

    def next_s(self) -> float:
        """The earliest resume time (infinite when none is paused)."""
        return self._heap[0][0] if self._heap else math.inf

    def rejoin(self, rep, now_s: float, finished: list[int]) -> None:
        """Requests whose pause ended by `now_s` rejoin in resume order: `rep.running` (at its end: the
        first to be preempted, LIFO) or, with released KV, `rep.waiting`; those the hook completes finish
        at their resume time (appended to `finished`)."""
        heap, s = self._heap, rep.s
        while heap and heap[0][0] <= now_s:
            until_s, _, r = heapq.heappop(heap)
            dropped, complete = self.hook.resume(rep, r, until_s)
            released = r in self._released
            self._released.discard(r)
            if dropped:
                self._roll_back(rep, r, dropped, released)
            if not released:
                rep.held_rows -= int(s.samples[r])
                rep.running.append(r)
                if complete:
                    rep.finish_done([r], until_s, finished)
            elif complete:   # nothing left to compute: it holds no KV
                s.finish_s[r] = until_s
                finished.append(r)
            else:
                s.prefill_target[r] = s.prompt[r] + s.emitted[r]
                rep.waiting.append(r)

    @staticmethod
    def _roll_back(rep, r: int, tokens: int, released: bool) -> None:
        """Drop request r's newest `tokens` tokens: they are not emitted any more, and a resident KV
        shrinks with them (its freed blocks return to the replica)."""
        s = rep.s
        s.emitted[r] -= tokens
        if released:
            return
        s.ctx[r] -= tokens
        rep.kv.shrink(r, int(rep.decode_kv_tokens(int(s.ctx[r]))))


def sleep_until_resume(rep, arrivals):
    """The timeline's wait of a replica with paused requests and nothing it can run: until the earliest
    resume or, sooner, an arrival (known ahead in `arrivals`, or routed meanwhile: that cuts the wait
    like a bulk in flight, `rep.cuttable_end_s`). A generator to `yield from`."""
    until = rep.paused.next_s()
    if arrivals is not None:
        until = min(until, arrivals.next_s())
        yield until
        rep.clock_s = until
        return
    rep.cuttable_end_s = until
    cut = yield until
    rep.cuttable_end_s = -math.inf
    rep.clock_s = until if cut is None else cut
