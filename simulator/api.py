"""Python API: `simulator.run(scenario_or_path) -> Result` for notebooks and scripts."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.build import Built, build
from simulator.engine import Engine, EngineConfig
from simulator.metrics import build_requests_frame, build_steps_frame, summarize
from simulator.schema import Scenario, load_scenario, parse_scenario


@dataclass
class Result:
    scenario: Scenario
    requests: pd.DataFrame
    steps: pd.DataFrame
    summary: dict
    wall_s: float = 0.0                      # host seconds spent simulating (not part of summary.json)
    built: Built | None = field(default=None, repr=False)


def _sorted_steps(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Order the step log by (start time, replica): independent of event-processing order."""
    order = np.lexsort((cols["replica"], cols["start_s"]))
    return {k: v[order] for k, v in cols.items()}


def pricing_summary(latency, engine, steps: pd.DataFrame) -> dict:
    """`latency_source` (which source priced which op kinds), `engine_time` (the engine-time model, or
    None) and the share of busy time that was engine time."""
    from profiles.select import describe_latency
    busy = float(steps["duration_s"].sum()) if len(steps) else 0.0
    return {"latency_source": describe_latency(latency),
            "engine_time": engine.describe() if engine is not None else None,
            "engine_time_fraction": float(steps["engine_s"].sum()) / busy if busy > 0 else 0.0}


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
    if scenario.cluster.disaggregation is not None:
        return _run_disaggregated(scenario, base_dir, step_mode, progress)
    t0 = time.perf_counter()
    built = build(scenario, base_dir)
    mode = step_mode or scenario.scheduler.step_mode
    arrival = scenario.workload.arrival
    closed = arrival.concurrency if arrival.process == "closed_loop" else None
    engine = Engine(built.state, built.replicas, built.router, EngineConfig(mode, progress, closed))
    end_s = engine.run()
    wall_s = time.perf_counter() - t0
    requests = build_requests_frame(built.state.columns(), scenario.slo)
    steps = build_steps_frame(_sorted_steps(built.log.columns()))
    alltoall = getattr(built.replicas[0].cost.target, "alltoall_seconds", None)
    if alltoall is not None:  # expert parallelism: the all-to-all part of each step's target pass
        tokens = steps["prefill_tokens"].to_numpy() + steps["decode_seqs"].to_numpy() * steps["query_tokens_per_seq"].to_numpy()
        steps["alltoall_s"] = [alltoall(int(t)) for t in tokens]
    summary = summarize(requests, steps, slo=scenario.slo, num_replicas=len(built.replicas),
                        gpus_per_replica=built.parallelism.gpus,
                        peak_flops_per_gpu=built.hardware.peak_flops[scenario.cluster.dtype],
                        peak_bw_per_gpu=built.hardware.hbm_bandwidth_bytes_per_s, sim_end_s=end_s)
    summary["scenario"] = scenario.name
    summary.update(pricing_summary(built.latency, built.engine, steps))
    summary["kv_tokens_per_replica"] = built.kv_tokens_per_replica
    summary["gpus"] = len(built.replicas) * built.parallelism.gpus
    if "alltoall_s" in steps:
        summary["alltoall_time_fraction"] = float(steps["alltoall_s"].sum() / steps["duration_s"].sum()) \
            if len(steps) else float("nan")
    return Result(scenario, requests, steps, summary, wall_s, built)


def _run_disaggregated(scenario: Scenario, base_dir: Path, step_mode: str | None, progress) -> Result:
    """`run` for `cluster.disaggregation` (simulator.disagg): two pools, KV transfers on the network."""
    from simulator.disagg import DisaggEngine, build_disaggregated, request_extras, summary_extras

    t0 = time.perf_counter()
    built = build_disaggregated(scenario, base_dir)
    engine = DisaggEngine(built, step_mode or scenario.scheduler.step_mode, progress)
    end_s = engine.run()
    wall_s = time.perf_counter() - t0
    requests = build_requests_frame(built.state.columns(), scenario.slo)
    for name, values in request_extras(engine, built).items():
        requests[name] = values
    steps = build_steps_frame(_sorted_steps(built.log.columns()))
    summary = summarize(requests, steps, slo=scenario.slo, num_replicas=len(built.prefill) + len(built.decode),
                        gpus_per_replica=1, peak_flops_per_gpu=built.hardware.peak_flops[scenario.cluster.dtype],
                        peak_bw_per_gpu=built.hardware.hbm_bandwidth_bytes_per_s, sim_end_s=end_s)
    summary.update(summary_extras(summary, requests, steps, built))
    summary["scenario"] = scenario.name
    summary.update(pricing_summary(built.latency, built.engine, steps))
    return Result(scenario, requests, steps, summary, wall_s, built)
