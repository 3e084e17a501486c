"""`draftsim profile`: time every planned op point with the shared kernels and write a profile directory.

    python3 -m profiles.profiler --device cpu --models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b,llama-68m \
        --threads 2 --package-data

    python3 -m profiles.profiler --device cuda --models llama-3-8b,qwama-0.5b --no-collectives --check

Output: `ops.csv` (profiles.profiler.table) and `fingerprint.json`. Written atomically at the end, so an
interrupted run leaves no half-written profile. `--check` then runs whole forwards against the profile
(profiles.profiler.check) and writes `check.json` beside it; `--check-only` checks an existing profile.
Before any work the memory the run needs is compared with what the machine has (profiles.profiler.resources).
On CUDA every op is timed replayed from a CUDA graph (timing.time_graph) on the engine-grade kernel set
(models.torch_impl.kernel_sets); on CPU one call at a time on the validated reference kernels.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import torch

from models.catalog import get_model
from models.errors import ascii_number
from models.spec import dtype_bytes
from profiles.profiler.benches import OperandPool, bench_problem, build_bench
from profiles.profiler.collectives import time_collectives
from models.torch_impl.kernel_sets import kernel_set_for
from profiles.profiler.plan import FULL_GRID, GPU_GRID, QUICK_GRID, GridSpec, plan_points
from profiles.profiler.resources import check_peak_bytes, profile_peak_bytes, require_memory
from profiles.profiler.check import CHECK_FILE
from profiles.profiler.table import (DIM_COLUMNS, FINGERPRINT_FILE, MESSAGE_DIM, PARTIAL_FILE, fingerprint, make_row,
                                     write_fingerprint, write_table)
from profiles.hardware import hardware_id_for_gpu
from profiles.profiler.host_overhead import (FULL_SHAPES, HOST_OVERHEAD, QUICK_SHAPES, supported,
                                             time_host_overhead)
from profiles.profiler.timing import (BUSY_CYCLES_BEFORE_REPLAY, EAGER, GPU_TIMING, GRAPH, QUICK_TIMING, PrecedingGemm,
                                      TimingConfig, flush_bytes, last_level_cache_bytes, time_graph, time_kernel)

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
DEFAULT_MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "llama-68m")
# Kinds timed right after a GEMM (see profiles.profiler.timing.PrecedingGemm): all but GEMMs, which
# rotate cold weight copies instead. Collectives are timed elsewhere.
UNFLUSHED_KINDS = ("gemm",)


def default_device_id(device: torch.device) -> str:
    if device.type == "cpu":
        return "cpu-local"
    name = torch.cuda.get_device_name(device)
    return hardware_id_for_gpu(name) or _slug(name)


def _slug(name: str) -> str:
    """A device name as a folder-name part: lower case, runs of other characters as one '-'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def device_name(device: torch.device) -> str:
    """What a fingerprint records as `device_name`: the GPU's name or the CPU model."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    from profiles.profiler.table import cpu_model
    return cpu_model()


def default_out_dir(device_id: str, name: str, identity: str | None = None) -> Path:
    """profiles/data/<device-id>/, unless a profile of another machine is already filed there (the
    development VM is not always the same CPU): then profiles/data/<device-id>--<machine>/, the variant
    that `draftsim validate` picks on this machine (profiles.predictor.profile_dir_for_device)."""
    from profiles.predictor import DATA_DIR, PROFILE_VARIANT_SEPARATOR
    from profiles.profiler.machine import same_machine
    from profiles.profiler.table import read_fingerprint

    default = DATA_DIR / device_id
    if not (default / "ops.csv").is_file() or same_machine(read_fingerprint(default), name, identity):
        return default
    machine = _slug(name) or "machine"
    if identity is not None and read_fingerprint(default).get("device_name") == name:
        machine += "-" + _slug(identity.split(",")[0])  # same name, another CPU: family-model-stepping
    return DATA_DIR / f"{device_id}{PROFILE_VARIANT_SEPARATOR}{machine}"


def machine_identity(device: torch.device) -> str | None:
    """profiles.profiler.machine.cpu_identity for a CPU, None for a GPU (its name settles it)."""
    if device.type != "cpu":
        return None
    from profiles.profiler.machine import cpu_identity
    from profiles.profiler.timing import last_level_cache_bytes
    return cpu_identity(last_level_cache_bytes(device))


def profile_out_dir(out_dir: str | Path | None, package_data: bool, device_id: str, dev: torch.device) -> Path:
    """`out_dir`, else the shipped profiles' folder with `package_data`, else out/profiles/<device-id>/."""
    if out_dir is not None:
        return Path(out_dir)
    if package_data:
        return default_out_dir(device_id, device_name(dev), machine_identity(dev))
    return Path("out") / "profiles" / device_id


