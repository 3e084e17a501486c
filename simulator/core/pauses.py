"""Per-request pauses: a request leaves its replica's batch until a time, then rejoins it (its KV stays
resident meanwhile). What decides the pauses is a `PauseHook` (today iterative retrieval,
simulator.speculation.ralmspec); this module only keeps the paused requests of one replica.

How the replica's timeline (simulator.core.timeline) sees them, the same way it sees arrivals:
- after every step the hook may pause some of the requests that emitted tokens (`Replica.apply_step`);
  a paused request is out of `running`, so no step decodes it and it cannot be preempted;
- a request whose pause has ended rejoins `running` at the first step boundary at or after its resume
  time (`rejoin`, before the step formed there), as an arrival routed to this replica joins `waiting`;
- a replica with nothing to run but paused requests sleeps until the earliest resume (or an arrival);
- a hook may end a request at its resume (`PauseHook.resume` returns True): it finishes at its resume
  time, not at the next step boundary.
Replicas with a hook run step by step (`Replica.bulk_ready` is False): bulks would have to end at every
pause and resume (named in the README; the bulk planner is untouched).
"""
from __future__ import annotations

import heapq
import math
from typing import Protocol


class PauseHook(Protocol):
    def after_step(self, rep, candidates: list[int], end_s: float) -> list[int]:
        """Pause some of `candidates` (requests that just emitted tokens) with `rep.paused.pause`;
        returns the others, which may finish."""

    def resume(self, rep, r: int, resume_s: float) -> bool:
        """Request `r` rejoins at `resume_s`; True when it is then complete (it finishes there)."""


class PausedRequests:
    """The paused requests of one replica: a heap of (resume time, pause order, request)."""

    def __init__(self, hook: PauseHook):
        self.hook = hook
        self._heap: list[tuple[float, int, int]] = []
        self._order = 0

    def __len__(self) -> int:
        return len(self._heap)

    def pause(self, rep, r: int, until_s: float) -> None:
        """Request r (running on `rep`) leaves the batch until `until_s`, its KV blocks kept."""
        rep.running.remove(r)
        heapq.heappush(self._heap, (until_s, self._order, r))
        self._order += 1

    def next_s(self) -> float:
        """The earliest resume time (infinite when none is paused)."""
        return self._heap[0][0] if self._heap else math.inf

    def rejoin(self, rep, now_s: float, finished: list[int]) -> None:
        """Requests whose pause ended by `now_s` rejoin `rep.running` in resume order (at its end: the
        first to be preempted, LIFO); those the hook completes finish at their resume time (appended to
        `finished`)."""
        heap = self._heap
        while heap and heap[0][0] <= now_s:
            until_s, _, r = heapq.heappop(heap)
            rep.running.append(r)
            if self.hook.resume(rep, r, until_s):
                rep._finish_done([r], until_s, finished)


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
