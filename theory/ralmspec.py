"""RaLMSpec (Zhang et al., ICML 2024, arXiv 2401.14021): iterative retrieval-augmented generation with
speculative retrieval and batched verification, for one request, as a two-state semi-Markov chain.

Iterative RaLM retrieves a document from the knowledge base before each *interval* of generation (e.g.
every k tokens). Baseline: every interval pays one knowledge-base query and its generation, ``a + b + G``
(a batched query of n documents takes ``a + b·n``: a fixed cost plus a per-query cost, both inputs).
RaLMSpec answers the queries from a local cache instead (``c`` seconds each; the cached answer equals the
knowledge base's with probability ``p``, independently per query), generates ``s`` intervals (the stride)
on the speculated documents, and then verifies all speculated queries with one batched knowledge-base
query. The intervals before the first wrong document are committed; the wrong one and the rest are
discarded, and the verification's correct document for the wrong interval is known at the next round's
start. So a round starts in state K (its first document is known: no lookup, certainly right) or U:

    committed | X = Σ_{i=1..s} q_i^X,  q_i^U = p^i,  q_i^K = p^{i−1};
    time | X = s G + n_X c + [n_X > 0] (a + b n_X),  n_U = s,  n_K = s − 1;
    next round U if all s documents were right (prob. q_s^X), else K.

Stationary odds π_U / π_K = p^{s−1} / (1 − p^s); by renewal-reward the rate is Σ π_X committed_X /
Σ π_X time_X intervals per second, and the speedup over the baseline is rate · (a + b + G).
:func:`simulate_ralmspec` runs the process query by query (independent code) to check it. Not modelled:
RaLMSpec's prefetching (a larger cache raises p: give the p it reaches), asynchronous verification (the
next round's speculation overlapping the verification) and its stride scheduler's online estimates
(:func:`ralmspec_optimal_stride` is the stride that maximises this closed form for known inputs).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theory import _checks


@dataclass(frozen=True)
class RalmSpecResult:
    intervals_per_round: float
    round_s: float
    baseline_interval_s: float

    @property
    def speedup(self) -> float:
        """Baseline time per interval / RaLMSpec's."""
        return self.intervals_per_round / self.round_s * self.baseline_interval_s


def _round(p: float, s: int, generate_s: float, lookup_s: float, kb_fixed_s: float, kb_per_query_s: float,
           known: bool) -> tuple[float, float, float]:
    """(expected committed intervals, round seconds, P(all documents right)) of a round in state K/U."""
    q = p ** np.arange(0 if known else 1, s + (0 if known else 1), dtype=np.float64)
    n = s - 1 if known else s
    verify = kb_fixed_s + kb_per_query_s * n if n > 0 else 0.0
    return float(q.sum()), s * generate_s + n * lookup_s + verify, float(q[-1])


def ralmspec(p: float, stride: int, generate_s: float, lookup_s: float, kb_fixed_s: float,
             kb_per_query_s: float) -> RalmSpecResult:
    """Expected intervals per round, mean round time and speedup of RaLMSpec (module docstring)."""
    p = _checks.probability(p, "p")
    s = _checks.positive_int(stride, "stride")
    g = _checks.non_negative_float(generate_s, "generate_s")
    c = _checks.non_negative_float(lookup_s, "lookup_s")
    a = _checks.non_negative_float(kb_fixed_s, "kb_fixed_s")
    b = _checks.non_negative_float(kb_per_query_s, "kb_per_query_s")
    if g <= 0.0 and c <= 0.0 and a + b <= 0.0:   # (the speedup divided 0 by 0: ZeroDivisionError)
        raise ValueError("generate_s, lookup_s, kb_fixed_s and kb_per_query_s are all 0: a round takes no time")
    gain_k, time_k, stay_u_from_k = _round(p, s, g, c, a, b, True)
    gain_u, time_u, stay_u = _round(p, s, g, c, a, b, False)
    if stay_u >= 1.0:        # p = 1: every round stays in U
        share_u = 1.0
    else:
        odds_u = stay_u_from_k / (1.0 - stay_u)
        share_u = odds_u / (1.0 + odds_u)
    gain = share_u * gain_u + (1.0 - share_u) * gain_k
    time = share_u * time_u + (1.0 - share_u) * time_k
    return RalmSpecResult(gain, time, a + b + g)


def ralmspec_optimal_stride(p: float, generate_s: float, lookup_s: float, kb_fixed_s: float,
                            kb_per_query_s: float, max_stride: int = 64) -> tuple[int, float]:
    """The stride in 1..max_stride with the largest speedup (ties: the smallest) and that speedup."""
    max_stride = _checks.positive_int(max_stride, "max_stride")
    speeds = [ralmspec(p, s, generate_s, lookup_s, kb_fixed_s, kb_per_query_s).speedup
              for s in range(1, max_stride + 1)]
    best = int(np.argmax(speeds))
    return best + 1, float(speeds[best])


def simulate_ralmspec(p: float, stride: int, generate_s: float, lookup_s: float, kb_fixed_s: float,
                      kb_per_query_s: float, intervals: int, rng: np.random.Generator) -> tuple[int, float]:
    """Run rounds query by query until `intervals` intervals are committed; returns (committed, seconds)."""
    p = _checks.probability(p, "p")
    s = _checks.positive_int(stride, "stride")
    # (unchecked: negative or NaN times ran and returned a negative or NaN clock)
    generate_s = _checks.non_negative_float(generate_s, "generate_s")
    lookup_s = _checks.non_negative_float(lookup_s, "lookup_s")
    kb_fixed_s = _checks.non_negative_float(kb_fixed_s, "kb_fixed_s")
    kb_per_query_s = _checks.non_negative_float(kb_per_query_s, "kb_per_query_s")
    intervals = _checks.positive_int(intervals, "intervals")
    rng = _checks.generator(rng)
    committed, clock, known = 0, 0.0, False
    while committed < intervals:
        right, queries = [], 0
        for i in range(s):
            if i == 0 and known:
                right.append(True)        # the previous verification's document
            else:
                queries += 1
                clock += lookup_s
                right.append(bool(rng.random() < p))
            clock += generate_s
        if queries:
            clock += kb_fixed_s + kb_per_query_s * queries
        good = right.index(False) if False in right else s
        committed += good
        known = good < s
    return committed, clock
