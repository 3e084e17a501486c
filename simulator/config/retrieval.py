"""Scenario schema of iterative retrieval-augmented serving (`retrieval:`), baseline or RaLMSpec
(simulator.speculation.ralmspec). Pydantic at the YAML boundary only (see simulator.config.scenario).

  retrieval: {mode: baseline | ralmspec, interval_tokens, kb_fixed_s, kb_per_query_s, kb_servers,
              lookup_s, cache_hit_p, stride, kv_while_paused: resident | released}

Every `interval_tokens` generated tokens a request needs a document. A knowledge-base query over n
documents takes `kb_fixed_s + kb_per_query_s · n` on one of `kb_servers` servers (FIFO, shared by the
cluster). RaLMSpec answers from a local cache in `lookup_s` (right with probability `cache_hit_p`),
speculates `stride` intervals, then verifies them in one batched query. `kv_while_paused`: a request out of
the batch keeps its KV (resident) or frees it and is re-prefilled when it comes back (released;
simulator.core.pauses). The baseline ignores lookup_s, cache_hit_p and stride (one file serves both modes).
Each time lies in 0 to the longest span a run simulates (simulator.core.workload.MAX_SIM_SPAN_S): 1e308 s
ran to NaN percentiles, exit 0.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from simulator.config.base import Strict
from simulator.core.workload import MAX_SIM_SPAN_S


class RetrievalConfig(Strict):
    mode: Literal["baseline", "ralmspec"]
    interval_tokens: int = Field(ge=1, le=1_000_000)
    kb_fixed_s: float = Field(ge=0.0, le=MAX_SIM_SPAN_S, allow_inf_nan=False)
    kb_per_query_s: float = Field(0.0, ge=0.0, le=MAX_SIM_SPAN_S, allow_inf_nan=False)
    kb_servers: int = Field(1, ge=1, le=1_000_000)
    lookup_s: float = Field(0.0, ge=0.0, le=MAX_SIM_SPAN_S, allow_inf_nan=False)
    cache_hit_p: float = Field(0.0, ge=0.0, le=1.0)
    stride: int = Field(1, ge=1, le=1024)
    kv_while_paused: Literal["resident", "released"] = "resident"
