"""The board power limit under sustained load (a named approximation, measured on an H100 SXM and an H200).

The measured tables time each GEMM in a short burst on an idle GPU (aiconfigurator's collector: 3 eager
warm-ups, a CUDA graph of the op on 6 weight copies, 3 warm-up and 6 timed replays, one case after another
with set-up between them). A server under load runs its steps back to back. On the H100 SXM (700 W limit)
compute-bound GEMMs then hold the board at its limit and the SM clock falls from 1,980 MHz to about
1,400 MHz: GEMMs shorter than 0.6 ms take a median 1.12x their burst time, while memory-bound GEMMs (few
rows) are unchanged (profiles/data/gpu-power/h100-sxm-2026-11-27/grid/gemm.csv, 48 GEMMs on the tables' grid, each
timed in the collector's burst and after 2 s back to back). The clock is the board's, shared by every kernel
of a step: a compute-bound GEMM beside memory-bound kernels slows less, because they draw less power
(`mixed/mixed.csv`: GEMMs each followed by a memory-bound pass, sustained, against the same region in a
burst — 1.12-1.15x at a GEMM share of 1, 1.02-1.07x at 2/3, 1.00-1.02x at 1/2, 1.00 from 1/3 down). The
H200 (h200-2026-11-27, same script and day) slows more: 1.16-1.18x (median 1.17) for compute-bound GEMMs
under 1 ms, 1.15-1.19x at a share of 1, 1.07-1.11x at 0.73, 1.03x at 0.40.

So a pass priced from the tables is slowed by g(S), where S is the share of the pass's burst-priced time
in compute-bound GEMMs and g is read from `mixed.csv` (medians per share, piecewise linear, 1 at S = 0).
Named approximations, each where it is made:
- a GEMM is compute-bound when its table time reaches COMPUTE_BOUND_UTILISATION of the GPU's bf16 dense
  peak (`compute_bound`);
- a table GEMM of THROTTLED_IN_TABLE_S or longer already ran into the limit inside the collector's burst and
  is not slowed again (`PowerLimit.seconds`);
- S and g(S) are taken over the dense part of a pass (GEMMs, norms, activations, LM head, collectives);
  attention is priced apart and left out of the share, which overstates S where attention is a large part
  of a pass (long contexts);
- only bf16/fp16 GEMMs count (fp8 and fused-MoE kernels were not measured), and only GPUs with a measured
  curve (`CURVES`: H100 SXM, H200) are slowed;
- the two thresholds are the H100's and serve the H200 too; there GEMMs at 42-59 % of the peak already
  slowed 1.01-1.11x (h200-2026-11-27/grid), which the rule does not count;
- it applies where a pass's dense part is priced by `simulator.cost.step_cost.ForwardCost.dense` (the plain
  target and draft-model passes and the variants that reuse it); pass pricers with a dense part of their own
  (expert-parallel MoE, EAGLE-3/MTP/Medusa heads, cascades, NanoFlow) are priced from the tables as measured.

Held-out (forwards/ of the same run, `python -m scenarios.validation.published.sustained_forwards`): real
Llama-3-8B dense layers of 512 rows slowed 1.16-1.17x sustained where g gives 1.09x; the rule takes their
error against the tables from -22..-24 % to -14..-16 %.
"""
from __future__ import annotations

import csv
import statistics
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from models import ops as K

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu-power"
# GPU id -> its measured run (DATA/<run>/mixed/mixed.csv). The H200 (same GH100 die and 700 W limit, HBM3e)
# was measured the same day with the same script: its curve is steeper (1.008 at S = 0.26, 1.065 at 0.58,
# 1.170 at 1), its memory-bound passes drawing more of the budget.
CURVES = {"h100-sxm": "h100-sxm-2026-11-27", "h200": "h200-2026-11-27"}
DTYPES = ("bf16", "fp16")                      # the tensor-core path measured (bf16; fp16 runs the same units)

