"""The `draftsim` command line. Errors in user input print one line and exit 2."""
from __future__ import annotations

if __name__ == "__main__":   # `python -m simulator.cli` is the executable: it loads this module under its guard
    from simulator.launch import entry   # (simulator/launch.py) and exits
    entry()
elif __name__ == "__mp_main__":   # a worker spawned from it (simulator.console.interrupts.leave_to_spawner)
    from simulator.console.interrupts import leave_to_spawner
    leave_to_spawner()

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from models.errors import ascii_number, bounded
from simulator.console.contract import EXIT_USAGE, QUIET_HELP, guarded, parse_args


TRACE_REQUESTS = 1000   # request slices trace.json draws unless --trace-requests says otherwise


def _steps_traced(outputs) -> str:
    """Which steps trace.json draws: every step, or the kept sample (`outputs.steps: sampled`)."""
    return f"one in {outputs.step_sample_every} of each replica's, as kept" if outputs.steps == "sampled" else "all"


def _workers(text: str) -> str:
    """run's --workers: 'auto' or a count in ASCII digits, passed on as the text of a simulation.workers override
    (which bounds it); YAML read any other text there as it reads it (`--workers=1_0` ran 10 workers)."""
    if text != "auto":
        try:
            ascii_number(int, text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'auto' or a whole number in ASCII digits is required, "
                                             f"got {text!r}") from None
    return text


def _cmd_run(args: argparse.Namespace) -> int:
    import time

    from simulator.config.flags import flag_override, given, named_as_typed, refuse_set_beside
    from simulator.config.scenario import check_overrides_once, load_scenario

    t0 = time.perf_counter()
    if args.trace_requests is not None and not args.trace:   # (it was ignored: exit 0 and no trace.json)
        from simulator.errors import ScenarioError
        raise ScenarioError("--trace-requests", "sets how many request slices trace.json draws, which only --trace "
                                                "writes; add --trace or leave --trace-requests out")
    trace_requests = TRACE_REQUESTS if args.trace_requests is None else args.trace_requests
    flags = given([flag_override("--executor", "simulation.executor", args.executor),
                   flag_override("--workers", "simulation.workers", args.workers)])
    check_overrides_once(args.set)
    refuse_set_beside(flags, args.set)   # (--executor X --set simulation.executor=Y ran Y)
    with named_as_typed(flags):   # (`--workers 0` was refused as "simulation.workers: ...")
        return _run(args, t0, trace_requests, *load_scenario(args.scenario, [flag.text for flag in flags] + args.set))


def _run(args: argparse.Namespace, t0: float, trace_requests: int, scenario, folder: Path) -> int:
    import time

    from simulator.api import prepare, simulate
    from simulator.console.progress import Progress
    from simulator.results.metrics import format_summary_table
    from simulator.results.outputs import check_output_dir, write_outputs

    if args.trace and scenario.outputs.steps == "aggregate":   # (trace.json draws each step as a slice)
        from simulator.errors import ScenarioError
        raise ScenarioError("--trace", "draws every step as a slice, but outputs.steps aggregate keeps per-interval "
                                       "sums; give outputs.steps: full (or sampled), or leave out --trace")
    out_dir = check_output_dir(args.out if args.out is not None else Path("out") / scenario.name)
    parse_s = time.perf_counter() - t0
    with _executor(scenario) as executor:   # a Dask scheduler is reached (or refused) before any work
        with Progress("reading the workload, building the cluster", quiet=args.quiet):   # (a long trace: minutes)
            prepared = prepare(scenario, base_dir=folder)
        with Progress("simulating", total=prepared.num_requests, unit="req", quiet=args.quiet) as bar:
            result = simulate(prepared, step_mode=args.step_mode, progress=bar.update, executor=executor)
    extra = {}
    if args.trace:
        import warnings

        from simulator.results.timeline import pool_replica_names, trace_json
        with Progress("drawing trace.json", quiet=args.quiet):   # (~60 µs a step: a minute for a million steps)
            extra["trace.json"] = trace_json(result.requests, result.steps,
                                             gpus_per_replica=result.summary["gpus_per_replica"],
                                             replica_names=pool_replica_names(result.summary),
                                             max_request_tracks=trace_requests)
        if len(result.request_table) > trace_requests:
            warnings.warn(f"trace.json: request slices for the first {trace_requests:,} of "
                          f"{len(result.request_table):,} requests (steps: {_steps_traced(scenario.outputs)}); "
                          "--trace-requests N to change",
                          UserWarning, stacklevel=1)
    with Progress("writing outputs", quiet=args.quiet):
        # the records as columns (a run without plots and trace never imports pandas), or the frames trace.json
        # was drawn from, which the plots then reuse
        records = (result.requests, result.steps) if args.trace else (result.request_table, result.step_table)
        write_outputs(out_dir, *records, result.summary, plots=scenario.outputs.plots and not args.no_plots,
                      extra_files=extra, steps_kept=scenario.outputs)
    if not args.quiet:
        print(format_summary_table(result.summary))
        print(f"simulated {result.summary['steps']:,} steps of {len(result.request_table):,} requests in "
              f"{result.wall_s - result.build_s:.2f} s (reading the scenario {parse_s:.2f} s, reading or drawing "
              f"the workload {result.workload_s:.2f} s, building the cluster {result.build_s - result.workload_s:.2f} s); "
              f"outputs in {out_dir}/")
    return 0


