"""The engines' draft-length rules as control policies: hand-worked step sequences citing each engine's
source (the files named in simulator/speculation/control/{vllm_dynamic,trtllm_schedule,sglang_adaptive}.py),
and each policy run end to end through the simulator."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from simulator.config.speculation import (SglangAdaptivePolicyConfig, TrtllmSchedulePolicyConfig,
                                          VllmDynamicPolicyConfig)
from simulator.speculation.control.sglang_adaptive import SglangAdaptive, Slot, spec_cuda_graph_batch_sizes
from simulator.speculation.control.trtllm_schedule import (AcceptanceRateGate, SpeculationGate, TrtllmSchedule,
                                                           draft_len_for_batch)
from simulator.speculation.control.vllm_dynamic import VllmDynamic, dense_lookup
from sim_helpers import scenario


class FakeReplica:
    def __init__(self, n: int = 64):
        self.running: list = []
        self.s = SimpleNamespace(accepted=np.zeros(n, np.int64), finish_s=np.full(n, np.nan),
                                 emitted=np.zeros(n, np.int64), decode_steps=np.zeros(n, np.int64))


# ---- vLLM: num_speculative_tokens_per_batch_size (vllm/v1/spec_decode/dynamic/utils.py) -----------------
def test_vllm_lookup_fills_gaps_with_the_previous_k_and_clamps():
    # the PR #32374 example {"1-16": 3, "64-128": 2, "256-4096": 0} with num_speculative_tokens 3
    table = dense_lookup([(1, 16, 3), (64, 128, 2), (256, 4096, 0)], 3, 300)
    assert table[1] == table[16] == 3
    assert table[17] == table[63] == 3          # gap 17-63 inherits the previous K
    assert table[64] == table[200] == 2 and table[256] == table[300] == 0
    assert dense_lookup([(1, 8, 5)], 3, 10)[5] == 3   # clamped to num_speculative_tokens
    assert dense_lookup([(1, 8, 2)], 3, 10)[10] == 2  # above the last range: the last K


def test_vllm_k_per_batch_is_the_dense_lookup_without_its_table():
    """A schedule ending at batch 10**12 built a table of every batch size: MemoryError, 'out of memory' after
    the scenario was accepted (2026-11-28). The policy reads the ranges' starts instead, as the table says."""
    for schedule, gamma in (([(1, 16, 3), (64, 128, 2), (256, 4096, 0)], 3), ([(1, 8, 5)], 3), ([(1, 8, 2)], 3),
                            ([(1, 1, 4), (3, 5, 1), (9, 9, 2)], 4)):
        policy = VllmDynamic(VllmDynamicPolicyConfig(kind="vllm_dynamic", schedule=schedule), None, gamma, None)
        table = dense_lookup(schedule, gamma, 5000)
        assert [policy.k_for(b) for b in range(5001)] == table.tolist()
    huge = VllmDynamic(VllmDynamicPolicyConfig(kind="vllm_dynamic", schedule=[[1, 10**12, 64], [10**13, 10**14, 1]]),
                       None, 4, None)
    assert [huge.k_for(b) for b in (1, 256, 10**12, 10**13 - 1, 10**13, 10**15)] == [4, 4, 4, 4, 1, 1]


def test_vllm_k_lags_one_step_behind_the_batch():
    # docs example [[1, 64, 3], [65, 128, 1], [129, 512, 0]]; scheduler.py picks K from step t's scheduled
    # requests, the drafter drafts K at the end of step t, step t+1 verifies them.
    policy = VllmDynamic(VllmDynamicPolicyConfig(kind="vllm_dynamic", schedule=[[1, 64, 3], [65, 128, 1], [129, 512, 0]]),
                         None, 3, None)
    rep = FakeReplica()
    seq = []
    for batch in (10, 70, 70, 130, 130, 20):
        rep.running = list(range(batch))
        seq.append(int(policy.counts(rep, np.arange(min(batch, 64)), 0)[0]))
    assert seq == [3, 3, 1, 1, 0, 0]


