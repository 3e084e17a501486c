"""`draftsim profile`: time every planned op point with the shared kernels and write a profile directory.

    python3 -m profiles.profiler --device cpu --models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b,llama-68m \
        --threads 2 --package-data

Output: `ops.csv` (profiles.profiler.table) and `fingerprint.json`. Written atomically at the end, so an
interrupted run leaves no half-written profile.
"""
from __future__ import annotations

import argparse
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
from models.spec import dtype_bytes
from profiles.profiler.benches import OperandPool, build_bench
from profiles.profiler.collectives import time_collectives
from profiles.profiler.plan import FULL_GRID, QUICK_GRID, GridSpec, plan_points
from profiles.profiler.table import fingerprint, make_row, write_fingerprint, write_table
from profiles.hardware import hardware_id_for_gpu
from profiles.profiler.host_overhead import (FULL_SHAPES, HOST_OVERHEAD, QUICK_SHAPES, supported,
                                             time_host_overhead)
from profiles.profiler.timing import (QUICK_TIMING, PrecedingGemm, TimingConfig, flush_bytes,
                                      last_level_cache_bytes, time_kernel)

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
DEFAULT_MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "llama-68m")
MAX_POINT_BYTES = 6 * 2 ** 30   # skip points whose operands would not fit comfortably in RAM/HBM
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


def default_out_dir(device_id: str, name: str) -> Path:
    """profiles/data/<device-id>/, unless a profile of another machine is already filed there (the
    development VM is not always the same CPU): then profiles/data/<device-id>--<machine>/, the variant
    that `draftsim validate` picks on this machine (profiles.predictor.profile_dir_for_device)."""
    from profiles.predictor import DATA_DIR, PROFILE_VARIANT_SEPARATOR
    from profiles.profiler.table import read_fingerprint

    default = DATA_DIR / device_id
    if not (default / "ops.csv").is_file() or read_fingerprint(default).get("device_name") == name:
        return default
    machine = _slug(name) or "machine"
    return DATA_DIR / f"{device_id}{PROFILE_VARIANT_SEPARATOR}{machine}"


