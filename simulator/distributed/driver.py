"""The driver of a distributed run: it holds the run's request table, routes, sends replica groups to the
Dask workers and merges what they send back (module docstring of simulator.distributed)."""
from __future__ import annotations

import logging
import math
import uuid
import warnings
from contextlib import contextmanager

import numpy as np

from simulator.core.parallel import split_work, state_arrays
from simulator.core.state import DROP_EXCEEDS_KV
from simulator.distributed.group import GroupSpec, WindowedGroup, run_group
from simulator.distributed.watch import NOTHING_WRITTEN, finished, lost
from simulator.errors import ScenarioError

FIELD = "simulation.executor"
SYNC = "simulation.load_sync_s"
GROUP_REQUESTS = 250_000   # requests per task at most (a worker's memory: ~0.5 kB per request of its task)
TASKS_PER_WORKER = 4       # tasks per worker at least (balance, and results streaming back while others run)


def is_distributed(scenario) -> bool:
    return scenario.simulation.executor != "local"


def open_executor(scenario):
    """The Dask executor of `simulation.executor` (the settings `draftsim sweep --executor` uses), not yet
    entered: `with open_executor(s) as ex:` connects (or starts a LocalCluster of `simulation.workers`
    processes, default the cores) and fails with one line naming the field when the scheduler cannot be
    reached."""
    from simulator.distributed.executors import dask_executor
    workers = scenario.simulation.workers
    return dask_executor(scenario.simulation.executor, None if workers == "auto" else int(workers), field=FIELD)


def check_distributable(scenario) -> None:
    """What a distributed run refuses, before any work (one line naming the field)."""
    cl = scenario.cluster
    refused = [("cluster.disaggregation", cl.disaggregation is not None,
                "disaggregated pools hand requests to each other at every step"),
               ("workload.arrival.process", scenario.workload.arrival.process == "closed_loop",
                "a closed loop sends each request when another one finishes, anywhere in the cluster"),
               ("retrieval", scenario.retrieval is not None, "the replicas share one knowledge base"),
               ("policy.kind", scenario.policy.kind != "fixed", "a control policy keeps state the summary reads"),
               ("drafter.kind", scenario.drafter.kind == "suffix", "the suffix drafter verifies what it proposes per "
                "request and step with the 'proposed' control policy (simulator.speculation.suffix.acceptance), and "
                "control policies run in one process"),
               ("cluster.kv_cache.prefix_caching", cl.kv_cache.prefix_caching,
                "prefix caches keep counters the summary reads (and prefix_aware routing reads the caches)"),
               ("cluster.kv_cache.host_memory_gib", cl.kv_cache.host_memory_gib > 0,
                "host-memory tiers keep counters the summary reads")]
    for field, present, why in refused:
        if present:
            raise ScenarioError(FIELD, f"{scenario.simulation.executor} cannot run this scenario ({field}: {why}); "
                                       "allowed with it: colocated, open-loop clusters without those; use "
                                       "simulation.executor: local")
    from simulator.core.routers import ROUTERS
    router = ROUTERS.get(cl.router)
    if router is not None and router.stateless and scenario.simulation.load_sync_s is not None:
        raise ScenarioError(SYNC, f"cluster.router {cl.router!r} does not read replica loads (requests are routed "
                                  "ahead, exactly): load_sync_s would not apply; remove it")
    if router is not None and not router.stateless:
        if scenario.simulation.load_sync_s is None:
            raise ScenarioError(SYNC, f"cluster.router {cl.router!r} reads replica loads; a distributed run "
                                      "synchronises them every load_sync_s seconds of simulated time (0: at "
                                      "every arrival, exact; larger: faster, approximate) — set it")
        if scenario.workload.parallel_samples > 1:
            raise ScenarioError(FIELD, f"cluster.router {cl.router!r} with workload.parallel_samples > 1 runs in one "
                                       "process only; use simulation.executor: local")