# ---- TensorRT-LLM: draft_len_schedule (tensorrt_llm/_torch/speculative/utils.py) --------------------------
def test_trtllm_schedule_keys_are_upper_bounds():
    schedule = {4: 4, 8: 2, 32: 1}            # the docstring's example
    assert [draft_len_for_batch(schedule, b, 4) for b in (1, 4, 5, 8, 9, 32, 33, 500)] == [4, 4, 2, 2, 1, 1, 0, 0]
    assert draft_len_for_batch({8: 6}, 3, 4) == 4      # values never exceed max_draft_len
    assert draft_len_for_batch({}, 100, 4) == 4


def test_trtllm_gate_disables_for_good_once_the_window_mean_drops():
    # speculation_gate.py: accepted_len = max(0, avg_decoded - 1); decision only once `window` completed
    gate = SpeculationGate(window=3, threshold=1.0)
    for avg in (1.2, 1.4):                     # accepted 0.2, 0.4: fewer than 3 completed: no decision
        gate.record(avg)
    assert not gate.disabled
    gate.record(3.0)                           # window (0.2, 0.4, 2.0): mean 0.87 < 1.0 -> off
    assert gate.disabled
    gate.record(9.0)
    assert gate.disabled                       # permanent
    gate = SpeculationGate(window=2, threshold=1.0)
    for avg in (2.0, 3.0, 1.5, 1.4):           # means 1.5, 1.25, 0.45 -> off at the 4th
        gate.record(avg)
    assert gate.disabled and list(gate.history) == pytest.approx([0.5, 0.4])


def test_trtllm_policy_reads_completions_and_batch():
    cfg = TrtllmSchedulePolicyConfig(kind="trtllm_schedule", draft_len_schedule={4: 4, 8: 2},
                                     acceptance_window=2, acceptance_length_threshold=0.5)
    policy, rep = TrtllmSchedule(cfg, None, 4, None), FakeReplica()
    rep.running = [0, 1, 2]
    assert policy.counts(rep, np.array([0, 1, 2]), 2)[0] == 2      # 3 running + 2 waiting = 5 -> 2
    for r, emitted, steps in ((0, 9, 7), (1, 5, 4)):               # avg decoded 9/8, 5/5 -> accepted 0.125, 0
        rep.s.finish_s[r], rep.s.emitted[r], rep.s.decode_steps[r] = 1.0 + r, emitted, steps
    rep.running = [2]
    assert policy.counts(rep, np.array([2]), 0)[0] == 0            # window mean 0.0625 < 0.5: off for good


def test_trtllm_rate_gate_disables_for_good_once_the_window_mean_drops():
    # speculation_gate.py from PR #12905, record_acceptance_rate: one batch-level rate per speculating
    # iteration; a decision once `window` samples are recorded, on the mean of the last `window`
    gate = AcceptanceRateGate(window=3, threshold=0.5)
    for rate in (0.2, 0.3):                    # fewer than 3 samples: no decision, however low
        gate.record(rate)
    assert not gate.disabled
    gate.record(0.9)                           # (0.2, 0.3, 0.9): mean 0.467 < 0.5 -> off
    assert gate.disabled
    gate.record(1.0)
    assert gate.disabled and gate.recorded == 3   # permanent: nothing recorded after
    gate = AcceptanceRateGate(window=2, threshold=0.5)
    for rate in (0.6, 0.5, 0.5, 0.4):          # means 0.55, 0.5 (not below), 0.45 -> off at the 4th
        gate.record(rate)
    assert gate.disabled and list(gate.history) == pytest.approx([0.5, 0.4])
    assert not AcceptanceRateGate(window=0, threshold=0.9).disabled   # window 0: the gate is off


