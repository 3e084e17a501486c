"""Whole decode lives of the requests about to join a replica's decode profile, computed many at a time.

A request that starts decoding fresh — its prompt just prefilled, so its context is its prefill target,
one token emitted and no decode step taken — has a future that depends on its own columns alone and,
with speculation, on its counter-based draws (simulator.speculation.acceptance: τ of its k-th step is a
pure function of the request and k): per decode step until it finishes, requests decoding (1), its
context, the KV blocks it needs, the tokens it emits and the draft tokens accepted — the five rows
simulator.core.bulk.DecodeProfile sums.

`lives_ahead` computes those futures for a block of up to AHEAD_BLOCK requests expected to join next
(the waiting queue, then the replica's own next arrivals) in one set of NumPy calls over 1-D arrays
holding each request's steps one run after another, so that joining one costs one slice addition (`DecodeProfile.join`) instead of a
dozen NumPy calls on short arrays. A life is used only when the request's state at its join is the one
predicted (`Life.fits`); any other request joins the general way. The arithmetic is element by element
that of the one-request join (same draws, same integer formulas), so the profile's sums, and every
output, are identical whichever way a request joins.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

AHEAD_BLOCK = 128   # requests whose lives are computed in one call (NumPy calls cost per call: a few hundred k instructions
#                     per block, ~3 k a request at 128; each request costs ~20 k of element work whatever the block)
_STEPS = np.arange(16384)


def draw_bound(tokens, depth: int):
    """Steps whose draws cover `tokens` tokens in all but unlucky cases (a step emits 1 … depth + 1 tokens):
    the size of a first draw; short draws are extended (`DecodeProfile._draw_more`) or, here, the request
    joins the general way."""
    return 2 * (-(-tokens // (depth + 1))) + 8


def step_range(n: int) -> np.ndarray:
    """0 .. n − 1 (a read-only view of one shared array, a new one past its length): step offsets."""
    return _STEPS[:n] if n <= len(_STEPS) else np.arange(n)


def step_rows(n: int) -> np.ndarray:
    """0 .. n − 1 as a column."""
    return step_range(n)[:, None]


DS, CS, BLK, EM, ACC = range(5)   # a profile row's values (simulator.core.bulk.DecodeProfile.table's columns):
#                                  requests decoding, Σ context, blocks held, tokens emitted, draft tokens accepted


@dataclass(slots=True)
class Trajectory:
    """The trajectories of speculating requests computed together: (T, B) arrays, request b in column b."""

    tau: np.ndarray      # accepted draft tokens per step (0 past the request's end)
    capped: np.ndarray   # tokens emitted by the end of each step, capped at the output length
    held: np.ndarray     # blocks held during each step

    def held_after(self, j: int, col: int) -> int:
        """Blocks request `col` holds in its j-th step (j ≥ 1)."""
        return int(self.held[j - 1, col])

    def emitted_by(self, j: int, col: int):
        """Tokens request `col` emitted in its first j ≥ 1 steps."""
        return self.capped[j - 1, col]

    def accepted_by(self, j: int, col: int):
        """Draft tokens request `col` accepted in its first j ≥ 1 steps."""
        return self.tau[:j, col].sum()


@dataclass(slots=True)
class LifeRows:
    """The trajectories of lives computed together (`lives_ahead`), read from their profile rows: the life whose
    `col` is c has rows c, c + 1, ... of `rows` (N × 5, the profile's layout), one per step of it."""

    rows: np.ndarray

    def held_after(self, j: int, col: int) -> int:
        return int(self.rows[col + j - 1, BLK])

    def emitted_by(self, j: int, col: int):
        return self.rows[col:col + j, EM].sum()

    def accepted_by(self, j: int, col: int):
        return self.rows[col:col + j, ACC].sum()


@dataclass(slots=True)
class Life:
    """One request's decode future from its first decode step, computed for a fresh join."""

    rows: np.ndarray     # (length × 5,): the profile rows it adds, step by step (DecodeProfile.table's layout, flat)
    length: int          # its decode steps
    ctx0: int            # its context at the join it was computed for
    held0: int           # blocks its first decode step needs
    accepted: int        # draft tokens accepted over its life
    held_last: int       # blocks held in its last step
    batch: LifeRows      # its trajectory, for DecodeProfile.dissolve
    col: int             # its first row in batch.rows
    output: int          # the request's output length: the tokens it has emitted when it finishes
    # Once it joined, the life is the request's member of the profile (simulator.core.bulk._Member's fields, the
    # same meanings: no member object per join): the profile steps of its first and last decode steps.
    start: int = -1
    last: int = -1

    def fits(self, s, r: int, blocks: int) -> bool:
        """Request r's state now, holding `blocks` KV blocks, is the fresh join this life was computed for (its
        reservation may be smaller than its first step's need, never larger: the need is the max of both)."""
        return (s.ctx.item(r) == self.ctx0 and s.emitted.item(r) == 1 and s.decode_steps.item(r) == 0
                and blocks <= self.held0)   # (Python ints: no NumPy scalars, read once per join)


def fits_fresh(rep, r: int) -> bool:
    """`Life.fits` of a life computed now for request r: its state is a fresh join (nothing emitted but its
    prompt's token, no decode step taken, its context its prompt) holding at most the KV blocks its first
    decode step needs. Not so for a request a disaggregated decode replica took over: it holds the
    reservation of its prompt and output, so no life is computed for it."""
    s = rep.s
    ctx = int(s.ctx[r])
    return (s.emitted[r] == 1 and s.decode_steps[r] == 0 and ctx == s.prefill_target[r]
            and s.blocks[r] <= rep.kv.blocks_for(rep.decode_kv_tokens(ctx)))   # `lives_ahead`'s held0


def lives_ahead(rep, ids: list[int]) -> dict[int, Life]:
    """The lives of speculating requests `ids` (never admitted yet: prefill target = prompt, nothing
    emitted) as they will be if each joins fresh; requests whose draws fall short of their output
    (unlucky) are left out. Each request's steps are drawn as one run of `draw_bound` steps, the runs one
    after another in 1-D arrays (elements starts[b] .. ends[b] − 1 are request b's steps 0, 1, ...): no
    element for steps past a request's bound, as (requests × longest bound) arrays would hold."""
    s, acc = rep.s, rep.acceptance
    ids_a = np.array(ids, dtype=np.int64)
    output = s.output[ids_a]
    remaining = output - 1                             # tokens left after the prompt's own
    ctx0 = s.prefill_target[ids_a]
    counts = draw_bound(remaining, acc.depth)
    ends = counts.cumsum()
    starts = ends - counts
    tau = acc.tau_runs(ids_a, counts)
    n = len(tau)
    # emitted_before[i]: Σ (τ + 1) over the elements before element i, all runs together (increasing), so that
    # request b's tokens emitted by the end of its step j are emitted_before[starts[b] + j + 1] − before[b]
    emitted_before = np.empty(n + 1, dtype=np.int64)
    emitted_before[0] = 0
    np.cumsum(tau + 1, out=emitted_before[1:])
    before = emitted_before[starts]
    stop = emitted_before.searchsorted(before + remaining)   # 1 + the element of the step reaching the output
    drawn = stop <= ends
    lengths = stop - starts
    last = np.minimum(stop, ends) - 1                  # the element of its last step (inside its run if not drawn)
    rows = np.empty((n, 5), dtype=np.int64)            # the profile's layout: a life's rows are contiguous
    # Only a life's own rows are read (`Life.rows`, `LifeRows`): those of its run's steps past its end hold
    # values nobody reads (the context and blocks copied unmasked, τ + 1 tokens emitted), not zeros
    rows[:, DS] = 1
    ctx = emitted_before[1:] - tau
    ctx += np.repeat(ctx0 - 1 - before, counts)        # context before each step
    rows[:, CS] = ctx
    block = rep.kv.block_size
    held = (rep.decode_kv_tokens(ctx) + (block - 1)) // block   # blocks_for(Replica.decode_kv_tokens)
    rows[:, BLK] = held
    np.add(tau, 1, out=rows[:, EM])
    rows[last, EM] = remaining - (emitted_before[last] - before)   # the last step's tokens: capped at the output
    rows[:, ACC] = tau
    accepted = (emitted_before[last + 1] - before - lengths).tolist()   # Σ τ = Σ (τ + 1) − length
    flat = rows.reshape(-1)
    batch = LifeRows(rows)
    out = {}
    for r, ok, start, length, c0, h0, a, h1, o in zip(ids, drawn.tolist(), starts.tolist(), lengths.tolist(),
                                                      ctx0.tolist(), held[starts].tolist(), accepted,
                                                      held[last].tolist(), output.tolist()):
        if ok:
            out[r] = Life(flat[5 * start:5 * (start + length)], length, c0, h0, a, h1, batch, start, o)
    return out
