"""Engine rules that bound a step beyond the scheduler section (simulator.cluster.factory.engine_batch_rules), each
hand-worked from the engine's source at the releases cited in profiles.engine_time.batch_defaults:

- SGLang's EAGLE block (srt/server_args.py ServerArgs.__post_init__): `prefill_only_one_req = True` in
  v0.4.1.post4 - v0.4.3.post3 (managers/scheduler.py get_new_batch_prefill breaks after one request) and
  `chunked_prefill_size = -1` in v0.4.1.post4 - v0.4.3.post2 (the PrefillAdder's budget is then max_prefill_tokens,
  16384);
- vLLM V1's `num_lookahead_tokens` (vllm/v1/core/sched/scheduler.py, passed to KVCacheManager.allocate_slots):
  γ for EAGLE from v0.8.4 (running requests only), for waiting requests too from v0.8.5, MTP from v0.9.0, draft
  models from v0.15.0.
"""
from __future__ import annotations


import pytest

import simulator
from profiles.engine_time.batch_defaults import (engine_batching, sglang_chunks_prompts, sglang_prefill_requests,
                                                 vllm_drafting_slots, vllm_kv_lookahead)
from profiles.hardware import get_hardware
from simulator.cluster.build import batch_scheduler
from simulator.cluster.vllm_memory import device_total_bytes
from simulator.core.kv.block_pool import BlockPool
from simulator.core.sched import BatchLimits
from simulator.core.sched.vllm import Vllm
from simulator.core.sched.vllm_v1 import VllmV1
from sim_helpers import bare_replica, merge, scenario, step_plans


# ---- SGLang's EAGLE block -------------------------------------------------------------------------------------

@pytest.mark.parametrize("version, one_request, chunks", [
    ("0.4.1.post4", 1, False),    # the first release with speculative decoding: both set
    ("0.4.2", 1, False),
    ("0.4.3.post2", 1, False),    # the last with chunked_prefill_size = -1
    ("0.4.3.post3", 1, True),     # prefill_only_one_req kept, chunking back on
    ("0.4.3.post4", None, True),  # neither
    ("0.5.9", None, True),
])
def test_sglang_eagle_block_by_release(version, one_request, chunks):
    assert sglang_prefill_requests(version, "eagle") == one_request
    assert sglang_chunks_prompts(version, "eagle") is chunks
    assert sglang_prefill_requests(version, None) is None and sglang_chunks_prompts(version, None)


def test_sglang_budget_without_chunking_is_max_prefill_tokens():
    hw = get_hardware("h100-sxm")
    batching = lambda version, drafter: engine_batching("sglang", version, hw, device_total_bytes(hw),  # noqa: E731
                                                        drafter=drafter)
    assert batching("0.4.2", "eagle") == ("vllm", 16384)          # chunked_prefill_size -1: max_prefill_tokens
    assert batching("0.4.3.post3", "eagle") == ("vllm", 8192)     # chunked again (8192 on an 80 GB GPU)
    assert batching("0.4.2", None) == ("vllm", 8192)


def _replica(sched, prompts, outputs, total_blocks, limits, block=4, q=1):
    return bare_replica(sched(limits), lambda state: BlockPool(state, total_blocks, block), prompts, outputs, limits, q)


def _compositions(rep, steps):
    return [(list(zip(plan.prefill_ids, plan.prefill_chunks)), plan.decode_ids.tolist(), used)
            for plan, used in step_plans(rep, steps)]


