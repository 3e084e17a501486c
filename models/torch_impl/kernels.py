"""Op-level torch kernels: the exact functions the torch model executes and the profiler times.

Every op kind of `models.ops` that involves computation has one function here. The model in
`models/torch_impl/` is written only in terms of these functions (plus reshapes), and the profiler in
`profiles/profiler/` times these same functions, so a profiled time is the time of an executed kernel.
Plain functions, no state, no module objects; callers own tensors and caches.

Layouts (chosen once, used everywhere):
- hidden states are flattened over the batch: ``[tokens, hidden]`` (a step's prefill chunks and decode
  queries are concatenated, as in continuous-batching engines), so a GEMM's ``m`` is the step's token count;
- per-head tensors are token-major: ``[tokens, heads, head_dim]`` (what a projection's output views as);
- a layer's KV cache is ``[slots, kv_heads, max_ctx, head_dim]`` (slot = one sequence's row of a
  preallocated cache; head-major so that a sequence's prefix is a strided view SDPA reads directly).

Ragged contexts in decode (decision): `attention_decode` loops over sequences, one SDPA call per sequence on
its own cache prefix. Its cost is then Σ_b t(ctx_b) — linear in Σ context, which is exactly the aggregate
(`StepShape.decode_context_tokens`) the op graph prices; padding every sequence to the longest context and
masking would instead cost ∝ seqs · max(ctx), which Σ context cannot express. The price is one kernel
launch per sequence (a few µs on CPU, ~5–10 µs on GPU), which the profile measures because it times this
same loop. Production GPU engines use a varlen/paged kernel instead; a CUDA profile of this loop is
therefore pessimistic for large decode batches.

Writing new K/V into the cache is part of the attention kernels (so its copy is inside the profiled time).

How a decoder layer maps onto these kernels and onto the op graph (`models.opgraph`), one call per op:
  x, h = add_rms_norm(attn_out_or_embedding, h, w)          NORM (2 per layer + the final one)
  qkv = linear(x, W_qkv, b_qkv)                              GEMM qkv_proj (fused q, k, v rows)
  qk = apply_rope(qkv.view(t, heads + 2·kv, d)[:, :heads + kv], cos, sin)   ROPE (q and k heads at once)
  attention_prefill / attention_decode                       ATTN_PREFILL / ATTN_DECODE
  linear(attn, W_o)                                          GEMM o_proj
  gate_up = linear(x, W_gate_up); swiglu(gate_up[:, :w], gate_up[:, w:])   GEMM gate_up_proj, ACTIVATION
  linear(act, W_down)                                        GEMM down_proj
Splitting a fused projection into separate calls executes more, smaller kernels than the op graph prices.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x @ weight^T (+ bias). x: [m, k]; weight: [n, k] (torch's out×in layout); returns [m, n]."""
    return F.linear(x, weight, bias)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dim: x / sqrt(mean(x²) + eps) · weight, computed in fp32 and cast back."""
    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    return normed.to(x.dtype) * weight


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor,
                 eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """Residual add fused with RMSNorm (the op graph's NORM op, vLLM's fused_add_rms_norm):
    summed = x + residual (x itself when residual is None, i.e. before the first layer);
    returns (rms_norm(summed), summed) — the normed input of the next block and the new residual stream."""
    summed = x if residual is None else x + residual
    return rms_norm(summed, weight, eps), summed


def rope_tables(positions: torch.Tensor, head_dim: int, theta: float = 10000.0,
                dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables [tokens, head_dim] for the given absolute positions (rotate-half convention:
    frequency i is shared by dims i and i + head_dim/2)."""
    if head_dim % 2:
        raise ValueError(f"head_dim must be even for rotary embedding, got {head_dim}")
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device,
                                             dtype=torch.float32) / head_dim))
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x [tokens, heads, head_dim] by the tables [tokens, head_dim]: x·cos + rotate_half(x)·sin."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """SwiGLU activation: silu(gate) · up (element-wise, same shapes)."""
    return F.silu(gate) * up


def embedding(token_ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Rows of table [vocab, hidden] for token_ids [tokens] → [tokens, hidden]."""
    return F.embedding(token_ids, table)


def _write_kv(cache: torch.Tensor, slot: int, start: int, new: torch.Tensor) -> None:
    """Copy new [tokens, kv_heads, head_dim] into cache[slot, :, start:start+tokens]."""
    end = start + new.shape[0]
    if end > cache.shape[2]:
        raise ValueError(f"KV cache overflow: slot {slot} needs {end} positions, cache holds {cache.shape[2]}")
    cache[slot, :, start:end].copy_(new.transpose(0, 1))


