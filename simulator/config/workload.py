"""The `workload:` section: arrival process, request lengths, shared prefixes and sessions, context overflow
and parallel sampling. Validated here; simulator.core.workload draws (or replays) the requests from the
frozen specs these sections build (`spec()`), whose docstrings say what each field means."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from simulator.config.base import FROM_YAML, Strict, VersionText, field_error
from simulator.config.serving import MAX_ENGINE_LIMIT
from simulator.core.bench_clients import BenchDataset
from simulator.core.csv_columns import MAX_TOKENS
from simulator.core.lengths import (MAX_LENGTH_TOKENS, MIN_TRUNCATED_MASS, EmpiricalLength, FixedLength, LognormalLength, UniformLength,
                                    normal_mass, standard_bounds)
from simulator.core.prefixes import Sessions, SharedPrefix
from simulator.core.workload import MAX_NUM_REQUESTS, Arrival, TraceColumns, Workload


class FixedLengthConfig(Strict):
    SPEC = FixedLength
    kind: Literal["fixed"]
    value: int = Field(ge=1, le=MAX_LENGTH_TOKENS)


class UniformLengthConfig(Strict):
    SPEC = UniformLength
    kind: Literal["uniform"]
    low: int = Field(ge=1, le=MAX_LENGTH_TOKENS)
    high: int = Field(ge=1, le=MAX_LENGTH_TOKENS)

    @field_validator("high")
    @classmethod
    def _high_not_below_low(cls, high: int, info: ValidationInfo) -> int:
        low = info.data.get("low")
        if low is not None and high < low:
            raise PydanticCustomError("range", "must be >= low ({low}); got {high}", {"low": low, "high": high})
        return high


class LognormalLengthConfig(Strict):
    SPEC = LognormalLength
    kind: Literal["lognormal"]
    median: float = Field(gt=0, le=MAX_LENGTH_TOKENS, allow_inf_nan=False)
    sigma: float = Field(gt=0, allow_inf_nan=False)
    min: int = Field(default=1, ge=1, le=MAX_LENGTH_TOKENS)
    max: int | None = Field(default=None, ge=1, le=MAX_LENGTH_TOKENS, validate_default=True)

    @field_validator("max")
    @classmethod
    def _range_is_sensible(cls, high: int | None, info: ValidationInfo) -> int | None:
        data = info.data
        if not {"median", "sigma", "min"} <= data.keys():
            return high  # an earlier field already failed; pydantic reports that one
        low = data["min"]
        if high is not None and high < low:
            raise PydanticCustomError("range", "must be >= min ({low}); got {high}", {"low": low, "high": high})
        if high is not None and data["median"] > high:   # a mistyped bound or median (a min above the median
            # samples an upper tail on purpose and is allowed)
            raise PydanticCustomError("range", "{high} is below the median ({median}): the truncation would keep "
                                      "only the lower tail; raise max or lower the median",
                                      {"median": data["median"], "high": high})
        z_low, z_high = standard_bounds(data["median"], data["sigma"], low, high)
        if normal_mass(z_low, z_high) < MIN_TRUNCATED_MASS:
            raise PydanticCustomError(
                "range",
                "[min, max] = [{low}, {high}] has probability < 1e-9 under lognormal(median={median}, "
                "sigma={sigma}); move the median inside the range or widen it",
                {"low": low, "high": high, "median": data["median"], "sigma": data["sigma"]},
            )
        return high


class EmpiricalLengthConfig(Strict):
    SPEC = EmpiricalLength
    kind: Literal["empirical"]
    csv: Annotated[Path, FROM_YAML]
    column: str = Field(min_length=1)


LengthDist = Annotated[
    Union[FixedLengthConfig, UniformLengthConfig, LognormalLengthConfig, EmpiricalLengthConfig], Field(discriminator="kind")
]


class BenchDatasetConfig(Strict):
    """Lengths drawn as a benchmark client draws them (simulator.core.bench_clients: the rules per client and
    release, with their sources)."""

    SPEC = BenchDataset
    client: Literal["vllm", "sglang"]
    name: Literal["sharegpt", "random"]
    release: VersionText = None
    seed: int | None = Field(default=None, ge=0, lt=2**32)
    input_len: int | None = Field(default=None, ge=1, le=MAX_LENGTH_TOKENS)
    output_len: int | None = Field(default=None, ge=1, le=MAX_LENGTH_TOKENS)
    range_ratio: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    special_tokens: int = Field(default=0, ge=0, le=16)
    context_len: int | None = Field(default=None, ge=1, le=MAX_LENGTH_TOKENS)

    @model_validator(mode="after")
    def _fields_of_the_dataset(self) -> "BenchDatasetConfig":
        if self.release is not None:
            self._known_release()
        if self.name == "random":
            self._random_lengths()
        else:
            self._sharegpt_lengths()
        return self

    def _known_release(self) -> None:
        """A client release newer than the newest known here (vllm 99.0) was drawn by the newest rules, as if its
        client were known; cluster.engine.version refuses such a release alike (its rules are unknown, and it may
        not exist). One older than the client's dataset (vllm 0.0.1, sglang 0.1.21) was drawn by the oldest
        rules, though no such client existed (simulator.core.bench_clients FIRST_RELEASES)."""
        from packaging.version import Version
        from profiles.engine_time.frameworks import newest_release
        from simulator.core.bench_clients import CLIENTS
        newest = newest_release(self.client)
        first = CLIENTS[self.client].FIRST_RELEASES[self.name]
        if Version(self.release) < first:
            raise field_error("release", f"{self.client} {self.release} predates its benchmark client's "
                                         f"'{self.name}' dataset (first in {first}): allowed from {first}"
                                         f"{f' up to {newest}' if newest else ''}, or leave release out for the "
                                         "newest")
        if newest is not None and Version(self.release) > Version(newest):
            raise field_error("release", f"{self.client} {self.release} is newer than the newest release known here "
                                         f"({newest}); its benchmark client's rules are unknown: allowed up to {newest}, "
                                         "or leave release out for the newest")
        from profiles.engine_time.releases import not_a_release
        problem = not_a_release(self.client, self.release)   # (vllm 0.7.9, inside the known range)
        if problem is not None:
            raise field_error("release", problem)

    def _random_lengths(self) -> None:
        from simulator.core.bench_clients import vllm
        for name in ("input_len", "output_len"):
            if getattr(self, name) is None:
                raise field_error(name, f"required for dataset 'random': the client's --random-"
                                        f"{name.replace('_', '-')} (>= 1)")
        if self.context_len is not None:
            raise field_error("context_len", "only for dataset 'sharegpt' of client 'sglang' (--sharegpt-context-len)")
        r = self.range_ratio
        if self.client == "vllm" and vllm.symmetric_range(self.release):
            if r is not None and r >= 1:
                raise field_error("range_ratio", f"must be in [0, 1) for vLLM >= {vllm.SYMMETRIC_RANGE_FROM} "
                                                 f"(lengths are drawn from L(1 - r)..L(1 + r)); got {r}")
            (low, _), _ = vllm.random_bounds(self)
            if low < 1:
                raise field_error("input_len", f"{self.input_len} is too small: with special_tokens "
                                               f"{self.special_tokens} and range_ratio {r or 0.0} vLLM's client "
                                               "could draw an empty prompt (it refuses); raise input_len")
        elif r is not None and r > 1:
            who = "SGLang" if self.client == "sglang" else f"vLLM < {vllm.SYMMETRIC_RANGE_FROM}"
            raise field_error("range_ratio", f"must be in [0, 1] for {who} (lengths are drawn from L*r..L); "
                                             f"got {r}")

    def _sharegpt_lengths(self) -> None:
        from simulator.core.bench_clients import sglang, vllm
        for name in ("input_len", "range_ratio"):
            if getattr(self, name) is not None:
                raise field_error(name, "only for dataset 'random' (ShareGPT prompts are the conversations' own)")
        if self.context_len is not None and (self.client != "sglang" or sglang.legacy_filter(self.release)):
            raise field_error("context_len", f"only for client 'sglang' from {sglang.CONTEXT_LEN_FROM} "
                                             f"(--sharegpt-context-len); vLLM and older SGLang prune prompts over "
                                             f"{vllm.MAX_PROMPT_LEN} and prompt + output over {vllm.MAX_TOTAL_LEN} "
                                             "tokens themselves")
        out = self.output_len
        if out is None:
            return
        if self.client == "sglang" and not sglang.legacy_filter(self.release) \
                and out < sglang.MIN_FIXED_OUTPUT_LEN:
            raise field_error("output_len", f"must be >= {sglang.MIN_FIXED_OUTPUT_LEN} for SGLang's ShareGPT "
                                            f"sampler (it refuses shorter); got {out}")
        if self.client == "vllm" and out > vllm.MAX_TOTAL_LEN - vllm.MIN_LEN:
            raise field_error("output_len", f"{out} leaves no ShareGPT request that vLLM's filter keeps (prompt "
                                            f">= {vllm.MIN_LEN}, prompt + output <= {vllm.MAX_TOTAL_LEN}); at most "
                                            f"{vllm.MAX_TOTAL_LEN - vllm.MIN_LEN}")


class SharedPrefixConfig(Strict):
    """System prompts shared by the requests (simulator.core.prefixes)."""

    SPEC = SharedPrefix
    prompts: int = Field(ge=1, le=10**6)
    tokens: int = Field(ge=1, le=10**7)
    popularity: Literal["uniform", "zipf"] = "uniform"
    zipf_exponent: float = Field(1.0, gt=0.0, le=10.0)



class SessionsConfig(Strict):
    """Multi-turn conversations (simulator.core.prefixes)."""

    SPEC = Sessions
    turns: LengthDist
    think_time_s: float = Field(gt=0.0, allow_inf_nan=False)


def _process(info: ValidationInfo) -> str | None:
    return info.data.get("process")


class TraceColumnsConfig(Strict):
    """Column (CSV) or key (JSONL) names of a trace layout other than the format's (simulator.core.traces)."""

    SPEC = TraceColumns
    arrival: str | None = None
    prompt_tokens: str | None = None
    output_tokens: str | None = None
    hash_ids: str | None = None


