"""Measured gated-DeltaNet kernels: aiconfigurator-core's `gdn_perf` table (linear_attention family) of one
framework, per kernel of a GDN layer as the engine launches them.

Table rows: latency of one kernel call per layer over (batch, tokens per sequence), for each per-GPU head layout
(key heads, value heads, key dim, value dim) measured (Qwen3.5 models at several TP sizes; the hidden size
column does not enter these kernels, so rows that differ only in it are pooled by the grid's median).
Kernels (`kernel_source`, vLLM 0.24 / SGLang / TensorRT-LLM names): `causal_conv1d_fn` (prefill conv),
`causal_conv1d_update` (decode conv), `chunk_gated_delta_rule*` (chunked prefill),
`fused_recurrent_gated_delta_rule*` (decode). How draftsim's ops (models.opgraph_hybrid) map onto them:

* a prefill op of t tokens in s chunks: the measured call over batch s of t/s tokens each. Approximation:
  chunks of equal length (exact for one chunk); a chunk after a cached prefix costs what a fresh prompt of
  its length costs (the kernel starts from the carried state, the prefix is not re-read);
* a decode op of s requests with q query tokens each: the measured single-token update at batch s·q.
  Approximation: speculative verification's q sequential updates per request are priced as q requests (the
  same FLOPs and state writes; the state is read q times instead of once, an over-estimate of the reads);
* outside the measured range: the edge price scaled by the ideal-time ratio (profiles.measured.grid);
* a head layout the table lacks: not priced here (the roofline's, and latency_source says so).
Mamba layers have no vLLM table in the package (TensorRT-LLM's `mamba2_perf` holds only its conv1d kernels):
they are the roofline's.
"""
from __future__ import annotations

from functools import cached_property, partial
from pathlib import Path

import numpy as np

from profiles.measured.grid import MeasuredGrid
from profiles.measured.tables import MS, read

_COLUMNS = ["kernel_source", "phase", "batch_size", "seq_len", "num_k_heads", "head_k_dim", "num_v_heads",
            "head_v_dim", "latency"]
CONV_PREFILL, CONV_DECODE, CORE_PREFILL, CORE_DECODE = "conv_prefill", "conv_decode", "core_prefill", "core_decode"
_ROLES = {CONV_PREFILL: "causal_conv1d_fn", CONV_DECODE: "causal_conv1d_update",
          CORE_PREFILL: "chunk_gated_delta_rule", CORE_DECODE: "fused_recurrent_gated_delta_rule"}


def _role(kernel: str) -> str | None:
    for role, needle in _ROLES.items():
        if kernel.startswith(needle):
            return role
    return None


class GdnTable:
    """Per-kernel GDN latencies of one framework version on one GPU."""

    def __init__(self, path: Path, peaks):
        self._path, self._peaks = path, peaks
        self._grids: dict[tuple, MeasuredGrid] = {}

    @cached_property
    def _roles(self):
        """The table read (when a GDN kernel is first priced or named: models without such layers never
        read it), its rows labelled with their kernel's role."""
        frame = read(self._path, _COLUMNS)
        codes, kernels = frame.codes("kernel_source")
        roles = np.array([_role(str(kernel)) for kernel in kernels] + [None], dtype=object)[codes]
        known = np.array([role is not None for role in roles], dtype=bool)
        return frame.where(known).with_text("role", roles[known])

    @cached_property
    def _kernels(self) -> dict[str, list[str]]:
        return {role: sorted({str(kernel) for kernel in part["kernel_source"]})
                for role, part in self._roles.groupby("role")}

    @cached_property
    def _parts(self) -> dict[tuple, object]:
        keys = ["role", "num_k_heads", "num_v_heads", "head_k_dim", "head_v_dim"]
        return {(r, int(nk), int(nv), int(dk), int(dv)): part
                for (r, nk, nv, dk, dv), part in self._roles.groupby(keys)}

    def kernel(self, role: str) -> str:
        return "+".join(self._kernels.get(role, []))

    def seconds(self, role: str, key_heads: float, heads: float, key_dim: float, value_dim: float, batch: float,
                tokens_per_seq: float = 1.0) -> tuple[float, bool] | None:
        """(seconds of one call, extrapolated) or None when the layout was not measured."""
        layout = (int(key_heads), int(heads), int(key_dim), int(value_dim))
        if layout != (key_heads, heads, key_dim, value_dim):
            return None
        key = (role, *layout)
        grid = self._grids.get(key)
        if grid is None:
            part = self._parts.get(key)
            if part is None:
                return None
            ideal = partial(_ideal, self._peaks, role, layout)
            if role in (CONV_PREFILL, CORE_PREFILL):
                points = list(zip(part["batch_size"].astype(float).tolist(), part["seq_len"].astype(float).tolist()))
                grid = MeasuredGrid.from_points(points, part["latency"].astype(float) * MS, ideal, along=1)
            else:
                grid = MeasuredGrid.from_points(part.matrix(["batch_size"]), part["latency"].astype(float) * MS, ideal)
            self._grids[key] = grid
        point = (batch, tokens_per_seq) if role in (CONV_PREFILL, CORE_PREFILL) else (batch,)
        return grid.seconds(point)


def _ideal(peaks, role: str, layout: tuple[int, int, int, int], point) -> float:
    """Lower-bound time of a call (16-bit activations, 16-bit state): its FLOPs at the matmul peak or its
    bytes at the memory bandwidth (models.mixers' counts)."""
    nk, nv, dk, dv = layout
    batch = point[0]
    tokens = batch * (point[1] if len(point) > 1 else 1.0)
    conv = 2 * nk * dk + nv * dv
    state = nv * dk * dv * 2.0
    if role in (CONV_PREFILL, CONV_DECODE):
        return peaks.bound(8.0 * tokens * conv, 4.0 * tokens * conv + 2.0 * batch * 3 * conv * 2.0)
    if role == CORE_PREFILL:
        flops = tokens * 2.0 * nv * (3 * 64 * dk + 2 * 64 * dv + 3 * dk * dv)
        return peaks.bound(flops, 2.0 * tokens * nv * (2 * dk + 2 * dv) + 2.0 * batch * state)
    return peaks.bound(tokens * 6.0 * nv * dk * dv, 2.0 * tokens * nv * (2 * dk + 2 * dv) + 2.0 * batch * state)
