"""SGLang's NGRAM trie and its walks, hand-worked (simulator.speculation.suffix.sglang_ngram). Each rule restates
SGLang's source: Trie::insert / match / buildRecency (jit_kernel/csrc/ngram_corpus/trie.cpp, 0.5.10-0.5.23),
fillResult's token-0 padding (result.cpp), the inserted window (ngram_worker.py _update_ngram_corpus) and when it
holds the step's own tokens (verify appends to output_ids through 0.5.13; eagle_sample from 0.5.14)."""
import numpy as np
import pandas as pd

from simulator.speculation.suffix.sglang_ngram import NgramTrie, SglangNgramParams, accepted_along, sglang_ngram_walks


def test_insert_adds_every_suffix_and_anchors_need_children():
    trie = NgramTrie(SglangNgramParams(4, max_trie_depth=3))
    trie.insert([1, 2, 3])                    # paths 1-2-3, 2-3, 3
    anchors = [(n.token, d) for n, d in trie.anchors([5, 1, 2])]
    assert anchors == [(2, 2), (2, 1)]        # [1, 2] and [2] (both have child 3); [5, 1, 2] is no path
    assert trie.anchors([1, 2, 3]) == []      # every suffix ending in 3 is a leaf


def test_bfs_takes_the_most_recent_children_within_the_breadth():
    # max_trie_depth 3: max_match_depth 2; breadth 1..3: scale 1.0; anchor depth 1 -> breadth (2 - 1) * 1 + 1 = 2
    trie = NgramTrie(SglangNgramParams(4, max_trie_depth=3, min_bfs_breadth=1, max_bfs_breadth=3))
    trie.insert([1, 8])
    trie.insert([1, 9])                       # 9 is now node 1's most recent child
    assert trie.draft_tree([1]) == [{9: 1, 8: 2}, {}, {}]
    narrow = NgramTrie(SglangNgramParams(4, max_trie_depth=3, min_bfs_breadth=1, max_bfs_breadth=1))
    narrow.insert([1, 8])
    narrow.insert([1, 9])
    assert narrow.draft_tree([1]) == [{9: 1}, {}]     # breadth 1: the most recent child only
    one = NgramTrie(SglangNgramParams(1, max_trie_depth=3, min_bfs_breadth=1, max_bfs_breadth=3))
    one.insert([1, 8])
    one.insert([1, 9])
    assert one.draft_tree([1]) == [{9: 1}, {}]        # the budget (speculative_num_draft_tokens - 1) stops it


def test_capacity_frees_the_least_recent_leaves_first():
    trie = NgramTrie(SglangNgramParams(4, max_trie_depth=2, capacity=4))   # the root + 3 nodes
    trie.insert([1, 2])                       # 1, 1-2, 2: full
    trie.insert([3])                          # needs one node: the least recent (1-2, then 1...) goes
    assert 3 in trie.root.children and len(trie.lru) == 3
    assert trie.root.children[1].children == {}


def test_greedy_tree_verification_counts_the_padding_rows():
    tree = [{6: 1}, {5: 2}, {}]
    assert accepted_along(tree, 2, [6, 5], 2) == 2
    assert accepted_along(tree, 2, [6, 5], 1) == 1                  # the request's last tokens cap it
    assert accepted_along([{}], 2, [0, 4], 2) == 1                  # a padded row (token 0 under the root) accepts
    assert accepted_along([{}], 0, [0], 1) == 0     # no padding without a budget
    assert accepted_along([{7: 1, 8: 2}, {}, {}], 2, [0], 1) == 0     # a full tree has no padding row


def _one_request():
    return pd.DataFrame({"prompt_tokens": [[5]], "output_tokens": [[5, 6, 5, 6, 5]], "ended_by_stop": [True],
                         "turn": [0], "workload": ["w"]})


