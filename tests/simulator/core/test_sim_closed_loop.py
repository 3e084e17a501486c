"""Closed-loop workloads (`arrival: {process: closed_loop, concurrency: C}`): the population identity
(exactly C requests in the system while requests remain), sends at completion instants, bulk ≡ step,
and the errors of bad configurations."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import simulator
from sim_helpers import scenario
from simulator.errors import ScenarioError


def _closed(c: int, n: int = 60, replicas: int = 1, **extra) -> dict:
    return scenario(workload={"arrival": {"process": "closed_loop", "concurrency": c, "qps": None},
                              "num_requests": n,
                              "prompt_tokens": {"kind": "uniform", "low": 64, "high": 700},
                              "output_tokens": {"kind": "uniform", "low": 8, "high": 120}},
                    cluster={"replicas": replicas}, **extra)


def _in_system(req: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(event times, requests in the system just after each event); at equal times completions count
    before the sends they trigger."""
    times = np.concatenate([req.arrival_s, req.finish_s])
    delta = np.concatenate([np.ones(len(req)), -np.ones(len(req))])
    order = np.lexsort((delta, times))
    return times[order], np.cumsum(delta[order])


@pytest.mark.parametrize("c", [1, 3, 8])
def test_population_is_the_concurrency_while_requests_remain(c):
    result = simulator.run(_closed(c))
    req = result.requests
    assert not req["dropped"].any()
    times, population = _in_system(req)
    assert population.max() == c
    last_send = req["arrival_s"].max()
    # After each event at or before the last send, C requests are in the system (a completion is
    # answered by a send at the same instant).
    at = np.searchsorted(times, last_send, side="right")
    ends = np.r_[np.flatnonzero(np.diff(times[:at]) > 0), at - 1]
    assert (population[ends] == c).all()


def test_request_i_plus_c_is_sent_at_the_i_th_completion():
    c = 4
    req = simulator.run(_closed(c, n=40)).requests
    assert (req["arrival_s"].to_numpy()[:c] == 0.0).all()
    completions = np.sort(req["finish_s"].to_numpy())
    np.testing.assert_array_equal(req["arrival_s"].to_numpy()[c:], completions[: len(req) - c])


def test_one_client_never_queues():
    req = simulator.run(_closed(1, n=20)).requests
    np.testing.assert_array_equal(req["admit_s"], req["arrival_s"])
    np.testing.assert_array_equal(req["arrival_s"].to_numpy()[1:], req["finish_s"].to_numpy()[:-1])


