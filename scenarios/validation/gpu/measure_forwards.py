"""Whole decode/verify forwards, attention at q > 1, eager launch overhead and board power on a real GPU.

A standalone measurement (torch + numpy only, so it runs on a bare GPU machine without draftsim's other
dependencies). It produces the held-out GPU data that draftsim's pricing is checked against, never fitted to:

- ``forwards.csv``: one Llama-style decoder forward of B sequences x q new tokens each at context c
  (q = 1 is a plain decode step, q > 1 a chain or tree verify pass), replayed in a CUDA graph, as an engine
  runs it: fused residual-add + RMSNorm, SiLU x mul and RoPE (torch.compile, dynamic shapes), QKV / gate-up
  fused GEMMs, FlashAttention (or cuDNN / mem-efficient, recorded) through SDPA with the lower-right causal
  bias for chains, an explicit mask for trees, the LM head over every verified token and greedy argmax.
  Components are replayed in their own graphs: attention over all layers' caches, the per-layer dense part,
  and LM head + sampling. Weights are random bf16 (timings do not depend on the values).
- ``eager.csv``: the same decode forward launched eagerly (no graph), its kernel count from torch.profiler,
  and (eager - graph) / kernels: the host launch overhead per kernel on this host.
- ``power.csv``: board power (NVML, 20 ms samples; median of each phase's steady second half) at idle, in a
  back-to-back bf16 GEMM loop (compute-bound), a device-to-device copy loop (memory-bound), and graph-replayed
  decode and verify forwards, with the achieved FLOP/s and bytes/s of each phase.
- ``host.json``: the host CPU's single-thread speed on two fixed micro-benchmarks (pure-Python loop, tiny
  numpy ops) so engine host time can be related across hosts.
- ``fingerprint.json``: device, driver, torch/CUDA versions, which attention backend ran, fusion, timing
  method, date, command.

Timing method: each measured region is captured once in a CUDA graph as 1..8 back-to-back
copies of the region (one replay lasting >= 2 ms); the graph is replayed between CUDA events; time per region =
median over reps of (elapsed / copies). The KV caches and weights exceed L2 many times over, so operands
come from HBM as in a real step. Usage (on the GPU machine): ``python3 measure_forwards.py --out DIR``;
``--device cpu --tiny`` runs every code path on a tiny model on the CPU (no graphs, no power) as a dry run.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import os
import platform
import statistics
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Shape:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int


LLAMA3_8B = Shape("llama-3-8b", 32, 4096, 32, 8, 128, 14336, 128256)
QWEN25_05B = Shape("qwen2.5-0.5b", 24, 896, 14, 2, 64, 4864, 151936)
TINY = Shape("tiny", 2, 64, 4, 2, 16, 128, 256)


# ---------------------------------------------------------------------------------------------------------
# Fused elementwise ops (what engines fuse: vLLM's fused_add_rms_norm, silu_and_mul, rotary_embedding).
def _add_rms_norm(x, residual, weight):
    summed = x + residual
    s32 = summed.float()
    normed = s32 * torch.rsqrt(s32.pow(2).mean(-1, keepdim=True) + 1e-6)
    return normed.to(x.dtype) * weight, summed


def _silu_mul(gate_up):
    half = gate_up.shape[-1] // 2
    return F.silu(gate_up[..., :half]) * gate_up[..., half:]


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Ops:
    """The elementwise ops, compiled with dynamic shapes once (fused Triton kernels) where possible."""

    def __init__(self, compile_ops: bool):
        self.fusion = "none (eager elementwise)"
        self.add_rms_norm, self.silu_mul, self.rope = _add_rms_norm, _silu_mul, _rope
        if compile_ops:
            try:
                self.add_rms_norm = torch.compile(_add_rms_norm, dynamic=True)
                self.silu_mul = torch.compile(_silu_mul, dynamic=True)
                self.rope = torch.compile(_rope, dynamic=True)
                self.fusion = "torch.compile(dynamic=True) of add+rmsnorm, silu*mul, rope"
            except Exception as exc:  # noqa: BLE001 - recorded, measurement goes on unfused
                self.fusion = f"none (compile failed: {type(exc).__name__})"


# ---------------------------------------------------------------------------------------------------------
class Model:
    """Random-weight Llama-style decoder (GQA, SwiGLU, untied LM head) with one KV cache per layer."""

    def __init__(self, shape: Shape, device, dtype, ops: Ops):
        self.s, self.device, self.dtype, self.ops = shape, device, dtype, ops
        g = torch.Generator(device=device).manual_seed(0)
        h, d = shape.hidden, shape.head_dim
        qkv_out = (shape.heads + 2 * shape.kv_heads) * d

        def w(rows, cols):
            return (torch.randn(rows, cols, generator=g, device=device, dtype=dtype) / math.sqrt(cols))

        self.embed = w(shape.vocab, h)
        self.layers = [dict(qkv=w(qkv_out, h), o=w(h, shape.heads * d), gate_up=w(2 * shape.ffn, h),
                            down=w(h, shape.ffn), n1=torch.ones(h, device=device, dtype=dtype),
                            n2=torch.ones(h, device=device, dtype=dtype)) for _ in range(shape.layers)]
        self.final_norm = torch.ones(h, device=device, dtype=dtype)
        self.lm_head = w(shape.vocab, h)
        self.k_cache: list[torch.Tensor] = []
        self.v_cache: list[torch.Tensor] = []

    def weight_bytes(self) -> int:
        per_layer = sum(t.numel() for t in self.layers[0].values())
        return (per_layer * self.s.layers + self.embed.numel() + self.lm_head.numel()) * 2

    def alloc_cache(self, batch: int, max_ctx: int) -> None:
        self.k_cache = self.v_cache = []
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        shp = (batch, self.s.kv_heads, max_ctx, self.s.head_dim)
        self.k_cache = [torch.randn(shp, device=self.device, dtype=self.dtype) for _ in range(self.s.layers)]
        self.v_cache = [torch.randn(shp, device=self.device, dtype=self.dtype) for _ in range(self.s.layers)]

    # --- pieces ---------------------------------------------------------------------------------------
    def attention(self, layer: int, q, k, v, ctx: int, mask, backend) -> torch.Tensor:
        """q: [B, H, q, d]; k, v: [B, KV, q, d] new tokens written at ctx..ctx+q-1, then attention over
        ctx + q keys (mask: None for q = 1, a lower-right causal bias for chains, a bool mask for trees)."""
        b, _, qn, _ = q.shape
        kc, vc = self.k_cache[layer], self.v_cache[layer]
        kc[:, :, ctx:ctx + qn].copy_(k)
        vc[:, :, ctx:ctx + qn].copy_(v)
        keys, values = kc[:, :, :ctx + qn], vc[:, :, :ctx + qn]
        return backend.sdpa(q, keys, values, mask)

    def layer_dense_in(self, layer: int, x, residual, cos, sin):
        s, L = self.s, self.layers[layer]
        h, res = self.ops.add_rms_norm(x, residual, L["n1"])
        qkv = F.linear(h, L["qkv"]).view(x.shape[0], s.heads + 2 * s.kv_heads, s.head_dim)
        qk = self.ops.rope(qkv[:, :s.heads + s.kv_heads], cos[:, None, :], sin[:, None, :])
        return qk, qkv[:, s.heads + s.kv_heads:], res

    def layer_dense_out(self, layer: int, attn, res):
        L = self.layers[layer]
        o = F.linear(attn, L["o"])
        h, res = self.ops.add_rms_norm(o, res, L["n2"])
        return F.linear(self.ops.silu_mul(F.linear(h, L["gate_up"])), L["down"]), res

    def forward(self, ids, cos, sin, batch: int, qn: int, ctx: int, mask, backend):
        """ids: [B*q]; returns greedy next tokens [B*q] (the verify pass samples every verified token)."""
        s = self.s
        x = F.embedding(ids, self.embed)
        residual = torch.zeros_like(x)
        for i in range(s.layers):
            qk, v, residual = self.layer_dense_in(i, x, residual, cos, sin)
            q = qk[:, :s.heads].reshape(batch, qn, s.heads, s.head_dim).transpose(1, 2)
            k = qk[:, s.heads:].reshape(batch, qn, s.kv_heads, s.head_dim).transpose(1, 2)
            vv = v.reshape(batch, qn, s.kv_heads, s.head_dim).transpose(1, 2)
            attn = self.attention(i, q, k, vv, ctx, mask, backend)
            attn = attn.transpose(1, 2).reshape(batch * qn, s.heads * s.head_dim)
            x, residual = self.layer_dense_out(i, attn, residual)
        h, _ = self.ops.add_rms_norm(x, residual, self.final_norm)
        return self.sample(h)

    def sample(self, h):
        return torch.argmax(F.linear(h, self.lm_head), dim=-1)


class Backend:
    """Fused attention through SDPA with an explicit backend order; `used` records what ran per mask kind.

    - q = 1 (plain decode): SDPA with GQA (flash, else cuDNN, else mem-efficient).
    - chain (q > 1): the lower-right causal bias (torch.nn.attention.bias.causal_lower_right), which runs
      FlashAttention's causal kernel (bottom-right aligned for q < keys) with GQA.
    - tree: GQA packing as FlashInfer and FA3 do it: the `group` query heads that share one KV head are
      stacked as `group * q` query rows of that KV head, so the KV is read once per KV head and the tree
      mask (repeated `group` times down the rows) applies per row; run by cuDNN or mem-efficient SDPA.
    """

    def __init__(self, device):
        self.device = device
        self.used: dict[str, str] = {}
        self._chosen: dict[str, str] = {}
        self.errors: dict[str, str] = {}

    def _run(self, kind, q, k, v, mask=None, gqa=True):
        """SDPA on the first fused backend that takes these inputs (remembered per kind); None if none does."""
        if self.device.type != "cuda":
            self.used.setdefault(kind, "math (cpu)")
            if _is_bias(mask):
                mask = _materialize(q, k)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
        from torch.nn.attention import SDPBackend, sdpa_kernel
        order = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                 "efficient": SDPBackend.EFFICIENT_ATTENTION}
        chosen = self._chosen.get(kind)
        for name in ([chosen] if chosen else list(order)):
            if mask is not None and not _is_bias(mask) and name == "flash":
                continue  # flash takes no arbitrary mask
            try:
                with sdpa_kernel([order[name]]):
                    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
            except Exception as exc:  # noqa: BLE001 - try the next fused backend
                self.errors[f"{kind}/{name}"] = str(exc).splitlines()[0][:200]
                continue
            self._chosen[kind] = name
            self.used[kind] = self.used.get(kind) or name
            return out
        return None

    def sdpa(self, q, k, v, mask):
        """q: [B, H, q, d]; k, v: [B, KV, keys, d]; mask: None | CausalBias | bool [q, keys] tree mask."""
        if mask is None:
            out = self._run("decode", q, k, v)
            return out if out is not None else self.packed(q, k, v, None, "decode_packed")
        if _is_bias(mask):
            out = self._run("chain", q, k, v, mask)
            return out if out is not None else self.packed(q, k, v, _materialize(q, k), "chain_packed")
        return self.packed(q, k, v, mask, "tree")

    def packed(self, q, k, v, mask, kind="tree"):
        b, heads, qn, d = q.shape
        kv = k.shape[1]
        group = heads // kv
        rows = q.reshape(b, kv, group * qn, d)
        out = self._run(kind, rows, k, v, None if mask is None else mask.repeat(group, 1), gqa=False)
        if out is None:
            raise RuntimeError(f"no fused SDPA backend ran for {kind}: {self.errors}")
        self.used.setdefault({"decode_packed": "decode", "chain_packed": "chain"}.get(kind, kind), kind)
        return out.reshape(b, heads, qn, d)


def _is_bias(mask) -> bool:
    from torch.nn.attention.bias import CausalBias
    return isinstance(mask, CausalBias)


def _materialize(q, k):
    qn, kn = q.shape[-2], k.shape[-2]
    return torch.ones(qn, kn, dtype=torch.bool, device=q.device).tril(diagonal=kn - qn)


def verify_mask(kind: str, qn: int, ctx: int, device):
    """None (q = 1), the lower-right causal bias (chain), or a bool [q, ctx + q] tree mask: a binary-ish
    tree of q nodes in BFS order, node i's parent (i - 1) // 2 (each node sees its ancestors and itself)."""
    if qn == 1:
        return None
    if kind == "chain":
        from torch.nn.attention.bias import causal_lower_right
        return causal_lower_right(qn, ctx + qn)
    anc = torch.zeros(qn, qn, dtype=torch.bool)
    for i in range(qn):
        j = i
        while True:
            anc[i, j] = True
            if j == 0:
                break
            j = (j - 1) // 2
    return torch.cat((torch.ones(qn, ctx, dtype=torch.bool), anc), dim=1).to(device)


