"""Online speculative decoding (Liu et al., ICML 2024): acceptance that improves as the draft is distilled
on served traffic, and what the distillation costs.

*Expected accepted tokens over a run.* With per-request acceptance α_r (piecewise linear in the request
index r, theory of chains per request), a run of requests r = 0..R−1 each taking S_r speculative steps of a
γ-chain accepts Σ_r S_r · E[τ](α_r, γ) tokens, E[τ](α, γ) = α(1 − α^γ)/(1 − α)
(theory.chain.expected_accepted); :func:`mean_accepted_per_step` averages it with equal steps per request,
the quantity the DES's per-request draws must reproduce.

*Distillation cost.* Training the draft (N parameters) on T tokens of target outputs costs ≈ 6·N·T FLOPs
(forward + backward, the standard dense-transformer count), plus the target's forward over the same tokens
for its logits (2·N_target·T) unless they are kept from serving; at a sustained fraction `mfu` of a GPU's
peak that is :func:`distillation_gpu_seconds`. OSD updates the draft every few thousand requests on
spare capacity; the simulator does not charge this time to the serving replicas (named in
simulator.speculation.drifting_acceptance).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from theory import _checks
from theory.chain import expected_accepted


def alpha_at(requests, points: Sequence[tuple[float, float]]) -> np.ndarray:
    """α of each request index: piecewise linear through `points` (ascending request index), flat outside."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) == 0:
        raise ValueError("points must be a non-empty list of (request index, alpha) pairs")
    if np.any(np.diff(pts[:, 0]) <= 0):
        raise ValueError("points' request indices must be strictly ascending")
    _checks.probabilities(pts[:, 1], "alpha")
    return np.interp(np.asarray(requests, dtype=np.float64), pts[:, 0], pts[:, 1])


def mean_accepted_per_step(num_requests: int, points: Sequence[tuple[float, float]], gamma: int) -> float:
    """Mean E[τ] over requests 0..num_requests−1 (equal steps per request)."""
    num_requests = _checks.positive_int(num_requests, "num_requests")
    gamma = _checks.non_negative_int(gamma, "gamma")
    alphas = alpha_at(np.arange(num_requests), points)
    return float(np.mean([expected_accepted(float(a), gamma) for a in alphas]))


def distillation_gpu_seconds(draft_params: float, tokens: float, peak_flops: float, mfu: float,
                             target_params: float = 0.0) -> float:
    """GPU-seconds of one distillation update over `tokens` tokens (module docstring)."""
    for name, value in (("draft_params", draft_params), ("tokens", tokens), ("target_params", target_params)):
        _checks.non_negative_float(value, name)
    _checks.positive_float(peak_flops, "peak_flops")
    if not 0.0 < mfu <= 1.0:
        raise ValueError(f"mfu must be in (0, 1], got {mfu}")
    return float((6.0 * draft_params + 2.0 * target_params) * tokens / (peak_flops * mfu))
