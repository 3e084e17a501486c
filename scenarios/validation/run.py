"""`draftsim validate`: the simulator's error against a real torch serving loop, in one command.

    python3 -m scenarios.validation.run [--device cpu|cuda] [--quick] [--out DIR] [--profile-dir DIR]

1. Reads a validation scenario (default scenarios/validation/cpu.yaml, or cpu_quick.yaml with --quick): an
   offline request trace, target and draft models, γ, acceptance model and scheduler.
2. Simulates it with the profile-backed latency model of the device (profiles/data/<device-id>/, measured
   separately by `draftsim profile`; nothing is fitted to the validation run, so the error is
   out-of-sample).
3. Runs the reference engine (scenarios.validation.reference.engine) on the same requests: real draft and target
   forward passes (random weights of the catalog shapes), the simulator's scheduler, acceptance forced from
   the simulator's draws.
4. Matches the two runs step by step and request by request (scenarios.validation.reference.compare), prints a table
   and writes steps.csv, requests.csv, validation.json and validation.png to --out.

On cuda the scenario runs in bf16 on the hardware id the profiler files the GPU under (e.g. h100-sxm).
Before the reference run, the other processes' CPU use is measured (scenarios.validation.machine_load); when
they and the reference run's threads oversubscribe the cores, the report warns that its timings cannot be
trusted. Exit status: 0 when every target is met, 1 when one is missed (the outputs are still written;
see validation.json "targets" and "machine_load"), 2 for bad flags or inputs (one line on stderr).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from simulator.console.contract import EXIT_FAILED_CHECK, parse_args

REPO = Path(__file__).resolve().parents[2]
SCENARIO_DIR = REPO / "scenarios" / "validation"
EXIT_USAGE = 2


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"draftsim validate: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(prog="draftsim validate", description=(
        "Run a real torch serving loop (continuous batching, chain speculative decoding with forced "
        "acceptance) and the simulator on the same requests; report per-step and per-request error."),
        epilog="other modes: draftsim validate --published (predict published real GPU runs; see draftsim validate "
               "--published --help) and draftsim validate --engine vllm (against a real vLLM; see draftsim "
               "validate --engine vllm --help)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the reference loop runs: this CPU or its GPU, the hardware the simulator then prices "
                        "(default cpu)")
    p.add_argument("--quick", action="store_true",
                   help="tiny models and workload (under a minute on CPU; used in CI): the scenario "
                        "scenarios/validation/cpu_quick.yaml, so not with --scenario")
    p.add_argument("--out", default=None, help="output folder (default: out/validate-<device>[-quick])")
    p.add_argument("--profile-dir", default=None,
                   help="profile to simulate with (default: profiles/data/<device-id>/)")
    p.add_argument("--scenario", default=None,
                   help="validation scenario YAML (default: scenarios/validation/cpu[_quick].yaml)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch.set_num_threads for the reference run (default: the profile's, from its fingerprint)")
    p.add_argument("--repeats", type=int, default=1,
                   help="run the reference N times, 1 to 100; per-step durations are medians over the runs (noise)")
    p.add_argument("--op-breakdown", action="store_true",
                   help="also time every kernel call of the reference run (diagnosis; adds overhead)")
    p.add_argument("--profile-first", action="store_true",
                   help="first profile the scenario's target and draft models on this machine (full grid, "
                        "into OUT/profile/; on 2 CPU cores ~5 min for --quick's llama-68m, ~20 min for the "
                        "default scenario's models) and simulate with that profile: one command for a "
                        "machine without a shipped profile")
    p.add_argument("--no-plot", action="store_true", help="skip validation.png")
    p.add_argument("--quiet", action="store_true", help="no progress and no report on stdout (files are "
                                                        "written; exit 1 and a line on stderr when a target is missed)")
    return p


def _dtype(device: str) -> str:
    return "fp32" if device == "cpu" else "bf16"


def _device_overrides(device: str) -> list[str]:
    """What the validation sets in its scenario for the device it runs on."""
    return [f"cluster.hardware={_device_id(device)}", f"cluster.dtype={_dtype(device)}"]


def profile_here(scenario_path: str | Path, device: str, out: Path, threads: int | None, quick_grid: bool = False,
                 quiet: bool = False) -> Path:
    """Profile the models a validation scenario runs (target, and the draft model if any) on this device,
    into `out`/profile/ (the full grid; `quick_grid`: the profiler's coarse CI grid, for tests only);
    returns that folder. Measured before the reference run, so still out of sample."""
    from profiles.profiler.run import DEFAULT_THREADS, run_profile
    from simulator.config.scenario import load_scenario
    from simulator.console.progress import Progress

    scenario, _ = load_scenario(scenario_path)
    models = [scenario.cluster.model]
    draft = getattr(scenario.drafter, "model", None)
    if draft is not None and draft not in models:
        models.append(draft)
    return run_profile(device, models, out / "profile", quick=quick_grid, threads=threads or DEFAULT_THREADS,
                       collectives=False,
                       progress=lambda desc, total, unit: Progress(desc, total=total, unit=unit, quiet=quiet))


def _device_id(device: str) -> str:
    import torch

    from profiles.profiler.run import default_device_id
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch.cuda.is_available() is False")
    return default_device_id(torch.device(device))


def _machine_identity(device: str) -> str | None:
    import torch

    from profiles.profiler.run import machine_identity
    return machine_identity(torch.device(device))


def _device_name(device: str) -> str:
    import torch

    from profiles.profiler.run import device_name
    return device_name(torch.device(device))


def run_validation(scenario_path: str | Path, device: str = "cpu", profile_dir: str | Path | None = None,
                   threads: int | None = None, op_breakdown: bool = False, repeats: int = 1, quiet: bool = False):
    """Simulate and run the reference engine (`repeats` times: median run, see
    scenarios.validation.reference.compare.combine_repeats); returns (steps frame, requests frame, summary dict,
    op-kind breakdown frame or None)."""
    from profiles.predictor import profile_dir_for, profile_dir_for_device
    from profiles.profiler.machine import same_machine
    from profiles.profiler.table import read_fingerprint
    from scenarios.validation.reference.compare import (combine_repeats, match_requests, match_steps, request_summary,
                                            step_summary, targets_met)
    from scenarios.validation.reference.diagnose import op_breakdown as breakdown
    from scenarios.validation.reference.engine import ReferenceConfig, run_reference
    from scenarios.validation.machine_load import measure_load
    from simulator.api import run as simulate
    from simulator.console.progress import Progress
    from simulator.config.scenario import load_scenario

    hardware = _device_id(device)
    here = _device_name(device)
    identity = _machine_identity(device)
    if profile_dir is None:  # the shipped profile of this very machine, where there is one
        found, _ = profile_dir_for_device(hardware, here, identity)  # a mismatch is reported below
    else:
        found = profile_dir_for(hardware, profile_dir)
    if found is None:
        where = profile_dir or f"profiles/data/{hardware}/"
        raise ValueError(f"--profile-dir: no profile (ops.csv) in {where}; measure one with "
                         f"`draftsim profile --device {device}` first")
    found = Path(found).resolve()
    dtype = _dtype(device)
    overrides = [*_device_overrides(device), "cluster.latency.source=profile", f"cluster.latency.profile_dir={found}"]
    scenario, folder = load_scenario(scenario_path, overrides)
    try:   # (named as estimate and run name it: 'profile_dir ... has no fingerprint.json' named no flag)
        fingerprint = read_fingerprint(found)
    except ValueError as exc:
        raise ValueError(f"--profile-dir: {exc}") from None
    if fingerprint.get("dtype") not in (None, dtype):
        raise ValueError(f"--profile-dir: profile {found} was measured in {fingerprint.get('dtype')}, "
                         f"the {device} validation runs {dtype}")
    if threads is None:   # measure under the profile's conditions
        threads = int(fingerprint.get("threads") or 2)
    simulated = simulate(scenario, base_dir=folder, step_mode="step")
    config = ReferenceConfig(device=device, threads=threads, op_breakdown=op_breakdown)
    load = measure_load(threads)
    runs = []
    with Progress("reference runs", total=repeats, unit="run", quiet=quiet) as bar:
        for _ in range(repeats):
            runs.append(run_reference(scenario, folder, config))
            bar.update()
    reference = runs[0]
    measured_steps, measured_requests, noise = reference.steps, reference.requests, None
    if repeats > 1:
        measured_steps, measured_requests, noise = combine_repeats([(r.steps, r.requests) for r in runs])
    steps = match_steps(measured_steps, simulated.steps)
    step_frame = steps.frame
    op_columns = [c for c in reference.steps.columns if c.startswith("op_")]
    for column in ("plan_s", "accept_s", "draft_lag_tokens", *op_columns):
        step_frame[column] = reference.steps[column].to_numpy()[:len(step_frame)]
    requests = match_requests(measured_requests, simulated.requests)
    st, rq = step_summary(steps), request_summary(requests)
    ops = None
    if op_breakdown:
        built = simulated.built
        ops = breakdown(reference.steps, built.replicas[0].cost.target.latency, built.target, built.draft,
                        built.replicas[0].depth, scenario.cluster.dtype)
    summary = {
        "scenario": str(Path(scenario_path)), "hardware": hardware, "cpu_count": os.cpu_count(),
        "steps": st, "requests": rq, "targets": targets_met(st, rq), "reference": reference.meta,
        "profile": {"dir": str(found), **{k: fingerprint.get(k) for k in (
            "device_name", "torch_version", "threads", "dtype", "date", "load_average_at_start",
            "load_average_at_end", "quick") if k in fingerprint}},
        "simulator_summary": {k: simulated.summary.get(k) for k in ("mean_accepted_length", "tokens_per_step", "draft_acceptance_rate")
                              if k in simulated.summary},
    }
    if noise is not None:
        summary["noise"] = noise
        summary["per_repeat"] = [step_summary(match_steps(r.steps, simulated.steps)) for r in runs]
        summary["per_repeat"] = [{k: d[k] for k in ("step_median_abs_pct", "step_p90_abs_pct", "step_mean_signed_pct")}
                                 for d in summary["per_repeat"]]
    summary["machine_load"] = load.as_dict()
    warnings = []
    if load.oversubscribed:
        warnings.append(f"the machine was busy: {load.describe()}; the reference timings cannot be trusted "
                        f"(rerun on a quiet machine or with fewer --threads)")
    if fingerprint.get("device_name") is not None and not same_machine(fingerprint, here, identity):
        theirs = fingerprint.get("cpu_identity") or f"L3 {fingerprint.get('llc_bytes')} bytes"
        warnings.append(f"profile {found} was measured on {fingerprint.get('device_name')!r} ({theirs}), this "
                        f"machine is {here!r} ({identity}): the error below compares two machines; measure this "
                        f"one with `draftsim profile --device {device} --package-data` (filed as profiles/data/{hardware}--<machine>/) or rerun "
                        f"with --profile-first")
    if fingerprint.get("threads") not in (None, threads):
        warnings.append(f"profile measured with {fingerprint.get('threads')} threads, reference run with {threads}")
    if warnings:
        summary["warning"] = "; ".join(warnings)
    summary["machine"] = here
    return step_frame, requests, summary, ops


MAX_REPEATS = 100   # reference runs (1e9 ran them one after another, keeping each one's frames, for ever)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    if args.repeats is not None and not 1 <= args.repeats <= MAX_REPEATS:   # (each one a whole reference run)
        print(f"draftsim validate: error: --repeats must be in 1..{MAX_REPEATS}, got {args.repeats}", file=sys.stderr)
        return EXIT_USAGE
    if args.threads is not None:
        from profiles.profiler.run import check_threads
        try:
            check_threads(args.threads, "--threads")
        except ValueError as exc:
            print(f"draftsim validate: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    for flag, value in (("--out", args.out), ("--scenario", args.scenario), ("--profile-dir", args.profile_dir)):
        if value is not None and not value.strip():   # (Path('') is the current folder; '' read as the default)
            print(f"draftsim validate: error: {flag}: an empty path; give a path, or omit {flag} for the default",
                  file=sys.stderr)
            return EXIT_USAGE
    scenario = Path(args.scenario) if args.scenario else SCENARIO_DIR / ("cpu_quick.yaml" if args.quick else "cpu.yaml")
    out = Path(args.out) if args.out is not None else Path("out") / f"validate-{args.device}{'-quick' if args.quick else ''}"
    from models.errors import UnknownNameError
    from scenarios.validation.reference.diagnose import format_breakdown
    from scenarios.validation.reference.report import format_table, write_outputs
    from simulator.errors import ScenarioError
    from scenarios.validation.reference.report import OPS_CSV, PLOT_PNG, REQUESTS_CSV, STEPS_CSV, SUMMARY_JSON
    from simulator.results.output_folder import check_output_dir, claim, staged_output
    names = (STEPS_CSV, REQUESTS_CSV, SUMMARY_JSON, PLOT_PNG, OPS_CSV)
    if args.profile_first and args.profile_dir:
        print("draftsim validate: error: --profile-first and --profile-dir exclude each other", file=sys.stderr)
        return EXIT_USAGE
    try:
        # the scenario first: with --profile-first the folder is claimed before it was read, and a bad --scenario
        # left OUT/.draftsim-validate.json behind
        from simulator.config.scenario import load_scenario
        from simulator.console.printable import printable
        try:
            load_scenario(scenario, _device_overrides(args.device))
        except ScenarioError as exc:   # (the file itself is the flag's: it said 'scenario: file not found: ...')
            if exc.field != "scenario" or args.scenario is None:
                raise
            raise ScenarioError("--scenario", exc.message) from None
        if args.quick and args.scenario is not None:   # (after the file's own errors, which name --scenario)
            # --quick is a scenario (cpu_quick.yaml): beside another one it was ignored without a word, and the
            # whole --scenario ran where a run of under a minute was asked for
            raise ScenarioError("--quick", f"runs scenarios/validation/cpu_quick.yaml, and --scenario gives "
                                           f"{printable(args.scenario)}; give one of them")
        check_output_dir(out, "validate", SUMMARY_JSON, names)
        profile_dir = args.profile_dir
        if args.profile_first:   # (into OUT/profile/: the folder is the validation's from now on)
            claim(out, "validate", SUMMARY_JSON, names)
            profile_dir = profile_here(scenario, args.device, out, args.threads, quiet=args.quiet)
        steps, requests, summary, ops = run_validation(scenario, args.device, profile_dir, args.threads,
                                                       args.op_breakdown, args.repeats, args.quiet)
    except (ValueError, ScenarioError, UnknownNameError) as exc:
        print(f"draftsim validate: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE
    summary["command"] = "python3 -m scenarios.validation.run " + " ".join(sys.argv[1:] if argv is None else argv)
    if not args.quiet:
        print(format_table(summary))
        if "warning" in summary:
            print(f"warning: {summary['warning']}")
        if ops is not None:
            print(format_breakdown(ops))
    # all together or none (Ctrl-C, a full disk), replacing the previous validation's files: its
    # validation.png (a rerun with --no-plot) or ops.csv (without --op-breakdown) stayed beside new ones
    with staged_output(out, "validate", SUMMARY_JSON, names) as staged:
        paths = write_outputs(staged, steps, requests, summary, plot=not args.no_plot)
        if ops is not None:
            ops.to_csv(staged / OPS_CSV, index=False, float_format="%.9g")
            paths.append(staged / OPS_CSV)
    if not args.quiet:
        print(f"wrote {', '.join(p.name for p in paths)} to {out}/")
    missed = [name for name, ok in summary["targets"].items() if not ok]
    if missed:
        print(f"draftsim validate: {len(missed)} of {len(summary['targets'])} targets missed: {', '.join(missed)}"
              + ((" (on a busy machine: see the warning above)" if not args.quiet else
                  f" (on a busy machine: see the warning in {out / SUMMARY_JSON})")
                 if summary["machine_load"]["oversubscribed"] else ""),
              file=sys.stderr)
        return EXIT_FAILED_CHECK
    return 0


if __name__ == "__main__":
    sys.exit(main())
