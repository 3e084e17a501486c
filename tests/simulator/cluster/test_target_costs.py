"""The target-cost registry (simulator.cluster.target_costs): every need of every variant is refused, when it
fails, with one error naming a field and the need; whenever the checks pass at most one pricer is asked for
(brute force over every combination of the facts), so a scenario's target pass is never ambiguous; and the
factory prices with the variant asked for."""
from __future__ import annotations

import dataclasses
import itertools

import pytest

import simulator
from simulator.cluster.target_costs import NEEDS, TARGET_COSTS, Facts, check
from simulator.errors import ScenarioError
from sim_helpers import scenario

PLAIN = Facts(drafter=False, ep=1, pp=1, gpus=1, nano_batches=1, layout="paged", early_exit=False, realign=False,
              moe=False, hybrid=False, measured_passes=False)
# how a scenario asks for each variant, and how it breaks each need (as facts)
ASK = {"shadowkv": dict(layout="shadowkv"), "hybrid": dict(hybrid=True), "early_exit": dict(early_exit=True),
       "nanoflow": dict(nano_batches=2), "realign": dict(realign=True, drafter=True),
       "expert_parallel": dict(ep=2, gpus=2, moe=True), "measured_passes": dict(measured_passes=True)}
BREAK = {"no_drafter": dict(drafter=True), "one_gpu": dict(pp=2, gpus=2), "ep1": dict(ep=2, gpus=2, moe=True),
         "pp1": dict(pp=2, gpus=2), "dense": dict(moe=True), "paged": dict(layout="shadowkv"),
         "no_early_exit": dict(early_exit=True), "one_nano_batch": dict(nano_batches=2),
         "paged_alignment": dict(realign=True, drafter=True)}


def test_every_variant_and_need_is_covered_here():
    assert set(ASK) == set(TARGET_COSTS) and set(BREAK) == set(NEEDS)
    for variant in TARGET_COSTS.values():
        check(dataclasses.replace(PLAIN, **ASK[[k for k, v in TARGET_COSTS.items() if v is variant][0]]))


@pytest.mark.parametrize("name,need", [(n, need) for n, v in TARGET_COSTS.items() for need in v.needs])
def test_a_broken_need_is_one_error_naming_a_field_and_the_need(name, need):
    facts = dataclasses.replace(PLAIN, **{**ASK[name], **BREAK[need]})
    with pytest.raises(ScenarioError) as info:
        check(facts)
    failing = [v for v in TARGET_COSTS.values() if v.asked(facts) and not all(NEEDS[n][1](facts) for n in v.needs)]
    assert info.value.field == failing[0].field   # the first variant asked for whose needs fail
    assert NEEDS[need][0] in str(info.value) or failing[0] is not TARGET_COSTS[name]
    assert len(str(info.value).splitlines()) == 1


def test_at_most_one_pricer_is_asked_for_whenever_the_checks_pass():
    domains = dict(drafter=(False, True), ep=(1, 2), pp=(1, 2), nano_batches=(1, 2), layout=("paged", "shadowkv"),
                   early_exit=(False, True), realign=(False, True), moe=(False, True), hybrid=(False, True),
                   measured_passes=(False, True))
    passed = 0
    for values in itertools.product(*domains.values()):
        facts = Facts(**dict(zip(domains, values)), gpus=values[1] * values[2])
        if facts.realign and not facts.drafter:
            continue   # (realign is asked only with a drafter)
        try:
            check(facts)
        except ScenarioError:
            continue
        passed += 1
        asked = [name for name, v in TARGET_COSTS.items() if v.build is not None and v.asked(facts)]
        assert len(asked) <= 1, (facts, asked)
    assert passed > 20


@pytest.mark.parametrize("extra,field", [
    ({"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 2},
      "cluster": {"hardware": "h100-sxm", "model": "llama-3-8b", "kv_cache": {"layout": {"kind": "shadowkv"}}}},
     "cluster.kv_cache.layout.kind"),
    ({"cluster": {"hardware": "h100-sxm", "model": "llama-3-8b", "latency": {"nano_batches": 2}},
      "early_exit": {"exit_layers": [16], "exit_probs": [0.2]}}, "early_exit"),
])
def test_the_factory_refuses_through_the_registry(extra, field):
    with pytest.raises(ScenarioError, match=f"^{field}: .*: it needs "):
        simulator.prepare(scenario(**extra))
