"""Chain (single-draft) speculative decoding: closed forms from Leviathan et al. (2023).

Notation: ``p`` = target distribution, ``q`` = draft distribution, ``gamma`` = draft tokens proposed per
step, ``c`` = cost of one draft forward divided by the cost of one target forward (walltime),
``c_hat`` = the same ratio in arithmetic operations.

Acceptance-rate definitions (papers and serving engines report different quantities; say which one):

* **per-token alpha** (``alpha``): the probability that one draft token is accepted given that all
  previous draft tokens of the step were accepted. For one context it is ``beta = sum(min(p, q))``
  (:func:`theory.multidraft.single_draft_acceptance`); Leviathan's ``alpha = E[beta]`` over contexts and
  the closed forms below treat the betas of successive positions as i.i.d. (their assumption; exact only
  when they are). This is what every function in this module takes.
* **accepted length tau**: accepted draft tokens per step, *excluding* the bonus token.
  ``E[tau] = alpha (1 - alpha^gamma) / (1 - alpha)`` (:func:`expected_accepted`).
* **tokens per step** (a.k.a. "mean accepted length" *with* bonus, Medusa/EAGLE's "tau" in some papers):
  ``E[tau] + 1 = (1 - alpha^(gamma+1)) / (1 - alpha)`` (:func:`expected_tokens`).
* **accepted fraction** (vLLM's "draft acceptance rate" = accepted / drafted tokens):
  ``E[tau] / gamma`` (:func:`accepted_fraction`). It is *not* alpha: it falls with gamma for fixed alpha.

:func:`alpha_from_expected_tokens` and :func:`alpha_from_accepted_fraction` invert the last two
(both are strictly increasing in alpha for gamma >= 1, so the inverse is unique).
"""
from __future__ import annotations

import numpy as np

from theory import _checks


