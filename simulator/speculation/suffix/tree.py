"""A depth-limited suffix tree with frequency counts: the data structure of suffix decoding.

Semantics (those of ArcticInference's `SuffixTree`, csrc/suffix_decoding/suffix_tree.{h,cc} in
github.com/snowflakedb/ArcticInference, the implementation vLLM's `method: suffix` imports; written here
from its documented behaviour, not translated):

- The tree holds sequences (`seq_id` → tokens). For every start position s of every sequence it holds the
  window seq[s : s + max_depth] (cut at the sequence's end) as a path from the root, so the node of a
  string w (|w| ≤ max_depth) exists iff w occurs in some sequence, and its `count` is the number of
  occurrences of w (start positions s with seq[s : s+|w|] = w); the root counts all start positions.
- Appending a token to a sequence extends the windows of its last max_depth start positions by one (the
  "active nodes"); removing a sequence takes all its windows out again.
- The children of a node are kept in ArcticInference's order: by decreasing count, equal counts ordered
  by history. A new child goes last. A child whose count grows by one stays where it is if its previous
  sibling's count exceeds its new count; otherwise it moves in front of the first sibling that has its
  previous sibling's count (so it goes behind the siblings that already have its new count when it was
  tied with its previous sibling, and in front of them when its previous sibling already had the new
  count). A child whose count drops by one stays unless its next sibling had its old count, in which case
  it moves in front of the first sibling with a smaller count (or to the end). Speculation follows the
  first child, so this order breaks ties between equally frequent continuations exactly as the engine
  does. The root's children are not kept in order (speculation never starts at the root).
- ArcticInference stores the tree path-compressed (chains of single-child nodes of equal count are one
  node); this tree is not compressed. Both give the same counts, orders and speculations; compression
  only saves memory (here, nodes are shared by repeated text, so memory grows with distinct windows).

`speculate(context, ...)` is ArcticInference's path speculation (`use_tree_spec=False`, what vLLM calls):
for each match length m = 1 … len(context) − 1 (stopping at the first m whose last-m-token suffix of the
context is not in the tree), follow the first child from the matched node while fewer than
min(max_spec_tokens, ⌊m·max_spec_factor + max_spec_offset⌋) tokens are drafted, multiplying the
estimated probability by count(child)/count(node) and stopping once it falls below min_token_prob; the
draft's score is the sum of its tokens' probabilities; the best score wins, a later (longer) match on
ties. Probabilities and scores are float32, as in the engine.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

_F32 = np.float32


@dataclass(frozen=True)
class Draft:
    """A speculation: draft tokens, each token's estimated probability, their sum (score) and the length
    of the context match that produced it."""

    tokens: tuple[int, ...] = ()
    probs: tuple[float, ...] = ()
    score: float = 0.0
    match_len: int = 0


@dataclass
class SuffixTree:
    max_depth: int
    count: list = field(default_factory=lambda: [0])       # per node
    token: list = field(default_factory=lambda: [-1])      # per node: the token on the edge into it
    parent: list = field(default_factory=lambda: [-1])
    kids: list = field(default_factory=lambda: [{}])        # per node: token -> child (None: no children yet)
    order: list = field(default_factory=lambda: [None])     # per node: children in engine order (root: None)
    seqs: dict = field(default_factory=dict)                 # seq_id -> list of tokens
    active: dict = field(default_factory=dict)               # seq_id -> deque of active nodes

    def __post_init__(self) -> None:
        if self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, got {self.max_depth}")

    @property
    def num_nodes(self) -> int:
        return len(self.count)

    # ---- sibling order ----------------------------------------------------------------------------------
    def _increment(self, child: int) -> None:
        count = self.count
        sib = self.order[self.parent[child]]
        if sib is None:          # a child of the root: no order kept
            count[child] += 1
            return
        i = sib.index(child)
        old = count[child]
        if i == 0 or count[sib[i - 1]] > old + 1:
            count[child] = old + 1
            return
        head_count = count[sib[i - 1]]
        j = i - 1
        while j > 0 and count[sib[j - 1]] == head_count:
            j -= 1
        del sib[i]
        sib.insert(j, child)
        count[child] = old + 1

    def _decrement(self, child: int) -> None:
        count = self.count
        sib = self.order[self.parent[child]]
        old = count[child]
        count[child] = old - 1
        if sib is None:
            return
        i = sib.index(child)
        if i + 1 >= len(sib) or count[sib[i + 1]] != old:
            return
        del sib[i]
        j = i
        while j < len(sib) and count[sib[j]] >= old:
            j += 1
        sib.insert(j, child)

    def _new_child(self, node: int, tok: int) -> int:
        child = len(self.count)
        self.count.append(1)
        self.token.append(tok)
        self.parent.append(node)
        self.kids.append(None)
        self.order.append(None)
        if self.kids[node] is None:
            self.kids[node] = {}
        self.kids[node][tok] = child
        if node != 0:
            if self.order[node] is None:
                self.order[node] = []
            self.order[node].append(child)
        return child

    # ---- updates ----------------------------------------------------------------------------------------
    def append(self, seq_id: int, tok: int) -> None:
        """Append one token to sequence `seq_id` (created if new)."""
        seq = self.seqs.setdefault(seq_id, [])
        active = self.active.setdefault(seq_id, deque())
        active.append(0)
        self.count[0] += 1
        if len(active) > self.max_depth:
            active.popleft()
        seq.append(tok)
        kids = self.kids
        for k, node in enumerate(active):
            children = kids[node]
            child = None if children is None else children.get(tok)
            if child is None:
                child = self._new_child(node, tok)
            else:
                self._increment(child)
            active[k] = child

    def extend(self, seq_id: int, tokens) -> None:
        for tok in tokens:
            self.append(seq_id, int(tok))

    def remove(self, seq_id: int) -> None:
        """Take sequence `seq_id` out of the tree (all its windows); nodes whose count reaches 0 go."""
        seq = self.seqs.pop(seq_id)
        self.active.pop(seq_id, None)
        for start in range(len(seq)):
            self.count[0] -= 1
            node = 0
            for idx in range(start, min(len(seq), start + self.max_depth)):
                children = self.kids[node]
                child = None if children is None else children.get(seq[idx])
                if child is None:
                    break
                if self.count[child] > 1:
                    self._decrement(child)
                    node = child
                    continue
                del children[seq[idx]]      # its subtree only held this window: drop it
                if self.order[node] is not None:
                    self.order[node].remove(child)
                break

    # ---- queries ----------------------------------------------------------------------------------------
    def match(self, pattern) -> int:
        """The node of string `pattern`, or -1 if it does not occur."""
        node = 0
        kids = self.kids
        for tok in pattern:
            children = kids[node]
            if children is None:
                return -1
            node = children.get(int(tok), -1)
            if node < 0:
                return -1
        return node

    def _path(self, node: int, max_tokens: int, min_prob) -> tuple[list, list, np.float32]:
        tokens, probs = [], []
        prob, score = _F32(1.0), _F32(0.0)
        count, order = self.count, self.order
        while len(tokens) < max_tokens:
            sib = order[node]
            if not sib:
                break
            child = sib[0]
            prob = _F32(prob * _F32(_F32(count[child]) / _F32(count[node])))
            if prob < min_prob:
                break
            tokens.append(self.token[child])
            probs.append(float(prob))
            score = _F32(score + prob)
            node = child
        return tokens, probs, score

    def speculate(self, context, max_spec_tokens: int, max_spec_factor: float = 1.0,
                  max_spec_offset: float = 0.0, min_token_prob: float = 0.1) -> Draft:
        """The engine's path speculation after `context` (module docstring)."""
        context = [int(t) for t in context]
        factor, offset, min_prob = _F32(max_spec_factor), _F32(max_spec_offset), _F32(min_token_prob)
        best_tokens, best_probs, best_score, best_len = [], [], _F32(0.0), 0
        for m in range(1, len(context)):
            node = self.match(context[len(context) - m:])
            if node < 0:
                break
            cap = int(float(_F32(_F32(m) * factor) + offset) + 1e-6)
            cap = max(0, min(int(max_spec_tokens), cap))
            tokens, probs, score = self._path(node, cap, min_prob)
            if score >= best_score:
                best_tokens, best_probs, best_score, best_len = tokens, probs, score, m
        return Draft(tuple(best_tokens), tuple(best_probs), float(best_score), best_len)
