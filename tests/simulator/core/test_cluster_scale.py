"""Cluster-scale engine: multi-replica bulk runs (each replica's bulks end only at its own events) route and
step exactly as step-by-step mode with every router; the step log's sampled and aggregate outputs keep what
they say and leave the summary unchanged."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import simulator
import simulator.core.steplog as steplog
from simulator.results.step_totals import aggregate_steps
from sim_helpers import scenario

DRAFT = {"kind": "draft_model", "model": "llama-68m", "gamma": 3}
SPEC = {"drafter": DRAFT, "acceptance": {"kind": "constant", "alpha": 0.7}}
ROUTERS = ("round_robin", "least_outstanding", "join_shortest_queue")


def cluster(router: str, spec: bool, **workload) -> dict:
    return scenario(cluster={"replicas": 4, "router": router},
                    workload={"arrival": {"qps": 30.0}, "num_requests": 400, **workload},
                    **(SPEC if spec else {}))


@pytest.mark.parametrize("spec", [False, True], ids=["plain", "spec"])
@pytest.mark.parametrize("router", ROUTERS)
def test_multi_replica_bulk_routes_and_steps_like_step_mode(router, spec):
    sc = cluster(router, spec)
    bulk = simulator.run(sc, step_mode="bulk")
    step = simulator.run(sc, step_mode="step")
    assert bulk.requests.replica.nunique() == 4   # the load is spread, so routing is exercised
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    # (latency_source counts the shapes priced, which depends on how steps were batched for pricing)
    assert {k: v for k, v in bulk.summary.items() if k != "latency_source"} == \
        {k: v for k, v in step.summary.items() if k != "latency_source"}


def _with_steps(sc: dict, mode: str, **extra) -> dict:
    return {**sc, "outputs": {**sc["outputs"], "steps": mode, **extra}}


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "spec"])
def logs(request):
    """The same run with every step kept, sampled and aggregated, with flushes every 97 steps (so sampling
    ranks and aggregate intervals cross flushes)."""
    sc = cluster("least_outstanding", request.param)
    flush = steplog.FLUSH_STEPS
    steplog.FLUSH_STEPS = 97
    try:
        options = {"sampled": {"step_sample_every": 7}, "aggregate": {"step_interval_s": 0.5}}
        return {mode: simulator.run(_with_steps(sc, mode, **options.get(mode, {}))) for mode in steplog.STEP_MODES}
    finally:
        steplog.FLUSH_STEPS = flush


def test_summary_is_the_same_whatever_steps_are_kept(logs):
    full = json.dumps(logs["full"].summary, sort_keys=True)
    assert json.dumps(logs["sampled"].summary, sort_keys=True) == full
    assert json.dumps(logs["aggregate"].summary, sort_keys=True) == full
    pd.testing.assert_frame_equal(logs["aggregate"].requests, logs["full"].requests)


def test_sampled_keeps_every_nth_step_of_each_replica(logs):
    full = logs["full"].steps
    rank = full.sort_values(["replica", "start_s"]).groupby("replica").cumcount()
    expected = full[(rank.reindex(full.index) % 7 == 0).to_numpy()].reset_index(drop=True)
    pd.testing.assert_frame_equal(logs["sampled"].steps, expected)


def test_aggregate_equals_aggregating_the_full_log_at_once(logs):
    full = logs["full"].steps
    cols = {name: full[name].to_numpy() for name in steplog.STEP_COLUMNS}
    once = aggregate_steps(cols, float(logs["full"].requests.arrival_s.min()), 0.5)
    agg = logs["aggregate"].steps.sort_values(["replica", "interval_start_s"]).reset_index(drop=True)
    for name, values in once.items():
        np.testing.assert_array_equal(agg[name].to_numpy(), values, err_msg=name)
    # and conserves what the full log counts
    assert agg.steps.sum() == len(full)
    assert agg.emitted_tokens.sum() == full.emitted_tokens.sum()
    assert agg.kv_blocks_used_max.max() == full.kv_blocks_used.max()
    assert agg.busy_s.sum() == pytest.approx(full.duration_s.sum(), rel=1e-12)
