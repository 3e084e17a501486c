"""Whole decode lives of the requests about to join a replica's decode profile, computed many at a time.

A request that starts decoding fresh — its prompt just prefilled, so its context is its prefill target,
one token emitted and no decode step taken — has a future that depends on its own columns alone and,
with speculation, on its counter-based draws (simulator.speculation.acceptance: τ of its k-th step is a
pure function of the request and k): per decode step until it finishes, requests decoding (1), its
context, the KV blocks it needs, the tokens it emits and the draft tokens accepted — the five rows
simulator.core.bulk.DecodeProfile sums.

`lives_ahead` computes those futures for a block of up to AHEAD_BLOCK requests expected to join next
(the waiting queue, then the replica's own next arrivals) in one set of NumPy calls over (steps ×
requests) arrays, so that joining one costs one slice addition (`DecodeProfile.join`) instead of a
dozen NumPy calls on short arrays. A life is used only when the request's state at its join is the one
predicted (`Life.fits`); any other request joins the general way. The arithmetic is element by element
that of the one-request join (same draws, same integer formulas), so the profile's sums, and every
output, are identical whichever way a request joins.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

AHEAD_BLOCK = 32    # requests whose lives are computed in one call
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


@dataclass(slots=True)
class Trajectory:
    """The trajectories of speculating requests computed together: (T, B) arrays, request b in column b."""

    tau: np.ndarray      # accepted draft tokens per step (0 past the request's end)
    capped: np.ndarray   # tokens emitted by the end of each step, capped at the output length
    held: np.ndarray     # blocks held during each step


@dataclass(slots=True)
class Life:
    """One request's decode future from its first decode step, computed for a fresh join."""

    rows: np.ndarray     # (length × 5,): the profile rows it adds, step by step (DecodeProfile.table's layout, flat)
    length: int          # its decode steps
    ctx0: int            # its context at the join it was computed for
    held0: int           # blocks its first decode step needs
    accepted: int        # draft tokens accepted over its life
    held_last: int       # blocks held in its last step
    batch: Trajectory    # its trajectory, for DecodeProfile.dissolve
    col: int

    def fits(self, s, r: int) -> bool:
        """Request r's state now is the fresh join this life was computed for (its reservation may be
        smaller than its first step's need, never larger: the need is the max of both)."""
        return (s.ctx.item(r) == self.ctx0 and s.emitted.item(r) == 1 and s.decode_steps.item(r) == 0
                and s.blocks.item(r) <= self.held0)   # (Python ints: no NumPy scalars, read once per join)


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
    (unlucky) are left out. Arrays are (B, T): request b's rows are contiguous (its profile rows, (T, 5), too)."""
    s, acc = rep.s, rep.acceptance
    ids_a = np.array(ids, dtype=np.int64)
    remaining = s.output[ids_a][:, None] - 1           # tokens left after the prompt's own
    ctx0 = s.prefill_target[ids_a]
    steps = int(draw_bound(remaining, acc.depth).max())
    step_axis = step_range(steps)
    tau = acc.tau(ids_a[:, None], step_axis)
    cum = (tau + 1).cumsum(axis=1)
    lengths = (cum >= remaining).argmax(axis=1) + 1    # the first step reaching the output length
    drawn = (cum[:, -1:] >= remaining)[:, 0]
    active = step_axis < lengths[:, None]
    ctx = cum - tau
    ctx += (ctx0 - 1)[:, None]                          # context before each step
    block = rep.kv.block_size
    held = (rep.decode_kv_tokens(ctx) + (block - 1)) // block   # blocks_for(Replica.decode_kv_tokens)
    capped = np.minimum(cum, remaining)
    tau *= active
    rows = np.empty((len(ids), steps, 5), dtype=np.int64)
    # Only a request's first `length` steps of rows are read (`Life.rows`), where `active` is 1: its requests
    # decoding are 1 and its context and blocks are copied unmasked (a mask's int64 products cost more than the
    # rest of the rows; past the request's end they hold values nobody reads, not zeros)
    rows[:, :, 0] = 1
    rows[:, :, 1] = ctx
    rows[:, :, 2] = held
    rows[:, 0, 3] = capped[:, 0]
    np.subtract(capped[:, 1:], capped[:, :-1], out=rows[:, 1:, 3])   # tokens emitted: capped at the output
    rows[:, :, 4] = tau
    flat = rows.reshape(len(ids), -1)
    cols = np.arange(len(ids))
    last = lengths - 1
    held0, held_last = held[:, 0].tolist(), held[cols, last].tolist()
    accepted = (cum[cols, last] - lengths).tolist()     # Σ τ = Σ (τ + 1) − length
    batch = Trajectory(tau.T, capped.T, held.T)
    out = {}
    for col, (r, ok, length, c0) in enumerate(zip(ids, drawn.tolist(), lengths.tolist(), ctx0.tolist())):
        if ok:
            out[r] = Life(flat[col, :5 * length], length, c0, held0[col], accepted[col], held_last[col], batch, col)
    return out