@pytest.mark.parametrize("replicas,drafter", [(1, {"kind": "none"}),
                                              (1, {"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
                                              (3, {"kind": "none"})])
def test_bulk_and_step_modes_are_identical(replicas, drafter):
    sc = _closed(6, n=80, replicas=replicas, drafter=drafter)
    bulk = simulator.run(sc, step_mode="bulk")
    step = simulator.run(sc, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)


def test_concurrency_at_least_the_requests_sends_everything_at_once():
    req = simulator.run(_closed(100, n=30)).requests
    assert (req["arrival_s"] == 0.0).all()


@pytest.mark.parametrize("workload,field", [
    ({"arrival": {"process": "closed_loop", "qps": None}, "num_requests": 5}, "workload.arrival.concurrency"),
    ({"arrival": {"process": "closed_loop", "concurrency": 0, "qps": None}, "num_requests": 5},
     "workload.arrival.concurrency"),
    ({"arrival": {"process": "closed_loop", "concurrency": 2, "qps": 3.0}, "num_requests": 5},
     "workload.arrival.qps"),
    ({"arrival": {"process": "poisson", "qps": 3.0, "concurrency": 2}, "num_requests": 5},
     "workload.arrival.concurrency"),
    ({"arrival": {"process": "closed_loop", "concurrency": 2, "qps": None}, "num_requests": None,
      "duration_s": 10.0}, "workload.duration_s"),
])
def test_bad_closed_loop_configurations_name_the_field(workload, field):
    with pytest.raises(ScenarioError, match=f"^{field}"):
        simulator.run(scenario(workload=workload))


def _closed_disagg(c: int, n: int = 60, **extra) -> dict:
    sc = _closed(c, n, **extra)
    sc["cluster"] = {"hardware": "a100-80gb", "model": "llama-2-7b", "engine": {"version": "0.15.0"},
                     "disaggregation": {"prefill": {"replicas": 2}, "decode": {"replicas": 2}}}
    return sc


@pytest.mark.parametrize("drafter", [{"kind": "none"}, {"kind": "draft_model", "model": "llama-68m", "gamma": 3}])
def test_closed_loop_with_disaggregation_sends_at_each_decode_completion(drafter):
    """A completion in the decode pool sends the next request to the prefill pool at that instant."""
    c = 4
    sc = _closed_disagg(c, drafter=drafter)
    bulk = simulator.run(sc, step_mode="bulk")
    req = bulk.requests
    assert not req["dropped"].any() and req["finish_s"].notna().all()
    assert (req["arrival_s"].to_numpy()[:c] == 0.0).all()
    completions = np.sort(req["finish_s"].to_numpy())
    np.testing.assert_array_equal(req["arrival_s"].to_numpy()[c:], completions[: len(req) - c])
    assert _in_system(req)[1].max() == c
    step = simulator.run(sc, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)


@pytest.mark.parametrize("step_mode", ["step", "bulk"])
def test_a_request_sent_at_a_step_boundary_of_another_replica_joins_the_step_formed_there(step_mode):
    """Three replicas of one-token prompts step in lockstep (equal batches, bit-equal step times), so
    replica 2's first finish (request 2, at 0.915906 s) falls exactly on a step boundary of replica 1, where
    round robin sends request 4. Arrivals at a boundary are seen by the step formed there (open-loop arrivals
    by their urgent priority, OwnArrivals.take); step by step, replica 1 formed that step before replica 2's
    finish was processed (its step end came first in SimPy's queue) and prefilled request 4 one step later
    (first token 0.927569 s; bulk mode, cut at the boundary, 0.921964 s: the modes differed; found by fuzzing).
    Replicas now form their next step after every step end of the instant."""
    data = scenario(workload={"arrival": {"process": "closed_loop", "concurrency": 4, "qps": None}, "num_requests": 5,
                              "prompt_tokens": {"kind": "fixed", "value": 1},
                              "output_tokens": {"kind": "uniform", "low": 128, "high": 512}},
                    cluster={"replicas": 3, "model": "llama-2-7b"}, seed=414, simulation={"step_mode": step_mode})
    req = simulator.run(data).requests
    assert req.replica.tolist() == [0, 1, 2, 0, 1]
    finish_2 = req.finish_s.iloc[2]
    assert req.arrival_s.iloc[4] == finish_2 == min(req.finish_s)
    steps = simulator.run(data).steps
    boundary = steps[(steps.replica == 1) & (steps.start_s == finish_2)]
    assert len(boundary) == 1 and int(boundary.prefill_tokens.iloc[0]) == 1   # request 4's prompt, at once
    assert req.admit_s.iloc[4] == finish_2


def test_step_ends_of_one_instant_route_their_sends_in_replica_order_in_both_modes():
    """Replicas 0 and 1 end a step at the same instant (t = 0.022118 s: equal batches of 4-token prompts, all
    of replica 0's and 4 of replica 1's 5 requests finishing), and the finishes send the last three
    requests (17-19), which join_shortest_queue places by the loads it reads. Step ends of one instant are
    processed in replica order: replica 0's finishes route all three while replica 1's 5 requests still
    count (queues [1, 0, 0] with request 16 waiting on replica 0, outstanding [1, 5, 5]): 17 -> 2 (queue 0,
    tied with 1 on 5 outstanding: the router's draw), 18 -> 1 (queue 0), 19 -> 0 (queues all 1, outstanding
    1 against 6 and 6). Before, the order was SimPy's event order: step by step the same, but in bulk mode
    replica 0's bulk, cut at 0.016764 s by request 16, re-scheduled its end behind replica 1's, whose
    finishes were applied first (outstanding [6, 1, 5]): 17 -> 1, 18 -> 2, 19 -> 1, and every later time
    differed (found by tests/test_determinism_fuzz.py)."""
    data = scenario(workload={"arrival": {"process": "closed_loop", "concurrency": 16, "qps": None},
                              "num_requests": 20, "prompt_tokens": {"kind": "fixed", "value": 4},
                              "output_tokens": {"kind": "lognormal", "median": 4.0, "sigma": 0.1, "max": 2048}},
                    cluster={"hardware": "b300", "model": "llama-2-13b", "replicas": 3,
                             "router": "join_shortest_queue"}, seed=890)
    bulk, step = simulator.run(data, step_mode="bulk"), simulator.run(data, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    req = bulk.requests
    t = req.arrival_s.iloc[17]
    assert (req.arrival_s.iloc[17:] == t).all() and round(t, 6) == 0.022118
    assert set(req.index[req.finish_s == t]) == {1, 2, 3, 5, 7, 8, 9, 11, 13}   # replicas 0 and 1, together
    assert req.replica.iloc[16:].tolist() == [0, 2, 1, 0]
