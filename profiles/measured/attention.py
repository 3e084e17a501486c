"""Measured attention kernels: prefill ("context") and decode ("generation") tables of one framework.

Tables (per KV-cache dtype and sliding window, 0 = full attention, the framework's default kernel): context
attention over (batch, prompt tokens) for each (query heads, KV heads, head dim) measured; generation
attention over (batch, KV tokens) with one query token per sequence. How draftsim's ops map onto them:

* A sliding-window layer's prefill chunk is priced from the measured kernel of its window where the table
  has it (aiconfigurator-core 0.12.0 measures windows 128, 1024 and 8192 for vLLM 0.24 on H100), else
  from the full-attention prompt by its share of the pairs (profiles.measured.model, `_prefill_window`).

* Decode with q > 1 query tokens per sequence (speculative verification, chains and trees):
  `profiles.measured.verify` (the engines' kernels pack the q tokens and the GQA group of a KV head into
  the same tile rows and read the KV once: the one-query price of the model's own layout over ctx + q
  keys, plus the compute of the extra row tiles at the context kernel's measured FLOP rate; SGLang's tree
  cascade adds its second call and the merge).
* A prefill chunk of c tokens after o cached ones is priced as the measured prompt of o + c tokens times
  the fraction of its causal (query, key) pairs the chunk computes, and never below a c-token prompt.
  Approximation: exact when the kernel time is proportional to the pairs (long prompts), conservative
  for short chunks after a long prefix.
* A (query heads, KV heads, head dim) layout that was not measured takes the measured layout with the
  same head dim (else the nearest) and the nearest query-heads-per-KV-head ratio, then the nearest KV
  head count, with the batch rescaled so that (sequence, KV head) work items match, and the price
  scaled by the ideal-time ratio (`profiles.measured.ideal`). E.g. Llama-2-7B's 32/32 heads are priced
  from the measured 8/8 layout at 4× the batch.
Approximation for mixed steps: prefill and decode attention are priced as two kernels, while vLLM V1
issues one varlen call per layer, so a mixed step pays one extra kernel floor (~12 µs per layer on H100).
"""
from __future__ import annotations

import math
from functools import cached_property, partial
from pathlib import Path

from profiles.measured import ideal
from profiles.measured.grid import MeasuredGrid
from profiles.measured.tables import KV_DTYPES, MS, dominant_source, read

CONTEXT, GENERATION = "context", "generation"
_COLUMNS = ["kernel_source", "batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim",
            "kv_cache_dtype", "step", "window_size", "latency"]

_INDEX = ["kernel_source", "kv_cache_dtype", "window_size"]


def _full_attention(frame):
    """The rows without a sliding window (tables before the `window_size` column have only those)."""
    return frame.where(frame["window_size"] == 0) if "window_size" in frame.columns else frame


def _by_window(frame) -> dict:
    """(KV dtype label, window size) -> the rows of its dominant kernel; window 0 is full attention (tables
    before the `window_size` column have only that)."""
    if "window_size" not in frame.columns:
        return {(dt, 0): dominant_source(part) for dt, part in frame.groupby("kv_cache_dtype")}
    return {(dt, int(w)): dominant_source(part)
            for (dt, w), part in frame.groupby(["kv_cache_dtype", "window_size"])}


