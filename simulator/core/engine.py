"""The event loop of a cluster of pools: arrivals are routed to the first pool; each replica runs steps (or
bulks of decode steps, simulator.core.bulk) along its timeline (simulator.core.timeline); a disaggregated
cluster hands requests from its prefill pool to its decode pool with a KV transfer on the network
(simulator.cluster.handoff.KVHandOff).

Two drivers run the same replica timelines:

- **independent** (a colocated, open-loop cluster whose router routes without reading loads, e.g.
  round_robin): every request's replica is known before the run, so replicas cannot affect each other
  and each is simulated on its own, start to end, without SimPy. A bulk of decode steps ends only at the
  next arrival routed to *its* replica, so the cost is linear in requests whatever the replica count.
- **coupled** (SimPy; routers that read loads, closed-loop workloads, disaggregation, a knowledge base
  shared by the replicas and queried in time order, `Cluster.retrieval`): requests are
  routed when they arrive, from loads the engine keeps as arrays (outstanding = routed − finished, with
  the finishes inside bulks in flight before the arrival subtracted, as a step-by-step run would have
  applied them). A request routed to a replica whose bulk is in flight and whose batch can grow cuts
  that bulk at the first step boundary at or after its arrival (`BulkPlan.cut`); other replicas' bulks
  are untouched. Arrivals are scheduled with URGENT priority, so that a request arriving exactly when a
  step ends is visible to the step formed at that instant — the rule the cut applies too, which makes
  bulk and step-by-step modes identical. A decode-pool replica's bulk in flight is cut the same way when
  a KV arrival or a routed request must become visible at a step boundary inside it (`poke`).

Closed-loop workloads: a request is sent when an earlier one completes, at that instant, to the first
pool; bulks end at their first finish (`stop_at_finish`), and a sent request cuts the bulk of the
replica it is routed to. Step ends of several replicas at exactly the same instant are not rare here:
identical replicas given identical batches (the first `concurrency` requests at t = 0) end their steps
together, and each finish sends a request that the router places by the loads it reads. So a closed loop
processes the step ends of one instant in replica order (`_step_priority`), whichever mode scheduled
them when, and the replicas that form a step at that instant (after their own step end, or woken from
idle) do so behind all of them (`_BEHIND`). Before, the order was SimPy's event order, i.e. when each wait
was scheduled: a bulk cut by a routed request re-schedules its end later than another replica's step
scheduled at its start, so bulk and step modes routed the sends of such an instant differently (found by
tests/test_determinism_fuzz.py; tests/simulator/core/test_sim_closed_loop.py has the case).
"""
from __future__ import annotations

import gc
import math
from heapq import heappush
from dataclasses import dataclass

import numpy as np
import simpy
from simpy.events import NORMAL, URGENT

from simulator.core import parallel
from simulator.core.state import DROP_EXCEEDS_KV
from simulator.core.timeline import IDLE, SETTLE, OwnArrivals, PoolSide, TimelineControls, replica_timeline


class _At(simpy.Event):
    """A timeout that fires at exactly `at_s` (SimPy's `timeout(at − now)` lands at now + (at − now), which
    may round an ulp away from `at`: a request sent at a completion would then arrive beside it)."""

    def __init__(self, env: simpy.Environment, at_s: float, priority: int = NORMAL):
        super().__init__(env)
        self._ok = True
        self._value = None
        heappush(env._queue, (at_s, priority, next(env._eid), self))   # (what Environment.schedule pushes)


_BEHIND = 1 << 40   # a closed loop's priority for a step formed now: behind every replica's step end of now


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
    driver: str = "auto"             # "auto" | "coupled" (force SimPy even where replicas are independent)
    workers: int | str = 1           # processes for independent replicas (simulator.core.parallel)


def _prefix_view(r: int, prompt_tokens: int, reps, now_s: float) -> tuple:
    """(prompt tokens, per replica the prompt's tokens its prefix cache holds, per replica the tokens its
    cache holds): what the prefix-aware router reads (simulator.core.routers.PrefixAwareRouter) at `now_s`,
    with the bulks in flight replayed up to it (simulator.core.bulk_replay.ReplayProfile.sync)."""
    for rep in reps:
        rep.profile.sync(now_s)
    caches = [rep.kv for rep in reps]
    return prompt_tokens, [c.cached(r, prompt_tokens) for c in caches], [c.cached_tokens for c in caches]


