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
from simulator.config.scenario import Scenario, load_scenario, parse_scenario


@dataclass
class Result:
    scenario: Scenario
    requests: pd.DataFrame
    steps: pd.DataFrame    # one row per step, or per kept step, or per replica and interval (`outputs.steps`)
    summary: dict
    wall_s: float = 0.0                      # host seconds spent simulating (not part of summary.json)
    workload_s: float = 0.0                  # host seconds spent reading (a trace) or drawing the requests
    built: Cluster | None = field(default=None, repr=False)


def _sorted_steps(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Order the step log by (start time, replica): independent of event-processing order."""
    order = np.lexsort((cols["replica"], cols["start_s"]))
    return {k: v[order] for k, v in cols.items()}


def run(scenario: Scenario | dict | str | Path, overrides: list[str] | None = None, *,
        base_dir: str | Path | None = None, step_mode: str | None = None, progress=None) -> Result:
    """Simulate a scenario (a Scenario, a raw dict, or a YAML path with optional `key=value` overrides).

    step_mode overrides scheduler.step_mode ("bulk" or "step"); progress is an optional callable taking
    the number of requests that just completed (used by the CLI's progress bar).
    """
    if isinstance(scenario, (str, Path)):
        scenario, folder = load_scenario(scenario, overrides)
        base_dir = base_dir or folder
    elif isinstance(scenario, dict):
        scenario = parse_scenario(scenario)
    base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
    t0 = time.perf_counter()
    cluster = build(scenario, base_dir)
    arrival = scenario.workload.arrival
    closed = arrival.concurrency if arrival.process == "closed_loop" else None
    end_s = Engine(cluster, EngineConfig(step_mode or scenario.scheduler.step_mode, progress, closed)).run()
    wall_s = time.perf_counter() - t0 - cluster.workload_s
    requests = build_requests_frame(cluster.state.columns(), scenario.slo)
    if cluster.handoff is not None:
        for name, values in cluster.handoff.request_columns(cluster.state).items():
            requests[name] = values
    cluster.log.finish()
    summary = cluster_summary(cluster, requests, end_s)
    if cluster.log.mode == "aggregate":
        steps = build_aggregate_frame(cluster.log.aggregates())
    else:
        cols = _sorted_steps(cluster.log.columns())
        alltoall = cols.pop("alltoall_s", None)
        steps = build_steps_frame(cols)
        if alltoall is not None:  # (after end_s, where the column has always been)
            steps["alltoall_s"] = alltoall
    return Result(scenario, requests, steps, summary, wall_s, cluster.workload_s, cluster)
