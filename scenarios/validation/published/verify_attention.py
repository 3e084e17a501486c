"""Held-out check of verify-pass attention pricing against an engine's kernel on a real GPU: FlashInfer's paged
batch prefill (its `fa2` and Hopper `fa3` backends) timed on an H100 for q = 1…64 query tokens per request
(profiles/data/gpu-forwards/h100-sxm-2026-11-27-flashinfer/, measured by
scenarios/validation/gpu/measure_verify_attention.py). Nothing is fitted to these rows.

Each measured point (layout, mask, batch B, context c, q) is priced as one layer's attention by draftsim's
op graph and `--framework`'s measured kernels (scenarios.validation.published.gpu_forwards.attention_per_layer_s:
the verify rule of profiles/measured/verify.py for q > 1), and compared two ways:

- level: predicted / measured − 1 at each point;
- growth: how much a verify of q tokens costs over a decode (q = 1) of the same batch and context, measured
  (same backend and mask) against predicted. This is what the verify rule itself decides; the level at q = 1
  is the measured one-query table's (FA3 in vLLM's tables), which FlashInfer's kernels need not match.

    python -m scenarios.validation.published.verify_attention [--framework vllm] [--rows]

Grouped by packed query rows R = q·g (g = query heads per KV head): R ≤ 64 (one FA3 tile: the rule prices
no growth), 64 < R ≤ 128, R > 128.
"""
from __future__ import annotations

import argparse
import csv
import functools
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from models.errors import doc_description
from simulator.console.contract import parse_args

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "profiles" / "data" / "gpu-forwards" / "h100-sxm-2026-11-27-flashinfer"
ROW_BANDS = ((0, 64, "R <= 64"), (64, 128, "64 < R <= 128"), (128, 1 << 30, "R > 128"))


@dataclass(frozen=True)
class Point:
    layout: str
    mask: str
    backend: str
    batch: int
    ctx: int
    q: int
    group: int          # query heads per KV head
    measured_s: float
    predicted_s: float
    measured_decode_s: float    # the same batch and context at q = 1 (same backend and mask)
    predicted_decode_s: float

    @property
    def rows(self) -> int:
        return self.q * self.group

    @property
    def band(self) -> str:
        return next(label for lo, hi, label in ROW_BANDS if lo < self.rows <= hi)

    @property
    def summary_band(self) -> str:
        """Its summary group: "q = 1" (the decode each verify is compared with), else its row band."""
        return "q = 1" if self.q == 1 else self.band

    @property
    def level_error(self) -> float:
        return self.predicted_s / self.measured_s - 1

    @property
    def measured_growth(self) -> float:
        return self.measured_s / self.measured_decode_s

    @property
    def predicted_growth(self) -> float:
        return self.predicted_s / self.predicted_decode_s


def read_runs(data: Path = DATA) -> list[dict]:
    """Every timed row of every run folder under `data` (rows whose point failed are left out; the file
    written before the `mask` column existed holds chain rows)."""
    rows = []
    for path in sorted(data.glob("*/attention.csv")):
        with path.open(newline="") as handle:
            for raw in csv.DictReader(handle):
                if raw["median_s"]:
                    rows.append({**raw, "mask": raw.get("mask") or "causal"})
    return rows


def points(rows: list[dict], framework: str = "vllm") -> list[Point]:
    from profiles.measured import load_measured
    from scenarios.validation.published.gpu_forwards import attention_per_layer_s

    latency = load_measured("h100-sxm", "bf16", framework)

    @functools.cache   # (the q = 1 price of a (batch, context) serves every verify of it)
    def price(layout: str, batch: int, ctx: int, q: int, tree: bool) -> float:
        return attention_per_layer_s(layout, batch, ctx, q, tree, latency)

    decode = {(r["layout"], r["mask"], r["backend"], int(r["batch"]), int(r["ctx"])): float(r["median_s"])
              for r in rows if r["q"] == "1"}
    out = []
    for r in rows:
        layout, mask, backend = r["layout"], r["mask"], r["backend"]
        batch, ctx, q = int(r["batch"]), int(r["ctx"]), int(r["q"])
        base = decode.get((layout, mask, backend, batch, ctx))
        if base is None:
            continue
        tree = mask == "tree"
        out.append(Point(layout, mask, backend, batch, ctx, q, int(r["heads"]) // int(r["kv_heads"]),
                         float(r["median_s"]), price(layout, batch, ctx, q, tree), base,
                         price(layout, batch, ctx, 1, tree)))
    return out


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]


def summary(found: list[Point]) -> list[tuple]:
    """Per (layout, mask, backend, row band): points, median level error, median measured and predicted
    growth over q = 1, median and P90 |growth error| (predicted growth / measured growth − 1)."""
    out = []
    keys = sorted({(p.layout, p.mask, p.backend) for p in found})
    for layout, mask, backend in keys:
        for band in ("q = 1", *(label for _, _, label in ROW_BANDS)):
            group = [p for p in found if (p.layout, p.mask, p.backend, p.summary_band) == (layout, mask, backend, band)]
            if not group:
                continue
            growth_err = [p.predicted_growth / p.measured_growth - 1 for p in group]
            out.append((layout, mask, backend, band, len(group), statistics.median(p.level_error for p in group),
                        statistics.median(p.measured_growth for p in group),
                        statistics.median(p.predicted_growth for p in group),
                        statistics.median(abs(e) for e in growth_err), _p90([abs(e) for e in growth_err])))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--framework", default="vllm", choices=("vllm", "sglang", "trtllm"),
                        help="whose measured kernels price the points (default vllm)")
    parser.add_argument("--rows", action="store_true", help="print every point, not only the summary")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of run folders with attention.csv")
    args = parse_args(parser, argv)
    if isinstance(args, int):
        return args
    rows = read_runs(args.data)
    if not rows:
        print(f"verify_attention: error: --data: no attention.csv with timed rows under {args.data}", file=sys.stderr)
        return 2
    found = points(rows, args.framework)
    print(f"{len(found)} points priced with measured {args.framework} kernels; level = predicted / measured - 1; "
          "growth = time at q / time at q = 1")
    if args.rows:
        print(f"{'layout':13s} {'mask':6s} {'kernel':3s} {'B':>4s} {'ctx':>5s} {'q':>3s} {'R':>4s} "
              f"{'measured us':>11s} {'predicted us':>12s} {'level':>7s} {'growth meas/pred':>16s}")
        for p in found:
            print(f"{p.layout:13s} {p.mask:6s} {p.backend:3s} {p.batch:4d} {p.ctx:5d} {p.q:3d} {p.rows:4d} "
                  f"{p.measured_s * 1e6:11.1f} {p.predicted_s * 1e6:12.1f} {p.level_error:+7.1%} "
                  f"{p.measured_growth:7.2f} / {p.predicted_growth:5.2f}")
    print(f"{'layout':13s} {'mask':6s} {'kernel':6s} {'rows':14s} {'n':>3s} {'level':>7s} {'growth meas':>11s} "
          f"{'growth pred':>11s} {'|growth err| median':>19s} {'P90':>6s}")
    for layout, mask, backend, band, n, level, measured, predicted, med, p90 in summary(found):
        print(f"{layout:13s} {mask:6s} {backend:6s} {band:14s} {n:3d} {level:+7.1%} {measured:11.2f} "
              f"{predicted:11.2f} {med:19.1%} {p90:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
