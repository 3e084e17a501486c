"""`draftsim sweep SWEEP.yaml`: run a grid/list of scenario variants with seeds and collect one row each.

Python API::

    import simulator
    frame = simulator.sweep("scenarios/quickstart.yaml", {"drafter.gamma": [1, 2, 4]}, seeds=[0, 1])
    # in memory: one row per point (parameters, seed, status, summary metrics), on the same executors

    from simulator.workflows.sweep.main import run_sweep
    result = run_sweep("scenarios/sweeps/quickstart_qps_gamma.yaml", out="out/sweeps/qg", resume=True)
    result.frame        # the same rows, from a sweep file into a resumable store

See :mod:`simulator.workflows.sweep.config` for the file format, :mod:`simulator.workflows.sweep.store` for the store and its
crash safety, :mod:`simulator.distributed.executors` for executors. A point whose scenario fails when it is built
(e.g. the model does not fit in memory at that parallelism) is stored with ``status = "invalid"`` and the
one-line reason in ``error``; it counts as finished.
"""
from __future__ import annotations

import argparse
import json
import numbers
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from simulator.console.printable import printable
from simulator.console.progress import Progress
from simulator.errors import ScenarioError
from simulator.distributed.executors import EXECUTORS, SCHEMES, DaskExecutor, make_executor
from simulator.config.validation import validate_config
from simulator.workflows.sweep.config import (SEED_KEY, SweepConfig, SweepPoint, SweepSpace, check_set_not_swept, expand,
                                             expand_points, load_sweep, point_label)
from simulator.results.output_folder import given_or
from simulator.workflows.sweep.store import SweepStore, open_store
from simulator.console.contract import (EXIT_FAILED_CHECK, EXIT_READER_GONE, QUIET_HELP, parse_args,
                                         stdout_reader_gone)

STATUS_OK, STATUS_INVALID = "ok", "invalid"
TABLE_METRICS = ("goodput_rps", "ttft_p99_s", "tpot_p50_s", "output_tokens_per_s", "slo_attainment")


def simulate_point(task: tuple) -> tuple[str, dict]:
    """Worker: simulate one validated scenario; returns (point_id, row of status + summary metrics)."""
    point_id, scenario, base_dir, step_mode = task
    from models.errors import UnknownNameError
    from simulator.api import run

    t0 = time.perf_counter()
    try:
        result = run(dict(scenario), base_dir=base_dir, step_mode=step_mode)
    except (ScenarioError, UnknownNameError) as exc:
        return point_id, {"status": STATUS_INVALID, "error": str(exc).splitlines()[0],
                          "wall_s": time.perf_counter() - t0}
    return point_id, summary_row(result.summary, time.perf_counter() - t0)


def summary_row(summary: dict, wall_s: float) -> dict:
    """A stored row of one simulated point: status, host seconds and the summary (dicts as JSON)."""
    row = {"status": STATUS_OK, "error": "", "wall_s": wall_s}
    for key, value in summary.items():
        row[key] = json.dumps(value, sort_keys=True) if isinstance(value, dict) else value
    return row


