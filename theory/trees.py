"""Token trees for tree-based speculative decoding: the ``Tree`` type, its expected tokens per step, the
verification attention mask, and a Monte-Carlo run of real token-level verification.

Model. Node 0 is the root: the last accepted token, processed by the verifier together with the draft
nodes. Every other node is a draft token; ``rank`` says which candidate of its parent it is (0 = the
drafter's best). ``accept[i]`` is the probability that node i is accepted given that its parent was;
siblings are mutually exclusive (the verifier continues along at most one child), so the ``accept`` of
siblings sums to at most 1. A verification step walks from the root down the accepted children and
emits one token per accepted node plus one bonus/correction token, so

    expected tokens per step = sum over nodes of prod(accept along the path from the root)  (root = 1).

Positional model (Sequoia): ``accept_probs[k]`` is the probability that the k-th ranked child is the
accepted one, the same at every node and depth; :func:`positional_tree` applies it to a shape.
:func:`positional_accept_probs` derives ``accept_probs`` exactly from a stationary (p, q) pair for two
real verifiers, and :func:`simulate_tree_verification` runs those verifiers token by token.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np

from theory import _checks
from theory.multidraft import acceptance, check_pair
from theory.multidraft_sampling import sample_verification

VERIFICATIONS = ("rrs_wor", "top_k_match")
_SIBLING_ATOL = 1e-9


@dataclass(frozen=True)
class Tree:
    """A draft token tree in topological order (``parents[i] < i``; ``parents[0] == -1``)."""

    parents: tuple[int, ...]
    ranks: tuple[int, ...]
    accept: tuple[float, ...]

    def __post_init__(self) -> None:
        n = len(self.parents)
        if n == 0 or self.parents[0] != -1:
            raise ValueError("parents must start with the root, parents[0] == -1")
        if len(self.ranks) != n or len(self.accept) != n:
            raise ValueError(f"parents, ranks and accept must have the same length ({n})")
        sibling_mass: dict[int, float] = {}
        sibling_ranks: dict[int, set[int]] = {}
        for i in range(1, n):
            parent, rank, acc = self.parents[i], self.ranks[i], self.accept[i]
            if not 0 <= parent < i:
                raise ValueError(f"parents[{i}] must be in [0, {i}) (topological order), got {parent}")
            if rank < 0 or rank in sibling_ranks.setdefault(parent, set()):
                raise ValueError(f"ranks[{i}] must be >= 0 and distinct among siblings, got {rank}")
            if not 0.0 <= acc <= 1.0:
                raise ValueError(f"accept[{i}] must be a probability in [0, 1], got {acc}")
            sibling_ranks[parent].add(rank)
            sibling_mass[parent] = sibling_mass.get(parent, 0.0) + acc
        for parent, mass in sibling_mass.items():
            if mass > 1.0 + _SIBLING_ATOL:
                raise ValueError(f"accept of the children of node {parent} sums to {mass:.6g} > 1")

    @property
    def size(self) -> int:
        """Number of nodes including the root (the verify width)."""
        return len(self.parents)

    @cached_property
    def node_depths(self) -> np.ndarray:
        """Depth of every node (root 0, its children 1, ...)."""
        depths = np.zeros(self.size, dtype=np.int64)
        for i in range(1, self.size):
            depths[i] = depths[self.parents[i]] + 1
        return depths

    @property
    def depth(self) -> int:
        """Draft tokens on the longest root-to-leaf path (root excluded)."""
        return int(self.node_depths.max())

    @cached_property
    def path_probs(self) -> np.ndarray:
        """Probability that each node is accepted (product of ``accept`` from the root; root 1)."""
        probs = np.ones(self.size)
        for i in range(1, self.size):
            probs[i] = probs[self.parents[i]] * self.accept[i]
        return probs

    @property
    def expected_tokens(self) -> float:
        """Expected tokens per verification step, bonus included."""
        return float(self.path_probs.sum())

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        kids: list[list[int]] = [[] for _ in range(self.size)]
        for i in range(1, self.size):
            kids[self.parents[i]].append(i)
        return tuple(tuple(k) for k in kids)

    def level_widths(self) -> np.ndarray:
        """Number of nodes at each depth 0..depth."""
        return np.bincount(self.node_depths, minlength=self.depth + 1)

    def expanded_level_widths(self) -> np.ndarray:
        """Per depth 0..depth-1, the nodes that have at least one child (what a drafter must expand)."""
        has_child = np.array([len(c) > 0 for c in self.children])
        return np.bincount(self.node_depths[has_child], minlength=self.depth)[: self.depth]

    def attention_mask(self) -> np.ndarray:
        """Boolean (size, size) mask for the verify forward: ``mask[i, j]`` iff j is i or an ancestor.

        Row i is what token i may attend to among the tree tokens (the committed prefix is visible to all).
        """
        mask = np.zeros((self.size, self.size), dtype=bool)
        for i in range(self.size):
            mask[i, i] = True
            if i:
                mask[i] |= mask[self.parents[i]]
        return mask


def positional_tree(parents: Sequence[int], accept_probs) -> Tree:
    """A tree with the given shape whose k-th child of every node has rank k and ``accept_probs[k]``.

    Ranks beyond ``len(accept_probs)`` get acceptance 0 (the model says such a child is never accepted).
    """
    probs = _check_accept_probs(accept_probs)
    parents = tuple(int(x) for x in parents)
    ranks = [0] * len(parents)
    seen: dict[int, int] = {}
    for i in range(1, len(parents)):
        ranks[i] = seen.get(parents[i], 0)
        seen[parents[i]] = ranks[i] + 1
    return Tree(parents, tuple(ranks), _positional_accept(ranks, probs))


def _positional_accept(ranks: Sequence[int], probs: np.ndarray) -> tuple[float, ...]:
    return (1.0,) + tuple(float(probs[r]) if r < probs.size else 0.0 for r in ranks[1:])


def with_positional_accept(tree: Tree, accept_probs) -> Tree:
    """The same shape and ranks with ``accept = accept_probs[rank]`` (0 beyond the given ranks)."""
    probs = _check_accept_probs(accept_probs)
    return Tree(tree.parents, tree.ranks, _positional_accept(tree.ranks, probs))


def _check_accept_probs(accept_probs) -> np.ndarray:
    probs = _checks.probabilities(accept_probs, "accept_probs")
    if probs.sum() > 1.0 + _SIBLING_ATOL:
        raise ValueError(f"accept_probs must sum to at most 1 (children are exclusive), got {probs.sum():.6g}")
    return probs


def positional_accept_probs(p, q, max_children: int, verification: str) -> np.ndarray:
    """Exact positional ``accept_probs`` for a stationary target/draft pair (p, q) at every node.

    * ``"top_k_match"``: the children are the drafter's top-ranked tokens (q sorted descending); the
      verifier samples y ~ p and continues if y is a child. ``accept_probs[k] = p(k-th token of q)``.
    * ``"rrs_wor"``: the children are drafts sampled from q without replacement, in order, and the node
      is verified by recursive rejection sampling (Sequoia). ``accept_probs[k]`` = probability that the
      (k+1)-th round accepts = ``acceptance(k+1) - acceptance(k)``; it does not depend on how many
      children the node has, which is what makes Sequoia's positional model exact here.
    """
    p, q = check_pair(p, q)
    max_children = _checks.positive_int(max_children, "max_children")
    if verification == "top_k_match":
        order = np.argsort(-q, kind="stable")
        return p[order[:max_children]].copy()
    if verification == "rrs_wor":
        cumulative = [0.0] + [acceptance(p, q, k, "rrs_wor") for k in range(1, max_children + 1)]
        return np.maximum(np.diff(cumulative), 0.0)
    raise ValueError(f"verification must be one of {VERIFICATIONS}, got {verification!r}")


def simulate_tree_verification(tree: Tree, p, q, verification: str, steps: int,
                               rng: np.random.Generator) -> np.ndarray:
    """Tokens emitted by ``steps`` independent verification steps of ``tree`` (real token-level runs).

    Every node sees the same stationary (p, q). ``"top_k_match"``: node children with rank r carry the
    r-th most likely token under q; the verifier samples y ~ p and moves to the child carrying y.
    ``"rrs_wor"``: a node with c children (ranks 0..c-1 required) drafts c tokens from q without
    replacement and runs recursive rejection sampling; if round r accepts, the walk moves to the child
    of rank r. Returns the per-step token counts (accepted depth + 1).
    """
    p, q = check_pair(p, q)
    steps = _checks.positive_int(steps, "steps")
    rng = _checks.generator(rng)
    if verification not in VERIFICATIONS:
        raise ValueError(f"verification must be one of {VERIFICATIONS}, got {verification!r}")
    child_by_rank = [{tree.ranks[c]: c for c in kids} for kids in tree.children]
    if verification == "rrs_wor":
        for node, by_rank in enumerate(child_by_rank):
            if by_rank and sorted(by_rank) != list(range(len(by_rank))):
                raise ValueError(f"rrs_wor needs the children of node {node} to have ranks 0..c-1")
    token_rank = np.empty(q.size, dtype=np.int64)
    token_rank[np.argsort(-q, kind="stable")] = np.arange(q.size)
    position = np.zeros(steps, dtype=np.int64)  # current node of every walker
    alive = np.ones(steps, dtype=bool)
    tokens = np.ones(steps, dtype=np.int64)
    while alive.any():
        for node in np.unique(position[alive]):
            walkers = np.flatnonzero(alive & (position == node))
            by_rank = child_by_rank[node]
            if not by_rank:
                alive[walkers] = False
                continue
            if verification == "top_k_match":
                chosen = token_rank[rng.choice(p.size, size=walkers.size, p=p)]
            else:
                chosen = sample_verification(p, q, len(by_rank), "rrs_wor", walkers.size, rng).accepted_round
            nxt = np.array([by_rank.get(int(r), -1) for r in chosen], dtype=np.int64)
            moved = nxt >= 0
            position[walkers[moved]] = nxt[moved]
            tokens[walkers[moved]] += 1
            alive[walkers[~moved]] = False
    return tokens
