"""ChainAcceptance's draws: τ of any number of consecutive steps (not only as many as the shared offset
column holds), each the counter-based τ of its step; and the two ways `sample` counts accepted tokens
(comparisons for short chains, a binary search for long ones) give the same count."""
from __future__ import annotations

import numpy as np
import pytest

from simulator.speculation.acceptance import _COMPARE_DEPTH, _STEP_ROWS, ChainAcceptance


@pytest.mark.parametrize("steps", [1, len(_STEP_ROWS), len(_STEP_ROWS) + 1, 1000])
def test_draws_cover_every_step_asked_for(steps):
    acc = ChainAcceptance.from_alphas([0.8, 0.6], 3, seed=7)
    ids, start = np.array([3, 11, 40]), np.array([0, 5, 17])
    tau = acc.draws(ids, start, np.array([1, 9, 30]), steps)
    assert tau.shape == (steps, len(ids))
    for k in (0, steps // 2, steps - 1):
        assert np.array_equal(tau[k], acc.tau(ids, start + k))


@pytest.mark.parametrize("depth", [1, 2, 4, _COMPARE_DEPTH, _COMPARE_DEPTH + 1, 12])
def test_sample_counts_the_survival_levels_above_each_uniform(depth):
    rng = np.random.default_rng(depth)
    acc = ChainAcceptance.from_alphas(list(rng.uniform(0.3, 0.95, size=depth)), depth, seed=0)
    uniforms = np.concatenate([rng.random(5000), acc.survival, np.nextafter(acc.survival, 0.0), [0.0, 1.0]])
    expected = (uniforms[:, None] < acc.survival[None, :]).sum(axis=1)   # #{i : u < survival[i]}
    assert np.array_equal(acc.sample(uniforms), expected)
    assert acc.sample(uniforms.reshape(-1, 2)).shape == (len(uniforms) // 2, 2)