def _alpha_array(alpha, name: str = "alpha") -> np.ndarray:
    arr = np.asarray(alpha, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
        raise ValueError(f"{name} must be a probability (or array of probabilities) in [0, 1]")
    return arr


def _scalar_or_array(values: np.ndarray):
    return float(values) if values.ndim == 0 else values


def expected_tokens(alpha, gamma: int):
    """Expected tokens generated per step (accepted drafts + the bonus/correction token).

    ``(1 - alpha^(gamma+1)) / (1 - alpha)``, with the limit ``gamma + 1`` at ``alpha = 1``. Accepts a
    scalar or an array of alphas (vectorised); returns a float for scalar input. The subtraction is done
    with ``expm1``/``log1p`` so that alphas within 1e-12 of 1 do not lose precision.
    """
    gamma = _checks.non_negative_int(gamma, "gamma")
    a = _alpha_array(alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a = np.log(a)
        value = np.expm1((gamma + 1) * log_a) / np.expm1(log_a)
    value = np.where(a >= 1.0, float(gamma + 1), np.where(a <= 0.0, 1.0, value))
    return _scalar_or_array(np.asarray(value, dtype=np.float64))


def expected_accepted(alpha, gamma: int):
    """Expected accepted draft tokens per step, excluding the bonus token: ``E[tau]``.

    ``alpha (1 - alpha^gamma) / (1 - alpha) = alpha * expected_tokens(alpha, gamma - 1)``: the product keeps
    the relative precision of tiny alphas, which ``expected_tokens(alpha, gamma) - 1`` loses (it gave
    1.00009e-12 at alpha = 1e-12 and 0 below 1.1e-16).
    """
    gamma = _checks.non_negative_int(gamma, "gamma")
    a = _alpha_array(alpha)
    if gamma == 0:
        return _scalar_or_array(np.zeros_like(a))
    return _scalar_or_array(np.asarray(a * expected_tokens(a, gamma - 1), dtype=np.float64))


def accepted_fraction(alpha, gamma: int):
    """Accepted / drafted tokens (vLLM's "acceptance rate"): ``E[tau] / gamma``; gamma must be >= 1."""
    gamma = _checks.positive_int(gamma, "gamma")
    return expected_accepted(alpha, gamma) / gamma


def expected_tokens_positional(betas) -> float:
    """Expected tokens per step when acceptance depends on the position (non-i.i.d. chain).

    ``betas[i]`` is the probability that draft token ``i+1`` is accepted given that tokens ``1..i`` were.
    Result: ``1 + sum_i prod_{j<=i} betas[j]`` (the 1 is the bonus/correction token). With all betas
    equal to alpha this equals :func:`expected_tokens` (alpha, len(betas)).
    """
    b = _checks.probabilities(betas, "betas")
    return float(1.0 + np.cumprod(b).sum())


def speedup(alpha, gamma: int, c: float):
    """Expected walltime improvement factor (Leviathan et al., Theorem 3.8).

    ``(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1))``: tokens per step divided by the cost of a step
    (gamma draft forwards of relative cost ``c`` plus one target forward), relative to one target
    forward per token. Assumes the target's verify forward of gamma+1 tokens costs one decode forward.
    """
    c = _checks.non_negative_float(c, "c")
    gamma = _checks.non_negative_int(gamma, "gamma")
    return expected_tokens(alpha, gamma) / (gamma * c + 1.0)


def ops_factor(alpha, gamma: int, c_hat: float):
    """Expected factor of increase in arithmetic operations (Leviathan et al., Theorem 3.11).

    ``(1 - alpha)(gamma c_hat + gamma + 1) / (1 - alpha^(gamma+1))``: each step runs the target on
    gamma+1 tokens and the draft gamma times (each ``c_hat`` of a target token's ops), per token produced.
    """
    c_hat = _checks.non_negative_float(c_hat, "c_hat")
    gamma = _checks.non_negative_int(gamma, "gamma")
    return (gamma * c_hat + gamma + 1.0) / expected_tokens(alpha, gamma)


def optimal_gamma(alpha: float, c: float, max_gamma: int = 64) -> tuple[int, float]:
    """Speculation length in ``0..max_gamma`` maximising :func:`speedup`; returns ``(gamma, speedup)``.

    ``gamma = 0`` (no speculation, speedup 1) is included so a useless drafter is reported as such.
    Exhaustive over the integers (the speedup is unimodal in gamma but exhaustive search is exact and
    cheap); ties go to the smallest gamma. With ``c = 0`` the speedup grows with gamma, so the answer is
    ``max_gamma`` whenever ``0 < alpha``.
    """
    alpha = _checks.probability(alpha, "alpha")
    c = _checks.non_negative_float(c, "c")
    max_gamma = _checks.non_negative_int(max_gamma, "max_gamma")
    gammas = np.arange(max_gamma + 1)
    values = np.array([speedup(alpha, int(g), c) for g in gammas])
    best = int(np.argmax(values))  # argmax returns the first maximum: the smallest gamma on ties
    return best, float(values[best])


def alpha_from_expected_tokens(tokens_per_step: float, gamma: int) -> float:
    """Per-token alpha whose :func:`expected_tokens` (alpha, gamma) equals ``tokens_per_step``.

    ``tokens_per_step`` must lie in ``[1, gamma + 1]``. Solved with Brent's method to 1e-14.
    """
    gamma = _checks.positive_int(gamma, "gamma")
    t = _checks.non_negative_float(tokens_per_step, "tokens_per_step")
    if not 1.0 <= t <= gamma + 1.0:
        raise ValueError(f"tokens_per_step must be in [1, gamma+1] = [1, {gamma + 1}], got {t!r}")
    if t == 1.0:
        return 0.0
    if t == gamma + 1.0:
        return 1.0
    from scipy.optimize import brentq   # here: scipy.optimize costs the modules that only price chains 0.3 s

    return float(brentq(lambda a: expected_tokens(a, gamma) - t, 0.0, 1.0, xtol=1e-14))


def alpha_from_accepted_fraction(fraction: float, gamma: int) -> float:
    """Per-token alpha whose :func:`accepted_fraction` (alpha, gamma) equals ``fraction`` in [0, 1].

    Solved on the accepted-tokens scale (not through ``1 + fraction * gamma`` tokens, which rounds a
    fraction below 1.1e-16 to alpha 0), to an absolute tolerance of 1e-14 times ``fraction * gamma``,
    an upper bound on alpha (``E[tau] >= alpha``), so tiny fractions keep their relative precision;
    below 1e-150 accepted tokens alpha is ``fraction * gamma`` itself (``alpha^2`` is beyond precision).
    """
    gamma = _checks.positive_int(gamma, "gamma")
    f = _checks.probability(fraction, "fraction")
    if f == 0.0:
        return 0.0
    if f == 1.0:
        return 1.0
    from scipy.optimize import brentq

    accepted = f * gamma
    if accepted < 1e-150:   # E[tau] = alpha (1 + alpha + ...) = alpha to double precision (alpha < 1e-150)
        return accepted
    return float(brentq(lambda a: expected_accepted(a, gamma) - accepted, 0.0, min(1.0, accepted),
                        xtol=1e-14 * min(1.0, accepted)))


def sample_chain_steps(p, q, gamma: int, steps: int, rng: np.random.Generator):
    """Run ``steps`` independent steps of Leviathan's speculative sampling; returns (tokens, first).

    Every position uses the same target ``p`` and draft ``q`` (a stationary toy model, so the betas are
    i.i.d. with ``alpha = sum(min(p, q))``). Per step: draw gamma drafts from q; accept draft i with
    probability ``min(1, p(x)/q(x))`` while all earlier ones were accepted; at the first rejection emit a
    token from the residual ``norm(max(p - q, 0))``; if all are accepted emit a bonus token from p.
    Returns ``tokens_per_step`` (int array, accepted + 1) and ``first_token`` (the first emitted token of
    each step, which must be distributed as p: a losslessness check). Vectorised over steps.
    """
    p = _checks.distribution(p, "p")
    q = _checks.distribution(q, "q")
    _checks.same_support(p, q)
    gamma = _checks.non_negative_int(gamma, "gamma")
    steps = _checks.positive_int(steps, "steps")
    rng = _checks.generator(rng)
    vocab = p.size
    drafts = rng.choice(vocab, size=(steps, gamma), p=q) if gamma else np.zeros((steps, 0), dtype=int)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(q > 0, np.minimum(1.0, p / q), 1.0)
    accepted = rng.random((steps, gamma)) < ratio[drafts]
    # number of leading accepted drafts per step
    # (gamma = 0: argmin of an empty row raised ValueError; no drafts, nothing accepted)
    n_accepted = (np.where(accepted.all(axis=1), gamma, np.argmin(accepted, axis=1)) if gamma
                  else np.zeros(steps, dtype=np.int64))
    residual = np.maximum(p - q, 0.0)
    residual = residual / residual.sum() if residual.sum() > 0 else p
    correction = rng.choice(vocab, size=steps, p=residual)
    bonus = rng.choice(vocab, size=steps, p=p)
    tail = np.where(n_accepted == gamma, bonus, correction)
    first = np.where(n_accepted > 0, drafts[:, 0] if gamma else tail, tail)
    return n_accepted + 1, first
