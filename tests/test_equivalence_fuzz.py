"""Equivalence fuzzing across feature combinations: a seeded generator (`draw_scenario`) draws small scenarios that
combine the features whose bulk, step and worker paths differ most — SGLang's admission reserve and its retractions,
SGLang's radix cache with shared prompts (a prompt cached once its batch has run, a batch later under the overlap
loop: async_scheduling both ways), vLLM V1's prefix-cache hit less its last block for EAGLE-style drafters, a draft
model's token slots in vLLM's budget, prefix caching with host memory and swap, disaggregated pools (on one GPU or
two), a context beyond the engine's (allow_long_context), chunked prefill, trees and chains, suffix and n-gram
drafters on real sessions, the engines' draft-length rules, TensorRT-LLM's capacity policies, MoE expert
parallelism, vLLM V0's multi-step scheduling, NanoFlow, context_overflow, shared prefixes, multi-turn sessions and
request traces, under a KV cache that runs out now and then — and checks (`check_draw`) that

- a rerun gives the same outputs (requests and steps to the bit, the summary to the character);
- `simulation.step_mode: step` gives the same outputs as bulk mode, but for the README's one exception (the
  summary's `latency_source.op_kinds.*.ops` / `.approximate` counts, larger in bulk mode, never smaller);
- `simulation.workers: 2` gives the same outputs as one process where the replicas can be split (round robin,
  open loop, colocated), and a Dask cluster (a LocalCluster of 2 worker processes, started once for the module:
  a `local-dask` executor starts one per run) gives them too for the first DASK_DRAWS draws it takes (at
  `load_sync_s: 0`, exact, for a router that reads loads);
- the outputs keep the run's invariants (`check_invariants`): every request once, admitted after it arrived and
  before its first token, the tokens out equal to those asked for unless dropped with a reason, the steps' tokens
  the requests', every step's KV blocks within 0..capacity, each replica's steps one after another;
- no draw runs past DRAW_LIMIT_S (a hang is a finding too).

Where `tests/test_determinism_fuzz.py` draws from the whole schema with hypothesis (most draws are refused at
build), this generator builds mostly valid combinations on purpose (a refused draw counts as `refused`; a
deployment whose memory fraction leaves too little for its weights is given more, `fit_memory`). Each draw holds
at most 40 requests. CI runs DRAWS draws from SEED (21-28 s on the 2-core VM, 2026-11-29); a wide hunt (not in CI;
2026-11-29: 6,400 draws, and 5,000 more for the 576 that a Dask cluster takes; after session 24's SGLang cache timing,
per-pool contexts and allow_long_context were added to the draw: 4,000 from seeds 20000 and 40000, 2,100 of those
features alone, 460 of them with six times the requests, 220 on a Dask cluster, none differing)::

    DRAFTSIM_EQFUZZ_DRAWS=3000 DRAFTSIM_EQFUZZ_SEED=1000 DRAFTSIM_EQFUZZ_KEEP_GOING=1 \\
        python -m pytest -q -s -n 0 -p no:cacheprovider tests/test_equivalence_fuzz.py

prints each failing draw's scenario as YAML and goes on. A draw that once failed stays as a regression test
where the code it found wrong is tested (tests/simulator/cluster/test_disagg.py: draw 1412 and a hang).
"""
from __future__ import annotations

import collections
import contextlib
import copy
import json
import os
import random
import signal
import time
from unittest import mock

import numpy as np
import pytest
import yaml

import simulator
from simulator.core import parallel
from simulator.errors import ScenarioError

DRAWS = int(os.environ.get("DRAFTSIM_EQFUZZ_DRAWS", "60"))
# (the first seed of 60 draws that cover each feature: test_the_ci_draws_cover_each_feature)
SEED = int(os.environ.get("DRAFTSIM_EQFUZZ_SEED", "5580"))
KEEP_GOING = os.environ.get("DRAFTSIM_EQFUZZ_KEEP_GOING") == "1"
DASK_DRAWS = int(os.environ.get("DRAFTSIM_EQFUZZ_DASK_DRAWS", "3"))   # draws run on a Dask cluster too
DRAW_LIMIT_S = float(os.environ.get("DRAFTSIM_EQFUZZ_DRAW_LIMIT_S", "60"))   # a draw's checks take ~0.2-3 s
CHUNKS = 4   # (the draws in a few test items: a failing chunk leaves the others running)
OUTCOMES: collections.Counter = collections.Counter()
FEATURES: collections.Counter = collections.Counter()
REFUSED: collections.Counter = collections.Counter()

DENSE = ["llama-3-8b", "llama-3.1-8b", "llama-3.2-1b", "qwen2.5-coder-0.5b", "qwen3-8b", "llama-2-7b"]
HARDWARE = ["h100-sxm", "h100-sxm", "h200", "a100-80gb", "b200", "l40s"]
# releases to draw, by drafter kind (the earliest that runs each method; the engines' gates refuse the others:
# profiles.engine_time.support)
VLLM = {None: ["0.8.5", "0.9.0", "0.10.1", "0.11.0", "0.16.0", "0.17.0", "0.24.0", "0.28.0", "0.33.0"],
        "draft_model": ["0.16.0", "0.17.0", "0.24.0", "0.28.0", "0.33.0"],
        "layer_skip": ["0.16.0", "0.17.0", "0.24.0", "0.28.0", "0.33.0"],
        "eagle3": ["0.9.0", "0.11.0", "0.17.0", "0.28.0", "0.33.0"], "mtp": ["0.9.0", "0.11.0", "0.28.0"],
        "suffix": ["0.12.0", "0.24.0", "0.33.0"]}
SGLANG = {None: ["0.4.0", "0.4.5", "0.5.3", "0.5.9", "0.5.23"], "draft_model": ["0.5.3", "0.5.9", "0.5.23"],
          "ngram": ["0.5.3", "0.5.9", "0.5.23"], "head": ["0.4.5", "0.5.9", "0.5.23"],
          "eagle3": ["0.4.5", "0.5.9", "0.5.23"], "mtp": ["0.4.5", "0.5.23"]}
