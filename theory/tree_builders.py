"""Tree builders used by real systems; each returns a :class:`theory.trees.Tree` (so its expected tokens).

Acceptance inputs come in two forms:

* positional ``accept_probs`` (Sequoia's model: the same for every node), or
* ``child_probs(path) -> sequence``: the acceptance probabilities of the children of the node reached by
  ``path`` (a tuple of ranks from the root), indexed by rank. This covers depth-dependent models
  (Medusa heads) and context-specific draft probability trees (EAGLE-2, OPT-Tree), where the drafter's
  confidence is used as the acceptance estimate (a calibrated drafter is assumed; a tree built from one
  model can be re-scored under another with :func:`theory.trees.with_positional_accept`).
"""
from __future__ import annotations

import heapq
import itertools
from typing import Callable, Sequence

import numpy as np

from theory import _checks
from theory.trees import Tree, _check_accept_probs, positional_tree

ChildProbs = Callable[[tuple[int, ...]], Sequence[float]]


def chain_tree(length: int, accept_probs) -> Tree:
    """A chain of ``length`` draft tokens (each the drafter's top candidate, rank 0)."""
    length = _checks.non_negative_int(length, "length")
    return positional_tree([-1] + list(range(length)), accept_probs)


def kary_tree(k: int, depth: int, accept_probs) -> Tree:
    """The full static tree where every node up to ``depth - 1`` has its top-``k`` candidates as children."""
    k = _checks.positive_int(k, "k")
    depth = _checks.non_negative_int(depth, "depth")
    parents, level = [-1], [0]
    for _ in range(depth):
        nxt = []
        for node in level:
            for _ in range(k):
                parents.append(node)
                nxt.append(len(parents) - 1)
        level = nxt
    return positional_tree(parents, accept_probs)


def positional_child_probs(accept_probs) -> ChildProbs:
    """``child_probs`` for the positional model: the same ``accept_probs`` at every node."""
    probs = tuple(float(x) for x in _check_accept_probs(accept_probs))
    return lambda path: probs


def _children_of(child_probs: ChildProbs, path: tuple[int, ...]) -> np.ndarray:
    probs = np.asarray(child_probs(path), dtype=np.float64).reshape(-1)
    if probs.size and (not np.all(np.isfinite(probs)) or probs.min() < 0 or probs.max() > 1
                       or probs.sum() > 1 + 1e-9):
        raise ValueError(f"child_probs{path} must be probabilities summing to at most 1, got {probs}")
    return probs


def _tree_from_nodes(nodes: list[tuple[int, int, float]]) -> Tree:
    """nodes[i] = (parent, rank, accept) in an order where parents come first."""
    return Tree(tuple(n[0] for n in nodes), tuple(n[1] for n in nodes), tuple(n[2] for n in nodes))


def top_n_tree(child_probs: ChildProbs, budget: int, max_depth: int | None = None) -> Tree:
    """Exact top-N by path product (OPT-Tree / DySpec idea): the ``budget - 1`` draft nodes with the
    largest acceptance probability among all nodes of depth <= ``max_depth``, plus the root.

    Best-first search: pop the frontier node with the largest path product, push all its children.
    Because every acceptance is <= 1, a child's path product never exceeds its parent's, so nodes are
    popped in non-increasing order of path product over the whole (infinite) candidate tree: the first
    N pops are exactly the top N, and they form a tree (every node's parent was popped before it). The
    result is the maximum-expected-tokens tree among all trees with ``budget`` nodes that may use any
    subset of each node's candidates. Ties: shallower first, then first discovered.
    """
    budget = _checks.positive_int(budget, "budget")
    depth_cap = budget - 1 if max_depth is None else _checks.non_negative_int(max_depth, "max_depth")
    counter = itertools.count()
    nodes: list[tuple[int, int, float]] = [(-1, 0, 1.0)]
    heap: list = []

    def push_children(index: int, path: tuple[int, ...], value: float) -> None:
        if len(path) >= depth_cap:
            return
        for rank, prob in enumerate(_children_of(child_probs, path)):
            if prob > 0.0:
                heapq.heappush(heap, (-value * prob, len(path) + 1, next(counter), index, rank, prob, path + (rank,)))

    push_children(0, (), 1.0)
    while heap and len(nodes) < budget:
        neg_value, _, _, parent, rank, prob, path = heapq.heappop(heap)
        nodes.append((parent, rank, prob))
        push_children(len(nodes) - 1, path, -neg_value)
    return _tree_from_nodes(nodes)


