"""Timing one kernel call: warm-up, repetitions, median and spread; wall clock on CPU, CUDA events on GPU.

Approximations (named here because every profiled number inherits them):
- Cold operands. In a real forward pass each layer reads its own weights and KV cache, which on every
  machine we price are far larger than the last-level cache, so they arrive from DRAM/HBM. Timing one
  weight over and over would keep it cache-resident and under-report time. Benches therefore rotate over
  enough copies of their large operands to exceed twice the last-level cache (`rotation_copies`);
  activations stay hot, as they are in a forward pass (just produced by the previous op).
- Kernels timed after a GEMM, as they run. In a forward pass every norm, RoPE, activation and sampling
  call runs right after a GEMM (attention right after RoPE, which follows the QKV GEMM) that streamed
  megabytes of weights through the caches and, on CPU, ran on the BLAS library's thread pool. Timed in a
  tight loop of repetitions those kernels find their operands cached and their threads spinning: on this
  2-core CPU a 40-token RMSNorm measured 48 µs hot, 130 µs after a 32 MB cache flush and 338 µs after a
  real 35 MB-weight GEMM, which is what a pass sees (scenarios.validation.reference.diagnose.kernel_context_excess).
  `PrecedingGemm` therefore runs such a GEMM, untimed, before every repetition of these kernels (on
  GPUs it streams the whole L2 instead, as triton.testing.do_bench does). GEMMs themselves rotate over
  cold weight copies and keep their activations hot.
- Repetitions adapt to the kernel's duration: enough calls to fill `target_s` of timing, clamped to
  [min_reps, max_reps]. Short kernels get many reps (tight quantiles), multi-second ones `min_reps`.
- On GPUs, kernels as engines run them (`time_graph`): serving engines replay a step's kernels from CUDA
  graphs (vLLM captures decode batches by default), so a kernel costs its device time plus the small gap
  between graph nodes, not a host launch (a lone launch timed with events reads 85-110 µs for a
  one-token RMSNorm on an H100 whose kernel takes a few µs; ../shared/data/h100-profile-2026-11-26).
  `time_graph` captures N back-to-back calls (operands rotating as in a pass) into one CUDA graph, times
  replays with events and reports replay time / N per call; the L2 flush runs before each replay,
  outside the timed region. N is chosen so that a replay lasts about `graph_target_s`.
- The GPU kept busy before each timed replay (`replay_seconds`): a spin kernel of
  `BUSY_CYCLES_BEFORE_REPLAY` cycles is queued ahead of the start event. While it spins, the host queues the
  start event, the replay and the end event, so a host delay (Python, the OS, a busy core) falls before the
  timed region instead of showing as idle GPU time inside it (NVIDIA nvbench holds its stream with a
  blocking kernel for the same reason); and the GPU does not idle between the replays of a short point, as
  it does not between an engine's back-to-back steps, where an idle GPU lowers its clock (an H100 idles at
  345 MHz SM clock against its 1,980 MHz boost clock: profiles/data/gpu-profile-runs). Three H100 runs on
  2026-11-27 without it read single µs-scale points 3–156× what the other runs did, every repetition of
  the point alike. On one H100, the profiler's 308 µs-scale points timed both ways in three interleaved
  rounds (profiles.profiler.busy_ab, two sessions): without the spin 18 and 9 points spread over 3× between
  rounds (up to 52× and 86×), with it none (at most 2.3×), the typical point unchanged (median ratio 1.005).
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
    graph_target_s: float = 2e-3    # CUDA graphs: calls per graph so that a replay lasts about this
    max_graph_calls: int = 64

    def __post_init__(self) -> None:
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {self.warmup}")
        if not 1 <= self.min_reps <= self.max_reps:
            raise ValueError(f"need 1 <= min_reps <= max_reps, got {self.min_reps}, {self.max_reps}")
        if not self.target_s > 0:
            raise ValueError(f"target_s must be > 0, got {self.target_s}")
        if not self.graph_target_s > 0 or self.max_graph_calls < 1:
            raise ValueError(f"need graph_target_s > 0 and max_graph_calls >= 1, got {self.graph_target_s}, "
                             f"{self.max_graph_calls}")


QUICK_TIMING = TimingConfig(warmup=1, min_reps=3, max_reps=5, target_s=0.01)
# GPUs: a replayed graph is short and steady, so fewer seconds per point than on a CPU.
GPU_TIMING = TimingConfig(warmup=2, min_reps=5, max_reps=20, target_s=0.02)
EAGER, GRAPH = "eager", "cuda_graph"


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


#: Weight bytes of the GEMM run before each repetition of a non-GEMM kernel on CPU: about one GEMM of a
#: small decoder layer (Qwen2.5-0.5B fp32: 3–35 MB per GEMM). On GPUs the whole L2 is streamed instead.
CPU_PRECEDING_GEMM_BYTES = 32 * 2 ** 20
PRECEDING_GEMM_TOKENS = 16
PRECEDING_GEMM_K = 1024


def flush_bytes(device: torch.device, llc_bytes: int) -> int:
    """Bytes streamed before each repetition of a non-GEMM kernel on `device` (see `PrecedingGemm`)."""
    return int(llc_bytes) if device.type == "cuda" else CPU_PRECEDING_GEMM_BYTES


class PrecedingGemm:
    """What runs before a non-GEMM kernel in a pass: on CPU a GEMM of PRECEDING_GEMM_TOKENS tokens with a
    `nbytes` weight (fp32) through torch's BLAS threads; on CUDA an L2-sized buffer streamed through the
    cache. Call it before a timed repetition."""

    def __init__(self, nbytes: int, device: torch.device):
        if nbytes < 0:
            raise ValueError(f"flush bytes must be >= 0, got {nbytes}")
        self.device = device
        n = max(1, nbytes // (4 * PRECEDING_GEMM_K))
        if device.type == "cuda":
            self.buffer = torch.zeros(max(1, nbytes // 4), dtype=torch.float32, device=device)
        else:
            gen = torch.Generator().manual_seed(0)
            self.weight = torch.randn(n, PRECEDING_GEMM_K, generator=gen)
            self.x = torch.randn(PRECEDING_GEMM_TOKENS, PRECEDING_GEMM_K, generator=gen)

    @staticmethod
    def for_device(device: torch.device, llc_bytes: int) -> "PrecedingGemm":
        return PrecedingGemm(flush_bytes(device, llc_bytes), device)

    def __call__(self) -> None:
        if self.device.type == "cuda":
            self.buffer.add_(1.0)
        else:
            torch.nn.functional.linear(self.x, self.weight)


def time_kernel(call: Callable[[int], object], device: torch.device, config: TimingConfig,
                flush: Callable[[], None] | None = None, calls: int = 1,
                clock: Callable[[], float] = time.perf_counter) -> TimingResult:
    """Time `call(i)` (i = repetition index, for operand rotation) and return median/p10/p90 seconds per
    call. Each sample runs `calls` back-to-back calls and is divided by `calls`. `flush`, if given, runs
    before every sample (and every warm-up call) outside the timed region. `clock` is the host clock (CPU;
    tests pass a fake one); CUDA samples are timed with events."""
    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls}")
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    before = flush or (lambda: None)
    index = 0
    for _ in range(config.warmup):
        before()
        call(index)
        index += 1
    sync()

    def sample() -> float:
        nonlocal index
        before()
        sync()
        seconds = _time_calls(call, index, calls, device, sync, clock) / calls
        index += calls
        return seconds

    return _statistics(sample, config)


def _statistics(sample: Callable[[], float], config: TimingConfig) -> TimingResult:
    """Samples until `target_s` of timing is filled (clamped to [min_reps, max_reps]) → statistics."""
    first = sample()
    reps = int(min(config.max_reps, max(config.min_reps, math.ceil(config.target_s / max(first, 1e-9)))))
    samples = [first] + [sample() for _ in range(reps - 1)]
    arr = np.asarray(samples)
    return TimingResult(float(np.median(arr)), float(np.quantile(arr, 0.1)), float(np.quantile(arr, 0.9)),
                        len(samples))


def _time_calls(call: Callable[[int], object], index: int, calls: int, device: torch.device,
                sync: Callable[[], None], clock: Callable[[], float]) -> float:
    """Seconds of `calls` back-to-back calls starting at repetition `index`."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for j in range(calls):
            call(index + j)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t0 = clock()
    for j in range(calls):
        call(index + j)
    sync()
    return clock() - t0


