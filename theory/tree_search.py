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

``ranks="prefix"`` (default, Sequoia) keeps the children on ranks ``0..k-1``: required when the ranks
are sampling rounds (``rrs_wor`` verification). ``ranks="any"`` allows any subset of candidates (e.g.
the drafter's top tokens verified by matching, where a lower-ranked token can be worth more): then the
same DP runs on ``accept_probs`` sorted in decreasing order and the ranks are mapped back, which is exact
by the same exchange argument. :func:`brute_force_optimal_tree` enumerates every tree (every subset of
ranks in ``"any"`` mode) for small budgets to check both.

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
    rank_order: np.ndarray  # DP rank i stands for candidate rank rank_order[i]
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
        parents = self.shape(budget, depth)
        sorted_tree = positional_tree(_renumber_bfs(parents), self.accept_probs[self.rank_order])
        ranks = (0,) + tuple(int(self.rank_order[r]) for r in sorted_tree.ranks[1:])
        return Tree(sorted_tree.parents, ranks, sorted_tree.accept)

    def shape(self, budget: int, depth: int) -> list[int]:
        """Parent array of the optimal tree (depth-first numbering; parents before children)."""
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
        return parents


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


RANK_MODES = ("prefix", "any")


def _rank_order(probs: np.ndarray, ranks: str) -> np.ndarray:
    if ranks == "prefix":
        return np.arange(probs.size)
    if ranks == "any":
        return np.argsort(-probs, kind="stable")
    raise ValueError(f"ranks must be one of {RANK_MODES}, got {ranks!r}")


def tree_table(accept_probs, budget: int, max_depth: int | None = None, ranks: str = "prefix") -> TreeTable:
    """Run the DP for every budget up to ``budget`` and every depth limit up to ``max_depth``."""
    original = _check_accept_probs(accept_probs)
    rank_order = _rank_order(original, ranks)
    probs = original[rank_order]
    budget = _checks.positive_int(budget, "budget")
    depth = budget - 1 if max_depth is None else _checks.non_negative_int(max_depth, "max_depth")
    depth = min(depth, budget - 1)
    n_ranks = max(1, min(probs.size, budget - 1))
    a = np.zeros(n_ranks)
    a[: min(n_ranks, probs.size)] = probs[:n_ranks]
    width = budget  # m (nodes for the children) ranges over 0..budget-1
    value = np.zeros((depth + 1, budget + 1))
    value[:, 1:] = 1.0
    choice = np.zeros((depth + 1, n_ranks, width), dtype=np.int32)
    m_idx = np.arange(width)[:, None]
    s_idx = np.arange(width)[None, :]
    valid = (s_idx >= 1) & (s_idx <= m_idx)
    rest_idx = np.where(valid, m_idx - s_idx, 0)
    for d in range(1, depth + 1):
        prev = value[d - 1, :width]
        g_next = np.zeros(width)
        for i in range(n_ranks - 1, -1, -1):
            cand = np.where(valid, a[i] * prev[None, :] + g_next[rest_idx], -np.inf)
            cand[:, 0] = 0.0  # s = 0: no child of rank i (and none after it)
            best_s = np.argmax(cand, axis=1)  # first maximum: stop / fewest nodes on ties
            choice[d, i] = best_s
            g_next = cand[np.arange(width), best_s]
        value[d, 1:] = 1.0 + g_next[:budget]
    return TreeTable(original, rank_order, value, choice)


def optimal_tree(accept_probs, budget: int, max_depth: int | None = None, ranks: str = "prefix") -> Tree:
    """Sequoia's optimal tree: max expected tokens with at most ``budget`` nodes (root included) and at
    most ``max_depth`` draft tokens on any path (None: no limit beyond the budget). ``ranks``: "prefix"
    (children are the top-k candidates) or "any" (any subset of candidates); see the module docstring."""
    table = tree_table(accept_probs, budget, max_depth, ranks)
    return table.tree(table.max_budget, table.max_depth)


def _labelled_forests(n: int, depth: int, min_rank: int, n_ranks: int, prefix: bool, memo: dict) -> list:
    """All sets of child subtrees with n nodes in total, ranks >= min_rank (== min_rank first if prefix)."""
    key = (n, depth, min_rank)
    if key in memo:
        return memo[key]
    out: list = []
    if n == 0:
        out.append(())
    elif depth > 0:
        first_ranks = [min_rank] if prefix else range(min_rank, n_ranks)
        for rank in first_ranks:
            if rank >= n_ranks:
                continue
            for size in range(1, n + 1):
                for sub in _labelled_forests(size - 1, depth - 1, 0, n_ranks, prefix, memo):
                    for rest in _labelled_forests(n - size, depth, rank + 1, n_ranks, prefix, memo):
                        out.append(((rank, sub),) + rest)
    memo[key] = out
    return out


def _tree_from_shape(children: tuple, probs: np.ndarray) -> Tree:
    parents, ranks, queue = [-1], [0], [(children, 0)]
    while queue:
        kids, index = queue.pop(0)
        for rank, sub in kids:
            parents.append(index)
            ranks.append(rank)
            queue.append((sub, len(parents) - 1))
    return Tree(tuple(parents), tuple(ranks), (1.0,) + tuple(float(probs[r]) for r in ranks[1:]))


def brute_force_optimal_tree(accept_probs, budget: int, max_depth: int | None = None,
                             ranks: str = "prefix") -> Tree:
    """Enumerate every tree with at most ``budget`` nodes (small budgets and few ranks only)."""
    probs = _check_accept_probs(accept_probs)
    budget = _checks.positive_int(budget, "budget")
    _rank_order(probs, ranks)
    if budget > 10 or probs.size > 6:
        raise ValueError("brute force needs budget <= 10 and at most 6 accept_probs (exponential growth)")
    depth = budget - 1 if max_depth is None else _checks.non_negative_int(max_depth, "max_depth")
    memo: dict = {}
    best = _tree_from_shape((), probs)
    for n in range(2, budget + 1):
        for shape in _labelled_forests(n - 1, depth, 0, probs.size, ranks == "prefix", memo):
            tree = _tree_from_shape(shape, probs)
            if tree.expected_tokens > best.expected_tokens + 1e-12:
                best = tree
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
                     max_budget: int, max_depth: int, ranks: str = "prefix") -> TreeSizeChoice:
    """Pick (budget, depth) maximising expected tokens per second of the DP-optimal tree (see module doc).

    ``draft_step_s(nodes)`` / ``verify_s(nodes)``: seconds for one draft forward over ``nodes`` tokens and
    one target verify forward over ``nodes`` tree tokens (e.g. from the simulator's latency model).
    """
    max_budget = _checks.positive_int(max_budget, "max_budget")
    max_depth = _checks.non_negative_int(max_depth, "max_depth")
    table = tree_table(accept_probs, max_budget, max_depth, ranks)
    draft_cache: dict[int, float] = {}
    verify_cache: dict[int, float] = {}
    rates = np.zeros((table.max_depth + 1, max_budget + 1))
    best = None
    for d in range(table.max_depth + 1):
        for b in range(1, max_budget + 1):
            size, widths = _size_and_expanded_widths(table.shape(b, d))
            seconds = sum(_cached(draft_step_s, draft_cache, w) for w in widths) + _cached(verify_s, verify_cache, size)
            if not np.isfinite(seconds) or seconds <= 0.0:
                raise ValueError("draft_step_s and verify_s must give a finite positive step time")
            rates[d, b] = table.value[d, b] / seconds
            if best is None or rates[d, b] > best[0] * (1 + 1e-12):
                best = (rates[d, b], b, d)
    assert best is not None
    tree = table.tree(best[1], best[2])
    return TreeSizeChoice(best[1], best[2], tree, float(best[0]), rates)


def _cached(fn: Callable[[int], float], cache: dict[int, float], nodes: int) -> float:
    if nodes not in cache:
        cache[nodes] = float(fn(nodes))
    return cache[nodes]


def _size_and_expanded_widths(parents: list[int]) -> tuple[int, list[int]]:
    """Node count and, per level, the number of nodes with children (same as Tree.expanded_level_widths)."""
    depth = [0] * len(parents)
    has_child = [False] * len(parents)
    for i in range(1, len(parents)):
        depth[i] = depth[parents[i]] + 1
        has_child[parents[i]] = True
    widths = [0] * max(depth)
    for i, expanded in enumerate(has_child):
        if expanded:
            widths[depth[i]] += 1
    return len(parents), widths
