"""Goodput-optimal speculation length for a batch (SmartSpec, Liu et al. 2024).

One step verifies gamma draft tokens for every request of the batch. With per-request per-token
acceptance ``alpha_i`` (i.i.d. positions, :mod:`theory.chain`), the expected tokens the step generates are
``sum_i (1 - alpha_i^(gamma+1)) / (1 - alpha_i)`` and the step takes ``step_time_s(batch, gamma)``
(drafting plus verification, from the latency model). SmartSpec picks the gamma maximising the ratio,
the expected goodput in tokens per second; ``gamma = 0`` is plain decoding. Exhaustive over
``0..max_gamma`` (exact for the model; the step-time function need not be monotone or convex).
Approximation: the ratio of expectations is the long-run rate of repeated steps with the same batch
(renewal-reward); it is not the expectation of a single step's ratio.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from theory import _checks
from theory.chain import expected_tokens


@dataclass(frozen=True)
class GammaChoice:
    """The chosen gamma and, for every candidate gamma, expected tokens per step and tokens per second."""

    gamma: int
    tokens_per_s: float
    tokens_per_step: np.ndarray  # index = gamma
    step_time_s: np.ndarray  # index = gamma
    goodput_tokens_per_s: np.ndarray  # index = gamma


def goodput_optimal_gamma(accept_rates, step_time_s: Callable[[int, int], float],
                          max_gamma: int = 16) -> GammaChoice:
    """SmartSpec's choice of one gamma for the batch; ties go to the smallest gamma.

    ``accept_rates``: per-request per-token acceptance estimates (1-D, in [0, 1], one per request).
    ``step_time_s(batch_size, gamma)``: seconds for one step of the batch with that gamma (> 0).
    """
    alphas = _checks.probabilities(accept_rates, "accept_rates")
    if alphas.size == 0:
        raise ValueError("accept_rates must hold one acceptance rate per request (got none)")
    max_gamma = _checks.non_negative_int(max_gamma, "max_gamma")
    gammas = range(max_gamma + 1)
    tokens = np.array([float(np.sum(expected_tokens(alphas, g))) for g in gammas])
    times = np.array([float(step_time_s(alphas.size, g)) for g in gammas])
    if not np.all(np.isfinite(times)) or np.any(times <= 0.0):
        raise ValueError("step_time_s must return a finite positive time for every gamma")
    rates = tokens / times
    best = int(np.argmax(rates))
    return GammaChoice(best, float(rates[best]), tokens, times, rates)
