"""A scenario that names its engine runs that engine's own prefix-caching default where it leaves it out
(simulator.cluster.engine_cache; the engines' rules in profiles.engine_time.cache_defaults): a vLLM V1 deployment
hits the cache of a shared-prefix workload, a V0 one does not, a value given always wins, and where draftsim does
not model the cache (hybrid state, windowed pools, ShadowKV, parallel samples) it keeps it off and names why."""
from __future__ import annotations

import pytest

import simulator
from models.load import load_model
from sim_helpers import assert_bulk_equals_step, merge, scenario
from simulator.cluster.engine_cache import NOTHING_SHARED, engine_prefix_caching, launched
from simulator.config.scenario import parse_scenario

V1 = {"version": "0.15.0"}            # vLLM V1 (from 0.8.0): prefix caching on by default
V0 = {"framework": "vllm", "version": "0.7.3"}   # vLLM V0: off
RETRIEVAL = {"mode": "baseline", "interval_tokens": 8, "kb_fixed_s": 0.06, "kb_per_query_s": 0.01, "lookup_s": 0.002}


def shared(engine: dict | None = None, **cluster) -> dict:
    """20 system prompts of 512 tokens (Zipf popularity) before each request's own 64 tokens."""
    return scenario(seed=1, workload={"arrival": {"process": "poisson", "qps": 20.0}, "num_requests": 200,
                                      "prompt_tokens": {"kind": "fixed", "value": 64},
                                      "output_tokens": {"kind": "fixed", "value": 4},
                                      "shared_prefix": {"prompts": 20, "tokens": 512, "popularity": "zipf",
                                                        "zipf_exponent": 1.0}},
                    cluster={"kv_dtype": "fp8", **({"engine": engine} if engine else {}), **cluster})


def _prefilled(result) -> int:
    return int(result.steps["prefill_tokens"].sum())


def test_a_named_vllm_v1_deployment_caches_shared_prefixes_and_explicit_false_wins():
    on = simulator.run(shared(V1))
    record = on.summary["engine_prefix_caching"]
    assert record["prefix_caching"] is True and record["engine_default"] is True
    assert record["rule"].startswith("vllm 0.15.0: vLLM V1") and "approximation" not in record
    cached = on.requests["cached_prompt_tokens"].to_numpy()
    assert on.summary["prefix_cache_saved_prefill_tokens"] == cached.sum() > 0
    assert on.summary["prefix_cache_hit_rate"] > 0.5   # 200 draws of 20 prompts: most find theirs cached
    prompts = int(on.requests["prompt_tokens"].sum())
    assert _prefilled(on) == prompts - cached.sum()     # prefill skips exactly what was cached
    for given in ({"kv_cache": {"prefix_caching": False}}, {"engine": {**V1, "prefix_caching": False}}):
        off = simulator.run(merge(shared(V1), {"cluster": given}))
        assert "engine_prefix_caching" not in off.summary and "prefix_cache_hit_rate" not in off.summary
        assert _prefilled(off) == prompts > _prefilled(on)


def test_a_named_vllm_v0_deployment_and_an_unnamed_one_keep_the_cache_off():
    v0 = simulator.run(shared(V0))
    assert v0.summary["engine_prefix_caching"] == {
        "prefix_caching": False, "engine_default": False, "rule": v0.summary["engine_prefix_caching"]["rule"]}
    assert "vLLM V0" in v0.summary["engine_prefix_caching"]["rule"]
    plain = simulator.run(shared())
    for result in (v0, plain):
        assert "prefix_cache_hit_rate" not in result.summary
        assert _prefilled(result) == int(result.requests["prompt_tokens"].sum())
    assert "engine_prefix_caching" not in plain.summary


@pytest.mark.parametrize("engine, scheduler", [
    ({"framework": "sglang", "version": "0.5.23"}, {"kind": "vllm", "max_batch_size": 64}),
    ({"framework": "trtllm", "version": "1.2.0"}, {"kind": "trtllm", "max_batch_size": 64, "max_batched_tokens": 8192}),
])
def test_sglang_and_tensorrt_llm_defaults_cache_shared_prefixes_too(engine, scheduler):
    """SGLang's radix cache and TensorRT-LLM 1.x's block reuse are on by default: the same workload hits, and
    prefill skips exactly what was cached (TensorRT-LLM's in-flight batching scheduler included)."""
    result = simulator.run(merge(shared(engine), {"scheduler": scheduler}))
    assert result.summary["engine_prefix_caching"]["prefix_caching"] is True
    assert result.summary["prefix_cache_hit_rate"] > 0.5
    cached = int(result.requests["cached_prompt_tokens"].sum())
    assert _prefilled(result) == int(result.requests["prompt_tokens"].sum()) - cached


