"""The SimPy event loop of a cluster of pools: arrivals are routed to the first pool; each replica runs
steps (or bulks of decode steps); a disaggregated cluster hands requests from its prefill pool to its
decode pool with a KV transfer on the network (simulator.cluster.handoff.KVHandOff).

Events per replica: one per step, or one per bulk of decode steps (step_mode "bulk"). Arrivals are
scheduled with URGENT priority so that, at equal times, a request that arrives exactly when a step ends
is visible to the step formed at that instant — the same rule the bulk planner uses ("a bulk ends at the
first step boundary at or after the next arrival"), which makes bulk and step-by-step modes identical.
A decode-pool replica's bulk in flight is cut short (re-planned from its start, which reproduces the same
steps) when a KV arrival or a routed request must become visible at a step boundary inside it.

Closed-loop workloads: a request is sent when an earlier one completes, at that instant, to the first
pool. Bulks end at their first finish (`Replica.stop_bulk_at_finish`); with several colocated replicas
the next arrival is unknown while another replica's bulk is in flight, so they run step by step (decode
pools keep bulks: what a finish sends reaches them only through a hand-off, which cuts the bulk).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy
from simpy.events import URGENT

from simulator.core.bulk import NEVER, apply_bulk, plan_bulk
from simulator.core.state import DROP_EXCEEDS_KV

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
    def __init__(self, cluster, cfg: EngineConfig):
        self.env = simpy.Environment()
        self.cluster = cluster
        self.state = cluster.state
        self.entry = cluster.pools[0]
        self.handoff = cluster.handoff
        self.cfg = cfg
        self.bulk = cfg.step_mode == "bulk"
        self.next_arrival_s = np.inf
        self._fits = [pool.replicas[0].fits for pool in cluster.pools]   # a request must fit in every pool
        self._wake: dict[int, simpy.Event] = {}
        self._interrupt: dict[int, simpy.Event] = {}
        self.finished = 0
        self._sent = 0          # closed loop: requests sent so far
        self._owed = 0          # closed loop: completions not yet answered by a new request
        self._sending = False

    def run(self) -> float:
        """Simulate until every request finished or was dropped. Returns the simulated end time."""
        env, reps = self.env, self.cluster.replicas
        if self.handoff is not None:
            self.handoff.start(self)
        if self.cfg.closed_loop is not None:
            env.process(self._closed_loop_start())
            for rep in reps:
                rep.stop_bulk_at_finish = True
        else:
            env.process(self._arrivals())
        for pool in self.cluster.pools:
            loop = self._decode_loop if pool.name == "decode" else self._replica_loop
            for rep in pool.replicas:
                env.process(loop(rep))
        env.run()
        return max([env.now] + [rep.clock_s for rep in reps])

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
        if s.dropped[r]:  # rejected before the run (longer than the context: simulator.core.context)
            self._count_finished(1)
            return
        if not all(fits(r) for fits in self._fits):
            s.dropped[r] = True
            s.drop_reason[r] = DROP_EXCEEDS_KV
            self._count_finished(1)
            return
        reps, now, router = self.entry.replicas, self.env.now, self.entry.router
        loads, queued = [rep.outstanding_at(now) for rep in reps], [len(rep.waiting) for rep in reps]
        if router.uses_prefix_match:  # prefix_aware: what each replica's cache holds of this prompt
            caches = [rep.kv.cache for rep in reps]
            view = (int(s.prompt[r]), [c.match_tokens(r, int(s.prompt[r])) for c in caches],
                    [c.cached_tokens for c in caches])
            idx = router.choose(loads, queued, view)
        else:
            idx = router.choose(loads, queued)
        s.replica[r] = idx
        reps[idx].waiting.append(r)
        self.poke(reps[idx])

    def _count_finished(self, k: int) -> None:
        self.finished += k
        if self.cfg.progress is not None and k:
            self.cfg.progress(k)
        if self.cfg.closed_loop is not None and k:
            self._send(k)

    def _report(self, finished: list[int]) -> None:
        if finished:
            self._count_finished(len(finished))
            finished.clear()

    # ---- replicas ----------------------------------------------------------------------------------
    def poke(self, rep) -> None:
        """Make `rep` look at its queues: wake it when idle, cut its bulk in flight short."""
        for events in (self._wake, self._interrupt):
            ev = events.get(rep.index)
            if ev is not None and not ev.triggered:
                ev.succeed()

    def _idle(self, rep):
        self._wake[rep.index] = ev = self.env.event()
        yield ev
        del self._wake[rep.index]
        rep.clock_s = self.env.now

    def _replica_loop(self, rep):
        """A colocated or prefill-pool replica: steps, or bulks that end at the next arrival."""
        env, handoff = self.env, self.handoff
        bulk = self.bulk and (self.cfg.closed_loop is None or len(self.cluster.replicas) == 1)
        finished: list[int] = []
        while True:
            if not rep.has_work():  # (`_idle`, inlined: this loop is the hot path)
                self._wake[rep.index] = ev = env.event()
                yield ev
                del self._wake[rep.index]
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
                if handoff is None:
                    end_s = start_s + (costs[0].seconds + costs[1].seconds)
                else:  # the prefill pool's rounding, kept bit-identical to the earlier prefill loop
                    end_s = start_s + costs[0].seconds + costs[1].seconds

                    handoff.prefill_step(self, rep, step, start_s, end_s)
                yield env.timeout(end_s - env.now)
                rep.clock_s = end_s
                rep.apply_step(step, start_s, end_s, costs, finished)
                if handoff is not None:
                    handoff.prefill_done(self, rep)
            if finished:
                self._count_finished(len(finished))
                finished.clear()

    def _decode_loop(self, rep):
        """A decode-pool replica: requests join at step boundaries once their KV arrived; a bulk in flight
        is cut when something becomes visible inside it (module docstring)."""
        env, finished = self.env, []
        while True:
            self.handoff.collect(self, rep)
            if not rep.running:
                nxt = rep.next_event_s()
                if nxt <= env.now:      # catching up after a cut bulk: the next visible event is past
                    rep.clock_s = max(rep.clock_s, nxt)
                else:
                    yield from self._idle(rep)
                continue
            start_s = rep.clock_s
            plan = plan_bulk(rep, start_s, rep.next_event_s(), stop_at_arrival=True) \
                if self.bulk and rep.bulk_ready() else None
            if plan is not None:
                end_s = float(plan.ends_s[-1])
                if end_s > env.now:
                    rep.pending_finish_s = np.sort(plan.ends_s[plan.finish_step[plan.finish_step < plan.steps]])
                    self._interrupt[rep.index] = cut = env.event()
                    yield env.any_of([env.timeout(end_s - env.now), cut])
                    del self._interrupt[rep.index]
                    rep.pending_finish_s = rep.pending_finish_s[:0]
                    if env.now < end_s:
                        continue   # something became visible inside the bulk: re-plan from its start
                rep.clock_s = end_s
                apply_bulk(rep, plan, finished)
            else:
                step = rep.plan_step(start_s)
                costs = rep.step_costs(step)
                end_s = start_s + costs[0].seconds + costs[1].seconds
                if end_s > env.now:
                    yield env.timeout(end_s - env.now)
                rep.clock_s = end_s
                rep.apply_step(step, start_s, end_s, costs, finished)
            self._report(finished)
