"""When things happen: the SimPy discrete-event simulator of LLM serving with speculative decoding.

The Python API (what `draftsim` runs; a notebook's entry points):

- `run(scenario, overrides=None) -> Result`: simulate a YAML path, a dict or a `Scenario`; `overrides` are
  `key.path=value` texts (as `draftsim run --set`). `Result.requests` and `.steps` are DataFrames,
  `.summary` a dict (what `draftsim run` writes).
- `prepare(scenario, overrides=None) -> Prepared` then `simulate(prepared) -> Result`: the same in two
  stages (every error on the input is raised by `prepare`).
- `sweep(base, {"drafter.gamma": [1, 2, 4]}, seeds=[0, 1]) -> DataFrame`: one row per grid point and seed
  (parameters, status, summary metrics), run on `draftsim sweep`'s executors.
- `load_scenario(path, overrides)`, `estimate_step(model, hardware, ...)` (`draftsim estimate`).

Importing `simulator` is light: each name loads its module on first use.
"""
from __future__ import annotations

_EXPORTS = {
    "run": "simulator.api", "prepare": "simulator.api", "simulate": "simulator.api", "Result": "simulator.api",
    "Prepared": "simulator.api", "sweep": "simulator.workflows.sweep.main", "Scenario": "simulator.config.scenario",
    "load_scenario": "simulator.config.scenario", "estimate_step": "simulator.workflows.estimate",
    "ScenarioError": "simulator.errors",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'simulator' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
