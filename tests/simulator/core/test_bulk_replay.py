"""Decode bulks under a prefix cache or host tier (simulator.core.bulk_replay): bulk mode gives the outputs of the
step-by-step path, byte for byte, where the cache evicts under KV pressure, requests are preempted and swapped,
sessions and shared system prompts hit, a Mooncake trace's hash ids are reused, a prefix-aware router reads the
caches while bulks are in flight, arrivals cut bulks, and with vLLM V1 / V0, Sarathi and TensorRT-LLM scheduling,
with and without a chain drafter. Each case also checks that what it exercises happened in bulks (counted)."""
from __future__ import annotations

import random
from collections import OrderedDict

import pandas as pd
import pytest

import simulator
from sim_helpers import merge, scenario
from simulator.core import bulk as bulk_mod
from simulator.core import bulk_replay
from simulator.core.kv.host_tier import HostMemory
from simulator.core.kv.prefix_cache import PrefixCache
from paths import REPO

TRACE = str(REPO / "scenarios" / "traces" / "mooncake_sample.jsonl")
CHAIN = {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 3},
         "acceptance": {"kind": "constant", "alpha": 0.7}}


class Counts:
    """What the bulks of a run did: bulks applied through the replay, finishes replayed, units freed by them
    (a per-step `other_blocks`), syncs that advanced a bulk in flight, cut bulks, units evicted by bulk growth."""

    def __init__(self, monkeypatch):
        self.bulks = self.finishes = self.freed = self.synced = self.cuts = self.evicted = 0
        self._in_bulk = False
        apply, advance, sync, cut = (bulk_replay.ReplayProfile.apply, bulk_replay._Replay.advance,
                                     bulk_replay.ReplayProfile.sync, bulk_mod.BulkPlan.cut)
        take = PrefixCache.take
        counts = self

        def counted_apply(prof, plan, finished):
            counts.bulks += 1
            counts._in_bulk = True
            apply(prof, plan, finished)
            counts._in_bulk = False
            counts.finishes += len(finished)

        def counted_advance(replay, formed, ended):
            changes = len(replay.changes)
            advance(replay, formed, ended)
            counts.freed += len(replay.changes) - changes

        def counted_sync(prof, now_s):
            before = prof.replay.taken if prof.replay is not None else None
            counts._in_bulk = True
            sync(prof, now_s)
            counts._in_bulk = False
            if prof.replay is not None and prof.replay.taken != before:
                counts.synced += 1

        def counted_cut(plan, at_s):
            steps = plan.steps
            cut(plan, at_s)
            counts.cuts += plan.steps < steps

        def counted_take(cache, n):
            units = cache._free_units
            take(cache, n)
            if counts._in_bulk:
                counts.evicted += units - cache._free_units

        monkeypatch.setattr(bulk_replay.ReplayProfile, "apply", counted_apply)
        monkeypatch.setattr(bulk_replay._Replay, "advance", counted_advance)
        monkeypatch.setattr(bulk_replay.ReplayProfile, "sync", counted_sync)
        monkeypatch.setattr(bulk_mod.BulkPlan, "cut", counted_cut)
        monkeypatch.setattr(PrefixCache, "take", counted_take)


def same_outputs(data: dict, monkeypatch) -> tuple:
    """Run `data` in bulk and in step mode: identical requests, steps and summary (but for the latency source's
    counts of shapes priced); returns the bulk run and what its bulks did."""
    step = simulator.run(merge(data, {"simulation": {"step_mode": "step"}}))
    counts = Counts(monkeypatch)
    bulk = simulator.run(data)
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    strip = lambda s: {k: v for k, v in s.items() if k != "latency_source"}  # noqa: E731
    assert strip(bulk.summary) == strip(step.summary)
    for rep in bulk.built.replicas:   # every block came back (KV conservation through the replay)
        assert rep.kv.used_blocks == 0
    return bulk, counts


