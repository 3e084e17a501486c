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
