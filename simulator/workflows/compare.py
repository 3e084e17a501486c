"""`draftsim compare`: several configurations side by side in one table and one figure.

    draftsim compare A.yaml B.yaml [C.yaml ...] [--set KEY=VALUE ...]
    draftsim compare A.yaml --vary drafter.gamma=2 --vary drafter.gamma=6 acceptance.alpha=0.6

Each scenario (or each variant of the first one: `--vary` takes one or more `key=value` overrides per
variant, applied on top of the base scenario and `--set`) is validated and built, and its Dask scheduler
(`simulation.executor`) reached, before any of them is simulated, so a mistake in the last one costs nothing. Runs keep their own seeds: with the same seed and
workload, runs see the same arrivals and lengths (common random numbers), so the differences are the
configurations'; a scenario file of another seed or workload than the first is named in a warning
(`other_requests`). Output (`--out`, default out/compare/<first name>/, written atomically):
compare.csv (one row per headline metric: each run's value and each later run's change against the
first, absolute and %), summaries.json (every run's full summary) and latency_cdf.png (TTFT, TPOT and
E2E CDFs overlaid).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from models.errors import FieldError
from simulator.console.contract import QUIET_HELP, parse_args
from simulator.console.printable import printable
from simulator.errors import ScenarioError

COMPARE_CSV, SUMMARIES_JSON, CDF_PNG = "compare.csv", "summaries.json", "latency_cdf.png"
COMPARE_FILES = (COMPARE_CSV, SUMMARIES_JSON, CDF_PNG)

# (summary key, label, unit scale, unit)
METRICS = (
    ("ttft_p50_s", "TTFT p50", 1e3, "ms"), ("ttft_p99_s", "TTFT p99", 1e3, "ms"),
    ("tpot_p50_s", "TPOT p50", 1e3, "ms"), ("tpot_p99_s", "TPOT p99", 1e3, "ms"),
    ("e2e_p50_s", "E2E p50", 1.0, "s"), ("e2e_p99_s", "E2E p99", 1.0, "s"),
    ("queue_p99_s", "queue p99", 1e3, "ms"),
    ("output_tokens_per_s", "throughput", 1.0, "tok/s"), ("requests_per_s", "requests", 1.0, "req/s"),
    ("goodput_rps", "goodput", 1.0, "req/s"), ("goodput_per_gpu_rps", "goodput/GPU", 1.0, "req/s"),
    ("slo_attainment", "SLO attainment", 100.0, "%"), ("tokens_per_step", "tokens/step", 1.0, ""),
    ("mean_accepted_length", "accepted length", 1.0, ""), ("mfu", "MFU", 100.0, "%"),
    ("gpus", "GPUs", 1.0, ""),
)


@dataclass(frozen=True)
class Variant:
    label: str
    path: Path
    overrides: list[str]


def variants(scenarios: list[str], common: list[str], vary: list[list[str]]) -> list[Variant]:
    """The runs to compare: each scenario file, or the first one and one variant per `--vary`."""
    if vary and len(scenarios) != 1:
        raise ScenarioError("--vary", "varies one scenario; give exactly one scenario file with --vary")
    if not vary and len(scenarios) < 2:
        raise ScenarioError("scenarios", "give two or more scenario files, or one with --vary KEY=VALUE")
    from simulator.config.scenario import check_overrides_once, checked_key
    check_overrides_once(common)   # (a --vary may set what --set sets: the variant's value replaces it)
    for overrides in vary:   # `--vary seed=1 seed=2` is one variant whose seed is set twice: a mistake
        for item in overrides:   # (the scenario's reader names --set: `--vary seed` said '--set: expected ...')
            if "=" not in item:
                raise ScenarioError("--vary", f"expected KEY=VALUE with a dotted scenario key (drafter.gamma=2), "
                                              f"got {item!r}")
            try:
                checked_key(item.split("=", 1)[0])
            except ValueError as exc:
                raise ScenarioError("--vary", f"expected KEY=VALUE: {exc}") from None
        keys = [item.split("=", 1)[0].strip() for item in overrides]
        twice = sorted({key for key in keys if keys.count(key) > 1})
        if twice:
            raise ScenarioError("--vary", f"{twice[0]} is given twice in one variant ({' '.join(overrides)}); "
                                          f"one --vary per variant: --vary {twice[0]}=A --vary {twice[0]}=B")
    if vary:
        base = Path(scenarios[0])
        runs = [Variant(base.stem, base, list(common)), *(Variant(" ".join(v), base, [*common, *v]) for v in vary)]
    else:
        runs = [Variant(Path(p).stem, Path(p), list(common)) for p in scenarios]
    labels = distinct_labels([printable(r.label) for r in runs])
    return [Variant(label, run.path, run.overrides) for run, label in zip(runs, labels)]


FIXED_COLUMNS = ("metric", "unit", "key")   # compare_frame's columns before the runs'
COMPARE_HEAD = ",".join(FIXED_COLUMNS)   # how compare.csv begins: a user's own file of its name is not replaced


def _delta_columns(label: str, first: str) -> tuple[str, str]:
    """compare_frame's columns of a later run's change against the first."""
    return f"{label} - {first}", f"{label} vs {first} %"


def distinct_labels(labels: list[str]) -> list[str]:
    """The runs' labels, each a column of its own in compare.csv: a label already taken — by an earlier run, a
    fixed column (a file metric.yaml) or a change column ('y - x') — is numbered ('s (2)', 's (3)'). Before,
    only a repeated file name was: x/s.yaml, y/s.yaml and 's (2).yaml' made two runs 's (2)', whose one column
    held the last (exit 0, a run missing from the table); a file key.yaml replaced the metric keys."""
    taken, out = set(FIXED_COLUMNS), []
    for i, label in enumerate(labels):
        candidate, n = label, 1
        while candidate in taken or (i > 0 and not taken.isdisjoint(_delta_columns(candidate, out[0]))):
            n += 1
            candidate = f"{label} ({n})"
        out.append(candidate)
        taken.update([candidate, *(_delta_columns(candidate, out[0]) if i > 0 else ())])
    return out


def _value(summary: dict, key: str, scale: float) -> float:
    value = summary.get(key)
    return float(value) * scale if isinstance(value, (int, float)) and value is not None else math.nan


def compare_frame(labels: list[str], summaries: list[dict]) -> pd.DataFrame:
    """One row per metric: the value of each run, then for each later run its change against the first."""
    rows = []
    for key, name, scale, unit in METRICS:
        values = [_value(s, key, scale) for s in summaries]
        row = {"metric": name, "unit": unit, "key": key, **dict(zip(labels, values))}
        for label, value in zip(labels[1:], values[1:]):
            change, percent = _delta_columns(label, labels[0])
            row[change] = value - values[0]
            row[percent] = (100.0 * (value - values[0]) / abs(values[0])
                            if values[0] not in (0.0,) and math.isfinite(values[0]) else math.nan)
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(value: float, digits: int = 2) -> str:
    return "-" if not math.isfinite(value) else f"{value:,.{digits}f}"


def format_compare(frame: pd.DataFrame, labels: list[str]) -> str:
    from simulator.console.table import format_columns

    header = ["metric", *labels, *(f"Δ {label}" for label in labels[1:])]
    rows = []
    for _, row in frame.iterrows():
        name = f"{row['metric']} ({row['unit']})" if row["unit"] else row["metric"]
        deltas = []
        for label in labels[1:]:
            pct = row[_delta_columns(label, labels[0])[1]]
            deltas.append("-" if not math.isfinite(pct) else f"{pct:+.1f} %")
        rows.append([name, *(_cell(row[label]) for label in labels), *deltas])
    return format_columns(header, rows)


def _naming_the_run(run: Variant, first: Variant, build, *args, **kwargs):
    """`build(*args, **kwargs)` for one run; its bad-input error names the run (the scenario file, or the `--vary`
    variant) before the field: of several runs, which one is wrong."""
    try:
        return build(*args, **kwargs)
    except FieldError as exc:
        varied = run is not first and run.path == first.path and run.overrides != first.overrides
        where = f"--vary {run.label}" if varied else str(run.path)
        raise ScenarioError(f"{where}: {exc.field}", exc.message, exc.implied) from None


def run_compare(runs: list[Variant], out: Path | str | None, *, quiet: bool = False, step_mode: str | None = None):
    """Validate and build every run first, then simulate each; returns (frame, labels, results, out dir)."""
    from simulator.api import prepare, simulate
    from simulator.config.host_memory import check_memory_together
    from simulator.config.scenario import load_scenario
    from simulator.console.progress import Progress
    from simulator.results.output_folder import given_or
    from simulator.results.outputs import check_output_dir, staged_output, summary_json
    from simulator.results.plots import plot_latency_cdfs_overlaid

    loaded = [_naming_the_run(run, runs[0], load_scenario, run.path, run.overrides) for run in runs]
    _check_distinct(runs, loaded, lambda i: _naming_the_run(runs[i], runs[0], prepare, loaded[i][0],
                                                             base_dir=loaded[i][1]))
    varied = any(run.path == runs[0].path for run in runs[1:])   # (variants of one scenario: --vary)
    check_memory_together(loaded, "--vary" if varied else "scenarios")
    for line in other_requests(runs, loaded):
        warnings.warn(line, stacklevel=2)
    out_dir = check_output_dir(given_or(out, Path("out") / "compare" / loaded[0][0].name),
                               marker=COMPARE_CSV, command="compare", names=COMPARE_FILES, head=COMPARE_HEAD)
    prepared = []
    with Progress("reading the workloads, building the clusters", total=len(runs), unit="run", quiet=quiet) as bar:
        for run, (scenario, folder) in zip(runs, loaded):   # (a long trace each: minutes without a word)
            prepared.append(_naming_the_run(run, runs[0], prepare, scenario, base_dir=folder))
            bar.update()
    results = []
    with ExitStack() as stack:
        executors = _dask_executors(runs, loaded, stack)
        for i, (run, ready) in enumerate(zip(runs, prepared)):
            with Progress(f"simulating {run.label} ({i + 1}/{len(runs)})", total=ready.num_requests, unit="req",
                          quiet=quiet) as bar:
                results.append(simulate(ready, step_mode=step_mode, progress=bar.update, executor=executors[i]))
    labels = [run.label for run in runs]
    frame = compare_frame(labels, [r.summary for r in results])
    with Progress("writing outputs", quiet=quiet), \
            staged_output(out_dir, marker=COMPARE_CSV, command="compare", names=COMPARE_FILES, head=COMPARE_HEAD) as staged:
        frame.to_csv(staged / COMPARE_CSV, index=False, float_format="%.9g", lineterminator="\n")
        (staged / SUMMARIES_JSON).write_text(summary_json({label: r.summary for label, r in zip(labels, results)}),
                                             encoding="utf-8")
        plot_latency_cdfs_overlaid({label: r.requests for label, r in zip(labels, results)},
                                   results[0].summary, staged / CDF_PNG)
    return frame, labels, results, out_dir


def _dask_executors(runs: list[Variant], loaded: list[tuple], stack) -> list:
    """Each run's running Dask scheduler (`simulation.executor: dask://` or `tcp://`) as a connected
    executor, reached now, before any run is simulated (as `draftsim run` reaches its scheduler before any
    work; a scheduler down for the last run was met after the others had run, in a line naming no run);
    runs of one scheduler share the connection. Entered on `stack`. None for the others: `local`, and
    `local-dask`, whose LocalCluster each run starts and closes itself (started up front, several would
    hold their processes at once)."""
    from simulator.config.dask_address import SCHEDULER_SCHEMES
    from simulator.distributed import open_executor
    shared: dict[tuple, object] = {}
    out = []
    for run, (scenario, _) in zip(runs, loaded):
        sim = scenario.simulation
        if not sim.executor.startswith(SCHEDULER_SCHEMES):
            out.append(None)
            continue
        key = (sim.executor, sim.workers)
        if key not in shared:
            executor = _naming_the_run(run, runs[0], open_executor, scenario)
            _naming_the_run(run, runs[0], executor.connect)
            shared[key] = stack.enter_context(executor)
        out.append(shared[key])
    return out


def _check_distinct(runs: list[Variant], loaded: list[tuple], check_files) -> None:
    """Two runs of one simulation (a file given twice, or copied to another folder, a --vary that sets what the
    scenario has, or that sets only `outputs`) compare nothing: every change is 0 (they ran, and printed a table
    of zeros). A scenario's folder counts only through the relative paths it names (`_as_simulated`); its
    `outputs` section is what a run writes, not what it simulates (compare writes its own files).
    `check_files(i)`: raises run i's own error, if any, before two runs of different folders are called the
    same (a relative path that names no file in either folder reads as a name: the file is missing)."""
    from simulator.config.scenario import how_alike, simulated
    varied = all(run.path == runs[0].path for run in runs) and any(run.overrides != runs[0].overrides for run in runs)
    seen: dict[str, int] = {}
    for i, (scenario, folder) in enumerate(loaded):
        data = _as_simulated(simulated(scenario.model_dump(mode="json")), Path(folder))
        same = same_outputs(scenario.simulation)
        data["simulation"] = {k: v for k, v in data["simulation"].items() if k not in same}
        key = json.dumps(data, sort_keys=True, default=str)
        if key in seen:
            j = seen[key]
            first = runs[j]
            if Path(loaded[j][1]) != Path(folder):
                check_files(j)
            how = how_alike(loaded[j][0].model_dump(mode="json"), scenario.model_dump(mode="json"))
            modes = [f"simulation.{k}" for k in same
                     if getattr(loaded[j][0].simulation, k) != getattr(scenario.simulation, k)]
            if modes and how == "are the same simulation":
                how = f"differ only in {', '.join(modes)} ({SAME_OUTPUTS_WHY})"
            raise ScenarioError("--vary" if varied else "scenarios", f"{first.label!r} and {runs[i].label!r} {how}; "
                                                                     "compare different configurations")
        seen[key] = i


# How a run is carried out, with the same outputs byte for byte (README "Scenarios": bulk and step-by-step
# modes, replica worker processes; tests/test_determinism_fuzz.py): two runs differing only here compare nothing.
# (A sweep may vary them, to time them: simulator.config.scenario.simulated keeps them.)
SAME_OUTPUTS = ("step_mode", "workers")
SAME_OUTPUTS_WHY = "how a run is carried out: the outputs are the same byte for byte; time them with `draftsim run`"
EXACT_DASK = ("executor", "load_sync_s")   # where no load_sync_s window approximates (simulator.distributed)


def same_outputs(simulation) -> tuple[str, ...]:
    """The `simulation` keys of a scenario that change how its run is carried out, not its outputs: SAME_OUTPUTS,
    and the executor (with load_sync_s) where a Dask run is exact — a router that routes ahead (no load_sync_s)
    or one synchronised at every arrival (load_sync_s: 0) runs byte for byte as one process (simulator.
    distributed; tests/simulator/distributed/test_distributed.py). `--vary simulation.executor=local-dask`
    printed a table of zeros, exit 0; with load_sync_s > 0 the Dask run is the named approximation, and
    comparing it with one process measures that."""
    return SAME_OUTPUTS + (EXACT_DASK if not simulation.load_sync_s else ())
REQUEST_SECTIONS = ("seed", "workload")   # what draws a run's requests: the same in two runs, they see the same ones


def other_requests(runs: list[Variant], loaded: list[tuple]) -> list[str]:
    """A line for each run that sees other requests than the first, where nothing the user varied says so: scenario
    files of different seeds or workloads (relative paths resolved, `_as_simulated`). Their table's changes hold
    the requests' differences (sampling noise, another load) beside the configurations', where compare's common
    random numbers are what make them the configurations' alone; a `--vary` of the seed or a workload key asks
    for other requests and is not named."""
    def requests_of(i: int) -> dict:
        data = loaded[i][0].model_dump(mode="json")
        return _as_simulated({key: data.get(key) for key in REQUEST_SECTIONS}, Path(loaded[i][1]))

    first, lines = requests_of(0), []
    for i, run in enumerate(runs[1:], start=1):
        asked = [key for key in (item.split("=", 1)[0].strip() for item in run.overrides[len(runs[0].overrides):])
                 if key.split(".")[0] in REQUEST_SECTIONS]
        differ = _differing_keys(first, requests_of(i))
        if differ and not asked:
            keys = ", ".join(differ[:3]) + (", ..." if len(differ) > 3 else "")
            lines.append(f"'{run.label}' sees other requests than '{runs[0].label}' ({keys} "   # (labels are printable)
                         f"{'differs' if len(differ) == 1 else 'differ'}): its changes hold the requests' differences "
                         f"as well as the configuration's; give both the same seed and workload to compare "
                         f"configurations alone")
    return lines


def _differing_keys(first, second, prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two scenarios' data (a section is one key where one side has
    none)."""
    if isinstance(first, dict) and isinstance(second, dict):
        return [key for name in sorted(set(first) | set(second), key=str)
                for key in _differing_keys(first.get(name), second.get(name), f"{prefix}{name}.")]
    return [] if first == second else [prefix.rstrip(".")]


