"""Where the simulator's step time goes wrong: measured kernel time by op kind vs the profile's price.

With `ReferenceConfig(op_breakdown=True)` the engine times every kernel call of every pass inside the real
step (columns op_<model>_<kind>_s). `predicted_by_kind` prices the same step's op graph per kind with the
simulator's latency model, pass by pass exactly as `simulator.cost.step_cost.StepCostModel` composes a step
(target pass over prefill chunks + γ+1 verify tokens per decode request; draft pass 1 over prefill chunks +
1 token per decode request; draft passes 2…γ over the decode requests with contexts growing by one per
pass). Decode attention is priced at the exact Σ context here, where the step cost model interpolates on a
16-token grid (< 1e-3 relative difference, tests/simulator/cost/test_sim_step_cost.py).

"glue" is the pass's wall time minus its timed kernels: Python between kernels, ids/positions tensors,
rope_tables, logits-row gathers, concatenations — time the op graph has no op for. Its predicted value is
the latency model's `host_overhead_s` (profiled from the profiler's own passes).
Kinds: the op graph's kinds, with the LM head GEMM split out as "lm_head" (the engine times it apart).
"""
from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import pandas as pd
import torch

from models.opgraph import attention_ops, dense_ops
from models.spec import ModelSpec
from models.step import Parallelism, StepShape

KINDS = ("embedding", "norm", "gemm", "lm_head", "rope", "attn_prefill", "attn_decode", "activation", "sampling")


def _price_pass(latency, spec: ModelSpec, shape: StepShape, logits: int, dtype: str, acc: dict) -> None:
    par = Parallelism()
    for op in dense_ops(spec, shape.num_tokens, logits, par, dtype) + attention_ops(spec, shape, par, dtype):
        kind = "lm_head" if op.name == "lm_head" else op.kind
        acc[kind] += op.count * latency.op_seconds(op)
    host = getattr(latency, "host_overhead_s", None)
    if host is not None and shape.num_tokens:
        acc["glue"] += host(spec.num_layers, shape.num_tokens)


def predicted_by_kind(latency, target: ModelSpec, draft: ModelSpec | None, gamma: int, dtype: str,
                      prefill_tokens: int, prefill_seqs: int, prefill_attn_pairs: int, decode_seqs: int,
                      decode_context_tokens: int) -> dict[str, dict[str, float]]:
    """{"target": {kind: seconds}, "draft": {kind: seconds}} of one step."""
    q = gamma + 1 if draft is not None else 1
    out = {"target": defaultdict(float), "draft": defaultdict(float)}
    shape = StepShape(prefill_tokens, prefill_seqs, prefill_attn_pairs, decode_seqs, q, decode_context_tokens)
    _price_pass(latency, target, shape, prefill_seqs + decode_seqs * q, dtype, out["target"])
    if draft is not None and gamma > 0:
        first = StepShape(prefill_tokens, prefill_seqs, prefill_attn_pairs, decode_seqs, 1, decode_context_tokens)
        _price_pass(latency, draft, first, prefill_seqs + decode_seqs, dtype, out["draft"])
        for j in range(1, gamma if decode_seqs else 1):
            shape = StepShape(decode_seqs=decode_seqs, query_tokens_per_seq=1,
                              decode_context_tokens=decode_context_tokens + j * decode_seqs)
            _price_pass(latency, draft, shape, decode_seqs, dtype, out["draft"])
    return out


