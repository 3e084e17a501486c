"""Serving-level policies: SmartSpec gamma, TETRIS allocation, SpecDec++ stopping, PEARL chain."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from theory.chain import expected_tokens, speedup
from theory.policies import (expected_accepted_for_counts, goodput_optimal_gamma, pearl, pearl_optimal_gamma,
                             simulate_pearl, specdecpp_length, specdecpp_optimal_threshold, stopping_model,
                             tetris_allocate, threshold_policy_value)
from theory.policies.specdecpp import all_policies_best_rate, evaluate_policy, optimal_rate


# ---------------------------------------------------------------- SmartSpec
def linear_step_time(batch, gamma):
    return 0.015 + 0.0004 * batch * (gamma + 1) + 0.002 * gamma


def test_goodput_gamma_is_exhaustive_argmax():
    alphas = np.array([0.9, 0.7, 0.5, 0.85])
    choice = goodput_optimal_gamma(alphas, linear_step_time, max_gamma=12)
    rates = [sum(expected_tokens(a, g) for a in alphas) / linear_step_time(4, g) for g in range(13)]
    assert choice.gamma == int(np.argmax(rates))
    assert choice.tokens_per_s == pytest.approx(max(rates))
    # more expensive drafting => shorter speculation; useless drafts => no speculation
    costly = goodput_optimal_gamma(alphas, lambda b, g: 0.015 + 0.01 * g, max_gamma=12)
    assert costly.gamma < choice.gamma
    assert goodput_optimal_gamma([0.0, 0.0], linear_step_time).gamma == 0


def test_goodput_matches_monte_carlo_of_the_batch():
    rng = np.random.default_rng(8)
    alphas = np.array([0.9, 0.6, 0.75])
    choice = goodput_optimal_gamma(alphas, linear_step_time, max_gamma=8)
    steps = 20_000
    for gamma in (0, 2, choice.gamma):
        accepted = rng.random((steps, alphas.size, gamma)) < alphas[None, :, None]
        leading = np.where(accepted.all(axis=2), gamma, np.argmin(accepted, axis=2)) if gamma else 0
        tokens = (np.asarray(leading) + 1).sum(axis=-1) if gamma else np.full(steps, alphas.size)
        mc_rate = tokens.mean() / linear_step_time(alphas.size, gamma)
        stderr = tokens.std() / np.sqrt(steps) / linear_step_time(alphas.size, gamma)
        assert abs(mc_rate - choice.goodput_tokens_per_s[gamma]) < 5 * stderr + 1e-9


# ---------------------------------------------------------------- TETRIS
def brute_force_allocation(rows, budget):
    best = 0.0
    for counts in itertools.product(*[range(len(r) + 1) for r in rows]):
        if sum(counts) <= budget:
            best = max(best, expected_accepted_for_counts(rows, counts))
    return best


def test_tetris_greedy_equals_brute_force():
    rng = np.random.default_rng(21)
    for _ in range(150):
        rows = [rng.choice([0.0, 0.3, 0.7, 0.9, 1.0, rng.random()], size=int(rng.integers(0, 5))).tolist()
                for _ in range(int(rng.integers(1, 5)))]
        budget = int(rng.integers(0, 10))
        counts, value = tetris_allocate(rows, budget)
        assert counts.sum() <= budget
        assert all(0 <= c <= len(r) for c, r in zip(counts, rows))
        assert value == pytest.approx(expected_accepted_for_counts(rows, counts))
        assert value == pytest.approx(brute_force_allocation(rows, budget), abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.lists(st.floats(0.0, 1.0), max_size=6), min_size=1, max_size=5),
       budget=st.integers(0, 12))
def test_tetris_value_monotone_in_budget(rows, budget):
    _, value = tetris_allocate(rows, budget)
    _, more = tetris_allocate(rows, budget + 1)
    assert more >= value - 1e-12


def test_tetris_monte_carlo_of_verification():
    rng = np.random.default_rng(4)
    rows = [[0.9, 0.9, 0.8, 0.7], [0.6, 0.5, 0.5], [0.95, 0.95, 0.95, 0.95, 0.9]]
    counts, value = tetris_allocate(rows, 7)
    trials = 40_000
    total = np.zeros(trials)
    for row, c in zip(rows, counts):
        coins = rng.random((trials, c)) < np.asarray(row[:c])
        total += np.where(coins.all(axis=1), c, np.argmin(coins, axis=1)) if c else 0
    assert abs(total.mean() - value) < 5 * total.std() / np.sqrt(trials)


# ---------------------------------------------------------------- SpecDec++
def test_specdecpp_length_rule():
    assert specdecpp_length([0.9, 0.9, 0.9, 0.5, 0.9], 0.3) == 4  # 1-0.729=0.271 <= 0.3; then 0.64 > 0.3
    assert specdecpp_length([0.9, 0.9, 0.9], 1.0) == 3  # never stops early
    assert specdecpp_length([0.99, 0.99], 0.0) == 1  # first token is always proposed
    assert specdecpp_length([1.0, 1.0, 1.0], 0.0) == 3


MODEL_ARGS = dict(values=[0.95, 0.7, 0.3], weights=[0.5, 0.3, 0.2], draft_token_s=0.002,
                  verify_base_s=0.02, verify_token_s=0.0005, max_len=10)


def test_optimal_threshold_attains_dp_optimum_and_beats_every_threshold():
    choice = specdecpp_optimal_threshold(**MODEL_ARGS)
    assert choice.tokens_per_s == pytest.approx(choice.optimal_rate, rel=1e-9)
    model = stopping_model(**MODEL_ARGS)
    for h in np.linspace(0.0, 1.0, 41):
        assert threshold_policy_value(model, float(h)).tokens_per_s <= choice.optimal_rate * (1 + 1e-9)


@pytest.mark.parametrize("values,weights,draft_s,verify_token_s", [
    ([0.9, 0.4], [0.6, 0.4], 0.01, 0.001),
    ([0.98, 0.5], [0.7, 0.3], 0.002, 0.0),
    ([0.8, 0.2], [0.5, 0.5], 0.03, 0.002),
])
def test_threshold_rule_is_optimal_among_all_policies(values, weights, draft_s, verify_token_s):
    model = stopping_model(values, weights, draft_s, 0.03, verify_token_s, 4)
    brute = all_policies_best_rate(model)
    assert optimal_rate(model) == pytest.approx(brute, rel=1e-9)
    choice = specdecpp_optimal_threshold(values, weights, draft_s, 0.03, verify_token_s, 4)
    assert choice.tokens_per_s == pytest.approx(brute, rel=1e-9)


@pytest.mark.parametrize("values,weights", [([0.0], [1.0]), ([0.0, 0.0], [0.5, 0.5]), ([1e-300], [1.0]),
                                            ([0.0, 1.0], [0.5, 0.5]), ([1.0], [1.0])])
def test_optimal_threshold_at_predictions_0_and_1(values, weights):
    """Predictions of exactly 0 (abar = 0) and 1: the returned threshold must attain the optimum of the
    exhaustive policy search (abar = 0 returned h = 1, which drafts max_len useless tokens)."""
    model = stopping_model(values, weights, 0.01, 1.0, 0.001, 3)
    brute = all_policies_best_rate(model)
    choice = specdecpp_optimal_threshold(values, weights, 0.01, 1.0, 0.001, 3)
    assert choice.optimal_rate == pytest.approx(brute, rel=1e-9)
    assert choice.tokens_per_s == pytest.approx(brute, rel=1e-9)


@pytest.mark.parametrize("values,weights", [([1.0, 0.0], [0.5, 0.5]), ([1.0, 0.5], [0.5, 0.5]), ([1.0], [1.0])])
def test_no_threshold_is_optimal_where_a_prediction_is_1_and_drafting_never_pays(values, weights):
    """Draft passes 10x the verify pass: stopping after the first token is optimal (h* < 0), but the rule
    never stops where pi = 1. The choice is h = 0, the best threshold, and it reports the rule's own rate,
    below the optimum (the module docstring said the threshold rule always attains it)."""
    args = (values, weights, 10.0, 1.0, 0.0, 3)
    model = stopping_model(*args)
    brute = all_policies_best_rate(model)
    choice = specdecpp_optimal_threshold(*args)
    assert choice.optimal_rate == pytest.approx(brute, rel=1e-9)
    assert choice.threshold == 0.0
    assert choice.tokens_per_s == pytest.approx(threshold_policy_value(model, 0.0).tokens_per_s, rel=1e-12)
    assert choice.tokens_per_s < 0.8 * brute
    assert max(threshold_policy_value(model, float(h)).tokens_per_s for h in np.linspace(0, 1, 21)) \
        == pytest.approx(choice.tokens_per_s, rel=1e-12)
    first_only = evaluate_policy(model, lambda depth, counts: True)   # the optimum: one draft token
    assert first_only.tokens_per_s == pytest.approx(brute, rel=1e-9)


def test_threshold_policy_value_matches_monte_carlo():
    rng = np.random.default_rng(17)
    model = stopping_model(**MODEL_ARGS)
    h = 0.55
    exact = threshold_policy_value(model, h)
    rounds = 12_000
    preds = rng.choice(model.values, size=(rounds, model.max_len), p=model.weights)
    coins = rng.random((rounds, model.max_len)) < preds
    tokens = np.empty(rounds)
    seconds = np.empty(rounds)
    for r in range(rounds):
        length = specdecpp_length(preds[r], h)
        run = coins[r, :length]
        tokens[r] = 1 + (length if run.all() else int(np.argmin(run)))
        seconds[r] = model.verify_base_s + length * model.token_cost_s
    assert abs(tokens.mean() - exact.tokens_per_round) < 5 * tokens.std() / np.sqrt(rounds)
    assert abs(seconds.mean() - exact.seconds_per_round) < 5 * seconds.std() / np.sqrt(rounds)


# ---------------------------------------------------------------- PEARL
@pytest.mark.parametrize("alpha,gamma,c", [(0.8, 5, 0.2), (0.6, 3, 0.3), (0.9, 8, 0.1), (0.7, 4, 0.5),
                                           (0.85, 6, 0.05), (0.5, 1, 0.3)])
def test_pearl_chain_matches_monte_carlo(alpha, gamma, c):
    phases = 60_000
    tokens, elapsed = simulate_pearl(alpha, gamma, c, phases, np.random.default_rng(int(alpha * 100) + gamma))
    assert tokens / elapsed == pytest.approx(pearl(alpha, gamma, c).speedup, rel=0.01)


def test_pearl_limits_and_comparison_with_chain():
    assert pearl(0.0, 5, 0.2).speedup == pytest.approx(1.0)
    assert pearl(1.0, 5, 0.2).speedup == pytest.approx(5.0)
    assert pearl(1.0, 5, 0.5).speedup == pytest.approx(2.0)  # drafting-bound: gamma / (gamma c)
    for alpha in (0.5, 0.7, 0.9):
        assert pearl(alpha, 5, 0.2).speedup > speedup(alpha, 5, 0.2)  # overlap beats serial drafting
    gamma, best = pearl_optimal_gamma(0.8, 0.2, 20)
    assert best == pytest.approx(max(pearl(0.8, g, 0.2).speedup for g in range(1, 21)))
    assert pearl(0.8, gamma, 0.2).speedup == pytest.approx(best)


# ---------------------------------------------------------------- bad input
def test_pearl_refuses_a_free_verify_pass():
    """verify = 0 with alpha 1 and c 0 made every phase take 0 s: the speedup raised ZeroDivisionError."""
    with pytest.raises(ValueError, match="verify must be > 0"):
        pearl(1.0, 3, 0.0, 0.0)
    with pytest.raises(ValueError, match="verify must be > 0"):
        simulate_pearl(1.0, 3, 0.0, 10, np.random.default_rng(0), verify=0.0)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="^accept_rates"):
        goodput_optimal_gamma([1.2], linear_step_time)
    with pytest.raises(ValueError, match="^step_time_s"):
        goodput_optimal_gamma([0.5], lambda b, g: 0.0)
    with pytest.raises(ValueError, match="^budget"):
        tetris_allocate([[0.5]], -1)
    with pytest.raises(ValueError, match=r"^accept_rows\[1\]"):
        tetris_allocate([[0.5], [1.5]], 2)
    with pytest.raises(ValueError, match="^threshold"):
        specdecpp_length([0.5], 1.5)
    with pytest.raises(ValueError, match="^predicted_accept"):
        specdecpp_length([], 0.5)
    with pytest.raises(ValueError, match="^weights"):
        specdecpp_optimal_threshold([0.5, 0.9], [0.5, 0.6], 0.01, 0.02, 0.0, 4)
    with pytest.raises(ValueError, match="^verify_base_s"):
        specdecpp_optimal_threshold([0.5], [1.0], 0.01, 0.0, 0.0, 4)
    with pytest.raises(ValueError, match="^gamma"):
        pearl(0.5, 0, 0.2)
    with pytest.raises(ValueError, match="^alpha"):
        pearl(-0.1, 3, 0.2)
