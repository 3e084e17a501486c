"""The reference engine's decoder: one kernel call per op of the op graph, on a slot-based KV cache.

Why not `models.torch_impl.qwen2.Qwen2Model` as it is: the simulator prices a step as Σ op times of
`models.opgraph` (fused QKV projection, one RoPE call over q and k heads, fused gate/up projection, residual
add fused into RMSNorm), and the profiler times exactly those kernel calls. `Qwen2Model` runs separate
q/k/v and gate/up projections, two RoPE calls and unfused norms: more, smaller kernels than the op graph
prices. Validation must measure the engine the simulator describes, so this decoder follows the layer-to-op
mapping of `models.torch_impl.kernels` call for call (same math as `Qwen2Model`; `from_qwen2` builds one
from the other and tests/scenarios/test_reference_engine.py checks equal logits):

    embedding → add_rms_norm → per layer [linear qkv(+bias) → apply_rope(q and k heads) → attention
    (attention_prefill per chunk, attention_decode for the decode group) → linear o → add_rms_norm →
    linear gate_up → swiglu → linear down → add_rms_norm] → linear lm_head on the logits rows → sample_tokens

What runs besides the priced ops (not in the op graph; measured by validation as part of the step):
building the ids/positions tensors, `rope_tables` (once per forward), gathering the logits rows, and
concatenating prefill and decode attention outputs in mixed (chunked-prefill) steps.

Weights are random normal (σ = 1/√fan_in; norm gains 1) unless built from a loaded `Qwen2Model`: timings do
not depend on the values. Dense models only (no MoE, no MLA).
"""
from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import torch

from models.spec import ModelSpec
from models.torch_impl import kernels as K
from models.torch_impl.kernel_sets import KernelSet, kernel_set_for
from models.torch_impl.qwen2 import ModelConfig, Qwen2Model

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def config_from_spec(spec: ModelSpec, max_context: int | None = None) -> ModelConfig:
    """The torch decoder config of a catalog model (ValueError for MoE / MLA models)."""
    if spec.is_moe or spec.is_mla or spec.qk_norm:
        raise ValueError(f"model {spec.name!r}: the reference engine runs dense GQA decoders only "
                         "(no MoE, MLA or q/k norm)")
    return ModelConfig(vocab_size=spec.vocab_size, hidden_size=spec.hidden_size,
                       intermediate_size=spec.intermediate_size, num_layers=spec.num_layers,
                       num_heads=spec.num_heads, num_kv_heads=spec.num_kv_heads, head_dim=spec.head_dim,
                       rope_theta=spec.rope_theta, qkv_bias=spec.qkv_bias,
                       tie_word_embeddings=spec.tie_word_embeddings,
                       max_context=max_context or spec.max_position_embeddings)


@dataclass(frozen=True)
class PrefillChunk:
    """`ids` [chunk] of sequence `slot` written after `prefix` cached positions."""

    ids: torch.Tensor
    slot: int
    prefix: int


@dataclass(frozen=True)
class DecodeGroup:
    """`ids` [seqs, q] new tokens; sequence b lives in `slots[b]` with `cached[b]` cached positions;
    `tree_mask` [q, q] (None: causal among the new tokens) for tree verification."""

    ids: torch.Tensor
    slots: Sequence[int]
    cached: Sequence[int]
    tree_mask: torch.Tensor | None = None


@dataclass
class _Layer:
    attn_norm: torch.Tensor
    qkv: torch.Tensor                # [(heads + 2·kv_heads)·head_dim, hidden]
    qkv_bias: torch.Tensor | None
    o: torch.Tensor                  # [hidden, heads·head_dim]
    ffn_norm: torch.Tensor
    gate_up: torch.Tensor            # [2·intermediate, hidden]
    down: torch.Tensor               # [hidden, intermediate]


