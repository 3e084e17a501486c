"""The composition of one engine step (one forward pass of one model over a batch), as aggregates.

The simulator describes each step by a handful of sums rather than per-request lists, so that step cost
stays a cheap pure function (see ARCHITECTURE.md, "Design rules that make it fast").
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Parallelism:
    """How one model replica is split over GPUs. EP (expert parallel) arrives with the MoE issue."""

    tp: int = 1
    pp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp


@dataclass(frozen=True)
class StepShape:
    """Aggregates of one forward pass.

    prefill_tokens:        new prompt tokens processed in this step, all chunks together.
    prefill_seqs:          number of prefill chunks (one per request being prefilled).
    prefill_attn_pairs:    Σ over chunks of (query, key) pairs attended under the causal mask:
                           for a chunk of c tokens starting after o cached tokens, c*o + c*(c+1)/2.
    decode_seqs:           requests in the decode/verify phase of this step.
    query_tokens_per_seq:  query tokens per decode request: 1 for plain decoding, γ+1 for chain
                           verification, the node count for tree verification.
    decode_context_tokens: Σ over decode requests of tokens already in the KV cache (before this step).
    tree_attention:        True when decode queries attend under a tree mask rather than causally.
    logits_tokens:         tokens whose LM-head logits are computed (last token of each finished prefill
                           chunk, every query token of decode requests). None = derive the default.
    """

    prefill_tokens: int = 0
    prefill_seqs: int = 0
    prefill_attn_pairs: int = 0
    decode_seqs: int = 0
    query_tokens_per_seq: int = 1
    decode_context_tokens: int = 0
    tree_attention: bool = False
    logits_tokens: int | None = None

    @property
    def decode_tokens(self) -> int:
        return self.decode_seqs * self.query_tokens_per_seq

    @property
    def num_tokens(self) -> int:
        """Tokens flowing through the dense (GEMM) layers in this step."""
        return self.prefill_tokens + self.decode_tokens

    @property
    def effective_logits_tokens(self) -> int:
        if self.logits_tokens is not None:
            return self.logits_tokens
        return self.prefill_seqs + self.decode_tokens


def chunk_attention_pairs(chunk_tokens: int, cached_tokens: int) -> int:
    """(query, key) pairs of a causal prefill chunk of `chunk_tokens` after `cached_tokens` cached ones."""
    return chunk_tokens * cached_tokens + chunk_tokens * (chunk_tokens + 1) // 2
