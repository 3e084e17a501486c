"""specreason (Pan et al. 2025, SpecReason; also Speculative Thinking, Arbitrage): reasoning-step
speculation. Each request alternates between *speculating* — the small model drafts a whole step of
γ = drafter.gamma tokens and the large model judges it in one pass (acceptance `step_level`: all or
nothing) — and, after a rejected step, *regenerating* it: the large model decodes the step itself, γ
tokens of plain decoding (the judging pass already emitted the first, so γ − 1 plain steps follow).

The policy keeps, per request, the number of plain steps left and what it saw at the request's previous
step (its decode steps and accepted tokens): a speculative step that accepted nothing was a rejection.
Steps mixing speculating and regenerating requests are priced by the shared mixed-count rule
(simulator.speculation.control.base)."""
from __future__ import annotations

import numpy as np

from simulator.speculation.control.base import ControlPolicy
from simulator.speculation.step_level import StepLevelAcceptance


class SpecReason(ControlPolicy):
    chain_only = needs_gamma = True
    requires_acceptance = ("step_level", StepLevelAcceptance)

    def __init__(self, *args):
        super().__init__(*args)
        self._regenerate: dict[int, int] = {}                 # request -> plain steps left
        self._previous: dict[int, tuple[int, int, int]] = {}  # request -> (decode steps, accepted, count)

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        s, gamma = rep.s, self.gamma
        out = np.full(len(ids), gamma, dtype=np.int64)
        for i, r in enumerate(ids.tolist()):
            steps, accepted = int(s.decode_steps[r]), int(s.accepted[r])
            prev = self._previous.get(r)
            if prev is not None and steps > prev[0] and prev[2] == gamma and accepted == prev[1]:
                self._regenerate[r] = gamma - 1  # the judge rejected the step: regenerate it
            left = self._regenerate.get(r, 0)
            if left > 0:
                out[i] = 0
                self._regenerate[r] = left - 1
            self._previous[r] = (steps, accepted, int(out[i]))
        return out
