"""Multilinear interpolation on a small regular grid, fast for one scalar query (pure Python, bisect).

Used by `profiles.predictor` for every op it prices, so the per-call cost matters more than vectorization:
numpy/scipy interpolators cost 20–100 µs per scalar call, this costs a few µs for 1–3 axes.
Axes are interpolated in log(1 + x) (profile grids are log-spaced, and 0 occurs in prefix/context axes).
Queries outside an axis' range are clamped to its ends; `outside` reports how far out they were.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from itertools import product
from typing import Sequence

import numpy as np


def axis_coord(x: float) -> float:
    return math.log1p(max(x, 0.0))


class Grid:
    """Values on the cross product of sorted axes; `values` has shape (len(ax0), len(ax1), ...)."""

    def __init__(self, axes: Sequence[Sequence[float]], values: np.ndarray):
        self.axes = [sorted(float(v) for v in axis) for axis in axes]
        self.coords = [[axis_coord(v) for v in axis] for axis in self.axes]
        values = np.asarray(values, dtype=float)
        if values.shape != tuple(len(a) for a in self.axes):
            raise ValueError(f"grid values shape {values.shape} does not match axes "
                             f"{tuple(len(a) for a in self.axes)}")
        self.values = values
        self._flat = values.ravel().tolist()
        self._strides = [int(s // values.itemsize) for s in values.strides]

    def locate(self, point: Sequence[float]) -> tuple[list[tuple[int, int, float]], float]:
        """Per axis (lower index, upper index, weight of upper) and the largest log-distance outside."""
        cells, outside = [], 0.0
        for x, axis, coords in zip(point, self.axes, self.coords):
            if len(axis) == 1:
                cells.append((0, 0, 0.0))
                outside = max(outside, abs(axis_coord(x) - coords[0]) if x != axis[0] else 0.0)
                continue
            if x <= axis[0]:
                outside = max(outside, coords[0] - axis_coord(x))
                cells.append((0, 0, 0.0))
            elif x >= axis[-1]:
                outside = max(outside, axis_coord(x) - coords[-1])
                last = len(axis) - 1
                cells.append((last, last, 0.0))
            else:
                hi = bisect_right(axis, x)
                lo = hi - 1
                c = axis_coord(x)
                cells.append((lo, hi, (c - coords[lo]) / (coords[hi] - coords[lo])))
        return cells, outside

    def interpolate(self, cells: list[tuple[int, int, float]]) -> tuple[float, float, float]:
        """(interpolated value, min corner, max corner) of the cell `cells` from `locate`."""
        total, lo_val, hi_val = 0.0, math.inf, -math.inf
        for corner in product((0, 1), repeat=len(cells)):
            weight, offset = 1.0, 0
            for bit, (lo, hi, w), stride in zip(corner, cells, self._strides):
                if bit:
                    weight *= w
                    offset += hi * stride
                else:
                    weight *= 1.0 - w
                    offset += lo * stride
            value = self._flat[offset]
            if weight > 0.0:
                total += weight * value
                lo_val = min(lo_val, value)
                hi_val = max(hi_val, value)
        return total, lo_val, hi_val


def fill_holes(values: np.ndarray) -> np.ndarray:
    """Replace NaN entries (grid points the profiler skipped) by the nearest measured entry in index space.

    Approximation: a skipped point takes a neighbour's value; only used when a bench ran out of memory."""
    values = np.array(values, dtype=float)
    missing = np.argwhere(np.isnan(values))
    present = np.argwhere(~np.isnan(values))
    if len(present) == 0:
        raise ValueError("grid has no measured values")
    for idx in missing:
        nearest = present[np.argmin(((present - idx) ** 2).sum(axis=1))]
        values[tuple(idx)] = values[tuple(nearest)]
    return values
