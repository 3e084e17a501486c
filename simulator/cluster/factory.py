"""The replica factory: (model, parallelism, hardware, drafter, speculation, acceptance, control policy,
latency, dtype, moe) → what every replica of one pool is (`ReplicaKind`: step cost, acceptance model,
control policy, KV capacity). The DES (every pool of a colocated or disaggregated cluster), the capacity
planner's screen and `draftsim estimate` all call `build_replica_kind`, so they price steps identically.

Memory (what a GPU keeps for KV under each engine's accounting, hybrid pages, sliding-window groups):
simulator.cluster.replica_memory.
"""
from __future__ import annotations

import dataclasses

from dataclasses import dataclass
from pathlib import Path

from models.errors import FieldError
from models.files import folder_problem
from models.spec import EXPERT_ONLY_DTYPES, ModelSpec, kv_cache_dtype, validate_parallelism
from models.step import Parallelism
from profiles.hardware import HardwareSpec
from profiles.select import LATENCY_SOURCES
from simulator.cost.drafters import DraftContext, DrafterBuild, build_drafter, overlap_exposure
from simulator.errors import ScenarioError
from simulator.config.serving import LatencyConfig, MoeConfig, ParallelismConfig
from simulator.speculation.shapes import SpeculationBuild, build_speculation
from simulator.cost.step_cost import StepCostModel
from simulator.cluster import target_costs
from simulator.cluster.target_costs import BuildContext, Facts
from simulator.cluster.sglang_memory import counts_draft
from simulator.cluster.vllm_memory import device_total_bytes
from simulator.cluster.replica_memory import (CPU_ID, hybrid_layout, keeps_window, kv_capacity_tokens, memory_fraction,
                                              sglang_deployment, sliding_window_layout, state_bytes_per_request,
                                              vllm_profile_run)
from simulator.cluster.engine_scheduler import with_engine_defaults
from simulator.cluster.fp8_marlin import check_fp8_marlin, weight_only_fp8
from profiles.engine_time.mxfp4_moe import moe_kernel as release_moe_kernel
from simulator.core.context import context_and_rule
from profiles.engine_time.batch_defaults import DEFAULT_MAX_NUM_SEQS, default_max_num_seqs, sglang_max_running_requests


def make_latency_model(lat: LatencyConfig, hardware: HardwareSpec, dtype: str, base_dir: Path,
                       kv_dtype: str | None = None, moe_kernel: str | None = None):
    """The latency model of `cluster.latency` (profiles.select); what it cannot serve becomes a ScenarioError
    naming the field to change. `moe_kernel`: the fused-MoE kernel the engine release runs where it is not the
    measured tables' own (profiles.engine_time.mxfp4_moe; None: theirs)."""
    from profiles.select import LatencySourceConfig, select_latency
    profile_dir = Path(lat.profile_dir) if lat.profile_dir else None
    if profile_dir is not None and not profile_dir.is_absolute():
        profile_dir = base_dir / profile_dir
    problem = folder_problem(profile_dir) if profile_dir is not None else None   # (/dev/null: not a directory)
    if problem is not None:
        raise ScenarioError("cluster.latency.profile_dir", problem)
    if lat.source == "auto" and hardware.id == CPU_ID:
        raise ScenarioError("cluster.latency.source", f"auto would price {CPU_ID} (this machine's CPU, a "
                                                      "GPU scenario on a CPU) with the roofline of nominal "
                                                      "figures; give source: profile (tables measured here by "
                                                      "`draftsim profile`) or, knowingly, roofline")
    if lat.source == "profile":
        from profiles.predictor import profile_dir_for
        if profile_dir_for(hardware.id, profile_dir) is None:   # (else the roofline would answer, silently)
            where = str(profile_dir) if profile_dir is not None else f"profiles/data/{hardware.id}/"
            raise ScenarioError("cluster.latency.source", f"profile, but {where} holds no profile (ops.csv) of "
                                                          f"{hardware.id}; measure one with `draftsim profile` "
                                                          "and give its folder as profile_dir, or use source auto")
    config = LatencySourceConfig(lat.source, lat.framework, lat.version, profile_dir, moe_kernel)
    try:
        return select_latency(hardware, dtype, config, kv_dtype)
    except FieldError as exc:   # (profiles.measured.MeasuredDataError, an engine profile that cannot be read)
        raise ScenarioError(exc.field, exc.message) from None


def drafter_family(drafter) -> str | None:
    """The speculation method as serving engines name it (None without a drafter): eagle (autoregressive
    head), medusa (parallel heads), draft_model, layer_skip or ngram (simulator.cost.drafters.engine_family:
    a new drafter kind says there which family's engine behaviour it gets)."""
    from simulator.cost.drafters import engine_family
    return None if drafter.kind == "none" else engine_family(drafter)


def speculation_method(drafter) -> str | None:
    """The speculation method as vLLM's and SGLang's flags tell EAGLE's variants apart: eagle3 or mtp for those
    drafter kinds, else the engine family (`drafter_family`; None without a drafter)."""
    if drafter is None or drafter.kind == "none":
        return None
    return drafter.kind if drafter.kind in ("eagle3", "mtp") else drafter_family(drafter)


@dataclass(frozen=True)
class EngineBatchRules:
    """What the deployment's engine adds to a step's limits beyond the scheduler section (simulator.core.sched
    .BatchLimits): vLLM V1's KV lookahead for a running request and a waiting request's first chunk, the most
    requests one prefill step admits (SGLang's EAGLE block), SGLang's chunking of prompts (its
    max_prefill_tokens; None: prompts whole), and whether a prefix-cache hit is one block shorter (vLLM V1 with an
    EAGLE-style drafter computes the hit's last block again: simulator.core.kv.prefix_cache), and the token slots
    vLLM V1 keeps for a draft model's proposer rows: per max_num_seqs off the budget (0.17 - 0.27), per scheduled
    request (0.28 on) (profiles.engine_time.batch_defaults.vllm_drafting_slots), and whether vLLM V1 admits a waiting
    request only when its whole sequence's blocks are free, a sliding-window group's capped (0.19 on, 0.20 on:
    batch_defaults.vllm_whole_prompt_admission)."""

    kv_lookahead: int = 0
    admit_lookahead: int = 0
    prefill_requests: int | None = None
    prefill_input_tokens: int | None = None
    drop_hit_block: bool = False
    budget_slots_per_seq: int = 0
    draft_slots: int = 0
    output_reserve: object = None   # SGLang's reserve for running requests' output (simulator.core.sched.sglang_reserve)
    queue_order: object = None      # SGLang's --schedule-policy (simulator.core.sched.queue_order); None: arrival order
    admit_whole_prompt: bool = False
    whole_prompt_window_cap: bool = False
    insert_after_forward: bool = False   # SGLang: a prompt is cached once its batch has run, not at admission
    #                                      (simulator.core.kv.prefix_cache)


