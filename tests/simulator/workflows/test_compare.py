"""`draftsim compare`: one table of headline metrics with changes against the first run, overlaid CDFs;
every run validated before any is simulated; same seed ⇒ same bytes."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml

from sim_helpers import scenario
from simulator.cli import main
from simulator.workflows.compare import METRICS, compare_frame, variants


def _write(tmp_path, name, data):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_frame_holds_each_value_and_the_change_against_the_first():
    a = {"ttft_p50_s": 0.1, "goodput_rps": 4.0, "slo_attainment": 0.5}
    b = {"ttft_p50_s": 0.15, "goodput_rps": 0.0, "slo_attainment": 0.75}
    frame = compare_frame(["a", "b"], [a, b]).set_index("key")
    assert frame.loc["ttft_p50_s", "a"] == pytest.approx(100.0) and frame.loc["ttft_p50_s", "b"] == pytest.approx(150.0)
    assert frame.loc["ttft_p50_s", "b vs a %"] == pytest.approx(50.0)
    assert frame.loc["ttft_p50_s", "b - a"] == pytest.approx(50.0)
    assert frame.loc["goodput_rps", "b vs a %"] == pytest.approx(-100.0)
    assert frame.loc["slo_attainment", "b"] == pytest.approx(75.0)
    assert math.isnan(frame.loc["mfu", "a"])  # missing in the summary: NaN, never a made-up 0
    assert list(frame.index) == [m[0] for m in METRICS]


def test_variants_of_one_scenario_and_of_several_files(tmp_path):
    runs = variants(["s.yaml"], ["seed=3"], [["drafter.gamma=2"], ["drafter.gamma=6", "acceptance.alpha=0.6"]])
    assert [r.label for r in runs] == ["s", "drafter.gamma=2", "drafter.gamma=6 acceptance.alpha=0.6"]
    assert runs[2].overrides == ["seed=3", "drafter.gamma=6", "acceptance.alpha=0.6"]
    assert [r.label for r in variants(["a/x.yaml", "b/x.yaml"], [], [])] == ["x", "x (2)"]


def test_each_run_has_a_column_of_its_own(tmp_path):
    """x/s.yaml, y/s.yaml and 's (2).yaml' were labelled s, s (2), s (2): compare.csv had one column for the last
    two, holding the last, and the table showed the third run twice (exit 0); a file key.yaml replaced the metric
    keys, and a file named like a change column ('b - a') took that column. Labels are numbered past any taken."""
    assert [r.label for r in variants(["x/s.yaml", "y/s.yaml", "s (2).yaml", "key.yaml"], [], [])] == \
        ["s", "s (2)", "s (2) (2)", "key (2)"]
    assert [r.label for r in variants(["a.yaml", "b - a.yaml", "b.yaml"], [], [])] == ["a", "b - a", "b (2)"]
    assert [r.label for r in variants(["seed=2.yaml"], [], [["seed=2"]])] == ["seed=2", "seed=2 (2)"]
    paths = []
    for i, where in enumerate(["x/s", "y/s", "s (2)"]):
        (tmp_path / where).parent.mkdir(exist_ok=True)
        paths.append(_write(tmp_path, where, scenario(seed=i + 1, workload={"num_requests": 6})))
    assert main(["compare", *map(str, paths), "--out", str(tmp_path / "cmp"), "--quiet"]) == 0
    frame = pd.read_csv(tmp_path / "cmp" / "compare.csv").set_index("key")
    summaries = json.loads((tmp_path / "cmp" / "summaries.json").read_text())
    assert list(summaries) == ["s", "s (2)", "s (2) (2)"]
    for label, summary in summaries.items():
        assert frame.loc["ttft_p50_s", label] == pytest.approx(summary["ttft_p50_s"] * 1e3, rel=1e-8)
    assert len({summary["ttft_p50_s"] for summary in summaries.values()}) == 3   # three seeds, three runs


def test_labels_show_control_characters_as_escapes(tmp_path, capsys):
    """A file named 'x<newline>y.yaml' split the printed table's header over two lines, one holding ESC [31m
    coloured the terminal (helper1 2026-11-28): labels write such characters as escapes, and keep other text."""
    assert [r.label for r in variants(["x\ny.yaml", "z\x1b[31m.yaml", "caf\u00e9.yaml", "a\u202eb.yaml"], [], [])] \
        == ["x\\ny", "z\\x1b[31m", "caf\u00e9", "a\\u202eb"]
    a = _write(tmp_path, "x\ny", scenario(seed=1, workload={"num_requests": 6}))
    b = _write(tmp_path, "z\x1b[31m", scenario(seed=2, workload={"num_requests": 6}))
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and printed.splitlines()[0].split() == ["metric", "x\\ny", "z\\x1b[31m", "Δ",
                                                                          "z\\x1b[31m"]
    assert list(json.loads((tmp_path / "cmp" / "summaries.json").read_text())) == ["x\\ny", "z\\x1b[31m"]


def test_compare_end_to_end_is_deterministic_and_consistent_with_single_runs(tmp_path, capsys):
    base = scenario(workload={"num_requests": 120})
    spec = scenario(workload={"num_requests": 120}, drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                    acceptance={"kind": "constant", "alpha": 0.7})
    a, b = _write(tmp_path, "plain", base), _write(tmp_path, "spec", spec)
    outs = []
    for name in ("c1", "c2"):
        assert main(["compare", str(a), str(b), "--out", str(tmp_path / name)]) == 0
        outs.append(tmp_path / name)
    printed = capsys.readouterr().out
    assert "TTFT p50 (ms)" in printed and "Δ spec" in printed
    for f in ("compare.csv", "summaries.json", "latency_cdf.png"):
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
    # the compared figures are the single runs' figures
    assert main(["run", str(b), "--out", str(tmp_path / "single"), "--quiet"]) == 0
    single = json.loads((tmp_path / "single" / "summary.json").read_text())
    summaries = json.loads((outs[0] / "summaries.json").read_text())
    assert summaries["spec"] == single
    frame = pd.read_csv(outs[0] / "compare.csv").set_index("key")
    assert frame.loc["tpot_p50_s", "spec"] == pytest.approx(single["tpot_p50_s"] * 1e3, rel=1e-8)


def test_bad_input_is_found_before_any_run(tmp_path, capsys, monkeypatch):
    import simulator.api as api

    monkeypatch.setattr(api, "simulate", lambda *a, **k: (_ for _ in ()).throw(AssertionError("simulated")))
    a = _write(tmp_path, "a", scenario())
    cases = [(["compare", str(a)], "scenarios"),
             (["compare", str(a), str(a), "--vary", "drafter.gamma=2"], "--vary"),
             (["compare", str(a), "--vary", "workload.arrival.qps=-1"], "qps"),
             (["compare", str(a), str(_write(tmp_path, "b", scenario(cluster={"model": "nope"})))], "cluster.model")]
    for argv, field in cases:
        assert main([*argv, "--out", str(tmp_path / "out")]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err, err
        assert not (tmp_path / "out").exists()


def test_an_unreachable_dask_scheduler_is_found_before_any_run(tmp_path, capsys, monkeypatch):
    """Every run is validated and built before any is simulated, and `run` reaches its Dask scheduler before
    any work; compare reached a run's scheduler only when simulating it, after the runs before it (a
    scheduler down for the last of several runs cost all the others, and the line named no run)."""
    import simulator.api as api
    import simulator.distributed.executors as executors

    simulated = []
    original = api.simulate
    monkeypatch.setattr(api, "simulate", lambda *a, **k: simulated.append(1) or original(*a, **k))

    def unreachable(self):
        if self._address is not None:
            raise executors.ScenarioError(self._field, f"cannot reach the Dask scheduler at {self._address}: down")
    monkeypatch.setattr(executors.DaskExecutor, "connect", unreachable)
    a = _write(tmp_path, "a", scenario(workload={"num_requests": 8}))
    b = _write(tmp_path, "b", scenario(workload={"num_requests": 8}, cluster={"replicas": 2},
                                       simulation={"executor": "tcp://127.0.0.1:1"}))
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"draftsim compare: error: {b}: simulation.executor: cannot reach the Dask scheduler at " \
                  "tcp://127.0.0.1:1: down", err
    assert simulated == [] and not (tmp_path / "out").exists()


def _refused_before_any_run(argv, capsys, monkeypatch, out) -> str:
    """The one error line of `draftsim compare ARGV` (exit 2), which simulated nothing and wrote nothing."""
    import simulator.api as api
    monkeypatch.setattr(api, "simulate", lambda *a, **k: (_ for _ in ()).throw(AssertionError("simulated")))
    assert main(["compare", *map(str, argv), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not out.exists()
    return err


def test_a_copy_in_another_folder_is_the_same_simulation(tmp_path, capsys, monkeypatch):
    """A copy of a scenario in another folder was compared (exit 0, a table of zeros) where the same copy in the
    same folder was refused: its folder counts only through the relative paths the scenario names."""
    (tmp_path / "other").mkdir()
    base = _write(tmp_path, "base", scenario(workload={"num_requests": 6}))
    copy = tmp_path / "other" / "base.yaml"
    copy.write_bytes(base.read_bytes())
    err = _refused_before_any_run([base, copy], capsys, monkeypatch, tmp_path / "cmp")
    assert err == "draftsim compare: error: scenarios: 'base' and 'base (2)' are the same simulation; compare " \
                  "different configurations"


def test_copies_that_read_files_of_their_own_folders_are_compared(tmp_path, capsys, monkeypatch):
    """A scenario that names a relative path reads it from its own folder: copies in two folders may read
    different files, and are compared; the same folder through a symbolic link is the same simulation, and a
    file missing from both folders is reported as missing (not as the same simulation)."""
    trace = "arrival_s,prompt_tokens,output_tokens\n0,{p},16\n0.5,{p},16\n1,{p},16\n"
    data = {**scenario(), "workload": {"arrival": {"process": "trace", "trace_csv": "t.csv"}}}
    paths = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        paths.append(_write(tmp_path / folder, "s", data))
    err = _refused_before_any_run(paths, capsys, monkeypatch, tmp_path / "cmp")
    assert "workload.arrival.trace_csv: file not found" in err and "same simulation" not in err, err
    monkeypatch.undo()
    for path, prompt in zip(paths, (64, 512)):
        (path.parent / "t.csv").write_text(trace.format(p=prompt))
    assert main(["compare", *map(str, paths), "--out", str(tmp_path / "cmp"), "--quiet"]) == 0
    frame = pd.read_csv(tmp_path / "cmp" / "compare.csv").set_index("key")
    assert frame.loc["ttft_p50_s", "s (2) - s"] > 0   # longer prompts, later first tokens
    (tmp_path / "link").symlink_to(tmp_path / "a")
    err = _refused_before_any_run([paths[0], tmp_path / "link" / "s.yaml"], capsys, monkeypatch, tmp_path / "c2")
    assert "'s' and 's (2)' are the same simulation" in err


def test_a_variant_of_other_outputs_only_is_the_same_simulation(tmp_path, capsys, monkeypatch):
    """`--vary outputs.plots=true` ran twice and printed a table of zeros: what a run writes is not what it
    simulates (compare writes its own files), so the variant is refused naming the fields it changes."""
    base = _write(tmp_path, "s", scenario(workload={"num_requests": 6}))
    err = _refused_before_any_run([base, "--vary", "outputs.plots=true", "outputs.steps=sampled", "--vary", "seed=3"],
                                  capsys, monkeypatch, tmp_path / "cmp")
    assert err == "draftsim compare: error: --vary: 's' and 'outputs.plots=true outputs.steps=sampled' differ only " \
                  "in outputs.plots, outputs.step_sample_every, outputs.steps (what a run writes, not what it " \
                  "simulates); compare different " \
                  "configurations"


def test_runs_that_see_other_requests_are_named(tmp_path, recwarn):
    """Compare's changes are the configurations' because runs of one seed and workload see the same requests;
    scenario files of different seeds or workloads were compared without a word, their changes holding sampling
    noise or another load. Each such run is named in a warning; a --vary of the seed or the workload asks for it."""
    base = _write(tmp_path, "a", scenario(seed=1, workload={"num_requests": 6}))
    seed = _write(tmp_path, "b", scenario(seed=2, workload={"num_requests": 6}))
    load = _write(tmp_path, "c", scenario(seed=1, workload={"num_requests": 7}))
    same = _write(tmp_path, "d", scenario(seed=1, workload={"num_requests": 6}, drafter={"kind": "ngram", "gamma": 2}))
    assert main(["compare", *map(str, (base, seed, load, same)), "--out", str(tmp_path / "c1"), "--quiet"]) == 0
    lines = [str(w.message) for w in recwarn if "other requests" in str(w.message)]
    assert lines == [
        "'b' sees other requests than 'a' (seed differs): its changes hold the requests' differences as well as the "
        "configuration's; give both the same seed and workload to compare configurations alone",
        "'c' sees other requests than 'a' (workload.num_requests differs): its changes hold the requests' differences "
        "as well as the configuration's; give both the same seed and workload to compare configurations alone"]
    recwarn.clear()
    assert main(["compare", str(base), "--vary", "seed=5", "--vary", "workload.num_requests=8", "--out",
                 str(tmp_path / "c2"), "--quiet"]) == 0
    assert not [w for w in recwarn if "other requests" in str(w.message)]


def test_the_executor_is_how_a_run_is_carried_out_only_where_the_dask_run_is_exact(tmp_path):
    """A Dask executor runs a router that routes ahead, or one synchronised at every arrival (load_sync_s: 0),
    byte for byte as one process: a variant of only that compared nothing (a table of zeros, exit 0). With a
    load_sync_s window the Dask run is the named approximation, which comparing with one process measures."""
    from simulator.config.scenario import load_scenario
    from simulator.errors import ScenarioError
    from simulator.workflows.compare import _check_distinct

    path = _write(tmp_path, "lo", scenario(cluster={"replicas": 2, "router": "least_outstanding"}))

    def check(*vary):
        runs = variants([str(path)], [], [list(v) for v in vary])
        _check_distinct(runs, [load_scenario(r.path, r.overrides) for r in runs], lambda i: None)

    with pytest.raises(ScenarioError, match="differ only in simulation.executor, simulation.load_sync_s"):
        check(["simulation.executor=local-dask", "simulation.load_sync_s=0"])
    check(["simulation.executor=local-dask", "simulation.load_sync_s=0.05"])   # the approximation's error: compared
    check(["simulation.executor=local-dask", "simulation.load_sync_s=0.05"],
          ["simulation.executor=local-dask", "simulation.load_sync_s=0.5"])


def test_reading_and_writing_show_progress_unless_quiet(tmp_path, capsys, monkeypatch):
    """compare read and built every run's workload and cluster (minutes for a long trace, as `draftsim run` says
    on its own progress line) and drew its plot without a line on stderr: only simulating showed progress. Here
    each run's preparing and the plot made slow, and the lines that come every 10 s off a terminal every 0.02 s."""
    import time
    from functools import partial

    import simulator.api
    import simulator.console.progress as progress
    import simulator.results.plots as plots

    monkeypatch.setattr(progress, "Progress", partial(progress.Progress, interval_s=0.02))
    prepare, plot = simulator.api.prepare, plots.plot_latency_cdfs_overlaid
    monkeypatch.setattr(simulator.api, "prepare", lambda *a, **k: (time.sleep(0.1), prepare(*a, **k))[1])
    monkeypatch.setattr(plots, "plot_latency_cdfs_overlaid", lambda *a, **k: (time.sleep(0.1), plot(*a, **k))[1])
    a = _write(tmp_path, "a", scenario(workload={"num_requests": 4}))
    b = _write(tmp_path, "b", scenario(workload={"num_requests": 6}))
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "c")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith("draftsim: reading the workloads, building the clusters: 2/2 run (100 %), ")
               and line.endswith(", done") for line in err), err
    assert any(line.startswith("draftsim: writing outputs: ") and line.endswith(", done") for line in err), err
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "q"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
