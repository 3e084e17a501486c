"""The Python API for notebooks and scripts (exported by `simulator`): `run(scenario, overrides)` → `Result`,
or in two stages `prepare` (validate and build: every error on the user's input is raised here, before
any simulation work) and `simulate`. A scenario is a YAML path, a dict (what the YAML holds) or a validated
`Scenario`; `overrides` are `key.path=value` texts (as `draftsim run --set`), applied to any of the three.
Errors on the input raise `simulator.errors.ScenarioError` naming the field."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from simulator.cluster.build import Cluster, build
from simulator.core.engine import Engine, EngineConfig
from simulator.results.columns import ColumnTable
from simulator.results.metrics import aggregate_table, request_table, step_table
from simulator.results.summary import cluster_summary
from simulator.config.host_memory import check_memory
from simulator.config.scenario import (Scenario, apply_overrides, check_overrides_once, override_texts,
                                      parse_scenario, read_scenario_dict)
from simulator.errors import ScenarioError


@dataclass
class Result:
    """One simulated run: what `draftsim run` writes (requests.parquet, steps.parquet, summary.json).
    `requests` and `steps` are pandas DataFrames, built from the run's columns when first read."""

    scenario: Scenario
    request_table: ColumnTable = field(repr=False)   # one row per request (metrics.REQUEST_COLUMNS, derived latencies)
    step_table: ColumnTable = field(repr=False)      # one row per step, kept step, or replica and interval (`outputs.steps`)
    summary: dict          # what summary.json holds
    wall_s: float = 0.0                      # host seconds spent building + simulating (not in summary.json)
    workload_s: float = 0.0                  # of build_s: reading (a trace) or drawing the requests
    built: Cluster | None = field(default=None, repr=False)
    build_s: float = 0.0                     # of wall_s: building the cluster (pricing tables, workload)

    @cached_property
    def requests(self):
        """The request records as a pandas DataFrame."""
        return self.request_table.to_pandas()

    @cached_property
    def steps(self):
        """The step records (every step, kept steps or interval aggregates) as a pandas DataFrame."""
        return self.step_table.to_pandas()


@dataclass(frozen=True)
class Prepared:
    """A scenario whose cluster is built and checked: everything that can fail on the user's input has
    failed by now (`prepare`), before any simulation work."""

    scenario: Scenario
    cluster: Cluster
    build_s: float
    base_dir: Path = Path(".")   # the folder its relative paths are read from (a Dask worker reads them too)

    @property
    def num_requests(self) -> int:
        return int(self.cluster.state.n)


