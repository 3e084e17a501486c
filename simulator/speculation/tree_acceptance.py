"""Accepted lengths for token trees and multi-draft: a walk down the tree, per (request, step).

Model-driven (`TreeAcceptance`). A `theory.trees.Tree` gives every node the probability of being the
accepted child of its parent (siblings exclusive). One counter-based uniform u per (request, step)
(simulator.speculation.acceptance.counter_uniforms, so draws do not depend on batching or bulk vs. step mode) picks
the accepted path by *nested intervals*: the root owns [0, 1); the children of a node own consecutive
sub-intervals of their parent's interval, starting at its left end, of lengths path_prob(child) (their
sum never exceeds the parent's). The accepted path is the chain of nodes whose interval contains u, so
P(node accepted) = path_prob(node) exactly and E[τ + 1] = `Tree.expected_tokens`. τ is the depth of the
deepest such node. For a chain (every node one child, rank 0) the intervals are [0, Π α) and
τ = #{i : u < Π_{j≤i} α_j} — the same rule and the same uniform as `ChainAcceptance`, so a width-1
tree gives identical outputs to the chain. Truncating a walk at depth g gives min(τ, g): adaptive
policies that verify fewer drafts reuse the same draw.

Trace-driven (`trace_tree_walks`): greedy verification of a static tree on a measured sequence. At text
position `pos` the accepted path continues from a node into its child whose rank equals the drafter's
rank of the target's token at `pos` (profiles.acceptance.trace `D_rank`); exact under greedy
verification for trees whose children are the drafter's top-ranked candidates, because the accepted path
is the target's own text, where the trace holds the drafter's ranks (and its distribution is conditioned
on exactly that prefix). Capped by the row's `max_accept`. The request's walk through its sequence is
precomputed once per sequence (position 0, then pos + τ + 1), as for chains.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from simulator.speculation.acceptance import AcceptanceModel, counter_uniforms
from simulator.errors import ScenarioError

if TYPE_CHECKING:   # (theory.trees pulls in scipy: imported where a tree is built)
    from theory.trees import Tree


def nested_intervals(tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of every node's interval in [0, 1) (see the module docstring)."""
    probs = tree.path_probs
    lo = np.zeros(tree.size)
    for parent, kids in enumerate(tree.children):
        left = lo[parent]
        for child in kids:  # in index order: ranks were assigned in this order by the builders
            lo[child] = left
            left += probs[child]
    return lo, lo + probs


@dataclass(frozen=True)
class TreeAcceptance(AcceptanceModel):
    """τ per (request, step index) from a tree with per-node acceptance (positional or otherwise).

    depth: the tree's depth (most draft tokens a step can accept); draft_tokens: nodes verified per request
    per step (tree size − 1)."""

    tree: Tree
    seed: int
    lo: np.ndarray
    hi: np.ndarray
    depths: np.ndarray

    @staticmethod
    def from_tree(tree: Tree, seed: int) -> "TreeAcceptance":
        lo, hi = nested_intervals(tree)
        # The root (depth 0) always contains u; drop it from the comparison.
        return TreeAcceptance(tree, seed, lo[1:], hi[1:], tree.node_depths[1:].astype(np.int64))

    @property
    def depth(self) -> int:
        return self.tree.depth

    @property
    def draft_tokens(self) -> int:
        return self.tree.size - 1

    def expected_accepted(self) -> float:
        return self.tree.expected_tokens - 1.0

    def full_accept_probability(self) -> float:
        if self.depth == 0:
            return 1.0
        return float(self.tree.path_probs[self.tree.node_depths == self.depth].sum())

    def sample(self, uniforms: np.ndarray) -> np.ndarray:
        if not len(self.depths):
            return np.zeros(uniforms.shape, dtype=np.int64)
        u = uniforms[..., None]
        inside = (u >= self.lo) & (u < self.hi)
        return (inside * self.depths).max(axis=-1).astype(np.int64)

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        return self.sample(counter_uniforms(self.seed, request_ids, step_index))


def tree_accepted_depth(tree: Tree, rank: np.ndarray, seq: np.ndarray, max_accept: np.ndarray) -> np.ndarray:
    """Per trace row: accepted depth of `tree` under greedy verification starting at that row."""
    child_by_rank = [{tree.ranks[c]: c for c in kids} for kids in tree.children]
    n = len(rank)
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        node, d, cap = 0, 0, int(max_accept[i])
        while d < cap and i + d < n and seq[i + d] == seq[i]:
            nxt = child_by_rank[node].get(int(rank[i + d]))
            if nxt is None:
                break
            node, d = nxt, d + 1
        out[i] = d
    return out


def trace_tree_walks(name_or_path: str, drafter: str, tree: Tree, seed: int, base_dir: Path):
    """A `TraceChainAcceptance` whose per-sequence walks are greedy tree verifications of `tree`."""
    from profiles.acceptance.trace import branch_ranks, load_trace
    from simulator.speculation.trace_acceptance import TraceChainAcceptance, resolve_trace_path

    path = resolve_trace_path(name_or_path, base_dir)
    try:
        trace = load_trace(path)
        rank = branch_ranks(trace, drafter)
    except ValueError as exc:
        raise ScenarioError("acceptance.drafter", f"{path}: {exc}") from None
    seq = trace["seq"].to_numpy()
    depth = tree_accepted_depth(tree, rank, seq, trace["max_accept"].to_numpy())
    starts = np.flatnonzero(np.r_[True, seq[1:] != seq[:-1]])
    ends = np.r_[starts[1:], len(seq)]
    walks = []
    for a, b in zip(starts, ends):
        i, steps = a, []
        while i < b:
            steps.append(depth[i])
            i += depth[i] + 1
        walks.append(steps)
    lengths = np.array([len(w) for w in walks], dtype=np.int64)
    acc = TraceChainAcceptance(tree.depth, seed, np.concatenate(walks).astype(np.int64),
                               np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64), lengths)
    return TraceTreeAcceptance(acc, tree.size - 1)


@dataclass(frozen=True)
class TraceTreeAcceptance(AcceptanceModel):
    """Trace walks of a tree: the chain trace acceptance's interface plus the tree's draft-token count."""

    walks: object  # TraceChainAcceptance
    nodes: int     # draft tokens verified per request per step (tree size − 1)

    @property
    def draft_tokens(self) -> int:
        return self.nodes

    @property
    def depth(self) -> int:
        return self.walks.depth

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        return self.walks.tau(request_ids, step_index)

    def expected_accepted(self) -> float:
        return self.walks.expected_accepted()

    def full_accept_probability(self) -> float:
        return self.walks.full_accept_probability()


def trace_rank_probs(name_or_path: str, drafter: str, base_dir: Path, max_rank: int) -> np.ndarray:
    """Empirical P(target token has drafter rank k), k < max_rank: the trace's positional accept_probs
    (used to shape static/dynamic trees that are then walked on the trace's own ranks)."""
    from profiles.acceptance.trace import branch_ranks, load_trace
    from simulator.speculation.trace_acceptance import resolve_trace_path

    path = resolve_trace_path(name_or_path, base_dir)
    try:
        rank = branch_ranks(load_trace(path), drafter)
    except ValueError as exc:
        raise ScenarioError("acceptance.drafter", f"{path}: {exc}") from None
    return np.array([(rank == k).mean() for k in range(max_rank)])
