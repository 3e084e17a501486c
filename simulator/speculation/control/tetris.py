"""tetris (Wu et al. 2025): per step, draft counts maximising expected accepted tokens under a budget of
verified draft tokens (theory.policies.tetris.tetris_allocate) on the predicted acceptances."""
from __future__ import annotations

import numpy as np

from simulator.speculation.control.base import ControlPolicy


class Tetris(ControlPolicy):
    chain_only = needs_gamma = True

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        from theory.policies.tetris import tetris_allocate
        return tetris_allocate(self.rows(rep, ids, self.gamma), self.params.budget_tokens)[0]