def attention_prefill(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
                      k_cache: torch.Tensor, v_cache: torch.Tensor, slot: int, prefix: int,
                      scale: float | None = None) -> torch.Tensor:
    """Causal attention of one prefill chunk after `prefix` cached tokens of the same sequence (GQA).

    q: [chunk, heads, head_dim]; k_new, v_new: [chunk, kv_heads, head_dim] (already rotated);
    k_cache, v_cache: [slots, kv_heads, max_ctx, head_dim]. Writes the chunk's K/V at positions
    prefix … prefix+chunk-1 of `slot`, then query i attends to keys 0 … prefix+i.
    Returns [chunk, heads*head_dim]. Several chunks in one step are separate calls (one per sequence).
    """
    chunk, heads, head_dim = q.shape
    if prefix < 0:
        raise ValueError(f"prefix must be >= 0, got {prefix}")
    _write_kv(k_cache, slot, prefix, k_new)
    _write_kv(v_cache, slot, prefix, v_new)
    total = prefix + chunk
    keys = k_cache[slot, :, :total].unsqueeze(0)
    values = v_cache[slot, :, :total].unsqueeze(0)
    query = q.transpose(0, 1).unsqueeze(0)
    if prefix == 0:
        out = F.scaled_dot_product_attention(query, keys, values, is_causal=True, scale=scale,
                                             enable_gqa=True)
    else:
        rows = torch.arange(chunk, device=q.device)[:, None] + prefix
        mask = torch.arange(total, device=q.device)[None, :] <= rows
        out = F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=scale,
                                             enable_gqa=True)
    return out[0].transpose(0, 1).reshape(chunk, heads * head_dim)


def causal_tree_mask(q_per_seq: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Lower-triangular [q, q] boolean mask: the chain (causal) case of a tree mask."""
    return torch.ones(q_per_seq, q_per_seq, dtype=torch.bool, device=device).tril()


def attention_decode(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
                     k_cache: torch.Tensor, v_cache: torch.Tensor, slots: Sequence[int],
                     cached_lens: Sequence[int], tree_mask: torch.Tensor | None = None,
                     scale: float | None = None) -> torch.Tensor:
    """Decode / verify attention: q_per_seq new tokens per sequence against each sequence's own cache.

    q: [seqs, q_per_seq, heads, head_dim]; k_new, v_new: [seqs, q_per_seq, kv_heads, head_dim];
    slots[b]: cache row of sequence b; cached_lens[b]: tokens already cached for it (contexts may differ).
    The new tokens' K/V are written at cached_lens[b] … cached_lens[b]+q_per_seq-1; each query sees every
    cached token plus the new tokens allowed by `tree_mask` [q_per_seq, q_per_seq] (True = may attend,
    diagonal included; the tree's ancestor relation). tree_mask=None means causal among new tokens
    (plain decoding for q_per_seq=1, chain verification otherwise).
    Ragged contexts: one SDPA call per sequence (see the module docstring for why not padding).
    Returns [seqs*q_per_seq, heads*head_dim], sequence-major.
    """
    seqs, q_per_seq, heads, head_dim = q.shape
    if len(slots) != seqs or len(cached_lens) != seqs:
        raise ValueError(f"slots and cached_lens need {seqs} entries, got {len(slots)} and {len(cached_lens)}")
    if tree_mask is not None and tuple(tree_mask.shape) != (q_per_seq, q_per_seq):
        raise ValueError(f"tree_mask must be [{q_per_seq}, {q_per_seq}], got {list(tree_mask.shape)}")
    new_block = None
    if q_per_seq > 1:
        new_block = tree_mask if tree_mask is not None else causal_tree_mask(q_per_seq, q.device)
    outputs = []
    for b in range(seqs):
        slot, cached = int(slots[b]), int(cached_lens[b])
        _write_kv(k_cache, slot, cached, k_new[b])
        _write_kv(v_cache, slot, cached, v_new[b])
        total = cached + q_per_seq
        keys = k_cache[slot, :, :total].unsqueeze(0)
        values = v_cache[slot, :, :total].unsqueeze(0)
        query = q[b].transpose(0, 1).unsqueeze(0)
        mask = None
        if new_block is not None:
            mask = torch.cat((torch.ones(q_per_seq, cached, dtype=torch.bool, device=q.device), new_block),
                             dim=1)
        out = F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=scale,
                                             enable_gqa=True)
        outputs.append(out[0].transpose(0, 1))
    return torch.cat(outputs, dim=0).reshape(seqs * q_per_seq, heads * head_dim)


def sample_tokens(logits: torch.Tensor, temperature: float = 0.0,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Next-token ids [tokens] from logits [tokens, vocab]: argmax when temperature == 0, otherwise a
    draw from softmax(logits / temperature) using `generator` (pass a seeded one for determinism)."""
    if temperature < 0 or not math.isfinite(temperature):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")
    if temperature == 0.0:
        return torch.argmax(logits, dim=-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def router_topk(hidden: torch.Tensor, router_weight: torch.Tensor, top_k: int,
                renormalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """MoE router: softmax over expert logits (hidden [tokens, h] @ router_weight[experts, h]^T), top-k.

    Returns (weights [tokens, top_k], expert_ids [tokens, top_k]); with `renormalize` the k weights sum
    to 1 (Mixtral), otherwise they are the raw softmax probabilities (Qwen2-MoE default)."""
    experts = router_weight.shape[0]
    if not 1 <= top_k <= experts:
        raise ValueError(f"top_k must be in 1..{experts}, got {top_k}")
    probs = torch.softmax(F.linear(hidden, router_weight).float(), dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(hidden.dtype), ids
