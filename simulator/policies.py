"""Speculation control policies: how many draft tokens each request verifies in a step.

A policy sees the step being formed (its decode requests, the queue) and returns one draft count per
decode request; the step is then priced for those counts and each request's sampled τ is truncated to
its count (the acceptance draws are nested: simulator.tree_acceptance), so a policy that verifies fewer
drafts never changes what the longer draft would have accepted. Policies use theory/'s functions; the
simulator supplies the step-time function from its own cost model.

- fixed: the configured shape every step (no policy object; bulk mode applies).
- smartspec (Liu et al. 2024): per step, γ in 0..max_gamma maximising expected tokens / step time of the
  current batch (theory.policies.smartspec.goodput_optimal_gamma) with step_time(batch, γ) = the
  simulator's priced decode step at the batch's Σ context (rounded down to the cost model's context grid
  so that choices are memoized per (batch, grid cell)). Acceptance estimate per request: the
  α whose i.i.d. chain gives the acceptance model's expected tokens at max_gamma (a real system tracks it
  online; the model's own value is the converged estimate).
- specdecpp (Huang et al. 2024): per request, stop after the first draft position where P(some draft
  rejected) > threshold (theory.policies.specdecpp.specdecpp_length), using the acceptance model's
  per-position conditional acceptance as a calibrated acceptance head (per request and position in trace
  sampling mode, where β is known per position; otherwise the same for every request).
- tetris (Wu et al. 2025): per step, draft counts maximising expected accepted tokens under a budget of
  verified draft tokens (theory.policies.tetris.tetris_allocate) on the same predicted acceptances.
- load_switch: the configured shape, or plain decoding for steps whose decode batch exceeds max_batch or
  whose waiting queue exceeds max_queue. The drafter still ingests prompt chunks while off (its KV must
  be ready when speculation resumes).

Adaptive policies run step by step (the replica does not bulk-advance while a policy is set): a step's
shape depends on the batch, so bulk planning would need per-step shapes (documented limitation; results
are still deterministic). Steps whose requests verify different counts are priced with the exact dense
token count and the attention of the mean (rounded) query length per request.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.acceptance import ChainAcceptance
from simulator.step_cost import CTX_GRID_TOKENS, Cost, StepCostModel


def conditional_rows(acceptance, gamma: int) -> np.ndarray:
    """Per-position conditional acceptance (γ,) implied by a chain acceptance model."""
    if isinstance(acceptance, ChainAcceptance):
        surv = np.r_[1.0, acceptance.survival]
        return np.divide(surv[1:], surv[:-1], out=np.zeros(gamma), where=surv[:-1] > 0)[:gamma]
    from theory.chain import alpha_from_expected_tokens
    alpha = alpha_from_expected_tokens(acceptance.expected_accepted() + 1.0, acceptance.gamma) \
        if acceptance.gamma else 0.0
    return np.full(gamma, float(np.clip(alpha, 0.0, 1.0)))


@dataclass
class Policy:
    kind: str
    spec: object                    # simulator.speculation.SpeculationBuild
    gamma: int                      # the configured draft length (chain) or tree depth
    params: object
    cost: StepCostModel | None = None
    _by_gamma: dict = field(default_factory=dict, repr=False)
    _smartspec: dict = field(default_factory=dict, repr=False)

    def bind(self, cost: StepCostModel) -> "Policy":
        if self.cost is None:
            self.cost = cost
        return self

    # ---- decisions ---------------------------------------------------------------------------------
    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        full = self.spec.acceptance.gamma
        n = len(ids)
        p = self.params
        if self.kind == "load_switch":
            off = (p.max_batch is not None and n > p.max_batch) or (p.max_queue is not None and queued > p.max_queue)
            return np.full(n, 0 if off else full, dtype=np.int64)
        if self.kind == "smartspec":
            from theory.policies.smartspec import goodput_optimal_gamma
            # Chosen at the batch's mean context rounded down to the cost grid (CTX_GRID_TOKENS), memoized.
            cell = int(rep.s.ctx[ids].sum()) // (CTX_GRID_TOKENS * n)
            g = self._smartspec.get((n, cell))
            if g is None:
                alpha = float(self.rows(rep, ids[:1], p.max_gamma)[0].mean())
                ctx = cell * CTX_GRID_TOKENS * n
                g = self._smartspec[(n, cell)] = goodput_optimal_gamma(
                    np.full(n, alpha), lambda b, gg: self._decode_seconds(gg, b, ctx), p.max_gamma).gamma
            return np.full(n, g, dtype=np.int64)
        rows = self.rows(rep, ids, self.gamma)
        if self.kind == "specdecpp":
            reject = 1.0 - np.cumprod(rows, axis=1)
            over = reject > p.threshold
            return np.where(over.any(axis=1), over.argmax(axis=1) + 1, self.gamma).astype(np.int64)
        from theory.policies.tetris import tetris_allocate
        return tetris_allocate(rows, p.budget_tokens)[0]

    def rows(self, rep, ids: np.ndarray, gamma: int) -> np.ndarray:
        """Predicted conditional acceptance (len(ids), gamma) of each request's next drafts."""
        acc = self.spec.acceptance
        beta = getattr(acc, "beta", None)
        if beta is not None:  # trace sampling mode: the measured β at the request's next positions
            seq = acc.sequence_of(ids)
            pos = rep.s.emitted[ids] - 1
            idx = acc.starts[seq][:, None] + (pos[:, None] + np.arange(gamma)) % acc.lengths[seq][:, None]
            return beta[idx]
        return np.broadcast_to(conditional_rows(acc, gamma), (len(ids), gamma))

    # ---- pricing -----------------------------------------------------------------------------------
    def _model(self, g: int) -> StepCostModel:
        m = self._by_gamma.get(g)
        if m is None:
            c = self.cost
            if g == 0:
                m = StepCostModel(c.target, None, 0, engine=c.engine)
            else:
                parallel = c.widths is not None and len(c.widths) == 1 and c.gamma > 1
                exposed = c.exposed_draft
                if exposed is not None and isinstance(self.spec.acceptance, ChainAcceptance):
                    from simulator.drafters import overlap_exposure
                    exposed = overlap_exposure(float(self.spec.acceptance.survival[g - 1]))  # P(τ ≥ g)
                m = StepCostModel(c.target, c.draft, g, (1,) if parallel else None, None, False, exposed,
                                  engine=c.engine)
            self._by_gamma[g] = m
        return m

    def _decode_seconds(self, g: int, batch: int, ctx: int) -> float:
        d, t = self._model(g).decode_steps(batch, np.array([ctx]))
        return float(d[0, 0] + t[0, 0])

    def price(self, plan, rep) -> tuple[Cost, Cost]:
        counts = plan.counts
        full = self.spec.acceptance.gamma
        args = (sum(plan.prefill_chunks), len(plan.prefill_ids), plan.prefill_attn_pairs,
                len(plan.decode_ids), plan.decode_context_tokens)
        if (counts == full).all():
            return self.cost.step(*args)
        if (counts == counts[0]).all() and counts[0] > 0 and self.spec.tree is None:
            return self._model(int(counts[0])).step(*args)
        if (counts == 0).all() and not plan.prefill_ids:
            return self._model(0).step(*args)
        return self._mixed(plan, rep)

    def _mixed(self, plan, rep) -> tuple[Cost, Cost]:
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
        draft = np.zeros(3)
        if prefill:
            draft = draft + c.draft.dense(prefill, len(plan.prefill_ids)) + \
                c.draft.prefill_attention(prefill, len(plan.prefill_ids), plan.prefill_attn_pairs)
        passes = 1 if (c.widths is not None and len(c.widths) == 1 and c.gamma > 1) else int(counts.max())
        for j in range(passes):
            live = counts > j if passes > 1 else counts > 0
            b = int(live.sum())
            if b:
                draft = draft + c.draft.decode_forward(b, 1, np.array([int(ctx[live].sum()) + j * b]))[0]
        if c.exposed_draft is not None:
            draft = c.exposed_draft(draft[None, :], target[None, :])[0]
        # Engine time at the full shape's pass layout (approximation: it hardly depends on the counts).
        target = c.with_engine(draft[None, :], target[None, :], prefill, len(plan.prefill_ids), len(ids))[0]
        return Cost(*draft), Cost(*target)


def make_policy(scenario, spec, gamma: int) -> Policy | None:
    """The scenario's policy, or None for `fixed` (see the module docstring)."""
    from simulator.errors import ScenarioError

    p = scenario.policy
    if p.kind == "fixed":
        return None
    if p.kind in ("smartspec", "specdecpp", "tetris") and spec.tree is not None:
        raise ScenarioError("policy.kind", f"{p.kind!r} chooses chain lengths; it needs speculation.kind "
                            f"'chain' (got {scenario.speculation.kind!r})")
    if p.kind in ("specdecpp", "tetris") and gamma < 1:
        raise ScenarioError("drafter.gamma", f"policy {p.kind!r} needs drafter.gamma >= 1")
    return Policy(p.kind, spec, gamma, p)