def test_trtllm_policy_rate_gate_reads_each_speculating_steps_accepted_over_drafted():
    """The rate gate takes the previous speculating step's sum(accepted) / sum(drafted) over its requests
    (py_executor: total_accepted_tokens / total_draft_tokens), one sample per step; a step that drafts 0
    (batch above every key) records nothing."""
    cfg = TrtllmSchedulePolicyConfig(kind="trtllm_schedule", draft_len_schedule={4: 4, 8: 2},
                                     acceptance_rate_window_size=2, acceptance_rate_threshold=0.5)
    policy, rep = TrtllmSchedule(cfg, None, 4, None), FakeReplica()
    rep.s.drafted = np.zeros(64, np.int64)
    rep.running = [0, 1, 2]
    ids = np.array([0, 1, 2])
    assert policy.counts(rep, ids, 0)[0] == 4                      # batch 3 -> 4 drafts each
    rep.s.drafted[ids] += 4
    rep.s.accepted[ids] += [4, 2, 0]                               # step rate 6/12 = 0.5
    assert policy.counts(rep, ids, 2)[0] == 2                      # batch 5 -> 2; one sample (0.5)
    rep.s.drafted[ids] += 2
    rep.s.accepted[ids] += [1, 0, 0]                               # step rate 1/6
    assert policy.counts(rep, ids, 9)[0] == 0                      # batch 12: above every key -> 0
    gate = policy._gates[id(rep)]
    assert gate.disabled and list(gate.history) == pytest.approx([0.5, 1 / 6])   # mean 0.33 < 0.5: off
    assert policy.counts(rep, ids, 0)[0] == 0                      # for good, though the batch is small again


LENGTH_GATE = {"acceptance_window": 4, "acceptance_length_threshold": 0.5}
RATE_GATE = {"acceptance_rate_window_size": 4, "acceptance_rate_threshold": 0.5}


@pytest.mark.parametrize("version,policy,field,words", [
    ("1.4.0rc4", LENGTH_GATE, "policy.acceptance_window", "renamed by PR #12905"),
    ("1.3.0rc27", LENGTH_GATE, "policy.acceptance_window", "renamed by PR #12905"),
    ("1.3.0rc20", LENGTH_GATE, "policy.acceptance_window", "was not read for which acceptance gate"),
    ("1.3.0rc8", RATE_GATE, "policy.acceptance_rate_window_size", "was not read for which acceptance gate"),
    ("1.3.0rc7", RATE_GATE, "policy.acceptance_rate_window_size", "has no acceptance_rate_window_size"),
    ("1.2.0", RATE_GATE, "policy.acceptance_rate_window_size", "has no acceptance_rate_window_size"),
    ("1.2.0", {"draft_len_schedule": {4: 3}}, "policy.draft_len_schedule", "lower-bound keys"),
])
def test_trtllm_schedule_fields_follow_the_release(version, policy, field, words):
    """TensorRT-LLM's draft_len_schedule (upper-bound keys from PR #10860, merged after v1.3.0rc7) and its
    acceptance gate (PR #12905: acceptance_rate_* from it, first read in 1.3.0rc27) by release: the other form,
    or a release where the form was not read, is refused in one line naming the field."""
    import simulator
    from simulator.errors import ScenarioError
    data = scenario(drafter={"kind": "eagle3", "gamma": 3}, cluster={"model": "llama-3.1-8b", "engine": {
        "framework": "trtllm", "version": version}}, policy={"kind": "trtllm_schedule", **policy},
        workload={"num_requests": 4})
    with pytest.raises(ScenarioError) as err:
        simulator.prepare(data)
    text = str(err.value)
    assert err.value.field == field and f"trtllm {version} " in text and words in text and "\n" not in text, text


@pytest.mark.parametrize("version,policy", [("1.3.0rc7", LENGTH_GATE), ("1.2.0", LENGTH_GATE),
                                            ("1.4.0rc4", RATE_GATE), ("1.3.0rc27", {"draft_len_schedule": {4: 3}}),
                                            ("1.3.0rc8", {"draft_len_schedule": {4: 3}})])
