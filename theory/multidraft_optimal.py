"""The best acceptance any lossless verifier can reach with n drafts (Hu et al. 2025; Khisti et al.).

**Problem.** Drafts ``X = (x_1..x_n)`` come from a known distribution ``Q(X)`` (i.i.d. from q, or q
sampled without replacement). A verifier is a conditional law of the output ``Y`` given ``X``; it is
lossless iff ``Y ~ p``. Joint laws ``pi(X, y)`` with row sums ``Q(X)`` and column sums ``p(y)`` are
exactly the lossless verifiers, and acceptance is ``sum_X sum_{y in X} pi(X, y)``. So the optimum is the
coupling LP

    maximise  sum_{X, y in X} pi(X, y)   s.t.  sum_y pi(X, y) = Q(X),  sum_X pi(X, y) = p(y),  pi >= 0.

*Reduction* (what :func:`optimal_acceptance` with ``method="lp"`` solves): keep only the variables with
``y in X`` and relax both equalities to ``<=``. Any feasible sub-coupling extends to a full coupling by
coupling the leftover row masses ``Q(X) - sum_y pi`` with the leftover column masses ``p(y) - sum_X pi``
(equal totals) e.g. as a product; that only adds mass, so the objective does not drop and the two LPs
have the same optimum. :func:`optimal_coupling` returns that extended plan and :func:`sample_optimal`
runs it, so tests can check that the optimum is attained by a real lossless verifier.

*Aggregation by draft set.* The objective and the constraints only see X through the set ``S(X)`` of
distinct drafted tokens, so the LP is solved over sets with ``Q(S) = Pr(S(X) = S)``: a tuple-level
solution summed over the tuples of each set is feasible for the set LP with the same value, and a
set-level solution split in proportion ``Q(X)/Q(S)`` is feasible for the tuple LP with the same value.
This shrinks V^n tuples to at most 2^V sets. For i.i.d. drafts ``Q(S)`` comes from
``Pr(S(X) subset of T) = q(T)^n`` by Moebius inversion over subsets; without replacement from the
enumerated tuples (:func:`draft_tuples`).

**Min-cut dual (any draft law).** The reduced LP is a max-flow problem: source -> tuple X (capacity
``Q(X)``) -> each token y in X (capacity infinite) -> sink (capacity ``p(y)``). By max-flow/min-cut,
a finite cut is a token set T whose sink edges are cut plus all tuples not contained in T (the same
with sets in place of tuples), so

    alpha*(n) = min over token sets T of [ p(T) + 1 - Pr(every draft lies in T) ].

**Fast exact method for i.i.d. drafts.** Then ``Pr(every draft in T) = q(T)^n`` and
``alpha* = 1 - max_T G(T)``, ``G(T) = g(q(T)) - p(T)``, ``g(s) = s^n`` (convex). *Claim:* some
maximiser of G is a prefix of the tokens sorted by ``q/p`` descending (``p = 0`` first, ties adjacent),
so ``alpha* = 1 - max_k (Q_k^n - P_k)`` over the V+1 prefixes (``Q_k, P_k`` prefix sums): one sort.

*Proof.* Let T maximise G, ``s = q(T)``, ``lam = g'(s) = n s^(n-1)``. Removing ``y in T`` must not
help: ``p_y <= g(s) - g(s - q_y) <= lam q_y`` (convexity). Adding ``z not in T`` must not help:
``p_z >= g(s + q_z) - g(s) >= lam q_z``. If ``lam > 0`` every token in T has ``q/p >= 1/lam`` and every
token outside has ``q/p <= 1/lam``, so T is a prefix except possibly for part of the tie group with
ratio exactly ``r = 1/lam``. Including a part of that group with p-mass m changes G to
``g(s0 + r m) - p0 - m``, convex in m, so taking all of the group or none of it is at least as good: a
prefix maximiser exists. If ``lam = 0`` then ``q(T) = 0`` (n >= 2) and ``G(T) = -p(T) <= G(empty)``,
and the empty set is a prefix. QED. Tests check this against the LP on hundreds of random cases and the
min-cut formula against enumeration of all token sets, with and without replacement.

Without replacement ``Pr(every draft in T)`` depends on T beyond ``q(T)``; only the LP is offered.
"""
from __future__ import annotations

import itertools
import math
import os
import sys
from dataclasses import dataclass

import numpy as np
import pulp

from theory import _checks
from theory.multidraft import check_pair
from theory.multidraft_sampling import MultiDraftSamples

METHODS = ("auto", "fast", "lp")

#: Largest number of draft tuples enumerated (sampling without replacement: V!/(V-n)! of them).
LP_MAX_TUPLES = 2_000_000
#: Largest number of draftable tokens for the i.i.d. set law (2^V subsets).
LP_MAX_SUPPORT = 20


