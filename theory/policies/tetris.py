"""Batch draft-token selection under a verification budget (TETRIS, Wu et al. 2025).

Request r has conditional acceptances ``a[r, 0], a[r, 1], ...``: ``a[r, j]`` is the probability that its
(j+1)-th draft token is accepted given the first j were. Verifying its first ``c`` drafts yields
``E_r(c) = sum_{i<c} prod_{j<=i} a[r, j]`` accepted tokens in expectation (bonus token excluded). Choose
counts ``c_r`` with ``sum c_r <= budget`` maximising ``sum_r E_r(c_r)``.

**Greedy is optimal.** The i-th marginal gain of request r is ``m[r, i] = prod_{j<=i} a[r, j]``, which
is non-increasing in i because every factor is <= 1. An allocation's value is the sum of the marginals
it takes, and it takes a prefix of each row. Taking the ``budget`` largest marginals overall (ties: the
earlier position first) is a set of prefixes — if ``m[r, i]`` is taken then every ``m[r, i'] >= m[r, i]``
with ``i' < i`` ranks before it — and no set of ``budget`` marginals has a larger sum. So the
"largest marginal first" greedy (TETRIS's selection) is exact. Marginals equal to 0 are not taken (they
add nothing and would waste verification slots). Tests compare with brute force over all allocations.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from theory import _checks


def tetris_allocate(accept_rows: Sequence[Sequence[float]], budget: int) -> tuple[np.ndarray, float]:
    """Counts of draft tokens to verify per request and the resulting expected accepted tokens.

    ``accept_rows``: one sequence of conditional acceptances per request (ragged rows allowed; a row's
    length caps that request's count). ``budget``: total draft tokens the verify step may hold (>= 0).
    """
    budget = _checks.non_negative_int(budget, "budget")
    rows = [_checks.probabilities(row, f"accept_rows[{r}]") for r, row in enumerate(accept_rows)]
    counts = np.zeros(len(rows), dtype=np.int64)
    if not rows or budget == 0:
        return counts, 0.0
    marginals = np.concatenate([np.cumprod(row) for row in rows])
    owner = np.concatenate([np.full(row.size, r) for r, row in enumerate(rows)]).astype(np.int64)
    position = np.concatenate([np.arange(row.size) for row in rows])
    order = np.lexsort((position, -marginals))  # largest marginal first, earlier position on ties
    chosen = order[:budget]
    chosen = chosen[marginals[chosen] > 0.0]
    np.add.at(counts, owner[chosen], 1)
    return counts, float(marginals[chosen].sum())


def expected_accepted_for_counts(accept_rows: Sequence[Sequence[float]], counts: Sequence[int]) -> float:
    """``sum_r E_r(c_r)`` for given counts (the objective of :func:`tetris_allocate`)."""
    rows = [_checks.probabilities(row, f"accept_rows[{r}]") for r, row in enumerate(accept_rows)]
    if len(counts) != len(rows):
        raise ValueError(f"counts must have one entry per row ({len(rows)}), got {len(counts)}")
    total = 0.0
    for r, (row, c) in enumerate(zip(rows, counts)):
        c = _checks.non_negative_int(int(c), f"counts[{r}]")
        if c > row.size:
            raise ValueError(f"counts[{r}] must be <= {row.size} (length of its row), got {c}")
        total += float(np.cumprod(row[:c]).sum())
    return total