def test_one_request_per_prefill_step():
    # Three 5-token prompts waiting together, 2 outputs each. SGLang 0.4.2 with EAGLE prefills them one by one
    # (prefill_only_one_req), each whole (no chunking), before the first decode batch; without the rule the
    # prefill-first scheduler takes all three in one step.
    one = _replica(Vllm, [5, 5, 5], [2, 2, 2], 100, BatchLimits(8, 16384, 512, prefill_requests=1))
    assert [(p, d) for p, d, _ in _compositions(one, 4)] == [([(0, 5)], []), ([(1, 5)], []), ([(2, 5)], []),
                                                             ([], [0, 1, 2])]
    free = _replica(Vllm, [5, 5, 5], [2, 2, 2], 100, BatchLimits(8, 16384, 512))
    assert [(p, d) for p, d, _ in _compositions(free, 2)] == [([(0, 5), (1, 5), (2, 5)], []), ([], [0, 1, 2])]
    # a prompt longer than the budget still runs whole, alone
    long = _replica(Vllm, [20000, 5], [2, 2], 10_000, BatchLimits(8, 16384, 512, prefill_requests=1))
    assert [p for p, _, _ in _compositions(long, 2)] == [[(0, 20000)], [(1, 5)]]


EAGLE = {"kind": "head", "style": "autoregressive", "gamma": 3}   # an EAGLE head (engine family eagle)


def _eagle_scenario(version, drafter=EAGLE, **extra):
    return scenario(cluster={"engine": {"framework": "sglang", "version": version}},
                    drafter=drafter, scheduler={"max_batch_size": 16},
                    workload={"num_requests": 8}, **extra)


@pytest.mark.parametrize("version, prefill_requests, budget", [
    ("0.4.2", 1, 16384), ("0.4.3.post3", 1, 8192), ("0.4.3.post4", None, 8192)])
def test_an_sglang_eagle_deployment_gets_its_releases_prefill_rules(version, prefill_requests, budget):
    prepared = simulator.prepare(_eagle_scenario(version))
    kind = prepared.cluster.pools[0].kind
    _, limits = batch_scheduler(prepared.scenario, kind)
    assert (limits.prefill_requests, limits.max_batched_tokens) == (prefill_requests, budget)
    assert limits.kv_lookahead == 0


def test_an_sglang_eagle_run_prefills_one_request_a_step():
    run = simulator.run(_eagle_scenario("0.4.2"), ["workload.arrival.qps=200", "outputs.steps=full"])
    steps = run.steps
    prefill = steps[steps.prefill_tokens > 0]
    assert len(prefill) == 8 and (prefill.prefill_seqs == 1).all()
    later = simulator.run(_eagle_scenario("0.4.3.post4"), ["workload.arrival.qps=200", "outputs.steps=full"])
    assert (later.steps.prefill_seqs > 1).any()


# ---- vLLM V1's KV lookahead -----------------------------------------------------------------------------------

@pytest.mark.parametrize("version, method, expected", [
    ("0.8.3", "eagle", (0, 0)),          # no num_lookahead_tokens yet
    ("0.8.4", "eagle", (3, 0)),          # method == "eagle": running requests only
    ("0.8.4", "eagle3", (0, 0)),
    ("0.8.5", "eagle3", (3, 3)),         # use_eagle(): eagle, eagle3; the waiting pass too
    ("0.8.5", "mtp", (0, 0)),
    ("0.9.0", "mtp", (3, 3)),            # use_eagle() adds deepseek_mtp
    ("0.11.0", "draft_model", (0, 0)),
    ("0.10.0", "eagle3", (3, 3)),        # the waiting pass passes self.num_lookahead_tokens
    ("0.10.1", "eagle3", (3, 0)),        # ... 0 where request.num_computed_tokens == 0: every admission here
    ("0.15.0", "draft_model", (3, 0)),   # uses_draft_model(); waiting requests none (0.10.1 - 0.22.x)
    ("0.22.1", "mtp", (3, 0)),
    ("0.23.0", "mtp", (3, 3)),           # 0 only for an asynchronous KV load (limit_lookahead_tokens)
    ("0.33.0", "draft_model", (3, 3)),
    ("0.15.0", "ngram", (0, 0)), ("0.32.0", "suffix", (0, 0)), ("0.32.0", "medusa", (0, 0)),
    ("0.32.0", None, (0, 0)),
])
def test_vllm_lookahead_by_release_and_method(version, method, expected):
    assert vllm_kv_lookahead(version, method, 3) == expected


