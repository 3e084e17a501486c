"""Predictor benchmark: cold start, op_seconds cost, and interpolation error on held-out profile points.

    python3 -m scenarios.benchmarks.predictor_speed [--profile profiles/data/cpu-local] [--calls 20000]

Prints:
* cold start in a fresh interpreter: import time and load + precompute time of ProfiledLatencyModel
  (the budget is ≤ 2 s for load + precompute: a load over it is a failed check, exit 1);
* µs per op_seconds call, uncached (first sight of an op) and memoised, over ops of random step shapes;
* held-out error: every other interior grid point along each kind's first grid axis is removed from the
  table, a model is fitted on the rest, and the removed points are predicted. The grid is then twice as
  coarse as the shipped one, so these errors bound the shipped interpolation error from above;
* the fitted roofline's own error on every profiled point (what out-of-grid prices rest on).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from models.errors import bounded, doc_description, run_script, script_args

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PROFILE = ROOT / "profiles" / "data" / "cpu-local"
COLD_START_BUDGET_S = 2.0   # load + precompute of the predictor (the architecture guide's "cold start <= 2 s")

_COLD = """
import time, json, sys
t0 = time.perf_counter()
from profiles.predictor import ProfiledLatencyModel
t1 = time.perf_counter()
model = ProfiledLatencyModel(sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1}))
"""


def cold_start(profile: Path, runs: int = 3) -> dict:
    results = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _COLD, str(profile)], cwd=ROOT, capture_output=True,
                             text=True, check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {key: min(r[key] for r in results) for key in results[0]}


def random_ops(count: int, seed: int = 0) -> list:
    from models.catalog import get_model
    from models.opgraph import step_ops
    from models.step import Parallelism, StepShape, chunk_attention_pairs
    rng = np.random.default_rng(seed)
    specs = [get_model(n) for n in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "llama-68m")]
    ops = []
    while len(ops) < count:
        spec = specs[rng.integers(len(specs))]
        chunk, prefix = int(rng.integers(1, 2048)), int(rng.integers(0, 2048))
        seqs, q = int(rng.integers(1, 48)), int(rng.integers(1, 12))
        shape = StepShape(prefill_tokens=chunk, prefill_seqs=1, prefill_attn_pairs=chunk_attention_pairs(chunk, prefix),
                          decode_seqs=seqs, query_tokens_per_seq=q,
                          decode_context_tokens=int(seqs * rng.integers(1, 3000)), tree_attention=bool(rng.random() < 0.3))
        ops.extend(step_ops(spec, shape, Parallelism(), "fp32"))
    return ops[:count]


def call_cost(profile: Path, calls: int) -> dict:
    from profiles.predictor import ProfiledLatencyModel
    model = ProfiledLatencyModel(profile)
    ops = random_ops(calls)
    started = time.perf_counter()
    for op in ops:
        model.op_seconds(op)
    uncached = time.perf_counter() - started
    started = time.perf_counter()
    for op in ops:
        model.op_seconds(op)
    cached = time.perf_counter() - started
    return {"uncached_us": 1e6 * uncached / len(ops), "memoised_us": 1e6 * cached / len(ops)}


def held_out_errors(profile: Path) -> pd.DataFrame:
    from models.ops import Op
    from profiles.predictor import DIM_DEFAULTS, KIND_AXES, ProfiledLatencyModel, _grid_value
    from profiles.profiler.table import read_fingerprint, read_table, row_dims
    table = read_table(profile)
    fp = read_fingerprint(profile)
    held = np.zeros(len(table), dtype=bool)
    records = table.to_dict("records")
    groups: dict[tuple, list[int]] = {}
    for i, row in enumerate(records):
        if row["kind"] not in KIND_AXES:  # host overhead rows: not op prices (priced per pass)
            continue
        config_keys, grid_keys = KIND_AXES[row["kind"]]
        dims = {**DIM_DEFAULTS, **row_dims(row)}
        groups.setdefault((row["kind"], tuple(dims[k] for k in config_keys)), []).append(i)
    for (kind, _), members in groups.items():
        first = KIND_AXES[kind][1][0]
        values = sorted({_grid_value(kind, {**DIM_DEFAULTS, **row_dims(records[i])}, first) for i in members})
        odd_interior = set(values[1:-1:2])
        for i in members:
            if _grid_value(kind, {**DIM_DEFAULTS, **row_dims(records[i])}, first) in odd_interior:
                held[i] = True
    model = ProfiledLatencyModel(table[~held].reset_index(drop=True), hardware_id=fp["device_id"], dtype=fp["dtype"])
    full = ProfiledLatencyModel(profile)
    rows = []
    for i, row in enumerate(records):
        if row["kind"] not in KIND_AXES:
            continue
        op = Op.make(row["kind"], row["kind"], row["flops"], row["bytes"], 1, **row_dims(row))
        entry = {"kind": row["kind"], "roofline_err": full.roofline.op_seconds(op) / row["median_s"] - 1.0,
                 "noise": (row["p90_s"] - row["p10_s"]) / row["median_s"]}
        if held[i]:
            entry["held_out_err"] = model.op_seconds(op) / row["median_s"] - 1.0
        rows.append(entry)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--profile", type=Path, default=DEFAULT_PROFILE)
    parser.add_argument("--calls", type=bounded(), default=20000)
    args = script_args(parser, argv)
    if not (args.profile / "ops.csv").is_file():
        print(f"no profile at {args.profile}", file=sys.stderr)
        return 2
    cold = cold_start(args.profile)
    within = cold["load_s"] <= COLD_START_BUDGET_S   # (it printed the budget and exited 0 whatever the load took)
    print(f"cold start: import {cold['import_s']:.2f} s, load + precompute {cold['load_s']:.3f} s "
          f"(budget {COLD_START_BUDGET_S:g} s: {'ok' if within else 'OVER'})")
    cost = call_cost(args.profile, args.calls)
    print(f"op_seconds: {cost['uncached_us']:.1f} µs/call uncached, {cost['memoised_us']:.2f} µs/call memoised")
    errors = held_out_errors(args.profile)
    summary = errors.groupby("kind").agg(
        points=("kind", "size"), held_out=("held_out_err", "count"),
        held_out_median_abs_pct=("held_out_err", lambda s: 100 * s.abs().median()),
        held_out_p90_abs_pct=("held_out_err", lambda s: 100 * s.abs().quantile(0.9)),
        roofline_median_abs_pct=("roofline_err", lambda s: 100 * s.abs().median()),
        p10_p90_spread_median_pct=("noise", lambda s: 100 * s.median()))
    with pd.option_context("display.width", 160, "display.float_format", "{:.1f}".format):
        print(summary.to_string())
    held = errors["held_out_err"].dropna().abs()
    print(f"all held-out points: median |err| {100 * held.median():.1f} %, P90 {100 * held.quantile(0.9):.1f} %")
    if not within:
        print(f"predictor_speed: load + precompute took {cold['load_s']:.3f} s, over its budget of "
              f"{COLD_START_BUDGET_S:g} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
