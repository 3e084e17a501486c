"""The prefix caching of a deployment that names its engine: the engine's own default where the scenario leaves it out.

A scenario names its engine as for its scheduler (simulator.cluster.engine_scheduler.engine_named). Where it gives
neither `cluster.engine.prefix_caching` nor `cluster.kv_cache.prefix_caching`, `cluster.kv_cache.prefix_caching`
is that engine's default for its release, model and speculation (profiles.engine_time.cache_defaults: vLLM V0 off,
V1 on but for hybrid models; SGLang on but with EAGLE before 0.4.3.post3; TensorRT-LLM 1.x on). A value given always
wins; a scenario that names no engine keeps draftsim's default (off). summary.json's `engine_prefix_caching` says
what ran, the engine's default and the rule.

Approximations, named (where the engine's default is on and draftsim does not model the cache there, the run keeps
it off and the summary's `approximation` says why; a previously valid scenario is never refused for it):
- layout 'shadowkv' (values in host memory; prefix caching is modelled for the paged layout only);
- a hybrid model under an engine that caches it (SGLang, TensorRT-LLM): draftsim keeps no prefix cache for
  recurrent state (simulator.core.kv.hybrid_state);
- a sliding-window model whose replicas free the window's blocks (simulator.core.kv.sliding_window), where requests
  share prefixes in units other than one KV block (a trace's hash blocks larger than scheduler.block_size) or
  with `shared_prefix_attention`: draftsim's prefix cache would hold every layer at the full context (models.spec)
  there; with units of one KV block the window's cache is modelled (simulator.core.kv.window_prefix_cache,
  `window_cache_modelled`);
- workload.parallel_samples > 1, `retrieval:` and a distributed executor, which draftsim models without a
  prefix cache (simulator.cluster.build, simulator.speculation.ralmspec, simulator.distributed);
- a workload in which no two requests share a prefix (no `shared_prefix`, `sessions` or trace hash ids) and no
  prefix-aware router: the engine's cache would serve only a preempted request's own blocks when it is admitted
  again. That is not modelled: the run keeps the cache off, as it would serve nothing else and a run with a prefix
  cache costs about 1.7x the time of one without (its decode steps advance in bulks, simulator.core.bulk_replay;
  measured 2026-11-28 on the quickstart with 10k requests). `cluster.kv_cache.prefix_caching: true` models it.
"""
from __future__ import annotations

FIELD = "prefix_caching"
# Why a run keeps the engine's cache off where requests share nothing (module docstring): summary.json's
# `approximation`, and what a launch script reads to pass the engine's own default instead (`launched`).
NOTHING_SHARED = ("no two requests share a prefix (no workload.shared_prefix, sessions or trace hash ids) and no "
                  "router reads the cache: the engine's cache would serve only a preempted request's own blocks on "
                  "its re-admission, not modelled; off, as that cache would serve nothing else and cost the run "
                  "about 1.7x its time (set cluster.kv_cache.prefix_caching: true to model it)")


def given(cluster) -> bool:
    """The scenario's cluster section sets its prefix caching (`cluster.kv_cache.prefix_caching`, or
    `cluster.engine.prefix_caching`, which sets it: ClusterConfig._engine_fills_its_sections)."""
    return FIELD in cluster.kv_cache.model_fields_set


def pending(cluster) -> bool:
    """The named engine's default decides the cluster's prefix caching (once its pool is built: the model and
    release are known then)."""
    from simulator.cluster.engine_scheduler import engine_named
    return not given(cluster) and engine_named(cluster.latency, cluster.engine)


def _not_modelled(scenario, target, windowed: bool) -> str | None:
    """Why draftsim keeps the cache off where the engine's default is on (module docstring), or None."""
    cl = scenario.cluster
    reasons = [(cl.kv_cache.layout.kind == "shadowkv", "layout 'shadowkv' keeps its values in host memory; prefix "
                "caching is modelled for the paged layout only"),
               (target.num_state_layers > 0, f"{target.name} keeps recurrent state; draftsim keeps no prefix cache "
                "for it (simulator.core.kv.hybrid_state)"),
               # (with host memory a pool keeps no window layout: simulator.cluster.build.kv_manager)
               (windowed and cl.kv_cache.host_memory_gib <= 0 and not window_cache_modelled(scenario),
                f"{target.name}'s sliding-window layers keep only their window's blocks; draftsim's prefix cache "
                "models them where prefixes are shared in units of one KV block (trace hash blocks of "
                "scheduler.block_size tokens) without shared_prefix_attention, and would hold every layer at the "
                "full context (models.spec) here"),
               (scenario.workload.parallel_samples > 1, "draftsim's prefix cache is modelled for one sequence per "
                "request (workload.parallel_samples 1)"),
               (scenario.retrieval is not None, "retrieval runs with plain KV counting (simulator.speculation"
                ".ralmspec)")]
    return next((why for present, why in reasons if present), None)