def test_lookahead_blocks_preempt_where_context_plus_q_fit():
    # Blocks of 4 tokens, 5 in all; every step verifies q = 3 tokens (γ = 2) and keeps one. A: 7-token prompt,
    # 3 outputs; B: 4-token prompt, 2 outputs.
    # Without lookahead: step 1 A 7 tokens (2 blocks) + B 4 (1); step 2 A decodes 7 + 3 = 10 (3 blocks), B 4 + 3 = 7
    # (2): 5 blocks, both decode.
    plain = _replica(VllmV1, [7, 4], [3, 2], 5, BatchLimits(4, 64, 512, decode_kv_cap=99), q=3)
    assert _compositions(plain, 2) == [([(0, 7), (1, 4)], [], 3), ([], [0, 1], 5)]
    # With vLLM >= 0.8.5's lookahead of γ = 2: step 1 A 7 + 2 = 9 tokens (3 blocks), B 4 + 2 = 6 (2); step 2 A
    # asks 7 + 3 + 2 = 12 (3 blocks), B 4 + 3 + 2 = 9 (3): 6 > 5, so B, the newest, is preempted (its 2 blocks
    # freed) and nobody is admitted in that step; step 3 A asks 8 + 3 + 2 = 13 (4 blocks) and B's admission
    # 5 + 2 = 7 (2 blocks: it recomputes its prompt and its one output token) does not fit beside them; A finishes
    # (3 outputs), then B is prefilled again, 5 + 2 tokens in 2 blocks.
    ahead = _replica(VllmV1, [7, 4], [3, 2], 5, BatchLimits(4, 64, 512, decode_kv_cap=99, kv_lookahead=2,
                                                             admit_lookahead=2), q=3)
    assert _compositions(ahead, 4) == [([(0, 7), (1, 4)], [], 5), ([], [0], 3), ([], [0], 4), ([(1, 5)], [], 2)]
    assert ahead.s.preemptions.tolist() == [0, 1]
    # vLLM 0.8.4: the waiting pass reserves no lookahead (B's admission would take 1 block, A's 3 with it)
    running_only = _replica(VllmV1, [7, 4], [3, 2], 5, BatchLimits(4, 64, 512, decode_kv_cap=99, kv_lookahead=2),
                            q=3)
    assert _compositions(running_only, 1) == [([(0, 7), (1, 4)], [], 3)]


def test_lookahead_stops_at_max_model_len():
    # max_model_len 10 (decode_kv_cap 9): a request of context 8 verifying q = 3 asks min(8 + 3, 9) + 2 slots,
    # at most 10 (kv_cache_manager.py `min(..., self.max_model_len)`, v0.9.0 on)
    limits = BatchLimits(4, 64, 512, decode_kv_cap=9, kv_lookahead=2)
    assert int(limits.with_lookahead(min(8 + 3, 9), limits.kv_lookahead)) == 10
    assert int(limits.with_lookahead(4, limits.kv_lookahead)) == 6
    assert limits.with_lookahead(4, 0) == 4


def _vllm_scenario(version, drafter, **extra):
    return scenario(cluster={"engine": {"framework": "vllm", "version": version}}, drafter=drafter,
                    scheduler={"kind": "vllm_v1", "max_batch_size": 16}, workload={"num_requests": 8}, **extra)


