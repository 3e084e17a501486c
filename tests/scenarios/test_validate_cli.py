"""`draftsim validate`: --quick runs end to end and writes its table, CSVs, JSON and plot; bad flags and
inputs give one line on stderr and exit 2; the comparison statistics are what they claim to be."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")

from profiles.predictor import DATA_DIR  # noqa: E402
from profiles.profiler.table import read_fingerprint  # noqa: E402
from scenarios.validation.reference.compare import (STEP_KEYS, match_requests, match_steps, pct_error,  # noqa: E402
                                        request_summary, step_summary)
from scenarios.validation.run import main  # noqa: E402


pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

@pytest.fixture(scope="module")
def quick_profile(tmp_path_factory):
    """The shipped CPU profile when it covers llama-68m, else a quick one measured here (seconds)."""
    shipped = DATA_DIR / "cpu-local"
    if (shipped / "ops.csv").is_file() and "llama-68m" in read_fingerprint(shipped).get("models", []):
        return shipped
    from profiles.profiler.run import run_profile
    return run_profile("cpu", ["llama-68m"], tmp_path_factory.mktemp("profile"), quick=True, threads=1,
                       collectives=False, progress=False)


def test_validate_quick_end_to_end(tmp_path, quick_profile, capsys):
    out = tmp_path / "val"
    rc = main(["--quick", "--out", str(out), "--profile-dir", str(quick_profile)])
    captured = capsys.readouterr()
    printed = captured.out
    assert "per step" in printed and "E2E P99" in printed
    summary = json.loads((out / "validation.json").read_text())
    # Exit 1 exactly when a target is missed, with one line saying which (the outputs are written anyway).
    missed = [name for name, ok in summary["targets"].items() if not ok]
    assert rc == (1 if missed else 0)
    assert ("targets missed" in captured.err) == bool(missed)
    load = summary["machine_load"]
    assert load["threads"] == summary["reference"]["threads"] and load["cpu_count"] >= 1
    assert ("cannot be trusted" in summary.get("warning", "")) == load["oversubscribed"]
    st, rq = summary["steps"], summary["requests"]
    assert st["steps_matched"] == st["steps_measured"] == st["steps_simulated"] > 0
    assert st["first_divergence"] == -1
    assert np.isfinite(st["step_median_abs_pct"]) and st["step_p90_abs_pct"] >= st["step_median_abs_pct"]
    assert set(summary["targets"]) == {"step_median_abs_le_3pct", "e2e_p50_abs_le_3pct", "e2e_p99_abs_le_8pct"}
    # The reference runs with the profile's thread count unless --threads says otherwise.
    assert summary["reference"]["threads"] == read_fingerprint(quick_profile)["threads"] == summary["profile"]["threads"]
    steps = pd.read_csv(out / "steps.csv")
    requests = pd.read_csv(out / "requests.csv")
    assert len(steps) == st["steps_matched"] and len(requests) == rq["requests"] == 8
    # The table's figures are the CSVs' figures.
    np.testing.assert_allclose(np.median(np.abs(steps["err_pct"])), st["step_median_abs_pct"], rtol=1e-6)
    np.testing.assert_allclose(np.percentile(requests["measured_e2e_s"], 99), rq["e2e_p99_measured_s"], rtol=1e-6)
    png = (out / "validation.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


@pytest.mark.slow
def test_repeats_and_op_breakdown(tmp_path, quick_profile, capsys):
    """The README's `--repeats 3` and `--op-breakdown` runs, on the quick scenario: per-step medians over
    the repeats with their spread, and measured vs priced seconds per op kind in ops.csv."""
    out = tmp_path / "val"
    rc = main(["--quick", "--repeats", "2", "--op-breakdown", "--no-plot", "--out", str(out),
               "--profile-dir", str(quick_profile)])
    summary = json.loads((out / "validation.json").read_text())
    assert rc == (0 if all(summary["targets"].values()) else 1)
    assert summary["noise"]["repeats"] == 2 and len(summary["per_repeat"]) == 2
    ops = pd.read_csv(out / "ops.csv")
    assert len(ops) > 0 and "noise over 2 repeats" in capsys.readouterr().out
    # A rerun into the same folder replaces the validation: the first one's ops.csv (or validation.png, with
    # --no-plot) was left beside the new files, which do not come with it.
    main(["--quick", "--no-plot", "--quiet", "--out", str(out), "--profile-dir", str(quick_profile)])
    assert sorted(p.name for p in out.iterdir()) == [".draftsim-validate.json", "requests.csv", "steps.csv",
                                                     "validation.json"]


@pytest.mark.parametrize("argv", [["--device", "tpu"], ["--bogus"], ["--threads", "0"], ["--threads", "x"],
                                  ["--quick", "--profile-dir", "/nonexistent/profile"],
                                  ["--quick", "--scenario", "/nonexistent.yaml", "--profile-dir", "@PROFILE"],
                                  ["--quick", "--profile-first", "--profile-dir", "@PROFILE"]])
def test_bad_flags_and_inputs_print_one_line_and_exit_2(argv, quick_profile, capsys):
    argv = [str(quick_profile) if a == "@PROFILE" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("draftsim validate: error:") and len(err.strip().splitlines()) == 1


def test_quick_and_another_scenario_are_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """--quick is the scenario cpu_quick.yaml: beside --scenario it was ignored, and the whole other scenario ran."""
    from scenarios.validation import run as validate
    monkeypatch.setattr(validate, "run_validation", lambda *a, **k: pytest.fail("the validation ran"))
    other = str(validate.SCENARIO_DIR / "cpu.yaml")
    assert validate.main(["--quick", "--scenario", other, "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert err == (f"draftsim validate: error: --quick: runs scenarios/validation/cpu_quick.yaml, and --scenario gives "
                   f"{other}; give one of them\n")
    assert not (tmp_path / "v").exists()


def test_profile_first_measures_the_scenarios_models_here_and_validates_with_them(tmp_path, monkeypatch, capsys):
    """--profile-first: the target and draft of the scenario are profiled on this machine into OUT/profile/
    and the simulator prices with that profile (run here on the profiler's coarse CI grid for speed)."""
    from scenarios.validation import run as validate
    from profiles.profiler import run as profiler_run

    measured = []
    real = profiler_run.run_profile

    def coarse(device, models, out_dir, **kw):
        measured.append((device, list(models), out_dir))
        return real(device, models, out_dir, **{**kw, "quick": True})

    monkeypatch.setattr(profiler_run, "run_profile", coarse)
    out = tmp_path / "val"
    assert validate.main(["--quick", "--profile-first", "--out", str(out), "--no-plot"]) in (0, 1)  # 1: a target missed
    assert measured == [("cpu", ["llama-68m"], out / "profile")]   # cpu_quick.yaml: llama-68m drafts itself
    summary = json.loads((out / "validation.json").read_text())
    assert summary["profile"]["dir"] == str((out / "profile").resolve())
    assert "measured on" not in summary.get("warning", "")   # measured on this very machine
    assert "E2E P99" in capsys.readouterr().out


# ---- comparison statistics ----------------------------------------------------------------------------
def _steps(durations, decode_seqs, draft_frac=0.4):
    n = len(durations)
    frame = pd.DataFrame({k: np.zeros(n, dtype=np.int64) for k in STEP_KEYS})
    frame["decode_seqs"] = decode_seqs
    frame["prefill_seqs"] = (np.asarray(decode_seqs) == 0).astype(np.int64)
    frame["duration_s"] = np.asarray(durations, float)
    frame["draft_s"] = frame["duration_s"] * draft_frac
    frame["verify_s"] = frame["duration_s"] * (1 - draft_frac)
    return frame


def test_step_errors_by_index_and_divergence():
    measured = _steps([1.0, 2.0, 4.0, 5.0], [0, 2, 2, 1])
    simulated = _steps([1.1, 1.8, 4.0, 6.0], [0, 2, 2, 1], draft_frac=0.5)
    match = match_steps(measured, simulated)
    assert match.first_divergence is None and len(match.frame) == 4
    np.testing.assert_allclose(match.frame["err_pct"], [10.0, -10.0, 0.0, 20.0])
    summary = step_summary(match)
    assert summary["step_median_abs_pct"] == pytest.approx(10.0)
    assert summary["step_p90_abs_pct"] == pytest.approx(np.percentile([10, 10, 0, 20], 90))
    assert summary["step_mean_signed_pct"] == pytest.approx(5.0)
    assert summary["steps_prefill"] == 1 and summary["steps_decode"] == 3
    np.testing.assert_allclose(match.frame["draft_err_pct"], pct_error(simulated["draft_s"], measured["draft_s"]))
    # A composition difference at step 2 stops the matching there.
    simulated.loc[2, "decode_context_tokens"] = 99
    match = match_steps(measured, simulated)
    assert match.first_divergence == 2 and len(match.frame) == 2
    # Different lengths with an identical prefix: divergence at the shorter length.
    match = match_steps(measured, measured.iloc[:3])
    assert match.first_divergence == 3 and len(match.frame) == 3


def test_request_percentile_errors_against_numpy():
    rng = np.random.default_rng(0)
    n = 40
    meas = pd.DataFrame({"request_id": np.arange(n), "prompt_tokens": 1, "output_tokens": 2,
                         "ttft_s": rng.uniform(0.1, 1, n), "tpot_s": rng.uniform(0.01, 0.1, n),
                         "e2e_s": rng.uniform(1, 10, n)})
    sim = meas.copy()
    for col in ("ttft_s", "tpot_s", "e2e_s"):
        sim[col] = meas[col] * rng.uniform(0.9, 1.1, n)
    frame = match_requests(meas, sim.iloc[::-1])            # joined on request_id, not row order
    summary = request_summary(frame)
    for metric in ("ttft", "tpot", "e2e"):
        m, s = meas[f"{metric}_s"].to_numpy(), sim[f"{metric}_s"].to_numpy()
        for name, q in (("p50", 50), ("p99", 99)):
            expected = abs(np.percentile(s, q) - np.percentile(m, q)) / np.percentile(m, q) * 100
            assert summary[f"{metric}_{name}_abs_pct"] == pytest.approx(expected)
        assert summary[f"{metric}_request_median_abs_pct"] == pytest.approx(np.median(np.abs(s - m) / m * 100))
