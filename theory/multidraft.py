"""Multi-draft verification: exact acceptance of the lossless verifiers used by real systems.

Setting: the drafter proposes ``n`` candidate tokens for the same position; the verifier outputs one
token whose distribution must be exactly the target ``p`` (lossless). **Acceptance** is the probability
that the output is one of the drafts (then decoding can continue along that draft's branch).

Schemes (``SCHEMES``); the sampler of each lives in :mod:`theory.multidraft_sampling`:

* ``"rrs"`` — recursive rejection sampling with i.i.d. drafts from q (SpecInfer's multi-step
  speculative sampling; MCSD). Round i tests draft i against the current residual ``p_{i-1}``: accept with
  probability ``min(1, p_{i-1}(x)/q(x))``; on rejection ``p_i = norm(max(p_{i-1} - q, 0))``. After n
  rejections output a sample of ``p_n``. The rounds' draws are independent, so
  ``acceptance = 1 - prod_i (1 - beta_i)`` with ``beta_i = sum(min(p_{i-1}, q))``. A rejected draft x
  has ``p_{i-1}(x) < q(x)`` hence ``p_i(x) = 0`` (and stays 0), so a residual sample never equals a draft:
  "some round accepted" and "output is a draft" are the same event.
* ``"rrs_wor"`` — the same with drafts drawn *without replacement* (RSD, Sequoia): draft i comes from
  ``q_{i-1}`` = q with the earlier drafts removed, renormalised, and is tested against ``p_{i-1}`` with
  ratio ``p_{i-1}/q_{i-1}``; on rejection ``p_i = norm(max(p_{i-1} - q_{i-1}, 0))``. ``q_i`` depends on
  which tokens were rejected, so the exact acceptance sums over ordered rejected prefixes
  (cost ~ m^(n-1) residual evaluations, m = tokens with q > 0); small vocabularies only.
* ``"kseq"`` — SpecTr's k-sequential selection with i.i.d. drafts: every draft is tested against the
  *same* p with ratio ``min(1, p/(rho q))``; after n rejections output from the residual
  ``norm(max(p - min(q, p/rho) f, 0))``, ``f = (1 - (1-beta_rho)^n)/beta_rho``,
  ``beta_rho = sum(min(q, p/rho))``. It is lossless iff ``1 - (1-beta_rho)^n <= sum(min(rho q, p))``
  (proof: the accept path puts mass ``min(q, p/rho) f`` on y; this is <= p(y) where ``q >= p/rho``
  iff ``f <= rho``, and where ``q < p/rho`` then also, since ``p/q > rho``). Both sides are monotone in
  rho (left decreasing, right increasing), so the smallest valid ``rho`` in ``[1, n]`` maximises
  acceptance ``1 - (1-beta_rho)^n``; :func:`kseq_rho` solves for it exactly on the piecewise-linear
  segments of ``sum(min(rho q, p))``. Here the residual can (in principle) hit a rejected draft, and
  :func:`acceptance` counts that too (the closed form adds the overlap term; it vanishes at the optimal
  rho when the constraint is tight).
* ``"naive"`` — sample y ~ p and accept iff y equals some draft (SpecInfer's "naive sampling"):
  ``sum_y p(y) (1 - (1 - q(y))^n)``. Lossless trivially; the baseline.

The best possible acceptance over *all* lossless verifiers is in :mod:`theory.multidraft_optimal`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from theory import _checks

SCHEMES = ("rrs", "rrs_wor", "kseq", "naive")

#: Upper bound on residual evaluations (recursion nodes x vocabulary) for the exact ``rrs_wor`` sum.
RRS_WOR_MAX_WORK = 50_000_000


def check_pair(p, q) -> tuple[np.ndarray, np.ndarray]:
    """Validate (p, q) as two probability vectors over the same vocabulary."""
    p = _checks.distribution(p, "p")
    q = _checks.distribution(q, "q")
    _checks.same_support(p, q)
    return p, q


def single_draft_acceptance(p, q) -> float:
    """``beta = sum(min(p, q))``: acceptance of one draft under standard speculative sampling."""
    p, q = check_pair(p, q)
    return float(np.minimum(p, q).sum())


def _normalised_residual(target: np.ndarray, draft: np.ndarray) -> tuple[np.ndarray, float]:
    """(norm(max(target - draft, 0)), beta = sum(min(target, draft))). Residual = target if beta == 1."""
    beta = float(np.minimum(target, draft).sum())
    rest = np.maximum(target - draft, 0.0)
    mass = rest.sum()
    if mass <= 0.0:
        return target.copy(), min(beta, 1.0)
    return rest / mass, min(beta, 1.0)


def rrs_residuals(p: np.ndarray, q: np.ndarray, n: int) -> tuple[list[np.ndarray], list[float]]:
    """Residuals ``[p_0 = p, p_1, ..., p_n]`` and per-round acceptances ``[beta_1..beta_n]`` of rrs."""
    residuals, betas = [p], []
    for _ in range(n):
        nxt, beta = _normalised_residual(residuals[-1], q)
        residuals.append(nxt)
        betas.append(beta)
    return residuals, betas


@dataclass(frozen=True)
class KSeqParameters:
    """Everything the k-sequential verifier needs: rho, beta_rho, per-draft accept ratio, residual."""

    rho: float
    beta: float
    accept_ratio: np.ndarray  # min(1, p / (rho q)) per token (1 where q == 0; never drafted)
    residual: np.ndarray  # output distribution after n rejections


def kseq_rho(p, q, n: int) -> float:
    """Smallest rho in [1, n] with ``1 - (1 - beta_rho)^n <= sum(min(rho q, p))`` (SpecTr's optimal rho).

    ``H(rho) = sum(min(rho q, p)) = A rho + B`` on each interval between consecutive ratios ``p/q``
    (A = q-mass of tokens with ``p/q > rho``, B = p-mass of the others) and ``beta_rho = H(rho)/rho``.
    The constraint gap is non-decreasing in rho, so we locate the first breakpoint where it holds and
    solve the scalar equation on that interval with Brent's method (xtol 1e-15).
    """
    p, q = check_pair(p, q)
    n = _checks.positive_int(n, "n")
    return _kseq_rho(p, q, n)


def _kseq_rho(p: np.ndarray, q: np.ndarray, n: int) -> float:
    if n == 1:
        return 1.0
    mask = q > 0
    ratios = p[mask] / q[mask]
    order = np.argsort(ratios)
    r_sorted = ratios[order]
    p_cum = np.concatenate(([0.0], np.cumsum(p[mask][order])))
    q_tail = np.concatenate((np.cumsum(q[mask][order][::-1])[::-1], [0.0]))

    def gap(rho, k):
        # k = number of tokens with ratio <= rho (they contribute p, the others contribute rho q)
        h = q_tail[k] * rho + p_cum[k]
        beta = np.minimum(h / rho, 1.0)
        return h - (1.0 - (1.0 - beta) ** n)

    def k_at(rho):
        return np.searchsorted(r_sorted, rho, side="right")

    if gap(1.0, k_at(1.0)) >= 0.0:
        return 1.0
    inner = r_sorted[(r_sorted > 1.0) & (r_sorted < n)]
    points = np.concatenate(([1.0], inner, [float(n)]))
    feasible = np.flatnonzero(gap(points, k_at(points)) >= 0.0)
    if feasible.size:  # always, by Bernoulli's inequality the gap is >= 0 at rho = n
        hi_index = int(feasible[0])
        lo, hi = float(points[hi_index - 1]), float(points[hi_index])
        k = int(k_at(lo))  # A and B are constant on (lo, hi)
        if gap(hi, k) <= 0.0:
            # hi is a ratio p/q where this interval's formula meets the next one's only up to rounding
            # (q * (p / q) != p in floats): the gap is >= 0 there with hi's own k, so the root is hi
            return hi
        return float(brentq(lambda rho: float(gap(rho, k)), lo, hi, xtol=1e-15))
    return float(n)  # unreachable: Bernoulli's inequality makes the gap >= 0 at rho = n


def kseq_parameters(p: np.ndarray, q: np.ndarray, n: int) -> KSeqParameters:
    """k-sequential parameters at the optimal rho (inputs already validated)."""
    rho = _kseq_rho(p, q, n)
    capped = np.minimum(q, p / rho)
    beta = float(capped.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        accept_ratio = np.where(q > 0, np.minimum(1.0, p / (rho * q)), 1.0)
    if beta <= 0.0:
        return KSeqParameters(rho, 0.0, accept_ratio, p.copy())
    f = (1.0 - (1.0 - min(beta, 1.0)) ** n) / beta
    rest = np.maximum(p - capped * f, 0.0)
    residual = rest / rest.sum() if rest.sum() > 0 else p.copy()
    return KSeqParameters(rho, min(beta, 1.0), accept_ratio, residual)


def acceptance(p, q, n: int, scheme: str) -> float:
    """Exact probability that the verifier's output is one of the n drafts, for ``scheme`` in SCHEMES."""
    p, q = check_pair(p, q)
    n = _checks.positive_int(n, "n")
    if scheme == "rrs":
        _, betas = rrs_residuals(p, q, n)
        return float(1.0 - np.prod(1.0 - np.asarray(betas)))
    if scheme == "rrs_wor":
        return float(_rrs_wor_acceptance(p, q, n))
    if scheme == "kseq":
        return _kseq_acceptance(p, q, n)
    if scheme == "naive":
        return float(np.dot(p, 1.0 - (1.0 - q) ** n))
    raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")


def _kseq_acceptance(p: np.ndarray, q: np.ndarray, n: int) -> float:
    params = kseq_parameters(p, q, n)
    beta = params.beta
    all_rejected = (1.0 - beta) ** n
    if all_rejected <= 0.0:
        return 1.0
    # Given that all n were rejected, the drafts are i.i.d. from s(y) = (q - min(q, p/rho))/(1 - beta);
    # the residual output hits one of them with probability sum_y r(y) (1 - (1 - s(y))^n).
    s = np.maximum(q - np.minimum(q, p / params.rho), 0.0) / (1.0 - beta)
    overlap = float(np.dot(params.residual, 1.0 - (1.0 - np.minimum(s, 1.0)) ** n))
    return float((1.0 - all_rejected) + all_rejected * overlap)


def rrs_wor_work(q, n: int) -> int:
    """Residual evaluations x vocabulary of the exact ``rrs_wor`` acceptance of n drafts from q (the sum
    over ordered rejected prefixes); :func:`acceptance` refuses more than ``RRS_WOR_MAX_WORK``."""
    q = np.asarray(q)
    support = int(np.count_nonzero(q))
    return sum(math.perm(support, k) for k in range(min(n, support))) * q.size


def _rrs_wor_acceptance(p: np.ndarray, q: np.ndarray, n: int) -> float:
    work = rrs_wor_work(q, n)
    if work > RRS_WOR_MAX_WORK:
        raise ValueError(
            f"n={n} with {int(np.count_nonzero(q))} drafted tokens is too large for the exact rrs_wor sum "
            f"(~{work:.2g} operations); use theory.multidraft_sampling.estimate_acceptance"
        )
    return _rrs_wor_recursive(p, q, n)


def _rrs_wor_recursive(target: np.ndarray, draft: np.ndarray, rounds: int) -> float:
    """Acceptance of the remaining ``rounds`` rounds with residual ``target`` and draft dist ``draft``."""
    beta = float(np.minimum(target, draft).sum())
    if rounds == 1 or beta >= 1.0:
        return min(beta, 1.0)
    next_target, _ = _normalised_residual(target, draft)  # the same whichever draft was rejected
    reject_mass = np.maximum(draft - target, 0.0)  # P(draft = x and x rejected)
    total = beta
    for x in np.flatnonzero(reject_mass > 0.0):
        left = 1.0 - draft[x]
        if left <= 0.0:
            continue  # x was the last draftable token: no further drafts, nothing more to accept
        next_draft = draft.copy()
        next_draft[x] = 0.0
        next_draft /= left
        total += reject_mass[x] * _rrs_wor_recursive(next_target, next_draft, rounds - 1)
    return min(total, 1.0)
