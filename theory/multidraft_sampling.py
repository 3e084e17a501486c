"""Samplers that run the multi-draft verifiers of :mod:`theory.multidraft` (the real algorithms).

Each call runs ``size`` independent verifications (drafting + verification of one position),
vectorised over the runs. Tests use them to check, by Monte Carlo, that the output is distributed as p
(losslessness) and that the fraction of runs whose output is a draft matches
:func:`theory.multidraft.acceptance`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theory import _checks
from theory.multidraft import SCHEMES, check_pair, kseq_parameters, rrs_residuals

#: Runs processed together by the without-replacement sampler (bounds its size x vocab state arrays).
_WOR_CHUNK = 20_000


@dataclass(frozen=True)
class MultiDraftSamples:
    """Outcome of ``size`` verifications: drafts (size, n; -1 = no draft left), output token, and the
    0-based round that accepted (-1 if the output came from the final residual)."""

    drafts: np.ndarray
    output: np.ndarray
    accepted_round: np.ndarray

    @property
    def output_is_draft(self) -> np.ndarray:
        """Boolean per run: the output equals one of the drafts (the acceptance event)."""
        return np.any(self.drafts == self.output[:, None], axis=1)


def _sample_rows(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of ``probs`` (rows need not be normalised; zero rows give -1)."""
    cum = np.cumsum(probs, axis=1)
    totals = cum[:, -1]
    u = rng.random(probs.shape[0]) * totals
    idx = (cum <= u[:, None]).sum(axis=1)
    idx = np.minimum(idx, probs.shape[1] - 1)
    return np.where(totals > 0, idx, -1)


def sample_verification(p, q, n: int, scheme: str, size: int, rng: np.random.Generator) -> MultiDraftSamples:
    """Draft n tokens and verify them with ``scheme`` (see :data:`theory.multidraft.SCHEMES`), ``size`` times."""
    p, q = check_pair(p, q)
    n = _checks.positive_int(n, "n")
    size = _checks.positive_int(size, "size")
    rng = _checks.generator(rng)
    if scheme == "rrs":
        return _sample_rrs(p, q, n, size, rng)
    if scheme == "kseq":
        return _sample_kseq(p, q, n, size, rng)
    if scheme == "naive":
        return _sample_naive(p, q, n, size, rng)
    if scheme == "rrs_wor":
        parts = [_sample_rrs_wor(p, q, n, min(_WOR_CHUNK, size - start), rng)
                 for start in range(0, size, _WOR_CHUNK)]
        return MultiDraftSamples(*(np.concatenate([getattr(s, f) for s in parts])
                                   for f in ("drafts", "output", "accepted_round")))
    raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")


def estimate_acceptance(p, q, n: int, scheme: str, size: int, rng: np.random.Generator) -> tuple[float, float]:
    """Monte-Carlo acceptance of ``scheme``: (mean, standard error) over ``size`` runs."""
    hits = sample_verification(p, q, n, scheme, size, rng).output_is_draft
    mean = float(hits.mean())
    return mean, float(np.sqrt(max(mean * (1.0 - mean), 1e-300) / hits.size))


def _sequential_accept(drafts, ratios_per_round, final_residual, rng) -> MultiDraftSamples:
    """Shared loop for verifiers whose per-round accept ratio does not depend on earlier drafts."""
    size, n = drafts.shape
    output = np.full(size, -1)
    accepted_round = np.full(size, -1)
    active = np.ones(size, dtype=bool)
    for i in range(n):
        u = rng.random(size)
        take = active & (u < ratios_per_round[i][drafts[:, i]])
        output[take] = drafts[take, i]
        accepted_round[take] = i
        active &= ~take
    left = int(active.sum())
    if left:
        output[active] = rng.choice(final_residual.size, size=left, p=final_residual)
    return MultiDraftSamples(drafts, output, accepted_round)


def _ratio(target: np.ndarray, q: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(q > 0, np.minimum(1.0, target / q), 1.0)


def _sample_rrs(p, q, n, size, rng) -> MultiDraftSamples:
    residuals, _ = rrs_residuals(p, q, n)
    drafts = rng.choice(q.size, size=(size, n), p=q)
    ratios = [_ratio(residuals[i], q) for i in range(n)]
    return _sequential_accept(drafts, ratios, residuals[n], rng)


def _sample_kseq(p, q, n, size, rng) -> MultiDraftSamples:
    params = kseq_parameters(p, q, n)
    drafts = rng.choice(q.size, size=(size, n), p=q)
    return _sequential_accept(drafts, [params.accept_ratio] * n, params.residual, rng)


def _sample_naive(p, q, n, size, rng) -> MultiDraftSamples:
    drafts = rng.choice(q.size, size=(size, n), p=q)
    output = rng.choice(p.size, size=size, p=p)
    match = drafts == output[:, None]
    accepted_round = np.where(match.any(axis=1), np.argmax(match, axis=1), -1)
    return MultiDraftSamples(drafts, output, accepted_round)


def _sample_rrs_wor(p, q, n, size, rng) -> MultiDraftSamples:
    target = np.tile(p, (size, 1))
    draft = np.tile(q, (size, 1))
    drafts = np.full((size, n), -1)
    output = np.full(size, -1)
    accepted_round = np.full(size, -1)
    active = np.arange(size)
    for i in range(n):
        x = _sample_rows(draft[active], rng)
        has_draft = x >= 0
        active, x = active[has_draft], x[has_draft]  # rows with no tokens left skip to the residual
        if active.size == 0:
            break
        drafts[active, i] = x
        t_x, d_x = target[active, x], draft[active, x]
        take = rng.random(active.size) < np.minimum(1.0, t_x / d_x)
        output[active[take]] = x[take]
        accepted_round[active[take]] = i
        rej, x_rej = active[~take], x[~take]
        rest = np.maximum(target[rej] - draft[rej], 0.0)
        target[rej] = rest / rest.sum(axis=1, keepdims=True)
        d = draft[rej]
        d[np.arange(rej.size), x_rej] = 0.0
        mass = d.sum(axis=1, keepdims=True)
        draft[rej] = np.divide(d, mass, out=np.zeros_like(d), where=mass > 0)
        active = rej
    left = output < 0
    output[left] = _sample_rows(target[left], rng)
    return MultiDraftSamples(drafts, output, accepted_round)
