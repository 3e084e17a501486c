"""A group of replicas on one Dask worker: built there from the scenario, fed its requests, run, and its
results sent back (simulator.distributed.driver merges them).

The worker rebuilds the replicas' kind (step cost, latency tables, acceptance model) from the scenario
with the same code the driver ran (simulator.cluster.build.pool_kind), once per worker process and
scenario: a worker needs draftsim and the files the scenario names, at the same paths (as `draftsim
sweep`'s Dask workers do). Its request columns hold only the group's requests, at local rows 0..m-1, in
arrival order; `GlobalIds` gives the acceptance model their run-wide ids, so a request's counter-based
draws are the same whichever group simulates it. Replicas keep their run-wide index (the step log's
`replica` column).

Two ways to run a group:
- `run_group` (a plain Dask task): every request's replica is known before the run (routers that route
  ahead); the group runs to its end, exactly as the independent driver runs those replicas.
- `WindowedGroup` (a Dask actor): the driver routes window by window (routers that read loads); each
  `advance` appends a window's requests and runs every replica up to the window's end (no step starts at
  or after it: simulator.core.timeline.OwnArrivals.until_s), then reports the loads a router reads.
"""
from __future__ import annotations

import gc
import math
import traceback
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# request columns a run does not change (the driver set them): not sent back
CONSTANT_COLUMNS = frozenset({"arrival_s", "prompt", "output", "samples", "replica", "prefill_target"})


@dataclass(frozen=True)
class GroupSpec:
    """What a worker needs to build a group: the scenario (a validated Scenario), the folder its relative
    paths are read from, the group's replicas (run-wide indices), the run's replica count and the step
    log's window start (the run's first arrival), the step mode, and the run it belongs to (`run_id`, one
    per run of the driver: `_built`)."""

    scenario: object
    base_dir: str
    replicas: tuple[int, ...]
    num_replicas: int
    window_start_s: float
    step_mode: str = "bulk"
    run_id: str = ""


_BUILT: dict[tuple, tuple] = {}   # (run id, scenario JSON, base dir) -> what `_built` returns; one run per worker


def _built(spec: GroupSpec) -> tuple:
    """(replica kind, KV blocks per replica, scheduler class, batch limits) of the scenario, built once per
    worker process and run (its latency tables, step-cost memos and pricing curves stay warm between the
    run's groups). Not between runs: the kind's latency model counts the distinct op shapes it priced
    (summary.json `latency_source`), and a second run of one scenario on a long-lived worker reported only
    the shapes the first had not priced (the quickstart's at 1,500 requests on 6 replicas: 1,326 GEMM shapes
    instead of 6,440 on a `dask scheduler`'s two workers, 2026-11-29): its summary differed from the first's
    and from one process's. Prices themselves stay shared between
    runs (profiles.shared_tables), as between a sweep's points in one process."""
    key = (spec.run_id, spec.scenario.model_dump_json(), spec.base_dir)
    found = _BUILT.get(key)
    if found is None:
        from simulator.cluster.build import Streams, batch_scheduler, pool_kind
        scenario = spec.scenario
        kind = pool_kind(scenario, None, "cluster", Streams.from_seed(scenario.seed).acceptance_seed,
                         Path(spec.base_dir))
        scheduler, limits = batch_scheduler(scenario, kind)
        found = (kind, kind.blocks(scenario.scheduler.block_size), scheduler, limits)
        _BUILT.clear()
        _BUILT[key] = found
    return found


class GlobalIds:
    """An acceptance model read with a group's local request rows: `tau`, `tau_runs`, `draw` and `draws` map them to
    the run-wide request ids (draws are pure functions of the request id and step index); everything else
    is the model's own."""

    def __init__(self, model, group: "ReplicaGroup"):
        self._model, self._group = model, group

    def __getattr__(self, name: str):
        return getattr(self._model, name)

    def tau(self, request_ids, step_index):
        return self._model.tau(self._group.ids[request_ids], step_index)

    def tau_runs(self, request_ids, counts):
        return self._model.tau_runs(self._group.ids[request_ids], counts)

    def draw(self, request_ids, step_index, emitted):
        return self._model.draw(self._group.ids[request_ids], step_index, emitted)

    def draws(self, request_ids, step_index, emitted, steps: int):
        return self._model.draws(self._group.ids[request_ids], step_index, emitted, steps)


