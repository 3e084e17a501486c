"""Kernel sets: which implementation runs each op kind, one set per device kind, behind one interface.

The torch model (`models.torch_impl.fused.FusedDecoder`) and the profiler's benches call the functions of
a `KernelSet`, never the kernels directly, so a profiled time is always the time of the kernel the model
executes. Two sets:

- `REFERENCE` (CPU, and `draftsim validate`): the plain functions of `models.torch_impl.kernels`, exactly as
  validated (per-sequence decode attention, unfused elementwise ops, `torch.multinomial` sampling).
- `engine_kernels(device)` (CUDA): what serving engines run on GPUs —
  * decode/verify attention in one batched call (`models.torch_impl.batched_attention`);
  * fused add+RMSNorm, SiLU·mul and RoPE, each compiled by `torch.compile` (Inductor generates one Triton
    kernel per op where the unfused eager code launches 4–8; token count dynamic, hidden sizes static, see
    `_configure_dynamo`): vLLM ships the same fusions as custom ops
    (`fused_add_rms_norm`, `silu_and_mul`, `rotary_embedding` in vllm/_custom_ops.py) and, in V1, compiles
    the model with Inductor;
  * sampling as vLLM V1 does it (`random_sample` in vllm/v1/sample/ops/topk_topp_sampler.py): greedy is an
    argmax; a random draw divides the probabilities by Exp(1) noise and takes the argmax (the "exponential
    race", which samples index i with probability p_i) instead of `torch.multinomial`, which synchronises
    the host (the same trick as gpt-fast's `multinomial_sample_one_no_sync`).
  Each compiled kernel is checked against its reference on first use (`verify_engine_kernels`); a kernel
  that fails to compile or to match falls back to the reference and the set says so in `kernels`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import torch

from models.torch_impl import kernels as K
from models.torch_impl.batched_attention import attention_decode_batched


@dataclass(frozen=True)
class KernelSet:
    """The implementation of each op kind that the model and the profiler share."""

    name: str
    add_rms_norm: Callable
    swiglu: Callable
    apply_rope: Callable
    attention_decode: Callable
    sample_tokens: Callable
    kernels: dict = field(default_factory=dict)    # op kind -> the kernel that runs it (fingerprints)


def engine_sample_tokens(logits: torch.Tensor, temperature: float = 0.0,
                         generator: torch.Generator | None = None) -> torch.Tensor:
    """vLLM V1's sampler on logits [tokens, vocab]: argmax at temperature 0, else argmax(p / E) with
    E ~ Exp(1) i.i.d. (module docstring): a draw from softmax(logits / temperature) without a host sync."""
    if temperature < 0 or not math.isfinite(temperature):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")
    if temperature == 0.0:
        return torch.argmax(logits, dim=-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    noise = torch.empty_like(probs).exponential_(generator=generator)
    return probs.div_(noise).argmax(dim=-1)


REFERENCE = KernelSet(
    "reference", K.add_rms_norm, K.swiglu, K.apply_rope, K.attention_decode, K.sample_tokens,
    {"norm": "eager add + rms_norm", "activation": "eager silu * up", "rope": "eager rotate-half",
     "attn_decode": "sdpa per sequence", "attn_prefill": "sdpa per chunk", "sampling": "argmax / multinomial",
     "gemm": "torch.nn.functional.linear", "embedding": "torch.nn.functional.embedding"})

_ENGINE: dict[str, KernelSet] = {}


def _configure_dynamo() -> None:
    """Token counts dynamic, every other size static (each model's hidden size gets its own kernel).

    Why: Inductor tunes a kernel's launch configuration on its first call; a kernel compiled with every
    size symbolic keeps the configuration tuned for the first hidden size it saw. Measured on an H100
    (2026-11-26): the add+RMSNorm kernel tuned on hidden 64 took 38-50 µs per call at hidden 4096 and 2-1024
    tokens, where the kernel compiled for hidden 4096 takes a few µs. So: no automatic dynamic shapes,
    dim 0 (tokens) marked dynamic at each call (`_compiled`), and room in the compile cache for one
    variant per (hidden size, tokens = 1 or more, dtype) of the models profiled in one process."""
    import torch._dynamo.config as dynamo_config
    dynamo_config.automatic_dynamic_shapes = False
    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):
        if hasattr(dynamo_config, name):
            setattr(dynamo_config, name, max(getattr(dynamo_config, name), 256))


def _compiled(fn: Callable) -> Callable:
    """`fn` compiled by Inductor with the token dim (dim 0 of every tensor argument of rank >= 2) dynamic
    and all other sizes static (`_configure_dynamo`)."""
    _configure_dynamo()
    compiled = torch.compile(fn, fullgraph=True)
    mark = torch._dynamo.maybe_mark_dynamic

    def call(*args):
        for arg in args:
            if isinstance(arg, torch.Tensor) and arg.dim() >= 2:
                mark(arg, 0)
        return compiled(*args)
    call.__name__ = getattr(fn, "__name__", "compiled")
    return call


def engine_kernels(device: torch.device | str, compile_fused: bool = True) -> KernelSet:
    """The engine-grade set for `device` (built once per device; see the module docstring)."""
    device = torch.device(device)
    key = f"{device}:{compile_fused}"
    found = _ENGINE.get(key)
    if found is None:
        base = KernelSet("engine", K.add_rms_norm, K.swiglu, K.apply_rope, attention_decode_batched,
                         engine_sample_tokens,
                         {**REFERENCE.kernels, "attn_decode": "sdpa batched: GQA (q = 1), pack-GQA with mask (q > 1)",
                          "sampling": "argmax / exponential race (vLLM V1)"})
        with torch.inference_mode():   # compiled for inference mode, where the model and benches run
            found = verify_engine_kernels(base, device) if compile_fused else base
        _ENGINE[key] = found
    return found


def verify_engine_kernels(base: KernelSet, device: torch.device, dtype: torch.dtype | None = None) -> KernelSet:
    """`base` with add+RMSNorm, SiLU·mul and RoPE compiled, each kept only if it compiles and matches the
    reference on random inputs (relative error < 2e-2 in bf16, 1e-4 in fp32); its batched decode attention
    kept only if it matches the per-sequence reference the same way (else the reference loop runs)."""
    dtype = dtype or (torch.bfloat16 if device.type == "cuda" else torch.float32)
    tol = 2e-2 if dtype in (torch.bfloat16, torch.float16) else 1e-4
    gen = torch.Generator(device="cpu").manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=gen).to(device=device, dtype=dtype)

    tokens, hidden, heads, head_dim = 5, 64, 3, 16
    x, residual, weight = rand(tokens, hidden), rand(tokens, hidden), rand(hidden)
    gate_up = rand(tokens, 2 * hidden)
    rope_in = rand(tokens, heads, head_dim)
    cos, sin = K.rope_tables(torch.arange(tokens, device=device), head_dim, dtype=dtype)
    cases = {
        "norm": ("add_rms_norm", (x, residual, weight)),
        "activation": ("swiglu", (gate_up[:, :hidden], gate_up[:, hidden:])),
        "rope": ("apply_rope", (rope_in, cos, sin)),
    }
    chosen, kernels = {}, dict(base.kernels)
    for kind, (attr, args) in cases.items():
        reference = getattr(K, attr)
        try:
            compiled = _compiled(reference)
            got, want = compiled(*args), reference(*args)
            got = got if isinstance(got, tuple) else (got,)
            want = want if isinstance(want, tuple) else (want,)
            ok = all(torch.linalg.vector_norm((g - w).float()) <= tol * torch.linalg.vector_norm(w.float()) + 1e-6
                     for g, w in zip(got, want))
            if not ok:
                raise RuntimeError("compiled kernel does not match the reference")
            chosen[attr] = compiled
            kernels[kind] = f"torch.compile fused ({attr})"
        except Exception as exc:  # noqa: BLE001 — any compile failure falls back to the reference, recorded
            kernels[kind] = f"eager {attr} (torch.compile failed: {type(exc).__name__}: {str(exc)[:120]})"
    if base.attention_decode is not K.attention_decode:
        try:
            worst = _attention_error(base.attention_decode, device, dtype, gen)
            if not worst <= tol:
                raise RuntimeError(f"relative error {worst:.2e} against the per-sequence reference")
            kernels["attn_decode"] += f"; matches the per-sequence reference (rel. error {worst:.1e})"
        except Exception as exc:  # noqa: BLE001 — fall back to the validated loop, recorded
            chosen["attention_decode"] = K.attention_decode
            kernels["attn_decode"] = f"sdpa per sequence (batched failed: {type(exc).__name__}: {str(exc)[:120]})"
    return replace(base, kernels=kernels, **chosen)


def _attention_error(batched: Callable, device: torch.device, dtype: torch.dtype, gen: torch.Generator) -> float:
    """Largest relative error of `batched` against `kernels.attention_decode` over decoding at equal
    contexts, verification over ragged contexts and a tree, on random inputs."""
    heads, kv_heads, head_dim, slots, length = 8, 2, 16, 6, 64
    worst = 0.0
    for seqs, q, cached, tree in ((3, 1, [20, 20, 20], False), (3, 4, [5, 17, 30], False), (2, 4, [9, 40], True)):
        cache = torch.randn(2, slots, kv_heads, length, head_dim, generator=gen).to(device=device, dtype=dtype)
        ref_cache = cache.clone()
        query = torch.randn(seqs, q, heads, head_dim, generator=gen).to(device=device, dtype=dtype)
        new = torch.randn(2, seqs, q, kv_heads, head_dim, generator=gen).to(device=device, dtype=dtype)
        mask = None
        if tree:
            mask = torch.eye(q, dtype=torch.bool, device=device)
            mask[:, 0] = True                              # a star: every node's parent is the root
        used = list(range(1, seqs + 1))
        got = batched(query, new[0], new[1], cache[0], cache[1], used, cached, mask)
        want = K.attention_decode(query, new[0], new[1], ref_cache[0], ref_cache[1], used, cached, mask)
        err = float(torch.linalg.vector_norm((got - want).float()) / torch.linalg.vector_norm(want.float()))
        worst = max(worst, err, float(torch.linalg.vector_norm((cache - ref_cache).float())))
    return worst


def kernel_set_for(device: torch.device | str, engine: bool | None = None) -> KernelSet:
    """The set a model on `device` runs: the engine set on CUDA, the validated reference elsewhere
    (`engine` overrides, e.g. to test the engine set on CPU)."""
    device = torch.device(device)
    use_engine = device.type == "cuda" if engine is None else engine
    return engine_kernels(device) if use_engine else REFERENCE
