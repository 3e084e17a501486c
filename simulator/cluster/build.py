"""Scenario → the run's components: the request table and a cluster of pools, each pool replicas of one
`ReplicaKind` (simulator.cluster.factory) behind a router; a disaggregated cluster adds the KV hand-off between
its prefill and decode pools (simulator.cluster.handoff).

- colocated (default): one pool `colocated` of `cluster.replicas` replicas (simulator.core.replica).
- `cluster.disaggregation`: a `prefill` pool (simulator.cluster.pool_replicas.PrefillReplica) and a `decode` pool
  (DecodeReplica), each with its own replica count, parallelism and hardware (default: the cluster's),
  so each gets its own latency model, engine-time model, step cost and KV capacity from the factory.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from simulator.errors import ScenarioError
from simulator.cluster.engine_cache import engine_prefix_caching, nothing_shared, pending as engine_cache_pending, \
    window_cache_modelled, with_engine_prefix_caching
from simulator.cluster.engine_scheduler import FILLED
from simulator.cluster.factory import ReplicaKind, build_replica_kind, deployment_release, resolve_hardware, \
    resolve_model
from simulator.cluster.implied import context_note, dtype_note, naming_implied, release_notes
from simulator.core.pauses import PausedRequests
from simulator.core.replica import Replica
from simulator.core.routers import make_router
from simulator.config.scenario import Scenario
from simulator.core.state import RequestState
from simulator.core.steplog import StepLog
from simulator.core.workload import RequestTable, generate_requests
from simulator.speculation.ralmspec import build_retrieval, check_retrieval

DISAGG = "cluster.disaggregation"


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
class Pool:
    """Replicas of one kind behind one router. `name`: colocated, prefill or decode."""

    name: str
    kind: ReplicaKind
    replicas: list[Replica]
    router: object

    @property
    def gpus(self) -> int:
        return len(self.replicas) * self.kind.gpus


@dataclass
class Cluster:
    scenario: Scenario
    table: RequestTable
    state: RequestState
    pools: list[Pool]
    log: StepLog
    handoff: object = None          # simulator.cluster.handoff.KVHandOff between the pools, or None
    retrieval: object = None        # simulator.speculation.ralmspec hook (`retrieval:`; its knowledge base), or None
    workload_s: float = 0.0            # host seconds spent reading (a trace) or drawing the requests
    engine_scheduler: dict | None = None   # scheduler fields the named engine's defaults set (summary.json), or None
    engine_prefix_caching: dict | None = None   # the named engine's prefix-caching default (summary.json), or None
    replicas: list[Replica] = field(init=False)
    simulated: bool = field(default=False, init=False)   # set when a simulation starts: its state is that run's

    def __post_init__(self):
        self.replicas = [rep for pool in self.pools for rep in pool.replicas]

    # what one-pool callers (reference engine, plan screen) read
    @property
    def kind(self) -> ReplicaKind:
        return self.pools[-1].kind

    @property
    def target(self):
        return self.kind.target

    @property
    def draft(self):
        return self.kind.drafter.spec if self.kind.drafter is not None else None

    @property
    def gpus(self) -> int:
        return sum(pool.gpus for pool in self.pools)


def pool_kind(scenario: Scenario, pool, where: str, seed: int, base_dir: Path,
              latencies: dict | None = None) -> ReplicaKind:
    """The replica kind of one pool (`pool`: a PoolConfig, or None for the colocated cluster). A refusal of the
    engine release the scenario leaves out says so, and what implied it (simulator.cluster.implied)."""
    cl = scenario.cluster
    hardware = pool.hardware if pool is not None and pool.hardware else cl.hardware
    latencies = {} if latencies is None else latencies

    def notes() -> dict[str, str]:   # (the pool's latency model: built by then, as the release is resolved from it)
        latency = latencies.get(resolve_hardware(hardware, base_dir).id)
        return release_notes(cl.latency, cl.engine, latency) if latency is not None else {}

    with naming_implied(notes, release_named=True):
        return build_replica_kind(
            model=cl.model, hardware=hardware,
            parallelism=pool.parallelism if pool is not None else cl.parallelism, dtype=cl.dtype,
            latency=cl.latency, moe=cl.moe, memory_utilization=cl.gpu_memory_utilization, drafter=scenario.drafter,
            speculation=scenario.speculation, acceptance=scenario.acceptance, policy=scenario.policy,
            acceptance_seed=seed, base_dir=base_dir, where=where, latencies=latencies, kv_dtype=cl.kv_dtype,
            kv_layout=cl.kv_cache.layout, early_exit=scenario.early_exit, engine_config=cl.engine,
            scheduler=scenario.scheduler, max_model_len=cl.max_model_len)


def _engine_scheduler(scenario: Scenario, kind: ReplicaKind) -> tuple[Scenario, dict | None]:
    """(the scenario with the scheduler its pool `kind` runs, checked as the scenario's own is; the fields the
    named engine's defaults filled in, or None) (simulator.cluster.engine_scheduler)."""
    if kind.scheduler is scenario.scheduler:
        return scenario, None
    filled = {name: getattr(kind.scheduler, name) for name in FILLED
              if name in kind.scheduler.model_fields_set - scenario.scheduler.model_fields_set}
    scenario = scenario.model_copy(update={"scheduler": kind.scheduler})
    try:
        scenario.check_scheduler()
    except ValueError as exc:
        raise ScenarioError("scheduler.max_batched_tokens", f"{exc} (the engine's default budget); set it") from None
    return scenario, filled


def _engine_cache(scenario: Scenario, kind: ReplicaKind) -> tuple[Scenario, dict | None]:
    """(the scenario with the prefix caching its pool `kind` runs; summary.json's record of the named engine's
    default, or None) (simulator.cluster.engine_cache), and the prefix-routing check that depends on it."""
    cl = scenario.cluster
    release = deployment_release(cl.latency, cl.engine, kind.latency)
    record = engine_prefix_caching(scenario, kind.target, release, kind.window_layout is not None)
    scenario = with_engine_prefix_caching(scenario, record)
    _check_prefix_routers(scenario)
    return scenario, record


def _router(name: str, replicas: int, rng, where: str):
    return make_router(name, replicas, rng, f"{where}.router")


def _whole_prompt_peak(lay, length: int) -> int:
    """The most blocks a request of `length` tokens holds in a sliding-window pool whose scheduler prefills
    whole prompts (SlidingWindowPool.blocks with Replica.peak_tokens): a prompt of length − 1 tokens in one
    step, then its last step's context + q."""
    return int(lay.peak(max(length - 2 + lay.q, length - 1), max(length - 1, lay.q)))


def check_pool_starts(scenario: Scenario, kind: ReplicaKind, where: str = "cluster") -> None:
    """What the run refuses of a pool of replica kind `kind` once it is built and before any request is drawn:
    vLLM's start-up KV check (check_one_request_fits) on the scheduler the pool runs (the named engine's
    defaults filled as `_build` fills them). The plan's screen calls it on each candidate's replica
    (simulator.workflows.plan.screen.replica_kind), so a candidate the confirming run would refuse is refused
    by the screen with the same reason rather than ranked feasible."""
    scenario, _ = _engine_scheduler(scenario, kind)
    check_one_request_fits(scenario, kind, where)


def check_one_request_fits(scenario: Scenario, kind: ReplicaKind, where: str) -> None:
    """vLLM's start-up check (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory, 0.11.0 and 0.32.0):
    the KV cache must hold one request of max_model_len tokens (`cluster.max_model_len`, default the model's
    context), "To serve at least one request with the model's max seq len ..."; vLLM refuses to start
    otherwise. Counted in the replica's own pool: a sliding-window layout's peak with steps of at most
    max_num_batched_tokens (SlidingWindowSpec.max_memory_usage_bytes), a hybrid model's attention blocks and
    state, else ceil(max_model_len / block) blocks. Approximation: vLLM sums the layers' bytes before rounding
    the pool to whole blocks (and without a group's padding layers), so a deployment within one block of the
    limit may pass there and fail here. Other engines: not checked (SGLang and TensorRT-LLM size their own
    limits).

    A sliding-window layout under a scheduler kind that does not chunk prompts (SlidingWindowPool.blocks: a
    whole prompt in one step, held in every group until the next step frees the window's) is held to that
    pool's own peak too, a prompt of max_model_len − 1 tokens: vLLM's check (steps of max_num_batched_tokens)
    passed there while the run then dropped every such request as exceeds_kv_capacity (exit 0)."""
    from simulator.cluster.replica_memory import GIB
    from simulator.config.engine import engine_settings
    cl = scenario.cluster
    if engine_settings(cl.engine, cl.latency).framework != "vllm":
        return
    length, block = kind.context_len, scenario.scheduler.block_size
    step = scenario.scheduler.max_batched_tokens
    whole_prompts = None   # (a window layout whose scheduler prefills whole prompts: the pool's own peak)
    if kind.window_layout is not None:
        lay = kind.window_layout
        need, total, longest = int(lay.peak(length, step)), lay.total_blocks, lay.max_context(step)
        block_bytes = lay.block_bytes
        if need <= total and lay.step_tokens is None and _whole_prompt_peak(lay, length) > total:
            whole_prompts = _whole_prompt_peak(lay, length)
            lo, hi = 0, length   # (the longest context whose peak fits: the peak grows with it)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if _whole_prompt_peak(lay, mid) <= total else (lo, mid - 1)
            longest = lo
    elif kind.hybrid_layout is not None:
        lay = kind.hybrid_layout
        per = lay.attention_groups
        need, total = per * -(-length // lay.block_tokens) + lay.state_blocks_per_request, lay.total_blocks
        longest = max(0, (total - lay.state_blocks_per_request) // per * lay.block_tokens)
        block_bytes = lay.block_bytes
    else:
        need, total = -(-length // block), kind.kv_tokens // block
        longest, block_bytes = total * block, None
    if whole_prompts is not None:
        raise ScenarioError("cluster.max_model_len", f"{length} tokens: under scheduler kind "
                            f"'{scenario.scheduler.kind}' the sliding-window pool takes a whole prompt in one step (it "
                            f"models vllm_v1's prompt chunks only), and a request of that length holds up to "
                            f"{whole_prompts} KV blocks ({whole_prompts * block_bytes / GIB:.2f} GiB per GPU) in its "
                            f"full-attention and sliding-window groups at once, but a replica of {kind.target.name} on "
                            f"{kind.hardware.id} holds {total}, so such a request could never run (vLLM V1 chunks "
                            f"prompts: scheduler kind vllm_v1); allowed: at most {longest} (set cluster.max_model_len), "
                            "or scheduler kind vllm_v1, or raise cluster.gpu_memory_utilization or the parallelism",
                            context_note(kind))
    if need <= total:
        return
    field = "cluster.max_model_len"
    size = f" ({need * block_bytes / GIB:.2f} GiB per GPU)" if block_bytes else ""
    raise ScenarioError(field, f"{length} tokens: one request of that length needs {need} KV blocks{size} but a "
                        f"replica of {kind.target.name} on {kind.hardware.id}{'' if where == 'cluster' else ' (' + where + ')'} "
                        f"holds {total}, so vLLM would refuse to start (check_enough_kv_cache_memory); allowed: at "
                        f"most {longest} (set cluster.max_model_len), or raise cluster.gpu_memory_utilization or "
                        f"the parallelism", context_note(kind))


def _requests(scenario: Scenario, streams: Streams, base_dir: Path, kind: ReplicaKind
              ) -> tuple[RequestTable, RequestState, float]:
    """The run's requests within the context of the pool `kind` (its context_len: simulator.core.context), their
    state, and the host seconds it took to read or draw them. A disaggregated run passes the pool of the shorter
    context: each server checks the requests it is sent against its own max_model_len, and the pools' engine
    releases may derive different ones from the config (a GPU's measured tables name its release). Approximation,
    named: the prefill server is taken to check the whole request (prompt + output), as SGLang's PD router sends
    the request to both servers; vLLM's example P/D proxy sends the prefill server max_tokens 1, so there only
    prompt + 1 must fit, and a request whose output alone passes the prefill pool's limit is handled here by
    workload.context_overflow although that server would take it."""
    from simulator.core.context import DROP_EXCEEDS_CONTEXT, apply_context_limit, check_least_request
    limit, target = kind.context_len, kind.target
    workload = scenario.workload.spec()
    check_least_request(workload, f"the context of {target.name} (cluster.max_model_len)", limit, base_dir)
    t0 = time.perf_counter()
    table = generate_requests(workload, streams.workload, base_dir, block_size=scenario.scheduler.block_size)
    workload_s = time.perf_counter() - t0
    table, rejected = apply_context_limit(table, limit, scenario.workload.context_overflow, target.name)
    state = RequestState(table, scenario.workload.parallel_samples)
    state.dropped[rejected] = True
    state.drop_reason[rejected] = DROP_EXCEEDS_CONTEXT
    return table, state, workload_s


def _check_parallel_samples(scenario: Scenario) -> None:
    """workload.parallel_samples > 1 is modelled for co-located replicas without speculation or a KV
    manager (simulator.core.replica): the other combinations would count one sequence per request."""
    if scenario.workload.parallel_samples == 1:
        return
    cl = scenario.cluster
    # (what is present, what would be allowed instead): "or no a drafter" read as a typo
    unsupported = [(f"drafter kind {scenario.drafter.kind!r}", "drafter kind 'none'", scenario.drafter.kind != "none"),
                   ("cluster.disaggregation", "no cluster.disaggregation", cl.disaggregation is not None),
                   ("cluster.kv_cache.prefix_caching", "no cluster.kv_cache.prefix_caching", cl.kv_cache.prefix_caching),
                   ("cluster.kv_cache.host_memory_gib", "no cluster.kv_cache.host_memory_gib",
                    cl.kv_cache.host_memory_gib > 0)]
    for what, instead, present in unsupported:
        if present:
            raise ScenarioError("workload.parallel_samples", f"{scenario.workload.parallel_samples} sequences per "
                                f"request is not supported with {what}; allowed: 1, or {instead}")


def _check_token_budget(scenario: Scenario, state: RequestState, q: int | None) -> None:
    """The schedulers that hold decoding requests to the token budget (vllm_v1: simulator.core.sched.vllm_v1;
    trtllm, whose micro-batch walk stops at the first request that does not fit `max_num_tokens`:
    simulator.core.sched.trtllm) never schedule a decoding request whose step (`q` query tokens: the token and
    its draft tokens or tree nodes; None: no decoding pool here) exceeds scheduler.max_batched_tokens: the
    run never ended step by step, and bulk mode decoded steps larger than the budget (a vllm_v1 tree of 31
    nodes under a budget of 8 ran, exit 0). trtllm also never schedules anything with a budget below one KV
    block when contexts are chunked (chunks are whole blocks), or below a whole prompt when they are not
    (TensorRT-LLM refuses max_num_tokens below max_input_len without chunked context at engine build)."""
    cfg = scenario.scheduler
    if cfg.kind not in ("vllm_v1", "trtllm"):
        return
    budget, where = cfg.max_batched_tokens, "scheduler.max_batched_tokens"
    if q is not None and budget < q:
        raise ScenarioError(where, f"{budget} is below one speculative step of a request ({q} tokens: the token and "
                                   f"its draft tokens); scheduler {cfg.kind} would never schedule it: raise it")
    if cfg.kind != "trtllm":
        return
    if scenario.cluster.engine.chunked_prefill is True:
        if budget < cfg.block_size:
            raise ScenarioError(where, f"{budget} is below one KV block (scheduler.block_size {cfg.block_size}): "
                                       "TensorRT-LLM chunks contexts in whole blocks, so no chunk would fit; raise it")
        return
    prompts = np.where(state.dropped, 0, state.prefill_target)
    if len(prompts) and prompts.max() > budget:
        r = int(np.argmax(prompts))
        raise ScenarioError(where, f"{budget} is below request {r}'s prompt of {int(prompts[r])} tokens; without "
                                   "context chunking TensorRT-LLM schedules whole prompts, so it would never run: "
                                   "raise it or set cluster.engine.chunked_prefill: true")
    if scenario.cluster.engine.capacity_scheduler_policy == "max_utilization":
        # A paused request comes back as one context of its prompt and the tokens it generated (at most output − 1),
        # which TensorRT-LLM caps at max_input_len (LlmRequest::pause; max_input_len <= max_num_tokens without
        # chunking). draftsim does not model that cap, so such a context must fit the budget whole.
        longest = np.where(state.dropped, 0, state.prompt + state.output - 1)
        if longest.max() > budget:
            r = int(np.argmax(longest))
            raise ScenarioError("cluster.engine.capacity_scheduler_policy",
                                f"max_utilization pauses requests, and a paused request computes its prompt and "
                                f"generated tokens again as one context: request {r}'s can reach {int(longest[r])} "
                                f"tokens, above scheduler.max_batched_tokens {budget}, which without context chunking "
                                "it could not run in (TensorRT-LLM caps it at max_input_len; not modelled); allowed: "
                                "cluster.engine.chunked_prefill: true, or a budget of at least the longest prompt + "
                                "output - 1")


def _check_router(scenario: Scenario) -> None:
    from simulator.core.routers import reads_prefix_cache
    if scenario.cluster.disaggregation is not None:
        decode = scenario.cluster.disaggregation.decode.router
        if reads_prefix_cache(decode):
            raise ScenarioError(f"{DISAGG}.decode.router", f"{decode!r} needs a prefix cache, which only the prefill "
                                                           "pool keeps; allowed here: round_robin, least_outstanding, "
                                                           "join_shortest_queue")
    if engine_cache_pending(scenario.cluster):   # (checked once the named engine's default is in: _engine_cache)
        return
    _check_prefix_routers(scenario)


def _check_prefix_routers(scenario: Scenario) -> None:
    """A router that routes by cached prefixes needs a prefix cache (the prefill pool's where disaggregated)."""
    from simulator.core.routers import reads_prefix_cache
    where, name = scenario.cluster.entry_router()
    if reads_prefix_cache(name) and not scenario.cluster.kv_cache.prefix_caching:
        raise ScenarioError(where, f"{name!r} routes by cached prefixes; it needs cluster.kv_cache.prefix_caching: true")


def kv_manager(scenario: Scenario, kind: ReplicaKind, blocks: int, state: RequestState, table: RequestTable,
               tiers: bool = True):
    """One replica's KV manager (simulator.core.kv) for `cluster.kv_cache`: its layout's pool, a prefix cache
    and host memory when asked for (`tiers` False: the layout's pool only, as in a decode pool)."""
    from simulator.core.kv import KV_LAYOUTS
    cfg, block = scenario.cluster.kv_cache, scenario.scheduler.block_size
    if kind.hybrid_layout is not None:   # attention KV and recurrent state in one pool (simulator.core.kv.hybrid_state)
        from simulator.core.kv.hybrid_state import HybridStatePool
        refused = [(f, on) for f, on in (("cluster.kv_cache.prefix_caching", cfg.prefix_caching),
                                         ("cluster.kv_cache.host_memory_gib", cfg.host_memory_gib > 0),
                                         ("workload.parallel_samples", scenario.workload.parallel_samples > 1)) if on]
        if refused:
            raise ScenarioError(refused[0][0], f"{kind.target.name} keeps recurrent state (linear attention / Mamba): "
                                "prefix caching, host memory and parallel sampling are not modelled for it")
        return HybridStatePool(state, kind.hybrid_layout)
    if kind.window_layout is not None and tiers and cfg.host_memory_gib <= 0 \
            and scenario.workload.parallel_samples == 1:
        # (else every layer at the full context: models.spec). With prefix caching where requests share nothing
        # the cache serves a preempted request its own blocks: modelled by reserving prompts (SlidingWindowPool);
        # where they share prefixes, the window groups' hits as vLLM's hybrid coordinator finds them
        # (simulator.core.kv.window_prefix_cache), where its units are KV blocks (window_cache_modelled)
        # A scheduler that grows a prompt's blocks per chunk (vLLM V1) takes the window prefix cache where nothing is
        # shared too: a request's own units, cached as allocated, are what it hits again after a preemption
        from simulator.core.kv.sliding_window import SlidingWindowPool
        from simulator.core.sched import SCHEDULERS
        per_chunk = getattr(SCHEDULERS[(kind.scheduler or scenario.scheduler).kind], "allocates_per_chunk", False)
        if not cfg.prefix_caching or (nothing_shared(scenario) and not (per_chunk and window_cache_modelled(scenario))):
            return SlidingWindowPool(state, kind.window_layout, reserve_prompts=cfg.prefix_caching)
        if window_cache_modelled(scenario):
            from simulator.core.kv.window_prefix_cache import WindowPrefixCache, WindowPrefixCachePool
            drop = block if kind.batch_rules.drop_hit_block else 0   # (vLLM V1 with an EAGLE-style drafter)
            lay = kind.window_layout
            prefixes = table.prefixes if table is not None else None
            return WindowPrefixCachePool(state, lay, WindowPrefixCache(lay.total_blocks, block, block, prefixes,
                                                                       drop_tokens=drop, layout=lay))
    if not tiers or (not cfg.prefix_caching and cfg.host_memory_gib <= 0):
        return KV_LAYOUTS[cfg.layout.kind].pool(state, blocks, block, cfg.layout)
    from simulator.core.kv.block_pool import BlockPool
    from simulator.core.kv.host_tier import HostMemory, HostTier
    from simulator.core.kv.prefix_cache import PrefixCache, PrefixCachePool
    unit = table.prefixes.unit_tokens if table.prefixes is not None else block
    if unit % block:
        raise ScenarioError("scheduler.block_size", f"{block} must divide the trace's {unit}-token prefix blocks "
                                                    "(workload.arrival.hash_block_tokens)")
    per_token = kind.target.kv_bytes_per_token_per_gpu(kind.parallelism, kind.kv_dtype)
    if kind.drafter is not None:
        per_token += kind.drafter.kv_bytes_per_token_per_gpu
    host = HostMemory(int(cfg.host_memory_gib * 2**30 / per_token), unit) if cfg.host_memory_gib > 0 else None
    if cfg.prefix_caching:
        drop = block if kind.batch_rules.drop_hit_block else 0   # (vLLM V1 with an EAGLE-style drafter)
        deferred = kind.batch_rules.insert_after_forward   # (SGLang; with its overlap loop where the engine-time
        overlapped = deferred and kind.engine is not None and kind.engine.overlap   # model overlaps: prefix_cache)
        pool = PrefixCachePool(state, blocks, block, PrefixCache(blocks, block, unit, table.prefixes, host, drop,
                                                                 deferred), cfg.shared_prefix_attention, overlapped)
    else:
        pool = BlockPool(state, blocks, block)
    if host is None:
        return pool
    hw = kind.hardware
    return HostTier(pool, host, cfg.preemption == "swap", per_token / hw.host_link_bandwidth_bytes_per_s,
                    hw.host_link_latency_s)


def batch_scheduler(scenario: Scenario, kind: ReplicaKind):
    """The batching scheduler class of `scheduler.kind` and the limits it plans within (simulator.core.sched),
    with the running-request limit of `kind` (scheduler.max_batch_size, else its engine's default:
    ReplicaKind.max_batch_size) and its engine's batch rules (ReplicaKind.batch_rules: vLLM V1's KV lookahead,
    SGLang's chunked prompts and one request per prefill with EAGLE); ScenarioError where parallel samples exceed
    it."""
    from simulator.core.sched import SCHEDULERS, BatchLimits, MultiStep
    from simulator.core.sched.queue_order import CACHE_AWARE
    cfg = kind.scheduler if kind.scheduler is not None else scenario.scheduler   # (the engine's defaults filled in)
    seqs = kind.max_batch_size
    n = scenario.workload.parallel_samples
    if n > seqs:
        raise ScenarioError("workload.parallel_samples", f"{n} sequences per request exceed the running-request limit "
                                                         f"{seqs} (scheduler.max_batch_size or the engine's default), "
                                                         "which counts sequences")
    # vLLM V1 schedules a decoding request's tokens up to max_model_len − 1 (sched.vllm_v1's docstring)
    cap = kind.context_len - 1 if getattr(SCHEDULERS[cfg.kind], "caps_decode_kv", False) else None
    rules = kind.batch_rules
    budget = cfg.max_batched_tokens - rules.budget_slots_per_seq * seqs   # (vLLM 0.17 - 0.27 with a draft model)
    q = kind.cost.q if kind.acceptance is not None else 1
    if (rules.budget_slots_per_seq or rules.draft_slots) and budget < q + rules.draft_slots:
        kept = (f"max_num_seqs ({seqs}) tokens of it a step" if rules.budget_slots_per_seq else
                f"{rules.draft_slots} token of it per scheduled request")
        raise ScenarioError("scheduler.max_batched_tokens", f"{cfg.max_batched_tokens}: vLLM with a draft model keeps "
                            f"{kept} for its proposer's rows (profiles/engine_time/batch_defaults.py "
                            f"vllm_drafting_slots), leaving no room for one speculative step of a request ({q} tokens); "
                            f"allowed: at least {q + rules.draft_slots + rules.budget_slots_per_seq * seqs}")
    order = rules.queue_order
    if order is not None and (order.name in CACHE_AWARE and not scenario.cluster.kv_cache.prefix_caching
                              or order.name == "fcfs"):
        order = None   # (SGLang: a cache-aware policy without the radix cache is fcfs; sched.queue_order)
    limits = BatchLimits(seqs, budget, cfg.chunk_tokens, cap, rules.kv_lookahead, rules.admit_lookahead,
                         rules.prefill_requests, rules.prefill_input_tokens, rules.draft_slots, rules.output_reserve,
                         order, rules.admit_whole_prompt, rules.whole_prompt_window_cap)
    steps = scenario.cluster.engine.num_scheduler_steps
    if cfg.kind == "trtllm":   # TensorRT-LLM's context chunking and capacity policy are the engine's settings
        engine = scenario.cluster.engine
        chunking = engine.chunked_prefill is True
        max_utilization = engine.capacity_scheduler_policy == "max_utilization"
        return (lambda lim: SCHEDULERS["trtllm"](lim, chunking, max_utilization)), limits
    if steps > 1:   # vLLM V0 multi-step scheduling around the batching scheduler (its version is checked
        return (lambda lim: MultiStep(SCHEDULERS[cfg.kind](lim), steps)), limits  # by profiles.engine_time.support)
    return SCHEDULERS[cfg.kind], limits


def _step_log(scenario: Scenario, table: RequestTable, kinds: list[tuple[ReplicaKind, int]]) -> StepLog:
    """The run's step log; `kinds`: (replica kind, replicas) of its pools in replica order (their power models
    count the steps' energy, simulator.results.energy)."""
    from simulator.results.energy import run_power
    out = scenario.outputs
    return StepLog(out.steps, num_replicas=sum(n for _, n in kinds), sample_every=out.step_sample_every,
                   interval_s=out.step_interval_s,
                   window_start_s=float(table.arrival_s.min()) if len(table) else 0.0,
                   extra=("kv_io_s",) if scenario.cluster.kv_cache.host_memory_gib > 0 else (),
                   power=run_power(kinds, scenario.energy))


def _alltoall_pricer(pools: list[Pool]):
    """The all-to-all seconds of steps (replica ids, tokens) of expert-parallel pools (0 elsewhere), for
    the step log; None when no pool is expert-parallel."""
    if not any(pool.kind.parallelism.ep > 1 for pool in pools):
        return None
    target = [pool.kind.cost.target if pool.kind.parallelism.ep > 1 else None for pool in pools for _ in pool.replicas]

    def seconds(replicas: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        return np.array([target[r].alltoall_seconds(t) if target[r] is not None else 0.0
                         for r, t in zip(replicas.tolist(), tokens.tolist())], dtype=float)
    return seconds


def alltoall_pricer_for(kind: ReplicaKind, num_replicas: int):
    """`_alltoall_pricer` of a colocated pool of `num_replicas` replicas of `kind` (a Dask worker's step log,
    simulator.distributed.group)."""
    return _alltoall_pricer([Pool("colocated", kind, [None] * num_replicas, None)])


def _checkpoint_dtype(scenario: Scenario, base_dir: Path) -> Scenario:
    """The scenario with `cluster.dtype` the format of a quantized checkpoint's config.json where it leaves the
    dtype out; ScenarioError (cluster.dtype) where it gives another (models.quant_config.served_dtype)."""
    from models.quant_config import QuantConfigError, served_dtype
    from simulator.cluster.factory import resolve_model
    cl = scenario.cluster
    target = resolve_model(cl.model, base_dir)
    try:
        dtype = served_dtype(cl.dtype if "dtype" in cl.model_fields_set else None, target)
    except QuantConfigError as exc:
        raise ScenarioError("cluster.dtype", str(exc)) from None
    if dtype == cl.dtype:
        return scenario
    return scenario.model_copy(update={"cluster": cl.model_copy(update={"dtype": dtype})})


def build(scenario: Scenario, base_dir: Path) -> Cluster:
    """The cluster `scenario` runs; a refusal of the cluster.dtype it leaves out says what implied the dtype
    (simulator.cluster.implied)."""
    given = "dtype" in scenario.cluster.model_fields_set
    scenario = _checkpoint_dtype(scenario, base_dir)
    cl = scenario.cluster
    with naming_implied(lambda: {"cluster.dtype": dtype_note(cl.dtype, resolve_model(cl.model, base_dir))},
                        () if given else ("cluster.dtype",)):
        return _build(scenario, base_dir)


def _build(scenario: Scenario, base_dir: Path) -> Cluster:
    from simulator.results.energy import check_power_known
    cl, dis = scenario.cluster, scenario.cluster.disaggregation
    _check_router(scenario)
    _check_parallel_samples(scenario)
    check_retrieval(scenario)
    streams = Streams.from_seed(scenario.seed)
    block = scenario.scheduler.block_size
    if dis is None:
        kind = pool_kind(scenario, None, "cluster", streams.acceptance_seed, base_dir)
        check_power_known(scenario.energy, kind.hardware, "cluster")
        scenario, filled = _engine_scheduler(scenario, kind)
        scenario, caching = _engine_cache(scenario, kind)
        blocks = kind.blocks(block)
        check_one_request_fits(scenario, kind, "cluster")
        table, state, workload_s = _requests(scenario, streams, base_dir, kind)
        _check_token_budget(scenario, state, kind.cost.q if kind.acceptance is not None else 1)
        log = _step_log(scenario, table, [(kind, cl.replicas)])
        scheduler, limits = batch_scheduler(scenario, kind)
        replicas = [Replica(i, state, scheduler(limits), kv_manager(scenario, kind, blocks, state, table), limits, kind.cost,
                            kind.acceptance, log, kind.policy) for i in range(cl.replicas)]
        pools = [Pool("colocated", kind, replicas, make_router(cl.router, cl.replicas, streams.router))]
        log.alltoall = _alltoall_pricer(pools)
        retrieval = build_retrieval(scenario, state)
        if retrieval is not None:   # requests leave their replica's batch while they retrieve
            for rep in replicas:
                rep.paused = PausedRequests(retrieval, scenario.retrieval.kv_while_paused == "released")
        return Cluster(scenario, table, state, pools, log, workload_s=workload_s, retrieval=retrieval,
                       engine_scheduler=filled, engine_prefix_caching=caching)

    from simulator.cluster.handoff import KVHandOff
    from simulator.cluster.pool_replicas import DecodeReplica, PrefillReplica
    from simulator.core.sched import DecodeOnly
    latencies: dict = {}
    kinds = {name: pool_kind(scenario, getattr(dis, name), f"{DISAGG}.{name}", streams.acceptance_seed, base_dir,
                             latencies) for name in ("prefill", "decode")}
    for name in kinds:
        check_power_known(scenario.energy, kinds[name].hardware, f"{DISAGG}.{name}")
    scenario, filled = _engine_scheduler(scenario, kinds["prefill"])   # (the pool that batches prompts)
    scenario, caching = _engine_cache(scenario, kinds["prefill"])      # (the pool that keeps a prefix cache)
    hw_p, hw_d = kinds["prefill"].hardware, kinds["decode"].hardware
    if hw_p.id == hw_d.id and hw_p != hw_d:   # (the pools' latency models and their link are keyed by the id)
        raise ScenarioError(f"{DISAGG}.decode.hardware.id", f"{hw_d.id!r} names other figures than the prefill "
                            "pool's hardware of that id; give each hardware block its own id")
    if kinds["decode"].target.num_state_layers:
        raise ScenarioError("cluster.disaggregation", f"{kinds['decode'].target.name} keeps recurrent state (linear "
                            "attention / Mamba): handing it off between pools is not modelled; run it colocated")
    blocks = {name: kinds[name].blocks(block, f"{DISAGG}.{name}") for name in kinds}
    for name in kinds:
        check_one_request_fits(scenario, kinds[name], f"{DISAGG}.{name}")
    # a request must fit both pools' context (their releases may derive different ones: the GPUs' measured tables)
    table, state, workload_s = _requests(scenario, streams, base_dir,
                                         min(kinds.values(), key=lambda kind: kind.context_len))
    _check_token_budget(scenario, state, None)   # (the prefill pool only prefills; the decode pool has no budget)
    np_, nd = dis.prefill.replicas, dis.decode.replicas
    kp, kd = kinds["prefill"], kinds["decode"]
    log = _step_log(scenario, table, [(kp, np_), (kd, nd)])
    scheduler, limits = batch_scheduler(scenario, kp)
    # SGLang's reserve for running requests' output (simulator.core.sched.sglang_reserve) is modelled colocated
    # only: a prefill pool's requests leave it after their prompt (not modelled there, named in that docstring)
    limits = replace(limits, output_reserve=None)
    _, decode_limits = batch_scheduler(scenario, kd)
    prefill = [PrefillReplica(i, state, scheduler(limits), kv_manager(scenario, kp, blocks["prefill"], state, table), limits,
                              kp.cost, None, log) for i in range(np_)]
    decode = [DecodeReplica(np_ + i, state, DecodeOnly(), kv_manager(scenario, kd, blocks["decode"], state, table, False),
                            decode_limits, kd.cost, kd.acceptance, log, kd.policy) for i in range(nd)]
    decode_rng = np.random.default_rng(np.random.SeedSequence(scenario.seed).spawn(4)[3])
    pools = [Pool("prefill", kp, prefill, _router(dis.prefill.router, np_, streams.router, f"{DISAGG}.prefill")),
             Pool("decode", kd, decode, _router(dis.decode.router, nd, decode_rng, f"{DISAGG}.decode"))]
    log.alltoall = _alltoall_pricer(pools)
    return Cluster(scenario, table, state, pools, log, KVHandOff.build(pools, dis.kv_transfer, scenario.drafter),
                   workload_s=workload_s, engine_scheduler=filled, engine_prefix_caching=caching)
