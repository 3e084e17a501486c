"""Drifting acceptance (Online Speculative Decoding, traffic drift): each request's accepted lengths follow
the chain formula at its own α, the run's mean follows theory.online, and bulk ≡ step mode."""
from __future__ import annotations

import numpy as np
import pytest

import simulator
from sim_helpers import assert_bulk_equals_step, scenario
from simulator.errors import ScenarioError
from theory.chain import expected_accepted
from theory.online import alpha_at, distillation_gpu_seconds, mean_accepted_per_step

POINTS = [[0, 0.3], [300, 0.9]]
DATA = dict(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
            acceptance={"kind": "drifting", "points": POINTS},
            workload={"num_requests": 600, "output_tokens": {"kind": "uniform", "low": 100, "high": 200}})


def test_each_request_accepts_at_its_own_alpha():
    req = simulator.run(scenario(**DATA)).requests
    steps = req.decode_steps.to_numpy()
    want = np.array([expected_accepted(float(a), 4) for a in alpha_at(req.index.to_numpy(), POINTS)])
    got = req.accepted_tokens.to_numpy()
    # bins of 100 requests: Σ accepted vs Σ steps × E[τ](α_r) (τ is logged before the output-length cap)
    for lo in range(0, 600, 100):
        sl = slice(lo, lo + 100)
        expect = float((steps[sl] * want[sl]).sum())
        assert got[sl].sum() == pytest.approx(expect, rel=0.05), lo
    early, late = got[:100].sum() / steps[:100].sum(), got[400:].sum() / steps[400:].sum()
    assert late > 2.5 * early


def test_run_mean_follows_the_closed_form_with_equal_steps():
    data = scenario(**{**DATA, "workload": {"num_requests": 400, "output_tokens": {"kind": "fixed", "value": 400}}})
    st = simulator.run(data).steps
    st = st[st.decode_seqs > 0]
    # requests have equal outputs but not equal step counts (α differs): weigh the formula by steps
    req = simulator.run(data).requests
    weights = req.decode_steps.to_numpy()
    alphas = alpha_at(np.arange(400), POINTS)
    want = float(np.dot(weights, [expected_accepted(float(a), 4) for a in alphas]) / weights.sum())
    assert st.accepted_tokens.sum() / st.decode_seqs.sum() == pytest.approx(want, rel=0.03)
    assert mean_accepted_per_step(1, [(0, 0.5)], 4) == pytest.approx(expected_accepted(0.5, 4))


def test_bulk_equals_step_mode():
    data = scenario(**{**DATA, "workload": {"num_requests": 200}})
    assert_bulk_equals_step(data)


def test_distillation_cost_formula_and_bad_input():
    assert distillation_gpu_seconds(68e6, 1e6, 1e15, 0.5) == pytest.approx(6 * 68e6 * 1e6 / 5e14)
    with pytest.raises(ValueError):
        alpha_at([1], [(2, 0.5), (1, 0.6)])
    with pytest.raises(ScenarioError, match="acceptance"):
        simulator.run(scenario(**{**DATA, "acceptance": {"kind": "drifting", "points": [[5, 0.5], [2, 0.6]]}}))
    with pytest.raises(ScenarioError, match="acceptance.kind"):
        simulator.run(scenario(**{**DATA, "speculation": {"kind": "tree", "builder": "kary", "k": 2, "depth": 3}}))