TRTLLM = ["0.21.0", "1.0.0", "1.2.1", "1.3.0rc27", "1.4.0rc1"]
TRACES = {"example_trace.csv": ("draftsim", 3.0), "azure_sample.csv": ("azure", 6.0),
          "burstgpt_sample.csv": ("burstgpt", 8.0), "mooncake_sample.jsonl": ("mooncake", 12.0)}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- the generator -------------------------------------------------------------------------------------------

def _extra(seed: int) -> random.Random:
    """The stream of the features added to the generator after its first draws (SGLang's async_scheduling and
    shared prompts, pools on two GPUs, allow_long_context): a stream apart, so that each draw keeps every choice it
    made before they were added."""
    return random.Random(f"eqfuzz-extra-{seed}")


def _length(rng: random.Random, low: int, high: int) -> dict:
    kind = rng.choice(["fixed", "uniform", "uniform", "lognormal"])
    if kind == "fixed":
        return {"kind": "fixed", "value": rng.randint(low, high)}
    if kind == "uniform":
        a = rng.randint(low, high)
        return {"kind": "uniform", "low": a, "high": rng.randint(a, high)}
    return {"kind": "lognormal", "median": float(rng.randint(max(low, 2), high)),
            "sigma": round(rng.uniform(0.1, 1.0), 3), "max": high}


def _workload(rng: random.Random, f: list[str]) -> dict:
    """Arrivals (open loop, closed loop or a window of a shipped trace) and lengths; at most 40 requests."""
    process = rng.choice(["poisson", "poisson", "poisson", "gamma", "closed_loop", "trace"])
    if process == "trace":
        name = rng.choice(sorted(TRACES))
        fmt, end_s = TRACES[name]
        f.append(f"trace:{fmt}")
        return {"arrival": {"process": "trace", "trace_csv": os.path.join(ROOT, "scenarios", "traces", name),
                            "format": fmt, "end_s": end_s, "speedup": rng.choice([1.0, 4.0, 20.0])}}
    if process == "closed_loop":
        arrival = {"process": "closed_loop", "concurrency": rng.randint(1, 8)}
    elif process == "gamma":
        arrival = {"process": "gamma", "qps": round(rng.uniform(2, 80), 3), "cv": round(rng.uniform(0.3, 3), 3)}
    else:
        arrival = {"process": "poisson", "qps": round(rng.uniform(2, 80), 3)}
    f.append(f"arrival:{process}")
    return {"arrival": arrival, "num_requests": rng.randint(2, 40),
            "prompt_tokens": _length(rng, 1, rng.choice([256, 1024, 3000])),
            "output_tokens": _length(rng, 1, rng.choice([16, 64, 200]))}


def _drafter(rng: random.Random, data: dict, f: list[str]) -> str | None:
    """The drafter, its shape and acceptance (the target changes where the drafter needs its own)."""
    cluster = data["cluster"]
    kind = rng.choice([None, None, None, "draft_model", "draft_model", "eagle3", "eagle3", "head", "ngram", "ngram",
                       "suffix", "layer_skip"] + (["mtp"] if rng.random() < 0.3 else []))
    f.append(f"drafter:{kind}")
    if kind is None:
        return None
    gamma = rng.randint(1, 5)
    acceptance = {"kind": "constant", "alpha": round(rng.uniform(0.3, 0.95), 3)}
    if kind == "draft_model":
        from models import get_model
        size = get_model(cluster["model"]).param_count()
        drafts = [m for m in ("llama-68m", "qwama-0.5b", "llama-3.2-1b") if get_model(m).param_count() <= size]
        drafter = {"kind": "draft_model", "model": rng.choice(drafts), "gamma": gamma}
    elif kind == "eagle3":
        cluster["model"] = rng.choice(["llama-3.1-8b", "qwen3-8b"])
        drafter = {"kind": "eagle3", "gamma": gamma}
    elif kind == "head":
        drafter = {"kind": "head", "style": rng.choice(["autoregressive", "autoregressive", "parallel"]),
                   "gamma": gamma}
    elif kind == "ngram":
        drafter = {"kind": "ngram", "gamma": gamma}
        if rng.random() < 0.5:   # n-gram lookups on real multi-turn sessions
            cluster["model"] = "qwen2.5-coder-0.5b"
            acceptance = {"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b",
                          "workloads": [rng.choice(["code_edit", "agentic"])]}
    elif kind == "suffix":
        cluster["model"] = "qwen2.5-coder-0.5b"
        drafter = {"kind": "suffix"}
        acceptance = {"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b",
                      "workloads": [rng.choice(["code_edit", "agentic"])]}
    elif kind == "mtp":
        cluster.update(model="deepseek-v3", hardware="h200", parallelism={"tp": 8, "ep": 8}, dtype="fp8")
        drafter = {"kind": "mtp", "gamma": rng.randint(1, 3)}
    else:
        drafter = {"kind": "layer_skip", "gamma": gamma, "layers_fraction": 0.5}
    data["drafter"] = drafter
    if acceptance["kind"] == "constant" and rng.random() < 0.35:
        if kind in ("eagle3", "mtp") or drafter.get("style") == "autoregressive":
            data["speculation"] = {"kind": "dynamic_tree", "builder": "eagle2", "top_k": rng.randint(1, 4),
                                   "depth": rng.randint(1, 4), "budget": rng.randint(2, 16), "per_context": False}
        else:
            data["speculation"] = {"kind": "tree", "builder": rng.choice(["kary", "medusa"]), "k": rng.randint(1, 3),
                                   "depth": rng.randint(1, 3), "budget": rng.randint(2, 12)}
        acceptance = {"kind": "ranked", "accept_probs": rng.choice([[0.6], [0.5, 0.2], [0.7, 0.2, 0.05]])}
        f.append(f"shape:{data['speculation']['kind']}")
    elif acceptance["kind"] == "constant" and rng.random() < 0.3:
        acceptance = {"kind": "positional", "alphas": [round(rng.uniform(0.2, 0.95), 3) for _ in range(3)]}
    data["acceptance"] = acceptance
    return kind


