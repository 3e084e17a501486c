"""Acceptance of vLLM's static kary tree drafted by an EAGLE-3 head from the per-position acceptance draftsim uses
for EAGLE-3 chains (`acceptance: constant` or `positional`): `spine_kary_tree`, then the tree acceptance machinery
(simulator.speculation.tree_acceptance.TreeAcceptance) as for any static tree.

The rule, per node of the kary tree (k children per node, `depth` levels):
- the rank-0 child of a node at depth j - 1 accepts with the chain's conditional acceptance of position j, α_j
  (`constant`: α at every position; `positional`: alphas[j - 1], the last one repeated below it). Exact for the
  tree's spine: vLLM's propose_tree gives every child its parent's hidden state and attends each node to its
  ancestors only (tree_attn, simulator.cost.static_tree), so the spine's top-1 drafts are the chain's drafts,
  and verification accepts a node when the target's token is that node's token (greedy) as it does a chain's;
- a child of rank r >= 1 (the second-best, third-best ... token under its parent) accepts with 0. Named
  approximation, a lower bound: per-position figures give P(the target's token is the head's top-1) only and
  say nothing of its second choice; no figure for it is invented here, so the tree's accepted length equals the
  chain's of the same depth and only its extra verify and draft tokens show. Credit for the siblings needs
  per-rank acceptance (`acceptance: ranked` with accept_probs per rank, `contexts`, `pair` or `trace`), which
  the kary builder reads as for every static tree (simulator.speculation.shapes.build_tree). The upper bound
  (every miss of the top-1 caught by the second choice, rank-1 acceptance 1 - α_j) is not used.
"""
from __future__ import annotations

PER_POSITION_ACCEPTANCE = ("constant", "positional")   # the acceptance kinds spine_kary_tree reads


def position_alphas(acc, depth: int) -> tuple[float, ...]:
    """α_1..α_depth of a `constant` or `positional` acceptance section (a positional list shorter than the tree
    repeats its last figure, as ChainAcceptance.from_alphas does for a chain)."""
    figures = [float(acc.alpha)] if acc.kind == "constant" else [float(a) for a in acc.alphas]
    return tuple(figures[min(j, len(figures) - 1)] for j in range(depth))


def spine_kary_tree(k: int, depth: int, alphas: tuple[float, ...]):
    """The kary tree (theory.tree_builders.kary_tree's node order) whose rank-0 child at depth j accepts
    alphas[j - 1] and whose other children accept 0 (module docstring)."""
    from theory.trees import Tree
    parents, ranks, accept, level, j = [-1], [0], [1.0], [0], 0
    for j in range(depth):
        nxt = []
        for node in level:
            for rank in range(k):
                parents.append(node), ranks.append(rank), accept.append(alphas[j] if rank == 0 else 0.0)
                nxt.append(len(parents) - 1)
        level = nxt
    return Tree(tuple(parents), tuple(ranks), tuple(accept))
