"""The error contract of every command (simulator.console.contract): bad input is one line naming the
field, exit 2, nothing written, found before any work; Ctrl-C is one line and exit 130; a missing
optional dependency names the extra to install. Cases a new user hit, one test each."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from contract import assert_one_line, run_cli
from sim_helpers import scenario
from simulator.cli import main
from paths import REPO



def test_smartspec_max_gamma_below_the_drafters_gamma_runs_in_both_modes(tmp_path, capsys):
    """SmartSpec chooses γ in 0..max_gamma; a max_gamma below drafter.gamma used to break the acceptance
    rows' shapes (broadcast error). Bulk and step modes agree."""
    data = scenario(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                    acceptance={"kind": "constant", "alpha": 0.7},
                    policy={"kind": "smartspec", "max_gamma": 2}, workload={"num_requests": 60})
    outputs = []
    for mode in ("bulk", "step"):
        code, err, out = run_cli(tmp_path, data, "--step-mode", mode, out_name=mode)
        assert code == 0, err
        outputs.append((out / "summary.json").read_bytes())
    assert outputs[0] == outputs[1]
    steps = __import__("pandas").read_parquet(tmp_path / "bulk" / "steps.parquet")
    decode = steps[steps["prefill_seqs"] == 0]
    assert (decode["accepted_tokens"] <= 2 * decode["decode_seqs"]).all()  # at most max_gamma = 2 per request
    assert decode["accepted_tokens"].sum() > 0


def test_predicted_rows_of_a_chain_pad_past_its_depth_with_zero():
    import numpy as np

    from simulator.speculation.acceptance import ChainAcceptance
    chain = ChainAcceptance.from_alphas([0.8, 0.5], gamma=3)
    ids, emitted = np.arange(2), np.ones(2, dtype=np.int64)
    np.testing.assert_allclose(chain.predicted_rows(ids, emitted, 2)[0], [0.8, 0.5])
    np.testing.assert_allclose(chain.predicted_rows(ids, emitted, 5)[0], [0.8, 0.5, 0.5, 0, 0])


def test_a_run_that_cannot_fit_in_memory_is_refused_before_any_work(tmp_path, capsys):
    code, err, out = run_cli(tmp_path, scenario(workload={"num_requests": 1_000_000_000,
                                                          "arrival": {"process": "poisson", "qps": 1000.0}}))
    assert code == 2
    assert_one_line(err, "workload.num_requests")
    assert "GiB" in err and not out.exists()
    # duration × rate is the expected request count of a duration-bounded workload
    data = scenario(workload={"num_requests": None, "duration_s": 5e7, "arrival": {"process": "poisson", "qps": 10.0}})
    code, err, out = run_cli(tmp_path, data)
    assert code == 2
    assert_one_line(err, "workload.duration_s")


def test_memory_check_arithmetic():
    from simulator.config.host_memory import BASE_BYTES, MIN_BYTES_PER_REQUEST, check_memory
    from simulator.config.scenario import parse_scenario
    from simulator.errors import ScenarioError

    s = parse_scenario(scenario(workload={"num_requests": 1000}))
    fits = BASE_BYTES + 1000 * MIN_BYTES_PER_REQUEST
    check_memory(s, available=fits)
    with pytest.raises(ScenarioError, match="at most about 999 requests"):
        check_memory(s, available=fits - 1)


def test_bad_out_is_found_before_the_simulation(tmp_path, capsys, monkeypatch):
    import simulator.api as api

    def no_simulation(*args, **kwargs):
        raise AssertionError("simulated although --out was bad")

    monkeypatch.setattr(api, "simulate", no_simulation)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for bad in (blocker, blocker / "sub", REPO / "simulator"):
        path = tmp_path / "s.yaml"
        path.write_text(yaml.safe_dump(scenario()))
        code = main(["run", str(path), "--out", str(bad), "--quiet"])
        err = capsys.readouterr().err.strip()
        assert code == 2
        assert_one_line(err, "--out")
    assert blocker.read_text() == "x"


def test_out_probe_leaves_no_folders_behind(tmp_path, capsys):
    code, err, out = run_cli(tmp_path, scenario(workload={"arrival": {"qps": -1.0}}),
                          out_name="a/b/c")
    assert code == 2 and not (tmp_path / "a").exists()
    from simulator.results.outputs import check_output_dir
    check_output_dir(tmp_path / "x" / "y")
    assert not (tmp_path / "x").exists()


