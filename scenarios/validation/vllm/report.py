"""`draftsim validate --engine vllm`: the simulator against a real vLLM (scenarios/validation/README.md).

By default it compares against the recorded runs shipped in profiles/data/vllm_validation/ (vLLM need not
be installed); `--live` first runs vLLM here (`--repeats` times per case, the Python given by
--vllm-python / $DRAFTSIM_VLLM_PYTHON) on the shipped workloads and compares against those new runs.
Prints one table per case and the speculative speedups, writes OUT/vllm_validation.json and one CDF plot
per case, and exits 1 when a target is missed: plain cases P50 error ≤ 5 % and P99 error ≤ 10 % for TTFT,
TPOT and E2E; speculative cases: the speedup over their plain baseline within 10 % and on the same side
of 1.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from models.errors import doc_description
from scenarios.validation.vllm.cases import CASES, DATA_DIR, ENGINE, PROFILE_DIR
from simulator.console.contract import EXIT_FAILED_CHECK, command_main, fail
from simulator.results.output_folder import check_output_dir, claim, staged_output

P50_TARGET, P99_TARGET, SPEEDUP_TARGET = 0.05, 0.10, 0.10
LABELS = {"ttft_s": "TTFT", "tpot_s": "TPOT", "e2e_s": "E2E"}
REPORT_JSON = "vllm_validation.json"
# the output folder's manifest, .draftsim-validate-vllm.json (not `validate`'s: a torch validation's files in the
# same folder are not this command's to replace or remove)
COMMAND = "validate-vllm"
# every file the report may write: a rerun of fewer cases, or with --no-plot, removes the plots of the cases it
# did not compare (they stayed beside a report that does not hold them)
REPORT_FILES = (REPORT_JSON, *(f"{name}.png" for name in CASES))
# the flags of --live alone, with their defaults (--vllm-python's: $DRAFTSIM_VLLM_PYTHON, vllm_launch)
LIVE_DEFAULTS = {"repeats": 2, "device": "cpu", "vllm_python": None, "models_dir": ".weights/hf", "allow_busy": False}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="draftsim validate --engine vllm", description=doc_description(__doc__))
    p.add_argument("--engine", choices=("vllm",), required=True, help="the engine compared with: vllm")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}")
    p.add_argument("--data", default=str(DATA_DIR), help="recorded runs: DATA/workloads/, DATA/runs/<case>/")
    p.add_argument("--profile-dir", default=str(PROFILE_DIR), help="engine profile the simulator prices from")
    p.add_argument("--live", action="store_true", help="run vLLM here first and compare against those runs")
    # (the flags of --live only, None when not given: without --live they were ignored without a word, exit 0;
    # their defaults are LIVE_DEFAULTS)
    p.add_argument("--repeats", type=int, default=None, help=f"with --live: vLLM runs per case (default "
                                                                f"{LIVE_DEFAULTS['repeats']})")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="with --live: vLLM's CPU backend or CUDA (default cpu)")
    p.add_argument("--vllm-python", default=None, help="with --live: the Python of vLLM's environment")
    p.add_argument("--models-dir", default=None, help=f"with --live: the HF model folders (default "
                                                       f"{LIVE_DEFAULTS['models_dir']})")
    p.add_argument("--allow-busy", action="store_true", default=None,
                   help="with --live: record on a machine other processes keep busy")
    p.add_argument("--out", default="out/validate-vllm",
                   help="folder for vllm_validation.json and the plots (default: out/validate-vllm)")
    p.add_argument("--no-plot", action="store_true", help="skip the per-case CDF plots")
    p.add_argument("--quiet", action="store_true", help="no progress and no report on stdout (the files are "
                                                        "written; exit 1 and a line on stderr when a target is missed)")
    return p


def main(argv=None) -> int:
    return command_main(build_parser(), argv, _validate, "validate")


def _live_flags(args) -> None:
    """Refuse a flag of --live given without it; fill in the defaults of those not given."""
    given = [f"--{name.replace('_', '-')}" for name in LIVE_DEFAULTS if getattr(args, name) is not None]
    if given and not args.live:
        raise ValueError(f"{given[0]}: only --live runs vLLM (this run compares the recorded runs of --data); "
                         f"add --live, or leave {given[0]} out")
    for name, default in LIVE_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def _check(args) -> tuple[list, Path, Path]:
    _live_flags(args)
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown or not names:
        raise ValueError(f"--cases: unknown case {', '.join(unknown) or '(none)'}; allowed: {', '.join(CASES)}")
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise ValueError(f"--cases: {twice} is given twice")
    # a speculative case is checked only by its speedup over its plain baseline: alone, it was compared with
    # no target at all and passed (exit 0)
    alone = next((n for n in names if CASES[n].baseline is not None and CASES[n].baseline not in names), None)
    if alone is not None:
        raise ValueError(f"--cases: {alone} is checked by its speedup over {CASES[alone].baseline}, which is not "
                         f"among the cases; add {CASES[alone].baseline} to --cases")
    cases = [CASES[n] for n in names]
    data, profile = Path(args.data), Path(args.profile_dir)
    if args.repeats < 1:
        raise ValueError("--repeats must be >= 1")
    if not profile.is_dir():
        raise ValueError(f"--profile-dir: no such folder {profile}")
    for case in cases:
        if args.live:
            if not (data / "workloads" / case.workload).is_file():
                raise ValueError(f"--data: no workload {data / 'workloads' / case.workload}")
        elif not any((data / "runs" / case.name).glob("run-*.json")):
            raise ValueError(f"--data: no recorded runs of {case.name} in {data / 'runs' / case.name} "
                             f"(record them with --live)")
    return cases, data, profile


def _record(cases, data: Path, args, out: Path) -> Path:
    """Run vLLM on each case's workload `--repeats` times; the runs go to OUT/runs/<case>/run-N.json."""
    from simulator.workflows.vllm_launch import check_model_dir, engine_env, resolve_vllm_python, run_driver
    from scenarios.validation.machine_load import measure_load
    python = resolve_vllm_python(args.vllm_python)
    models = Path(args.models_dir)
    for case in cases:
        for folder in case.model_dirs(models):
            check_model_dir(folder, "--models-dir")
    load = measure_load(ENGINE["threads"])
    if args.device == "cpu" and load.oversubscribed:
        message = (f"the machine is busy: {load.describe()}; vLLM's OpenMP threads slow down up to 10x when "
                   "they share cores")
        if not args.allow_busy:
            raise ValueError(f"--live: {message} (wait, or pass --allow-busy to record anyway)")
        print(f"warning: {message}", file=sys.stderr)
    claim(out, COMMAND, REPORT_JSON, REPORT_FILES)   # (OUT/runs/ is written in place: the folder is ours from now on)
    with tempfile.TemporaryDirectory(prefix="draftsim-vllm-") as cache:
        env = engine_env(ENGINE["threads"], ENGINE["kv_cache_gib"], Path(cache), args.device)
        for i in range(1, args.repeats + 1):   # repeats outermost: a case's runs spread over the session's drift
            for case in cases:
                folder = out / "runs" / case.name
                folder.mkdir(parents=True, exist_ok=True)
                target = folder / f"run-{i}.json"
                run_driver(python, ["run", *case.driver_args(models), "--device", args.device, "--workload",
                                    str(data / "workloads" / case.workload), "--out", str(target)],
                           env, folder / f"run-{i}.log", f"vLLM {case.name} run {i}/{args.repeats}", args.quiet)
    return out


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def format_case(result: dict) -> str:
    from simulator.console.table import format_columns
    head = ("metric", "vLLM P50", "sim P50", "err", "vLLM P99", "sim P99", "err", "spread P50/P99", "per-req")
    rows = []
    for m, v in result["metrics"].items():
        rows.append((LABELS[m], f"{v['real_p50'] * 1e3:.0f} ms", f"{v['sim_p50'] * 1e3:.0f} ms", _pct(v["err_p50"]),
                     f"{v['real_p99'] * 1e3:.0f} ms", f"{v['sim_p99'] * 1e3:.0f} ms", _pct(v["err_p99"]),
                     f"{_pct(v['spread_p50'])} / {_pct(v['spread_p99'])}", _pct(v["per_request_median_err"])))
    t = result["throughput_tok_s"]
    lines = [f"{result['case']}: {result['description']} — {result['requests']} requests, "
             f"{result['repeats']} vLLM run(s), {result['real_steps']} engine steps vs {result['sim_steps']} simulated",
             format_columns(head, rows),
             f"throughput {t['real']:.2f} tok/s vLLM, {t['sim']:.2f} simulated ({_pct(t['err'])})"]
    pm = result.get("target_pass_model")
    if pm:
        lines.append(f"target forward passes of these runs vs the engine profile: median |err| {_pct(pm['median_abs'])}, "
                     f"P90 {_pct(pm['p90_abs'])}, signed mean {100 * pm['mean_signed']:+.1f} % ({pm['passes']} passes)")
    if "draft_acceptance_rate" in result:
        a, k = result["draft_acceptance_rate"], result["tokens_per_decode_step"]
        lines.append(f"draft tokens accepted: vLLM {_pct(a['real'])}, simulated {_pct(a['sim'])}; tokens per decode "
                     f"step: vLLM {k['real']:.2f}, simulated {k['sim']:.2f}")
    return "\n".join(lines)


