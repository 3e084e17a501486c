"""The decode profile across a step-by-step step (simulator.core.bulk.DecodeProfile.dissolve / after_step):
a step that decodes every member once is their next profile step, so the members go on without joining the
profile again; any other step empties it. And vLLM V1's rule 2 at once (simulator.core.sched.vllm_v1
`_every_running_in_full`) against the request-by-request loop. Outputs are the bulk mode's and the step
mode's alike (sim_helpers.assert_bulk_equals_step)."""
from __future__ import annotations

import numpy as np
import pytest

import simulator
import simulator.core.bulk as bulk
from sim_helpers import assert_bulk_equals_step, scenario
from test_vllm_v1_scheduler import _compositions, _replica


def _joins(data, monkeypatch) -> tuple[int, object]:
    calls = []
    original = bulk.DecodeProfile._join_plain

    def counting(self, r):
        calls.append(r)
        return original(self, r)
    monkeypatch.setattr(bulk.DecodeProfile, "_join_plain", counting)
    result = simulator.run(data, step_mode="bulk")
    return len(calls), result


@pytest.mark.parametrize("kind", ["vllm_v1", "sarathi"])
def test_mixed_steps_keep_the_members(kind, monkeypatch):
    """With chunked prefill every arrival's chunk rides on a step that decodes the whole batch: each request
    joins the profile once (before, the batch was written back and joined again at every such step: ~the
    batch size × the requests)."""
    data = scenario(workload={"arrival": {"process": "poisson", "qps": 40.0}},
                    scheduler={"kind": kind, "max_batch_size": 64, "max_batched_tokens": 4096})
    joins, result = _joins(data, monkeypatch)
    steps = result.steps
    mixed = int(((steps.prefill_seqs > 0) & (steps.decode_seqs > 0)).sum())
    assert mixed > 100 and steps.decode_seqs.max() > 8   # (the workload has the case under test)
    assert joins == len(result.requests)
    assert_bulk_equals_step(data)


def test_a_step_that_leaves_a_member_out_empties_the_profile():
    """A step that does not decode a member (here one preempted in it) ends the suspension with an empty
    profile; the running requests join the next bulk afresh."""
    from simulator.core.bulk import DecodeProfile
    rep = _replica([16, 16, 16], [40, 40, 40], total_blocks=64, max_batch_size=8, max_batched_tokens=64,
                   block_size=16)
    _compositions(rep, 1)                      # the three prompts in one step
    rep.profile.join(list(rep.running))        # they join the profile (as a bulk's plan does)
    prof: DecodeProfile = rep.profile
    assert len(prof) == 3
    prof.dissolve()
    assert prof.suspended_at == prof.k and len(prof) == 3
    prof.after_step(np.array([0, 1]))          # request 2 did not decode in the step
    assert len(prof) == 0 and prof.suspended_at == -1
    assert not prof.sums[:, prof.k - prof.base:].any()


def test_a_step_that_decodes_every_member_advances_the_profile():
    rep = _replica([16, 16, 16], [40, 3, 40], total_blocks=64, max_batch_size=8, max_batched_tokens=64,
                   block_size=16)
    _compositions(rep, 1)
    rep.profile.join(list(rep.running))
    prof = rep.profile
    k = prof.k
    before = prof.sums[:, k - prof.base + 1:k - prof.base + 6].copy()
    _compositions(rep, 2)                       # two step-by-step decode steps of all three
    assert prof.k == k + 2 and prof.suspended_at == -1 and len(prof) == 2   # request 1 (3 tokens) finished
    assert rep.s.emitted.tolist() == [3, 3, 3]
    # the sums ahead are those a fresh join of the two would compute
    ahead = prof.sums[:, k - prof.base + 2:k - prof.base + 6].copy()
    prof.clear()
    prof.join(list(rep.running))
    assert (prof.sums[:, prof.k - prof.base:prof.k - prof.base + 4] == ahead).all()
    assert before[0].tolist()[:1] == [3] and before[0].tolist()[1:] == [2, 2, 2, 2]


@pytest.mark.parametrize("total_blocks", [64, 7])
def test_rule_2_at_once_equals_the_loop(total_blocks, monkeypatch):
    """The same compositions and blocks with the at-once path as with the request-by-request loop alone
    (at 7 blocks the batch's growth does not fit: the loop decides, preempting)."""
    import simulator.core.sched.vllm_v1 as v1
    args = ([40, 30, 20, 10], [30, 30, 30, 30])
    kw = dict(total_blocks=total_blocks, max_batch_size=8, max_batched_tokens=64, block_size=16)
    fast = _compositions(_replica(*args, **kw), 40)
    monkeypatch.setattr(v1, "_every_running_in_full", lambda view, budget: None)
    slow = _compositions(_replica(*args, **kw), 40)
    assert fast == slow
