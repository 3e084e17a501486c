"""The `draftsim` command line. Errors in user input print one line and exit 2."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_USAGE = 2


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code argparse chose (it has printed its one-line usage error, or
    the help) — for sub-commands' `main`s, which return codes instead of raising SystemExit."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _error(msg: str) -> int:
    print(f"draftsim: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


def _cmd_run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from simulator.api import run
    from simulator.results.metrics import format_summary_table
    from simulator.results.outputs import write_outputs
    from simulator.config.scenario import load_scenario

    scenario, folder = load_scenario(args.scenario, args.set)
    out_dir = Path(args.out) if args.out else Path("out") / scenario.name
    show = not args.quiet and sys.stderr.isatty()
    with tqdm(total=None, unit="req", desc="simulating", disable=not show, leave=False) as bar:
        result = run(scenario, base_dir=folder, step_mode=args.step_mode, progress=bar.update)
    extra = {}
    if args.trace:
        from simulator.results.timeline import pool_replica_names, trace_json
        extra["trace.json"] = trace_json(result.requests, result.steps,
                                         gpus_per_replica=result.summary["gpus_per_replica"],
                                         replica_names=pool_replica_names(result.summary))
    write_outputs(out_dir, result.requests, result.steps, result.summary,
                  plots=scenario.outputs.plots and not args.no_plots, extra_files=extra)
    if not args.quiet:
        print(format_summary_table(result.summary))
        print(f"simulated {result.summary['steps']:,} steps of {len(result.requests):,} requests in "
              f"{result.wall_s:.2f} s wall (+ {result.workload_s:.2f} s reading/drawing the workload); "
              f"outputs in {out_dir}/")
    return 0


def _cmd_catalog(args: argparse.Namespace) -> int:
    if args.what == "models":
        from models import get_model, list_models
        for name in list_models():
            spec = get_model(name)
            print(f"{name:24s} {spec.param_count() / 1e9:8.2f} B params  "
                  f"{spec.kv_bytes_per_token('bf16') / 1024:8.1f} KiB KV/token (bf16)")
    else:
        from profiles.hardware import get_hardware, list_hardware
        from profiles.measured import available
        for hid in list_hardware():
            hw = get_hardware(hid)
            measured = "; ".join(f"{fw} {', '.join(v)}" for fw, v in available(hid).items()) or "none (roofline)"
            print(f"{hid:13s} {hw.name:48s} {hw.hbm_bytes / 1024**3:6.0f} GiB  "
                  f"{hw.hbm_bandwidth_bytes_per_s / 1e12:5.2f} TB/s  {hw.peak_flops['bf16'] / 1e12:7.1f} TFLOP/s bf16  "
                  f"measured kernels: {measured}")
    return 0


DELEGATED = {
    "estimate": ("simulator.workflows.estimate", "price one engine step as the simulator does: seconds by op kind and "
                                       "engine time (see `draftsim estimate --help`)"),
    "profile": ("profiles.profiler.run", "time real torch kernels over the op graph's shapes and write a "
                                         "profile table (see `draftsim profile --help`)"),
    "validate": ("scenarios.validation.run", "run a real torch serving loop and the simulator on the same "
                                      "requests and report the simulator's error (see `draftsim validate --help`); "
                                      "--published: predict published real GPU runs and report the error"),
    "sweep": ("simulator.workflows.sweep.main", "run a grid/list of scenario variants with seeds (local pool or Dask) into a "
                                 "resumable results store (see `draftsim sweep --help`)"),
    "plan": ("simulator.workflows.plan.main", "capacity planning: screen TP/PP/EP, replicas, drafter, γ/tree and "
                               "colocated vs disaggregated on priced hardware, confirm the best with the DES, "
                               "rank by cost (see `draftsim plan --help`)"),
    "reproduce": ("scenarios.papers.registry", "reproduce a paper's figure/table with published-vs-reproduced "
                                               "checks (see `draftsim reproduce --list`)"),
}


def _delegate(command: str, argv: list[str]) -> int:
    import importlib

    name = DELEGATED[command][0]
    if command == "validate" and "--published" in argv:  # against published GPU runs, not a local loop
        name, argv = "scenarios.validation.published.report", [a for a in argv if a != "--published"]
    module = importlib.import_module(name)
    return int(module.main(argv) or 0)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="draftsim", description=(
        "Simulate LLM serving with speculative decoding: latency, throughput and goodput of a cluster "
        "under a workload, from measured kernel profiles, measured acceptance and verified theory."))
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    r = sub.add_parser("run", help="simulate one scenario YAML and write its outputs",
                       description="Simulate a scenario; print a summary; write requests.parquet, "
                                   "steps.parquet, summary.json and plots to --out.")
    r.add_argument("scenario", help="path to a scenario YAML (e.g. scenarios/quickstart.yaml)")
    r.add_argument("--out", help="output folder (default: out/<scenario name>)")
    r.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a scenario field, e.g. --set workload.arrival.qps=8 (repeatable)")
    r.add_argument("--step-mode", choices=["bulk", "step"], default=None,
                   help="advance decode steps in bulk (fast, default) or one event per step (reference)")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    r.add_argument("--trace", action="store_true",
                   help="also write trace.json: a Chrome/Perfetto timeline (one track per replica with prefill, "
                        "draft and verify spans and request ids; open in ui.perfetto.dev)")
    r.add_argument("--quiet", action="store_true", help="print nothing on success")
    r.set_defaults(func=_cmd_run)
    c = sub.add_parser("catalog", help="list the model or hardware catalog")
    c.add_argument("what", choices=["models", "hardware"])
    c.set_defaults(func=_cmd_catalog)
    for name, (_, text) in DELEGATED.items():
        sub.add_parser(name, help=text, add_help=False)
    return p


def _one_line_warnings() -> None:
    """Warnings print as one line ("draftsim: warning: ..."), without the source line."""
    import warnings
    warnings.formatwarning = lambda message, *args, **kwargs: f"draftsim: warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _one_line_warnings()
    if argv and argv[0] in DELEGATED:
        return _delegate(argv[0], argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    from models.errors import UnknownNameError
    from simulator.errors import ScenarioError

    try:
        return args.func(args)
    except (ScenarioError, UnknownNameError) as exc:
        return _error(str(exc).splitlines()[0])
    except OSError as exc:
        return _error(f"{getattr(exc, 'filename', '') or ''}: {exc.strerror or exc}")


if __name__ == "__main__":
    sys.exit(main())