def shared(seed=4, n=250, qps=12.0, prompts=30, system=1024, own=200, out=(20, 300), **cluster) -> dict:
    return scenario(seed=seed, workload={"arrival": {"process": "poisson", "qps": qps}, "num_requests": n,
                                         "prompt_tokens": {"kind": "fixed", "value": own},
                                         "output_tokens": {"kind": "uniform", "low": out[0], "high": out[1]},
                                         "shared_prefix": {"prompts": prompts, "tokens": system,
                                                           "popularity": "zipf", "zipf_exponent": 1.0}},
                    cluster={"model": "llama-3-8b", "kv_cache": {"prefix_caching": True}, **cluster})


PRESSURE = {"cluster": {"gpu_memory_utilization": 0.215, "max_model_len": 4096}}   # a small pool: evictions and preemptions
V1 = {"scheduler": {"kind": "vllm_v1", "max_batch_size": 64, "max_batched_tokens": 2048}}
V0 = {"scheduler": {"kind": "vllm", "max_batch_size": 64}}
SARATHI = {"scheduler": {"kind": "sarathi", "chunk_tokens": 512, "max_batch_size": 64}}
TRTLLM = {"scheduler": {"kind": "trtllm", "max_batch_size": 64, "max_batched_tokens": 8192}}


@pytest.mark.parametrize("sched", [V1, V0, SARATHI, TRTLLM], ids=["vllm_v1", "vllm", "sarathi", "trtllm"])
@pytest.mark.parametrize("spec", [{}, CHAIN], ids=["plain", "chain"])
def test_evictions_and_preemptions_under_kv_pressure(sched, spec, monkeypatch):
    result, counts = same_outputs(merge(merge(shared(prompts=120), PRESSURE), merge(sched, spec)), monkeypatch)
    assert counts.bulks > 20 and counts.finishes > 20 and counts.evicted > 0
    if sched is not TRTLLM:   # (TensorRT-LLM's GUARANTEED_NO_EVICT never preempts)
        assert result.summary["preemptions"] > 0


@pytest.mark.parametrize("spec", [{}, CHAIN], ids=["plain", "chain"])
def test_finishes_free_units_the_bulk_counted_as_others(spec, monkeypatch):
    """Few system prompts, many requests per prompt: a finish inside a bulk releases the last reference to a
    unit, which leaves the blocks in use from the next step (the log's per-step `other_blocks`)."""
    result, counts = same_outputs(merge(shared(prompts=200, qps=6.0, system=512, out=(5, 200)), spec), monkeypatch)
    assert counts.freed > 0 and counts.bulks > 20


def test_host_tier_offloads_units_evicted_by_bulk_growth_and_swaps(monkeypatch):
    data = merge(merge(shared(prompts=120), PRESSURE),
                 {"cluster": {"kv_cache": {"prefix_caching": True, "host_memory_gib": 2.0, "preemption": "swap"}}})
    result, counts = same_outputs(data, monkeypatch)
    assert counts.evicted > 0 and counts.bulks > 20
    assert result.summary["kv_swapped_tokens"] > 0 and result.summary["prefix_cache_host_loaded_tokens"] > 0


def test_host_tier_without_a_prefix_cache(monkeypatch):
    data = merge(scenario(seed=3, workload={"num_requests": 200, "arrival": {"qps": 30.0},
                                            "output_tokens": {"kind": "uniform", "low": 100, "high": 600}}),
                 {"cluster": {"gpu_memory_utilization": 0.215, "kv_cache": {"host_memory_gib": 1.0, "preemption": "swap"}}})
    result, counts = same_outputs(data, monkeypatch)
    assert counts.bulks > 20 and result.summary["kv_swapped_tokens"] > 0


@pytest.mark.parametrize("spec", [{}, CHAIN], ids=["plain", "chain"])
def test_sessions(spec, monkeypatch):
    data = merge(scenario(seed=2, workload={"arrival": {"process": "poisson", "qps": 3.0}, "num_requests": 200,
                                            "prompt_tokens": {"kind": "uniform", "low": 20, "high": 600},
                                            "output_tokens": {"kind": "uniform", "low": 5, "high": 300},
                                            "sessions": {"turns": {"kind": "uniform", "low": 2, "high": 6},
                                                         "think_time_s": 10.0}},
                          cluster={"model": "llama-3-8b", "kv_cache": {"prefix_caching": True}}), spec)
    result, counts = same_outputs(data, monkeypatch)
    assert result.summary["prefix_cache_hit_rate"] > 0.3 and counts.bulks > 20


