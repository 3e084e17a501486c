"""Batch alignment of ragged acceptance (`speculation: {kind: chain, alignment: realign}`): EQSPEC's
correctness-first batch speculative decoding (Batch Speculative Decoding Done Right, Zhang et al. 2025).

An engine that keeps a batch's KV as right-aligned padded tensors (HuggingFace-style, no paged attention)
must re-align after every verification, because requests accept different numbers of tokens
(theory.ragged): EQSPEC unpads, appends the accepted tokens and repads — a rewrite of the batch's KV
cache. `RealignedForwardCost` adds that rewrite to every speculative verify pass (q > 1 query tokens per
request): read + write of every decode request's cached KV, the target's and the drafter's, at the GPU's
HBM bandwidth. The default `alignment: paged` (vLLM) has ragged sequences natively and pays nothing.

Approximations, named here: the copy is priced at the full HBM bandwidth (a lower bound for a real copy
kernel); padding to the batch's longest sequence is not priced (Σ context stands for Σ padded length:
exact when contexts are equal, otherwise a lower bound — the paper's superlinear growth comes from that
padding); EXSPEC's grouping of equal-length requests is not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.cost.step_cost import ForwardCost


@dataclass
class RealignedForwardCost(ForwardCost):
    """The target's passes plus, per speculative verify pass, the rewrite of the batch's KV cache."""

    kv_bytes_per_token: float = 0.0        # per GPU: target's + drafter's
    hbm_bandwidth_bytes_per_s: float = 1.0

    def realign(self, context_sum) -> np.ndarray:
        """(seconds, flops, bytes) of re-aligning a batch holding `context_sum` cached tokens."""
        nbytes = 2.0 * np.asarray(context_sum, dtype=np.float64) * self.kv_bytes_per_token
        return np.stack([nbytes / self.hbm_bandwidth_bytes_per_s, np.zeros_like(nbytes), nbytes], axis=-1)

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        base = super().exact_decode(seqs, q, context_sum, tree)
        return base + self.realign(context_sum) if q > 1 else base
    # decode_forward interpolates exact_decode on its context grid: the (linear) rewrite is included
