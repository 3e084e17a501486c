"""A measured latency table of one kernel configuration: interpolation inside its grid, scaled
extrapolation outside, and filled holes.

Inside the grid: multilinear interpolation of log(seconds) over log(1 + size) axes (`profiles.profiler.
interp.Grid`): a power law between neighbouring measurements, exact at them.

Outside the grid (a size beyond the measured range on some axis): the price at the grid edge times the
ratio of an *ideal* time at the query to the ideal time at the edge,

    t(x) = t(edge(x)) · ideal(x) / ideal(edge(x)),

where `ideal` is a physical lower bound of the kernel (max of FLOPs over the peak rate and bytes over
the memory bandwidth, plus a link latency for collectives; `profiles.measured.ideal`). The price is
continuous at the edge and beyond it scales as the kernel's work does (linear in m for a large GEMM,
quadratic in the prompt for prefill attention). Approximation: the kernel's efficiency stays what it was
at the edge; its error grows with the distance and is reported as an extrapolated price.

Holes (grid points the package did not measure, e.g. batch × context combinations that did not fit in
memory) take the nearest measured point (in log-size space) scaled the same way.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from functools import reduce
from typing import Callable, Sequence

import numpy as np

from profiles.profiler.interp import Grid, axis_coord

Ideal = Callable[[Sequence[float]], float]
MAX_CURVES = 100_000  # cached curves per grid (one per distinct value of the other coordinates)


class MeasuredGrid:
    """Seconds of one kernel configuration as a function of its size axes."""

    def __init__(self, axes: Sequence[Sequence[float]], seconds: np.ndarray, ideal: Ideal, along: int = 0):
        values = np.asarray(seconds, dtype=float)
        if np.any(values[~np.isnan(values)] <= 0.0):
            raise ValueError("measured latencies must be > 0")
        self.ideal = ideal
        axes = [sorted(float(v) for v in axis) for axis in axes]
        self.grid = Grid(axes, _fill_log(axes, values, ideal))
        self.lows = [a[0] for a in self.grid.axes]
        self.highs = [a[-1] for a in self.grid.axes]
        self.along = along
        self._curves: dict[tuple, tuple | None] = {}

    @staticmethod
    def from_points(points: Sequence[Sequence[float]], seconds: Sequence[float], ideal: Ideal,
                    along: int = 0) -> "MeasuredGrid":
        """Grid from scattered measurements (duplicates: median); missing cross-product points are holes."""
        points = np.asarray(points, dtype=float)
        # (each axis's distinct values and every point's position on it; asking for the positions also keeps
        # numpy 2 from importing numpy.ma, ~15 ms of `draftsim estimate`, to check for a masked array)
        axes, index = zip(*(np.unique(points[:, d], return_inverse=True) for d in range(points.shape[1])))
        flat = np.ravel_multi_index(index, [len(a) for a in axes])
        values = np.full(int(np.prod([len(a) for a in axes])), np.nan)
        secs = np.asarray(seconds, dtype=float)
        order = np.lexsort((secs, flat))
        flat_sorted, sec_sorted = flat[order], secs[order]
        starts = np.flatnonzero(np.r_[True, flat_sorted[1:] != flat_sorted[:-1]])
        counts = np.diff(np.r_[starts, len(flat_sorted)])
        lower, upper = starts + (counts - 1) // 2, starts + counts // 2   # the median's two middle values
        values[flat_sorted[starts]] = 0.5 * (sec_sorted[lower] + sec_sorted[upper])
        return MeasuredGrid(axes, values.reshape([len(a) for a in axes]), ideal, along)

    def seconds(self, point: Sequence[float]) -> tuple[float, bool]:
        """(seconds at `point`, whether it lies outside the measured range and was extrapolated)."""
        curve = self._curve(point)
        if curve is not None:
            axis, coords, logs = curve
            x = point[self.along]
            if axis[0] <= x <= axis[-1]:
                hi = min(bisect_right(axis, x), len(axis) - 1)
                lo = hi - 1
                w = (math.log1p(x) - coords[lo]) / (coords[hi] - coords[lo])
                return math.exp(logs[lo] + w * (logs[hi] - logs[lo])), False
        cells, outside = self.grid.locate(point)
        value = math.exp(self.grid.interpolate(cells)[0])
        if outside == 0.0:
            return value, False
        edge = [min(max(x, lo), hi) for x, lo, hi in zip(point, self.lows, self.highs)]
        return value * self.ideal(point) / self.ideal(edge), True

    def _curve(self, point: Sequence[float]):
        """The grid interpolated, once per value of the other coordinates, into a curve along axis
        `along` (the one that varies most between queries, e.g. a GEMM's rows): multilinear
        interpolation is separable, so a lookup on the curve equals the full interpolation. None when
        the other coordinates lie outside the grid (the general path extrapolates)."""
        point = tuple(point)
        key = point[:self.along] + point[self.along + 1:]
        curve = self._curves.get(key, False)
        if curve is False:
            inside = all(self.lows[d] <= x <= self.highs[d] for d, x in enumerate(point) if d != self.along)
            curve = None
            if inside and len(self._curves) < MAX_CURVES:
                g = self.grid
                axis = g.axes[self.along]
                probe = list(point)
                logs = []
                for x in axis:
                    probe[self.along] = x
                    logs.append(g.interpolate(g.locate(probe)[0])[0])
                curve = (axis, g.coords[self.along], logs)
            self._curves[key] = curve
        return curve


def _fill_log(axes: list[list[float]], values: np.ndarray, ideal: Ideal) -> np.ndarray:
    """log(seconds) on the full grid; holes from the nearest measured point, scaled by `ideal`.

    "Nearest" is the Euclidean distance in the axes' log(1 + size) coordinates, ties to the first measured
    point in C order. The grid is a cross product, so a hole's squared distance to every grid point is a
    sum of one vector per axis (broadcast, summed in axis order as the per-point sum would be), and the
    nearest measured point is the arg-min over the grid with the holes masked out."""
    logs = np.log(values)
    holes = np.isnan(values)
    missing = np.argwhere(holes)
    if not len(missing):
        return logs
    if holes.all():
        raise ValueError("grid has no measured values")
    coords = [np.array([axis_coord(v) for v in axis]) for axis in axes]
    steps = [(c[None, :] - c[:, None]) ** 2 for c in coords]   # steps[d][i, j]: axis d's squared distance i → j
    for idx in missing:
        squared = reduce(np.add.outer, [step[i] for step, i in zip(steps, idx)])
        near = np.unravel_index(int(np.argmin(np.where(holes, np.inf, squared))), values.shape)
        at = [axes[d][i] for d, i in enumerate(idx)]
        src = [axes[d][i] for d, i in enumerate(near)]
        logs[tuple(idx)] = logs[near] + math.log(ideal(at) / ideal(src))
    return logs
