"""Held-out check of the power-limit rule (profiles.measured.power_limit) against whole Llama-3-8B forwards and
one layer's dense ops timed on an H100 in a burst after idle and back to back at the 700 W limit
(profiles/data/gpu-power/h100-sxm-2026-11-27/forwards/, measured after the rule's curve was read from the
GEMM runs beside it; nothing is fitted to these rows).

    python -m scenarios.validation.published.sustained_forwards

Each row is priced as `gpu_forwards` prices the 2026-11-26 forwards (vLLM's measured kernels, no engine
time), with the rule (`with limit`, what the simulator charges) and without it (`tables`: Σ count·seconds),
and compared with the sustained time (error = predicted / measured − 1). The forwards' attention ran torch's
kernels (FlashAttention-2 for decode and chains, cuDNN for GQA-packed trees), not the engines': read the
`dense` rows for the rule, the `forward` rows for the whole pass.
"""
from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from pathlib import Path

from models.errors import doc_description
from scenarios.validation.published.gpu_forwards import predict
from simulator.console.contract import parse_args

RUN = Path(__file__).resolve().parents[3] / "profiles" / "data" / "gpu-power" / "h100-sxm-2026-11-27" / "forwards"


class _Tables:
    """The measured model's op prices without the power limit (no `sustained_seconds`)."""

    def __init__(self, latency):
        self.latency = latency

    def op_seconds(self, op) -> float:
        return self.latency.op_seconds(op)


@dataclass(frozen=True)
class Row:
    batch: int
    ctx: int
    q: int
    mask: str
    region: str          # forward | dense (one layer)
    burst_s: float
    sustained_s: float
    clock_mhz: float
    limited_s: float     # priced with the power limit
    tables_s: float      # priced without it

    def error(self, predicted: float) -> float:
        return predicted / self.sustained_s - 1.0


def rows(run: Path = RUN) -> list[Row]:
    from profiles.measured import load_measured
    latency = load_measured("h100-sxm", "bf16", "vllm")
    tables = _Tables(latency)
    out = []
    with (run / "forwards.csv").open(newline="") as handle:
        for raw in csv.DictReader(handle):
            if raw["error"]:
                continue
            b, ctx, q, tree = int(raw["batch"]), int(raw["ctx"]), int(raw["q"]), raw["mask"] == "tree"
            limited = predict(raw["model"], b, ctx, q, tree, latency)[raw["region"]]
            plain = predict(raw["model"], b, ctx, q, tree, tables)[raw["region"]]
            out.append(Row(b, ctx, q, raw["mask"], raw["region"], float(raw["burst_s"]), float(raw["sustained_s"]),
                           float(raw["clock_mhz"]), limited, plain))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    args = parse_args(parser, argv)
    if isinstance(args, int):
        return args
    if not (RUN / "forwards.csv").is_file():
        print(f"sustained_forwards: error: no forwards.csv in {RUN}", file=sys.stderr)
        return 2
    print(f"{RUN.relative_to(RUN.parents[4])}: predicted / measured sustained - 1 (vLLM's measured kernels)")
    print(f"{'B':>4} {'ctx':>5} {'q':>5} {'mask':6} {'region':8} {'burst ms':>9} {'sustained':>9} {'MHz':>6} "
          f"{'tables':>8} {'with limit':>10}")
    for r in rows():
        print(f"{r.batch:4d} {r.ctx:5d} {r.q:5d} {r.mask:6} {r.region:8} {r.burst_s * 1e3:9.3f} "
              f"{r.sustained_s * 1e3:9.3f} {r.clock_mhz:6.0f} {r.error(r.tables_s):+8.1%} "
              f"{r.error(r.limited_s):+10.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
