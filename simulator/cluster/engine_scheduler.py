"""The batching scheduler of a deployment that names its engine: the engine's own where the scenario leaves it out.

A scenario names its engine with `cluster.engine.framework` or `cluster.engine.version` (or the older spelling
`cluster.latency.engine_version`). Its `scheduler.kind`, when not given, is the one that engine runs by
default at that release, and its `scheduler.max_batched_tokens`, when not given, that engine's step token
budget (profiles.engine_time.batch_defaults.engine_batching: vLLM V0 prefill-first with max(max_model_len, 2048)
tokens; vLLM V1 its own scheduler with 8192 tokens on the GPUs that get its large defaults, else 2048; SGLang
prefill batches apart from decodes, at most its chunked_prefill_size by GPU memory and release (its
max_prefill_tokens where its EAGLE block turns chunking off, 0.4.1.post4 - 0.4.3.post2);
TensorRT-LLM in-flight batching with max_num_tokens 8192). A scenario that names no engine keeps draftsim's
defaults (`vllm`, 8192 tokens): a generic continuous-batching server, as before.

A `scheduler.kind` given that is not the engine's own (e.g. `vllm` prefill-first under a vLLM V1 release)
keeps draftsim's 8192-token default: the engine's budget belongs to the engine's scheduler.

Approximations, named:
- vLLM's budget is its API server's (`vllm serve`, UsageContext.OPENAI_API_SERVER), the serving entrypoint;
  an offline batch run through the LLM class gets 16384 / 8192 tokens: set scheduler.max_batched_tokens.
- A disaggregated deployment takes the defaults of its prefill pool's hardware and release (the pool that
  batches prompts; the decode pool only decodes).
"""
from __future__ import annotations

from simulator.errors import ScenarioError

FILLED = ("kind", "max_batched_tokens")   # the scheduler fields an engine sets where the scenario leaves them out
ENTRYPOINT = "api_server"                 # vLLM's (module docstring)


def engine_named(latency_cfg, engine_cfg) -> bool:
    """The scenario names its serving engine (module docstring)."""
    return (engine_cfg is not None and (engine_cfg.framework is not None or engine_cfg.version is not None)) \
        or getattr(latency_cfg, "engine_version", None) is not None


def with_engine_defaults(scheduler, latency_cfg, engine_cfg, release: tuple[str, str | None], hw,
                         max_model_len: int, family: str | None = None):
    """`scheduler` (a SchedulerConfig) with the fields of FILLED it leaves out set to the named engine's own
    (module docstring); `release`: the deployment's (framework, version; None: the newest modelled); `family`: the
    drafter's engine family (None: no speculation; SGLang's budget depends on it). The same object where nothing
    is filled. ScenarioError naming the field where the result is refused."""
    if scheduler is None or not engine_named(latency_cfg, engine_cfg):
        return scheduler
    missing = [name for name in FILLED if name not in scheduler.model_fields_set]
    if not missing:
        return scheduler
    from profiles.engine_time.batch_defaults import engine_batching
    from profiles.engine_time.frameworks import release_or_modelled
    from simulator.cluster.vllm_memory import device_total_bytes
    from simulator.config.serving import SchedulerConfig
    from simulator.config.validation import validate_config
    framework, version = release[0], release_or_modelled(*release)
    kind, tokens = engine_batching(framework, version, hw, device_total_bytes(hw), ENTRYPOINT, max_model_len, family)
    fill = {}
    if "kind" in missing:
        fill["kind"] = kind
    if "max_batched_tokens" in missing and fill.get("kind", scheduler.kind) == kind:
        fill["max_batched_tokens"] = tokens
    if not fill:
        return scheduler
    given = scheduler.model_dump(include=scheduler.model_fields_set)
    try:
        return validate_config(SchedulerConfig, {**given, **fill}, "scheduler")
    except ScenarioError as exc:   # (a max_batch_size given above the engine's budget: vLLM refuses it too)
        raise ScenarioError("scheduler.max_batched_tokens",
                            f"{framework} {version}'s default {', '.join(f'{k} {v}' for k, v in fill.items())} on "
                            f"{hw.id}: {exc.message}; set scheduler.max_batched_tokens") from None
