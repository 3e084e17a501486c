"""`draftsim validate --engine vllm` without vLLM: the comparison code on runs whose truth is known, the
shipped recorded runs, and the error contract of the command."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from profiles.engine_time.engine_profile import load_engine_profile
from scenarios.validation.vllm.cases import CASES, DATA_DIR, ENGINE, PROFILE_DIR
from scenarios.validation.vllm.compare import compare_case, engine_requests, scenario_for, speedup
from test_engine_profile import synthetic_profile
from paths import REPO, repo_env



def _profile(tmp_path) -> Path:
    folder = tmp_path / "profile"
    folder.mkdir()
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
        (folder / f"{name}.json").write_text(json.dumps(synthetic_profile(name)))
    load_engine_profile.cache_clear()
    return folder


def _requests(n=12, seed=4):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": [f"r{i:03d}" for i in range(n)],
                         "arrival_s": np.round(np.cumsum(rng.exponential(0.8, n)) - 0.5, 6).clip(0),
                         "prompt_tokens": rng.integers(16, 200, n), "output_tokens": rng.integers(8, 40, n)})


def run_as_recorded(case, requests, profile, tmp_path) -> dict:
    """A "recorded run" whose engine is the simulator itself: its requests' token times in the driver's
    format (the first token alone, the rest in one delivery at the finish)."""
    engine = {k: ENGINE[k] for k in ("max_num_seqs", "max_num_batched_tokens", "block_size")}
    sim = simulator.run(scenario_for(case, requests, engine, profile, tmp_path / "t.csv"))
    r = sim.requests.sort_values("arrival_s", kind="stable", ignore_index=True)
    rows = [{"id": i, "arrival_s": float(a), "prompt_tokens": int(p), "output_tokens": int(o),
             "token_times_s": [float(f), float(e)], "token_counts": [1, int(o) - 1], "finish_s": float(e)}
            for i, a, p, o, f, e in zip(requests.id, r.arrival_s, r.prompt_tokens, r.output_tokens,
                                        r.first_token_s, r.finish_s)]
    return {"requests": rows, "fingerprint": {"engine": engine, "loadavg_at_start": ["0", "0", "0"]},
            "loadavg_at_end": ["0", "0", "0"], "cpu": {"other_processes_cores": 0.0},
            "steps": [{}] * len(sim.steps), "spec_counters": {}}


@pytest.mark.parametrize("name", ["qwen-0.5b", "qwen-1.5b+draft"])
def test_a_run_the_simulator_made_itself_compares_with_zero_error(tmp_path, name):
    profile = _profile(tmp_path)
    case, requests = CASES[name], _requests()
    runs = [run_as_recorded(case, requests, profile, tmp_path)] * 2
    result = compare_case(case, runs, profile, tmp_path / "work")
    for metric in result["metrics"].values():
        assert metric["err_p50"] == pytest.approx(0, abs=1e-9) and metric["err_p99"] == pytest.approx(0, abs=1e-9)
        assert metric["per_request_median_err"] == pytest.approx(0, abs=1e-9)
        assert metric["spread_p50"] == 0
    assert result["throughput_tok_s"]["err"] == pytest.approx(0, abs=1e-9)


def test_metrics_of_a_recorded_run_follow_the_simulators_definitions():
    run = {"requests": [{"id": "a", "arrival_s": 1.0, "prompt_tokens": 10, "output_tokens": 4,
                         "token_times_s": [1.5, 1.7, 2.1], "token_counts": [1, 2, 1], "finish_s": 2.1}]}
    row = engine_requests(run).iloc[0]
    assert (row.ttft_s, row.e2e_s) == pytest.approx((0.5, 1.1))
    assert row.tpot_s == pytest.approx(0.6 / 3)   # (finish − first) / (emitted − 1)


def test_speedup_is_baseline_e2e_over_speculative_e2e():
    s = speedup({"mean_e2e_s": {"real": 2.0, "sim": 2.2}}, {"mean_e2e_s": {"real": 1.5, "sim": 1.65}})
    assert s["real"] == pytest.approx(0.75) and s["sim"] == pytest.approx(0.75) and s["same_direction"]
    assert not speedup({"mean_e2e_s": {"real": 2.0, "sim": 1.0}}, {"mean_e2e_s": {"real": 1.5, "sim": 1.5}})["same_direction"]


def test_ngram_case_verifies_only_what_was_proposed(tmp_path):
    profile = _profile(tmp_path)
    data = scenario_for(CASES["qwen-1.5b+ngram"], _requests(30), ENGINE, profile, tmp_path / "t.csv")
    req = simulator.run(data).requests
    fixed = simulator.run({**data, "policy": {"kind": "fixed"}}).requests
    assert (req.accepted_tokens <= req.drafted_tokens).all()
    # fewer drafts verified than γ per decode step, the same accepted tokens per step walk
    assert req.drafted_tokens.sum() < 4 * req.decode_steps.sum()
    assert fixed.drafted_tokens.sum() == 4 * fixed.decode_steps.sum()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "simulator.cli", "validate", "--engine", "vllm", *args],
                          capture_output=True, text=True, cwd=REPO, env=repo_env(), timeout=600)


@pytest.mark.parametrize("args, message", [
    (["--cases", "nope"], "--cases: unknown case nope"),
    (["--live", "--vllm-python", sys.executable], "--vllm-python: vLLM is not installed"),
    (["--data", "/nonexistent"], "--data: no recorded runs"),
    (["--profile-dir", "/nonexistent"], "--profile-dir: no such folder"),
    (["--repeats", "0", "--live"], "--repeats must be >= 1"),
    # a flag of --live without it was ignored (exit 0, the report said 2 vLLM runs for --repeats 7)
    (["--repeats", "7"], "--repeats: only --live runs vLLM"),
    (["--device", "cuda"], "--device: only --live runs vLLM"),
    (["--vllm-python", sys.executable], "--vllm-python: only --live runs vLLM"),
    (["--models-dir", "/nonexistent"], "--models-dir: only --live runs vLLM"),
    (["--allow-busy"], "--allow-busy: only --live runs vLLM"),
    # a speculative case alone was compared with no target at all, and passed (exit 0)
    (["--cases", "qwen-1.5b+draft"], "--cases: qwen-1.5b+draft is checked by its speedup over qwen-1.5b"),
    (["--cases", "qwen-0.5b,qwen-0.5b"], "--cases: qwen-0.5b is given twice"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    done = _cli(*args, "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_report_replaces_the_plots_of_an_earlier_one_whole(tmp_path, monkeypatch):
    """The report and its plots land together: a rerun of fewer cases, or with --no-plot, left the earlier run's
    plots beside a report that does not hold them; a Ctrl-C while plotting left a new report beside old plots."""
    from scenarios.validation.vllm import report
    if not any((DATA_DIR / "runs" / "qwen-0.5b").glob("run-*.json")):
        pytest.skip("no recorded vLLM runs shipped")
    out = tmp_path / "out"
    assert report.main(["--engine", "vllm", "--cases", "qwen-0.5b,qwen-1.5b", "--quiet", "--out", str(out)]) in (0, 1)
    assert {p.name for p in out.iterdir()} == {".draftsim-validate-vllm.json", "vllm_validation.json",
                                               "qwen-0.5b.png", "qwen-1.5b.png"}   # (no scratch left there)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def stopped(result, path):
        raise KeyboardInterrupt
    monkeypatch.setattr(report, "plot_case", stopped)
    assert report.main(["--engine", "vllm", "--cases", "qwen-0.5b", "--quiet", "--out", str(out)]) == 130
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    monkeypatch.undo()
    assert report.main(["--engine", "vllm", "--cases", "qwen-0.5b", "--no-plot", "--quiet", "--out", str(out)]) in (0, 1)
    assert {p.name for p in out.iterdir()} == {".draftsim-validate-vllm.json", "vllm_validation.json"}
    assert set(json.loads((out / "vllm_validation.json").read_text())["cases"]) == {"qwen-0.5b"}


def test_a_missing_model_folder_is_refused_before_anything_runs(tmp_path, monkeypatch):
    from scenarios.validation.vllm import report
    monkeypatch.setattr("simulator.workflows.vllm_launch.resolve_vllm_python", lambda explicit: sys.executable)
    code = report.main(["--engine", "vllm", "--live", "--cases", "qwen-0.5b", "--models-dir", str(tmp_path),
                        "--out", str(tmp_path / "out")])
    assert code == 2 and not (tmp_path / "out" / "runs").exists()


def test_the_shipped_recorded_runs_compare(tmp_path):
    if not any((DATA_DIR / "runs").glob("*/run-*.json")):
        pytest.skip("no recorded vLLM runs shipped")
    code = _cli("--out", str(tmp_path), "--no-plot").returncode
    assert code in (0, 1)
    report = json.loads((tmp_path / "vllm_validation.json").read_text())
    assert set(report["cases"]) == set(CASES) and report["profile_dir"] == str(PROFILE_DIR)
    for case in report["cases"].values():
        assert case["repeats"] >= 2 and all(m["real_p50"] > 0 and m["sim_p50"] > 0 for m in case["metrics"].values())
    assert set(report["speedups"]) == {"qwen-1.5b+draft", "qwen-1.5b+ngram"}
    assert code == (0 if all(report["targets"].values()) else 1)


class _FakeLLMEngine:
    """What run_workload uses of vLLM's LLMEngine: one token per running request per step."""

    def __init__(self):
        self.active = {}

    def has_unfinished_requests(self):
        return bool(self.active)