def test_sglang_before_0_4_4_keeps_the_radix_cache_off_with_eagle():
    sglang = {"framework": "sglang", "version": "0.4.3"}
    record = engine_prefix_caching(parse_scenario(shared(sglang)), load_model("llama-3-8b"), ("sglang", "0.4.3"),
                                   False)
    assert record["prefix_caching"] is True        # no speculation: on
    sc = parse_scenario(merge(shared(sglang), {"drafter": {"kind": "eagle3", "gamma": 3}}))
    record = engine_prefix_caching(sc, load_model("llama-3-8b"), ("sglang", "0.4.3"), False)
    assert record == {"prefix_caching": False, "engine_default": False, "rule": record["rule"]}
    assert "0.4.3" in record["rule"] and "EAGLE" in record["rule"]


def test_the_engine_default_runs_the_same_in_bulk_and_step_mode():
    assert_bulk_equals_step(merge(shared(V1), {"workload": {"num_requests": 80}}))


def test_prefix_aware_routing_follows_the_engine_default():
    """prefix_aware needs a prefix cache: under a named V1 engine its default gives one; under V0 it is refused
    as it is without a named engine."""
    two = {"replicas": 2, "router": "prefix_aware"}
    routed = simulator.run(merge(shared(V1, **two), {"workload": {"num_requests": 80}}))
    assert routed.summary["prefix_cache_hit_rate"] > 0.3
    with pytest.raises(Exception, match="cluster.router: 'prefix_aware' routes by cached prefixes"):
        simulator.run(shared(V0, **two))


def test_parallel_samples_keep_a_previously_valid_scenario_running_with_the_cache_off():
    sc = merge(shared(V1), {"workload": {"num_requests": 20, "parallel_samples": 2}})
    record = simulator.run(sc).summary["engine_prefix_caching"]
    assert record["prefix_caching"] is False and record["engine_default"] is True
    assert "workload.parallel_samples" in record["approximation"]


@pytest.mark.parametrize("engine, model, windowed, layout, expected", [
    # vLLM V1 keeps a hybrid model's cache off itself: no approximation
    (V1, "qwen3-next-80b-a3b", False, None, {"prefix_caching": False, "engine_default": False}),
    # SGLang 0.5.23 caches it (MambaRadixCache); draftsim keeps no cache for recurrent state: off, named
    ({"framework": "sglang", "version": "0.5.23"}, "nemotron-h-56b", False, None,
     {"prefix_caching": False, "engine_default": True, "approximation": "keeps recurrent state"}),
    # a sliding-window pool (vLLM V1 frees the window's blocks): its cache is modelled with the window where the
    # units are KV blocks (simulator.core.kv.window_prefix_cache; a trace's 512-token hash blocks: off, below)
    (V1, "gpt-oss-20b", True, None, {"prefix_caching": True, "engine_default": True}),
    (V1, "llama-3-8b", False, {"kind": "shadowkv"}, {"prefix_caching": False, "engine_default": True,
                                                     "approximation": "layout 'shadowkv'"}),
    # TensorRT-LLM before 1.0: no rule read, draftsim's default
    ({"framework": "trtllm", "version": "0.21.0"}, "llama-3-8b", False, None,
     {"prefix_caching": False, "engine_default": None}),
    ({"framework": "trtllm", "version": "1.0.0"}, "llama-3-8b", False, None,
     {"prefix_caching": True, "engine_default": True}),
])
def test_where_draftsim_does_not_model_the_cache_it_stays_off_and_says_why(engine, model, windowed, layout, expected):
    kv = {"kv_cache": {"layout": layout}} if layout else {}
    sc = parse_scenario(shared(engine, model=model, **kv))
    release = (engine.get("framework", "vllm"), engine["version"])
    record = engine_prefix_caching(sc, load_model(model), release, windowed)
    approximation = expected.pop("approximation", None)
    assert {k: record[k] for k in expected} == expected
    assert (approximation is None) == ("approximation" not in record)
    if approximation is not None:
        assert approximation in record["approximation"] and record["approximation"].endswith(": off")


