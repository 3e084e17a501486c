"""A replica's GPU memory: what each GPU keeps for the KV cache (and recurrent state) under the engine's own
accounting, for the replica factory (simulator.cluster.factory.build_replica_kind) and the plan's screen.

Memory model (per GPU of a replica, the binding GPU sets the capacity): the memory that gpu_memory_utilization
is a fraction of, minus the target's weight shard (weights / (tp·pp)) minus the draft's weight shard (draft
weights / draft tp; the draft lives on the first draft_tp GPUs of the replica) leaves room for KV; one token
costs the target's per-GPU KV bytes plus the draft's. Under vLLM on a GPU (`vllm_profile_run`) that is vLLM
V1's accounting (simulator.cluster.vllm_memory): the memory CUDA reports × gpu_memory_utilization, minus the
weights as loaded (MXFP4 experts re-laid out by their MoE backend), the start-up profile run's activation peak
(max_num_batched_tokens tokens, min(max_num_seqs, that) rows sampled) and the non-torch increase; the CUDA-graph
estimate of vLLM >= 0.21 is not subtracted (named there). TensorRT-LLM (the engine,
simulator.cluster.factory.deployment_release) takes its fraction of the memory the weights leave free: KV = (HBM −
weights) × gpu_memory_utilization, its KvCacheConfig.free_gpu_memory_fraction (default 0.9; tensorrt_llm/_torch/pyexecutor/_util.py
KvCacheCreator._cal_max_tokens at commit d8ae02c: (total_gpu_memory − peak_memory) × fraction, the peak being
the weights plus the profiled activations, which this model leaves out). SGLang on a GPU (`sglang_deployment`)
keeps its own pool (simulator.cluster.sglang_memory): mem_fraction_static × the free memory after start-up minus
the weights; before 0.5.14 a draft's weights and KV stay outside it. The local CPU: HBM ×
gpu_memory_utilization minus the weights, activations taken as covered by the rest. Without
cluster.gpu_memory_utilization each engine applies its own default (`memory_fraction`: 0.9 for vLLM and
TensorRT-LLM, SGLang's by release, GPU, parallelism and speculation); a value given is used as given.
Expert parallelism (parallelism.ep > 1, MoE targets): each GPU holds 1/ep of the routed experts and 1/tp
of everything else (models.moe_routing.weight_bytes_per_gpu); each of the ep/tp data-parallel attention
groups keeps the KV of its own requests, so the replica holds attention_dp × one group's tokens.
Approximation: the replica's requests are pooled as if the groups were always balanced (the op graph
makes the same assumption for their compute). The step cost prices routing skew, pre-scheduling and the
all-to-all on the link topology (simulator.cost.moe).
Hybrid models (linear-attention or Mamba layers, models.mixers): a token's KV is that of the softmax-attention
layers only, and every request holds a constant recurrent state (`ReplicaKind.state_bytes_per_request`, per
GPU, with the state copies speculation keeps: models.mixers.state_copies). Both live in one pool of uniform
pages as vLLM V1's hybrid KV-cache manager lays them out (`hybrid_layout`, simulator.core.kv.hybrid_state):
the free memory becomes blocks, and a request holds attention blocks for its tokens and state blocks from
admission to release.
Sliding-window models (gpt-oss) under vLLM V1 (`frees_window_blocks`): full-attention and sliding-window layers
form KV-cache groups in one pool (`sliding_window_layout`, simulator.core.kv.sliding_window); the sliding
groups free their blocks outside the window step by step. Elsewhere every layer holds the full context.
"""
from __future__ import annotations

import math

from models.spec import ModelSpec, dtype_bytes, kv_cache_dtype
from models.step import Parallelism
from profiles.hardware import HardwareSpec
from simulator.cost.drafters import DrafterBuild
from simulator.errors import ScenarioError
from simulator.cluster.sglang_memory import SglangDeployment, gpu_memory_mib
from simulator.cluster.vllm_memory import ProfileRun
from profiles.engine_time.batch_defaults import DEFAULT_MAX_NUM_SEQS

