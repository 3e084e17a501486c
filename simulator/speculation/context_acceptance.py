"""Acceptance that depends on the context (`acceptance: {kind: contexts}`) and per-context dynamic trees
(`dynamic_tree` with `per_context: true`): the model of theory.context_trees.

Every node of a draft tree is in a context class drawn independently (probability w_c), whose per-rank
acceptance is a_c. Every shape that does not look at the classes (chains, static trees, multi-draft, a
dynamic tree without `per_context`) then accepts exactly as under the mean ā = Σ w_c a_c
(theory.context_trees), so they use the `ranked` machinery with ā. A per-context dynamic tree is shaped
per step by EAGLE-2's builder on the realised classes; the DES draws each (request, step)'s realisation
from a library of `LIBRARY_TREES` realisations sampled once per replica kind (seeded), and walks that
realised tree with the step's uniform (`TreeLibraryAcceptance`).

Approximations, named here: the library is a finite Monte-Carlo sample of the realisations (the DES's mean
accepted length is the library's, whose standard error is reported by the tests, < 1 %); the step is
priced at the widest realisation's shape (verify: the largest tree — EAGLE-2 keeps `budget` nodes
whenever its expansion yields that many, so the sizes agree; drafting: per level, the most nodes any
realisation expands).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.speculation.acceptance import AcceptanceModel, counter_uniforms
from simulator.speculation.tree_acceptance import nested_intervals

LIBRARY_TREES = 256
_LIBRARY_SALT = 0x632BE59BD9B4E019  # xor-ed into the seed: the library-index stream differs from the path stream


@dataclass(frozen=True)
class TreeLibraryAcceptance(AcceptanceModel):
    """τ per (request, step): a uniformly drawn tree of the library, walked with the step's uniform."""

    trees: tuple
    seed: int
    lo: np.ndarray      # (M, N) nested-interval bounds of each tree's non-root nodes, padded with empty
    hi: np.ndarray      # (M, N) intervals [0, 0)
    depths: np.ndarray  # (M, N)

    @staticmethod
    def from_trees(trees, seed: int) -> "TreeLibraryAcceptance":
        n = max(t.size for t in trees) - 1
        lo, hi, depths = np.zeros((len(trees), n)), np.zeros((len(trees), n)), np.zeros((len(trees), n), np.int64)
        for i, t in enumerate(trees):
            a, b = nested_intervals(t)
            lo[i, :t.size - 1], hi[i, :t.size - 1], depths[i, :t.size - 1] = a[1:], b[1:], t.node_depths[1:]
        return TreeLibraryAcceptance(tuple(trees), seed, lo, hi, depths)

    @property
    def depth(self) -> int:
        return max(t.depth for t in self.trees)

    @property
    def draft_tokens(self) -> int:
        return max(t.size for t in self.trees) - 1

    def tree_index(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        u = counter_uniforms(self.seed ^ _LIBRARY_SALT, request_ids, step_index)
        return np.minimum((u * len(self.trees)).astype(np.int64), len(self.trees) - 1)

    def tau(self, request_ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        idx = self.tree_index(request_ids, step_index)
        u = counter_uniforms(self.seed, request_ids, step_index)[..., None]
        inside = (u >= self.lo[idx]) & (u < self.hi[idx])
        return (inside * self.depths[idx]).max(axis=-1).astype(np.int64)

    def expected_accepted(self) -> float:
        return float(np.mean([t.expected_tokens for t in self.trees])) - 1.0

    def full_accept_probability(self) -> float:
        depth = self.depth
        return float(np.mean([t.path_probs[t.node_depths == depth].sum() for t in self.trees]))


def class_rows(acc) -> tuple[np.ndarray, np.ndarray]:
    """(weights, padded accept_probs rows) of a `contexts` acceptance section."""
    from theory.context_trees import class_rows as rows_of
    return rows_of([c.weight for c in acc.contexts], [c.accept_probs for c in acc.contexts])


def dynamic_tree_library(sp, acc, seed: int) -> TreeLibraryAcceptance:
    """The library of realised dynamic trees (EAGLE-2's or OPT-Tree's builder) of a `dynamic_tree` section
    under `contexts` acceptance."""
    from simulator.speculation.shapes import dynamic_tree_builder
    from theory.context_trees import sample_dynamic_trees
    w, rows = class_rows(acc)
    trees = sample_dynamic_trees(w, rows, dynamic_tree_builder(sp), LIBRARY_TREES, np.random.default_rng(seed))
    return TreeLibraryAcceptance.from_trees(trees, seed)


def widest_shape(trees) -> tuple[int, tuple[int, ...]]:
    """(verify query tokens, draft widths per level) covering every tree (module docstring)."""
    depth = max(t.depth for t in trees)
    widths = np.zeros(depth, dtype=np.int64)
    for t in trees:
        w = t.expanded_level_widths()
        widths[:len(w)] = np.maximum(widths[:len(w)], w)
    return max(t.size for t in trees), tuple(int(x) for x in widths)
