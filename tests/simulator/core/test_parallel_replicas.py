"""Independent replicas in worker processes (simulator.core.parallel): outputs byte-identical to one process
for every step-log mode, with and without speculation and with measured GPU kernels (whose summary counts
the distinct shapes priced); progress counts every request; a failing worker fails the run."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.core import parallel
from simulator.distributed.executors import make_executor
from simulator.errors import ScenarioError
from sim_helpers import merge, scenario

@pytest.fixture
def three_cores(monkeypatch):
    """Three worker processes allowed whatever this machine's cores (`simulation.workers` is at most the
    cores): the merge of two children's parts runs on a 2-core machine too."""
    monkeypatch.setattr(parallel, "local_workers_max", lambda: 3)


SPEC = {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 3},
        "acceptance": {"kind": "constant", "alpha": 0.7}}


def cluster(steps: str, spec: bool, workers, **extra) -> dict:
    return scenario(cluster={"replicas": 5, "router": "round_robin", **extra.pop("cluster", {})},
                    workload={"arrival": {"qps": 40.0}, "num_requests": 1500},
                    simulation={"workers": workers}, outputs={"steps": steps}, **(SPEC if spec else {}), **extra)


@pytest.mark.parametrize("spec", [False, True], ids=["plain", "spec"])
@pytest.mark.parametrize("steps", ["full", "sampled", "aggregate"])
def test_workers_give_the_same_outputs_as_one_process(steps, spec, three_cores):
    one = simulator.run(cluster(steps, spec, 1))
    three = simulator.run(cluster(steps, spec, 3))
    assert one.requests.replica.nunique() == 5
    pd.testing.assert_frame_equal(one.requests, three.requests)
    pd.testing.assert_frame_equal(one.steps, three.steps)
    assert json.dumps(one.summary, default=str, sort_keys=True) == json.dumps(three.summary, default=str,
                                                                              sort_keys=True)


def test_measured_kernels_count_the_same_shapes_in_workers():
    one = simulator.run(cluster("aggregate", False, 1))   # (the helpers' H100 prices with measured kernels)
    two = simulator.run(cluster("aggregate", False, 2))
    assert one.summary["latency_source"]["source"] == "measured"
    assert one.summary["latency_source"] == two.summary["latency_source"]
    pd.testing.assert_frame_equal(one.requests, two.requests)


def test_progress_counts_every_request_across_workers(three_cores):
    counted = []
    result = simulator.run(cluster("aggregate", False, 3), progress=counted.append)
    assert sum(counted) == len(result.requests) == 1500


def test_worker_count_rules():
    sc = simulator.api.prepare(cluster("aggregate", False, 1))
    reps = sc.cluster.replicas
    assert parallel.worker_count(8, reps, 10) == 5           # at most one process per replica
    assert parallel.worker_count(2, reps, 10) == 2
    assert parallel.worker_count(1, reps, 10**6) == 1
    assert parallel.worker_count("auto", reps, parallel.AUTO_MIN_REQUESTS - 1) == 1   # too small to pay off
    assert parallel.worker_count(3, reps[:1], 10**6) == 1    # one replica: nothing to split
    assert 1 <= parallel.worker_count("auto", reps, 10**6) <= min(parallel.AUTO_MAX_WORKERS, len(reps))
    policy = simulator.api.prepare(scenario(cluster={"replicas": 3}, policy={"kind": "smartspec", "max_gamma": 4},
                                            **SPEC))
    assert parallel.worker_count(3, policy.cluster.replicas, 10**6) == 1   # its state is read after the run


def test_workers_are_at_most_the_machines_cores(monkeypatch):
    monkeypatch.setattr(parallel, "local_workers_max", lambda: 2)
    assert simulator.api.prepare(cluster("aggregate", False, 2)).scenario.simulation.workers == 2
    for bad in (3, 100_000):
        with pytest.raises(ScenarioError, match=r"simulation\.workers.*an integer in 1\.\.2 \(this machine's cores\)"):
            simulator.api.prepare(cluster("aggregate", False, bad))
    with pytest.raises(ScenarioError, match=r"^--workers: must be an integer in 1\.\.2 \(this machine's cores\), got 3"):
        make_executor("local", 3)
    with pytest.raises(ScenarioError, match=r"^--workers: must be an integer in 1\.\.2"):
        make_executor("local-dask", 100_000)
    assert make_executor("local", 2).workers == 2 and make_executor("local").workers == 2   # default: the cores


def test_split_work_balances_requests_and_keeps_replica_order():
    work = [(i, np.arange(n)) for i, n in enumerate([10, 1, 7, 7, 3, 2])]
    groups = parallel.split_work(work, 3)
    assert sorted(i for g in groups for i, _ in g) == list(range(6))
    assert all([i for i, _ in g] == sorted(i for i, _ in g) for g in groups)
    loads = [sum(len(ids) for _, ids in g) for g in groups]
    assert max(loads) - min(loads) <= 10   # greedy longest-first: within the largest item


def test_a_failing_worker_fails_the_run():
    prepared = simulator.api.prepare(cluster("aggregate", False, 1))
    reps = prepared.cluster.replicas
    work = [(rep, np.arange(10)) for rep in reps]   # (ids only size the groups here)

    def run_group(pairs, report):
        if pairs[0][0].index != 0:   # the groups of the child processes
            raise ValueError("boom in a worker")

    with pytest.raises(RuntimeError, match="boom in a worker"):
        parallel.run_parallel(work, 2, run_group, prepared.cluster.log, prepared.cluster.state, lambda k: None,
                              [])


def test_mixed_steps_count_the_same_draft_shapes_in_workers():
    """Draft passes of mixed prefill + decode steps (TensorRT-LLM's in-flight batching) are priced from a
    lazily filled grid of mean context (simulator.cost.step_cost.LazyGrid) that the replicas of a pool share.
    It used to fill the rows between two lookups, so one process (the replicas one after another, sharing
    it) priced 239 distinct decode-attention shapes and two workers 198 (summary.json differed; found by
    fuzzing `simulation.workers` 1 against 2); both count only the shapes looked up now."""
    data = scenario(workload={"arrival": {"qps": 4.0}, "prompt_tokens": {"kind": "fixed", "value": 256},
                              "output_tokens": {"kind": "uniform", "low": 64, "high": 256}, "num_requests": 10,
                              "sessions": {"turns": {"kind": "fixed", "value": 2}, "think_time_s": 1.0}},
                    cluster={"replicas": 4}, scheduler={"kind": "trtllm", "max_batch_size": 256},
                    drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                    speculation={"kind": "multidraft", "n": 4}, acceptance={"kind": "pair"}, seed=0)
    one = simulator.run(merge(data, {"simulation": {"workers": 1}}))
    two = simulator.run(merge(data, {"simulation": {"workers": 2}}))
    assert one.requests.replica.nunique() == 4
    pd.testing.assert_frame_equal(one.requests, two.requests)
    pd.testing.assert_frame_equal(one.steps, two.steps)
    assert json.dumps(one.summary, default=str, sort_keys=True) == json.dumps(two.summary, default=str,
                                                                              sort_keys=True)
