"""Cascade Speculative Drafting (Chen et al., NeurIPS 2024, arXiv 2312.11462): the draft is itself drafted.

**Vertical cascade.** A drafter model M_1 does not generate its k draft tokens autoregressively; it
verifies the proposals of a cheaper drafter M_2 (down to a statistical model such as CS Drafting's
max-gram, whose cost is negligible) by speculative decoding. Lossless inner verification keeps M_1's
output distribution, so the target's acceptance of M_1's draft is unchanged; what changes is the number
of M_1 passes. With the inner drafter proposing g tokens per pass, each accepted with probability a
(i.i.d., Leviathan's model), one M_1 pass yields T = τ + 1 tokens, P(τ = i) = a^i (1 − a) for i < g and
P(τ = g) = a^g. The expected number of M_1 passes to produce k tokens (the last pass may overshoot;
surplus tokens are discarded) is

    N(0) = 0,   N(k) = 1 + Σ_{t=1}^{g+1} P(T = t) · N(max(k − t, 0)),

computed by :func:`expected_passes` (a DP over k) and checked against :func:`simulate_passes`, a run of the
inner loop. Each pass verifies g + 1 tokens per request (a wider, but still memory-bound, pass).

**Candidate reuse (Ouroboros).** Ouroboros (Zhao et al., EMNLP 2024) also keeps the phrases the target's
verification produced and offers them as drafts later. With probability h (the reuse hit rate) a pass's
g proposals are such a reused candidate, accepted with a' instead of a: one pass then yields
P(T = t) = (1 − h)·P_a(T = t) + h·P_a'(T = t) (a mixture, the hit drawn independently per pass), and the
recursion above runs on the mixture (`reuse_rate`, `reuse_alpha` of :func:`expected_passes`).

**Horizontal cascade.** Later draft positions are accepted less often (the chain survives to position i
with probability Π_{j≤i} α_j), so CS Drafting gives the first positions to the best drafter and the later
ones to cheaper drafters. With stage s proposing positions [o_s, o_s + k_s) with per-token acceptance
α_s, the expected tokens per step are the positional chain's (theory.chain.expected_tokens_positional)
and the drafting time is Σ_s N_s · c_s. :func:`cascade_step` returns both, and
:func:`best_horizontal_split` checks CS Drafting's allocation argument by brute force over splits.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from theory import _checks
from theory.chain import expected_tokens_positional


def _tokens_per_pass(alpha: float, gamma: int) -> np.ndarray:
    """P(T = t) for t = 0..gamma+1 (index t; P(T = 0) = 0): tokens one verify pass yields."""
    probs = np.zeros(gamma + 2)
    for i in range(gamma):
        probs[i + 1] = alpha ** i * (1.0 - alpha)
    probs[gamma + 1] = alpha ** gamma
    return probs


def expected_passes(tokens: int, alpha: float, gamma: int, reuse_rate: float = 0.0,
                    reuse_alpha: float = 0.0) -> float:
    """Expected verify passes of a model whose drafting is sped up by an inner drafter of per-token
    acceptance `alpha` and length `gamma` (module docstring), to produce `tokens` tokens. gamma = 0 is
    plain autoregressive drafting: `tokens` passes. `reuse_rate` h: the share of passes whose proposals
    are reused verification candidates, accepted with `reuse_alpha` (Ouroboros)."""
    tokens = _checks.non_negative_int(tokens, "tokens")
    alpha = _checks.probability(alpha, "alpha")
    gamma = _checks.non_negative_int(gamma, "gamma")
    h = _checks.probability(reuse_rate, "reuse_rate")
    probs = _tokens_per_pass(alpha, gamma)
    if h > 0.0:
        probs = (1.0 - h) * probs + h * _tokens_per_pass(_checks.probability(reuse_alpha, "reuse_alpha"), gamma)
    n = np.zeros(tokens + 1)
    for k in range(1, tokens + 1):
        n[k] = 1.0 + sum(probs[t] * n[max(k - t, 0)] for t in range(1, gamma + 2))
    return float(n[tokens])


def simulate_passes(tokens: int, alpha: float, gamma: int, runs: int, rng: np.random.Generator,
                    reuse_rate: float = 0.0, reuse_alpha: float = 0.0) -> np.ndarray:
    """Passes taken by `runs` explicit runs of the inner speculative loop (per pass: draw the accepted
    inner drafts one by one, emit them plus one token of the verifying model, stop at `tokens`). With
    `reuse_rate` > 0 each pass first draws whether its proposals are a reused candidate (`reuse_alpha`)."""
    tokens = _checks.non_negative_int(tokens, "tokens")
    alpha = _checks.probability(alpha, "alpha")
    gamma = _checks.non_negative_int(gamma, "gamma")
    runs = _checks.positive_int(runs, "runs")
    rng = _checks.generator(rng)
    reuse_rate = _checks.probability(reuse_rate, "reuse_rate")   # (unchecked: 2.0 reused on every pass)
    if reuse_rate > 0.0:
        reuse_alpha = _checks.probability(reuse_alpha, "reuse_alpha")
    out = np.zeros(runs, dtype=np.int64)
    for r in range(runs):
        made = passes = 0
        while made < tokens:
            tau = 0
            a = alpha
            if reuse_rate > 0.0 and rng.random() < reuse_rate:
                a = reuse_alpha
            while tau < gamma and rng.random() < a:
                tau += 1
            made += tau + 1
            passes += 1
        out[r] = passes
    return out


@dataclass(frozen=True)
class CascadeStep:
    expected_tokens: float   # per target verification, bonus included
    draft_cost: float        # Σ_s N_s · c_s, in the units of the stage costs
    passes: tuple[float, ...]  # expected passes of each stage


def cascade_step(stage_tokens: Sequence[int], stage_alphas: Sequence[float], stage_costs: Sequence[float],
                 inner: Sequence[tuple[float, int] | None] | None = None) -> CascadeStep:
    """One CS Drafting step: stage s proposes stage_tokens[s] consecutive positions accepted by the target
    with per-token probability stage_alphas[s]; a stage pass costs stage_costs[s]; inner[s] = (a, g) makes
    stage s a vertical cascade over a negligible-cost drafter (None: autoregressive)."""
    if not (len(stage_tokens) == len(stage_alphas) == len(stage_costs)):
        raise ValueError("stage_tokens, stage_alphas and stage_costs must have the same length")
    inner = list(inner) if inner is not None else [None] * len(stage_tokens)
    if len(inner) != len(stage_tokens):
        raise ValueError("inner must have one entry per stage")
    alphas, passes, cost = [], [], 0.0
    for k, a, c, v in zip(stage_tokens, stage_alphas, stage_costs, inner):
        k = _checks.non_negative_int(k, "stage_tokens")
        c = _checks.non_negative_float(c, "stage_costs")
        n = float(k) if v is None else expected_passes(k, *v)
        alphas += [_checks.probability(a, "stage_alphas")] * k
        passes.append(n)
        cost += n * c
    return CascadeStep(expected_tokens_positional(alphas) if alphas else 1.0, cost, tuple(passes))


def best_horizontal_split(gamma: int, stage_alphas: Sequence[float], stage_costs: Sequence[float],
                          target_cost: float = 1.0) -> tuple[tuple[int, ...], float]:
    """Brute force over every split of `gamma` positions into ordered stages (stage s takes k_s ≥ 0
    consecutive positions, in the given stage order): the split maximising expected tokens per unit time
    (target pass `target_cost` + drafting). Returns (split, tokens per unit time)."""
    gamma = _checks.non_negative_int(gamma, "gamma")
    # (no stage recursed without end; target_cost 0 divided by 0 and a negative or NaN one returned (None, -1))
    target_cost = _checks.positive_float(target_cost, "target_cost")
    stages = len(stage_alphas)
    if stages == 0:
        raise ValueError("stage_alphas must name at least one stage")
    best, best_rate = None, -1.0

    def splits(left: int, parts: int):
        if parts == 1:
            yield (left,)
            return
        for k in range(left + 1):
            for rest in splits(left - k, parts - 1):
                yield (k, *rest)
    for split in splits(gamma, stages):
        step = cascade_step(split, stage_alphas, stage_costs)
        rate = step.expected_tokens / (target_cost + step.draft_cost)
        if rate > best_rate + 1e-15:
            best, best_rate = split, rate
    return best, best_rate
