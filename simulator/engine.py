"""The SimPy event loop: arrivals are routed to replicas; each replica runs steps (or bulks of steps).

Events per replica: one per step, or one per bulk of decode steps (step_mode "bulk"). Arrivals are
scheduled with URGENT priority so that, at equal times, a request that arrives exactly when a step ends
is visible to the step formed at that instant — the same rule the bulk planner uses ("a bulk ends at the
first step boundary at or after the next arrival"), which makes bulk and step-by-step modes identical.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy
from simpy.events import URGENT

from simulator.bulk import NEVER, apply_bulk, plan_bulk
from simulator.routers import Router
from simulator.replica import Replica
from simulator.state import DROP_EXCEEDS_KV, RequestState


_NO_FINISHES = np.zeros(0)


class _UrgentTimeout(simpy.Event):
    """A timeout processed before NORMAL-priority events scheduled for the same instant."""

    def __init__(self, env: simpy.Environment, delay: float):
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, URGENT, delay)


@dataclass
class EngineConfig:
    step_mode: str = "bulk"          # "bulk" | "step"
    progress: object | None = None   # optional callable(finished_count) for progress display
    closed_loop: int | None = None   # clients of a closed-loop workload (None: arrivals from the table)


class Engine:
    def __init__(self, state: RequestState, replicas: list[Replica], router: Router, cfg: EngineConfig):
        self.env = simpy.Environment()
        self.state = state
        self.replicas = replicas
        self.router = router
        self.cfg = cfg
        self.next_arrival_s = np.inf
        self._wakeups: list[simpy.Event | None] = [None] * len(replicas)
        self.finished = 0
        self._sent = 0          # closed loop: requests sent so far
        self._owed = 0          # closed loop: completions not yet answered by a new request
        self._sending = False

    def run(self) -> float:
        """Simulate until every request finished or was dropped. Returns the simulated end time.

        Closed-loop workloads: a request is sent when an earlier one completes, at that instant. With one
        replica a bulk ends at its first finish, so bulk and step modes stay identical; with several the
        next arrival is unknown while another replica's bulk is in flight, so steps run one by one."""
        closed = self.cfg.closed_loop is not None
        if closed:
            self.env.process(self._closed_loop_start())
            for rep in self.replicas:
                rep.stop_bulk_at_finish = True
        else:
            self.env.process(self._arrivals())
        for rep in self.replicas:
            self.env.process(self._replica_loop(rep))
        self.env.run()
        return max([self.env.now] + [rep.clock_s for rep in self.replicas])

    # ---- arrivals ----------------------------------------------------------------------------------
    def _arrivals(self):
        s, env = self.state, self.env
        arrivals = s.arrival_s
        for r in range(s.n):
            delay = float(arrivals[r]) - env.now
            self.next_arrival_s = env.now + delay
            yield _UrgentTimeout(env, delay)
            self.next_arrival_s = env.now + (float(arrivals[r + 1]) - env.now) if r + 1 < s.n else np.inf
            self._route(r)

    def _closed_loop_start(self):
        yield _UrgentTimeout(self.env, 0.0)
        self._send(self.cfg.closed_loop)

    def _send(self, k: int) -> None:
        """Closed loop: send the next `k` requests now (a drop at routing completes at once, and is
        answered by the loop below rather than by recursion)."""
        self._owed += k
        if self._sending:
            return
        self._sending = True
        s = self.state
        while self._owed and self._sent < s.n:
            self._owed -= 1
            r = self._sent
            self._sent += 1
            s.arrival_s[r] = self.env.now
            self._route(r)
        self._sending = False

    def _route(self, r: int) -> None:
        s = self.state
        first = self.replicas[0]
        if first.blocks_for(int(s.prompt[r] + s.output[r] + first.q)) > first.total_blocks:
            s.dropped[r] = True
            s.drop_reason[r] = DROP_EXCEEDS_KV
            self._count_finished(1)
            return
        now = self.env.now
        idx = self.router.choose([rep.outstanding_at(now) for rep in self.replicas],
                                 [len(rep.waiting) for rep in self.replicas])
        rep = self.replicas[idx]
        s.replica[r] = idx
        rep.waiting.append(r)
        wake = self._wakeups[idx]
        if wake is not None and not wake.triggered:
            wake.succeed()

    def _count_finished(self, k: int) -> None:
        self.finished += k
        if self.cfg.progress is not None and k:
            self.cfg.progress(k)
        if self.cfg.closed_loop is not None and k:
            self._send(k)

    # ---- replicas ----------------------------------------------------------------------------------
    def _replica_loop(self, rep: Replica):
        env = self.env
        bulk = self.cfg.step_mode == "bulk" and (self.cfg.closed_loop is None or len(self.replicas) == 1)
        finished: list[int] = []
        while True:
            if not rep.has_work():
                self._wakeups[rep.index] = wake = env.event()
                yield wake
                self._wakeups[rep.index] = None
                rep.clock_s = env.now
                continue
            start_s = rep.clock_s
            plan = plan_bulk(rep, start_s, self.next_arrival_s) if bulk and rep.bulk_ready() else None
            if plan is not None:
                end_s = float(plan.ends_s[-1])
                if plan.finishes:  # ends_s is non-decreasing, so sorting the steps sorts the times
                    rep.pending_finish_s = plan.ends_s[np.sort(plan.finish_step[plan.finish_step != NEVER])]
                yield env.timeout(end_s - env.now)
                rep.clock_s = end_s
                rep.pending_finish_s = _NO_FINISHES
                apply_bulk(rep, plan, finished)
            else:
                step = rep.plan_step(start_s)
                if step.empty:
                    continue
                costs = rep.step_costs(step)
                end_s = start_s + (costs[0].seconds + costs[1].seconds)
                yield env.timeout(end_s - env.now)
                rep.clock_s = end_s
                rep.apply_step(step, start_s, end_s, costs, finished)
            if finished:
                self._count_finished(len(finished))
                finished.clear()
