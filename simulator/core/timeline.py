"""One replica's life as a generator of times: the step loop shared by the engine's two drivers.

`replica_timeline(rep, ctl)` forms steps (or bulks of decode steps) and yields, each time, the instant the
replica is busy until; the driver advances time and resumes it there:

- the *independent* driver (simulator.core.engine, colocated open-loop clusters with a router that routes
  ahead) runs each replica's generator to the end by itself: its arrivals are known (`OwnArrivals`), so
  nothing else can happen to it, and the cluster costs the sum of its replicas;
- the *coupled* driver wraps it in a SimPy process: requests are pushed into the replica's queue when
  they are routed, an idle replica yields `IDLE` and is woken, and a bulk in flight whose batch could
  grow (`rep.cuttable_end_s`) receives the routing time of a new request as the value of its `yield`
  and is cut at the first step boundary at or after it (`BulkPlan.cut`).

Both run the same code, so both drivers, and bulk and step-by-step modes, form the same steps.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from simulator.core.bulk import apply_bulk, plan_bulk
from simulator.core.pauses import sleep_until_resume

IDLE = None  # yielded by a replica with nothing to do and no known arrival: the driver wakes it


class OwnArrivals:
    """The requests routed ahead of time to one replica, in arrival order, and a cursor. Held as Python
    lists (read one or two at a time on the hot path, where a NumPy scalar read costs more than the work),
    with an infinite arrival time after the last."""

    def __init__(self, ids: np.ndarray, arrival_s: np.ndarray):
        self.ids, self.times, self.pos = ids.tolist(), arrival_s.tolist() + [math.inf], 0

    def next_s(self) -> float:
        return self.times[self.pos]

    def take(self, waiting, now_s: float) -> None:
        """Move the requests that arrived by `now_s` into `waiting` (an arrival at exactly a step
        boundary is seen by the step formed there)."""
        pos = self.pos
        if self.times[pos] <= now_s:
            end = bisect_right(self.times, now_s, pos)
            waiting.extend(self.ids[pos:end])
            self.pos = end


@dataclass
class TimelineControls:
    """What the driver tells a replica's timeline. `horizon_s(rep, now)`: a guess of the next arrival
    routed to `rep` when it is not known ahead (sizes bulk plans; never changes results). `report(rep,
    finished)`: called after every applied step or bulk with the requests that finished (the list is
    cleared afterwards). `on_bulk(rep, plan)`: a bulk was committed or cut (the driver keeps the loads a
    router reads). `handoff`/`engine`: the prefill side of a disaggregated cluster."""

    bulk: bool
    report: object
    stop_at_finish: bool = False
    horizon_s: object = None
    on_bulk: object = None
    handoff: object = None
    engine: object = None


def replica_timeline(rep, ctl: TimelineControls):
    """The step loop of a colocated or prefill-pool replica (module docstring)."""
    arrivals: OwnArrivals | None = rep.arrivals
    handoff, report = ctl.handoff, ctl.report
    finished: list[int] = []
    paused = rep.paused   # simulator.core.pauses.PausedRequests, or None (no request ever pauses)
    while True:
        if arrivals is not None:
            arrivals.take(rep.waiting, rep.clock_s)
        if paused is not None:
            if paused.next_s() <= rep.clock_s:
                paused.rejoin(rep, rep.clock_s, finished)
                if finished:
                    report(rep, finished)
                    finished.clear()
            if len(paused) and not rep.running and not rep.head_admissible():
                yield from sleep_until_resume(rep, arrivals)   # nothing to run until a resume or an arrival
                continue
        if not rep.has_work():
            if arrivals is None:
                yield IDLE
            else:
                nxt = arrivals.next_s()
                if nxt == math.inf:
                    return
                yield nxt
                rep.clock_s = nxt
            continue
        start_s = rep.clock_s
        plan = None
        if ctl.bulk and rep.bulk_ready():
            if arrivals is not None:
                plan = plan_bulk(rep, start_s, arrivals.next_s(), stop_at_finish=ctl.stop_at_finish)
            else:
                plan = plan_bulk(rep, start_s, math.inf, horizon_s=ctl.horizon_s(rep, start_s),
                                 stop_at_finish=ctl.stop_at_finish)
        if plan is not None:
            if arrivals is None:  # routing at arrival time: a request routed here may cut the bulk
                rep.cuttable_end_s = -math.inf if plan.queued else plan.end_s
                if ctl.on_bulk is not None:
                    ctl.on_bulk(rep, plan)
                cut = yield plan.end_s
                while cut is not None:  # a request was routed here at `cut`, inside the bulk
                    plan.cut(cut)
                    if ctl.on_bulk is not None:
                        ctl.on_bulk(rep, plan)
                    cut = yield plan.end_s
                rep.cuttable_end_s = -math.inf
            else:
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
            if handoff is None:
                end_s = start_s + (costs[0].seconds + costs[1].seconds)
            else:  # the prefill pool's rounding, kept bit-identical to the earlier prefill loop
                end_s = start_s + costs[0].seconds + costs[1].seconds
                handoff.prefill_step(ctl.engine, rep, step, start_s, end_s)
            yield end_s
            rep.clock_s = end_s
            rep.apply_step(step, start_s, end_s, costs, finished)
            if handoff is not None:
                handoff.prefill_done(ctl.engine, rep)
        report(rep, finished)
        finished.clear()
