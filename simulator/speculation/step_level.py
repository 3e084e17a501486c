"""Step-level (reasoning-level) acceptance (`acceptance: {kind: step_level, accept}`): SpecReason,
Speculative Thinking, Arbitrage. A small model proposes a whole reasoning step of γ = drafter.gamma
tokens; the large model judges it in one pass over the step and accepts all of it with probability
`accept`, or none of it: τ ∈ {0, γ}, one counter-based uniform per (request, step) (u < accept ⇒ γ), so
draws do not depend on batching and a policy that verifies fewer tokens truncates the same draw. What
happens after a rejection (the large model regenerates the step) is the `specreason` control policy's
(simulator.speculation.control.specreason).

Approximation, named here: acceptance of a step does not depend on its length or content (SpecReason's
judge scores utility; its acceptance rate is an input).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.speculation.acceptance import AcceptanceModel, counter_uniforms


@dataclass(frozen=True)
class StepLevelAcceptance(AcceptanceModel):
    depth: int      # = γ, the reasoning step's tokens
    accept: float   # P(the judge accepts the step)
    seed: int

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        u = counter_uniforms(self.seed, request_ids, step_index)
        return np.where(u < self.accept, self.depth, 0).astype(np.int64)

    def expected_accepted(self) -> float:
        return self.accept * self.depth

    def full_accept_probability(self) -> float:
        return self.accept if self.depth else 1.0

    def survival_at(self, count: int) -> float:
        return self.accept

    def predicted_rows(self, request_ids: np.ndarray, emitted: np.ndarray, length: int) -> np.ndarray:
        rows = np.ones(length)
        rows[:1] = self.accept  # all or nothing: the first position carries the whole step's risk
        return np.broadcast_to(rows, (len(request_ids), length))
