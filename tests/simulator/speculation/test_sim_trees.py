"""Tree and multi-draft speculation in the simulator against theory/ and the step-mode invariants."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from sim_helpers import scenario
from simulator.speculation.acceptance import ChainAcceptance, counter_uniforms
from simulator.config.scenario import parse_scenario
from simulator.speculation.shapes import build_tree, pair_distributions
from simulator.speculation.tree_acceptance import TreeAcceptance, tree_accepted_depth
from theory.multidraft import SCHEMES, acceptance as md_acceptance
from theory.trees import Tree
from theory.tree_builders import eagle2_tree, kary_tree, positional_child_probs

DRAFT = {"kind": "draft_model", "model": "llama-68m", "gamma": 4}
RANKED = {"kind": "ranked", "accept_probs": [0.62, 0.14, 0.06, 0.03]}
LONG = {"num_requests": 300, "output_tokens": {"kind": "uniform", "low": 200, "high": 400}}


def _mean_tokens(result) -> float:
    """Accepted draft tokens per request-step + 1 (τ is logged before the output-length cap)."""
    st = result.steps[result.steps.decode_seqs > 0]
    return float(st.accepted_tokens.sum() / st.decode_seqs.sum()) + 1.0


def test_tree_of_width_one_equals_the_chain_exactly():
    chain = simulator.run(scenario(drafter=DRAFT, acceptance={"kind": "constant", "alpha": 0.75}))
    tree = simulator.run(scenario(drafter=DRAFT, acceptance={"kind": "ranked", "accept_probs": [0.75]},
                                  speculation={"kind": "tree", "builder": "kary", "k": 1, "depth": 4}))
    pd.testing.assert_frame_equal(chain.requests, tree.requests)
    pd.testing.assert_frame_equal(chain.steps, tree.steps)


def test_nested_interval_walk_of_a_chain_is_the_chain_rule():
    alphas = [0.9, 0.7, 0.5, 0.8]
    chain = ChainAcceptance.from_alphas(alphas, 4, seed=3)
    tree = TreeAcceptance.from_tree(Tree((-1, 0, 1, 2, 3), (0, 0, 0, 0, 0), (1.0, *alphas)), seed=3)
    ids, steps = np.arange(500)[:, None], np.arange(40)[None, :]
    np.testing.assert_array_equal(chain.tau(ids, steps), tree.tau(ids, steps))


@pytest.mark.parametrize("spec", [
    {"kind": "tree", "builder": "sequoia", "depth": 6, "budget": 24},
    {"kind": "tree", "builder": "kary", "k": 2, "depth": 3},
    {"kind": "dynamic_tree", "top_k": 3, "depth": 5, "budget": 20},
])
def test_simulated_tokens_per_step_equal_tree_expected_tokens(spec):
    data = scenario(drafter=DRAFT, acceptance=RANKED, speculation=spec, workload=LONG)
    result = simulator.run(data)
    tree = build_tree(*_sections(parse_scenario(data)), 4, Path("."))
    assert _mean_tokens(result) == pytest.approx(tree.expected_tokens, rel=0.01)
    assert (result.steps.query_tokens_per_seq[result.steps.decode_seqs > 0] == tree.size).all()


def test_dynamic_tree_is_eagle2_of_the_rank_probs():
    data = scenario(drafter=DRAFT, acceptance=RANKED,
                    speculation={"kind": "dynamic_tree", "top_k": 3, "depth": 5, "budget": 20})
    tree = build_tree(*_sections(parse_scenario(data)), 4, Path("."))
    want = eagle2_tree(positional_child_probs(RANKED["accept_probs"]), 3, 5, 20)
    assert tree == want


@pytest.mark.parametrize("scheme", SCHEMES)
def test_multidraft_first_position_acceptance_matches_theory(scheme):
    """γ = 1: τ ∈ {0, 1}, so the mean accepted length is the verifier's acceptance probability."""
    acc = {"kind": "pair", "vocab": 8, "zipf": 1.1, "q_power": 0.5}
    data = scenario(drafter={**DRAFT, "gamma": 1}, acceptance=acc,
                    speculation={"kind": "multidraft", "n": 3, "scheme": scheme},
                    workload={"num_requests": 400, "output_tokens": {"kind": "uniform", "low": 150, "high": 250}})
    result = simulator.run(data)
    p, q = pair_distributions(parse_scenario(data).acceptance)
    assert _mean_tokens(result) - 1.0 == pytest.approx(md_acceptance(p, q, 3, scheme), rel=0.01)


