"""Suffix decoding's tree and proposer against hand-worked cases and a brute-force reference
(tests/simulator/speculation/suffix_reference.py: counts by scanning, orders by replaying the event log)."""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings, strategies as st

from simulator.speculation.suffix.cache import SuffixCache, SuffixParams, SuffixProposer
from simulator.speculation.suffix.tree import SuffixTree
from suffix_reference import BruteSuffix


def _children(tree: SuffixTree, w) -> list:
    node = tree.match(w)
    order = tree.order[node] if node >= 0 else None
    return [tree.token[c] for c in order] if order else []


def test_counts_are_occurrences_cut_at_max_depth():
    tree = SuffixTree(3)
    tree.extend(0, [1, 2, 1, 2, 1])
    assert tree.count[0] == 5
    assert tree.count[tree.match([1])] == 3 and tree.count[tree.match([1, 2])] == 2
    assert tree.count[tree.match([1, 2, 1])] == 2
    assert tree.match([1, 2, 1, 2]) == -1          # longer than max_depth: not stored


def test_sibling_order_follows_the_engines_rule():
    # Hand-worked with ArcticInference's _increment_count: children of [9] seen in the order a, b, c.
    a, b, c = 1, 2, 3
    tree = SuffixTree(4)
    seq = []

    def see(t):  # one more occurrence of "9 t"
        seq.extend([9, t, 0])
        tree.extend(0, [9, t, 0])

    for t in (a, b, c):
        see(t)
    assert _children(tree, [9]) == [a, b, c]        # all count 1: creation order
    see(c)                                          # c: 1 -> 2, tied with b before: goes in front of a
    assert _children(tree, [9]) == [c, a, b]
    see(b)                                          # b: tied with a (prev) -> behind c, which has 2
    assert _children(tree, [9]) == [c, b, a]
    see(b)                                          # b: prev c has 2 = new-1 ... b goes to 3: front
    assert _children(tree, [9]) == [b, c, a]
    see(c)                                          # c: prev b has 3 = its new count: in front of b
    assert _children(tree, [9]) == [c, b, a]


def test_speculation_stops_below_min_token_prob_and_at_the_match_cap():
    tree = SuffixTree(8)
    tree.extend(0, [5, 6, 7, 8, 5, 6, 7, 9])
    # context ends with 5 6: match 1 ("6": 2 occurrences, both -> 7), match 2 ("5 6")
    draft = tree.speculate([4, 5, 6], max_spec_tokens=8)
    assert draft.match_len == 2
    assert draft.tokens == (7, 8) and np.allclose(draft.probs, [1.0, 0.5])
    assert tree.speculate([4, 5, 6], max_spec_tokens=8, max_spec_factor=0.5).tokens == (7,)
    assert tree.speculate([4, 5, 6], max_spec_tokens=8, min_token_prob=0.6).tokens == (7,)


alphabet = st.integers(0, 3)


@settings(max_examples=60, deadline=None)
@given(seqs=st.lists(st.lists(alphabet, min_size=1, max_size=30), min_size=1, max_size=3),
       depth=st.integers(1, 6), removals=st.lists(st.integers(0, 2), max_size=2))
def test_counts_and_orders_match_brute_force(seqs, depth, removals):
    tree, ref = SuffixTree(depth), BruteSuffix(depth)
    for i, s in enumerate(seqs):
        tree.extend(i, s)
        ref.extend(i, s)
    for r in removals:
        if r in tree.seqs:
            tree.remove(r)
            ref.remove(r)
    for n in range(1, depth + 1):
        for w in itertools.product(range(4), repeat=n):
            node = tree.match(w)
            assert (tree.count[node] if node >= 0 else 0) == ref.count(w), w
            if node >= 0 and n < depth:
                assert _children(tree, w) == ref.order(w), w


@settings(max_examples=80, deadline=None)
@given(text=st.lists(alphabet, min_size=2, max_size=40), context=st.lists(alphabet, min_size=1, max_size=10),
       depth=st.integers(2, 8), cap=st.integers(0, 8), factor=st.sampled_from([0.5, 1.0, 2.0]),
       offset=st.sampled_from([-1.0, 0.0, 1.5]), min_prob=st.sampled_from([0.0, 0.1, 0.4]))
def test_speculation_matches_brute_force(text, context, depth, cap, factor, offset, min_prob):
    tree, ref = SuffixTree(depth), BruteSuffix(depth)
    tree.extend(0, text)
    ref.extend(0, text)
    context = context[-depth:]
    got = tree.speculate(context, cap, factor, offset, min_prob)
    want = ref.speculate(context, cap, factor, offset, min_prob)
    assert (got.tokens, got.probs, got.match_len) == (want[0], want[1], want[3])
    assert got.score == want[2]


def test_cache_prefers_local_on_ties_and_evicts_fifo():
    cache = SuffixCache(max_tree_depth=4, max_cached_requests=2)
    cache.start_request("a", [1, 2, 3])
    cache.add_active_response("a", [1, 2, 4])
    # local "2" -> 3 or 4 (1/2 each); global (a's own output 1 2 4) "2" -> 4 with probability 1: global wins
    assert cache.speculate("a", [1, 2], 4).tokens == (4,)
    cache.stop_request("a")
    cache.start_request("b", [7])
    cache.start_request("c", [8])                     # a, b, c cached > 2: a (oldest) is evicted
    assert list(cache.cached) == ["b", "c"] and not cache.global_tree.seqs.get(0)
    cache.add_active_response("c", [5, 6, 5, 6])
    # c's own output is in the global tree too; local holds prompt + output: equal scores -> local
    assert cache.speculate("c", [5, 6, 5], 4).tokens[:1] == (6,)


def test_proposer_drafts_repeated_text_from_the_prompt():
    prop = SuffixProposer(SuffixParams(num_speculative_tokens=6, max_tree_depth=24))
    prompt = list(range(100, 120))
    draft = prop.start("r", prompt, [100])
    assert draft.tokens == (101,) and draft.probs == (0.5,)   # "100" twice, once followed by 101
    draft = prop.propose("r", [101, 102, 103])         # "100 101 102 103" (4 tokens) occurs in the prompt
    assert draft.match_len == 4                        # max_spec_factor 1: at most 4 tokens for a 4-token match
    assert draft.tokens == (104, 105, 106, 107)
