"""Verify-pass attention: q > 1 query tokens per sequence (speculative chains and trees), priced from the
measured one-query ("generation") tables the way the engines' kernels tile the work.

What the kernels do (H100, the engines' default attention backends):

* FlashAttention-3, vLLM's and SGLang's default on Hopper, receives a verify batch as a varlen call
  (cu_seqlens_q, q tokens per request) and then always packs the GQA group into the query rows
  (`hopper/heuristics.h`, `should_pack_gqa`: "if (varlen_q) return true"): one row block holds the
  q tokens × g = heads / kv_heads query heads of one (sequence, KV head), R = q·g rows, and streams that
  KV head's keys and values once. Its M tile at head dim 128 is 64 rows while R ≤ 64 (one MMA warpgroup,
  `use_one_mma_wg`) and 128 rows above; 192 rows at head dim ≤ 96 (`hopper/tile_size.h`,
  `tile_size_fwd_sm90`). A plain decode (q = 1) is the same kernel with R = g rows.
* FlashInfer plans the same packing: its CTA query tile is 16, 64 or 128 rows chosen from the packed length
  q·g (`include/flashinfer/utils.cuh`, `FA2DetermineCtaTileQ`). FlashMLA (DeepSeek MLA) packs
  seq_len_q · heads / kv_heads rows per latent KV head (`get_mla_metadata`, num_heads_per_head_k) in
  64-row blocks.
* Trees: SGLang's FA3 backend verifies a tree (`speculative_eagle_topk` > 1) as a cascade
  (`python/sglang/srt/layers/attention/flashattention_backend.py`, target-verify metadata and
  `forward_metadata_spec_decode_expand`): one packed call of the q tree tokens over the cached prefix with no
  mask, one call over the b·q tree tokens as one-query sequences attending to their own ancestors, and
  `merge_state_v2` merging the two softmax partials. vLLM's TREE_ATTN backend (one `unified_attention` call
  with a tree bias) and TensorRT-LLM's spec-decode kernels apply the mask inside one packed call.

How a verify op is priced (`verify_seconds`): the measured one-query price of the model's own layout
(heads, kv_heads, head_dim) over ctx + q keys — the KV stream and the row tiles a decode already pays —
plus the compute of the row tiles the q tokens add, padded(q·g) − padded(g) rows per (sequence, KV head),
4·head_dim FLOPs per row and key, at the FLOP rate the same framework's context (prefill) attention kernel
achieves on that layout (its table at a REFERENCE_PROMPT_TOKENS prompt: ≈ 600 TFLOP/s for Llama-3-8B's
layout under vLLM on H100). So a Llama-3-8B verify (g = 4) costs what a decode does up to q = 16 (R ≤ 64
rows, one 64-row tile) and grows by one 128-row tile per 32 tokens beyond.
Checks of the form against measurements (tests/simulator/cost/test_verify_pass.py): SGLang's own H100 table measured 32
and 128 query heads per KV head (64 vs 128 padded rows); where its work is largest (b·L = 131,072 keys) this
rule's increment is 0.9–1.6× the measured difference, and at small sizes that difference is a ~2 µs fixed cost of the
two-warpgroup tile that the rule omits (< 1 % of a verify step). On a real H100 the GQA-packed cuDNN kernel
(profiles/data/gpu-forwards, 2026-11-26) grows from q = 16 to q = 64 at 510–555 TFLOP/s of the added FLOPs
at batch 16–128. FlashInfer's own kernels on an H100 (profiles/data/gpu-forwards/h100-sxm-2026-11-27-flashinfer,
scenarios.validation.published.verify_attention) are flat to R = 64 as priced; past it their FA2 kernel grows
faster than this charge (2.2× the decode at R = 192–256 for Llama-3-8B, priced 1.75×). Approximations: the
added tiles' compute is not overlapped with the KV stream (their KV is re-read from L2), and rows a kernel
computes in a smaller tile (FlashInfer's 16-row tile) are priced with FA3's tiles.

SGLang trees add the cascade's second call (the one-query table at b·q sequences over q keys, an upper
bound of the ancestors) and the merge (two 16-bit partial outputs and fp32 log-sum-exps read, one of each
written: memory-bound, at the ideal bandwidth time). Other engines' tree masks are priced as the causal
chain of the same q tokens: packed, both read the same KV once and compute the same tiles.
"""
from __future__ import annotations

import math

REFERENCE_PROMPT_TOKENS = 8192
TREE_CASCADE = frozenset({"sglang"})   # frameworks whose tree verification is a two-call cascade + merge
MLA_LATENT_HEAD_DIM = 512              # head dims at or above this are MLA latents (FlashMLA's 64-row blocks)


def padded_rows(rows: float, head_dim: float) -> float:
    """Query rows the kernel computes for `rows` packed rows of one (sequence, KV head): whole M tiles of 64
    rows while rows ≤ 64 at head dim 128, else 128 rows; 192 at head dim ≤ 96 (FA3); 64 for MLA latents."""
    if head_dim >= MLA_LATENT_HEAD_DIM or (head_dim == 128 and rows <= 64):
        tile = 64
    elif head_dim <= 96:
        tile = 192
    else:
        tile = 128
    return math.ceil(rows / tile) * tile


def extra_tile_flops(heads: float, kv_heads: float, head_dim: float, seqs: float, keys: float, q: float) -> float:
    """FLOPs of the row tiles that q query tokens per sequence add to a one-query kernel."""
    group = heads / kv_heads
    rows = padded_rows(q * group, head_dim) - padded_rows(group, head_dim)
    return 4.0 * head_dim * keys * rows * kv_heads * seqs


def verify_seconds(generation, context, framework: str, dtype: str, heads: float, kv_heads: float,
                   head_dim: float, seqs: float, ctx: float, q: float, tree: bool) -> tuple[float, bool]:
    """Seconds of one verify attention kernel (module docstring) and whether it left the measured grids."""
    keys = ctx + q
    seconds, approx = generation.seconds(dtype, heads, kv_heads, head_dim, seqs, keys)
    flops = extra_tile_flops(heads, kv_heads, head_dim, seqs, keys, q)
    if flops > 0.0:
        seconds += flops / context_flop_rate(context, dtype, heads, kv_heads, head_dim)
    if tree and framework in TREE_CASCADE and q > 1:
        expand, _ = generation.seconds(dtype, heads, kv_heads, head_dim, seqs * q, q)
        merged_bytes = seqs * q * heads * 3.0 * (2.0 * head_dim + 4.0)
        seconds += expand + generation.peaks.bound(0.0, merged_bytes)
    return seconds, approx


def context_flop_rate(context, dtype: str, heads: float, kv_heads: float, head_dim: float) -> float:
    """Attention FLOP/s the framework's context (prefill) kernel achieves on this layout for one causal
    prompt of REFERENCE_PROMPT_TOKENS tokens."""
    s = float(REFERENCE_PROMPT_TOKENS)
    seconds, _ = context.seconds(dtype, heads, kv_heads, head_dim, 1.0, s)
    return 4.0 * heads * head_dim * s * (s + 1.0) / 2.0 / seconds


__all__ = ["REFERENCE_PROMPT_TOKENS", "context_flop_rate", "extra_tile_flops", "padded_rows", "verify_seconds"]
