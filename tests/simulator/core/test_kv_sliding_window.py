"""Sliding-window KV as vLLM V1's hybrid KV-cache manager holds it (simulator.core.kv.sliding_window): the
group layout, block counts worked out by hand from vLLM's rules, capacity of gpt-oss-120b on one H100,
conservation of blocks over whole runs, and bulk = step."""
from __future__ import annotations


import numpy as np
import pytest

import simulator
from models import get_model
from models.step import Parallelism
from profiles.hardware import get_hardware
from sim_helpers import assert_bulk_equals_step, bare_replica, scenario, step_plans
from simulator.api import prepare, simulate
from simulator.cluster.replica_memory import free_bytes_per_gpu, kv_capacity_tokens
from simulator.cluster.vllm_memory import ProfileRun
from simulator.errors import ScenarioError
from simulator.core.kv.sliding_window import SlidingWindowPool, WindowPageLayout, window_page_layout
from simulator.core.sched import BatchLimits
from simulator.core.sched.vllm_v1 import VllmV1

GPT_OSS_LAYER_BYTES = 2 * 8 * 64 * 2   # K and V of 8 heads of 64 in bf16, one token and layer (tp 1)


def test_groups_of_gpt_oss_layouts_by_hand():
    # vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size (0.32.0): 18 full + 18 sliding
    # layers -> groups of 18, one of each type; a block id costs 18 pages of 16 tokens.
    lay = window_page_layout(18, 18, 128, GPT_OSS_LAYER_BYTES, 18 * 16 * GPT_OSS_LAYER_BYTES * 100.5, 16)
    assert (lay.group_size, lay.full_groups, lay.window_groups, lay.total_blocks) == (18, 1, 1, 100)
    assert lay.block_bytes == 18 * 16 * 2048
    assert lay.kv_tokens == 100 // 2 * 16   # "GPU KV cache size": num_blocks // num_groups * block_size
    # its comment: "gpt-oss-20b + eagle, with 12 sw + 13 full. We pad it to (13 sw, 13 full)" — an EAGLE
    # head's KV of one layer joins the full-attention layers
    eagle = window_page_layout(12, 12, 128, 2048, 1e9, 16, extra_kv_bytes_per_token=2048)
    assert (eagle.group_size, eagle.full_groups, eagle.window_groups) == (13, 1, 1)
    # 2 full : 6 sliding (Gemma-like 1:3) -> groups of 2: one full group, three sliding groups
    gemma = window_page_layout(2, 6, 512, 1024, 1e9, 16)
    assert (gemma.group_size, gemma.full_groups, gemma.window_groups) == (2, 1, 3)


def test_skipped_blocks_follow_vllm_get_num_skipped_tokens():
    # vllm/v1/core/single_type_kv_cache_manager.py SlidingWindowManager.get_num_skipped_tokens (0.32.0)
    # docstring: sliding_window=4, num_computed_tokens=7 -> tokens 0..3 skipped (4); blocks of 1 token
    lay = WindowPageLayout(1, 4, 1, 1, 1, 1.0, 100)
    assert int(lay.skipped_blocks(7)) == 4
    assert int(lay.skipped_blocks(3)) == 0           # the window still starts at token 0
    lay4 = WindowPageLayout(4, 8, 1, 1, 1, 1.0, 100)
    assert int(lay4.skipped_blocks(16)) == 2         # tokens 0..8 skipped: 2 whole blocks of 4 (a third partly)


def _replica(prompts, outputs, layout, budget):
    limits = BatchLimits(8, budget, 512)
    return bare_replica(VllmV1(limits), lambda state: SlidingWindowPool(state, layout), prompts, outputs, limits)


def _used_per_step(rep, steps):
    return [used for _, used in step_plans(rep, steps)]


def test_blocks_of_one_request_step_by_step_by_hand():
    # One full and one sliding group, window 8, blocks of 4, budget 8 tokens (vllm_v1 chunks the prompt).
    # A 20-token prompt and 6 output tokens. vLLM's KVCacheManager.allocate_slots: remove_skipped_blocks(C)
    # frees the sliding group's blocks before token C − W + 1, then both tables grow to ceil(N / 4).
    lay = WindowPageLayout(4, 8, 1, 1, 1, 1.0, 100)
    rep = _replica([20], [6], lay, budget=8)
    assert _used_per_step(rep, 8) == [
        4,    # chunk 0..8 (C=0, N=8): tables of 2 in both groups
        8,    # chunk 8..16 (C=8: skipped (8−7)//4 = 0): tables of 4
        8,    # chunk 16..20 (C=16: 9 tokens, 2 blocks skipped): full 5 + sliding 5 − 2
        9,    # decode (C=20, N=21: 13 tokens skipped, 3 blocks): 6 + 3
        9,    # C=21, N=22: 6 + 3
        9,    # C=22, N=23: 6 + 3
        8,    # C=23, N=24: 16 tokens skipped, 4 blocks: 6 + 2
        10,   # C=24, N=25: 7 + 3 (the 6th output token: the request finishes and frees them)
    ]
    assert rep.kv.used_blocks == 0 and rep.kv.taken_blocks == rep.kv.freed_blocks
    # the same request without the window (both groups full attention) holds 7 + 7 = 14 in its last step
    assert int(lay.full_groups * 7 + lay.window_groups * 7) == 14


