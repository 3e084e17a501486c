"""Bad speculation input through the CLI: one line naming the field, exit code 2, nothing written."""
from __future__ import annotations

import pytest

from contract import assert_one_line, run_cli
from sim_helpers import scenario

DRAFT = {"kind": "draft_model", "model": "llama-68m", "gamma": 3}
RANKED = {"kind": "ranked", "accept_probs": [0.6, 0.2]}
TREE = {"kind": "tree", "builder": "kary", "k": 2, "depth": 3}

BAD = {
    "unknown_builder": (dict(drafter=DRAFT, acceptance=RANKED,
                             speculation={"kind": "tree", "builder": "bushy"}), "speculation.builder"),
    "budget_below_one": (dict(drafter=DRAFT, acceptance=RANKED,
                              speculation={"kind": "tree", "builder": "sequoia", "budget": 0}), "speculation.budget"),
    "unknown_speculation": (dict(drafter=DRAFT, speculation={"kind": "forest"}), "speculation.kind"),
    "tree_needs_ranks": (dict(drafter=DRAFT, acceptance={"kind": "constant", "alpha": 0.7}, speculation=TREE),
                         "acceptance.kind"),
    "tree_needs_drafter": (dict(acceptance=RANKED, speculation=TREE), "speculation.kind"),
    "adaptive_policy_on_tree": (dict(drafter=DRAFT, acceptance=RANKED, speculation=TREE,
                                     policy={"kind": "smartspec"}), "policy.kind"),
    "unknown_policy": (dict(drafter=DRAFT, policy={"kind": "oracle"}), "policy.kind"),
    "switch_without_threshold": (dict(drafter=DRAFT, policy={"kind": "load_switch"}), "policy"),
    "bad_placement": (dict(drafter={**DRAFT, "placement": "fpga"}), "drafter.placement"),
    "bad_layer_fraction": (dict(drafter={"kind": "layer_skip", "layers_fraction": 1.5}),
                           "drafter.layers_fraction"),
    "bad_head_style": (dict(drafter={"kind": "head", "style": "sideways"}), "drafter.style"),
    "ranked_sum_above_one": (dict(drafter=DRAFT, acceptance={"kind": "ranked", "accept_probs": [0.8, 0.5]}),
                             "acceptance"),
    "pair_p_without_q": (dict(drafter=DRAFT, acceptance={"kind": "pair", "p": [0.5, 0.5]}), "acceptance"),
    "multidraft_bad_scheme": (dict(drafter=DRAFT, acceptance={"kind": "pair"},
                                   speculation={"kind": "multidraft", "scheme": "vote"}), "speculation.scheme"),
    "trace_tree_ngram": (dict(drafter=DRAFT, speculation=TREE,
                              acceptance={"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "ngram"}),
                         "acceptance.mode"),
    "policy_without_drafter": (dict(policy={"kind": "smartspec"}), "policy.kind"),
    "multidraft_gamma_zero": (dict(drafter={**DRAFT, "gamma": 0}, acceptance={"kind": "pair"},
                                   speculation={"kind": "multidraft"}), "drafter.gamma"),
    "medusa_too_deep": (dict(drafter={"kind": "head", "style": "parallel", "gamma": 2}, acceptance=RANKED,
                             speculation=TREE), "speculation.depth"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_speculation_exits_2_with_one_line_naming_the_field(tmp_path, name):
    overrides, field = BAD[name]
    code, err, out = run_cli(tmp_path, scenario(**overrides))
    assert code == 2, err
    assert len(err.splitlines()) == 1, err   # no warning line before the refusal either
    assert_one_line(err, field)
    assert not out.exists() or not any(out.iterdir())