# ---------------------------------------------------------------------------------------------------------
class Timer:
    """CUDA-graph timing of a region (see the module docstring); wall clock on CPU (dry runs only).

    Copies per graph: enough that one replay lasts >= `MIN_REPLAY_S` (1..MAX_COPIES); replays: enough for
    `TARGET_S` of timing, at least `min_reps`."""

    MIN_REPLAY_S, MAX_COPIES, TARGET_S = 2e-3, 8, 0.15

    def __init__(self, device, min_reps: int):
        self.device, self.min_reps = device, min_reps

    def time(self, region) -> float:
        if self.device.type != "cuda":
            region()
            t0 = time.perf_counter()
            region()
            return time.perf_counter() - t0
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                region()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            region()
            end.record(stream)
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        single_s = max(start.elapsed_time(end) / 1e3, 1e-7)
        copies = int(min(self.MAX_COPIES, max(1, math.ceil(self.MIN_REPLAY_S / single_s))))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(copies):
                region()
        graph.replay()
        torch.cuda.synchronize()
        reps = max(self.min_reps, min(50, int(self.TARGET_S / (single_s * copies))))
        samples = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3 / copies)
        del graph
        return statistics.median(samples)


def rope_tables(positions, head_dim, dtype):
    inv = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim))
    ang = positions.float()[:, None] * inv[None, :]
    ang = torch.cat((ang, ang), dim=-1)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def measure_grid(model: Model, backend: Backend, timer: Timer, grid, writer, deadline: float, log) -> None:
    """forwards.csv rows for every (batch, ctx, q, mask kind) of `grid` that fits before `deadline`."""
    s, dev = model.s, model.device
    by_cache: dict[tuple[int, int], list] = {}
    for batch, ctx, qn, kind in grid:
        by_cache.setdefault((batch, ctx), []).append((qn, kind))
    for (batch, ctx), cases in by_cache.items():
        max_q = max(q for q, _ in cases)
        try:
            model.alloc_cache(batch, ctx + max_q)
        except torch.OutOfMemoryError:
            log(f"skip batch {batch} ctx {ctx}: KV cache does not fit")
            continue
        for qn, kind in cases:
            if time.monotonic() > deadline:
                log("grid deadline reached; remaining shapes skipped")
                return
            tokens = batch * qn
            ids = torch.randint(0, s.vocab, (tokens,), device=dev)
            pos = (torch.arange(qn, device=dev) + ctx).repeat(batch)
            cos, sin = rope_tables(pos, s.head_dim, model.dtype)
            mask = verify_mask(kind, qn, ctx, dev)
            x = torch.randn(tokens, s.hidden, device=dev, dtype=model.dtype)
            qh = torch.randn(batch, s.heads, qn, s.head_dim, device=dev, dtype=model.dtype)
            kh = torch.randn(batch, s.kv_heads, qn, s.head_dim, device=dev, dtype=model.dtype)
            attn_in = torch.randn(tokens, s.heads * s.head_dim, device=dev, dtype=model.dtype)
            try:
                total = timer.time(lambda: model.forward(ids, cos, sin, batch, qn, ctx, mask, backend))
                attn = timer.time(lambda: [model.attention(i, qh, kh, kh, ctx, mask, backend)
                                           for i in range(s.layers)]) / s.layers
                dense = timer.time(lambda: (model.layer_dense_in(0, x, x, cos, sin),
                                            model.layer_dense_out(0, attn_in, x)))
                head = timer.time(lambda: model.sample(x))
            except torch.OutOfMemoryError:
                log(f"skip batch {batch} ctx {ctx} q {qn}: out of memory")
                continue
            row = dict(model=s.name, batch=batch, ctx=ctx, q=qn, mask=kind if qn > 1 else "none",
                       tokens=tokens, forward_s=total, attention_per_layer_s=attn, dense_per_layer_s=dense,
                       lm_head_sample_s=head, backend=backend.used.get("decode" if qn == 1 else kind, "none"))
            writer.writerow(row)
            log(f"{s.name} B={batch} ctx={ctx} q={qn} {row['mask']}: forward {total * 1e3:.3f} ms, "
                f"attn/layer {attn * 1e6:.1f} us, dense/layer {dense * 1e6:.1f} us, head {head * 1e6:.1f} us")
    model.alloc_cache(1, 1)


