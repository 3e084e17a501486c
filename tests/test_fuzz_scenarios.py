"""Schema-wide fuzzing of `draftsim run` (hypothesis): every generated scenario either runs and keeps the run
invariants, or fails with the user-facing error — one line `draftsim: error: <field>: ...`, exit 2, no
traceback, nothing written. Scenarios span every drafter, speculation shape, acceptance model, control
policy, scheduler, router, weight and KV dtype, hardware, latency source, KV cache (prefix caching, swap,
host tier, ShadowKV), shared prefixes and sessions, context limits, NanoFlow nano-batches, early exit,
disaggregation and expert parallelism, the serving engine (`cluster.engine`: releases per framework, whose rules gate
by release, allow_long_context, SGLang's queue policy), contexts past the model's, EAGLE-3 / MTP / suffix drafters,
draft models of other vocabularies (heterogeneous_vocab), the engines' draft-length policies and config.json models
with sliding windows (Mistral, Qwen's use_sliding_window, gpt-oss layer_types) or YaRN contexts, and (`newest_rules`,
a sixth of them) focused combinations of the rules of session 26: vLLM's MXFP4 MoE kernel per release and GPU, vLLM's
MTP draft lengths and MTP LM heads (MTP models of one to three modules), EAGLE-3 heads of another vocabulary, width or
embedding per release, n-gram lookup windows and policy proposed per framework, draft models of another vocabulary
on SGLang from 0.5.15 and vLLM from 0.25.0; a share of them has one field replaced by junk (a negative number, a
wrong type, an unknown name, a value strict mode refuses: a number in text, an integer as a float) to exercise the
bad-input paths.

Two halves. `scenarios` draws any combination: mostly refused (by the rules of the combinations drawn at random,
and the junk), it found the crashes below. `runnable` derives each field from the draws before it (a target the
drafter suits, the shapes and releases its engine drafts, acceptance and policy that fit, a layout that fits),
so that the combination runs and is checked for the run invariants; it is drawn per focus (RUNNABLE_FOCI: each
drafter kind on a chain, each shape other than a chain, each rule family), since hypothesis draws a derandomized
set in clusters around a few first choices and a focus drawn from one list went undrawn (mtp, in 150); every
focus must run at least once, and with 150 or more in one process every kind of the table must have run.

CI runs a fixed, derandomized set of 150: 75 of `scenarios` (plus the explicit examples that once crashed) and 3
of `runnable` for each of the 22 foci. Before (2026-11-29, the code of 9611d2f, 150 of `scenarios` alone): 18 of
159 ran, 141 refused; 13.3 s wall, 5.7 s user on 2 cores shared with other jobs. Now: 89 of 150 ran with their
invariants intact, 61 refused in one line; 26-39 s wall, 14-15 s user (a run costs a few refusals), printed with
-s -n 0 as ran / refused per kind:

    drafter: cascade 4/1, draft_model 14/3, eagle3 9/1, head 15/3, layer_skip 4/10, mtp 3/12, ngram 6/4,
             none 18/10, sparse_kv 10/12, suffix 6/5
    shape: chain 59/41, tree 6/6, dynamic_tree 3/0, multidraft 3/4
    scheduler: vllm 46/15, sarathi 8/13, vllm_v1 27/12, the release default 8/21
    framework: vllm 54/25, sglang 14/17, trtllm 16/15
    rule: engine release 36/23, allow_long_context 7/11, SGLang queue policy 3/0, max_model_len 15/26,
          config.json model 14/9, heterogeneous_vocab 3/0, engine draft-length policy 8/1, MXFP4 MoE kernel 3/0,
          MTP draft length / LM head 3/6, EAGLE-3 head of another vocabulary/width 6/0, n-gram lookup window 3/0,
          draft model of another vocabulary 3/1

A longer run, whose counts the README reports (printed with -s)::

    DRAFTSIM_FUZZ_EXAMPLES=2000 python3 -m pytest -q -s -n 0 tests/test_fuzz_scenarios.py -p no:cacheprovider
"""
from __future__ import annotations

import collections
import contextlib
import copy
import io
import json
import os
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from models import list_models
from models.load import load_model
from profiles.hardware import list_hardware
from simulator.cli import main

