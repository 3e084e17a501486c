"""One replica's life as a generator of times: the step loop of every pool, run by the engine's two drivers.

`replica_timeline(rep, ctl)` forms steps (or bulks of decode steps) and yields, each time, the instant the
replica is busy until; the driver advances time and resumes it there:

- the *independent* driver (simulator.core.engine, colocated open-loop clusters with a router that routes
  ahead) runs each replica's generator to the end by itself: its arrivals are known (`OwnArrivals`), so
  nothing else can happen to it, and the cluster costs the sum of its replicas;
- the *coupled* driver wraps it in a SimPy process: requests are pushed into the replica's queue when
  they are routed (or, in a decode pool, when their KV arrives), an idle replica yields `IDLE` and is
  woken, and a bulk in flight that an arrival could change (`rep.cuttable_end_s`) is interrupted: the
  arrival's time comes back as the value of its `yield` and the bulk is cut at the first step boundary at
  or after it (`BulkPlan.cut`). That is the one way a bulk is cut.

What a pool adds is its `PoolSide`: nothing for a colocated pool; the KV hand-off for the prefill and
decode pools of a disaggregated cluster (simulator.cluster.handoff). Every pool and driver runs this same
code, so bulk and step-by-step modes form the same steps.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from simulator.core.bulk import apply_bulk, plan_bulk
from simulator.core.bulk_arrivals import extend as extend_bulk
from simulator.core.bulk_arrivals import folds_arrivals
from simulator.core.pauses import sleep_until_resume
from simulator.core.replica import Replica

IDLE = None  # yielded by a replica with nothing to do and no known arrival: the driver wakes it
SETTLE = "settle"   # yielded after a step's finishes were reported (`TimelineControls.settle`): the driver resumes
                    # it once the other events of this instant (other replicas' step ends) are processed
SUSPEND = "suspend"   # yielded at the end of the arrivals known so far (`OwnArrivals.until_s`): resume after `extend`
_NO_TIMES = np.zeros(0)


class OwnArrivals:
    """The requests routed ahead of time to one replica, in arrival order, and a cursor. Held as Python
    lists (read one or two at a time on the hot path, where a NumPy scalar read costs more than the work),
    with a sentinel after the last: its time is `until_s`, the end of what is known.

    `until_s` is infinite when every arrival is known (the independent driver). A driver that learns
    arrivals window by window (simulator.distributed: routers that read loads, synchronised every Δt)
    knows those before `until_s` only: the replica then runs no step that starts at or after `until_s`
    and yields `SUSPEND` there, until `extend` brings the next window's arrivals."""

    def __init__(self, ids: np.ndarray, arrival_s: np.ndarray, until_s: float = math.inf):
        self.ids, self.times, self.pos = ids.tolist(), arrival_s.tolist() + [until_s], 0
        self.until_s = until_s

    def next_s(self) -> float:
        return self.times[self.pos]

    def take(self, waiting, now_s: float) -> None:
        """Move the requests that arrived by `now_s` into `waiting` (an arrival at exactly a step
        boundary is seen by the step formed there)."""
        pos = self.pos
        times = self.times
        if times[pos] <= now_s:
            if pos < len(self.ids) and times[pos + 1] > now_s:   # one arrival (the common case): no search
                waiting.append(self.ids[pos])
                self.pos = pos + 1
                return
            end = min(bisect_right(times, now_s, pos), len(self.ids))
            waiting.extend(self.ids[pos:end])
            self.pos = end

    def extend(self, ids: list[int], times: list[float], until_s: float) -> None:
        """The next window's arrivals (all at or after the old `until_s`, before the new one)."""
        self.ids.extend(ids)
        self.times[-1:] = [*times, until_s]
        self.until_s = until_s


class PoolSide:
    """What a pool adds to its replicas' step loop; a colocated pool adds nothing. `boundary(rep)`: at each
    step boundary, before the step is formed; `pending_s(rep)`: the earliest arrival already known but not
    visible yet (it ends bulks; infinite: none); `stop_at_arrival`: bulks always end at such an arrival
    (None: only while nobody waits, simulator.core.bulk.plan_bulk); `stepped(rep, step, start_s, end_s)`:
    a step was formed; `applied(rep)`: it was applied."""

    stop_at_arrival: bool | None = None

    def boundary(self, rep) -> None:
        pass

    def pending_s(self, rep) -> float:
        return math.inf

    def stepped(self, rep, step, start_s: float, end_s: float) -> None:
        pass

    def applied(self, rep) -> None:
        pass