def engine_batch_rules(release: tuple[str, str | None], scheduler, drafter, spec_tokens: int) -> EngineBatchRules:
    """The engine's batch rules (EngineBatchRules) of a pool whose engine is `release` (deployment_release), whose
    scheduler section is `scheduler` (its kind: the engine's scheduler, vllm_v1 under vLLM V1, vllm under SGLang),
    speculating with `drafter` (None: no speculation) `spec_tokens` draft tokens (or tree nodes) per step:
    profiles.engine_time.batch_defaults.vllm_kv_lookahead, sglang_prefill_requests and sglang_chunks_prompts, and
    profiles.engine_time.cache_defaults.vllm_eagle_drops_hit_block, batch_defaults.vllm_drafting_slots and
    batch_defaults.vllm_whole_prompt_admission; SGLang's
    reserve for the running requests' future output (simulator.core.sched.sglang_reserve, every modelled release)."""
    from profiles.engine_time.batch_defaults import (SGLANG_MAX_PREFILL_TOKENS, sglang_chunks_prompts,
                                                     sglang_prefill_requests, vllm_drafting_slots, vllm_kv_lookahead,
                                                     vllm_whole_prompt_admission)
    from profiles.engine_time.cache_defaults import vllm_eagle_drops_hit_block
    from profiles.engine_time.frameworks import release_or_modelled
    framework, version = release
    if scheduler is None or (framework, scheduler.kind) not in (("vllm", "vllm_v1"), ("sglang", "vllm")):
        return EngineBatchRules()
    try:
        version = release_or_modelled(framework, version)
    except FieldError:   # (no engine-time entry: make_engine_time names the field where it is asked for)
        return EngineBatchRules()
    if framework == "vllm":
        whole, window_cap = vllm_whole_prompt_admission(version)
        if drafter is None:
            return EngineBatchRules(admit_whole_prompt=whole, whole_prompt_window_cap=window_cap)
        method = speculation_method(drafter)
        per_seq, per_request = vllm_drafting_slots(version, method)
        return EngineBatchRules(*vllm_kv_lookahead(version, method, spec_tokens),
                                drop_hit_block=vllm_eagle_drops_hit_block(version, method),
                                budget_slots_per_seq=per_seq, draft_slots=per_request, admit_whole_prompt=whole,
                                whole_prompt_window_cap=window_cap)
    from simulator.core.sched.sglang_reserve import SGLANG_OUTPUT_RESERVE
    family = drafter_family(drafter) if drafter is not None else None
    return EngineBatchRules(prefill_requests=sglang_prefill_requests(version, family),
                            prefill_input_tokens=SGLANG_MAX_PREFILL_TOKENS if sglang_chunks_prompts(version, family)
                            else None, output_reserve=SGLANG_OUTPUT_RESERVE, insert_after_forward=True)


def schedule_policy(release: tuple[str, str | None], engine_cfg, scheduler):
    """The queue order (simulator.core.sched.queue_order) of a pool whose engine is `release` (deployment_release):
    SGLang's `cluster.engine.schedule_policy`, else its release's default (profiles.engine_time.queue_defaults),
    with SGLang's prefill-first scheduler (scheduler.kind vllm); None (arrival order) elsewhere. ScenarioError
    (cluster.engine.schedule_policy) for a policy given to another engine or scheduler, one the release lacks, or
    one draftsim does not model. Where the pool keeps no prefix cache a cache-aware policy runs as fcfs
    (simulator.cluster.build.batch_scheduler)."""
    from profiles.engine_time.frameworks import release_or_modelled
    from profiles.engine_time.queue_defaults import policy_refusal, sglang_default_policy, sglang_in_batch_check
    from simulator.core.sched.queue_order import QUEUE_ORDERS
    field = "cluster.engine.schedule_policy"
    given = getattr(engine_cfg, "schedule_policy", None)
    framework, version = release
    if framework != "sglang":
        if given is not None:
            raise ScenarioError(field, f"{given!r}: this is SGLang's --schedule-policy (server_args.py) and {framework} "
                                       "has none; allowed: leave it out, or cluster.engine.framework: sglang")
        return None
    try:
        version = release_or_modelled(framework, version)
    except FieldError:   # (no engine-time entry: make_engine_time names the field where it is asked for)
        return None
    if given is not None:
        refusal = policy_refusal(given, version)
        if refusal is not None:
            raise ScenarioError(field, refusal)
    kind = scheduler.kind if scheduler is not None else None
    if kind != "vllm":
        if given is not None and given != "fcfs" and kind is not None:
            raise ScenarioError(field, f"{given!r} is modelled with SGLang's prefill-first scheduler only (scheduler.kind "
                                       f"vllm), not with scheduler.kind {kind!r}; allowed here: fcfs, or scheduler.kind vllm")
        return None
    name = given if given is not None else sglang_default_policy(version)
    return QUEUE_ORDERS[name](sglang_in_batch_check(version))


def engine_release(lat: LatencyConfig, engine_cfg, latency):
    """(EngineSettings, version) of the deployment's engine: `cluster.engine` (framework and version default to
    `cluster.latency`'s, then to the measured tables' version, then to the newest modelled release). FieldError
    for a framework or version without an engine-time entry."""
    from profiles.engine_time.frameworks import entry_for, modelled_release
    from simulator.config.engine import EngineConfig, engine_settings
    settings = engine_settings(engine_cfg if engine_cfg is not None else EngineConfig(), lat)
    if settings.version is None and getattr(latency, "framework", None) == settings.framework:
        settings = dataclasses.replace(settings, version=latency.version)
    entry = entry_for(settings.framework, settings.version)
    return settings, settings.version or modelled_release(entry)