GIB = 1024 ** 3
CPU_ID = "cpu-local"   # the catalog's entry for the local CPU (nominal figures; profiles measure the real ones)


def vllm_profile_run(release: tuple[str, str | None], hw: HardwareSpec, scheduler,
                     max_seqs: int = DEFAULT_MAX_NUM_SEQS) -> ProfileRun | None:
    """The start-up profile run whose memory vLLM subtracts (simulator.cluster.vllm_memory), or None where the
    plain rule applies (another framework, or the local CPU); `release`: the deployment's (framework,
    version), `deployment_release`; `scheduler`: the scheduler section (None: 8192 tokens); `max_seqs`: the
    running-request limit (`max_num_seqs`)."""
    framework, version = release
    if framework != "vllm" or hw.id == CPU_ID:
        return None
    return ProfileRun(version, scheduler.max_batched_tokens if scheduler is not None else 8192, max_seqs)


# The engines' own default memory fraction where a scenario gives no cluster.gpu_memory_utilization: vLLM's
# EngineArgs.gpu_memory_utilization 0.9; TensorRT-LLM's KvCacheConfig.free_gpu_memory_fraction 0.9
# (tensorrt_llm/_torch/pyexecutor/_util.py `_get_free_gpu_memory_fraction`: `fraction = 0.9` when unset);
# draftsim's plain rule (the local CPU) keeps 0.9 too. SGLang's depends on its release and deployment
# (simulator.cluster.sglang_memory.default_mem_fraction_static).
DEFAULT_MEMORY_FRACTION = {"vllm": 0.9, "trtllm": 0.9}
PLAIN_MEMORY_FRACTION = 0.9

# draftsim's drafter engine family -> SGLang's --speculative-algorithm (as simulator.workflows.plan.launch writes
# it; a model-free drafter reserves no draft memory, as NGRAM); the EAGLE family and any other: EAGLE
SGLANG_ALGORITHM = {"draft_model": "STANDALONE", "ngram": "NGRAM", "suffix": "NGRAM"}


def sglang_deployment(release: tuple[str, str | None], engine_cfg, hw: HardwareSpec, target: ModelSpec,
                      par: Parallelism, scheduler, family: str | None, q: int, where: str) -> SglangDeployment | None:
    """SGLang's view of the deployment that sets its memory pool (simulator.cluster.sglang_memory), or None
    where the engine (`release`: `deployment_release`) is not SGLang or the hardware is the local CPU: its
    release, --tp-size (the EP size under DP attention, as simulator.workflows.plan.launch writes it),
    --chunked-prefill-size (the scheduler's budget, chunk_tokens for sarathi), the decode CUDA graphs' largest
    batch (cluster.engine.capture_sizes, else profiles.engine_time.sglang_decode_graphs.sglang_max_bs) and the prefill graphs'
    token buckets where the release turns them on (`sglang_prefill_sizes`; in 0.5.11 - 0.5.14 an EAGLE target's
    graphs are captured, so reserved for, though its extend runs eagerly). Approximation, named:
    cluster.engine.cuda_graphs none (--disable-cuda-graph) is taken to turn the prefill graphs off too."""
    from profiles.engine_time.frameworks import release_or_modelled
    from profiles.engine_time.graphs import PrefillContext, sglang_prefill_sizes
    from profiles.engine_time.sglang_decode_graphs import sglang_max_bs
    from profiles.measured.source import version_key
    from simulator.config.engine import EngineConfig
    framework, version = release
    if framework != "sglang" or hw.id == CPU_ID:
        return None
    version = release_or_modelled(framework, version)   # (None: deployment_release found no engine-time entry)
    engine_cfg = engine_cfg if engine_cfg is not None else EngineConfig()
    tp = par.ep if par.ep > 1 else par.tp
    chunk = (scheduler.chunk_tokens if scheduler.kind == "sarathi" else scheduler.max_batched_tokens) \
        if scheduler is not None else 8192
    role = where.rsplit(".", 1)[-1] if where.startswith("cluster.disaggregation.") else None
    graphs = engine_cfg.cuda_graphs != "none"
    v = version_key(version)
    flag_family = None if family == "eagle" and version_key("0.5.11") <= v < version_key("0.5.15") else family
    buckets = sglang_prefill_sizes(version, chunk, PrefillContext(flag_family, par.pp, par.attention_dp,
                                                                   target.is_mla, role)) if graphs else ()
    sizes = engine_cfg.capture_sizes
    max_bs = max(sizes) if sizes else sglang_max_bs(gpu_memory_mib(hw), tp, version)
    if not graphs and v >= version_key("0.5.15"):
        max_bs = 0   # (the decode graph backend DISABLED: no graph reserve)
    return SglangDeployment(
        version=version, tp=tp, pp=par.pp, dp_attention=par.attention_dp,
        speculative=None if family is None else SGLANG_ALGORITHM.get(family, "EAGLE"),
        chunked_prefill_size=chunk, prefill_buckets=tuple(buckets), max_bs=max_bs, max_bs_given=bool(sizes),
        max_running_requests=scheduler.max_batch_size if scheduler is not None else None, mla=target.is_mla,
        role=role, draft_tokens=q)