def _engine(rng: random.Random, data: dict, drafter: str | None, f: list[str]) -> str | None:
    """The serving engine and its batching scheduler: draftsim's own schedulers, a named vLLM (V0/V1), SGLang
    (its admission reserve) or TensorRT-LLM (its capacity policies); the framework, None for draftsim's own."""
    cluster = data["cluster"]
    choices = [None, None, "vllm", "vllm", "trtllm"]
    if drafter in SGLANG:
        choices += ["sglang", "sglang", "sglang"]
    if drafter not in VLLM:
        choices = [c for c in choices if c != "vllm"]
    if drafter in ("suffix", "mtp"):
        choices = [c for c in choices if c != "trtllm"]
    framework = rng.choice(choices)
    f.append(f"engine:{framework}")
    if framework == "sglang" and drafter == "head":   # (SGLang has no Medusa-style heads)
        data["drafter"]["style"] = "autoregressive"
    if framework is None:
        kind = rng.choice(["vllm", "sarathi", "vllm_v1", "trtllm"])
        sched = {"kind": kind, "max_batch_size": rng.choice([4, 16, 64, 256]), "block_size": rng.choice([16, 16, 32])}
        sched["max_batched_tokens"] = 8192 if kind == "trtllm" else \
            max(sched["max_batch_size"], rng.choice([256, 512, 2048, 8192]))
        if kind == "sarathi":
            sched["chunk_tokens"] = min(rng.choice([64, 256, 512]), sched["max_batched_tokens"])
        data["scheduler"] = sched
        f.append(f"scheduler:{kind}")
        return None
    version = rng.choice({"vllm": VLLM, "sglang": SGLANG}[framework][drafter] if framework != "trtllm" else TRTLLM)
    engine = {"framework": framework, "version": version}
    if rng.random() < 0.25:
        engine["cuda_graphs"] = rng.choice(["piecewise", "none"]) if framework == "vllm" else "none"
    chunked = None
    if framework == "trtllm":
        engine["capacity_scheduler_policy"] = rng.choice(["guaranteed_no_evict", "max_utilization"])
        f.append(f"capacity:{engine['capacity_scheduler_policy']}")
        chunked = rng.choice([None, True, False])
    elif framework == "vllm" and rng.random() < 0.3:
        chunked = rng.choice([True, False])
    if framework == "vllm" and drafter is None and rng.random() < 0.15:   # vLLM V0's multi-step scheduling
        engine.update(version=rng.choice(["0.6.6", "0.7.3"]), num_scheduler_steps=rng.choice([2, 4, 8]))
        engine.pop("cuda_graphs", None)
        chunked = None if chunked else chunked
        f.append("multi_step")
    elif drafter is None and rng.random() < 0.2 and not (framework == "vllm" and _release(version) < (0, 10)):
        engine["async_scheduling"] = rng.choice([True, False])
    if framework == "sglang" and "async_scheduling" not in engine and data["extra"].random() < 0.6:
        # SGLang's overlap loop or its synchronous one: when a prefill batch's prompts are cached
        # (simulator.core.kv.prefix_cache); the overlap with a drafter from spec v2 (0.5.9 here), not for n-gram or trees
        overlap_ok = drafter is None or (_release(version) >= (0, 5, 9) and drafter != "ngram" and "speculation" not in data)
        engine["async_scheduling"] = data["extra"].random() < 0.5 if overlap_ok else False
    if "async_scheduling" in engine:
        f.append(f"async_scheduling:{engine['async_scheduling']}")
    if chunked is not None:
        engine["chunked_prefill"] = chunked
        f.append(f"chunked_prefill:{chunked}")
    if rng.random() < 0.1 and "parallelism" not in cluster:   # NanoFlow's nano-batches (dense, ep 1)
        cluster["latency"] = {"nano_batches": rng.choice([2, 4])}
        f.append("nano_batches")
    cluster["engine"] = engine
    sched = {}
    if rng.random() < 0.6:
        sched["max_batch_size"] = rng.choice([4, 16, 64])
    if rng.random() < 0.3 and (framework != "trtllm" or chunked):
        sched["max_batched_tokens"] = max(sched.get("max_batch_size", 1024) * 2, rng.choice([512, 2048]))
    if sched:
        data["scheduler"] = sched
    return framework


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _policy(rng: random.Random, data: dict, drafter: str | None, framework: str | None, f: list[str]) -> None:
    """The engines' draft-length rules (dynamic draft lengths) and an adaptive policy, for chains."""
    if drafter in (None, "suffix") or data["acceptance"]["kind"] == "sessions" or "speculation" in data:
        return
    gamma = data["drafter"]["gamma"]
    p = rng.random()
    dynamic_sd = framework == "vllm" and _release(data["cluster"]["engine"]["version"]) >= (0, 24)   # (v0.24.0 on)
    if p < 0.15 and (framework is None or dynamic_sd):
        data["policy"] = {"kind": "vllm_dynamic", "schedule": [[1, 2, gamma], [3, 8, max(gamma - 1, 0)],
                                                                [9, 4096, max(gamma - 2, 0)]]}
    elif p < 0.3 and framework in (None, "trtllm"):
        # (batch-size upper-bound keys from TensorRT-LLM 1.3.0rc8, PR #10860; its acceptance-rate gate from rc27)
        version = data["cluster"].get("engine", {}).get("version", "1.4.0rc1")
        data["policy"] = {"kind": "trtllm_schedule"}
        if version.startswith(("1.3", "1.4")):
            data["policy"]["draft_len_schedule"] = {4: gamma, 16: max(gamma - 1, 0)}
        if version in ("1.3.0rc27", "1.4.0rc1"):
            if rng.random() < 0.5:
                data["policy"].update(acceptance_rate_window_size=rng.randint(1, 5), acceptance_rate_threshold=0.5)
        elif rng.random() < 0.5 or "draft_len_schedule" not in data["policy"]:
            data["policy"].update(acceptance_window=rng.randint(1, 5), acceptance_length_threshold=0.5)
    elif p < 0.45 and framework == "sglang" and drafter in ("eagle3", "head") \
            and data["cluster"]["engine"]["version"] == "0.5.23":   # (SGLang's adaptive slots from v0.5.13)
        data["policy"] = {"kind": "sglang_adaptive"}
    elif p < 0.5 and framework is None:
        data["policy"] = {"kind": "smartspec", "max_gamma": gamma}
    if "policy" in data:
        f.append(f"policy:{data['policy']['kind']}")


