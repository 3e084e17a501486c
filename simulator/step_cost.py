"""Step cost: seconds, FLOPs and bytes of one engine step, as a pure function of the step's aggregates.

A step of a replica is up to γ draft forward passes followed by one target forward pass. Each forward
pass is priced as Σ count·seconds over its op graph (models.opgraph) with the scenario's latency model.

- The dense part (GEMMs, norms, LM head, collectives) depends only on the number of tokens and of logits;
  it is memoized.
- Prefill attention is priced exactly, per step.
- Decode/verify attention depends on the batch's Σ context, which changes every step. It is priced on a
  grid of mean context per sequence (multiples of CTX_GRID_TOKENS) and linearly interpolated between grid
  points, vectorized over many steps. Approximation: exact at grid points; in between it is exact for
  FLOPs and bytes (affine in context) and for a latency model that is linear in context within a regime
  (the roofline, profile interpolation); the measured worst relative error against exact pricing is
  below 1e-3 (tests/test_sim_step_cost.py). Step-by-step and bulk modes both use this same function.
- Pipeline parallelism: a forward pass costs the sum over its stages (no micro-batch interleaving — exact
  for the latency of one batch, pessimistic for PP throughput).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.opgraph import attention_ops, dense_ops
from models.spec import ModelSpec
from models.step import Parallelism, StepShape
from profiles.latency import LatencyModel

CTX_GRID_TOKENS = 16


@dataclass(frozen=True)
class Cost:
    seconds: float
    flops: float
    bytes: float


def _price(latency: LatencyModel, ops) -> np.ndarray:
    """(seconds, flops, bytes) of a list of ops."""
    seconds = flops = nbytes = 0.0
    for op in ops:
        seconds += op.count * latency.op_seconds(op)
        flops += op.count * op.flops
        nbytes += op.count * op.bytes
    return np.array([seconds, flops, nbytes])


@dataclass
class ForwardCost:
    """Prices forward passes of one model (target or draft) on one replica."""

    spec: ModelSpec
    parallelism: Parallelism
    latency: LatencyModel
    dtype: str
    _dense: dict = field(default_factory=dict, repr=False)
    _decode_grid: dict = field(default_factory=dict, repr=False)

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        key = (num_tokens, logits_tokens)
        cost = self._dense.get(key)
        if cost is None:
            ops = dense_ops(self.spec, num_tokens, logits_tokens, self.parallelism, self.dtype)
            cost = self._dense[key] = _price(self.latency, ops)
        return cost

    def prefill_attention(self, tokens: int, seqs: int, attn_pairs: int) -> np.ndarray:
        shape = StepShape(prefill_tokens=tokens, prefill_seqs=seqs, prefill_attn_pairs=attn_pairs)
        return _price(self.latency, attention_ops(self.spec, shape, self.parallelism, self.dtype))

    def _decode_table(self, seqs: int, q: int, first: int, last: int) -> tuple[np.ndarray, int]:
        """Grid costs for indices first..last (inclusive) of mean context, grown on demand and cached
        per (seqs, q). Returns the table and the grid index of its row 0."""
        key = (seqs, q)
        table, base = self._decode_grid.get(key, (np.zeros((0, 3)), first))
        lo, hi = min(base, first), max(base + len(table) - 1, last)
        if lo < base or hi >= base + len(table):
            rows = []
            for i in range(lo, hi + 1):
                if base <= i < base + len(table):
                    rows.append(table[i - base])
                else:
                    shape = StepShape(decode_seqs=seqs, query_tokens_per_seq=q,
                                      decode_context_tokens=i * CTX_GRID_TOKENS * seqs)
                    rows.append(_price(self.latency, attention_ops(self.spec, shape, self.parallelism,
                                                                   self.dtype)))
            table, base = np.array(rows), lo
            self._decode_grid[key] = (table, base)
        return table, base

    def _decode_parts(self, seqs, q: int, context_sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(dense, attention) costs, each (n, 3), of decode-only passes of `seqs` sequences (an int, or
        one value per step, piecewise constant) with `q` query tokens each, at each Σ context."""
        context_sums = np.asarray(context_sums)
        n = len(context_sums)
        seqs = np.broadcast_to(np.asarray(seqs, dtype=np.int64), (n,))
        x = context_sums / (CTX_GRID_TOKENS * seqs).astype(np.float64)
        lo = x.astype(np.int64)  # floor: contexts are >= 0
        w = (x - lo)[:, None]
        below, above, dense = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
        edges = [0] + (np.flatnonzero(np.diff(seqs)) + 1).tolist() + [n]
        for a, b in zip(edges[:-1], edges[1:]):
            batch = int(seqs[a])
            seg = lo[a:b]
            table, base = self._decode_table(batch, q, int(seg.min()), int(seg.max()) + 1)
            below[a:b], above[a:b] = table[seg - base], table[seg - base + 1]
            dense[a:b] = self.dense(batch * q, batch * q)
        return dense, below * (1.0 - w) + above * w

    def decode_forward(self, seqs, q: int, context_sums: np.ndarray) -> np.ndarray:
        """(n, 3) costs of decode-only forward passes (dense part + interpolated attention)."""
        dense, attention = self._decode_parts(seqs, q, context_sums)
        return dense + attention

    def decode_attention(self, seqs: int, q: int, context_sums: np.ndarray) -> np.ndarray:
        """(n, 3) costs of the decode attention alone."""
        return self._decode_parts(seqs, q, context_sums)[1]


