"""Launch commands for a planned configuration: the vLLM and SGLang server command lines of each role
(one colocated role, or prefill and decode), written by `draftsim plan` as `launch_vllm.sh` and
`launch_sglang.sh` for the best candidate.

Built from the candidate's scenario (what the DES simulated), flag by flag:

| scenario | vLLM (`vllm serve`) | SGLang (`python -m sglang.launch_server`) |
|---|---|---|
| parallelism tp, pp | `--tensor-parallel-size`, `--pipeline-parallel-size` | `--tp-size`, `--pp-size` |
| ep > 1 (DP attention + EP) | `--enable-expert-parallel --data-parallel-size ep/tp` | `--tp-size ep --ep-size ep --enable-dp-attention --dp-size ep/tp` |
| dtype fp8 / fp8_block | `--quantization fp8` | `--quantization fp8` |
| dtype int4 | an AWQ/GPTQ checkpoint (detected from its config; a comment says so) | same |
| the KV dtype the DES ran fp8 (kv_dtype, or the release's default for the checkpoint: simulator.cluster.factory.resolve_kv_dtype) | `--kv-cache-dtype fp8` | `--kv-cache-dtype fp8_e4m3` |
| the DES ran bf16 KV where the checkpoint declares an fp8 one (which the engine's `auto` may take) | `--kv-cache-dtype bfloat16` | `--kv-cache-dtype bf16` |
| gpu_memory_utilization (none given: no flag, the engine's own default as the DES ran it) | `--gpu-memory-utilization` | `--mem-fraction-static` |
| scheduler.max_batch_size (none given: no flag, the engine's own default as the DES ran it) | `--max-num-seqs` | `--max-running-requests` |
| scheduler.max_batched_tokens (chunk_tokens for sarathi; none given: 8192, or no flag where the plan names its engine, whose own budget the DES ran) | `--max-num-batched-tokens` | `--chunked-prefill-size` |
| scheduler.block_size | `--block-size` | `--page-size` |
| engine.schedule_policy (SGLang only; none given: no flag, the release's own default as the DES ran it) | - | `--schedule-policy` |
| kv_cache.prefix_caching (none given: off, or where the plan names its engine that engine's default as the DES ran it, simulator.cluster.engine_cache) | `--enable-prefix-caching` / `--no-enable-prefix-caching` | radix cache on / `--disable-radix-cache` |
| draft model, γ | `--speculative-config '{"method": "draft_model", "model": …, "num_speculative_tokens": γ}'` (V0, 0.4.1 - 0.7.x: `--speculative-model … --num-speculative-tokens γ`) | `--speculative-algorithm STANDALONE --speculative-draft-model-path … --speculative-num-steps γ --speculative-eagle-topk 1 --speculative-num-draft-tokens γ+1` |
| eagle3 (head), γ | `--speculative-config '{"method": "eagle3", "model": head, "num_speculative_tokens": γ}'` | `--speculative-algorithm EAGLE3 --speculative-draft-model-path head --speculative-num-steps γ --speculative-eagle-topk 1 --speculative-num-draft-tokens γ+1` (dynamic_tree: depth, top_k, budget) |
| mtp, γ | `--speculative-config '{"method": "mtp", "num_speculative_tokens": γ}'` | `--speculative-algorithm EAGLE` (the model's NextN module) with the same three knobs |
| disaggregation | `--kv-transfer-config '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'` per role | `--disaggregation-mode prefill` / `decode` |

Sources: vLLM's engine arguments and its "Draft Models" and "NixlConnector" (disaggregated prefill) docs;
SGLang's server arguments, speculative decoding (STANDALONE) and PD-disaggregation docs. Both engines
default to prefix caching on; the flag is written either way so that the server runs what was
simulated. A speculation shape other than a chain (trees, multi-draft) has no one-flag equivalent and
is written as a comment, and so is a draft model whose vocabulary size differs from the target's (vLLM
refuses it; `_other_vocabulary`). Model names are the Hugging Face repositories in the catalog's `source`.
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from models.load import load_model

ROLES = ("colocated", "prefill", "decode")
NO_WORKLOAD = {"arrival": {"process": "poisson", "qps": 1.0}, "num_requests": 1,   # (_prefix_caching)
               "prompt_tokens": {"kind": "fixed", "value": 1}, "output_tokens": {"kind": "fixed", "value": 1}}


def hf_repo(model) -> str:
    """The Hugging Face repository of a catalog model (from its source URL), else its name."""
    spec = load_model(model) if not hasattr(model, "source") else model
    found = re.search(r"huggingface\.co/([\w.-]+/[\w.-]+)", spec.source or "")
    return found.group(1) if found else spec.name


def _roles(sc: dict) -> list[tuple[str, int, dict]]:
    cl = sc["cluster"]
    dis = cl.get("disaggregation")
    if dis is None:
        return [("colocated", cl.get("replicas", 1), cl.get("parallelism", {}))]
    return [(name, dis[name].get("replicas", 1), dis[name].get("parallelism", {})) for name in ("prefill", "decode")]


def _role_release(sc: dict, base_dir: Path, role: str, engine: dict | None = None) -> tuple[str, str | None]:
    """The engine release candidate `sc`'s `role` pool runs (simulator.cluster.factory.pool_release, as
    build_replica_kind reads it), with `engine` in place of its cluster.engine where given."""
    from simulator.cluster.factory import pool_release, resolve_hardware
    from simulator.config.engine import EngineConfig
    from simulator.config.serving import LatencyConfig
    cl = sc["cluster"]
    pool = (cl.get("disaggregation") or {}).get(role, {}) if role != "colocated" else {}
    hw = resolve_hardware(pool.get("hardware") or cl.get("hardware", "h100-sxm"), base_dir)   # (the schema default)
    return pool_release(LatencyConfig.model_validate(cl.get("latency", {})),
                        EngineConfig.model_validate(cl.get("engine", {}) if engine is None else engine), hw,
                        cl.get("dtype", "bf16"), cl.get("kv_dtype"), base_dir)


def des_kv_dtype(sc: dict, base_dir: Path, role: str = "colocated") -> tuple[str, bool]:
    """(the KV dtype the DES ran for candidate `sc`'s `role` pool, whether its checkpoint declares a quantized KV
    cache): simulator.cluster.factory.resolve_kv_dtype at the release the run reads (pool_release), as
    build_replica_kind resolves it."""
    from profiles.engine_time.kv_cache_auto import declaration
    from simulator.cluster.factory import resolve_hardware, resolve_kv_dtype, resolve_model
    cl = sc["cluster"]
    pool = (cl.get("disaggregation") or {}).get(role, {}) if role != "colocated" else {}
    where = "cluster" if role == "colocated" else f"cluster.disaggregation.{role}"
    hw = resolve_hardware(pool.get("hardware") or cl.get("hardware", "h100-sxm"), base_dir)   # (the schema default)
    target = resolve_model(cl["model"], base_dir)
    dtype = cl.get("dtype", "bf16")
    release = _role_release(sc, base_dir, role)
    kv = resolve_kv_dtype(hw, dtype, cl.get("kv_dtype"), target, release, where)
    return kv, bool(declaration(release[0], dtype, target)[0])


def _common(sc: dict, par: dict, engine: str, base_dir: Path, role: str = "colocated") -> list[str]:
    cl, sched = sc["cluster"], sc.get("scheduler", {})
    tp, pp, ep = par.get("tp", 1), par.get("pp", 1), par.get("ep", 1)
    chunk = sched.get("chunk_tokens", 512) if sched.get("kind") == "sarathi" else sched.get("max_batched_tokens")
    if chunk is None and not _names_its_engine(cl):   # (named: the engine's own budget, as the DES ran it)
        chunk = 8192
    caching = _prefix_caching(sc, base_dir)
    # the KV dtype the DES ran (kv_dtype, else its engine release's default for the checkpoint), written out: the
    # engine's own --kv-cache-dtype auto is another release's, or another engine's, default; a 16-bit one is written
    # only where the checkpoint declares a quantized KV cache, which that auto may take
    dtype = cl.get("dtype", "bf16")
    kv, declared = des_kv_dtype(sc, base_dir, role)

    def seqs(flag: str) -> list:   # none given: the engine's own default, as the DES ran it (ReplicaKind.max_batch_size)
        return [flag, sched["max_batch_size"]] if sched.get("max_batch_size") is not None else []

    def fraction(flag: str) -> list:   # none given: the engine's own default, as the DES ran it (replica_memory.memory_fraction)
        return [flag, cl["gpu_memory_utilization"]] if cl.get("gpu_memory_utilization") is not None else []

    def budget(flag: str) -> list:
        return [flag, chunk] if chunk is not None else []

    if engine == "vllm":
        args = ["--tensor-parallel-size", tp, "--pipeline-parallel-size", pp]
        if ep > 1:
            args += ["--enable-expert-parallel", "--data-parallel-size", ep // tp]
        args += [*fraction("--gpu-memory-utilization"), *seqs("--max-num-seqs"), *budget("--max-num-batched-tokens"),
                 "--block-size", sched.get("block_size", 16),
                 "--enable-prefix-caching" if caching else "--no-enable-prefix-caching"]
        if kv == "fp8":
            args += ["--kv-cache-dtype", "fp8"]
        elif kv == "bf16" and declared:
            args += ["--kv-cache-dtype", "bfloat16"]
    else:
        args = ["--tp-size", ep if ep > 1 else tp, "--pp-size", pp]
        if ep > 1:
            args += ["--ep-size", ep, "--enable-dp-attention", "--dp-size", ep // tp]
        args += [*fraction("--mem-fraction-static"), *seqs("--max-running-requests"), *budget("--chunked-prefill-size"),
                 "--page-size", sched.get("block_size", 16)]
        if not caching:
            args.append("--disable-radix-cache")
        policy = (cl.get("engine") or {}).get("schedule_policy")   # (none given: the release's own, as the DES ran it)
        if policy is not None:
            args += ["--schedule-policy", policy]
        if kv == "fp8":
            args += ["--kv-cache-dtype", "fp8_e4m3"]
        elif kv == "bf16" and declared:
            args += ["--kv-cache-dtype", "bf16"]
    if dtype in ("fp8", "fp8_block"):
        args += ["--quantization", "fp8"]
    if cl.get("max_model_len"):
        args += ["--max-model-len" if engine == "vllm" else "--context-length", cl["max_model_len"]]
    return [str(a) for a in args]


def _prefix_caching(sc: dict, base_dir: Path) -> bool:
    """The prefix caching the DES ran for candidate `sc`: its own, else (a candidate that names its engine) that
    engine's default as simulator.cluster.engine_cache applies it to the pool that keeps the cache (`launched`: the
    engine's default where the DES kept it off only because no two requests share a prefix), else off."""
    given = _given_prefix_caching(sc["cluster"])
    if given is not None:
        return given
    record = engine_cache_record(sc, base_dir)
    if record is None:
        return False
    from simulator.cluster.engine_cache import launched
    return launched(record)


