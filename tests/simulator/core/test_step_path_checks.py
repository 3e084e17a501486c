"""The step path's work per arrival in bulk mode (issue 30's one-process speed): checks that are not made twice.
Outputs stay the bulk mode's and the step mode's alike (sim_helpers.assert_bulk_equals_step)."""
from __future__ import annotations

import simulator
import simulator.core.sched.vllm as vllm
from sim_helpers import assert_bulk_equals_step, scenario


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