class ReplicaGroup:
    """Replicas `spec.replicas` over request columns that hold the group's requests only (module docstring).
    `capacity`: rows to allocate at first (more are added as requests come, `append`)."""

    def __init__(self, spec: GroupSpec, capacity: int = 0):
        from simulator.core.replica import Replica
        from simulator.core.state import RequestState
        from simulator.core.steplog import StepLog
        from simulator.core.workload import RequestTable
        from simulator.cluster.build import alltoall_pricer_for, kv_manager
        from simulator.results.energy import run_power

        scenario = spec.scenario
        self.spec = spec
        kind, blocks, scheduler, limits = _built(spec)
        self.kind = kind
        samples = scenario.workload.parallel_samples
        self._template = RequestState(RequestTable(np.zeros(1), np.ones(1, dtype=np.int64),
                                                   np.ones(1, dtype=np.int64)), samples)
        self.state = RequestState(RequestTable(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)),
                                  samples)
        self.ids = np.zeros(0, dtype=np.int64)   # run-wide id of each local row
        self.used = 0
        self._reserve(capacity)
        out = scenario.outputs
        self.log = StepLog(out.steps, num_replicas=spec.num_replicas, sample_every=out.step_sample_every,
                           interval_s=out.step_interval_s, window_start_s=spec.window_start_s,
                           power=run_power([(kind, spec.num_replicas)], scenario.energy))
        self.log.alltoall = alltoall_pricer_for(kind, spec.num_replicas)
        acceptance = GlobalIds(kind.acceptance, self) if kind.acceptance is not None else None
        self.replicas = [Replica(i, self.state, scheduler(limits), kv_manager(scenario, kind, blocks, self.state, None),
                                 limits, kind.cost, acceptance, self.log, kind.policy) for i in spec.replicas]
        self._mark = kind.latency.usage_mark()

    # ---- request rows ----------------------------------------------------------------------------------
    def _reserve(self, rows: int) -> None:
        """Room for `rows` local rows: every column grows (doubling) with the defaults of a fresh request."""
        state = self.state
        if rows <= state.n:
            return
        capacity = max(rows, 2 * state.n, 1024)
        for name, values in list(vars(state).items()):
            if isinstance(values, np.ndarray) and values.shape[:1] == (state.n,):
                grown = np.empty(capacity, dtype=values.dtype)
                grown[:state.n] = values
                grown[state.n:] = getattr(self._template, name)[0]
                setattr(state, name, grown)
        ids = np.full(capacity, -1, dtype=np.int64)
        ids[:len(self.ids)] = self.ids
        self.ids = ids
        state.n = capacity

    def append(self, columns: dict) -> np.ndarray:
        """Add requests (run-wide `ids`, `arrival_s`, `prompt`, `output`, `replica`, in arrival order);
        returns their local rows."""
        k = len(columns["ids"])
        first = self.used
        self._reserve(first + k)
        rows = np.arange(first, first + k, dtype=np.int64)
        s = self.state
        self.ids[rows] = columns["ids"]
        s.arrival_s[rows] = columns["arrival_s"]
        s.prompt[rows] = columns["prompt"]
        s.output[rows] = columns["output"]
        s.prefill_target[rows] = columns["prompt"]
        s.replica[rows] = columns["replica"]
        self.used = first + k
        return rows

    # ---- results ---------------------------------------------------------------------------------------
    def result(self) -> dict:
        """What the driver merges: the requests' changed columns, the replicas' clocks, the step log's part
        and the op shapes the latency model priced here (simulator.core.parallel sends the same)."""
        from simulator.core.parallel import state_arrays
        used = self.used
        return {"ids": self.ids[:used].copy(),
                "state": {name: values[:used].copy() for name, values in state_arrays(self.state).items()
                          if name not in CONSTANT_COLUMNS},
                "replicas": [rep.index for rep in self.replicas], "clocks": [rep.clock_s for rep in self.replicas],
                "log": self.log.export_part(), "latency": self.kind.latency.usage_since(self._mark)}


def _controls(group: ReplicaGroup, report):
    from simulator.core.timeline import TimelineControls
    return TimelineControls(bulk=group.spec.step_mode == "bulk", report=report, report_every_step=False)