def test_trtllm_schedule_fields_the_release_has_run(version, policy):
    import simulator
    data = scenario(drafter={"kind": "eagle3", "gamma": 3}, cluster={"model": "llama-3.1-8b", "engine": {
        "framework": "trtllm", "version": version}}, policy={"kind": "trtllm_schedule", **policy},
        workload={"num_requests": 4})
    assert simulator.run(data).summary["requests_finished"] == 4


def test_trtllm_1_4_rate_gate_turns_speculation_off_under_low_acceptance():
    """TensorRT-LLM 1.4.0rc4 with EAGLE-3 (3 drafts), a window of 50 speculating steps, threshold 0.5: at
    acceptance 0.2 per token a step's accepted/drafted rate averages 0.08, so the gate trips at the 50th
    speculating step and every later step drafts 0; at 0.9 (rate 0.81, a 50-step mean with sd ~0.05) it never
    trips. Same seed: same requests."""
    import pandas as pd
    import simulator

    def run(alpha):
        data = scenario(drafter={"kind": "eagle3", "gamma": 3}, acceptance={"kind": "constant", "alpha": alpha},
                        cluster={"model": "llama-3.1-8b", "engine": {"framework": "trtllm", "version": "1.4.0rc4"}},
                        policy={"kind": "trtllm_schedule", "acceptance_rate_window_size": 50,
                                "acceptance_rate_threshold": 0.5}, scheduler={"kind": "trtllm"},
                        workload={"num_requests": 40}, outputs={"steps": "full", "plots": False})
        return simulator.run(data)
    low, high = run(0.2), run(0.9)
    pd.testing.assert_frame_equal(low.requests, run(0.2).requests)
    gates = list(low.built.kind.policy._gates.values())
    assert gates and all(g.disabled and g.recorded == 50 for g in gates)
    assert not any(g.disabled for g in high.built.kind.policy._gates.values())
    assert low.requests["drafted_tokens"].sum() < high.requests["drafted_tokens"].sum() / 5
    assert (low.requests["emitted_tokens"] == low.requests["output_tokens"]).all()


# ---- SGLang: adaptive speculative_num_steps (adaptive_spec_params.py, adaptive_step_router.py) -----------
def test_sglang_routing_pads_to_cuda_graph_sizes_then_takes_the_slot_below():
    policy = SglangAdaptive(SglangAdaptivePolicyConfig(kind="sglang_adaptive"), None, 7, None)
    assert spec_cuda_graph_batch_sizes(64)[:10] == [1, 2, 3, 4, 5, 6, 7, 8, 10, 12]
    # default slots {1, 8, 32, 64}: 7 -> 7 -> slot 1; 9 -> 10 -> slot 8; 33 -> 40 -> 32; 61 -> 64 -> 64
    assert [policy.slot_key(b) for b in (1, 7, 8, 9, 31, 33, 61, 64, 300)] == [1, 1, 8, 8, 32, 32, 64, 64, 64]


def test_sglang_slot_ema_steps_down_then_up():
    # candidate_steps [1, 3, 5, 7], initial 3, alpha 0.2, warmup 2, interval 1 (hand-worked)
    slot = Slot(3, [1, 3, 5, 7], 0.2, 1, 2, 0.0, -0.25, 0.0)
    assert slot.steps == 3 and slot.ema == 2.0
    slot.update([0, 0])                        # ema 1.6, batch 1 (warmup)
    slot.update([0, 0])                        # ema 1.28, batch 2 (warmup)
    assert slot.steps == 3
    slot.update([0, 0])                        # ema 1.024, first re-choice: down to 1 needs ema <= 1 - 0.5 - 0.25
    assert slot.steps == 3                     # = 0.25 (no); up to 5 needs ema > 3 - 0.5 = 2.5 (no): stays 3
    for _ in range(7):                         # ema 0.819, 0.655, 0.524, 0.419, 0.336, 0.268, 0.215
        slot.update([0])
    assert slot.ema == pytest.approx(2.0 * 0.8 ** 10) and slot.ema <= 0.25 and slot.steps == 1
    for _ in range(12):                        # accepting 7 per request: EMA climbs, steps go 1 -> 3 -> 5 -> 7
        slot.update([7, 7])
    assert slot.steps == 7