class FusedDecoder:
    """A dense decoder in the op graph's fused layout with its own KV cache (`allocate_cache`)."""

    def __init__(self, cfg: ModelConfig, embed: torch.Tensor, layers: list[_Layer], final_norm: torch.Tensor,
                 lm_head: torch.Tensor, kernels: KernelSet | None = None):
        self.cfg = cfg
        # The kernels of every op kind (models.torch_impl.kernel_sets): the validated reference on CPU,
        # the engine-grade set (batched attention, fused elementwise ops) on CUDA.
        self.kernels = kernels if kernels is not None else kernel_set_for(embed.device)
        self.embed, self.layers, self.final_norm, self.lm_head = embed, layers, final_norm, lm_head
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.op_seconds: dict[str, float] | None = None   # set to a dict to time every kernel call

    @property
    def device(self) -> torch.device:
        return self.embed.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    # ---- construction ----------------------------------------------------------------------------
    @classmethod
    def random(cls, cfg: ModelConfig, seed: int, dtype: torch.dtype = torch.float32,
               device: str | torch.device = "cpu", kernels: KernelSet | None = None) -> "FusedDecoder":
        """Random weights from `seed`: drawn on the CPU (the validated path: same values on every machine)
        or, on CUDA, on the device with a CUDA generator (an 8B model's weights in milliseconds instead
        of a minute of CPU draws; values differ from the CPU draw, timings do not depend on them)."""
        device = torch.device(device)
        on_device = device.type == "cuda"
        gen = torch.Generator(device=device if on_device else "cpu").manual_seed(seed)

        def weight(rows: int, cols: int) -> torch.Tensor:
            if on_device:
                return torch.empty(rows, cols, device=device, dtype=dtype).normal_(0.0, 1.0 / math.sqrt(cols),
                                                                                 generator=gen)
            w = torch.empty(rows, cols).normal_(0.0, 1.0 / math.sqrt(cols), generator=gen)
            return w.to(device=device, dtype=dtype)

        def ones(n: int) -> torch.Tensor:
            return torch.ones(n, device=device, dtype=dtype)

        h, d, i = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
        qkv_rows = (cfg.num_heads + 2 * cfg.num_kv_heads) * d
        layers = []
        for _ in range(cfg.num_layers):
            bias = (weight(1, qkv_rows)[0] * (0.1 * math.sqrt(qkv_rows)) if on_device else
                    torch.empty(qkv_rows).normal_(0.0, 0.1, generator=gen).to(device=device, dtype=dtype)
                    ) if cfg.qkv_bias else None
            layers.append(_Layer(ones(h), weight(qkv_rows, h), bias, weight(h, cfg.num_heads * d), ones(h),
                                 weight(2 * i, h), weight(h, i)))
        embed = weight(cfg.vocab_size, h)
        lm_head = embed if cfg.tie_word_embeddings else weight(cfg.vocab_size, h)
        return cls(cfg, embed, layers, ones(h), lm_head, kernels)

    @classmethod
    def from_qwen2(cls, model: Qwen2Model) -> "FusedDecoder":
        """The same weights as `model`, concatenated into the fused layout (dense models only)."""
        cfg = model.cfg
        if cfg.num_experts:
            raise ValueError("from_qwen2: MoE models are not supported by the reference engine")
        layers = []
        for layer in model.layers:
            bias = (torch.cat([layer.q_bias, layer.k_bias, layer.v_bias]).detach()
                    if layer.q_bias is not None else None)
            layers.append(_Layer(layer.attn_norm.detach(),
                                 torch.cat([layer.q_proj, layer.k_proj, layer.v_proj]).detach(), bias,
                                 layer.o_proj.detach(), layer.ffn_norm.detach(),
                                 torch.cat([layer.gate_proj, layer.up_proj]).detach(), layer.down_proj.detach()))
        head = model.embed_tokens if model.lm_head is None else model.lm_head
        return cls(cfg, model.embed_tokens.detach(), layers, model.final_norm.detach(), head.detach())

    def allocate_cache(self, slots: int, max_context: int, random_fill: bool = False) -> None:
        """Preallocate K/V [slots, kv_heads, max_context, head_dim] per layer. The buffers are written
        (zero-filled, or random normal with `random_fill`: timing checks read cached positions they did not
        write, and zeros can run faster than real data) here so that no page is first touched during a
        timed step."""
        if slots < 1 or max_context < 1:
            raise ValueError(f"allocate_cache needs slots >= 1 and max_context >= 1, got {slots}, {max_context}")
        shape = (slots, self.cfg.num_kv_heads, max_context, self.cfg.head_dim)

        def buffer() -> torch.Tensor:
            out = torch.empty(shape, dtype=self.dtype, device=self.device)
            return out.normal_() if random_fill else out.fill_(0.0)
        self.keys = [buffer() for _ in self.layers]
        self.values = [buffer() for _ in self.layers]

    # ---- one forward pass --------------------------------------------------------------------------
    def _op(self, kind: str, fn, *args):
        if self.op_seconds is None:
            return fn(*args)
        sync = torch.cuda.synchronize if self.device.type == "cuda" else None
        if sync:
            sync()
        t0 = time.perf_counter()
        out = fn(*args)
        if sync:
            sync()
        self.op_seconds[kind] += time.perf_counter() - t0
        return out

    def forward(self, chunks: Sequence[PrefillChunk], decode: DecodeGroup | None) -> torch.Tensor:
        """One pass over the prefill chunks and the decode group (hidden states concatenated in that
        order). Returns greedy next-token ids: one per chunk (its last row), then seqs·q for the decode
        group (sequence-major)."""
        return self._op("sampling", self.kernels.sample_tokens, self.logits(chunks, decode))

    def logits(self, chunks: Sequence[PrefillChunk], decode: DecodeGroup | None) -> torch.Tensor:
        """The pass of `forward` up to the LM head: logits of the same rows, [rows, vocab]."""
        cfg, dev = self.cfg, self.device
        if not self.keys:
            raise ValueError("forward: call allocate_cache first")
        ids_parts, pos_parts, logit_rows, row = [], [], [], 0
        for c in chunks:
            n = int(c.ids.shape[0])
            ids_parts.append(c.ids)
            pos_parts.append(torch.arange(c.prefix, c.prefix + n))
            row += n
            logit_rows.append(row - 1)
        seqs = q_per = 0
        if decode is not None:
            seqs, q_per = int(decode.ids.shape[0]), int(decode.ids.shape[1])
            ids_parts.append(decode.ids.reshape(-1))
            pos_parts.append((torch.tensor(list(decode.cached))[:, None] + torch.arange(q_per)[None, :]).reshape(-1))
        ids = torch.cat(ids_parts).to(dev) if len(ids_parts) > 1 else ids_parts[0].to(dev)
        positions = torch.cat(pos_parts).to(dev) if len(pos_parts) > 1 else pos_parts[0].to(dev)
        if decode is not None:
            logit_rows.extend(range(row, row + seqs * q_per))
        rows = None if len(logit_rows) == int(ids.shape[0]) else torch.tensor(logit_rows, device=dev)
        return self.logits_on_device(ids, positions, chunks, decode, rows)

    def logits_on_device(self, ids: torch.Tensor, positions: torch.Tensor, chunks: Sequence[PrefillChunk],
                         decode: DecodeGroup | None, rows: torch.Tensor | None) -> torch.Tensor:
        """The pass from device tensors ids/positions [tokens] (chunks' tokens, then the decode group's)
        to the logits of `rows` (None: every row). No host-to-device copy: capturable in a CUDA graph once
        a warm-up call has built the decode group's attention layout."""
        cfg, kern = self.cfg, self.kernels
        seqs = q_per = 0
        if decode is not None:
            seqs, q_per = int(decode.ids.shape[0]), int(decode.ids.shape[1])
        tokens = int(ids.shape[0])
        heads, kv, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        width, eps = cfg.intermediate_size, cfg.rms_norm_eps

        h = self._op("embedding", K.embedding, ids, self.embed)
        cos, sin = K.rope_tables(positions, d, cfg.rope_theta, dtype=h.dtype)
        x, residual = self._op("norm", kern.add_rms_norm, h, None, self.layers[0].attn_norm, eps)
        for index, layer in enumerate(self.layers):
            qkv = self._op("gemm", K.linear, x, layer.qkv, layer.qkv_bias).view(tokens, heads + 2 * kv, d)
            qk = self._op("rope", kern.apply_rope, qkv[:, :heads + kv], cos, sin)
            attn = self._attend(index, qk[:, :heads], qk[:, heads:], qkv[:, heads + kv:], chunks, decode,
                                seqs, q_per)
            x, residual = self._op("norm", kern.add_rms_norm, self._op("gemm", K.linear, attn, layer.o), residual,
                                   layer.ffn_norm, eps)
            gate_up = self._op("gemm", K.linear, x, layer.gate_up)
            act = self._op("activation", kern.swiglu, gate_up[:, :width], gate_up[:, width:])
            following = self.layers[index + 1].attn_norm if index + 1 < len(self.layers) else self.final_norm
            x, residual = self._op("norm", kern.add_rms_norm, self._op("gemm", K.linear, act, layer.down), residual,
                                   following, eps)
        if rows is not None:
            x = x[rows]
        return self._op("lm_head", K.linear, x, self.lm_head)

    def _attend(self, index: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                chunks: Sequence[PrefillChunk], decode: DecodeGroup | None, seqs: int, q_per: int) -> torch.Tensor:
        keys, values = self.keys[index], self.values[index]
        outs, row = [], 0
        for c in chunks:
            n = int(c.ids.shape[0])
            outs.append(self._op("attn_prefill", K.attention_prefill, q[row:row + n], k[row:row + n],
                                 v[row:row + n], keys, values, c.slot, c.prefix))
            row += n
        if decode is not None:
            shape = (seqs, q_per)
            outs.append(self._op("attn_decode", self.kernels.attention_decode, q[row:].view(*shape, *q.shape[1:]),
                                 k[row:].view(*shape, *k.shape[1:]), v[row:].view(*shape, *v.shape[1:]),
                                 keys, values, decode.slots, decode.cached, decode.tree_mask))
        return outs[0] if len(outs) == 1 else torch.cat(outs)


def new_op_seconds() -> dict[str, float]:
    """A fresh accumulator for `FusedDecoder.op_seconds` (kernel kind → seconds)."""
    return defaultdict(float)
