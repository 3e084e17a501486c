"""Per-step engine time of serving frameworks (`model.EngineTime`), its constants per framework and
version (`frameworks.engine_time_for`, data in profiles/data/engine_time/), and the measurement of
vLLM's engine CPU work on its CPU backend (`measure_vllm`, run offline in its own virtualenv)."""
from __future__ import annotations


def engine_time_for(framework: str, version: str | None = None):
    from profiles.engine_time.frameworks import engine_time_for as _for
    return _for(framework, version)
