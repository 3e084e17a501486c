"""Does a spin kernel queued before each timed replay make µs-scale profile points reproducible? (issue 25)

Three H100 runs of `draftsim profile` on 2026-11-27 read single µs-scale points (RMSNorm, RoPE, embedding,
small GEMMs) 3–156× what the other runs did, every repetition of the point alike
(profiles/data/gpu-profile-runs/h100-sxm-2026-11-27). Two causes fit that: a host delay between the start
event and the graph launch, timed as idle GPU; and the GPU lowering its clock while the profiler leaves it
idle between short replays. `timing.replay_seconds` queues a spin of `BUSY_CYCLES_BEFORE_REPLAY` cycles
ahead of the start event against both. This times the µs-scale points of the profiler's Llama-3-8B and
qwama-0.5b grids both ways, interleaved (the order alternating per round), in several rounds on one GPU,
exactly as the profiler times a point (`time_graph`, same benches, flush and timing settings), and reports
per way how far each point's medians spread over the rounds (max / min) and the ratio of the two ways.

    python3 -m profiles.profiler.busy_ab --out DIR [--rounds 3]    # CUDA only; writes DIR/busy_ab.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

import torch

from models.catalog import get_model
from models.errors import bounded, doc_description, run_script, script_args
from models.ops import ACTIVATION, ATTN_DECODE, EMBEDDING, GEMM, NORM, ROPE
from profiles.profiler.benches import OperandPool, build_bench
from profiles.profiler.plan import Point, plan_points
from profiles.profiler.run import bench_dims, default_grid, resolve_kernels
from profiles.profiler.timing import (BUSY_CYCLES_BEFORE_REPLAY, GPU_TIMING, PrecedingGemm, last_level_cache_bytes,
                                      time_graph)

MODELS = ("llama-3-8b", "qwama-0.5b")
SMALL_TOKENS = 256      # elementwise and embedding points up to this many tokens
SMALL_GEMM_ROWS = 16    # GEMM points up to this many rows
OUT_FILE = "busy_ab.json"
WAYS = {"no_spin": 0, "spin": BUSY_CYCLES_BEFORE_REPLAY}


def small_points(points: list[Point]) -> list[Point]:
    """The µs-scale points: elementwise ops and embeddings of ≤ SMALL_TOKENS tokens, GEMMs of ≤
    SMALL_GEMM_ROWS rows, one-token decode attention of one or two requests up to 2,048 tokens of context."""
    chosen = []
    for p in points:
        d = p.all_dims()
        if p.kind in (NORM, ROPE, EMBEDDING, ACTIVATION) and d.get("tokens", SMALL_TOKENS + 1) <= SMALL_TOKENS:
            chosen.append(p)
        elif p.kind == GEMM and d["m"] <= SMALL_GEMM_ROWS:
            chosen.append(p)
        elif (p.kind == ATTN_DECODE and d["seqs"] <= 2 and d["ctx_per_seq"] <= 2048 and d["q_per_seq"] == 1
              and d.get("tree", 0.0) == 0.0):
            chosen.append(p)
    return chosen


def spread(values: list[float]) -> float:
    """max / min of one point's medians over the rounds."""
    return max(values) / min(values)


def summarize(rows: list[dict]) -> dict:
    """Per way: the median and largest spread over rounds, and how many points spread by more than 1.5× and
    3×; and the median over points of (no spin / spin), each way's median over rounds."""
    out = {}
    for way in WAYS:
        spreads = [spread(r[way]) for r in rows]
        out[way] = {"median_spread": statistics.median(spreads), "max_spread": max(spreads),
                    "points_spread_over_1_5x": sum(s > 1.5 for s in spreads),
                    "points_spread_over_3x": sum(s > 3.0 for s in spreads)}
    ratios = [statistics.median(r["no_spin"]) / statistics.median(r["spin"]) for r in rows]
    out["no_spin_over_spin_median"] = statistics.median(ratios)
    deciles = statistics.quantiles(ratios, n=10)
    out["no_spin_over_spin_p10_p90"] = [deciles[0], deciles[-1]]
    out["points"] = len(rows)
    return out


def run(rounds: int, device_name: str = "cuda", log=print) -> dict:
    dev = torch.device(device_name)
    dtype = torch.bfloat16
    points = small_points(plan_points([get_model(m) for m in MODELS], default_grid("cuda", False), "bf16"))
    llc = last_level_cache_bytes(dev)
    kernels = resolve_kernels(dev, "auto")
    pool = OperandPool(dtype, dev)
    flush = PrecedingGemm.for_device(dev, llc)
    rows = [{"kind": p.kind, "dims": p.all_dims(), **{way: [] for way in WAYS}} for p in points]
    with torch.inference_mode():
        for n in range(rounds):
            order = list(WAYS) if n % 2 == 0 else list(reversed(WAYS))
            for p, row in zip(points, rows):
                dims = bench_dims(p.all_dims())
                for way in order:
                    bench = build_bench(p.kind, dims, dtype, dev, llc, pool, kernels=kernels)
                    row[way].append(time_graph(bench, dev, GPU_TIMING, flush, WAYS[way])[0].median_s)
                    del bench
            log(f"busy_ab round {n + 1}/{rounds}: {len(points)} points both ways")
    return {"device_name": torch.cuda.get_device_name(dev), "torch": torch.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "busy_cycles": BUSY_CYCLES_BEFORE_REPLAY, "rounds": rounds, "models": list(MODELS),
            "summary": summarize(rows), "rows": rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m profiles.profiler.busy_ab",
                                     description=doc_description(__doc__))
    parser.add_argument("--out", required=True, help="folder for busy_ab.json")
    parser.add_argument("--rounds", type=bounded(), default=3, help="rounds of both ways (default 3)")
    args = script_args(parser, argv)
    if args.rounds < 2:
        print("busy_ab: --rounds must be at least 2 (a spread needs two rounds)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("busy_ab: needs a CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    result = run(args.rounds)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / OUT_FILE).write_text(json.dumps(result, indent=1))
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
