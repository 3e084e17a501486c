"""Five more `draftsim profile --device cuda` runs on H100s, 2026-11-27, and a check of the shipped profile
on a fresh machine (profiles/data/gpu-profile-runs/h100-sxm-2026-11-27/; runs 4 and 5 with each timed replay
queued behind a spin kernel): each run's `--check` re-priced from its own shipped profile equals what the
device printed, the figures their README and the main README state are the files', what changed between the
runs is in their fingerprints, and the spin's A/B (busy_ab.json) says what the README says."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from profile_checks import repriced
from profiles.predictor import DATA_DIR

RUNS = DATA_DIR / "gpu-profile-runs" / "h100-sxm-2026-11-27"
SPIN_RUNS = ("run4", "run5")

# predicted / measured − 1 per check shape (README tables), run by run
CHECK_ERRORS = {
    "run1": {"decode b1 x 2k": +0.066, "decode b32 x 2k": -0.010, "decode b128 x 2k": -0.001,
             "verify q4 b32 x 2k": +0.024, "tree q8 b16 x 2k": +0.022, "prefill 2k": -0.084,
             "drafter decode b32 x 2k": +0.005},
    "run2": {"decode b1 x 2k": +0.044, "decode b32 x 2k": +0.183, "decode b128 x 2k": +0.015,
             "verify q4 b32 x 2k": +0.034, "tree q8 b16 x 2k": +0.040, "prefill 2k": -0.044,
             "drafter decode b32 x 2k": +0.028},
    "run3": {"decode b1 x 2k": +0.029, "decode b32 x 2k": -0.022, "decode b128 x 2k": -0.004,
             "verify q4 b32 x 2k": -0.004, "tree q8 b16 x 2k": +0.006, "prefill 2k": -0.104,
             "drafter decode b32 x 2k": +0.176},
    "run4": {"decode b1 x 2k": -0.008, "decode b32 x 2k": -0.004, "decode b128 x 2k": -0.000,
             "verify q4 b32 x 2k": -0.001, "tree q8 b16 x 2k": -0.002, "prefill 2k": -0.076,
             "drafter decode b32 x 2k": -0.003},
    "run5": {"decode b1 x 2k": -0.000, "decode b32 x 2k": +0.001, "decode b128 x 2k": -0.001,
             "verify q4 b32 x 2k": +0.001, "tree q8 b16 x 2k": +0.001, "prefill 2k": -0.089,
             "drafter decode b32 x 2k": +0.050},
}


@pytest.mark.parametrize("run", sorted(CHECK_ERRORS))
def test_each_runs_check_reprices_from_its_own_profile(run):
    folder = RUNS / run
    check = json.loads((folder / "check.json").read_text())
    for name, (error, row) in repriced(folder, check).items():
        assert error == pytest.approx(row["error"], abs=1e-6), (run, name)
        assert error == pytest.approx(CHECK_ERRORS[run][name], abs=5e-4), (run, name)
        assert row["measured_kernels"]["kernels"] > 300 and row["measured_kernels"]["idle_s"] >= 0.0
    assert check["passed"] == (run in ("run1", *SPIN_RUNS))


def test_the_fingerprints_record_what_changed_between_runs():
    fps = {run: json.loads((RUNS / run / "fingerprint.json").read_text()) for run in CHECK_ERRORS}
    assert all(fp["device_name"] == "NVIDIA H100 80GB HBM3" and fp["points"] == 1782 for fp in fps.values())
    assert len(fps["run1"]["eager_timed_points"]) == 1 and "tree" in fps["run1"]["eager_timed_points"][0]
    assert fps["run2"]["eager_timed_points"] == [] and fps["run3"]["eager_timed_points"] == []
    assert "timing_passes" not in fps["run2"] and fps["run3"]["timing_passes"] == 2
    assert fps["run3"]["pass_disagreements"] == 115
    assert [fps[run]["pass_disagreements"] for run in SPIN_RUNS] == [18, 27]
    for run, fp in fps.items():
        assert ("spin kernel of 1,000,000 cycles" in fp["timing"]["method"]) == (run in SPIN_RUNS), run
        assert fp["eager_timed_points"] == [] or run == "run1"


def _log_ratios(a: str, b: str) -> tuple[pd.Series, pd.Series]:
    """|log(b / a)| of every point's median, and which points are GEMM or attention above 20 µs."""
    ta, tb = (pd.read_csv(RUNS / run / "ops.csv") for run in (a, b))
    keys = [c for c in ta.columns if c not in ("median_s", "p10_s", "p90_s", "reps", "flops", "bytes")]
    both = ta.merge(tb, on=keys, suffixes=("_a", "_b"))
    assert len(both) == 1782
    large = both.kind.isin(["gemm", "attn_decode", "attn_prefill"]) & (np.minimum(both.median_s_a, both.median_s_b) > 20e-6)
    return np.abs(np.log(both.median_s_b / both.median_s_a)), large


