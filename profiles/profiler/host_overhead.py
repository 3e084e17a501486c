"""Host overhead of a forward pass: the wall time of a real pass that no kernel accounts for.

A serving engine's forward pass is its kernels plus the host work between them: Python dispatch, tensor
views and slicing, building the ids/positions tensors, RoPE tables, gathering the logits rows. On a CPU
this work is serial with the kernels (the same threads run both), and in the reference engine's decoder it
measured 0.25–0.75 ms per layer — 2–9 % of a pass — which no op of the op graph prices.

So the profiler measures it, as the op graph cannot: it runs whole passes of the engine's own decoder
(`models.torch_impl.fused.FusedDecoder`, random weights) over a few decode and prefill shapes, times every
kernel call inside each pass, and records

    host overhead of a pass = pass wall time − Σ its timed kernels      (median over `reps` passes)

per model (its layer count) and pass size (tokens). These passes are the profiler's own synthetic ones, not
the validation run's steps. The predictor turns the rows into seconds per layer as a function of tokens
(`profiles.predictor.ProfiledLatencyModel.host_overhead_s`), and the step cost adds it to every pass.

Only on CPU: on a GPU the host enqueues kernels asynchronously and its work overlaps the device's, so the
host overhead is not on a pass's critical path at serving batch sizes (and CUDA graphs remove most of it).
The per-kernel timing adds two clock reads per kernel to the measured passes (about 1 µs per layer, < 1 %
of the overhead measured); it is not subtracted.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from models.spec import ModelSpec
from profiles.profiler.table import HOST_OVERHEAD  # noqa: F401  (the row kind these rows are filed under)


@dataclass(frozen=True)
class PassShape:
    """A decode group of `seqs` sequences × `q` tokens at context `ctx`, or (seqs = 0) one prefill chunk
    of `q` tokens."""

    seqs: int
    q: int
    ctx: int = 64

    @property
    def tokens(self) -> int:
        return self.seqs * self.q if self.seqs else self.q


FULL_SHAPES = (PassShape(1, 1), PassShape(4, 1), PassShape(16, 1), PassShape(1, 5), PassShape(4, 5),
               PassShape(16, 5), PassShape(0, 16), PassShape(0, 128))
QUICK_SHAPES = (PassShape(1, 1), PassShape(2, 3))


def supported(spec: ModelSpec) -> bool:
    """The engine's decoder runs dense GQA models only (no MoE, MLA or q/k norm)."""
    return not (spec.is_moe or spec.is_mla or spec.qk_norm)


def time_host_overhead(spec: ModelSpec, dtype: torch.dtype, device: torch.device,
                       shapes: Sequence[PassShape] = FULL_SHAPES, reps: int = 7, warmup: int = 2,
                       seed: int = 0) -> list[dict]:
    """Rows {layers, tokens, median_s, p10_s, p90_s, reps} of host overhead per pass of `spec`."""
    from models.torch_impl.fused import (DecodeGroup, FusedDecoder, PrefillChunk, config_from_spec,
                                          new_op_seconds)
    if reps < 1 or warmup < 0:
        raise ValueError(f"need reps >= 1 and warmup >= 0, got {reps}, {warmup}")
    max_ctx = max(s.ctx + s.q for s in shapes) + 1
    decoder = FusedDecoder.random(config_from_spec(spec, max_context=max_ctx), seed, dtype, device)
    decoder.allocate_cache(max(max(s.seqs for s in shapes), 1), max_ctx)
    gen = torch.Generator().manual_seed(seed)
    rows = []
    with torch.inference_mode():
        for shape in shapes:
            ids = torch.randint(0, spec.vocab_size, (max(shape.seqs, 1), shape.q), generator=gen)
            if shape.seqs:
                chunks = []
                group = DecodeGroup(ids, list(range(shape.seqs)), [shape.ctx] * shape.seqs)
            else:
                chunks, group = [PrefillChunk(ids[0], 0, 0)], None
            overhead = []
            for i in range(warmup + reps):
                decoder.op_seconds = new_op_seconds()
                t0 = time.perf_counter()
                decoder.forward(chunks, group)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                wall = time.perf_counter() - t0
                if i >= warmup:
                    overhead.append(max(0.0, wall - sum(decoder.op_seconds.values())))
            arr = np.asarray(overhead)
            rows.append({"layers": spec.num_layers, "tokens": shape.tokens, "median_s": float(np.median(arr)),
                         "p10_s": float(np.quantile(arr, 0.1)), "p90_s": float(np.quantile(arr, 0.9)),
                         "reps": len(arr)})
    decoder.op_seconds = None
    return rows
