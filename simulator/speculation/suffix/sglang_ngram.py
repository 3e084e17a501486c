"""SGLang's NGRAM speculation (`--speculative-algorithm NGRAM`) walked through real multi-turn sessions: one
trie over recent token windows of every request, a draft *tree* grown from it by BFS each step, and greedy
tree verification.

Sources (the PyPI wheels, read 2026-11-29; behaviour restated, no code copied):
- The trie (`jit_kernel/csrc/ngram_corpus/trie.cpp` in 0.5.10-0.5.16, `kernels/jit/csrc/ngram_corpus/trie.cpp`
  in 0.5.23; `Trie::insert`, `Trie::match` / `rebuildMatchState_`, `Trie::buildRecency`, `Trie::squeeze`):
  `insert(window)` adds, for every start i of the window, the path window[i : i + max_trie_depth] from the root;
  a node new to its parent goes to the front of the parent's recency list, an existing one is moved there; the
  path's nodes go to the front of one global recency list (deepest first, so a parent is always ahead of its
  children) and, when fewer than a path's length of the `capacity` nodes are free, the least recent nodes are
  freed first. `match(context)` takes every suffix of the context (at most max_trie_depth long, longest first)
  that is a path of the trie and has children: its anchors. `buildRecency` (match type BFS, the default) grows
  one draft tree of at most `draft_budget` nodes under the last token: from each anchor in turn a BFS whose
  breadth starts at (max(1, max_trie_depth − 1) − anchor depth) · scale + min_bfs_breadth, scale =
  (max_bfs_breadth − min_bfs_breadth) / max(1, max_trie_depth − 1), and drops by scale per level (at least 1
  child, truncated toward zero), taking each trie node's children most recent first and merging equal tokens
  under the same draft node; it stops when the budget is spent. `result.cpp` `fillResult` pads the tree to
  `speculative_num_draft_tokens` rows with token 0 as children of the root.
- The worker (`srt/speculative/ngram_worker.py`, 0.5.10-0.5.23): the budget is speculative_num_draft_tokens − 1
  (`Param::get_draft_token_num`, no batch schedule); drafts are looked up from the last max_trie_depth tokens of
  prompt + output; after each verify `_update_ngram_corpus` inserts the last max_trie_depth tokens of prompt +
  `req.output_ids`. Through 0.5.13 the verify (`NgramVerifyInput.verify`, ngram_info.py) has already appended
  the step's accepted tokens to `req.output_ids`, so the window ends with this step's tokens; from 0.5.14 the
  worker samples with `eagle_sample` and the scheduler appends them after the forward, so the window ends with
  the previous step's tokens (overlap mode splices those in as `prev_tokens`: the same window). The prefill
  inserts nothing (the commented-out 'extend' insert), so a request's own prompt enters the trie only as the
  tail window of its first decode step.
- Verification (`eagle_sample` / `verify_tree_greedy`): greedy, along the tree; the accepted tokens are the
  longest path whose every token is the target's next token. Siblings have distinct tokens, so the path does not
  depend on the order of siblings (the unordered_map order of `fillResult`). A padding row (token 0, a child of
  the root) is a candidate like any other: it accepts one token when the target's next token is id 0.

Named approximations: as for suffix decoding (simulator.speculation.suffix.walk), the corpus requests are served
one after another in turn-major order, so the trie holds earlier requests' windows, not those of requests
running beside this one. Served one at a time, the incremental MatchState of 0.5.11+ (anchors advanced by the
new tokens instead of rebuilt) finds the same anchors as a rebuild: a suffix that ends in this step's new tokens
can only be in the trie through an insert made before the previous draft (this request's own windows end
before the new tokens), whose prefix was then an anchor already.

Settings (drafter section, simulator.config.speculation.NgramDrafterConfig; which release has which flag:
simulator.speculation.suffix.acceptance.SGLANG_NGRAM_FLAGS): max_trie_depth, min/max_bfs_breadth, capacity and the
match type. Match type PROB (`Trie::buildFrequency`, the same body in 0.5.10 and 0.5.23): every trie node counts
the inserted paths through it (`freq`: 1 when created, +1 each time an insert passes it); a node's children are
taken in `sorted_children` order (`TrieNode::CompareByFreq`: freq descending, then token ascending), only the first
max_bfs_breadth of them, each pushed with probability freq / (the summed freq of those taken) x its parent's (1 for
an anchor's) onto one `std::priority_queue` shared by the anchors in turn; the most probable candidate is popped
next, added under its draft parent (or merged with an equal token there) and its own children pushed, until the
budget is spent. min_bfs_breadth is not read. Equal probabilities pop in the order of libstdc++'s heap
(simulator.speculation.suffix.cxx_heap, a named assumption). Checked 2026-11-29: both match types against SGLang
0.5.10's own trie.cpp compiled with g++, 3,727 random drafts, none differing. Not modelled: the external corpus
(--speculative-ngram-external-*, 0.5.13 on: a suffix automaton beside the trie) and the batch-size draft schedule
(`Param::batch_draft_token_num`, which no server flag sets).
"""
from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SglangNgramParams:
    """SGLang's --speculative-ngram-* settings (defaults: srt/server_args.py / arg_groups/fields/spec.py, 0.5.10 to
    0.5.23) and the draft budget (speculative_num_draft_tokens − 1)."""

    draft_budget: int
    max_trie_depth: int = 18          # --speculative-ngram-max-trie-depth
    min_bfs_breadth: int = 1          # --speculative-ngram-min-bfs-breadth
    max_bfs_breadth: int = 10         # --speculative-ngram-max-bfs-breadth
    capacity: int = 10_000_000        # --speculative-ngram-capacity (trie nodes, the root included)
    insert_lags_one_step: bool = True  # 0.5.14 on: the inserted window ends with the previous step's tokens
    match_type: str = "BFS"           # --speculative-ngram-match-type: BFS (buildRecency) or PROB (buildFrequency)