def test_walk_before_0_5_14_inserts_the_steps_own_tokens():
    # ctx [5, 5]. Step 1: empty trie, truth 6 -> 0; insert [5, 5, 6]. Step 2: no suffix of [5, 5, 6] has children
    # -> 0; insert [5, 6, 5]. Step 3: anchor [5] (children 6, 5; 6 most recent), breadth 1: 6, then 5-6's child 5:
    # tree 6-5, truth [6, 5] -> 2, the request ends.
    walks = sglang_ngram_walks(_one_request(), SglangNgramParams(2, max_trie_depth=3, min_bfs_breadth=1,
                                                                  max_bfs_breadth=1, insert_lags_one_step=False))
    assert walks.accepted[0].tolist() == [0, 0, 2] and walks.proposed[0].tolist() == [2, 2, 2]


def test_walk_from_0_5_14_inserts_one_step_behind():
    # Step 1 inserts [5, 5]; step 2 inserts [5, 5, 6]; step 3: anchor [5] -> 6, whose trie node 5-6 is a leaf:
    # tree 6 (and a padding row), truth [6, 5] -> 1.
    walks = sglang_ngram_walks(_one_request(), SglangNgramParams(2, max_trie_depth=3, min_bfs_breadth=1,
                                                                  max_bfs_breadth=1, insert_lags_one_step=True))
    assert walks.accepted[0].tolist() == [0, 0, 1]


def test_an_sglang_deployment_walks_sglang_s_proposer():
    from simulator.config.speculation import NgramDrafterConfig
    from simulator.speculation.suffix.acceptance import drafter_key
    d = NgramDrafterConfig(kind="ngram", gamma=4)
    assert drafter_key(d)[0] == "ngram"
    assert drafter_key(d, ("sglang", "0.5.13")) == ("sglang_ngram", 4, 18, 1, 10, 10_000_000, False)
    assert drafter_key(d, ("sglang", "0.5.14"))[-1] is True
    assert np.all(np.asarray(drafter_key(d, ("sglang", None))[1:6]) > 0)


# Match type PROB: Trie::buildFrequency (trie.cpp, the same body in 0.5.10 and 0.5.23). Each trie node counts the
# inserted paths through it (`freq`); a node's children are taken in `sorted_children` order (CompareByFreq: freq
# descending, then token ascending), the first max_bfs_breadth of them, each with probability freq / (their summed
# freq) * the parent's; one std::priority_queue pops the most probable candidate next. min_bfs_breadth is unused.
# Each trace below was also checked against SGLang 0.5.10's own trie.cpp, compiled with g++ (2026-11-29).

def _prob(budget, **kw):
    return NgramTrie(SglangNgramParams(budget, max_trie_depth=3, match_type="PROB", **kw))


def test_prob_takes_the_most_frequent_child_where_bfs_takes_the_most_recent():
    for match_type, expected in (("PROB", [{9: 1}, {}]), ("BFS", [{8: 1}, {}])):
        trie = NgramTrie(SglangNgramParams(4, max_trie_depth=3, min_bfs_breadth=1, max_bfs_breadth=1,
                                           match_type=match_type))
        trie.insert([1, 9])
        trie.insert([1, 9])                   # 1-9: freq 2
        trie.insert([1, 8])                   # 1-8: freq 1, but the most recent
        assert trie.draft_tree([1]) == expected, match_type


def test_prob_grows_the_most_probable_path_not_level_by_level():
    # children of [1]: 2 (freq 2) -> p 2/3, 4 (freq 1) -> p 1/3; 1-2's child 3 (freq 2, alone) -> p 2/3 * 1 = 2/3:
    # budget 2 takes 2 then 3 (2/3 > 1/3). BFS with breadth 2 takes both children of [1] first: 4 (most recent), 2.
    prob, bfs = _prob(2, min_bfs_breadth=2, max_bfs_breadth=2), NgramTrie(SglangNgramParams(
        2, max_trie_depth=3, min_bfs_breadth=2, max_bfs_breadth=2))
    for trie in (prob, bfs):
        for window in ([1, 2, 3], [1, 2, 3], [1, 4]):
            trie.insert(window)
    assert prob.draft_tree([1]) == [{2: 1}, {3: 2}, {}]
    assert bfs.draft_tree([1]) == [{4: 1, 2: 2}, {}, {}]