def test_mooncake_trace_hash_ids(monkeypatch):
    data = scenario(cluster={"model": "llama-3.1-8b", "gpu_memory_utilization": 0.3, "max_model_len": 32768,
                             "kv_cache": {"prefix_caching": True}})
    data["workload"] = {"arrival": {"process": "trace", "trace_csv": TRACE, "format": "mooncake", "speedup": 3.0}}
    result, counts = same_outputs(data, monkeypatch)
    assert result.summary["prefix_cache_hit_rate"] > 0.3 and counts.bulks > 20 and counts.evicted > 0


@pytest.mark.parametrize("spec", [{}, CHAIN], ids=["plain", "chain"])
def test_prefix_aware_router_reads_caches_with_bulks_in_flight(spec, monkeypatch):
    """The router reads each replica's cache at every arrival: bulks in flight are replayed up to it (`sync`),
    and the replica it picks cuts its own bulk there."""
    data = merge(merge(shared(prompts=60, qps=30.0, n=400), PRESSURE),
                 merge({"cluster": {"replicas": 3, "router": "prefix_aware"}}, spec))
    result, counts = same_outputs(data, monkeypatch)
    assert counts.synced > 20 and counts.cuts > 20 and counts.evicted > 0


def test_cut_bulks_with_a_load_router(monkeypatch):
    data = merge(shared(prompts=60, qps=20.0, n=300), {"cluster": {"replicas": 2, "router": "least_outstanding"}})
    _, counts = same_outputs(data, monkeypatch)
    assert counts.cuts > 20 and counts.synced == 0


@pytest.mark.parametrize("engine", [{"version": "0.11.0"}, {"framework": "sglang", "version": "0.5.23"},
                                    {"framework": "trtllm", "version": "1.2.0"}], ids=["vllm", "sglang", "trtllm"])
def test_named_engines_default_cache(engine, monkeypatch):
    """A named engine's own default turns the cache on for a shared-prefix workload (simulator.cluster
    .engine_cache): SGLang's radix cache and TensorRT-LLM's block reuse are the same pool."""
    data = shared(prompts=40, n=200, engine=engine)
    data["cluster"]["kv_cache"] = {}
    if engine.get("framework") == "trtllm":
        data = merge(data, TRTLLM)
    result, counts = same_outputs(data, monkeypatch)
    assert result.summary["engine_prefix_caching"]["prefix_caching"] is True
    assert counts.bulks > 20 and result.summary["prefix_cache_hit_rate"] > 0.3


def test_closed_loop(monkeypatch):
    """A closed loop (no shared prefixes there: the cache serves preempted requests' own units)."""
    data = merge(scenario(seed=5, workload={"arrival": {"process": "closed_loop", "concurrency": 40, "qps": None},
                                            "num_requests": 200,
                                            "output_tokens": {"kind": "uniform", "low": 100, "high": 600}},
                          cluster={"kv_cache": {"prefix_caching": True}}), PRESSURE)
    result, counts = same_outputs(data, monkeypatch)
    assert counts.bulks > 20 and result.summary["preemptions"] > 0


