"""Speculation control policies: how many draft tokens each request verifies in a step. A policy is one
file here (a `ControlPolicy` subclass) plus one line in `CONTROL_POLICIES`.

A policy sees the step being formed (its decode requests, the queue) and returns one draft count per
decode request; the step is then priced for those counts and each request's sampled τ is truncated to
its count (the acceptance draws are nested: simulator.speculation.tree_acceptance), so a policy that
verifies fewer drafts never changes what the longer draft would have accepted. Policies use theory/'s
functions; the simulator supplies the step-time function from its own cost model.

- fixed: the configured shape every step (no policy object; bulk mode applies).
- smartspec, specdecpp, tetris, load_switch, specreason, thompson, proposed, pearl: one file each (its docstring says what it decides and how).
- vllm_dynamic, trtllm_schedule, sglang_adaptive: the engines' own draft-length rules, each read from the
  engine's source (cited in its file) and pinned by hand-worked step sequences in tests/simulator/speculation/test_engine_policies.py.

Adaptive policies run step by step (the replica does not bulk-advance while a policy is set): a step's
shape depends on the batch, so bulk planning would need per-step shapes (documented limitation; results
are still deterministic). Steps whose requests verify different counts are priced with the exact dense
token count and the attention of the mean (rounded) query length per request.
"""
from __future__ import annotations

from simulator.speculation.control.base import ControlPolicy
from simulator.speculation.control.load_switch import LoadSwitch
from simulator.speculation.control.pearl import Pearl
from simulator.speculation.control.proposed import Proposed
from simulator.speculation.control.sglang_adaptive import SglangAdaptive
from simulator.speculation.control.trtllm_schedule import TrtllmSchedule
from simulator.speculation.control.vllm_dynamic import VllmDynamic
from simulator.speculation.control.smartspec import SmartSpec
from simulator.speculation.control.specdecpp import SpecDecPP
from simulator.speculation.control.specreason import SpecReason
from simulator.speculation.control.tetris import Tetris
from simulator.speculation.control.thompson import ThompsonGamma

CONTROL_POLICIES: dict[str, type[ControlPolicy]] = {
    "load_switch": LoadSwitch,
    "pearl": Pearl,
    "proposed": Proposed,
    "sglang_adaptive": SglangAdaptive,
    "smartspec": SmartSpec,
    "specdecpp": SpecDecPP,
    "specreason": SpecReason,
    "tetris": Tetris,
    "thompson": ThompsonGamma,
    "trtllm_schedule": TrtllmSchedule,
    "vllm_dynamic": VllmDynamic,
}


def make_policy(policy, speculation, spec, gamma: int, cost) -> ControlPolicy | None:
    """The control policy of a `policy` section bound to a replica kind's step cost, or None for `fixed`.
    `speculation` is the scenario's speculation section, `spec` its build, `gamma` drafter.gamma."""
    from simulator.errors import ScenarioError

    if policy.kind == "fixed":
        return None
    cls = CONTROL_POLICIES[policy.kind]
    if speculation.kind == "retrieval_merge":
        raise ScenarioError("policy.kind", f"{policy.kind!r} chooses draft counts of one chain; retrieval_merge "
                                           "verifies two branches: it needs 'fixed'")
    if cls.chain_only and spec.tree is not None:
        raise ScenarioError("policy.kind", f"{policy.kind!r} chooses chain lengths; it needs speculation.kind "
                            f"'chain' (got {speculation.kind!r})")
    if cls.needs_gamma and gamma < 1:
        raise ScenarioError("drafter.gamma", f"policy {policy.kind!r} needs drafter.gamma >= 1")
    if cls.requires_acceptance is not None and not isinstance(spec.acceptance, cls.requires_acceptance[1]):
        raise ScenarioError("acceptance.kind", f"policy {policy.kind!r} needs acceptance kind "
                            f"{cls.requires_acceptance[0]!r}")
    return cls(policy, spec, gamma, cost)