def test_prob_breaks_equal_probabilities_as_libstdcxx_heap_pops_them():
    # four children of [5], freq 1 each, pushed in token order 11, 12, 13, 14, each p 1/4. libstdc++'s pop_heap
    # (__adjust_heap) pops 11, then 13 (the right child of the hole), not 12: budget 2 drafts 11 and 13.
    trie = _prob(2, max_bfs_breadth=4)
    for tok in (11, 12, 13, 14):
        trie.insert([5, tok])
    assert trie.draft_tree([5]) == [{11: 1, 13: 2}, {}, {}]


def test_cxx_heap_pops_equal_keys_in_libstdcxx_order():
    from simulator.speculation.suffix.cxx_heap import CxxMaxHeap
    heap = CxxMaxHeap(key=lambda item: item[1])
    for name in "ABCD":
        heap.push((name, 0.5))
    assert [heap.pop()[0] for _ in range(4)] == ["A", "C", "B", "D"]
    for name, key in (("x", 1.0), ("y", 3.0), ("z", 2.0)):
        heap.push((name, key))
    assert [heap.pop()[0] for _ in range(3)] == ["y", "z", "x"]


def test_walk_with_prob_misses_where_bfs_hits():
    # max_trie_depth 3, budget 2, breadth 1, inserts one step behind (0.5.14 on). Steps 1 and 2 as in
    # test_walk_from_0_5_14_inserts_one_step_behind: trie of [5, 5] and [5, 5, 6]. Step 3, context [5, 6, 5]: anchor
    # [5] only, children 5 (freq 2) and 6 (freq 1, the most recent). BFS drafts 6 -> accepts 1 and the request ends
    # (walk [0, 0, 1]). PROB drafts 5 then 5-5's child 6: truth 6 -> 0; insert [5, 6, 5]. Step 4, context [6, 5, 6]:
    # anchors [5, 6] (child 5) then [6] (child 5): both draft 5 under the root -> tree 5 + a padding row, truth 5 -> 1.
    def walk(match_type):
        return sglang_ngram_walks(_one_request(), SglangNgramParams(2, max_trie_depth=3, min_bfs_breadth=1,
                                                                     max_bfs_breadth=1, match_type=match_type))
    assert walk("BFS").accepted[0].tolist() == [0, 0, 1]
    prob = walk("PROB")
    assert prob.accepted[0].tolist() == [0, 0, 0, 1] and prob.proposed[0].tolist() == [2, 2, 2, 2]


def test_the_drafter_section_s_trie_settings_reach_the_walk():
    from simulator.config.speculation import NgramDrafterConfig
    from simulator.speculation.suffix.acceptance import WALKERS, drafter_key
    d = NgramDrafterConfig(kind="ngram", gamma=2, max_trie_depth=3, min_bfs_breadth=1, max_bfs_breadth=1,
                           match_type="PROB", capacity_nodes=50)
    key = drafter_key(d, ("sglang", "0.5.16"))
    assert key == ("sglang_ngram_prob", 2, 3, 1, 1, 50, True)
    assert WALKERS[key[0]](_one_request(), *key[1:]).accepted[0].tolist() == [0, 0, 0, 1]
    bfs = NgramDrafterConfig(kind="ngram", gamma=2, max_trie_depth=3, min_bfs_breadth=1, max_bfs_breadth=1)
    key = drafter_key(bfs, ("sglang", "0.5.16"))
    assert key == ("sglang_ngram", 2, 3, 1, 1, 10_000_000, True)
    assert WALKERS[key[0]](_one_request(), *key[1:]).accepted[0].tolist() == [0, 0, 1]
