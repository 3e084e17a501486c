"""Collective timings (all-reduce, all-to-all, point-to-point) across processes with torch.distributed.

CPU: gloo, one process per rank, each with `threads_per_rank` torch threads. CUDA: NCCL when there are at
least `ranks` GPUs (one rank per GPU), otherwise collectives on CUDA are skipped. Each repetition starts
after a barrier; its time is the slowest rank's (a collective ends when every rank has its result).
P2P is one send from rank 0 to rank 1 (the pipeline-parallel activation hand-off).
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict
from typing import Sequence

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from models import ops as K_OPS
from profiles.profiler.timing import TimingConfig, TimingResult

COLLECTIVES = (K_OPS.ALLREDUCE, K_OPS.ALLTOALL, K_OPS.P2P)


def _run_rank(rank: int, world: int, init_file: str, out_file: str, device_type: str, kinds: Sequence[str],
              sizes_bytes: Sequence[int], config: dict, threads_per_rank: int) -> None:
    torch.set_num_threads(threads_per_rank)
    backend = "nccl" if device_type == "cuda" else "gloo"
    if device_type == "cuda":
        torch.cuda.set_device(rank)
    device = torch.device(device_type, rank) if device_type == "cuda" else torch.device("cpu")
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world)
    cfg = TimingConfig(**config)
    rows = []
    try:
        for kind in kinds:
            if kind == K_OPS.P2P and world != 2:
                continue
            for size in sizes_bytes:
                elements = max(world, size // 4)
                elements -= elements % world          # all-to-all splits evenly
                send = torch.ones(elements, dtype=torch.float32, device=device)
                recv = torch.empty_like(send)

                def call() -> None:
                    if kind == K_OPS.ALLREDUCE:
                        dist.all_reduce(send)
                    elif kind == K_OPS.ALLTOALL:
                        dist.all_to_all_single(recv, send)
                    elif rank == 0:
                        dist.send(send, dst=1)
                    else:
                        dist.recv(recv, src=0)
                    if device_type == "cuda":
                        torch.cuda.synchronize(device)

                for _ in range(cfg.warmup):
                    call()
                samples = []
                for _ in range(cfg.max_reps):
                    dist.barrier()
                    t0 = time.perf_counter()
                    call()
                    # the slowest rank's time (NCCL reduces device tensors, gloo CPU ones)
                    elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64, device=device)
                    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
                    samples.append(float(elapsed))
                    if len(samples) >= cfg.min_reps and sum(samples) >= cfg.target_s:
                        break
                arr = np.asarray(samples)
                result = TimingResult(float(np.median(arr)), float(np.quantile(arr, 0.1)),
                                      float(np.quantile(arr, 0.9)), len(samples))
                rows.append({"kind": kind, "bytes": elements * 4, "ranks": world, **asdict(result)})
    finally:
        dist.destroy_process_group()
    if rank == 0:
        with open(out_file, "w") as fh:
            json.dump(rows, fh)


STOP_GRACE_S = 5.0   # seconds a rank has to end after SIGTERM before it is killed


def _stop(processes) -> None:
    """End the rank processes still running. A rank spawned from the `draftsim` executable ignores Ctrl-C,
    which is the executable's to handle (simulator.console.interrupts.leave_to_spawner), and the rendezvous
    file in the temporary folder goes as the interruption unwinds: left alone, the ranks waited for each other
    for ever, and so did the interpreter's exit for them (non-daemon children)."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(STOP_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()


def time_collectives(ranks: Sequence[int], sizes_bytes: Sequence[int], config: TimingConfig,
                     device_type: str = "cpu", threads_per_rank: int = 1,
                     kinds: Sequence[str] = COLLECTIVES) -> list[dict]:
    """Rows {kind, bytes, ranks, median_s, p10_s, p90_s, reps} for every kind × ranks × size."""
    rows: list[dict] = []
    for world in ranks:
        if world < 2:
            raise ValueError(f"collective ranks must be >= 2, got {world}")
        if device_type == "cuda" and torch.cuda.device_count() < world:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            init_file, out_file = os.path.join(tmp, "init"), os.path.join(tmp, "rows.json")
            ranks = mp.start_processes(_run_rank, args=(world, init_file, out_file, device_type, list(kinds),
                                                        list(sizes_bytes), asdict(config), threads_per_rank),
                                       nprocs=world, join=False, start_method="spawn")
            try:
                while not ranks.join():
                    pass
            except BaseException:   # Ctrl-C (or a rank that failed): the others are stopped, not waited for
                _stop(ranks.processes)
                raise
            with open(out_file) as fh:
                rows.extend(json.load(fh))
    return rows