def _given_prefix_caching(cl: dict) -> bool | None:
    """The prefix caching a candidate's cluster section gives (cluster.kv_cache's, else cluster.engine's), or None."""
    for block in (cl.get("kv_cache", {}), cl.get("engine", {})):
        if block.get("prefix_caching") is not None:
            return bool(block["prefix_caching"])
    return None


def engine_cache_record(sc: dict, base_dir: Path) -> dict | None:
    """The record simulator.cluster.engine_cache.engine_prefix_caching keeps for candidate `sc` (its pool that keeps
    the cache, at the release the run reads: simulator.cluster.factory.pool_release), or None where the candidate
    gives its prefix caching or names no engine."""
    cl = sc["cluster"]
    if _given_prefix_caching(cl) is not None or not _names_its_engine(cl):
        return None
    from simulator.cluster.engine_cache import engine_prefix_caching
    from simulator.cluster.factory import pool_release, resolve_hardware
    from simulator.cluster.replica_memory import keeps_window
    from simulator.config.scenario import Scenario
    # (a launch takes a candidate without its workload too: the default reads only its parallel_samples)
    scenario = Scenario.model_validate({"workload": NO_WORKLOAD, **sc})
    c = scenario.cluster
    pool = c.disaggregation.prefill if c.disaggregation is not None else None
    where = "cluster" if pool is None else "cluster.disaggregation.prefill"
    hw = resolve_hardware(pool.hardware if pool is not None and pool.hardware else c.hardware, base_dir)
    target = load_model(c.model)
    release = pool_release(c.latency, c.engine, hw, c.dtype, c.kv_dtype, base_dir)
    windowed = keeps_window(target, release, hw, where, c.kv_cache.layout)
    return engine_prefix_caching(scenario, target, release, windowed)