def test_point_for_point_runs_agree_on_large_kernels_not_on_small_ones():
    for a, b in (("run1", "run2"), ("run1", "run3"), ("run2", "run3")):
        ratio, large = _log_ratios(a, b)
        assert np.expm1(np.median(ratio)) < 0.03 and 0.10 < np.expm1(np.quantile(ratio, 0.9)) < 0.20, (a, b)
        assert np.expm1(np.quantile(ratio[large], 0.9)) < 0.09, (a, b)


def test_the_two_spin_runs_agree_point_for_point():
    """Runs 4 and 5 (one machine, minutes apart): median 0.5 %, P90 2.7 %, no point 1.5x the other."""
    ratio, large = _log_ratios(*SPIN_RUNS)
    assert np.expm1(np.median(ratio)) < 0.01 and np.expm1(np.quantile(ratio, 0.9)) < 0.03
    assert np.expm1(np.quantile(ratio[large], 0.9)) < 0.02 and np.expm1(ratio.max()) < 0.25


@pytest.mark.parametrize("run", SPIN_RUNS)
def test_the_spin_ab_removes_the_outliers_of_small_points(run):
    from profiles.profiler.busy_ab import summarize
    ab = json.loads((RUNS / run / "busy_ab.json").read_text())
    assert ab["busy_cycles"] == 1_000_000 and ab["rounds"] == 3 and len(ab["rows"]) == 308
    assert summarize(ab["rows"]) == ab["summary"]
    spin, plain = ab["summary"]["spin"], ab["summary"]["no_spin"]
    assert spin["points_spread_over_3x"] == 0 and spin["max_spread"] < 2.5 and spin["points_spread_over_1_5x"] <= 3
    assert plain["points_spread_over_3x"] >= 9 and plain["max_spread"] > 50   # README: 18 and 9; 51.7x and 85.9x
    assert 0.99 < ab["summary"]["no_spin_over_spin_median"] < 1.01           # typical points: no bias either way


def test_graph_nodes_idle_a_quarter_microsecond_whatever_the_kernel_length():
    for run in ("run1", "run2"):
        gaps = json.loads((RUNS / run / "graph_gaps.json").read_text())
        idle = [row["idle_per_gap_s"] for row in gaps["series"] if row["cycles"] > 0]
        assert len(idle) == 14 and all(0.2e-6 < s < 0.35e-6 for s in idle), run


def test_the_shipped_profile_checks_on_a_fresh_machine():
    """check6: `--check-only` of the shipped profile (run4's, measured on another machine start) on a fresh
    H100 machine, 07:45 UTC: every shape within 10 %, the graph-replayed ones within 1.8 %."""
    folder = RUNS / "check6"
    check = json.loads((folder / "check.json").read_text())
    assert check["passed"] and check["max_abs_error"] == pytest.approx(0.065, abs=5e-4)
    errors = repriced(DATA_DIR / "h100-sxm", check)
    assert len(errors) == 7
    for name, (error, row) in errors.items():
        assert error == pytest.approx(row["error"], abs=1e-6), name
        assert abs(error) < (0.10 if name == "prefill 2k" else 0.02), name
    assert (folder / "gpu.txt").read_text().startswith("NVIDIA H100 80GB HBM3, GPU-")