def max_num_seqs(scheduler, lat: LatencyConfig, engine_cfg, hw: HardwareSpec, latency, family: str | None) -> int:
    """The replica's running-request limit: `scheduler.max_batch_size` where the scenario sets it, else the
    engine's own default for its release, hardware and speculation (profiles.engine_time.batch_defaults: vLLM
    V1 1024 on >= 70 GiB GPUs but A100s, SGLang 48 with speculation (EAGLE 32 in 0.4.3.post3 -
    0.4.4.post3), TensorRT-LLM 1.x 2048), else draftsim's 256
    (SGLang's request pool from its KV pool replaces that once the pool is sized: build_replica_kind)."""
    if scheduler is not None and scheduler.max_batch_size is not None:
        return scheduler.max_batch_size
    fallback = DEFAULT_MAX_NUM_SEQS
    try:
        settings, version = engine_release(lat, engine_cfg, latency)
    except FieldError:   # (no engine-time entry: make_engine_time names the field when it is asked for)
        return fallback
    found = default_max_num_seqs(settings.framework, version, hw, family,
                                 scheduler.max_batched_tokens if scheduler is not None else None)
    seqs = fallback if found is None else found
    if settings.framework == "vllm" and scheduler is not None and scheduler.kind in ("vllm", "vllm_v1") \
            and scheduler.max_batched_tokens < seqs:
        # (as SchedulerConfig refuses a given limit: vLLM 0.8-0.11.0 keep a defaulted max_num_seqs above
        # max_num_batched_tokens, and vllm/config/scheduler.py SchedulerConfig._verify_args raises; vLLM's rule
        # only: SGLang's server_args.py has no such check, and a SGLang engine with a vllm-kind scheduler and a
        # 16-token budget was refused in vLLM's words)
        raise ScenarioError("scheduler.max_batched_tokens", f"{scheduler.max_batched_tokens} is below the engine's "
                            f"default running-request limit {seqs} ({settings.framework} {version} on {hw.id}), and "
                            "the engine refuses max_num_batched_tokens < max_num_seqs (vLLM through 0.11.0, "
                            f"SchedulerConfig._verify_args); allowed: max_batched_tokens >= {seqs}, or set "
                            "scheduler.max_batch_size")
    return seqs


def make_engine_time(lat: LatencyConfig, engine_cfg, hw: HardwareSpec, latency, drafter, *, speculating: bool,
                     tree: bool, q: int, par: Parallelism, scheduler=None, policy: str | None = None,
                     mla: bool = False, role: str | None = None, max_seqs: int = 256, gate: str | None = None,
                     schedule: bool = False):
    """The serving engine's per-step time model (profiles.engine_time), or None: on by default for GPUs
    (off for the local CPU, whose profile measures host work per pass). The engine is `cluster.engine`
    (framework and version default to `cluster.latency`'s, then to the measured tables' version, then to the
    newest modelled release), checked against what that version offers and refuses
    (profiles.engine_time.support), as it runs with the scenario's drafter, scheduler limits (`max_seqs`: its
    running-request limit, `max_num_seqs`) and GPUs; `mla`: the target's attention is MLA; `role`: the pool's
    role when disaggregated (prefill | decode; None: colocated); `gate`: the acceptance gate a trtllm_schedule
    policy gives (TrtllmSchedulePolicyConfig.gate) and `schedule` whether it gives a draft_len_schedule. With engine
    time off, a release the scenario names is checked all the same (it must exist, and serve the scenario)."""
    from profiles.engine_time.frameworks import Deployment, build_engine
    from profiles.engine_time.graphs import DATACENTER_BLACKWELL, PrefillContext
    from profiles.engine_time.support import Context, UnsupportedCombination
    from simulator.config.engine import EngineConfig
    engine_cfg = engine_cfg if engine_cfg is not None else EngineConfig()
    own = LATENCY_SOURCES[lat.source].engine_time
    enabled = lat.engine_time if lat.engine_time is not None else (hw.id != "cpu-local" or own)
    family = drafter_family(drafter) if speculating else None
    context = Context(drafter=family, tree=tree, pp=par.pp, attention_dp=par.attention_dp,
                      mixed_chunks=scheduler is not None and scheduler.kind in ("sarathi", "vllm_v1"),
                      num_scheduler_steps=engine_cfg.num_scheduler_steps,
                      policy=policy if speculating and policy != "fixed" else None, tp=par.tp,
                      draft_tp=getattr(drafter, "tp", None) if family == "draft_model" else None,
                      method=speculation_method(drafter) if speculating else None,
                      gate=gate if speculating else None, schedule=schedule and speculating,
                      passes=getattr(drafter, "passes", None) if speculating else None)
    if not enabled:
        if release_named(lat, engine_cfg):
            # a release named is one that exists and serves the scenario, priced or not (`version: "99.0"` ran with
            # engine_time off, and so did suffix decoding on a named SGLang, a draft model on vLLM 0.11.0)
            try:
                _check_release(lat, engine_cfg, latency, context)
            except (UnsupportedCombination, FieldError) as exc:
                raise ScenarioError(exc.field, exc.message) from None
        return None
    if own:   # the profiled engine's own host time per step
        from profiles.engine_time.engine_profile import engine_time_of
        return engine_time_of(latency.profile, family)
    try:
        settings, version = _check_release(lat, engine_cfg, latency, context)
        deployment = Deployment(max_num_seqs=max_seqs,
                                max_num_tokens=scheduler.max_batched_tokens if scheduler is not None else 8192,
                                q=q, speculating=speculating, gpu_memory_bytes=device_total_bytes(hw), tp=par.tp,
                                datacenter_blackwell=hw.id in DATACENTER_BLACKWELL,
                                prefill=PrefillContext(family, par.pp, par.attention_dp, mla, role))
        engine = build_engine(dataclasses.replace(settings, version=version), deployment)
    except (UnsupportedCombination, FieldError) as exc:
        raise ScenarioError(exc.field, exc.message) from None
    return engine.for_drafter(family, keep_overlap=settings.async_scheduling is True, tree=tree)


def _check_release(lat: LatencyConfig, engine_cfg, latency, context) -> tuple:
    """`engine_release`'s (EngineSettings, version), checked against what that version offers and refuses for the
    scenario's `context` (profiles.engine_time.support.check: UnsupportedCombination naming the field)."""
    from profiles.engine_time.frameworks import entry_for
    from profiles.engine_time.support import check
    settings, version = engine_release(lat, engine_cfg, latency)
    entry = entry_for(settings.framework, settings.version)
    check(settings, version, context, tuple(entry["graphs"]["modes"]), _modes_elsewhere(settings.framework))
    return settings, version