def _param_cell(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def _point_columns(point: SweepPoint, keys: list[str]) -> dict:
    cols = {"point_id": point.point_id, "point_index": point.index, SEED_KEY: point.seed}
    cols.update({key: _param_cell(point.params.get(key)) for key in keys})
    return cols


@dataclass
class SweepResult:
    spec: SweepConfig
    store: SweepStore
    points: list[SweepPoint]
    frame: pd.DataFrame                 # one row per finished point of this sweep
    ran: int = 0                        # points simulated by this call
    skipped: int = 0                    # points already in the store
    plots: list[Path] = field(default_factory=list)


def results_frame(store: SweepStore, points: list[SweepPoint], keys: list[str]) -> pd.DataFrame:
    """Stored rows of these points, with parameter columns taken from the current sweep definition."""
    rows = store.read_rows(p.point_id for p in points)
    if rows.empty:
        return rows
    params = pd.DataFrame([_point_columns(p, keys) for p in points])
    rows = rows.drop(columns=[c for c in params.columns if c in rows.columns and c != "point_id"])
    frame = params.merge(rows, on="point_id", how="inner")
    return frame.sort_values("point_index", kind="stable").reset_index(drop=True)


def run_sweep(sweep: str | Path, out: str | Path | None = None, *, resume: bool = False,
              overwrite: bool = False, executor="local", workers: int | None = None,
              step_mode: str | None = None, plot: bool = False, progress: bool = False) -> SweepResult:
    """Run the sweep's unfinished points and return all of its rows (see the module docstring)."""
    if resume and overwrite:
        raise ScenarioError("--resume", "cannot be combined with --overwrite")
    from simulator.api import check_step_mode
    check_step_mode(step_mode)
    spec, folder = load_sweep(sweep)
    points, base_dir = expand_points(spec, folder, progress)
    keys = spec.param_keys
    out_dir = given_or(out, Path("out") / "sweeps" / spec.name)
    runner = make_executor(executor, workers)
    _check_point_executors(points, runner, "--executor")
    opening = dict(resume=resume, overwrite=overwrite, expected_ids={p.point_id for p in points})
    source = str(Path(sweep).resolve())
    with runner:  # connect first: an unreachable Dask scheduler must not leave an empty store behind
        store = open_store(out_dir, spec.name, source, create=False, **opening)
        done = set() if overwrite else store.finished_ids()   # (--overwrite removes them when the store opens)
        stored_ok = store.read_rows(done) if plot and done else pd.DataFrame()
        if not stored_ok.empty and (stored_ok["status"] == STATUS_OK).any():
            _check_plot_metrics(spec, stored_ok[stored_ok["status"] == STATUS_OK].iloc[0].to_dict())
            plot_checked = True
        else:
            plot_checked = not plot
        # With --plot, rows are held back (and nothing is written) until the first finished point shows the
        # plot's metrics exist: a misspelt metric stops the sweep before it writes anything.
        held: list[tuple[str, dict]] = []
        if plot_checked:
            store = open_store(out_dir, spec.name, source, **opening)
        todo = [p for p in points if p.point_id not in done]
        ran = 0
        for point, row in _run_points(runner, todo, base_dir, step_mode, spec.name, progress):
            full = {**_point_columns(point, keys), **row}
            ran += 1
            if plot_checked:
                store.put(point.point_id, full)
                continue
            held.append((point.point_id, full))
            if row["status"] == STATUS_OK:
                _check_plot_metrics(spec, row)
                plot_checked = True
                store = open_store(out_dir, spec.name, source, **opening)
                for held_id, held_row in held:
                    store.put(held_id, held_row)
                held.clear()
        if held:   # no point finished ok: nothing to check the metrics against
            store = open_store(out_dir, spec.name, source, **opening)
            for held_id, held_row in held:
                store.put(held_id, held_row)
    frame = results_frame(store, points, keys)
    if not frame.empty:
        store.write_results(frame)
    result = SweepResult(spec, store, points, frame, ran, len(points) - len(todo))
    if plot:
        from simulator.workflows.sweep.plots import plot_sweep

        result.plots = plot_sweep(frame, spec, store.root / "plots")
    return result


def _check_point_executors(points: list[SweepPoint], runner, field: str) -> None:
    """Refuse, before any work, points whose `simulation.executor` is local-dask when the sweep runs its points
    on Dask workers: a point there starts a LocalCluster of worker processes, which a Dask worker (a daemonic
    process) cannot fork ("daemonic processes are not allowed to have children": a 100-line traceback, exit 1,
    for every point). Under --executor local or serial each point starts its own LocalCluster, and a point's
    dask://HOST:PORT is a running scheduler, reached from anywhere."""
    if not isinstance(runner, DaskExecutor):
        return
    for point in points:
        if point.scenario.get("simulation", {}).get("executor") == "local-dask":
            where = f" (point {point_label(point.params)})" if point.params else ""
            raise ScenarioError(field, f"runs the points on Dask workers, which cannot start the LocalCluster of a "
                                       f"point's simulation.executor local-dask{where}: a Dask worker cannot fork "
                                       "worker processes; use --executor local or serial, or give the points "
                                       "simulation.executor dask://HOST:PORT")


def _run_points(runner, points: list[SweepPoint], base_dir: Path, step_mode: str | None, label: str,
                progress: bool):
    """(point, row) of each point as it finishes on `runner` (an executor, entered)."""
    by_id = {p.point_id: p for p in points}
    tasks = [(p.point_id, p.scenario, str(base_dir), step_mode) for p in points]
    with Progress(label, total=len(points), unit="pt", quiet=not progress) as bar:
        for point_id, row in runner.imap_unordered(simulate_point, tasks):
            yield by_id[point_id], row
            bar.update()


def sweep(base, grid: dict[str, list], *, seeds: list[int] | None = None, overrides: list[str] | None = None,
          points: list[dict] | None = None, executor="local", workers: int | None = None,
          base_dir: str | Path | None = None, step_mode: str | None = None, progress: bool = False) -> pd.DataFrame:
    """Simulate `base` (a YAML path, a dict or a Scenario, with `overrides` as in `simulator.run`) at every
    combination of `grid` (key path → list of values, e.g. {"drafter.gamma": [1, 2, 4]}) crossed with the
    listed `points` and `seeds` (default: the scenario's seed), in memory, on the executors of
    `draftsim sweep` (`executor`: local, serial, local-dask or dask://HOST:PORT; `workers`). Returns one
    row per point in grid order: the swept keys, `seed`, `status` ("ok", or "invalid" with the one-line
    `error` of a point that cannot be built), `wall_s` and the summary's metrics."""
    from simulator.api import check_step_mode, scenario_dict
    check_step_mode(step_mode)   # (a bogus word made every point an 'invalid' row)
    if not isinstance(progress, bool):   # (progress='x' drew the progress bar, as any true value did)
        raise ScenarioError("progress", f"True (a progress bar on stderr) or False; got {progress!r}")
    space = validate_config(SweepSpace, {"grid": _plain(grid), "points": _plain([] if points is None else points),
                                         "seeds": _plain(seeds)}, prefix="")
    data, base_dir = scenario_dict(base, overrides, base_dir)
    from simulator.config.scenario import override_texts
    check_set_not_swept(override_texts(overrides), space, "overrides")
    data.setdefault("name", "sweep")
    found = expand(data, space.grid, space.points, space.seeds, field="", progress=progress)
    keys = space.param_keys
    rows: dict[str, dict] = {}
    try:
        runner = make_executor(executor, workers)
    except ScenarioError as exc:   # (named as the arguments, not as draftsim sweep's --executor / --workers)
        raise ScenarioError(exc.field.lstrip("-"), exc.message) from None
    _check_point_executors(found, runner, "executor")
    with runner:
        for point, row in _run_points(runner, found, base_dir, step_mode, data["name"], progress):
            rows[point.point_id] = row
    frame = pd.DataFrame([{**_point_columns(p, keys), **rows[p.point_id]} for p in found])
    return frame.drop(columns=["point_id", "point_index"])


def _plain(value):
    """`value` with NumPy arrays and scalars and pandas columns as Python lists and scalars (a notebook's
    np.linspace grid, an np.int64 seed, a DataFrame's column: YAML could not write them into a point's
    overrides), and a path object as its text (simulator.config.base.path_as_text, as a scenario dict's
    `cluster.model=Path(...)` is taken: the grid {"cluster.model": [Path("a/config.json")]} was refused, "is
    not a value a scenario file holds"), through lists, tuples and dicts."""
    import numpy as np

    from simulator.config.base import path_as_text
    value = path_as_text(value)
    if isinstance(value, (pd.Series, pd.Index)):
        return _plain(value.to_numpy())
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _check_plot_metrics(spec: SweepConfig, row: dict) -> None:
    """The plot's metrics are numeric summary keys: checked on a stored point (--resume) or on the first
    finished one (the keys a summary has, and which hold numbers, depend on the scenario), before anything is
    written, so a misspelt metric stops the sweep with nothing written (at the cost of the points that
    finished meanwhile). A key of text (`status`, `error`, `scenario`; a mapping such as `latency_source` or
    `dropped_by_reason` is stored as JSON text) was taken and its plot raised pandas' TypeError after the
    store was written; a boolean (its mean is a share) or null (a metric this point has not) plots."""
    known = sorted(k for k, v in row.items() if v is None or isinstance(v, numbers.Real))
    unknown = [m for m in spec.plot.metrics if m not in row]
    if unknown:
        raise ScenarioError("sweep.plot.metrics", f"{', '.join(map(repr, unknown))} not in the summary; "
                                                  f"metrics: {', '.join(known)}")
    text = next((m for m in spec.plot.metrics if m not in known), None)
    if text is not None:
        raise ScenarioError("sweep.plot.metrics", f"{text!r} is not a numeric metric; allowed: {', '.join(known)}")


def format_results_table(frame: pd.DataFrame, keys: list[str], max_rows: int = 40) -> str:
    """Mean over seeds of the headline metrics per parameter combination (fixed-width text)."""
    if frame.empty:
        return "(no finished points)"
    ok = frame[frame["status"] == STATUS_OK]
    metrics = [m for m in TABLE_METRICS if m in ok.columns]
    if ok.empty:   # (pandas printed "Empty DataFrame / Columns: [...] / Index: []")
        table = None
    elif keys:
        grouped = ok.groupby(keys, sort=False, dropna=False)
        table = grouped[metrics].mean().reset_index()
        table.insert(len(keys), "seeds", grouped.size().to_numpy())
    else:
        table = pd.DataFrame([{**ok[metrics].mean().to_dict(), "seeds": len(ok)}])[["seeds"] + metrics]
    text = ("(no point ran: every one is invalid)" if table is None else
            table.head(max_rows).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    invalid = frame[frame["status"] == STATUS_INVALID]
    for _, row in invalid.head(10).iterrows():
        text += f"\ninvalid ({_row_label(row, keys)}): {printable(row['error'])}"
    return text


def _row_label(row: pd.Series, keys: list[str]) -> str:
    """`key=value, ..., seed=N` of a stored row on one line (a stored text may hold a newline:
    console.printable)."""
    return ", ".join(f"{printable(k)}={printable(str(row[k]))}" for k in keys + [SEED_KEY])


def build_parser() -> argparse.ArgumentParser:
    executors = ", ".join([*EXECUTORS, *(f"{p}HOST:PORT" for p in SCHEMES)])
    p = argparse.ArgumentParser(
        prog="draftsim sweep",
        description="Run every point of a sweep file (a grid and/or list over scenario keys, times seeds), "
                    "storing one row per point (parameters + summary metrics) as it finishes. A stopped "
                    "sweep continues with --resume, skipping stored points.",
        epilog="example: draftsim sweep scenarios/sweeps/quickstart_qps_gamma.yaml --plot")
    p.add_argument("sweep", help="sweep YAML (see scenarios/sweeps/)")
    p.add_argument("--out", help="store folder (default: out/sweeps/<sweep name>)")
    p.add_argument("--resume", action="store_true", help="keep stored points and run only the missing ones")
    p.add_argument("--overwrite", action="store_true", help="discard stored points and start again")
    p.add_argument("--executor", default="local", metavar="NAME",
                   help=f"where points run: {executors} (default: local process pool)")
    p.add_argument("--workers", type=int, default=None, help="processes of --executor local or local-dask (default: CPU cores)")
    p.add_argument("--step-mode", choices=["bulk", "step"], default=None,
                   help="override the scenarios' simulation.step_mode")
    p.add_argument("--plot", action="store_true", help="draw the standard plots into <out>/plots/")
    p.add_argument("--dry-run", action="store_true", help="list the points and exit without running")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    return p


def _dry_run(sweep: str, progress: bool) -> int:
    spec, folder = load_sweep(sweep)
    points, _ = expand_points(spec, folder, progress)
    for point in points:
        print(f"{point.index:5d} {point.point_id}  seed={point.seed}  {point_label(point.params)}")
    print(f"{len(points)} points")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    from models.errors import UnknownNameError

    try:
        if args.dry_run:
            ignored = [flag for flag, given in (("--resume", args.resume), ("--overwrite", args.overwrite),
                                                ("--plot", args.plot)) if given]
            if ignored:   # (they were ignored without a word: --resume listed every point, not the missing ones)
                raise ScenarioError(ignored[0], "is for a run; --dry-run lists every point of the sweep and "
                                                "reads no store (leave one of them out)")
            make_executor(args.executor, args.workers)   # (checked, not opened: `--workers 0 --dry-run` exited 0)
            return _dry_run(args.sweep, progress=not args.quiet)
        result = run_sweep(args.sweep, args.out, resume=args.resume, overwrite=args.overwrite,
                           executor=args.executor, workers=args.workers, step_mode=args.step_mode,
                           plot=args.plot, progress=not args.quiet)
    except (ScenarioError, UnknownNameError) as exc:
        print(f"draftsim sweep: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) and stdout_reader_gone():   # (--dry-run's list into `| head`)
            return EXIT_READER_GONE
        print(f"draftsim sweep: error: {getattr(exc, 'filename', '') or ''}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    if not args.quiet:
        print(format_results_table(result.frame, result.spec.param_keys))
        print(f"{len(result.points)} points: {result.ran} run now, {result.skipped} already stored; "
              f"results in {result.store.root}/")
        for path in result.plots:
            print(f"plot: {path}")
    return _failed_points(result)


def _failed_points(result: SweepResult) -> int:
    """The sweep's check: every point simulated. Points that could not be built (a model that does not fit
    the point's GPU, found only when its cluster is built) are stored as invalid and were counted in the
    table only, exit 0 (with --quiet not a word); now one line on stderr and exit 1 (a failed check)."""
    frame = result.frame
    invalid = frame[frame["status"] == STATUS_INVALID] if not frame.empty else frame
    if invalid.empty:
        return 0
    first = invalid.iloc[0]
    label = _row_label(first, result.spec.param_keys)
    print(f"draftsim sweep: {len(invalid)} of {len(frame)} points could not run (first: {label}: "
          f"{printable(first['error'])}); "
          f"their rows in {result.store.root}/ have status 'invalid'", file=sys.stderr)
    return EXIT_FAILED_CHECK


if __name__ == "__main__":
    sys.exit(main())