@pytest.mark.parametrize("version, drafter, expected", [
    ("0.11.0", EAGLE, (3, 0)),           # 0.10.1 - 0.22.x: none for a request with no computed tokens
    ("0.10.0", EAGLE, (3, 3)),
    ("0.8.4", EAGLE, (3, 0)),
    ("0.11.0", {"kind": "eagle3", "gamma": 3, "head": "llama-3.1-8b-eagle3"}, (3, 0)),
    ("0.24.0", {"kind": "eagle3", "gamma": 3, "head": "llama-3.1-8b-eagle3"}, (3, 3)),
    ("0.11.0", {"kind": "ngram", "gamma": 3}, (0, 0)),
    ("0.11.0", {"kind": "none"}, (0, 0)),
])
def test_a_vllm_v1_deployment_gets_its_releases_lookahead(version, drafter, expected):
    prepared = simulator.prepare(_vllm_scenario(version, drafter))
    _, limits = batch_scheduler(prepared.scenario, prepared.cluster.pools[0].kind)
    assert (limits.kv_lookahead, limits.admit_lookahead) == expected
    assert limits.prefill_requests is None
    # vLLM V0's prefill-first kind under the same release reserves none (the rule is V1's scheduler's)
    other = simulator.prepare(_vllm_scenario(version, drafter), ["scheduler.kind=vllm"])
    _, limits = batch_scheduler(other.scenario, other.cluster.pools[0].kind)
    assert (limits.kv_lookahead, limits.admit_lookahead) == (0, 0)


@pytest.mark.parametrize("version, drafter, drops", [
    ("0.8.4", EAGLE, False),     # no use_eagle in v1/core yet
    ("0.8.5", EAGLE, True),      # KVCacheManager.get_computed_blocks pops the hit's last block
    ("0.11.0", {"kind": "eagle3", "gamma": 3, "head": "llama-3.1-8b-eagle3"}, True),
    ("0.11.0", {"kind": "ngram", "gamma": 3}, False),
    ("0.11.0", {"kind": "none"}, False),
])
def test_a_vllm_v1_deployment_drops_a_hits_last_block_for_eagle(version, drafter, drops):
    prepared = simulator.prepare(_vllm_scenario(version, drafter))
    assert prepared.cluster.pools[0].kind.batch_rules.drop_hit_block is drops


# ---- vLLM V1's drafting slots for a draft model ----------------------------------------------------------------

@pytest.mark.parametrize("version, method, expected", [
    ("0.16.0", "draft_model", (0, 0)),    # scheduler budget = max_num_batched_tokens
    ("0.17.0", "draft_model", (1, 0)),    # _set_max_num_scheduled_tokens: max_num_batched_tokens - 1 x max_num_seqs
    ("0.27.1", "draft_model", (1, 0)),
    ("0.27.1", "layer_skip", (1, 0)),     # layer skipping runs as a draft model in vLLM
    ("0.28.0", "draft_model", (0, 1)),    # input_budget -= num_new_tokens + draft_slots per scheduled request
    ("0.33.0", "draft_model", (0, 1)),
    ("0.24.0", "eagle3", (0, 0)),         # max_num_new_slots_for_drafting 0: EAGLE, EAGLE-3, MTP, n-gram
    ("0.33.0", "mtp", (0, 0)),
    ("0.33.0", "ngram", (0, 0)),
    ("0.33.0", None, (0, 0)),
])
def test_vllm_drafting_slots_by_release_and_method(version, method, expected):
    assert vllm_drafting_slots(version, method) == expected


def test_each_scheduled_request_takes_a_draft_slot_of_the_budget():
    # vLLM >= 0.28 with a draft model (draft_slots 1), budget 12, γ = 2 (q 3), prompts A 5 and B 9 waiting:
    # step 1: A gets min(5, 12 - 1) = 5 (12 - 6 = 6 left), B min(9, 6 - 1) = 5 (0 left);
    # step 2: A decodes 3 (12 - 4 = 8 left), B gets its last min(4, 8 - 1) = 4.
    # Without the slots: step 1 A 5 and B 7; step 2 A 3 and B's last 2.
    slots = _replica(VllmV1, [5, 9], [3, 3], 100, BatchLimits(4, 12, 512, draft_slots=1), q=3)
    assert [(p, d) for p, d, _ in _compositions(slots, 2)] == [([(0, 5), (1, 5)], []), ([(1, 4)], [0])]
    plain = _replica(VllmV1, [5, 9], [3, 3], 100, BatchLimits(4, 12, 512), q=3)
    assert [(p, d) for p, d, _ in _compositions(plain, 2)] == [([(0, 5), (1, 7)], []), ([(1, 2)], [0])]
    # a decode-only step of 3 requests takes 3 x (3 + 1) = 12: all decode, no room left for a waiting prompt
    full = _replica(VllmV1, [2, 2, 2, 2], [9, 9, 9, 9], 100, BatchLimits(3, 12, 512, draft_slots=1), q=3)
    _compositions(full, 1)
    assert full.scheduler.decodes_every_running(full) and full.scheduler.admission_room(full) == 0