EXAMPLES = int(os.environ.get("DRAFTSIM_FUZZ_EXAMPLES", "150"))
OUTCOMES: collections.Counter = collections.Counter()   # "ran" / "refused"; printed at the end (pytest -s -n 0)
REFUSED_FIELDS: collections.Counter = collections.Counter()   # the field each refusal named (pytest -s -n 0)
KINDS: collections.Counter = collections.Counter()   # (kind, "ran" / "refused") by _kinds (pytest -s -n 0)
FUZZ = settings(max_examples=EXAMPLES // 2, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))   # (the other half: RUNNABLE, over RUNNABLE_FOCI)

SMALL_MODELS = ["llama-68m", "qwama-0.5b", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "llama-3-8b", "llama-2-7b"]
ALL_MODELS = list_models()
HARDWARE = [h for h in list_hardware() if h != "cpu-local"]
DRAFT_MODELS = ["llama-68m", "qwama-0.5b", "qwen2.5-coder-0.5b"]
# draft models of another vocabulary than most targets' (smollm2: 49,152) or of Llama-3's (llama-3.2-1b: 128,256),
# for drafter.heterogeneous_vocab and the engines' draft-vocabulary rules (profiles.engine_time.draft_vocabulary)
VOCAB_DRAFTS = ["smollm2-135m", "llama-3.2-1b", "llama-68m"]
# releases to draw for cluster.engine.version, across the rules that gate by release (profiles.engine_time: support,
# draft_vocabulary, context_length, sliding_window_served, queue_defaults, batch_defaults)
RELEASES = {"vllm": ["0.5.3", "0.6.6", "0.8.5", "0.9.2", "0.10.1", "0.11.0", "0.15.0", "0.24.0", "0.25.0", "0.27.0",
                     "0.30.0", "0.33.0"],
            "sglang": ["0.4.0", "0.4.3.post2", "0.4.5", "0.4.10.post2", "0.5.2", "0.5.9", "0.5.13", "0.5.15", "0.5.19",
                       "0.5.23"],
            "trtllm": ["0.18.0", "0.21.0", "1.0.0", "1.2.1", "1.3.0rc27", "1.4.0rc1"]}
EAGLE3_TARGETS = ["llama-3.1-8b", "qwen3-8b", "llama-3.1-70b"]   # (a catalog head each: models/heads/eagle3.yaml)
MTP_TARGETS = ["qwen3-next-80b-a3b", "deepseek-v3"]              # (num_mtp_modules 1)
HF_CONFIGS = Path(__file__).resolve().parent / "data" / "hf_configs"


def _hf(folder: str, **changes) -> dict:
    """The published config.json of tests/data/hf_configs/`folder`, inline, with `changes` (None: removed)."""
    cfg = json.loads((HF_CONFIGS / folder / "config.json").read_text())
    cfg.update(changes)
    return {key: value for key, value in cfg.items() if value is not None}


# models of sliding-window attention and context rules as their config.json gives them (models.hf_config): served
# windows by engine and release (profiles.engine_time.sliding_window_served), derived contexts (context_length)
WINDOWED = [
    str(HF_CONFIGS / "Mistral-7B-v0.1" / "config.json"),                     # a window on every layer
    str(HF_CONFIGS / "gpt-oss-20b" / "config.json"),                         # every other layer
    lambda: _hf("gpt-oss-20b", layer_types=None),                            # layer_types left out
    lambda: _hf("gpt-oss-20b", layer_types=["full_attention"] * 24),         # all full (vLLM < 0.27 windows all)
    lambda: _hf("gpt-oss-20b", layer_types=["sliding_attention"] * 24),      # all sliding
    lambda: _hf("Qwen3-8B", use_sliding_window=True, sliding_window=4096, max_window_layers=36),   # every layer
    lambda: _hf("Qwen3-8B", use_sliding_window=True, sliding_window=4096, max_window_layers=28),   # mixed layers
    lambda: _hf("Qwen2.5-7B", use_sliding_window=True, sliding_window=2048),
    lambda: _hf("Qwen3-8B", rope_scaling={"rope_type": "yarn", "factor": 4.0,                      # contexts differ
                                          "original_max_position_embeddings": 32768}),           # by release
]
# (the last ones: what strict mode refuses, simulator.config.base.Strict: a number in text, an integer as a float,
# YAML 1.2's boolean spelled in text)
JUNK = st.sampled_from([-1, 0, -0.5, "x", None, [], {}, 1e30, True, "nope", [1, 2], "2", 2.0, "true"])

lengths = st.one_of(
    st.builds(lambda v: {"kind": "fixed", "value": v}, st.integers(1, 1024)),
    st.builds(lambda lo, span: {"kind": "uniform", "low": lo, "high": lo + span}, st.integers(1, 512),
              st.integers(0, 512)),
    st.builds(lambda m, s: {"kind": "lognormal", "median": m, "sigma": s, "max": 2048},
              st.floats(4, 600), st.floats(0.1, 1.5)))

arrivals = st.one_of(
    st.builds(lambda q: {"process": "poisson", "qps": q}, st.floats(0.5, 60)),
    st.builds(lambda q, cv: {"process": "gamma", "qps": q, "cv": cv}, st.floats(0.5, 60), st.floats(0.2, 4)),
    st.builds(lambda c: {"process": "closed_loop", "concurrency": c}, st.integers(1, 16)))

drafters = st.one_of(
    st.just({"kind": "none"}),
    st.builds(lambda m, g, p, tp: {"kind": "draft_model", "model": m, "gamma": g, "placement": p, "tp": tp},
              st.sampled_from(DRAFT_MODELS), st.integers(0, 8), st.sampled_from(["colocated", "separate", "cpu"]),
              st.sampled_from([1, 1, 2])),
    st.builds(lambda m, g, k: {"kind": "draft_model", "model": m, "gamma": g, "layer_parallel": k},
              st.sampled_from(DRAFT_MODELS), st.integers(1, 6), st.integers(1, 4)),
    st.builds(lambda s, g, layers, per_pass: {"kind": "head", "style": s, "gamma": g, "layers": layers,
                                              "tokens_per_pass": per_pass},
              st.sampled_from(["autoregressive", "parallel", "sequential", "rnn"]), st.integers(0, 8),
              st.sampled_from([1, 1, 2, 3]), st.sampled_from([1, 1, 2, 4])),
    st.builds(lambda g, f: {"kind": "layer_skip", "gamma": g, "layers_fraction": f}, st.integers(0, 8),
              st.floats(0.1, 0.9)),
    st.builds(lambda g: {"kind": "ngram", "gamma": g}, st.integers(0, 8)),
    st.builds(lambda g, b: {"kind": "sparse_kv", "gamma": g, "kv_budget": b}, st.integers(0, 8),
              st.integers(1, 4096)),
    st.builds(lambda m, g, het, passes: {"kind": "draft_model", "model": m, "gamma": g, "heterogeneous_vocab": het,
                                         "passes": passes},
              st.sampled_from(VOCAB_DRAFTS), st.integers(1, 6), st.booleans(), st.sampled_from(["chain", "chain", "vllm"])),
    st.builds(lambda g, head: {"kind": "eagle3", "gamma": g, **({"head": head} if head else {})},
              st.integers(0, 6), st.sampled_from([None, None, "llama-3.1-8b-eagle3", "qwen3-8b-eagle3"])),
    st.builds(lambda g, modules: {"kind": "mtp", "gamma": g, **({"modules": modules} if modules else {})},
              st.integers(0, 4), st.sampled_from([None, None, 1, 2])),
    st.builds(lambda g: {"kind": "suffix", "gamma": g}, st.integers(1, 32)),
    st.builds(lambda stages: {"kind": "cascade", "stages": stages}, st.lists(st.one_of(
        st.builds(lambda t: {"tokens": t}, st.integers(1, 4)),                  # a statistical stage
        st.builds(lambda t, m, budget: {"tokens": t, "model": m, **({"kv_budget": budget} if budget else {})},
                  st.integers(1, 4), st.sampled_from([*DRAFT_MODELS, "self"]), st.sampled_from([None, 64, 2048])),
        st.builds(lambda t, m, g, a, inner: {"tokens": t, "model": m, "inner_gamma": g, "inner_alpha": a,
                                             **({"inner_model": inner} if inner else {})},   # a vertical cascade
                  st.integers(1, 4), st.sampled_from([*DRAFT_MODELS, "self"]), st.integers(1, 4), st.floats(0, 1),
                  st.sampled_from([None, *DRAFT_MODELS]))), min_size=1, max_size=3)))

shapes = st.one_of(
    st.just({"kind": "chain"}),
    st.just({"kind": "chain", "alignment": "realign"}),
    st.builds(lambda b, k, d, n: {"kind": "tree", "builder": b, "k": k, "depth": d, "budget": n},
              st.sampled_from(["kary", "medusa", "sequoia"]), st.integers(1, 4), st.integers(1, 5),
              st.integers(1, 40)),
    st.builds(lambda b, k, d, n, c: {"kind": "dynamic_tree", "builder": b, "top_k": k, "depth": d, "budget": n,
                                     "per_context": c},
              st.sampled_from(["eagle2", "top_n"]), st.integers(1, 6), st.integers(1, 6), st.integers(1, 48),
              st.booleans()),
    st.builds(lambda n, s: {"kind": "multidraft", "n": n, "scheme": s}, st.integers(1, 4),
              st.sampled_from(["rrs", "rrs_wor", "kseq", "naive", "optimal", "optimal_wor"])))

sessions_acceptances = st.builds(   # (a model-free drafter's, from running it on real sessions)
    lambda w: {"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", **({"workloads": [w]} if w else {})},
    st.sampled_from([None, "code_edit", "agentic"]))

acceptances = st.one_of(
    st.builds(lambda a: {"kind": "constant", "alpha": a}, st.floats(0, 1)),
    st.builds(lambda a: {"kind": "positional", "alphas": a}, st.lists(st.floats(0, 1), min_size=1, max_size=6)),
    st.builds(lambda p: {"kind": "ranked", "accept_probs": p}, st.sampled_from([[0.6], [0.5, 0.2], [0.4, 0.2, 0.1]])),
    st.builds(lambda v, z, q: {"kind": "pair", "vocab": v, "zipf": z, "q_power": q}, st.integers(2, 64),
              st.floats(0.2, 3), st.floats(0.2, 2)),
    st.builds(lambda d, m: {"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": d, "mode": m},
              st.sampled_from(["draft", "skip", "ngram"]), st.sampled_from(["greedy", "sample"])),
    st.builds(lambda classes: {"kind": "contexts", "contexts": classes}, st.lists(st.fixed_dictionaries(
        {"weight": st.floats(0.01, 5), "accept_probs": st.sampled_from([[0.9], [0.5, 0.2], [0.1, 0.1, 0.1]])}),
        min_size=1, max_size=3)),
    st.builds(lambda a, b, end: {"kind": "drifting", "points": [[0, a], [end, b]]}, st.floats(0, 1),
              st.floats(0, 1), st.integers(1, 60)),
    st.builds(lambda a: {"kind": "step_level", "accept": a}, st.floats(0, 1)),
    sessions_acceptances)

policies = st.one_of(
    st.just({"kind": "fixed"}),
    st.builds(lambda g: {"kind": "smartspec", "max_gamma": g}, st.integers(1, 8)),
    st.builds(lambda t: {"kind": "specdecpp", "threshold": t}, st.floats(0, 1)),
    st.builds(lambda b: {"kind": "tetris", "budget_tokens": b}, st.integers(1, 128)),
    st.builds(lambda b, q: {"kind": "load_switch", "max_batch": b, "max_queue": q}, st.integers(0, 64),
              st.integers(0, 64)),
    st.just({"kind": "specreason"}),
    st.builds(lambda g, seed: {"kind": "thompson", "max_gamma": g, "seed": seed}, st.integers(1, 8),
              st.integers(0, 100)),
    # the engines' own draft-length rules, each gated by framework and release (profiles.engine_time.support)
    st.builds(lambda g: {"kind": "vllm_dynamic", "schedule": [[1, 4, g], [5, 4096, max(g - 1, 0)]]}, st.integers(0, 6)),
    st.builds(lambda sched, gate: {"kind": "trtllm_schedule", **sched, **gate},
              st.sampled_from([{}, {"draft_len_schedule": {4: 3, 16: 1}}]),
              st.sampled_from([{}, {"acceptance_window": 3, "acceptance_length_threshold": 0.5},
                               {"acceptance_rate_window_size": 3, "acceptance_rate_threshold": 0.5}])),
    st.just({"kind": "sglang_adaptive"}))

schedulers = st.builds(
    lambda kind, batch, tokens, chunk, block: {"kind": kind, "max_batch_size": batch, "max_batched_tokens": tokens,
                                               "chunk_tokens": min(chunk, tokens), "block_size": block},
    st.sampled_from(["vllm", "sarathi", "vllm_v1"]), st.integers(1, 256), st.integers(256, 8192), st.integers(16, 1024),
    st.sampled_from([8, 16, 32]))

latency = st.builds(lambda source, fw, engine, nano: {"source": source, "framework": fw, "engine_time": engine,
                                                     "nano_batches": nano},
                    st.sampled_from(["auto", "auto", "measured", "roofline"]),
                    st.sampled_from(["vllm", "sglang", "trtllm"]), st.sampled_from([None, True, False]),
                    st.sampled_from([1, 1, 1, 2, 4]))

kv_caches = st.one_of(
    st.just({}), st.just({}), st.just({}),
    st.builds(lambda shared, preemption, host: {"prefix_caching": True, "shared_prefix_attention": shared,
                                                "preemption": preemption, "host_memory_gib": host},
              st.booleans(), st.sampled_from(["recompute", "swap"]), st.sampled_from([0, 0.5, 64])),
    st.builds(lambda preemption, host: {"preemption": preemption, "host_memory_gib": host},
              st.sampled_from(["recompute", "swap"]), st.sampled_from([0, 1, 16])),
    st.builds(lambda rank, budget, chunk: {"layout": {"kind": "shadowkv", "rank": rank, "sparse_budget": budget,
                                                      "chunk_tokens": chunk}},
              st.integers(1, 512), st.integers(1, 4096), st.sampled_from([4, 8, 32])))

prefix_workloads = st.one_of(
    st.just({}),
    st.builds(lambda n, tokens, pop: {"shared_prefix": {"prompts": n, "tokens": tokens, "popularity": pop}},
              st.integers(1, 8), st.integers(1, 2048), st.sampled_from(["uniform", "zipf"])),
    st.builds(lambda turns, think: {"sessions": {"turns": {"kind": "fixed", "value": turns}, "think_time_s": think}},
              st.integers(1, 4), st.floats(0.01, 5)))


@st.composite
def layouts(draw, model: str):
    """Parallelism that mostly suits the model (tp divides its heads; ep > 1 only for MoE models; GPUs
    enough for its weights), sometimes not (the build must then refuse it in one line)."""
    spec = load_model(model)
    if draw(st.integers(0, 5)) == 0:
        return {"tp": draw(st.sampled_from([1, 2, 3, 4, 8])), "pp": draw(st.sampled_from([1, 2])),
                "ep": draw(st.sampled_from([1, 2, 8]))}
    tps = [t for t in (1, 2, 4, 8) if spec.num_heads % t == 0 and spec.num_kv_heads % t == 0] or [1]
    need = max(1, int(spec.param_count() * 2 / 60e9) + 1)     # bf16 weights over ~60 GB per GPU
    tp = draw(st.sampled_from([t for t in tps if t >= min(need, max(tps))] or tps))
    pp = draw(st.sampled_from([1, 1, 2])) if tp * 2 <= need * 2 else 1
    experts = getattr(spec, "num_experts", 0) or 0
    ep = draw(st.sampled_from([e for e in (1, tp, 2 * tp) if experts == 0 and e == 1 or experts and experts % e == 0]))
    return {"tp": tp, "pp": pp, "ep": ep}


@st.composite
def engines(draw, framework: str):
    """`cluster.engine` of `framework`: mostly a named release, sometimes allow_long_context, SGLang's queue
    policy, the overlap scheduler either way."""
    engine = {"framework": framework}
    if draw(st.integers(0, 3)):
        engine["version"] = draw(st.sampled_from(RELEASES[framework]))
    if draw(st.integers(0, 2)) == 0:
        engine["allow_long_context"] = draw(st.booleans())
    if framework == "sglang" and draw(st.integers(0, 3)) == 0:
        engine["schedule_policy"] = draw(st.sampled_from(["fcfs", "lpm", "lof", "random"]))
    if draw(st.integers(0, 3)) == 0:
        engine["async_scheduling"] = draw(st.booleans())
    return engine


def _target(draw, spec: dict):
    """The target model: mostly one that suits the drafter (an EAGLE-3 head's, MTP modules', the sessions
    corpus's), now and then a sliding-window or long-context config.json, else a catalog model."""
    kind = spec.get("drafter", {}).get("kind")
    if kind == "eagle3" and draw(st.integers(0, 3)):
        return draw(st.sampled_from(EAGLE3_TARGETS))
    if kind == "mtp" and draw(st.integers(0, 3)):
        return draw(st.sampled_from(MTP_TARGETS))
    if spec.get("acceptance", {}).get("kind") == "sessions" and draw(st.integers(0, 3)):
        return "qwen2.5-coder-0.5b"
    if draw(st.integers(0, 7)) == 7:   # (the rare branches of the new draws take the largest value, not 0, which
        # hypothesis draws first: the CI set's early examples keep the draws they had)
        model = draw(st.sampled_from(WINDOWED))
        return model() if callable(model) else model
    return draw(st.sampled_from(SMALL_MODELS) if draw(st.integers(0, 3)) else st.sampled_from(ALL_MODELS))


@st.composite
def clusters(draw, spec: dict | None = None):
    model = _target(draw, spec or {})
    cluster = {"hardware": draw(st.sampled_from(HARDWARE)), "model": model,
               "dtype": draw(st.sampled_from(["bf16", "bf16", "bf16", "fp16", "fp8", "fp32", "fp8_block", "int4"])),
               "latency": draw(latency), "kv_cache": draw(kv_caches)}
    if not isinstance(model, str) or model.endswith(".json"):   # a config.json: mostly its own weight format
        if draw(st.integers(0, 3)):
            del cluster["dtype"]
    if draw(st.integers(0, 2)) == 2:   # a named engine (its release's rules), else the latency tables' own
        cluster["engine"] = draw(engines(cluster["latency"]["framework"]))
    routers = ["round_robin", "least_outstanding", "join_shortest_queue"]
    cluster["router"] = draw(st.sampled_from(routers + ["prefix_aware"] * 2 if cluster["kv_cache"].get("prefix_caching")
                                             else routers))
    if draw(st.integers(0, 3)) == 0:
        cluster["kv_dtype"] = draw(st.sampled_from(["bf16", "fp16", "fp8", "fp32"]))
    if draw(st.integers(0, 7)) == 0:   # a shorter context than the model's (workload.context_overflow decides)
        cluster["max_model_len"] = draw(st.sampled_from([64, 512, 2048]))
    elif draw(st.integers(0, 1 if cluster.get("engine", {}).get("allow_long_context") else 15)) in (1, 15):
        # a longer one than the model's (refused, or served with cluster.engine.allow_long_context)
        context = load_model(model).max_position_embeddings
        cluster["max_model_len"] = context + draw(st.sampled_from([1, 256, context]))
    if draw(st.integers(0, 4)) == 0:  # disaggregated prefill/decode pools, possibly on different GPUs
        cluster["disaggregation"] = {
            "prefill": {"replicas": draw(st.integers(1, 2)), "parallelism": draw(layouts(model))},
            "decode": {"replicas": draw(st.integers(1, 2)), "parallelism": draw(layouts(model)),
                       "hardware": draw(st.sampled_from(HARDWARE))},
            "kv_transfer": {"link": draw(st.sampled_from(["scaleup", "scaleout"])),
                            "layerwise_overlap": draw(st.booleans())}}
        cluster["disaggregation"]["prefill"]["router"] = cluster.pop("router")   # (each pool routes its own)
    else:
        cluster["replicas"] = draw(st.integers(1, 3))
        cluster["parallelism"] = draw(layouts(model))
    pools = [cluster["disaggregation"][name] for name in ("prefill", "decode")] if "disaggregation" in cluster \
        else [cluster]
    # (cluster.moe prices expert parallelism's all-to-alls: with ep 1 in every pool it is refused, now and then)
    if draw(st.booleans()) and (any(p["parallelism"]["ep"] > 1 for p in pools) or draw(st.integers(0, 7)) == 0):
        cluster["moe"] = {"routing": draw(st.sampled_from(["uniform", "zipf"])), "zipf_exponent": draw(st.floats(0.1, 3)),
                          "prescheduling_hit_rate": draw(st.floats(0, 1))}
    return cluster


@st.composite
def speculation(draw):
    """Drafter, shape, acceptance and policy: mostly combinations that make sense together (trees get
    per-rank acceptance, adaptive policies a drafter), sometimes any combination."""
    if draw(st.integers(0, 5)) == 0:
        return {"drafter": draw(drafters), "speculation": draw(shapes), "acceptance": draw(acceptances),
                "policy": draw(policies)}
    drafter = draw(drafters)
    if drafter["kind"] == "none" or drafter.get("gamma", 0) == 0:
        return {"drafter": drafter}
    shape = draw(shapes)
    if drafter["kind"] == "suffix":   # (its own draft lengths, chains, from real sessions: simulator.speculation.suffix)
        return {"drafter": drafter, "speculation": {"kind": "chain"}, "acceptance": draw(sessions_acceptances),
                "policy": {"kind": "fixed"}}
    if drafter["kind"] == "ngram" and draw(st.booleans()):   # (n-gram lookups on real sessions too)
        acceptance = draw(sessions_acceptances)
    elif shape["kind"] in ("tree", "dynamic_tree", "multidraft"):
        acceptance = draw(acceptances.filter(lambda a: a["kind"] in ("ranked", "pair", "trace", "contexts")))
    else:
        acceptance = draw(acceptances.filter(lambda a: a["kind"] != "sessions"))
    policy = draw(policies) if shape["kind"] == "chain" else {"kind": "fixed"}
    return {"drafter": drafter, "speculation": shape, "acceptance": acceptance, "policy": policy}


# ---- the newest engine rules (session 26), drawn in focused combinations: a scenario drawn at random almost never
# pairs a gpt-oss on an H100 with an MXFP4 checkpoint and a vLLM 0.10-0.11 release, or an MTP model of several modules
# with a release and a draft length that are not a multiple
# a small DeepSeek-V3-shaped model (DeepSeek-V2-Lite's sizes, V3's architecture and routing) shipping `n` MTP modules,
# for vLLM's draft-length rule (profiles.engine_time.mtp_draft_length: at most n_predict on 0.7.3, a multiple above it
# from 0.8.0) and its MTP LM head (profiles.engine_time.mtp_lm_head)
def _small_v3(n_predict: int) -> dict:
    return _hf("DeepSeek-V2-Lite", architectures=["DeepseekV3ForCausalLM"], model_type="deepseek_v3",
               num_nextn_predict_layers=n_predict, topk_method="noaux_tc", scoring_func="sigmoid", norm_topk_prob=True)


_E3_HEAD = {"hidden_size": 4096, "intermediate_size": 14336, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128,
            "draft_vocab_size": 32000, "target_hidden_size": 4096, "vocab_size": 128256}
# inline EAGLE-3 heads of another vocabulary, width or embedding than their targets' (profiles.engine_time.
# eagle3_embedding: refusals and the own embedding's memory by release)
E3_HEADS = [None, "llama-3.1-8b-eagle3", "qwen3-8b-eagle3", "gpt-oss-120b-eagle3", _E3_HEAD,
            {**_E3_HEAD, "shares_embedding": False}, {**_E3_HEAD, "vocab_size": 32000},
            {**_E3_HEAD, "vocab_size": 128000}, {**_E3_HEAD, "vocab_size": 151936, "shares_embedding": False},
            {**_E3_HEAD, "hidden_size": 2048, "num_heads": 16, "shares_embedding": False},
            {**_E3_HEAD, "hidden_size": 2048, "num_heads": 16}, {**_E3_HEAD, "vocab_size": 200000}]
NEW_RELEASES = {
    "mxfp4": {"vllm": ["0.10.0", "0.10.1", "0.10.2", "0.11.0", "0.11.2", "0.12.0", "0.15.0", "0.24.0", None]},
    "mtp": {"vllm": ["0.7.3", "0.8.0", "0.8.5", "0.9.0", "0.9.2", "0.12.0", "0.15.0", "0.15.1", "0.16.0", "0.24.0",
                     "0.33.0", None],
            "sglang": ["0.4.5", "0.5.9", "0.5.23", None], "trtllm": ["1.0.0", "1.2.1", None]},
    "eagle3": {"vllm": ["0.8.5", "0.9.0", "0.9.0.1", "0.9.1", "0.10.1", "0.11.0", "0.11.1", "0.15.0", "0.16.0", "0.25.0",
                        "0.33.0", None],
               "sglang": ["0.4.5", "0.5.9", "0.5.13", "0.5.14", "0.5.23", None], "trtllm": ["1.0.0", "1.2.1", None]},
    "ngram": {"vllm": ["0.5.3", "0.8.2", "0.9.2", "0.15.0", "0.24.0", "0.33.0", None],
              "sglang": ["0.5.3", "0.5.9", "0.5.23", None], "trtllm": ["1.0.0", "1.2.1", "1.4.0rc1", None]},
    "vocab": {"vllm": ["0.6.6", "0.15.0", "0.24.0", "0.25.0", "0.33.0", None],
              "sglang": ["0.5.3", "0.5.14", "0.5.15", "0.5.16", "0.5.23", None], "trtllm": ["1.2.1", None]},
}


def _engine_of(draw, rule: str, cluster: dict) -> None:
    """cluster.latency.framework and a release of it (None: the tables' own) for `rule` (NEW_RELEASES)."""
    framework = draw(st.sampled_from(sorted(NEW_RELEASES[rule])))
    cluster["latency"] = {**cluster.get("latency", {}), "framework": framework}
    version = draw(st.sampled_from(NEW_RELEASES[rule][framework]))
    cluster["engine"] = {"framework": framework, **({"version": version} if version else {})}


@st.composite
def newest_rules(draw, data: dict) -> dict:
    """`data` with its model, drafter and engine replaced by a focused combination of one of the newest rules: the
    MXFP4 MoE kernel per vLLM release, vLLM's MTP draft lengths and MTP LM heads, EAGLE-3 heads of another
    vocabulary, width or embedding, n-gram lookup windows and policy proposed, draft models of another vocabulary
    on SGLang from 0.5.15 and vLLM from 0.25.0."""
    data = copy.deepcopy(data)
    cluster = data["cluster"]
    for key in ("drafter", "speculation", "acceptance", "policy", "early_exit"):
        data.pop(key, None)
    cluster.pop("disaggregation", None)
    cluster.pop("moe", None)
    cluster.pop("max_model_len", None)
    cluster["kv_cache"] = {}
    if cluster.get("router", "prefix_aware") == "prefix_aware":   # (no prefix caching here)
        cluster["router"] = "round_robin"
    cluster["replicas"] = draw(st.integers(1, 2))
    data["workload"]["num_requests"] = min(data["workload"]["num_requests"], 16)
    rule = draw(st.sampled_from(sorted(NEW_RELEASES)))
    gpus = ["h100-sxm", "h100-pcie", "h800", "h200", "a100-80gb", "a100-40gb", "l40s", "b200", "mi300x"]
    if rule == "mxfp4":
        cluster["model"] = draw(st.sampled_from(["gpt-oss-20b", "gpt-oss-20b", "gpt-oss-120b", "llama-3-8b",
                                                 str(HF_CONFIGS / "gpt-oss-20b" / "config.json")]))
        cluster["hardware"] = draw(st.sampled_from(gpus))
        cluster["dtype"] = draw(st.sampled_from(["mxfp4", "mxfp4", "mxfp4", "bf16", "fp8"]))
        tp = draw(st.sampled_from([1, 1, 2, 4]))
        cluster["parallelism"] = {"tp": tp, "ep": draw(st.sampled_from([1, tp]))}
        cluster["max_model_len"] = draw(st.sampled_from([4096, 16384]))
        _engine_of(draw, rule, cluster)
        cluster["latency"]["source"] = draw(st.sampled_from(["auto", "measured", "roofline"]))
        if draw(st.booleans()):
            data["drafter"] = {"kind": "eagle3", "gamma": draw(st.integers(1, 4)),
                               **({"head": "gpt-oss-120b-eagle3"} if draw(st.booleans()) else {})}
    elif rule == "mtp":
        n_predict = draw(st.sampled_from([1, 2, 3, 0]))
        if n_predict == 1 and draw(st.booleans()):
            cluster.update(model=draw(st.sampled_from(["deepseek-v3", "qwen3-next-80b-a3b"])), hardware="h200",
                           parallelism={"tp": 8, "ep": 8}, dtype="fp8")
        else:
            cluster.update(model=_small_v3(n_predict), hardware=draw(st.sampled_from(["h100-sxm", "h200", "b200"])),
                           parallelism={"tp": draw(st.sampled_from([1, 2])), "ep": 1}, dtype="bf16")
        cluster["max_model_len"] = 8192
        _engine_of(draw, rule, cluster)
        data["drafter"] = {"kind": "mtp", "gamma": draw(st.integers(1, 7)),
                           **({"modules": draw(st.integers(1, 3))} if draw(st.integers(0, 3)) == 3 else {})}
    elif rule == "eagle3":
        head = draw(st.sampled_from(E3_HEADS))
        cluster["model"] = draw(st.sampled_from(["llama-3.1-8b", "llama-3.1-8b", "qwen3-8b", "gpt-oss-20b"]))
        cluster["hardware"] = draw(st.sampled_from(gpus))
        cluster["parallelism"] = {"tp": draw(st.sampled_from([1, 2])), "pp": draw(st.sampled_from([1, 1, 2])), "ep": 1}
        cluster["max_model_len"] = 8192
        _engine_of(draw, rule, cluster)
        data["drafter"] = {"kind": "eagle3", "gamma": draw(st.integers(1, 5)), **({"head": head} if head else {})}
    elif rule == "ngram":
        window = draw(st.sampled_from([{}, {"prompt_lookup_max": 2}, {"prompt_lookup_min": 3}, {"prompt_lookup_min": 9},
                                       {"prompt_lookup_max": 4, "prompt_lookup_min": 1},
                                       {"prompt_lookup_max": 2, "prompt_lookup_min": 4},
                                       {"prompt_lookup_max": 64, "prompt_lookup_min": 64}]))
        data["drafter"] = {"kind": "ngram", "gamma": draw(st.integers(1, 8)), **window}
        cluster["hardware"] = draw(st.sampled_from(gpus[:5]))
        cluster["parallelism"] = {"tp": 1, "ep": 1}
        _engine_of(draw, rule, cluster)
        sessions = draw(st.booleans())
        cluster["model"] = "qwen2.5-coder-0.5b" if sessions else "qwen2.5-coder-1.5b"
        data["acceptance"] = draw(sessions_acceptances) if sessions else \
            {"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "ngram",
             "mode": draw(st.sampled_from(["greedy", "sample"]))}
        data["policy"] = {"kind": draw(st.sampled_from(["proposed", "proposed", "fixed"]))}
    else:   # a draft model of another vocabulary (profiles.engine_time.draft_vocabulary)
        cluster["model"] = draw(st.sampled_from(["llama-3-8b", "llama-3.1-8b", "qwen3-8b", "qwen2.5-coder-1.5b"]))
        cluster["hardware"] = draw(st.sampled_from(gpus[:5]))
        cluster["parallelism"] = {"tp": 1, "ep": 1}
        _engine_of(draw, rule, cluster)
        data["drafter"] = {"kind": "draft_model", "model": draw(st.sampled_from(VOCAB_DRAFTS + ["qwen2.5-coder-0.5b"])),
                           "gamma": draw(st.integers(1, 5)),
                           **({"heterogeneous_vocab": draw(st.booleans())} if draw(st.booleans()) else {})}
    if "drafter" in data and rule != "ngram":
        data["acceptance"] = draw(acceptances.filter(lambda a: a["kind"] not in ("sessions", "trace")))
        if draw(st.integers(0, 3)) == 3:   # the engines' draft-length rules, schedules given as JSON writes them
            data["policy"] = draw(st.sampled_from([
                {"kind": "vllm_dynamic", "schedule": [[1, 4, 2], [5, 4096, 1]]},
                {"kind": "trtllm_schedule", "draft_len_schedule": {"4": 2, "16": 1}},
                {"kind": "sglang_adaptive"}, {"kind": "proposed"}]))
    data["scheduler"].pop("kind", None)
    return data


# ---- the runnable half: each field derived from the draws before it, so that the combination is one the
# simulator and the engine named accept (the run invariants are what these exercise; the refusals of the rules are
# drawn by `scenarios`, junk among them, and newest_rules). Its draws keep within what the rules allow as read in
# their refusals, so a refusal here is worth reading (a rule that refuses what it should run, or a draw to fix).
MEASURED_GPUS = ["h100-sxm", "h200", "a100-80gb", "b200", "l40s", "h800"]   # (measured kernel tables of each)
# target → draft models of its own vocabulary, no larger than it (drafter.model)
SAME_VOCAB_DRAFTS = {"llama-3-8b": ["qwama-0.5b", "llama-3.2-1b"], "llama-2-7b": ["llama-68m"],
                     "qwen2.5-coder-1.5b": ["qwen2.5-coder-0.5b"]}
# the frameworks that have a drafter kind, where not all three (profiles.engine_time.support: suffix decoding is vLLM's
# only; SGLang refuses the layer_skip and sparse_kv drafters as layer-skipping self-speculation)
FRAMEWORKS_OF = {"suffix": ["vllm"], "layer_skip": ["vllm", "trtllm"], "sparse_kv": ["vllm", "trtllm"]}
# the engines' own draft-length rules (policy kinds gated by framework and release: profiles.engine_time.support);
# TensorRT-LLM reads draft_len_schedule keys as batch-size bounds from 1.3.0rc7, so runnable() names no older release
ENGINE_POLICIES = {"vllm": {"kind": "vllm_dynamic", "schedule": [[1, 4, 2], [5, 4096, 1]]},
                   "trtllm": {"kind": "trtllm_schedule", "draft_len_schedule": {4: 2, 16: 1}},
                   "sglang": {"kind": "sglang_adaptive"}}
ENGINE_POLICY_KINDS = [policy["kind"] for policy in ENGINE_POLICIES.values()]
# (framework, drafter kind) that draft each shape other than a chain (profiles.engine_time.tree_shapes): SGLang
# EAGLE-2's tree only; vLLM no dynamic tree, multi-draft from draft models and heads (its static trees, 0.10.1 to
# 0.20.2, from EAGLE heads only with as many children per node of a level: left to `scenarios`); EAGLE-3 a chain
# or EAGLE-2's tree
TREE_DRAFTERS = {"tree": [("trtllm", "draft_model"), ("trtllm", "head")],
                 "dynamic_tree": [("sglang", "eagle3"), ("sglang", "draft_model"), ("sglang", "head"),
                                  ("trtllm", "draft_model"), ("trtllm", "head"), ("trtllm", "eagle3")],
                 "multidraft": [("vllm", "draft_model"), ("vllm", "head"), ("trtllm", "draft_model"),
                                ("trtllm", "head")]}
DRAFTER_KINDS = ["none", "draft_model", "head", "layer_skip", "ngram", "sparse_kv", "eagle3", "mtp", "suffix",
                 "cascade"]


@st.composite
def runnable_drafters(draw, kind: str, framework: str, shape_kind: str,
                      inline_head: bool = False) -> tuple[dict, object]:
    """(drafter of `kind` with gamma >= 1 as `framework` runs it, its target model; `inline_head`: an EAGLE-3 head
    given inline, of another vocabulary size or with an embedding of its own)."""
    gamma = draw(st.integers(1, 5))
    if kind == "none":
        return {"kind": "none"}, draw(st.sampled_from(SMALL_MODELS))
    if kind == "draft_model":
        target = draw(st.sampled_from(sorted(SAME_VOCAB_DRAFTS)))
        drafter = {"kind": "draft_model", "model": draw(st.sampled_from(SAME_VOCAB_DRAFTS[target])), "gamma": gamma}
        # (vLLM V1's DraftModelProposer pass layout: colocated, policy fixed)
        drafter.update(draw(st.sampled_from([{}, {"placement": "separate"}, {"placement": "cpu"},
                                             *([{"passes": "vllm"}] if framework == "vllm" else [])])))
        return drafter, target
    if kind == "head":
        # (SGLang has no Medusa-style parallel heads: profiles.engine_time.support)
        style = draw(st.sampled_from(["autoregressive", "parallel", "sequential", "rnn"])) if framework != "sglang" \
            else "autoregressive"
        per_pass = draw(st.sampled_from([1, 2])) if style == "autoregressive" and shape_kind == "chain" else 1
        # (Falcon's semi-autoregressive head drafts one fixed chain)
        return ({"kind": "head", "style": style, "gamma": gamma, "layers": draw(st.sampled_from([1, 2])),
                 "tokens_per_pass": per_pass}, draw(st.sampled_from(SMALL_MODELS[1:])))
    if kind == "layer_skip":
        return ({"kind": "layer_skip", "gamma": gamma, "layers_fraction": draw(st.floats(0.2, 0.8))},
                draw(st.sampled_from(SMALL_MODELS[1:])))
    if kind == "ngram":   # (SGLang's NGRAM trie is priced on real sessions only: acceptance sessions)
        return {"kind": "ngram", "gamma": gamma}, draw(st.sampled_from(SMALL_MODELS[1:])) if framework != "sglang" \
            else "qwen2.5-coder-0.5b"
    if kind == "sparse_kv":
        return ({"kind": "sparse_kv", "gamma": gamma, "kv_budget": draw(st.sampled_from([64, 512, 2048]))},
                draw(st.sampled_from(SMALL_MODELS[1:])))
    if kind == "eagle3":
        target = "llama-3.1-8b" if inline_head else draw(st.sampled_from(EAGLE3_TARGETS[:2]))
        # (inline heads of another vocabulary size, or an embedding of their own: vLLM from 0.11.1, SGLang and
        # TensorRT-LLM serve them: profiles.engine_time.eagle3_embedding)
        others = [{**_E3_HEAD, "vocab_size": 32000}, {**_E3_HEAD, "shares_embedding": False}] \
            if target == "llama-3.1-8b" else []
        head = draw(st.sampled_from(others if inline_head else [None, f"{target}-eagle3", *others]))
        return {"kind": "eagle3", "gamma": gamma, **({"head": head} if head else {})}, target
    if kind == "mtp":
        modules = draw(st.sampled_from([1, 1, 2, 3]))
        return {"kind": "mtp", "gamma": modules * draw(st.integers(1, 2))}, _small_v3(modules)
    if kind == "suffix":
        return {"kind": "suffix", "gamma": draw(st.integers(1, 32))}, "qwen2.5-coder-0.5b"
    stages = draw(st.lists(st.sampled_from([{"tokens": 2}, {"tokens": 1, "model": "qwama-0.5b"},
                                            {"tokens": 2, "model": "self", "kv_budget": 64}]), min_size=1, max_size=2))
    return {"kind": "cascade", "stages": stages}, "llama-3-8b"


def _runnable_speculation(draw, drafter: dict, target, framework: str, shape_kind: str) -> dict:
    """Shape (of `shape_kind`), acceptance and policy that suit `drafter` on `target` served by `framework`."""
    kind = drafter["kind"]
    if kind == "none":
        return {}
    if kind == "suffix":
        return {"speculation": {"kind": "chain"}, "acceptance": draw(sessions_acceptances), "policy": {"kind": "fixed"}}
    shape = {"kind": shape_kind}   # (SGLang's tree: its budget is depth + 1 at top_k 1)
    top_k, depth = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    if shape["kind"] == "dynamic_tree":
        eagle = framework == "sglang" or kind == "eagle3"
        shape = {"kind": "dynamic_tree", "builder": "eagle2" if eagle else draw(st.sampled_from(["eagle2", "top_n"])),
                 "top_k": top_k, "depth": depth,
                 "budget": draw(st.integers(depth + 1, max(depth + 1, min(16, 1 + top_k + (depth - 1) * top_k ** 2)))),
                 "per_context": False if eagle else draw(st.booleans())}
    elif shape["kind"] == "tree":
        shape = {"kind": "tree", "builder": draw(st.sampled_from(["kary", "medusa", "sequoia"])),
                 "k": draw(st.integers(1, 3)), "depth": depth, "budget": draw(st.integers(depth, 24))}
    elif shape["kind"] == "multidraft":
        shape = {"kind": "multidraft", "n": draw(st.integers(2, 3)),
                 "scheme": draw(st.sampled_from(["rrs", "rrs_wor", "kseq", "naive", "optimal", "optimal_wor"]))}
    tree = shape["kind"] != "chain"
    models = {"draft_model": "draft", "layer_skip": "skip", "ngram": "ngram"}
    if kind == "ngram" and target == "qwen2.5-coder-0.5b" and framework != "trtllm" and \
            (framework == "sglang" or draw(st.booleans())):   # (TensorRT-LLM's NGram pool is not modelled on sessions)
        acceptance = draw(sessions_acceptances)
    elif kind in models and target == "qwen2.5-coder-1.5b" and framework == "vllm" and draw(st.integers(0, 3)) == 3:
        # (a quarter: a trace's n-gram walks cost a second or two a run)
        acceptance = {"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": models[kind],
                      "mode": "greedy" if tree or kind == "ngram" else draw(st.sampled_from(["greedy", "sample"]))}
    elif tree:   # (a pair's exact tree acceptance sums over the draft prefixes: a small vocabulary)
        acceptance = draw(acceptances.filter(lambda a: a["kind"] in ("ranked", "pair", "contexts")))
        if acceptance["kind"] == "pair":
            acceptance["vocab"] = min(acceptance["vocab"], 8)
    else:
        acceptance = draw(acceptances.filter(lambda a: a["kind"] not in ("sessions", "trace")))
    policy = {"kind": "fixed"}
    # (a cascade runs its stages as one chain, a semi-autoregressive head one fixed chain)
    adaptive = shape["kind"] == "chain" and kind != "cascade" and drafter.get("tokens_per_pass", 1) == 1 and \
        "passes" not in drafter
    if adaptive and draw(st.integers(0, 2)) == 2:   # the engine's own draft-length rule
        policy = _engine_policy(drafter, framework)
    elif adaptive and draw(st.booleans()):
        policy = draw(policies.filter(lambda p: p["kind"] not in ENGINE_POLICY_KINDS))
        if policy["kind"] == "specreason":   # (it reads step-level acceptance)
            acceptance = {"kind": "step_level", "accept": draw(st.floats(0, 1))}
    return {"speculation": shape, "acceptance": acceptance, "policy": policy}


@st.composite
def runnable(draw, focus: str) -> dict:
    """A scenario meant to run, of `focus` (RUNNABLE_FOCI): a drafter kind on a chain, a shape other than a chain
    with a drafter and engine that draft it (TREE_DRAFTERS), or a rule family (FOCUSED_RULES: they set a model and
    drafter of their own; ADDED_RULES: over a chain of any drafter); each with a target it suits, its acceptance and
    policy, a measured GPU, a layout that fits, a release of the framework, a small workload (a run costs little),
    and now and then a context rule or an engine's draft-length policy over it."""
    shape_kind = focus if focus in TREE_DRAFTERS else "chain"
    if shape_kind != "chain":
        framework, kind = draw(st.sampled_from(TREE_DRAFTERS[shape_kind]))
    else:
        kind = focus if focus in DRAFTER_KINDS else FOCUSED_RULES[focus][0] if focus in FOCUSED_RULES else \
            draw(st.sampled_from(ADDED_RULES[focus][0]))
        framework = draw(st.sampled_from(FRAMEWORKS_OF.get(kind, ["vllm", "sglang", "trtllm"])))
    drafter, target = draw(runnable_drafters(kind, framework, shape_kind, inline_head=focus == "eagle3_head"))
    spec = {"drafter": drafter, **_runnable_speculation(draw, drafter, target, framework, shape_kind)}
    cluster = {"hardware": draw(st.sampled_from(MEASURED_GPUS)), "model": target,
               "dtype": draw(st.sampled_from(["bf16", "bf16", "fp16"])),
               "latency": {"source": draw(st.sampled_from(["auto", "roofline"])), "framework": framework},
               "kv_cache": draw(st.sampled_from([{}, {}, {"prefix_caching": True}])),
               "replicas": draw(st.integers(1, 2)),
               "parallelism": {"tp": draw(st.sampled_from([1, 1, 2])), "pp": 1, "ep": 1}}
    if draw(st.integers(0, 2)):
        # (no Medusa-style heads in vLLM from 0.33.0)
        medusa = drafter.get("style", "autoregressive") != "autoregressive"
        schedule = spec.get("policy") == ENGINE_POLICIES["trtllm"]
        versions = [v for v in RELEASES[framework][-3:] if not (v == "0.33.0" and medusa or v == "1.2.1" and schedule)]
        cluster["engine"] = {"framework": framework, **({"version": draw(st.sampled_from(versions))}
                                                       if draw(st.integers(0, 3)) else {})}
    cluster["router"] = draw(st.sampled_from(["round_robin", "least_outstanding", "join_shortest_queue"]))
    # (SGLang turns mixed chunked prefill off with speculation, or decodes without drafts in mixed steps from 0.5.19:
    # profiles.engine_time.support)
    mixed = framework != "sglang" or drafter["kind"] == "none"
    schedulers_for = ["vllm", "sarathi", "vllm_v1"] if mixed else ["vllm"]
    arrival = draw(arrivals)
    data = {"name": "fuzz", "seed": draw(st.integers(0, 2**16)),
            "workload": {"arrival": arrival,
                         "prompt_tokens": {"kind": "uniform", "low": draw(st.integers(1, 128)), "high": 256},
                         "output_tokens": {"kind": "uniform", "low": 1, "high": draw(st.integers(1, 24))},
                         "num_requests": draw(st.integers(1, 6))},
            "cluster": cluster, **spec,
            "scheduler": {"kind": draw(st.sampled_from(schedulers_for)), "max_batch_size": 64,
                          "max_batched_tokens": 2048, "chunk_tokens": 512, "block_size": 16},
            "slo": {"ttft_s": 1.0, "tpot_s": 0.05}, "outputs": {"plots": False}}
    if focus in FOCUSED_RULES and FOCUSED_RULES[focus][1]:
        FOCUSED_RULES[focus][1](draw, data)
    added = focus if focus in ADDED_RULES else draw(st.sampled_from([None, None, None, *sorted(ADDED_RULES)]))
    if added:
        ADDED_RULES[added][1](draw, data)
    return data


def _plain(data: dict, model, framework: str, version: str | None) -> dict:
    """`data` decoding plainly on `model` with `framework` at `version` (None: the tables' own); its cluster."""
    for key in ("drafter", "speculation", "acceptance", "policy"):
        data.pop(key, None)
    cluster = data["cluster"]
    cluster.update(model=model, latency={**cluster["latency"], "framework": framework},
                   engine={"framework": framework, **({"version": version} if version else {})})
    return cluster


def _short_context(draw, data):   # a context shorter than the prompts (workload.context_overflow)
    data["cluster"]["max_model_len"] = draw(st.sampled_from([256, 512]))
    data["workload"]["context_overflow"] = draw(st.sampled_from(["drop", "truncate"]))


def _long_context(draw, data):   # a context past the model's, served with allow_long_context (context_length)
    cluster = data["cluster"]
    cluster["engine"] = {**cluster.get("engine", {}), "framework": cluster["latency"]["framework"],
                         "allow_long_context": True}
    cluster["max_model_len"] = load_model(cluster["model"]).max_position_embeddings + 256


def _queue_policy(draw, data):   # SGLang's queue policy (queue_defaults)
    cluster = _plain(data, draw(st.sampled_from(SMALL_MODELS)), "sglang", draw(st.sampled_from([None, "0.5.23"])))
    cluster["engine"]["schedule_policy"] = draw(st.sampled_from(["fcfs", "lpm", "lof"]))   # (random: not modelled)
    data["scheduler"]["kind"] = "vllm"


def _draft_length_policy(draw, data):   # the engines' own draft-length rules, on a chain
    framework = data["cluster"]["latency"]["framework"]
    drafter = data.get("drafter", {"kind": "none"})
    if drafter["kind"] in ("none", "suffix", "cascade") or data.get("speculation", {}).get("kind") != "chain" \
            or drafter.get("tokens_per_pass", 1) > 1 or "passes" in drafter:
        return
    data["policy"] = _engine_policy(drafter, framework)


def _other_vocabulary(draw, data):   # a draft model of another vocabulary (draft_vocabulary), vLLM from 0.25.0
    _plain(data, "llama-3-8b", "vllm", draw(st.sampled_from(["0.25.0", "0.33.0"])))
    data.update(drafter={"kind": "draft_model", "model": "smollm2-135m", "gamma": draw(st.integers(1, 4)),
                         "heterogeneous_vocab": True},
                speculation={"kind": "chain"}, acceptance={"kind": "constant", "alpha": draw(st.floats(0, 1))})


def _ngram_window(draw, data):   # n-gram lookup windows, policy proposed (vLLM's ragged verification)
    _plain(data, "qwen2.5-coder-1.5b", "vllm", draw(st.sampled_from([None, "0.15.0", "0.33.0"])))
    lo = draw(st.integers(1, 4))
    data.update(drafter={"kind": "ngram", "gamma": draw(st.integers(1, 6)), "prompt_lookup_min": lo,
                         "prompt_lookup_max": lo + draw(st.integers(0, 3))},
                speculation={"kind": "chain"}, policy={"kind": "fixed"},
                acceptance={"kind": "constant", "alpha": draw(st.floats(0, 1))})
    if draw(st.integers(0, 3)) == 1:   # (proposed reads the trace's proposals; its n-gram walks cost seconds a run)
        data.update(policy={"kind": "proposed"},
                    acceptance={"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "ngram",
                                "mode": "greedy"})


def _mxfp4(draw, data):   # the MXFP4 MoE kernel of a gpt-oss (mxfp4_moe)
    cluster = _plain(data, "gpt-oss-20b", "vllm", draw(st.sampled_from(["0.11.0", "0.15.0", "0.24.0"])))
    cluster.update(hardware=draw(st.sampled_from(["h100-sxm", "h200", "b200"])), dtype="mxfp4")


def _sliding_window(draw, data):   # a config.json with sliding windows (sliding_window_served)
    _plain(data, WINDOWED[0], "vllm", draw(st.sampled_from([None, "0.15.0", "0.33.0"])))
    data["cluster"].pop("dtype", None)


def _engine_policy(drafter: dict, framework: str) -> dict:
    """The engine's own draft-length rule for `drafter` (SGLang's default adaptive slots reach 7 draft steps:
    drafter.gamma raised to 7)."""
    if framework == "sglang":
        drafter["gamma"] = max(drafter["gamma"], 7)
    return copy.deepcopy(ENGINE_POLICIES[framework])


# rule families drawn into a runnable scenario, each setting what its rule needs to run: name -> (the drafter kind
# it drafts with, what it sets; eagle3_head: an EAGLE-3 head of another vocabulary size or embedding of its own,
# profiles.engine_time.eagle3_embedding), and those added over a chain of any of the drafter kinds they list
FOCUSED_RULES = {"queue_policy": ("none", _queue_policy), "mxfp4": ("none", _mxfp4),
                 "sliding_window": ("none", _sliding_window), "other_vocabulary": ("draft_model", _other_vocabulary),
                 "ngram_window": ("ngram", _ngram_window),
                 "eagle3_head": ("eagle3", None)}   # (runnable_drafters' inline_head)
ADAPTIVE_KINDS = ["draft_model", "head", "layer_skip", "ngram", "sparse_kv", "eagle3", "mtp"]
ADDED_RULES = {"short_context": (DRAFTER_KINDS, _short_context), "long_context": (DRAFTER_KINDS, _long_context),
               "draft_length_policy": (ADAPTIVE_KINDS, _draft_length_policy)}
# the foci of the runnable draws, each its own share of the CI set (test_runnable_scenarios_run): hypothesis draws
# a derandomized set in clusters around a few first draws (its mutations keep the early choices), so a focus drawn
# from one list of 15 (mtp, sparse_kv) went undrawn in 150 examples; per focus, every one is drawn
RUNNABLE_FOCI = [*DRAFTER_KINDS, *TREE_DRAFTERS, *FOCUSED_RULES, *ADDED_RULES]


@st.composite
def scenarios(draw, junk: bool = True):
    """A scenario; with `junk`, a quarter of them has one field replaced by junk (without, the draws up to
    that point are the same: tests/test_determinism_fuzz.py draws mostly valid scenarios from here). Mostly
    refused (the rules of the combinations drawn at random); combinations meant to run: `runnable`."""
    arrival = draw(arrivals)
    spec = draw(speculation())
    data = {"name": "fuzz", "seed": draw(st.integers(0, 2**16)),
            "workload": {"arrival": arrival, "prompt_tokens": draw(lengths), "output_tokens": draw(lengths),
                         "num_requests": draw(st.integers(1, 40)),
                         **(draw(prefix_workloads) if arrival["process"] != "closed_loop" else {}),
                         "context_overflow": draw(st.sampled_from(["error", "drop", "truncate"]))},
            "cluster": draw(clusters(spec)), **spec, "scheduler": draw(schedulers),
            "slo": {"ttft_s": draw(st.floats(0.01, 5)), "tpot_s": draw(st.floats(0.001, 0.2))},
            "outputs": {"plots": False}}
    if data["cluster"].get("engine", {}).get("version") and draw(st.integers(0, 2)):
        del data["scheduler"]["kind"]   # (the release's own: profiles.engine_time.batch_defaults.engine_scheduler_kind)
    if draw(st.integers(0, 11)) == 11:   # prompts past the contexts of 4K-32K models (derived contexts, long contexts)
        low = draw(st.sampled_from([3000, 7000, 30000]))
        data["workload"].update(prompt_tokens={"kind": "uniform", "low": low, "high": low + 4000},
                                num_requests=min(data["workload"]["num_requests"], 8))
    plain = data["drafter"]["kind"] == "none"
    if draw(st.integers(0, 3 if plain else 15)) == 0:  # SpecEE/CALM-style early exits (modelled for plain decoding)
        layers = sorted(draw(st.lists(st.integers(1, 40), min_size=1, max_size=3, unique=True)))
        data["early_exit"] = {"exit_layers": layers,
                              "exit_probs": draw(st.lists(st.floats(0, 0.5), min_size=len(layers), max_size=len(layers)))}
    layout = data["cluster"]["kv_cache"].get("layout", {}).get("kind")
    if layout == "shadowkv" and not plain and draw(st.integers(0, 3)):   # ShadowKV prices plain decoding
        for key in ("drafter", "speculation", "acceptance", "policy"):
            data.pop(key, None)
    if junk and draw(st.integers(0, 3)) == 0:  # one field replaced by junk
        # in a copy: st.just({...}) hands every example the same dict, and junk written into it would leak into
        # later examples (hypothesis then sees the same choices draw differently: FlakyStrategyDefinition)
        data = copy.deepcopy(data)
        leaves = sorted(_leaves(data))
        path = leaves[draw(st.integers(0, len(leaves) - 1).map(lambda i: (i * 7919) % len(leaves)))]
        node = data
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = draw(JUNK)
    if draw(st.integers(0, 5)) == 5:   # one of the newest rules in a focused combination (drawn last: the CI set's
        # examples keep their earlier draws; junk in a field it replaces is replaced)
        data = draw(newest_rules(data))
    return data


NEW_RULE_TAGS = {"mxfp4": "rule: MXFP4 MoE kernel", "mtp": "rule: MTP draft length / LM head",
                 "eagle3": "rule: EAGLE-3 head of another vocabulary/width", "ngram": "rule: n-gram lookup window",
                 "vocab": "rule: draft model of another vocabulary"}

# what the draws that run must span (checked after a run of 150 or more; the table prints them all)
COVERED = [*(f"drafter: {kind}" for kind in DRAFTER_KINDS),
           *(f"shape: {kind}" for kind in ("chain", "tree", "dynamic_tree", "multidraft")),
           *(f"scheduler: {kind}" for kind in ("vllm", "sarathi", "vllm_v1", "the release default")),
           *(f"framework: {name}" for name in ("vllm", "sglang", "trtllm")),
           "rule: engine release", "rule: allow_long_context", "rule: SGLang queue policy", "rule: max_model_len",
           "rule: config.json model (sliding window, YaRN, MTP modules)", "rule: heterogeneous_vocab",
           "rule: engine draft-length policy", *NEW_RULE_TAGS.values()]


def _kinds(data) -> list[str]:
    """What a drawn scenario exercises, for the ran/refused table (pytest -s -n 0): its drafter kind, speculation
    shape, scheduler, engine framework and the rule families the module docstring lists (junk tolerated)."""
    def get(node, *path):
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node
    drafter = get(data, "drafter") if isinstance(get(data, "drafter"), dict) else {"kind": "none"}
    kind = str(drafter.get("kind", "none"))
    tags = [f"drafter: {kind}", f"framework: {get(data, 'cluster', 'latency', 'framework')}",
            f"scheduler: {get(data, 'scheduler', 'kind') or 'the release default'}"]
    if kind != "none":
        tags.append(f"shape: {get(data, 'speculation', 'kind') or 'chain'}")
    engine, model = get(data, "cluster", "engine") or {}, get(data, "cluster", "model")
    policy = get(data, "policy", "kind")
    rules = {"rule: engine release": isinstance(engine, dict) and "version" in engine,
             "rule: allow_long_context": isinstance(engine, dict) and "allow_long_context" in engine,
             "rule: SGLang queue policy": isinstance(engine, dict) and "schedule_policy" in engine,
             "rule: max_model_len": get(data, "cluster", "max_model_len") is not None,
             "rule: config.json model (sliding window, YaRN, MTP modules)": isinstance(model, dict) or
             str(model).endswith(".json"),
             "rule: heterogeneous_vocab": get(drafter, "heterogeneous_vocab") is True,
             "rule: engine draft-length policy": policy in (*ENGINE_POLICY_KINDS, "proposed"),
             NEW_RULE_TAGS["mxfp4"]: get(data, "cluster", "dtype") == "mxfp4",
             NEW_RULE_TAGS["mtp"]: kind == "mtp" and isinstance(model, dict),
             NEW_RULE_TAGS["eagle3"]: kind == "eagle3" and isinstance(drafter.get("head"), dict),
             NEW_RULE_TAGS["ngram"]: kind == "ngram" and any(k.startswith("prompt_lookup") for k in drafter),
             NEW_RULE_TAGS["vocab"]: kind == "draft_model" and drafter.get("model") == VOCAB_DRAFTS[0]}
    return tags + [tag for tag, hit in rules.items() if hit]

RUNNABLE = settings(FUZZ, max_examples=max(1, EXAMPLES // 2 // len(RUNNABLE_FOCI)))   # (per focus: 3 in CI)


def _leaves(node, prefix=()):
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _leaves(value, (*prefix, key))
    elif prefix and not isinstance(node, list):
        yield prefix


def _check_invariants(out: Path) -> None:
    requests = pd.read_parquet(out / "requests.parquet")
    steps = pd.read_parquet(out / "steps.parquet")
    summary = yaml.safe_load((out / "summary.json").read_text())
    assert summary["requests_arrived"] == (summary["requests_finished"] + summary["requests_dropped"]
                                           + summary["requests_unfinished"])
    done = requests["finish_s"].notna()
    assert (requests.loc[done, "emitted_tokens"] == requests.loc[done, "output_tokens"]).all()
    assert steps["emitted_tokens"].sum() == requests["emitted_tokens"].sum()       # token conservation
    assert (steps["kv_blocks_used"] <= steps["kv_blocks_total"]).all()
    assert (steps["duration_s"] > 0).all()
    for _, one in steps.groupby("replica"):                                       # one step at a time
        assert (one["start_s"].to_numpy()[1:] >= one["end_s"].to_numpy()[:-1] - 1e-9).all()


def _known(**sections) -> dict:
    """A scenario that once crashed (issue: reliability and everyday use), kept as an explicit example."""
    data = {"name": "known", "seed": 1, "outputs": {"plots": False},
            "workload": {"arrival": {"process": "poisson", "qps": 8.0}, "num_requests": 30,
                         "prompt_tokens": {"kind": "fixed", "value": 100}, "output_tokens": {"kind": "fixed", "value": 20}},
            "cluster": {"hardware": "h100-sxm", "model": "llama-3-8b"}}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) and key in data else value
    return data


@FUZZ
@given(data=scenarios())
@example(data=_known(cluster={"hardware": "a100-80gb", "dtype": "fp8"}))          # KeyError in the MFU
@example(data=_known(cluster={"hardware": "a100-80gb", "dtype": "fp8", "disaggregation": {
    "decode": {"hardware": "h100-sxm"}}}))
@example(data=_known(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},   # broadcast error
                     policy={"kind": "smartspec", "max_gamma": 2}))
@example(data=_known(workload={"num_requests": 10**9}))                                # MemoryError
@example(data=_known(cluster={"model": "llama-68m", "disaggregation": {                 # draft KV over pools of
    "prefill": {"parallelism": {"tp": 1}}, "decode": {"parallelism": {"tp": 4}}}},      # different TP (found
                     drafter={"kind": "head", "style": "autoregressive", "gamma": 1}))  # by this test)
@example(data=_known(scheduler={"kind": "sarathi", "chunk_tokens": 4096, "max_batched_tokens": 512}))
@example(data=_known(cluster={"model": "llama-2-13b", "disaggregation": {"decode": {"parallelism": {"tp": 4}}}},
                     drafter={"kind": "cascade", "stages": [{"tokens": 2, "model": "qwama-0.5b"}]}))  # 14-head draft KV
@example(data=_known(cluster={"model": "jamba-1.5-mini", "parallelism": {"tp": 2}},      # a 1-layer head of a hybrid
                     drafter={"kind": "head", "style": "autoregressive", "gamma": 1, "layers": 1}))  # MoE (its first
# layer is dense): ValueError "ffn_types lists moe layers exactly when num_experts > 0" (found by a 2,500-example run)
@example(data=_known(cluster={"hardware": "h200", "model": _hf("gpt-oss-20b", layer_types=["sliding_attention"] * 24),
                              "parallelism": {"tp": 2}},   # a layer-skipping draft of a gpt-oss whose layer_types are
                     drafter={"kind": "layer_skip", "gamma": 2, "layers_fraction": 0.5}))   # all sliding: ValueError
# "gpt_oss_sliding_window is (128, 24)" in its 12-layer prefix (found by a 3,000-example run, session 25)
def test_every_scenario_runs_or_fails_with_one_clean_line(data):
    _runs_or_fails_with_one_clean_line(data)


@pytest.mark.parametrize("focus", RUNNABLE_FOCI)
def test_runnable_scenarios_run(focus):
    """The draws of `focus` meant to run hold the same contract, and one at least runs (its invariants checked)."""
    ran = collections.Counter()

    @RUNNABLE
    @given(data=runnable(focus))
    def check(data):
        ran[_runs_or_fails_with_one_clean_line(data)] += 1

    check()
    assert ran[True], f"no draw of focus {focus!r} ran ({ran[False]} refused): its run invariants went unchecked"


def _runs_or_fails_with_one_clean_line(data) -> bool:
    """Scenario `data` runs with the run invariants intact (True) or fails with one line naming a field, exit 2,
    nothing written (False); counted in OUTCOMES, REFUSED_FIELDS and KINDS."""
    with tempfile.TemporaryDirectory() as tmp:
        code, out, err = run_cli(data, Path(tmp))
        lines = [line for line in err.getvalue().splitlines() if not line.startswith("draftsim: warning:")]
        OUTCOMES["tried"] += 1
        if code == 0:
            assert not lines, lines
            _check_invariants(out)
            OUTCOMES["ran, invariants held"] += 1
            KINDS.update((kind, "ran") for kind in _kinds(data))
            return True
        assert code == 2, (code, err.getvalue())
        assert len(lines) == 1 and lines[0].startswith("draftsim: error: "), err.getvalue()
        assert ":" in lines[0][len("draftsim: error: "):]   # names a field
        assert not out.exists()
        OUTCOMES["refused with one line, exit 2"] += 1
        KINDS.update((kind, "refused") for kind in _kinds(data))
        REFUSED_FIELDS[lines[0][len("draftsim: error: "):].split(":")[0]] += 1
        return False


def run_cli(data: dict, folder: Path) -> tuple[int, Path, io.StringIO]:
    """`draftsim run --quiet` of scenario `data`, written to `folder`: (exit code, its --out folder, what it wrote
    to stderr)."""
    path = folder / "fuzz.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = folder / "out"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", str(path), "--out", str(out), "--quiet"])
    return code, out, err


@pytest.fixture(scope="module", autouse=True)
def _report_outcomes():
    yield
    if OUTCOMES:
        print("\nfuzzed scenarios: " + ", ".join(f"{k} {v}" for k, v in OUTCOMES.items()) + ", crashes 0")
        print("most refused fields: " + ", ".join(f"{k} {v}" for k, v in REFUSED_FIELDS.most_common(12)))
        print(f"{'kind':<62} {'ran':>5} {'refused':>7}")
        for kind in sorted({kind for kind, _ in KINDS}):
            print(f"{kind:<62} {KINDS[kind, 'ran']:>5} {KINDS[kind, 'refused']:>7}")
    # (the CI set or a longer one, in one process: under pytest-xdist each worker runs a part)
    if OUTCOMES["tried"] >= 150 and "PYTEST_XDIST_WORKER" not in os.environ:
        never_ran = [kind for kind in COVERED if not KINDS[kind, "ran"]]
        assert not never_ran, f"no scenario of these ran, so their run invariants went unchecked: {never_ran}"
