"""Prefix caching: hit rates against their analytic expectation, the LRU free queue against a block-by-block
model of vLLM's block pool, block conservation, bulk = step, prefix-aware routing, the Mooncake sample."""
from __future__ import annotations

import random
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from sim_helpers import merge, scenario
from simulator.core.kv.prefix_cache import PrefixCache
from simulator.core.prefixes import UNIT_BITS, PrefixKeys
from paths import REPO

TRACES = REPO / "scenarios" / "traces"


def shared_prompts(seed: int, k: int, n: int, system: int, own: int, **cluster) -> dict:
    return scenario(seed=seed, workload={"arrival": {"process": "poisson", "qps": 20.0}, "num_requests": n,
                                         "prompt_tokens": {"kind": "fixed", "value": own},
                                         "output_tokens": {"kind": "fixed", "value": 4},
                                         "shared_prefix": {"prompts": k, "tokens": system, "popularity": "zipf",
                                                           "zipf_exponent": 1.0}},
                    cluster={"model": "llama-3-8b", "kv_dtype": "fp8", "kv_cache": {"prefix_caching": True}, **cluster})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_hit_rate_of_shared_system_prompts_equals_the_analytic_expectation(seed):
    """K system prompts of S tokens with Zipf(1) popularity, N requests, a cache that never evicts: a request
    hits its S tokens iff an earlier request drew the same prompt, so E[hit rate] = (N − E[D])·S / (N·(S + m))
    with E[D] = Σ_k 1 − (1 − p_k)^N distinct prompts drawn (m: the request's own tokens)."""
    k, n, system, own = 500, 2000, 512, 64
    p = np.arange(1, k + 1, dtype=float) ** -1.0
    p /= p.sum()
    expected = (n - (1.0 - (1.0 - p) ** n).sum()) * system / (n * (system + own))
    result = simulator.run(shared_prompts(seed, k, n, system, own))
    assert result.summary["prefix_cache_hit_rate"] == pytest.approx(expected, rel=0.02)
    cached = result.requests["cached_prompt_tokens"].to_numpy()
    assert set(np.unique(cached)) == {0, system}       # whole system prompts hit, nothing else
    assert result.summary["prefix_cache_saved_prefill_tokens"] == cached.sum()
    # prefill skips what was cached: every step's prefill tokens add up to the uncached prompt tokens
    assert result.steps["prefill_tokens"].sum() == result.requests["prompt_tokens"].sum() - cached.sum()


