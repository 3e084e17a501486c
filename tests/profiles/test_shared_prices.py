"""Op prices shared by the runs of one process (`profiles.measured.model.SharedPrices`): a run gives the
same requests, steps and summary — `latency_source`'s counts of distinct shapes priced included — whether
the process priced its ops before or not, and a repeated run does reuse the first one's prices."""
from __future__ import annotations

import json

import numpy as np

import simulator
from paths import REPO
from profiles.measured import model as measured_model
from profiles.measured.model import MeasuredLatencyModel

SCENARIO = REPO / "scenarios" / "quickstart.yaml"   # Llama-3-8B + Llama-68M on the measured H100 tables
RUN = ["workload.num_requests=60"]
OTHER = ["workload.num_requests=60", "workload.arrival.qps=40", "drafter.gamma=2"]   # other shapes, same tables


def _outputs(result) -> tuple:
    requests = {name: result.requests[name].to_numpy() for name in result.requests.columns}
    steps = {name: result.steps[name].to_numpy() for name in result.steps.columns}
    return requests, steps, json.dumps(result.summary, sort_keys=True, default=str)


def _assert_same(a: tuple, b: tuple) -> None:
    assert a[2] == b[2]   # summary.json, latency_source with its counts of distinct shapes priced
    for frame_a, frame_b in zip(a[:2], b[:2]):
        assert frame_a.keys() == frame_b.keys()
        for name in frame_a:
            x, y = frame_a[name], frame_b[name]
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


def test_a_run_is_the_same_whatever_the_process_priced_before(monkeypatch):
    calls = {"gemm": 0, "decode": 0}
    gemm, decode = MeasuredLatencyModel._gemm, MeasuredLatencyModel._decode

    def counted_gemm(self, op):
        calls["gemm"] += 1
        return gemm(self, op)

    def counted_decode(self, op):
        calls["decode"] += 1
        return decode(self, op)

    monkeypatch.setattr(MeasuredLatencyModel, "_gemm", counted_gemm)
    monkeypatch.setattr(MeasuredLatencyModel, "_decode", counted_decode)
    measured_model.SHARED_PRICES.clear()

    first = _outputs(simulator.run(SCENARIO, RUN))
    assert calls["gemm"] > 0 and calls["decode"] > 0
    simulator.run(SCENARIO, OTHER)
    before = dict(calls)
    again = _outputs(simulator.run(SCENARIO, RUN))
    assert calls == before   # every op of the repeated run was found priced: no table was read again
    _assert_same(first, again)
    kinds = json.loads(first[2])["latency_source"]["op_kinds"]
    assert kinds["gemm"]["ops"] > 0 and kinds["attn_decode"]["ops"] > 0

    measured_model.SHARED_PRICES.clear()   # and a process that priced nothing before: the same
    _assert_same(first, _outputs(simulator.run(SCENARIO, RUN)))
    assert calls["gemm"] > before["gemm"]


def test_the_shared_prices_are_bounded_in_all_and_a_run_is_the_same_under_any_bound(monkeypatch):
    from models.ops import Op

    shared = measured_model.SharedPrices(limit=3)
    a, b = shared.table("source", "gpu a", "bf16", "bf16"), shared.table("source", "gpu b", "fp8", "fp8")
    assert shared.table("source", "gpu a", "bf16", "bf16") is a   # one table per (tables, GPU, dtypes)
    ops = [Op.make("gemm", f"op{i}", 1.0, 1.0, m=i) for i in range(4)]
    shared.add(a, ops[0], (1.0, "x", False))
    shared.add(b, ops[1], (2.0, "x", False))
    shared.add(b, ops[2], (3.0, "x", False))
    assert len(shared) == 3 and len(a) == 1 and len(b) == 2
    shared.add(a, ops[3], (4.0, "x", False))   # the 4th price in all empties both tables, in place, first
    assert a == {ops[3]: (4.0, "x", False)} and b == {} and len(shared) == 1

    measured_model.SHARED_PRICES.clear()
    unbounded = _outputs(simulator.run(SCENARIO, RUN))
    monkeypatch.setattr(measured_model.SHARED_PRICES, "limit", 40)   # far below the ops one run prices
    measured_model.SHARED_PRICES.clear()
    bounded = _outputs(simulator.run(SCENARIO, RUN))
    assert 0 < len(measured_model.SHARED_PRICES) <= 40
    priced = sum(kind["ops"] for kind in json.loads(unbounded[2])["latency_source"]["op_kinds"].values())
    assert priced > 2 * 40   # (the bound did empty the tables during the run)
    _assert_same(unbounded, bounded)
