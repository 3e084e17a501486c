"""Per-context dynamic trees: theory.context_trees against Monte Carlo, the DES against the theory, and the
shipped scenario's classes against the measured trace they come from."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

import simulator
from sim_helpers import assert_bulk_equals_step, scenario
from simulator.errors import ScenarioError
from theory.context_trees import mean_accept_probs, sample_dynamic_trees, simulate_context_walk
from theory.tree_builders import eagle2_tree, positional_child_probs, top_n_tree
from paths import REPO

SHIPPED = REPO / "scenarios" / "speculation" / "context_dynamic_tree.yaml"
WEIGHTS = [0.3, 0.7]
ROWS = [[0.45, 0.25, 0.1, 0.05], [0.97, 0.02]]
CONTEXTS = {"kind": "contexts", "contexts": [{"weight": w, "accept_probs": r} for w, r in zip(WEIGHTS, ROWS)]}
DRAFT = {"kind": "draft_model", "model": "llama-68m", "gamma": 4}
TREE = {"kind": "dynamic_tree", "top_k": 3, "depth": 4, "budget": 12}
LONG = {"num_requests": 300, "output_tokens": {"kind": "uniform", "low": 200, "high": 400}}


def _build(child_probs):
    return eagle2_tree(child_probs, TREE["top_k"], TREE["depth"], TREE["budget"])


def _tokens_per_step(result) -> float:
    st = result.steps[result.steps.decode_seqs > 0]
    return float(st.accepted_tokens.sum() / st.decode_seqs.sum()) + 1.0


def test_a_static_shape_accepts_as_under_the_mean_model():
    """Classes independent per node: a static shape's expected tokens are those of ā (Monte Carlo)."""
    static = _build(positional_child_probs(mean_accept_probs(WEIGHTS, ROWS)))
    walk = simulate_context_walk(static, WEIGHTS, ROWS, 40_000, np.random.default_rng(1))
    assert walk.mean() == pytest.approx(static.expected_tokens, abs=4 * walk.std() / 200)


@pytest.mark.parametrize("weights,rows", [([0.5, 0.5], [[1.0], [0.0]]), ([0.3, 0.7], [[0.9], [0.1]]),
                                          ([1.0], [[0.6, 0.3]])])
def test_the_walk_of_a_shape_wider_than_the_rows(weights, rows):
    """Trees with more children per node than the rows list (root: 3, depth 2) and rows that sum to 1 or
    less: the walk's tokens per step are the mean model's within 5 standard errors. The walk took "no
    child" (index = row width) for the child of that rank: 2.76 tokens where the closed form says 1.75."""
    from theory.trees import positional_tree
    static = positional_tree([-1, 0, 0, 0, 1, 1, 2], mean_accept_probs(weights, rows))
    walk = simulate_context_walk(static, weights, rows, 40_000, np.random.default_rng(3))
    assert walk.mean() == pytest.approx(static.expected_tokens, abs=5 * walk.std() / 200 + 1e-12)


def test_realised_trees_accept_as_their_own_walk_says():
    """A realised dynamic tree's `accept` are the realised per-node probabilities: walking it with a
    per-node class drawn i.i.d. would be wrong, walking it with its own values is its expected tokens."""
    lib = sample_dynamic_trees(WEIGHTS, ROWS, _build, 400, np.random.default_rng(2))
    tokens = np.array([t.expected_tokens for t in lib])
    static = _build(positional_child_probs(mean_accept_probs(WEIGHTS, ROWS))).expected_tokens
    assert tokens.mean() > static + 5 * tokens.std() / 20  # seeing the contexts pays, clearly
    assert all(t.size == TREE["budget"] for t in lib)


def test_des_tokens_per_step_equal_the_library_and_beat_the_static_tree():
    per = simulator.run(scenario(drafter=DRAFT, acceptance=CONTEXTS, workload=LONG,
                                 speculation={**TREE, "per_context": True}))
    static = simulator.run(scenario(drafter=DRAFT, acceptance=CONTEXTS, workload=LONG, speculation=TREE))
    lib = sample_dynamic_trees(WEIGHTS, ROWS, _build, 256, np.random.default_rng(7))  # the scenario seed
    library_mean = float(np.mean([t.expected_tokens for t in lib]))
    assert _tokens_per_step(per) == pytest.approx(library_mean, rel=0.01)
    static_tree = _build(positional_child_probs(mean_accept_probs(WEIGHTS, ROWS)))
    assert _tokens_per_step(static) == pytest.approx(static_tree.expected_tokens, rel=0.01)
    assert _tokens_per_step(per) > _tokens_per_step(static) * 1.03
    assert (per.steps.query_tokens_per_seq[per.steps.decode_seqs > 0] == TREE["budget"]).all()


def test_bulk_equals_step_mode():
    data = scenario(drafter=DRAFT, acceptance=CONTEXTS, speculation={**TREE, "per_context": True})
    assert_bulk_equals_step(data)


def test_per_context_needs_context_classes():
    with pytest.raises(ScenarioError, match="speculation.per_context"):
        simulator.run(scenario(drafter=DRAFT, acceptance={"kind": "ranked", "accept_probs": [0.7, 0.1]},
                               speculation={**TREE, "per_context": True}))


def test_shipped_classes_are_the_measured_traces():
    from profiles.acceptance.trace import confidence_classes, load_trace
    trace = load_trace(REPO / "profiles" / "data" / "acceptance" / "qwen2.5-coder-1.5b-0.5b.parquet")
    weights, rows = confidence_classes(trace, "draft", [0.5, 0.8, 0.95], 6)
    shipped = yaml.safe_load(SHIPPED.read_text())["acceptance"]["contexts"]
    assert np.allclose([c["weight"] for c in shipped], weights, atol=5e-4)
    assert np.allclose([c["accept_probs"] for c in shipped], rows, atol=5e-4)


def _fixed_contexts(seed: int):
    """child_probs with each path's class fixed by (seed, path): both builders see the same realisation."""
    def child_probs(path):
        c = 0 if np.random.default_rng((seed,) + tuple(path)).random() < WEIGHTS[0] else 1
        return tuple(ROWS[c])
    return child_probs


def test_top_n_builder_is_never_below_eagle2_on_the_same_contexts():
    """OPT-Tree/DySpec's top-N by path product is the maximum-expected-tokens tree of its budget: on every
    realisation it accepts at least as many tokens as EAGLE-2's beam, and more where the beam misses."""
    gains = []
    for seed in range(150):
        cp = _fixed_contexts(seed)
        top_n = top_n_tree(cp, 16, 6).expected_tokens
        gains.append(top_n - eagle2_tree(cp, 2, 6, 16).expected_tokens)
    assert min(gains) >= -1e-12 and max(gains) > 0.01


def test_des_top_n_builder_tokens_per_step_equal_its_library():
    spec = {**TREE, "builder": "top_n", "per_context": True}
    per = simulator.run(scenario(drafter=DRAFT, acceptance=CONTEXTS, workload=LONG, speculation=spec))
    lib = sample_dynamic_trees(WEIGHTS, ROWS, lambda cp: top_n_tree(cp, TREE["budget"], TREE["depth"]), 256,
                               np.random.default_rng(7))
    assert _tokens_per_step(per) == pytest.approx(float(np.mean([t.expected_tokens for t in lib])), rel=0.01)
