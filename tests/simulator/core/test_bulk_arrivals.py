"""Bulks that run through arrivals (simulator.core.bulk_arrivals): a prefill-first replica's prefill steps folded into
its bulk of decode steps give the step-by-step path's requests and steps, byte for byte, where arrivals come in
bursts and during prefill steps, the batch is full, KV runs out, requests finish in their prefill step, the replica
speculates, and the step log flushes in the middle of a bulk; and the fold is what runs."""
from __future__ import annotations

import pytest

import simulator
import simulator.core.bulk as bulk
import simulator.core.steplog as steplog
import simulator.core.timeline as timeline
from sim_helpers import assert_bulk_equals_step, scenario

CHAIN = {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 4},
         "acceptance": {"kind": "constant", "alpha": 0.7}}
BURSTS = {"workload": {"arrival": {"process": "poisson", "qps": 60.0}, "num_requests": 300}}   # several arrivals per step
# case -> (scenario overrides, the fewest prefill steps folded into bulks: about half as many as the run folds)
CASES = {
    "poisson": ({}, 130),
    "chain": (CHAIN, 110),
    # several prompts admitted per step, prefill steps in a row (8 × 256 tokens a step at most)
    "bursts": ({**BURSTS, "scheduler": {"kind": "vllm", "max_batch_size": 64, "max_batched_tokens": 1024}}, 35),
    "bursts_chain": ({**BURSTS, **CHAIN}, 35),
    # the waiting head blocked by the batch's size: the bulk ends, a bulk behind a blocked head follows
    "batch_full": ({**BURSTS, "scheduler": {"kind": "vllm", "max_batch_size": 6}}, 1),
    # a small KV pool: heads blocked by KV, bulks stopped before a preemption
    "kv_pressure": ({**BURSTS, "cluster": {"gpu_memory_utilization": 0.215, "max_model_len": 4096},
                     "workload": {"arrival": {"process": "poisson", "qps": 60.0}, "num_requests": 300,
                                  "output_tokens": {"kind": "uniform", "low": 200, "high": 800}}}, 8),
    # requests that finish in their prefill step (one output token) among others
    "one_token": ({"workload": {"output_tokens": {"kind": "uniform", "low": 1, "high": 4}, "num_requests": 200}}, 1),
    # two replicas, routed ahead
    "replicas": ({"cluster": {"replicas": 2}, "workload": {"arrival": {"process": "poisson", "qps": 12.0}}}, 145),
}


def _folds(data, monkeypatch) -> tuple[int, int]:
    """(prefill steps folded into bulks, prefill steps) of a bulk-mode run of `data`: the steps formed inside
    `extend` and all steps with prompts."""
    from simulator.core.replica import Replica
    inside, folded = [False], []
    extend, plan_step = timeline.extend_bulk, Replica.plan_step

    def extending(rep, plan, arrivals, finished):
        inside[0] = True
        try:
            return extend(rep, plan, arrivals, finished)
        finally:
            inside[0] = False

    def planning(rep, now_s):
        step = plan_step(rep, now_s)
        if inside[0]:
            assert step.prefill_ids and not len(step.decode_ids)
            folded.append(now_s)
        return step
    monkeypatch.setattr(timeline, "extend_bulk", extending)
    monkeypatch.setattr(Replica, "plan_step", planning)
    result = simulator.run(data, step_mode="bulk")
    monkeypatch.undo()
    return len(folded), int((result.steps.prefill_seqs > 0).sum())


@pytest.mark.parametrize("case", sorted(CASES))
def test_folded_bulks_equal_the_step_path(case, monkeypatch):
    overrides, fewest = CASES[case]
    data = scenario(**overrides)
    folded, prefill_steps = _folds(data, monkeypatch)
    assert fewest <= folded < prefill_steps, (folded, prefill_steps)   # (not those into an idle replica)
    assert_bulk_equals_step(data)


@pytest.mark.parametrize("mode", ["sampled", "aggregate"])
def test_a_flush_never_falls_inside_a_folded_bulk(mode, monkeypatch):
    """The step log flushes every few steps here: a flush between a folded prefill step's row and the decode steps
    before it (logged at the bulk's end) would see a replica's steps out of time order — its sampled ranks and its
    carried interval would differ from the step path's (StepLog.defer_flush)."""
    monkeypatch.setattr(steplog, "FLUSH_STEPS", 5)
    option = {"step_sample_every": 3} if mode == "sampled" else {"step_interval_s": 0.5}
    data = scenario(**CHAIN, outputs={"plots": False, "steps": mode, **option})
    assert _folds(data, monkeypatch)[0] > 50
    monkeypatch.setattr(steplog, "FLUSH_STEPS", 5)
    assert_bulk_equals_step(data)


def test_a_join_that_moves_the_profile_splits_the_bulk(monkeypatch):
    """A folded bulk's decode columns are logged as one view of the profile's table, and a join may move the table's
    columns from the next step on (`DecodeProfile._room`): the fold logs the bulk so far first (`_split`). The run
    splits many times, and its steps are the step path's (a view of moved columns would not be)."""
    import simulator.core.bulk_arrivals as bulk_arrivals
    splits, moves = [], []
    split, hold = bulk_arrivals._split, bulk.DecodeProfile._hold
    monkeypatch.setattr(bulk_arrivals, "_split", lambda rep, plan: splits.append(plan.steps) or split(rep, plan))
    monkeypatch.setattr(bulk.DecodeProfile, "_hold", lambda self, table: moves.append(len(table)) or hold(self, table))
    data = scenario(workload={"arrival": {"process": "poisson", "qps": 6.0}, "num_requests": 600,
                              "output_tokens": {"kind": "uniform", "low": 100, "high": 700}})
    simulator.run(data, step_mode="bulk")
    assert len(splits) > 10 and min(splits) > 0 and len(moves) > 10
    monkeypatch.undo()
    assert_bulk_equals_step(data)
