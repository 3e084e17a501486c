"""load_switch: the configured shape, or plain decoding for steps whose decode batch exceeds max_batch or
whose waiting queue exceeds max_queue. The drafter still ingests prompt chunks while off (its KV must be
ready when speculation resumes)."""
from __future__ import annotations

import numpy as np

from simulator.speculation.control.base import ControlPolicy


class LoadSwitch(ControlPolicy):
    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        p, n = self.params, len(ids)
        off = (p.max_batch is not None and n > p.max_batch) or (p.max_queue is not None and queued > p.max_queue)
        return np.full(n, 0 if off else self.spec.acceptance.depth, dtype=np.int64)
