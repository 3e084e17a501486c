"""Ragged acceptance within a batch (Batch Speculative Decoding Done Right, Zhang et al. 2025).

In a batch of B requests each verifying a γ-chain, request i accepts τ_i (i.i.d., survival
s_j = P(τ ≥ j), j = 1..γ). Kept as one rectangular tensor, the batch must advance by the *longest*
acceptance: the others are padded by max_k τ_k − τ_i positions this step, so the padding is a property
of the maximum, not of the mean:

    E[max_i τ_i] = Σ_{j=1..γ} P(max ≥ j) = Σ_j [1 − (1 − s_j)^B],      E[τ] = Σ_j s_j,

and the expected padding per request and step is E[max] − E[τ] (:func:`expected_padding`), which grows
with B towards γ − E[τ]. EQSPEC avoids the padding by re-aligning every step (unpad, append, repad: the
batch's KV is rewritten, `simulator.cost.ragged`); EXSPEC groups requests of equal length instead.
:func:`simulate_batch_tau` draws the batch's τ explicitly so the closed form is checked by Monte Carlo.
"""
from __future__ import annotations

import numpy as np

from theory import _checks


def _survival(survival) -> np.ndarray:
    s = _checks.probabilities(survival, "survival")
    if np.any(np.diff(s) > 1e-12):
        raise ValueError("survival must be non-increasing")
    return s


def expected_max_accepted(survival, batch: int) -> float:
    """E[max over `batch` i.i.d. requests of τ] for a chain with survival s_j = P(τ ≥ j)."""
    s = _survival(survival)
    batch = _checks.positive_int(batch, "batch")
    return float(np.sum(_max_survival(s, batch)))


def _max_survival(s: np.ndarray, batch: int) -> np.ndarray:
    """P(max ≥ j) = 1 − (1 − s_j)^B as −expm1(B·log1p(−s_j)): ``1 − (1 − s)**B`` rounds 1 − s, so survivals
    near 0 lost their relative precision (s = 1e-12, B = 1000: 1e-4; s below 1.1e-16: 0)."""
    if batch == 1:
        return s.copy()
    with np.errstate(divide="ignore"):   # s = 1: log1p(−1) = −inf, and −expm1(−inf) = 1
        return -np.expm1(batch * np.log1p(-s))


def expected_padding(survival, batch: int) -> float:
    """E[max τ] − E[τ]: padded positions per request per step of a batch kept rectangular. Summed per
    position, each term P(max ≥ j) − s_j ≥ 0 clamped at 0 against rounding (it came out negative, −1e-17,
    for s = [1e-17] and a batch of 1,000)."""
    s = _survival(survival)
    batch = _checks.positive_int(batch, "batch")
    return float(np.sum(np.maximum(_max_survival(s, batch) - s, 0.0)))


def simulate_batch_tau(survival, batch: int, steps: int, rng: np.random.Generator) -> np.ndarray:
    """(steps, batch) accepted lengths: τ = #{j : u < s_j} for one uniform per request and step."""
    s = _survival(survival)
    batch = _checks.positive_int(batch, "batch")
    steps = _checks.positive_int(steps, "steps")
    rng = _checks.generator(rng)
    u = rng.random((steps, batch))
    return (u[..., None] < s).sum(axis=-1)