class _Node:
    __slots__ = ("token", "parent", "children", "freq")

    def __init__(self, token: int, parent):
        self.token, self.parent, self.freq = token, parent, 1
        self.children: OrderedDict = OrderedDict()   # token -> _Node, most recently inserted first

    def by_frequency(self) -> list:
        """The children in `sorted_children` order (TrieNode::CompareByFreq): frequency descending, then token
        ascending (siblings have distinct tokens, so the pointer tie-break never decides)."""
        return sorted(self.children.values(), key=lambda n: (-n.freq, n.token))


class NgramTrie:
    """SGLang's trie (module docstring): insert, match, BFS draft tree, LRU eviction at capacity."""

    def __init__(self, params: SglangNgramParams):
        self.p = params
        self.root = _Node(-1, None)
        self.free = params.capacity - 1           # (the root takes one node of the pool)
        self.lru: OrderedDict = OrderedDict()     # node -> None, most recent first

    def _squeeze(self, count: int) -> None:
        for _ in range(count):
            node, _ = self.lru.popitem(last=True)
            del node.parent.children[node.token]
            self.free += 1

    def insert(self, window) -> None:
        tokens, depth = [int(t) for t in window], self.p.max_trie_depth
        for i in range(len(tokens)):
            path = tokens[i:i + depth]
            if len(path) > self.free:
                self._squeeze(len(path) - self.free)
            cursor, nodes = self.root, []
            for tok in path:
                child = cursor.children.get(tok)
                if child is None:
                    child = cursor.children[tok] = _Node(tok, cursor)
                    self.free -= 1
                    self.lru[child] = None
                else:
                    child.freq += 1
                cursor.children.move_to_end(tok, last=False)
                cursor = child
                nodes.append(child)
            for node in reversed(nodes):
                self.lru.move_to_end(node, last=False)

    def anchors(self, context) -> list:
        """(trie node, depth) of every suffix of `context` (the last max_trie_depth tokens) that is a trie path
        with children, longest first."""
        ctx = [int(t) for t in context][-self.p.max_trie_depth:]
        out = []
        for d in range(len(ctx), 0, -1):
            node = self.root
            for tok in ctx[len(ctx) - d:]:
                node = node.children.get(tok)
                if node is None:
                    break
            if node is not None and node.children:
                out.append((node, d))
        return out

    def draft_tree(self, context) -> list[dict]:
        """The draft tree of the match type: node 0 is the last token; tree[i] maps a token to its child's row."""
        return self._frequency_tree(context) if self.p.match_type == "PROB" else self._recency_tree(context)

    def _recency_tree(self, context) -> list[dict]:
        """`buildRecency` (match type BFS, module docstring)."""
        p = self.p
        budget = p.draft_budget
        max_match_depth = max(1, p.max_trie_depth - 1)
        scale = (p.max_bfs_breadth - p.min_bfs_breadth) / max_match_depth
        tree: list[dict] = [{}]
        for node, depth in self.anchors(context):
            queue = deque([(0, (max_match_depth - depth) * scale + p.min_bfs_breadth, node)])
            while queue and len(tree) <= budget:
                parent, breadth_f, tnode = queue.popleft()
                breadth = max(1, int(breadth_f))
                for i, child in enumerate(tnode.children.values()):
                    if i >= breadth or len(tree) > budget:
                        break
                    pos = tree[parent].get(child.token)
                    if pos is None:
                        pos = tree[parent][child.token] = len(tree)
                        tree.append({})
                    queue.append((pos, breadth_f - scale, child))
        return tree

    def _frequency_tree(self, context) -> list[dict]:
        """`buildFrequency` (match type PROB, module docstring): one max-heap of (draft parent, trie node,
        probability), shared by the anchors in turn; equal probabilities pop in libstdc++'s heap order."""
        from simulator.speculation.suffix.cxx_heap import CxxMaxHeap
        budget, top_k = self.p.draft_budget, self.p.max_bfs_breadth
        tree: list[dict] = [{}]
        heap = CxxMaxHeap(key=lambda entry: entry[2])

        def expand(parent: int, tnode, prob: float) -> None:
            children = tnode.by_frequency()[:top_k]
            total = float(sum(c.freq for c in children)) or 1.0
            for c in children:
                heap.push((parent, c, c.freq / total * prob))

        for node, _ in self.anchors(context):
            expand(0, node, 1.0)
            while len(heap) and len(tree) <= budget:
                parent, tnode, prob = heap.pop()
                pos = tree[parent].get(tnode.token)
                if pos is None:
                    pos = tree[parent][tnode.token] = len(tree)
                    tree.append({})
                expand(pos, tnode, prob)
        return tree


