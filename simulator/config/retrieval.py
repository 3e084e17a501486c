"""Scenario schema of iterative retrieval-augmented serving (`retrieval:`), baseline or RaLMSpec
(simulator.speculation.ralmspec). Pydantic at the YAML boundary only (see simulator.config.scenario).

  retrieval: {mode: baseline | ralmspec, interval_tokens, kb_fixed_s, kb_per_query_s, kb_servers,
              lookup_s, cache_hit_p, stride}

Every `interval_tokens` generated tokens a request needs a document. A knowledge-base query over n
documents takes `kb_fixed_s + kb_per_query_s · n` on one of `kb_servers` servers (FIFO, shared by the
cluster). RaLMSpec answers from a local cache in `lookup_s` (right with probability `cache_hit_p`),
speculates `stride` intervals, then verifies them in one batched query.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RetrievalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["baseline", "ralmspec"]
    interval_tokens: int = Field(ge=1, le=1_000_000)
    kb_fixed_s: float = Field(ge=0.0, allow_inf_nan=False)
    kb_per_query_s: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    kb_servers: int = Field(1, ge=1, le=1_000_000)
    lookup_s: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    cache_hit_p: float = Field(0.0, ge=0.0, le=1.0)
    stride: int = Field(1, ge=1, le=1024)