def _names_its_engine(cl: dict) -> bool:
    """The candidate's cluster names its engine, whose own budget the DES ran where the scheduler gives none
    (simulator.cluster.engine_scheduler)."""
    from simulator.cluster.engine_scheduler import engine_named
    from simulator.config.engine import EngineConfig
    from simulator.config.serving import LatencyConfig
    return engine_named(LatencyConfig.model_validate(cl.get("latency", {})), EngineConfig.model_validate(cl.get("engine", {})))


def _eagle_family(sc: dict, engine: str) -> tuple[list[str], list[str]]:
    """(flags, comments) of an EAGLE-3 or MTP drafter: vLLM's method eagle3 / mtp with num_speculative_tokens;
    SGLang's EAGLE worker (EAGLE3 with the head's repository; EAGLE for the model's own MTP/NextN module)
    with its three knobs (a chain: num_steps γ, topk 1, num_draft_tokens γ + 1; a dynamic_tree: depth,
    top_k, budget)."""
    d, sp = sc["drafter"], sc.get("speculation", {"kind": "chain"})
    gamma, notes = int(d.get("gamma", 0)), []
    head_repo = ""
    if d["kind"] == "eagle3":
        from models.eagle3 import get_eagle3_head, head_for_target
        head = get_eagle3_head(d["head"]) if isinstance(d.get("head"), str) else \
            head_for_target(sc["cluster"]["model"]) if d.get("head") is None else None
        head_repo = head.repo if head is not None else ""
        if not head_repo:
            notes.append("# EAGLE-3 head: put the repository of the planned head in place of HEAD_REPOSITORY")
            head_repo = "HEAD_REPOSITORY"
    tree = sp.get("kind") == "dynamic_tree"
    if engine == "vllm" and sp.get("kind") == "tree":
        return _vllm_static_tree(d["kind"], head_repo, int(sp.get("k", 2)), int(sp.get("depth", 4))), notes + [
            "# vLLM 0.10.1-0.20.2 draft speculative_token_tree with the TREE_ATTN attention backend only: select it "
            "(VLLM_ATTENTION_BACKEND=TREE_ATTN in 0.10.x, vllm/envs.py; --attention-backend TREE_ATTN in 0.20.x)"]
    if engine == "vllm":
        cfg = {"method": d["kind"], "num_speculative_tokens": int(sp.get("depth", gamma)) if tree else gamma}
        if head_repo:
            cfg["model"] = head_repo
        if tree:
            notes.append("# vLLM drafts EAGLE chains; the planned SGLang EAGLE tree is written as a chain of its depth")
        return ["--speculative-config", json.dumps(cfg)], notes
    steps, topk, tokens = (sp.get("depth", 5), sp.get("top_k", 4), sp.get("budget", 32)) if tree else (gamma, 1, gamma + 1)
    flags = ["--speculative-algorithm", "EAGLE3" if d["kind"] == "eagle3" else "EAGLE"]
    if head_repo:
        flags += ["--speculative-draft-model-path", head_repo]
    return flags + ["--speculative-num-steps", str(steps), "--speculative-eagle-topk", str(topk),
                    "--speculative-num-draft-tokens", str(tokens)], notes