def bench_dims(dims: dict[str, float]) -> dict[str, float]:
    """The sizes a point's kernel runs at: per-shard sizes can be fractional (vocab-parallel LM head:
    vocab / tp), and the kernel runs on the padded size, as vocab-parallel layers pad the vocabulary (the
    table's row keeps the op's own dims)."""
    return {key: float(math.ceil(value)) for key, value in dims.items()}


def check_points(specs, grid: GridSpec, dtype: str) -> None:
    """ValueError naming `--models` and the model when one of its points has no bench or a dim the table has
    no column for: an MoE model's expert GEMMs carry moe_* dims, a hybrid model has conv1d/SSM ops,
    gpt-oss's sliding-window prefill chunks are not c*o + c(c+1)/2 pairs. These failed after every kernel was
    timed (the rows are built at the end) or at the first such point, with a line that named no flag."""
    for spec in specs:
        for point in plan_points([spec], grid, dtype):
            dims = point.all_dims()
            untabled = [key for key in dims if ("bytes_msg" if key == MESSAGE_DIM else key) not in DIM_COLUMNS]
            problem = (f"dims {', '.join(untabled)}: the profile table has no column for them" if untabled
                       else bench_problem(point.kind, bench_dims(dims)))
            if problem is not None:
                raise ValueError(f"--models: {spec.name}: the profiler cannot time or table its {point.kind} ops "
                                 f"({problem}); profile another model")


def default_grid(device: str, quick: bool) -> GridSpec:
    """QUICK_GRID for --quick, else the measured tables' grid on GPUs and the CPU grid on CPUs."""
    return QUICK_GRID if quick else (GPU_GRID if device == "cuda" else FULL_GRID)


KERNEL_SETS = ("auto", "engine", "reference")


def resolve_kernels(dev: torch.device, kernel_set: str):
    """The kernel set named on the command line (`auto`: by device, kernel_sets.kernel_set_for)."""
    if kernel_set not in KERNEL_SETS:
        raise ValueError(f"--kernels must be one of {', '.join(KERNEL_SETS)}, got {kernel_set!r}")
    return kernel_set_for(dev, None if kernel_set == "auto" else kernel_set == "engine")


DEFAULT_THREADS = min(2, os.cpu_count() or 1)   # torch threads of a measurement unless told: 2 (1 on one core)


def check_threads(threads, field: str = "threads") -> None:
    """ValueError naming `field` unless `threads` (torch.set_num_threads of a measurement) is 1 … this
    machine's cores: more threads than cores time contention, not kernels (and 10^5 of them exhaust the
    memory for their stacks)."""
    cores = os.cpu_count() or 1
    if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= cores:
        raise ValueError(f"{field} must be an integer in 1..{cores} (this machine's cores), got {threads!r}")


def check_passes(passes, field: str = "passes") -> None:
    """ValueError naming `field` unless `passes` (times every point is timed) is 1 … MAX_PASSES."""
    if type(passes) is not int or not 1 <= passes <= MAX_PASSES:
        raise ValueError(f"{field} must be an integer in 1..{MAX_PASSES}, got {passes!r}")


def _validate(device: str, threads: int, dtype: str | None, models: Sequence[str]) -> str:
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but torch.cuda.is_available() is False")
    check_threads(threads)
    dtype = dtype or ("fp32" if device == "cpu" else "bf16")
    if dtype not in TORCH_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(TORCH_DTYPES)}, got {dtype!r}")
    if not models:
        raise ValueError("models must name at least one catalog model")
    return dtype