def _kv_cache(rng: random.Random, data: dict, f: list[str]) -> None:
    """Prefix caching (with a host-memory tier), swap preemption."""
    kv, r = {}, rng.random()
    if r < 0.35:
        kv["prefix_caching"] = True
        f.append("kv:prefix_caching")
        if rng.random() < 0.4:
            kv["host_memory_gib"] = rng.choice([0.05, 0.5, 16])
            f.append("kv:host_tier")
    if r > 0.75 or (kv.get("host_memory_gib") and rng.random() < 0.5):
        kv["preemption"] = "swap"
        kv["host_memory_gib"] = kv.get("host_memory_gib") or rng.choice([0.05, 1, 16])
        f.append("kv:swap")
    if kv:
        data["cluster"]["kv_cache"] = kv


def _sharing(rng: random.Random, data: dict, f: list[str]) -> None:
    """Shared prompt prefixes or multi-turn sessions (synthetic open-loop arrivals only)."""
    workload = data["workload"]
    if workload["arrival"]["process"] in ("trace", "closed_loop"):
        return
    r = rng.random()
    if r >= 0.5 and data["cluster"].get("engine", {}).get("framework") == "sglang" and data["extra"].random() < 0.6:
        r = data["extra"].random() * 0.5   # (SGLang's radix cache: a prompt cached once its batch has run)
    if r < 0.3:
        workload["shared_prefix"] = {"prompts": rng.randint(1, 4), "tokens": rng.choice([16, 200, 1024]),
                                     "popularity": rng.choice(["uniform", "zipf"])}
        f.append("shared_prefix")
    elif r < 0.5:
        workload["sessions"] = {"turns": {"kind": "uniform", "low": 1, "high": rng.randint(1, 4)},
                                "think_time_s": round(rng.uniform(0.01, 1.0), 3)}
        f.append("sessions")


def _cluster_shape(rng: random.Random, data: dict, drafter: str | None, f: list[str]) -> None:
    """MoE expert parallelism, disaggregated pools or replicas with a router, a short context with
    context_overflow, parallel sampling."""
    cluster, workload = data["cluster"], data["workload"]
    if rng.random() < 0.12 and drafter in (None, "draft_model", "ngram", "head") \
            and data.get("acceptance", {}).get("kind") != "sessions":
        cluster.update(model=rng.choice(["qwen3-30b-a3b", "mixtral-8x7b"]), hardware=rng.choice(["h100-sxm", "h200"]))
        cluster["parallelism"] = {"tp": 2, "ep": rng.choice([2, 4]) if cluster["model"] == "qwen3-30b-a3b" else 2}
        cluster["moe"] = {"routing": rng.choice(["uniform", "zipf"]), "prescheduling_hit_rate": rng.choice([0.0, 0.5])}
        if drafter == "draft_model":
            data["drafter"]["model"] = rng.choice(["llama-68m", "qwama-0.5b"])
        f.append("moe:ep")
    if rng.random() < 0.2:
        pools = {"prefill": {"replicas": rng.randint(1, 2)}, "decode": {"replicas": rng.randint(1, 2)}}
        if "parallelism" in cluster:
            par = cluster.pop("parallelism")
            pools["prefill"]["parallelism"], pools["decode"]["parallelism"] = dict(par), dict(par)
        if rng.random() < 0.5:
            pools["prefill"]["router"] = rng.choice(["round_robin", "least_outstanding"])
        cluster["disaggregation"] = {**pools, "kv_transfer": {"link": rng.choice(["scaleup", "scaleout"]),
                                                              "layerwise_overlap": rng.random() < 0.5}}
        if data["extra"].random() < 0.5:   # pools on different GPUs (their own releases, tables and contexts)
            gpus = ["h100-sxm", "h200", "b200"] if "parallelism" in pools["prefill"] else HARDWARE[1:]
            pools["prefill"]["hardware"], pools["decode"]["hardware"] = data["extra"].sample(gpus, 2)
            cluster["disaggregation"]["kv_transfer"]["link"] = "scaleout"   # (no scale-up domain between them)
            f.append("disaggregated:two_gpus")
        kv = cluster.get("kv_cache", {})
        if kv.get("preemption") == "swap":
            kv.pop("preemption")
            if not kv.get("prefix_caching"):
                kv.pop("host_memory_gib", None)
        f.append("disaggregated")
    else:
        cluster["replicas"] = rng.choice([1, 2, 2, 3, 3])
        # (round robin the most: the replicas `simulation.workers` splits)
        routers = ["round_robin", "round_robin", "round_robin", "least_outstanding", "join_shortest_queue"]
        if cluster.get("kv_cache", {}).get("prefix_caching"):
            routers.append("prefix_aware")
        cluster["router"] = rng.choice(routers)
        f.append(f"router:{cluster['router']}")
    if rng.random() < 0.15:
        cluster["max_model_len"] = rng.choice([128, 512, 2048])
        workload["context_overflow"] = rng.choice(["drop", "truncate"])
        f.append(f"overflow:{workload['context_overflow']}")
    elif workload["arrival"]["process"] == "trace":   # (the traces' longest prompts exceed some models' contexts)
        workload["context_overflow"] = rng.choice(["drop", "truncate"])
    _long_context(data, drafter, f)
    if rng.random() < 0.1 and workload["arrival"]["process"] != "closed_loop" and drafter is None \
            and "disaggregation" not in cluster and not cluster.get("kv_cache", {}).get("prefix_caching"):
        workload["parallel_samples"] = rng.randint(2, 3)
        f.append("parallel_samples")


LONG_CONTEXT_MODELS = {"llama-2-7b": 4096, "llama-3-8b": 8192}   # (max_position_embeddings: every engine's limit)