def simulate_distributed(cluster, executor, *, base_dir, step_mode: str, progress=None) -> float:
    """Run the prepared `cluster` on the executor's Dask workers and write what they did into its request
    columns, step log and replicas (as one process would); returns the simulated end time."""
    scenario = cluster.scenario
    check_distributable(scenario)
    reps = cluster.pools[0].replicas
    if not all(rep.parallel_safe for rep in reps):
        raise ScenarioError(FIELD, "these replicas keep state the summary reads (a control policy, KV tiers or "
                                   "pauses); use simulation.executor: local")
    run = _Run(cluster, executor.client, str(base_dir), step_mode, progress)
    if cluster.pools[0].router.stateless:
        run.routed_ahead()
    else:
        run.windowed(float(scenario.simulation.load_sync_s))
    s = cluster.state
    last_arrival = float(s.arrival_s[-1]) if s.n else 0.0
    return max([last_arrival] + [rep.clock_s for rep in reps])


class _Run:
    def __init__(self, cluster, client, base_dir: str, step_mode: str, progress):
        self.cluster, self.client, self.progress = cluster, client, progress
        self.state = cluster.state
        self.reps = cluster.pools[0].replicas
        window_start = float(cluster.table.arrival_s.min()) if len(cluster.table) else 0.0
        run_id = uuid.uuid4().hex   # a worker keeps a run's replica kind for that run only (GroupSpec.run_id)
        self.spec = lambda replicas: GroupSpec(cluster.scenario, base_dir, tuple(replicas), len(self.reps),
                                               window_start, step_mode, run_id)
        self.workers = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))

    def _count(self, k: int) -> None:
        if self.progress is not None and k:
            self.progress(int(k))

    def _columns(self, ids: np.ndarray) -> dict:
        s = self.state
        return {"ids": ids, "arrival_s": s.arrival_s[ids], "prompt": s.prompt[ids], "output": s.output[ids],
                "replica": s.replica[ids]}

    def _fits(self, ids: np.ndarray) -> np.ndarray:
        """Mark requests dropped before the run or too long for a replica's KV (as the one-process engines
        do); returns the others."""
        s = self.state
        before = s.dropped[ids]
        self._count(int(before.sum()))
        ids = ids[~before]
        fits = self.reps[0].fits(ids) if len(ids) else np.zeros(0, dtype=bool)
        bad = ids[~fits]
        s.dropped[bad] = True
        s.drop_reason[bad] = DROP_EXCEEDS_KV
        self._count(len(bad))
        return ids[fits]

    # ---- routers that route ahead: one task per group, exact ---------------------------------------
    def routed_ahead(self) -> None:
        s = self.state
        ok = self._fits(np.arange(s.n))
        choice = self.cluster.pools[0].router.assign(len(ok))
        s.replica[ok] = choice
        order = np.argsort(choice, kind="stable")
        mine = np.split(ok[order], np.cumsum(np.bincount(choice, minlength=len(self.reps)))[:-1])
        groups = min(len(self.reps), max(TASKS_PER_WORKER * self.workers, -(-len(ok) // GROUP_REQUESTS)))
        parts = split_work(list(zip(self.reps, mine)), groups)
        futures = {}
        for pairs in parts:
            ids = np.sort(np.concatenate([ids for _, ids in pairs])) if pairs else np.zeros(0, dtype=np.int64)
            # the columns travel in the task itself (not scattered to a worker that may die): the scheduler keeps
            # them, so a task whose worker died is rerun elsewhere
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
                future = self.client.submit(run_group, self.spec([rep.index for rep, _ in pairs]), self._columns(ids),
                                            pure=False)
            futures[future] = [rep.index for rep, _ in pairs]
        try:
            for future in finished(self.client, futures, FIELD):
                result = _received(future, futures[future], self.client)
                self._merge(result)
                self._count(len(result["ids"]))
                del result
        finally:
            for future in futures:
                future.cancel()

    # ---- routers that read loads: windows of load_sync_s, an actor per worker ----------------------
    def windowed(self, sync_s: float) -> None:
        with _actor_proxy_errors_quiet():
            self._windowed(sync_s)

    def _windowed(self, sync_s: float) -> None:
        s = self.state
        router = self.cluster.pools[0].router
        n = len(self.reps)
        parts = [list(range(n))[g::self.workers] for g in range(min(self.workers, n))]
        actors, owner = [], np.zeros(n, dtype=np.int64)
        for g, part in enumerate(parts):
            future = self.client.submit(WindowedGroup, self.spec(part), actor=True, pure=False)
            actors.append(_on_actor(future.result, part))
            owner[part] = g
        routed = np.zeros(n, dtype=np.int64)       # requests routed to each replica so far
        finished = np.zeros(n, dtype=np.int64)     # of which finished before the window's start
        queued = np.zeros(n, dtype=np.int64)       # waiting there at the window's start
        no_queues = np.zeros(n, dtype=np.int64)
        starts, bounds = sync_windows(s.arrival_s, sync_s)
        for w in range(len(starts)):
            sent = np.zeros(n, dtype=np.int64)
            ok = self._fits(np.arange(bounds[w], bounds[w + 1]))
            for r in ok.tolist():
                outstanding = routed - finished + sent
                idx = router.choose(outstanding, queued + sent if router.needs_queued else no_queues)
                s.replica[r] = idx
                sent[idx] += 1
            routed += sent
            until = float(starts[w + 1]) if w + 1 < len(starts) else math.inf
            finished, queued = self._advance(actors, parts, owner, ok, until)
        for g, actor in enumerate(actors):
            self._merge(_checked(_on_actor(lambda: actor.result().result(), parts[g]), parts[g]))

    def _advance(self, actors, parts, owner: np.ndarray, ids: np.ndarray, until_s: float):
        """Send each actor its replicas' new requests and the window's end; (finished before it, waiting
        there) per replica."""
        s = self.state
        group = owner[s.replica[ids]] if len(ids) else np.zeros(0, dtype=np.int64)
        calls = [_on_actor(lambda: actor.advance(self._columns(ids[group == g]), until_s), parts[g])
                 for g, actor in enumerate(actors)]
        finished = np.zeros(len(owner), dtype=np.int64)
        queued = np.zeros(len(owner), dtype=np.int64)
        for g, call in enumerate(calls):
            loads = _checked(_on_actor(call.result, parts[g]), None)
            members = np.flatnonzero(owner == g)
            finished[members] = loads["finished"]
            queued[members] = loads["queued"]
            self._count(loads["new"])
        return finished, queued

    # ---- merging -------------------------------------------------------------------------------------
    def _merge(self, result: dict) -> None:
        arrays = state_arrays(self.state)
        ids = result["ids"]
        for name, values in result["state"].items():
            arrays[name][ids] = values
        for index, clock_s in zip(result["replicas"], result["clocks"]):
            self.reps[index].clock_s = clock_s
        self.cluster.log.merge_part(result["log"])
        self.cluster.pools[0].kind.latency.merge_usage(result["latency"])


def sync_windows(arrival_s: np.ndarray, sync_s: float) -> tuple[np.ndarray, np.ndarray]:
    """The synchronisation windows of a run's arrivals: their starts (the points where loads are read) and
    the first request of each (with the request count appended). Windows lie on a grid of sync_s from the
    first arrival, [t0 + k·sync_s, t0 + (k + 1)·sync_s), those without requests skipped; sync_s 0: one
    window per distinct arrival time, starting there (loads read at every arrival: exact)."""
    if not len(arrival_s):
        return np.zeros(0), np.zeros(1, dtype=np.int64)
    t0 = float(arrival_s[0])
    index = arrival_s
    if sync_s != 0:
        with np.errstate(over="ignore"):
            grid = np.floor((arrival_s - t0) / sync_s)
        if np.isfinite(grid).all():
            index = grid
        else:
            # a Δt so small that (t - t0) / Δt overflows (load_sync_s 5e-324: every arrival after the first fell
            # into one window at +inf, whose loads were never read: a silently wrong run): such windows hold one
            # arrival time each, as at sync_s 0, which is their limit
            sync_s = 0.0
    first = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    starts = arrival_s[first] if sync_s == 0 else t0 + index[first] * sync_s
    return np.asarray(starts, dtype=np.float64), np.r_[first, len(arrival_s)].astype(np.int64)


def _checked(result: dict, replicas) -> dict:
    if "error" in result:
        field, message = result["error"]
        raise ScenarioError(field, f"(on a Dask worker) {message}")
    if "traceback" in result:
        where = f" simulating replicas {_replicas_text(replicas)}" if replicas else ""
        raise RuntimeError(f"a Dask worker failed{where}:\n" + result["traceback"])
    return result


_ACTOR_LOST = "Worker holding Actor was lost"   # Dask's RuntimeError for an actor whose worker died (distributed.actor)


def _replicas_text(replicas: list[int]) -> str:
    """`a–b` for consecutive replicas (`a` for one); `a, b, …, z` for a windowed run's strided group."""
    if len(replicas) == 1:
        return str(replicas[0])
    if replicas[-1] - replicas[0] == len(replicas) - 1:
        return f"{replicas[0]}–{replicas[-1]}"
    shown = ", ".join(str(r) for r in replicas[:3])
    return f"{shown}, …, {replicas[-1]}" if len(replicas) > 4 else ", ".join(str(r) for r in replicas)


def _worker_lost(exc: Exception, replicas: list[int], actor: bool, client=None) -> ScenarioError | None:
    """The one line of a task or actor whose worker (or scheduler) went away (simulator.distributed.watch.lost;
    an actor's: OSError "Unable to contact Actor's worker" or RuntimeError "Worker holding Actor was lost",
    distributed.actor), or None for another error."""
    lost_actor = actor and isinstance(exc, RuntimeError) and str(exc).startswith(_ACTOR_LOST)
    note = ("a windowed run keeps its replicas on one worker (a Dask actor), which Dask cannot rerun; "
            if actor else "") + NOTHING_WRITTEN
    return lost(exc, FIELD, f"replicas {_replicas_text(replicas)}", note, client=client, worker_lost=lost_actor)


def _received(future, replicas: list[int], client=None) -> dict:
    """A task's result; a worker that died more often than Dask retries (`distributed.scheduler.
    allowed-failures`), or a scheduler lost, is one line naming the executor."""
    try:
        result = future.result()
    except Exception as exc:   # noqa: BLE001 — Dask's KilledWorker and lost-connection errors
        gone = _worker_lost(exc, replicas, actor=False, client=client)
        if gone is not None:
            raise gone from None
        raise
    return _checked(result, replicas)


def _on_actor(action, replicas: list[int]):
    """`action()`: an actor's creation, call or result; its worker's death is one line naming the executor (Dask
    does not rerun an actor: its state lived on that worker)."""
    try:
        return action()
    except Exception as exc:   # noqa: BLE001 — Dask's lost-connection errors
        gone = _worker_lost(exc, replicas, actor=True)
        if gone is not None:
            raise gone from None
        raise


class _DropActorProxyErrors(logging.Filter):
    """Drops the in-process scheduler's "broadcast to ... failed" records: an actor's calls go through the
    scheduler (Dask's ProxyRPC, distributed.actor), which logs a dead actor worker at ERROR above the run's
    own one line (a LocalCluster of `local-dask` runs its scheduler in this process)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("broadcast to ")


@contextmanager
def _actor_proxy_errors_quiet():
    logger, quiet = logging.getLogger("distributed.scheduler"), _DropActorProxyErrors()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)
