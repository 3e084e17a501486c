"""The registry of published GPU measurements (`points.yaml`): schema, and what draftsim needs to
predict each point (catalog model, hardware, serving framework), or why it cannot.

The points are validation data only: nothing in draftsim is fitted to them (README.md in this folder).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from models.dtypes import KV_DTYPES
from profiles.engine_time.batch_defaults import ENTRYPOINTS
from simulator.config.names import RULE as NAME_RULE, name_problem
from simulator.config.validation import type_message

POINTS_FILE = Path(__file__).resolve().parent / "points.yaml"
# Every points file of the registry: points.yaml and the topic files beside it (points_<topic>.yaml), each
# added by whoever collected its points (README.md in this folder).
POINTS_FILES = tuple(sorted(Path(__file__).resolve().parent.glob("points*.yaml")))

KERNEL_KINDS = ("gemm", "attention")
STEP_KINDS = ("decode_step", "prefill_step")
SERVING_KINDS = ("ttft", "tpot", "itl", "e2e_latency", "output_throughput", "request_throughput")
SPEC_KINDS = ("spec_speedup", "spec_tpot")
KINDS = KERNEL_KINDS + STEP_KINDS + SERVING_KINDS + SPEC_KINDS

# Published model ids -> draftsim catalog entries (same architecture; FP8 checkpoints use dtype fp8).
MODELS = {
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-2-13b-hf": "llama-2-13b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "meta-llama/Meta-Llama-3-8B": "llama-3-8b",
    "meta-llama/Meta-Llama-3-70B-Instruct": "llama-3-70b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "meta-llama/Llama-3.3-70B-Instruct": "llama-3.3-70b",
    "nvidia/Llama-3.3-70B-Instruct-FP8": "llama-3.3-70b",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "turboderp/Qwama-0.5B-Instruct": "qwama-0.5b",
    "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8": "qwen3-30b-a3b",
    "Qwen/Qwen3-8B": "qwen3-8b",
    "Qwen/Qwen3-8B-FP8": "qwen3-8b",        # block-scaled FP8 checkpoint (dtype fp8_block)
    "Qwen/Qwen3-32B-FP8": "qwen3-32b",
    "deepseek-ai/DeepSeek-R1": "deepseek-v3",        # DeepSeek-V3's architecture (R1 is post-trained from V3-Base)
    "nvidia/DeepSeek-R1-FP4": "deepseek-v3",
    "openai/gpt-oss-120b": "gpt-oss-120b",   # MXFP4 experts, the rest bf16 (dtype mxfp4)
    "openai/gpt-oss-20b": "gpt-oss-20b",
}
# Published models draftsim has no catalog entry for: their points are listed, 'not expressible'. A point's
# `model` is one of MODELS or of these; any other id is a malformed point (a typo was 'not expressible', exit 0).
UNMODELLED_MODELS = ("meta-llama/Llama-4-Scout-17B-16E-Instruct",)
# Published engine names -> draftsim serving framework (engine-time model and measured tables).
FRAMEWORKS = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm", "nvidia-nim (trtllm backend)": "trtllm"}
# The kernel libraries a kernel point (KERNEL_KINDS) was timed with: its `engine`, in place of a serving
# engine's (a step point of engine 'vlmm' was priced with the default framework's engine time, exit 0).
KERNEL_LIBRARIES = ("cublas", "deepgemm", "fbgemm-cutlass", "flashattention")
DTYPES = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4",
          "mxfp4": "mxfp4"}


# unknown keys refused, and every value of its field's own type, as a scenario's sections (simulator.config.base.
# Strict): `tp: true` priced a point at tp 1, `tp: 2.0` and `value: "0.0063"` as the numbers
STRICT = ConfigDict(extra="forbid", strict=True)


class Source(BaseModel):
    model_config = STRICT
    title: str
    url: str
    date: str | None = None
    locator: str


class Acceptance(BaseModel):
    model_config = STRICT
    mean_accepted_tokens_per_step: float = Field(gt=1.0, allow_inf_nan=False)
    definition: Literal["incl. bonus token", "excl. bonus"]
    source: str

    @property
    def same_run(self) -> bool:
        return self.source.strip() == "same_run"

    @property
    def tokens_per_step(self) -> float:
        """Tokens emitted per verify step, bonus included."""
        m = self.mean_accepted_tokens_per_step
        return m if self.definition == "incl. bonus token" else m + 1.0


# workload fields that predict.py reads as numbers
NUMERIC_WORKLOAD_FIELDS = ("m", "n", "k", "batch", "seq_len", "context_tokens", "prefill_tokens",
                           "query_tokens_per_seq", "input_tokens", "output_tokens", "num_prompts", "concurrency",
                           "qps", "num_speculative_tokens", "tree_nodes", "eagle_topk", "max_model_len", "max_num_seqs",
                           "num_heads", "num_kv_heads", "head_dim")
# every workload field a point may give: those, how the benchmark ran (texts; an attention kernel's `causal`) and,
# for the record, its sampling `temperature`
WORKLOAD_FIELDS = NUMERIC_WORKLOAD_FIELDS + ("mode", "dataset", "entrypoint", "method", "draft", "phase", "causal",
                                             "temperature")
# of those, the ones that may be 0 (a prefill without cached tokens, a step without prefill, no speculation) and the
# one that need not be a whole number (a request rate); the others count tokens, requests, GEMM dims: whole, >= 1
ZERO_WORKLOAD_FIELDS = ("context_tokens", "prefill_tokens", "num_speculative_tokens")
RATE_WORKLOAD_FIELDS = ("qps",)
# How a vLLM point's engine was started (`workload.entrypoint`, default llm): the offline `LLM` class
# (benchmark_throughput.py, examples/offline_inference) or the OpenAI API server (`vllm serve`, timed with
# benchmark_serving.py / `vllm bench serve`). vLLM V1 gives them different batching defaults
# (profiles.engine_time.batch_defaults.engine_batching).


def _check_count(key: str, value: float) -> None:
    """ValueError unless `value` (a number >= 0) is what workload field `key` can hold: finite; a whole number
    >= 1 for counts (>= 0 for ZERO_WORKLOAD_FIELDS); a rate > 0."""
    if not math.isfinite(value):
        raise ValueError(f"{key}: {value!r} is not a finite number")
    if key in RATE_WORKLOAD_FIELDS:
        if value <= 0:
            raise ValueError(f"{key}: {value!r} is not a number > 0")
        return
    low = 0 if key in ZERO_WORKLOAD_FIELDS else 1
    if value != int(value) or value < low:
        raise ValueError(f"{key}: {value!r} is not a whole number >= {low}")


class Point(BaseModel):
    model_config = STRICT
    id: str
    kind: Literal[KINDS]  # type: ignore[valid-type]
    statistic: Literal["single", "mean", "median", "p90", "p99"]
    value: float = Field(gt=0, allow_inf_nan=False)   # (.inf was priced: published inf, error empty, exit 0)
    unit: Literal["us", "ms", "s", "tokens/s", "req/s", "x"]
    hardware: str
    gpus: int = Field(ge=1)
    engine: str
    engine_version: str | None = None
    framework_version: str | None = None   # engine_version as a release number, where it can be read off
    model: str | None = Field(None, validate_default=True)   # (checked when left out: _known_model)
    dtype: str
    kv_dtype: str | None = None
    tp: int = Field(ge=1)
    pp: int = Field(ge=1)
    workload: dict = Field(default_factory=dict)
    acceptance: Acceptance | None = None
    # the serving engine's flags the publication states (a cluster.engine block: cuda_graphs,
    # async_scheduling, num_scheduler_steps, ...); the point is predicted with them
    engine_flags: dict | None = None
    # The acceptance registry row (profiles/data/acceptance_published) a speculative prediction uses.
    acceptance_entry: str | None = None
    # A second registry row giving the first position's acceptance, decayed geometrically to
    # `acceptance_entry`'s acceptance length (simulator.speculation.published.decayed_alphas).
    acceptance_first_alpha_entry: str | None = None
    source: Source
    notes: str | None = None

    @field_validator("hardware")
    @classmethod
    def _catalog_hardware(cls, hardware: str) -> str:
        """A catalog id: a row of other hardware was listed 'not expressible' (exit 0), a typo as a GPU."""
        from profiles.hardware import HARDWARE
        if hardware not in HARDWARE:
            raise ValueError(f"unknown hardware {hardware!r}; allowed: {', '.join(sorted(HARDWARE))} (draftsim "
                             "catalog hardware)")
        return hardware

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, engine: str, info: ValidationInfo) -> str:
        """A kernel library for a kernel point, a serving engine (FRAMEWORKS) for any other."""
        kind = info.data.get("kind")
        if kind is None:   # (its own error is the one reported)
            return engine
        what, allowed = ("kernel library", KERNEL_LIBRARIES) if kind in KERNEL_KINDS else ("serving engine", FRAMEWORKS)
        if engine not in allowed:
            raise ValueError(f"unknown {what} {engine!r} for a {kind} point; allowed: {', '.join(sorted(allowed))}")
        return engine

    @field_validator("model")
    @classmethod
    def _known_model(cls, model: str | None, info: ValidationInfo) -> str | None:
        """A published id of MODELS or UNMODELLED_MODELS; required but for kernel points (a shape, no model)."""
        kind = info.data.get("kind")
        if model is None:
            if kind is not None and kind not in KERNEL_KINDS:
                raise ValueError(f"a {kind} point needs the published model (a Hugging Face id)")
            return model
        if model not in MODELS and model not in UNMODELLED_MODELS:
            raise ValueError(f"unknown published model {model!r}; allowed: {', '.join(sorted(MODELS))} (catalog "
                             f"models, points.MODELS) or {', '.join(UNMODELLED_MODELS)} (not in the catalog, "
                             "points.UNMODELLED_MODELS)")
        return model

    @field_validator("id")
    @classmethod
    def _id_names_its_run(cls, point_id: str) -> str:
        """The id names the point's row in points.csv and its prediction's scenario (predict.serving_scenario's
        `name`), so it takes a scenario name's rule (simulator.config.names): an empty id, ' s ' or one holding a
        newline was listed as it was (exit 0), a serving point's failed only when predicted (exit 1)."""
        problem = name_problem(point_id)
        if problem is not None:
            raise ValueError(f"{point_id!r} {problem}; an id is {NAME_RULE}")
        return point_id

    @field_validator("dtype")
    @classmethod
    def _modelled_dtype(cls, dtype: str) -> str:
        """One of DTYPES: any other was listed 'not expressible' (exit 0), a typo ('fp7', 'BF16') as an unmodelled
        format."""
        if dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPES)}")
        return dtype

    @field_validator("kv_dtype")
    @classmethod
    def _kv_cache_dtype(cls, kv_dtype: str | None) -> str | None:
        """A KV cache dtype (models.dtypes.KV_DTYPES): any other failed only when the point was predicted (exit 1,
        after every other point)."""
        if kv_dtype is not None and kv_dtype not in KV_DTYPES:
            raise ValueError(f"unknown KV cache dtype {kv_dtype!r}; allowed: {', '.join(KV_DTYPES)}")
        return kv_dtype

    @property
    def seconds_or_value(self) -> float:
        """The value in SI units (seconds for times; tokens/s, req/s, × as they are)."""
        return self.value * {"us": 1e-6, "ms": 1e-3, "s": 1.0}.get(self.unit, 1.0)

    @property
    def publication(self) -> str:
        return self.source.title

    @field_validator("workload")
    @classmethod
    def _workload_values_are_scalars(cls, workload: dict) -> dict:
        """A workload field is a number, a text or null (a list or mapping there is a malformed point)."""
        for key, value in workload.items():
            if isinstance(value, (list, dict)):
                raise ValueError(f"{key}: {value!r} is not a number or a text")
            if key in NUMERIC_WORKLOAD_FIELDS and value is not None and (
                    isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0):
                raise ValueError(f"{key}: {value!r} is not a number >= 0")
            if key in NUMERIC_WORKLOAD_FIELDS and value is not None:   # (a GEMM of m 0 or 64.5 was priced, and
                _check_count(key, value)                               # m .inf failed only after the others ran)
        if workload.get("entrypoint", "llm") not in ENTRYPOINTS:
            raise ValueError(f"entrypoint: {workload['entrypoint']!r} is not one of {', '.join(ENTRYPOINTS)}")
        return workload

    @model_validator(mode="after")
    def _known_section_keys(self) -> "Point":
        """Each key of `workload` and `engine_flags` is one of theirs (`source` and `acceptance` are models that
        refuse others): a misspelt key was read as absent (`workload: {bacth: 64}` was priced at batch 1, exit 0)."""
        from simulator.config.engine import EngineConfig
        for section, allowed in (("workload", WORKLOAD_FIELDS), ("engine_flags", tuple(EngineConfig.model_fields))):
            unknown = next((key for key in getattr(self, section) or {} if key not in allowed), None)
            if unknown is not None:
                raise ValueError(f"{section}.{unknown}: not a field of a point's {section}; allowed: "
                                 f"{', '.join(allowed)}")
        return self

    @model_validator(mode="after")
    def _release_and_flags_the_engine_takes(self) -> "Point":
        """A serving point's `framework_version` is a release of its engine known here
        (profiles.engine_time.frameworks.entry_for) and its `engine_flags` a valid `cluster.engine` block
        (simulator.config.engine.EngineConfig): 'abc', '99.0' or `cuda_graphs: sometimes` failed only when the
        point was predicted (exit 1, after every other point)."""
        fw = FRAMEWORKS.get(self.engine)
        if fw is not None and self.framework_version is not None:
            from packaging.version import InvalidVersion, Version

            from models.errors import FieldError
            from profiles.engine_time.frameworks import entry_for
            try:
                Version(self.framework_version)
                entry_for(fw, self.framework_version)
            except InvalidVersion:
                raise ValueError(f"framework_version: {self.framework_version!r} is not a release number; give one "
                                 "such as \"0.11.0\" or \"1.3.0rc20\"") from None
            except FieldError as exc:
                raise ValueError(f"framework_version: {exc.message}") from None
        if self.engine_flags:
            from simulator.config.engine import EngineConfig
            from simulator.config.validation import validation_error
            try:
                EngineConfig.model_validate(self.engine_flags)
            except ValidationError as err:
                exc = validation_error(err, self.engine_flags, prefix="engine_flags")
                raise ValueError(f"{exc.field}: {exc.message}") from None
        return self

    def w(self, key: str, default=None):
        value = self.workload.get(key)
        return default if value is None else value