def run_profile(device: str = "cpu", models: Sequence[str] = DEFAULT_MODELS, out_dir: str | Path | None = None,
                quick: bool = False, threads: int = 2, dtype: str | None = None, device_id: str | None = None,
                collectives: bool = True, progress: bool | Callable = True, grid: GridSpec | None = None,
                timing: TimingConfig | None = None, package_data: bool = False) -> Path:
    """Profile `models` on `device`; returns the output directory: `out_dir`, else out/profiles/<device-id>/,
    or with `package_data` the shipped profiles' folder (`default_out_dir`; never written unless asked).
    `progress`: a tqdm bar on stderr (True), none (False), or a factory `(desc, total, unit)` returning a
    context manager with `update()` (the command line passes the simulator's reporter)."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but torch.cuda.is_available() is False")
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    dtype = dtype or ("fp32" if device == "cpu" else "bf16")
    if dtype not in TORCH_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(TORCH_DTYPES)}, got {dtype!r}")
    if not models:
        raise ValueError("models must name at least one catalog model")
    specs = [get_model(name) for name in models]
    torch.set_num_threads(threads)
    dev = torch.device(device)
    device_id = device_id or default_device_id(dev)
    if out_dir is not None:
        out = Path(out_dir)
    elif package_data:
        out = default_out_dir(device_id, device_name(dev))
    else:
        out = Path("out") / "profiles" / device_id
    grid = grid or (QUICK_GRID if quick else FULL_GRID)
    timing = timing or (QUICK_TIMING if quick else TimingConfig())
    # Quick runs skip operand rotation (llc 0 ⇒ one copy): they check the harness, not the timings.
    llc = 0 if quick else last_level_cache_bytes(dev)
    points = plan_points(specs, grid, dtype)
    tdtype, esize = TORCH_DTYPES[dtype], dtype_bytes(dtype)
    rows, skipped = [], []
    started = time.perf_counter()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    if callable(progress):  # the caller's reporter (draftsim profile: lines on stderr even without a terminal)
        bar = progress(f"profile {device_id}", len(points), "op")
    else:
        from tqdm import tqdm
        bar = tqdm(total=len(points), desc=f"profile {device_id}", unit="op", file=sys.stderr, disable=not progress)
    pool = OperandPool(tdtype, dev)
    flush = None if quick else PrecedingGemm.for_device(dev, llc)
    with torch.inference_mode(), bar:
        for point in points:
            bar.update()
            dims = point.all_dims()
            if point.bytes > MAX_POINT_BYTES:
                skipped.append(f"{point.kind} {dims}")
                continue
            # Per-shard sizes can be fractional (vocab-parallel LM head: vocab / tp); the kernel runs on
            # the padded size, as vocab-parallel layers pad the vocabulary. The row keeps the op's dims.
            bench_dims = {key: float(math.ceil(value)) for key, value in dims.items()}
            bench = build_bench(point.kind, bench_dims, tdtype, dev, llc, pool)
            result = time_kernel(bench, dev, timing, None if point.kind in UNFLUSHED_KINDS else flush)
            rows.append(make_row(point.kind, dims, point.flops, point.bytes, result.median_s, result.p10_s,
                                 result.p90_s, result.reps))
            del bench
            gc.collect()
    del flush
    overhead_models = []
    if device == "cpu":
        for spec in specs:
            if not supported(spec):
                continue
            if progress:
                print(f"host overhead: whole passes of {spec.name}", file=sys.stderr)
            for row in time_host_overhead(spec, tdtype, dev, QUICK_SHAPES if quick else FULL_SHAPES,
                                          reps=3 if quick else 7):
                rows.append(make_row(HOST_OVERHEAD, {"layers": row["layers"], "tokens": row["tokens"]}, 0.0, 0.0,
                                     row["median_s"], row["p10_s"], row["p90_s"], row["reps"]))
            overhead_models.append(spec.name)
            gc.collect()
    collective_threads = max(1, threads // max(grid.collective_ranks))
    if collectives and (device == "cpu" or torch.cuda.device_count() >= 2):
        for row in time_collectives(grid.collective_ranks, grid.collective_bytes, timing, device_type=device,
                                    threads_per_rank=collective_threads):
            dims = {"bytes": row["bytes"], "ranks": row["ranks"]}
            if row["kind"] == "p2p":
                dims = {"bytes": row["bytes"]}
            rows.append(make_row(row["kind"], dims, 0.0, row["bytes"], row["median_s"], row["p10_s"],
                                 row["p90_s"], row["reps"]))
    elapsed = time.perf_counter() - started
    write_table(rows, out)
    fp = fingerprint(device_id, device_name(dev), torch.__version__, threads, dtype, models, llc,
                     extra={"quick": quick, "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                            "load_average_at_start": load_at_start, "profile_seconds": round(elapsed, 1), "points": len(rows),
                            "skipped_points": skipped,
                            "preceding_gemm_weight_bytes": 0 if quick else int(flush_bytes(dev, llc)),
                            "host_overhead_models": overhead_models, "collective_threads_per_rank": collective_threads,
                            "timing": {"warmup": timing.warmup, "min_reps": timing.min_reps,
                                       "max_reps": timing.max_reps, "target_s": timing.target_s},
                            "command": "python3 -m profiles.profiler " + " ".join(sys.argv[1:])})
    write_fingerprint(fp, out)
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="draftsim profile",
                                     description="Time the op kernels of catalog models; write a profile table.")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="comma-separated catalog model names (default: %(default)s)")
    parser.add_argument("--out", default=None, help="output directory (default: out/profiles/<device-id>/)")
    parser.add_argument("--package-data", action="store_true",
                        help="file the profile into the package's shipped profiles, profiles/data/<device-id>/ (or "
                             "profiles/data/<device-id>--<machine>/ when another machine's profile is filed there), "
                             "which draftsim validate reads; without it the shipped profiles are never written")
    parser.add_argument("--device-id", default=None, help="hardware id to file the profile under")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default: %(default)s)")
    parser.add_argument("--dtype", choices=tuple(TORCH_DTYPES), default=None,
                        help="weights/activations dtype (default: fp32 on cpu, bf16 on cuda)")
    parser.add_argument("--quick", action="store_true", help="tiny grid and few repetitions (CI, seconds)")
    parser.add_argument("--tp", default="1", help="comma-separated tensor-parallel degrees whose per-GPU "
                        "shard shapes to profile (default: %(default)s)")
    parser.add_argument("--no-collectives", action="store_true", help="skip the multi-process collectives")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None, progress_factory: Callable | None = None) -> int:
    """`draftsim profile`; `progress_factory` as run_profile's `progress` (default: a tqdm bar)."""
    args = build_parser().parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    try:
        try:
            tps = tuple(int(x) for x in args.tp.split(",") if x.strip())
        except ValueError:
            raise ValueError(f"--tp must be comma-separated integers, got {args.tp!r}") from None
        if not tps or min(tps) < 1:
            raise ValueError(f"--tp must list degrees >= 1, got {args.tp!r}")
        grid = dataclasses.replace(QUICK_GRID if args.quick else FULL_GRID, tp=tps)
        out = run_profile(args.device, models, args.out, quick=args.quick, threads=args.threads,
                          dtype=args.dtype, device_id=args.device_id, collectives=not args.no_collectives,
                          progress=(progress_factory or True) if not args.no_progress else False, grid=grid,
                          package_data=args.package_data)
    except ValueError as exc:
        print(f"draftsim profile: error: {exc}", file=sys.stderr)
        return 2
    print(f"profile written to {out}")
    return 0
