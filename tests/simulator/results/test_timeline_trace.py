"""Perfetto/Chrome traces: well-formed Trace Event Format, spans tile each replica's steps, request ids
match the request records, and `draftsim run --trace` writes trace.json."""
from __future__ import annotations

import json
from collections import Counter, defaultdict

import numpy as np
import pytest
import yaml

from simulator.api import run
from simulator.cli import main
from simulator.results.timeline import REQUEST_PID, trace_events, trace_json
from sim_helpers import scenario

SPEC = scenario(workload={"num_requests": 80, "arrival": {"process": "poisson", "qps": 12.0}},
                cluster={"replicas": 2}, drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                scheduler={"kind": "sarathi", "max_batch_size": 32, "chunk_tokens": 128,
                           "max_batched_tokens": 256})


@pytest.fixture(scope="module")
def result():
    return run(SPEC)


def test_events_are_well_formed_trace_event_format(result):
    doc = json.loads(trace_json(result.requests, result.steps))
    events = doc["traceEvents"]
    assert events and doc["displayTimeUnit"] == "ms"
    for e in events:
        assert {"ph", "pid", "tid", "name"} <= set(e)
        if e["ph"] in "XCbe":
            assert isinstance(e["ts"], float) and e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] >= 0
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {"replica 0", "replica 1", "requests"}
    # async request slices come in matching begin/end pairs
    opened = Counter((e["id"], e["name"]) for e in events if e["ph"] == "b")
    closed = Counter((e["id"], e["name"]) for e in events if e["ph"] == "e")
    assert opened == closed and len(opened) > 0


def test_spans_tile_each_step_and_never_overlap_on_a_replica(result):
    steps = result.steps
    events = [e for e in trace_events(result.requests, steps) if e["ph"] == "X"]
    per_step = defaultdict(list)
    for e in events:
        per_step[(e["pid"], e["args"]["step"])].append(e)
    assert len(per_step) == len(steps)
    for i, row in steps.iterrows():
        spans = sorted(per_step[(int(row.replica), i)], key=lambda e: e["ts"])
        assert spans[0]["ts"] == pytest.approx(row.start_s * 1e6, abs=1e-6)
        assert spans[-1]["ts"] + spans[-1]["dur"] == pytest.approx((row.start_s + row.duration_s) * 1e6, abs=1e-3)
        names = [s["name"] for s in spans]
        assert names[0] == "draft" if row.draft_s > 0 else names[0] != "draft"
        assert (names[-1] == "engine") == (row.engine_s > 0)
        assert len(names) == 1 + (row.draft_s > 0) + (row.engine_s > 0)
    for pid in (0, 1):
        mine = sorted((e for e in events if e["pid"] == pid), key=lambda e: e["ts"])
        ends = np.array([e["ts"] + e["dur"] for e in mine[:-1]])
        starts = np.array([e["ts"] for e in mine[1:]])
        assert np.all(starts >= ends - 1e-3)
    kinds = Counter(e["name"] for e in events)
    assert kinds["prefill+verify"] > 0 and kinds["verify"] > 0 and kinds["draft"] > 0


def test_request_ids_match_the_request_records(result):
    req, steps = result.requests, result.steps
    events = [e for e in trace_events(req, steps) if e["ph"] == "X" and e["cat"] == "target"]
    ends = {(e["pid"], e["args"]["step"]): (steps.start_s[e["args"]["step"]] + steps.duration_s[e["args"]["step"]])
            for e in events}
    seen = {"first_token": set(), "finished": set(), "admitted": set()}
    for e in events:
        step = e["args"]["step"]
        for key, column, at in (("first_token", "first_token_s", ends[(e["pid"], step)]),
                                ("finished", "finish_s", ends[(e["pid"], step)]),
                                ("admitted", "admit_s", steps.start_s[step])):
            for rid in e["args"].get(key, []):
                assert req.replica[rid] == e["pid"] and req[column][rid] == pytest.approx(at, abs=1e-9)
                seen[key].add(rid)
    finished = set(req.request_id[np.isfinite(req.finish_s)])
    assert seen["first_token"] == finished and seen["finished"] == finished
    assert seen["admitted"] == set(req.request_id[np.isfinite(req.admit_s)])


def test_request_tracks_are_capped(result):
    events = trace_events(result.requests, result.steps, max_request_tracks=5)
    ids = {e["id"] for e in events if e["pid"] == REQUEST_PID and e["ph"] == "b"}
    assert ids == set(range(5))
    with pytest.raises(ValueError, match="max_request_tracks"):
        trace_events(result.requests, result.steps, max_request_tracks=-1)
    with pytest.raises(ValueError, match="steps: missing column"):
        trace_events(result.requests, result.steps.drop(columns=["draft_s"]))


def test_cli_run_trace_writes_trace_json(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(workload={"num_requests": 20})))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--trace", "--quiet"]) == 0
    doc = json.loads((out / "trace.json").read_text())
    assert any(e["name"] == "prefill" for e in doc["traceEvents"])
    assert main(["run", str(path), "--out", str(tmp_path / "plain"), "--quiet"]) == 0
    assert not (tmp_path / "plain" / "trace.json").exists()


def test_drawing_trace_json_shows_progress_unless_quiet(tmp_path, capsys, monkeypatch):
    """`run --trace` drew trace.json between the simulation's progress and the outputs' with no line of its own
    (~60 µs a step: a minute for a million steps, silent). Here the drawing made slow, and the lines that come
    every 10 s when stderr is no terminal every 0.02 s; --quiet prints none."""
    import time
    from functools import partial

    import simulator.console.progress as progress
    import simulator.results.timeline as timeline

    monkeypatch.setattr(progress, "Progress", partial(progress.Progress, interval_s=0.02))
    draw = timeline.trace_json
    monkeypatch.setattr(timeline, "trace_json", lambda *a, **k: (time.sleep(0.2), draw(*a, **k))[1])
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(workload={"num_requests": 6})))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--trace", "--no-plots"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith("draftsim: drawing trace.json: ") and line.endswith(", done") for line in err), err
    assert (tmp_path / "out" / "trace.json").is_file()
    assert main(["run", str(path), "--out", str(tmp_path / "q"), "--trace", "--no-plots", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
