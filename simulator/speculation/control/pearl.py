"""pearl (PEARL: parallel speculative decoding with adaptive draft length, Liu et al., ICLR 2025,
arXiv 2408.11850): the draft model on its own GPUs (`drafter.placement: separate`) never waits for the
target, nor the target for the draft. Each decode request alternates between the two phases of
theory.policies.pearl (its module docstring is the algorithm; this file maps it onto replica steps):

- **pre-verify** (phase D): the drafter writes a window of γ = drafter.gamma tokens while the target runs
  one pass over the committed prefix (1 query token, count 0), which checks the window's first token d_1.
  One token is committed either way (d_1 or the target's correction). Rejected: the window is abandoned
  after the drafter's first pass; accepted: the drafter finishes the window and the request moves to V.
- **post-verify** (phase V): the target verifies the γ − 1 pending drafts (γ query tokens, count γ − 1)
  while the drafter already writes the next window. Some rejected: k + 1 tokens, the early window is
  discarded when verification ends, next D. All accepted: γ tokens, and the pass's last distribution
  pre-verifies the next window's first token: accepted → the drafter finishes that window, stay in V;
  rejected → next D after the drafter's first pass.

A step lasts max(target pass, the drafter's passes it must wait for) instead of their sum: the draft
passes a request needs are γ (its window continues), 1 (its first draft token was rejected) or 0 (its
verification failed: drafting is interrupted); pass j runs over the requests that need more than j, and
the step's exposed draft time is what exceeds the target's GPU time (`Cost.seconds`, FLOPs and bytes of
every pass kept). PEARL's adaptive draft length is this window that runs exactly as long as the target
takes (the paper's γ = ⌈target pass / draft pass⌉: choose drafter.gamma so; theory.policies.pearl's
`pearl_optimal_gamma` gives the best one for an α).

The outcome of a step (which coins d_1, the pending drafts and e_1 show) is read from the replica's own
counter-based acceptance draw for that step (the same τ `Replica.apply_step` then truncates to the count):
τ ≥ 1 is d_1 accepted in D; in V, τ ≥ γ − 1 is all pending accepted and τ ≥ γ also e_1.

Approximations, named here: a step with prompt chunks prices its draft passes as the fixed chain does and
overlaps nothing; a preempted request restarts in phase D; the engine's host time is the configured
framework's, added after the overlap; the discarded early window's draft work in a failed V phase is
not priced (the drafter is idle-equivalent: its GPUs are not the target's). Batch 1 is the paper's
setting; in a batch the step waits for its slowest request's drafter (a batched PEARL the paper does not
describe). Checked against theory.policies.pearl's closed form in tests/simulator/speculation/test_sim_pearl.py.
"""
from __future__ import annotations

import numpy as np

from simulator.cost.step_cost import Cost, StepCost, zero_cost
from simulator.errors import ScenarioError
from simulator.speculation.control.base import ControlPolicy

PHASE_D, PHASE_V = 0, 1


class Pearl(ControlPolicy):
    chain_only = True
    needs_gamma = True

    def __init__(self, *args):
        super().__init__(*args)
        if self.cost.exposed_draft is None:
            raise ScenarioError("policy.kind", "'pearl' overlaps drafting with verification on the draft's own "
                                               "GPUs; it needs drafter.placement: separate")
        self._phase: dict[int, tuple[int, int]] = {}   # request -> (phase, its preemptions when it was set)
        self._passes = np.zeros(0, dtype=np.int64)      # draft passes each request of the step being priced needs

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        s, g = rep.s, self.gamma
        tau = rep.acceptance.draw(ids, s.decode_steps[ids], s.emitted[ids])   # this step's coins
        counts = np.zeros(len(ids), dtype=np.int64)
        passes = np.zeros(len(ids), dtype=np.int64)
        for i, r in enumerate(ids.tolist()):
            phase, seen = self._phase.get(r, (PHASE_D, 0))
            if seen != s.preemptions[r]:
                phase = PHASE_D
            t = int(tau[i])
            if phase == PHASE_D:
                accepted = t >= 1
                passes[i] = g if accepted else 1
                nxt = PHASE_V if accepted else PHASE_D
            else:
                counts[i] = g - 1
                if t < g - 1:
                    passes[i], nxt = 0, PHASE_D
                else:
                    passes[i], nxt = (g, PHASE_V) if t >= g else (1, PHASE_D)
            self._phase[r] = (nxt, int(s.preemptions[r]))
        self._passes = passes
        return counts

    def price(self, plan, rep) -> StepCost:
        if plan.prefill_ids:   # mixed steps: the fixed chain's pricing of the counts, nothing overlapped
            return super().price(plan, rep)
        c, counts, ids = self.cost, plan.counts, plan.decode_ids
        ctx = rep.s.ctx[ids]
        tokens = int((counts + 1).sum())
        q_mean = max(1, int(round(tokens / len(ids))))
        target = c.target.dense(tokens, tokens) + \
            c.target.decode_attention(len(ids), q_mean, np.array([int(ctx.sum())]))[0]
        draft = zero_cost()
        for j in range(int(self._passes.max(initial=0))):
            live = self._passes > j
            b = int(live.sum())
            draft = draft + c.draft.decode_forward(b, 1, np.array([int(ctx[live].sum()) + j * b]))[0]
        exposed = draft.copy()
        exposed[0] = max(draft[0] - target[0], 0.0)   # the step lasts max(draft, verify)
        target = c.with_engine(exposed[None, :], target[None, :], 0, 0, len(ids))[0]
        return StepCost(Cost.of(exposed), Cost.of(target))