def measure_eager(model: Model, backend: Backend, timer: Timer, cases, writer, log) -> None:
    """eager.csv: wall time of an eager forward vs its graph replay, with the kernel count. Both run the
    plain (unfused aten) elementwise ops, as an eager stack launches one kernel per op."""
    s, dev = model.s, model.device
    fused, model.ops = model.ops, Ops(compile_ops=False)
    try:
        _eager_cases(model, backend, timer, cases, writer, log)
    finally:
        model.ops = fused


def _eager_cases(model: Model, backend: Backend, timer: Timer, cases, writer, log) -> None:
    s, dev = model.s, model.device
    for batch, ctx in cases:
        model.alloc_cache(batch, ctx + 1)
        ids = torch.randint(0, s.vocab, (batch,), device=dev)
        cos, sin = rope_tables(torch.full((batch,), ctx, device=dev), s.head_dim, model.dtype)

        def fwd():
            return model.forward(ids, cos, sin, batch, 1, ctx, None, backend)

        graph_s = timer.time(fwd)
        for _ in range(3):
            fwd()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        walls = []
        for _ in range(20):
            t0 = time.perf_counter()
            fwd()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            walls.append(time.perf_counter() - t0)
        eager_s = statistics.median(walls)
        kernels = None
        try:
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CUDA] if dev.type == "cuda" else [ProfilerActivity.CPU]
            with profile(activities=acts) as prof:
                fwd()
                if dev.type == "cuda":
                    torch.cuda.synchronize()
            if dev.type == "cuda":
                kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
            else:
                kernels = sum(1 for e in prof.events() if e.name.startswith("aten::"))
        except Exception as exc:  # noqa: BLE001 - recorded
            log(f"kernel count failed: {exc}")
        per_kernel = (eager_s - graph_s) / kernels if kernels else float("nan")
        writer.writerow(dict(model=s.name, batch=batch, ctx=ctx, graph_s=graph_s, eager_s=eager_s,
                             kernels=kernels, overhead_per_kernel_s=per_kernel))
        log(f"eager {s.name} B={batch} ctx={ctx}: graph {graph_s * 1e3:.3f} ms, eager {eager_s * 1e3:.3f} ms, "
            f"{kernels} kernels, {per_kernel * 1e6:.2f} us/kernel")
    model.alloc_cache(1, 1)