def _modes_elsewhere(framework: str) -> dict[str, list[str]]:
    """CUDA-graph mode -> the version ranges of any framework that offer it (for error messages)."""
    from profiles.engine_time.frameworks import _entries, version_range
    out: dict[str, list[str]] = {}
    for e in _entries():
        for mode in e["graphs"]["modes"]:
            out.setdefault(mode, []).append(f"{e['framework']} {version_range(e)}")
    return out


def deployment_release(lat: LatencyConfig, engine_cfg, latency) -> tuple[str, str | None]:
    """(framework, version) of the engine the deployment runs, for every rule that depends on it (memory,
    sliding-window blocks, batch limits, engine time): `engine_release`'s. Where that has no engine-time entry
    (a version outside the modelled range, which `make_engine_time` refuses where engine time is on), the
    configured framework and version (None: the newest modelled)."""
    try:
        settings, version = engine_release(lat, engine_cfg, latency)
    except FieldError:
        from simulator.config.engine import EngineConfig, engine_settings
        settings = engine_settings(engine_cfg if engine_cfg is not None else EngineConfig(), lat)
        return settings.framework, settings.version
    return settings.framework, version


def check_architectures(release: tuple[str, str | None], target: ModelSpec, draft: ModelSpec | None,
                        method: str | None = None) -> None:
    """ScenarioError where the deployment's engine release (`release`: deployment_release) cannot load the target's
    or a draft model's architecture (cluster.engine.version: a vLLM or SGLang release older than its model
    registry's class, a TensorRT-LLM final release its release notes cite to lack it; cluster.model or
    drafter.model where no release read has it: profiles.engine_time.architectures), or refuses speculation `method`
    (speculation_method: eagle3, mtp) on the target's architecture at start-up (drafter.kind:
    profiles.engine_time.spec_architectures)."""
    from profiles.engine_time import architectures, spec_architectures
    from profiles.engine_time.support import UnsupportedCombination
    framework, version = release
    try:
        for model, model_field in ((target, "cluster.model"), (draft, "drafter.model")):
            architectures.check(framework, version, model, model_field=model_field)
        spec_architectures.check(framework, version, method, target)
    except UnsupportedCombination as exc:
        raise ScenarioError(exc.field, exc.message) from None


def served_window(release: tuple[str, str | None], target: ModelSpec) -> ModelSpec:
    """`target` with the sliding window the deployment's engine release applies (SGLang builds none for Llama,
    Mistral, Mixtral and Qwen; vLLM windows every Qwen2/Qwen3 layer or refuses: profiles.engine_time.
    sliding_window_served), a ScenarioError naming cluster.model where that release does not start with it."""
    from profiles.engine_time.sliding_window_served import served
    from profiles.engine_time.support import UnsupportedCombination
    try:
        return served(*release, target)
    except UnsupportedCombination as exc:
        raise ScenarioError(exc.field, exc.message) from None


def release_named(lat: LatencyConfig, engine_cfg) -> bool:
    """Whether the scenario names the engine release it runs (cluster.engine.version, or cluster.latency's older
    engine_version), rather than leaving it to the measured tables or the newest release modelled."""
    from simulator.config.engine import EngineConfig, engine_settings
    return engine_settings(engine_cfg if engine_cfg is not None else EngineConfig(), lat).version is not None


def check_draft_vocabulary(release: tuple[str, str | None], target: ModelSpec, draft: ModelSpec,
                           heterogeneous: bool) -> None:
    """ScenarioError where the deployment's engine release refuses draft model `draft` (drafter.kind draft_model)
    for the target because their vocabulary sizes differ, or lacks the heterogeneous-vocabulary drafting the
    scenario asks for (`heterogeneous`: drafter.heterogeneous_vocab; profiles.engine_time.draft_vocabulary).
    Applied where the scenario names the release (`release_named`) or asks for heterogeneous drafting: pairs of two
    vocabularies are what speculative decoding research pairs (cross-family drafters, TLI:
    profiles.acceptance.hetero_vocab), so a scenario that names no release simulates the pairing as the algorithm,
    whatever the engine priced for its steps would do with it; naming the release is asking whether that engine
    serves it. (A named approximation of intent, unlike the architecture gates, which apply to the implied release
    too: a model an engine cannot load has no step time to price.)"""
    from profiles.engine_time.draft_vocabulary import vocab_refusal
    framework, version = release
    if version is None:
        return
    found = vocab_refusal(framework, version, target, draft, heterogeneous)
    if found is not None:
        raise ScenarioError(*found)


def check_eagle3_embedding(release: tuple[str, str | None], target: ModelSpec, drafter) -> None:
    """ScenarioError where the deployment's engine release cannot serve the `eagle3` drafter's head for the target
    because of the head's vocabulary size or width (profiles.engine_time.eagle3_embedding). Applied where the scenario
    names the release, as check_draft_vocabulary."""
    from profiles.engine_time.eagle3_embedding import head_embedding_refusal
    from simulator.cost.eagle3 import resolve_head
    framework, version = release
    if version is None:
        return
    found = head_embedding_refusal(framework, version, target, resolve_head(drafter, target))
    if found is not None:
        raise ScenarioError(*found)


def check_tree_shape(release: tuple[str, str | None], drafter, speculation) -> None:
    """ScenarioError where the deployment's engine release (named by the scenario: `release_named`) does not draft
    the draft token tree `speculation` asks for with the drafter's method (profiles.engine_time.tree_shapes: vLLM
    drafts static kary trees from EAGLE heads in 0.10.1 to 0.20.2 only, SGLang EAGLE-2 trees within its
    top_k/steps/draft-token rules). Where no release is named the tree is draftsim's own shape (named: no engine
    is asked to run it)."""
    from profiles.engine_time.tree_shapes import release_tree_refusal
    refusal = release_tree_refusal(release, speculation_method(drafter), speculation)
    if refusal is not None:
        raise ScenarioError(*refusal)