class _FakeEngine:
    def __init__(self, step_s=0.02):
        self.engine, self.step_s, self.added = _FakeLLMEngine(), step_s, []

    def add(self, prompt_ids, max_tokens, request_id):
        import time
        self.engine.active[request_id] = max_tokens
        self.added.append((request_id, time.perf_counter()))

    def step(self, t0, label=""):
        import time
        from types import SimpleNamespace
        time.sleep(self.step_s)
        outs = []
        for rid in list(self.engine.active):
            self.engine.active[rid] -= 1
            done = self.engine.active[rid] == 0
            outs.append(SimpleNamespace(request_id=rid, outputs=[SimpleNamespace(token_ids=[7])], finished=done))
            if done:
                del self.engine.active[rid]
        return outs, time.perf_counter()

    def spec_counters(self):
        return {}


def test_the_driver_adds_requests_at_step_boundaries_after_arrival_and_times_every_token():
    from profiles.engine_time.vllm_driver import run_workload
    workload = {"requests": [{"id": "a", "arrival_s": 0.0, "prompt_token_ids": [1, 2], "max_tokens": 3},
                             {"id": "b", "arrival_s": 0.05, "prompt_token_ids": [1], "max_tokens": 2},
                             {"id": "c", "arrival_s": 0.30, "prompt_token_ids": [1], "max_tokens": 1}]}
    out = run_workload(_FakeEngine(), workload)
    rows = {r["id"]: r for r in out["requests"]}
    for r in rows.values():
        assert r["added_s"] >= r["arrival_s"]                      # never before its arrival
        assert sum(r["token_counts"]) == r["output_tokens"] and r["finish_s"] == r["token_times_s"][-1]
        assert r["token_times_s"] == sorted(r["token_times_s"]) and r["token_times_s"][0] > r["added_s"]
    assert rows["b"]["added_s"] - rows["b"]["arrival_s"] < 0.05     # at the first step boundary after it
    assert rows["c"]["added_s"] == pytest.approx(0.30, abs=0.02)   # the idle engine waits for it
    assert engine_requests(out).e2e_s.min() > 0