def test_multidraft_deeper_positions_use_single_draft_acceptance():
    data = scenario(drafter={**DRAFT, "gamma": 3}, acceptance={"kind": "pair"},
                    speculation={"kind": "multidraft", "n": 2, "scheme": "rrs_wor"})
    tree = build_tree(*_sections(parse_scenario(data)), 3, Path("."))
    p, q = pair_distributions(parse_scenario(data).acceptance)
    a2, b = md_acceptance(p, q, 2, "rrs_wor"), float(np.minimum(p, q).sum())
    assert tree.size == 1 + 2 * 3
    assert tree.expected_tokens == pytest.approx(1 + a2 * (1 + b + b * b), rel=1e-12)
    assert list(tree.expanded_level_widths()) == [1, 2, 2]


@pytest.mark.parametrize("extra", [
    dict(speculation={"kind": "tree", "builder": "sequoia", "depth": 5, "budget": 16}),
    dict(speculation={"kind": "multidraft", "n": 3, "scheme": "kseq"}, acceptance={"kind": "pair"}),
    dict(drafter={"kind": "head", "style": "parallel", "gamma": 4},
         speculation={"kind": "tree", "builder": "medusa", "depth": 4, "budget": 12}),
    dict(drafter={**DRAFT, "placement": "separate"},
         speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 3}),
    dict(scheduler={"kind": "sarathi", "chunk_tokens": 512},
         speculation={"kind": "dynamic_tree", "top_k": 3, "depth": 4, "budget": 16}),
    dict(drafter={"kind": "head", "gamma": 4},
         speculation={"kind": "dynamic_tree", "top_k": 3, "depth": 4, "budget": 16}),
    dict(drafter={**DRAFT, "model": "qwen2.5-coder-0.5b"}, cluster={"model": "qwen2.5-coder-1.5b"},
         acceptance={"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "draft"},
         speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 3}),
    dict(drafter={"kind": "ngram", "gamma": 3}, cluster={"model": "qwen2.5-coder-1.5b"},
         acceptance={"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "ngram"}),
    dict(drafter={"kind": "layer_skip", "gamma": 3}, acceptance={"kind": "constant", "alpha": 0.7}),
    dict(drafter={**DRAFT, "placement": "cpu", "gamma": 2}, workload={"arrival": {"qps": 0.5}, "num_requests": 20}),
])
def test_bulk_equals_step_mode_for_trees(extra):
    """Bulk ≡ step mode for every fixed-shape speculation: trees, multi-draft, heads, placements."""
    data = scenario(**{"drafter": DRAFT, "acceptance": RANKED, **extra})
    bulk = simulator.run(data)
    step = simulator.run(scenario(**{**data, "simulation": {"step_mode": "step"}}))
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)


def test_tree_token_conservation_and_drafted_counts():
    data = scenario(drafter=DRAFT, acceptance=RANKED,
                    speculation={"kind": "tree", "builder": "sequoia", "depth": 5, "budget": 16})
    result = simulator.run(data)
    req = result.requests
    assert result.steps.emitted_tokens.sum() == req.emitted_tokens.sum() == req.output_tokens.sum()
    assert (req.drafted_tokens == 15 * req.decode_steps).all()
    assert (req.accepted_tokens <= 5 * req.decode_steps).all()


def test_tree_verify_costs_more_than_chain_and_grows_with_batch():
    """Verifying 16 nodes per request is priced by the op graph: costlier than a 5-token chain, and the
    gap grows with the batch (the step becomes compute-bound)."""
    chain = simulator.run(scenario(drafter=DRAFT, acceptance={"kind": "ranked", "accept_probs": [0.62]}))
    tree = simulator.run(scenario(drafter=DRAFT, acceptance=RANKED,
                                  speculation={"kind": "tree", "builder": "sequoia", "depth": 5, "budget": 16}))
    c_cost, t_cost = chain.built.replicas[0].cost, tree.built.replicas[0].cost
    ratios = []
    for batch in (1, 64, 256):
        vc = c_cost.decode_steps(batch, np.array([batch * 500]))[1][0, 0]
        vt = t_cost.decode_steps(batch, np.array([batch * 500]))[1][0, 0]
        assert vt > vc
        ratios.append(vt / vc)
    assert ratios[0] < ratios[1] < ratios[2]
    assert t_cost.tree and t_cost.q == 16