def memory_fraction(given: float | None, framework: str, hw: HardwareSpec,
                    sglang: SglangDeployment | None) -> float:
    """The fraction the replica's memory rule applies: `given` (cluster.gpu_memory_utilization: vLLM's
    --gpu-memory-utilization, SGLang's --mem-fraction-static, TensorRT-LLM's free_gpu_memory_fraction) as
    given, else the engine's own default (DEFAULT_MEMORY_FRACTION, SGLang's by release)."""
    from simulator.cluster.sglang_memory import default_mem_fraction_static
    if given is not None:
        return given
    if sglang is not None:
        return default_mem_fraction_static(sglang, hw)
    return PLAIN_MEMORY_FRACTION if hw.id == CPU_ID else DEFAULT_MEMORY_FRACTION.get(framework, PLAIN_MEMORY_FRACTION)


def free_bytes_per_gpu(hw: HardwareSpec, target: ModelSpec, par: Parallelism, dtype: str, util: float,
                       drafter: DrafterBuild | None = None, where: str = "cluster", framework: str = "vllm",
                       profile: ProfileRun | None = None, sglang: SglangDeployment | None = None) -> float:
    """Memory left for KV (and recurrent state) on each GPU of a replica after the target's and `drafter`'s
    weights, by `framework`'s rule (module docstring): under vLLM (`profile`, from `vllm_profile_run`) also its
    profile run's activations and non-torch memory; for trtllm a fraction of what the weights leave; under
    SGLang on a GPU (`sglang`, from `sglang_deployment`) its pool, `util` × the free memory after start-up less
    the weights (simulator.cluster.sglang_memory; pass the drafter only where the release counts it there).
    ScenarioError naming the field when they do not fit."""
    from models.moe_routing import weight_bytes_per_gpu
    from simulator.cluster.sglang_memory import pool_bytes, pre_model_load_bytes
    from simulator.cluster.vllm_memory import device_total_bytes, profile_overhead_bytes
    target_weights = weight_bytes_per_gpu(target, par, dtype) if par.ep > 1 else target.weight_bytes(dtype) / par.gpus
    extra_w = drafter.weight_bytes_per_gpu if drafter is not None else 0.0
    overhead = profile_overhead_bytes(hw, target, par, dtype, profile) if profile is not None else 0.0
    total = device_total_bytes(hw) if profile is not None else hw.hbm_bytes
    if sglang is not None:
        total = pre_model_load_bytes(hw, sglang.tp)
        free = pool_bytes(hw, sglang.tp, util, target_weights + extra_w)
    elif framework == "trtllm":   # free_gpu_memory_fraction of the memory left after the weights
        free = (total - target_weights - extra_w) * util
    else:
        free = total * util - target_weights - extra_w - overhead
    if free <= 0:
        need = target_weights + extra_w
        draft = drafter.spec if drafter is not None and drafter.colocated_model else None
        field = "cluster.model" if where == "cluster" else f"{where}.parallelism"
        raise ScenarioError(field, f"{target.name}{' + draft ' + draft.name if draft else ''} needs "
                            f"{need / GIB:.1f} GiB of weights per GPU at tp={par.tp}, pp={par.pp}"
                            f"{f', ep={par.ep}' if par.ep > 1 else ''}"
                            f"{f' and {overhead / GIB:.1f} GiB of vLLM start-up profile (activations, non-torch)' if overhead else ''}"
                            f" but {hw.id} offers "
                            + (f"{total * util / GIB:.1f} GiB at SGLang's mem_fraction_static={util} of the "
                               f"{total / GIB:.1f} GiB free after start-up" if sglang is not None else
                               f"{total / GIB:.1f} GiB" if framework == "trtllm" else
                               f"{total * util / GIB:.1f} GiB at gpu_memory_utilization={util}") + "; "
                            + (f"raise cluster.gpu_memory_utilization (SGLang's --mem-fraction-static) above "
                               f"{math.ceil(need / total * 1000) / 1000}, " if sglang is not None else "")
                            + f"raise {where}.parallelism.tp/pp{'/ep' if target.is_moe else ''} or pick larger hardware")
    return free


