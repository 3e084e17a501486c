"""`profiles.measured.grid`: holes filled from the nearest measured point (checked against a brute-force
search over every measured point), medians of duplicate measurements, and prices exact at measurements."""
from __future__ import annotations

import math

import numpy as np
import pytest

from profiles.measured.grid import MeasuredGrid, _fill_log
from profiles.profiler.interp import axis_coord

SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 512, 4096]


def ideal(point) -> float:
    return 1e-6 * (1.0 + sum(point))


def brute_force(axes, values):
    """Each hole: the first measured point in C order at the least squared log-coordinate distance."""
    logs = np.log(values)
    points = [tuple(int(i) for i in idx) for idx in np.ndindex(values.shape)]
    measured = [p for p in points if not np.isnan(values[p])]
    for hole in points:
        if not np.isnan(values[hole]):
            continue
        where = [axis_coord(axes[d][i]) for d, i in enumerate(hole)]
        near = min(measured, key=lambda p: sum((axis_coord(axes[d][i]) - where[d]) ** 2 for d, i in enumerate(p)))
        at = [axes[d][i] for d, i in enumerate(hole)]
        src = [axes[d][i] for d, i in enumerate(near)]
        logs[hole] = math.log(values[near]) + math.log(ideal(at) / ideal(src))
    return logs


@pytest.mark.parametrize("seed", range(40))
def test_holes_take_the_nearest_measured_point_scaled_by_the_ideal_time(seed):
    rng = np.random.default_rng(seed)
    shape = [int(n) for n in rng.integers(1, 6, size=int(rng.integers(1, 4)))]
    values = rng.uniform(1e-5, 1e-3, size=shape)
    values[rng.random(shape) < 0.45] = np.nan
    if np.isnan(values).all():
        values.flat[0] = 1e-4
    axes = [sorted(rng.choice(SIZES, size=n, replace=False).tolist()) for n in shape]
    filled = _fill_log(axes, values, ideal)
    expected = brute_force(axes, values)
    assert np.array_equal(filled, expected)   # same arithmetic: equal to the last bit
    measured = ~np.isnan(values)
    assert np.array_equal(filled[measured], np.log(values[measured]))


def test_equidistant_holes_take_the_first_measured_point_in_c_order():
    axes = [[1.0, 3.0, 7.0]]   # log1p coordinates: 0.693, 1.386, 2.079 (equal steps)
    values = np.array([2e-4, np.nan, 8e-4])
    filled = _fill_log(axes, values, ideal)
    assert filled[1] == pytest.approx(math.log(2e-4 * ideal([3.0]) / ideal([1.0])), rel=1e-15)


def test_a_grid_without_measurements_is_refused():
    with pytest.raises(ValueError, match="no measured values"):
        _fill_log([[1.0, 2.0]], np.array([np.nan, np.nan]), ideal)


def test_duplicates_give_their_median_and_the_price_is_exact_at_measurements():
    points = [(1, 16), (1, 16), (1, 16), (8, 16), (8, 64), (8, 64), (1, 64)]
    seconds = [3e-5, 1e-5, 2e-5, 5e-5, 7e-5, 9e-5, 4e-5]
    grid = MeasuredGrid.from_points(points, seconds, ideal)
    assert grid.seconds((1, 16)) == (pytest.approx(2e-5, rel=1e-12), False)
    assert grid.seconds((8, 64)) == (pytest.approx(8e-5, rel=1e-12), False)
    assert grid.seconds((1, 64))[0] == pytest.approx(4e-5, rel=1e-12)
    price, extrapolated = grid.seconds((16, 64))
    assert extrapolated and price == pytest.approx(8e-5 * ideal((16, 64)) / ideal((8, 64)), rel=1e-12)
