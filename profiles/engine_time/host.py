"""The host CPU of a deployment: its single-thread speed, and the factor by which the engine's host time
(scheduling, input preparation, eager kernel launches) scales from the host it was measured on.

The scale is the time of one fixed pure-Python workload (`calibration_us`, profiles/engine_time/
measure_vllm.py; the catalog and its sources are profiles/data/engine_time/hosts.yaml). Host time is taken
as linear in it: seconds on host B = seconds measured on host A × calibration_us(B) / calibration_us(A).
Approximation (named): one number stands for single-thread speed; where the engine's host work is numpy or
torch dispatch rather than pure Python the ratio between two hosts can differ (measured: 1.52–1.85 for
the same pair of hosts where the pure-Python ratio was 1.55).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from models.errors import FieldError
from models.files import load_shipped_yaml

HOSTS_FILE = Path(__file__).resolve().parent.parent / "data" / "engine_time" / "hosts.yaml"


@dataclass(frozen=True)
class HostCpu:
    id: str
    calibration_us: float
    description: str = ""

    def __post_init__(self) -> None:
        if not self.calibration_us > 0.0:
            raise ValueError(f"host {self.id!r}: calibration_us must be > 0, got {self.calibration_us!r}")

    def scale_from(self, measured_on: "HostCpu") -> float:
        """Factor from seconds measured on `measured_on` to seconds on this host."""
        return self.calibration_us / measured_on.calibration_us


@lru_cache(maxsize=1)
def _catalog() -> tuple[str, dict[str, HostCpu]]:
    raw = load_shipped_yaml(HOSTS_FILE)
    hosts = {h["id"]: HostCpu(h["id"], float(h["calibration_us"]), str(h.get("description", "")))
             for h in raw["hosts"]}
    return raw["default"], hosts


CALIBRATION_FORM = "{calibration_us: N}"   # how a scenario gives a host by its calibration time (a flag words it its way)


def host_ids() -> list[str]:
    return sorted(_catalog()[1])


def default_host() -> HostCpu:
    name, hosts = _catalog()
    return hosts[name]


def get_host(name: str) -> HostCpu:
    """A catalog host; FieldError naming the field and the catalog otherwise."""
    hosts = _catalog()[1]
    if name not in hosts:
        raise FieldError("cluster.engine.host_cpu", f"unknown host {name!r}; catalog: {', '.join(host_ids())} "
                         f"(or give {CALIBRATION_FORM} measured with profiles/engine_time/measure_launch.py --host-only)")
    return hosts[name]


def resolve_host(spec) -> HostCpu:
    """`cluster.engine.host_cpu`: None (the default host), a catalog id, or a calibration time in µs."""
    if spec is None:
        return default_host()
    if isinstance(spec, str):
        return get_host(spec)
    return HostCpu("custom", float(spec))