class ArrivalConfig(Strict):
    SPEC = Arrival
    process: Literal["poisson", "gamma", "trace", "closed_loop"]
    qps: float | None = Field(default=None, gt=0, allow_inf_nan=False, validate_default=True)
    # (at most MAX_NUM_REQUESTS clients, the most requests a run holds: 400 digits of clients ran, exit 0)
    concurrency: int | None = Field(default=None, ge=1, le=MAX_NUM_REQUESTS, validate_default=True)
    # (gamma gaps have shape 1/cv²: a cv of 1e-300 or 1e300 divided by zero)
    cv: float | None = Field(default=None, ge=1e-3, le=1e3, allow_inf_nan=False, validate_default=True)
    trace_csv: Annotated[Path, FROM_YAML] | None = Field(default=None, validate_default=True)
    # trace replay options (simulator.core.traces): format, layout, clock, window and rate scaling
    format: Literal["draftsim", "azure", "burstgpt", "mooncake"] = "draftsim"
    columns: TraceColumnsConfig | None = None
    time_unit: Literal["s", "ms", "us", "datetime"] | None = None
    start_s: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    end_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    speedup: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    # (no longer than the longest prompt a trace holds: 2^63 overflowed the int64 block counts)
    hash_block_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)

    @model_validator(mode="after")
    def _trace_options_only_for_traces(self) -> "ArrivalConfig":
        from simulator.core.traces import TRACE_OPTIONS
        if self.process != "trace":
            for name in ("format", *TRACE_OPTIONS):
                default = "draftsim" if name == "format" else TRACE_OPTIONS[name]
                if getattr(self, name) != default:
                    raise ValueError(f"{name} is only allowed for process 'trace'")
        if self.end_s is not None and self.end_s <= self.start_s:
            raise ValueError(f"end_s ({self.end_s}) must be > start_s ({self.start_s})")
        if self.process == "trace":
            self._hash_ids_and_their_block()
            self._one_column_per_role()
        return self

    def _one_column_per_role(self) -> None:
        """columns: {arrival: prompt_tokens} read the prompt lengths as arrival times, silently."""
        from simulator.core.traces.formats import FORMATS
        roles = FORMATS[self.format].columns()
        if self.columns is not None:
            roles.update({k: v for k, v in vars(self.columns).items() if v is not None})
        seen: dict[str, str] = {}
        for role, column in roles.items():
            if column is not None and column in seen:
                raise ValueError(f"columns: {seen[column]} and {role} both read column {column!r} (format "
                                 f"'{self.format}' and columns); give each its own column")
            seen.setdefault(column, role)

    def hash_ids_column(self) -> str | None:
        """The trace column (CSV) or key (JSONL) of its prompts' prefix hash ids, None when it reads none."""
        from simulator.core.traces.formats import FORMATS
        return (self.columns.hash_ids if self.columns is not None else None) or FORMATS[self.format].hash_ids

    def _hash_ids_and_their_block(self) -> None:
        """Prefix hash ids need their block size and a block size needs hash ids: a mapped hash_ids column of
        a format without one divided by zero (a traceback), a hash_block_tokens without ids was ignored."""
        from simulator.core.traces.formats import FORMATS
        fmt = FORMATS[self.format]
        column = self.hash_ids_column()
        if column is None and self.hash_block_tokens is not None:
            raise ValueError(f"hash_block_tokens is the prompt tokens each prefix hash id covers, but format "
                             f"'{self.format}' reads no hash ids; name their column with columns.hash_ids")
        if column is not None and (self.hash_block_tokens or fmt.hash_block_tokens) == 0:
            raise ValueError(f"columns.hash_ids needs hash_block_tokens, the prompt tokens each hash id covers "
                             f"(Mooncake's: 512); format '{self.format}' has no block size")

    @field_validator("qps")
    @classmethod
    def _qps_for_synthetic(cls, qps: float | None, info: ValidationInfo) -> float | None:
        process = _process(info)
        if process in ("poisson", "gamma") and qps is None:
            raise PydanticCustomError("missing", "required for process '{p}': mean arrival rate in "
                                                 "requests/s (> 0)", {"p": process})
        if process == "trace" and qps is not None:
            raise PydanticCustomError("forbidden", "not allowed for process 'trace' (arrival times come "
                                                   "from trace_csv)")
        if process == "closed_loop" and qps is not None:
            raise PydanticCustomError("forbidden", "not allowed for process 'closed_loop' (requests are sent "
                                                   "as earlier ones finish; give concurrency)")
        return qps

    @field_validator("concurrency")
    @classmethod
    def _concurrency_for_closed_loop(cls, concurrency: int | None, info: ValidationInfo) -> int | None:
        return _only_for("closed_loop", concurrency, info, "clients sending one request at a time (>= 1)")

    @field_validator("cv")
    @classmethod
    def _cv_for_gamma(cls, cv: float | None, info: ValidationInfo) -> float | None:
        return _only_for("gamma", cv, info, "coefficient of variation of inter-arrival gaps (> 0; 1 = Poisson, "
                                            "> 1 = bursty)", " (poisson has cv = 1)")

    @field_validator("trace_csv")
    @classmethod
    def _trace_for_trace(cls, trace_csv: Path | None, info: ValidationInfo) -> Path | None:
        return _only_for("trace", trace_csv, info, "CSV with columns arrival_s, prompt_tokens, output_tokens")


