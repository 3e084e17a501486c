"""Merging a retrieved continuation with a model's draft in one verification tree (RASD, Quan et al. 2025,
arXiv 2503.03434): the root has two branches, the draft model's chain of γ tokens and the retrieved
continuation of k tokens, the latter present with probability h (the retrieval found a match). Under
greedy verification each branch is accepted along its own path independently of the other, and the step
keeps the longer accepted path, so with X the model chain's accepted length and Y the retrieved one's,

    τ = max(X, B·Y),  B ~ Bernoulli(h) independent of X and Y,
    P(τ ≥ i) = 1 − (1 − P(X ≥ i)) (1 − h P(Y ≥ i)),  E[τ] = Σ_{i ≥ 1} P(τ ≥ i).

Survivals are given as arrays s[i − 1] = P(· ≥ i) (zero past their own length). Pure functions.
"""
from __future__ import annotations

import numpy as np

from theory import _checks


def merged_survival(model_survival, retrieval_survival, hit_rate: float) -> np.ndarray:
    """P(τ ≥ i) for i = 1..max(γ, k) of the merged tree (module docstring)."""
    h = _checks.probability(hit_rate, "hit_rate")
    # (unchecked, a survival of 2 or -1 gave "probabilities" outside [0, 1], and a 2-D one a 2-D answer)
    sm = _checks.probabilities(model_survival, "model_survival")
    sr = _checks.probabilities(retrieval_survival, "retrieval_survival")
    depth = max(len(sm), len(sr))
    sm, sr = np.pad(sm, (0, depth - len(sm))), np.pad(sr, (0, depth - len(sr)))
    return 1.0 - (1.0 - sm) * (1.0 - h * sr)


def merged_expected_accepted(model_survival, retrieval_survival, hit_rate: float) -> float:
    """E[τ] of the merged tree: Σ_i P(τ ≥ i)."""
    return float(merged_survival(model_survival, retrieval_survival, hit_rate).sum())