def check_cascade_vocabulary(release: tuple[str, str | None], target: ModelSpec, drafter) -> None:
    """check_draft_vocabulary for each model stage of a cascade drafter (drafter.kind cascade), which the engine
    family rules run as draft models (simulator.cost.drafters.ENGINE_FAMILIES): vLLM 0.20.0 refuses
    `drafter: {kind: draft_model, model: smollm2-135m}` for Llama-3-8B, and ran the same model as a one-stage cascade,
    exit 0. A stage's `inner_model` drafts for the stage's model, not the target (a vertical cascade, draftsim's
    own: theory.cascade), and is not checked."""
    from models import get_model
    from profiles.engine_time.draft_vocabulary import vocab_refusal
    framework, version = release
    if version is None:
        return
    for i, stage in enumerate(drafter.stages):
        if stage.model is None or stage.model == "self":
            continue
        found = vocab_refusal(framework, version, target, get_model(stage.model), field=f"drafter.stages[{i}].model")
        if found is not None:
            raise ScenarioError(*found)


def pool_release(lat: LatencyConfig, engine_cfg, hw: HardwareSpec, dtype: str, kv_dtype: str | None,
                 base_dir: Path) -> tuple[str, str | None]:
    """`deployment_release` of a pool on `hw` worked out as build_replica_kind works it out: with the latency model
    the pool prices with (`make_latency_model`: the measured tables' version where neither cluster.engine nor
    cluster.latency names one), for callers that hold no built pool (a plan's launch scripts)."""
    return deployment_release(lat, engine_cfg, make_latency_model(lat, hw, dtype, base_dir, kv_dtype))


@dataclass(frozen=True)
class ReplicaKind:
    """What every replica of one pool is. `cost` is shared by the pool's replicas (a pure function of a
    step's aggregates, memoized), `policy` is bound to it; `kv_tokens` is one replica's KV capacity."""

    hardware: HardwareSpec
    target: ModelSpec
    parallelism: Parallelism
    latency: object
    engine: object                         # profiles.engine_time model, or None
    drafter: DrafterBuild | None
    speculation: SpeculationBuild | None
    cost: StepCostModel
    policy: object                         # simulator.speculation.control policy, or None (fixed shape)
    kv_tokens: int
    dtype: str
    kv_dtype: str = "bf16"                 # the KV cache's dtype (resolve_kv_dtype)
    state_bytes_per_request: float = 0.0   # hybrid models: recurrent state per request per GPU (with spec copies)
    hybrid_layout: object = None           # hybrid models: simulator.core.kv.hybrid_state.HybridPageLayout
    window_layout: object = None           # sliding-window models under vLLM V1: simulator.core.kv.sliding_window
    max_batch_size: int = 256              # running-request limit (max_num_seqs, simulator.cluster.factory.max_num_seqs)
    scheduler: object = None               # the scenario's SchedulerConfig, the named engine's defaults filled in
    #                                        (simulator.cluster.engine_scheduler); None: priced steps only
    context_len: int = 0                   # the longest context a request may reach (simulator.core.context.context_and_rule)
    context_rule: str = ""                 # where no max_model_len is given: the engine rule context_len comes from
    batch_rules: EngineBatchRules = EngineBatchRules()   # the engine's step limits beyond the scheduler section

    @property
    def acceptance(self):
        return self.speculation.acceptance if self.speculation is not None else None

    @property
    def gpus(self) -> int:
        """One replica's GPUs: the target's (tp·pp, or ep·pp) plus a drafter's own (placement separate)."""
        return self.parallelism.gpus + (self.drafter.own_gpus if self.drafter is not None else 0)

    @property
    def draft(self) -> ModelSpec | None:
        """The draft model whose KV lives beside the target's (a co-located draft model), if any."""
        return self.drafter.spec if self.drafter is not None and self.drafter.colocated_model else None

    def blocks(self, block_size: int, where: str = "cluster") -> int:
        total = self.kv_tokens // block_size
        if total < 1:
            raise ScenarioError("cluster.model" if where == "cluster" else f"{where}.parallelism",
                                f"no room for a single KV block of {block_size} tokens on {self.hardware.id}")
        return total


def parallelism_of(target: ModelSpec, p: ParallelismConfig, where: str = "cluster") -> Parallelism:
    """The validated parallelism of a `parallelism` block (errors name `where`.parallelism[.ep])."""
    from models.opgraph import validate_expert_parallelism
    try:
        par = Parallelism(p.tp, p.pp, p.ep)
        validate_expert_parallelism(target, par)
    except ValueError as exc:
        raise ScenarioError(f"{where}.parallelism.ep", str(exc)) from None
    try:
        validate_parallelism(target, par)
    except ValueError as exc:
        raise ScenarioError(f"{where}.parallelism", str(exc)) from None
    return par


def resolve_hardware(hardware, base_dir: Path | None, field: str = "cluster.hardware") -> HardwareSpec:
    """A catalog id, a hardware YAML file or an inline block (profiles.hardware_file), or a ScenarioError
    naming `field`."""
    from profiles.hardware_file import load_hardware
    try:
        return load_hardware(hardware, base_dir, field)
    except FieldError as exc:   # the (sub-)field of an inline block or file
        raise ScenarioError(exc.field, exc.message) from None
    except ValueError as exc:   # (an unknown catalog id)
        raise ScenarioError(field, str(exc)) from None


def resolve_model(model, base_dir: Path | None, field: str = "cluster.model") -> ModelSpec:
    """A catalog name, a Hugging Face config.json, a catalog-format YAML or an inline block (models.load)."""
    from models.load import load_model
    try:
        return load_model(model, base_dir)
    except ValueError as exc:
        raise ScenarioError(field, str(exc)) from None


def check_dtypes(hw: HardwareSpec, dtype: str, kv_dtype: str | None, where: str = "cluster") -> str:
    """The KV cache's dtype before the engine release is known (`kv_dtype`, else the model's 16-bit dtype:
    models.spec.kv_cache_dtype), after checking that `hw` can run weights in `dtype` and that KV dtype
    (ScenarioError otherwise); the deployment's own default is `resolve_kv_dtype`'s, once the release is known. FP8
    weights on a GPU without FP8 tensor cores pass here: whether the engine release runs them weight-only (FP8
    Marlin) is `check_fp8_marlin`'s, once the release is known (simulator.cluster.fp8_marlin)."""
    problem = None if weight_only_fp8(hw, dtype) else hw.weight_dtype_error(dtype)
    if problem is not None:
        raise ScenarioError("cluster.dtype", problem + (f" ({where}.hardware)" if where.startswith("cluster.") else ""))
    return _check_kv_dtype(hw, kv_cache_dtype(dtype, kv_dtype), where)