# grid/gemm.csv (utilisation u = FLOPs / (burst time x bf16 dense peak)): the 22 GEMMs at u >= 0.6 whose
# burst was under 0.6 ms took 1.03-1.17x (median 1.12) their burst time sustained; the 21 at u < 0.6 took
# 0.94-1.04x (median 0.99; the four at u 0.45-0.6: 1.02-1.04x, a slow-down this rule leaves out).
COMPUTE_BOUND_UTILISATION = 0.6
# grid/settle.csv: from an idle start an 8192^3 GEMM loop held 1.39 ms per GEMM for its first ~70 ms, then
# slowed to 1.6-1.7 ms. The collector runs a GEMM 72 times (12 runs x 6 copies), so a GEMM of ~1 ms or more
# is timed past that point: grid/gemm.csv's compute-bound GEMMs of 0.7-0.8 ms read 1.05x and 1.09x their
# burst time sustained, those of 1.4-1.6 ms 0.99-1.00x.
THROTTLED_IN_TABLE_S = 1e-3


@dataclass(frozen=True)
class PowerLimit:
    """g(S) of one GPU: (share, factor) points, piecewise linear, g(0) = 1, flat past the last point."""

    run: str
    shares: tuple[float, ...]
    factors: tuple[float, ...]
    peak_flops_per_s: float

    def factor(self, share: float) -> float:
        i = bisect_right(self.shares, share)
        if i == 0:
            return self.factors[0]
        if i == len(self.shares):
            return self.factors[-1]
        s0, s1, f0, f1 = self.shares[i - 1], self.shares[i], self.factors[i - 1], self.factors[i]
        return f0 + (f1 - f0) * (share - s0) / (s1 - s0)

    def compute_bound(self, op, seconds: float) -> bool:
        """A GEMM whose table time reaches COMPUTE_BOUND_UTILISATION of the bf16 dense peak."""
        return op.kind == K.GEMM and seconds > 0.0 and op.flops / (seconds * self.peak_flops_per_s) >= \
            COMPUTE_BOUND_UTILISATION

    def seconds(self, priced) -> tuple[float, float]:
        """(seconds under the limit, S) of a pass's dense ops given as (op, table seconds of one instance)."""
        total = bound = settled = 0.0
        for op, seconds in priced:
            spent = op.count * seconds
            total += spent
            if self.compute_bound(op, seconds):
                bound += spent
                if seconds >= THROTTLED_IN_TABLE_S:
                    settled += spent
        if bound == 0.0:
            return total, 0.0
        share = bound / total
        return settled + (total - settled) * self.factor(share), share

    @property
    def data(self) -> str:
        """The measured run, as a repository path."""
        return f"profiles/data/gpu-power/{self.run}"

    def describe(self) -> dict:
        return {"data": self.data, "shares": list(self.shares),
                "factors": [round(f, 4) for f in self.factors],
                "compute_bound_utilisation": COMPUTE_BOUND_UTILISATION,
                "throttled_in_table_s": THROTTLED_IN_TABLE_S}


def read_curve(path: Path) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(shares, factors) from a mixed.csv: per pass-to-GEMM ratio, the median GEMM share and the median of
    sustained / burst region time, floored at 1 (the limit only slows; a region a little faster sustained
    is timing spread), with (0, 1) first."""
    groups: dict[float, list[tuple[float, float]]] = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["error"]:
                continue
            groups.setdefault(float(row["ratio"]), []).append(
                (float(row["gemm_share"]), float(row["sustained_region_s"]) / float(row["burst_region_s"])))
    points = sorted((statistics.median(s for s, _ in group), max(1.0, statistics.median(f for _, f in group)))
                    for group in groups.values())
    shares, factors = (0.0,) + tuple(s for s, _ in points), (1.0,) + tuple(f for _, f in points)
    return shares, factors


@lru_cache(maxsize=8)
def power_limit(hardware_id: str, dtype: str, peak_flops_per_s: float) -> PowerLimit | None:
    """The measured limit of a GPU for GEMMs of `dtype`, or None (not measured: no slow-down)."""
    run = CURVES.get(hardware_id)
    if run is None or dtype not in DTYPES:
        return None
    shares, factors = read_curve(DATA / run / "mixed" / "mixed.csv")
    return PowerLimit(run, shares, factors, peak_flops_per_s)
