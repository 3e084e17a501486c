"""Goodput per GPU by bisection on the rate (simulator.workflows.goodput) and the placement search."""
from __future__ import annotations

import math

import pytest

from simulator.errors import ScenarioError
from simulator.workflows.goodput import (attainment_at, candidates, colocated, disaggregated, max_goodput, scenario_gpus,
                               search_placements)
from sim_helpers import scenario

BASE = scenario(workload={"num_requests": 120, "prompt_tokens": {"kind": "fixed", "value": 512},
                          "output_tokens": {"kind": "fixed", "value": 32}},
                cluster={"hardware": "a100-80gb", "model": "llama-2-13b", "dtype": "fp16"},
                slo={"ttft_s": 0.4, "tpot_s": 0.04, "attainment": 0.9})


def test_bisection_brackets_the_highest_rate_meeting_the_target():
    g = max_goodput(colocated(BASE, 1, 1, 1), rel_tol=0.02)
    assert g.gpus == 1 and g.rate_rps > 0
    assert g.attainment >= 0.9 and attainment_at(colocated(BASE, 1, 1, 1), g.rate_rps) == g.attainment
    failing = [r for r, a in g.curve if a < 0.9]
    assert failing and min(failing) > g.rate_rps
    assert (min(failing) - g.rate_rps) <= 0.02 * min(failing) + 1e-12
    assert all(a >= 0.9 for r, a in g.curve if r <= g.rate_rps)


def test_more_gpus_serve_more_and_gpus_are_counted_per_pool():
    one = max_goodput(colocated(BASE, 1, 1, 1), rel_tol=0.05)
    two = max_goodput(colocated(BASE, 2, 1, 1), rel_tol=0.05)
    assert two.rate_rps > 1.5 * one.rate_rps
    assert scenario_gpus(disaggregated(BASE, (2, 2, 1), (3, 1, 2))) == 2 * 2 + 3 * 2
    assert scenario_gpus(colocated(BASE, 3, 2, 2)) == 12


@pytest.mark.parametrize("layout", ["colocated", "disaggregated"])
def test_a_separate_draft_models_gpus_count_in_goodput_per_gpu_as_in_the_summary(layout):
    """A draft model at placement separate runs on its own drafter.tp GPUs in every replica (each pool's):
    goodput per GPU divides by them too, as the run's summary counts `gpus` (before: 3 x tp1 replicas with a
    tp-1 separate draft counted 3 GPUs, the summary 6)."""
    import simulator
    draft = {"kind": "draft_model", "model": "llama-68m", "gamma": 3, "tp": 1, "placement": "separate"}
    data = colocated(BASE, 3, 1, 1) if layout == "colocated" else disaggregated(BASE, (2, 1, 1), (1, 2, 1))
    data = {**data, "drafter": draft, "acceptance": {"kind": "constant", "alpha": 0.7},
            "cluster": {**data["cluster"], "engine": {"version": "0.15.0"}}}
    expected = 3 * (1 + 1) if layout == "colocated" else 2 * (1 + 1) + 1 * (2 + 1)
    assert scenario_gpus(data) == expected
    assert simulator.prepare(data).cluster.gpus == expected


def test_the_placement_search_keeps_separate_draft_layouts_within_the_budget(monkeypatch):
    """With a separate-GPU draft model each replica holds drafter.tp more GPUs: layouts past max_gpus with
    them are not searched (before: 4 tp-1 replicas + their 4 draft GPUs were a '4-GPU' layout)."""
    from simulator.workflows import goodput
    monkeypatch.setattr(goodput, "max_goodput", lambda d, **kw: goodput.Goodput(1.0, scenario_gpus(d), 1.0, 1, ()))
    data = {**BASE, "drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 3, "placement": "separate"}}
    rows = goodput.search_placements(data, 4, tps=(1, 2), pps=(1,))
    assert len(rows) and rows.gpus.max() <= 4
    assert set(rows[rows.kind == "colocated"].layout) == {"colocated 1× tp1 pp1", "colocated 2× tp1 pp1",
                                                          "colocated 1× tp2 pp1"}


def test_candidates_stay_within_the_budget_and_cover_both_kinds():
    cands = candidates(4, tps=(1, 2), pps=(1,))
    assert ("colocated", (4, 1, 1)) in cands and ("disaggregated", ((3, 1, 1), (1, 1, 1))) in cands
    for kind, layout in cands:
        gpus = layout[0] * layout[1] * layout[2] if kind == "colocated" else sum(n * t * p for n, t, p in layout)
        assert gpus <= 4


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_search_ranks_layouts_and_reports_those_that_do_not_fit():
    data = dict(BASE, cluster=dict(BASE["cluster"], model="llama-2-70b"))
    table = search_placements(data, 2, tps=(1,), pps=(1,), rel_tol=0.1)
    assert len(table) == 3 and (table.skipped != "").all()     # 138 GB of weights fit on no single A100
    assert table.goodput_per_gpu_rps.isna().all() and table.skipped.str.contains("parallelism|cluster.model").all()
    table = search_placements(BASE, 2, tps=(1,), pps=(1,), rel_tol=0.1)
    assert len(table) == 3 and (table.skipped == "").all()
    per_gpu = table.goodput_per_gpu_rps.tolist()
    assert per_gpu == sorted(per_gpu, reverse=True) and not any(math.isnan(v) for v in per_gpu)


def test_a_configuration_that_never_meets_the_slo_has_goodput_0():
    """(found by the distserve reproduction on a slower host: the bisection halved the rate towards 0 until the
    workload spread over more than the DES simulates, and the search failed with an arrival.qps error)"""
    data = colocated(dict(BASE, workload=dict(BASE["workload"], num_requests=20), slo={"tpot_s": 1e-6,
                                                                                          "attainment": 0.9}), 1, 1, 1)
    g = max_goodput(data)
    assert g.rate_rps == 0.0 and g.evaluations <= 24 and all(a < 0.9 for _, a in g.curve)
    assert min(r for r, _ in g.curve) >= 20 / 1e8


def test_goodput_needs_an_slo():
    with pytest.raises(ScenarioError, match="slo"):
        max_goodput(dict(BASE, slo={"attainment": 0.9}))


def test_a_disaggregated_layout_routes_each_pool_with_the_scenarios_router():
    """The colocated scenario's cluster.router routes both pools of a disaggregated layout (it was read by
    nothing: both routed round robin; such a scenario is now refused, which broke the README's search)."""
    from simulator.api import prepare
    data = {**BASE, "cluster": {**BASE["cluster"], "router": "least_outstanding"}}
    layout = disaggregated(data, (2, 1, 1), (1, 1, 1))
    pools = layout["cluster"]["disaggregation"]
    assert "router" not in layout["cluster"]
    assert pools["prefill"]["router"] == pools["decode"]["router"] == "least_outstanding"
    prepare(layout)   # a valid scenario
    assert "router" not in disaggregated(BASE, (1, 1, 1), (1, 1, 1))["cluster"]["disaggregation"]["prefill"]