def optimal_acceptance(p, q, n: int, replacement: bool = True, method: str = "auto") -> float:
    """Maximum acceptance over all lossless verifiers of n drafts from q (see module docstring).

    ``replacement=True``: i.i.d. drafts; ``False``: drafts sampled from q without replacement (if q has
    fewer than n tokens with positive mass, all of them are drafted). ``method``: ``"fast"`` (sort-based
    closed form, i.i.d. only, O(V log V)), ``"lp"`` (coupling LP through pulp with HiGHS, or CBC when
    HiGHS is missing; small vocabularies), ``"auto"`` (fast when possible, else lp).
    """
    p, q = check_pair(p, q)
    n = _checks.positive_int(n, "n")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        method = "fast" if replacement else "lp"
    if method == "fast":
        if not replacement:
            raise ValueError("method='fast' needs replacement=True (i.i.d. drafts); use method='lp'")
        return _fast_iid(p, q, n)
    return _solve_lp(p, q, n, replacement)[0]


def _fast_iid(p: np.ndarray, q: np.ndarray, n: int) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(p > 0, q / p, np.where(q > 0, np.inf, 0.0))
    order = np.argsort(-ratio)  # any sort keeps equal ratios adjacent, which is all the proof needs
    q_prefix = np.cumsum(np.take(q, order))
    p_prefix = np.cumsum(np.take(p, order))
    np.minimum(q_prefix, 1.0, out=q_prefix)
    gain = float(np.max(_integer_power(q_prefix, n) - p_prefix))
    return float(min(1.0, 1.0 - max(gain, 0.0)))


def _integer_power(values: np.ndarray, n: int) -> np.ndarray:
    """``values ** n`` by repeated squaring (a few multiplies instead of a libm pow per element)."""
    result = np.ones_like(values)
    base = values.copy()
    while n:
        if n & 1:
            result *= base
        n >>= 1
        if n:
            base *= base
    return result


def draft_tuples(q: np.ndarray, n: int, replacement: bool) -> tuple[np.ndarray, np.ndarray]:
    """All draft tuples with positive probability and their probabilities ``Q(X)``.

    With replacement: ordered n-tuples over the support of q, ``Q = prod q``. Without: ordered tuples
    of distinct tokens of length ``min(n, |support|)``, ``Q = prod_i q(x_i) / (1 - sum_{j<i} q(x_j))``.
    """
    support = np.flatnonzero(q > 0)
    length = n if replacement else min(n, support.size)
    count = support.size**length if replacement else math.perm(support.size, length)
    if count > LP_MAX_TUPLES:
        raise ValueError(
            f"n={n} over {support.size} draftable tokens gives {count} draft tuples; the LP allows at most "
            f"{LP_MAX_TUPLES} (use method='fast' for i.i.d. drafts)"
        )
    gen = itertools.product(support, repeat=length) if replacement else itertools.permutations(support, length)
    tuples = np.array(list(gen), dtype=np.int64).reshape(-1, length)
    probs = q[tuples]
    if not replacement and length > 1:
        used = np.concatenate((np.zeros((tuples.shape[0], 1)), np.cumsum(probs, axis=1)[:, :-1]), axis=1)
        probs = probs / (1.0 - used)
    return tuples, np.prod(probs, axis=1)


