"""Tree-shape search under Sequoia's positional acceptance model, and the hardware-aware size choice.

**Dynamic program** (Sequoia). Let ``c[d][n]`` be the best expected-token value of a subtree whose root
counts 1, with at most n nodes and at most d levels below its root. A node's children occupy ranks
``0..k-1`` (the drafter's top-k); child i contributes ``accept_probs[i] * value(its subtree)``. So

    c[0][n] = 1 (n >= 1),   c[d][n] = 1 + g_0(n - 1),
    g_i(m) = max(0, max_{1<=s<=m} accept_probs[i] * c[d-1][s] + g_{i+1}(m - s)),   g_K = 0,

where ``g_i(m)`` is the best use of m nodes by the children of rank >= i (the 0 option ends the list:
ranks stay contiguous). The value of a tree is additive over the children's subtrees and each subtree
only needs its own size and depth limit, so the recursion is exact over all trees with contiguous child
ranks; when ``accept_probs`` is non-increasing, contiguity loses nothing (moving a child to a free
lower rank never lowers any path product), so it is exact over all trees. Cost: ``O(D K B^2)`` with
``K = min(len(accept_probs), B - 1)``, vectorised over (m, s). Ties prefer fewer nodes.
:func:`brute_force_optimal_tree` enumerates every tree for small budgets to check it.

**Hardware-aware choice.** A step drafts level by level (one draft forward per level, over the nodes of
that level that have children) and verifies all nodes in one target forward, so for a tree T

    step time = sum_levels draft_step_s(expanded nodes at the level) + verify_s(T.size),

and :func:`choose_tree_size` maximises ``T.expected_tokens / step time`` over (budget, depth), taking for
each (budget, depth) the DP's value-optimal tree (Sequoia's procedure). This is an approximation of the
best tree for time: a less valuable but narrower tree could draft faster; the error is bounded by the
draft share of the step time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from theory import _checks
from theory.trees import Tree, _check_accept_probs, positional_tree


@dataclass(frozen=True)
class TreeTable:
    """The DP's tables: ``value[d, n]`` and the chosen child-subtree sizes for reconstruction."""

    accept_probs: np.ndarray
    value: np.ndarray  # (D+1, B+1)
    choice: np.ndarray  # (D+1, K, B) int32: size given to rank i from m remaining nodes (0 = stop)

    @property
    def max_budget(self) -> int:
        return self.value.shape[1] - 1

    @property
    def max_depth(self) -> int:
        return self.value.shape[0] - 1

    def tree(self, budget: int, depth: int) -> Tree:
        """The optimal tree with at most ``budget`` nodes and depth at most ``depth``."""
        if not 1 <= budget <= self.max_budget or not 0 <= depth <= self.max_depth:
            raise ValueError(f"budget must be in [1, {self.max_budget}] and depth in [0, {self.max_depth}]")
        parents = [-1]
        stack = [(0, depth, budget)]  # (node index, depth limit, node allowance including itself)
        while stack:
            node, d, n = stack.pop()
            if d == 0:
                continue
            m, rank = n - 1, 0
            kids = []
            while rank < self.choice.shape[1] and m > 0:
                size = int(self.choice[d, rank, m])
                if size == 0:
                    break
                parents.append(node)
                kids.append((len(parents) - 1, d - 1, size))
                m -= size
                rank += 1
            stack.extend(reversed(kids))
        # parents were appended in an order where each parent precedes its children already
        return positional_tree(_renumber_bfs(parents), self.accept_probs)


def _renumber_bfs(parents: list[int]) -> list[int]:
    """Renumber a parent array (parents before children) into breadth-first order, siblings in order."""
    kids: list[list[int]] = [[] for _ in parents]
    for i in range(1, len(parents)):
        kids[parents[i]].append(i)
    order, new_index, out = [0], {0: 0}, [-1]
    head = 0
    while head < len(order):
        old = order[head]
        head += 1
        for child in kids[old]:
            new_index[child] = len(order)
            order.append(child)
            out.append(new_index[old])
    return out


def tree_table(accept_probs, budget: int, max_depth: int | None = None) -> TreeTable:
    """Run the DP for every budget up to ``budget`` and every depth limit up to ``max_depth``."""
    probs = _check_accept_probs(accept_probs)
    budget = _checks.positive_int(budget, "budget")
    depth = budget - 1 if max_depth is None else _checks.non_negative_int(max_depth, "max_depth")
    depth = min(depth, budget - 1)
    ranks = max(1, min(probs.size, budget - 1))
    a = np.zeros(ranks)
    a[: min(ranks, probs.size)] = probs[:ranks]
    width = budget  # m (nodes for the children) ranges over 0..budget-1
    value = np.zeros((depth + 1, budget + 1))
    value[:, 1:] = 1.0
    choice = np.zeros((depth + 1, ranks, width), dtype=np.int32)
    m_idx = np.arange(width)[:, None]
    s_idx = np.arange(width)[None, :]
    valid = (s_idx >= 1) & (s_idx <= m_idx)
    rest_idx = np.where(valid, m_idx - s_idx, 0)
    for d in range(1, depth + 1):
        prev = value[d - 1, :width]
        g_next = np.zeros(width)
        for i in range(ranks - 1, -1, -1):
            cand = np.where(valid, a[i] * prev[None, :] + g_next[rest_idx], -np.inf)
            cand[:, 0] = 0.0  # s = 0: no child of rank i (and none after it)
            best_s = np.argmax(cand, axis=1)  # first maximum: stop / fewest nodes on ties
            choice[d, i] = best_s
            g_next = cand[np.arange(width), best_s]
        value[d, 1:] = 1.0 + g_next[:budget]
    return TreeTable(probs, value, choice)