def test_trace_tree_walk_on_ranks():
    """Greedy tree verification on a measured trace: a k-ary tree of width w accepts along runs of
    rank < w, which is profiles.acceptance.trace.tree_accepted_depth for full trees."""
    from profiles.acceptance.trace import load_trace, tree_accepted_lengths
    from simulator.speculation.trace_acceptance import resolve_trace_path

    trace = load_trace(resolve_trace_path("qwen2.5-coder-1.5b-0.5b", Path(".")))
    tree = kary_tree(2, 3, [0.5, 0.2])
    got = tree_accepted_depth(tree, trace["draft_rank"].to_numpy(), trace["seq"].to_numpy(),
                              trace["max_accept"].to_numpy())
    np.testing.assert_array_equal(got, tree_accepted_lengths(trace, [2, 2, 2], "draft"))


def test_counter_uniform_tree_walk_is_batching_independent():
    tree = kary_tree(2, 3, [0.5, 0.2])
    acc = TreeAcceptance.from_tree(tree, seed=11)
    ids = np.arange(50)
    whole = acc.tau(ids[:, None], np.arange(30)[None, :])
    parts = np.concatenate([acc.tau(ids[:25, None], np.arange(30)[None, :]),
                            acc.tau(ids[25:, None], np.arange(30)[None, :])])
    np.testing.assert_array_equal(whole, parts)
    u = counter_uniforms(11, ids[:, None], np.arange(30)[None, :])
    np.testing.assert_array_equal(whole, acc.sample(u))


def test_trace_driven_tree_matches_the_trace_empirical_tree_walk():
    """Issue 5, trees: a k-ary tree walked on the shipped trace's branch ranks gives the mean accepted
    length of a real greedy tree decoder over the trace's texts (profiles' own tree_accepted_lengths,
    walked position by position) within 2 %."""
    from profiles.acceptance.trace import load_trace, tree_accepted_lengths
    from simulator.speculation.trace_acceptance import resolve_trace_path

    trace = load_trace(resolve_trace_path("qwen2.5-coder-1.5b-0.5b", Path(".")))
    depth = tree_accepted_lengths(trace, [2, 2, 2, 2], "draft")
    seq = trace["seq"].to_numpy()
    per_seq = []
    for s in np.unique(seq):
        rows = np.flatnonzero(seq == s)
        i, steps = 0, []
        while i < len(rows):
            steps.append(depth[rows[i]])
            i += depth[rows[i]] + 1
        per_seq.append(np.mean(steps))
    result = simulator.run(scenario(
        cluster={"model": "qwen2.5-coder-1.5b"}, drafter={**DRAFT, "model": "qwen2.5-coder-0.5b"},
        acceptance={"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "draft"},
        speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 4},
        workload={"num_requests": 600, "output_tokens": {"kind": "uniform", "low": 150, "high": 250}}))
    st = result.steps[result.steps.decode_seqs > 0]
    simulated = st.accepted_tokens.sum() / st.decode_seqs.sum()
    assert simulated == pytest.approx(np.mean(per_seq), rel=0.02)
    assert result.built.replicas[0].acceptance.draft_tokens == 2 + 4 + 8 + 16


def test_tree_step_is_priced_from_the_op_graph_pass_by_pass():
    """Draft: one pass per level over the expanded nodes, context growing by one per level; verify: the
    tree's node count per request under the tree mask (models.opgraph ATTN_DECODE with tree=True)."""
    result = simulator.run(scenario(drafter=DRAFT, acceptance=RANKED, workload={"num_requests": 5},
                                    speculation={"kind": "tree", "builder": "sequoia", "depth": 5, "budget": 16}))
    cost = result.built.replicas[0].cost
    tree = build_tree(result.scenario.speculation, result.scenario.acceptance, 4, Path("."))
    widths = [int(w) for w in tree.expanded_level_widths()]
    assert cost.draft_widths == tuple(widths) and cost.q == tree.size == 16 and cost.tree
    batch, ctx = 8, 8 * 700
    got = cost.exact_decode_step(batch, ctx)
    draft = sum(cost.draft.exact_decode(batch, w, ctx + j * batch) for j, w in enumerate(widths))
    np.testing.assert_allclose(got[:3], draft, rtol=1e-12)
    target = cost.target.exact_decode(batch, 16, ctx, True)
    np.testing.assert_allclose(got[4:6], target[1:], rtol=1e-12)
    # Target seconds carry the engine's per-step time (column 6), priced on the step's device time.
    device = got[0] + target[0]
    engine = float(cost.engine.wall_seconds(device, 0, 0, batch, 16, cost.pass_layout)) - device
    assert got[6] == pytest.approx(engine, rel=1e-9) and got[6] > 0
    assert got[3] == pytest.approx(target[0] + got[6], rel=1e-12)
    causal = cost.target.exact_decode(batch, 16, ctx, False)
    assert got[4] > causal[1]  # the tree mask prices the full q×q block


def _sections(scenario):
    return scenario.speculation, scenario.acceptance