class AttentionTable:
    """One phase (context or generation) of one framework's attention table."""

    def __init__(self, path: Path, phase: str, peaks):
        self.phase, self._path, self._peaks = phase, path, peaks
        self._layouts: dict[tuple[str, int], dict[tuple[int, int, int], object]] = {}
        self._grids: dict[tuple[str, tuple[int, int, int], int], MeasuredGrid] = {}
        self._nearest: dict[tuple, tuple[int, int, int]] = {}

    @cached_property
    def _windowed(self) -> dict:
        """(KV dtype label, window size) -> the rows of its dominant kernel: the table read whole, when the
        phase is first priced (a decode step never reads the context table)."""
        return _by_window(read(self._path, _COLUMNS))

    @cached_property
    def _frames(self) -> dict:
        """KV dtype label -> the full-attention rows of its dominant kernel."""
        return {dt: part for (dt, window), part in self._windowed.items() if window == 0}

    def measures_window(self, dtype: str, window: float) -> bool:
        """Whether the table measured sliding window `window` (> 0) for KV dtype `dtype`."""
        return window > 0 and (KV_DTYPES.get(dtype), int(window)) in self._windowed and int(window) == window

    @cached_property
    def _kernels(self) -> dict[str, str]:
        """KV dtype label -> its dominant kernel (what `describe` names): from the whole table once read, else
        from three of its columns."""
        frames = self.__dict__.get("_frames")
        if frames is not None:
            return {dt: str(part["kernel_source"][0]) for dt, part in frames.items()}
        return {dt: str(dominant_source(part)["kernel_source"][0])
                for dt, part in _full_attention(read(self._path, _INDEX)).groupby("kv_cache_dtype")}

    def measures(self, dtype: str) -> bool:
        """Whether the table holds KV dtype `dtype` (for pricing: the table is read whole)."""
        return KV_DTYPES.get(dtype) in self._frames

    @property
    def peaks(self):
        return self._peaks

    @property
    def dtypes(self) -> list[str]:
        return [d for d, label in KV_DTYPES.items() if label in self._kernels]

    def kernel(self, dtype: str) -> str:
        return self._kernels[KV_DTYPES[dtype]]

    def _layout_frames(self, dtype: str, window: int = 0) -> dict:
        found = self._layouts.get((dtype, window))
        if found is None:
            frame = self._windowed[KV_DTYPES[dtype], window]
            found = self._layouts[dtype, window] = {
                (int(h), int(kv), int(d)): part
                for (h, kv, d), part in frame.groupby(["num_heads", "num_key_value_heads", "head_dim"])}
        return found

    def _grid(self, dtype: str, layout: tuple[int, int, int], window: int = 0) -> MeasuredGrid:
        key = (dtype, layout, window)
        found = self._grids.get(key)
        if found is None:
            part = self._layout_frames(dtype, window)[layout]
            length = part["isl"] if self.phase == CONTEXT else part["isl"] + part["step"]
            points = list(zip(part["batch_size"].astype(float).tolist(), length.astype(float).tolist()))
            found = self._grids[key] = MeasuredGrid.from_points(
                points, part["latency"].astype(float) * MS, partial(self._ideal, dtype, layout, window=window),
                along=1)
        return found

    def _ideal(self, dtype: str, layout: tuple[float, float, float], point, window: int = 0) -> float:
        heads, kv_heads, head_dim = layout
        kv_bytes = 1.0 if dtype == "fp8" else 2.0
        if self.phase == CONTEXT:
            return ideal.context_attention(self._peaks, kv_bytes, heads, kv_heads, head_dim, point[0], point[1],
                                           window)
        return ideal.generation_attention(self._peaks, kv_bytes, heads, kv_heads, head_dim, point[0], point[1])

    def nearest_layout(self, dtype: str, heads: float, kv_heads: float, head_dim: float,
                       window: int = 0) -> tuple[int, int, int]:
        key = (dtype, heads, kv_heads, head_dim, window)
        found = self._nearest.get(key)
        if found is None:
            layouts = self._layout_frames(dtype, window)

            def distance(layout):
                h, kv, d = layout
                return (abs(math.log(d / head_dim)), abs(math.log((h / kv) / (heads / kv_heads))),
                        abs(math.log(kv / kv_heads)), layout)
            found = self._nearest[key] = min(layouts, key=distance)
        return found

    def seconds(self, dtype: str, heads: float, kv_heads: float, head_dim: float, batch: float,
                length: float, window: float = 0.0) -> tuple[float, bool]:
        """Seconds of one kernel call over `batch` sequences of `length` tokens (context: prompt tokens;
        generation: KV tokens, one query per sequence), and whether it left the measured range or layout.
        `window` > 0: the measured sliding-window kernel of that window (`measures_window`)."""
        w = int(window)
        layout = (int(heads), int(kv_heads), int(head_dim))
        if layout == (heads, kv_heads, head_dim) and layout in self._layout_frames(dtype, w):
            return self._grid(dtype, layout, w).seconds((batch, length))
        near = self.nearest_layout(dtype, heads, kv_heads, head_dim, w)
        mapped_batch = batch * kv_heads / near[1]
        t, _ = self._grid(dtype, near, w).seconds((mapped_batch, length))
        return t * self._ideal(dtype, (heads, kv_heads, head_dim), (batch, length), w) / \
            self._ideal(dtype, near, (mapped_batch, length), w), True
