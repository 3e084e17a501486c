"""When things happen: the SimPy discrete-event simulator of LLM serving with speculative decoding.

`simulator.run(scenario_or_path) -> Result` is the notebook entry point; `draftsim run` the CLI one.
`simulator.estimate_step(model, hardware, ...)` prices one step (`draftsim estimate`).
"""
from __future__ import annotations


def run(*args, **kwargs):
    from simulator.api import run as _run
    return _run(*args, **kwargs)


def estimate_step(*args, **kwargs):
    """One engine step priced as the simulator prices it (simulator.workflows.estimate.estimate_step)."""
    from simulator.workflows.estimate import estimate_step as _estimate
    return _estimate(*args, **kwargs)


def load_scenario(*args, **kwargs):
    from simulator.config.scenario import load_scenario as _load
    return _load(*args, **kwargs)
