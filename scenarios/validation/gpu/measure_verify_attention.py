"""Verify-pass attention on an engine's kernel: FlashInfer's batch prefill over a paged KV cache, run on a real
GPU for q = 1…64 query tokens per request (held-out data for draftsim's verify rule, profiles/measured/verify.py).

    python -m scenarios.validation.gpu.measure_verify_attention --out DIR [--backends fa3,fa2]
        [--layout llama-3-8b | qwen2.5-0.5b] [--mask causal | tree] [--quick]

Why this kernel. The engines verify a speculative batch as one varlen/paged attention call over the cached
context plus the q new tokens per request: vLLM's FlashAttention-3 on Hopper, SGLang's FlashInfer or FA3
backends. FlashInfer's `BatchPrefillWithPagedKVCacheWrapper` has both an FA3-style Hopper backend (`fa3`) and
its FA2-style one (`fa2`), is installable from PyPI as wheels, and JIT-compiles its kernels with the
machine's nvcc — so it is the engines' kind of kernel where torch's SDPA is not (torch's FlashAttention-2
does not pack the GQA group for q > 1: profiles/data/gpu-forwards/h100-sxm-2026-11-26/README.md).

What runs, per point (layout, batch B, context c, q): B requests, each with c cached tokens plus its q new
tokens in a paged KV cache (page `PAGE_TOKENS`, the KV of the q tokens written before attention, as vLLM
does), bf16, and a mask over the q tokens: `causal` (bottom-right: a chain verify) or `tree` (a binary
token tree in BFS order, each node seeing the context, its ancestors and itself: FlashInfer's custom mask,
as a tree verify applies it inside the packed call). The call is replayed from a CUDA
graph and timed per call as draftsim's profiler times kernels (profiles.profiler.timing.time_graph: N
back-to-back calls per graph, a spin kernel before each timed replay); KV caches rotate over enough copies
to exceed twice the L2, so the KV streams from HBM as it does when 32 layers each read their own cache.

Writes `attention.csv` (one row per point and backend, with the error text of a point that failed),
`fingerprint.json` (versions, GPU, this file's sha256, the command) and prints per-backend tables of the
time at q over the time at q = 1.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# (query heads, KV heads, head dim) per model layout measured
LAYOUTS = {"llama-3-8b": (32, 8, 128), "qwen2.5-0.5b": (14, 2, 64)}
MASKS = ("causal", "tree")
BATCHES = (1, 8, 32, 128)
CONTEXTS = (512, 2048, 8192)
QUERIES = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)
QUICK = {"batches": (1, 8), "contexts": (512,), "queries": (1, 4, 16)}
PAGE_TOKENS = 16             # vLLM's default KV block
WORKSPACE_BYTES = 512 * 2 ** 20
FIELDS = ("backend", "layout", "mask", "heads", "kv_heads", "head_dim", "batch", "ctx", "q", "page_tokens", "kv_copies",
          "graph_calls", "median_s", "p10_s", "p90_s", "reps", "error")


@dataclass(frozen=True)
class PagedBatch:
    """Index arrays of B requests with `ctx + q` KV tokens each in pages of `page` tokens (FlashInfer's paged
    layout: request r owns pages kv_indptr[r] .. kv_indptr[r + 1] - 1, the last holding last_page_len[r])."""

    qo_indptr: list[int]
    kv_indptr: list[int]
    kv_indices: list[int]
    last_page_len: list[int]
    pages: int


def paged_batch(batch: int, ctx: int, q: int, page: int) -> PagedBatch:
    """The paged layout of `batch` requests of `ctx` cached + `q` new tokens each."""
    if min(batch, q, page) < 1 or ctx < 0:
        raise ValueError(f"need batch, q, page >= 1 and ctx >= 0, got {batch}, {q}, {page}, {ctx}")
    kv_tokens = ctx + q
    per_request = math.ceil(kv_tokens / page)
    return PagedBatch(qo_indptr=[r * q for r in range(batch + 1)],
                      kv_indptr=[r * per_request for r in range(batch + 1)],
                      kv_indices=list(range(batch * per_request)),
                      last_page_len=[kv_tokens - (per_request - 1) * page] * batch,
                      pages=batch * per_request)


def custom_mask(batch: int, ctx: int, q: int, device="cpu"):
    """FlashInfer's flattened custom mask of the batch (a bool tensor): per request, row-major (q, ctx + q) —
    every context token visible, then a binary tree in BFS order among the q tokens (each node sees its
    ancestors and itself: scenarios.validation.gpu.measure_forwards.verify_mask) — requests one after the
    other."""
    import torch

    from scenarios.validation.gpu.measure_forwards import verify_mask

    one = verify_mask("tree", q, ctx, device) if q > 1 else torch.ones(1, ctx + 1, dtype=torch.bool, device=device)
    return one.flatten().repeat(batch)


def points(quick: bool) -> list[tuple[int, int, int]]:
    """(batch, ctx, q) in measuring order: per (batch, ctx) one KV cache, every q on it."""
    grid = QUICK if quick else {"batches": BATCHES, "contexts": CONTEXTS, "queries": QUERIES}
    return [(b, c, q) for b in grid["batches"] for c in grid["contexts"] for q in grid["queries"]]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def measure_backend(backend: str, layout: str, mask: str, quick: bool, writer, handle, log) -> None:
    import torch
    import flashinfer

    from profiles.profiler.timing import GPU_TIMING, last_level_cache_bytes, rotation_copies, time_graph

    heads, kv_heads, head_dim = LAYOUTS[layout]
    device = torch.device("cuda")
    workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=device)
    wrapper = flashinfer.BatchPrefillWithPagedKVCacheWrapper(workspace, "NHD", backend=backend)
    llc = last_level_cache_bytes(device)
    caches, cache_key = [], None
    grid = points(quick)
    largest_q = max(q for _, _, q in grid)
    for batch, ctx, q_tokens in grid:
        row = dict(backend=backend, layout=layout, mask=mask, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                   batch=batch, ctx=ctx, q=q_tokens, page_tokens=PAGE_TOKENS, kv_copies="", graph_calls="", median_s="",
                   p10_s="", p90_s="", reps="", error="")
        started = time.perf_counter()
        try:
            if cache_key != (batch, ctx):   # one cache per (batch, ctx), sized for the largest q
                paged = paged_batch(batch, ctx, largest_q, PAGE_TOKENS)
                caches.clear()
                torch.cuda.empty_cache()
                one = paged.pages * 2 * PAGE_TOKENS * kv_heads * head_dim * 2
                copies = rotation_copies(one, llc, max_total_bytes=16 * 2 ** 30)
                caches = [torch.randn(paged.pages, 2, PAGE_TOKENS, kv_heads, head_dim, device=device,
                                      dtype=torch.bfloat16) for _ in range(copies)]
                cache_key = (batch, ctx)
            layout_now = paged_batch(batch, ctx, q_tokens, PAGE_TOKENS)
            as_tensor = lambda values: torch.tensor(values, dtype=torch.int32, device=device)  # noqa: E731
            masking = dict(causal=True) if mask == "causal" else dict(
                causal=False, custom_mask=custom_mask(batch, ctx, q_tokens, device))
            wrapper.plan(as_tensor(layout_now.qo_indptr), as_tensor(layout_now.kv_indptr),
                         as_tensor(layout_now.kv_indices), as_tensor(layout_now.last_page_len), heads, kv_heads,
                         head_dim, PAGE_TOKENS, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16, **masking)
            query = torch.randn(batch * q_tokens, heads, head_dim, device=device, dtype=torch.bfloat16)
            result, calls = time_graph(lambda i: wrapper.run(query, caches[i % len(caches)]), device, GPU_TIMING)
            row.update(kv_copies=len(caches), graph_calls=calls, median_s=f"{result.median_s:.6e}",
                       p10_s=f"{result.p10_s:.6e}", p90_s=f"{result.p90_s:.6e}", reps=result.reps)
        except Exception as exc:   # a point that fails is recorded, the others still run
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        writer.writerow(row)
        handle.flush()
        log(f"{backend} B={batch} ctx={ctx} q={q_tokens}: "
            + (f"{float(row['median_s']) * 1e6:.1f} us" if row["median_s"] else row["error"])
            + f" ({time.perf_counter() - started:.1f} s)")


def ratio_table(rows: list[dict], backend: str) -> str:
    """Per (batch, ctx): the time at each q over the time at q = 1, for one backend."""
    done = [r for r in rows if r["backend"] == backend and r["median_s"]]
    queries = sorted({int(r["q"]) for r in done})
    lines = [f"{backend}: time at q / time at q = 1 (q = 1 in us)",
             f"{'B':>4s} {'ctx':>5s} {'q=1 us':>8s} " + " ".join(f"{q:>5d}" for q in queries)]
    for batch, ctx in sorted({(int(r["batch"]), int(r["ctx"])) for r in done}):
        at = {int(r["q"]): float(r["median_s"]) for r in done if int(r["batch"]) == batch and int(r["ctx"]) == ctx}
        base = at.get(1)
        cells = " ".join(f"{at[q] / base:5.2f}" if base and q in at else f"{'-':>5s}" for q in queries)
        lines.append(f"{batch:4d} {ctx:5d} {base * 1e6 if base else float('nan'):8.1f} {cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for attention.csv and fingerprint.json")
    parser.add_argument("--backends", default="fa3,fa2", help="FlashInfer prefill backends, in order (fa3, fa2)")
    parser.add_argument("--layout", default="llama-3-8b", choices=sorted(LAYOUTS))
    parser.add_argument("--mask", default="causal", choices=MASKS, help="causal: a chain verify; tree: a binary tree")
    parser.add_argument("--quick", action="store_true", help="a few points only (a smoke test)")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - {"fa3", "fa2"})
    if unknown or not backends:
        print(f"measure_verify_attention: error: --backends: {','.join(unknown) or 'none'}; allowed: fa3, fa2",
              file=sys.stderr)
        return 2
    import torch
    if not torch.cuda.is_available():
        print("measure_verify_attention: error: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    import flashinfer

    args.out.mkdir(parents=True, exist_ok=True)
    log = lambda line: print(line, flush=True)  # noqa: E731
    fingerprint = {
        "command": " ".join(sys.argv), "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
        "flashinfer": getattr(flashinfer, "__version__", "?"), "python": platform.python_version(),
        "script_sha256": _sha256(Path(__file__)), "page_tokens": PAGE_TOKENS, "layout": args.layout,
        "layout_heads_kv_heads_head_dim": LAYOUTS[args.layout], "mask": args.mask,
        "timing": "profiles.profiler.timing.time_graph (CUDA graph of N calls, spin kernel before each timed "
                  "replay, GPU_TIMING); KV caches rotated over copies exceeding 2x L2",
        "backend_s": {}}   # per backend: its kernels' JIT compile plus every point measured
    with (args.out / "attention.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        for backend in backends:
            started = time.perf_counter()
            measure_backend(backend, args.layout, args.mask, args.quick, writer, handle, log)
            fingerprint["backend_s"][backend] = round(time.perf_counter() - started, 1)
            log(f"{backend}: done in {fingerprint['backend_s'][backend]} s")
    fingerprint["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (args.out / "fingerprint.json").write_text(json.dumps(fingerprint, indent=1) + "\n")
    with (args.out / "attention.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for backend in backends:
        log(ratio_table(rows, backend))
    return 0


if __name__ == "__main__":
    sys.exit(main())
