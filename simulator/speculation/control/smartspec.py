"""smartspec (Liu et al. 2024): per step, γ in 0..max_gamma maximising expected tokens / step time of the
current batch (theory.policies.smartspec.goodput_optimal_gamma) with step_time(batch, γ) = the simulator's
priced decode step at the batch's Σ context (rounded down to the cost model's context grid so that choices
are memoized per (batch, grid cell)). Acceptance estimate per request: the mean of the acceptance model's
predicted per-position rates over positions 1..max_gamma (`ControlPolicy.rows`; a real system tracks it
online; the model's own value is the converged estimate). For a constant α that is α; for a positional one
it is an approximation, named here: the i.i.d. chain of that mean is not the positional chain (neither is
the chain of the α with the same expected tokens: on the DES's own step prices for [0.99, 0.3] and
[0.9, 0.9, 0.9, 0.2] the mean lost 0.1 - 0.3 % of goodput against the best γ on average over the run's
(batch, context) choices, at most 1.1 %; that α 3.4 - 3.5 %, at most 6.5 %)."""
from __future__ import annotations

import numpy as np

from simulator.speculation.control.base import ControlPolicy
from simulator.cost.step_cost import CTX_GRID_TOKENS


class SmartSpec(ControlPolicy):
    chain_only = True

    def __init__(self, *args):
        super().__init__(*args)
        self._chosen: dict[tuple[int, int], int] = {}

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        from theory.policies.smartspec import goodput_optimal_gamma
        n, max_gamma = len(ids), self.params.max_gamma
        cell = int(rep.s.ctx[ids].sum()) // (CTX_GRID_TOKENS * n)
        g = self._chosen.get((n, cell))
        if g is None:
            alpha = float(self.rows(rep, ids[:1], max_gamma)[0].mean())
            ctx = cell * CTX_GRID_TOKENS * n
            g = self._chosen[(n, cell)] = goodput_optimal_gamma(
                np.full(n, alpha), lambda b, gg: self._decode_seconds(gg, b, ctx), max_gamma).gamma
        return np.full(n, g, dtype=np.int64)