class Engine:
    def __init__(self, cluster, cfg: EngineConfig):
        self.env = simpy.Environment()
        self.cluster = cluster
        self.state = cluster.state
        self.entry = cluster.pools[0]
        self.handoff = cluster.handoff
        self.cfg = cfg
        self.bulk = cfg.step_mode == "bulk"
        self._fits = [pool.replicas[0].fits for pool in cluster.pools]   # a request must fit in every pool
        self._wake: dict[int, simpy.Event] = {}
        self._procs: dict[int, simpy.Process] = {}
        self.finished = 0
        self._sent = 0          # closed loop: requests sent so far
        self._owed = 0          # closed loop: completions not yet answered by a new request
        self._sending = False
        self._gap_s = math.inf  # mean time between arrivals (sizes bulk plans in the coupled driver)
        self._last_send_s = 0.0
        self._routed_s = 0.0    # when the last request was routed (or dropped at routing): the coupled run's end
        router = self.entry.router
        self._loads = not router.stateless   # keep outstanding counts for a router that reads them
        self._prefix_match = router.uses_prefix_match   # it reads the replicas' prefix caches
        n = len(self.entry.replicas)
        self._open = np.zeros(n, dtype=np.int64)     # routed and not gone (waiting + running) at the last apply
        self._early = np.zeros(n, dtype=np.int64)    # finishes inside the bulk in flight before the last arrival
        self._next_finish = np.full(n, math.inf)     # next finish inside the bulk in flight not yet counted
        self._no_queues = np.zeros(n, dtype=np.int64)

    @property
    def independent(self) -> bool:
        """Replicas cannot affect each other: colocated, open loop, routing ahead of time."""
        return (self.handoff is None and self.cfg.closed_loop is None and self.entry.router.stateless
                and self.cfg.driver == "auto" and self.cluster.retrieval is None)

    def run(self) -> float:
        """Simulate until every request finished or was dropped. Returns the simulated end time."""
        return self._run_independent() if self.independent else self._run_coupled()

    # ---- independent driver ------------------------------------------------------------------------
    def _run_independent(self) -> float:
        s, reps = self.state, self.entry.replicas
        ok = self._drop_unfit(np.arange(s.n))
        choice = self.entry.router.assign(len(ok))
        s.replica[ok] = choice
        order = np.argsort(choice, kind="stable")
        mine = np.split(ok[order], np.cumsum(np.bincount(choice, minlength=len(reps)))[:-1])
        work = list(zip(reps, mine))
        # The replica loops make no reference cycles (their objects are freed by reference counting), so
        # the cyclic collector is paused while they run: it would only re-scan the live step log and
        # request structures, a few per cent of the run.
        paused = gc.isenabled()
        gc.disable()
        try:
            workers = parallel.worker_count(self.cfg.workers, reps, len(ok))
            if workers > 1:
                parallel.run_parallel(work, workers, self._run_replicas, self.cluster.log, s, self._count_finished,
                                      [pool.kind.latency for pool in self.cluster.pools])
            else:
                self._run_replicas(work, self._count_finished)
        finally:
            if paused:
                gc.enable()
        last_arrival = float(s.arrival_s[-1]) if s.n else 0.0
        return max([last_arrival] + [rep.clock_s for rep in reps])

    def _run_replicas(self, work: list[tuple], count_finished) -> None:
        """Run each (replica, its requests in arrival order) to its end; `count_finished(k)` after steps."""
        s = self.state

        def report(rep, finished: list[int]) -> None:
            if finished:
                count_finished(len(finished))

        ctl = TimelineControls(bulk=self.bulk, report=report, report_every_step=False)
        for rep, ids in work:
            rep.arrivals = OwnArrivals(ids, s.arrival_s[ids])
            for _ in replica_timeline(rep, ctl):
                pass
            rep.arrivals = None   # (its lists: ~60 bytes per request)

    def _drop_unfit(self, ids: np.ndarray) -> np.ndarray:
        """Mark the requests that fit in no pool as dropped; returns the others (requests dropped before
        the run, longer than the context, count as finished and are not routed either)."""
        before = self.state.dropped[ids]
        if before.any():
            self._count_finished(int(before.sum()))
            ids = ids[~before]
        fits = np.logical_and.reduce([fits(ids) for fits in self._fits])
        bad = ids[~fits]
        if len(bad):
            self.state.dropped[bad] = True
            self.state.drop_reason[bad] = DROP_EXCEEDS_KV
            self._count_finished(len(bad))
        return ids[fits]

    # ---- coupled driver ----------------------------------------------------------------------------
    def _run_coupled(self) -> float:
        env, reps = self.env, self.cluster.replicas
        if self.handoff is not None:
            self.handoff.start(self)
        closed = self.cfg.closed_loop is not None
        if closed:
            env.process(self._closed_loop_start())
        else:
            s = self.state
            if s.n > 1:
                self._gap_s = float(s.arrival_s[-1] - s.arrival_s[0]) / (s.n - 1)
            env.process(self._arrivals())
        for pool in self.cluster.pools:
            entry = pool is self.entry
            side = self.handoff.side(pool.name, self) if self.handoff is not None else PoolSide()
            on_bulk = (self._on_bulk if self._loads else None) if entry else self._note_finishes
            ctl = TimelineControls(bulk=self.bulk, report=self._report if entry else self._report_done,
                                   stop_at_finish=closed, settle=closed, horizon_s=self._horizon(len(pool.replicas)),
                                   on_bulk=on_bulk, side=side)
            for rep in pool.replicas:
                rep.arrivals = None
                self._procs[rep.index] = env.process(self._drive(rep, ctl))
        env.run()
        # Not env.now: a bulk (or a pause's sleep) cut by an arrival leaves its planned end in SimPy's queue
        # (an interrupt does not unschedule the event the process waited for), and env.run() advances the
        # clock to it with nothing left to do, so bulk mode ended later than step mode (found by fuzzing:
        # a disaggregated run's window_end_s 12.7688 s against 12.7674 s, the last step's end, and every
        # rate with it). What happened last is a replica's step end or a routing.
        return max([self._routed_s] + [rep.clock_s for rep in reps])

    def _drive(self, rep, ctl: TimelineControls):
        """A replica's timeline as a SimPy process (simulator.core.timeline)."""
        env = self.env
        timeline = replica_timeline(rep, ctl)
        value = None
        closed = self.cfg.closed_loop is not None
        step_priority = self._step_priority(rep)
        settle_priority = _BEHIND if closed else NORMAL
        while True:
            try:
                until = timeline.send(value)
            except StopIteration:
                return
            value = None
            if until is SETTLE:   # a step formed now sees what the other step ends of this instant send
                if env.peek() <= env.now:
                    yield _At(env, env.now, settle_priority)   # (behind every event already queued for now)
            elif until is IDLE:
                self._wake[rep.index] = ev = env.event()
                yield ev
                del self._wake[rep.index]
                rep.clock_s = env.now
                if closed and env.peek() <= env.now:   # (woken by a send: behind the other step ends of now)
                    yield _At(env, env.now, _BEHIND)
            elif until >= env.now:   # (a replica catching up on a past event does not wait)
                try:
                    yield _At(env, until, step_priority)
                except simpy.Interrupt as cut:
                    value = cut.cause

    def _step_priority(self, rep) -> int:
        """The SimPy priority of `rep`'s step ends: in a closed loop, one per replica in replica order, so
        that the step ends of one instant (and the sends their finishes route) are processed in the same
        order whichever mode scheduled them when (module docstring); else SimPy's NORMAL (event order)."""
        return NORMAL + 1 + rep.index if self.cfg.closed_loop is not None else NORMAL

    def _horizon(self, replicas: int):
        """A guess of the next arrival routed to a replica of a pool of `replicas` (sizes its bulk plans;
        never changes results)."""
        closed = self.cfg.closed_loop is not None
        return lambda rep, now_s: math.inf if closed else now_s + self._gap_s * replicas

    def _on_bulk(self, rep, plan) -> None:
        """A bulk of an entry-pool replica was committed or cut: its finishes before the next arrival
        count as done for the router (the finishes a step-by-step run would have applied by then)."""
        i = rep.index
        if self._prefix_match:   # the router reads its cache while the bulk is in flight (`_prefix_view`)
            rep.profile.flight = plan
        rep.pending_finish_s = pending = plan.finish_times(rep.profile)
        k = int(self._early[i])
        self._next_finish[i] = pending[k] if k < len(pending) else math.inf

    @staticmethod
    def _note_finishes(rep, plan) -> None:
        """A decode-pool bulk was committed or cut: its finishes, for the decode router's loads."""
        rep.pending_finish_s = plan.finish_times(rep.profile)

    def _report_done(self, rep, finished: list[int]) -> None:
        if finished:
            self._count_finished(len(finished))

    def _report(self, rep, finished: list[int]) -> None:
        if self._loads:  # (only entry-pool replicas report: their indices are 0..n-1)
            i = rep.index
            self._open[i] = len(rep.waiting) + len(rep.running) + (len(rep.paused) if rep.paused is not None else 0)
            self._early[i] = 0
            self._next_finish[i] = math.inf
        if finished:
            self._count_finished(len(finished))

    def _outstanding(self, now_s: float) -> np.ndarray:
        """Per entry-pool replica: requests routed there and not finished by `now_s` (finishes at exactly
        `now_s` are not: a step ending at an arrival's instant is processed after it)."""
        nf = self._next_finish
        for i in np.flatnonzero(nf < now_s).tolist():
            pending = self.entry.replicas[i].pending_finish_s
            k = int(pending.searchsorted(now_s, side="left"))
            self._early[i] = k
            nf[i] = pending[k] if k < len(pending) else math.inf
        return self._open - self._early

    # ---- arrivals ----------------------------------------------------------------------------------
    def _arrivals(self):
        s, env = self.state, self.env
        arrivals = s.arrival_s
        for r in range(s.n):
            yield _UrgentTimeout(env, float(arrivals[r]) - env.now)
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
        self._routed_s = self.env.now
        if s.dropped[r]:  # rejected before the run (longer than the context: simulator.core.context)
            self._count_finished(1)
            return
        if not all(fits(r) for fits in self._fits):
            s.dropped[r] = True
            s.drop_reason[r] = DROP_EXCEEDS_KV
            self._count_finished(1)
            return
        reps, now = self.entry.replicas, self.env.now
        router = self.entry.router
        if router.stateless:
            idx = router.assign_one()
        else:
            queued = np.array([len(rep.waiting) for rep in reps]) if router.needs_queued else self._no_queues
            # prefix_aware also reads what each replica's cache holds of this prompt
            prefix = (_prefix_view(r, int(s.prompt[r]), reps, now),) if self._prefix_match else ()
            idx = router.choose(self._outstanding(now), queued, *prefix)
        s.replica[r] = idx
        rep = reps[idx]
        rep.waiting.append(r)
        self._open[idx] += 1
        self.poke(rep)

    def _count_finished(self, k: int) -> None:
        self.finished += k
        if self.cfg.progress is not None and k:
            self.cfg.progress(k)
        if self.cfg.closed_loop is not None and k:
            self._send(k)

    # ---- replicas ----------------------------------------------------------------------------------
    def poke(self, rep) -> None:
        """Something arrived at `rep` now: cut its bulk (or wait) in flight when that would run past now,
        else wake it if it is idle (a replica mid-step sees it at its next step boundary)."""
        now = self.env.now
        if rep.cuttable_end_s > now:
            rep.cuttable_end_s = -math.inf
            self._procs[rep.index].interrupt(now)
            return
        ev = self._wake.get(rep.index)
        if ev is not None and not ev.triggered:
            ev.succeed()
