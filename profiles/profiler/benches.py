"""Benches: for one profile point (op kind + dims) build the inputs and a `call(i)` that runs the kernel.

Each bench calls the functions of the device's kernel set (`models.torch_impl.kernel_sets`: the validated
reference kernels on CPU, the engine-grade batched/fused ones on CUDA) exactly as the torch model does, so
a profiled time is the time of an executed kernel. Large resident operands (weights, KV caches, the
embedding table) are rotated over `copies` buffers (see `timing.rotation_copies`); activations are hot.
Random values come from a seeded torch.Generator (values do not change timings, but runs are repeatable).
Rotated operands are views into one `OperandPool` (random normal values, allocated once and grown when a
point needs more), so building a point costs no fresh random numbers; only activations are drawn per point.
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from models import ops as K_OPS
from models.torch_impl import kernels as K
from models.torch_impl.batched_attention import MASK_ALIGN
from models.torch_impl.kernel_sets import KernelSet, kernel_set_for
from profiles.profiler.timing import rotation_copies

Bench = Callable[[int], object]


class OperandPool:
    """A flat buffer of random normal values; `views` hands out non-overlapping views of it."""

    def __init__(self, dtype: torch.dtype, device: torch.device, seed: int = 0):
        self.dtype, self.device = dtype, device
        self._gen = torch.Generator().manual_seed(seed)
        self._buffer = torch.empty(0, dtype=dtype, device=device)

    def views(self, shape: tuple[int, ...], copies: int) -> list[torch.Tensor]:
        size = 1
        for extent in shape:
            size *= extent
        needed = size * copies
        if needed > self._buffer.numel():
            grown = max(needed, 2 * self._buffer.numel())
            self._buffer = torch.empty(0, dtype=self.dtype, device=self.device)   # free before growing
            if self.device.type == "cuda":   # drawn on the device: GBs of normals in milliseconds
                gen = torch.Generator(device=self.device).manual_seed(int(self._gen.initial_seed()))
                self._buffer = torch.empty(grown, dtype=self.dtype, device=self.device).normal_(generator=gen)
            else:
                self._buffer = torch.randn(grown, generator=self._gen).to(device=self.device, dtype=self.dtype)
        return [self._buffer[c * size:(c + 1) * size].view(shape) for c in range(copies)]


def _rand(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> torch.Tensor:
    if device.type == "cuda":   # drawn on the device from a seed taken from the CPU generator
        seed = int(torch.randint(0, 2 ** 62, (1,), generator=gen))
        return torch.empty(shape, dtype=dtype, device=device).normal_(
            generator=torch.Generator(device=device).manual_seed(seed))
    return torch.randn(shape, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype)


def _int(dims: Mapping[str, float], key: str) -> int:
    value = dims[key]
    if value != int(value) or value < 0:
        raise ValueError(f"profile dim {key} must be a non-negative integer, got {value}")
    return int(value)


def tree_ancestor_mask(nodes: int, device: torch.device) -> torch.Tensor:
    """Ancestor mask of a binary heap-shaped tree (parent of node i is (i-1)//2), self included: the
    fixed tree used to profile tree verification (cost depends on the node count, not the shape)."""
    mask = torch.zeros(nodes, nodes, dtype=torch.bool)
    for node in range(nodes):
        cur = node
        while True:
            mask[node, cur] = True
            if cur == 0:
                break
            cur = (cur - 1) // 2
    return mask.to(device)


def prefill_prefix(q_tokens: int, attn_pairs: int) -> int:
    """Cached prefix o of one causal chunk of c tokens with c·o + c(c+1)/2 attended pairs."""
    causal = q_tokens * (q_tokens + 1) // 2
    extra = attn_pairs - causal
    if q_tokens <= 0 or extra < 0 or extra % q_tokens:
        raise ValueError(f"attn_pairs={attn_pairs} is not c*o + c(c+1)/2 for chunk c={q_tokens}")
    return extra // q_tokens


# The op kinds `build_bench` times (collectives: profiles.profiler.collectives).
BENCH_KINDS = (K_OPS.GEMM, K_OPS.ATTN_PREFILL, K_OPS.ATTN_DECODE, K_OPS.NORM, K_OPS.ACTIVATION, K_OPS.EMBEDDING,
               K_OPS.ROPE, K_OPS.SAMPLING, K_OPS.MOE_ROUTER)


def bench_problem(kind: str, dims: Mapping[str, float]) -> str | None:
    """Why `build_bench` cannot time a point of `kind` at `dims` (checked before any kernel is timed), or None."""
    if kind not in BENCH_KINDS:
        return f"no bench for op kind {kind!r}; benches: {', '.join(BENCH_KINDS)}"
    if kind == K_OPS.ATTN_PREFILL:
        try:
            if _int(dims, "seqs") != 1:
                return "prefill attention is profiled per chunk (seqs=1)"
            prefill_prefix(_int(dims, "q_tokens"), _int(dims, "attn_pairs"))
        except ValueError as exc:
            return str(exc)
    return None


def build_bench(kind: str, dims: Mapping[str, float], dtype: torch.dtype, device: torch.device,
                llc_bytes: int, pool: OperandPool | None = None, seed: int = 0,
                kernels: KernelSet | None = None) -> Bench:
    """Inputs + closure for one point, calling `kernels` (default: the device's set, kernel_set_for).
    Collective kinds are timed elsewhere (profiles.profiler.collectives)."""
    kern = kernels if kernels is not None else kernel_set_for(device)
    gen = torch.Generator().manual_seed(seed)
    pool = pool or OperandPool(dtype, device, seed)
    esize = torch.empty((), dtype=dtype).element_size()
    if kind == K_OPS.GEMM:
        m, n, k = _int(dims, "m"), _int(dims, "n"), _int(dims, "k")
        copies = rotation_copies(n * k * esize, llc_bytes)
        x = _rand((m, k), dtype, device, gen)
        weights = pool.views((n, k), copies)
        if dims.get("bias", 0):
            biases = [_rand((n,), dtype, device, gen) for _ in range(copies)]
            return lambda i: K.linear(x, weights[i % copies], biases[i % copies])
        return lambda i: K.linear(x, weights[i % copies])
    if kind == K_OPS.ATTN_PREFILL:
        return _prefill_bench(dims, dtype, device, llc_bytes, gen, esize, pool)
    if kind == K_OPS.ATTN_DECODE:
        return _decode_bench(dims, dtype, device, llc_bytes, gen, esize, pool, kern)
    if kind == K_OPS.NORM:
        x = _rand((_int(dims, "tokens"), _int(dims, "hidden")), dtype, device, gen)
        residual = _rand((_int(dims, "tokens"), _int(dims, "hidden")), dtype, device, gen)
        weight = _rand((_int(dims, "hidden"),), dtype, device, gen)
        return lambda i: kern.add_rms_norm(x, residual, weight)
    if kind == K_OPS.ACTIVATION:
        tokens, width = _int(dims, "tokens"), _int(dims, "width")
        gate_up = _rand((tokens, 2 * width), dtype, device, gen)   # a fused gate/up projection's output
        gate, up = gate_up[:, :width], gate_up[:, width:]
        return lambda i: kern.swiglu(gate, up)
    if kind == K_OPS.EMBEDDING:
        tokens, hidden, vocab = _int(dims, "tokens"), _int(dims, "hidden"), _int(dims, "vocab")
        table = pool.views((vocab, hidden), 1)[0]
        ids = torch.randint(0, vocab, (tokens,), generator=gen).to(device)
        return lambda i: K.embedding(ids, table)
    if kind == K_OPS.ROPE:
        tokens, heads, head_dim = _int(dims, "tokens"), _int(dims, "heads"), _int(dims, "head_dim")
        x = _rand((tokens, heads, head_dim), dtype, device, gen)
        cos, sin = K.rope_tables(torch.arange(tokens, device=device), head_dim, dtype=dtype)
        return lambda i: kern.apply_rope(x, cos, sin)
    if kind == K_OPS.SAMPLING:
        tokens, vocab = _int(dims, "tokens"), _int(dims, "vocab")
        logits = _rand((tokens, vocab), dtype, device, gen)
        temperature = 0.0 if dims.get("greedy", 1) else 1.0
        # CUDA: the default generator, whose philox state CUDA graphs advance per replay
        sampler = None if device.type == "cuda" else torch.Generator(device=device).manual_seed(seed)
        return lambda i: kern.sample_tokens(logits, temperature, sampler)
    if kind == K_OPS.MOE_ROUTER:
        tokens, hidden = _int(dims, "tokens"), _int(dims, "hidden")
        experts, top_k = _int(dims, "experts"), _int(dims, "top_k")
        x = _rand((tokens, hidden), dtype, device, gen)
        router = _rand((experts, hidden), dtype, device, gen)
        return lambda i: K.router_topk(x, router, top_k)
    raise ValueError(f"no bench for op kind {kind!r}; benches: {', '.join(BENCH_KINDS)}")


def _prefill_bench(dims, dtype, device, llc_bytes, gen, esize, pool) -> Bench:
    if _int(dims, "seqs") != 1:
        raise ValueError("prefill attention is profiled per chunk (seqs=1); several chunks are several calls")
    chunk = _int(dims, "q_tokens")
    heads, kv_heads, head_dim = _int(dims, "heads"), _int(dims, "kv_heads"), _int(dims, "head_dim")
    prefix = prefill_prefix(chunk, _int(dims, "attn_pairs"))
    total = prefix + chunk
    slots = rotation_copies(2 * kv_heads * total * head_dim * esize, llc_bytes)
    k_cache, v_cache = pool.views((slots, kv_heads, total, head_dim), 2)
    q = _rand((chunk, heads, head_dim), dtype, device, gen)
    k_new = _rand((chunk, kv_heads, head_dim), dtype, device, gen)
    v_new = _rand((chunk, kv_heads, head_dim), dtype, device, gen)
    return lambda i: K.attention_prefill(q, k_new, v_new, k_cache, v_cache, i % slots, prefix)


def _decode_bench(dims, dtype, device, llc_bytes, gen, esize, pool, kern) -> Bench:
    seqs, q_per_seq, ctx = _int(dims, "seqs"), _int(dims, "q_per_seq"), _int(dims, "ctx_per_seq")
    heads, kv_heads, head_dim = _int(dims, "heads"), _int(dims, "kv_heads"), _int(dims, "head_dim")
    # room for the batched kernel's mask alignment (batched_attention.MASK_ALIGN), so that no call pads
    total = ctx + q_per_seq + MASK_ALIGN
    per_seq_bytes = 2 * kv_heads * total * head_dim * esize
    copies = rotation_copies(seqs * per_seq_bytes, llc_bytes)
    k_cache, v_cache = pool.views((copies * seqs, kv_heads, total, head_dim), 2)
    q = _rand((seqs, q_per_seq, heads, head_dim), dtype, device, gen)
    k_new = _rand((seqs, q_per_seq, kv_heads, head_dim), dtype, device, gen)
    v_new = _rand((seqs, q_per_seq, kv_heads, head_dim), dtype, device, gen)
    tree = tree_ancestor_mask(q_per_seq, device) if dims.get("tree", 0) and q_per_seq > 1 else None
    slot_sets = [list(range(c * seqs, (c + 1) * seqs)) for c in range(copies)]
    cached = [ctx] * seqs
    return lambda i: kern.attention_decode(q, k_new, v_new, k_cache, v_cache, slot_sets[i % copies], cached, tree)