def _executor(scenario):
    """The run's Dask executor (simulator.distributed) as a context, or nothing for `simulation.executor: local`."""
    import contextlib
    if scenario.simulation.executor == "local":
        return contextlib.nullcontext()
    from simulator.distributed import check_distributable, open_executor
    check_distributable(scenario)
    return open_executor(scenario)


def _model_row(name: str, spec) -> list[str]:
    attention = "MLA" if spec.is_mla else ("MHA" if spec.num_kv_heads == spec.num_heads else "GQA")
    if spec.sliding_window_layers:
        attention += f"+SWA{spec.sliding_window}x{spec.sliding_window_layers}"
    if spec.is_hybrid:   # softmax-attention layers beside gated-DeltaNet or Mamba layers (models.mixers)
        attention += f"x{spec.num_attention_layers}"
        for kind, tag in (("linear_attention", "GDN"), ("mamba", f"Mamba{spec.mamba_version}")):
            if spec.mixer_layers(kind):
                attention += f"+{tag}x{spec.mixer_layers(kind)}"
    experts = f"{spec.num_experts}x{spec.experts_per_token}" if spec.is_moe else "-"
    return [name, spec.family, f"{spec.param_count() / 1e9:.2f}", f"{spec.active_param_count() / 1e9:.2f}",
            str(spec.num_layers), str(spec.hidden_size), f"{spec.num_heads}/{spec.num_kv_heads}", attention, experts,
            str(spec.max_position_embeddings), f"{spec.kv_bytes_per_token('bf16') / 1024:.1f}"]


def _hardware_row(hid: str, hw, measured: str) -> list[str]:
    fp8 = hw.peak_flops.get("fp8")
    return [hid, hw.name, f"{hw.hbm_bytes / 1e9:.0f}", f"{hw.hbm_bandwidth_bytes_per_s / 1e12:.2f}",
            f"{hw.peak_flops['bf16'] / 1e12:.0f}", f"{fp8 / 1e12:.0f}" if fp8 else "-",
            f"{hw.scaleup_bandwidth_bytes_per_s / 1e9:.0f}", f"{hw.host_link_bandwidth_bytes_per_s / 1e9:.0f}", measured]


def _table(head: list[str], rows: list[list[str]]) -> str:
    from simulator.console.table import format_columns
    return format_columns(head, rows, left=len(head))


def _list_models() -> str:
    from models import get_model, list_models
    head = ["NAME", "FAMILY", "PARAMS_B", "ACTIVE_B", "LAYERS", "HIDDEN", "HEADS_Q/KV", "ATTENTION", "EXPERTS",
            "CONTEXT", "KV_KIB_PER_TOKEN_BF16"]
    return _table(head, [_model_row(name, get_model(name)) for name in list_models()])


def _list_hardware() -> str:
    from profiles.hardware import get_hardware, list_hardware
    from profiles.measured import available
    head = ["ID", "NAME", "MEM_GB", "MEM_TB/S", "BF16_TFLOPS", "FP8_TFLOPS", "SCALEUP_GB/S", "HOST_GB/S",
            "MEASURED_KERNELS"]
    rows = []
    for hid in list_hardware():
        measured = "; ".join(f"{fw} {', '.join(v)}" for fw, v in available(hid).items()) or "none (roofline)"
        rows.append(_hardware_row(hid, get_hardware(hid), measured))
    return _table(head, rows)


def _list_engines() -> str:
    """One row per engine-time entry (profiles/data/engine_time/frameworks.yaml): the releases it covers (the
    upper one excluded), what a release of that range runs by default, and on the entry a scenario without
    `cluster.engine.version` gets, the release it stands for and the newest release known."""
    from profiles.engine_time.frameworks import engine_entries, entry_for, modelled_release, version_range
    head = ["ENGINE", "RELEASES", "CUDA_GRAPHS", "ASYNC_SCHEDULING", "SYNCHRONOUS_DRAFTERS", "RELEASE_IF_UNSET",
            "NEWEST_KNOWN"]
    rows = []
    for entry in engine_entries():
        unset = entry is entry_for(entry["framework"], None)
        constants = entry["constants"]
        sync = constants.get("sync_drafters") or []
        overlap = bool(constants.get("overlap"))
        rows.append([entry["framework"], version_range(entry), entry["graphs"]["default_mode"],
                     "on" if overlap else "off", (", ".join(sync) or "none") if overlap else "all",
                     modelled_release(entry) if unset else "-", entry.get("newest_release", "-")])
    return _table(head, rows)


