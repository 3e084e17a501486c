"""Measured GPU kernel latencies: real per-kernel measurements from the `aiconfigurator-core` package.

`load_measured(hardware_id, dtype, framework, version)` → `MeasuredLatencyModel`; `available(hardware_id)`
lists the frameworks and versions measured on a GPU. See `source` (where the tables are, versions),
`grid` (interpolation and extrapolation), `attention` (how attention ops map onto the tables) and `model`
(which table prices which op kind).
"""
from __future__ import annotations

from profiles.measured.source import (DISTRIBUTION, FRAMEWORKS, INSTALL_HINT, SYSTEMS, MeasuredDataError,
                                      available, data_root, package_version, resolve)


def load_measured(hardware_id: str, dtype: str = "bf16", framework: str = "vllm", version: str | None = None,
                  kv_dtype: str | None = None, moe_kernel: str | None = None):
    """The measured latency model of `hardware_id` (MeasuredDataError naming the field if impossible); the
    attention tables are those of the KV cache's dtype `kv_dtype` (default: the model's 16-bit dtype, models.spec.kv_cache_dtype);
    `moe_kernel`: the fused-MoE kernel the engine release runs where it is not the tables' own
    (profiles.engine_time.mxfp4_moe; None: theirs)."""
    from profiles.measured.model import MeasuredLatencyModel
    return MeasuredLatencyModel(resolve(hardware_id, framework, version), dtype, kv_dtype=kv_dtype,
                                moe_kernel=moe_kernel)


__all__ = ["DISTRIBUTION", "FRAMEWORKS", "INSTALL_HINT", "SYSTEMS", "MeasuredDataError", "available",
           "data_root", "load_measured", "package_version", "resolve"]
