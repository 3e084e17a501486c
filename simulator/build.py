"""Scenario → the run's components: request table, replicas with their KV capacity and step costs, router.

Memory model (per GPU of a replica, the binding GPU sets the capacity): HBM × gpu_memory_utilization
minus the target's weight shard (weights / (tp·pp)) minus the draft's weight shard (draft weights /
draft tp; the draft lives on the first draft_tp GPUs of the replica) leaves room for KV; one token costs
the target's per-GPU KV bytes plus the draft's. Activations and CUDA graphs are covered by the
(1 − gpu_memory_utilization) margin, as in vLLM's accounting.
Expert parallelism (parallelism.ep > 1, MoE targets): each GPU holds 1/ep of the routed experts and 1/tp
of everything else (models.moe_routing.weight_bytes_per_gpu); each of the ep/tp data-parallel attention
groups keeps the KV of its own requests, so the replica holds attention_dp × one group's tokens.
Approximation: the replica's requests are pooled as if the groups were always balanced (the op graph
makes the same assumption for their compute). The step cost prices routing skew, pre-scheduling and the
all-to-all on the link topology (simulator.moe_cost).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models import get_model
from models.spec import ModelSpec
from models.step import Parallelism
from profiles.hardware import HardwareSpec, get_hardware
from simulator.acceptance import ChainAcceptance
from simulator.drafters import build_drafter, overlap_exposure
from simulator.errors import ScenarioError
from simulator.policies import make_policy
from simulator.speculation import build_speculation
from simulator.routers import make_router
from simulator.schema import ConstantAcceptance, LatencyConfig, Scenario, TraceAcceptance
from simulator.state import RequestState, StepLog
from simulator.step_cost import ForwardCost, StepCostModel
from simulator.trace_acceptance import load_trace_acceptance, load_trace_sampled_acceptance
from simulator.workload import RequestTable, generate_requests
from simulator.replica import Replica

GIB = 1024 ** 3


@dataclass(frozen=True)
class Streams:
    """Independent seeded streams so that one change does not reshuffle everything else."""

    workload: np.random.Generator
    router: np.random.Generator
    acceptance_seed: int

    @staticmethod
    def from_seed(seed: int) -> "Streams":
        work, route, acc = np.random.SeedSequence(seed).spawn(3)
        return Streams(np.random.default_rng(work), np.random.default_rng(route),
                       int(acc.generate_state(1, dtype=np.uint64)[0]))


@dataclass
class Built:
    scenario: Scenario
    hardware: HardwareSpec
    target: ModelSpec
    draft: ModelSpec | None
    parallelism: Parallelism
    table: RequestTable
    state: RequestState
    replicas: list[Replica]
    router: object
    log: StepLog
    kv_tokens_per_replica: int
    latency: object = None
    engine: object = None


def _lookup(field: str, getter, name: str):
    try:
        return getter(name)
    except ValueError as exc:  # UnknownNameError is a ValueError
        raise ScenarioError(field, str(exc)) from None


def make_latency_model(lat: LatencyConfig, hardware_id: str, dtype: str, base_dir: Path):
    """The latency model of `cluster.latency` (profiles.select); a MeasuredDataError becomes a
    ScenarioError naming the field to change."""
    from profiles.measured import MeasuredDataError
    from profiles.select import LatencySourceConfig, select_latency
    profile_dir = Path(lat.profile_dir) if lat.profile_dir else None
    if profile_dir is not None and not profile_dir.is_absolute():
        profile_dir = base_dir / profile_dir
    if profile_dir is not None and not profile_dir.is_dir():
        raise ScenarioError("cluster.latency.profile_dir", f"no such directory: {profile_dir}")
    config = LatencySourceConfig(lat.source, lat.framework, lat.version, profile_dir)
    try:
        return select_latency(hardware_id, dtype, config)
    except MeasuredDataError as exc:
        raise ScenarioError(exc.field, str(exc).split(": ", 1)[1]) from None


def drafter_family(drafter) -> str | None:
    """The speculation method as serving engines name it (None without a drafter): eagle (autoregressive
    head), medusa (parallel heads), draft_model, layer_skip or ngram."""
    if drafter.kind == "none":
        return None
    if drafter.kind == "head":
        return "eagle" if drafter.style == "autoregressive" else "medusa"
    return drafter.kind


def make_engine_time(lat: LatencyConfig, hardware_id: str, latency, drafter: str | None):
    """The serving engine's per-step time model (profiles.engine_time), or None: on by default for GPUs
    (off for the local CPU, whose profile measures host work per pass), at `engine_version`, else the
    framework version that priced the kernels (the newest when the kernels come from elsewhere), as it
    runs with `drafter` (`drafter_family`)."""
    from profiles.engine_time import engine_time_for
    enabled = lat.engine_time if lat.engine_time is not None else hardware_id != "cpu-local"
    if not enabled:
        return None
    version = lat.engine_version
    if version is None and getattr(latency, "framework", None) == lat.framework:
        version = getattr(latency, "version", None)
    try:
        engine = engine_time_for(lat.framework, version)
    except ValueError as exc:
        field, message = str(exc).split(": ", 1)
        raise ScenarioError(field, message) from None
    return engine.for_drafter(drafter)


def make_acceptance(scenario: Scenario, gamma: int, seed: int, base_dir: Path):
    acc = scenario.acceptance
    if isinstance(acc, TraceAcceptance) and acc.mode == "sample":
        return load_trace_sampled_acceptance(acc.trace, acc.drafter, acc.temperature, gamma, seed, base_dir)
    if isinstance(acc, TraceAcceptance):
        return load_trace_acceptance(acc.trace, acc.drafter, gamma, seed, base_dir)
    alphas = [acc.alpha] if isinstance(acc, ConstantAcceptance) else list(acc.alphas)
    return ChainAcceptance.from_alphas(alphas, gamma, seed)


def kv_capacity_tokens(hw: HardwareSpec, target: ModelSpec, par: Parallelism, dtype: str, util: float,
                       draft: ModelSpec | None, draft_par: Parallelism | None,
                       drafter_bytes: tuple[float, float] | None = None) -> int:
    """Tokens of KV cache a replica can hold (see the module docstring for the memory model).
    `drafter_bytes` = (weight bytes per GPU, KV bytes per token per GPU) of a drafter that is not a
    co-located draft model (heads, layer skipping, n-gram, separate or CPU drafters: simulator.drafters)."""
    from models.moe_routing import weight_bytes_per_gpu
    target_weights = weight_bytes_per_gpu(target, par, dtype) if par.ep > 1 else target.weight_bytes(dtype) / par.gpus
    free = hw.hbm_bytes * util - target_weights
    per_token = target.kv_bytes_per_token_per_gpu(par, dtype)
    extra_w = 0.0
    if draft is not None:
        extra_w = draft.weight_bytes(dtype) / draft_par.gpus
        per_token += draft.kv_bytes_per_token_per_gpu(draft_par, dtype)
    elif drafter_bytes is not None:
        extra_w = drafter_bytes[0]
        per_token += drafter_bytes[1]
    free -= extra_w
    if free <= 0:
        need = target_weights + extra_w
        raise ScenarioError("cluster.model", f"{target.name}{' + draft ' + draft.name if draft else ''} needs "
                            f"{need / GIB:.1f} GiB of weights per GPU but {hw.id} offers "
                            f"{hw.hbm_bytes * util / GIB:.1f} GiB at gpu_memory_utilization={util}; "
                            f"raise cluster.parallelism.tp/pp{'/ep' if target.is_moe else ''} or pick larger hardware")
    return int(free // per_token) * par.attention_dp


def build(scenario: Scenario, base_dir: Path) -> Built:
    cl = scenario.cluster
    hw = _lookup("cluster.hardware", get_hardware, cl.hardware)
    target = _lookup("cluster.model", get_model, cl.model)
    from models.spec import validate_parallelism
    try:
        par = Parallelism(cl.parallelism.tp, cl.parallelism.pp, cl.parallelism.ep)
        from models.opgraph import validate_expert_parallelism
        validate_expert_parallelism(target, par)
    except ValueError as exc:
        raise ScenarioError("cluster.parallelism.ep", str(exc)) from None
    try:
        validate_parallelism(target, par)
    except ValueError as exc:
        raise ScenarioError("cluster.parallelism", str(exc)) from None
    d = scenario.drafter
    gamma = d.gamma if d.kind != "none" else 0
    speculating = d.kind != "none" and (gamma > 0 or scenario.speculation.kind in ("tree", "dynamic_tree"))
    if scenario.speculation.kind != "chain" and d.kind == "none":
        raise ScenarioError("speculation.kind", f"{scenario.speculation.kind!r} needs a drafter (drafter.kind)")
    if scenario.policy.kind != "fixed" and not speculating:
        raise ScenarioError("policy.kind", f"{scenario.policy.kind!r} controls speculation; it needs a drafter "
                            "with drafter.gamma >= 1")
    if scenario.speculation.kind == "multidraft" and d.kind != "none" and gamma < 1:
        raise ScenarioError("drafter.gamma", "multidraft needs sequences of length drafter.gamma >= 1")
    latency = make_latency_model(cl.latency, cl.hardware, cl.dtype, base_dir)
    engine = make_engine_time(cl.latency, cl.hardware, latency, drafter_family(d) if speculating else None)
    drafter = None
    if speculating:
        drafter = build_drafter(d, target, par, latency, hw, cl.dtype, lambda name: get_model(name),
                                validate_parallelism)
    draft = drafter.spec if drafter is not None and d.kind == "draft_model" and d.placement == "colocated" else None
    draft_par = Parallelism(d.tp, 1) if draft is not None else None
    kv_tokens = kv_capacity_tokens(hw, target, par, cl.dtype, cl.gpu_memory_utilization, draft, draft_par,
                                   (drafter.weight_bytes_per_gpu, drafter.kv_bytes_per_token_per_gpu)
                                   if drafter is not None else None)
    block = scenario.scheduler.block_size
    total_blocks = kv_tokens // block
    if total_blocks < 1:
        raise ScenarioError("cluster.model", f"no room for a single KV block of {block} tokens on {hw.id}")

    streams = Streams.from_seed(scenario.seed)
    table = generate_requests(scenario.workload, streams.workload, base_dir)
    state = RequestState(table)
    if par.ep > 1:
        from simulator.moe_cost import make_ep_forward_cost
        target_cost = make_ep_forward_cost(target, par, latency, cl.dtype, hw, cl.moe, base_dir)
    else:
        target_cost = ForwardCost(target, par, latency, cl.dtype)
    spec = policy = None
    if drafter is not None:
        max_gamma = max(gamma, getattr(scenario.policy, "max_gamma", 0))
        spec = build_speculation(scenario, max_gamma, streams.acceptance_seed, base_dir,
                                 lambda g: make_acceptance(scenario, g, streams.acceptance_seed, base_dir),
                                 drafter.passes_per_step == 1)
        policy = make_policy(scenario, spec, gamma)
    log = StepLog()
    replicas = []
    for i in range(cl.replicas):
        if spec is None:
            cost = StepCostModel(target_cost, None, 0, engine=engine)
        else:  # shared memo: replicas are identical
            cost = StepCostModel(target_cost, drafter.cost, spec.acceptance.gamma, spec.widths, spec.verify_q,
                                 spec.tree_attention,
                                 overlap_exposure(spec.full_accept_prob) if drafter.separate else None,
                                 engine=engine)
        if policy is not None:
            policy = policy.bind(cost)
        replicas.append(Replica(i, state, scenario.scheduler, cost, spec.acceptance if spec else None,
                                total_blocks, log, policy))
    router = make_router(cl.router, cl.replicas, streams.router)
    return Built(scenario, hw, target, drafter.spec if drafter is not None else None, par, table, state, replicas,
                 router, log, kv_tokens, latency, engine)