def _list_acceptance() -> str:
    """The published acceptance registry (profiles/data/acceptance_published/): the rows a scenario's
    `acceptance: {kind: published, entry: ID}` names, with the figure and the publication each comes from."""
    from simulator.speculation.published import load_registry
    head = ["ID", "METHOD", "TARGET", "DRAFT", "DATASET", "TEMP", "SHAPE", "TOKENS_PER_STEP", "ENGINE", "SOURCE"]
    rows = []
    for row in load_registry():
        shape = row.shape if row.depth is None else f"{row.shape} {row.depth}"
        if row.nodes is not None:
            shape += f" ({row.nodes} nodes)"
        temperature = "-" if row.temperature is None else f"{row.temperature:g}"
        rows.append([row.id, row.method, row.target, row.draft or "-", row.dataset, temperature, shape,
                     f"{row.mean_tokens:.2f}", row.engine or "-", row.source.id])
    return _table(head, rows)


# `draftsim catalog WHAT`: what it lists, and how
CATALOGS: dict[str, tuple[str, Callable[[], str]]] = {
    "models": ("parameters (total, active), layers, hidden size, query/KV heads, attention (MHA, GQA, MLA, sliding "
               "window), experts × top-k, context, KV bytes per token", _list_models),
    "hardware": ("memory, bandwidth, dense BF16/FP8 TFLOP/s, scale-up and host links, which GPUs have measured "
                 "kernel tables", _list_hardware),
    "engines": ("the engine releases modelled (cluster.engine: framework and version; ranges exclude their upper "
                "release), their default CUDA-graph mode and async scheduling, the drafters that run without it (where the "
                "engine runs them at all), the release modelled when none is given and the newest release known", _list_engines),
    "acceptance": ("the published acceptance registry: each row's id (acceptance: {kind: published, entry: ID}), "
                   "method, target, draft, dataset, temperature, drafting shape, tokens per verify step and source",
                   _list_acceptance),
}


def _cmd_catalog(args: argparse.Namespace) -> int:
    print(CATALOGS[args.what][1]())
    return 0


@dataclass(frozen=True)
class Command:
    """A `draftsim` command that runs `main(argv) -> exit code` of another module: simulator's own
    (`DELEGATED`) or one another package registers under the `draftsim.commands` entry points (scenarios/
    registers `validate` and `reproduce`: scenarios/commands.py)."""

    help: str
    main: Callable[[list[str]], int]


ENTRY_POINTS = "draftsim.commands"
DELEGATED = {   # name -> (module with main(argv), help)
    "estimate": ("simulator.workflows.estimate", "price one engine step as the simulator does: seconds by op kind and "
                                                 "engine time (see `draftsim estimate --help`)"),
    "profile": ("simulator.workflows.profile", "time real torch kernels over the op graph's shapes and write a "
                                               "profile table (see `draftsim profile --help`); --engine vllm: "
                                               "measure a real vLLM's passes"),
    "sweep": ("simulator.workflows.sweep.main", "run a grid/list of scenario variants with seeds (local pool or Dask) "
                                                "into a resumable results store (see `draftsim sweep --help`)"),
    "plan": ("simulator.workflows.plan.main", "capacity planning: screen TP/PP/EP, replicas, drafter, γ/tree and "
                                              "colocated vs disaggregated on priced hardware, confirm the best with "
                                              "the DES, rank by cost (see `draftsim plan --help`)"),
    "compare": ("simulator.workflows.compare", "simulate two or more scenarios (or --vary variants of one) and "
                                               "print their headline metrics side by side with the change "
                                               "(see `draftsim compare --help`)"),
}


def _delegate(module: str, argv: list[str]) -> int:
    import importlib

    if module == "simulator.workflows.profile" and any(a == "--engine" or a.startswith("--engine=") for a in argv):
        module = "simulator.workflows.profile_engine"   # a real vLLM's passes
    return int(importlib.import_module(module).main(argv) or 0)


