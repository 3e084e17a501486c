"""Chain speculative decoding in the simulator against the closed form and exact cost accounting."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import simulator
from sim_helpers import scenario

DRAFT = {"kind": "draft_model", "model": "llama-68m", "gamma": 4}


def _tokens_per_step(result) -> float:
    steps = result.steps[result.steps.decode_seqs > 0]
    return float(steps.accepted_tokens.sum() / steps.decode_seqs.sum()) + 1.0


@pytest.mark.parametrize("alpha,gamma", [(0.6, 2), (0.8, 4), (0.9, 7)])
def test_mean_tokens_per_step_matches_closed_form(alpha, gamma):
    result = simulator.run(scenario(
        drafter={**DRAFT, "gamma": gamma}, acceptance={"kind": "constant", "alpha": alpha},
        workload={"num_requests": 400, "output_tokens": {"kind": "uniform", "low": 200, "high": 400}}))
    expected = (1 - alpha ** (gamma + 1)) / (1 - alpha)
    assert _tokens_per_step(result) == pytest.approx(expected, rel=0.01)


def test_positional_acceptance_matches_product_formula():
    alphas = [0.9, 0.7, 0.5]
    result = simulator.run(scenario(
        drafter={**DRAFT, "gamma": 3}, acceptance={"kind": "positional", "alphas": alphas},
        workload={"num_requests": 400, "output_tokens": {"kind": "uniform", "low": 200, "high": 400}}))
    expected = 1 + np.cumprod(alphas).sum()
    assert _tokens_per_step(result) == pytest.approx(expected, rel=0.01)


def test_alpha_zero_costs_exactly_draft_plus_verify():
    base = scenario(workload={"arrival": {"qps": 0.05}, "num_requests": 5,
                              "output_tokens": {"kind": "fixed", "value": 40}})
    spec = simulator.run({**base, "drafter": DRAFT, "acceptance": {"kind": "constant", "alpha": 0.0}})
    plain = simulator.run(base)
    # α = 0: one token per step, exactly as many steps as plain decoding ...
    assert (spec.requests.decode_steps == plain.requests.decode_steps).all()
    assert (spec.steps.accepted_tokens == 0).all()
    # ... each step costing the draft passes plus a γ+1-token verify, priced by the cost model.
    cost = spec.built.replicas[0].cost
    dec = spec.steps[spec.steps.decode_seqs > 0]
    for row in dec.head(50).itertuples():
        costs = cost.step(0, 0, 0, int(row.decode_seqs), int(row.decode_context_tokens))
        draft, verify = costs.draft, costs.target
        assert row.draft_s == draft.seconds and row.verify_s == verify.seconds - verify.engine_s
        assert row.engine_s == verify.engine_s
        assert row.duration_s == pytest.approx(draft.seconds + verify.seconds, rel=1e-12)
    assert (dec.draft_s > 0).all()
    overhead = spec.requests.e2e_s.to_numpy() - plain.requests.e2e_s.to_numpy()
    assert (overhead > 0).all()


def test_gamma_zero_equals_no_drafter():
    base = scenario()
    plain = simulator.run(base)
    gamma0 = simulator.run({**base, "drafter": {**DRAFT, "gamma": 0}})
    pd.testing.assert_frame_equal(plain.requests, gamma0.requests)
    pd.testing.assert_frame_equal(plain.steps, gamma0.steps)


def test_speculation_helps_at_low_load_with_high_acceptance():
    base = scenario(workload={"arrival": {"qps": 0.5}, "num_requests": 40})
    plain = simulator.run(base)
    spec = simulator.run({**base, "drafter": DRAFT, "acceptance": {"kind": "constant", "alpha": 0.9}})
    assert spec.requests.tpot_s.median() < 0.7 * plain.requests.tpot_s.median()
