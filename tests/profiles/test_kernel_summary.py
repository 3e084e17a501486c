"""`draftsim profile --check`'s kernel report of a forward (profiles.profiler.observe): per-category seconds,
and the summary that shows where a check's error lies (kernel count, device-timeline span, its idle part,
the top kernels); and profiles.profiler.graph_gaps without a GPU. torch.profiler's CUDA events need a GPU,
so the events here are written by hand: three kernels with known starts and durations, worked out below."""
from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")

from profiles.profiler.observe import categorize, kernel_breakdown, kernel_summary  # noqa: E402

# (name, device seconds, start seconds): a GEMM 0–10 µs, a gap of 2 µs, an RMSNorm 12–15 µs, a gap of 1 µs,
# the same GEMM again 16–26 µs. Busy 23 µs over a 26 µs span: 3 µs idle.
EVENTS = [("nvjet_tst_128x64_gemm", 10e-6, 0.0), ("triton_red_fused_rsqrt_0", 3e-6, 12e-6),
          ("nvjet_tst_128x64_gemm", 10e-6, 16e-6)]


def test_categories_of_the_kernels():
    assert [categorize(name) for name, _, _ in EVENTS] == ["gemm", "norm", "gemm"]
    assert categorize("vectorized_elementwise_kernel") == "other"


def test_breakdown_sums_device_seconds_per_category():
    assert kernel_breakdown(EVENTS) == {"gemm": 20e-6, "norm": 3e-6}


def test_summary_counts_kernels_and_the_idle_part_of_the_span():
    summary = kernel_summary(EVENTS)
    assert summary["kernels"] == 3
    assert summary["busy_s"] == pytest.approx(23e-6)
    assert summary["span_s"] == pytest.approx(26e-6)
    assert summary["idle_s"] == pytest.approx(3e-6)
    assert summary["kernels_by_kind"] == {"gemm": 2, "norm": 1}
    assert summary["top"] == [["nvjet_tst_128x64_gemm", 2, pytest.approx(20e-6)],
                              ["triton_red_fused_rsqrt_0", 1, pytest.approx(3e-6)]]
    assert kernel_summary(EVENTS, top=1)["top"] == [["nvjet_tst_128x64_gemm", 2, pytest.approx(20e-6)]]


def test_summary_of_no_kernels_and_of_events_without_start_times():
    assert kernel_summary([])["kernels"] == 0 and kernel_summary([])["span_s"] == 0.0
    assert math.isnan(kernel_summary([("k", 1e-6, math.nan)])["span_s"])


def test_graph_gaps_says_it_needs_cuda_and_writes_nothing(capsys, tmp_path, monkeypatch):
    import torch
    from profiles.profiler import graph_gaps
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert graph_gaps.main(["--out", str(tmp_path / "gaps")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "CUDA" in err, err
    assert not (tmp_path / "gaps").exists()


def test_a_failed_observation_is_recorded_in_the_check_row_not_raised():
    import torch
    from profiles.profiler.check import _observe
    if torch.cuda.is_available():
        pytest.skip("needs a machine whose torch.profiler cannot observe CUDA kernels")
    observed = {"measured_kernels_by_kind_s": {}}
    _observe(lambda: None, torch.device("cpu"), observed)   # torch.cuda.synchronize fails without a GPU
    assert set(observed) == {"measured_kernels_by_kind_s"}
    assert "error" in observed["measured_kernels_by_kind_s"]
