"""Running sweeps: rows per point, resume after a killed sweep (no loss, no duplicates), executors,
invalid points, CLI errors and plots."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from simulator.workflows.sweep.main import main, run_sweep
from simulator.workflows.sweep.store import POINTS_DIR, SweepStore
from sim_helpers import scenario
from paths import REPO

COMPARED = ["goodput_rps", "ttft_p99_s", "tpot_p50_s", "output_tokens_per_s", "requests_finished"]


def write_sweep(tmp_path: Path, num_requests: int = 60, **spec) -> Path:
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(scenario(workload={"num_requests": num_requests})))
    data = {"name": "s", "scenario": "base.yaml",
            "grid": {"workload.arrival.qps": [2, 8], "scheduler.max_batch_size": [16, 64]}, **spec}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def metrics(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.set_index("point_id")[COMPARED].sort_index()


def test_serial_sweep_stores_one_row_per_point_matching_single_runs(tmp_path):
    from simulator.api import run

    result = run_sweep(write_sweep(tmp_path), tmp_path / "out", executor="serial")
    frame = result.frame
    assert len(frame) == 4 and result.ran == 4 and frame["point_id"].is_unique
    assert set(frame["status"]) == {"ok"}
    assert {"workload.arrival.qps", "scheduler.max_batch_size", "seed", "goodput_rps"} <= set(frame.columns)
    # each row is exactly the summary of simulating that point on its own
    point = result.points[3]
    summary = run(dict(point.scenario), base_dir=tmp_path).summary
    row = frame.set_index("point_id").loc[point.point_id]
    for key in COMPARED:
        assert row[key] == pytest.approx(summary[key], rel=0, abs=0)
    stored = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert len(stored) == 4 and (tmp_path / "out" / "results.csv").is_file()


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_rerun_needs_resume_and_resume_skips_finished_points(tmp_path):
    path = write_sweep(tmp_path)
    run_sweep(path, tmp_path / "out", executor="serial")
    again = run_sweep(path, tmp_path / "out", executor="serial")  # complete: nothing to run, no error
    assert again.ran == 0 and again.skipped == 4
    grown = write_sweep(tmp_path, grid={"workload.arrival.qps": [2, 8, 4], "scheduler.max_batch_size": [16, 64]})
    with pytest.raises(Exception, match="--resume"):
        run_sweep(grown, tmp_path / "out", executor="serial")
    resumed = run_sweep(grown, tmp_path / "out", executor="serial", resume=True)
    assert resumed.ran == 2 and resumed.skipped == 4 and len(resumed.frame) == 6


@pytest.mark.parametrize("damage", ["cut_short", "garbage", "magic_but_corrupt"])
def test_a_damaged_stored_point_is_one_line_before_anything_runs(tmp_path, capsys, damage):
    """A point file damaged outside draftsim (a copy cut short, an edit, a body overwritten between intact
    magic bytes) used to surface as pyarrow's traceback after the missing points had run; it is one line
    naming the file and the way out, exit 2, before any point runs, and the file is left as it is."""
    path = write_sweep(tmp_path)
    run_sweep(path, tmp_path / "out", executor="serial")
    points = sorted((tmp_path / "out" / POINTS_DIR).glob("*.parquet"))
    data = points[1].read_bytes()
    damaged = {"cut_short": data[:len(data) // 2], "garbage": b"not parquet",
               "magic_but_corrupt": data[:4] + bytes(len(data) - 8) + data[-4:]}[damage]
    points[1].write_bytes(damaged)
    points[0].unlink()   # a missing point: it must not run either
    code = main([str(path), "--out", str(tmp_path / "out"), "--resume", "--executor", "serial", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{points[1]} is not a readable stored point" in err and "--overwrite" in err
    assert points[1].read_bytes() == damaged and not points[0].exists()


def _start_cli(args: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "simulator.cli", "sweep", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_killed_sweep_loses_no_finished_point_and_resume_duplicates_none(tmp_path):
    path = write_sweep(tmp_path, num_requests=150, replications=2)  # 8 points
    out = tmp_path / "out"
    points = out / POINTS_DIR
    proc = _start_cli([str(path), "--out", str(out), "--executor", "local", "--workers", "2", "--quiet"])
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            done = list(points.glob("*.parquet")) if points.is_dir() else []
            if len(done) >= 2 or proc.poll() is not None:
                break
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its pool workers: all started by this test
        proc.wait()
    before = {p.name: p.read_bytes() for p in points.glob("*.parquet")}
    assert 2 <= len(before) < 8, "the sweep must be stopped mid-way for this test to mean anything"
    (points / ".tmp-deadbeef.parquet-1-0").write_bytes(b"partial")  # what a kill during a write leaves
    store = SweepStore(out)
    assert store.finished_ids() == {name[:-8] for name in before}  # the partial file is not a point
    # every stored point is complete and readable
    assert len(store.read_rows()) == len(before)

    code = main([str(path), "--out", str(out), "--resume", "--executor", "serial", "--quiet"])
    assert code == 0
    after = {p.name: p.read_bytes() for p in points.glob("*.parquet")}
    assert len(after) == 8 and not list(points.glob(".tmp-*"))
    assert all(after[name] == data for name, data in before.items())  # finished points were not rerun
    frame = pd.read_parquet(out / "results.parquet")
    assert len(frame) == 8 and frame["point_id"].is_unique
    fresh = run_sweep(path, tmp_path / "fresh", executor="serial")
    pd.testing.assert_frame_equal(metrics(frame), metrics(fresh.frame))


def test_points_that_start_a_local_dask_cluster_are_refused_on_dask_workers_before_any_work(tmp_path):
    """A Dask worker is a daemonic process: a point's LocalCluster there failed to fork its workers (a 100-line
    traceback per point, exit 1). Refused, one line, before the executor is reached and before a store exists;
    the same points under --executor serial or local start their own clusters."""
    pytest.importorskip("distributed")
    import simulator
    from simulator.distributed.executors import DaskExecutor
    from simulator.errors import ScenarioError
    path = write_sweep(tmp_path, set=["simulation.executor=local-dask"])
    says = "runs the points on Dask workers, which cannot start the LocalCluster of a point's simulation.executor"
    for executor in ("local-dask", "tcp://127.0.0.1:1", DaskExecutor(address="tcp://127.0.0.1:1")):
        with pytest.raises(ScenarioError, match=says):
            run_sweep(path, tmp_path / "out", executor=executor)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ScenarioError, match="^executor: " + says):
        simulator.sweep(scenario(workload={"num_requests": 20}, simulation={"executor": "local-dask"}),
                        {"scheduler.max_batch_size": [16, 64]}, executor="local-dask")


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_dask_local_cluster_gives_the_serial_results(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = write_sweep(tmp_path)
    serial = run_sweep(path, tmp_path / "serial", executor="serial")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        dask = run_sweep(path, tmp_path / "dask", executor=client)
        assert dask.ran == 4
    pd.testing.assert_frame_equal(metrics(dask.frame), metrics(serial.frame))


def test_points_that_cannot_be_built_are_stored_as_invalid(tmp_path):
    path = write_sweep(tmp_path, grid={"cluster.model": ["llama-3-8b", "llama-2-70b"]},
                       set=["cluster.hardware=l40s"])
    frame = run_sweep(path, tmp_path / "out", executor="serial").frame
    assert list(frame["status"]) == ["ok", "invalid"]
    assert "cluster.model" in frame["error"].iloc[1]


@pytest.mark.parametrize("quiet", [[], ["--quiet"]])
def test_a_sweep_with_points_that_could_not_run_exits_1_with_one_line(tmp_path, capsys, quiet):
    """The stored 'invalid' rows were the table's footnote and the exit code was 0 (with --quiet, no word at
    all): a sweep whose points did not all run is a failed check (exit 1), said in one line, its rows kept;
    a --resume of it says so again."""
    path = write_sweep(tmp_path, grid={"cluster.model": ["llama-3-8b", "llama-2-70b"]}, set=["cluster.hardware=l40s"])
    out = tmp_path / "out"
    for resume in ([], ["--resume"]):
        assert main([str(path), "--out", str(out), "--executor", "serial", *quiet, *resume]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("draftsim sweep: 1 of 2 points could not run (first: "
                                                   "cluster.model=llama-2-70b, seed="), err
        assert "status 'invalid'" in err[0]
    assert len(pd.read_parquet(out / "results.parquet")) == 2


def test_a_sweep_of_only_invalid_points_prints_a_sentence_not_an_empty_frame():
    """pandas' 'Empty DataFrame / Columns: [...] / Index: []' was the table of a sweep none of whose points ran."""
    from simulator.workflows.sweep.main import format_results_table

    frame = pd.DataFrame([{"point_id": "a", "seed": 1, "m": "x", "status": "invalid", "error": "m: too big"}])
    text = format_results_table(frame, ["m"])
    assert text.splitlines() == ["(no point ran: every one is invalid)", "invalid (m=x, seed=1): m: too big"]


