"""The scenario schema: what a user writes in YAML, validated with pydantic at the boundary.

Internally the engine works on frozen dataclasses derived from these models (see simulator.cluster.build).
Validation errors are turned into one-line `ScenarioError`s naming the field path (`load_scenario`).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from models.files import MAX_DEPTH
from simulator.console.printable import printable
from simulator.errors import ScenarioError
from simulator.config.base import PATH_TEXT, Strict, field_error
from simulator.config.dask_address import SCHEDULER_SCHEMES, scheduler_address
from simulator.results.slo import SLO
from simulator.config.speculation import (CascadeDrafterConfig, ChainConfig, FixedPolicyConfig, SparseKVDrafterConfig, HeadDrafterConfig, LayerSkipDrafterConfig,
                                          NgramDrafterConfig, Eagle3DrafterConfig, MtpDrafterConfig,
                                   PairAcceptanceConfig, PolicyConfig, RankedAcceptanceConfig, SpeculationConfig,
                                   ContextsAcceptanceConfig, DriftingAcceptanceConfig, StepLevelAcceptanceConfig,
                                   PublishedAcceptanceConfig)
from simulator.config.engine import EngineConfig
from simulator.config.names import RULE as NAME_RULE, FolderName, name_problem
from simulator.config.speculation import SessionsAcceptanceConfig, SuffixDrafterConfig
from simulator.config.retrieval import RetrievalConfig
from simulator.config.serving import LatencyConfig, MoeConfig, ParallelismConfig, SchedulerConfig
from simulator.config.workload import WorkloadConfig
from simulator.core.workload import MAX_SIM_SPAN_S
from profiles.hardware_file import PLAUSIBLE
from profiles.prices import MAX_USD_PER_GPU_HOUR, MAX_USD_PER_KWH, MIN_USD_PER_GPU_HOUR
from simulator.config.validation import validate_config


class PoolConfig(Strict):
    """One pool of a disaggregated cluster: its replica count, per-replica parallelism (TP/PP/EP) and
    hardware (default: `cluster.hardware`; a catalog id, a hardware YAML file or an inline block)."""

    replicas: int = Field(1, ge=1, le=4096)
    parallelism: ParallelismConfig = ParallelismConfig()
    hardware: Annotated[str | dict[Any, Any] | None, PATH_TEXT] = None
    router: str = "round_robin"

    @field_validator("hardware")
    @classmethod
    def _hardware_given(cls, hardware):
        # ('' and {} are no hardware: the pool took cluster.hardware without a word, where cluster.hardware
        # refuses both)
        if hardware is not None and not (hardware.strip() if isinstance(hardware, str) else hardware):
            raise ValueError("an empty hardware; give a catalog id, a hardware YAML file or an inline block, or "
                             "leave it out for cluster.hardware")
        return hardware


class KVTransferConfig(Strict):
    """How a request's KV cache moves from its prefill replica to its decode replica (simulator.cluster.handoff).
    `link`: scaleup = the pools share a scale-up domain (NVLink/NVSwitch); scaleout = they sit in
    different nodes and the KV crosses the NICs. `layerwise_overlap`: send layer l as soon as the
    prefill has computed it."""

    link: Literal["scaleup", "scaleout"] = "scaleup"
    layerwise_overlap: bool = False


class DisaggregationConfig(Strict):
    """Disaggregated prefill/decode: a prefill pool that only prefills and a decode pool that only
    decodes (and drafts), with the KV cache transferred in between (simulator.cluster.handoff)."""

    prefill: PoolConfig = PoolConfig()
    decode: PoolConfig = PoolConfig()
    kv_transfer: KVTransferConfig = KVTransferConfig()

    @model_validator(mode="after")
    def _tp_sizes_divide(self) -> "DisaggregationConfig":
        """Each decode rank reads its share of the KV cache from prefill ranks chosen by the ratio of the two TP
        sizes, so one must divide the other: vLLM's NixlConnector takes the ratio in TpKVTopology.tp_ratio
        (vllm/distributed/kv_transfer/kv_connector/utils.py; nixl_connector.py before it moved there), which
        asserts "Local tensor parallel size ... is not divisible by remote tensor parallel size" (and, since
        vllm-project/vllm PR #27274, prefill TP > decode TP, its mirror). Prefill tp 4 with decode tp 6 ran here
        (exit 0). Approximation: the rule is vLLM's; other engines' KV connectors were not checked and get it too.
        The older NixlConnector's refusal of a decode TP below the prefill TP (issue #21576, before PR #27274) is
        not applied: the release that lifted it was not established."""
        p, d = self.prefill.parallelism.tp, self.decode.parallelism.tp
        if p % d and d % p:
            divisors = ", ".join(str(n) for n in range(1, p + 1) if p % n == 0)
            raise field_error("decode.parallelism.tp", f"{d} and the prefill pool's tp {p} do not divide each other; "
                              f"the decode ranks read the KV cache from the prefill ranks by the ratio of the two "
                              f"(vLLM NixlConnector, TpKVTopology.tp_ratio); allowed: {divisors} or a multiple of {p}")
        return self


class PagedKVLayoutConfig(Strict):
    """The target's KV cache in HBM, paged (vLLM's layout; the default)."""

    kind: Literal["paged"] = "paged"


class ShadowKVLayoutConfig(Strict):
    """ShadowKV (Sun et al. 2024): keys kept on the GPU as a rank-`rank` factor plus one landmark per
    `chunk_tokens` tokens, values offloaded to host memory; each decode step attends to `sparse_budget`
    tokens per request (simulator.cost.shadowkv). Defaults: the paper's Llama-3.1-8B setting (rank 160,
    8-token chunks, a 2,048-token budget = 1.56 % of 128k)."""

    kind: Literal["shadowkv"]
    rank: int = Field(160, ge=1, le=8192)
    sparse_budget: int = Field(2048, ge=1)
    chunk_tokens: int = Field(8, ge=1, le=4096)


KVLayoutConfig = Annotated[Union[PagedKVLayoutConfig, ShadowKVLayoutConfig], Field(discriminator="kind")]


class KVCacheConfig(Strict):
    """The replicas' KV cache beyond paging (simulator.core.kv).

    `prefix_caching`: keep the KV blocks of finished requests under their content hashes and reuse them
    for later prompts that start with the same tokens (vLLM's automatic prefix caching: hashes of full
    blocks, LRU eviction of free cached blocks). `shared_prefix_attention`: decode steps read the blocks
    several requests share once for all of them (Hydragen/BatchLLM; needs prefix_caching).
    `preemption`: recompute (free the KV, re-prefill later; vLLM V1) or swap (copy the KV to host memory
    and back over the hardware's host link; vLLM V0's swap space). `host_memory_gib`: host memory per GPU
    for swapped KV and, with prefix caching, a second LRU tier for evicted prefix blocks (loaded back over
    the host link instead of recomputed; LMCache/vLLM's CPU offloading). `layout`: how the target's KV is
    stored — paged in HBM (default) or ShadowKV's low-rank keys with host-resident values."""

    prefix_caching: bool = False
    shared_prefix_attention: bool = False
    preemption: Literal["recompute", "swap"] = "recompute"
    host_memory_gib: float = Field(0.0, ge=0.0, le=65536.0, allow_inf_nan=False)
    layout: KVLayoutConfig = PagedKVLayoutConfig()

    @model_validator(mode="after")
    def _consistent(self) -> "KVCacheConfig":
        if self.layout.kind == "shadowkv" and (self.prefix_caching or self.preemption == "swap"):
            raise ValueError("layout 'shadowkv' keeps its values in host memory already: prefix_caching and "
                             "swap preemption are modelled for the paged layout")
        if self.shared_prefix_attention and not self.prefix_caching:
            raise ValueError("shared_prefix_attention needs prefix_caching: true (shared blocks come from the cache)")
        if self.preemption == "swap" and self.host_memory_gib <= 0:
            raise ValueError("preemption 'swap' needs host_memory_gib > 0 (where the swapped KV goes)")
        return self


class ClusterConfig(Strict):
    """`model`: a catalog name (`draftsim catalog models`), a path to a Hugging Face config.json or a
    catalog-format YAML (relative to the scenario file), or an inline mapping of model fields
    (models.load). `hardware`: a catalog id, a hardware YAML file or an inline mapping
    (profiles.hardware_file). `dtype`: the weights' dtype (int4: weight-only; mxfp4: the routed experts only,
    weight-only, the rest bf16 — gpt-oss; fp8 and fp8_block need FP8 tensor cores; nvfp4 FP4 tensor cores, i.e.
    Blackwell); `kv_dtype`: the KV cache's (default: the
    weights' dtype where it is a KV format, fp8 for nvfp4 weights, else bf16; nvfp4 needs FP4 tensor cores).
    `max_model_len`: the longest context a request may reach (vLLM --max-model-len; default and upper
    bound: the context the engine's release derives from the model's config, profiles.engine_time.context_length).
    `dtype` left out: a quantized config.json's own format, else bf16 (models.quant_config.served_dtype). `gpu_memory_utilization`: the engine's memory fraction,
    used as given (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static, TensorRT-LLM
    free_gpu_memory_fraction); default: the engine's own (0.9 for vLLM and TensorRT-LLM, SGLang's by release,
    GPU and deployment: simulator.cluster.sglang_memory)."""

    hardware: Annotated[str | dict[Any, Any], PATH_TEXT] = "h100-sxm"   # (keys named by profiles.hardware_file, as model's by models.load)
    model: Annotated[str | dict[Any, Any], PATH_TEXT]   # (a mapping's keys are named by models.load: a number key is an unknown field)
    dtype: Literal["fp32", "bf16", "fp16", "fp8", "fp8_block", "int4", "nvfp4", "mxfp4"] = "bf16"
    kv_dtype: Literal["fp32", "bf16", "fp16", "fp8", "nvfp4"] | None = None
    max_model_len: int | None = Field(None, ge=2)
    kv_cache: KVCacheConfig = KVCacheConfig()
    replicas: int = Field(1, ge=1, le=4096)
    parallelism: ParallelismConfig = ParallelismConfig()
    router: str = "round_robin"
    gpu_memory_utilization: float | None = Field(None, gt=0.0, le=1.0)
    latency: LatencyConfig = LatencyConfig()
    engine: EngineConfig = EngineConfig()
    moe: MoeConfig = MoeConfig()
    disaggregation: DisaggregationConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _engine_fills_its_sections(cls, data):
        """`cluster.engine` names the framework (the kernels' too unless cluster.latency.framework says
        otherwise) and, where given, prefix caching (cluster.kv_cache.prefix_caching, which must agree);
        `cluster.latency.engine_version` is the older spelling of `cluster.engine.version`."""
        if not isinstance(data, dict) or not isinstance(data.get("engine"), dict):
            return data
        engine, data = data["engine"], dict(data)
        latency = data.get("latency") if isinstance(data.get("latency"), dict) else None
        framework = _engine_field(engine, "framework")
        if framework is not None and "latency" not in data:
            data["latency"] = {"framework": framework}
        elif framework is not None and latency is not None and "framework" not in latency:
            data["latency"] = {**latency, "framework": framework}
        if latency is not None and None not in (ours := _engine_field(engine, "version"),
                                                theirs := _section_field(LatencyConfig, latency, "engine_version")) \
                and ours != theirs:   # (as each reads it: "v0.11.0" and "0.11.0" are one release)
            raise ValueError("cluster.engine.version and cluster.latency.engine_version (its older spelling) differ; "
                             "give one")
        caching = _engine_field(engine, "prefix_caching")
        if caching is not None and isinstance(data.get("kv_cache", {}), dict):
            kv = data.get("kv_cache", {})
            theirs = _section_field(KVCacheConfig, kv, "prefix_caching")
            if theirs is not None and theirs != caching:
                raise ValueError("cluster.engine.prefix_caching and cluster.kv_cache.prefix_caching differ; give one")
            filled = {**kv, "prefix_caching": caching}
            refusal = _refusal_of_fill(KVCacheConfig, kv, filled)
            if refusal is not None:   # (named as written: the kv_cache section never said prefix_caching)
                raise field_error("engine.prefix_caching", f"{str(caching).lower()} (it sets "
                                  f"cluster.kv_cache.prefix_caching): {refusal}")
            data["kv_cache"] = filled
        return data

    def entry_router(self) -> tuple[str, str]:
        """(field, name) of the router of the pool requests enter: `router`, or the prefill pool's where
        disaggregated."""
        if self.disaggregation is None:
            return "cluster.router", self.router
        return "cluster.disaggregation.prefill.router", self.disaggregation.prefill.router

    @model_validator(mode="after")
    def _pools_own_their_layout(self) -> "ClusterConfig":
        if self.disaggregation is not None and (self.replicas != 1 or self.parallelism != ParallelismConfig()):
            raise ValueError("with cluster.disaggregation set, give replicas and parallelism per pool "
                             "(cluster.disaggregation.prefill / .decode), not under cluster")
        if self.disaggregation is not None and self.router != "round_robin":   # (read by nothing: each pool routes)
            raise field_error("router", "with cluster.disaggregation set, each pool routes its own requests: give "
                              "cluster.disaggregation.prefill.router / .decode.router, not cluster.router")
        kv = self.kv_cache   # (simulator.cluster.build: a decode pool's KV manager has no host tier)
        if self.disaggregation is not None and kv.preemption == "swap":
            raise field_error("kv_cache.preemption", "'swap' keeps a preempted decoding request's KV in host memory; "
                              "with cluster.disaggregation the prefill pool holds no decoding request and the decode "
                              "pool keeps no host memory, so it would apply to nothing; allowed here: recompute")
        if self.disaggregation is not None and kv.host_memory_gib > 0 and not kv.prefix_caching:
            raise field_error("kv_cache.host_memory_gib", "with cluster.disaggregation host memory serves the prefill "
                              "pool's prefix cache only (the decode pool keeps none): give kv_cache.prefix_caching: "
                              "true, or 0")
        from profiles.select import LATENCY_SOURCES
        if LATENCY_SOURCES[self.latency.source].whole_passes and self.kv_cache.shared_prefix_attention:
            raise ValueError(f"shared_prefix_attention re-prices attention op by op; latency source "
                             f"{self.latency.source} prices whole measured passes (set "
                             "kv_cache.shared_prefix_attention: false)")
        return self

    @model_validator(mode="after")
    def _moe_needs_expert_parallelism(self) -> "ClusterConfig":
        """`cluster.moe` prices the all-to-alls of expert parallelism (simulator.cost.moe); with ep 1 in every
        pool (and on a dense model, where ep > 1 is refused) it would be read by nothing."""
        pools = [self.parallelism] if self.disaggregation is None else \
            [self.disaggregation.prefill.parallelism, self.disaggregation.decode.parallelism]
        if self.moe != MoeConfig() and all(p.ep == 1 for p in pools):
            raise field_error("moe", "routing and pre-scheduling price the all-to-alls of expert parallelism (an MoE "
                              "model with parallelism.ep > 1); here every pool has ep 1, so they would not apply: "
                              "remove cluster.moe or set parallelism.ep")
        return self


class NoDrafterConfig(Strict):
    kind: Literal["none"] = "none"


class DraftModelDrafterConfig(Strict):
    """An independent draft model: `colocated` with the target (time-shared on the same GPUs),
    `separate` (its own tp GPUs, drafting overlapped with verification) or on the host `cpu`
    (see simulator.cost.drafters). `layer_parallel` k > 1 (EasySpec): the draft's layers run k at a time
    on k of the replica's GPUs ("fuzzy" drafting), then one calibration pass per step
    (simulator.cost.layer_parallel)."""

    kind: Literal["draft_model"]
    model: Annotated[str, PATH_TEXT]
    gamma: int = Field(4, ge=0, le=64)
    tp: int = Field(1, ge=1, le=64)
    placement: Literal["colocated", "separate", "cpu"] = "colocated"
    layer_parallel: int = Field(1, ge=1, le=64)  # EasySpec: draft layers run k at a time on k GPUs
    # chain: γ passes of one token per decoding request (prompt chunks ingested by the first);
    # vllm: vLLM V1's DraftModelProposer (simulator.cost.step_cost.StepCostModel.vllm_proposer)
    passes: Literal["chain", "vllm"] = "chain"
    # a draft model of another vocabulary size, served with vLLM's use_heterogeneous_vocab (Token-Level
    # Intersection, from vLLM 0.25.0: profiles.engine_time.draft_vocabulary)
    heterogeneous_vocab: bool = False

    @model_validator(mode="after")
    def _layer_parallel(self) -> "DraftModelDrafterConfig":
        if self.layer_parallel > 1 and (self.placement != "colocated" or self.tp != 1):
            raise ValueError("layer_parallel (EasySpec) spreads a tp=1 draft's layers over the replica's GPUs: "
                             "it needs placement 'colocated' and tp 1")
        if self.passes == "vllm" and (self.placement != "colocated" or self.layer_parallel > 1):
            # (vLLM's proposer layout was priced on the host CPU, on separate GPUs and for EasySpec, exit 0)
            raise field_error("passes", "'vllm' is the pass layout of vLLM V1's DraftModelProposer, which runs the "
                                        "draft on the target's GPUs: it needs placement 'colocated' and "
                                        "layer_parallel 1; expected 'chain' here")
        if self.placement == "cpu" and self.tp != 1:   # (tp 2 on the host ran as tp 1, exit 0)
            raise field_error("tp", f"{self.tp} is not allowed with placement 'cpu' (the host CPU runs the draft "
                                    "as one process; tp splits it over GPUs); expected 1")
        return self


DrafterConfig = Annotated[Union[NoDrafterConfig, DraftModelDrafterConfig, HeadDrafterConfig, LayerSkipDrafterConfig,
                                NgramDrafterConfig, CascadeDrafterConfig, SparseKVDrafterConfig,
                                Eagle3DrafterConfig, MtpDrafterConfig, SuffixDrafterConfig],
                          Field(discriminator="kind")]


class ConstantAcceptanceConfig(Strict):
    """Every draft token is accepted with the same probability α, independently (Leviathan's model)."""

    kind: Literal["constant"] = "constant"
    alpha: float = Field(0.8, ge=0.0, le=1.0)


class PositionalAcceptanceConfig(Strict):
    """alphas[i] = P(draft token i+1 accepted | tokens 1..i accepted); positions beyond the list reuse
    the last value."""

    kind: Literal["positional"]
    alphas: list[Annotated[float, Field(ge=0.0, le=1.0)]] = Field(min_length=1)


class TraceAcceptanceConfig(Strict):
    """Accepted lengths from a measured acceptance trace (profiles/acceptance): each request is assigned
    one measured sequence (bootstrap by request). `greedy`: replays a real greedy speculative decoder's
    steps through it; `sample`: speculative sampling at `temperature`, each draft token accepted with the
    measured per-position β = Σ min(p, q). `trace`: a shipped trace name or a parquet path relative to the
    scenario; `drafter`: which measured drafter's columns to use."""

    kind: Literal["trace"]
    trace: Annotated[str, PATH_TEXT]
    drafter: Literal["draft", "skip", "ngram"] = "draft"
    mode: Literal["greedy", "sample"] = "greedy"
    temperature: float = Field(1.0, gt=0.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _sampling_needs_model_drafter(self) -> "TraceAcceptanceConfig":
        if self.mode == "sample" and self.drafter == "ngram":
            raise ValueError("mode 'sample' needs a model drafter ('draft' or 'skip'): the n-gram "
                             "drafter has no per-position distribution")
        return self


AcceptanceConfig = Annotated[Union[ConstantAcceptanceConfig, PositionalAcceptanceConfig, TraceAcceptanceConfig,
                                   RankedAcceptanceConfig, PairAcceptanceConfig, ContextsAcceptanceConfig,
                                   DriftingAcceptanceConfig, StepLevelAcceptanceConfig, PublishedAcceptanceConfig,
                                   SessionsAcceptanceConfig],
                             Field(discriminator="kind")]


class EarlyExitConfig(Strict):
    """Early exit of the target (SpecEE, CALM): a decoded token leaves after `exit_layers`[i] layers with
    probability `exit_probs`[i] (else after all of them); a batched pass runs to its deepest exit
    (simulator.cost.early_exit). Plain decoding only; dense models, pp 1."""

    exit_layers: list[Annotated[int, Field(ge=1)]] = Field(min_length=1, max_length=256)
    exit_probs: list[Annotated[float, Field(ge=0.0, le=1.0)]] = Field(min_length=1, max_length=256)

    @model_validator(mode="after")
    def _law(self) -> "EarlyExitConfig":
        if len(self.exit_layers) != len(self.exit_probs):
            raise ValueError("exit_layers and exit_probs need one entry each")
        if any(b <= a for a, b in zip(self.exit_layers, self.exit_layers[1:])):
            raise ValueError(f"exit_layers must be strictly ascending, got {self.exit_layers}")
        if sum(self.exit_probs) > 1.0 + 1e-9:
            raise ValueError(f"exit_probs must sum to at most 1, got {sum(self.exit_probs):.4g}")
        return self


class SimulationConfig(Strict):
    """How the simulation runs, not what it models (outputs are identical whatever is chosen, but for the
    named approximation of `load_sync_s`): `step_mode` bulk (decode steps advanced in bulk where the batch
    cannot change, simulator.core.bulk) or step (one event per step, the reference); `workers`: processes
    that simulate independent replicas side by side (simulator.core.parallel): an int, or "auto" (the
    cores, at most 8, for runs of ≥ 50,000 requests on ≥ 2 replicas; one process otherwise).
    `executor`: where the replicas run (simulator.distributed), as `draftsim sweep --executor` names it —
    `local` (this machine, `workers` processes), `local-dask` (a Dask LocalCluster of `workers` processes)
    or `dask://HOST:PORT` / `tcp://HOST:PORT` (a running Dask scheduler). `load_sync_s`: under a Dask
    executor, routers that read replica loads (least_outstanding, join_shortest_queue) see the loads as
    of the last synchronisation, every `load_sync_s` seconds of simulated time, plus the requests they
    sent since (0: at every arrival, which is exact)."""

    step_mode: Literal["bulk", "step"] = "bulk"
    workers: Union[Literal["auto"], int] = "auto"
    executor: str = "local"
    load_sync_s: float | None = Field(None, ge=0.0, allow_inf_nan=False)

    @field_validator("executor")
    @classmethod
    def _executor(cls, value: str) -> str:
        if value in ("local", "local-dask"):
            return value
        if value.startswith(SCHEDULER_SCHEMES):
            try:
                scheduler_address(value, "simulation.executor")   # (HOST and a PORT in 1..65535)
            except ScenarioError as exc:
                raise ValueError(exc.message) from None
            return value
        raise ValueError(f"local, local-dask, dask://HOST:PORT or tcp://HOST:PORT; got {value!r}")

    @field_validator("workers", mode="before")
    @classmethod
    def _workers(cls, value):
        from simulator.core.parallel import local_workers_max
        most = local_workers_max()
        if value == "auto" or (type(value) is int and 1 <= value <= most):
            return value
        raise ValueError(f"an integer in 1..{most} (this machine's cores) or 'auto', got {value!r}")

    @model_validator(mode="after")
    def _workers_of_a_running_scheduler(self) -> "SimulationConfig":
        """`workers` with a running Dask scheduler: its own workers run the replicas, so the number was
        ignored without a word; refused as `draftsim sweep` and `plan` refuse --workers with one
        (simulator.distributed.executors._scheduler)."""
        if self.workers != "auto" and self.executor.startswith(SCHEDULER_SCHEMES):
            raise field_error("workers", f"a running Dask scheduler ({self.executor}) runs the replicas on the workers "
                                         "it has; simulation.workers (--workers) sets the processes of executor local "
                                         "or local-dask: remove it")
        return self

    @model_validator(mode="after")
    def _load_sync_needs_dask(self) -> "SimulationConfig":
        if self.load_sync_s is not None and self.executor == "local":
            raise field_error("load_sync_s", "synchronises the loads routers read across a Dask executor's workers; "
                              "with simulation.executor local they read exact loads: remove it, or give "
                              "simulation.executor local-dask, dask://HOST:PORT or tcp://HOST:PORT")
        return self


# The sparsest step sampling (`outputs.step_sample_every`): one step in a billion is more than a replica takes
# in a day of simulating (10^4 to 10^5 steps per second of wall time), so a sparser one keeps only each
# replica's first step; it also keeps the sampler's int64 step ranks in range (2^63 raised OverflowError in
# the middle of a run).
MAX_STEP_SAMPLE_EVERY = 10**9
# The outputs.steps mode that reads each step option, and its default there.
STEP_OPTIONS = {"step_sample_every": ("sampled", 100), "step_interval_s": ("aggregate", 1.0)}


class OutputsConfig(Strict):
    """What a run writes. `steps`: what steps.parquet keeps — `full` (every step), `sampled` (every
    `step_sample_every`-th step of each replica) or `aggregate` (per replica and `step_interval_s`
    interval: step count, busy time, tokens, costs, peak KV, queued/running request-seconds); the
    summary is the same in every case (simulator.core.steplog). `step_interval_s` lies in 1 µs (a step
    lasts longer: finer intervals hold one step each, and 1e-300 s overflowed the interval numbers) to
    the longest simulated span (simulator.core.workload.MAX_SIM_SPAN_S). `step_sample_every` lies in 1 to
    MAX_STEP_SAMPLE_EVERY. Each is only for the mode that reads it (default there: `STEP_OPTIONS`), None
    otherwise: given for another mode it was ignored without a word."""

    plots: bool = True
    steps: Literal["full", "sampled", "aggregate"] = "full"
    step_sample_every: int | None = Field(None, ge=1, le=MAX_STEP_SAMPLE_EVERY, validate_default=True)
    step_interval_s: float | None = Field(None, ge=1e-6, le=MAX_SIM_SPAN_S, allow_inf_nan=False, validate_default=True)

    @field_validator("step_sample_every", "step_interval_s")
    @classmethod
    def _only_for_its_mode(cls, value, info):
        mode, default = STEP_OPTIONS[info.field_name]
        steps = info.data.get("steps")
        if steps == mode:
            return default if value is None else value
        if steps is not None and value is not None:
            raise PydanticCustomError("forbidden", f"only allowed for steps '{mode}' (steps '{steps}' does not read it)")
        return None



class EnergyConfig(Strict):
    """Energy and cost figures of the summary (simulator.results.energy). `power_model`: how a GPU's power
    follows its steps (profiles.power: utilization | busy); `host_power_w_per_gpu`: the node's power beside
    its GPUs (CPUs, memory, NVSwitch, NICs, fans) per GPU (default: the hardware's `host_w_per_gpu`);
    `usd_per_gpu_hour` (default: simulator.workflows.plan.prices, where quoted) and `usd_per_kwh` (default:
    energy not billed) price `usd_per_mtok`."""

    power_model: Literal["utilization", "busy"] = "utilization"
    # (at most the hardware file's host_w_per_gpu bound, profiles.hardware_file.PLAUSIBLE: 1e308 W made energy null)
    host_power_w_per_gpu: float | None = Field(None, ge=0, le=PLAUSIBLE["host_w_per_gpu"][1], allow_inf_nan=False)
    usd_per_gpu_hour: float | None = Field(None, ge=MIN_USD_PER_GPU_HOUR, le=MAX_USD_PER_GPU_HOUR, allow_inf_nan=False)
    usd_per_kwh: float | None = Field(None, ge=0, le=MAX_USD_PER_KWH, allow_inf_nan=False)


class SLOConfig(Strict):
    """Service-level objectives per request (unset = not constrained) and the target attainment."""

    SPEC = SLO
    ttft_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    tpot_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    e2e_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    attainment: float = Field(default=0.9, gt=0, le=1)


class Scenario(Strict):
    name: FolderName = "scenario"   # the default output folder's name (simulator.config.names)
    seed: int = Field(0, ge=0)
    workload: WorkloadConfig
    cluster: ClusterConfig
    drafter: DrafterConfig = NoDrafterConfig()
    acceptance: AcceptanceConfig = ConstantAcceptanceConfig()
    speculation: SpeculationConfig = ChainConfig()
    policy: PolicyConfig = FixedPolicyConfig()
    early_exit: EarlyExitConfig | None = None
    retrieval: RetrievalConfig | None = None   # iterative RAG: baseline or RaLMSpec (simulator.config.retrieval)
    scheduler: SchedulerConfig = SchedulerConfig()
    simulation: SimulationConfig = SimulationConfig()
    slo: SLOConfig = SLOConfig()
    outputs: OutputsConfig = OutputsConfig()
    energy: EnergyConfig = EnergyConfig()

    @model_validator(mode="before")
    @classmethod
    def _chunked_prefill_sets_the_scheduler(cls, data):
        """`cluster.engine.chunked_prefill` given: prompt chunks ride along with decode steps (scheduler kind
        sarathi; vllm_v1 chunks too) or do not (kind vllm); an explicit scheduler.kind must agree. Where the
        scenario names its engine (simulator.cluster.engine_scheduler), the engine's own scheduler when it has
        that setting: TensorRT-LLM's in-flight batching either way (its chunked context), vLLM V1's when
        chunked."""
        chunked, scheduler, kind = _engine_flag_and_scheduler(data, "chunked_prefill")
        if chunked is None:
            return data
        if kind is None:
            own = _named_engine_scheduler(data["cluster"])
            if own == "trtllm" or (own == "vllm_v1" and chunked):
                return {**data, "scheduler": {**scheduler, "kind": own}}
            return {**data, "scheduler": {**scheduler, "kind": "sarathi" if chunked else "vllm"}}
        if kind == "trtllm":   # TensorRT-LLM's IFB scheduler chunks contexts when chunked_prefill is true
            return data
        if (kind in ("sarathi", "vllm_v1")) != bool(chunked):
            raise ValueError(f"cluster.engine.chunked_prefill is {chunked} but scheduler.kind {kind!r} "
                             f"{'does not chunk prompts' if chunked else 'chunks prompts'}; give one")
        return data

    @model_validator(mode="before")
    @classmethod
    def _capacity_policy_is_trtllms(cls, data):
        """`cluster.engine.capacity_scheduler_policy` is TensorRT-LLM's capacity scheduler (simulator.core.sched.
        trtllm): it needs that scheduler, given as scheduler.kind or run by the named engine (framework trtllm)."""
        policy, _, kind = _engine_flag_and_scheduler(data, "capacity_scheduler_policy")
        if policy is None:
            return data
        if kind is None:
            kind = _named_engine_scheduler(data["cluster"]) or "vllm"
        if kind != "trtllm":
            raise ValueError(f"cluster.engine.capacity_scheduler_policy is TensorRT-LLM's capacity scheduler "
                             f"(scheduler_config.capacity_scheduler_policy) but the scheduler is {kind!r}; allowed "
                             "with scheduler.kind trtllm or cluster.engine.framework trtllm")
        return data

    @model_validator(mode="before")
    @classmethod
    def _simulation_keys_moved(cls, data):
        """`scheduler.step_mode` and `scheduler.workers` (their names before the `simulation` section): moved
        there, with a warning."""
        scheduler = data.get("scheduler") if isinstance(data, dict) else None
        moved = [k for k in ("step_mode", "workers") if isinstance(scheduler, dict) and k in scheduler]
        if not moved:
            return data
        import warnings
        simulation = data.get("simulation") if isinstance(data.get("simulation"), dict) else {}
        moved = [k for k in moved if k not in simulation]   # (given twice: scheduler's is an unknown key)
        for key in moved:
            warnings.warn(f"scheduler.{key} is now simulation.{key}", FutureWarning, stacklevel=2)
        data = {**data, "scheduler": {k: v for k, v in scheduler.items() if k not in moved},
                "simulation": {**simulation, **{k: scheduler[k] for k in moved}}}
        return data

    @field_validator("drafter", "speculation", "acceptance", "policy", mode="before")
    @classmethod
    def _bare_word_is_a_kind(cls, value):
        """`policy: fixed` means `policy: {kind: fixed}`: a kind without fields may be written as a bare word
        (as the README writes `fixed`, `specreason`, `proposed`, `pearl`)."""
        return {"kind": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _budget_holds_a_speculative_step(self) -> "Scenario":
        self.check_scheduler()
        return self

    def check_scheduler(self) -> None:
        """vllm_v1 steps a decoding request only when its 1 + γ tokens fit the step's budget (vLLM would
        shrink γ instead: simulator.core.sched.vllm_v1, named approximation), so a budget below one chain step
        would leave requests unstepped: refused (ValueError). Also for a scheduler the named engine filled in
        (simulator.cluster.build)."""
        refusal = speculative_step_error(self.scheduler, self.speculation.kind, getattr(self.drafter, "gamma", 0) or 0)
        if refusal is not None:
            raise ValueError(refusal)


def speculative_step_error(scheduler: SchedulerConfig, speculation_kind: str, gamma: int) -> str | None:
    """Why `scheduler` can never step a request drafting `gamma` tokens in a `speculation_kind` speculation
    (Scenario.check_scheduler's rule; a plan checks its drafters' gamma values with it), or None."""
    if scheduler.kind == "vllm_v1" and speculation_kind == "chain" and scheduler.max_batched_tokens < 1 + gamma:
        return (f"scheduler.max_batched_tokens ({scheduler.max_batched_tokens}) is below one speculative step of "
                f"a request (1 + drafter.gamma = {1 + gamma} tokens)")
    return None



def _engine_field(engine: dict, name: str):
    """`cluster.engine.NAME` as the engine section reads it, for the sections it fills."""
    return _section_field(EngineConfig, engine, name)


def _refusal_of_fill(section: type[Strict], given: dict, filled: dict) -> str | None:
    """The message of `section`'s own check (a validator across its fields) that refuses `filled` (the section as
    given, with a value another section set) where it takes `given`; None otherwise (a section refused as given
    names its own error)."""
    from pydantic import ValidationError
    try:
        section.model_validate(given)
    except ValidationError:
        return None
    try:
        section.model_validate(filled)
    except ValidationError as exc:
        first = exc.errors()[0]
        return str((first.get("ctx") or {}).get("error") or first["msg"].removeprefix("Value error, "))
    return None


def _section_field(section: type[Strict], data: dict, name: str):
    """`data[name]` as `section` reads it (`"yes"` a boolean true), or None where it is missing or refused — a
    section filled from another must not take a value the other refuses (`cluster.engine.framework: tgi` was
    reported as cluster.latency.framework, and a `cluster.kv_cache: big` or `cluster.latency: measured` beside
    an engine's setting was replaced by that setting and ran): the section it was given in names the error."""
    from pydantic import ValidationError
    if data.get(name) is None:
        return None
    try:
        return getattr(section.model_validate({name: data[name]}), name)
    except ValidationError:
        return None


def _engine_flag_and_scheduler(data, name: str) -> tuple[object, dict, str | None]:
    """(`cluster.engine.<name>` of raw scenario data, its raw `scheduler` section, the scheduler.kind that gives, or
    None); (None, {}, None) where the data has no cluster section."""
    if not isinstance(data, dict) or not isinstance(data.get("cluster"), dict):
        return None, {}, None
    engine = data["cluster"].get("engine")
    value = engine.get(name) if isinstance(engine, dict) else None
    scheduler = data.get("scheduler") if isinstance(data.get("scheduler"), dict) else {}
    return value, scheduler, scheduler.get("kind", scheduler.get("policy"))


def _named_engine_scheduler(cluster: dict) -> str | None:
    """The batching scheduler kind of the engine a raw `cluster` section names
    (profiles.engine_time.batch_defaults.engine_scheduler_kind), else None (none named, or values the validation
    reports later)."""
    engine = cluster.get("engine") if isinstance(cluster.get("engine"), dict) else {}
    latency = cluster.get("latency") if isinstance(cluster.get("latency"), dict) else {}
    version = engine.get("version") if engine.get("version") is not None else latency.get("engine_version")
    if engine.get("framework") is None and version is None:
        return None   # (no engine named)
    if version is not None and not isinstance(version, str):
        return None
    from profiles.engine_time.batch_defaults import engine_scheduler_kind
    try:
        return engine_scheduler_kind(engine.get("framework") or latency.get("framework") or "vllm", version)
    except ValueError:
        return None


# What a run writes, not what it simulates: scenarios that differ only here are one simulation (compare, sweep).
NOT_SIMULATED = ("name", "outputs")


def simulated(scenario: dict) -> dict:
    """A validated scenario's data (`model_dump(mode="json")`) without NOT_SIMULATED: two runs whose `simulated`
    data are equal simulate the same thing."""
    return {key: value for key, value in scenario.items() if key not in NOT_SIMULATED}


def how_alike(first: dict, second: dict) -> str:
    """How the data of two scenarios of one simulation (`simulated` equal) compare, for the error that names both:
    'differ only in outputs.plots (what a run writes, not what it simulates)' or 'are the same simulation'."""
    before, after = first.get("outputs", {}), second.get("outputs", {})
    differ = [f"outputs.{name}" for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]
    return (f"differ only in {', '.join(differ)} (what a run writes, not what it simulates)" if differ else
            "are the same simulation")


def key_parts(key: str) -> list[str]:
    """The parts of a dotted key path as an override reads them: each stripped of the spaces around it ('seed = 3',
    ' seed=3': spaces a shell kept), so 'a.b ' and 'a.b' are one key."""
    return [part.strip() for part in key.split(".")]


def checked_key(key: str) -> list[str]:
    """The parts of a dotted key path (key_parts), or ValueError: an empty part; '=', which ends the key in an
    override (a sweep's `name=a: [b]` set name to 'a=b'); a control or invisible character (no scenario key holds
    one, and the error that named it was cut at its newline: `set: ["drafter.gam\\nma=2"]` said 'drafter.gam')."""
    parts = key_parts(key)
    normal = ".".join(parts)
    if any(not part for part in parts) or "=" in key or printable(normal) != normal:
        raise ValueError(f"bad key path {key!r} (expected dotted scenario keys like drafter.gamma)")
    if len(parts) > MAX_DEPTH:   # (3,000 parts nested the override as deep: a RecursionError traceback)
        raise ValueError(f"a key path of {len(parts):,} parts ({'.'.join(parts[:3])}...); at most {MAX_DEPTH}, "
                         "as deep as a scenario file nests (expected dotted scenario keys like drafter.gamma)")
    return parts


def override_key(text: str) -> list[str]:
    """The key path of a `key.path=value` override (checked_key)."""
    if "=" not in text:
        raise ScenarioError("--set", f"expected key.path=value, got {text!r}")
    try:
        return checked_key(text.split("=", 1)[0])
    except ValueError as exc:
        raise ScenarioError("--set", str(exc)) from None


def check_overrides_once(overrides: list[str], field: str = "--set") -> None:
    """ScenarioError on `field` when one list of overrides (`run --set`, `compare --set`, a sweep's `set:`) sets a
    key path twice, or sets a mapping after a key inside it, which it replaces: `--set seed=1 --set seed=2` ran
    seed 2 without a word (a YAML file that gives a key twice is refused: models.files)."""
    seen: list[tuple[list[str], str]] = []
    for text in overrides:
        try:
            path = override_key(text)
        except ScenarioError as exc:   # (a sweep's `set: [seed]` was named '--set', which a sweep file has none of)
            raise ScenarioError(field, exc.message) from None
        for earlier, earlier_text in seen:
            if earlier[:len(path)] == path:
                key, both = ".".join(path), f"({earlier_text.strip()}, then {text.strip()})"
                raise ScenarioError(field, f"{key} is set twice {both}; set each key once" if earlier == path else
                                    f"{key}, set after {'.'.join(earlier)}, replaces it {both}; set the mapping "
                                    "first, then the keys inside it")
        seen.append((path, text))


def _parse_override(text: str, field: str = "--set") -> tuple[list[str], Any]:
    try:
        parts = override_key(text)
    except ScenarioError as exc:
        raise ScenarioError(field, exc.message) from None
    raw = text.split("=", 1)[1]
    key = ".".join(parts)
    from models.files import DocumentError, parse_yaml
    try:
        value = parse_yaml(raw) if raw != "" else ""
    except yaml.YAMLError:
        value = raw
    except DocumentError as exc:
        raise ScenarioError(field, f"{key}: the value {exc}") from None
    return parts, value


def apply_overrides(data: dict, overrides: list[str], field: str = "--set") -> dict:
    """Apply `key.path=value` overrides (values parsed as YAML scalars/lists) to a raw scenario dict; `field`
    names them in an error on their own text (`--set` of the command line, `overrides` of the Python API)."""
    data = dict(data)
    for text in overrides:
        path, value = _parse_override(text, field)
        node = data
        for i, part in enumerate(path[:-1]):
            child = node.get(part)
            if child is None:
                child = {}
            elif not isinstance(child, dict):
                raise ScenarioError(".".join(path[: i + 1]), "is not a mapping; cannot set a sub-key")
            node[part] = child = dict(child)
            node = child
        node[path[-1]] = value
    return data


def read_scenario_dict(path: str | Path, field: str = "scenario") -> dict:
    """The top-level mapping of a scenario (or sweep, plan: `field` names the file's kind) file, read as
    models.files reads every user file: a regular file of UTF-8 text, YAML without duplicate keys, deep nesting
    or alias bombs; one ScenarioError on `field` saying what is wrong otherwise."""
    from models.files import DocumentError, describe, file_kind_problem, load_document

    if not isinstance(path, (str, os.PathLike)):   # (a dict given to load_scenario: a TypeError)
        raise ScenarioError(field, f"a YAML path (str or Path), got {type(path).__name__}")
    path = Path(path)
    shown = printable(str(path))   # (a newline in the path cut the error line: 'file not found: .../base')
    try:
        folder, missing = path.is_dir(), file_kind_problem(path) == "file not found"
    except OSError as exc:   # (a name too long, a loop of links: an OSError out of the Python API, and the
        # command line named the path, not the field)
        raise ScenarioError(field, f"{shown[:200]}{'...' if len(shown) > 200 else ''} cannot be read "
                                   f"({exc.strerror or exc})") from None
    if folder:
        found = sorted(p.name for p in path.glob("*.yaml"))[:5]
        hint = f" (it holds {', '.join(found)})" if found else ""
        raise ScenarioError(field, f"{shown} is a directory; give a {field} YAML file{hint}")
    if missing:
        raise ScenarioError(field, f"file not found: {shown}")
    try:
        data = load_document(path, "YAML")
    except DocumentError as exc:
        raise ScenarioError(field, describe(shown, exc)) from None
    if not isinstance(data, dict):
        raise ScenarioError(field, f"{shown} must contain a mapping at top level")
    return data


def read_config(path: str | Path, model: type[BaseModel], prefix: str):
    """A config file (a plan, a sweep) read and validated as `model`; its `name` defaults to the file's
    stem."""
    data = read_scenario_dict(path, prefix)   # (a plan's file said 'scenario: file not found: ...')
    refuse_other_commands_file(data, prefix)
    _name_from_the_file(data, path, f"{prefix}.name")
    return validate_config(model, data, prefix)


# What makes a file one command's rather than another's missing a field: (command, its keys); a scenario is
# `run`'s (as `compare`'s and `validate --scenario`'s)
COMMANDS_FILES = (("run", ("cluster",)), ("plan", ("search",)), ("sweep", ("scenario", "grid")),
                  ("sweep", ("scenario", "points")))
_KIND_OF_FILE = {"run": "scenario", "plan": "plan", "sweep": "sweep"}


def refuse_other_commands_file(data: dict, field: str = "scenario") -> None:
    """ScenarioError on `field` when `data` is another command's file rather than one of `field`'s (a scenario,
    a plan, a sweep) missing a field: `draftsim run plan.yaml` said 'cluster: required field is missing',
    `draftsim sweep scenario.yaml` 'sweep.scenario: required field is missing'."""
    wanted = "run" if field == "scenario" else field
    own = {key for command, keys in COMMANDS_FILES if command == wanted for key in keys}
    if not isinstance(data, dict) or any(key in data for key in own):
        return
    for command, keys in COMMANDS_FILES:
        if command != wanted and all(key in data for key in keys):
            raise ScenarioError(field, f"this is a {_KIND_OF_FILE[command]} file (it has {' and '.join(keys)}, "
                                       f"not {' or '.join(sorted(own))}); run it with draftsim {command}")


def parse_scenario(data: dict) -> Scenario:
    """The validated scenario of a mapping; a plan or sweep file given where a scenario goes is named as the
    other command's file."""
    refuse_other_commands_file(data)
    return validate_config(Scenario, data)


def override_texts(overrides) -> list[str]:
    """`overrides` (of the Python API: `simulator.run`, `load_scenario`) as a list of `key.path=value` texts.
    A single text was read letter by letter ('expected key.path=value, got 's''), a dict by its keys, and a
    number or bytes raised a TypeError."""
    if overrides is None:
        return []
    if isinstance(overrides, (str, bytes, dict)) or not isinstance(overrides, (list, tuple)) \
            or not all(isinstance(text, str) for text in overrides):
        shown = type(overrides).__name__ if not isinstance(overrides, (list, tuple)) else \
            f"a {type(overrides).__name__} holding {type(next(t for t in overrides if not isinstance(t, str))).__name__}"
        raise ScenarioError("overrides", f"a list of key.path=value texts (as draftsim run --set), e.g. "
                                         f"['drafter.gamma=2'], got {shown}")
    return list(overrides)


def load_scenario(path: str | Path, overrides: list[str] | None = None) -> tuple[Scenario, Path]:
    """Read, override and validate a scenario file. Returns the scenario and its folder (for relative
    paths such as trace CSVs)."""
    data = read_scenario_dict(path)
    refuse_other_commands_file(data)   # (before overrides: `--set cluster.model=x` on a plan said 'confirm_top: ...')
    data = apply_overrides(data, override_texts(overrides))
    _name_from_the_file(data, path, "name")
    return parse_scenario(data), Path(path).resolve().parent


def _name_from_the_file(data: dict, path: str | Path, field: str) -> None:
    """`data`'s `name` where the file gives none: the file's stem (the default folder's name). A stem that cannot
    be one (simulator.config.names: `nul.yaml`, `a:b.yaml`) is refused naming the file it came from: the line
    said "name: 'nul' is ...", a field the file does not hold."""
    if "name" in data:
        return
    stem = Path(path).stem
    problem = name_problem(stem)
    if problem is not None:
        raise ScenarioError(field, f"{stem!r} {problem}; give the file a `name:` that is {NAME_RULE}",
                            implied=f"the file's name, {Path(path).name!r}")
    data["name"] = stem