def load_points(path: str | Path | None = None) -> list[Point]:
    """All points of `path` (None: every file of the registry, POINTS_FILES); ValueError naming the entry and
    field when one is malformed, or when an id appears twice."""
    if path is None:
        points = [p for f in POINTS_FILES for p in load_points(f)]
        seen: set[str] = set()
        for p in points:
            if p.id in seen:
                raise ValueError(f"point id {p.id!r} appears in two files of the registry")
            seen.add(p.id)
        return points
    from models.files import read_document

    raw = read_document(Path(path), "YAML")   # ValueError naming the file: missing, not text, malformed, ...
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a YAML list of points")
    points, seen = [], set()
    for i, entry in enumerate(raw):
        try:
            point = Point.model_validate(entry)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            ident = entry.get("id") if isinstance(entry, dict) and entry.get("id") not in (None, "") else f"#{i}"
            where = f"{where}: " if where else ""   # (a check of the whole point names its field itself)
            raise ValueError(f"{path}: point {ident}: {where}{type_message(first).removeprefix('Value error, ')}") \
                from None
        for name in ("acceptance_entry", "acceptance_first_alpha_entry"):
            row_id = getattr(point, name)
            if row_id is None:
                continue
            from simulator.speculation.published import RegistryError, find_entry
            try:
                find_entry(row_id)
            except RegistryError:
                raise ValueError(f"{path}: point {point.id}: {name}: no registry row {row_id!r}") from None
        if point.acceptance_first_alpha_entry is not None and point.acceptance_entry is None:
            raise ValueError(f"{path}: point {point.id}: acceptance_first_alpha_entry: needs acceptance_entry "
                             "(the row giving the acceptance length)")
        if point.id in seen:
            raise ValueError(f"{path}: point id {point.id!r} appears twice")
        seen.add(point.id)
        points.append(point)
    return points


def catalog_model(point: Point) -> str | None:
    return MODELS.get(point.model) if point.model else None


def framework(point: Point) -> str | None:
    return FRAMEWORKS.get(point.engine)
