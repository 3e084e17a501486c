"""The speculation control policy protocol and what every policy shares: pricing steps whose requests
verify fewer drafts than the configured shape (simulator.speculation.control package docstring)."""
from __future__ import annotations

import numpy as np

from simulator.cost.step_cost import Cost, StepCost, StepCostModel, zero_cost


class ControlPolicy:
    """A speculation control policy: per step, one draft count per decode request (`counts`), and the
    price of a step with those counts (`price`). `gamma` is the configured draft length; `spec` the
    speculation build (shape + acceptance model); `cost` the replica kind's step cost."""

    chain_only = False   # chooses chain lengths: refuses trees and multi-draft
    needs_gamma = False  # refuses drafter.gamma = 0
    requires_acceptance: tuple[str, type] | None = None  # (acceptance kind, its model class) the policy needs

    def __init__(self, params, spec, gamma: int, cost: StepCostModel):
        self.params, self.spec, self.gamma, self.cost = params, spec, gamma, cost
        self._by_count: dict[int, StepCostModel] = {}

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        raise NotImplementedError

    def rows(self, rep, ids: np.ndarray, length: int) -> np.ndarray:
        """Predicted conditional acceptance (len(ids), length) of each request's next drafts."""
        return self.spec.acceptance.predicted_rows(ids, rep.s.emitted[ids], length)

    # ---- pricing -----------------------------------------------------------------------------------
    def _model(self, g: int) -> StepCostModel:
        m = self._by_count.get(g)
        if m is None:
            c = self.cost
            if g == 0:
                m = StepCostModel(c.target, None, 0, engine=c.engine)
            else:
                parallel = c.widths is not None and len(c.widths) == 1 and c.depth > 1
                exposed = c.exposed_draft
                full_accept = self.spec.acceptance.survival_at(g)  # P(τ ≥ g), None if unknown
                if exposed is not None and full_accept is not None:
                    from simulator.cost.drafters import overlap_exposure
                    exposed = overlap_exposure(full_accept)
                proposer = None if c.proposer is None else c.proposer.with_depth(g)
                widths = (1,) * g if proposer is not None else ((1,) if parallel else None)
                m = StepCostModel(c.target, c.draft, g, widths, None, False, exposed, engine=c.engine,
                                  proposer=proposer)
            self._by_count[g] = m
        return m

    def _decode_seconds(self, g: int, batch: int, ctx: int) -> float:
        d, t = self._model(g).decode_steps(batch, np.array([ctx]))
        return float(d[0, 0] + t[0, 0])

    def price(self, plan, rep) -> StepCost:
        counts = plan.counts
        full = self.spec.acceptance.depth
        args = (sum(plan.prefill_chunks), len(plan.prefill_ids), plan.prefill_attn_pairs,
                len(plan.decode_ids), plan.decode_context_tokens)
        if (counts == full).all():
            return self.cost.step(*args)
        if (counts == counts[0]).all() and counts[0] > 0 and self.spec.tree is None:
            return self._model(int(counts[0])).step(*args)
        if (counts == 0).all() and not plan.prefill_ids:
            return self._model(0).step(*args)
        return self._mixed(plan, rep)

    def _mixed(self, plan, rep) -> StepCost:
        """Requests verify different chain lengths: draft pass j runs over the requests with count > j;
        the verify pass has Σ(count + 1) query tokens (exact dense cost) and the attention of the rounded
        mean query length per request."""
        c, counts, ids = self.cost, plan.counts, plan.decode_ids
        ctx = rep.s.ctx[ids]
        tokens = int((counts + 1).sum())
        prefill = sum(plan.prefill_chunks)
        q_mean = max(1, int(round(tokens / len(ids))))
        target = c.target.dense(prefill + tokens, len(plan.prefill_ids) + tokens) + \
            c.target.decode_attention(len(ids), q_mean, np.array([int(ctx.sum())]))[0]
        if prefill:
            target = target + c.target.prefill_attention(prefill, len(plan.prefill_ids), plan.prefill_attn_pairs)
        draft = zero_cost()
        if c.proposer is not None:   # an EAGLE-3 / MTP layout (simulator.cost.proposer)
            target = target + c.proposer.target_extra(prefill + tokens)
            draft = c.proposer.draft_counts(c.draft, counts, ctx, prefill, len(plan.prefill_ids),
                                            plan.prefill_attn_pairs)
        elif prefill:
            draft = draft + c.draft.dense(prefill, len(plan.prefill_ids)) + \
                c.draft.prefill_attention(prefill, len(plan.prefill_ids), plan.prefill_attn_pairs)
        passes = 0 if c.proposer is not None else \
            1 if (c.widths is not None and len(c.widths) == 1 and c.depth > 1) else int(counts.max())
        for j in range(passes):
            live = counts > j if passes > 1 else counts > 0
            b = int(live.sum())
            if b:
                draft = draft + c.draft.decode_forward(b, 1, np.array([int(ctx[live].sum()) + j * b]))[0]
        if c.exposed_draft is not None:
            draft = c.exposed_draft(draft[None, :], target[None, :])[0]
        # Engine time at the full shape's pass layout (approximation: it hardly depends on the counts).
        target = c.with_engine(draft[None, :], target[None, :], prefill, len(plan.prefill_ids), len(ids))[0]
        return StepCost(Cost.of(draft), Cost.of(target))
