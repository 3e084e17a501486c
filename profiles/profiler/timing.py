"""Timing one kernel call: warm-up, repetitions, median and spread; wall clock on CPU, CUDA events on GPU.

Approximations (named here because every profiled number inherits them):
- Cold operands. In a real forward pass each layer reads its own weights and KV cache, which on every
  machine we price are far larger than the last-level cache, so they arrive from DRAM/HBM. Timing one
  weight over and over would keep it cache-resident and under-report time. Benches therefore rotate over
  enough copies of their large operands to exceed twice the last-level cache (`rotation_copies`);
  activations stay hot, as they are in a forward pass (just produced by the previous op).
- Cold caches for kernels that follow a weight stream. In a forward pass every norm, RoPE, activation,
  attention and sampling call runs right after a GEMM that streamed megabytes of weights through the
  caches, so its own small operands (gains, the KV rows, the activation it reads) are no longer cached.
  Timed in a tight loop they would be, and they measured 2–6× faster than in a real pass on this CPU
  (profiles.reference.diagnose.kernel_context_excess). `CacheFlush` streams a buffer through the caches
  before every repetition of such kernels, untimed (as triton.testing.do_bench does on GPUs); GEMMs
  instead rotate over cold weight copies and keep their activations hot.
- Repetitions adapt to the kernel's duration: enough calls to fill `target_s` of timing, clamped to
  [min_reps, max_reps]. Short kernels get many reps (tight quantiles), multi-second ones `min_reps`.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

DEFAULT_LLC_BYTES = 64 * 2 ** 20


@dataclass(frozen=True)
class TimingConfig:
    warmup: int = 2
    min_reps: int = 3
    max_reps: int = 50
    target_s: float = 0.3

    def __post_init__(self) -> None:
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {self.warmup}")
        if not 1 <= self.min_reps <= self.max_reps:
            raise ValueError(f"need 1 <= min_reps <= max_reps, got {self.min_reps}, {self.max_reps}")
        if not self.target_s > 0:
            raise ValueError(f"target_s must be > 0, got {self.target_s}")


QUICK_TIMING = TimingConfig(warmup=1, min_reps=3, max_reps=5, target_s=0.01)


@dataclass(frozen=True)
class TimingResult:
    median_s: float
    p10_s: float
    p90_s: float
    reps: int


def last_level_cache_bytes(device: torch.device) -> int:
    """Size of the cache that a rotation must overflow: GPU L2, or the CPU's highest-level cache."""
    if device.type == "cuda":
        return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 * 2 ** 20))
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            try:
                with open(os.path.join(base, entry, "size")) as fh:
                    text = fh.read().strip()
            except OSError:
                continue
            unit = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30}.get(text[-1:], 1)
            digits = text.rstrip("KMG")
            if digits.isdigit():
                best = max(best, int(digits) * unit)
    except OSError:
        pass
    return best or DEFAULT_LLC_BYTES


def rotation_copies(operand_bytes: float, llc_bytes: int, max_copies: int = 64,
                    max_total_bytes: float = 4 * 2 ** 30) -> int:
    """How many copies of a large operand to cycle through so that their total exceeds 2× the LLC
    (at least 1, at most `max_copies`, and never more than `max_total_bytes` in all)."""
    if operand_bytes <= 0:
        return 1
    wanted = math.ceil(2 * llc_bytes / operand_bytes)
    affordable = max(1, int(max_total_bytes // operand_bytes))
    return max(1, min(wanted, max_copies, affordable))


#: Bytes streamed before each repetition of a flushed kernel on CPU: about the weight bytes one GEMM of
#: a small decoder layer streams (Qwen2.5-0.5B fp32: 3–35 MB per GEMM), which is what precedes these
#: kernels in a pass. With this flush the quick validation's per-step median error went from 7.0 % to
#: 3.4 % (scenarios/validation/README.md). On GPUs the whole L2 is flushed.
CPU_FLUSH_BYTES = 32 * 2 ** 20


def flush_bytes(device: torch.device, llc_bytes: int) -> int:
    """Bytes a `CacheFlush` streams on `device`: the L2 on a GPU, CPU_FLUSH_BYTES on a CPU."""
    return int(llc_bytes) if device.type == "cuda" else CPU_FLUSH_BYTES


class CacheFlush:
    """Streams `nbytes` through the caches (read + write of one buffer): call it before a timed rep."""

    def __init__(self, nbytes: int, device: torch.device):
        if nbytes < 0:
            raise ValueError(f"flush bytes must be >= 0, got {nbytes}")
        self.buffer = torch.zeros(max(1, nbytes // 4), dtype=torch.float32, device=device)

    @staticmethod
    def for_device(device: torch.device, llc_bytes: int) -> "CacheFlush":
        return CacheFlush(flush_bytes(device, llc_bytes), device)

    def __call__(self) -> None:
        self.buffer.add_(1.0)


def time_kernel(call: Callable[[int], object], device: torch.device, config: TimingConfig,
                flush: Callable[[], None] | None = None) -> TimingResult:
    """Time `call(i)` (i = repetition index, for operand rotation) and return median/p10/p90 seconds.
    `flush`, if given, runs before every call (warm-ups included) outside the timed region."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    before = flush or (lambda: None)
    index = 0
    for _ in range(config.warmup):
        before()
        call(index)
        index += 1
    sync()
    before()
    sync()
    first = _time_once(call, index, device, sync)
    index += 1
    reps = int(min(config.max_reps, max(config.min_reps, math.ceil(config.target_s / max(first, 1e-9)))))
    samples = [first]
    for _ in range(reps - 1):
        before()
        sync()
        samples.append(_time_once(call, index, device, sync))
        index += 1
    arr = np.asarray(samples)
    return TimingResult(float(np.median(arr)), float(np.quantile(arr, 0.1)), float(np.quantile(arr, 0.9)),
                        len(samples))


def _time_once(call: Callable[[int], object], index: int, device: torch.device,
               sync: Callable[[], None]) -> float:
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call(index)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t0 = time.perf_counter()
    call(index)
    sync()
    return time.perf_counter() - t0
