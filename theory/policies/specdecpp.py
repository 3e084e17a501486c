"""Threshold stopping of the draft (SpecDec++, Huang et al. 2024) and the optimal threshold.

**Rule.** While drafting, an acceptance head predicts ``a_i``, the probability that draft token i is
accepted given tokens ``1..i-1`` are. The first token is always proposed; after proposing token i the
drafter stops if ``1 - prod_{j<=i} a_j > h`` (the probability of at least one rejection exceeds h), or
when it reaches the maximum length.

**MDP and optimal threshold (our derivation, for a calibrated head with i.i.d. predictions).** Model:
the ``a_i`` are i.i.d. draws from a discrete distribution (``values``, ``weights``) and, given them, the
drafts are accepted with those probabilities. A round that proposes L tokens takes
``verify_base_s + L (draft_token_s + verify_token_s)`` seconds and yields ``1 + sum_{i<=L} pi_i``
tokens in expectation, with ``pi_i = prod_{j<=i} a_j``. The long-run rate of a policy is
E[tokens]/E[seconds] (renewal-reward); by Dinkelbach, the best rate ``lam*`` is the root of
``F(lam) = max_policy E[tokens - lam seconds]``, which is a finite-horizon optimal stopping problem in
the state ``(i, pi_i)``: drafting one more token earns ``pi_i a - lam c`` in expectation
(``c = draft_token_s + verify_token_s``) and moves to ``pi_i a``. Because ``pi`` only decreases, the
one-step-lookahead stopping set ``{pi abar <= lam c}`` (``abar`` = mean prediction) is closed, so this
is the *monotone case* of optimal stopping and the one-step-lookahead rule is optimal (Chow, Robbins &
Siegmund). Hence the optimal policy is a threshold on ``1 - pi``:

    h* = 1 - lam* c / abar,

the SpecDec++ rule. :func:`specdecpp_optimal_threshold` computes ``lam*`` by bisection on ``F`` with an
exact backward DP over all (history-dependent) policies, then ``h*``; tests check that the threshold
rule attains ``lam*`` exactly, that no other threshold or (for short horizons) any other policy does
better, and that a Monte-Carlo run of :func:`specdecpp_length` reproduces the exact rate.

**Where no threshold is optimal.** When a second token never pays (``lam* c > abar``, so ``h* < 0``) the
optimum stops after the first token in every state, but the rule stops only where ``1 - pi > h >= 0``: a
state with ``pi = 1`` (every prediction so far exactly 1) always continues. So if some prediction value is
exactly 1, no threshold in [0, 1] attains ``lam*``; h = 0 is then the best threshold and the returned
``tokens_per_s`` (the rule's own exact rate) is below ``optimal_rate`` (values [1, 0] half and half, draft
10 s, verify 1 s, max_len 3: 0.101 against 0.136 tokens/s). Otherwise (no prediction 1, or ``h* >= 0``)
the rule is optimal as above.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from theory import _checks


def specdecpp_length(predicted_accept: Sequence[float], threshold: float) -> int:
    """Number of draft tokens proposed by SpecDec++'s rule; ``len(predicted_accept)`` is the maximum."""
    probs = _checks.probabilities(predicted_accept, "predicted_accept")
    threshold = _checks.probability(threshold, "threshold")
    if probs.size == 0:
        raise ValueError("predicted_accept must hold at least one prediction (the first token is always proposed)")
    reject_prob = 1.0 - np.cumprod(probs)
    over = np.flatnonzero(reject_prob > threshold)
    return int(over[0] + 1) if over.size else int(probs.size)


@dataclass(frozen=True)
class StoppingModel:
    """Predicted-acceptance distribution and costs of the MDP (see module docstring)."""

    values: np.ndarray
    weights: np.ndarray
    draft_token_s: float
    verify_base_s: float
    verify_token_s: float
    max_len: int

    @property
    def token_cost_s(self) -> float:
        return self.draft_token_s + self.verify_token_s


def stopping_model(values, weights, draft_token_s: float, verify_base_s: float, verify_token_s: float,
                   max_len: int) -> StoppingModel:
    """Validate and bundle the MDP inputs; ``weights`` must be a probability vector over ``values``."""
    vals = _checks.probabilities(values, "values")
    w = _checks.distribution(weights, "weights")
    if vals.size != w.size:
        raise ValueError(f"values and weights must have the same length, got {vals.size} and {w.size}")
    return StoppingModel(vals, w, _checks.non_negative_float(draft_token_s, "draft_token_s"),
                         _checks.positive_float(verify_base_s, "verify_base_s"),
                         _checks.non_negative_float(verify_token_s, "verify_token_s"),
                         _checks.positive_int(max_len, "max_len"))