def draft_sets(q: np.ndarray, n: int, replacement: bool) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Distinct-token sets the drafts can form and their probabilities ``Q(S)`` (positive ones only)."""
    support = np.flatnonzero(q > 0)
    k = support.size
    if replacement:
        if k > LP_MAX_SUPPORT:
            raise ValueError(f"q has {k} draftable tokens; the LP allows at most {LP_MAX_SUPPORT} "
                             "(use method='fast' for i.i.d. drafts)")
        masks = np.arange(1 << k)
        subset_q = np.zeros(1 << k)
        for b in range(k):
            has = (masks >> b) & 1 == 1
            subset_q[has] += q[support[b]]
        probs = np.minimum(subset_q, 1.0) ** n  # Pr(all drafts inside the subset)
        for b in range(k):  # Moebius inversion: Pr(set of drafts == subset)
            has = (masks >> b) & 1 == 1
            probs[has] -= probs[masks[has] ^ (1 << b)]
        popcount = np.array([bin(m).count("1") for m in masks])
        probs[(popcount > n) | (popcount == 0)] = 0.0
        probs = np.maximum(probs, 0.0)  # rounding of the alternating sums (error ~ 2^k eps)
    else:
        tuples, tuple_probs = draft_tuples(q, n, replacement=False)
        position = np.empty(q.size, dtype=np.int64)
        position[support] = np.arange(k)
        tuple_masks = np.bitwise_or.reduce(1 << position[tuples], axis=1)
        masks = np.unique(tuple_masks)
        probs = np.zeros(masks.size)
        np.add.at(probs, np.searchsorted(masks, tuple_masks), tuple_probs)
    keep = np.flatnonzero(probs > 0.0)
    sets = [tuple(int(support[b]) for b in range(k) if (int(masks[i]) >> b) & 1) for i in keep]
    return sets, probs[keep]


def _lp_solver() -> pulp.LpSolver:
    highs = pulp.HiGHS(msg=False)
    if highs.available():
        _swallow_highs_banner()
        return highs
    return pulp.PULP_CBC_CMD(msg=False)


_BANNER_SWALLOWED = False


def _swallow_highs_banner() -> None:
    """highspy prints its banner ('Running HiGHS 1.16.0 (git hash ...): Copyright ...', two lines) on file
    descriptor 1 when a process constructs its first ``Highs`` object, whatever ``msg=False`` asks (PuLP turns
    ``output_flag`` off only after constructing it), so ``draftsim run --quiet`` of a multidraft
    ``optimal_wor`` scenario wrote it to stdout. The process's first ``Highs`` is constructed here with
    descriptor 1 pointed at /dev/null (C's stdio buffers flushed before it is restored); later ones print
    nothing."""
    global _BANNER_SWALLOWED
    if _BANNER_SWALLOWED:
        return
    _BANNER_SWALLOWED = True
    import ctypes
    import highspy
    sys.stdout.flush()
    try:
        flush = ctypes.CDLL(None).fflush
    except (OSError, AttributeError):   # (no C library to flush: the banner is written unbuffered)
        flush = None
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
            if flush is not None:
                flush(None)
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _new_variable(problem: pulp.LpProblem, name: str) -> pulp.LpVariable:
    """A variable >= 0 attached to ``problem`` (PuLP >= 3.3 API, with the older constructor as fallback)."""
    if hasattr(problem, "add_variable"):
        return problem.add_variable(name, lowBound=0.0)
    return pulp.LpVariable(name, lowBound=0.0)


def _solve_lp(p: np.ndarray, q: np.ndarray, n: int, replacement: bool):
    """Solve the reduced set-level coupling LP; returns (value, sets, set_probs, sub-coupling matrix)."""
    sets, probs = draft_sets(q, n, replacement)
    problem = pulp.LpProblem("optimal_multidraft_acceptance", pulp.LpMaximize)
    by_token: dict[int, list[pulp.LpVariable]] = {}
    cells: list[tuple[int, int, pulp.LpVariable]] = []
    for row, tokens in enumerate(sets):
        row_vars = []
        for y in tokens:
            if p[y] <= 0.0:
                continue  # pi(S, y) <= p(y) = 0
            var = _new_variable(problem, f"pi_{row}_{y}")
            row_vars.append(var)
            by_token.setdefault(y, []).append(var)
            cells.append((row, y, var))
        if row_vars:
            problem += pulp.lpSum(row_vars) <= float(probs[row]), f"row_{row}"
    for y, column in by_token.items():
        problem += pulp.lpSum(column) <= float(p[y]), f"col_{y}"
    problem += pulp.lpSum(var for _, _, var in cells)
    status = problem.solve(_lp_solver())
    if pulp.LpStatus[status] != "Optimal":
        raise RuntimeError(f"coupling LP did not solve to optimality: {pulp.LpStatus[status]}")
    plan = np.zeros((len(sets), p.size))
    for row, y, var in cells:
        plan[row, y] = max(var.varValue or 0.0, 0.0)
    return float(min(plan.sum(), 1.0)), sets, probs, plan


@dataclass(frozen=True)
class OptimalCoupling:
    """An optimal lossless verifier as a joint law over (set of drafted tokens, output):
    ``plan[i, y] = Pr(set of drafts = draft_sets[i], output = y)``; rows of ``draft_sets`` are the
    tokens of each set padded with -1. The verifier only needs the set, not the order of the drafts."""

    draft_sets: np.ndarray
    set_probs: np.ndarray
    plan: np.ndarray
    acceptance: float


def optimal_coupling(p, q, n: int, replacement: bool = True) -> OptimalCoupling:
    """Solve the LP and extend its sub-coupling to a full coupling (leftovers coupled as a product)."""
    p, q = check_pair(p, q)
    n = _checks.positive_int(n, "n")
    value, sets, probs, plan = _solve_lp(p, q, n, replacement)
    width = max(len(t) for t in sets)
    padded = np.array([list(t) + [-1] * (width - len(t)) for t in sets], dtype=np.int64)
    row_left = np.maximum(probs - plan.sum(axis=1), 0.0)
    col_left = np.maximum(p - plan.sum(axis=0), 0.0)
    total_left = row_left.sum()
    if total_left > 0.0 and col_left.sum() > 0.0:
        plan = plan + np.outer(row_left, col_left / col_left.sum())
    return OptimalCoupling(padded, probs, plan, value)


def sample_optimal(coupling: OptimalCoupling, size: int, rng: np.random.Generator) -> MultiDraftSamples:
    """Run the optimal verifier ``size`` times: draw the draft set from Q, then the output from ``plan[row]``."""
    size = _checks.positive_int(size, "size")
    rng = _checks.generator(rng)
    rows = rng.choice(coupling.draft_sets.shape[0], size=size, p=coupling.set_probs / coupling.set_probs.sum())
    cond = coupling.plan[rows]
    cum = np.cumsum(cond, axis=1)
    u = rng.random(size) * cum[:, -1]
    output = np.minimum((cum <= u[:, None]).sum(axis=1), cond.shape[1] - 1)
    drafts = coupling.draft_sets[rows]
    match = drafts == output[:, None]
    accepted_round = np.where(match.any(axis=1), np.argmax(match, axis=1), -1)
    return MultiDraftSamples(drafts, output, accepted_round)