def vllm_kary_tree_paths(k: int, depth: int) -> list[tuple[int, ...]]:
    """vLLM's speculative_token_tree of a kary tree: every path of child ranks 0..k-1 up to `depth` long, sorted
    breadth-first as SpeculativeConfig.__post_init__ sorts it (key (len, path))."""
    from itertools import product
    return [path for level in range(1, depth + 1) for path in product(range(k), repeat=level)]


def _vllm_static_tree(method: str, head_repo: str, k: int, depth: int) -> list[str]:
    """--speculative-config of vLLM's static kary tree: num_speculative_tokens = the tree's draft tokens (the
    proposer returns one draft per tree node, EagleProposer.propose: [batch_size, num_tree_tokens])."""
    paths = vllm_kary_tree_paths(k, depth)
    cfg = {"method": method, "num_speculative_tokens": len(paths), "speculative_token_tree": str(paths)}
    if head_repo:
        cfg["model"] = head_repo
    return ["--speculative-config", json.dumps(cfg)]


# vLLM's V0 draft-model releases (0.4.1 - 0.7.x: profiles.engine_time.draft_vocabulary.VLLM_V0_DRAFT) take the draft
# model as flags of their own; --speculative-config is absent from their arg_utils.py (read in the 0.7.3 and 0.8.0
# wheels: --speculative-model, --num-speculative-tokens, --speculative-draft-tensor-parallel-size)
VLLM_SPECULATIVE_CONFIG_FROM = "0.8.0"