def test_a_directory_as_the_scenario_says_so(tmp_path, capsys):
    (tmp_path / "one.yaml").write_text("x: 1\n")
    code = main(["run", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert_one_line(err, "scenario")
    assert "is a directory" in err and "one.yaml" in err


def test_a_missing_optional_dependency_names_the_extra(monkeypatch, capsys):
    """`draftsim profile` without torch: one line saying which extra to install, exit 2."""
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ModuleNotFoundError
    for name in [m for m in sys.modules if m.startswith("profiles.profiler")]:
        monkeypatch.delitem(sys.modules, name)
    code = main(["profile", "--device", "cpu", "--models", "llama-68m"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert_one_line(err, "torch")
    assert "pip install -e '.[torch]'" in err


def _interrupt(args: list[str], ready, cwd: Path) -> subprocess.CompletedProcess:
    """Run `draftsim ARGS` in a child whose Ctrl-C is the default one; send it SIGINT once `ready()`."""
    code = "import sys; from simulator.cli import main; sys.exit(main(sys.argv[1:]))"
    child = subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not ready() and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    return subprocess.CompletedProcess(args, child.returncode, out, err)


@pytest.mark.slow
def test_ctrl_c_on_run_prints_one_line_exits_130_and_writes_nothing(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(scenario(workload={"num_requests": 200_000, "arrival": {"qps": 50.0}})))
    t0 = time.monotonic()
    done = _interrupt(["run", str(path), "--out", str(tmp_path / "out")], lambda: time.monotonic() - t0 > 6, tmp_path)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "draftsim: interrupted"
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["big.yaml"]  # no staging folder either


@pytest.mark.slow
def test_ctrl_c_on_a_sweep_keeps_finished_points_and_resumes(tmp_path):
    sweep = {"name": "intr", "scenario": str(REPO / "scenarios" / "quickstart.yaml"),
             "set": ["workload.num_requests=1500", "outputs.plots=false"],
             "grid": {"workload.arrival.qps": [4, 8, 12, 16, 20, 24]}, "replications": 2}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    out = tmp_path / "store"
    stored = lambda: [p for p in (out / "points").glob("*.parquet")] if (out / "points").is_dir() else []
    done = _interrupt(["sweep", str(path), "--out", str(out), "--workers", "2"], lambda: len(stored()) >= 2,
                      tmp_path)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "draftsim: interrupted"
    assert "Traceback" not in done.stderr
    kept = len(stored())
    assert 2 <= kept < 12
    assert not [p for p in (out / "points").iterdir() if p.name.startswith(".")]  # nothing half-written
    assert main(["sweep", str(path), "--out", str(out), "--resume", "--quiet", "--workers", "2"]) == 0
    rows = __import__("pandas").read_parquet(out / "results.parquet")
    assert len(rows) == 12 and (rows["status"] == "ok").all()
    assert json.loads((out / "manifest.json").read_text())["name"] == "intr"


def _sweep_file(tmp_path, **extra) -> Path:
    sweep = {"name": "s", "scenario": str(REPO / "scenarios" / "quickstart.yaml"),
             "set": ["workload.num_requests=50", "outputs.plots=false"],
             "grid": {"workload.arrival.qps": [4, 8]}, **extra}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return path


@pytest.mark.parametrize("plot, field", [({"x": "drafter.gamma"}, "plot.x"),
                                         ({"hue": "workload.arrival.qps"}, "plot.hue")])
def test_a_bad_sweep_plot_section_is_refused_before_any_point_runs(tmp_path, capsys, plot, field):
    code = main(["sweep", str(_sweep_file(tmp_path, plot=plot)), "--out", str(tmp_path / "store"), "--plot"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert_one_line(err, field)
    assert not (tmp_path / "store").exists()


def test_a_misspelt_sweep_plot_metric_stops_the_sweep_before_anything_is_written(tmp_path, capsys):
    path = _sweep_file(tmp_path, plot={"metrics": ["goodput_rsp"]})
    code = main(["sweep", str(path), "--out", str(tmp_path / "store"), "--plot", "--executor", "serial"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert_one_line(err, "sweep.plot.metrics")
    assert "goodput_rps" in err  # the known metrics are listed
    assert not (tmp_path / "store").exists()
    # a store with finished points: the metric is checked against them before any point runs
    assert main(["sweep", str(_sweep_file(tmp_path)), "--out", str(tmp_path / "store"), "--executor", "serial",
                 "--quiet"]) == 0
    before = sorted(p.name for p in (tmp_path / "store" / "points").iterdir())
    path = _sweep_file(tmp_path, plot={"metrics": ["goodput_rsp"]})
    code = main(["sweep", str(path), "--out", str(tmp_path / "store"), "--plot", "--executor", "serial", "--resume"])
    assert code == 2 and "sweep.plot.metrics" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "store" / "points").iterdir()) == before


@pytest.mark.slow
def test_an_unreachable_dask_scheduler_leaves_no_store_behind(tmp_path, capsys):
    pytest.importorskip("distributed")
    code = main(["sweep", str(_sweep_file(tmp_path)), "--out", str(tmp_path / "store"),
                 "--executor", "dask://127.0.0.1:9"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert_one_line(err, "--executor")
    assert not (tmp_path / "store").exists()


def test_a_validation_error_from_a_model_check_reads_as_the_validators_message(tmp_path, capsys):
    code, err, out = run_cli(tmp_path, scenario(scheduler={"kind": "sarathi", "chunk_tokens": 4096,
                                                                "max_batched_tokens": 512}))
    assert code == 2
    assert_one_line(err, "scheduler: chunk_tokens (4096) must be <= max_batched_tokens (512)")
    assert "Value error" not in err


@pytest.mark.parametrize("field,value", [("hardware", -1), ("model", 5), ("hardware", [1, 2])])
def test_a_scalar_where_a_name_or_mapping_is_expected_says_what_the_field_takes(tmp_path, capsys, field, value):
    """`cluster.hardware` and `cluster.model` take a name/path or a mapping (a union): the message names the
    field (not pydantic's member tag, `cluster.hardware.str`) and both kinds of value it takes."""
    data = scenario()
    data["cluster"][field] = value
    code, err, out = run_cli(tmp_path, data)
    assert code == 2 and not out.exists()
    assert_one_line(err, f"cluster.{field}:")
    assert "a name or path (string) or a mapping" in err and f"cluster.{field}." not in err


@pytest.mark.parametrize("word", ["fixed", "specreason", "proposed", "pearl", "smartspec"])
def test_the_readmes_bare_word_policies_read_as_their_kind(word):
    """`policy: fixed` (as the README writes kinds without fields) means `policy: {kind: fixed}`; it used to
    say "Input should be a valid dictionary". The same for drafter, speculation and acceptance."""
    from simulator.config.scenario import parse_scenario
    base = scenario(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3})
    bare = parse_scenario(dict(base, policy=word, speculation="chain"))
    assert bare == parse_scenario(dict(base, policy={"kind": word}, speculation={"kind": "chain"}))
    assert bare.policy.kind == word


def test_a_trace_of_many_requests_says_which_request_slices_it_keeps(tmp_path):
    with pytest.warns(UserWarning, match="trace.json: request slices for the first 5 of 12 requests"):
        code, err, out = run_cli(tmp_path, scenario(workload={"num_requests": 12}), "--trace", "--trace-requests", "5")
    assert code == 0
    events = json.loads((out / "trace.json").read_text())["traceEvents"]
    slices = {e["args"]["request_id"] for e in events if e.get("cat") == "request" and "args" in e
              and "request_id" in e["args"]}
    assert slices and max(slices) < 5


def test_a_trace_of_sampled_steps_says_it_draws_the_sample(tmp_path):
    """The warning said '(steps: all)' although trace.json draws the steps the log kept."""
    sampled = scenario(workload={"num_requests": 12}, outputs={"steps": "sampled", "step_sample_every": 3})
    with pytest.warns(UserWarning, match=r"\(steps: one in 3 of each replica's, as kept\)"):
        code, err, out = run_cli(tmp_path, sampled, "--trace", "--trace-requests", "5")
    assert code == 0
