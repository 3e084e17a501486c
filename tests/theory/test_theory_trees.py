"""Tree-shape search: DP vs. brute force and top-N, builders, verification Monte Carlo, size choice."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from theory.chain import expected_tokens
from theory.tree_builders import (chain_tree, eagle2_tree, kary_tree, medusa_tree, positional_child_probs,
                                  top_n_tree)
from theory.tree_search import (brute_force_optimal_tree, choose_tree_size, optimal_tree, step_time_s,
                                tree_table)
from theory.trees import (Tree, positional_accept_probs, positional_tree, simulate_tree_verification,
                          with_positional_accept)

P = np.array([0.45, 0.2, 0.15, 0.1, 0.06, 0.04])
Q = np.array([0.3, 0.25, 0.2, 0.1, 0.1, 0.05])


def random_accept_probs(rng, size, sort):
    probs = rng.dirichlet(np.ones(size + 1))[:size]
    return np.sort(probs)[::-1] if sort else probs


def random_probability_tree(seed, width=4):
    def child_probs(path):
        r = np.random.default_rng([seed, len(path), *path])
        return np.sort(r.dirichlet(np.full(width + 1, 0.7))[:width])[::-1]
    return child_probs


def test_tree_basics_and_attention_mask():
    tree = positional_tree([-1, 0, 0, 1, 1, 2, 3], [0.5, 0.3])
    assert tree.size == 7 and tree.depth == 3
    assert tree.ranks == (0, 0, 1, 0, 1, 0, 0)
    assert tree.expected_tokens == pytest.approx(1 + 0.5 + 0.3 + 0.25 + 0.15 + 0.15 + 0.125)
    assert list(tree.level_widths()) == [1, 2, 3, 1]
    assert list(tree.expanded_level_widths()) == [1, 2, 1]
    graph = nx.DiGraph([(tree.parents[i], i) for i in range(1, tree.size)])
    mask = tree.attention_mask()
    for i in range(tree.size):
        allowed = nx.ancestors(graph, i) | {i}
        assert set(np.flatnonzero(mask[i])) == allowed


def test_chain_tree_matches_chain_formula():
    for alpha in (0.3, 0.8, 1.0):
        assert chain_tree(5, [alpha]).expected_tokens == pytest.approx(expected_tokens(alpha, 5))


def test_kary_tree_shape_and_value():
    tree = kary_tree(3, 2, [0.4, 0.2, 0.1])
    assert tree.size == 1 + 3 + 9 and tree.depth == 2
    assert tree.expected_tokens == pytest.approx(1 + 0.7 + 0.7**2)


@pytest.mark.parametrize("ranks", ["prefix", "any"])
def test_dp_matches_brute_force_on_small_budgets(ranks):
    rng = np.random.default_rng(5 if ranks == "prefix" else 6)
    for case in range(60):
        probs = random_accept_probs(rng, int(rng.integers(1, 5)), sort=case % 2 == 0)
        budget = int(rng.integers(1, 9 if ranks == "prefix" else 7))  # "any" has many more trees
        depth = None if case % 3 == 0 else int(rng.integers(0, 5))
        dp = optimal_tree(probs, budget, depth, ranks=ranks)
        brute = brute_force_optimal_tree(probs, budget, depth, ranks=ranks)
        assert dp.expected_tokens == pytest.approx(brute.expected_tokens, abs=1e-12)
        assert dp.size <= budget and (depth is None or dp.depth <= depth)
        if ranks == "prefix":
            for kids in dp.children:
                assert sorted(dp.ranks[k] for k in kids) == list(range(len(kids)))


def test_any_ranks_beats_prefix_only_when_probs_are_unsorted():
    unsorted = [0.3, 0.05, 0.25]
    assert optimal_tree(unsorted, 3, 1, ranks="any").ranks == (0, 0, 2)
    assert optimal_tree(unsorted, 3, 1, ranks="any").expected_tokens == pytest.approx(1.55)
    assert optimal_tree(unsorted, 3, 1, ranks="prefix").expected_tokens == pytest.approx(1.35)
    monotone = [0.5, 0.2, 0.1]
    assert optimal_tree(monotone, 20, 4, ranks="any").expected_tokens == pytest.approx(
        optimal_tree(monotone, 20, 4, ranks="prefix").expected_tokens)


def test_dp_table_values_match_reconstructed_trees():
    table = tree_table([0.5, 0.2, 0.1, 0.05], budget=40, max_depth=6)
    for budget in (1, 2, 7, 23, 40):
        for depth in (0, 1, 3, 6):
            tree = table.tree(budget, depth)
            assert tree.expected_tokens == pytest.approx(table.value[depth, budget])
            assert tree.size <= budget and tree.depth <= depth


@pytest.mark.parametrize("budget,depth", [(32, None), (64, 6), (128, 10)])
def test_dp_equals_exact_top_n_for_monotone_probs(budget, depth):
    probs = [0.55, 0.18, 0.09, 0.05, 0.03, 0.02]
    dp = optimal_tree(probs, budget, depth)
    top = top_n_tree(positional_child_probs(probs), budget, depth)
    assert dp.expected_tokens == pytest.approx(top.expected_tokens, rel=1e-12)


def test_builders_never_beat_the_optimum():
    probs = [0.5, 0.2, 0.1, 0.05]
    budget, depth = 31, 5
    best = optimal_tree(probs, budget, depth).expected_tokens
    candidates = {
        "chain": chain_tree(5, probs),
        "binary": kary_tree(2, 4, probs),
        "medusa": medusa_tree(np.tile(probs, (depth, 1)), budget),
        "eagle2": eagle2_tree(positional_child_probs(probs), top_k=4, depth=depth, budget=budget),
    }
    for name, tree in candidates.items():
        assert tree.size <= budget and tree.depth <= depth, name
        assert tree.expected_tokens <= best + 1e-12, name
    assert candidates["medusa"].expected_tokens == pytest.approx(best)  # greedy is exact when monotone


def test_medusa_greedy_small_example():
    # heads: depth 1 candidates [0.6, 0.2], depth 2 candidates [0.5, 0.1]
    tree = medusa_tree([[0.6, 0.2], [0.5, 0.1]], budget=4)
    # greedy order: 0.6 (d1 r0), 0.3 (d2 under r0), 0.2 (d1 r1)
    assert sorted(np.round(tree.path_probs, 6)) == sorted([1.0, 0.6, 0.3, 0.2])


def test_eagle2_beam_is_at_most_exact_top_n_on_probability_trees():
    for seed in range(8):
        child_probs = random_probability_tree(seed)
        top = top_n_tree(child_probs, budget=25, max_depth=5)
        eagle = eagle2_tree(child_probs, top_k=3, depth=5, budget=25)
        assert eagle.size == 25 and eagle.depth <= 5
        assert eagle.expected_tokens <= top.expected_tokens + 1e-12
        # top-N really holds the largest path products: nothing left out beats the smallest kept one
        assert top.path_probs[1:].min() >= _best_excluded(top, child_probs, 5) - 1e-12


def _best_excluded(tree, child_probs, max_depth):
    paths = {(): 0}
    best = 0.0
    for i in range(1, tree.size):
        paths[_path(tree, i)] = i
    for path, node in paths.items():
        if len(path) >= max_depth:
            continue
        for rank, prob in enumerate(child_probs(path)):
            if path + (rank,) not in paths:
                best = max(best, tree.path_probs[node] * prob)
    return best


def _path(tree, node):
    ranks = []
    while node:
        ranks.append(tree.ranks[node])
        node = tree.parents[node]
    return tuple(reversed(ranks))


@pytest.mark.parametrize("verification", ["top_k_match", "rrs_wor"])
def test_expected_tokens_match_token_level_verification(verification):
    probs = positional_accept_probs(P, Q, 3, verification)
    for tree in (optimal_tree(probs, 12, 4), kary_tree(2, 3, probs), chain_tree(4, probs)):
        steps = 30_000
        tokens = simulate_tree_verification(tree, P, Q, verification, steps, np.random.default_rng(tree.size))
        assert abs(tokens.mean() - tree.expected_tokens) < 5 * tokens.std() / np.sqrt(steps)


EDGE_PAIRS = {"equal": ([0.5, 0.3, 0.2], [0.5, 0.3, 0.2]),            # the drafter is the target
              "disjoint": ([1.0, 0.0, 0.0], [0.0, 0.5, 0.5]),         # nothing is ever accepted
              "two_draftable": ([0.2, 0.3, 0.5], [0.5, 0.5, 0.0]),    # fewer draftable tokens than children
              "near_zero": ([1 - 1e-12, 1e-12, 0.0], [1e-12, 0.5, 0.5 - 1e-12])}
EDGE_SHAPES = {"root_only": [-1], "depth_1": [-1, 0], "chain_8": [-1] + list(range(8)),
               "wide_7": [-1] + [0] * 7, "two_levels_of_4": [-1] + [0] * 4 + [1] * 4 + [2] * 4}


@pytest.mark.parametrize("pair", EDGE_PAIRS)
@pytest.mark.parametrize("shape", EDGE_SHAPES)
@pytest.mark.parametrize("verification", ["top_k_match", "rrs_wor"])
def test_expected_tokens_match_token_level_verification_at_the_edges(pair, shape, verification):
    """Real token-level verification against Tree.expected_tokens at acceptance 0, ~0 and 1, with trees of one
    node, depth 1, a width-1 chain and nodes with more children than the drafter has tokens."""
    p, q = EDGE_PAIRS[pair]
    tree = positional_tree(EDGE_SHAPES[shape], positional_accept_probs(p, q, 7, verification))
    steps = 20_000
    tokens = simulate_tree_verification(tree, p, q, verification, steps, np.random.default_rng(tree.size))
    assert abs(tokens.mean() - tree.expected_tokens) <= 5 * tokens.std() / np.sqrt(steps) + 1e-9


def test_rrs_wor_positional_probs_are_round_acceptances():
    probs = positional_accept_probs(P, Q, 4, "rrs_wor")
    assert probs[0] == pytest.approx(np.minimum(P, Q).sum())
    assert probs.sum() <= 1.0 + 1e-12
    top = positional_accept_probs(P, Q, 2, "top_k_match")
    assert list(top) == [P[0], P[1]]


def test_hardware_aware_choice_matches_exhaustive_search():
    probs = [0.6, 0.15, 0.08, 0.04]

    def draft_step_s(nodes):
        return 1e-3 + 2e-5 * nodes

    def verify_s(nodes):
        return 10e-3 + 1e-4 * max(0, nodes - 16)  # flat until 16 tokens, then compute-bound

    choice = choose_tree_size(probs, draft_step_s, verify_s, max_budget=48, max_depth=8)
    trees = [optimal_tree(probs, b, d) for b in range(1, 49) for d in range(0, 9)]
    best = max((t.expected_tokens / step_time_s(t, draft_step_s, verify_s),) for t in trees)
    assert choice.tokens_per_s == pytest.approx(best[0])
    assert choice.tree.expected_tokens / step_time_s(choice.tree, draft_step_s, verify_s) == pytest.approx(best[0])
    # a free verifier and free drafter push to the largest tree; a costly draft pushes to no speculation
    assert choose_tree_size(probs, lambda n: 0.0, lambda n: 1.0, 20, 4).tree.expected_tokens == pytest.approx(
        optimal_tree(probs, 20, 4).expected_tokens)
    assert choose_tree_size(probs, lambda n: 1.0, lambda n: 0.01, 20, 4).tree.size == 1


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.integers(1, 40), depth=st.integers(0, 8))
def test_dp_monotone_in_budget_and_depth(seed, budget, depth):
    probs = random_accept_probs(np.random.default_rng(seed), 4, sort=False)
    table = tree_table(probs, budget, depth)
    assert np.all(np.diff(table.value[:, 1:], axis=1) >= -1e-12)
    assert np.all(np.diff(table.value[:, 1:], axis=0) >= -1e-12)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="^budget"):
        optimal_tree([0.5], -3)
    with pytest.raises(ValueError, match="^budget"):
        optimal_tree([0.5], 0)
    with pytest.raises(ValueError, match="^max_depth"):
        optimal_tree([0.5], 5, -1)
    with pytest.raises(ValueError, match="^accept_probs must sum to at most 1"):
        optimal_tree([0.7, 0.6], 5)
    with pytest.raises(ValueError, match="^accept_probs entries"):
        chain_tree(3, [1.2])
    with pytest.raises(ValueError, match="^parents"):
        Tree((-1, 2, 0), (0, 0, 1), (1.0, 0.5, 0.5))
    with pytest.raises(ValueError, match="children of node 0 sums"):
        Tree((-1, 0, 0), (0, 0, 1), (1.0, 0.7, 0.5))
    with pytest.raises(ValueError, match="^ranks"):
        optimal_tree([0.5], 5, ranks="sorted")
    with pytest.raises(ValueError, match="^verification"):
        positional_accept_probs(P, Q, 2, "greedy")
    with pytest.raises(ValueError, match="^head_accuracies"):
        medusa_tree([[0.8, 0.5]], 4)
    with pytest.raises(ValueError, match="^max_budget"):
        choose_tree_size([0.5], lambda n: 1.0, lambda n: 1.0, 0, 3)
    tree = with_positional_accept(kary_tree(2, 1, [0.5, 0.2]), [0.1])
    assert tree.accept == (1.0, 0.1, 0.0)
