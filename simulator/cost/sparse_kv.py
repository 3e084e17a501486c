"""Sparse-KV drafting for long contexts: the drafter attends to at most `kv_budget` cached tokens per
request (MagicDec's StreamingLLM window of attention sinks + recent tokens; TriForce's retrieval cache).

`SparseKVForwardCost` prices a model's passes with every decode request's context capped at the budget;
its dense part (GEMMs, norms, LM head) is the model's own. Used by `drafter: {kind: sparse_kv}` (the target
drafting for itself, MagicDec) and by cascade stages with `kv_budget` (TriForce's hierarchy: a small model
drafts for the sparse-KV target, which drafts for the full target).

Approximations, named here: the step cost sees only Σ context, so the capped Σ is min(Σ context,
requests × budget) — an upper bound of Σ min(context_i, budget) (Jensen: min is concave), exact when every
request's context is above the budget or all are below it; the selection itself (the window is free;
TriForce's top-k chunk retrieval costs a few per-chunk scores) is not priced; the drafter reads the
target's KV (MagicDec) — no extra memory is counted, including TriForce's retrieval cache (budget tokens
per request: small next to the full KV); a self-drafting pass over prompt chunks in a mixed step is
priced like the target's (the draft needs no prefill of its own: an over-estimate, as for layer skip).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.cost.step_cost import ForwardCost, zero_cost


@dataclass
class SparseKVForwardCost(ForwardCost):
    """A ForwardCost whose decode passes attend to at most `kv_budget_tokens` cached tokens per request."""

    kv_budget_tokens: int = 0

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        return super().exact_decode(seqs, q, min(int(context_sum), int(seqs) * self.kv_budget_tokens), tree)

    def decode_forward(self, seqs, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        seqs_arr = np.broadcast_to(np.asarray(seqs, dtype=np.int64), np.shape(np.atleast_1d(context_sums)))
        capped = np.minimum(np.asarray(context_sums, dtype=np.int64), seqs_arr * self.kv_budget_tokens)
        return super().decode_forward(seqs, q, capped, tree)

    def prefill_attention(self, tokens: int, seqs: int, attn_pairs: int) -> np.ndarray:
        return zero_cost()  # the drafter reads the KV the target's prefill wrote