# Why a distributed run keeps the engine's cache off (simulator.distributed). It is read after NOTHING_SHARED: where
# requests share nothing the run keeps the cache off for that reason in one process too, and its summary (and the
# launch script's prefix caching, `launched`) must not depend on where the replicas ran.
DISTRIBUTED = "a distributed run keeps no prefix cache (simulator.distributed)"


def prefix_unit_tokens(scenario) -> int:
    """Tokens of one prefix unit of the scenario's requests (simulator.core.prefixes): a trace's hash block where
    it reads hash ids, else the KV block (generated sharing)."""
    from simulator.core.traces.formats import FORMATS
    arrival, block = scenario.workload.arrival, scenario.scheduler.block_size
    if arrival.hash_ids_column() is None:
        return block
    return arrival.hash_block_tokens if arrival.hash_block_tokens is not None else FORMATS[arrival.format].hash_block_tokens


def window_cache_modelled(scenario) -> bool:
    """A sliding-window pool's prefix cache is modelled with the window (simulator.core.kv.window_prefix_cache):
    units of one KV block, and no shared-prefix attention (priced from the full-context cache's shared units)."""
    kv = scenario.cluster.kv_cache
    return prefix_unit_tokens(scenario) == scenario.scheduler.block_size and not kv.shared_prefix_attention


def nothing_shared(scenario) -> bool:
    """No two requests can share a prefix and no router reads the cache (module docstring)."""
    from simulator.core.routers import reads_prefix_cache
    w = scenario.workload
    return (w.shared_prefix is None and w.sessions is None and w.arrival.hash_ids_column() is None
            and not reads_prefix_cache(scenario.cluster.entry_router()[1]))


def engine_prefix_caching(scenario, target, release: tuple[str, str | None], windowed: bool) -> dict | None:
    """The prefix caching the named engine runs where `scenario` leaves it out, as summary.json's record:
    {"prefix_caching": what runs, "engine_default": the engine's (None: no rule read), "rule": its source,
    "approximation": why draftsim keeps it off (only where the engine's default is on and draftsim does not model
    the cache there)}; None where the scenario names no engine or gives a value (module docstring).
    `target`: the pool's ModelSpec; `release`: the deployment's (framework, version; None: the newest modelled,
    simulator.cluster.factory.deployment_release); `windowed`: the pool has a window layout for its sliding-window
    layers (ReplicaKind.window_layout)."""
    cl = scenario.cluster
    if not pending(cl):
        return None
    from profiles.engine_time.cache_defaults import engine_prefix_caching as engine_default
    from profiles.engine_time.frameworks import release_or_modelled
    from simulator.cost.drafters import engine_family
    framework, version = release[0], release_or_modelled(*release)
    family = None if scenario.drafter.kind == "none" else engine_family(scenario.drafter)
    on, rule = engine_default(framework, version, family, target.num_state_layers > 0)
    record = {"prefix_caching": bool(on), "engine_default": on, "rule": f"{framework} {version}: {rule}"}
    if on:
        why = _not_modelled(scenario, target, windowed)
        if why is not None:
            record.update(prefix_caching=False, approximation=f"{why}: off")
        elif nothing_shared(scenario):
            record.update(prefix_caching=False, approximation=NOTHING_SHARED)
        elif scenario.simulation.executor != "local":
            record.update(prefix_caching=False, approximation=f"{DISTRIBUTED}: off")
    return record


def launched(record: dict) -> bool:
    """The prefix caching a launch script passes for a candidate whose run kept `record` (engine_prefix_caching):
    what ran, or the engine's own default where the run kept the cache off only because its requests share
    nothing (the engine then serves what the run did, but for preempted requests; module docstring)."""
    return bool(record["engine_default"]) if record.get("approximation") == NOTHING_SHARED else record["prefix_caching"]


def with_engine_prefix_caching(scenario, record: dict | None):
    """`scenario` with `cluster.kv_cache.prefix_caching` set as `record` (engine_prefix_caching) says; the same
    object where there is nothing to set."""
    if record is None or not record["prefix_caching"]:
        return scenario
    cl = scenario.cluster
    kv = cl.kv_cache.model_copy(update={FIELD: True})
    return scenario.model_copy(update={"cluster": cl.model_copy(update={"kv_cache": kv})})
