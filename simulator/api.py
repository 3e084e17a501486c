"""Python API: `simulator.run(scenario_or_path) -> Result` for notebooks and scripts."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.cluster.build import Cluster, build
from simulator.core.engine import Engine, EngineConfig
from simulator.results.metrics import build_aggregate_frame, build_requests_frame, build_steps_frame
from simulator.results.summary import cluster_summary
from simulator.config.host_memory import check_memory
from simulator.config.scenario import Scenario, load_scenario, parse_scenario


@dataclass
class Result:
    scenario: Scenario
    requests: pd.DataFrame
    steps: pd.DataFrame    # one row per step, or per kept step, or per replica and interval (`outputs.steps`)
    summary: dict
    wall_s: float = 0.0                      # host seconds spent building + simulating (not in summary.json)
    workload_s: float = 0.0                  # of build_s: reading (a trace) or drawing the requests
    built: Cluster | None = field(default=None, repr=False)
    build_s: float = 0.0                     # of wall_s: building the cluster (pricing tables, workload)


@dataclass(frozen=True)
class Prepared:
    """A scenario whose cluster is built and checked: everything that can fail on the user's input has
    failed by now (`prepare`), before any simulation work."""

    scenario: Scenario
    cluster: Cluster
    build_s: float

    @property
    def num_requests(self) -> int:
        return int(self.cluster.state.n)


def _sorted_steps(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Order the step log by (start time, replica): independent of event-processing order."""
    order = np.lexsort((cols["replica"], cols["start_s"]))
    return {k: v[order] for k, v in cols.items()}


def _as_scenario(scenario, overrides, base_dir) -> tuple[Scenario, Path]:
    if isinstance(scenario, (str, Path)):
        scenario, folder = load_scenario(scenario, overrides)
        base_dir = base_dir or folder
    elif isinstance(scenario, dict):
        scenario = parse_scenario(scenario)
    return scenario, Path(base_dir) if base_dir is not None else Path.cwd()


def prepare(scenario: Scenario | dict | str | Path, overrides: list[str] | None = None, *,
            base_dir: str | Path | None = None) -> Prepared:
    """Validate and build a scenario's cluster (requests, pricing, replicas) without simulating it."""
    scenario, base_dir = _as_scenario(scenario, overrides, base_dir)
    check_memory(scenario)
    t0 = time.perf_counter()
    cluster = build(scenario, base_dir)
    return Prepared(scenario, cluster, time.perf_counter() - t0)


def simulate(prepared: Prepared, *, step_mode: str | None = None, progress=None) -> Result:
    """Simulate a prepared scenario once (a Prepared's cluster holds the run's state: do not reuse it)."""
    scenario, cluster = prepared.scenario, prepared.cluster
    t0 = time.perf_counter()
    arrival = scenario.workload.arrival
    closed = arrival.concurrency if arrival.process == "closed_loop" else None
    end_s = Engine(cluster, EngineConfig(step_mode or scenario.scheduler.step_mode, progress, closed,
                                         workers=scenario.scheduler.workers)).run()
    wall_s = prepared.build_s + time.perf_counter() - t0
    requests = build_requests_frame(cluster.state.columns(), scenario.slo.spec())
    if cluster.handoff is not None:
        for name, values in cluster.handoff.request_columns(cluster.state).items():
            requests[name] = values
    if cluster.retrieval is not None:   # retrieval pauses, knowledge-base queries, rollbacks per request
        for name, values in cluster.retrieval.request_columns().items():
            requests[name] = values
    if scenario.cluster.kv_cache.prefix_caching:  # prompt tokens found cached at the first admission
        requests["cached_prompt_tokens"] = cluster.state.cached_prompt_tokens.copy()
    cluster.log.finish()
    summary = cluster_summary(cluster, requests, end_s)
    if cluster.log.mode == "aggregate":
        steps = build_aggregate_frame(cluster.log.aggregates())
    else:
        cols = _sorted_steps(cluster.log.columns())
        alltoall = cols.pop("alltoall_s", None)
        steps = build_steps_frame(cols)   # (kv_io_s, with a host tier, stays before end_s)
        if alltoall is not None:  # (after end_s, where the column has always been)
            steps["alltoall_s"] = alltoall
    return Result(scenario, requests, steps, summary, wall_s, cluster.workload_s, cluster, prepared.build_s)


def run(scenario: Scenario | dict | str | Path, overrides: list[str] | None = None, *,
        base_dir: str | Path | None = None, step_mode: str | None = None, progress=None) -> Result:
    """Simulate a scenario (a Scenario, a raw dict, or a YAML path with optional `key=value` overrides).

    step_mode overrides scheduler.step_mode ("bulk" or "step"); progress is an optional callable taking
    the number of requests that just completed (used by the CLI's progress bar).
    """
    return simulate(prepare(scenario, overrides, base_dir=base_dir), step_mode=step_mode, progress=progress)
