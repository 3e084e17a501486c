"""The service-level objectives a run is measured against (simulator.results.metrics reads them), apart
from the metrics so that reading a scenario does not import pandas."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SLO:
    """Service-level objectives per request (None = not constrained) and the target attainment
    (validated by simulator.config.scenario.SLOConfig)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    attainment: float = 0.9