def _vllm_draft_flags(sc: dict, base_dir: Path, draft: str, gamma: int, tp: int) -> list[str] | None:
    """vLLM V0's draft-model flags where the release vLLM's script runs for candidate `sc` (its own where it names
    vLLM, else the one its tables give vLLM) is one without --speculative-config; None otherwise."""
    from profiles.measured.source import version_before
    cl = sc["cluster"]
    named = (cl.get("engine") or {}).get("framework") in (None, "vllm")
    role = "decode" if cl.get("disaggregation") else "colocated"
    framework, version = _role_release(sc, base_dir, role, None if named else {"framework": "vllm"})
    if framework != "vllm" or version is None or not version_before(version, VLLM_SPECULATIVE_CONFIG_FROM):
        return None
    flags = ["--speculative-model", draft, "--num-speculative-tokens", str(gamma)]
    return flags + (["--speculative-draft-tensor-parallel-size", str(tp)] if tp != 1 else [])


def _speculation(sc: dict, engine: str, base_dir: Path = Path(".")) -> tuple[list[str], list[str]]:
    """(flags, comments) of the scenario's drafter."""
    d = sc.get("drafter", {"kind": "none"})
    if d.get("kind", "none") == "none" or not d.get("gamma"):
        return [], []
    if d["kind"] in ("eagle3", "mtp"):
        return _eagle_family(sc, engine)
    shape = sc.get("speculation", {}).get("kind", "chain")
    notes = [f"# speculation shape {shape!r} is not a one-flag setting of either engine; the chain below uses the "
             "same draft model and γ"] if shape != "chain" else []
    if d["kind"] != "draft_model":
        return [], [f"# drafter {d['kind']!r}: set the engine's speculative method by hand"]
    other_vocab = _other_vocabulary(sc, engine)
    if other_vocab:
        return [], other_vocab
    draft, gamma = hf_repo(d["model"]), int(d["gamma"])
    if engine == "vllm":
        v0 = _vllm_draft_flags(sc, base_dir, draft, gamma, d.get("tp", 1))
        if v0 is not None:
            return v0, notes
        cfg = {"method": "draft_model", "model": draft, "num_speculative_tokens": gamma}
        if d.get("heterogeneous_vocab"):   # (TLI from vLLM 0.25.0: profiles.engine_time.draft_vocabulary)
            cfg["use_heterogeneous_vocab"] = True
        if d.get("tp", 1) != 1:
            cfg["draft_tensor_parallel_size"] = d["tp"]
        return ["--speculative-config", json.dumps(cfg)], notes
    return ["--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", draft,
            "--speculative-num-steps", str(gamma), "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", str(gamma + 1)], notes