def kv_capacity_tokens(hw: HardwareSpec, target: ModelSpec, par: Parallelism, dtype: str, util: float,
                       drafter: DrafterBuild | None = None, where: str = "cluster", kv_dtype: str | None = None,
                       kv_fraction: float = 1.0, framework: str = "vllm", profile: ProfileRun | None = None,
                       sglang: SglangDeployment | None = None) -> int:
    """Tokens of KV cache a replica can hold (see the module docstring for the memory model), with the
    weights and per-token KV of `drafter` on the target's GPUs; KV in `kv_dtype` (models.spec.kv_cache_dtype);
    `kv_fraction` scales the target's KV per token (ShadowKV keeps a fraction of it on the GPU:
    simulator.cost.shadowkv). A hybrid model's KV is its attention layers' (its state: `hybrid_layout`).
    `framework`: whose rule; `profile`: vLLM's start-up profile run (`vllm_profile_run`; None: the plain rule);
    `sglang`: SGLang's deployment (`sglang_deployment`; None: not SGLang on a GPU)."""
    free = free_bytes_per_gpu(hw, target, par, dtype, util, drafter, where, framework, profile, sglang)
    per_token = target.kv_bytes_per_token_per_gpu(par, kv_cache_dtype(dtype, kv_dtype)) * kv_fraction
    if drafter is not None:
        per_token += drafter.kv_bytes_per_token_per_gpu
    return int(free // per_token) * par.attention_dp


def hybrid_layout(hw: HardwareSpec, target: ModelSpec, par: Parallelism, dtype: str, kv_dtype: str, util: float,
                  drafter: DrafterBuild | None, framework: str, draft_tokens: int, where: str = "cluster",
                  profile: ProfileRun | None = None, sglang: SglangDeployment | None = None):
    """The unified page layout of a hybrid model's replica (simulator.core.kv.hybrid_state): attention KV and
    every request's recurrent state in one pool, the state copies `framework` keeps while speculating with
    `draft_tokens` drafts per step (models.mixers.state_copies)."""
    from models.mixers import state_copies
    from simulator.core.kv.hybrid_state import hybrid_page_layout
    free = free_bytes_per_gpu(hw, target, par, dtype, util, drafter, where, framework, profile, sglang)
    extra = drafter.kv_bytes_per_token_per_gpu if drafter is not None else 0.0
    layout = hybrid_page_layout(target, par, dtype, kv_dtype, free, draft_tokens,
                                state_copies(framework, draft_tokens), extra)
    if layout.total_blocks < layout.attention_groups + layout.state_blocks_per_request:
        raise ScenarioError("cluster.model" if where == "cluster" else f"{where}.parallelism",
                            f"no room for one request's recurrent state of {target.name} on {hw.id} "
                            f"({layout.block_bytes / GIB:.2f} GiB per block); raise the parallelism")
    return layout


HYBRID_KV_MANAGER_SINCE = "0.10.0"   # vLLM V1's hybrid KV-cache manager (sliding-window groups), simulator.core.kv.sliding_window


def frees_window_blocks(release: tuple[str, str | None], hw: HardwareSpec, where: str) -> bool:
    """Whether the deployment's engine frees sliding-window layers' blocks outside the window (vLLM V1's
    hybrid KV-cache manager, from HYBRID_KV_MANAGER_SINCE, simulator.core.kv.sliding_window): not on the CPU
    backend nor with a KV connector (a disaggregated pool), as vllm/config VllmConfig.__post_init__ turns it
    off there (0.11.0). Approximation, named: SGLang's SWA pool (`--swa-full-tokens-ratio`) and TensorRT-LLM's
    variable sliding-window attention keep their own rules, not modelled: their sliding-window layers hold
    the full context (models.spec)."""
    from profiles.measured.source import version_key
    framework, version = release   # (deployment_release)
    if framework != "vllm" or hw.id == CPU_ID or where != "cluster":
        return False
    return version is None or version_key(version) >= version_key(HYBRID_KV_MANAGER_SINCE)


def keeps_window(target: ModelSpec, release: tuple[str, str | None], hw: HardwareSpec, where: str,
                 kv_layout=None) -> bool:
    """Whether a pool of `target` keeps its sliding-window layers' blocks to their window (ReplicaKind.window_layout,
    simulator.core.kv.sliding_window): a sliding-window model without recurrent state or MLA, in the paged layout
    (`kv_layout`: cluster.kv_cache.layout; None: paged), whose engine frees them (frees_window_blocks)."""
    return bool(target.sliding_window_layers) and not target.num_state_layers and not target.is_mla \
        and (kv_layout is None or kv_layout.kind == "paged") and frees_window_blocks(release, hw, where)


def sliding_window_layout(hw: HardwareSpec, target: ModelSpec, par: Parallelism, dtype: str, kv_dtype: str,
                          util: float, drafter: DrafterBuild | None, scheduler, q: int, where: str = "cluster",
                          profile: ProfileRun | None = None):
    """The page layout of full-attention and sliding-window groups of a replica of `target`
    (simulator.core.kv.sliding_window), with a colocated drafter's KV; `scheduler`: the scheduler section
    (its block size, and the budget that bounds a step's tokens under vllm_v1's chunking)."""
    import math
    from models.spec import kv_heads_per_gpu
    from simulator.core.kv.sliding_window import window_page_layout
    free = free_bytes_per_gpu(hw, target, par, dtype, util, drafter, where, profile=profile)
    per_layer = 2 * kv_heads_per_gpu(target, par.tp) * target.head_dim * dtype_bytes(kv_dtype)
    full = math.ceil(target.mixer_layers("full_attention") / par.pp)
    window = math.ceil(target.mixer_layers("sliding_attention") / par.pp)
    block = scheduler.block_size if scheduler is not None else 16
    step = scheduler.max_batched_tokens if scheduler is not None and scheduler.kind == "vllm_v1" else None
    layout = window_page_layout(full, window, target.sliding_window, per_layer, free, block, par.attention_dp,
                                drafter.kv_bytes_per_token_per_gpu if drafter is not None else 0.0, step, q)
    if layout.total_blocks < layout.full_groups + layout.window_groups:
        raise ScenarioError("cluster.model" if where == "cluster" else f"{where}.parallelism",
                            f"no room for a single KV block of {block} tokens on {hw.id}")
    return layout


def state_bytes_per_request(target: ModelSpec, par: Parallelism, dtype: str, framework: str,
                            draft_tokens: int) -> float:
    """Recurrent-state bytes per request on each GPU of a replica, with the copies `framework` keeps while
    speculating with `draft_tokens` drafts per step (models.mixers.state_copies; the conv window keeps the
    draft positions too); 0 for a model without state layers."""
    from models.mixers import state_copies
    if not target.num_state_layers:
        return 0.0
    return target.state_bytes_per_request_per_gpu(par, dtype, draft_tokens, state_copies(framework, draft_tokens))