def op_breakdown(steps: pd.DataFrame, latency, target: ModelSpec, draft: ModelSpec | None, gamma: int,
                 dtype: str) -> pd.DataFrame:
    """Per (model, kind): measured and predicted seconds summed over the run's steps and the % error.

    `steps` is the reference engine's step frame with op_* columns (op_breakdown=True) and
    prefill_attn_pairs, draft_wall_s and target_wall_s (measured pass times)."""
    if not any(c.startswith("op_") for c in steps.columns):
        raise ValueError("op_breakdown: the reference run has no op_* columns (run it with op_breakdown=True)")
    predicted = defaultdict(float)
    for row in steps.itertuples(index=False):
        priced = predicted_by_kind(latency, target, draft, gamma, dtype, int(row.prefill_tokens),
                                   int(row.prefill_seqs), int(row.prefill_attn_pairs), int(row.decode_seqs),
                                   int(row.decode_context_tokens))
        for model, kinds in priced.items():
            for kind, seconds in kinds.items():
                predicted[(model, kind)] += seconds
    rows = []
    for model, wall_col in (("target", "target_wall_s"), ("draft", "draft_wall_s")):
        timed = 0.0
        for kind in KINDS:
            col = f"op_{model}_{kind}_s"
            measured = float(steps[col].sum()) if col in steps.columns else 0.0
            timed += measured
            if measured or predicted.get((model, kind)):
                rows.append((model, kind, measured, predicted.get((model, kind), 0.0)))
        if timed:
            rows.append((model, "glue", float(steps[wall_col].sum()) - timed, predicted.get((model, "glue"), 0.0)))
    frame = pd.DataFrame(rows, columns=["model", "kind", "measured_s", "predicted_s"])
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["err_pct"] = np.where(frame["measured_s"] > 0,
                                    (frame["predicted_s"] - frame["measured_s"]) / frame["measured_s"] * 100, np.nan)
    return frame


def format_breakdown(frame: pd.DataFrame) -> str:
    total = frame["measured_s"].sum()
    lines = ["op kind breakdown (whole run)   measured s  predicted s   % err  share of measured"]
    for row in frame.itertuples(index=False):
        err = "    n/a" if not np.isfinite(row.err_pct) else f"{row.err_pct:7.1f}"
        lines.append(f"  {row.model:6s} {row.kind:13s}     {row.measured_s:9.3f}    {row.predicted_s:9.3f} {err}"
                     f"   {row.measured_s / total * 100:5.1f} %")
    return "\n".join(lines)


def kernel_context_excess(decoder, group, passes: int = 7, reps: int = 15) -> pd.DataFrame:
    """Each kernel call of a real decode pass timed in context vs. replayed alone in a hot loop.

    In context, a kernel runs right after other kernels of the pass (typically a weight-streaming GEMM that
    evicts caches); the profiler times kernels in a tight loop of repetitions, with hot activations and
    code. Per call index: the median over `passes` passes in context, and the median over `reps` hot
    replays of the same call with the same arguments (after 3 untimed ones). GEMMs are not replayed (the
    profiler rotates cold weights for them; a hot replay would not be comparable). Returns per kind:
    calls, in-context seconds, isolated seconds (NaN for GEMMs), and the excess per call; plus a "glue" row
    (pass wall time minus its timed kernels) and a "pass" row (median pass wall time).
    Replaying writes K/V at the same cache positions again (harmless for timing; values are irrelevant)."""
    recorded: list[tuple[str, object, tuple, float]] = []

    def timed(kind, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        recorded.append((kind, fn, args, time.perf_counter() - t0))
        return out

    decoder._op = timed                      # instance attribute shadows the method while timing
    walls, per_pass = [], []
    try:
        with torch.inference_mode():
            for _ in range(2):
                decoder.forward([], group)
            for _ in range(passes):
                recorded.clear()
                t0 = time.perf_counter()
                decoder.forward([], group)
                walls.append(time.perf_counter() - t0)
                per_pass.append(list(recorded))
            in_context = np.median(np.array([[c[3] for c in p] for p in per_pass]), axis=0)
            isolated = []
            for kind, fn, args, _ in per_pass[-1]:
                if kind in ("gemm", "lm_head"):
                    isolated.append(np.nan)
                    continue
                for _ in range(3):
                    fn(*args)
                samples = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    fn(*args)
                    samples.append(time.perf_counter() - t0)
                isolated.append(float(np.median(samples)))
    finally:
        del decoder._op
    kinds = [c[0] for c in per_pass[-1]]
    rows = []
    for kind in dict.fromkeys(kinds):
        sel = [i for i, k in enumerate(kinds) if k == kind]
        ctx_s, iso_s = float(in_context[sel].sum()), float(np.sum([isolated[i] for i in sel]))
        rows.append((kind, len(sel), ctx_s, iso_s, (ctx_s - iso_s) / len(sel)))
    wall = float(np.median(walls))
    rows.append(("glue", 0, wall - float(in_context.sum()), np.nan, np.nan))
    rows.append(("pass", 1, wall, np.nan, np.nan))
    return pd.DataFrame(rows, columns=["kind", "calls", "in_context_s", "isolated_s", "excess_per_call_s"])
