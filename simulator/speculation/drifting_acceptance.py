"""Acceptance that drifts over a run (`acceptance: {kind: drifting}`): Online Speculative Decoding's draft
distilled on the served traffic, or a traffic mix that changes over time.

The per-token acceptance α of request r (requests are numbered in arrival order) is piecewise linear in r
through the section's `points` [(request index, α), …] and constant outside them; each draft token of
request r is accepted with α_r, independently (Leviathan's model), so a chain of γ accepts
τ = #{i ≤ γ : u < α_r^i} for the step's counter-based uniform u (the chain rule of ChainAcceptance with
that request's own α). Indexing by request rather than by time keeps the draws independent of
scheduling and bulk stepping, and is what OSD's update schedule counts (the draft is re-distilled every
so many served requests).

Approximations, named here: within a request α is constant (an update mid-request is felt from the next
request on); the distillation itself (OSD trains the draft on the target's outputs on spare GPU time) is
not priced — theory.online.distillation_gpu_seconds gives its cost for a stated update schedule; model-
wide figures a policy or the separate placement ask for (`expected_accepted`, `full_accept_probability`,
`survival_at`) are averages over the points' request range.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.speculation.acceptance import AcceptanceModel, counter_uniforms


@dataclass(frozen=True)
class DriftingChainAcceptance(AcceptanceModel):
    depth: int              # = γ
    seed: int
    at_request: np.ndarray  # (P,) ascending request indices of the points
    alpha: np.ndarray       # (P,) α at those requests

    def alpha_of(self, request_ids: np.ndarray) -> np.ndarray:
        return np.interp(np.asarray(request_ids, dtype=np.float64), self.at_request, self.alpha)

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        u = counter_uniforms(self.seed, request_ids, step_index)
        a = np.broadcast_to(self.alpha_of(request_ids), u.shape)
        powers = a[..., None] ** np.arange(1, self.depth + 1)
        return (u[..., None] < powers).sum(axis=-1).astype(np.int64)

    def _range_alphas(self) -> np.ndarray:
        lo, hi = self.at_request[0], self.at_request[-1]
        return self.alpha_of(np.linspace(lo, hi, 257)) if hi > lo else self.alpha[:1]

    def expected_accepted(self) -> float:
        from theory.chain import expected_accepted
        return float(np.mean([expected_accepted(float(a), self.depth) for a in self._range_alphas()]))

    def full_accept_probability(self) -> float:
        return float(np.mean(self._range_alphas() ** self.depth)) if self.depth else 1.0

    def survival_at(self, count: int) -> float:
        return float(np.mean(self._range_alphas() ** count))

    def predicted_rows(self, request_ids: np.ndarray, emitted: np.ndarray, length: int) -> np.ndarray:
        """Each request's own α at every position (an online estimator that has converged per request)."""
        return np.repeat(self.alpha_of(request_ids)[:, None], length, axis=1)


def drifting_chain(acc, gamma: int, seed: int) -> DriftingChainAcceptance:
    pts = np.array(acc.points, dtype=np.float64)
    return DriftingChainAcceptance(gamma, seed, pts[:, 0], pts[:, 1])
