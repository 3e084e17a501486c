"""`draftsim profile --engine vllm`: measure a real vLLM's forward passes and per-step host time on a grid
of batch compositions (profiles/engine_time/vllm_driver.py `profile`), one model at a time, into a folder
that `cluster.latency: {source: engine_profile, profile_dir: …}` prices passes from
(profiles.engine_time.engine_profile).

    draftsim profile --engine vllm --models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b --out DIR
        [--models-dir .weights/hf] [--vllm-python PY] [--threads 2] [--kv-cache-gib 2] [--quick]

Each model's folder is `<models-dir>/<catalog name>` (scenarios/validation/vllm/convert_weights.py writes
them). Writes `DIR/<catalog name>.json` (every step and pass, with the run's fingerprint) and
`DIR/fingerprint.json`; prints each model's fit residuals. Run it with nothing else on the machine:
other processes on the engine's cores inflate multi-threaded passes by up to 10× (load is recorded).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from models.errors import bounded, doc_description
from simulator.console.contract import QUIET_HELP, command_main

CORES = os.cpu_count() or 1
MEMORY_GIB = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024**3   # this machine's memory


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="draftsim profile --engine vllm", description=doc_description(__doc__))
    p.add_argument("--engine", choices=("vllm",), required=True, help="the serving engine whose passes are timed")
    p.add_argument("--models", required=True, help="comma-separated catalog names, e.g. qwen2.5-coder-0.5b")
    p.add_argument("--models-dir", default=".weights/hf", help="folder of converted HF model folders")
    p.add_argument("--vllm-python", default=None, help="the Python that has vLLM (default: $DRAFTSIM_VLLM_PYTHON, "
                                                       "else this one)")
    p.add_argument("--out", default="out/engine-profile", help="output folder (default: out/engine-profile)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="vLLM's CPU backend or CUDA")
    # the engine's CPU threads: more than the cores would time contention, not passes
    p.add_argument("--threads", type=bounded(maximum=CORES), default=min(2, CORES),
                   help=f"the engine's CPU threads, 1 to this machine's cores (default {min(2, CORES)})")
    # (inf and 1e9 were taken: vLLM's CPU backend then fails to allocate, after the model folders were found)
    p.add_argument("--kv-cache-gib", type=bounded(float, 0, maximum=MEMORY_GIB, exclusive=True), default=2.0,
                   help="the CPU engine's KV cache space in GiB, at most this machine's memory "
                        "(VLLM_CPU_KVCACHE_SPACE; default 2)")
    p.add_argument("--quick", action="store_true", help="a small grid (tests, a first look)")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    return p


def main(argv=None) -> int:
    return command_main(build_parser(), argv, _profile, "profile")


def _profile(args) -> int:
    from simulator.console.contract import fail
    from simulator.errors import ScenarioError
    from simulator.workflows.profile import ENGINE_PROFILE, check_models, refuse_other_profile
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    check_models(names, args.models)   # catalog names, at least one (it said 'unknown model ...', naming no flag)
    twice = next((n for i, n in enumerate(names) if n.lower() in [m.lower() for m in names[:i]]), None)
    if twice is not None:   # (profiled twice over, into one NAME.json)
        raise ScenarioError("--models", f"lists {twice} twice; give each once")
    # --out is checked as every command's output folder is, before the model folders and vLLM (it was met
    # only by out.mkdir once both were found: a file there raised there; a user's non-empty folder got
    # NAME.json, NAME.log and fingerprint.json written among its files)
    from simulator.results.outputs import check_output_dir
    out = check_output_dir(args.out, marker="fingerprint.json", command="profile",
                     names=(*(f"{n}{ext}" for n in names for ext in (".json", ".log")), "fingerprint.json"))
    refuse_other_profile(out, ENGINE_PROFILE)   # (a kernel profile's folder: its fingerprint.json is not ours)
    try:
        return _profile_into(args, names, out)
    except DriverFailed as exc:
        return fail(str(exc), "profile")


class DriverFailed(Exception):
    """vLLM failed on a model: its message names the log, kept outside --out."""


def _profile_into(args, names: list[str], out) -> int:
    from profiles.engine_time.engine_profile import fit_pass_model, pass_rows
    from simulator.console.contract import fail
    from simulator.results.output_folder import staged_files
    from simulator.workflows.vllm_launch import check_model_dir, engine_env, resolve_vllm_python, run_driver
    try:
        folders = [check_model_dir(Path(args.models_dir) / n, "--models-dir") for n in names]
        python = resolve_vllm_python(args.vllm_python)
    except ValueError as exc:
        return fail(str(exc), "profile")
    # written into a staging folder, moved into --out once every model is profiled (a failing or interrupted
    # model left the models before it, and its own log, in --out: a profile without fingerprint.json); the
    # logs are written outside it, so that the failing model's log stays for the error line to name
    logs = Path(tempfile.mkdtemp(prefix="draftsim-vllm-logs-"))
    try:
        with staged_files(out) as staged, tempfile.TemporaryDirectory(prefix="draftsim-vllm-") as cache:
            env = engine_env(args.threads, args.kv_cache_gib, Path(cache), args.device)
            fingerprint = None
            for name, folder in zip(names, folders):
                cmd = ["profile", "--model", str(folder), "--out", str(staged / f"{name}.json"), "--threads",
                       str(args.threads), "--device", args.device]
                try:
                    result = run_driver(python, cmd + (["--quick"] if args.quick else []), env, logs / f"{name}.log",
                                        f"profiling vLLM {name}", args.quiet)
                except RuntimeError as exc:   # vLLM itself failed: one line naming its log (kept in `logs`)
                    raise DriverFailed(str(exc)) from None
                fingerprint = fingerprint or result["fingerprint"]
                fit = fit_pass_model(pass_rows(result))
                if not args.quiet:
                    print(f"{name}: {len(result['steps'])} steps in {result['wall_s']:.0f} s; forward-pass fit "
                          f"median |err| {100 * fit.residuals['forward']['median_rel']:.1f} %, P90 "
                          f"{100 * fit.residuals['forward']['p90_rel']:.1f} %; load {' '.join(result['loadavg_at_end'])}")
            fingerprint = {k: v for k, v in fingerprint.items() if k not in ("models", "command")}
            (staged / "fingerprint.json").write_text(json.dumps(fingerprint, indent=1) + "\n")
            for name in names:
                shutil.move(logs / f"{name}.log", staged / f"{name}.log")
    except DriverFailed:
        raise   # (the logs stay where the error line says)
    except BaseException:
        shutil.rmtree(logs, ignore_errors=True)
        raise
    logs.rmdir()
    if not args.quiet:
        print(f"wrote {', '.join(n + '.json' for n in names)} and fingerprint.json to {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
