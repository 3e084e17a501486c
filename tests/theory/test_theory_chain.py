"""Chain speculative decoding closed forms vs. Leviathan et al. Table 1 and vs. the real sampler."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from theory import chain
from theory.multidraft import single_draft_acceptance

# Leviathan et al. (2023), Table 1 (c = 0 for speed, c_hat = 0 for ops): (alpha, gamma, speed, ops)
LEVIATHAN_TABLE1 = [(0.8, 5, 3.69, 1.63), (0.9, 10, 6.86, 1.60), (0.6, 2, 1.96, 1.53)]


@pytest.mark.parametrize("alpha,gamma,speed,ops", LEVIATHAN_TABLE1)
def test_leviathan_table1(alpha, gamma, speed, ops):
    assert round(chain.speedup(alpha, gamma, 0.0), 2) == speed
    assert round(chain.ops_factor(alpha, gamma, 0.0), 2) == ops


def test_expected_tokens_limits_and_sum_form():
    assert chain.expected_tokens(1.0, 7) == 8.0
    assert chain.expected_tokens(0.0, 7) == 1.0
    assert chain.expected_tokens(0.5, 0) == 1.0
    for alpha in (0.1, 0.5, 0.99, 1 - 1e-13):
        for gamma in (1, 3, 10):
            direct = sum(alpha**i for i in range(gamma + 1))
            assert chain.expected_tokens(alpha, gamma) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("alpha", [1e-300, 1e-160, 1e-17, 1e-12, 1e-6, 0.3, 1 - 1e-12, 1.0])
@pytest.mark.parametrize("gamma", [1, 2, 64, 200])
def test_accepted_keeps_relative_precision_at_the_edges(alpha, gamma):
    """E[tau] = sum_{i=1..gamma} alpha^i in exact rational arithmetic, to 1e-13 relative: tiny alphas lost
    it through expected_tokens - 1 (1.00009e-12 at alpha 1e-12, 0 at 1e-17), and so did the inversion of
    an accepted fraction through 1 + fraction * gamma tokens."""
    from fractions import Fraction
    exact = float(sum(Fraction(alpha) ** i for i in range(1, gamma + 1)))
    assert chain.expected_accepted(alpha, gamma) == pytest.approx(exact, rel=1e-13, abs=0.0)
    assert chain.accepted_fraction(alpha, gamma) == pytest.approx(exact / gamma, rel=1e-13, abs=0.0)
    back = chain.alpha_from_accepted_fraction(chain.accepted_fraction(alpha, gamma), gamma)
    assert back == pytest.approx(alpha, rel=1e-9, abs=0.0)
    assert chain.expected_accepted(alpha, 0) == 0.0


def test_expected_tokens_vectorised():
    alphas = np.array([0.0, 0.3, 1.0])
    out = chain.expected_tokens(alphas, 4)
    assert out.shape == (3,)
    assert out[0] == 1.0 and out[2] == 5.0
    assert out[1] == pytest.approx(chain.expected_tokens(0.3, 4))


def test_positional_equals_iid_when_constant():
    assert chain.expected_tokens_positional([0.7] * 6) == pytest.approx(chain.expected_tokens(0.7, 6))
    assert chain.expected_tokens_positional([0.5, 0.0, 1.0]) == pytest.approx(1.5)
    assert chain.expected_tokens_positional([]) == 1.0


def test_optimal_gamma_matches_exhaustive_and_edge_cases():
    for alpha, c in [(0.8, 0.05), (0.6, 0.2), (0.95, 0.01), (0.3, 0.5)]:
        gamma, best = chain.optimal_gamma(alpha, c)
        values = [chain.speedup(alpha, g, c) for g in range(65)]
        assert best == pytest.approx(max(values))
        assert gamma == int(np.argmax(values))
    assert chain.optimal_gamma(0.8, 0.0, max_gamma=12)[0] == 12
    assert chain.optimal_gamma(0.0, 0.1) == (0, 1.0)


@settings(max_examples=60, deadline=None)
@given(alpha=st.floats(0.0, 1.0), gamma=st.integers(1, 40))
def test_conversions_round_trip(alpha, gamma):
    tokens = chain.expected_tokens(alpha, gamma)
    assert chain.alpha_from_expected_tokens(tokens, gamma) == pytest.approx(alpha, abs=1e-8)
    frac = chain.accepted_fraction(alpha, gamma)
    assert 0.0 <= frac <= 1.0
    assert chain.alpha_from_accepted_fraction(frac, gamma) == pytest.approx(alpha, abs=1e-8)
    assert chain.expected_accepted(alpha, gamma) == pytest.approx(tokens - 1.0)


@settings(max_examples=40, deadline=None)
@given(alpha=st.floats(0.0, 1.0), gamma=st.integers(0, 30), c=st.floats(0.0, 2.0))
def test_speedup_and_ops_are_consistent(alpha, gamma, c):
    s = chain.speedup(alpha, gamma, c)
    assert s == pytest.approx(chain.expected_tokens(alpha, gamma) / (gamma * c + 1))
    # ops factor with c_hat = 0 is (gamma + 1) target-token evaluations per produced token
    assert chain.ops_factor(alpha, gamma, 0.0) >= 1.0 - 1e-12


def test_sampler_matches_closed_form_and_is_lossless():
    rng = np.random.default_rng(1234)
    p = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
    q = np.array([0.3, 0.3, 0.1, 0.1, 0.2])
    alpha = single_draft_acceptance(p, q)
    gamma, steps = 4, 200_000
    tokens, first = chain.sample_chain_steps(p, q, gamma, steps, rng)
    expected = chain.expected_tokens(alpha, gamma)
    stderr = tokens.std() / np.sqrt(steps)
    assert abs(tokens.mean() - expected) < 5 * stderr
    freq = np.bincount(first, minlength=p.size) / steps
    assert np.abs(freq - p).max() < 5 * np.sqrt(0.25 / steps)


@pytest.mark.parametrize("p,q", [([0.5, 0.5], [0.5, 0.5]),              # alpha = 1
                                 ([1.0, 0.0], [0.0, 1.0]),              # alpha = 0
                                 ([1 - 1e-12, 1e-12], [1e-12, 1 - 1e-12]),  # alpha within 1e-12 of 0
                                 ([0.7, 0.3, 0.0], [0.2, 0.3, 0.5])])   # zeros on either side
@pytest.mark.parametrize("gamma", [0, 1, 64])
def test_sampler_matches_closed_form_at_the_edges(p, q, gamma):
    """The real speculative sampler at alpha 0, ~0 and 1, gamma 0, 1 and 64: mean tokens per step within 5
    standard errors of expected_tokens (exact where the variance is 0) and the first token distributed as p.
    gamma = 0 raised ValueError in the sampler (argmin of an empty row)."""
    steps = 40_000
    tokens, first = chain.sample_chain_steps(p, q, gamma, steps, np.random.default_rng(gamma + 7))
    expected = chain.expected_tokens(single_draft_acceptance(p, q), gamma)
    assert abs(tokens.mean() - expected) <= 5 * tokens.std() / np.sqrt(steps) + 1e-9
    freq = np.bincount(first, minlength=len(p)) / steps
    assert np.abs(freq - np.asarray(p)).max() < 5 * np.sqrt(0.25 / steps)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="alpha"):
        chain.expected_tokens(1.5, 3)
    with pytest.raises(ValueError, match="gamma"):
        chain.expected_tokens(0.5, -1)
    with pytest.raises(ValueError, match="c"):
        chain.speedup(0.5, 3, -0.1)
    with pytest.raises(ValueError, match="tokens_per_step"):
        chain.alpha_from_expected_tokens(7.0, 3)
    with pytest.raises(ValueError, match="betas"):
        chain.expected_tokens_positional([0.5, 1.2])
    with pytest.raises(ValueError, match="p must sum to 1"):
        chain.sample_chain_steps([0.5, 0.6], [0.5, 0.5], 2, 10, np.random.default_rng(0))
