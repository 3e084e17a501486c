"""Acceptance of RASD's merged tree (`speculation: {kind: retrieval_merge, tokens, alpha, hit_rate}`): the
drafter's chain (the scenario's chain acceptance model, γ = drafter.gamma) and a retrieved continuation of
`tokens` tokens, verified together. τ = max(model chain's τ, retrieved branch's τ if retrieval hit, else 0)
(theory.retrieval); the three draws (model, retrieved branch, hit) come from independent counter-based
streams, so they do not depend on batching.

Approximations, named here: greedy verification (each branch accepted along its own path; under sampled
verification the second branch would be checked against the residual distribution); the two sources are
independent (a retrieved continuation and the model's draft that agree would be merged by prefix in RASD's
tree fusion, with fewer nodes: the verify pass here has all 1 + γ + tokens of them, an upper bound); the
hit rate and the retrieved tokens' acceptance are inputs (no datastore is simulated); retrieval's host
time is not priced.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.speculation.acceptance import AcceptanceModel, ChainAcceptance, counter_uniforms
from theory.retrieval import merged_survival

_HIT_SEED, _RETRIEVAL_SEED = 0x5A5D, 0x4A5D   # offsets of the hit and retrieved-branch streams


@dataclass(frozen=True)
class RetrievalMergedAcceptance(AcceptanceModel):
    model: ChainAcceptance        # the drafter's chain
    retrieval: ChainAcceptance    # the retrieved continuation's chain
    hit_rate: float
    seed: int = 0

    @property
    def depth(self) -> int:
        return max(self.model.depth, self.retrieval.depth)

    @property
    def draft_tokens(self) -> int:
        return self.model.depth + self.retrieval.depth

    def _survival(self) -> np.ndarray:
        return merged_survival(self.model.survival, self.retrieval.survival, self.hit_rate)

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        x = self.model.tau(request_ids, step_index)
        y = self.retrieval.tau(request_ids, step_index)
        hit = counter_uniforms(self.seed + _HIT_SEED, request_ids, step_index) < self.hit_rate
        return np.maximum(x, np.where(hit, y, 0))

    def expected_accepted(self) -> float:
        return float(self._survival().sum())

    def full_accept_probability(self) -> float:
        return float(self._survival()[-1])

    def survival_at(self, count: int) -> float:
        return float(self._survival()[count - 1])


def retrieval_merged(model: ChainAcceptance, tokens: int, alpha: float, hit_rate: float,
                     seed: int) -> RetrievalMergedAcceptance:
    retrieval = ChainAcceptance.from_alphas([alpha], tokens, seed + _RETRIEVAL_SEED)
    return RetrievalMergedAcceptance(model, retrieval, hit_rate, seed)