def test_closed_loop_of_twin_replicas_routed_by_prefix(monkeypatch):
    """Fixed lengths: two replicas that step in lockstep send and route at the same instants (a read of a cache
    at a step boundary of the other replica)."""
    data = scenario(seed=5, workload={"arrival": {"process": "closed_loop", "concurrency": 8, "qps": None},
                                      "num_requests": 200, "prompt_tokens": {"kind": "fixed", "value": 300},
                                      "output_tokens": {"kind": "fixed", "value": 50}},
                    cluster={"replicas": 2, "router": "prefix_aware", "kv_cache": {"prefix_caching": True}})
    _, counts = same_outputs(data, monkeypatch)
    assert counts.bulks > 20


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_random_setups(seed, monkeypatch):
    """Random small setups of the cases above: bulk = step, and a second bulk run is identical."""
    rnd = random.Random(seed)
    data = shared(seed=seed, n=rnd.choice([120, 200]), qps=rnd.choice([4.0, 12.0, 30.0]),
                  prompts=rnd.choice([5, 40, 150]), system=rnd.choice([256, 1024]), own=rnd.choice([16, 200]),
                  out=rnd.choice([(2, 40), (20, 300)]))
    for extra in ([PRESSURE] if rnd.random() < 0.6 else []) + [rnd.choice([V1, V0, SARATHI, TRTLLM])] \
            + ([CHAIN] if rnd.random() < 0.4 else []) \
            + ([{"cluster": {"replicas": 2, "router": rnd.choice(["prefix_aware", "round_robin"])}}]
               if rnd.random() < 0.5 else []) \
            + ([{"cluster": {"kv_cache": {"prefix_caching": True, "host_memory_gib": 1.0,
                                          "preemption": rnd.choice(["swap", "recompute"])}}}]
               if rnd.random() < 0.4 else []):
        data = merge(data, extra)
    first, counts = same_outputs(data, monkeypatch)
    again = simulator.run(data)
    pd.testing.assert_frame_equal(first.requests, again.requests)
    pd.testing.assert_frame_equal(first.steps, again.steps)
    assert counts.bulks > 0


# ---- the rules ------------------------------------------------------------------------------------------
def test_shared_prefix_attention_keeps_bulks_off():
    """Decode steps priced with shared-prefix aggregates (PrefixCachePool.on_plan) run step by step: the
    replica's setup rule says so (PrefixCachePool.bulk_capable)."""
    on = simulator.run(merge(shared(n=60), {"cluster": {"kv_cache": {"prefix_caching": True,
                                                                       "shared_prefix_attention": True}}}))
    off = simulator.run(shared(n=60))
    assert [rep._bulk_rule_of_setup() for rep in on.built.replicas] == [False]
    assert [rep._bulk_rule_of_setup() for rep in off.built.replicas] != [False]
    assert type(off.built.replicas[0].profile) is bulk_replay.ReplayProfile


def test_plain_pools_keep_the_plain_profile():
    result = simulator.run(scenario(workload={"num_requests": 20}))
    rep = result.built.replicas[0]
    assert type(rep.profile) is bulk_mod.DecodeProfile and not rep.profile.replays


def _cache(host=None) -> PrefixCache:
    """A cache of 12 blocks of 4 tokens, units of 2 blocks, its queue (head first): a 1-block segment, unit 7
    (2 blocks), a 3-block segment, unit 8, unit 9, a 2-block segment."""
    cache = PrefixCache(12, 4, 8, None, host)
    cache.queue = OrderedDict([(("free", 100), 1), (7, 2), (("free", 101), 3), (8, 2), (9, 2), (("free", 102), 2)])
    cache._free_units = 3
    return cache


def _state(cache: PrefixCache) -> tuple:
    return [(k if not isinstance(k, tuple) else "seg", n) for k, n in cache.queue.items()], cache.free_blocks, \
        cache._free_units, None if cache.host is None else list(cache.host.units)


@pytest.mark.parametrize("a,b", [(1, 1), (2, 3), (1, 6), (4, 5), (0, 7), (3, 0), (6, 6)])
def test_two_takes_are_one_take(a, b):
    """`take(a); take(b)` leaves the free queue, the free count and the units offloaded to host memory as
    `take(a + b)` does (the replay merges the growth of consecutive steps into one take). Worked by hand for
    (2, 3): take 2 empties the segment and evicts unit 7 with one of its blocks free at the head; take 3 uses
    that block and 2 of the 3-block segment: [seg 1, unit 8, unit 9, seg 2], as take 5 leaves it."""
    one, two = _cache(HostMemory(10**6, 8)), _cache(HostMemory(10**6, 8))
    one.take(a)
    one.take(b)
    two.take(a + b)
    assert _state(one) == _state(two)
    if (a, b) == (2, 3):
        assert _state(one) == ([("seg", 1), (8, 2), (9, 2), ("seg", 2)], 7, 2, [7])