DRAFT = {"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3}


@pytest.mark.parametrize("version, drafter, budget, slots", [
    ("0.16.0", DRAFT, 8192, 0),
    ("0.24.0", DRAFT, 8192 - 16, 0),   # max_num_batched_tokens - max_num_seqs (scheduler.max_batch_size 16)
    ("0.28.0", DRAFT, 8192, 1),
    ("0.24.0", {"kind": "eagle3", "gamma": 3, "head": "llama-3.1-8b-eagle3"}, 8192, 0),
])
def test_a_vllm_v1_draft_model_deployment_keeps_its_releases_drafting_slots(version, drafter, budget, slots):
    sc = merge(_vllm_scenario(version, drafter), {"cluster": {"model": "llama-3.1-8b"}})
    prepared = simulator.prepare(merge(sc, {"scheduler": {"kind": "vllm_v1", "max_batch_size": 16,
                                                          "max_batched_tokens": 8192}}))
    _, limits = batch_scheduler(prepared.scenario, prepared.cluster.pools[0].kind)
    assert (limits.max_batched_tokens, limits.draft_slots) == (budget, slots)


def test_a_budget_the_drafting_slots_leave_no_step_in_is_refused():
    sc = merge(_vllm_scenario("0.24.0", DRAFT), {"cluster": {"model": "llama-3.1-8b"}})
    with pytest.raises(simulator.ScenarioError, match=r"scheduler.max_batched_tokens.*66: vLLM with a draft model keeps "
                                                      r"max_num_seqs \(64\) tokens of it a step.*at least 68"):
        simulator.prepare(merge(sc, {"scheduler": {"kind": "vllm_v1", "max_batch_size": 64, "max_batched_tokens": 66}}))


# ---- SGLang's CUDA graphs with EAGLE ---------------------------------------------------------------------------

def _sglang_graphs(version, speculating, padding=None, max_num_seqs=4096):
    from profiles.engine_time.frameworks import entry_for, traits_of
    from profiles.engine_time.graphs import graph_policy
    return graph_policy("sglang", version, traits_of(entry_for("sglang", version)), mode=None, capture_sizes=None,
                        padding=padding, max_num_seqs=max_num_seqs, max_tokens=8192, q=4, speculating=speculating,
                        gpu_memory_bytes=79.19 * 2 ** 30, tp=1)


@pytest.mark.parametrize("version, speculating, sizes, padding", [
    # 0.4.1.post4 - 0.4.3.post2: the EAGLE block sets disable_cuda_graph_padding, so CudaGraphRunner captures
    # range(1, 33) + [64, 128] (model_executor/cuda_graph_runner.py) and replays only those sizes
    ("0.4.2", True, tuple(range(1, 33)) + (64, 128), False),
    ("0.4.3.post2", True, tuple(range(1, 33)) + (64, 128), False),
    # 0.4.3.post3 - 0.4.4.post1: get_batch_sizes_to_capture's own speculative list range(1, 33), still unpadded
    ("0.4.3.post3", True, tuple(range(1, 33)), False),
    ("0.4.4.post1", True, tuple(range(1, 33)), False),
    # 0.4.4.post2 on: the EAGLE block no longer disables padding
    ("0.4.4.post2", True, tuple(range(1, 33)), True),
    # without speculation: [1, 2, 4] + 8..160, padded; given graph_padding false: 0.4.3.post3's unpadded list
    ("0.4.2", False, (1, 2, 4) + tuple(range(8, 161, 8)), True),
])
def test_sglang_eagle_capture_sizes_and_padding_by_release(version, speculating, sizes, padding):
    policy = _sglang_graphs(version, speculating)
    assert (policy.decode_sizes, policy.padding) == (sizes, padding)


def test_sglang_given_padding_off_captures_the_unpadded_list():
    assert _sglang_graphs("0.4.3.post3", False, padding=False).decode_sizes == tuple(range(1, 33)) + (64, 96, 128, 160)
    assert _sglang_graphs("0.4.0", False, padding=False).decode_sizes == tuple(range(1, 32)) + (64, 128)
    assert _sglang_graphs("0.4.2", True, padding=True).padding   # a value given wins


def test_an_unpadded_batch_size_runs_eagerly():
    from profiles.engine_time.graphs import EAGER, FULL, Launch
    # SGLang 0.4.2 with EAGLE: 33 requests are not a captured size, and without padding they run eagerly
    # (CudaGraphRunner.can_run: `forward_batch.batch_size in self.graphs`); 32 replay their graph
    policy = _sglang_graphs("0.4.2", True)
    assert policy.decode(32, 4) == Launch(FULL, 128) and policy.decode(33, 4) == Launch(EAGER, 132)
    assert policy.decode(64, 4) == Launch(FULL, 256) and policy.decode(63, 4) == Launch(EAGER, 252)
    assert _sglang_graphs("0.4.4.post2", True).decode(31, 4) == Launch(FULL, 124)
    assert _sglang_graphs("0.4.4.post2", True).decode(33, 4) == Launch(EAGER, 132)   # above the list's 32
    assert _sglang_graphs("0.4.5", True).decode(33, 4) == Launch(FULL, 160)           # padded to 40


def test_a_lookahead_run_preempts_and_bulks_as_it_steps():
    # vLLM 0.11.0, EAGLE γ = 3 (lookahead 3) on a KV pool of 13,791 tokens: requests are preempted, and bulks of
    # decode steps (Replica.decode_kv_tokens with the lookahead) give what step-by-step mode gives
    from sim_helpers import assert_bulk_equals_step
    data = scenario(cluster={"engine": {"framework": "vllm", "version": "0.11.0"}, "gpu_memory_utilization": 0.23,
                             "max_model_len": 2048},
                    scheduler={"kind": "vllm_v1", "max_batch_size": 128}, drafter=EAGLE,
                    acceptance={"kind": "constant", "alpha": 0.6},
                    workload={"arrival": {"process": "poisson", "qps": 200.0}, "num_requests": 120,
                              "output_tokens": {"kind": "uniform", "low": 200, "high": 400}})
    prepared = simulator.prepare(data)
    _, limits = batch_scheduler(prepared.scenario, prepared.cluster.pools[0].kind)
    assert (limits.kv_lookahead, limits.admit_lookahead) == (3, 0)   # running requests only in 0.10.1 - 0.22.x
    result = simulator.run(data)
    assert result.requests.preemptions.sum() > 0 and result.requests.finish_s.notna().all()
    assert_bulk_equals_step(data)


# ---- SGLang's chunked prefill ----------------------------------------------------------------------------------

def test_sglang_chunks_prompts_as_its_prefill_adder():
    # chunked_prefill_size 8, max_prefill_tokens 16 (managers/schedule_policy.py PrefillAdder, v0.4.2 / v0.5.9).
    # A: 20-token prompt, B: 3, C: 5; 2 outputs each.
    rep = _replica(Vllm, [20, 3, 5], [2, 2, 2], 100, BatchLimits(8, 8, 512, prefill_input_tokens=16))
    assert [(p, d) for p, d, _ in _compositions(rep, 5)] == [
        ([(0, 8)], []),                    # A truncated to the chunk budget (add_one_req: trunc_len = rem_chunk)
        ([(0, 8)], []),                    # the request being chunked goes first (add_chunked_req)
        ([(0, 4), (1, 3), (2, 1)], []),    # A's rest; B whole in the 4 left; C truncated to the last token
        ([(2, 4)], []),                    # C's rest
        ([], [0, 1, 2]),                   # then a decode batch (enable_mixed_chunk off)
    ]


def test_sglang_does_not_start_a_long_prompt_behind_others():
    # max_prefill_tokens 10: after A's 3 tokens, B's 9 >= 10 - 3 (`real_input_tokens >= self.rem_input_tokens and
    # len(self.can_run_list) != 0`), so B waits for the next step, where it is first and chunked at 8
    rep = _replica(Vllm, [3, 9], [2, 2], 100, BatchLimits(8, 8, 512, prefill_input_tokens=10))
    assert [(p, d) for p, d, _ in _compositions(rep, 4)] == [([(0, 3)], []), ([(1, 8)], []), ([(1, 1)], []),
                                                             ([], [0, 1])]


@pytest.mark.parametrize("version, drafter, chunking", [
    ("0.5.9", {"kind": "none"}, 16384), ("0.4.3.post3", EAGLE, 16384), ("0.4.2", EAGLE, None),
    ("0.4.2", {"kind": "none"}, 16384)])
def test_an_sglang_deployment_chunks_unless_its_eagle_block_turns_chunking_off(version, drafter, chunking):
    prepared = simulator.prepare(_eagle_scenario(version, drafter=drafter))
    _, limits = batch_scheduler(prepared.scenario, prepared.cluster.pools[0].kind)
    assert limits.prefill_input_tokens == chunking


def test_a_long_sglang_prompt_runs_in_chunks():
    # SGLang 0.5.9 on an H100: chunked_prefill_size 8192; a 10,000 - 12,000-token prompt takes two prefill steps
    data = scenario(cluster={"model": "llama-3.1-8b", "engine": {"framework": "sglang", "version": "0.5.9"}},
                    workload={"num_requests": 6, "prompt_tokens": {"kind": "uniform", "low": 10000, "high": 12000},
                              "output_tokens": {"kind": "uniform", "low": 4, "high": 8}},
                    outputs={"plots": False, "steps": "full"})
    run = simulator.run(data)
    assert int(run.steps.prefill_tokens.max()) == 8192
    assert int(run.steps.prefill_tokens.sum()) == int(run.requests.prompt_tokens.sum())
    from sim_helpers import assert_bulk_equals_step
    assert_bulk_equals_step(merge(data, {"workload": {"num_requests": 30, "arrival": {"process": "poisson", "qps": 2.0},
                                                      "output_tokens": {"kind": "uniform", "low": 50, "high": 200}}}))


# ---- SGLang's reserve for running requests' output (simulator.core.sched.sglang_reserve) ----------------------

@pytest.mark.parametrize("engine, reserved", [({"framework": "sglang", "version": "0.4.0"}, True),
                                              ({"framework": "sglang", "version": "0.5.23"}, True),
                                              ({"version": "0.11.0"}, False), ({"version": "0.5.4"}, False)])
def test_only_an_sglang_deployment_reserves_for_running_output(engine, reserved):
    from simulator.core.sched.sglang_reserve import SGLANG_OUTPUT_RESERVE
    prepared = simulator.prepare(scenario(cluster={"engine": engine}, workload={"num_requests": 8}))
    kind = prepared.cluster.pools[0].kind
    _, limits = batch_scheduler(prepared.scenario, kind)
    assert limits.output_reserve is (SGLANG_OUTPUT_RESERVE if reserved else None)
    assert all((rep.scheduler.reserve is not None) == reserved for rep in prepared.cluster.replicas)


def test_a_disaggregated_sglang_prefill_pool_admits_without_the_reserve():
    data = scenario(cluster={"engine": {"framework": "sglang", "version": "0.5.23"},
                             "disaggregation": {"prefill": {"replicas": 1}, "decode": {"replicas": 1}}},
                    workload={"num_requests": 8})
    data.pop("scheduler")
    prepared = simulator.prepare(data)
    assert prepared.cluster.pools[0].name == "prefill"
    assert all(getattr(rep.scheduler, "reserve", None) is None for rep in prepared.cluster.replicas)