@dataclass
class StepCostModel:
    """Cost of one replica step: draft passes (if a drafter is configured) + the target pass."""

    target: ForwardCost
    draft: ForwardCost | None  # None: plain decoding (a drafter with γ = 0 is built as None)
    gamma: int

    @property
    def q(self) -> int:
        return self.gamma + 1 if self.draft is not None else 1

    def step(self, prefill_tokens: int, prefill_seqs: int, prefill_attn_pairs: int,
             decode_seqs: int, decode_context_tokens: int) -> tuple[Cost, Cost]:
        """(draft cost, target cost) of one step.

        Decode requests each verify γ+1 query tokens (the last emitted token and γ drafts) against
        their cached context. The draft model runs γ passes over the decode requests, one token each,
        its context growing by one per pass; its first pass also prefills the step's prompt chunks.
        Approximation: when all γ drafts were accepted in the previous step the draft must also ingest
        the last draft token; that one extra draft token per such request is not priced.
        """
        if prefill_tokens == 0:
            d, t = self.decode_steps(decode_seqs, np.array([decode_context_tokens]))
            return Cost(*d[0]), Cost(*t[0])
        q = self.q
        logits = prefill_seqs + decode_seqs * q
        target = self.target.dense(prefill_tokens + decode_seqs * q, logits) + \
            self.target.prefill_attention(prefill_tokens, prefill_seqs, prefill_attn_pairs)
        if decode_seqs:
            target = target + self.target.decode_attention(decode_seqs, q, np.array([decode_context_tokens]))[0]
        draft = np.zeros(3)
        if self.draft is not None:
            draft = self.draft.dense(prefill_tokens + decode_seqs, prefill_seqs + decode_seqs) + \
                self.draft.prefill_attention(prefill_tokens, prefill_seqs, prefill_attn_pairs)
            if decode_seqs:
                ctx = decode_context_tokens + decode_seqs * np.arange(self.gamma)
                draft = draft + self.draft.decode_attention(decode_seqs, 1, ctx[:1])[0]
                if self.gamma > 1:
                    draft = draft + self.draft.decode_forward(decode_seqs, 1, ctx[1:]).sum(axis=0)
        return Cost(*draft), Cost(*target)

    def decode_steps(self, decode_seqs, context_sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Costs of decode-only steps at each Σ context, with `decode_seqs` requests (an int or one value
        per step): two (n, 3) arrays (draft, target) of (seconds, flops, bytes)."""
        context_sums = np.asarray(context_sums, dtype=np.int64)
        target = self.target.decode_forward(decode_seqs, self.q, context_sums)
        if self.draft is None:
            return np.zeros((len(target), 3)), target
        seqs = np.broadcast_to(np.asarray(decode_seqs, dtype=np.int64), context_sums.shape)
        passes = context_sums[:, None] + seqs[:, None] * np.arange(self.gamma)[None, :]
        per_pass = self.draft.decode_forward(np.repeat(seqs, self.gamma), 1, passes.ravel())
        return per_pass.reshape(len(context_sums), self.gamma, 3).sum(axis=1), target