def _sorted_steps(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Order the step log by (start time, replica): independent of event-processing order."""
    order = np.lexsort((cols["replica"], cols["start_s"]))
    return {k: v[order] for k, v in cols.items()}


def scenario_dict(scenario: Scenario | dict | str | Path, overrides: list[str] | None = None,
                  base_dir: str | Path | None = None) -> tuple[dict, Path]:
    """The raw scenario (a dict as a YAML file holds it) of a path, dict or Scenario with `overrides`
    applied, and the folder its relative paths are relative to (`base_dir`, else the file's folder, else
    the working directory)."""
    base_dir = _folder(base_dir)   # (simulator.sweep(..., base_dir=5) raised a TypeError)
    if isinstance(scenario, (str, Path)):
        data = read_scenario_dict(scenario)
        data.setdefault("name", Path(scenario).stem)
        base_dir = base_dir if base_dir is not None else Path(scenario).resolve().parent
    elif isinstance(scenario, Scenario):
        data = scenario.model_dump(mode="json")
    elif isinstance(scenario, dict):
        data = scenario
    else:
        raise ScenarioError("scenario", f"a YAML path, a dict or a Scenario, got {type(scenario).__name__}")
    texts = override_texts(overrides)
    # (named as the API's argument, not the command line's --set; ['seed=1', 'seed=2'] ran seed 2 without a word,
    # where draftsim run --set refuses it)
    check_overrides_once(texts, "overrides")
    data = apply_overrides(data, texts, "overrides")
    return data, Path(base_dir) if base_dir is not None else Path.cwd()


def _folder(base_dir) -> Path | None:
    """`base_dir` as a Path (None stays None); a number or bytes raised a TypeError."""
    if base_dir is None:
        return None
    if not isinstance(base_dir, (str, os.PathLike)) or "\x00" in str(base_dir):
        raise ScenarioError("base_dir", f"the folder a scenario's relative paths are read from (a str or Path, or "
                                        f"None), got {base_dir!r}")
    return Path(base_dir)


def _check_progress(progress) -> None:
    if progress is not None and not callable(progress):   # (called at the first finished request: a TypeError)
        raise ScenarioError("progress", f"a callable taking the number of requests just completed, or None; got "
                                        f"{type(progress).__name__}")


def _as_scenario(scenario, overrides, base_dir) -> tuple[Scenario, Path]:
    base_dir = _folder(base_dir)
    if isinstance(scenario, Scenario) and not override_texts(overrides):
        return scenario, Path(base_dir) if base_dir is not None else Path.cwd()
    data, base_dir = scenario_dict(scenario, overrides, base_dir)
    return parse_scenario(data), base_dir


def prepare(scenario: Scenario | dict | str | Path, overrides: list[str] | None = None, *,
            base_dir: str | Path | None = None) -> Prepared:
    """Validate and build a scenario's cluster (requests, pricing, replicas) without simulating it: a
    YAML path, a dict or a Scenario, with `overrides` (`key.path=value`, as `draftsim run --set`)."""
    scenario, base_dir = _as_scenario(scenario, overrides, base_dir)
    check_memory(scenario, base_dir=base_dir)
    if scenario.simulation.executor != "local":   # what a distributed run refuses, before any work
        from simulator.distributed import check_distributable
        check_distributable(scenario)
    t0 = time.perf_counter()
    cluster = build(scenario, base_dir)
    return Prepared(cluster.scenario, cluster, time.perf_counter() - t0, base_dir)   # (its scheduler as run)


def check_step_mode(step_mode) -> None:
    if step_mode not in (None, "bulk", "step"):   # (any other word ran in bulk mode without a word)
        raise ScenarioError("step_mode", f"'bulk' or 'step' (or None: the scenario's simulation.step_mode), "
                                         f"got {step_mode!r}")


def simulate(prepared: Prepared, *, step_mode: str | None = None, progress=None, executor=None) -> Result:
    """Simulate a prepared scenario once (a Prepared's cluster holds the run's state: do not reuse it).
    Under a Dask `simulation.executor` the replicas run on the Dask workers (simulator.distributed);
    `executor`: an entered simulator.distributed.open_executor(...) to use (default: one opened here)."""
    if not isinstance(prepared, Prepared):   # (an AttributeError on .scenario)
        raise ScenarioError("prepared", f"a Prepared, from simulator.prepare(scenario); got "
                                        f"{type(prepared).__name__}")
    scenario, cluster = prepared.scenario, prepared.cluster
    check_step_mode(step_mode)
    _check_progress(progress)
    if executor is not None and scenario.simulation.executor == "local":   # (ignored without a word)
        raise ScenarioError("executor", "runs the replicas of a scenario whose simulation.executor is a Dask one; "
                                        "this scenario's is local: leave executor out")
    if cluster.simulated:   # (its requests were done: a second run failed in numpy, or summed two runs)
        raise ScenarioError("prepared", "was simulated already (its cluster holds that run's state); prepare the "
                                        "scenario again for another run")
    cluster.simulated = True
    t0 = time.perf_counter()
    arrival = scenario.workload.arrival
    closed = arrival.concurrency if arrival.process == "closed_loop" else None
    mode = step_mode or scenario.simulation.step_mode
    distributed = scenario.simulation.executor != "local"
    if distributed:
        from simulator.distributed import open_executor, simulate_distributed
        if executor is None:
            with open_executor(scenario) as executor:
                end_s = simulate_distributed(cluster, executor, base_dir=prepared.base_dir, step_mode=mode,
                                             progress=progress)
        else:
            end_s = simulate_distributed(cluster, executor, base_dir=prepared.base_dir, step_mode=mode,
                                         progress=progress)
    else:
        end_s = Engine(cluster, EngineConfig(mode, progress, closed, workers=scenario.simulation.workers)).run()
    wall_s = prepared.build_s + time.perf_counter() - t0
    requests = request_table(cluster.state.columns(), scenario.slo.spec())
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
    if distributed and not cluster.pools[0].router.stateless:   # the named approximation (simulator.distributed)
        summary["load_sync_s"] = scenario.simulation.load_sync_s
    if cluster.log.mode == "aggregate":
        steps = aggregate_table(cluster.log.aggregates())
    else:
        cols = _sorted_steps(cluster.log.columns())
        alltoall = cols.pop("alltoall_s", None)
        steps = step_table(cols)   # (kv_io_s, with a host tier, stays before end_s)
        if alltoall is not None:  # (after end_s, where the column has always been)
            steps["alltoall_s"] = alltoall
    return Result(scenario, requests, steps, summary, wall_s, cluster.workload_s, cluster, prepared.build_s)


def run(scenario: Scenario | dict | str | Path, overrides: list[str] | None = None, *,
        base_dir: str | Path | None = None, step_mode: str | None = None, progress=None) -> Result:
    """Simulate a scenario: a YAML path, a dict or a Scenario, with `overrides` (`key.path=value` texts,
    as `draftsim run --set`, e.g. ["drafter.gamma=2"]) applied to any of them. `base_dir`: the folder
    relative paths in the scenario are read from (default: the YAML file's, else the working directory).
    `step_mode` overrides simulation.step_mode ("bulk" or "step"); `progress` is an optional callable taking
    the number of requests that just completed (the CLI's progress bar). Example:
    `run("scenarios/quickstart.yaml", ["workload.num_requests=100"]).summary["tpot_p50_s"]`.
    """
    check_step_mode(step_mode)   # (before any work)
    _check_progress(progress)
    return simulate(prepare(scenario, overrides, base_dir=base_dir), step_mode=step_mode, progress=progress)