def _as_simulated(value, folder: Path):
    """`value` (a scenario's data) with each relative path that names something in `folder` resolved: a copy
    of the scenario in another folder is the same simulation unless it reads files there (which may differ;
    they are not read here, before any work). A name that is no file there (a catalog name, a kind) stays
    as written, and so does a path from the home folder (`~/x.csv`)."""
    if isinstance(value, dict):
        return {key: _as_simulated(item, folder) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_simulated(item, folder) for item in value]
    if isinstance(value, str) and value and not value.startswith("~") and not Path(value).is_absolute():
        try:
            path = folder / value
            if path.exists():
                return str(path.resolve())
        except (OSError, ValueError):   # (a name too long for a path, a NUL in it: no file)
            pass
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="draftsim compare", description=(
        "Simulate two or more scenarios (or variants of one) and print their headline metrics side by side "
        "with the change against the first; writes compare.csv, summaries.json and overlaid latency CDFs."),
        epilog="examples: draftsim compare scenarios/speculation/colocated_draft.yaml "
               "scenarios/speculation/separate_draft.yaml | draftsim compare scenarios/quickstart.yaml "
               "--vary drafter.gamma=2 --vary drafter.gamma=6")
    p.add_argument("scenarios", nargs="+", help="scenario YAML files (the first is the baseline)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field in every run (repeatable, each key once; a --vary may set it again)")
    p.add_argument("--vary", action="append", nargs="+", default=[], metavar="KEY=VALUE",
                   help="one variant of the (single) scenario: one or more overrides (repeat for more variants)")
    p.add_argument("--out", help="output folder (default: out/compare/<first scenario name>)")
    p.add_argument("--step-mode", choices=["bulk", "step"], default=None,
                   help="override every run's simulation.step_mode: decode steps in bulk (fast) or one event per "
                        "step (reference); same outputs")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    runs = variants(args.scenarios, args.set, args.vary)
    frame, labels, results, out_dir = run_compare(runs, args.out, quiet=args.quiet,
                                                  step_mode=args.step_mode)
    if not args.quiet:
        print(format_compare(frame, labels))
        print(f"compared {len(runs)} runs; {COMPARE_CSV}, {SUMMARIES_JSON} and {CDF_PNG} in {out_dir}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
