"""Batched decode / verify attention: one kernel call for the whole decode group, as GPU engines run it.

`kernels.attention_decode` (the CPU path, which `draftsim validate` checks) loops over sequences, one SDPA
call each. On a GPU that loop costs a launch per sequence and per layer and leaves the chip idle at small
contexts, where serving engines issue one batched call (vLLM's FlashAttention / FlashInfer backends).
`attention_decode_batched` has the same interface and semantics and issues, per layer:

1. one scatter of the new K/V into the cache (vLLM's `reshape_and_cache`: one kernel for all sequences);
2. one `scaled_dot_product_attention` over the whole group against the cache rows [seqs, kv_heads, L, d]
   read in place (a strided view, no copy):
   - plain decoding (q = 1) over equal contexts needs no mask: SDPA with native GQA (`enable_gqa`), which
     torch runs on its flash / cuDNN kernels;
   - verification (q > 1: causal among the new tokens), trees (ancestor mask) and ragged contexts need a
     mask [seqs or 1, 1, group·q, L] (additive, 0 / -inf). There the query heads of each KV head are packed
     into the query length ("pack GQA": [seqs, q, heads, d] -> [seqs, kv_heads, group·q, d]), so each KV
     head is read once for all its query heads under one mask, as FlashAttention-3's `pack_gqa` option
     (hopper/flash_attn_interface.py) and FlashInfer's decode kernels do.
   On an H100 with torch 2.11 (2026-11-26) torch ran both on cuDNN's flash kernel (the fingerprint's
   `observed_kernels`). Packing q = 1 as well measured 39 µs per layer for one sequence x 2,048 context
   (8 KV heads: too few thread blocks) where GQA SDPA took about 8 µs in a whole forward
   (../shared/data/h100-profile-2026-11-26/README.md); hence the split.

The mask is built once per step shape (`decode_layout`, memoised: what an engine's attention-metadata
builder does once per step for all layers).

Approximation (named): ragged contexts are padded to the longest one in the group and masked, so a ragged
group costs ∝ seqs · max(ctx) here where a paged varlen kernel costs ∝ Σ ctx; the profiler times equal
contexts (where both agree) and the op graph prices Σ ctx. Slots must form a contiguous range for the cache
to be read in place; other slot sets are gathered (a copy of their K/V, correct but slower).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from models.torch_impl.kernels import causal_tree_mask

MASK_ALIGN = 16   # the memory-efficient kernel wants the key length of a mask in multiples of 16
# Memoised layouts, least recently used first. A CUDA graph replays the layout tensors it captured, and a
# layout built during capture would copy host lists to the device, which capture forbids: so a layout in use
# must never be evicted between the calls that warm a graph up and its capture. Evicting the least recently
# used one at a time (never emptying the memo) keeps the newest `_MAX_LAYOUTS` (a profiled point cycles
# through at most 64 slot sets: profiles.profiler.timing.rotation_copies).
_LAYOUTS: OrderedDict[tuple, "DecodeLayout"] = OrderedDict()
_MAX_LAYOUTS = 4096


@dataclass(frozen=True)
class DecodeLayout:
    """Per-step metadata of one decode group, shared by all layers."""

    seqs: int
    q_per_seq: int
    keys_len: int                    # cache positions read per sequence (longest context + q, aligned)
    slot_start: int | None           # first slot when the slots are a contiguous range, else None
    slot_index: torch.Tensor | None  # [seqs] slots (gathered path)
    write_slots: torch.Tensor | None   # [seqs, q] slot of every new token (ragged writes), or None
    write_positions: torch.Tensor | None   # [seqs, q] cache position of every new token, or None
    uniform_cached: int | None       # the common cached length, when all are equal
    mask: torch.Tensor | None        # additive [seqs or 1, 1, group·q, keys_len] in the query dtype
    tree_mask: torch.Tensor | None = None   # the mask it was built from (kept alive: see decode_layout)


def decode_layout(slots: Sequence[int], cached_lens: Sequence[int], q_per_seq: int, group: int,
                  tree_mask: torch.Tensor | None, cache_len: int, device: torch.device,
                  dtype: torch.dtype) -> DecodeLayout:
    """The (memoised) layout of a decode group: slots, cached lengths, new tokens per sequence, query
    heads per KV head (`group`), the tree mask (None: causal) and the cache's length."""
    slots, cached = tuple(int(s) for s in slots), tuple(int(c) for c in cached_lens)
    # The tree mask is keyed by address (no device-to-host read: a lookup must be legal inside CUDA graph
    # capture) and, outside inference mode, its version counter (bumped by in-place changes); the layout
    # holds a reference to the mask, so no other tensor can take its address while the entry lives.
    tree_key = None if tree_mask is None else (
        tree_mask.data_ptr(), tuple(tree_mask.shape), str(tree_mask.device),
        None if tree_mask.is_inference() else tree_mask._version)
    key = (slots, cached, q_per_seq, group, tree_key, cache_len, str(device), dtype)
    found = _LAYOUTS.get(key)
    if found is None:
        if len(_LAYOUTS) >= _MAX_LAYOUTS:
            _LAYOUTS.popitem(last=False)
        found = _LAYOUTS[key] = _build_layout(slots, cached, q_per_seq, group, tree_mask, cache_len, device, dtype)
    else:
        _LAYOUTS.move_to_end(key)
    return found


