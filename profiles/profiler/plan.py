"""What to profile: the (op kind, dims) points that the catalog's models produce, over size grids.

Points come from the op graph itself (`models.opgraph.dense_ops` / `attention_ops`) evaluated on grids of
token counts, chunk/prefix lengths and decode batch shapes, so the profiled dims, FLOPs and bytes are
exactly those the simulator later asks the predictor about. Collectives are planned separately
(message sizes × ranks). MLA attention has no torch kernel here; its attention points are skipped and
priced by the fitted roofline.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from models import ops as K_OPS
from models.opgraph import attention_ops, dense_ops
from models.spec import ModelSpec
from models.step import Parallelism, StepShape, chunk_attention_pairs


def _half_octaves(lo: int, hi: int) -> tuple[int, ...]:
    """Integers at ratio √2 from lo to hi (log-spaced, both ends included)."""
    values, exponent = set(), 0
    while True:
        value = round(lo * 2 ** (exponent / 2))
        if value > hi:
            break
        values.add(value)
        exponent += 1
    values.add(hi)
    return tuple(sorted(values))


@dataclass(frozen=True)
class GridSpec:
    tokens: tuple[int, ...] = _half_octaves(1, 4096)       # GEMM m, norm/activation/... tokens
    # GEMMs (LM head included) are also timed at every m up to this: small-m GEMM time is jagged in m,
    # not smooth (BLAS row blocking: on the 2-vCPU AMD EPYC, the qwen2.5-0.5B LM head takes 101 ms at
    # m = 3, 61 ms at m = 4, 105 ms at m = 11, 60 ms at m = 12), so no interpolation between sparse grid
    # points can price the decode/verify token counts (batch × (γ + 1)); measuring them does.
    gemm_dense_tokens_max: int = 0
    logits_tokens_max: int = 1024                          # LM head and sampling stop here
    prefill_chunks: tuple[int, ...] = (1, 4, 16, 64, 256, 1024, 4096)
    prefill_prefixes: tuple[int, ...] = (0, 64, 512, 4096)
    decode_seqs: tuple[int, ...] = (1, 4, 16, 64)
    decode_q_per_seq: tuple[int, ...] = (1, 2, 4, 8, 16)
    decode_contexts: tuple[int, ...] = (0, 64, 256, 1024, 4096)
    tree_q_per_seq: tuple[int, ...] = (2, 4, 8, 16)
    sampling_greedy: tuple[int, ...] = (1, 0)
    collective_ranks: tuple[int, ...] = (2,)
    collective_bytes: tuple[int, ...] = tuple(4 ** e * 1024 for e in range(9))   # 1 KiB … 64 MiB
    tp: tuple[int, ...] = (1,)


FULL_GRID = GridSpec(gemm_dense_tokens_max=64)
# GPUs: the grids of the measured tables (aiconfigurator-core 0.12.0, h100_sxm/vllm/0.24.0), so that a
# profile of a user's GPU covers the shapes `measured` interpolates over on a table GPU: GEMM m at every
# value 1-16, then 32, 48 ... as the gemm_perf table steps; decode attention over batch 1-256 (the table's
# generation_attention batch axis runs 1, 2, 4 ... 2048) and KV lengths on its power-of-two axis; prefill
# ("context") chunks on its isl axis. Verification (q = 2-16 query tokens per sequence), chains and trees,
# over the same batches and contexts (the tables price q > 1 as q x the query heads; here it is measured).
GPU_GRID = GridSpec(
    tokens=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048,
            3072, 4096, 6144, 8192),
    gemm_dense_tokens_max=16, logits_tokens_max=1024,
    prefill_chunks=(1, 16, 64, 256, 512, 1024, 2048, 4096, 8192), prefill_prefixes=(0, 512, 2048, 8192),
    decode_seqs=(1, 2, 4, 8, 16, 32, 64, 128, 256), decode_q_per_seq=(1, 2, 4, 8, 16),
    decode_contexts=(128, 256, 512, 1024, 2048, 4096, 8192), tree_q_per_seq=(2, 4, 8, 16))
QUICK_GRID = GridSpec(tokens=(1, 16, 256), logits_tokens_max=16, prefill_chunks=(16, 128),
                      prefill_prefixes=(0, 128), decode_seqs=(1, 4), decode_q_per_seq=(1, 4),
                      decode_contexts=(0, 128), tree_q_per_seq=(4,), sampling_greedy=(1,),
                      collective_ranks=(2,), collective_bytes=(1024, 65536))


@dataclass(frozen=True)
class Point:
    """One profile point: op kind, the op's dims plus bench-only extras, and the op graph's FLOPs/bytes."""

    kind: str
    dims: tuple[tuple[str, float], ...]
    flops: float
    bytes: float
    extras: tuple[tuple[str, float], ...] = field(default=())

    def all_dims(self) -> dict[str, float]:
        return {**dict(self.dims), **dict(self.extras)}


def _point(op: K_OPS.Op, spec: ModelSpec, greedy: int | None = None) -> Point:
    extras: dict[str, float] = {}
    if op.kind == K_OPS.GEMM and op.name == "qkv_proj" and spec.qkv_bias:
        extras["bias"] = 1.0
    if op.kind == K_OPS.EMBEDDING:
        extras["vocab"] = float(spec.vocab_size)
    if op.kind == K_OPS.SAMPLING and greedy is not None:
        extras["greedy"] = float(greedy)
    if op.kind == K_OPS.MOE_ROUTER and "hidden" not in dict(op.dims):
        extras["hidden"] = float(spec.hidden_size)
    return Point(op.kind, op.dims, op.flops, op.bytes, tuple(sorted(extras.items())))


def model_points(spec: ModelSpec, grid: GridSpec, dtype: str) -> list[Point]:
    """All compute points of one model (every TP degree in the grid that the model admits)."""
    points: list[Point] = []
    for tp in grid.tp:
        par = Parallelism(tp=tp)
        for tokens in sorted(set(grid.tokens) | set(range(1, grid.gemm_dense_tokens_max + 1))):
            logits = min(tokens, grid.logits_tokens_max)
            gemm_only = tokens not in grid.tokens
            for op in dense_ops(spec, tokens, logits, par, dtype):
                if op.kind in K_OPS.COLLECTIVE_KINDS or (gemm_only and op.kind != K_OPS.GEMM):
                    continue
                if op.kind == K_OPS.GEMM and op.dim("groups", 1.0) != 1.0:
                    continue  # grouped expert GEMMs are priced as `groups` single GEMMs of the same (n, k)
                if op.kind == K_OPS.SAMPLING:
                    if tokens > grid.logits_tokens_max:
                        continue
                    points += [_point(op, spec, g) for g in grid.sampling_greedy]
                    continue
                if op.name == "lm_head" and tokens > grid.logits_tokens_max:
                    continue
                points.append(_point(op, spec))
        if spec.is_mla:
            continue
        for chunk in grid.prefill_chunks:
            for prefix in grid.prefill_prefixes:
                shape = StepShape(prefill_tokens=chunk, prefill_seqs=1,
                                  prefill_attn_pairs=chunk_attention_pairs(chunk, prefix))
                points += [_point(op, spec) for op in attention_ops(spec, shape, par, dtype)]
        for tree, q_grid in ((False, grid.decode_q_per_seq), (True, grid.tree_q_per_seq)):
            for seqs in grid.decode_seqs:
                for q in q_grid:
                    for ctx in grid.decode_contexts:
                        shape = StepShape(decode_seqs=seqs, query_tokens_per_seq=q,
                                          decode_context_tokens=seqs * ctx, tree_attention=tree)
                        points += [_point(op, spec) for op in attention_ops(spec, shape, par, dtype)]
    return points


def plan_points(specs: list[ModelSpec], grid: GridSpec, dtype: str) -> list[Point]:
    """Deduplicated compute points of all models (identical shapes of different models are timed once)."""
    seen: dict[tuple, Point] = {}
    for spec in specs:
        for point in model_points(spec, grid, dtype):
            key = (point.kind, point.dims, point.extras)
            seen.setdefault(key, point)
    return list(seen.values())
