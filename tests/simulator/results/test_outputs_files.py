"""Outputs: reproducible bytes, atomic install, refusal to clobber, plot data against brute force."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import simulator.results.outputs as outputs
from simulator.errors import ScenarioError
from simulator.results.metrics import build_requests_frame, build_steps_frame, summarize
from simulator.results.plots import PLOT_FILES, _integral_at, timeline_bins
from test_metrics_summary import HW, SLO_TINY, tiny_run

MANIFEST = ".draftsim-run.json"
EXPECTED = {"requests.parquet", "steps.parquet", "summary.json", *PLOT_FILES, MANIFEST}


@pytest.fixture(scope="module")
def run():
    requests, steps = tiny_run()
    req = build_requests_frame(requests, SLO_TINY)
    stp = build_steps_frame(steps)
    return req, stp, summarize(req, stp, slo=SLO_TINY, sim_end_s=1.0, **HW)


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_two_writes_are_byte_identical(tmp_path, run):
    first = outputs.write_outputs(tmp_path / "a", *run)
    second = outputs.write_outputs(tmp_path / "b", *run)
    assert set(listing(first)) == EXPECTED
    for name in EXPECTED - {MANIFEST}:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert listing(tmp_path) == ["a", "b"]  # no temporary folders left behind


def test_parquet_round_trip_and_json_content(tmp_path, run):
    req, stp, summary = run
    out = outputs.write_outputs(tmp_path / "run", req, stp, summary, plots=False)
    assert set(listing(out)) == {"requests.parquet", "steps.parquet", "summary.json", MANIFEST}
    pd.testing.assert_frame_equal(pd.read_parquet(out / "requests.parquet"), req)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "steps.parquet"), stp)
    text = (out / "summary.json").read_text()
    loaded = json.loads(text)
    assert list(loaded) == sorted(loaded) and "NaN" not in text
    assert loaded["slo_e2e_s"] is None and loaded["kv_use_mean"] == 0.21  # rounded to 12 digits
    assert loaded["dropped_by_reason"] == {"kv_capacity": 1}


def test_summary_json_is_stable():
    summary = {"b": np.float64(0.1) + np.float64(0.2), "a": np.int64(3), "c": math.nan, "d": np.bool_(True)}
    assert outputs.summary_json(summary) == '{\n  "a": 3,\n  "b": 0.3,\n  "c": null,\n  "d": true\n}\n'
    with pytest.raises(TypeError):
        outputs.summary_json({"x": object()})


def test_failure_leaves_no_partial_output(tmp_path, run, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk full while plotting")

    monkeypatch.setattr(outputs, "write_plots", broken)
    with pytest.raises(RuntimeError):
        outputs.write_outputs(tmp_path / "run", *run)
    assert listing(tmp_path) == []


def test_failure_keeps_the_previous_output(tmp_path, run, monkeypatch):
    req, stp, summary = run
    out = outputs.write_outputs(tmp_path / "run", req, stp, summary, plots=False)
    before = (out / "summary.json").read_bytes()
    monkeypatch.setattr(outputs, "write_plots", lambda *a, **k: (_ for _ in ()).throw(OSError("boom")))
    with pytest.raises(OSError):
        outputs.write_outputs(out, req, stp, dict(summary, steps=99))
    assert listing(tmp_path) == ["run"] and (out / "summary.json").read_bytes() == before


def test_previous_output_is_replaced(tmp_path, run):
    req, stp, summary = run
    out = outputs.write_outputs(tmp_path / "run", req, stp, summary)
    outputs.write_outputs(out, req, stp, dict(summary, steps=99), plots=False)
    assert set(listing(out)) == {"requests.parquet", "steps.parquet", "summary.json", MANIFEST}
    assert json.loads((out / "summary.json").read_text())["steps"] == 99
    assert listing(tmp_path) == ["run"]


def test_unrelated_folder_or_file_is_refused(tmp_path, run):
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("precious")
    with pytest.raises(ScenarioError) as err:
        outputs.write_outputs(keep, *run)
    assert err.value.field == "--out" and (keep / "notes.txt").read_text() == "precious"
    (tmp_path / "file").write_text("x")
    with pytest.raises(ScenarioError, match="not a directory"):
        outputs.write_outputs(tmp_path / "file", *run)
    empty = tmp_path / "empty"
    empty.mkdir()
    outputs.write_outputs(empty, *run, plots=False)
    assert (empty / "summary.json").is_file()


def test_extra_files_are_written_atomically(tmp_path, run):
    out = outputs.write_outputs(tmp_path / "run", *run, plots=False,
                                extra_files={"scenario.yaml": "seed: 1\n", "blob.bin": b"\x00\x01"})
    assert (out / "scenario.yaml").read_text() == "seed: 1\n" and (out / "blob.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(ValueError, match="file name"):
        outputs.write_outputs(tmp_path / "other", *run, plots=False, extra_files={"../x": "no"})
    assert listing(tmp_path) == ["run"]


def test_box_integral_matches_brute_force():
    rng = np.random.default_rng(1)
    starts = rng.uniform(0, 10, 200)
    ends = starts + rng.uniform(0, 2, 200)
    heights = rng.integers(0, 5, 200).astype(float)
    at = np.array([-1.0, 0.0, 2.5, 5.0, 7.25, 11.0, 20.0])
    brute = [np.sum(heights * np.clip(np.minimum(ends, t) - starts, 0, None)) for t in at]
    np.testing.assert_allclose(_integral_at(starts, ends, heights, at), brute, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(_integral_at(np.zeros(0), np.zeros(0), np.zeros(0), at), np.zeros(len(at)))


def test_timeline_bins_conserve_tokens_and_average_counts(run):
    _, steps, _ = run
    edges, throughput, queued, running = timeline_bins(steps, 0.0, 1.0, bins=10)
    assert np.sum(throughput * np.diff(edges)) == pytest.approx(steps["emitted_tokens"].sum())
    # step log (0.2 s each bin pair): running is 1 everywhere except 2 during [0.5, 0.6)
    np.testing.assert_allclose(running, [1, 1, 1, 1, 1, 2, 1, 1, 1, 1])
    np.testing.assert_allclose(queued, [0, 0, 1, 1, 2, 0, 0, 0, 0, 0])


def test_timeline_of_aggregated_steps_matches_the_full_log(tmp_path):
    """`outputs.steps: aggregate` kept per-interval sums that the timeline plot read as steps: `draftsim run`
    ended in a KeyError traceback ('start_s') after the whole run, plots being on by default (2026-11-28).
    The timeline is now drawn from the sums, and agrees with the one of every step; a sampled log's is
    an estimate from the kept steps (each counted step_sample_every times)."""
    import simulator
    from contract import cli, write_scenario
    from sim_helpers import scenario
    from simulator.results.plots import aggregate_timeline_bins

    data = scenario(workload={"num_requests": 60})
    full = simulator.run(data)
    agg = simulator.run(data, ["outputs.steps=aggregate", "outputs.step_interval_s=0.05"])
    window = full.summary["window_start_s"], full.summary["window_end_s"]
    edges, throughput, _, running = timeline_bins(full.steps, *window)
    edges_agg, throughput_agg, _, running_agg = aggregate_timeline_bins(agg.steps, *window, 0.05)
    np.testing.assert_array_equal(edges, edges_agg)
    assert np.sum(throughput_agg * np.diff(edges)) == pytest.approx(np.sum(throughput * np.diff(edges)), rel=1e-3)
    assert np.sum(running_agg * np.diff(edges)) == pytest.approx(np.sum(running * np.diff(edges)), rel=1e-3)
    for steps in ("aggregate", "sampled"):
        path = write_scenario(tmp_path / f"{steps}.yaml", {**data, "outputs": {"steps": steps}})
        code, _, err = cli("run", path, "--out", tmp_path / steps, "--quiet")
        assert code == 0, err
        assert set(PLOT_FILES) <= set(listing(tmp_path / steps))


@pytest.mark.parametrize("count", [3, 8, 61])
def test_latency_cdfs_of_many_runs_draw_without_a_warning(tmp_path, count):
    """A compare of 61 variants gave each panel a legend of 61 lines: constrained layout warned that the axes
    collapsed to nothing (a blank plot). Beyond seven runs the legend is one, below the panels, and every run
    has its own colour and line style."""
    import warnings

    from matplotlib.image import imread

    from simulator.results.plots import _run_styles, plot_latency_cdfs_overlaid
    rng = np.random.default_rng(3)
    runs = {f"seed={i}": pd.DataFrame({"dropped": False, "finish_s": 1.0, "ttft_s": rng.random(20),
                                       "tpot_s": rng.random(20) / 100, "e2e_s": rng.random(20) * 3})
            for i in range(count)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot_latency_cdfs_overlaid(runs, {"slo_ttft_s": 0.5}, tmp_path / "cdf.png")
    assert imread(tmp_path / "cdf.png").shape[0] >= 360
    styles = _run_styles(count)
    assert len(set(styles)) == count
