"""Reasoning-step speculation (SpecReason, Pan et al. 2025): a small model proposes a whole step of L
tokens, the large model judges it in one pass and accepts it with probability a, else regenerates it.

One cycle (a step proposed, judged, possibly regenerated) costs, in seconds,

    T = L·c_s + c_j + (1 − a)·(L − 1)·c_t,

with c_s a small-model decode pass, c_j the judging pass over the step (L + 1 query tokens) and c_t a
large-model decode pass; it yields L + 1 tokens when accepted (the judge's pass also yields the next
token, as a verify pass's bonus token) and L when regenerated (the judging pass emits the first of the
regenerated tokens): E[tokens] = L + a. Against the large model alone (1 / c_t tokens per second),

    speedup = (L + a) · c_t / T.

:func:`simulate_specreason` runs the cycles explicitly (accept or regenerate, token by token) so the
closed form is checked by Monte Carlo.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theory import _checks


@dataclass(frozen=True)
class SpecReasonRate:
    tokens_per_cycle: float
    seconds_per_cycle: float
    speedup: float


def specreason_rate(accept: float, step_tokens: int, small_pass_s: float, judge_pass_s: float,
                    target_pass_s: float) -> SpecReasonRate:
    a = _checks.probability(accept, "accept")
    L = _checks.positive_int(step_tokens, "step_tokens")
    cs = _checks.non_negative_float(small_pass_s, "small_pass_s")
    cj = _checks.non_negative_float(judge_pass_s, "judge_pass_s")
    ct = _checks.positive_float(target_pass_s, "target_pass_s")
    tokens = L + a
    seconds = L * cs + cj + (1.0 - a) * (L - 1) * ct
    if seconds <= 0.0:   # (a ZeroDivisionError before)
        raise ValueError("small_pass_s and judge_pass_s are both 0 and no step is regenerated (accept 1 or "
                         "step_tokens 1): a cycle takes no time; give a positive small_pass_s or judge_pass_s")
    return SpecReasonRate(tokens, seconds, tokens * ct / seconds)


def simulate_specreason(accept: float, step_tokens: int, small_pass_s: float, judge_pass_s: float,
                        target_pass_s: float, cycles: int, rng: np.random.Generator) -> tuple[int, float]:
    """(tokens, seconds) of `cycles` explicit cycles: L small passes, one judging pass, then on rejection
    L − 1 large-model passes, counting the tokens each pass emits."""
    a = _checks.probability(accept, "accept")
    L = _checks.positive_int(step_tokens, "step_tokens")
    # (unchecked: a pass of -1 s or NaN s ran, e.g. (43 tokens, -34.8 s))
    small_pass_s = _checks.non_negative_float(small_pass_s, "small_pass_s")
    judge_pass_s = _checks.non_negative_float(judge_pass_s, "judge_pass_s")
    target_pass_s = _checks.positive_float(target_pass_s, "target_pass_s")
    cycles = _checks.positive_int(cycles, "cycles")
    rng = _checks.generator(rng)
    tokens, seconds = 0, 0.0
    for _ in range(cycles):
        seconds += L * small_pass_s + judge_pass_s
        if rng.random() < a:
            tokens += L + 1
        else:
            tokens += 1
            for _ in range(L - 1):
                seconds += target_pass_s
                tokens += 1
    return tokens, seconds