def optimal_tree(accept_probs, budget: int, max_depth: int | None = None) -> Tree:
    """Sequoia's optimal tree: max expected tokens with at most ``budget`` nodes (root included) and at
    most ``max_depth`` draft tokens on any path (None: no limit beyond the budget)."""
    table = tree_table(accept_probs, budget, max_depth)
    return table.tree(table.max_budget, table.max_depth)


def _plane_trees(n: int, depth: int, memo: dict) -> list[tuple]:
    """All ordered trees with exactly n nodes and depth <= depth, as nested tuples of child subtrees."""
    key = (n, depth)
    if key not in memo:
        if n == 1:
            memo[key] = [()]
        elif depth == 0:
            memo[key] = []
        else:
            memo[key] = [tuple(f) for f in _forests(n - 1, depth - 1, memo)]
    return memo[key]


def _forests(n: int, depth: int, memo: dict) -> list[list[tuple]]:
    if n == 0:
        return [[]]
    out = []
    for first in range(1, n + 1):
        for head in _plane_trees(first, depth, memo):
            for tail in _forests(n - first, depth, memo):
                out.append([head] + tail)
    return out


def _to_parents(shape: tuple) -> list[int]:
    parents, queue = [-1], [(shape, 0)]
    while queue:
        node_shape, index = queue.pop(0)
        for child in node_shape:
            parents.append(index)
            queue.append((child, len(parents) - 1))
    return parents


def brute_force_optimal_tree(accept_probs, budget: int, max_depth: int | None = None) -> Tree:
    """Enumerate every ordered tree with at most ``budget`` nodes (Catalan many: budget <= ~10)."""
    budget = _checks.positive_int(budget, "budget")
    if budget > 11:
        raise ValueError(f"budget must be <= 11 for brute force (Catalan growth), got {budget}")
    depth = budget - 1 if max_depth is None else _checks.non_negative_int(max_depth, "max_depth")
    memo: dict = {}
    best: Tree | None = None
    for n in range(1, budget + 1):
        for shape in _plane_trees(n, depth, memo):
            tree = positional_tree(_to_parents(shape), accept_probs)
            if best is None or tree.expected_tokens > best.expected_tokens + 1e-12:
                best = tree
    assert best is not None
    return best


def step_time_s(tree: Tree, draft_step_s: Callable[[int], float], verify_s: Callable[[int], float]) -> float:
    """Draft forwards level by level over expanded nodes, plus one verify forward over all nodes."""
    draft = sum(float(draft_step_s(int(w))) for w in tree.expanded_level_widths())
    return draft + float(verify_s(tree.size))


@dataclass(frozen=True)
class TreeSizeChoice:
    """Result of :func:`choose_tree_size`; ``tokens_per_s[d, b]`` covers every candidate searched."""

    budget: int
    depth: int
    tree: Tree
    tokens_per_s: float
    table_tokens_per_s: np.ndarray


def choose_tree_size(accept_probs, draft_step_s: Callable[[int], float], verify_s: Callable[[int], float],
                     max_budget: int, max_depth: int) -> TreeSizeChoice:
    """Pick (budget, depth) maximising expected tokens per second of the DP-optimal tree (see module doc).

    ``draft_step_s(nodes)`` / ``verify_s(nodes)``: seconds for one draft forward over ``nodes`` tokens and
    one target verify forward over ``nodes`` tree tokens (e.g. from the simulator's latency model).
    """
    max_budget = _checks.positive_int(max_budget, "max_budget")
    max_depth = _checks.non_negative_int(max_depth, "max_depth")
    table = tree_table(accept_probs, max_budget, max_depth)
    rates = np.zeros((table.max_depth + 1, max_budget + 1))
    best = None
    for d in range(table.max_depth + 1):
        for b in range(1, max_budget + 1):
            tree = table.tree(b, d)
            seconds = step_time_s(tree, draft_step_s, verify_s)
            if seconds <= 0.0:
                raise ValueError("draft_step_s and verify_s must give a positive step time")
            rates[d, b] = tree.expected_tokens / seconds
            if best is None or rates[d, b] > best[0] * (1 + 1e-12):
                best = (rates[d, b], b, d, tree)
    assert best is not None
    return TreeSizeChoice(best[1], best[2], best[3], float(best[0]), rates)
