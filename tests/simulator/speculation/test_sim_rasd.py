"""RASD's merged retrieval + model tree (`speculation: {kind: retrieval_merge}`): theory.retrieval's
survival of τ = max(X, B·Y) against independent brute-force draws, the DES acceptance model's counter-based
draws against it, and the DES's accepted lengths and verify width."""
from __future__ import annotations

import numpy as np
import pytest

import simulator
from sim_helpers import assert_bulk_equals_step, merge, scenario
from simulator.errors import ScenarioError
from simulator.speculation.acceptance import ChainAcceptance
from simulator.speculation.retrieval_acceptance import retrieval_merged
from theory.retrieval import merged_expected_accepted, merged_survival

GAMMA, K, ALPHA, ALPHA_R, HIT = 4, 8, 0.7, 0.8, 0.6


def _chain_tau(rng, alpha: float, length: int, n: int) -> np.ndarray:
    """Accepted lengths of i.i.d. chains, coin by coin."""
    coins = rng.random((n, length)) < alpha
    return np.where(coins.all(axis=1), length, np.argmin(coins, axis=1))


@pytest.mark.parametrize("gamma,k,a,ar,h", [(4, 8, 0.7, 0.8, 0.6), (6, 3, 0.5, 0.9, 0.3), (3, 3, 0.8, 0.2, 1.0)])
def test_merged_survival_matches_brute_force(gamma, k, a, ar, h):
    rng, n = np.random.default_rng(gamma * 10 + k), 200_000
    tau = np.maximum(_chain_tau(rng, a, gamma, n), np.where(rng.random(n) < h, _chain_tau(rng, ar, k, n), 0))
    exact = merged_survival(np.cumprod([a] * gamma), np.cumprod([ar] * k), h)
    empirical = np.array([(tau >= i).mean() for i in range(1, len(exact) + 1)])
    assert np.abs(empirical - exact).max() < 4 * np.sqrt(0.25 / n)
    assert merged_expected_accepted(np.cumprod([a] * gamma), np.cumprod([ar] * k), h) == pytest.approx(tau.mean(), abs=0.02)


def test_counter_based_draws_follow_the_closed_form_and_reduce_to_the_chain():
    chain = ChainAcceptance.from_alphas([ALPHA], GAMMA, seed=3)
    model = retrieval_merged(chain, K, ALPHA_R, HIT, seed=3)
    ids, steps = np.arange(2000), np.arange(100)[:, None]
    tau = model.tau(ids, steps)
    exact = merged_survival(chain.survival, np.cumprod([ALPHA_R] * K), HIT)
    empirical = np.array([(tau >= i).mean() for i in range(1, K + 1)])
    assert np.abs(empirical - exact).max() < 4 * np.sqrt(0.25 / tau.size)
    assert model.depth == K and model.draft_tokens == GAMMA + K
    assert model.expected_accepted() == pytest.approx(exact.sum(), rel=1e-12)
    no_hit = retrieval_merged(chain, K, ALPHA_R, 0.0, seed=3)
    np.testing.assert_array_equal(no_hit.tau(ids, steps), chain.tau(ids, steps))


def _data(**speculation) -> dict:
    return scenario(drafter={"kind": "head", "style": "autoregressive", "gamma": GAMMA},
                    speculation={"kind": "retrieval_merge", "tokens": K, "alpha": ALPHA_R, "hit_rate": HIT,
                                 **speculation},
                    acceptance={"kind": "constant", "alpha": ALPHA})


def test_des_accepts_the_longer_branch_and_verifies_both():
    result = simulator.run(_data())
    steps = result.steps
    dec = steps[steps["decode_seqs"] > 0]
    assert (dec["query_tokens_per_seq"] == 1 + GAMMA + K).all()
    req = result.requests
    n = int(req["decode_steps"].sum())
    surv = merged_survival(np.cumprod([ALPHA] * GAMMA), np.cumprod([ALPHA_R] * K), HIT)
    exact = merged_expected_accepted(np.cumprod([ALPHA] * GAMMA), np.cumprod([ALPHA_R] * K), HIT)
    sigma = np.sqrt(((2 * np.arange(1, K + 1) - 1) * surv).sum() - exact ** 2)   # E[τ²] = Σ (2i − 1) P(τ ≥ i)
    # a request's last step may be cut by its output length (τ truncated): a slight downward bias only
    assert exact - 4 * sigma / np.sqrt(n) - 0.05 < req["accepted_tokens"].sum() / n < exact + 4 * sigma / np.sqrt(n)
    assert_bulk_equals_step(merge(_data(), {"workload": {"num_requests": 60}}))


def test_retrieval_merge_refuses_policies_and_acceptance_without_a_chain_survival():
    with pytest.raises(ScenarioError, match="policy.kind.*retrieval_merge"):
        simulator.run(merge(_data(), {"policy": {"kind": "smartspec"}}))
    drifting = {"kind": "drifting", "points": [[0, 0.8], [100, 0.5]]}
    with pytest.raises(ScenarioError, match="acceptance.kind"):
        simulator.run(merge(_data(), {"acceptance": drifting}))


@pytest.mark.parametrize("model,retrieved", [([0.5, 2.0], [0.3]), ([0.5], [-1.0]), ([[0.5]], [0.2]),
                                              ([float("nan")], [0.2])])
def test_merged_survival_refuses_what_is_not_a_survival(model, retrieved):
    """Unchecked, a survival of 2 or -1 gave P(τ ≥ i) outside [0, 1] and a 2-D one a 2-D answer."""
    with pytest.raises(ValueError, match="survival"):
        merged_survival(model, retrieved, 0.5)