@dataclass
class TimelineControls:
    """What the driver tells the replicas of one pool. `report(rep, finished)`: called after every applied
    step or bulk with the requests that finished (the list is cleared afterwards). `horizon_s(rep, now)`:
    a guess of the next arrival routed to `rep` when it is not known ahead (sizes bulk plans; never
    changes results). `on_bulk(rep, plan)`: a bulk was committed or cut (the driver keeps the loads a
    router reads). `side`: the pool's PoolSide. `report_every_step` False: `report` is called only when
    requests finished (a driver that only counts finishes)."""

    bulk: bool
    report: object
    stop_at_finish: bool = False
    horizon_s: object = None
    on_bulk: object = None
    side: PoolSide = PoolSide()
    report_every_step: bool = True   # False: `report` only when requests finished (it only counts them)
    # closed loops: a finish sends a request at its instant, which a step formed at that instant must see
    # whichever replica's step ended first (open-loop arrivals come first by their urgent priority)
    settle: bool = False


def replica_timeline(rep, ctl: TimelineControls):
    """The step loop of a replica of any pool (module docstring)."""
    arrivals: OwnArrivals | None = rep.arrivals
    side, report, on_bulk = ctl.side, ctl.report, ctl.on_bulk
    hooks = type(side) is not PoolSide   # (a colocated pool's side does nothing: its calls are skipped)
    report_always = ctl.report_every_step
    finished: list[int] = []
    paused = rep.paused   # simulator.core.pauses.PausedRequests, or None (no request ever pauses)
    waiting, running = rep.waiting, rep.running
    # Whether the replica has a step to run: waiting or running requests for a plain replica (inline, the hot
    # path), its own rule for a pool's replica (a decode replica's waiting requests await a reservation or
    # their KV, a prefill replica's waiting head may not fit until a transfer frees blocks: without it they
    # would plan empty steps forever at one clock).
    own_work = type(rep).has_work is not Replica.has_work
    folds = folds_arrivals(rep, ctl, hooks)   # its bulks run through its arrivals (simulator.core.bulk_arrivals)
    while True:
        if arrivals is not None:
            if rep.clock_s >= arrivals.until_s:   # a step formed now could see arrivals not known yet
                yield SUSPEND
                continue
            arrivals.take(waiting, rep.clock_s)
        if hooks:
            side.boundary(rep)
        if paused is not None:
            if paused.next_s() <= rep.clock_s:
                paused.rejoin(rep, rep.clock_s, finished)
                if finished:
                    report(rep, finished)
                    finished.clear()
            if len(paused) and not rep.running and not rep.head_admissible():
                yield from sleep_until_resume(rep, arrivals)   # nothing to run until a resume or an arrival
                continue
        if not (rep.has_work() if own_work else (waiting or running)):
            nxt = arrivals.next_s() if arrivals is not None else side.pending_s(rep)
            if nxt == math.inf:
                if arrivals is not None:
                    return
                yield IDLE
            elif arrivals is not None and nxt >= arrivals.until_s:   # idle until the next window is known
                yield SUSPEND
            else:
                yield nxt
                rep.clock_s = max(rep.clock_s, nxt)
            continue
        start_s = rep.clock_s
        plan = None
        if ctl.bulk and rep.bulk_ready():
            if arrivals is not None:
                plan = plan_bulk(rep, start_s, arrivals.next_s(), stop_at_finish=ctl.stop_at_finish,
                                 until_s=arrivals.until_s)
            else:
                plan = plan_bulk(rep, start_s, side.pending_s(rep), side.stop_at_arrival,
                                 horizon_s=ctl.horizon_s(rep, start_s), stop_at_finish=ctl.stop_at_finish)
        if plan is not None:
            if arrivals is None:  # routing at arrival time: a request routed here may cut the bulk
                rep.cuttable_end_s = plan.end_s if plan.cuttable else -math.inf
                if on_bulk is not None:
                    on_bulk(rep, plan)
                cut = yield plan.end_s
                while cut is not None:  # something arrived here at `cut`, inside the bulk
                    plan.cut(cut)
                    if on_bulk is not None:
                        on_bulk(rep, plan)
                    cut = yield plan.end_s
                rep.cuttable_end_s = -math.inf
                rep.pending_finish_s = _NO_TIMES
            else:
                while folds and extend_bulk(rep, plan, arrivals, finished):
                    pass
                yield plan.end_s
            rep.clock_s = end_s = plan.end_s
            if arrivals is not None and plan.queued:  # arrivals behind a blocked head, for the step log
                arrivals.take(rep.waiting, end_s)
            apply_bulk(rep, plan, finished)
        else:
            step = rep.plan_step(start_s)
            if step.empty:
                continue
            costs = rep.step_costs(step)
            end_s = start_s + costs.seconds
            if hooks:
                side.stepped(rep, step, start_s, end_s)
            yield end_s
            rep.clock_s = end_s
            rep.apply_step(step, start_s, end_s, costs, finished)
            if hooks:
                side.applied(rep)
        if finished or report_always:
            report(rep, finished)
            finished.clear()
        if ctl.settle:
            yield SETTLE
