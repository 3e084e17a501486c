"""specdecpp (Huang et al. 2024): per request, stop after the first draft position where P(some draft
rejected) > threshold (theory.policies.specdecpp.specdecpp_length), using the acceptance model's
per-position conditional acceptance as a calibrated acceptance head (per request and position in trace
sampling mode, where β is known per position; otherwise the same for every request)."""
from __future__ import annotations

import numpy as np

from simulator.speculation.control.base import ControlPolicy


class SpecDecPP(ControlPolicy):
    chain_only = needs_gamma = True

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        rows = self.rows(rep, ids, self.gamma)
        over = 1.0 - np.cumprod(rows, axis=1) > self.params.threshold
        return np.where(over.any(axis=1), over.argmax(axis=1) + 1, self.gamma).astype(np.int64)
