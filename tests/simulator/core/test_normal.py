"""The standard normal CDF and quantile lognormal lengths draw with (simulator.core.normal) against
scipy.special's ndtr and ndtri, which they replace on the run path (issue 30: scipy.special's import cost a
100-request run 0.2–0.3 s): within a few units in the last place over (0, 1), its tails and the CDF's range,
exact at the ends, and the same integers drawn for every length distribution tried."""
from __future__ import annotations

import statistics

import numpy as np
import pytest
from scipy import special

from simulator.core.lengths import MAX_LENGTH_TOKENS, LognormalLength
from simulator.core.normal import normal_cdf, normal_quantile


def _probabilities() -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.concatenate([rng.random(200_000), 10.0 ** -rng.uniform(0, 300, 50_000),
                           1.0 - 10.0 ** -rng.uniform(0, 16, 50_000),
                           [0.075, 0.925, 0.5 - 0.425, 0.5 + 0.425, np.exp(-25.0), 1e-300, 5e-324]])


def test_quantile_is_scipys_to_a_few_ulps_and_the_stdlibs_exactly():
    p = _probabilities()
    ours, theirs = normal_quantile(p), special.ndtri(p)
    assert np.isfinite(ours).all()
    ulps = np.abs(ours - theirs) / np.spacing(np.abs(theirs))
    assert ulps[theirs != 0].max() <= 8
    some = p[:2000]   # the same algorithm (AS241) as CPython's statistics.NormalDist, elementwise
    assert normal_quantile(some).tolist() == [statistics.NormalDist().inv_cdf(x) for x in some.tolist()]


def test_quantile_ends_and_symmetry():
    assert normal_quantile(np.array([0.0, 1.0, 0.5])).tolist() == [-np.inf, np.inf, 0.0]
    p = np.random.default_rng(3).random(10_000)
    np.testing.assert_allclose(normal_quantile(p), -normal_quantile(1.0 - p), rtol=1e-12, atol=1e-15)
    assert normal_quantile(np.zeros(0)).shape == (0,)


@pytest.mark.parametrize("lo, hi, most_ulps", [(-8.0, 8.0, 32), (-20.0, -8.0, 256), (-37.0, -20.0, 1024)])
def test_cdf_is_scipys_to_its_tails_precision(lo, hi, most_ulps):
    """Relative precision in the lower tail (C library erfc against Cephes' erfc: 1e-15 near the centre,
    1e-13 at 1e-300)."""
    x = np.linspace(lo, hi, 4001)
    ours, theirs = np.array([normal_cdf(v) for v in x.tolist()]), special.ndtr(x)
    assert (np.abs(ours - theirs) / np.spacing(theirs)).max() <= most_ulps
    assert normal_cdf(float("inf")) == 1.0 and normal_cdf(float("-inf")) == 0.0 and normal_cdf(0.0) == 0.5


def _scipy_draw(length: LognormalLength, n: int, rng: np.random.Generator) -> np.ndarray:
    """LognormalLength.sample as it was written on scipy.special (before simulator.core.normal)."""
    z_low, z_high = length._bounds()
    u = rng.random(n)
    if z_low > 0:
        lo, hi = special.ndtr(-z_high), special.ndtr(-z_low)
        z = -special.ndtri(lo + u * (hi - lo))
    else:
        lo, hi = special.ndtr(z_low), special.ndtr(z_high)
        z = special.ndtri(lo + u * (hi - lo))
    with np.errstate(over="ignore"):
        x = np.exp(np.log(length.median) + length.sigma * z)
    upper = MAX_LENGTH_TOKENS if length.max is None else length.max
    return np.clip(np.rint(x), length.min, upper).astype(np.int64)


@pytest.mark.parametrize("length", [LognormalLength(600, 0.7, 1, 4096), LognormalLength(200, 1.0),
                                    LognormalLength(50, 2.5, 10, 100_000), LognormalLength(2048, 0.3, 3000, 8192),
                                    LognormalLength(30, 0.05, 1, 64), LognormalLength(4000, 1.5, 1, 32768)])
def test_drawn_lengths_are_the_integers_scipy_gave(length):
    for seed in range(5):
        ours = length.sample(20_000, np.random.default_rng(seed), None, "workload.prompt_tokens")
        assert ours.tolist() == _scipy_draw(length, 20_000, np.random.default_rng(seed)).tolist()
