"""ChainAcceptance's draws: τ of any number of consecutive steps (not only as many as the shared offset
column holds), each the counter-based τ of its step; and the two ways `sample` counts accepted tokens
(comparisons for short chains, a binary search for long ones) give the same count; τ counted from the
uniforms' 53 bits (`tau`, `tau_runs`) is the count of the uniforms; runs of steps (`tau_runs`) are each
request's own draws."""
from __future__ import annotations

import numpy as np
import pytest

from simulator.speculation.acceptance import (_COMPARE_DEPTH, _STEP_KEYS, _STEP_ROWS, AcceptanceModel, ChainAcceptance,
                                              counter_uniforms)


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


@pytest.mark.parametrize("depth", [0, 1, 4, _COMPARE_DEPTH, _COMPARE_DEPTH + 1])
def test_tau_from_the_bits_is_the_count_of_the_uniforms(depth):
    """Uniforms exactly at a survival level and just below it (bits of ceil(level · 2^53) and one less), among
    many drawn: the integer comparison of the bits counts what `sample` counts of the uniforms."""
    rng = np.random.default_rng(depth)
    acc = ChainAcceptance.from_alphas(list(rng.uniform(0.3, 0.95, size=max(depth, 1))), depth, seed=5)
    ids, steps = np.arange(200)[:, None], np.arange(300)
    assert np.array_equal(acc.tau(ids, steps), acc.sample(counter_uniforms(5, ids, steps)))
    scale = 9007199254740992.0   # 2^53
    at = np.ceil(acc.survival * scale).astype(np.int64)
    bits = np.concatenate([at, at - 1, [0, 2 ** 53 - 1]])
    assert np.array_equal(acc._sample_bits(bits), acc.sample(bits.astype(np.float64) / scale))


@pytest.mark.parametrize("counts", [[1], [3, 1, 7], [len(_STEP_KEYS) + 2, 5]])
def test_runs_of_steps_are_each_requests_draws(counts):
    acc = ChainAcceptance.from_alphas([0.8, 0.6], 3, seed=7)
    ids = np.array([4, 90, 12])[:len(counts)]
    expected = np.concatenate([acc.tau(np.array([r]), np.arange(n)) for r, n in zip(ids, counts)])
    assert np.array_equal(acc.tau_runs(ids, np.array(counts)), expected)
    assert np.array_equal(AcceptanceModel.tau_runs(acc, ids, np.array(counts)), expected)   # (the protocol's default)
