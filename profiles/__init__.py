"""How long it takes: hardware catalog, latency-model interface and the roofline model.

Kept light on purpose (no torch, no numpy at import): `profiles.gemm_seconds` is used by checks and the
simulator's cold start.
"""
from __future__ import annotations

from profiles.hardware import HardwareSpec, get_hardware, list_hardware
from profiles.latency import LatencyModel, ops_seconds
from profiles.roofline import RooflineEfficiency, RooflineLatencyModel, default_efficiency, gemm_seconds

__all__ = ["HardwareSpec", "LatencyModel", "RooflineEfficiency", "RooflineLatencyModel", "default_efficiency",
           "gemm_seconds", "get_hardware", "list_hardware", "ops_seconds"]