class _Lattice:
    """States after drafting i tokens = multisets of observed predictions (counts per value).

    ``states[i-1]`` lists the multisets of size i, ``pi[i-1]`` their products, ``child[i-1][s, j]`` the
    index at depth i+1 of state s extended by value j, ``first[j]`` the depth-1 index of value j.
    """

    def __init__(self, model: StoppingModel):
        m = model.values.size
        unit = [tuple(int(k == j) for k in range(m)) for j in range(m)]
        level = sorted(unit)
        self.states: list[list[tuple[int, ...]]] = []
        self.pi: list[np.ndarray] = []
        self.child: list[np.ndarray] = []
        self.first = np.array([level.index(u) for u in unit])
        for depth in range(1, model.max_len + 1):
            self.states.append(level)
            self.pi.append(np.prod(model.values[None, :] ** np.array(level, dtype=np.int64), axis=1))
            if depth == model.max_len:
                break
            grow = [[tuple(c + (k == j) for k, c in enumerate(s)) for j in range(m)] for s in level]
            nxt = sorted({g for row in grow for g in row})
            nxt_index = {g: n for n, g in enumerate(nxt)}
            self.child.append(np.array([[nxt_index[g] for g in row] for row in grow], dtype=np.int64))
            level = nxt


def _optimal_net_reward(model: StoppingModel, lattice: _Lattice, lam: float) -> float:
    """F(lam): best expected (tokens - lam seconds) per round over all policies (backward DP)."""
    abar = float(np.dot(model.weights, model.values))
    value_next = np.zeros_like(lattice.pi[-1])
    for depth in range(model.max_len - 1, 0, -1):  # value after drafting `depth` tokens
        pi = lattice.pi[depth - 1]
        cont = pi * abar - lam * model.token_cost_s + value_next[lattice.child[depth - 1]] @ model.weights
        value_next = np.maximum(cont, 0.0)
    first = model.values - lam * model.token_cost_s + value_next[lattice.first]
    return 1.0 - lam * model.verify_base_s + float(np.dot(model.weights, first))


def optimal_rate(model: StoppingModel) -> float:
    """``lam*``: the best tokens per second of any stopping policy (bisection on F, to 1e-12 relative)."""
    lattice = _Lattice(model)
    lo, hi = 0.0, (model.max_len + 1.0) / model.verify_base_s
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _optimal_net_reward(model, lattice, mid) > 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class PolicyValue:
    tokens_per_round: float
    seconds_per_round: float

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_round / self.seconds_per_round


def evaluate_policy(model: StoppingModel, stop) -> PolicyValue:
    """Exact rate of a policy ``stop(depth, counts) -> bool`` (asked after each token; forced at max_len)."""
    return _evaluate(model, _Lattice(model), stop)


def _evaluate(model: StoppingModel, lattice: _Lattice, stop) -> PolicyValue:
    prob = np.zeros(lattice.pi[0].size)  # probability of reaching each state (token `depth` drafted)
    np.add.at(prob, lattice.first, model.weights)
    tokens, drafted = 1.0, 0.0
    for depth in range(1, model.max_len + 1):
        tokens += float(np.dot(prob, lattice.pi[depth - 1]))
        drafted += float(prob.sum())
        if depth == model.max_len:
            break
        go = np.array([not stop(depth, s) for s in lattice.states[depth - 1]])
        nxt = np.zeros(lattice.pi[depth].size)
        np.add.at(nxt, lattice.child[depth - 1][go], prob[go][:, None] * model.weights[None, :])
        prob = nxt
    return PolicyValue(tokens, model.verify_base_s + drafted * model.token_cost_s)


def threshold_policy_value(model: StoppingModel, threshold: float) -> PolicyValue:
    """Exact rate of SpecDec++'s rule with ``threshold`` h."""
    threshold = _checks.probability(threshold, "threshold")

    def stop(depth, counts):
        return 1.0 - float(np.prod(model.values ** np.array(counts))) > threshold

    return evaluate_policy(model, stop)


@dataclass(frozen=True)
class ThresholdChoice:
    threshold: float
    tokens_per_s: float
    optimal_rate: float


def specdecpp_optimal_threshold(values, weights, draft_token_s: float, verify_base_s: float,
                                verify_token_s: float, max_len: int) -> ThresholdChoice:
    """The optimal SpecDec++ threshold ``h* = 1 - lam* c / abar`` (clipped to [0, 1]) and its exact rate; the
    rate is ``optimal_rate`` except where a prediction is exactly 1 and ``h* < 0`` (module doc: no threshold
    attains the optimum there, h = 0 is the best one)."""
    model = stopping_model(values, weights, draft_token_s, verify_base_s, verify_token_s, max_len)
    lam = optimal_rate(model)
    abar = float(np.dot(model.weights, model.values))
    # abar = 0: every prediction is 0, a second token never pays, so stop after the first (h = 0, the
    # limit of the formula as abar -> 0+; with zero token cost every threshold has the same rate)
    h = 0.0 if abar <= 0.0 else float(np.clip(1.0 - lam * model.token_cost_s / abar, 0.0, 1.0))
    return ThresholdChoice(h, threshold_policy_value(model, h).tokens_per_s, lam)


def all_policies_best_rate(model: StoppingModel) -> float:
    """Brute force over every deterministic policy on the state lattice (tiny models only; for tests)."""
    lattice = _Lattice(model)
    decision_states = [(depth, st) for depth in range(1, model.max_len) for st in lattice.states[depth - 1]]
    if len(decision_states) > 16:
        raise ValueError(f"{len(decision_states)} decision states is too many for brute force (max 16)")
    best = 0.0
    for bits in itertools.product([False, True], repeat=len(decision_states)):
        table = dict(zip(decision_states, bits))
        best = max(best, _evaluate(model, lattice, lambda d, st: table[(d, st)]).tokens_per_s)
    return best
