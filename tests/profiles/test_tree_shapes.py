"""Draft token trees by engine release (profiles.engine_time.tree_shapes), each case worked by hand from the engines'
sources, read 2026-11-29 in their PyPI wheels: vLLM vllm/config SpeculativeConfig.speculative_token_tree (0.10.0
field only; 0.10.1-0.20.2 drafted by vllm/v1/spec_decode/eagle.py EagleProposer.propose_tree; gone from 0.21.0),
SGLang speculative/build_eagle_tree.py build_tree_kernel_efficient_preprocess (the budget - 1 best of
top_k + (steps - 1) * top_k^2 candidates) and server_args.py / arg_groups/speculative_hook.py _handle_eagle_family
(topk 1 -> num_steps + 1 draft tokens from 0.4.5.post3)."""
from __future__ import annotations

import pytest

from profiles.engine_time.tree_shapes import TreeAsk, sglang_candidates, tree_refusal
from simulator.errors import ScenarioError

KARY = TreeAsk("tree", "kary", depth=3, top_k=2, budget=16)          # 2 + 4 + 8 draft tokens, 2 children per node
EAGLE2 = TreeAsk("dynamic_tree", "eagle2", depth=3, top_k=2, budget=8)


@pytest.mark.parametrize("version,refused_field", [
    ("0.10.0", "cluster.engine.version"),    # the field exists, nothing reads it: a chain is drafted
    ("0.10.1", None), ("0.15.0", None), ("0.20.2", None),
    ("0.21.0", "cluster.engine.version"),    # no speculative_token_tree, no tree_attn backend
    ("0.33.0", "cluster.engine.version"),
])
def test_vllm_drafts_a_static_kary_tree_from_an_eagle_head_on_0_10_1_to_0_20_2_only(version, refused_field):
    got = tree_refusal("vllm", version, "eagle", KARY)
    assert (got and got[0]) == refused_field, got
    if refused_field:
        assert f"vllm {version} has no draft token trees" in got[1] and "0.10.1 to 0.20.2" in got[1]


def test_vllm_drafts_no_dynamic_tree_in_any_release():
    for version in ("0.9.2", "0.10.1", "0.20.2", "0.33.0"):
        field, message = tree_refusal("vllm", version, "eagle3", EAGLE2)
        assert field == "speculation.kind" and message.startswith(f"vllm {version} "), message
    assert "never EAGLE-2's per-step dynamic tree" in tree_refusal("vllm", "0.15.0", "eagle3", EAGLE2)[1]


@pytest.mark.parametrize("method", ["mtp", "draft_model", "medusa", "ngram"])
def test_vllm_trees_need_a_proposer_whose_head_returns_two_hidden_states(method):
    """propose_tree unpacks (last hidden, hidden) at every level after the first: EAGLE/EAGLE-3 heads only."""
    field, message = tree_refusal("vllm", "0.15.0", method, KARY)
    assert field == "drafter.kind" and f"got {method}" in message
    assert tree_refusal("vllm", "0.15.0", "eagle3", KARY) is None


@pytest.mark.parametrize("builder", ["medusa", "sequoia"])
def test_vllm_trees_give_every_node_of_a_level_the_same_children(builder):
    field, message = tree_refusal("vllm", "0.12.0", "eagle", TreeAsk("tree", builder, 4, 2, 16))
    assert field == "speculation.builder" and "child_drafts_per_level" in message and "builder kary" in message


def test_sglang_candidate_pool_is_top_k_then_top_k_squared_per_further_step():
    # top_k 2, 3 steps: 2 at the first step, 4 at each of the two further ones -> 10 candidates, 11 tokens with the root
    assert sglang_candidates(2, 3) == 10
    assert tree_refusal("sglang", "0.5.3", "eagle3", TreeAsk("dynamic_tree", "eagle2", 3, 2, 11)) is None
    field, message = tree_refusal("sglang", "0.5.3", "eagle3", TreeAsk("dynamic_tree", "eagle2", 3, 2, 12))
    assert field == "speculation.budget" and "allowed: 1 to 11" in message


def test_sglang_topk_1_runs_num_steps_plus_1_tokens_from_0_4_5_post3():
    chain_short = TreeAsk("dynamic_tree", "eagle2", depth=4, top_k=1, budget=3)
    field, message = tree_refusal("sglang", "0.4.5.post3", "mtp", chain_short)
    assert field == "speculation.budget" and "allowed: budget 5 (depth + 1)" in message
    # 0.4.5.post2 verifies the 2 best of the 4 chain tokens: the shape asked for (draftsim's eagle2 keeps 3 nodes)
    assert tree_refusal("sglang", "0.4.5.post2", "mtp", chain_short) is None
    assert tree_refusal("sglang", "0.5.23", "mtp", TreeAsk("dynamic_tree", "eagle2", 4, 1, 5)) is None


def test_sglang_drafts_eagle2_trees_only():
    assert tree_refusal("sglang", "0.5.13", "eagle", KARY)[0] == "speculation.kind"
    field, message = tree_refusal("sglang", "0.5.13", "draft_model", TreeAsk("dynamic_tree", "top_n", 3, 2, 8))
    assert field == "speculation.builder" and "got builder top_n" in message
    assert tree_refusal("sglang", "0.5.13", "ngram", KARY) is None    # its NGRAM worker's trees: not checked here


def test_trtllm_has_no_rule_read():
    assert tree_refusal("trtllm", "1.2.0", "eagle3", EAGLE2) is None


def _tree_run(version: str, speculation: dict):
    import simulator
    from tests.sim_helpers import scenario
    return simulator.run(scenario(
        workload={"num_requests": 5}, drafter={"kind": "head", "style": "autoregressive", "gamma": 3},
        speculation=speculation, acceptance={"kind": "pair", "vocab": 12, "zipf": 1.2, "q_power": 0.6},
        cluster={"engine": {"version": version}}))


def test_a_run_refuses_a_tree_its_named_release_does_not_draft():
    kary = {"kind": "tree", "builder": "kary", "k": 2, "depth": 3, "budget": 16}
    assert _tree_run("0.15.0", kary).summary["tokens_per_step"] > 1
    with pytest.raises(ScenarioError) as err:
        _tree_run("0.24.0", kary)
    assert err.value.field == "cluster.engine.version" and "vllm 0.24.0 has no draft token trees" in err.value.message


# SGLang's NGRAM worker (drafter ngram) drafts its own tree from its trie, padded to speculative_num_draft_tokens
# rows (srt/speculative/ngram_worker.py; trie.cpp buildRecency / buildFrequency, result.cpp fillResult): draftsim
# walks it under speculation kind chain; any other shape is refused, the field named speculation.kind.
@pytest.mark.parametrize("kind", ["chain", "tree", "dynamic_tree", "multidraft", "retrieval_merge"])
def test_sglang_s_ngram_worker_is_walked_as_a_chain_priced_tree_only(kind):
    from types import SimpleNamespace

    from profiles.engine_time.tree_shapes import release_tree_refusal
    got = release_tree_refusal(("sglang", "0.5.16"), "ngram", SimpleNamespace(kind=kind))
    if kind == "chain":
        assert got is None
    else:
        assert got[0] == "speculation.kind" and f"not a {kind} shape" in got[1]
    if kind in ("chain", "multidraft", "retrieval_merge"):   # (no release named: draftsim's own shape, no rule)
        assert release_tree_refusal(("sglang", None), "ngram", SimpleNamespace(kind=kind)) is None
