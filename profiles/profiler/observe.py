"""Which device kernels actually ran: one call of representative benches under `torch.profiler`.

A kernel set names the function each op kind calls (`KernelSet.kernels`), but for SDPA torch itself picks
the kernel (flash, cuDNN, memory-efficient, math) from the inputs. So on CUDA the profiler runs one call of
a few representative points of the first model under torch.profiler and records, per point, the device
kernels that took the most time; the fingerprint keeps them (`observed_kernels`).
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from models.spec import ModelSpec
from models.step import chunk_attention_pairs

TOP = 3


def representative_points(spec: ModelSpec) -> dict[str, tuple[str, dict[str, float]]]:
    """label -> (op kind, bench dims) of a few points of `spec` (batch 32 at 2,048 context etc.)."""
    h, kv, d = float(spec.num_heads), float(spec.num_kv_heads), float(spec.head_dim)
    decode = {"heads": h, "kv_heads": kv, "head_dim": d, "seqs": 32.0, "ctx_per_seq": 2048.0, "tree": 0.0}
    return {
        "attn_decode q1 b32 x 2k": ("attn_decode", {**decode, "q_per_seq": 1.0}),
        "attn_decode verify q4 b32 x 2k": ("attn_decode", {**decode, "q_per_seq": 4.0}),
        "attn_decode tree q8 b16 x 2k": ("attn_decode", {**decode, "q_per_seq": 8.0, "seqs": 16.0, "tree": 1.0}),
        "attn_prefill 2k": ("attn_prefill", {"heads": h, "kv_heads": kv, "head_dim": d, "seqs": 1.0,
                                             "q_tokens": 2048.0, "attn_pairs": float(chunk_attention_pairs(2048, 0))}),
        "norm 32 tokens": ("norm", {"tokens": 32.0, "hidden": float(spec.hidden_size)}),
        "activation 32 tokens": ("activation", {"tokens": 32.0, "width": float(spec.intermediate_size)}),
        "rope 32 tokens": ("rope", {"tokens": 32.0, "heads": h + kv, "head_dim": d}),
        "sampling random 32": ("sampling", {"tokens": 32.0, "vocab": float(spec.vocab_size), "greedy": 0.0}),
    }


def kernel_names(call: Callable[[int], object], device: torch.device, top: int = TOP) -> list[str]:
    """Names of the `top` device kernels by device time in one call of `call` (after one warm-up)."""
    call(0)
    totals: dict[str, float] = {}
    for name, took, _ in kernel_events(lambda: call(1), device):
        totals[name] = totals.get(name, 0.0) + took
    return [name[:120] for name, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:top]]


def observed_kernels(spec: ModelSpec, build: Callable[[str, Mapping[str, float]], Callable[[int], object]],
                     device: torch.device) -> dict[str, list[str] | str]:
    """label -> top kernel names (or the error that stopped the observation) for `representative_points`."""
    found: dict[str, list[str] | str] = {}
    for label, (kind, dims) in representative_points(spec).items():
        try:
            found[label] = kernel_names(build(kind, dims), device)
        except Exception as exc:  # noqa: BLE001 — an observation never stops a profile; the error is recorded
            found[label] = f"not observed: {type(exc).__name__}: {str(exc)[:120]}"
    return found


# Kernel name -> op kind, first match wins (attention before GEMM: cuDNN's attention kernels say "sm90" too).
CATEGORIES = (
    ("attention", ("sdpa", "flash", "fmha", "attention", "attn")),
    ("gemm", ("gemm", "nvjet", "cutlass", "xmma", "cublas", "splitk", "gemv", "sm90_", "sm80_")),
    ("norm", ("rsqrt",)),
    ("activation", ("silu",)),
    ("rope", ("cat_mul_neg", "neg_slice")),
    ("sampling", ("softmax", "argmax", "exponential")),
    ("copy", ("copy", "memcpy", "memset", "index", "scatter", "gather", "cat")),
)


def categorize(name: str) -> str:
    low = name.lower()
    for kind, keys in CATEGORIES:
        if any(k in low for k in keys):
            return kind
    return "other"


def kernel_events(run: Callable[[], object], device: torch.device) -> list[tuple[str, float, float]]:
    """(name, device seconds, start in seconds on the device's timeline) of every kernel of one call of
    `run`, from torch.profiler, in start order."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize(device)
    events = []
    for event in prof.events():
        if str(getattr(event, "device_type", "")).endswith("CUDA"):
            took = float(getattr(event, "device_time", None) or getattr(event, "cuda_time", 0.0) or 0.0) * 1e-6
            start = getattr(getattr(event, "time_range", None), "start", None)
            events.append((event.name, took, float(start) * 1e-6 if start is not None else float("nan")))
    return sorted(events, key=lambda e: e[2])


def kernel_breakdown(events: list[tuple[str, float, float]]) -> dict[str, float]:
    """Device seconds per kernel category (`CATEGORIES`) of `kernel_events`."""
    totals: dict[str, float] = {}
    for name, took, _ in events:
        kind = categorize(name)
        totals[kind] = totals.get(kind, 0.0) + took
    return {k: round(v, 9) for k, v in sorted(totals.items())}


def kernel_summary(events: list[tuple[str, float, float]], top: int = 40) -> dict:
    """What a forward's kernels were, to see where a check's error lies: their number, the device
    timeline's span from the first kernel's start to the last one's end and its idle part (span − Σ kernel
    time: the gaps between kernels, which no per-op profile prices), kernels per category, and the `top`
    kernel names by device time with their calls and seconds."""
    by_name: dict[str, list] = {}
    counts: dict[str, int] = {}
    for name, took, _ in events:
        entry = by_name.setdefault(name[:120], [0, 0.0])
        entry[0] += 1
        entry[1] += took
        kind = categorize(name)
        counts[kind] = counts.get(kind, 0) + 1
    busy = sum(took for _, took, _ in events)
    span = 0.0
    if events:
        span = max(start + took for _, took, start in events) - min(start for _, _, start in events)
    names = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]
    return {"kernels": len(events), "busy_s": round(busy, 9), "span_s": round(span, 9),
            "idle_s": round(span - busy, 9), "kernels_by_kind": dict(sorted(counts.items())),
            "top": [[name, calls, round(took, 9)] for name, (calls, took) in names]}
