"""Fit the roofline's efficiency factors (and, where the catalog's nominal peaks are too low, the peaks)
to a profile table, so that the roofline can price what the profile does not cover.

The compute fit minimises Σ (log roofline(op_i) − log measured_i)² over the profiled compute points
(relative error, every point equal), with the roofline evaluated in vectorised form (`RooflineArrays`).
`tests/profiles/test_predictor_fit.py` checks that form against `RooflineLatencyModel.op_seconds` point by point,
so the fitted factors mean exactly what they mean to the roofline.

Peaks: `RooflineEfficiency` fractions must lie in (0, 1]. When the profile achieves a higher rate than the
catalog's nominal peak (cpu-local's numbers are nominal; hot-cache kernels beat DRAM bandwidth), the peak
is raised to the highest achieved rate before fitting, and the fitted hardware spec carries that peak.
Collectives: α (per-hop latency) and link bandwidth of the roofline's ring formulas, by non-negative
least squares on relative residuals, stored as the fitted hardware's scale-up link.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np
from scipy.optimize import least_squares, nnls

from models import ops as K_OPS
from models.ops import Op
from models.spec import activation_bytes
from profiles.hardware import HardwareSpec
from profiles.roofline import ROUTER_KERNELS, RooflineEfficiency, RooflineLatencyModel, default_efficiency

FIT_PARAMS = ("compute_fraction", "memory_fraction", "launch_s", "gemm_m_half", "gemm_nk_half",
              "attention_compute_fraction", "attention_memory_fraction")
_BOUNDS = {"compute_fraction": (1e-5, 1.0), "memory_fraction": (1e-5, 1.0), "launch_s": (1e-8, 1e-1),
           "gemm_m_half": (1e-3, 1e5), "gemm_nk_half": (1e-3, 1e5), "attention_compute_fraction": (1e-5, 1.0),
           "attention_memory_fraction": (1e-5, 1.0)}
COMPUTE_KINDS = (K_OPS.GEMM, K_OPS.MOE_ROUTER, K_OPS.ATTN_PREFILL, K_OPS.ATTN_DECODE, K_OPS.NORM,
                 K_OPS.ACTIVATION, K_OPS.EMBEDDING, K_OPS.ROPE, K_OPS.SAMPLING)
_ELEMENTWISE = (K_OPS.NORM, K_OPS.ACTIVATION, K_OPS.EMBEDDING, K_OPS.ROPE, K_OPS.SAMPLING)


class RooflineArrays:
    """`RooflineLatencyModel.op_seconds` for many compute ops at once, as a function of the fit params."""

    def __init__(self, ops: Sequence[Op], hardware: HardwareSpec, dtype: str):
        kinds = [op.kind for op in ops]
        unknown = set(kinds) - set(COMPUTE_KINDS)
        if unknown:
            raise ValueError(f"RooflineArrays prices compute kinds only, got {sorted(unknown)}")
        self.flops = np.array([op.flops for op in ops], dtype=float)
        self.bytes = np.array([op.bytes for op in ops], dtype=float)
        self.gemm = np.array([k == K_OPS.GEMM for k in kinds])
        self.router = np.array([k == K_OPS.MOE_ROUTER for k in kinds])
        self.prefill = np.array([k == K_OPS.ATTN_PREFILL for k in kinds])
        self.decode = np.array([k == K_OPS.ATTN_DECODE for k in kinds])
        self.elementwise = np.array([k in _ELEMENTWISE for k in kinds])
        # GEMM-like shape (m, n, k): router = (tokens, experts, hidden); others unused (1).
        shape = np.ones((len(ops), 3))
        chunk = np.ones(len(ops))
        for i, op in enumerate(ops):
            if op.kind == K_OPS.GEMM:
                shape[i] = (op.dim("m"), op.dim("n"), op.dim("k"))
            elif op.kind == K_OPS.MOE_ROUTER:
                shape[i] = (op.dim("tokens"), op.dim("experts"), op.dim("hidden"))
            elif op.kind == K_OPS.ATTN_PREFILL:
                chunk[i] = op.dim("q_tokens") / op.dim("seqs")
        self.shape, self.chunk = shape, chunk
        self.hardware, self.dtype = hardware, dtype
        act_dtype = "fp32" if activation_bytes(dtype) == 4.0 else "bf16"
        # Nominal peaks, only used by `raised_peaks` to compare achieved rates against.
        self.gemm_rate = hardware.matmul_flops(dtype)
        self.attn_rate = hardware.matmul_flops(act_dtype)
        self.vector_rate = hardware.peak_flops["fp32"]
        self.bandwidth = hardware.hbm_bandwidth_bytes_per_s

    def seconds(self, eff: RooflineEfficiency) -> np.ndarray:
        """Vectorised op_seconds. The rates and tile half-sizes are read from a RooflineLatencyModel built
        with `eff`, so its dtype scalings stay defined in one place (profiles.roofline)."""
        model = RooflineLatencyModel(self.hardware, eff, self.dtype)
        mem = self.bytes / model._mem_bytes_per_s
        mh, nkh = model._m_half, model._nk_half
        attn_mh = getattr(model, "_attn_m_half", mh)
        m, n, k = self.shape[:, 0], self.shape[:, 1], self.shape[:, 2]
        factor = (m / (m + mh)) * (n / (n + nkh)) * (k / (k + nkh))
        gemm_compute = self.flops / (model._gemm_flops_per_s * factor)
        gemm_time = np.where(self.flops > 0, np.maximum(gemm_compute, mem), mem)
        attn_mem = self.bytes / model._attn_mem_bytes_per_s
        prefill = np.maximum(self.flops / (model._attn_flops_per_s * (self.chunk / (self.chunk + attn_mh))),
                             attn_mem)
        decode = np.maximum(self.flops / model._attn_flops_per_s, attn_mem)
        elementwise = np.maximum(self.flops / model._vector_flops_per_s, mem)
        out = np.select([self.gemm, self.router, self.prefill, self.decode, self.elementwise],
                        [gemm_time, gemm_time + (ROUTER_KERNELS - 1) * model._launch_s, prefill, decode,
                         elementwise])
        return out + model._launch_s


def raised_peaks(hardware: HardwareSpec, ops: Sequence[Op], seconds: np.ndarray, dtype: str) -> HardwareSpec:
    """`hardware` with its FLOP and bandwidth peaks raised to the profile's best achieved rates, if higher."""
    arrays = RooflineArrays(ops, hardware, dtype)
    flop_rates = arrays.flops / seconds
    byte_rates = arrays.bytes / seconds
    flop_scale = max(1.0, float(np.max(flop_rates / np.where(arrays.gemm | arrays.router, arrays.gemm_rate,
                                       np.where(arrays.elementwise, arrays.vector_rate, arrays.attn_rate)))))
    bw_scale = max(1.0, float(np.max(byte_rates / arrays.bandwidth)))
    if flop_scale == 1.0 and bw_scale == 1.0:
        return hardware
    peaks = {key: value * flop_scale for key, value in hardware.peak_flops.items()}
    return dataclasses.replace(hardware, peak_flops=peaks,
                               hbm_bandwidth_bytes_per_s=hardware.hbm_bandwidth_bytes_per_s * bw_scale,
                               notes=f"peaks raised x{flop_scale:.3g} (FLOP/s) and x{bw_scale:.3g} (bytes/s) "
                                     "to rates a profile achieved")


