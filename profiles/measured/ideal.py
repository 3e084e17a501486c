"""Ideal (lower-bound) kernel times used to scale measured prices outside their grids and across
configurations (`profiles.measured.grid`): max(FLOPs / peak rate, bytes / memory bandwidth), plus the
per-hop latency of a collective. Only ratios of these are used, so the datasheet peaks cancel to first
order; what matters is how the work grows with each size."""
from __future__ import annotations

from dataclasses import dataclass

from models.opgraph import window_pairs
from profiles.hardware import HardwareSpec


@dataclass(frozen=True)
class Peaks:
    matmul_flops_per_s: float
    memory_bytes_per_s: float
    link_bytes_per_s: float
    hop_s: float

    @staticmethod
    def of(hardware: HardwareSpec, dtype: str = "bf16") -> "Peaks":
        return Peaks(hardware.matmul_flops(dtype), hardware.hbm_bandwidth_bytes_per_s,
                     hardware.scaleup_bandwidth_bytes_per_s, hardware.scaleup_latency_s)

    def bound(self, flops: float, nbytes: float) -> float:
        return max(flops / self.matmul_flops_per_s, nbytes / self.memory_bytes_per_s)


def gemm(peaks: Peaks, weight_bytes: float, act_bytes: float, m: float, n: float, k: float) -> float:
    return peaks.bound(2.0 * m * n * k, act_bytes * m * (k + n) + weight_bytes * k * n)


def context_attention(peaks: Peaks, kv_bytes: float, heads: float, kv_heads: float, head_dim: float,
                      batch: float, tokens: float, window: float = 0.0) -> float:
    """Causal self-attention over `batch` prompts of `tokens` tokens (no cached prefix); `window` > 0: each
    query sees at most `window` keys (a sliding-window layer)."""
    pairs = batch * (window_pairs(0.0, tokens, window) if window else tokens * (tokens + 1.0) / 2.0)
    moved = batch * tokens * head_dim * (2.0 * 2.0 * heads + 2.0 * kv_bytes * kv_heads)
    return peaks.bound(4.0 * heads * head_dim * pairs, moved)


def generation_attention(peaks: Peaks, kv_bytes: float, heads: float, kv_heads: float, head_dim: float,
                         batch: float, kv_tokens: float) -> float:
    """One query token per head (`heads` query heads, GQA packed) over `kv_tokens` cached keys/values."""
    moved = batch * (kv_tokens * kv_heads * head_dim * 2.0 * kv_bytes + 2.0 * 2.0 * heads * head_dim)
    return peaks.bound(4.0 * batch * heads * head_dim * kv_tokens, moved)


def allreduce(peaks: Peaks, ranks: float, nbytes: float) -> float:
    return 2.0 * (ranks - 1.0) * peaks.hop_s + 2.0 * (ranks - 1.0) / ranks * nbytes / peaks.link_bytes_per_s


def alltoall(peaks: Peaks, ranks: float, nbytes: float) -> float:
    return (ranks - 1.0) * peaks.hop_s + (ranks - 1.0) / ranks * nbytes / peaks.link_bytes_per_s
