"""proposed: each request verifies the drafts its drafter actually proposed this step — for an n-gram
(prompt-lookup) drafter the measured proposal length at the request's position in its trace walk
(simulator.speculation.trace_acceptance), 0 when the context has no match. vLLM's n-gram proposer works
this way (a request without a match schedules one token, not 1 + γ), so a step's verify pass costs
Σ(proposed + 1) tokens instead of batch × (γ + 1) — what matters where pass time grows with tokens.
Accepted lengths are those of the walk (never more than proposed: a match cannot exceed the proposal).
The same holds for suffix decoding and n-gram walks through session corpora (acceptance `sessions`,
simulator.speculation.suffix.acceptance), where this is the suffix drafter's own rule."""
from __future__ import annotations

import numpy as np

from simulator.speculation.control.base import ControlPolicy
from simulator.speculation.trace_acceptance import TraceChainAcceptance


class Proposed(ControlPolicy):
    chain_only = True
    needs_gamma = True
    requires_acceptance = ("trace", TraceChainAcceptance)

    def __init__(self, params, spec, gamma: int, cost):
        super().__init__(params, spec, gamma, cost)
        if spec.acceptance.proposed is None:
            from simulator.errors import ScenarioError
            raise ScenarioError("policy.kind", "'proposed' needs measured proposal lengths: acceptance kind "
                                "trace with drafter ngram, or sessions")

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        return self.spec.acceptance.proposed_counts(ids, rep.s.decode_steps[ids])