def run_group(spec: GroupSpec, columns: dict) -> dict:
    """A Dask task: the group's replicas over their requests (known ahead), run to their ends. Bad input
    met on the worker (a file the scenario names is missing there) comes back as {"error": (field,
    message)}; any other failure as its traceback."""
    paused = gc.isenabled()
    gc.disable()   # (as the one-process engine: the replica loops make no reference cycles)
    try:
        from simulator.core.timeline import OwnArrivals, replica_timeline
        group = ReplicaGroup(spec, len(columns["ids"]))
        rows = group.append(columns)
        replica = np.asarray(columns["replica"])
        ctl = _controls(group, lambda rep, finished: None)
        for rep in group.replicas:
            mine = rows[replica == rep.index]
            rep.arrivals = OwnArrivals(mine, group.state.arrival_s[mine])
            for _ in replica_timeline(rep, ctl):
                pass
            rep.arrivals = None
        return group.result()
    except Exception as exc:   # noqa: BLE001 — sent back to the driver, which raises it there
        return _failure(exc)
    finally:
        if paused:
            gc.enable()


def _failure(exc: BaseException) -> dict:
    from simulator.errors import ScenarioError
    if isinstance(exc, ScenarioError):
        return {"error": (exc.field, str(exc)[len(exc.field) + 2:])}
    return {"traceback": traceback.format_exc()}


class WindowedGroup:
    """A Dask actor: a group of replicas fed window by window (module docstring). `advance` returns, per
    replica, the requests finished before the window's end (cumulative) and the requests waiting there,
    and how many finished since the last call (progress)."""

    def __init__(self, spec: GroupSpec):
        from simulator.core.timeline import OwnArrivals, replica_timeline
        self.error = None
        try:
            self.group = ReplicaGroup(spec)
            self._finishes: dict[int, list[float]] = {rep.index: [] for rep in self.group.replicas}
            self._finished = np.zeros(len(self.group.replicas), dtype=np.int64)
            self._new = 0
            ctl = _controls(self.group, self._report)
            self._runs = []
            for rep in self.group.replicas:
                rep.arrivals = OwnArrivals(np.zeros(0, dtype=np.int64), np.zeros(0), until_s=-math.inf)
                self._runs.append(replica_timeline(rep, ctl))
        except Exception as exc:   # noqa: BLE001 — reported by the first `advance`
            self.error = _failure(exc)

    def _report(self, rep, finished: list[int]) -> None:
        if finished:
            self._finishes[rep.index].extend(self.group.state.finish_s[finished].tolist())
            self._new += len(finished)

    def advance(self, columns: dict, until_s: float) -> dict:
        """Append the window's requests, run every replica up to `until_s` (math.inf: to its end) and
        report the loads there."""
        if self.error is not None:
            return self.error
        paused = gc.isenabled()
        gc.disable()
        try:
            from simulator.core.timeline import SUSPEND
            group = self.group
            rows = group.append(columns) if len(columns["ids"]) else np.zeros(0, dtype=np.int64)
            replica = np.asarray(columns["replica"])
            s = group.state
            queued = np.zeros(len(group.replicas), dtype=np.int64)
            for g, (rep, run) in enumerate(zip(group.replicas, self._runs)):
                mine = rows[replica == rep.index]
                rep.arrivals.extend(mine.tolist(), s.arrival_s[mine].tolist(), until_s)
                if run is not None:
                    for value in run:
                        if value is SUSPEND:
                            break
                    else:
                        self._runs[g] = None
                times = self._finishes[rep.index]
                before = bisect_left(times, until_s)   # finishes at exactly until_s are not seen yet
                self._finished[g] += before
                del times[:before]
                arrivals = rep.arrivals
                queued[g] = len(rep.waiting) + len(arrivals.ids) - arrivals.pos
            new, self._new = self._new, 0
            return {"finished": self._finished.copy(), "queued": queued, "new": new}
        except Exception as exc:   # noqa: BLE001
            return _failure(exc)
        finally:
            if paused:
                gc.enable()

    def result(self) -> dict:
        if self.error is not None:
            return self.error
        try:
            for rep in self.group.replicas:
                rep.arrivals = None
            return self.group.result()
        except Exception as exc:   # noqa: BLE001
            return _failure(exc)