def _check_kv_dtype(hw: HardwareSpec, kv: str, where: str) -> str:
    problem = hw.kv_dtype_error(kv)
    if problem is not None:
        raise ScenarioError("cluster.kv_dtype", problem + (f" ({where}.hardware)" if where.startswith("cluster.") else ""))
    return kv


def resolve_kv_dtype(hw: HardwareSpec, dtype: str, kv_dtype: str | None, target: ModelSpec,
                     release: tuple[str, str | None], where: str = "cluster") -> str:
    """The KV cache's dtype the deployment runs (models.spec.kv_cache_dtype): `kv_dtype` where given, else what its
    engine release's KV dtype "auto" takes from `target`'s checkpoint (profiles.engine_time.kv_cache_auto: a
    declared fp8/nvfp4 KV cache where the release reads the declaration, else the model's 16-bit dtype).
    ScenarioError (cluster.kv_dtype) where `hw` cannot hold it, or where `kv_dtype` asks for another dtype than the
    one the release sets whatever it is asked (vLLM 0.15.0 - 0.20.2 and a compressed-tensors kv_cache_scheme)."""
    from profiles.engine_time.frameworks import release_or_modelled
    from profiles.engine_time.kv_cache_auto import auto_kv_dtype, forced_kv_dtype
    framework = release[0]
    version = release_or_modelled(framework, release[1])
    forced = forced_kv_dtype(framework, version, dtype, target)
    if forced is not None and kv_dtype is not None and kv_dtype != forced:
        raise ScenarioError("cluster.kv_dtype", f"{kv_dtype}, but {framework} {version} runs an {forced} KV cache for "
                            f"{target.name}'s checkpoint whatever --kv-cache-dtype says (its config.json declares a "
                            f"compressed-tensors kv_cache_scheme; vLLM 0.15.0 - 0.20.2 Attention.__init__); allowed: "
                            f"{forced}, leave it out, or vLLM >= 0.22.0 (cluster.engine.version)")
    auto = auto_kv_dtype(framework, version, dtype, target)
    return _check_kv_dtype(hw, kv_cache_dtype(dtype, kv_dtype, auto), where)


def check_expert_dtype(target: ModelSpec, dtype: str, hw: HardwareSpec) -> None:
    """A dtype that quantizes only the routed experts (mxfp4, models.dtypes.EXPERT_ONLY_DTYPES) of a model with none
    would serve it all in bf16: a ScenarioError naming cluster.dtype rather than a silently 16-bit model."""
    if dtype in EXPERT_ONLY_DTYPES and not target.routed_expert_param_count():
        allowed = ", ".join(d for d in hw.allowed_weight_dtypes() if d not in EXPERT_ONLY_DTYPES)
        raise ScenarioError("cluster.dtype", f"{dtype} quantizes only routed experts (the gpt-oss checkpoints' format: "
                            f"vLLM keeps every other weight in bf16), and {target.name} has none; for 4-bit weights of a "
                            f"dense model use int4 (weight-only) or nvfp4 (Blackwell); allowed: {allowed}")


def check_block_dtype(target: ModelSpec, par: Parallelism, dtype: str, where: str = "cluster") -> None:
    """A block-quantized dtype (fp8_block) whose 128-wide blocks the tp shards of `target` would cut: vLLM refuses
    to load it (models.block_quant, vllm/model_executor/layers/quantization/fp8.py). A ScenarioError naming
    `where`.parallelism.tp with the tp degrees that load, or cluster.dtype when none does."""
    from models.block_quant import BlockQuantizationError, validate_block_quantization
    try:
        validate_block_quantization(target, par, dtype)
    except BlockQuantizationError as exc:
        raise ScenarioError(f"{where}.parallelism.tp" if exc.allowed else "cluster.dtype", str(exc)) from None


def measured_passes(lat, target_cost, built_drafter, drafter):
    """Target and draft pass pricers of `cluster.latency.source: engine_profile` (simulator.cost.measured_pass):
    a real engine's measured passes of the catalog models (what else it needs: simulator.cluster.target_costs).
    `drafter` None: no drafter section (`draftsim estimate` prices the target alone)."""
    from simulator.cost.measured_pass import MeasuredPassCost
    if drafter is not None and (drafter.kind not in ("none", "ngram", "draft_model") or (
            drafter.kind == "draft_model" and (drafter.placement != "colocated" or drafter.layer_parallel > 1))):
        raise ScenarioError("drafter.kind", "engine_profile prices n-gram drafters and colocated draft models "
                            "(placement colocated, layer_parallel 1) only")
    try:
        target_cost = MeasuredPassCost(target_cost, lat.profile.pass_model(target_cost.spec.name))
        if built_drafter is not None and drafter.kind == "draft_model":
            built_drafter = dataclasses.replace(built_drafter, cost=MeasuredPassCost(
                built_drafter.cost, lat.profile.pass_model(built_drafter.spec.name, "drafter.model")))
    except FieldError as exc:
        raise ScenarioError(exc.field, exc.message) from None
    return target_cost, built_drafter


def _speculating(drafter, speculation, policy) -> tuple[int, bool]:
    """(γ, whether the replica speculates) of the scenario's drafter, speculation and policy sections;
    ScenarioError for a combination without meaning."""
    gamma = drafter.gamma if drafter.kind != "none" else 0
    speculating = drafter.kind != "none" and (gamma > 0 or speculation.kind in ("tree", "dynamic_tree"))
    if speculation.kind != "chain" and drafter.kind == "none":
        raise ScenarioError("speculation.kind", f"{speculation.kind!r} needs a drafter (drafter.kind)")
    if policy.kind != "fixed" and not speculating:
        raise ScenarioError("policy.kind", f"{policy.kind!r} controls speculation; it needs a drafter "
                            "with drafter.gamma >= 1")
    if speculation.kind == "multidraft" and drafter.kind != "none" and gamma < 1:
        raise ScenarioError("drafter.gamma", "multidraft needs sequences of length drafter.gamma >= 1")
    if speculation.kind == "retrieval_merge" and drafter.kind != "none" and gamma < 1:
        # (with 0 the replica did not speculate: plain decoding, the retrieved branch silently dropped)
        raise ScenarioError("drafter.gamma", "retrieval_merge verifies the drafter's chain beside the retrieved "
                                             "branch: it needs drafter.gamma >= 1")
    return gamma, speculating


