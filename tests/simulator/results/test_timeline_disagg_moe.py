"""Timeline traces of disaggregated and expert-parallel runs: KV-transfer slices with request ids on
their own per-link tracks, all-to-all spans inside MoE steps, `draftsim run --trace` end to end."""
from __future__ import annotations

import json
from collections import Counter

import pytest
import yaml

from simulator.api import run
from simulator.cli import main
from simulator.results.timeline import KV_PID, pool_replica_names, trace_events
from sim_helpers import scenario

DISAGG = scenario(workload={"num_requests": 60, "arrival": {"process": "poisson", "qps": 10.0}},
                  cluster={"hardware": "a100-80gb", "model": "llama-2-13b", "dtype": "fp16",
                           "disaggregation": {"prefill": {"replicas": 2}, "decode": {"replicas": 1}}})


def test_kv_transfers_have_their_own_tracks_with_request_ids():
    res = run(DISAGG)
    events = trace_events(res.requests, res.steps, replica_names=pool_replica_names(res.summary))
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert {"prefill replica 0 (1 GPU)", "prefill replica 1 (1 GPU)", "decode replica 0 (1 GPU)",
            "KV transfers", "requests"} <= names
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name" and e["pid"] == KV_PID}
    assert threads == {"prefill replica 0 (1 GPU) → decode replica 0 (1 GPU)",
                       "prefill replica 1 (1 GPU) → decode replica 0 (1 GPU)"}
    kv = [e for e in events if e["pid"] == KV_PID and e["ph"] in "be"]
    begins = {e["id"]: e for e in kv if e["ph"] == "b"}
    ends = {e["id"]: e for e in kv if e["ph"] == "e"}
    req = res.requests.set_index("request_id")
    moved = req[req.output_tokens > 1]
    assert set(begins) == set(ends) == set(moved.index)
    for rid, b in begins.items():
        assert b["args"]["request_id"] == rid and b["args"]["bytes"] == moved.kv_bytes[rid]
        assert b["ts"] == pytest.approx(moved.kv_start_s[rid] * 1e6) and ends[rid]["ts"] == pytest.approx(
            moved.kv_ready_s[rid] * 1e6)
    # request tracks show the transfer; finishes are matched on the decode replica's steps
    kinds = Counter(e["name"] for e in events if e.get("cat") == "request" and e["ph"] == "b")
    assert kinds["kv_transfer"] == len(moved)
    finished = [rid for e in events if e["ph"] == "X" for rid in e.get("args", {}).get("finished", [])]
    assert sorted(finished) == sorted(res.requests.request_id)


def test_alltoall_spans_sit_inside_moe_steps():
    res = run(scenario(workload={"num_requests": 40}, cluster={"hardware": "h100-sxm", "model": "qwen3-30b-a3b",
                                                               "parallelism": {"tp": 1, "ep": 16}}))
    events = trace_events(res.requests, res.steps)
    spans = [e for e in events if e["ph"] == "X" and e["name"] == "all-to-all"]
    targets = {e["args"]["step"]: e for e in events if e["ph"] == "X" and e.get("cat") == "target"}
    assert len(spans) == len(res.steps)
    for a in spans:
        t = targets[a["args"]["step"]]
        assert a["tid"] == 1 and a["pid"] == t["pid"] and a["ts"] == t["ts"]
        assert 0 < a["dur"] < t["dur"]


def test_cli_trace_of_a_disaggregated_run(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(DISAGG))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet", "--trace", "--no-plots"]) == 0
    doc = json.loads((tmp_path / "out" / "trace.json").read_text())
    assert any(e.get("cat") == "kv_transfer" for e in doc["traceEvents"])
