"""Per-context dynamic trees (EAGLE-2 reranking, DySpec, OPT-Tree) against one static tree.

**Model.** Every node of a draft tree sits in a context of one of C classes, drawn independently per
node with probabilities w_c; in class c the child of rank k of that node is the accepted one with
probability ``a_c[k]`` (Sequoia's positional model per class, siblings exclusive). The drafter sees the
class of a node before deciding whether to expand it: EAGLE-2 reads it from the draft's confidence
(its top-1 probability), which its paper reports to be well calibrated to acceptance.

*Static tree* (one shape for every step). Along a path the classes are independent, so a node of rank
path (r_1..r_d) is accepted with probability Π_i E[a_c[r_i]] = Π_i ā[r_i], ``ā = Σ_c w_c a_c``:
a static shape accepts exactly as under the mean positional model, E_static = E[tokens | T, ā].

*Dynamic tree.* For each realisation of the node classes the builder (EAGLE-2's beam and rerank, or any
builder of a fixed budget) shapes the tree with the realised per-node acceptance, and that realised tree
is verified: E_dynamic = E_classes[E[tokens | T(classes), classes]]. No closed form in general;
:func:`sample_dynamic_trees` draws realisations (a Monte-Carlo library) and their mean estimates it.
With a builder that is optimal for every realisation (OPT-Tree's objective), E_dynamic ≥ E_static,
because the static shape is feasible in every realisation and its expected tokens average to E_static.

:func:`simulate_context_walk` runs the verification itself (class of each visited node drawn, then which
child rank, if any, the target's token has) so the static closed form is checked by Monte Carlo.
Approximation of the model, named here: classes are independent across nodes (real confidences are
correlated along a path: easy spans come in runs).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from theory import _checks
from theory.trees import Tree


def class_rows(weights, accept_probs) -> tuple[np.ndarray, np.ndarray]:
    """Normalised weights (C,) and the accept_probs rows padded with zeros into a (C, K) array."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) == 0 or np.any(w <= 0) or not np.all(np.isfinite(w)):
        raise ValueError("weights must be a non-empty list of positive numbers")
    if len(accept_probs) != len(w):
        raise ValueError(f"one accept_probs row per class: {len(w)} weights, {len(accept_probs)} rows")
    rows = [_checks.probabilities(a, f"accept_probs[{i}]") for i, a in enumerate(accept_probs)]
    if any(r.sum() > 1.0 + 1e-6 for r in rows):
        raise ValueError("every accept_probs row must sum to at most 1 (children are exclusive)")
    width = max(len(r) for r in rows)
    return w / w.sum(), np.array([np.pad(r, (0, width - len(r))) for r in rows])


def mean_accept_probs(weights, accept_probs) -> np.ndarray:
    """ā[k] = Σ_c w_c a_c[k]: what every non-dynamic shape sees (module docstring)."""
    w, rows = class_rows(weights, accept_probs)
    return w @ rows


def sample_dynamic_tree(weights, accept_probs, build: Callable[[Callable], Tree],
                        rng: np.random.Generator) -> Tree:
    """One realisation: each node the builder asks about gets a class drawn from `weights`; `build`
    receives child_probs(path) -> the accept_probs row of that node's class, and returns the tree, whose
    `accept` are the realised per-node acceptances."""
    w, rows = class_rows(weights, accept_probs)
    rng = _checks.generator(rng)
    cum = np.cumsum(w)
    classes: dict[tuple[int, ...], int] = {}

    def child_probs(path):
        c = classes.get(path)
        if c is None:
            c = classes[path] = min(int(np.searchsorted(cum, rng.random(), side="right")), len(w) - 1)
        return tuple(float(x) for x in rows[c])
    return build(child_probs)


def sample_dynamic_trees(weights, accept_probs, build: Callable[[Callable], Tree], samples: int,
                         rng: np.random.Generator) -> list[Tree]:
    """`samples` independent realisations (:func:`sample_dynamic_tree`)."""
    samples = _checks.positive_int(samples, "samples")
    rng = _checks.generator(rng)
    return [sample_dynamic_tree(weights, accept_probs, build, rng) for _ in range(samples)]


def simulate_context_walk(tree: Tree, weights, accept_probs, steps: int, rng: np.random.Generator) -> np.ndarray:
    """Tokens per step (bonus included) of `steps` verifications of the static shape `tree` (its ranks;
    its `accept` values are ignored): at each accepted node draw its class, then the rank of the target's
    token among its children (or none); continue if the tree holds that rank."""
    w, rows = class_rows(weights, accept_probs)
    steps = _checks.positive_int(steps, "steps")
    rng = _checks.generator(rng)
    cum_w, cum_rows = np.cumsum(w), np.cumsum(rows, axis=1)
    child_by_rank = [{tree.ranks[c]: c for c in kids} for kids in tree.children]
    tokens = np.ones(steps, dtype=np.int64)
    for s in range(steps):
        node = 0
        while True:
            c = min(int(np.searchsorted(cum_w, rng.random(), side="right")), len(w) - 1)
            rank = int(np.searchsorted(cum_rows[c], rng.random(), side="right"))
            # rank == width means "no child of the row's ranks": a tree child of that rank (more children
            # than the rows list) is never the accepted one; it was walked into before
            nxt = child_by_rank[node].get(rank) if rank < cum_rows.shape[1] else None
            if nxt is None:
                break
            node = nxt
            tokens[s] += 1
    return tokens