def test_sglang_zero_step_slot_probes_upward():
    slot = Slot(0, [0, 1, 3], 0.2, 5, 0, 0.0, 0.0, 0.0)
    assert slot.steps == 0 and slot.ema == -1.0
    for _ in range(5):
        slot.update([0, 0])                    # steps 0: no EMA update; 5th batch: probe to 1, EMA reset to 0
    assert slot.steps == 1 and slot.ema == 0.0


@pytest.mark.parametrize("policy", [
    {"kind": "vllm_dynamic", "schedule": [[1, 4, 4], [5, 16, 2], [17, 512, 0]]},
    {"kind": "trtllm_schedule", "draft_len_schedule": {4: 4, 16: 2}, "acceptance_window": 20,
     "acceptance_length_threshold": 0.5},
    {"kind": "trtllm_schedule", "draft_len_schedule": {4: 4, 16: 2}, "acceptance_rate_window_size": 20,
     "acceptance_rate_threshold": 0.5},
    {"kind": "sglang_adaptive", "slots": {1: {"candidate_steps": [1, 2, 4]}, 8: {"candidate_steps": [0, 1]}},
     "warmup_batches": 2, "update_interval": 2},
])
def test_engine_policies_run_and_are_deterministic(policy):
    import pandas as pd
    import simulator
    data = scenario(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                    acceptance={"kind": "constant", "alpha": 0.7}, policy=policy,
                    workload={"num_requests": 120, "arrival": {"process": "poisson", "qps": 20.0}})
    a, b = simulator.run(data), simulator.run(data)
    pd.testing.assert_frame_equal(a.requests, b.requests)
    steps = a.steps
    assert len(steps) and (a.requests["emitted_tokens"] == a.requests["output_tokens"]).all()


def test_sglang_default_slots_follow_the_release_worked_by_hand():
    """DEFAULT_ADAPTIVE_CONFIG as read in the PyPI releases (speculative/adaptive_spec_params.py)."""
    from simulator.speculation.control.sglang_adaptive import default_slots

    def candidates(version):
        return {k: v["candidate_steps"] for k, v in default_slots(version).items()}
    assert candidates("0.5.13") == {1: [1, 3, 7], 8: [1, 3], 32: [1]}
    assert candidates("0.5.14") == candidates("0.5.19") == {1: [1, 3, 7], 8: [0, 1, 3], 32: [0, 1], 64: [0]}
    assert candidates("0.5.20") == candidates("0.5.23") == candidates(None) == {1: [1, 3, 5, 7], 8: [0, 1, 3],
                                                                                32: [0, 1], 64: [0]}
    assert default_slots("0.5.14")[1]["down_hysteresis"] == -0.25


def test_sglang_adaptive_takes_the_engine_releases_defaults():
    import simulator
    from simulator.errors import ScenarioError

    def slot_one(version):
        data = scenario(drafter={"kind": "head", "style": "autoregressive", "gamma": 7},
                        acceptance={"kind": "constant", "alpha": 0.7}, policy={"kind": "sglang_adaptive"},
                        workload={"num_requests": 4}, cluster={"engine": {"framework": "sglang", "version": version}})
        return simulator.run(data).built.kind.policy.slot_cfg[1]["candidate_steps"]
    assert slot_one("0.5.14") == [1, 3, 7] and slot_one("0.5.20") == [1, 3, 5, 7]
    with pytest.raises(ScenarioError, match="policy.kind: sglang 0.5.12 has no batch-size-aware adaptive"):
        slot_one("0.5.12")
