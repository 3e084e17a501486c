"""Choosing the latency model of a run: `select_latency(hardware, dtype, config)`.

Sources (`LatencySourceConfig.source`):
* `measured`: real per-kernel GPU measurements of a serving framework (`profiles.measured`), roofline for
  the op kinds they lack; needs the `aiconfigurator-core` package (extra `gpu-data`).
* `profile`: tables measured with `draftsim profile` on this kind of device (`profiles.predictor`).
* `roofline`: datasheet peaks × documented efficiencies (`profiles.roofline`), the fallback.
* `auto` (default): `measured` when the package is installed and has tables for the GPU and dtype,
  else `roofline` with one warning saying why (no warning for devices the package never covers, such
  as the local CPU).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from profiles.latency import LatencyModel

AUTO, MEASURED, PROFILE, ROOFLINE = "auto", "measured", "profile", "roofline"
SOURCES = (AUTO, MEASURED, PROFILE, ROOFLINE)


@dataclass(frozen=True)
class LatencySourceConfig:
    source: str = AUTO
    framework: str = "vllm"
    version: str | None = None
    profile_dir: Path | None = None


def _roofline(hardware_id: str, dtype: str, config: LatencySourceConfig) -> LatencyModel:
    from profiles.roofline import RooflineLatencyModel
    return RooflineLatencyModel(hardware_id, dtype=dtype)


def _measured(hardware_id: str, dtype: str, config: LatencySourceConfig) -> LatencyModel:
    from profiles.measured import load_measured
    return load_measured(hardware_id, dtype, config.framework, config.version)


def _profile(hardware_id: str, dtype: str, config: LatencySourceConfig) -> LatencyModel:
    from profiles.predictor import load_latency_model
    return load_latency_model(hardware_id, config.profile_dir)


def _auto(hardware_id: str, dtype: str, config: LatencySourceConfig) -> LatencyModel:
    from profiles.measured import SYSTEMS, MeasuredDataError
    if hardware_id not in SYSTEMS:
        return _roofline(hardware_id, dtype, config)
    try:
        return _measured(hardware_id, dtype, config)
    except MeasuredDataError as exc:
        warnings.warn(f"GPU kernels priced by the roofline, not measurements: {exc}", RuntimeWarning, stacklevel=3)
        return _roofline(hardware_id, dtype, config)


BUILDERS: dict[str, Callable[[str, str, LatencySourceConfig], LatencyModel]] = {
    AUTO: _auto, MEASURED: _measured, PROFILE: _profile, ROOFLINE: _roofline,
}


def select_latency(hardware_id: str, dtype: str, config: LatencySourceConfig | None = None) -> LatencyModel:
    """The latency model for `config` (MeasuredDataError / ValueError naming the field when impossible)."""
    config = config or LatencySourceConfig()
    try:
        builder = BUILDERS[config.source]
    except KeyError:
        raise ValueError(f"latency source {config.source!r} is unknown; allowed: {', '.join(SOURCES)}") from None
    return builder(hardware_id, dtype, config)


def describe_latency(model: LatencyModel) -> dict:
    """`latency_source` of a run's summary: which source priced which op kinds (each model's `describe`)."""
    return model.describe()
