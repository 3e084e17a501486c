"""Cascade Speculative Drafting (Chen et al., NeurIPS 2024): vertical and horizontal cascades.

The vertical cascade replaces a drafter's autoregressive generation by speculative decoding against a
cheaper drafter; theory.cascade.expected_passes gives its expected passes, checked against explicit runs of
the inner loop. The horizontal cascade gives later (less often accepted) positions to cheaper drafters;
the brute-force best split over positions is checked to put the accurate drafter first. The DES runs the
shipped scenario (scenarios/speculation/cascade_drafting.yaml: Llama-2-70B TP4 on H100, a Llama-2-7B
drafter with a max-gram inner drafter and a max-gram tail; acceptance assumed) with each cascade on/off.

Checks:
- model vs Monte Carlo: E[passes] at three (tokens, α, γ) points, tolerance 4 standard errors;
- model limits: inner α = 0 ⇒ k passes; α = 1 ⇒ ceil(k / (γ + 1));
- published claim (horizontal cascade, §3.2): the best split gives the first positions to the better
  drafter, and beats the reversed order;
- published claim (abstract: CS Drafting beats the baselines): DES TPOT speedup of both cascades ≥
  horizontal only ≥ plain speculative decoding with the same drafter;
- published value (abstract: "up to 72 % additional speedup over speculative decoding"): our additional
  speedup over plain SD is at most 1.72.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import simulator
from scenarios.papers.registry import Check, Outcome, Reproduction, new_figure

SOURCE = "Chen et al. 2024 (NeurIPS), Cascade Speculative Drafting for Even Faster LLM Inference (arXiv:2312.11462)"
SCENARIO = Path(__file__).resolve().parents[1] / "speculation" / "cascade_drafting.yaml"
MC_POINTS = ((3, 0.5, 3), (6, 0.7, 2), (8, 0.3, 4))
SEED = 31
# variant -> overrides of the shipped scenario (plain SD: the 7B drafter's 3 positions alone)
VARIANTS = {
    "plain SD (7B, γ=3)": ['drafter.stages=[{"model":"llama-2-7b","tokens":3}]', "acceptance.alphas=[0.8,0.8,0.8]"],
    "horizontal cascade": ['drafter.stages=[{"model":"llama-2-7b","tokens":3},{"tokens":2}]'],
    "vertical + horizontal (CS Drafting)": [],
}


def _tpot(overrides: list[str]) -> float:
    result = simulator.run(SCENARIO, overrides + ["outputs.plots=false", "workload.num_requests=120"])
    return float(result.summary["tpot_mean_s"])


def run() -> Outcome:
    from theory.cascade import best_horizontal_split, expected_passes, simulate_passes

    rng = np.random.default_rng(SEED)
    checks = []
    for k, a, g in MC_POINTS:
        runs = simulate_passes(k, a, g, 20_000, rng)
        checks.append(Check(f"E[passes] k={k} α={a} γ={g}: DP vs runs of the inner loop", "model vs Monte Carlo",
                            SOURCE, expected_passes(k, a, g), float(runs.mean()), 4 * float(runs.std()) / np.sqrt(len(runs))))
    checks.append(Check("inner α=0, k=5: passes = k", "model limit", SOURCE, 5.0, expected_passes(5, 0.0, 3), 1e-12))
    checks.append(Check("inner α=1, k=7, γ=2: passes = ceil(k/(γ+1))", "model limit", SOURCE, 3.0,
                        expected_passes(7, 1.0, 2), 1e-12))
    split, rate = best_horizontal_split(6, [0.8, 0.4], [0.1, 0.0])
    _, reversed_rate = best_horizontal_split(6, [0.4, 0.8], [0.0, 0.1])
    checks.append(Check("best split: positions given to the better drafter first", "published claim", SOURCE,
                        1.0, float(split[0]), 0.0, "≥"))
    checks.append(Check("best split's rate minus the reversed order's", "published claim", SOURCE, 0.0,
                        rate - reversed_rate, 1e-12, "≥"))
    rows = []
    no_draft = simulator.run({**_scenario_dict(), "drafter": {"kind": "none"}}, base_dir=SCENARIO.parent)
    plain_tpot = float(no_draft.summary["tpot_mean_s"])
    for name, overrides in VARIANTS.items():
        tpot = _tpot(overrides)
        rows.append({"variant": name, "tpot_ms": 1e3 * tpot, "speedup": plain_tpot / tpot})
    data = pd.DataFrame(rows)
    sd, horizontal, cs = data.speedup.tolist()
    checks.append(Check("DES speedup: CS Drafting − horizontal only", "published claim", SOURCE, 0.0, cs - horizontal, 1e-9, "≥"))
    checks.append(Check("DES speedup: horizontal only − plain SD", "published claim", SOURCE, 0.0, horizontal - sd, 1e-9, "≥"))
    checks.append(Check("DES additional speedup of CS Drafting over plain SD", "published value", SOURCE + ", abstract",
                        1.72, cs / sd, 0.0, "≤"))
    figure, ax = new_figure()
    ax.bar(data.variant, data.speedup, color=["#999", "#69c", "#c63"])
    ax.set(ylabel="TPOT speedup over plain decoding", title="Cascade drafting, Llama-2-70B TP4 (DES)")
    ax.tick_params(axis="x", labelsize=7)
    return Outcome(data, checks, figure, [f"plain decoding TPOT {1e3 * plain_tpot:.2f} ms (120 requests)"])


def _scenario_dict() -> dict:
    from simulator.config.scenario import apply_overrides, read_scenario_dict
    return apply_overrides(read_scenario_dict(SCENARIO), ["outputs.plots=false", "workload.num_requests=120"])


REPRODUCTION = Reproduction(
    name="cascade-drafting", title="Vertical and horizontal drafting cascades (CS Drafting)",
    citation="Chen et al. Cascade Speculative Drafting for Even Faster LLM Inference. NeurIPS 2024 "
             "(arXiv:2312.11462)",
    run=run)