def build_replica_kind(*, model, hardware, parallelism: ParallelismConfig, dtype: str,
                       latency: LatencyConfig, moe: MoeConfig, memory_utilization: float | None, drafter=None,
                       speculation=None, acceptance=None, policy=None, acceptance_seed: int = 0, base_dir: Path,
                       where: str = "cluster", latencies: dict | None = None,
                       kv_dtype: str | None = None, kv_layout=None, early_exit=None, engine_config=None,
                       scheduler=None, price_only: bool = False, max_model_len: int | None = None) -> ReplicaKind:
    """The one replica factory (module docstring). `model`: a catalog name, a model file or an inline block
    (models.load), or a ModelSpec; `hardware`: a catalog id, a hardware file or an inline block
    (profiles.hardware_file), or a HardwareSpec. `drafter`, `speculation`, `acceptance`, `policy` are the
    scenario's sections of those names (`drafter` None: plain decoding, the other three unused, as `draftsim
    estimate` prices a step without reading the speculation schema); `where` is the YAML path of the pool
    (for error messages); `latencies` (hardware id → latency model) lets pools on the same hardware share one
    latency model, so that its report (`latency_source`) counts the ops of all of them. `memory_utilization`:
    cluster.gpu_memory_utilization (None: the engine's own default, `memory_fraction`); `price_only`: price
    steps only (no KV capacity, no check that the weights fit: `draftsim estimate`). `kv_dtype`:
    the KV cache's dtype (None: the engine release's default for the checkpoint, `resolve_kv_dtype`); `kv_layout`: cluster.kv_cache.layout
    (None: paged); `early_exit`: the scenario's early_exit section (None: every layer); `engine_config`:
    cluster.engine (None: the defaults); `scheduler`: the scheduler section (its limits set the engine's
    CUDA-graph capture sizes; None: the engine's own running-request limit, `max_num_seqs`, and 8192 tokens; the
    fields it leaves out are the named engine's own, simulator.cluster.engine_scheduler: ReplicaKind.scheduler);
    `max_model_len`: cluster.max_model_len (None: the model's)."""
    hw = resolve_hardware(hardware, base_dir, f"{where}.hardware" if where != "cluster" else "cluster.hardware")
    if drafter is not None:   # imported here, as make_policy below: a plain step (`draftsim estimate`) needs neither
        from simulator.speculation.suffix.acceptance import bind_proposer
        acceptance, policy = bind_proposer(acceptance, policy, drafter)   # model-free drafters run on session texts
    target = resolve_model(model, base_dir)
    check_dtypes(hw, dtype, kv_dtype, where)
    check_expert_dtype(target, dtype, hw)
    par = parallelism_of(target, parallelism, where)
    check_block_dtype(target, par, dtype, where)
    gamma, speculating = _speculating(drafter, speculation, policy) if drafter is not None else (0, False)
    latencies = {} if latencies is None else latencies
    lat = latencies.get(hw.id)
    if lat is None:
        lat = latencies[hw.id] = make_latency_model(latency, hw, dtype, base_dir, kv_dtype)
    release = deployment_release(latency, engine_config, lat)
    if speculating and release_named(latency, engine_config):
        check_tree_shape(release, drafter, speculation)
    if drafter is not None:   # (whose n-gram proposer the acceptance walks: the deployment's engine)
        from simulator.speculation.suffix.acceptance import bind_engine
        acceptance = bind_engine(acceptance, drafter, release, policy)
    target = served_window(release, target)
    kv_dtype = resolve_kv_dtype(hw, dtype, kv_dtype, target, release, where)
    moe_kernel = release_moe_kernel(release, hw.id, dtype)   # (the release's MXFP4 experts, e.g. Marlin)
    if getattr(lat, "kv_dtype", kv_dtype) != kv_dtype or getattr(lat, "moe_kernel", moe_kernel) != moe_kernel:
        # (its attention tables are the KV dtype's, its MoE kernel the release's: built again once they are known)
        lat = latencies[hw.id] = make_latency_model(latency, hw, dtype, base_dir, kv_dtype, moe_kernel)
    check_fp8_marlin(release, hw, target, dtype, where)
    built_drafter = build_drafter(drafter, target, par, lat, hw, dtype, kv_dtype,
                                  DraftContext(moe, base_dir, release)) if speculating else None
    if built_drafter is not None and built_drafter.fixed_chain is not None:
        if speculation.kind != "chain":
            raise ScenarioError("speculation.kind", f"{built_drafter.fixed_chain}: it needs 'chain'")
        if policy.kind != "fixed":
            raise ScenarioError("policy.kind", f"{built_drafter.fixed_chain}: control policies need 'fixed'")
    realign = built_drafter is not None and speculation.kind == "chain" and speculation.alignment == "realign"
    facts = Facts(built_drafter is not None, par.ep, par.pp, par.gpus, latency.nano_batches,
                  kv_layout.kind if kv_layout is not None else "paged", early_exit is not None, realign,
                  target.is_moe, target.is_hybrid, LATENCY_SOURCES[latency.source].whole_passes)
    target_costs.check(facts)   # every variant's compatibility errors (simulator.cluster.target_costs)
    if early_exit is not None and max(early_exit.exit_layers) >= target.num_layers:
        raise ScenarioError("early_exit.exit_layers", f"must be below {target.name}'s {target.num_layers} layers")
    kv_fraction = 1.0
    if kv_layout is not None:   # how much of a token's KV the GPU keeps (simulator.core.kv.KV_LAYOUTS)
        from simulator.core.kv import KV_LAYOUTS
        layout = KV_LAYOUTS[kv_layout.kind]
        refusal = layout.refusal(target, kv_layout)
        if refusal is not None:
            raise ScenarioError("cluster.kv_cache.layout.kind", refusal)
        kv_fraction = layout.gpu_fraction(target, kv_layout)
    family = drafter_family(drafter) if built_drafter is not None else None
    check_architectures(release, target, built_drafter.spec if built_drafter is not None
                        and getattr(drafter, "kind", None) == "draft_model" else None,
                        speculation_method(drafter) if built_drafter is not None else None)
    # (an MTP draft length after the architecture gate, as vLLM orders them: simulator.cost.mtp.check_draft_length)
    if built_drafter is not None and getattr(drafter, "kind", None) == "mtp":
        from simulator.cost.mtp import check_draft_length
        check_draft_length(release, drafter.gamma, target.num_mtp_modules)
    if built_drafter is not None and getattr(drafter, "kind", None) == "draft_model" \
            and (drafter.heterogeneous_vocab or release_named(latency, engine_config)):
        check_draft_vocabulary(release, target, built_drafter.spec, drafter.heterogeneous_vocab)
    if built_drafter is not None and getattr(drafter, "kind", None) == "eagle3" and release_named(latency,
                                                                                                  engine_config):
        check_eagle3_embedding(release, target, drafter)
    if built_drafter is not None and getattr(drafter, "kind", None) == "cascade" \
            and release_named(latency, engine_config):
        check_cascade_vocabulary(release, target, drafter)
    context_len, context_rule = context_and_rule(target, max_model_len, release,
                                                 bool(getattr(engine_config, "allow_long_context", None)))
    if not price_only:   # (`draftsim estimate` keeps its own documented limits)
        scheduler = with_engine_defaults(scheduler, latency, engine_config, release, hw, context_len, family)
    max_seqs = max_num_seqs(scheduler, latency, engine_config, hw, lat, family)
    framework = release[0]
    profile = vllm_profile_run(release, hw, scheduler, max_seqs)
    target_cost = target_costs.build(facts, BuildContext(target, par, lat, dtype, kv_dtype, hw, moe, base_dir,
                                                         built_drafter, kv_layout, early_exit, latency.nano_batches))
    if facts.measured_passes:
        target_cost, built_drafter = measured_passes(lat, target_cost, built_drafter, drafter)
    spec = control = None
    if built_drafter is not None:
        max_gamma = max(gamma, policy.max_gamma if policy.kind in ("smartspec", "thompson") else 0)
        if built_drafter.hidden_state is not None:   # (the shapes EAGLE-3 and MTP run, before their acceptance)
            from simulator.cost.proposer import check_hidden_state_shape
            check_hidden_state_shape(speculation, drafter.kind)
        spec = build_speculation(speculation, acceptance, max_gamma, acceptance_seed, base_dir,
                                 built_drafter.passes_per_step == 1, built_drafter.tokens_per_pass,
                                 per_position_tree=drafter.kind == "eagle3")
    q = 1 if spec is None else spec.verify_q
    sglang = sglang_deployment(release, engine_config, hw, target, par, scheduler, family, q, where)
    util = memory_fraction(memory_utilization, framework, hw, sglang)
    pool_drafter = built_drafter if sglang is None or counts_draft(sglang.version) else None   # (SGLang < 0.5.14:
    # the draft's weights and KV live outside the pool, simulator.cluster.sglang_memory)
    kv_tokens = 0 if price_only else \
        kv_capacity_tokens(hw, target, par, dtype, util, pool_drafter, where, kv_dtype, kv_fraction, framework,
                           profile, sglang)
    if sglang is not None and kv_tokens and (scheduler is None or scheduler.max_batch_size is None) \
            and default_max_num_seqs("sglang", sglang.version, hw, family) is None:   # its request pool, from its KV pool
        max_seqs = sglang_max_running_requests(kv_tokens, context_len)
    engine = make_engine_time(latency, engine_config, hw, lat, drafter, speculating=built_drafter is not None,
                              tree=spec is not None and spec.tree is not None, q=q, par=par, scheduler=scheduler,
                              policy=policy.kind if policy is not None else None, mla=target.is_mla,
                              role=where.rsplit(".", 1)[-1] if where.startswith("cluster.disaggregation.") else None,
                              max_seqs=max_seqs, gate=getattr(policy, "gate", None),
                              schedule=bool(getattr(policy, "draft_len_schedule", None)))
    if built_drafter is None:
        cost = StepCostModel(target_cost, None, 0, engine=engine)
    else:
        vllm_proposer = drafter.kind == "draft_model" and drafter.passes == "vllm"
        if vllm_proposer and (spec.tree is not None or policy.kind != "fixed"):
            raise ScenarioError("drafter.passes", "'vllm' is vLLM's fixed-γ chain proposer: it needs speculation.kind "
                                "chain and policy fixed")
        proposer, widths = None, spec.widths
        if built_drafter.hidden_state is not None:
            from simulator.cost.proposer import make_proposer
            proposer = make_proposer(built_drafter.hidden_state, speculation, spec, drafter.kind)
            widths = (1,) + proposer.later_widths
            if proposer.later_tree and policy.kind != "fixed":   # (its per-request counts price chain passes)
                raise ScenarioError("policy.kind", f"{policy.kind!r} changes draft counts per step; vLLM's static "
                                    "token tree drafts the same tree every step: it needs policy fixed")
        cost = StepCostModel(target_cost, built_drafter.cost, spec.acceptance.depth, widths, spec.verify_q,
                             spec.tree_attention,
                             overlap_exposure(spec.full_accept_prob) if built_drafter.separate else None,
                             engine=engine, vllm_proposer=vllm_proposer, proposer=proposer)
        from simulator.cluster.implied import naming_implied
        from simulator.speculation.control import make_policy
        # (a refusal of a γ the drafter section leaves out says so: a policy's limits met the drafter kind's default)
        defaulted = {} if "gamma" in drafter.model_fields_set else \
            {"drafter.gamma": f"{gamma}, the {drafter.kind} drafter's default"}
        with naming_implied(defaulted, tuple(defaulted)):
            control = make_policy(policy, speculation, spec, gamma, cost)
    state_bytes, layout = 0.0, None
    if target.num_state_layers:
        draft_tokens = 0 if spec is None else spec.verify_q - 1
        state_bytes = state_bytes_per_request(target, par, dtype, framework, draft_tokens)
        if not price_only:
            layout = hybrid_layout(hw, target, par, dtype, kv_dtype, util, pool_drafter,
                                   framework, draft_tokens, where, profile, sglang)
            kv_tokens = layout.kv_tokens
    window = None
    if not price_only and keeps_window(target, release, hw, where, kv_layout):
        window = sliding_window_layout(hw, target, par, dtype, kv_dtype, util, built_drafter,
                                       scheduler, q, where, profile)
        kv_tokens = window.kv_tokens
    rules = engine_batch_rules(release, scheduler, drafter if built_drafter is not None else None, q - 1)
    order = schedule_policy(release, engine_config, scheduler)
    if order is not None:
        rules = dataclasses.replace(rules, queue_order=order)
    return ReplicaKind(hw, target, par, lat, engine, built_drafter, spec, cost, control, kv_tokens, dtype, kv_dtype,
                       state_bytes, layout, window, max_seqs, scheduler, context_len, context_rule, rules)