def _only_for(owner: str, value, info: ValidationInfo, what: str, note: str = ""):
    """An arrival field that process `owner` requires and every other process forbids."""
    process = _process(info)
    if process == owner and value is None:
        raise PydanticCustomError("missing", f"required for process '{owner}': {what}")
    if process is not None and process != owner and value is not None:
        raise PydanticCustomError("forbidden", f"only allowed for process '{owner}'{note}")
    return value


class WorkloadConfig(Strict):
    SPEC = Workload
    arrival: ArrivalConfig
    # lengths as a benchmark client draws them (simulator.core.bench_clients); replaces prompt/output_tokens
    dataset: BenchDatasetConfig | None = None
    prompt_tokens: LengthDist | None = Field(default=None, validate_default=True)
    output_tokens: LengthDist | None = Field(default=None, validate_default=True)
    num_requests: int | None = Field(default=None, ge=1, le=MAX_NUM_REQUESTS)
    duration_s: float | None = Field(default=None, gt=0, allow_inf_nan=False, validate_default=True)
    # shared prompt prefixes and multi-turn sessions (simulator.core.prefixes)
    shared_prefix: SharedPrefixConfig | None = None
    sessions: SessionsConfig | None = None
    # a request longer than the model's context (cluster.max_model_len): error (default), drop (rejected
    # as a serving engine rejects it) or truncate (the prompt is cut; simulator.core.context)
    context_overflow: Literal["error", "drop", "truncate"] = "error"
    # sequences generated per request from one prompt (parallel sampling `n`, beam width): the prompt is
    # prefilled once and its KV shared; each sequence decodes output_tokens tokens (simulator.core.replica)
    parallel_samples: int = Field(default=1, ge=1)

    @field_validator("parallel_samples")
    @classmethod
    def _samples_an_engine_runs(cls, samples: int) -> int:
        """Each sequence counts against the running-request limit (scheduler.max_batch_size, at most
        MAX_ENGINE_LIMIT), checked against the scheduler when the cluster is built; bounded here first, so
        that 2^63 is refused before it reaches an int64 column (OverflowError)."""
        if samples > MAX_ENGINE_LIMIT:
            raise ValueError(f"more sequences per request than an engine runs at once; allowed: 1 to "
                             f"{MAX_ENGINE_LIMIT:,} (each counts against scheduler.max_batch_size)")
        return samples

    @model_validator(mode="after")
    def _span_is_plausible(self) -> "WorkloadConfig":
        """Expected arrivals within MAX_SIM_SPAN_S of simulated time (synthetic processes)."""
        from simulator.core.workload import MAX_SIM_SPAN_S
        qps = self.arrival.qps
        if self.duration_s is not None and self.duration_s > MAX_SIM_SPAN_S:
            raise ValueError(f"duration_s = {self.duration_s:g} s is beyond the {MAX_SIM_SPAN_S:g} s (3.2 years) a "
                             "run may simulate")
        if qps is not None and self.num_requests is not None and self.num_requests / qps > MAX_SIM_SPAN_S:
            raise ValueError(f"arrival.qps = {qps:g} req/s spreads {self.num_requests} requests over about "
                             f"{self.num_requests / qps:.3g} s of simulated time; at most {MAX_SIM_SPAN_S:g} s "
                             "(3.2 years) are simulated: raise arrival.qps")
        return self

    @model_validator(mode="after")
    def _sharing_needs_synthetic(self) -> "WorkloadConfig":
        if self.arrival.process in ("trace", "closed_loop") and (self.shared_prefix or self.sessions):
            raise ValueError(f"shared_prefix and sessions generate requests; not allowed for process "
                             f"'{self.arrival.process}'")
        if self.dataset is not None and self.arrival.process == "trace":
            raise field_error("dataset", "not allowed with a trace: token counts come from the trace file")
        if self.dataset is not None and (self.shared_prefix or self.sessions):
            raise field_error("dataset", "a benchmark client's requests are single prompts; not allowed with "
                                         "shared_prefix or sessions (give prompt_tokens/output_tokens there)")
        return self

    @field_validator("prompt_tokens", "output_tokens")
    @classmethod
    def _lengths_unless_trace(cls, dist, info: ValidationInfo):
        arrival = info.data.get("arrival")
        if arrival is None or "dataset" not in info.data:
            return dist
        dataset = info.data["dataset"]
        if dataset is not None:
            if dist is not None:
                raise PydanticCustomError("forbidden", "not allowed with workload.dataset (the client {c} draws "
                                                       "both lengths); give one or the other",
                                          {"c": dataset.client})
            return dist
        if arrival.process == "trace" and dist is not None:
            raise PydanticCustomError("forbidden", "not allowed with a trace: token counts come from the "
                                                   "trace file")
        if arrival.process != "trace" and dist is None:
            raise PydanticCustomError("missing", "required for process '{p}': a length distribution "
                                                 "(kind: fixed | uniform | lognormal | empirical), or give "
                                                 "workload.dataset",
                                      {"p": arrival.process})
        return dist

    @field_validator("duration_s")
    @classmethod
    def _one_stopping_rule(cls, duration_s: float | None, info: ValidationInfo) -> float | None:
        arrival = info.data.get("arrival")
        if arrival is None or "num_requests" not in info.data:
            return duration_s
        num_requests = info.data["num_requests"]
        if num_requests is not None and duration_s is not None:
            raise PydanticCustomError("conflict", "give either num_requests or duration_s, not both")
        if arrival.process == "closed_loop" and duration_s is not None:
            raise PydanticCustomError("forbidden", "not allowed for process 'closed_loop'; give num_requests")
        if arrival.process == "closed_loop" and num_requests is None:
            raise PydanticCustomError("missing", "required for process 'closed_loop': give num_requests (>= 1)")
        if arrival.process != "trace" and num_requests is None and duration_s is None:
            raise PydanticCustomError("missing", "give exactly one of num_requests (>= 1) or duration_s "
                                                 "(> 0) for process '{p}'", {"p": arrival.process})
        return duration_s