def graph_calls(single_s: float, config: TimingConfig) -> int:
    """Calls per captured graph: enough for a replay of about `graph_target_s` (1 … max_graph_calls)."""
    return int(max(1, min(config.max_graph_calls, math.ceil(config.graph_target_s / max(single_s, 1e-9)))))


def capture_graph(body: Callable[[], object], device: torch.device, warmup: int = 1) -> torch.cuda.CUDAGraph:
    """`body` run `warmup` times on a side stream (lazy state such as compiled kernels and layouts is built
    outside capture), then captured into a CUDA graph, which is replayed once untimed (its upload)."""
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            body()
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    graph.replay()
    torch.cuda.synchronize(device)
    return graph


#: Cycles of the spin kernel queued before each timed replay (module docstring): 0.5 ms at an H100's
#: 1,980 MHz boost clock, 2.9 ms at its 345 MHz idle clock; a host queues an event and a graph launch in
#: tens of µs.
BUSY_CYCLES_BEFORE_REPLAY = 1_000_000


def replay_seconds(graph: torch.cuda.CUDAGraph, busy_cycles: int = BUSY_CYCLES_BEFORE_REPLAY) -> float:
    """Seconds of one replay of `graph`, timed with CUDA events around it, behind a spin kernel of
    `busy_cycles` cycles queued first (untimed; 0: none)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if busy_cycles > 0:
        torch.cuda._sleep(busy_cycles)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def time_graph(call: Callable[[int], object], device: torch.device, config: TimingConfig,
               flush: Callable[[], None] | None = None, busy_cycles: int = BUSY_CYCLES_BEFORE_REPLAY
               ) -> tuple[TimingResult, int]:
    """Per-call device time of `call` replayed from a CUDA graph of N back-to-back calls (module
    docstring), and N. Warm-up calls run eagerly first (they build lazy state such as compiled kernels
    and attention layouts, which must exist before capture); one eagerly timed call sizes N. Each replay
    is queued behind a spin of `busy_cycles` (`replay_seconds`)."""
    if device.type != "cuda":
        raise ValueError("time_graph needs a CUDA device")
    before = flush or (lambda: None)
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for i in range(max(1, config.warmup)):
            call(i)
    torch.cuda.current_stream(device).wait_stream(stream)
    torch.cuda.synchronize(device)
    single = _time_calls(call, 0, 1, device, lambda: torch.cuda.synchronize(device), time.perf_counter)
    calls = graph_calls(single, config)

    def body() -> None:   # the graph's calls; run once eagerly first: lazy state per operand index
        for j in range(calls):
            call(j)

    graph = capture_graph(body, device)

    def sample() -> float:
        before()
        return replay_seconds(graph, busy_cycles) / calls

    result = _statistics(sample, config)
    del graph
    return result, calls