def commands(registered: bool = True) -> dict[str, Command]:
    """Every command besides run and catalog: simulator's, then (`registered`) those registered by other
    packages (reading every installed distribution's entry points costs start-up time: a command of
    simulator's own does not need them)."""
    from functools import partial

    found = {name: Command(text, partial(_delegate, module)) for name, (module, text) in DELEGATED.items()}
    if not registered:
        return found
    from importlib.metadata import distributions
    # every distribution's, not entry_points()'s first of each name: a stale draftsim.egg-info in the working
    # directory would otherwise hide the installed metadata
    points = {p.name: p for dist in distributions() for p in dist.entry_points.select(group=ENTRY_POINTS)}
    for name in sorted(points):
        found.setdefault(name, points[name].load())
    return found


class _Version(argparse.Action):
    """`--version`: the installed distribution's version, read only when asked (importlib.metadata costs
    start-up time every command would pay)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version
        try:
            found = version("draftsim")
        except PackageNotFoundError:
            found = "unknown (not installed: pip install -e .)"
        print(f"draftsim {found}")   # (stdout, as argparse's own version action)
        parser.exit(0)


def build_parser(registered: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="draftsim", description=(
        "Simulate LLM serving with speculative decoding: latency, throughput and goodput of a cluster "
        "under a workload, from measured kernel profiles, measured acceptance and verified theory."))
    p.add_argument("--version", action=_Version, help="print the installed draftsim's version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    r = sub.add_parser("run", help="simulate one scenario YAML and write its outputs",
                       description="Simulate a scenario; print a summary; write requests.parquet, "
                                   "steps.parquet, summary.json and plots to --out.")
    r.add_argument("scenario", help="path to a scenario YAML (e.g. scenarios/quickstart.yaml)")
    r.add_argument("--out", help="output folder (default: out/<scenario name>)")
    r.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a scenario field, e.g. --set workload.arrival.qps=8 (repeatable, each key once)")
    r.add_argument("--step-mode", choices=["bulk", "step"], default=None,
                   help="advance decode steps in bulk (fast, default) or one event per step (reference)")
    r.add_argument("--executor", default=None, metavar="EXECUTOR",
                   help="where the replicas run (simulation.executor): local (this machine), local-dask (a Dask "
                        "LocalCluster), dask://HOST:PORT or tcp://HOST:PORT (a running Dask scheduler); as "
                        "`draftsim sweep --executor`")
    r.add_argument("--workers", type=_workers, default=None, metavar="N",
                   help="processes (simulation.workers): local worker processes, or a local-dask cluster's workers")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    r.add_argument("--trace", action="store_true",
                   help="also write trace.json: a Chrome/Perfetto timeline (one track per replica with prefill, "
                        "draft, verify and engine spans per step, and one slice per request with its id; "
                        "open in ui.perfetto.dev)")
    r.add_argument("--trace-requests", type=bounded(minimum=0), default=None, metavar="N",
                   help=f"with --trace: draw the request slices of the first N request ids (default "
                        f"{TRACE_REQUESTS}, so that huge runs stay loadable; every step is drawn whatever N); a "
                        "warning says when requests are left out")
    r.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    r.set_defaults(func=_cmd_run)
    c = sub.add_parser("catalog", help="list the catalog of models, hardware, engine releases or published acceptance",
                       description=" ".join(f"{what.capitalize()}: {text}." for what, (text, _) in CATALOGS.items()))
    c.add_argument("what", choices=list(CATALOGS))
    c.set_defaults(func=_cmd_catalog)
    for name, command in commands(registered).items():
        sub.add_parser(name, help=command.help, add_help=False)
    return p


def _one_line_warnings() -> None:
    """Warnings print as one line ("draftsim: warning: ..."), without the source line."""
    import warnings
    warnings.formatwarning = lambda message, *args, **kwargs: f"draftsim: warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _one_line_warnings()
    # pydantic looks for third-party plugins (entry points of every installed distribution: ~45 ms of a
    # 0.5 s `draftsim estimate`) when it builds its first model; draftsim's boundary uses none. A user who
    # wants them sets PYDANTIC_DISABLE_PLUGINS themselves (an empty value loads them all).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    own = bool(argv) and (argv[0] in DELEGATED or argv[0] in ("run", "catalog"))   # (no entry points to read)
    found = commands(registered=not own)
    if argv and argv[0] in found:
        return guarded(lambda: found[argv[0]].main(argv[1:]), argv[0])
    parser = build_parser(registered=not own)
    args = parse_args(parser, argv, own_unknown=True)
    if isinstance(args, int):  # argparse already printed its one-line usage error (or the help)
        return args
    if not getattr(args, "func", None):   # (no COMMAND: bad input, one line on stderr; the help is --help)
        names = ["run", "catalog", *commands(registered=not own)]
        print(f"draftsim: error: give a COMMAND: {', '.join(names)} (draftsim --help says what each does)",
              file=sys.stderr)
        return EXIT_USAGE
    return guarded(lambda: args.func(args))