def test_vllm_on_the_traces_own_prompts_agrees_with_the_measured_trace():
    """The acceptance measurement (one pass per prompt with draftsim's torch implementation) against vLLM's
    real draft-then-verify loop on the same prompts and weights (recorded in acceptance_check/)."""
    from scenarios.validation.vllm.acceptance_check import check
    if not (DATA_DIR / "acceptance_check" / "ngram.json").is_file():
        pytest.skip("no recorded acceptance check shipped")
    result = check(DATA_DIR)
    draft = result["draft"]
    assert draft["prompts"] == 32
    assert abs(draft["vllm_acceptance_rate"] - draft["trace_acceptance_rate"]) < 0.02
    assert abs(draft["vllm_tokens_per_step"] - draft["trace_tokens_per_step"]) < 0.1
    assert draft["per_prompt_correlation"] > 0.9
    assert 0 < result["ngram"]["vllm_acceptance_rate"] < 1


@pytest.mark.parametrize("name, blocks", [("qwen-0.5b", 682), ("qwen-1.5b+draft", 204)])
def test_the_simulated_replica_holds_vllms_own_kv_blocks(tmp_path, name, blocks):
    from sim_helpers import replica_kind
    engine = {**{k: ENGINE[k] for k in ("max_num_seqs", "max_num_batched_tokens", "block_size")}, "num_kv_blocks": blocks}
    data = scenario_for(CASES[name], _requests(), engine, _profile(tmp_path), tmp_path / "t.csv")
    assert abs(replica_kind(data).kv_tokens - blocks * ENGINE["block_size"]) <= 1