def _phase(progress: bool | Callable, desc: str):
    """A phase of the profile without countable parts (the host overhead's whole passes, the collectives:
    each up to minutes): the caller's reporter as a step of its own (`draftsim profile`: a line every 10 s off a
    terminal, simulator.console.progress), or one line on stderr when the bar is tqdm's; nothing without
    progress. (The phases only printed that one line, or nothing for the collectives: minutes that looked hung.)"""
    if callable(progress):
        return progress(desc, None, "it")
    if progress:
        print(desc, file=sys.stderr)
    return contextlib.nullcontext()


def run_profile(device: str = "cpu", models: Sequence[str] = DEFAULT_MODELS, out_dir: str | Path | None = None,
                quick: bool = False, threads: int = DEFAULT_THREADS, dtype: str | None = None,
                device_id: str | None = None,
                collectives: bool = True, progress: bool | Callable = True, grid: GridSpec | None = None,
                timing: TimingConfig | None = None, check_kv_tokens: int = 0, kernel_set: str = "auto",
                package_data: bool = False, passes: int | None = None, command: str | None = None) -> Path:
    """Profile `models` on `device`; returns the output directory: `out_dir`, else out/profiles/<device-id>/,
    or with `package_data` the shipped profiles' folder (`default_out_dir`; never written unless asked).
    `progress`: a tqdm bar on stderr (True), none (False), or a factory `(desc, total, unit)` returning a
    context manager with `update()` (the command line passes the simulator's reporter).
    `check_kv_tokens` > 0: a `--check` follows, whose models and KV cache must fit too (checked up front).
    `kernel_set`: auto (engine kernels on CUDA, the reference on CPU), engine or reference.
    `passes`: times every point is timed, in passes over the whole grid (forward, then backward, ...), keeping
    its fastest median (default: `default_passes`).
    `command`: the command line the fingerprint records (default: `python3 -m profiles.profiler` and this
    process's arguments)."""
    started = time.perf_counter()   # profile_seconds: the whole command (compiling fused kernels included)
    dtype = _validate(device, threads, dtype, models)
    passes = default_passes(device, quick) if passes is None else passes
    check_passes(passes)
    specs = [get_model(name) for name in models]
    torch.set_num_threads(threads)
    dev = torch.device(device)
    device_id = device_id or default_device_id(dev)
    out = profile_out_dir(out_dir, package_data, device_id, dev)
    grid = grid or default_grid(device, quick)
    timing = timing or (QUICK_TIMING if quick else GPU_TIMING if device == "cuda" else TimingConfig())
    # Quick runs skip operand rotation (llc 0 ⇒ one copy): they check the harness, not the timings.
    llc = 0 if quick else last_level_cache_bytes(dev)
    check_points(specs, grid, dtype)
    points = plan_points(specs, grid, dtype)
    tdtype, esize = TORCH_DTYPES[dtype], dtype_bytes(dtype)
    require_memory(profile_peak_bytes((p.bytes for p in points), llc, dev, esize), dev,
                   f"profiling {', '.join(models)} (largest op point, rotated copies and operand pool)")
    if check_kv_tokens:
        require_memory(check_peak_bytes(specs[:2], dtype, check_kv_tokens), dev,
                       f"--check of {', '.join(models[:2])} (weights and KV cache of whole forwards)")
    kernels = resolve_kernels(dev, kernel_set)
    method = GRAPH if device == "cuda" else EAGER
    partial_every = 200 if device == "cuda" and not quick else 0
    skipped, eager_points = [], []
    pool = OperandPool(tdtype, dev)
    observed = {}
    if device == "cuda" and not quick:
        from profiles.profiler.observe import observed_kernels
        with torch.inference_mode():
            observed = observed_kernels(specs[0], lambda kind, dims: build_bench(kind, dims, tdtype, dev, 0, pool,
                                                                                  kernels=kernels), dev)
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    if callable(progress):  # the caller's reporter (draftsim profile: lines on stderr even without a terminal)
        bar = progress(f"profile {device_id}", len(points) * passes, "op")
    else:
        from tqdm import tqdm
        bar = tqdm(total=len(points) * passes, desc=f"profile {device_id}", unit="op", file=sys.stderr,
                   disable=not progress or sys.stderr is None,   # (None: started with stderr closed)
                   mininterval=0.1 if sys.stderr is not None and sys.stderr.isatty() else 10.0)
    flush = None if quick else PrecedingGemm.for_device(dev, llc)
    timings: list[list] = [[] for _ in points]   # each point's result in each pass (None: it did not run)
    with torch.inference_mode(), bar:
        for number, index in enumerate(pass_order(len(points), passes)):
            bar.update()
            point = points[index]
            dims = point.all_dims()
            bench = build_bench(point.kind, bench_dims(dims), tdtype, dev, llc, pool, kernels=kernels)
            eager, failed = [], []
            timings[index].append(_time_point(bench, dev, timing, flush, point.kind, method, dims, eager, failed))
            label = "" if len(timings[index]) == 1 else f"(pass {len(timings[index])}) "
            eager_points.extend(label + text for text in eager)
            skipped.extend(label + text for text in failed)
            del bench
            if device == "cpu" or number % 64 == 63:
                gc.collect()
            if partial_every and number % partial_every == partial_every - 1:   # a run cut short keeps what it measured
                write_table(_rows(points, timings), out, PARTIAL_FILE)
    rows = _rows(points, timings)
    disagreements = pass_disagreements(points, timings)
    del flush, pool
    if device == "cuda":
        torch.cuda.empty_cache()
    overhead_models = []
    if device == "cpu":
        for spec in specs:
            if not supported(spec):
                continue
            with _phase(progress, f"host overhead: whole passes of {spec.name}"):
                overhead = time_host_overhead(spec, tdtype, dev, QUICK_SHAPES if quick else FULL_SHAPES,
                                              reps=3 if quick else 7)
            for row in overhead:
                rows.append(make_row(HOST_OVERHEAD, {"layers": row["layers"], "tokens": row["tokens"]}, 0.0, 0.0,
                                     row["median_s"], row["p10_s"], row["p90_s"], row["reps"]))
            overhead_models.append(spec.name)
            gc.collect()
    collective_threads = max(1, threads // max(grid.collective_ranks))
    if collectives and (device == "cpu" or torch.cuda.device_count() >= 2):
        with _phase(progress, f"collectives: {', '.join(map(str, grid.collective_ranks))} ranks"):
            timed = time_collectives(grid.collective_ranks, grid.collective_bytes, timing, device_type=device,
                                     threads_per_rank=collective_threads)
        for row in timed:
            dims = {"bytes": row["bytes"], "ranks": row["ranks"]}
            if row["kind"] == "p2p":
                dims = {"bytes": row["bytes"]}
            rows.append(make_row(row["kind"], dims, 0.0, row["bytes"], row["median_s"], row["p10_s"],
                                 row["p90_s"], row["reps"]))
    elapsed = time.perf_counter() - started
    # The fingerprint is made (git, the CPU's identity: ~10 ms of subprocesses) before anything is written, and
    # the table and the fingerprint are then renamed into place back to back (each written to a temporary
    # file first): a Ctrl-C while the fingerprint was made left the new ops.csv beside the profile's old
    # fingerprint.json (another run's threads, dtype and models). (Between the two renames, microseconds apart,
    # an interrupt can still part them.)
    fp = fingerprint(device_id, device_name(dev), torch.__version__, threads, dtype, [s.name for s in specs], llc,
                     extra={"quick": quick, "cpu_identity": machine_identity(dev),
                            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                            "load_average_at_start": load_at_start, "profile_seconds": round(elapsed, 1), "points": len(rows),
                            "skipped_points": skipped,
                            "preceding_gemm_weight_bytes": 0 if quick else int(flush_bytes(dev, llc)),
                            "kernels": dict(kernels.kernels), "kernel_set": kernels.name,
                            "observed_kernels": observed,
                            "eager_timed_points": eager_points,
                            "timing_passes": passes, "pass_disagreement_threshold": PASS_DISAGREEMENT,
                            "pass_disagreements": len(disagreements),
                            "pass_disagreement_examples": disagreements[:MAX_DISAGREEMENT_EXAMPLES],
                            "host_overhead_models": overhead_models, "collective_threads_per_rank": collective_threads,
                            "timing": {"warmup": timing.warmup, "min_reps": timing.min_reps,
                                       "max_reps": timing.max_reps, "target_s": timing.target_s,
                                       "method": _METHOD_TEXT[method], "graph_target_s": timing.graph_target_s,
                                       "max_graph_calls": timing.max_graph_calls},
                            "command": command or command_line(MODULE_COMMAND, sys.argv[1:])})
    # The check of the profile replaced here goes with it (--check writes this one's after): a profile
    # written without --check over a checked one kept its check.json ('passed': false, or true) beside a
    # table it never checked.
    if (out / FINGERPRINT_FILE).is_file():
        (out / CHECK_FILE).unlink(missing_ok=True)
    write_table(rows, out)
    write_fingerprint(fp, out)
    (out / PARTIAL_FILE).unlink(missing_ok=True)
    return out


_METHOD_TEXT = {
    GRAPH: "cuda_graph: N back-to-back calls captured in one CUDA graph, replay time / N (median of replays, "
           "CUDA events); L2 flushed before each replay, outside the timed region; each replay queued behind "
           f"an untimed spin kernel of {BUSY_CYCLES_BEFORE_REPLAY:,} cycles (timing.replay_seconds)",
    EAGER: "eager: one call per sample, host clock; before each sample of a non-GEMM kernel a preceding GEMM "
           "runs untimed (timing.PrecedingGemm)",
}


PASS_DISAGREEMENT = 0.2          # a point whose passes' medians differ by more is listed in the fingerprint
MAX_PASSES = 100                 # passes over the grid (each one a whole profile: ~20 min on a CPU); the timing
#                                  order alone holds points x passes indices (1e9 passes: 24 GB, killed for memory)
MAX_DISAGREEMENT_EXAMPLES = 40


def default_passes(device: str, quick: bool) -> int:
    """Passes over the grid: 2 on GPUs (single points of an H100 run read up to 156x what other runs of the
    same code measured, 2026-11-27, before replays were queued behind a spin kernel, which removed such
    outliers (timing.replay_seconds); a second pass, minutes later and in the other order, still times each
    point again and keeps the faster median: with the spin the passes of a run differed by more than 20 % at
    18 and 27 of 1,782 points, all µs-scale), 1 on CPUs (the CPU profile has its own quantile spread, and a
    second pass would double a 20-minute run) and for quick runs."""
    return 2 if device == "cuda" and not quick else 1


def pass_order(points: int, passes: int) -> list[int]:
    """Point indices in timing order: forward, backward, forward, ... (a stall that lasts a while hits
    neighbouring points in one pass, different ones in the next)."""
    order = []
    for n in range(passes):
        order.extend(range(points) if n % 2 == 0 else range(points - 1, -1, -1))
    return order


def _fastest(results: list):
    """The result with the lowest median among a point's passes (None when it ran in none)."""
    ran = [r for r in results if r is not None]
    return min(ran, key=lambda r: r.median_s) if ran else None


def _rows(points, timings: list[list]) -> list[dict]:
    """Table rows in point order from each point's fastest pass (points not timed yet or never run: none)."""
    rows = []
    for point, results in zip(points, timings):
        best = _fastest(results)
        if best is not None:
            rows.append(make_row(point.kind, point.all_dims(), point.flops, point.bytes, best.median_s, best.p10_s,
                                 best.p90_s, best.reps))
    return rows


def pass_disagreements(points, timings: list[list]) -> list[str]:
    """'kind dims: slowest / fastest median' of the points whose passes differ by more than PASS_DISAGREEMENT,
    largest ratio first."""
    found = []
    for point, results in zip(points, timings):
        ran = [r.median_s for r in results if r is not None]
        if len(ran) > 1 and max(ran) > (1.0 + PASS_DISAGREEMENT) * min(ran):
            found.append((max(ran) / min(ran), f"{point.kind} {point.all_dims()}: {max(ran) / min(ran):.2f}x "
                                               f"({max(ran) * 1e6:.2f} / {min(ran) * 1e6:.2f} us)"))
    return [text for _, text in sorted(found, key=lambda item: -item[0])]


def _time_point(bench, dev, timing, flush, kind, method, dims, eager_points, skipped):
    """One point's timing: from a CUDA graph on GPUs (an op that cannot be captured falls back to eager
    event timing and is listed in the fingerprint), one call per sample on CPUs. A point that fails to
    run at all (e.g. out of memory) is skipped and listed."""
    try:
        if method == GRAPH:
            try:
                return time_graph(bench, dev, timing, flush)[0]
            except RuntimeError as exc:
                eager_points.append(f"{kind} {dims}: {str(exc).splitlines()[0][:160]}")
                torch.cuda.synchronize(dev)
        return time_kernel(bench, dev, timing, None if kind in UNFLUSHED_KINDS and method == EAGER else flush)
    except (RuntimeError, torch.cuda.OutOfMemoryError) as exc:
        skipped.append(f"{kind} {dims}: {str(exc).splitlines()[0][:160]}")
        return None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="draftsim profile",
                                     description="Time the op kernels of catalog models; write a profile table.",
                                     epilog="draftsim profile --engine vllm: measure a real vLLM's forward passes "
                                            "and per-step host time instead (see draftsim profile --engine vllm "
                                            "--help)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where the kernels are timed: cpu (this machine) or cuda (its GPU) (default: cpu)")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="comma-separated catalog model names (default: %(default)s)")
    parser.add_argument("--out", default=None, help="output directory (default: out/profiles/<device-id>/)")
    parser.add_argument("--package-data", action="store_true",
                        help="file the profile into the package's shipped profiles, profiles/data/<device-id>/ (or "
                             "profiles/data/<device-id>--<machine>/ when another machine's profile is filed there), "
                             "which draftsim validate reads; without it the shipped profiles are never written")
    parser.add_argument("--device-id", default=None, help="hardware id to file the profile under")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                        help="torch.set_num_threads, 1 to this machine's cores (default: 2, or 1 on one core)")
    parser.add_argument("--dtype", choices=tuple(TORCH_DTYPES), default=None,
                        help="weights/activations dtype (default: fp32 on cpu, bf16 on cuda)")
    parser.add_argument("--quick", action="store_true", help="tiny grid and few repetitions (CI, seconds)")
    parser.add_argument("--passes", type=int, default=None, help="time every point this many times, in passes "
                        "over the grid, keeping its fastest median: 1 to 100 (default: 2 on cuda, 1 on cpu and with --quick)")
    parser.add_argument("--tp", default="1", help="comma-separated tensor-parallel degrees whose per-GPU "
                        "shard shapes to profile (default: %(default)s)")
    parser.add_argument("--no-collectives", action="store_true", help="skip the multi-process collectives")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--quiet", action="store_true", help="no progress and no report on stdout (the files are "
                        "written; exit 1 and a line on stderr when --check fails)")
    parser.add_argument("--kernels", choices=KERNEL_SETS, default="auto", help="kernel set: auto (engine-grade on "
                        "cuda, the validated reference on cpu), engine or reference (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="after profiling, run whole forwards of the first "
                        "model (and the smallest other one as drafter) and compare them with the profile's sum "
                        "of ops; exit 1 when any shape is off by more than 10 %%")
    parser.add_argument("--check-only", action="store_true", help="check an existing profile (--out, the shipped "
                        "one with --package-data, else out/profiles/<device-id>/) without profiling; writes nothing "
                        "unless --check-out is given")
    parser.add_argument("--check-out", default=None, help="write the check's JSON here (default: check.json in "
                        "the profile directory after --check; nothing with --check-only)")
    return parser


