"""The `slo:` section of a scenario (simulator.results.metrics reads it: which requests meet their SLOs).

Kept apart from the metrics so that reading a scenario does not import pandas.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SLO(BaseModel):
    """Service-level objectives per request (unset = not constrained) and the target attainment."""

    model_config = ConfigDict(extra="forbid")
    ttft_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    tpot_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    e2e_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    attainment: float = Field(default=0.9, gt=0, le=1)