def test_cli_errors_are_one_line_exit_2(tmp_path, capsys):
    path = write_sweep(tmp_path)
    cases = [
        ([str(tmp_path / "nope.yaml")], "file not found"),
        ([str(path), "--executor", "mpi"], "--executor"),
        ([str(path), "--resume", "--overwrite"], "--resume"),
        ([str(path), "--workers", "0", "--executor", "local"], "--workers"),
    ]
    for args, text in cases:
        code = main([*args, "--out", str(tmp_path / "o"), "--quiet"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and text in err, (args, err)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    assert main([str(path), "--out", str(tmp_path / "busy"), "--quiet"]) == 2
    assert "not a sweep store" in capsys.readouterr().err
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_plots_and_printed_table(tmp_path, capsys):
    path = write_sweep(tmp_path, plot={"x": "workload.arrival.qps", "metrics": ["goodput_rps", "tpot_p50_s"]})
    assert main([str(path), "--out", str(tmp_path / "out"), "--executor", "serial", "--plot"]) == 0
    out = capsys.readouterr().out
    assert "goodput_rps" in out and "4 points: 4 run now" in out
    plots = sorted((tmp_path / "out" / "plots").glob("*.png"))
    assert [p.name for p in plots] == ["goodput_rps_vs_workload_arrival_qps.png",
                                       "tpot_p50_s_vs_workload_arrival_qps.png"]
    assert all(p.stat().st_size > 5000 for p in plots)


def test_a_plot_cut_short_by_ctrl_c_is_not_left_half_written(tmp_path, monkeypatch):
    """The plots were saved in place: Ctrl-C while a PNG was being written left it cut short in plots/. Each
    is written aside and renamed; the points and results stay (a sweep keeps what finished)."""
    from matplotlib.figure import Figure

    def cut_short(self, path, **kwargs):
        Path(path).write_bytes(b"\x89PNG\r\n")   # the first bytes, then the press
        raise KeyboardInterrupt

    path = write_sweep(tmp_path, plot={"x": "workload.arrival.qps", "metrics": ["goodput_rps"]})
    monkeypatch.setattr(Figure, "savefig", cut_short)
    with pytest.raises(KeyboardInterrupt):
        main([str(path), "--out", str(tmp_path / "out"), "--executor", "serial", "--plot", "--quiet"])
    assert list((tmp_path / "out" / "plots").iterdir()) == []
    assert len(pd.read_parquet(tmp_path / "out" / "results.parquet")) == 4


def test_help_reads_well(capsys):
    with pytest.raises(SystemExit):
        from simulator.workflows.sweep.main import build_parser
        build_parser().parse_args(["--help"])
    text = capsys.readouterr().out
    assert "--resume" in text and "dask://HOST:PORT" in text and "example:" in text


@pytest.mark.parametrize("plot", [False, True])
def test_overwrite_runs_every_point_again(tmp_path, plot):
    """--overwrite discards the stored points and runs them all (the store's removal waits until the first
    point has checked the plot's metrics, but the points are run again either way)."""
    path = write_sweep(tmp_path, num_requests=20)
    run_sweep(path, tmp_path / "out", executor="serial")
    again = run_sweep(path, tmp_path / "out", executor="serial", overwrite=True, plot=plot)
    assert again.ran == 4 and again.skipped == 0 and len(again.frame) == 4
    assert len(list((tmp_path / "out" / POINTS_DIR).glob("*.parquet"))) == 4


def test_a_swept_key_of_values_of_several_kinds_is_stored_as_text(tmp_path):
    """simulation.workers: [auto, 1] (a text and a number, both valid) made a results column pyarrow cannot type:
    an ArrowTypeError traceback after every point had run, no results.parquet (helper1 2026-11-28). Such a column
    is stored as text; columns of one kind keep their type."""
    path = write_sweep(tmp_path, num_requests=6, grid={"simulation.workers": ["auto", 1], "workload.arrival.qps": [4]})
    assert main([str(path), "--out", str(tmp_path / "out"), "--executor", "serial", "--quiet"]) == 0
    stored = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert list(stored["simulation.workers"]) == ["auto", "1"] and (stored["status"] == "ok").all()
    assert stored["workload.arrival.qps"].dtype.kind in "if" and list(stored["workload.arrival.qps"]) == [4, 4]
    assert list(pd.read_csv(tmp_path / "out" / "results.csv")["simulation.workers"].astype(str)) == ["auto", "1"]


@pytest.mark.parametrize("value, reason", [("x\ny", "holds a control character"),
                                           ("x\x1b[31m", "holds a control character"),
                                           ("x\u2028y", "name:"),
                                           (b"x\n", "name:")])   # (written as `!!binary`)
def test_a_point_whose_value_holds_a_line_break_is_refused_in_one_whole_line(tmp_path, capsys, value, reason):
    """The point's label was the YAML of its value, over several lines for a text holding a newline or for bytes,
    and the contract keeps an error's first line: `draftsim sweep: error: sweep point (name='x` said nothing of
    the reason. The label writes the value on one line, escaped; the reason follows; nothing is written."""
    from contract import assert_one_line

    path = write_sweep(tmp_path, num_requests=4, grid={"name": [value]})
    assert main([str(path), "--out", str(tmp_path / "out"), "--executor", "serial", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert_one_line(err, "sweep point (name=")
    assert reason in err and "seed=7)" in err, err
    assert not (tmp_path / "out").exists()


def test_a_point_that_could_not_run_is_one_line_whatever_its_value_holds(tmp_path, capsys):
    """`points: [{cluster.model: "a\\nb"}]` printed its '1 of 1 points could not run' line over two lines; the
    table's footnote and the --dry-run listing wrote the value as it was, too."""
    path = write_sweep(tmp_path, num_requests=4, grid={}, points=[{"cluster.model": "a\nb"}])
    assert main([str(path), "--out", str(tmp_path / "out"), "--executor", "serial"]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(r"draftsim sweep: 1 of 1 points could not run (first: "
                                               r"cluster.model=a\nb, seed=7: cluster.model: unknown model"), err
    table = captured.out.splitlines()
    assert len(table) == 3 and table[1].startswith(r"invalid (cluster.model=a\nb, seed=7): cluster.model: unknown model"), table
    assert main([str(path), "--dry-run"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 2 and listed[0].endswith(r'seed=7  cluster.model="a\nb"') and listed[1] == "1 points"


def test_a_grid_key_given_twice_in_two_spellings_is_refused_before_anything_runs(tmp_path, capsys):
    """grid {workload.arrival.qps: [1], 'workload.arrival.qps ': [3]} ran qps 3 only, exit 0, its rows labelled
    qps 1."""
    from contract import assert_one_line, snapshot

    path = write_sweep(tmp_path, num_requests=4, grid={"workload.arrival.qps": [1], "workload.arrival.qps ": [3]})
    before = snapshot(tmp_path)
    assert main([str(path), "--out", str(tmp_path / "out"), "--executor", "serial", "--quiet"]) == 2
    assert_one_line(capsys.readouterr().err, "sweep.grid: workload.arrival.qps is given twice")
    assert snapshot(tmp_path) == before


def test_validating_the_points_shows_progress_unless_quiet(tmp_path, capsys, monkeypatch):
    """Every point is validated before any runs, at a few ms each: a sweep of 100,000 points (the most one may
    have) said nothing for minutes. Its progress goes to stderr as the run's does (here each validation made
    slow, and the lines that come every 10 s when stderr is no terminal every 0.02 s); --quiet says nothing."""
    from functools import partial

    import simulator.workflows.sweep.config as config
    from simulator.console.progress import Progress

    monkeypatch.setattr(config, "Progress", partial(Progress, interval_s=0.02), raising=False)
    parse = config.parse_scenario
    monkeypatch.setattr(config, "parse_scenario", lambda data: (time.sleep(0.01), parse(data))[1])
    path = write_sweep(tmp_path, num_requests=4, grid={"workload.arrival.qps": list(range(1, 21))}, replications=2)
    assert main([str(path), "--dry-run"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("draftsim: s: validating: ") for line in err), err
    assert err[-1].startswith("draftsim: s: validating: 40/40 pt (100 %), ") and err[-1].endswith(", done"), err
    assert main([str(path), "--dry-run", "--quiet"]) == 0
    assert capsys.readouterr().err == ""

    path = write_sweep(tmp_path, num_requests=4, grid={"workload.arrival.qps": [1, 2]}, replications=3)
    assert main([str(path), "--out", str(tmp_path / "out"), "--executor", "serial"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("draftsim: s: validating: ") and "draftsim: s: validating: 6/6 pt (100 %)" in "\n".join(err)
    assert main([str(path), "--out", str(tmp_path / "out2"), "--executor", "serial", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_a_null_value_of_the_plots_x_is_a_category_of_its_own(tmp_path, monkeypatch):
    """A swept x of a null among numbers (slo.ttft_s: [null, 0.5]: no TTFT objective) is NaN in the results:
    groupby left its points out of every plot without a word. The axis is then categorical, 'null' one of
    its categories."""
    from matplotlib.axes import Axes

    from simulator.workflows.sweep.config import load_sweep
    from simulator.workflows.sweep.plots import plot_sweep

    drawn = []
    real = Axes.plot
    monkeypatch.setattr(Axes, "plot", lambda self, xs, ys, **kw: drawn.append((list(xs), list(ys))) or
                        real(self, xs, ys, **kw))
    spec, _ = load_sweep(write_sweep(tmp_path, grid={"slo.ttft_s": [None, 0.5, 1.0]},
                                     plot={"metrics": ["goodput_rps"]}))
    frame = pd.DataFrame({"status": ["ok"] * 3, "slo.ttft_s": [None, 0.5, 1.0], "goodput_rps": [3.0, 1.0, 2.0]})
    assert [p.name for p in plot_sweep(frame, spec, tmp_path / "plots")] == ["goodput_rps_vs_slo_ttft_s.png"]
    (xs, ys), = drawn
    assert sorted(zip(xs, ys)) == [(0, 3.0), (1, 1.0), (2, 2.0)]


def test_ctrl_c_while_the_results_csv_is_written_keeps_the_previous_results_pair(tmp_path, monkeypatch):
    """results.parquet was renamed into place before results.csv was written: a Ctrl-C then left the new
    parquet beside the previous sweep's CSV (here 4 rows of parquet against 2 of CSV). Both are now renamed
    together: the press keeps the previous pair, and no temporary file."""
    path = write_sweep(tmp_path, num_requests=8, grid={"workload.arrival.qps": [2, 8]})
    out = tmp_path / "store"
    assert main([str(path), "--out", str(out), "--executor", "serial", "--quiet"]) == 0
    before = {name: (out / name).read_bytes() for name in ("results.parquet", "results.csv")}
    path = write_sweep(tmp_path, num_requests=8, grid={"workload.arrival.qps": [2, 8, 12, 16]})

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_csv", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        main([str(path), "--out", str(out), "--executor", "serial", "--quiet", "--resume"])
    assert {name: (out / name).read_bytes() for name in before} == before
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
    monkeypatch.undo()
    assert main([str(path), "--out", str(out), "--executor", "serial", "--quiet", "--resume"]) == 0
    assert len(pd.read_csv(out / "results.csv")) == len(pd.read_parquet(out / "results.parquet")) == 4