def _long_context(data: dict, drafter: str | None, f: list[str]) -> None:
    """A max_model_len above the context the engine derives, served with cluster.engine.allow_long_context, and
    prompts that pass that context (a few requests: a prompt of up to 9,000 tokens)."""
    cluster, workload, extra = data["cluster"], data["workload"], data["extra"]
    if cluster["model"] not in LONG_CONTEXT_MODELS or workload["arrival"]["process"] == "trace" \
            or extra.random() >= 0.3:
        return
    derived = LONG_CONTEXT_MODELS[cluster["model"]]
    cluster["max_model_len"] = derived + extra.choice([256, derived // 2])
    cluster["engine"] = {**cluster.get("engine", {}), "allow_long_context": True}
    workload["num_requests"] = min(workload["num_requests"], 10)
    workload["prompt_tokens"] = {"kind": "uniform", "low": derived - 1000, "high": derived + 200}
    workload.setdefault("context_overflow", extra.choice(["drop", "truncate"]))
    sched = data.get("scheduler", {})
    if (sched.get("kind") == "trtllm" or cluster["engine"].get("framework") == "trtllm") \
            and sched.get("max_batched_tokens", 0) < cluster["max_model_len"]:   # (whole prompts without chunks)
        data["scheduler"] = {**sched, "max_batched_tokens": cluster["max_model_len"]}
    f.append("allow_long_context")


def _memory(rng: random.Random, data: dict, f: list[str]) -> None:
    """A KV cache that runs out now and then (preemptions, retractions, swap): a memory fraction a little above
    the weights (`fit_memory` raises it where the deployment does not start), a 4,096-token context."""
    if rng.random() < 0.45:
        from models import get_model
        from profiles.hardware import get_hardware
        cluster = data["cluster"]
        spec, hw = get_model(cluster["model"]), get_hardware(cluster["hardware"])
        draft = data.get("drafter", {}).get("model")
        weights = (spec.param_count() + (get_model(draft).param_count() if draft else 0)) * 2 / hw.hbm_bytes
        tp = (cluster.get("parallelism") or {}).get("tp", 1)
        extra = round(rng.uniform(0.005, 0.04), 4)
        framework = cluster.get("engine", {}).get("framework", "vllm")
        cluster["gpu_memory_utilization"] = extra if framework == "trtllm" else round(min(weights / tp + extra, 0.9), 4)
        cluster.setdefault("max_model_len", min(4096, getattr(spec, "max_position_embeddings", 4096) or 4096))
        data["workload"].setdefault("context_overflow", "truncate")
        f.append("kv:pressure")


def _small_v3(n_predict: int) -> dict:
    """A small DeepSeek-V3-shaped model shipping `n_predict` MTP modules (DeepSeek-V2-Lite's sizes, V3's
    architecture and routing): vLLM's MTP draft lengths (profiles.engine_time.mtp_draft_length) and LM heads
    (mtp_lm_head) on one GPU."""
    with open(os.path.join(ROOT, "tests", "data", "hf_configs", "DeepSeek-V2-Lite", "config.json")) as f:
        cfg = json.load(f)
    return {**cfg, "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
            "num_nextn_predict_layers": n_predict, "topk_method": "noaux_tc", "scoring_func": "sigmoid",
            "norm_topk_prob": True}


def _newest(seed: int, data: dict, drafter: str | None, f: list[str]) -> None:
    """The rules of session 26, from a stream of their own (every earlier choice of the draw stays): n-gram lookup
    windows and policy proposed (vLLM's, on real sessions), MTP models of one to three modules under vLLM's draft-
    length rule and its MTP LM heads, gpt-oss's MXFP4 experts (vLLM's Marlin or Triton kernel by release and GPU)."""
    rng = random.Random(f"eqfuzz-newest-{seed}")
    cluster = data["cluster"]
    engine = cluster.get("engine", {})
    if drafter == "ngram":
        if rng.random() < 0.5:
            data["drafter"].update(rng.choice([{"prompt_lookup_max": 2}, {"prompt_lookup_min": 3},
                                               {"prompt_lookup_max": 4, "prompt_lookup_min": 1}]))
            f.append("ngram:window")
        if data["acceptance"]["kind"] == "sessions" and "policy" not in data \
                and engine.get("framework", "vllm") == "vllm" and rng.random() < 0.5:
            data["policy"] = {"kind": "proposed"}
            f.append("policy:proposed")
    elif drafter == "mtp" and "gpu_memory_utilization" not in cluster and rng.random() < 0.6:
        n_predict = rng.choice([1, 2, 3])
        cluster.update(model=_small_v3(n_predict), hardware=rng.choice(["h100-sxm", "h200"]), dtype="bf16")
        cluster.pop("moe", None)
        for pool in [cluster, *(cluster.get("disaggregation", {}).get(name, {}) for name in ("prefill", "decode"))]:
            if "parallelism" in pool:
                pool["parallelism"] = {"tp": 1}
        data["drafter"]["gamma"] = rng.choice([1, 2, 2, 3, 4, 6])
        if engine.get("framework") == "vllm":
            engine["version"] = rng.choice(["0.7.3", "0.9.0", "0.12.0", "0.15.0", "0.16.0", "0.28.0"])
        f.append(f"mtp:n_predict_{n_predict}")
    elif drafter is None and "gpu_memory_utilization" not in cluster and "disaggregation" not in cluster \
            and "parallelism" not in cluster and engine.get("framework") in (None, "vllm") \
            and not engine.get("num_scheduler_steps") and rng.random() < 0.35:
        cluster.update(model="gpt-oss-20b", dtype="mxfp4", hardware=rng.choice(["h100-sxm", "h200", "a100-80gb"]))
        cluster.setdefault("max_model_len", 8192)
        if engine:
            engine["version"] = rng.choice(["0.10.1", "0.11.0", "0.12.0", "0.24.0"])
        f.append("mxfp4")


def draw_scenario(seed: int) -> tuple[dict, list[str]]:
    """Draw number `seed`: a small scenario combining some of the features (module docstring) and their tags."""
    rng = random.Random(seed)
    f: list[str] = []
    data = {"name": f"eqfuzz-{seed}", "seed": rng.randint(0, 2**16),
            "workload": None, "cluster": {"hardware": rng.choice(HARDWARE), "model": rng.choice(DENSE)},
            "slo": {"ttft_s": 0.5, "tpot_s": 0.05}, "outputs": {"plots": False}}
    data["extra"] = _extra(seed)
    data["workload"] = _workload(rng, f)
    drafter = _drafter(rng, data, f)
    framework = _engine(rng, data, drafter, f)
    _policy(rng, data, drafter, framework, f)
    _kv_cache(rng, data, f)
    _sharing(rng, data, f)
    _cluster_shape(rng, data, drafter, f)
    _memory(rng, data, f)
    _newest(seed, data, drafter, f)
    steps = rng.choice(["full", "full", "full", "sampled", "aggregate"])
    data["outputs"]["steps"] = steps
    if steps == "sampled":
        data["outputs"]["step_sample_every"] = rng.randint(1, 5)
    elif steps == "aggregate":
        data["outputs"]["step_interval_s"] = rng.choice([0.01, 0.1, 1.0])
    del data["extra"]
    return data, f


MEMORY_FIELDS = ("cluster.model", "cluster.max_model_len", "cluster.disaggregation.prefill.parallelism",
                 "cluster.disaggregation.decode.parallelism", "cluster.gpu_memory_utilization")


def fit_memory(data: dict) -> dict:
    """`data` with its memory fraction raised in steps of 0.02 until the deployment starts (its weights, start-up
    profile and one request of max_model_len fit), where `_memory` set one; the refusal of the last try raises."""
    cluster = data["cluster"]
    for _ in range(12):
        try:
            simulator.prepare(data)
            return data
        except ScenarioError as exc:
            util = cluster.get("gpu_memory_utilization")
            if util is None or util >= 0.9 or not str(exc).startswith(MEMORY_FIELDS):
                raise
            data = copy.deepcopy(data)
            cluster = data["cluster"]
            cluster["gpu_memory_utilization"] = round(min(util + 0.02, 0.9), 4)
    simulator.prepare(data)
    return data


# ---- running and comparing -----------------------------------------------------------------------------------

def run(data: dict, **simulation):
    """simulator.run of `data` with its `simulation` section: (outputs, result), or a ScenarioError."""
    data = copy.deepcopy(data)
    data["simulation"] = simulation
    with contextlib.redirect_stderr(open(os.devnull, "w")):
        result = simulator.run(data)
    return outputs(result), result


def outputs(result) -> tuple[dict, dict, dict]:
    """A run's request and step columns (arrays) and its summary (through JSON, as summary.json writes it)."""
    requests = {name: result.requests[name].to_numpy() for name in result.requests.columns}
    steps = {name: result.steps[name].to_numpy() for name in result.steps.columns}
    return requests, steps, json.dumps(result.summary, sort_keys=True, default=str)


LATENCY_SOURCES = ("latency_source", "prefill_latency_source", "decode_latency_source")


def _op_counts(summary: str) -> dict:
    summary = json.loads(summary)
    return {(key, kind, count): value[count] for key in LATENCY_SOURCES
            for kind, value in ((summary.get(key) or {}).get("op_kinds") or {}).items()
            for count in ("ops", "approximate") if count in value}


def _without_op_counts(summary: str) -> str:
    data = json.loads(summary)
    for key, kind, count in _op_counts(summary):
        del data[key]["op_kinds"][kind][count]
    return json.dumps(data, sort_keys=True)


def differences(a: tuple, b: tuple, step_exception: bool = False) -> list[str]:
    """What differs between two `outputs`: column names (requests.X, steps.X) and `summary` (with
    `step_exception`, b being step mode: op counts may be smaller in b)."""
    out = []
    for label, x, y in (("requests", a[0], b[0]), ("steps", a[1], b[1])):
        if x.keys() != y.keys():
            out.append(f"{label} columns")
            continue
        for name in x:
            u, v = x[name], y[name]
            same = u.shape == v.shape and (np.array_equal(u, v, equal_nan=True) if u.dtype.kind == "f"
                                           else np.array_equal(u, v))
            if not same:
                out.append(f"{label}.{name}")
    if a[2] != b[2]:
        if not step_exception:
            out.append("summary")
        else:
            more, fewer = _op_counts(a[2]), _op_counts(b[2])
            if _without_op_counts(a[2]) != _without_op_counts(b[2]) or more.keys() != fewer.keys() \
                    or any(more[k] < fewer[k] for k in more):
                out.append("summary")
    return out


def summary_difference(a: dict | str, b: dict | str, prefix: str = "") -> list[str]:
    """The summary keys whose values differ (for the report)."""
    a, b = (json.loads(x) if isinstance(x, str) else x for x in (a, b))
    keys = sorted(set(a) | set(b))
    out = []
    for k in keys:
        u, v = a.get(k), b.get(k)
        if isinstance(u, dict) and isinstance(v, dict):
            out += summary_difference(u, v, f"{prefix}{k}.")
        elif u != v:
            out.append(f"{prefix}{k}: {u!r} != {v!r}")
    return out


def check_invariants(out: tuple, data: dict) -> list[str]:
    """The run's invariants on its outputs (module docstring); the broken ones, named."""
    req, steps, summary = out
    summary = json.loads(summary)
    bad = []
    n = len(req["request_id"])
    if not np.array_equal(req["request_id"], np.arange(n)):
        bad.append("request ids are not 0..n-1 once each")
    if summary["requests_arrived"] != summary["requests_finished"] + summary["requests_dropped"] \
            + summary["requests_unfinished"]:
        bad.append("arrived != finished + dropped + unfinished")
    dropped, finished = req["dropped"], ~np.isnan(req["finish_s"])
    if summary["requests_dropped"] != int(dropped.sum()) or summary["requests_finished"] != int(finished.sum()):
        bad.append("the summary's finished/dropped counts are not the requests'")
    if (dropped & finished).any():
        bad.append("a request both dropped and finished")
    if any(not req["drop_reason"][i] for i in np.flatnonzero(dropped)):
        bad.append("a request dropped without a reason")
    if any(req["drop_reason"][i] for i in np.flatnonzero(~dropped)):
        bad.append("a reason given for a request not dropped")
    if (req["emitted_tokens"][dropped] != 0).any():
        bad.append("a dropped request emitted tokens")
    samples = data["workload"].get("parallel_samples", 1)
    if (req["emitted_tokens"][finished] != req["output_tokens"][finished]).any():
        bad.append("a finished request's tokens out differ from those asked for")
    if (req["emitted_tokens"] > req["output_tokens"]).any():
        bad.append("a request emitted more tokens than asked for")
    admitted = ~np.isnan(req["admit_s"])
    if (finished & ~admitted).any():
        bad.append("a finished request was never admitted")
    if (dropped & admitted).any():
        bad.append("a dropped request was admitted")
    with np.errstate(invalid="ignore"):
        if (req["admit_s"][admitted] < req["arrival_s"][admitted] - 1e-12).any():
            bad.append("admitted before arriving")
        first = ~np.isnan(req["first_token_s"])
        if (req["first_token_s"][first] < req["admit_s"][first] - 1e-12).any():
            bad.append("a first token before admission")
        if (req["finish_s"][finished] < req["first_token_s"][finished] - 1e-12).any():
            bad.append("finished before the first token")
    if (req["accepted_tokens"] > req["drafted_tokens"]).any():
        bad.append("more tokens accepted than drafted")
    mode = data["outputs"].get("steps", "full")
    used = steps["kv_blocks_used_max" if mode == "aggregate" else "kv_blocks_used"]
    if (used < 0).any() or (used > steps["kv_blocks_total"]).any():
        bad.append("KV blocks used outside 0..capacity")
    if mode != "sampled" and len(steps["replica"]):   # (full and aggregate rows count every step)
        # (a request's emitted_tokens counts one of its parallel samples' sequences; a step, every sequence's)
        if steps["emitted_tokens"].sum() != req["emitted_tokens"].sum() * samples:
            bad.append("the steps' tokens out are not the requests'")
        if steps["accepted_tokens"].sum() != req["accepted_tokens"].sum():
            bad.append("the steps' accepted tokens are not the requests'")
        if mode == "aggregate" and steps["steps"].sum() != summary["steps"]:
            bad.append("the aggregate rows' steps are not the summary's")
        elif mode == "full" and len(steps["replica"]) != summary["steps"]:
            bad.append("the step rows are not the summary's steps")
    if mode == "full" and len(steps["replica"]):
        if (steps["duration_s"] <= 0).any():
            bad.append("a step of no duration")
        for r in np.unique(steps["replica"]):
            one = steps["replica"] == r
            start, end = steps["start_s"][one], steps["end_s"][one]
            if (start[1:] < end[:-1] - 1e-9).any():
                bad.append(f"replica {r}'s steps overlap")
                break
    return bad


def independent(data: dict) -> bool:
    """The replicas `simulation.workers` may split: colocated, open loop, routed ahead (round robin)."""
    cluster = data["cluster"]
    return (cluster.get("replicas", 1) >= 2 and cluster.get("router", "round_robin") == "round_robin"
            and "disaggregation" not in cluster and data["workload"]["arrival"]["process"] != "closed_loop")


def distributable(data: dict) -> bool:
    """A run a Dask executor takes (README "Fleet scale"): colocated replicas, open loop, no control policy, no
    prefix caching or host-memory tier, no suffix drafter."""
    cluster = data["cluster"]
    kv = cluster.get("kv_cache", {})
    return (cluster.get("replicas", 1) >= 2 and "disaggregation" not in cluster
            and data["workload"]["arrival"]["process"] != "closed_loop" and "policy" not in data
            and not kv.get("prefix_caching") and not kv.get("host_memory_gib")
            and data.get("drafter", {}).get("kind") != "suffix")


def check_draw(data: dict, dask: str | None = None) -> list[str]:
    """Every check of one drawn scenario: the problems found (empty: none); raises ScenarioError where refused.
    `dask`: the address of a Dask scheduler to run it on too, where a Dask executor takes it (at `load_sync_s: 0`
    for a router that reads loads: exact for requests and steps, the summary as step mode's)."""
    base, _ = run(data, step_mode="bulk", workers=1)
    problems = [f"invariant: {p}" for p in check_invariants(base, data)]
    again, _ = run(data, step_mode="bulk", workers=1)
    problems += [f"rerun differs: {d}" for d in differences(base, again)]
    step, _ = run(data, step_mode="step", workers=1)
    found = differences(base, step, step_exception=True)
    problems += [f"step mode differs: {d}" for d in found]
    if "summary" in found:
        problems += [f"  {d}" for d in summary_difference(_without_op_counts(base[2]), _without_op_counts(step[2]))[:8]]
    OUTCOMES["ran"] += 1
    if independent(data):
        with mock.patch.object(parallel, "local_workers_max", lambda: 2), \
                mock.patch.object(parallel, "run_parallel", wraps=parallel.run_parallel) as split:
            two, _ = run(data, step_mode="bulk", workers=2)
        problems += [f"two workers differ: {d}" for d in differences(base, two)]
        OUTCOMES["forked two workers"] += split.called
    cache = (json.loads(base[2]).get("engine_prefix_caching") or {}).get("prefix_caching")
    if dask is not None and distributable(data) and not cache:
        # (an engine's default prefix cache is kept off in a distributed run, named in the summary: README "The
        # engine of a deployment"; such draws are left out here)
        routed_ahead = data["cluster"].get("router", "round_robin") == "round_robin"
        remote, _ = run(data, step_mode="bulk", executor=dask, **({} if routed_ahead else {"load_sync_s": 0.0}))
        if not routed_ahead:   # (the summary records the window)
            summary = json.loads(remote[2])
            assert summary.pop("load_sync_s") == 0.0
            remote = (remote[0], remote[1], json.dumps(summary, sort_keys=True))
        problems += [f"dask differs: {d}" for d in differences(base, remote, step_exception=not routed_ahead)]
        OUTCOMES["ran on dask"] += 1
    return problems


class DrawTimeout(Exception):
    """A draw ran past DRAW_LIMIT_S: a run that hangs (a replica planning empty steps at one clock) or is far too
    slow for its few requests."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise DrawTimeout in the main thread after `seconds` (SIGALRM; no limit where there is none)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expired(*_):
        raise DrawTimeout(f"the draw ran for more than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def dask_address():
    """A Dask LocalCluster of 2 single-thread worker processes for the module's draws (started once: a
    `local-dask` executor starts one per run, ~10 s each on the 2-core VM), or None where DASK_DRAWS is 0."""
    if DASK_DRAWS == 0:
        yield None
        return
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_drawn_feature_combinations_are_equivalent_across_modes(chunk, request):
    """Draws SEED + i for i in range(DRAWS) (in CHUNKS chunks): every check of `check_draw` holds for each scenario
    that runs; the first DASK_DRAWS draws of chunk 0 that a Dask executor takes run on the Dask cluster too (one
    cluster, in the process that runs chunk 0)."""
    dask_address = request.getfixturevalue("dask_address") if chunk == 0 else None
    failures = []
    for i in range(chunk, DRAWS, CHUNKS):
        seed = SEED + i
        data, features = draw_scenario(seed)
        FEATURES.update(features)
        OUTCOMES["drawn"] += 1
        started = time.perf_counter()
        try:
            with time_limit(DRAW_LIMIT_S):
                data = fit_memory(data)
                dask = dask_address if dask_address and OUTCOMES["ran on dask"] < DASK_DRAWS else None
                problems = check_draw(data, dask)
        except ScenarioError as exc:
            OUTCOMES["refused"] += 1
            REFUSED[str(exc).split(":")[0]] += 1
            continue
        except Exception as exc:   # (a crash or a hang is a finding too)
            problems = [f"crash: {type(exc).__name__}: {exc}"]
        OUTCOMES["slowest draw ms"] = max(OUTCOMES["slowest draw ms"], int((time.perf_counter() - started) * 1e3))
        if problems:
            failures.append((seed, problems))
            print(f"\n--- draw {seed}: {problems}\n{yaml.safe_dump(data, sort_keys=False)}", flush=True)
            if not KEEP_GOING:
                break
    assert not failures, failures


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if OUTCOMES:
        print("\nequivalence fuzz: " + ", ".join(f"{k} {v}" for k, v in sorted(OUTCOMES.items())))
        print("features: " + ", ".join(f"{k} {v}" for k, v in sorted(FEATURES.items())))
        print("refused: " + ", ".join(f"{k} {v}" for k, v in REFUSED.most_common(15)))


def _combinations(data: dict) -> set[str]:
    """Which of the combinations the CI draws must hold `data` is (test_the_ci_draws_cover_each_feature)."""
    cluster, workload = data["cluster"], data["workload"]
    engine, drafter = cluster.get("engine", {}), data.get("drafter", {}).get("kind")
    colocated, kv = "disaggregation" not in cluster, cluster.get("kv_cache", {})
    shared = "shared_prefix" in workload or "sessions" in workload or "mooncake" in str(workload["arrival"])
    vllm = engine.get("framework") == "vllm" and _release(engine["version"]) >= (0, 8)
    out = {
        # SGLang's admission reserve where the KV cache runs out (retractions)
        "sglang reserve under pressure": engine.get("framework") == "sglang" and colocated
        and "gpu_memory_utilization" in cluster,
        # vLLM V1's prefix-cache hit less its last block for an EAGLE-style drafter (its default cache, or given)
        "vllm eagle hit": vllm and drafter in ("eagle3", "head", "mtp") and (kv.get("prefix_caching") or shared),
        # a draft model's token slots in vLLM V1's budget (0.17 on)
        "vllm draft slots": vllm and _release(engine["version"]) >= (0, 17)
        and drafter in ("draft_model", "layer_skip"),
        "trtllm capacity policy": bool(engine.get("capacity_scheduler_policy")),
        "host tier": bool(kv.get("host_memory_gib")),
        "disaggregated": not colocated,
        "chunked prefill": data.get("scheduler", {}).get("kind") == "sarathi" or engine.get("chunked_prefill") is True,
        "tree": data.get("speculation", {}).get("kind") in ("tree", "dynamic_tree"),
        "suffix or ngram on sessions": data.get("acceptance", {}).get("kind") == "sessions",
        "engine draft-length rule": data.get("policy", {}).get("kind") in ("vllm_dynamic", "trtllm_schedule",
                                                                            "sglang_adaptive"),
        "expert parallelism": "moe" in cluster,
        "context_overflow": "max_model_len" in cluster and workload.get("context_overflow") in ("drop", "truncate"),
        "sessions": "sessions" in workload,
        "trace": workload["arrival"]["process"] == "trace",
        # SGLang's radix cache, a prompt cached once its batch has run: a batch later under the overlap loop
        "sglang shared prompts, overlap loop": engine.get("framework") == "sglang" and shared
        and engine.get("async_scheduling") is True,
        "sglang shared prompts, synchronous loop": engine.get("framework") == "sglang" and shared
        and engine.get("async_scheduling") is False,
        # pools on two GPUs: each its own release, tables and context limit
        "disaggregated on two gpus": not colocated and len({cluster["disaggregation"][p].get("hardware")
                                                             for p in ("prefill", "decode")}) == 2,
        "allow_long_context": bool(engine.get("allow_long_context")),
        "split over workers": independent(data),
        "dask": distributable(data),
    }
    return {name for name, present in out.items() if present}


def test_the_ci_draws_cover_each_feature():
    """The draws CI runs (DRAWS from SEED) hold each combination `_combinations` names, so that a change of the
    generator cannot leave one of them unchecked without a word (the draws only: nothing is run here)."""
    held = collections.Counter(name for i in range(DRAWS) for name in _combinations(draw_scenario(SEED + i)[0]))
    expected = set().union(*(_combinations(draw_scenario(seed)[0]) for seed in range(400)))
    assert len(expected) == 20 and expected <= set(held), expected - set(held)
    dask = sum("dask" in _combinations(draw_scenario(SEED + i)[0]) for i in range(0, DRAWS, CHUNKS))   # (chunk 0's)
    assert dask >= min(DASK_DRAWS, 3), dask