def targets(results: dict, speedups: dict) -> dict[str, bool]:
    out = {}
    for name, r in results.items():
        if CASES[name].speculative:
            continue
        for m, v in r["metrics"].items():
            out[f"{name} {LABELS[m]} P50 <= 5%"] = v["err_p50"] <= P50_TARGET
            out[f"{name} {LABELS[m]} P99 <= 10%"] = v["err_p99"] <= P99_TARGET
    for name, s in speedups.items():
        out[f"{name} speedup within 10%"] = s["err"] <= SPEEDUP_TARGET and s["same_direction"]
    return out


def plot_case(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for ax, m in zip(axes, LABELS):
        for i, real in enumerate(result["_frames"]["real"]):
            x = np.sort(real[m].dropna().to_numpy())
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color="tab:blue", alpha=0.6,
                    label="vLLM" if i == 0 else None)
        x = np.sort(result["_frames"]["sim"][m].dropna().to_numpy())
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color="tab:red", label="draftsim")
        ax.set_xlabel(f"{LABELS[m]} (s)")
        ax.set_ylabel("CDF")
        ax.legend(loc="lower right")
    fig.suptitle(f"{result['case']}: {result['description']}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _validate(args) -> int:
    from scenarios.validation.vllm.compare import compare_case, load_runs, speedup
    try:
        cases, data, profile = _check(args)
        # (--out was first met when the results were written: a file there said "OUT/work: Not a directory",
        # naming no flag; a user's non-empty folder got the report, the plots, work/ and runs/ among its files)
        out = check_output_dir(args.out, COMMAND, REPORT_JSON, REPORT_FILES)
        runs_root = _record(cases, data, args, out) if args.live else data
    except (ValueError, RuntimeError) as exc:   # RuntimeError: vLLM itself failed (its log is named)
        return fail(str(exc), "validate")
    results = {}
    with tempfile.TemporaryDirectory(prefix="draftsim-vllm-traces-") as work:   # (the simulator's request traces)
        for case in cases:
            results[case.name] = compare_case(case, load_runs(runs_root / "runs" / case.name), profile,
                                              Path(work))
    speedups = {c.name: speedup(results[c.name], results[c.baseline]) for c in cases
                if c.baseline is not None and c.baseline in results}
    checks = targets(results, speedups)
    if not args.quiet:
        for r in results.values():
            print(format_case(r) + "\n")
        for name, s in speedups.items():
            verdict = "speeds it up" if s["real"] > 1 else "slows it down"
            print(f"{name}: speculation {verdict} on vLLM: mean E2E x{1 / s['real']:.2f} (speedup {s['real']:.2f}); "
                  f"simulated speedup {s['sim']:.2f} ({_pct(s['err'])}{'' if s['same_direction'] else ', WRONG SIDE of 1'})")
    report = {"data": str(runs_root), "profile_dir": str(profile), "live": args.live,
              "cases": {k: {kk: vv for kk, vv in v.items() if kk != "_frames"} for k, v in results.items()},
              "speedups": speedups, "targets": checks}
    # the report and the plots land together, or none (Ctrl-C, a full disk), replacing an earlier report's
    with staged_output(out, COMMAND, REPORT_JSON, REPORT_FILES) as staged:
        (staged / REPORT_JSON).write_text(json.dumps(report, indent=1, default=float) + "\n")
        if not args.no_plot:
            for name, r in results.items():
                plot_case(r, staged / f"{name}.png")
    missed = [k for k, ok in checks.items() if not ok]
    if not args.quiet:
        print(f"wrote vllm_validation.json{'' if args.no_plot else ' and one CDF plot per case'} to {out}/")
    if missed:
        print(f"draftsim validate: {len(missed)} of {len(checks)} targets missed: {', '.join(missed)}", file=sys.stderr)
        return EXIT_FAILED_CHECK
    return 0


if __name__ == "__main__":
    sys.exit(main())
