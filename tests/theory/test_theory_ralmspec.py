"""RaLMSpec's speculative retrieval with batched verification (theory.ralmspec): the two-state chain's
closed form against a query-by-query run of the process, and its limits."""
from __future__ import annotations

import numpy as np
import pytest

from theory.ralmspec import ralmspec, ralmspec_optimal_stride, simulate_ralmspec


@pytest.mark.parametrize("p,s,g,c,a,b", [(0.8, 3, 0.05, 0.001, 0.2, 0.02), (0.5, 1, 0.1, 0.0, 0.1, 0.1),
                                         (0.95, 8, 0.02, 0.002, 0.3, 0.01), (0.3, 4, 0.05, 0.01, 0.05, 0.05)])
def test_closed_form_matches_a_query_by_query_run(p, s, g, c, a, b):
    committed, seconds = simulate_ralmspec(p, s, g, c, a, b, 60_000, np.random.default_rng(s))
    exact = ralmspec(p, s, g, c, a, b)
    assert committed / seconds * exact.baseline_interval_s == pytest.approx(exact.speedup, rel=0.01)


def test_limits_and_the_optimal_stride():
    g, c, a, b = 0.05, 0.001, 0.2, 0.02
    # always right: every round commits s intervals for s generations, s lookups and one batched query
    s = 4
    assert ralmspec(1.0, s, g, c, a, b).speedup == pytest.approx(s * (a + b + g) / (s * (g + c) + a + b * s))
    # never right: K rounds (one known interval, s − 1 wasted) alternate with nothing else
    assert ralmspec(0.0, s, g, c, a, b).intervals_per_round == pytest.approx(1.0)
    best, speed = ralmspec_optimal_stride(0.8, g, c, a, b, 32)
    assert speed == pytest.approx(max(ralmspec(0.8, k, g, c, a, b).speedup for k in range(1, 33)))
    assert best > 1 and speed > 1.0     # a costly knowledge base and a good cache: speculation pays
    # a poor cache and a cheap knowledge base: every wrong guess wastes a generation, speculation loses
    assert ralmspec_optimal_stride(0.1, g, c, 0.001, 0.001, 32)[1] < 1.0
