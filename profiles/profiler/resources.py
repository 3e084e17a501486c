"""Will it fit? The memory a profile (and its `--check`) needs, against what this machine has, up front.

A profile that cannot fit would otherwise run for minutes and die out of memory half-way (or thrash the
machine): `require_memory` refuses it before any work, naming the model and the numbers.

What is counted (an estimate of the peak, named as such):
- profile: the largest point's resident operands, i.e. its op-graph bytes (weights/KV read + activations),
  with the large operand rotated over copies as the bench does (`timing.rotation_copies`, capped at
  `ROTATION_CAP_BYTES` in all), times 2 for the operand pool (`benches.OperandPool` grows to at most twice
  the largest request, after freeing the old buffer), and on CPU the pool's random draw, made in fp32
  before the cast to the profile's dtype;
- check: the target model's weights plus the KV cache of the largest checked shape (and the drafter's),
  which `--check` holds at once.
Available memory: CUDA's free device memory (`torch.cuda.mem_get_info`), else the kernel's MemAvailable.
`USABLE_FRACTION` of it may be used: allocator slack, the flush buffer and fragmentation take the rest.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import torch

from models.spec import ModelSpec, dtype_bytes
from profiles.profiler.timing import rotation_copies

USABLE_FRACTION = 0.8
ROTATION_CAP_BYTES = 4 * 2 ** 30   # timing.rotation_copies' default max_total_bytes
GIB = 2 ** 30


def available_bytes(device: torch.device) -> int:
    """Memory this process can still allocate on `device`."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import os
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def point_bytes(point_bytes_: float, llc_bytes: int) -> float:
    """Resident bytes of one profile point whose op moves `point_bytes_` (see the module docstring)."""
    copies = rotation_copies(point_bytes_, llc_bytes)
    return max(point_bytes_, min(copies * point_bytes_, ROTATION_CAP_BYTES))


def profile_peak_bytes(points_bytes: Iterable[float], llc_bytes: int, device: torch.device, esize: float) -> float:
    """Peak of a profile run (module docstring): the pool at twice the largest point, plus on CPU its fp32
    random draw."""
    largest = max((point_bytes(b, llc_bytes) for b in points_bytes), default=0.0)
    pool = 2.0 * largest
    return pool * (1.0 + 4.0 / esize) if device.type == "cpu" else pool


def check_peak_bytes(specs: Sequence[ModelSpec], dtype: str, kv_tokens: int) -> float:
    """Weights of every checked model plus the KV cache of `kv_tokens` cached positions of each."""
    total = 0.0
    for spec in specs:
        total += spec.weight_bytes(dtype) + kv_tokens * spec.kv_bytes_per_token(dtype)
    return total


def require_memory(needed_bytes: float, device: torch.device, what: str) -> None:
    """ValueError (exit 2 at the command line) when `needed_bytes` exceeds the usable memory."""
    have = available_bytes(device)
    if needed_bytes > USABLE_FRACTION * have:
        raise ValueError(f"--models: {what} needs about {needed_bytes / GIB:.1f} GiB of {device.type} memory; this "
                         f"machine has {have / GIB:.1f} GiB available ({USABLE_FRACTION:.0%} usable): profile a "
                         "smaller model or on a larger machine")


__all__ = ["available_bytes", "check_peak_bytes", "dtype_bytes", "point_bytes", "profile_peak_bytes",
           "require_memory"]
