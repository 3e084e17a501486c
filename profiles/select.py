"""Choosing the latency model of a run: `select_latency(hardware, dtype, config)`.

Sources (`LatencySourceConfig.source`):
* `measured`: real per-kernel GPU measurements of a serving framework (`profiles.measured`), roofline for
  the op kinds they lack; needs the `aiconfigurator-core` package (extra `gpu-data`).
* `profile`: tables measured with `draftsim profile` on this kind of device (`profiles.predictor`).
* `engine_profile`: a real serving engine's own measured forward passes and host time per step
  (`draftsim profile --engine vllm`; profiles.engine_time.engine_profile), priced pass by pass.
* `roofline`: datasheet peaks × documented efficiencies (`profiles.roofline`), the fallback.
* `auto` (default): `measured` when the package is installed and has tables for the GPU and dtype,
  else `roofline` with one warning saying why (no warning for devices the package never covers, such
  as the local CPU). A `version` given by name must have been measured: an unknown version is an error
  naming the versions available (issue 14), never the roofline; so is a version on hardware no tables cover
  (user hardware, a GPU never measured).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from models.errors import FieldError
from profiles.hardware import HARDWARE, HardwareSpec, get_hardware
from profiles.latency import LatencyModel

AUTO, MEASURED, PROFILE, ROOFLINE, ENGINE_PROFILE = "auto", "measured", "profile", "roofline", "engine_profile"
SOURCES = (AUTO, MEASURED, PROFILE, ROOFLINE, ENGINE_PROFILE)


@dataclass(frozen=True)
class LatencySourceConfig:
    source: str = AUTO
    framework: str = "vllm"
    version: str | None = None
    profile_dir: Path | None = None
    # the fused-MoE kernel the deployment's engine release runs where it is not the measured tables' own (None:
    # theirs; profiles.engine_time.mxfp4_moe): read by the measured source only
    moe_kernel: str | None = None


def _roofline(hardware: HardwareSpec, dtype: str, config: LatencySourceConfig, kv_dtype: str | None) -> LatencyModel:
    from profiles.roofline import RooflineLatencyModel
    return RooflineLatencyModel(hardware, dtype=dtype)


def _measured(hardware: HardwareSpec, dtype: str, config: LatencySourceConfig, kv_dtype: str | None) -> LatencyModel:
    from profiles.measured import load_measured
    return load_measured(hardware.id, dtype, config.framework, config.version, kv_dtype, config.moe_kernel)


def _profile(hardware: HardwareSpec, dtype: str, config: LatencySourceConfig, kv_dtype: str | None) -> LatencyModel:
    from profiles.predictor import load_latency_model
    try:
        return load_latency_model(hardware.id, config.profile_dir)
    except ValueError as exc:   # a profile that cannot be read (it named no field: 'profile table ... lacks columns')
        raise FieldError("cluster.latency.profile_dir", str(exc).splitlines()[0]) from None


def _engine_profile(hardware: HardwareSpec, dtype: str, config: LatencySourceConfig,
                    kv_dtype: str | None) -> LatencyModel:
    from profiles.engine_time.engine_profile import EngineProfileLatency, load_engine_profile
    try:
        profile = load_engine_profile(str(config.profile_dir))
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise FieldError("cluster.latency.profile_dir", str(exc)) from None
    return EngineProfileLatency(profile, _roofline(hardware, dtype, config, kv_dtype), hardware.id)


def _auto(hardware: HardwareSpec, dtype: str, config: LatencySourceConfig, kv_dtype: str | None) -> LatencyModel:
    from profiles.measured import SYSTEMS, MeasuredDataError
    if hardware.id not in SYSTEMS or hardware is not HARDWARE.get(hardware.id):
        if config.version is not None:   # (a version of tables that cannot exist was dropped without a word)
            have = ", ".join(sorted(h for h in SYSTEMS if h in HARDWARE))
            raise FieldError("cluster.latency.version", f"{config.version!r} selects measured kernel tables, but "
                             f"{hardware.id} has none (measured hardware: {have}); leave version out to price "
                             f"{hardware.id} on the roofline")
        return _roofline(hardware, dtype, config, kv_dtype)  # user hardware, or a GPU never measured: silent
    try:
        return _measured(hardware, dtype, config, kv_dtype)
    except MeasuredDataError as exc:
        if config.version is not None:   # a version asked for by name is not replaced by the roofline
            raise
        warnings.warn(f"GPU kernels priced by the roofline, not measurements: {exc}", RuntimeWarning, stacklevel=3)
        return _roofline(hardware, dtype, config, kv_dtype)


@dataclass(frozen=True)
class LatencySource:
    """A latency source: its builder and what else it reads or is. `profile_dir`: reads a folder of
    profiles (`required` or `optional`; None: no folder); `versioned`: picks a version of measured tables
    (`cluster.latency.version`); `whole_passes`: prices a real engine's whole measured passes, not op by op
    (what those cannot be combined with: simulator.cluster.target_costs); `engine_time`: carries the engine's
    own measured per-step host time (used on every device, the local CPU included)."""

    build: Callable[[HardwareSpec, str, LatencySourceConfig, str | None], LatencyModel]
    profile_dir: str | None = None
    versioned: bool = False
    whole_passes: bool = False
    engine_time: bool = False


LATENCY_SOURCES: dict[str, LatencySource] = {
    AUTO: LatencySource(_auto, versioned=True),
    MEASURED: LatencySource(_measured, versioned=True),
    PROFILE: LatencySource(_profile, profile_dir="optional"),
    ROOFLINE: LatencySource(_roofline),
    ENGINE_PROFILE: LatencySource(_engine_profile, profile_dir="required", whole_passes=True, engine_time=True),
}


def select_latency(hardware: str | HardwareSpec, dtype: str, config: LatencySourceConfig | None = None,
                   kv_dtype: str | None = None) -> LatencyModel:
    """The latency model for `config` on `hardware` (a catalog id or a HardwareSpec, e.g. user-defined);
    MeasuredDataError / ValueError naming the field when impossible. `kv_dtype`: the KV cache's dtype,
    which selects the measured attention tables (default: the model's 16-bit dtype, models.spec.kv_cache_dtype)."""
    config = config or LatencySourceConfig()
    source = LATENCY_SOURCES.get(config.source)
    if source is None:
        raise FieldError("cluster.latency.source", f"{config.source!r} is unknown; allowed: {', '.join(SOURCES)}")
    spec = hardware if isinstance(hardware, HardwareSpec) else get_hardware(hardware)
    return source.build(spec, dtype, config, kv_dtype)


def describe_latency(model: LatencyModel) -> dict:
    """`latency_source` of a run's summary: which source priced which op kinds (each model's `describe`)."""
    return model.describe()