def medusa_tree(head_accuracies, budget: int) -> Tree:
    """Medusa-style greedy tree from per-head top-k accuracies.

    ``head_accuracies[h][k]``: probability that the (k+1)-th most likely prediction of Medusa head h+1
    (the token h+1 positions ahead) is correct. Medusa's construction adds, one node at a time, the
    candidate with the highest product of accuracies along its path, with depth at most the number of
    heads. Approximation (Medusa's own): the heads' accuracies are treated as independent of each other
    and of the path, so a node's acceptance given its parent is its head's top-k accuracy. That greedy
    order is exactly the best-first search of :func:`top_n_tree`.
    """
    acc = _checks.probabilities(head_accuracies, "head_accuracies", ndim=2)
    if np.any(acc.sum(axis=1) > 1 + 1e-9):
        raise ValueError("head_accuracies rows must sum to at most 1 (top-k candidates are exclusive)")
    rows = tuple(tuple(float(x) for x in row) for row in acc)
    return top_n_tree(lambda path: rows[len(path)] if len(path) < len(rows) else (), budget, len(rows))


def eagle2_tree(child_probs: ChildProbs, top_k: int, depth: int, budget: int) -> Tree:
    """EAGLE-2's dynamic tree: beam expansion, then global reranking.

    Expansion: start from the root; at each of ``depth`` levels, expand the ``top_k`` nodes of the
    current level with the largest path score (product of draft probabilities) into their ``top_k``
    most likely children each. Reranking: from all generated nodes keep the ``budget - 1`` with the
    largest scores (ties: shallower first, then generation order) plus the root. Since a child's score
    never exceeds its parent's, and ties prefer the shallower node, every kept node's parent is kept.
    Unlike :func:`top_n_tree` it only sees the beam's children, so it can miss deep high-value nodes.
    """
    top_k = _checks.positive_int(top_k, "top_k")
    depth = _checks.non_negative_int(depth, "depth")
    budget = _checks.positive_int(budget, "budget")
    # pool entries: (score, depth, order, parent_pool_index, rank, prob, path)
    pool = [(1.0, 0, 0, -1, 0, 1.0, ())]
    level = [0]
    for d in range(1, depth + 1):
        generated = []
        for index in level:
            score, path = pool[index][0], pool[index][6]
            probs = _children_of(child_probs, path)
            for rank in np.argsort(-probs, kind="stable")[:top_k]:
                if probs[rank] > 0.0:
                    pool.append((score * probs[rank], d, len(pool), index, int(rank), float(probs[rank]),
                                 path + (int(rank),)))
                    generated.append(len(pool) - 1)
        generated.sort(key=lambda i: (-pool[i][0], pool[i][2]))
        level = generated[:top_k]
    kept = sorted(range(1, len(pool)), key=lambda i: (-pool[i][0], pool[i][1], pool[i][2]))[: budget - 1]
    kept.sort(key=lambda i: (pool[i][1], pool[i][2]))  # parents before children
    new_index = {0: 0}
    nodes: list[tuple[int, int, float]] = [(-1, 0, 1.0)]
    for i in kept:
        parent = pool[i][3]
        if parent not in new_index:
            raise AssertionError("EAGLE-2 reranking dropped a parent")  # excluded by the argument above
        new_index[i] = len(nodes)
        nodes.append((new_index[parent], pool[i][4], pool[i][5]))
    return _tree_from_nodes(nodes)
