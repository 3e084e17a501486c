"""The step path's work per arrival in bulk mode (issue 30's one-process speed): checks that are not made twice.
Outputs stay the bulk mode's and the step mode's alike (sim_helpers.assert_bulk_equals_step)."""
from __future__ import annotations

import math
from collections import deque

import numpy as np
import pytest

import simulator
import simulator.core.sched.vllm as vllm
from sim_helpers import assert_bulk_equals_step, scenario
from simulator.core.timeline import OwnArrivals


def _head_checks(data, monkeypatch) -> tuple[int, object]:
    """(checks of a non-empty waiting queue's head by the prefill-first scheduler's rule, the run's result)."""
    calls = []
    original = vllm.plain_head_admissible

    def counting(view, token_room, batch_len):
        if view.waiting:
            calls.append(view.waiting[0])
        return original(view, token_room, batch_len)
    monkeypatch.setattr(vllm, "plain_head_admissible", counting)
    result = simulator.run(data, step_mode="bulk")
    return len(calls), result


def test_an_admissible_head_is_checked_once(monkeypatch):
    """A bulk that stops at an arrival hands over to a prefill step: `Replica.bulk_ready` checks the waiting head,
    finds it admissible, and the prefill-first scheduler's plan does not check it again (`head_ok=True`).
    Before, every admission into a running batch was checked twice in a row with the same arguments."""
    data = scenario(workload={"arrival": {"process": "poisson", "qps": 4.0}, "num_requests": 60})
    checks, result = _head_checks(data, monkeypatch)
    admitted = len(result.requests)
    assert admitted == 60 and (result.steps.prefill_seqs > 0).sum() > 30   # (prefill steps into running batches)
    assert checks == admitted, (checks, admitted)
    assert_bulk_equals_step(data)


@pytest.mark.parametrize("now_s, taken, pos", [
    (0.5, [], 0),            # nothing arrived yet
    (1.0, [10], 1),          # one arrival, exactly at the boundary (seen by the step formed there)
    (1.5, [10], 1),          # one arrival before the boundary, the next after it
    (2.0, [10, 11, 12], 3),  # several: two at the same instant
    (9.0, [10, 11, 12, 13], 4),   # every one (the last read against the sentinel, the end of what is known)
])
def test_take_moves_what_arrived(now_s, taken, pos):
    """`OwnArrivals.take` (its one-arrival branch and its search) moves exactly the requests that arrived by now."""
    arrivals = OwnArrivals(np.array([10, 11, 12, 13]), np.array([1.0, 2.0, 2.0, 3.0]), until_s=math.inf)
    waiting = deque()
    arrivals.take(waiting, now_s)
    assert list(waiting) == taken and arrivals.pos == pos
    arrivals.take(waiting, now_s)   # (again at the same instant: nothing more)
    assert list(waiting) == taken and arrivals.pos == pos


def test_take_stops_at_the_window_end():
    """With arrivals known up to `until_s` (a distributed window), the one-arrival branch reads the sentinel."""
    arrivals = OwnArrivals(np.array([10, 11]), np.array([1.0, 2.0]), until_s=4.0)
    waiting = deque()
    arrivals.take(waiting, 1.0)
    arrivals.take(waiting, 3.0)
    assert list(waiting) == [10, 11] and arrivals.pos == 2 and arrivals.next_s() == 4.0


@pytest.mark.parametrize("drafter", [{"kind": "none"},
                                     {"kind": "draft_model", "model": "llama-68m", "gamma": 4}])
def test_the_clock_is_a_python_float(drafter, monkeypatch):
    """A step's costs are Python floats (simulator.cost.step_cost.Cost.of), so the replica's clock after a prefill
    step is one and a bulk's scan sums its boundaries in Python floats. Before, the clock became a NumPy scalar
    at the first priced step and every boundary of every later bulk was a NumPy scalar operation (the same
    values; outputs unchanged, sim_helpers.assert_bulk_equals_step)."""
    import simulator.core.timeline as timeline
    seen, boundaries = [], []
    original = timeline.apply_bulk

    def recording(rep, plan, finished):
        seen.append({type(rep.clock_s), type(rep.last_step_s)} | set(map(type, plan.bounds_s)))
        boundaries.append(len(plan.bounds_s))
        return original(rep, plan, finished)
    monkeypatch.setattr(timeline, "apply_bulk", recording)
    data = scenario(workload={"num_requests": 40}, drafter=drafter)
    simulator.run(data, step_mode="bulk")
    # (the bulks run through arrivals, their prefill steps folded in: simulator.core.bulk_arrivals)
    assert len(seen) >= 3 and sum(boundaries) > 200 and set().union(*seen) == {float}
    monkeypatch.undo()
    assert_bulk_equals_step(data)


def test_a_life_computed_ahead_adds_what_a_one_request_join_adds(monkeypatch):
    """Speculating requests join a bulk's profile from lives computed ahead (simulator.core.lives.lives_ahead), whose
    rows past a request's end are left unmasked: the rows a join reads must be exactly those the one-request join
    (`DecodeProfile._join_one`) adds. Same requests and steps with every life refused as without."""
    import pandas as pd

    import simulator.core.bulk as bulk
    data = scenario(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                    acceptance={"kind": "constant", "alpha": 0.7},
                    workload={"arrival": {"process": "poisson", "qps": 6.0}, "num_requests": 120})
    joins = []
    original = bulk.DecodeProfile._join_ahead

    def counted(self, r):
        joined = original(self, r)
        joins.append(joined)
        return joined
    monkeypatch.setattr(bulk.DecodeProfile, "_join_ahead", counted)
    ahead = simulator.run(data, step_mode="bulk")
    assert sum(joins) > 60, sum(joins)   # (most requests joined from a life)
    monkeypatch.setattr(bulk.DecodeProfile, "_join_ahead", lambda self, r: False)
    alone = simulator.run(data, step_mode="bulk")
    pd.testing.assert_frame_equal(ahead.requests, alone.requests)
    pd.testing.assert_frame_equal(ahead.steps, alone.steps)