def test_a_request_longer_than_the_window_holds_fewer_blocks():
    lay = WindowPageLayout(16, 128, 18, 1, 1, 1.0, 10_000, q=4)
    for context in (128, 1000, 8192, 100_000):
        held = int(lay.held(context, context + 4))
        full_context = 2 * -(-(context + 4) // 16)
        assert held < full_context if context > 128 + 16 else held <= full_context
        assert held - -(-(context + 4) // 16) <= -(-(128 - 1 + 4) // 16) + 1   # the window group's cap


def test_gpt_oss_120b_on_one_h100_against_the_hybrid_rule():
    hw, model, par = get_hardware("h100-sxm"), get_model("gpt-oss-120b"), Parallelism(1)
    run = ProfileRun(None, 8192, 64)   # vLLM's start-up profile of this scheduler (simulator.cluster.vllm_memory)
    free = free_bytes_per_gpu(hw, model, par, "mxfp4", 0.9, profile=run)
    kind = simulator.api.prepare(scenario(cluster={"model": "gpt-oss-120b", "dtype": "mxfp4"},
                                          scheduler={"kind": "vllm_v1", "max_batch_size": 64})).cluster.kind
    lay = kind.window_layout
    assert lay.total_blocks == int(free // (18 * 16 * GPT_OSS_LAYER_BYTES))
    assert kind.kv_tokens == lay.total_blocks // 2 * 16
    old = kv_capacity_tokens(hw, model, par, "mxfp4", 0.9, profile=run)   # every layer at the full context
    assert abs(kind.kv_tokens - old) <= 16                   # the same bytes: the logged size hardly moves
    # what moves is how many requests fit: an 8k-token request decoding holds 513 full-attention blocks and
    # 9 sliding ones (C = 8192: (8192 − 127) // 16 = 504 of 513 skipped), not 2 · 513
    assert int(lay.held(8192, 8193)) == 513 + 9
    hybrid, full = lay.total_blocks // 522, old // (16 * 513)
    assert (hybrid, full) == (21, 10)
    # vLLM's start-up check passes at the model's 131,072 tokens: 8192 + min(8192, ceil((127 + 8192) / 16) + 1)
    assert int(lay.peak(131072, 8192)) == 8192 + 521 <= lay.total_blocks


def _long_gpt_oss(**over):
    return scenario(cluster={"model": "gpt-oss-20b", "dtype": "mxfp4", "gpu_memory_utilization": 0.2,
                             "max_model_len": 4096},
                    workload={"num_requests": 40, "arrival": {"process": "poisson", "qps": 40.0},
                              "prompt_tokens": {"kind": "uniform", "low": 800, "high": 3000},
                              "output_tokens": {"kind": "uniform", "low": 50, "high": 400}},
                    scheduler={"kind": "vllm_v1", "max_batch_size": 64, "max_batched_tokens": 2048}, **over)


@pytest.mark.parametrize("kind", ["vllm_v1", "vllm"])
def test_blocks_taken_equal_blocks_freed_over_a_run(kind):
    data = _long_gpt_oss()
    data["scheduler"]["kind"] = kind
    prepared = prepare(data)
    result = simulate(prepared, step_mode="step")
    pool = prepared.cluster.replicas[0].kv
    assert isinstance(pool, SlidingWindowPool)
    assert result.summary["requests_finished"] == 40
    assert pool.used_blocks == 0 and pool.taken_blocks == pool.freed_blocks > 0
    assert (prepared.cluster.state.blocks == 0).all() and (pool.table == 0).all()


def test_preemptions_free_what_they_took():
    """vLLM 0.15.0 admits a prompt by its first chunk's blocks, so this pool preempts (3 here); from 0.19 the whole
    prompt's blocks must be free (scheduler_reserve_full_isl, simulator.core.sched.vllm_v1 rule 5), which is what the
    engine added it for: the default release preempts less (none here)."""
    preemptions = {}
    for version in ("0.15.0", None):
        data = _long_gpt_oss()
        data["cluster"]["gpu_memory_utilization"] = 0.182   # about 0.45 GiB of KV after vLLM's start-up profile
        if version is not None:
            data["cluster"]["engine"] = {"version": version}
        prepared = prepare(data)
        result = simulate(prepared, step_mode="step")
        pool = prepared.cluster.replicas[0].kv
        preemptions[version] = result.summary["preemptions"]
        assert pool.used_blocks == 0 and pool.taken_blocks == pool.freed_blocks
    assert preemptions["0.15.0"] > 0 and preemptions[None] < preemptions["0.15.0"]


def test_bulk_equals_step_with_the_window_pool():
    assert_bulk_equals_step(_long_gpt_oss())


def test_other_engines_keep_the_full_context():
    # SGLang: every layer at the full context (the plain pool). No vLLM release runs gpt-oss without the hybrid
    # manager: it came in 0.10.0, gpt-oss's model class in 0.10.1 (an earlier release is refused)
    data = _long_gpt_oss()
    data["cluster"].update({"engine": {"framework": "sglang"}})
    assert prepare(data).cluster.kind.window_layout is None
    data = _long_gpt_oss()
    data["cluster"].update({"engine": {"version": "0.9.0"}})
    with pytest.raises(ScenarioError, match="vllm 0.9.0 has no GptOssForCausalLM"):
        prepare(data)


@pytest.mark.parametrize("drafter", [None, {"kind": "ngram", "gamma": 3}])
def test_max_model_len_is_held_to_the_pool_of_a_scheduler_that_prefills_whole_prompts(drafter):
    """gpt-oss-20b at gpu_memory_utilization 0.2 on an H100: 3943 blocks of 2 groups. vLLM's start-up check
    (steps of max_num_batched_tokens 8192) passes max_model_len 50000, but scheduler kind vllm prefills a whole
    prompt in one step, holding it in both groups: before, the run dropped every request of ~45000 tokens as
    exceeds_kv_capacity (exit 0). Now the deployment is refused naming the longest context its pool serves,
    that context is served (prompt + 1 output token, and 8 outputs), one token more is refused, and vllm_v1
    (chunked prompts, vLLM's own rule) serves the 50000."""

    def data(max_model_len, prompt, output, kind="vllm"):
        d = scenario(workload={"num_requests": 1, "prompt_tokens": {"kind": "fixed", "value": prompt},
                               "output_tokens": {"kind": "fixed", "value": output}},
                     cluster={"hardware": "h100-sxm", "model": "gpt-oss-20b", "dtype": "mxfp4",
                              "gpu_memory_utilization": 0.2, "max_model_len": max_model_len},
                     **({"drafter": drafter} if drafter else {}))
        d["scheduler"]["kind"] = kind
        return d

    with pytest.raises(ScenarioError) as err:
        prepare(data(50000, 45000, 100))
    assert err.value.field == "cluster.max_model_len" and "kind 'vllm' the sliding-window pool takes a whole prompt" in str(err.value)
    longest = int(str(err.value).split("allowed: at most ")[1].split(" ")[0])
    assert longest == (31537 if drafter is None else 31534)   # (3943 // 2 blocks of 16 tokens, + 1, - (q - 1))
    for prompt, output in ((longest - 1, 1), (longest - 8, 8)):
        result = simulator.run(data(longest, prompt, output))
        assert result.summary["requests_finished"] == 1 and not result.requests.dropped.any(), (prompt, output)
    with pytest.raises(ScenarioError, match="allowed: at most"):
        prepare(data(longest + 1, 100, 10))
    result = simulator.run(data(50000, 45000, 100, kind="vllm_v1"))
    assert result.summary["requests_finished"] == 1 and not result.requests.dropped.any()


def _reserving_replica(prompts, outputs, layout, budget, reserve):
    limits = BatchLimits(8, budget, 512)
    return bare_replica(VllmV1(limits), lambda state: SlidingWindowPool(state, layout, reserve_prompts=reserve),
                        prompts, outputs, limits)


def test_prefix_caching_reserves_the_prompts_peak_by_hand():
    # The request of test_blocks_of_one_request_step_by_step_by_hand with the pool reserving prompts (prefix
    # caching where requests share nothing): its prompt's peak over steps of 8 tokens is held from admission
    # until the prompt is computed: full 5 + sliding min(5, ceil((8 − 1 + 8) / 4) + 1 = 5) = 10; then the
    # tables' blocks as without it.
    lay = WindowPageLayout(4, 8, 1, 1, 1, 1.0, 100, step_tokens=8)
    rep = _reserving_replica([20], [6], lay, 8, reserve=True)
    assert _used_per_step(rep, 8) == [10, 10, 10, 9, 9, 9, 8, 10]
    assert rep.kv.used_blocks == 0 and rep.kv.taken_blocks == rep.kv.freed_blocks


@pytest.mark.parametrize("total", [14, 16])
def test_prefix_caching_admits_a_prompt_whole_instead_of_computing_its_chunks_again(total):
    # Two 20-token prompts in a pool of 14 or 16 blocks. Chunk by chunk (no cache) the second is admitted with
    # its first chunk, then preempts itself when its next chunk does not fit, and computes that chunk again
    # after each preemption (vLLM without prefix caching). With the cache vLLM admits it again at its cached
    # blocks: here it waits until its whole prompt fits, preempted never.
    lay = WindowPageLayout(4, 8, 1, 1, 1, 1.0, total, step_tokens=8)
    plain = _reserving_replica([20, 20], [6, 6], lay, 8, reserve=False)
    step_plans(plain, 40)
    assert plain.s.preemptions.tolist()[1] > 0
    cached = _reserving_replica([20, 20], [6, 6], lay, 8, reserve=True)
    plans = step_plans(cached, 40)
    assert cached.s.preemptions.tolist() == [0, 0]
    assert [used for _, used in plans][:16] == [10, 10, 10, 9, 9, 9, 8, 10] * 2   # one after the other
    assert cached.kv.used_blocks == 0 and cached.kv.taken_blocks == cached.kv.freed_blocks


def test_prefix_caching_keeps_the_window_layout_where_requests_share_nothing():
    # Before, `cluster.kv_cache.prefix_caching: true` gave gpt-oss the full-context pool (every layer holding
    # every token: half the requests of vLLM's hybrid manager). Where no two requests share a prefix the cache
    # serves only a preempted request's own blocks: the window pool, reserving prompts. Shared prefixes get the
    # window's prefix cache (simulator.core.kv.window_prefix_cache: tests/simulator/core/test_window_prefix_cache.py).
    # Under vllm_v1, which grows a prompt's blocks per chunk as vLLM does, the window's prefix cache serves those
    # own blocks even where nothing is shared (its units private to each request).
    from simulator.core.kv.window_prefix_cache import WindowPrefixCachePool
    data = _long_gpt_oss()
    data["cluster"]["kv_cache"] = {"prefix_caching": True}
    prepared = prepare(data)
    pool = prepared.cluster.replicas[0].kv
    assert isinstance(pool, WindowPrefixCachePool)
    result = simulate(prepared, step_mode="step")
    assert result.summary["requests_finished"] == 40
    assert pool.used_blocks == 0 and pool.cache.free_blocks == pool.total_blocks and not pool.cache.refs
    data["scheduler"]["kind"] = "vllm"   # a scheduler that reserves a prompt at admission
    pool = prepare(data).cluster.replicas[0].kv
    assert isinstance(pool, SlidingWindowPool) and pool.reserve_prompts
    data["scheduler"]["kind"] = "vllm_v1"
    data["workload"]["shared_prefix"] = {"prompts": 2, "tokens": 256}
    assert isinstance(prepare(data).cluster.replicas[0].kv, WindowPrefixCachePool)


def test_the_whole_prompt_check_caps_the_window_groups_from_vllm_0_20():
    """vLLM's whole-sequence admission check (`can_fit_full_sequence` 0.19 - 0.20, `full_sequence_must_fit` 0.21 on)
    asks `get_num_blocks_to_allocate` for the whole prompt: vLLM 0.19.0 every block in every group, 0.20.0 on a
    sliding-window group at most `SlidingWindowSpec.max_admission_blocks_per_request` = ceil((W − 1 + M) / B) + 1
    (kv_cache_interface.py, single_type_kv_cache_manager.py; wheels read 2026-11-29). One full and one window group,
    W = 8, B = 4, M = 8: a 40-token prompt is 10 blocks per group, the cap ceil(15 / 4) + 1 = 5: 20 blocks on 0.19,
    10 + 5 = 15 on 0.20; a 12-token prompt (3 blocks) is under the cap: 6 either way."""
    from simulator.core.kv.window_prefix_cache import WindowPrefixCache, WindowPrefixCachePool
    from simulator.core.state import RequestState
    from simulator.core.workload import RequestTable
    lay = WindowPageLayout(4, 8, 1, 1, 1, 1.0, 100, 8)
    for make in (lambda st: SlidingWindowPool(st, lay),
                 lambda st: WindowPrefixCachePool(st, lay, WindowPrefixCache(100, 4, 4, None, layout=lay))):
        state = RequestState(RequestTable(np.zeros(2), np.array([40, 12]), np.array([1, 1])))
        kv = make(state)
        assert [kv.whole_prompt_need(0, False), kv.whole_prompt_need(0, True)] == [20, 15]
        assert [kv.whole_prompt_need(1, False), kv.whole_prompt_need(1, True)] == [6, 6]