def _build_layout(slots, cached, q_per_seq, group, tree_mask, cache_len, device, dtype) -> DecodeLayout:
    seqs = len(slots)
    longest = max(cached) + q_per_seq
    if longest > cache_len:
        raise ValueError(f"KV cache overflow: a sequence needs {longest} positions, cache holds {cache_len}")
    uniform = cached[0] if all(c == cached[0] for c in cached) else None
    contiguous = all(s == slots[0] + i for i, s in enumerate(slots))
    needs_mask = q_per_seq > 1 or uniform is None
    keys_len = longest
    if needs_mask:
        keys_len = min(cache_len, -(-longest // MASK_ALIGN) * MASK_ALIGN)
    write_slots = write_positions = None
    if uniform is None or not contiguous:
        write_slots = torch.tensor(slots, device=device)[:, None].expand(seqs, q_per_seq).contiguous()
        write_positions = (torch.tensor(cached, device=device)[:, None]
                           + torch.arange(q_per_seq, device=device)[None, :])
    mask = None
    if needs_mask:
        new_block = tree_mask if tree_mask is not None else causal_tree_mask(q_per_seq, device)
        new_block = new_block.to(device=device, dtype=torch.bool)
        ctx = torch.tensor([uniform] if uniform is not None else list(cached), device=device)   # [b]
        pos = torch.arange(keys_len, device=device)
        offset = pos[None, :] - ctx[:, None]                                                     # [b, L]
        in_context = offset < 0
        inside_new = (offset >= 0) & (offset < q_per_seq)
        block = new_block[:, offset.clamp(0, q_per_seq - 1)]                                      # [q, b, L]
        allowed = in_context[None] | (inside_new[None] & block)                                   # [q, b, L]
        allowed = allowed.permute(1, 0, 2)                                                        # [b, q, L]
        allowed = allowed[:, None].expand(-1, group, -1, -1).reshape(allowed.shape[0], group * q_per_seq, keys_len)
        mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill_(~allowed, float("-inf"))
        mask = mask[:, None]                                                                      # [b, 1, g·q, L]
    index = None if contiguous else torch.tensor(slots, device=device)
    return DecodeLayout(seqs, q_per_seq, keys_len, slots[0] if contiguous else None, index, write_slots,
                        write_positions, uniform, mask, tree_mask)


def _write_new(cache: torch.Tensor, new: torch.Tensor, layout: DecodeLayout) -> None:
    """Scatter new [seqs, q, kv_heads, d] into cache [slots, kv_heads, max_ctx, d] in one kernel."""
    if layout.write_slots is None:
        start, c, q = layout.slot_start, layout.uniform_cached, layout.q_per_seq
        cache[start:start + layout.seqs, :, c:c + q].copy_(new.transpose(1, 2))
    else:
        cache.permute(0, 2, 1, 3)[layout.write_slots, layout.write_positions] = new


def attention_decode_batched(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
                             k_cache: torch.Tensor, v_cache: torch.Tensor, slots: Sequence[int],
                             cached_lens: Sequence[int], tree_mask: torch.Tensor | None = None,
                             scale: float | None = None) -> torch.Tensor:
    """`kernels.attention_decode` in one batched call (module docstring): same arguments, same result
    within floating-point tolerance, [seqs·q_per_seq, heads·head_dim] sequence-major."""
    seqs, q_per_seq, heads, head_dim = q.shape
    kv_heads = k_cache.shape[1]
    if len(slots) != seqs or len(cached_lens) != seqs:
        raise ValueError(f"slots and cached_lens need {seqs} entries, got {len(slots)} and {len(cached_lens)}")
    if tree_mask is not None and tuple(tree_mask.shape) != (q_per_seq, q_per_seq):
        raise ValueError(f"tree_mask must be [{q_per_seq}, {q_per_seq}], got {list(tree_mask.shape)}")
    if heads % kv_heads:
        raise ValueError(f"heads ({heads}) must be a multiple of the cache's kv_heads ({kv_heads})")
    group = heads // kv_heads
    layout = decode_layout(slots, cached_lens, q_per_seq, group, tree_mask, k_cache.shape[2], q.device, q.dtype)
    _write_new(k_cache, k_new, layout)
    _write_new(v_cache, v_new, layout)
    length = layout.keys_len
    if layout.slot_start is not None:
        start = layout.slot_start
        keys, values = k_cache[start:start + seqs, :, :length], v_cache[start:start + seqs, :, :length]
    else:
        keys, values = k_cache[layout.slot_index, :, :length], v_cache[layout.slot_index, :, :length]
    if layout.mask is None:   # plain decoding over equal contexts: GQA SDPA, the cache read in place
        out = F.scaled_dot_product_attention(q.transpose(1, 2), keys, values, scale=scale, enable_gqa=True)
        return out.transpose(1, 2).reshape(seqs * q_per_seq, heads * head_dim)
    # [b, q, kv, g, d] -> [b, kv, g, q, d] -> [b, kv, g·q, d]: row g·q + t is query head kv·g + g, token t
    query = q.view(seqs, q_per_seq, kv_heads, group, head_dim).permute(0, 2, 3, 1, 4)
    query = query.reshape(seqs, kv_heads, group * q_per_seq, head_dim)
    mask = layout.mask.expand(seqs, kv_heads, group * q_per_seq, length)
    out = F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=scale)
    out = out.view(seqs, kv_heads, group, q_per_seq, head_dim).permute(0, 3, 1, 2, 4)
    return out.reshape(seqs * q_per_seq, heads * head_dim)


def clear_layouts() -> None:
    """Forget memoised layouts (tests; a new cache)."""
    _LAYOUTS.clear()


__all__ = ["DecodeLayout", "attention_decode_batched", "clear_layouts", "decode_layout"]