def _other_vocabulary(sc: dict, engine: str) -> list[str]:
    """The comment lines written instead of the draft-model flags when the draft model's vocabulary size is
    not the target's (a cross-vocabulary drafter, e.g. TLI: profiles.acceptance.hetero_vocab); none when
    they agree. vLLM refuses such a draft model at start (vllm/config/speculative.py,
    SpeculativeConfig.verify_equal_vocab_size_if_draft_model, called from its validator and from
    v1/spec_decode/draft_model.py: "Target and draft model should have the same vocabulary size"); SGLang
    refuses it at start-up from 0.5.15 (StandaloneWorkerV2._validate_vocab_compatibility:
    profiles.engine_time.draft_vocabulary), and its earlier STANDALONE worker (speculative/standalone_worker.py)
    feeds the target's token ids to the draft model without a mapping. Either command line would not run what
    was simulated. A scenario with drafter.heterogeneous_vocab (vLLM >= 0.25.0,
    profiles.engine_time.draft_vocabulary) gets vLLM's use_heterogeneous_vocab in its flags instead."""
    target, draft = load_model(sc["cluster"]["model"]), load_model(sc["drafter"]["model"])
    if target.vocab_size == draft.vocab_size or (engine == "vllm" and sc["drafter"].get("heterogeneous_vocab")):
        return []
    why = ("vLLM refuses a draft_model whose vocabulary size differs from the target's "
           "(SpeculativeConfig.verify_equal_vocab_size_if_draft_model)" if engine == "vllm" else
           "SGLang refuses such a draft model from 0.5.15 (StandaloneWorkerV2._validate_vocab_compatibility); its "
           "earlier STANDALONE drafter reads the target's token ids, with no mapping between vocabularies")
    return [f"# draft model {draft.name}: a {draft.vocab_size:,}-token vocabulary, {target.name} has "
            f"{target.vocab_size:,}; {why}: no speculative flags are written (set the speculative method by hand)"]


ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def engine_refusal(sc: dict, engine: str, base_dir: Path | None = None) -> str | None:
    """Why `engine` (vllm | sglang) cannot serve candidate `sc`, one line, or None where it can. The engine the
    candidate names (the plan's, vllm where it names none) is the one its DES ran: None. Another engine is judged
    as a scenario naming it runs (cluster.engine {framework: engine}: the release its measured tables on the GPU
    give, else its newest modelled one), built as a run builds it (simulator.prepare: every engine rule the run
    applies before it starts — FP8 experts on an A100 under SGLang, which never runs them weight-only
    (profiles.engine_time.fp8_marlin), an architecture or rope scaling the release cannot load
    (profiles.engine_time.architectures), a speculation method it refuses on the target
    (profiles.engine_time.spec_architectures), a drafter or flag it lacks (profiles.engine_time.support)). A
    launch script for it would not start the server the plan priced: `draftsim plan` writes none and says why."""
    import simulator
    from simulator.errors import ScenarioError
    cluster = sc["cluster"]
    if engine == ((cluster.get("engine") or {}).get("framework") or "vllm"):
        return None
    scenario = {**sc, "cluster": {**cluster, "engine": {"framework": engine}}}
    try:
        simulator.prepare(scenario, base_dir=Path(".") if base_dir is None else base_dir)
    except ScenarioError as exc:
        return str(exc).splitlines()[0]
    return None


def _format(cmd: list[str]) -> str:
    """One shell command, a flag and its value per line."""
    first = next(i for i, c in enumerate(cmd) if c.startswith("--"))
    parts = [" ".join(shlex.quote(c) for c in cmd[:first])]
    for c in cmd[first:]:
        if c.startswith("--"):
            parts.append(c)
        else:
            parts[-1] += " " + shlex.quote(c)
    return " \\\n    ".join(parts)


def launch_script(sc: dict, engine: str, title: str, base_dir: Path | None = None) -> str:
    """A shell script with one command line per role of scenario `sc` for `engine` (vllm | sglang); `base_dir`:
    the folder its relative paths are read from (the plan's; None: the working directory)."""
    base_dir = Path(".") if base_dir is None else base_dir
    model = hf_repo(sc["cluster"]["model"])
    spec_flags, notes = _speculation(sc, engine, base_dir)
    lines = ["#!/bin/sh", f"# {title}", "# written by draftsim plan (simulator/workflows/plan/launch.py); one server per "
             "replica, on its own GPUs (CUDA_VISIBLE_DEVICES)"]
    if sc["cluster"].get("dtype") == "int4":
        lines.append("# int4 weights: serve an AWQ or GPTQ 4-bit checkpoint of the model (the engine reads its "
                     "quantization from the checkpoint's config)")
    lines += notes
    for role, replicas, par in _roles(sc):
        gpus = par.get("ep", 1) * par.get("pp", 1) if par.get("ep", 1) > 1 else par.get("tp", 1) * par.get("pp", 1)
        args = _common(sc, par, engine, base_dir, role) + (spec_flags if role != "prefill" else [])
        if engine == "vllm":
            cmd = ["vllm", "serve", model] + args
            if role != "colocated":
                cmd += ["--kv-transfer-config", json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"})]
        else:
            cmd = ["python", "-m", "sglang.launch_server", "--model-path", model] + args
            if role != "colocated":
                cmd += ["--disaggregation-mode", role]
        lines += ["", f"# {role}: {replicas} replica(s) of {gpus} GPU(s) each", _format(cmd)]
    if len(_roles(sc)) > 1:
        lines += ["", "# route requests to the prefill servers and hand their KV to the decode servers with the "
                  "engine's disaggregation proxy (vLLM: its disaggregated-serving proxy example; SGLang: "
                  "python -m sglang_router.launch_router --pd-disaggregation)"]
    return "\n".join(lines) + "\n"
