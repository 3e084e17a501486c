"""`cluster.engine`: the serving engine of the deployment — which framework and version, and the flags
that change how its steps run. The core receives it as `profiles.engine_time.frameworks.EngineSettings`;
which flags a framework version has and which combinations it refuses are checked in
`profiles.engine_time.support` (one-line errors naming the field, the engine and its version).

```yaml
cluster:
  engine:
    framework: vllm            # vllm | sglang | trtllm (default: cluster.latency.framework, else vllm)
    version: "0.11.0"          # the release to model (default: the measured tables' version, else the newest)
    cuda_graphs: full          # full | piecewise | none (vLLM --enforce-eager / SGLang --disable-cuda-graph:
                               #   none); default: the version's
    capture_sizes: [1, 2, 4, 8]  # captured batch sizes (vLLM: tokens; SGLang, TensorRT-LLM: requests)
    graph_padding: true        # pad a batch up to the next captured size (TensorRT-LLM enable_padding)
    async_scheduling: true     # prepare step i+1 while step i runs (vLLM --async-scheduling, SGLang's
                               #   overlap scheduler / spec v2, TensorRT-LLM's overlap scheduler)
    num_scheduler_steps: 1     # vLLM V0 multi-step scheduling (--num-scheduler-steps)
    chunked_prefill: null      # the engine's chunked prefill (must agree with the scheduler block)
    capacity_scheduler_policy: null  # TensorRT-LLM's capacity scheduler: guaranteed_no_evict (its default) |
                               #   max_utilization (scheduler_config.capacity_scheduler_policy; scheduler.kind trtllm)
    prefix_caching: null       # the engine's prefix caching (sets cluster.kv_cache.prefix_caching)
    schedule_policy: null      # SGLang's --schedule-policy: fcfs | lpm | lof (the others are refused); default:
                               #   the release's (lpm to 0.4.3.post2, fcfs from 0.4.3.post3:
                               #   profiles/engine_time/queue_defaults.py)
    allow_long_context: false  # a max_model_len above the context the release derives, served with the engine's
                               #   warning: VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (vLLM >= 0.5.4),
                               #   SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1, TLLM_ALLOW_LONG_MAX_MODEL_LEN=1
                               #   (profiles/engine_time/context_length.py)
    host_cpu: h100-server      # a host of profiles/data/engine_time/hosts.yaml, or its calibration_us
```
"""
from __future__ import annotations

from typing import Literal, Union

from pydantic import Field, field_validator

from simulator.config.base import Strict, VersionText


CALIBRATION_US = (100.0, 1e6)   # the bounds of cluster.engine.host_cpu's calibration_us (profiles/data/engine_time/hosts.yaml)


class EngineConfig(Strict):
    framework: Literal["vllm", "sglang", "trtllm"] | None = None
    version: VersionText = None
    cuda_graphs: Literal["full", "piecewise", "none"] | None = None
    capture_sizes: list[int] | None = Field(None, min_length=1, max_length=4096)
    graph_padding: bool | None = None
    async_scheduling: bool | None = None
    num_scheduler_steps: int = Field(1, ge=1, le=64)
    chunked_prefill: bool | None = None
    capacity_scheduler_policy: Literal["guaranteed_no_evict", "max_utilization"] | None = None
    prefix_caching: bool | None = None
    schedule_policy: Literal["lpm", "random", "fcfs", "dfs-weight", "lof", "priority", "routing-key", "hrrn",
                             "shortest-prefill-first"] | None = None   # (every SGLang release's choices, 0.4.0-0.5.23)
    allow_long_context: bool | None = None
    host_cpu: Union[str, float, None] = None

    @field_validator("capture_sizes")
    @classmethod
    def _sizes(cls, value):
        if value is not None and any(s < 1 or s > 65536 for s in value):
            raise ValueError("capture sizes must be integers in 1..65536")
        return value

    @field_validator("host_cpu", mode="before")
    @classmethod
    def _host(cls, value):
        if isinstance(value, dict):
            keys = set(value)
            if keys != {"calibration_us"}:
                raise ValueError("a host is a catalog id or {calibration_us: N} (µs of the calibration workload, "
                                 "profiles/engine_time/measure_launch.py --host-only)")
            value = value["calibration_us"]
            if not isinstance(value, (int, float)):   # (a text was looked up as a host's name)
                raise ValueError(f"calibration_us: {value!r} is not allowed; expected a number of µs")
        if isinstance(value, bool):
            raise ValueError("a host is a catalog id or {calibration_us: N}")
        if isinstance(value, (int, float)) and not CALIBRATION_US[0] <= value <= CALIBRATION_US[1]:
            # (.inf hung the run; 1e300 priced steps of 1e293 s)
            raise ValueError(f"calibration_us: {value} is not allowed; expected a number of µs in "
                             f"{CALIBRATION_US[0]:g}..{CALIBRATION_US[1]:,.0f} (the catalog's hosts take 8,730 and "
                             "10,164: a host 100 times faster or slower)")
        return value


def engine_settings(engine: EngineConfig, latency):
    """The core's EngineSettings of `cluster.engine`, filling the framework and version from
    `cluster.latency` where the engine block leaves them out (`cluster.latency.engine_version` is the older
    spelling of `cluster.engine.version`)."""
    from profiles.engine_time.frameworks import EngineSettings
    framework = engine.framework or latency.framework or "vllm"
    version = engine.version if engine.version is not None else latency.engine_version
    return EngineSettings(framework, version, engine.cuda_graphs,
                          tuple(sorted(set(engine.capture_sizes))) if engine.capture_sizes else None,
                          engine.graph_padding, engine.async_scheduling, engine.host_cpu)
