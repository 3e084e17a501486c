"""Speculation control policies: how many draft tokens each request verifies in a step. A policy is one
file here (a `ControlPolicy` subclass) plus one line in `CONTROL_POLICIES`.

A policy sees the step being formed (its decode requests, the queue) and returns one draft count per
decode request; the step is then priced for those counts and each request's sampled τ is truncated to
its count (the acceptance draws are nested: simulator.speculation.tree_acceptance), so a policy that verifies fewer
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

from simulator.speculation.control.base import ControlPolicy
from simulator.speculation.control.load_switch import LoadSwitch
from simulator.speculation.control.smartspec import SmartSpec
from simulator.speculation.control.specdecpp import SpecDecPP
from simulator.speculation.control.tetris import Tetris

CONTROL_POLICIES: dict[str, type[ControlPolicy]] = {
    "load_switch": LoadSwitch,
    "smartspec": SmartSpec,
    "specdecpp": SpecDecPP,
    "tetris": Tetris,
}


def make_policy(policy, speculation, spec, gamma: int, cost) -> ControlPolicy | None:
    """The control policy of a `policy` section bound to a replica kind's step cost, or None for `fixed`.
    `speculation` is the scenario's speculation section, `spec` its build, `gamma` drafter.gamma."""
    from simulator.errors import ScenarioError

    if policy.kind == "fixed":
        return None
    cls = CONTROL_POLICIES[policy.kind]
    if cls.chain_only and spec.tree is not None:
        raise ScenarioError("policy.kind", f"{policy.kind!r} chooses chain lengths; it needs speculation.kind "
                            f"'chain' (got {speculation.kind!r})")
    if cls.needs_gamma and gamma < 1:
        raise ScenarioError("drafter.gamma", f"policy {policy.kind!r} needs drafter.gamma >= 1")
    return cls(policy, spec, gamma, cost)