# ---------------------------------------------------------------------------------------------------------
class PowerSampler:
    """Board power (W), SM clock (MHz) and temperature sampled every `period_s` by NVML in a thread."""

    def __init__(self, period_s: float = 0.02):
        import pynvml
        pynvml.nvmlInit()
        self.nv, self.h = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        self.period_s, self.samples, self._stop = period_s, [], threading.Event()
        self.limit_w = pynvml.nvmlDeviceGetEnforcedPowerLimit(self.h) / 1e3
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        nv, h = self.nv, self.h
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), nv.nvmlDeviceGetPowerUsage(h) / 1e3,
                                     nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                                     nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)))
            except Exception:  # noqa: BLE001 - a missed sample is skipped
                pass
            time.sleep(self.period_s)

    def window(self, t0: float, t1: float):
        mid = t0 + (t1 - t0) / 2  # steady state: the second half of the phase
        rows = [r for r in self.samples if mid <= r[0] <= t1]
        if not rows:
            return float("nan"), float("nan"), float("nan"), 0
        return (statistics.median(r[1] for r in rows), statistics.median(r[2] for r in rows),
                statistics.median(r[3] for r in rows), len(rows))

    def stop(self):
        self._stop.set()
        self.thread.join()


def measure_power(model: Model, backend: Backend, writer, phase_s: float, log) -> None:
    dev = model.device
    sampler = PowerSampler()

    def phase(name, work, flop, nbytes):
        torch.cuda.synchronize()
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < phase_s:
            work()
            n += 1
            if n % 4 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        t1 = time.monotonic()
        watts, clock, temp, k = sampler.window(t0, t1)
        secs = t1 - t0
        writer.writerow(dict(phase=name, seconds=secs, calls=n, power_w=watts, sm_clock_mhz=clock, temp_c=temp,
                             samples=k, flop_per_s=flop * n / secs, bytes_per_s=nbytes * n / secs,
                             power_limit_w=sampler.limit_w))
        log(f"power {name}: {watts:.0f} W at {clock:.0f} MHz, {flop * n / secs / 1e12:.0f} TFLOP/s, "
            f"{nbytes * n / secs / 1e12:.2f} TB/s")

    try:
        phase("idle", lambda: time.sleep(0.05), 0.0, 0.0)
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        phase("gemm_bf16_8192", lambda: torch.mm(a, b), 2 * 8192 ** 3, 3 * 8192 ** 2 * 2)
        del a, b
        src = torch.empty(2 * 2 ** 30, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        phase("copy_d2d_2GiB", lambda: dst.copy_(src), 0.0, 2 * src.numel())
        del src, dst
        s = model.s
        per_token_flop = 2 * (model.weight_bytes() / 2 - s.vocab * s.hidden)
        for batch, ctx, qn in ((64, 2048, 1), (32, 2048, 16)):
            model.alloc_cache(batch, ctx + qn)
            tokens = batch * qn
            ids = torch.randint(0, s.vocab, (tokens,), device=dev)
            cos, sin = rope_tables((torch.arange(qn, device=dev) + ctx).repeat(batch), s.head_dim, model.dtype)
            mask = verify_mask("chain", qn, ctx, dev)
            graph = torch.cuda.CUDAGraph()
            model.forward(ids, cos, sin, batch, qn, ctx, mask, backend)
            torch.cuda.synchronize()
            with torch.cuda.graph(graph):
                model.forward(ids, cos, sin, batch, qn, ctx, mask, backend)
            kv_bytes = 2 * s.layers * batch * (ctx + qn) * s.kv_heads * s.head_dim * 2
            phase(f"forward_B{batch}_q{qn}_ctx{ctx}", graph.replay, per_token_flop * tokens,
                  model.weight_bytes() + kv_bytes)
            del graph
        model.alloc_cache(1, 1)
    finally:
        sampler.stop()


# ---------------------------------------------------------------------------------------------------------
def host_speed() -> dict:
    """Single-thread host speed on two fixed micro-benchmarks (median of 5)."""
    import numpy as np

    def py_loop():
        t0 = time.perf_counter()
        acc = 0
        for i in range(2_000_000):
            acc += i * i % 7
        return time.perf_counter() - t0

    def np_small():
        a = np.arange(64, dtype=np.float64)
        t0 = time.perf_counter()
        for _ in range(100_000):
            a = a * 1.0000001 + 0.5
        return time.perf_counter() - t0

    return dict(python_loop_2M_s=statistics.median(py_loop() for _ in range(5)),
                numpy_small_100k_s=statistics.median(np_small() for _ in range(5)),
                cpu_model=_cpu_model(), cpu_count=os.cpu_count(), python=platform.python_version())


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def check_packed_attention() -> float:
    """Max |difference| between GQA-packed tree attention and plain GQA SDPA with the full mask (CPU, fp32)."""
    g = torch.Generator().manual_seed(1)
    b, heads, kv, qn, ctx, d = 2, 8, 2, 5, 7, 16
    q = torch.randn(b, heads, qn, d, generator=g)
    k = torch.randn(b, kv, ctx + qn, d, generator=g)
    v = torch.randn(b, kv, ctx + qn, d, generator=g)
    mask = verify_mask("tree", qn, ctx, "cpu")
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    got = Backend(torch.device("cpu")).packed(q, k, v, mask)
    chain = F.scaled_dot_product_attention(q, k, v, attn_mask=_materialize(q, k), enable_gqa=True)
    ref_chain = F.scaled_dot_product_attention(q[:, :, -1:], k, v, enable_gqa=True)
    return max(float((got - ref).abs().max()), float((chain[:, :, -1:] - ref_chain).abs().max()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="dry run: tiny model, tiny grid")
    ap.add_argument("--budget-s", type=float, default=420.0, help="stop starting new grid shapes after this")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--parts", default="host,eager,grid8b,grid05b,power")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    t_start = time.monotonic()
    deadline = t_start + args.budget_s
    dev = torch.device(args.device)
    parts = set(args.parts.split(","))
    logf = open(os.path.join(args.out, "log.txt"), "a")

    def log(msg):
        line = f"[{time.monotonic() - t_start:7.1f}s] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    torch.set_num_threads(2)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    ops = Ops(compile_ops=dev.type == "cuda")
    backend = Backend(dev)
    timer = Timer(dev, args.reps)
    fp = dict(date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), command=" ".join(sys.argv),
              torch=torch.__version__, cuda=torch.version.cuda, device=str(dev), dtype=str(dtype),
              fusion=ops.fusion, min_reps=args.reps,
              timing="each region captured in a CUDA graph as 1..%d back-to-back copies (one replay >= %g s), "
                     "replayed >= %d times between CUDA events (>= %g s in all); median of elapsed / copies"
                     % (Timer.MAX_COPIES, Timer.MIN_REPLAY_S, args.reps, Timer.TARGET_S), threads=2, host=_cpu_model(),
              load_average_start=os.getloadavg())
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        fp.update(device_name=p.name, sms=p.multi_processor_count, hbm_bytes=p.total_memory,
                  l2_bytes=getattr(p, "L2_cache_size", None), cudnn=torch.backends.cudnn.version())
        try:
            import pynvml
            pynvml.nvmlInit()
            fp["driver"] = pynvml.nvmlSystemGetDriverVersion()
        except Exception:  # noqa: BLE001
            pass

    def part(name, fn):
        if name not in parts:
            return
        try:
            fn()
        except Exception:  # noqa: BLE001 - one failed part must not lose the others
            log(f"PART {name} FAILED:\n{traceback.format_exc()}")
            fp.setdefault("failed_parts", []).append(name)

    def with_csv(filename, fields, fn):
        path = os.path.join(args.out, filename)
        new = not os.path.exists(path)
        with open(path, "a", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=fields)
            if new:
                w.writeheader()
            fn(w)

    fp["packed_attention_max_abs_err_cpu"] = check_packed_attention()
    log(f"packed tree attention vs reference: max abs err {fp['packed_attention_max_abs_err_cpu']:.2e}")
    part("host", lambda: json.dump(host_speed(), open(os.path.join(args.out, "host.json"), "w"), indent=2))
    log("host speed done")

    fwd_fields = ["model", "batch", "ctx", "q", "mask", "tokens", "forward_s", "attention_per_layer_s",
                  "dense_per_layer_s", "lm_head_sample_s", "backend"]
    if args.tiny:
        shape8b = shape05 = TINY
        grid8b = [(b, c, q, k) for b in (1, 4) for c in (16,) for q in (1, 2, 4) for k in ("chain", "tree")
                  if q > 1 or k == "chain"]
        grid05 = grid8b[:3]
        eager_cases = [(1, 16), (4, 16)]
    else:
        shape8b, shape05 = LLAMA3_8B, QWEN25_05B
        grid8b = []
        for c in (2048, 512, 8192):
            for b in (1, 4, 16, 32, 64, 128):
                if c == 8192 and b > 16:
                    continue
                for q in (1, 2, 4, 5, 8, 16, 32, 64):
                    if c != 2048 and q not in (1, 5, 16):
                        continue
                    kinds = ("chain",) if q == 1 else (("chain", "tree") if c == 2048 and q in (4, 8, 16, 64)
                                                        else ("chain",))
                    grid8b += [(b, c, q, k) for k in kinds]
        grid05 = [(b, 2048, q, "chain") for b in (1, 16, 64) for q in (1, 5, 16)]
        eager_cases = [(1, 2048), (32, 2048), (128, 2048)]

    state = {}

    def build(shape):
        if state.get("shape") != shape:
            state.clear()
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            state["model"] = Model(shape, dev, dtype, ops)
            state["shape"] = shape
        return state["model"]

    part("eager", lambda: with_csv("eager.csv", ["model", "batch", "ctx", "graph_s", "eager_s", "kernels",
                                                  "overhead_per_kernel_s"],
                                   lambda w: measure_eager(build(shape8b), backend, timer, eager_cases, w, log)))
    part("grid8b", lambda: with_csv("forwards.csv", fwd_fields,
                                    lambda w: measure_grid(build(shape8b), backend, timer, grid8b, w, deadline, log)))
    if dev.type == "cuda":
        part("power", lambda: with_csv("power.csv", ["phase", "seconds", "calls", "power_w", "sm_clock_mhz",
                                                      "temp_c", "samples", "flop_per_s", "bytes_per_s",
                                                      "power_limit_w"],
                                       lambda w: measure_power(build(shape8b), backend, w, 6.0, log)))
    part("grid05b", lambda: with_csv("forwards.csv", fwd_fields,
                                     lambda w: measure_grid(build(shape05), backend, timer, grid05, w,
                                                            deadline + 60, log)))
    fp["attention_backend"] = backend.used
    fp["attention_backend_errors"] = backend.errors
    fp["load_average_end"] = os.getloadavg()
    fp["seconds"] = round(time.monotonic() - t_start, 1)
    json.dump(fp, open(os.path.join(args.out, "fingerprint.json"), "w"), indent=2, default=str)
    log(f"done in {fp['seconds']} s; failed parts: {fp.get('failed_parts', [])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
