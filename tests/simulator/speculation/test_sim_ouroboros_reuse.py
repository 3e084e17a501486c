"""Ouroboros' candidate reuse (`reuse_hit_rate`, `reuse_alpha` of a vertical-cascade stage): the expected
draft passes of the mixture (theory.cascade.expected_passes) against explicit runs of the inner loop, its
limits, and the DES's draft time per step scaled by exactly the ratio of expected passes."""
from __future__ import annotations

import numpy as np
import pytest

import simulator
from sim_helpers import scenario
from simulator.errors import ScenarioError
from theory.cascade import expected_passes, simulate_passes


@pytest.mark.parametrize("tokens,alpha,gamma,h,reuse_alpha", [(6, 0.5, 3, 0.4, 0.8), (10, 0.3, 2, 0.7, 0.95),
                                                              (4, 0.6, 4, 0.2, 0.1)])
def test_expected_passes_of_the_mixture_match_explicit_runs(tokens, alpha, gamma, h, reuse_alpha):
    runs = simulate_passes(tokens, alpha, gamma, 40_000, np.random.default_rng(tokens), h, reuse_alpha)
    exact = expected_passes(tokens, alpha, gamma, h, reuse_alpha)
    assert abs(runs.mean() - exact) < 4 * runs.std() / np.sqrt(len(runs))


def test_reuse_limits():
    assert expected_passes(6, 0.5, 3, 0.0, 0.9) == expected_passes(6, 0.5, 3)
    assert expected_passes(6, 0.5, 3, 1.0, 0.9) == pytest.approx(expected_passes(6, 0.9, 3), rel=1e-12)
    assert expected_passes(6, 0.5, 3, 0.5, 0.5) == pytest.approx(expected_passes(6, 0.5, 3), rel=1e-12)
    # better reused candidates mean fewer passes, monotonically in the hit rate
    passes = [expected_passes(6, 0.5, 3, h, 0.8) for h in (0.0, 0.3, 0.6, 0.9)]
    assert all(a > b for a, b in zip(passes, passes[1:]))


def _data(**stage) -> dict:
    return scenario(workload={"arrival": {"process": "closed_loop", "concurrency": 1, "qps": None},
                              "prompt_tokens": {"kind": "fixed", "value": 200},
                              "output_tokens": {"kind": "fixed", "value": 400}, "num_requests": 1},
                    cluster={"hardware": "a100-80gb", "model": "llama-2-7b", "engine": {"version": "0.15.0"}},
                    drafter={"kind": "cascade", "stages": [{"model": "llama-68m", "tokens": 6, "inner_gamma": 3,
                                                            "inner_alpha": 0.5, **stage}]},
                    acceptance={"kind": "constant", "alpha": 0.7})


def test_draft_time_per_step_scales_with_the_expected_passes():
    plain, reuse = simulator.run(_data()), simulator.run(_data(reuse_hit_rate=0.4, reuse_alpha=0.8))
    a, b = (r.steps[r.steps["prefill_tokens"] == 0] for r in (plain, reuse))
    np.testing.assert_array_equal(a["emitted_tokens"], b["emitted_tokens"])   # the same target acceptance
    ratio = expected_passes(6, 0.5, 3, 0.4, 0.8) / expected_passes(6, 0.5, 3)
    np.testing.assert_allclose(b["draft_s"].to_numpy() / a["draft_s"].to_numpy(), ratio, rtol=1e-9)
    assert reuse.summary["tpot_mean_s"] < plain.summary["tpot_mean_s"]


def test_reuse_needs_a_vertical_cascade_and_its_acceptance():
    with pytest.raises(ScenarioError, match="drafter.stages.0"):
        simulator.run(_data(inner_gamma=0, inner_alpha=0.0, reuse_hit_rate=0.4, reuse_alpha=0.8))
    with pytest.raises(ScenarioError, match="drafter.stages.0"):
        simulator.run(_data(reuse_hit_rate=0.4))
    with pytest.raises(ScenarioError, match="drafter.stages.0"):
        simulator.run(_data(reuse_alpha=0.8))