def fit_compute(ops: Sequence[Op], seconds: Sequence[float], hardware: HardwareSpec, dtype: str,
                start: RooflineEfficiency | None = None) -> tuple[RooflineEfficiency, HardwareSpec, float]:
    """(fitted efficiency, hardware with peaks raised where needed, RMS of log residuals)."""
    measured = np.asarray(seconds, dtype=float)
    if len(ops) == 0:
        raise ValueError("profile has no compute points to fit")
    if not np.all(np.isfinite(measured)) or np.any(measured <= 0):
        raise ValueError("profile seconds must be positive and finite")
    hw = raised_peaks(hardware, ops, measured, dtype)
    arrays = RooflineArrays(ops, hw, dtype)
    base = start or default_efficiency(hardware.id)
    lo = np.log([_BOUNDS[p][0] for p in FIT_PARAMS])
    hi = np.log([_BOUNDS[p][1] for p in FIT_PARAMS])
    x0 = np.clip(np.log([getattr(base, p) for p in FIT_PARAMS]), lo + 1e-9, hi - 1e-9)
    log_measured = np.log(measured)

    def make(x: np.ndarray) -> RooflineEfficiency:
        values = np.exp(x)
        return dataclasses.replace(base, **{p: float(min(v, _BOUNDS[p][1])) for p, v in zip(FIT_PARAMS, values)},
                                   source="fitted to a profile")

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.log(arrays.seconds(make(x))) - log_measured

    result = least_squares(residuals, x0, bounds=(lo, hi), method="trf", x_scale=1.0, max_nfev=2000)
    eff = make(result.x)
    rms = float(math.sqrt(np.mean(result.fun ** 2)))
    return eff, hw, rms


def fit_collectives(ops: Sequence[Op], seconds: Sequence[float], launch_s: float) -> tuple[float, float] | None:
    """(per-hop latency s, bandwidth bytes/s) of the roofline's ring formulas, or None without data."""
    rows, targets = [], []
    for op, t in zip(ops, seconds):
        n = op.dim("ranks", 2.0)
        if op.kind == K_OPS.ALLREDUCE:
            hop, volume = 2.0 * (n - 1.0), 2.0 * (n - 1.0) / n * op.bytes
        elif op.kind == K_OPS.ALLTOALL:
            hop, volume = n - 1.0, (n - 1.0) / n * op.bytes
        elif op.kind == K_OPS.P2P:
            hop, volume = 1.0, op.bytes
        else:
            raise ValueError(f"fit_collectives got a {op.kind} op")
        rows.append((hop / t, volume / t))           # relative residuals: divide each row by its time
        targets.append((t - launch_s) / t)
    if not rows:
        return None
    (alpha, inv_bw), _ = nnls(np.asarray(rows), np.asarray(targets))
    bandwidth = 1.0 / inv_bw if inv_bw > 0 else 1e15
    return float(alpha), float(bandwidth)
