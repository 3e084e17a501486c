"""The step totals' exact sums (simulator.results.step_totals): both ways of summing (split at two scales and
summed in float64, or mantissas binned by exponent) give the exact sum, checked against Fractions."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from simulator.results import step_totals
from simulator.results.step_totals import _exact_parts, _exact_parts_by_exponent, _split_scales


def _fraction_parts(values: np.ndarray, groups, num_groups: int) -> list[int]:
    sums = [Fraction(0)] * num_groups
    for value, group in zip(values.tolist(), [0] * len(values) if groups is None else groups.tolist()):
        sums[group] += Fraction(value)
    units = [s * 2 ** step_totals._SCALE_BITS for s in sums]
    assert all(u.denominator == 1 for u in units)
    return [int(u) for u in units]


def _arrays():
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 5, 97, 4096, 70_000):
        yield f"durations{n}", rng.uniform(1e-3, 1e-1, n), True
        yield f"flops{n}", rng.uniform(1e12, 1e14, n), True
        yield f"signed{n}", rng.normal(0.0, 1.0, n) * 2.0 ** rng.integers(-8, 8, n), n <= 4096
        yield f"zeros{n}", np.where(rng.random(n) < 0.3, 0.0, rng.uniform(1.0, 3.0, n)), True
        yield f"wide{n}", rng.uniform(0.5, 1.0, n) * 10.0 ** rng.integers(-40, 40, n), n == 1
    yield "signed zeros", np.array([-0.0, 0.0, -0.0]), True
    yield "all zero", np.zeros(10), True
    yield "cancelling", np.array([2.0 ** 52, 1.0, -(2.0 ** 52), 2.0 ** -20]), False
    yield "subnormal", np.array([5e-324, 1e-320, 3e-310]), False
    yield "huge", np.array([1.7976931348623157e308, -1.7976931348623157e308, 8e307]), False
    yield "tiny equal", np.full(1000, 2.0 ** -1000), False


@pytest.mark.parametrize("name, values, split", list(_arrays()), ids=[a[0] for a in _arrays()])
def test_exact_parts_are_exact_either_way(name, values, split):
    groups = np.random.default_rng(len(values)).integers(0, 3, len(values))
    # the case takes the path it is meant to test
    assert (_split_scales(values) is not None) == split
    for g, k in ((None, 1), (groups, 3)):
        exact = _fraction_parts(values, g, k)
        assert _exact_parts(values, g, k) == exact
        assert _exact_parts_by_exponent(values, g, k) == exact


def test_not_finite_values_are_summed_by_exponent():
    values = np.array([1.0, np.nan, 2.5, np.inf])
    assert _split_scales(values) is None
    with np.errstate(invalid="ignore"):
        assert _exact_parts(values, None, 1) == _exact_parts_by_exponent(values, None, 1)
