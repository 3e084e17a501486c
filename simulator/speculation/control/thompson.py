"""thompson (online acceptance estimation with Thompson sampling; EESD, Liu et al. 2024, controls its
early-exit drafter's length with a Thompson-sampling mechanism): the policy does not know α. It keeps a
Beta(1 + S, 1 + F) posterior of the per-token acceptance from what the replica's steps showed — a request
that verified g drafts and accepted τ contributes τ successes and, if τ < g, one failure (the i.i.d. chain
of theory.chain: the exact conjugate update) — and every step draws α̃ from it and verifies the γ in
0..max_gamma that SmartSpec would choose for α̃ (theory.policies.smartspec.goodput_optimal_gamma on the
simulator's own step prices). Early on the draws spread and γ explores; as observations accumulate the
posterior concentrates at α and the choice at SmartSpec's with the true α.

Approximations, named here: one posterior for all requests (no per-request or per-context estimate);
observations are read at a request's next step, so a request's last step is never counted; steps are
priced at the batch's Σ context rounded down to the cost model's grid (as smartspec). The draws come from
a generator seeded by `seed`, so runs are deterministic.
"""
from __future__ import annotations

import numpy as np

from simulator.cost.step_cost import CTX_GRID_TOKENS
from simulator.speculation.control.base import ControlPolicy


class ThompsonGamma(ControlPolicy):
    chain_only = True
    needs_gamma = True

    def __init__(self, *args):
        super().__init__(*args)
        self.successes = 0
        self.failures = 0
        self._pending: dict[int, tuple[int, int]] = {}   # request -> (accepted before its step, count)
        self._rng = np.random.default_rng(self.params.seed)
        self._times: dict[tuple[int, int, int], float] = {}

    def observe(self, rep, ids: np.ndarray) -> None:
        """Fold in the steps the requests `ids` ran since this policy last chose their counts."""
        accepted = rep.s.accepted
        for r in ids.tolist():
            seen = self._pending.pop(r, None)
            if seen is not None and seen[1] > 0:
                tau = int(accepted[r]) - seen[0]
                self.successes += tau
                self.failures += int(tau < seen[1])

    def posterior_mean(self) -> float:
        return (1.0 + self.successes) / (2.0 + self.successes + self.failures)

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        from theory.policies.smartspec import goodput_optimal_gamma
        self.observe(rep, ids)
        n, max_gamma = len(ids), self.params.max_gamma
        cell = int(rep.s.ctx[ids].sum()) // (CTX_GRID_TOKENS * n)
        alpha = float(self._rng.beta(1.0 + self.successes, 1.0 + self.failures))
        g = goodput_optimal_gamma(np.full(n, alpha), lambda b, gg: self._seconds(b, gg, cell), max_gamma).gamma
        accepted = rep.s.accepted
        for r in ids.tolist():
            self._pending[r] = (int(accepted[r]), g)
        return np.full(n, g, dtype=np.int64)

    def _seconds(self, batch: int, g: int, cell: int) -> float:
        key = (batch, g, cell)
        t = self._times.get(key)
        if t is None:
            t = self._times[key] = self._decode_seconds(g, batch, cell * CTX_GRID_TOKENS * batch)
        return t
