"""Op prices shared by the runs of one process (`profiles.measured.model.SharedPrices`; with the op lists of
simulator.cost.op_lists, the other cache they share): a run gives the same requests, steps and summary —
`latency_source`'s counts of distinct shapes priced included — whether the process priced its ops before
or not, and a repeated run does reuse the first one's prices and op lists."""
from __future__ import annotations

import json

import simulator
from paths import REPO
from profiles.measured import model as measured_model
from profiles.measured.model import MeasuredLatencyModel
from sim_helpers import assert_same_outputs, run_outputs
from simulator.cost import op_lists, step_cost

SCENARIO = REPO / "scenarios" / "quickstart.yaml"   # Llama-3-8B + Llama-68M on the measured H100 tables
RUN = ["workload.num_requests=60"]
OTHER = ["workload.num_requests=60", "workload.arrival.qps=40", "drafter.gamma=2"]   # other shapes, same tables


def test_a_run_is_the_same_whatever_the_process_priced_before(monkeypatch):
    """Both caches the runs of a process share: op prices (here) and op lists (simulator.cost.op_lists)."""
    calls = {"gemm": 0, "decode": 0, "dense ops": 0, "attention ops": 0}
    gemm, decode = MeasuredLatencyModel._gemm, MeasuredLatencyModel._decode
    dense_ops = step_cost.dense_ops

    def counted(name, build):
        def count(*args, **kwargs):
            calls[name] += 1
            return build(*args, **kwargs)
        return count

    monkeypatch.setattr(step_cost, "dense_ops", counted("dense ops", dense_ops))
    for builder in ("attention_ops", "prefill_attention_ops", "decode_attention_ops"):   # (the step shape's, a
        # prefill pass's and a decode pass's attention lists)
        monkeypatch.setattr(step_cost, builder, counted("attention ops", getattr(step_cost, builder)))
    monkeypatch.setattr(MeasuredLatencyModel, "_gemm", counted("gemm", gemm))
    monkeypatch.setattr(MeasuredLatencyModel, "_decode", counted("decode", decode))
    measured_model.SHARED_PRICES.clear()
    op_lists.SHARED_OP_LISTS.clear()

    first = run_outputs(simulator.run(SCENARIO, RUN))
    assert all(calls.values())
    simulator.run(SCENARIO, OTHER)
    before = dict(calls)
    again = run_outputs(simulator.run(SCENARIO, RUN))
    assert calls == before   # every op of the repeated run was found priced (no table read again) and every
    # pass's op list found built
    assert_same_outputs(first, again)
    kinds = json.loads(first[2])["latency_source"]["op_kinds"]
    assert kinds["gemm"]["ops"] > 0 and kinds["attn_decode"]["ops"] > 0

    measured_model.SHARED_PRICES.clear()   # and a process that priced and built nothing before: the same
    op_lists.SHARED_OP_LISTS.clear()
    assert_same_outputs(first, run_outputs(simulator.run(SCENARIO, RUN)))
    assert calls["gemm"] > before["gemm"] and calls["dense ops"] > before["dense ops"]


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
    unbounded = run_outputs(simulator.run(SCENARIO, RUN))
    monkeypatch.setattr(measured_model.SHARED_PRICES, "limit", 40)   # far below the ops one run prices
    measured_model.SHARED_PRICES.clear()
    bounded = run_outputs(simulator.run(SCENARIO, RUN))
    assert 0 < len(measured_model.SHARED_PRICES) <= 40
    priced = sum(kind["ops"] for kind in json.loads(unbounded[2])["latency_source"]["op_kinds"].values())
    assert priced > 2 * 40   # (the bound did empty the tables during the run)
    assert_same_outputs(unbounded, bounded)