MODULE_COMMAND = "python3 -m profiles.profiler"   # this module's command, as a fingerprint records it


def command_line(prog: str, argv: Sequence[str]) -> str:
    """`prog` and its arguments `argv` as one shell command line (arguments quoted where a shell needs it):
    what a fingerprint records, so that the command reruns the profile. (`draftsim profile --quick ...` was
    recorded as `python3 -m profiles.profiler profile --quick ...`, which that module refuses: 'unrecognized
    arguments: profile'.)"""
    import shlex
    return " ".join([prog, *map(shlex.quote, argv)])


def profile_flag(args) -> str:
    """The flag that chose the profile folder (`profile_out_dir`), for an error about that folder: --out when
    given, else --device-id, else --package-data, else --out (its default)."""
    if args.out is None and args.device_id is not None:
        return "--device-id"
    return "--package-data" if args.out is None and args.package_data else "--out"


def main(argv: Sequence[str] | None = None, progress_factory: Callable | None = None,
         prog: str = MODULE_COMMAND) -> int:
    """`draftsim profile`; `progress_factory` as run_profile's `progress` (default: a tqdm bar); `prog`: the
    command that `argv` follows (the fingerprint records both)."""
    from profiles.profiler.check import (QUICK_SHAPES, SHAPES, check_matches_profile, check_out_problem,
                                         load_profile, run_check)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    shapes = QUICK_SHAPES if args.quick else SHAPES
    try:
        check_threads(args.threads, "--threads")   # (named as the flags here; run_profile names its arguments)
        if args.passes is not None:
            check_passes(args.passes, "--passes")
        try:   # (an empty entry is refused: '1,,2' was read as 1,2 without a word)
            tps = tuple(ascii_number(int, x.strip()) for x in args.tp.split(","))
        except ValueError:
            raise ValueError(f"--tp must be comma-separated integers without empty entries, got {args.tp!r}") from None
        if min(tps) < 1:   # (never empty: split gives one entry at least, and an empty one is refused above)
            raise ValueError(f"--tp must list degrees >= 1, got {args.tp!r}")
        for flag, values in (("--tp", tps), ("--models", [m.lower() for m in models])):
            twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
            if twice is not None:   # (profiled twice over, or its rows written twice: a typo, as plan refuses it)
                raise ValueError(f"{flag} lists {twice} twice; give each once")
        if args.check and args.check_only:
            raise ValueError("--check and --check-only: choose one")
        if args.check_out is not None and not (args.check or args.check_only):
            # (it was ignored: the profile was written, no check run, nothing at --check-out, exit 0)
            raise ValueError("--check-out: writes the check's JSON; give it with --check or --check-only")
        grid = dataclasses.replace(default_grid(args.device, args.quick), tp=tps)
        kv_tokens = max(s.kv_tokens for s in shapes) + 16 if (args.check or args.check_only) else 0
        dtype = _validate(args.device, args.threads, args.dtype, models)
        dev = torch.device(args.device)
        out = profile_out_dir(args.out, args.package_data, args.device_id or default_device_id(dev), dev)
        problem = check_out_problem(args.check_out, out, args.package_data)   # (before any kernel is timed)
        if problem is not None:
            raise ValueError(f"--check-out: {problem}")
        latency = None   # (--check-only: the profile checked, loaded before any forward runs)
        if args.check_only:
            specs = [get_model(name) for name in models]
            if not (out / "ops.csv").is_file():
                raise ValueError(f"{profile_flag(args)}: {str(out)!r} holds no profile (ops.csv) to check")
            latency = load_profile(out, profile_flag(args))
            check_matches_profile(latency.fingerprint, out, specs, dtype, args.threads, args.device)
            require_memory(check_peak_bytes(specs[:2], dtype, kv_tokens), dev,
                           f"--check of {', '.join(models[:2])} (weights and KV cache of whole forwards)")
        else:
            out = run_profile(args.device, models, args.out, quick=args.quick, threads=args.threads,
                              dtype=args.dtype, device_id=args.device_id, collectives=not args.no_collectives,
                              progress=(progress_factory or True) if not (args.no_progress or args.quiet) else False,
                              grid=grid, check_kv_tokens=kv_tokens, kernel_set=args.kernels,
                              package_data=args.package_data, passes=args.passes,
                              command=command_line(prog, argv))
            if not args.quiet:
                print(f"profile written to {out}")
    except ValueError as exc:
        print(f"draftsim profile: error: {exc}", file=sys.stderr)
        return 2
    if not (args.check or args.check_only):
        return 0
    out_file = args.check_out or (out / CHECK_FILE if args.check else None)
    result = run_check(out, args.device, models, dtype, args.threads, shapes, reps=3 if args.quick else 10,
                       out_file=out_file, kernels=resolve_kernels(torch.device(args.device), args.kernels),
                       log=(lambda line: None) if args.quiet else print, latency=latency)
    verdict = "passed" if result["passed"] else "FAILED"
    line = (f"check {verdict}: largest |error| {result['max_abs_error'] * 100:.1f} % (tolerance "
            f"{result['tolerance'] * 100:.0f} %) over {len(result['shapes'])} shapes")
    if not args.quiet:
        print(line)
    elif not result["passed"]:   # (the failed check still says so, in one line)
        print(f"draftsim profile: {line}", file=sys.stderr)
    return 0 if result["passed"] else 1
