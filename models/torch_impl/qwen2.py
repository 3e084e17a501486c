"""Llama/Qwen2-style decoder in torch, written only with the op kernels of `models.torch_impl.kernels`.

Supports: grouped-query attention, rotary embedding (rotate-half convention, as Qwen2/NeoX), RMSNorm,
SwiGLU MLP or a routed MoE block (`models.torch_impl.moe`), optional Q/K/V bias (Qwen2), tied or untied
LM head, and a preallocated KV cache (`KVCache`, layout of `kernels`) for incremental and batched
decoding with ragged contexts. Every forward can skip a set of decoder layers (self-speculative drafting:
the skipped layers neither run nor write their cache rows).

Shapes: hidden states are token-major and flattened over the batch, `[tokens, hidden]`. All weights are
plain parameters named after their role (see `Qwen2Model.state_dict()`); `models.torch_impl.gguf_loader`
maps GGUF tensors onto them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import torch
from torch import nn

from models.torch_impl import kernels
from models.torch_impl.moe import MoEBlock


@dataclass(frozen=True)
class ModelConfig:
    """Decoder hyper-parameters. `num_experts` > 0 replaces every layer's MLP by a routed MoE block with
    `experts_per_token` active experts of width `moe_intermediate_size`."""
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    qkv_bias: bool = False
    tie_word_embeddings: bool = False
    max_context: int = 32768
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    moe_renormalize: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                     "max_context"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"ModelConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"ModelConfig.num_heads ({self.num_heads}) must be a multiple of "
                             f"num_kv_heads ({self.num_kv_heads})")
        if self.head_dim % 2:
            raise ValueError(f"ModelConfig.head_dim must be even (rotary pairs), got {self.head_dim}")
        if self.rope_theta <= 0 or self.rms_norm_eps <= 0:
            raise ValueError("ModelConfig.rope_theta and rms_norm_eps must be > 0")
        if self.num_experts:
            if not 1 <= self.experts_per_token <= self.num_experts or self.moe_intermediate_size < 1:
                raise ValueError("ModelConfig MoE needs 1 <= experts_per_token <= num_experts and "
                                 "moe_intermediate_size >= 1")
        elif self.intermediate_size < 1:
            raise ValueError(f"ModelConfig.intermediate_size must be >= 1, got {self.intermediate_size}")


@dataclass
class KVCache:
    """Per-layer K/V tensors `[slots, kv_heads, max_ctx, head_dim]` and each slot's cached length.

    `lengths[slot]` is the number of positions a full (no-skip) forward has made valid. Rolling back a
    rejected draft is `lengths[slot] = n` (later writes overwrite the stale rows)."""
    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    lengths: list[int] = field(default_factory=list)

    @property
    def slots(self) -> int:
        return self.keys[0].shape[0]

    @property
    def max_context(self) -> int:
        return self.keys[0].shape[2]


def _param(*shape: int) -> nn.Parameter:
    return nn.Parameter(torch.zeros(*shape), requires_grad=False)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        q_out, kv_out = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
        self.attn_norm = _param(cfg.hidden_size)
        self.q_proj = _param(q_out, cfg.hidden_size)
        self.k_proj = _param(kv_out, cfg.hidden_size)
        self.v_proj = _param(kv_out, cfg.hidden_size)
        if cfg.qkv_bias:
            self.q_bias, self.k_bias, self.v_bias = _param(q_out), _param(kv_out), _param(kv_out)
        else:
            self.q_bias = self.k_bias = self.v_bias = None
        self.o_proj = _param(cfg.hidden_size, q_out)
        self.ffn_norm = _param(cfg.hidden_size)
        if cfg.num_experts:
            self.moe = MoEBlock(cfg.hidden_size, cfg.moe_intermediate_size, cfg.num_experts,
                                cfg.experts_per_token, cfg.moe_renormalize)
        else:
            self.moe = None
            self.gate_proj = _param(cfg.intermediate_size, cfg.hidden_size)
            self.up_proj = _param(cfg.intermediate_size, cfg.hidden_size)
            self.down_proj = _param(cfg.hidden_size, cfg.intermediate_size)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        if self.moe is not None:
            return self.moe(x)
        act = kernels.swiglu(kernels.linear(x, self.gate_proj), kernels.linear(x, self.up_proj))
        return kernels.linear(act, self.down_proj)


class Qwen2Model(nn.Module):
    """The decoder. Entry points: `prefill` (one sequence's chunk), `decode` (q new tokens for each of
    several sequences), `forward_full` (a parallel pass over whole sequences without a persistent cache)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = _param(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.final_norm = _param(cfg.hidden_size)
        self.lm_head = None if cfg.tie_word_embeddings else _param(cfg.vocab_size, cfg.hidden_size)

    # ----------------------------------------------------------------------------------------- cache
    def new_cache(self, slots: int, max_context: int, dtype: torch.dtype = torch.float32) -> KVCache:
        if slots < 1 or not 1 <= max_context <= self.cfg.max_context:
            raise ValueError(f"new_cache needs slots >= 1 and 1 <= max_context <= {self.cfg.max_context}, "
                             f"got slots={slots}, max_context={max_context}")
        shape = (slots, self.cfg.num_kv_heads, max_context, self.cfg.head_dim)
        dev = self.embed_tokens.device
        return KVCache([torch.zeros(shape, dtype=dtype, device=dev) for _ in self.layers],
                       [torch.zeros(shape, dtype=dtype, device=dev) for _ in self.layers], [0] * slots)

    # ----------------------------------------------------------------------------------------- core
    def _check_skip(self, skip_layers: Iterable[int]) -> frozenset[int]:
        skip = frozenset(int(i) for i in skip_layers)
        bad = [i for i in skip if not 0 <= i < self.cfg.num_layers]
        if bad:
            raise ValueError(f"skip_layers must lie in 0…{self.cfg.num_layers - 1}, got {sorted(bad)}")
        return skip

    def _check_ids(self, ids: torch.Tensor) -> None:
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.cfg.vocab_size):
            raise ValueError(f"token ids must lie in 0…{self.cfg.vocab_size - 1}")

    def _run_layers(self, ids: torch.Tensor, positions: torch.Tensor, attend, skip: frozenset[int],
                    hidden_out: list | None = None) -> torch.Tensor:
        """ids, positions: [tokens]. attend(layer_index, q, k, v) → [tokens, heads*head_dim], where q is
        [tokens, heads, head_dim] and k, v are [tokens, kv_heads, head_dim] (rotated). Returns the final
        normed hidden states [tokens, hidden]; appends each layer's input (and the last output) to
        hidden_out when given."""
        cfg = self.cfg
        h = kernels.embedding(ids, self.embed_tokens)
        cos, sin = kernels.rope_tables(positions, cfg.head_dim, cfg.rope_theta, dtype=h.dtype)
        tokens = ids.shape[0]
        for index, layer in enumerate(self.layers):
            if hidden_out is not None:
                hidden_out.append(h)
            if index in skip:
                continue
            x = kernels.rms_norm(h, layer.attn_norm, cfg.rms_norm_eps)
            q = kernels.linear(x, layer.q_proj, layer.q_bias).view(tokens, cfg.num_heads, cfg.head_dim)
            k = kernels.linear(x, layer.k_proj, layer.k_bias).view(tokens, cfg.num_kv_heads, cfg.head_dim)
            v = kernels.linear(x, layer.v_proj, layer.v_bias).view(tokens, cfg.num_kv_heads, cfg.head_dim)
            q, k = kernels.apply_rope(q, cos, sin), kernels.apply_rope(k, cos, sin)
            h = h + kernels.linear(attend(index, q, k, v), layer.o_proj)
            h = h + layer.mlp(kernels.rms_norm(h, layer.ffn_norm, cfg.rms_norm_eps))
        if hidden_out is not None:
            hidden_out.append(h)
        return kernels.rms_norm(h, self.final_norm, cfg.rms_norm_eps)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        head = self.embed_tokens if self.lm_head is None else self.lm_head
        return kernels.linear(hidden, head)

    # ----------------------------------------------------------------------------------------- entry points
    def prefill(self, ids: torch.Tensor, cache: KVCache, slot: int, skip_layers: Iterable[int] = (),
                last_only: bool = False) -> torch.Tensor:
        """Run one chunk `ids` [chunk] of sequence `slot` after its cached prefix; returns logits
        [chunk, vocab] (or [1, vocab] with last_only) and advances cache.lengths[slot] by chunk."""
        skip = self._check_skip(skip_layers)
        if ids.dim() != 1 or ids.shape[0] < 1:
            raise ValueError(f"prefill ids must be a non-empty 1-D tensor, got shape {list(ids.shape)}")
        if not 0 <= slot < cache.slots:
            raise ValueError(f"slot must lie in 0…{cache.slots - 1}, got {slot}")
        self._check_ids(ids)
        prefix = cache.lengths[slot]
        positions = torch.arange(prefix, prefix + ids.shape[0], device=ids.device)

        def attend(i, q, k, v):
            return kernels.attention_prefill(q, k, v, cache.keys[i], cache.values[i], slot, prefix)

        hidden = self._run_layers(ids, positions, attend, skip)
        cache.lengths[slot] = prefix + ids.shape[0]
        return self.logits(hidden[-1:] if last_only else hidden)

    def decode(self, ids: torch.Tensor, cache: KVCache, slots: Sequence[int],
               skip_layers: Iterable[int] = (), tree_mask: torch.Tensor | None = None) -> torch.Tensor:
        """q new tokens `ids` [seqs, q] for sequences in `slots` (ragged cached lengths); returns logits
        [seqs, q, vocab] and advances each slot's length by q. With a tree_mask [q, q] the q tokens are
        tree nodes; positions are then cached_len + depth, depth = (ancestors incl. itself) − 1."""
        skip = self._check_skip(skip_layers)
        if ids.dim() != 2 or len(slots) != ids.shape[0]:
            raise ValueError(f"decode ids must be [seqs, q] with seqs == len(slots), got {list(ids.shape)}")
        self._check_ids(ids)
        seqs, q_per = ids.shape
        cached = [cache.lengths[s] for s in slots]
        offsets = (torch.arange(q_per, device=ids.device) if tree_mask is None
                   else tree_mask.to(torch.int64).sum(dim=1) - 1)
        positions = (torch.tensor(cached, device=ids.device)[:, None] + offsets[None, :]).reshape(-1)

        def attend(i, q, k, v):
            return kernels.attention_decode(q.view(seqs, q_per, *q.shape[1:]), k.view(seqs, q_per, *k.shape[1:]),
                                            v.view(seqs, q_per, *v.shape[1:]), cache.keys[i], cache.values[i],
                                            slots, cached, tree_mask)

        hidden = self._run_layers(ids.reshape(-1), positions, attend, skip)
        for s in slots:
            cache.lengths[s] += q_per
        return self.logits(hidden).view(seqs, q_per, -1)

    def forward_full(self, ids: torch.Tensor, skip_layers: Iterable[int] = (),
                     hidden_out: list | None = None, first_logit_row: int = 0) -> torch.Tensor:
        """Parallel causal pass over one whole sequence ids [tokens] → logits [tokens - first_logit_row,
        vocab] for rows first_logit_row…, using a temporary cache. hidden_out (a list) receives every
        layer's input hidden state and the last output."""
        skip = self._check_skip(skip_layers)
        if ids.dim() != 1 or ids.shape[0] < 1:
            raise ValueError(f"forward_full ids must be a non-empty 1-D tensor, got shape {list(ids.shape)}")
        self._check_ids(ids)
        cache = self.new_cache(1, ids.shape[0], self.embed_tokens.dtype)
        positions = torch.arange(ids.shape[0], device=ids.device)

        def attend(i, q, k, v):
            return kernels.attention_prefill(q, k, v, cache.keys[i], cache.values[i], 0, 0)

        if not 0 <= first_logit_row < ids.shape[0]:
            raise ValueError(f"first_logit_row must lie in 0…{ids.shape[0] - 1}, got {first_logit_row}")
        return self.logits(self._run_layers(ids, positions, attend, skip, hidden_out)[first_logit_row:])


def random_model(cfg: ModelConfig, seed: int, scale: float = 0.5) -> Qwen2Model:
    """A model with seeded random weights (norm gains 1, projections ~ N(0, scale²/fan_in)); for tests."""
    gen = torch.Generator().manual_seed(seed)
    model = Qwen2Model(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm"):
                p.fill_(1.0)
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * scale / p.shape[-1] ** 0.5)
    return model.eval()