def test_sessions_hit_their_previous_turn_exactly():
    """Multi-turn chats: turn k+1's prompt starts with turn k's prompt and answer, of which the P + O − 1
    tokens in turn k's KV (whole blocks) are cached when it has finished, and at most P' − 1 tokens of the
    new prompt may hit. Checked per request against that count."""
    block = 16
    sc = scenario(workload={"arrival": {"process": "poisson", "qps": 0.5}, "num_requests": 120,
                            "prompt_tokens": {"kind": "uniform", "low": 20, "high": 300},
                            "output_tokens": {"kind": "uniform", "low": 5, "high": 200},
                            "sessions": {"turns": {"kind": "uniform", "low": 2, "high": 6}, "think_time_s": 60.0}},
                  cluster={"model": "llama-3-8b", "kv_cache": {"prefix_caching": True}})
    result = simulator.run(sc)
    keys = result.built.table.prefixes
    req = result.requests
    session = np.array([keys.of(r)[0] >> UNIT_BITS if len(keys.of(r)) else -r - 1 for r in range(len(req))])
    checked = 0
    for s in np.unique(session):
        turns = np.flatnonzero(session == s)
        turns = turns[np.argsort(req.arrival_s.to_numpy()[turns])]
        assert req.cached_prompt_tokens.iloc[turns[0]] == 0
        for prev, cur in zip(turns[:-1], turns[1:]):
            finished = req.finish_s.iloc[prev] < req.admit_s.iloc[cur]
            checked += finished
            # a turn still running when the next arrives has only its prompt's blocks cached (the
            # approximation named in simulator.core.kv.prefix_cache: decode blocks are shared at the finish)
            in_kv = req.prompt_tokens.iloc[prev] + (req.output_tokens.iloc[prev] - 1 if finished else 0)
            expected = min(in_kv // block, (req.prompt_tokens.iloc[cur] - 1) // block) * block
            assert req.cached_prompt_tokens.iloc[cur] == expected
    assert checked > 40


class BlockPoolReference:
    """vLLM's block pool, block by block and without shortcuts: every block has an id; a full block holds
    the hash of its unit; free blocks sit in one LRU list (head = next to reuse); a hit takes a free cached
    block out of the list; allocation pops the head, dropping the hash it held; a request frees its blocks
    in reverse order to the tail."""

    def __init__(self, blocks: int):
        self.free = list(range(blocks))
        self.hash_of: dict[int, int] = {}
        self.block_of: dict[int, int] = {}
        self.refs: dict[int, int] = {}
        self.owned: dict[int, list[int]] = {}

    def _alloc(self) -> int:
        b = self.free.pop(0)
        if b in self.hash_of:
            del self.block_of[self.hash_of.pop(b)]
        return b

    def admit(self, r: int, keys: list[int], tokens: int, block: int) -> int:
        hit, blocks = [], []
        for k in keys[: (tokens - 1) // block]:
            if k not in self.block_of:
                break
            b = self.block_of[k]
            if self.refs.get(b, 0) == 0:
                self.free.remove(b)
            self.refs[b] = self.refs.get(b, 0) + 1
            hit.append(b)
        blocks = list(hit)
        for j in range(len(hit), -(-tokens // block)):
            b = self._alloc()
            self.refs[b] = 1
            if j < tokens // block and j < len(keys) and keys[j] not in self.block_of and \
                    all(self.hash_of.get(x) is not None for x in blocks):
                self.hash_of[b], self.block_of[keys[j]] = keys[j], b
            blocks.append(b)
        self.owned[r] = blocks
        return len(hit) * block

    def release(self, r: int) -> None:
        for b in reversed(self.owned.pop(r)):
            self.refs[b] -= 1
            if self.refs[b] == 0:
                self.free.append(b)


def test_free_queue_and_eviction_match_a_block_by_block_model_of_vllm():
    rng = random.Random(5)
    block, total = 16, 60
    streams = [[1000 * c + j for j in range(8)] for c in range(6)]            # six shared prompt families
    prompts = [(streams[rng.randrange(6)][: rng.randint(1, 8)], rng.randint(1, 140)) for _ in range(400)]
    keys = PrefixKeys.from_lists([p for p, _ in prompts], block)
    cache, ref = PrefixCache(total, block, block, keys), BlockPoolReference(total)
    used, running, tokens_of, private_of, hits = 0, [], {}, {}, 0
    for r, (chain, extra) in enumerate(prompts):
        tokens = len(chain) * block + extra
        need = -(-tokens // block)
        while running and (cache.need_blocks(r, tokens, need) > total - used or len(running) > 4):
            done = running.pop(rng.randrange(len(running)))
            used -= cache.release(done, tokens_of[done], private_of[done], "shared")
            ref.release(done)
        if cache.need_blocks(r, tokens, need) > total - used:
            continue
        got = cache.admit(r, tokens, need)
        assert got.hit_tokens == ref.admit(r, keys.of(r).tolist(), tokens, block)
        used += got.taken_blocks
        assert used + cache.free_blocks == total == used + len(ref.free)
        tokens_of[r], private_of[r] = tokens, got.private_blocks
        running.append(r)
        hits += got.hit_tokens > 0
    assert hits > 100 and len(ref.block_of) < 6 * 8   # hits, and evictions happened


def test_an_eagle_hit_computes_its_last_block_again_as_vllm():
    """vLLM V1 with an EAGLE-style drafter pops the last matched block of a hit (KVCacheManager.get_computed_blocks,
    v0.8.5: "Drop the last matched block if (1) eagle is enabled and (2) there is a cache hit"), computing it again
    into a new block. Blocks of 16 tokens, prompts of three shared blocks + 10 tokens (58 tokens, 4 blocks):
    - r0 finds nothing: 4 blocks taken, 3 units cached;
    - r1 while r0 runs: 3 blocks match, vLLM keeps 2 (32 tokens served) and allocates 2 (the copy of the third
      and the tail): 2 taken; without the drop 3 blocks match (48 served) and 1 is taken;
    - after both finish the 3 units are free cached blocks; r2: vLLM takes the 2 it keeps out of the free queue and
      2 new ones (4), 32 served."""
    keys = PrefixKeys.from_lists([[1, 2, 3]] * 3, 16)
    cache = PrefixCache(10, 16, 16, keys, None, 16)
    first = cache.admit(0, 58, 4)
    assert (first.hit_tokens, first.taken_blocks, first.private_blocks, first.unit_blocks) == (0, 4, 1, 3)
    assert cache.need_blocks(1, 58, 4) == 2
    second = cache.admit(1, 58, 4)
    assert (second.hit_tokens, second.taken_blocks, second.private_blocks, second.unit_blocks) == (32, 2, 2, 2)
    assert cache.free_blocks == 10 - 6
    assert cache.release(0, 58, 1, "shared") == 1 and cache.release(1, 58, 2, "shared") == 5
    assert cache.free_blocks == 10
    third = cache.admit(2, 58, 4)
    assert (third.hit_tokens, third.taken_blocks, third.private_blocks, third.unit_blocks) == (32, 4, 1, 3)
    plain = PrefixCache(10, 16, 16, keys)
    plain.admit(0, 58, 4)
    hit = plain.admit(1, 58, 4)
    assert (hit.hit_tokens, hit.taken_blocks, hit.private_blocks) == (48, 1, 1)


@pytest.mark.parametrize("drafter, served", [
    ({"kind": "eagle3", "gamma": 3, "head": "llama-3.1-8b-eagle3"}, 64 - 16),   # use_eagle(): the last block again
    ({"kind": "ngram", "gamma": 3}, 64),                                        # n-gram: the whole hit
])
def test_a_vllm_eagle_deployment_serves_a_shared_prompt_less_one_block(drafter, served):
    """vLLM 0.11.0 (its V1 scheduler; prefix caching on by default) with one shared system prompt of 64 tokens (4
    blocks of 16): every request after the first finds it cached; with EAGLE-3 vLLM serves 48 tokens of it, with
    n-gram 64."""
    sc = scenario(seed=2, workload={"arrival": {"process": "poisson", "qps": 4.0}, "num_requests": 12,
                                    "prompt_tokens": {"kind": "fixed", "value": 20},
                                    "output_tokens": {"kind": "fixed", "value": 8},
                                    "shared_prefix": {"prompts": 1, "tokens": 64}},
                  cluster={"model": "llama-3.1-8b", "engine": {"framework": "vllm", "version": "0.11.0"}},
                  scheduler={"kind": "vllm_v1", "max_batch_size": 64}, drafter=drafter,
                  acceptance={"kind": "constant", "alpha": 0.7})
    result = simulator.run(sc)
    cached = result.requests.sort_values("admit_s")["cached_prompt_tokens"].to_numpy()
    assert cached[0] == 0 and (cached[1:] == served).all()
    assert result.steps["prefill_tokens"].sum() == result.requests["prompt_tokens"].sum() - cached.sum()


def _modes_equal(sc: dict) -> simulator.api.Result:
    bulk, step = simulator.run(sc, step_mode="bulk"), simulator.run(sc, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    strip = lambda s: {k: v for k, v in s.items() if not k.endswith("latency_source")}  # noqa: E731
    assert strip(bulk.summary) == strip(step.summary)
    return bulk


@pytest.mark.parametrize("extra", [
    {},
    {"cluster": {"kv_cache": {"prefix_caching": True, "shared_prefix_attention": True}}},
    {"cluster": {"gpu_memory_utilization": 0.215, "kv_cache": {"prefix_caching": True, "host_memory_gib": 1.0,
                                                               "preemption": "swap"}}},
    {"cluster": {"gpu_memory_utilization": 0.215, "kv_cache": {"prefix_caching": True}}},
    {"scheduler": {"kind": "sarathi", "chunk_tokens": 512}},
    # vLLM V1 growing prompts per chunk under the cache, preempting (a small pool), with and without a host tier
    {"cluster": {"gpu_memory_utilization": 0.215, "kv_cache": {"prefix_caching": True}},
     "scheduler": {"kind": "vllm_v1", "max_batched_tokens": 512}},
    {"cluster": {"gpu_memory_utilization": 0.215, "kv_cache": {"prefix_caching": True, "host_memory_gib": 1.0,
                                                               "preemption": "swap"}},
     "scheduler": {"kind": "vllm_v1", "max_batched_tokens": 512}},
    # vLLM V1 with EAGLE-3: hits one block short, the request's own copy of it where the cached one is in use
    {"cluster": {"model": "llama-3.1-8b", "gpu_memory_utilization": 0.24, "max_model_len": 2048,
                 "engine": {"framework": "vllm", "version": "0.11.0"}},
     "scheduler": {"kind": "vllm_v1", "max_batch_size": 64},
     "drafter": {"kind": "eagle3", "gamma": 3, "head": "llama-3.1-8b-eagle3"},
     "acceptance": {"kind": "constant", "alpha": 0.7}},
])
def test_bulk_and_step_modes_are_identical_with_prefix_caching(extra):
    sc = merge(shared_prompts(4, 30, 250, 1024, 200), {"workload": {"arrival": {"qps": 12.0},
                                                                    "output_tokens": {"kind": "uniform", "low": 20,
                                                                                      "high": 300}}})
    result = _modes_equal(merge(sc, extra))
    assert result.summary["prefix_cache_hit_rate"] > 0.5
    rep = result.built.replicas[0]
    assert rep.kv.used_blocks == 0 and rep.kv.cache.free_blocks == rep.kv.total_blocks   # every block came back


def test_prefix_aware_routing_keeps_the_hit_rate_of_one_replica():
    base = {"workload": {"arrival": {"process": "trace", "trace_csv": str(TRACES / "mooncake_sample.jsonl"),
                                     "format": "mooncake", "speedup": 6.0}},
            "cluster": {"model": "llama-3.1-8b", "kv_cache": {"prefix_caching": True}}}
    one = simulator.run(merge(scenario(), base) | {"workload": base["workload"]})
    spread = {name: simulator.run(merge(scenario(), merge(base, {"cluster": {"replicas": 4, "router": name}}))
                                  | {"workload": base["workload"]}) for name in ("round_robin", "prefix_aware")}
    rates = {name: r.summary["prefix_cache_hit_rate"] for name, r in spread.items()}
    assert rates["prefix_aware"] > rates["round_robin"] + 0.05
    assert rates["prefix_aware"] == pytest.approx(one.summary["prefix_cache_hit_rate"], abs=0.03)
    with pytest.raises(Exception, match="cluster.router: 'prefix_aware' routes by cached prefixes"):
        simulator.run(merge(scenario(), {"cluster": {"router": "prefix_aware", "replicas": 2}}))


def test_mooncake_sample_with_caching_on_has_lower_ttft():
    path = TRACES / "mooncake_prefix_caching.yaml"
    on = simulator.run(path)
    off = simulator.run(path, ["cluster.kv_cache.prefix_caching=false"])
    assert on.summary["prefix_cache_hit_rate"] > 0.5 and "prefix_cache_hit_rate" not in off.summary
    assert on.summary["ttft_mean_s"] < 0.5 * off.summary["ttft_mean_s"]
    assert on.steps["prefill_tokens"].sum() < 0.5 * off.steps["prefill_tokens"].sum()


# ---- SGLang: a prompt is cached once its batch has run (PrefixCache.deferred; module docstring) ----------------
S = [1, 2, 3, 4]   # a 64-token system prompt (16-token units) that A, B, C and D start with


def _sglang_walk(overlapped: bool, deferred: bool = True, steps: int = 3, max_prefill: int = 100):
    """Four 100-token prompts, S and two units of their own (the 100th token in no full unit), 3 tokens out, all
    waiting at once; SGLang's chunked prefill with max_prefill_tokens `max_prefill` (`prefill_input_tokens`), a
    250-token chunk budget, no reserve, arrival order. Returns each step's (request, chunk) pairs and the replica."""
    from simulator.core.kv.prefix_cache import PrefixCachePool
    from simulator.core.replica import Replica
    from simulator.core.sched import BatchLimits
    from simulator.core.sched.vllm import Vllm
    from simulator.core.state import RequestState
    from simulator.core.steplog import StepLog
    from simulator.core.workload import RequestTable
    from simulator.cost.step_cost import Cost, StepCost
    from types import SimpleNamespace
    table = RequestTable(np.zeros(4), np.full(4, 100), np.full(4, 3))
    state = RequestState(table)
    keys = PrefixKeys.from_lists([S + [100 * r + 101, 100 * r + 102] for r in range(4)], 16)
    kv = PrefixCachePool(state, 100, 16, PrefixCache(100, 16, 16, keys, deferred=deferred), False, overlapped)
    limits = BatchLimits(16, 250, 512, prefill_input_tokens=max_prefill)
    rep = Replica(0, state, Vllm(limits), kv, limits, cost=SimpleNamespace(flops_scales=(1.0, 1.0)),
                  acceptance=None, log=StepLog())
    rep.waiting.extend(range(4))
    zero, out = Cost(0.0, 0.0, 0.0), []
    for _ in range(steps):
        plan = rep.plan_step(0.0)
        out.append(list(zip(plan.prefill_ids, plan.prefill_chunks)))
        rep.apply_step(plan, 0.0, 0.0, StepCost(zero, zero), [])
    return out, rep


def test_sglang_prompts_of_one_prefill_batch_do_not_hit_each_other():
    """SGLang without the overlap loop (event_loop_normal; scheduler.py `process_batch_result_prefill` →
    `tree_cache.cache_unfinished_req` after the batch has run, read in 0.4.0 - 0.5.6), by hand with PrefillAdder's
    rem_input_tokens (max_prefill_tokens 100, extend_input_len charged: the hit is not):
    1: A, nothing cached, 100 tokens; B: 100 more >= the 0 left: not started behind A.
    2: A's prompt is cached (B, C, D match S, 64 tokens): B 36 (64 left), C 36 (28 left), D's 36 >= 28: stops.
       (Charging the whole prompt, C's 100 >= 64 had stopped the batch after B.)
    3: D 36."""
    out, rep = _sglang_walk(overlapped=False)
    assert out == [[(0, 100)], [(1, 36), (2, 36)], [(3, 36)]]
    assert rep.s.cached_prompt_tokens.tolist() == [0, 64, 64, 64]


@pytest.mark.parametrize("deferred, step_1", [
    # SGLang: B matches nothing (A's prompt is not in the tree yet) and computes S again: 100 (150 left of
    # max_prefill_tokens 250); C's 100 >= the 50 left
    (True, [(0, 100), (1, 100)]),
    # vLLM: B, C and D hit S, cached as A's blocks were allocated: 36 each
    (False, [(0, 100), (1, 36), (2, 36), (3, 36)])])
def test_one_prefill_batch_shares_a_prefix_in_vllm_not_in_sglang(deferred, step_1):
    out, rep = _sglang_walk(overlapped=False, deferred=deferred, steps=1, max_prefill=250)
    assert out == [step_1]


def test_sglang_overlap_loop_caches_a_batch_after_the_next_is_formed():
    """SGLang's overlap loop (event_loop_overlap: `get_next_batch_to_run` forms batch k+1 before
    `process_batch_result` of batch k inserts its prompts; 0.4.0 - 0.5.6): A's prompt, computed in step 1, is not
    cached when step 2 is formed: B computes all of its 100 tokens (C's 100 >= the 0 left); it is when step 3 is:
    C and D hit S (36 each; B's own S, cached at the same time, is a second copy: freed)."""
    out, rep = _sglang_walk(overlapped=True)
    assert out == [[(0, 100)], [(1, 100)], [(2, 36), (3, 36)]]
    assert rep.s.cached_prompt_tokens.tolist() == [0, 0, 64, 64]
    # blocks: A 7, B 7 (B's 4 blocks of S freed once inserted: 3 own), C and D 3 each beside S
    assert rep.kv.used_blocks == 7 + 3 + 3 + 3 and rep.kv.cache.free_blocks == 100 - 16


def test_sglang_in_batch_duplicates_are_freed_and_every_block_comes_back():
    """Two prompts of one batch that compute the same units: the second's copies are freed when both are inserted
    (RadixCache.cache_unfinished_req: `token_to_kv_pool.free(kv_indices[len(req.prefix_indices):new_prefix_len])`),
    and at the end every block is free again."""
    from simulator.core.kv.prefix_cache import PrefixCachePool
    from simulator.core.state import RequestState
    from simulator.core.workload import RequestTable
    state = RequestState(RequestTable(np.zeros(2), np.full(2, 100), np.full(2, 3)))
    keys = PrefixKeys.from_lists([S + [11, 12], S + [21, 22]], 16)
    kv = PrefixCachePool(state, 100, 16, PrefixCache(100, 16, 16, keys, deferred=True), False)
    for r in (0, 1):
        assert kv.admit(r) == (0, False)   # neither hits the other: both compute S
    assert kv.used_blocks == 14 and kv.cached(1, 100) == 0
    state.prefilled[:] = state.ctx[:] = 100   # their batch has run
    assert kv.cached(1, 100) == 96            # cached now: S and B's own two units
    assert kv.used_blocks == 10 and kv.cache.free_blocks == 90
    for r in (0, 1):
        kv.release(r, "shared")
    assert kv.used_blocks == 0 and kv.cache.free_blocks == 100 and not kv.cache.computing


def test_vllm_caches_at_admission_so_the_same_step_hits():
    """vLLM (deferred off): the prompt's full blocks are cached as they are allocated (`cache_full_blocks`), so B
    admitted in A's step hits S (simulator.core.kv.prefix_cache's docstring): unchanged."""
    out, rep = _sglang_walk(overlapped=False, deferred=False, steps=1)
    assert out == [[(0, 100)]]   # (B: 36 >= the 0 left of max_prefill_tokens)
    assert rep.kv.cached(1, 100) == 64


@pytest.mark.parametrize("sync, prefills, hits", [
    # overlap loop: the first request (alone: the others arrive while it is formed) is not cached when step 2 is
    # formed: 3 prompts of 2,100 and 1,892 of a fourth (8,192-token chunks) compute the system prompt; step 3: the
    # fourth's last 208 tokens, then three hits of 2,000 (100 each)
    (False, [(1, 2100), (4, 8192), (4, 508)], [0, 0, 0, 0, 0, 2000, 2000, 2000]),
    # synchronous loop: the first is cached when step 2 is formed: seven hits
    (True, [(1, 2100), (7, 700)], [0] + [2000] * 7)])
def test_sglang_system_prompt_burst(sync, prefills, hits):
    """Eight requests behind one 2,000-token system prompt (100 tokens of their own) arriving within microseconds,
    SGLang 0.4.5 with and without the overlap loop: each prefill step's (prompts, tokens) and each request's hit,
    in admission order; bulk and step modes agree and every block comes back."""
    sc = merge(shared_prompts(3, 1, 8, 2000, 100), {
        "workload": {"arrival": {"qps": 1e5}, "output_tokens": {"kind": "fixed", "value": 40}},
        "cluster": {"engine": {"framework": "sglang", "version": "0.4.5", "async_scheduling": not sync}},
        "scheduler": {"max_batch_size": None, "max_batched_tokens": 8192}})
    result = _modes_equal(sc)
    rep = result.built.replicas[0]
    assert rep.kv.used_blocks == 0 and rep.kv.cache.free_blocks == rep.kv.total_blocks
    assert rep.kv.overlapped is not sync
    steps = result.steps[result.steps.prefill_seqs > 0]
    assert list(zip(steps.prefill_seqs.tolist(), steps.prefill_tokens.tolist())) == prefills
    assert result.requests.sort_values("admit_s")["cached_prompt_tokens"].tolist() == hits
