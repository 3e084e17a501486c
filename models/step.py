"""The composition of one engine step (one forward pass of one model over a batch), as aggregates.

The simulator describes each step by a handful of sums rather than per-request lists, so that step cost
stays a cheap pure function (see ARCHITECTURE.md, "Design rules that make it fast").
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Parallelism:
    """How one model replica is split over GPUs: tensor (tp), pipeline (pp) and expert (ep) parallelism.

    ep == 1 (default): every pipeline stage runs on `tp` GPUs; attention, dense MLPs and MoE experts are
    all sharded over the tp ranks (Megatron style), so `gpus = tp · pp`.

    ep > 1 (expert parallelism with data-parallel attention, the vLLM/SGLang "DP attention + EP" layout
    used for DeepSeek-V3 and Qwen3-MoE serving): each pipeline stage runs on `ep` GPUs. The routed experts
    of every MoE layer are partitioned over those ep GPUs, each expert whole on one rank (no expert TP).
    Everything else (attention, dense MLPs, shared experts, LM head) runs in `attention_dp = ep // tp`
    independent attention groups of `tp` GPUs, each holding its own share of the replica's requests and
    KV cache; tokens move between the groups only through the MoE all-to-all (dispatch before the experts,
    combine after). `ep` must be a multiple of `tp`, so `gpus = ep · pp`. With tp > 1 inside a group the
    group's tokens are split over its tp ranks for the dispatch (sequence-parallel: the all-reduce becomes
    reduce-scatter + all-gather, same traffic). One replica's KV capacity is attention_dp times that of
    one attention group.
    """

    tp: int = 1
    pp: int = 1
    ep: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.ep, int) or isinstance(self.ep, bool) or self.ep < 1:
            raise ValueError(f"parallelism: ep must be an integer >= 1, got ep={self.ep!r}")
        if self.ep > 1 and isinstance(self.tp, int) and self.tp >= 1 and self.ep % self.tp:
            raise ValueError(f"parallelism.ep={self.ep} must be 1 or a multiple of tp={self.tp} "
                             "(ep GPUs per stage form ep/tp data-parallel attention groups of tp GPUs)")

    @property
    def attention_dp(self) -> int:
        """Data-parallel attention groups per pipeline stage (1 unless ep > 1)."""
        return self.ep // self.tp if self.ep > 1 else 1

    @property
    def gpus(self) -> int:
        return self.tp * self.attention_dp * self.pp


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
    shared_context_tokens: of decode_context_tokens, those in KV blocks that other decode requests of the
                           step share (a cached common prefix), read once for all of them by a shared-prefix
                           attention kernel (Hydragen, BatchLLM) instead of once per request; 0 = off.
    shared_prefix_tokens:  Σ over the distinct shared blocks of their tokens (what that kernel reads).
    shared_prefix_seqs:    decode requests that share at least one of those blocks with another.
    """

    prefill_tokens: int = 0
    prefill_seqs: int = 0
    prefill_attn_pairs: int = 0
    decode_seqs: int = 0
    query_tokens_per_seq: int = 1
    decode_context_tokens: int = 0
    tree_attention: bool = False
    logits_tokens: int | None = None
    shared_context_tokens: int = 0
    shared_prefix_tokens: int = 0
    shared_prefix_seqs: int = 0

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
