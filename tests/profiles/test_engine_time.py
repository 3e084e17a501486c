"""Per-step engine time (profiles.engine_time): the wall-time formula (synchronous vs overlapped host work,
graph vs piecewise passes, speculative terms), the constants file (every constant sourced, version
ranges that tile), and how the simulator pays it (steps log engine_s; duration = draft + verify + engine)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

import simulator
from profiles.engine_time.frameworks import DATA_FILE, _US_FIELDS, engine_time_for, frameworks
from profiles.engine_time.graphs import GraphPolicy
from profiles.engine_time.model import EngineTime, PassLayout
from profiles.measured.source import version_key
from sim_helpers import scenario

US = 1e-6


def _engine(**kw) -> EngineTime:
    base = dict(framework="x", versions="", step_s=300 * US, per_seq_s=4 * US, per_token_s=0.1 * US,
                overlap=False, step_gap_s=20 * US,
                # full graphs of decode batches up to 512 tokens, piecewise graphs of other steps up to 1024
                graphs=GraphPolicy("full", tuple(range(1, 513)), "tokens", True, "full", tuple(range(1, 1025))),
                graph_launch_s=15 * US, piecewise_per_layer_s=10 * US, spec_step_s=15 * US,
                spec_per_pass_s=100 * US, spec_host_step_s=50 * US, spec_host_per_seq_s=2 * US)
    base.update(kw)
    return EngineTime(**base)


PLAIN = PassLayout(0, 1, 32)


def test_synchronous_engine_adds_host_work_and_gaps():
    e = _engine()
    device = 5e-3
    # decode of 64 requests: full graph; host = step + per_seq·64 + per_token·64
    wall = e.wall_seconds(device, 0, 0, 64, 1, PLAIN)
    assert wall == pytest.approx(device + 20 * US + 15 * US + (300 + 4 * 64 + 0.1 * 64) * US)
    # a prefill step is not a full graph: per-layer gaps
    wall = e.wall_seconds(device, 1000, 1, 0, 1, PLAIN)
    assert wall == pytest.approx(device + 20 * US + 32 * 10 * US + (300 + 4 + 0.1 * 1000) * US)
    # above the decode capture size: piecewise like a mixed step (within the piecewise sizes)
    assert e.gaps_seconds(0, 600, 1, PLAIN) == pytest.approx((20 + 320) * US)
    assert e.gaps_seconds(0, 100, 6, PLAIN) == pytest.approx((20 + 320) * US)  # 600 tokens
    # above every capture size: eager, no launch gap (the issue time is wall_seconds')
    assert e.gaps_seconds(0, 1100, 1, PLAIN) == pytest.approx(20 * US)


def test_overlapped_engine_exposes_only_host_work_beyond_the_device_time():
    e = _engine(overlap=True)
    long_step, short_step = 5e-3, 50e-6
    busy = long_step + 35 * US
    assert e.wall_seconds(long_step, 0, 0, 64, 1, PLAIN) == pytest.approx(busy)
    host = (300 + 4 * 64 + 6.4) * US
    short_busy = short_step + 35 * US
    assert e.wall_seconds(short_step, 0, 0, 64, 1, PLAIN) == pytest.approx(short_busy + host - short_busy)


def test_speculative_terms_and_drafter_overlap():
    e = _engine(overlap=True, sync_drafters=("draft_model",))
    spec = PassLayout(4, 5, 32 + 4 * 2)
    gaps = e.gaps_seconds(0, 8, 5, spec)
    assert gaps == pytest.approx((20 + 15 * 5 + 15 + 100 * 4) * US)
    assert e.host_seconds(0, 0, 8, 5, 4) == pytest.approx((300 + 32 + 4 + 50 + 16) * US)
    assert e.for_drafter("draft_model").overlap is False and e.for_drafter("eagle").overlap is True
    assert e.for_drafter(None) is e


def test_vectorized_over_steps():
    e = _engine()
    seqs = np.array([1, 100, 700])
    wall = e.wall_seconds(np.full(3, 1e-3), 0, 0, seqs, 1, PLAIN)
    one = [e.wall_seconds(1e-3, 0, 0, int(b), 1, PLAIN) for b in seqs]
    np.testing.assert_allclose(wall, one, rtol=1e-15)


def test_negative_constants_are_refused():
    with pytest.raises(ValueError, match="per_seq_s"):
        _engine(per_seq_s=-1.0)


def test_every_constant_of_every_framework_has_a_source_and_a_value():
    raw = yaml.safe_load(DATA_FILE.read_text())["frameworks"]
    for entry in raw:
        c, sources = entry["constants"], entry["sources"]
        for key in ("graphs", "measured_on"):
            assert key in entry and (key in sources or _sourced_elsewhere(raw, entry, key)), (entry["framework"], key)
        for key in (*_US_FIELDS, "overlap"):
            assert isinstance(c[key], (int, float)), (entry["framework"], key, c[key])
            assert key in sources or key[:-3] + "_us" in sources or _sourced_elsewhere(raw, entry, key), \
                (entry["framework"], entry["versions"], key)
        for text in sources.values():
            assert "PROVISIONAL" not in text and "PENDING" not in text


def _sourced_elsewhere(raw, entry, key):
    """A constant may cite the entry of the same framework that documents it (`see the 0.8 entry`)."""
    return any(e is not entry and e["framework"] == entry["framework"] and key in e["sources"] for e in raw)


def test_version_ranges_tile_without_gaps_or_overlaps():
    raw = yaml.safe_load(DATA_FILE.read_text())["frameworks"]
    for fw in frameworks():
        ranges = sorted((e["versions"] for e in raw if e["framework"] == fw), key=lambda v: version_key(v["min"]))
        for a, b in zip(ranges, ranges[1:]):
            assert a.get("max") == b["min"], (fw, a, b)
        assert "max" not in ranges[-1]
        newest = max((e for e in raw if e["framework"] == fw), key=lambda e: version_key(e["versions"]["min"]))
        bounded = [e for e in raw if e["framework"] == fw and "newest_release" in e]
        assert bounded == [newest] and "newest_release" in newest["sources"], fw   # one bound, on the newest, sourced
        assert version_key(newest["newest_release"]) >= version_key(newest.get("latest", newest["versions"]["min"]))


def test_version_lookup():
    assert engine_time_for("vllm", "0.24.0").overlap is True
    assert engine_time_for("vllm", "0.12.0").overlap is False
    assert engine_time_for("vllm").versions == engine_time_for("vllm", "0.33.0").versions   # the newest release
    assert engine_time_for("trtllm").versions == engine_time_for("trtllm", "1.3.0rc20").versions   # (NIM 1.8's)
    assert engine_time_for("sglang").version == "0.5.23"   # the newest release, its rules read (frameworks.yaml latest)
    for framework, version in (("vllm", "99.0"), ("vllm", "0.33.1"), ("vllm", "0.34.0rc1"), ("sglang", "0.5.24"),
                               ("trtllm", "1.4.0rc5")):
        with pytest.raises(ValueError, match=f"cluster.latency.version: {framework} {version} is newer than the newest release known here"):
            engine_time_for(framework, version)
    with pytest.raises(ValueError, match="cluster.latency.version"):
        engine_time_for("vllm", "0.1.0")
    with pytest.raises(ValueError, match="cluster.latency.framework"):
        engine_time_for("tgi")


def test_the_simulator_pays_engine_time_on_every_gpu_step():
    result = simulator.run(scenario(workload={"num_requests": 80}))
    steps = result.steps
    assert (steps["engine_s"] > 0).all()
    np.testing.assert_allclose(steps["duration_s"], steps["draft_s"] + steps["verify_s"] + steps["engine_s"],
                               rtol=1e-12)
    assert result.summary["engine_time"]["framework"] == "vllm"
    off = simulator.run(scenario(workload={"num_requests": 80}, cluster={"latency": {"engine_time": False}}))
    assert (off.steps["engine_s"] == 0).all() and off.summary["engine_time"] is None
    assert off.summary["e2e_mean_s"] < result.summary["e2e_mean_s"]


def test_engine_time_of_a_logged_decode_step_is_the_model_of_its_composition():
    result = simulator.run(scenario(workload={"num_requests": 60}, cluster={"latency": {"source": "roofline"}}))
    engine = result.built.kind.engine
    cost = result.built.replicas[0].cost
    dec = result.steps[result.steps["prefill_tokens"] == 0].iloc[5]
    device = dec["draft_s"] + dec["verify_s"]
    want = engine.wall_seconds(device, 0, 0, int(dec["decode_seqs"]), 1, cost.pass_layout) - device
    assert dec["engine_s"] == pytest.approx(float(want), rel=1e-6)


def test_framework_and_its_engine_follow_the_latency_block():
    sg = simulator.run(scenario(workload={"num_requests": 20}, cluster={"latency": {"framework": "sglang"}}))
    assert sg.summary["engine_time"]["framework"] == "sglang"
    assert dataclasses.replace(engine_time_for("sglang")).overlap is True