def accepted_along(tree: list[dict], budget: int, truth, max_accept: int) -> int:
    """Greedy tree verification (module docstring): the longest path of `tree` that follows `truth`, with the
    padding rows (token 0 under the root) counted as candidates."""
    node, a = 0, 0
    while a < max_accept and a < len(truth):
        nxt = tree[node].get(int(truth[a]))
        if nxt is None:
            if node == 0 and int(truth[a]) == 0 and len(tree) - 1 < budget:
                a += 1                       # a padding row accepted; it has no children
            break
        node, a = nxt, a + 1
    return a


def sglang_ngram_walks(frame, params: SglangNgramParams):
    """Walks (simulator.speculation.suffix.walk.Walks) of SGLang's NGRAM drafter through a session corpus: every
    step verifies draft_budget tokens (the padded tree), accepting the path the target's real tokens follow."""
    from simulator.speculation.suffix.walk import Walks, serving_order
    trie, depth, budget = NgramTrie(params), params.max_trie_depth, params.draft_budget
    proposed, accepted = [None] * len(frame), [None] * len(frame)
    for i in serving_order(frame):
        row = frame.iloc[i]
        out = [int(t) for t in row["output_tokens"]]
        ctx = [int(t) for t in row["prompt_tokens"]] + out[:1]
        stop, n, pos = bool(row["ended_by_stop"]), len(out), 1
        props, accs = [], []
        while pos < n:
            tree = trie.draft_tree(ctx[-depth:]) if budget else [{}]
            max_accept = n - pos if stop else n - pos - 1
            a = accepted_along(tree, budget, out[pos:pos + budget], max_accept) if budget else 0
            props.append(budget)
            accs.append(a)
            emitted = out[pos:pos + a + 1]
            if params.insert_lags_one_step:
                trie.insert(ctx[-depth:])
            ctx.extend(emitted)
            if not params.insert_lags_one_step:
                trie.insert(ctx[-depth:])
            pos += len(emitted)
        proposed[i], accepted[i] = np.asarray(props, np.int64), np.asarray(accs, np.int64)
    return Walks(tuple(proposed), tuple(accepted), tuple(frame["workload"].astype(str)))
