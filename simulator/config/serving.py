"""The sections that say how one replica serves, whatever else the scenario holds: its parallelism, its MoE
options, where its op latencies come from and its batching scheduler. `draftsim estimate` prices a step
from these alone, so they live apart from the rest of the schema (simulator.config.scenario, which
imports them): reading them does not build the scenario's other ~60 section models.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AliasChoices, ConfigDict, Field, field_validator, model_validator

from profiles.select import SOURCES
from simulator.config.base import PATH_TEXT, Strict, VersionText


class ParallelismConfig(Strict):
    tp: int = Field(1, ge=1, le=64)
    pp: int = Field(1, ge=1, le=64)
    ep: int = Field(1, ge=1, le=1024)


class MoeConfig(Strict):
    """MoE options (expert parallelism, ep > 1): token→expert routing skew and Speculative-MoE
    pre-scheduling. `routing`: uniform | zipf (per-expert popularity ∝ rank^−zipf_exponent) | trace
    (a `.npy` of routed expert ids, one row of top-k per token, relative to the scenario).
    `prescheduling_hit_rate`: fraction of activations the pre-scheduler predicts (0 = off)."""

    routing: Literal["uniform", "zipf", "trace"] = "uniform"
    zipf_exponent: float = Field(1.0, gt=0.0, le=10.0)
    routing_trace: Annotated[str | None, PATH_TEXT] = None
    prescheduling_hit_rate: float = Field(0.0, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _trace_needs_file(self) -> "MoeConfig":
        if (self.routing == "trace") != (self.routing_trace is not None):
            raise ValueError("routing_trace is required exactly when routing is 'trace'")
        return self


class LatencyConfig(Strict):
    """Where op latencies come from (profiles.select) and which serving engine's per-step time is paid.

    `source`: `auto` (default: `measured` when the aiconfigurator-core tables cover the GPU and dtype,
    else `roofline` with a warning), `measured` (real per-kernel GPU measurements of `framework` at
    `version`, default its newest), `profile` (tables measured with `draftsim profile`, `profile_dir`),
    `roofline` (datasheet peaks × efficiencies), `engine_profile` (a real engine's own measured passes and
    per-step host time, `draftsim profile --engine vllm`, in `profile_dir`). `engine_time`: pay the framework's per-step engine time
    (profiles.engine_time); default: on for GPUs, off for the local CPU (its profile measures host work
    per pass instead); off, a release the scenario names is still checked against what it offers and refuses. `engine_version`: the framework version whose engine behaviour is modelled
    (scheduling overlap, CUDA-graph modes), when it differs from the measured tables' version (default:
    the tables' version, or the newest). `nano_batches` k ≥ 2 (NanoFlow): decode-only target passes run as k
    nano-batches whose compute-, memory- and network-bound ops overlap (simulator.cost.nanoflow)."""

    source: Literal[SOURCES] = "auto"   # (profiles.select.LATENCY_SOURCES)
    framework: Literal["vllm", "sglang", "trtllm"] = "vllm"
    version: VersionText = None
    profile_dir: Annotated[str | None, PATH_TEXT] = None
    engine_time: bool | None = None
    engine_version: VersionText = None
    nano_batches: int = Field(1, ge=1, le=64)

    @model_validator(mode="after")
    def _fields_of_the_source(self) -> "LatencyConfig":
        from profiles.select import LATENCY_SOURCES
        source = LATENCY_SOURCES[self.source]
        if self.profile_dir is not None and source.profile_dir is None:
            readers = [name for name, s in LATENCY_SOURCES.items() if s.profile_dir is not None]
            raise ValueError(f"profile_dir is only used with source: {' or '.join(readers)}")
        if source.profile_dir == "required" and self.profile_dir is None:
            raise ValueError(f"source {self.source} needs profile_dir: a folder of `draftsim profile --engine vllm` "
                             "profiles")
        if self.version is not None and not source.versioned:
            versioned = [name for name, s in LATENCY_SOURCES.items() if s.versioned]
            raise ValueError(f"version selects measured tables; it needs source: {' or '.join(reversed(versioned))}")
        return self


# The largest request or token limit of a step an engine takes: TensorRT-LLM keeps max_batch_size and
# max_num_tokens as SizeType32 (int32; cpp/include/tensorrt_llm/executor/executor.h, ExecutorConfig), vLLM
# sizes its persistent per-token buffers by max_num_batched_tokens at start-up (gpu_model_runner.py). The
# narrowest of the engines' limits is applied to all of them (an approximation: the others fail later, for
# memory, at such sizes).
MAX_ENGINE_LIMIT = 2**31 - 1


class SchedulerConfig(Strict):
    """The batching scheduler (continuous batching; not the speculation control policy, `policy:`), one of
    simulator.core.sched.SCHEDULERS: `kind` vllm: prefill-first (a step is either all prefill or all
    decode); sarathi: chunked prefill piggy-backed on decode steps under a per-step token budget
    (`chunk_tokens`); vllm_v1: vLLM V1's own scheduler rule by rule (simulator.core.sched.vllm_v1: one
    `max_batched_tokens` budget, running requests first in admission order, then waiting ones, KV blocks
    allocated per scheduled chunk, LIFO preemption); trtllm: TensorRT-LLM's in-flight batching (simulator.core.sched.
    trtllm: guaranteed-no-evict admission, whole prompts within `max_batched_tokens` = max_num_tokens unless
    cluster.engine.chunked_prefill). `policy` is accepted for `kind` (the key's name before
    the two kinds of policy were told apart)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    kind: str = Field("vllm", validation_alias=AliasChoices("kind", "policy"))
    # None: the engine's own default for its release, hardware and speculation (vLLM --max-num-seqs, SGLang
    # --max-running-requests, TensorRT-LLM max_batch_size; profiles.engine_time.batch_defaults), else 256
    # (simulator.cluster.factory.max_num_seqs)
    max_batch_size: int | None = Field(None, ge=1)
    max_batched_tokens: int = Field(8192, ge=1)
    chunk_tokens: int = Field(512, ge=1)
    block_size: int = Field(16, ge=1, le=1024)

    @field_validator("max_batch_size", "max_batched_tokens", "chunk_tokens")
    @classmethod
    def _an_engine_takes_it(cls, value: int | None) -> int | None:
        """A limit no engine can be given is refused: `draftsim estimate --max-num-batched-tokens 1e30` priced
        its step as under the default, exit 0, and a trtllm run with such a budget ran."""
        if value is not None and value > MAX_ENGINE_LIMIT:
            raise ValueError(f"{value:,} is beyond what an engine takes; allowed: 1 to {MAX_ENGINE_LIMIT:,} (a "
                             "32-bit integer, as TensorRT-LLM keeps it)")
        return value

    @field_validator("kind")
    @classmethod
    def _registered(cls, kind: str) -> str:
        from simulator.core.sched import SCHEDULERS
        if kind not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {kind!r}; allowed: {', '.join(SCHEDULERS)}")
        return kind

    def _value(self, name: str) -> str:
        """The value of field `name` for an error line, saying so where the scenario left it out (draftsim's default:
        "max_batched_tokens (8192) must be >= max_batch_size (9000)" read as if 8192 had been written)."""
        value = getattr(self, name)
        return str(value) if name in self.model_fields_set else f"{value}, not given: draftsim's default"

    @model_validator(mode="after")
    def _chunk_fits_the_budget(self) -> "SchedulerConfig":
        if self.kind == "sarathi" and self.chunk_tokens > self.max_batched_tokens:
            raise ValueError(f"chunk_tokens ({self._value('chunk_tokens')}) must be <= max_batched_tokens "
                             f"({self._value('max_batched_tokens')})")
        if self.kind in ("vllm", "vllm_v1") and self.max_batch_size is not None \
                and self.max_batched_tokens < self.max_batch_size:
            # vLLM refuses it too (vllm/config/scheduler.py, SchedulerConfig._verify_args: "max_num_batched_tokens
            # ... must be greater than or equal to max_num_seqs"): every running sequence needs a token per step
            raise ValueError(f"max_batched_tokens ({self._value('max_batched_tokens')}) must be >= max_batch_size "
                             f"({self.max_batch_size}): each running request needs at least one token of the "
                             "step's budget (vLLM's own rule)")
        return self