@pytest.mark.parametrize("section, says", [
    ({"retrieval": RETRIEVAL}, "retrieval runs with plain KV counting"),
    ({"simulation": {"executor": "local-dask"}}, "a distributed run keeps no prefix cache"),
])
def test_retrieval_and_distributed_runs_keep_the_cache_off_under_a_v1_default(section, says):
    """Both refuse prefix caching (simulator.speculation.ralmspec.check_retrieval, simulator.distributed
    .check_distributable): the V1 default must not turn a previously valid scenario into a refused one."""
    sc = parse_scenario(merge(shared(V1), section))
    record = engine_prefix_caching(sc, load_model("llama-3-8b"), ("vllm", "0.15.0"), False)
    assert record["prefix_caching"] is False and record["engine_default"] is True and says in record["approximation"]


def test_a_distributed_run_whose_requests_share_nothing_records_what_one_process_records():
    """Without shared prefixes one process keeps the V1 cache off because nothing is shared; a distributed run
    said it was off because it ran distributed, so its summary differed from one process's (which the
    distributed runs' round-robin outputs match byte for byte) and `launched` gave its launch script the cache
    off instead of the engine's default."""
    plain = scenario(cluster={"engine": V1})
    one = engine_prefix_caching(parse_scenario(plain), load_model("llama-3-8b"), ("vllm", "0.15.0"), False)
    dist = engine_prefix_caching(parse_scenario(merge(plain, {"simulation": {"executor": "local-dask"}})),
                                 load_model("llama-3-8b"), ("vllm", "0.15.0"), False)
    assert dist == one and one["approximation"] == NOTHING_SHARED
    assert launched(dist) is True


def test_a_retrieval_scenario_under_a_named_v1_engine_still_runs():
    result = simulator.run(merge(scenario(cluster={"engine": V1}, workload={"num_requests": 20}),
                                 {"retrieval": RETRIEVAL}))
    assert result.summary["engine_prefix_caching"]["prefix_caching"] is False


def test_a_value_given_or_no_engine_named_leaves_draftsim_alone():
    target = load_model("llama-3-8b")
    for cluster in ({"engine": V1, "kv_cache": {"prefix_caching": False}}, {"engine": {**V1, "prefix_caching": True}},
                    {}, {"latency": {"framework": "vllm"}}):
        sc = parse_scenario(scenario(cluster=cluster))
        assert engine_prefix_caching(sc, target, ("vllm", "0.15.0"), False) is None


def test_without_shared_prefixes_the_v1_default_stays_off_and_says_why():
    """No shared_prefix, sessions or trace hash ids and no prefix-aware router: the engine's cache could only serve
    a preempted request's own blocks again, which is not modelled, so the run keeps it off (and its decode bulks),
    names why, and equals the run with prefix_caching: false given."""
    plain = merge(scenario(cluster={"engine": V1}), {"workload": {"num_requests": 60}})
    result = simulator.run(plain)
    record = result.summary["engine_prefix_caching"]
    assert record["prefix_caching"] is False and record["engine_default"] is True
    assert record["approximation"].startswith("no two requests share a prefix")
    given = simulator.run(merge(plain, {"cluster": {"kv_cache": {"prefix_caching": False}}}))
    assert result.requests.equals(given.requests) and result.steps.equals(given.steps)
    # a router that reads the cache, or a trace that carries prefix hash ids, keeps the default on
    routed = parse_scenario(scenario(cluster={"engine": V1, "replicas": 2, "router": "prefix_aware"}))
    assert engine_prefix_caching(routed, load_model("llama-3-8b"), ("vllm", "0.15.0"), False)["prefix_caching"]


def test_a_windowed_pool_keeps_the_cache_off_where_a_trace_shares_prefixes_in_larger_units():
    """Mooncake's 512-token hash blocks are 32 KV blocks: the window's prefix cache (units of one KV block,
    simulator.core.kv.window_prefix_cache) does not model them, so the engine's default stays off, named."""
    from paths import REPO
    trace = {"process": "trace", "trace_csv": str(REPO / "scenarios" / "traces" / "mooncake_sample.jsonl"),
             "format": "mooncake"}
    sc = parse_scenario(shared(V1, model="gpt-oss-20b") | {"workload": {"arrival": trace}})
    record = engine_prefix_caching(sc, load_model("gpt-oss-20b"), ("vllm", V1["version"]), True)
    assert record["prefix_caching"] is False and record["engine_default"] is True
    assert "units of one KV block" in record["approximation"] and record["approximation"].endswith(": off")
    assert engine_prefix_caching(sc, load_model("gpt-oss-20b"), ("vllm", V1["version"]), False)["prefix_caching"]
