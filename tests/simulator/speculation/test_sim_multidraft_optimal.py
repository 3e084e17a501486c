"""The optimal multi-draft verifier as a DES scheme: the simulator's acceptance at the branching position
is the optimum of theory.multidraft_optimal, a real lossless verifier attains it (Monte Carlo of the
optimal coupling), and it bounds every practical scheme in the DES too."""
from __future__ import annotations

import numpy as np
import pytest

import simulator
from sim_helpers import scenario
from simulator.config.scenario import parse_scenario
from simulator.errors import ScenarioError
from simulator.speculation.shapes import pair_distributions
from theory.multidraft import SCHEMES, acceptance
from theory.multidraft_optimal import optimal_acceptance, optimal_coupling, sample_optimal

DRAFT = {"kind": "draft_model", "model": "llama-68m", "gamma": 1}
PAIR = {"kind": "pair", "vocab": 12, "zipf": 1.2, "q_power": 2.5}  # an overconfident drafter: optimum < 1
LONG = {"num_requests": 400, "output_tokens": {"kind": "uniform", "low": 150, "high": 250}}


def _accepted_per_step(result) -> float:
    st = result.steps[result.steps.decode_seqs > 0]
    return float(st.accepted_tokens.sum() / st.decode_seqs.sum())


def _run(scheme: str, n: int = 3, gamma: int = 1):
    return simulator.run(scenario(drafter={**DRAFT, "gamma": gamma}, acceptance=PAIR, workload=LONG,
                                  speculation={"kind": "multidraft", "n": n, "scheme": scheme}))


@pytest.mark.parametrize("scheme,replacement", [("optimal", True), ("optimal_wor", False)])
def test_des_acceptance_is_the_optimum_and_a_real_verifier_attains_it(scheme, replacement):
    """γ = 1: τ ∈ {0, 1}; its mean is the verifier's acceptance. The optimal coupling, run as a sampler
    (lossless: its output law is p), accepts as often as the closed form / LP says."""
    result = _run(scheme)
    p, q = pair_distributions(parse_scenario(scenario(acceptance=PAIR)).acceptance)
    best = optimal_acceptance(p, q, 3, replacement=replacement)
    assert _accepted_per_step(result) == pytest.approx(best, rel=0.015)
    samples = sample_optimal(optimal_coupling(p, q, 3, replacement), 200_000, np.random.default_rng(0))
    assert samples.output_is_draft.mean() == pytest.approx(best, abs=4e-3)
    assert np.abs(np.bincount(samples.output, minlength=len(p)) / 200_000 - p).max() < 4e-3


def test_optimal_bounds_every_practical_scheme_in_the_des():
    optimal = _accepted_per_step(_run("optimal", gamma=3))
    for scheme in SCHEMES:
        if scheme != "rrs_wor":  # without replacement: bounded by optimal_wor (next test)
            assert optimal >= _accepted_per_step(_run(scheme, gamma=3)) - 1e-9, scheme
    assert _accepted_per_step(_run("optimal_wor", gamma=3)) >= _accepted_per_step(_run("rrs_wor", gamma=3)) - 1e-9


def test_deeper_positions_follow_the_chain_formula():
    """E[τ] = a*(n) · (1 + β + … + β^(γ−1)) for n sequences of length γ (one survivor below the branch)."""
    p, q = pair_distributions(parse_scenario(scenario(acceptance=PAIR)).acceptance)
    a, b = optimal_acceptance(p, q, 2), float(np.minimum(p, q).sum())
    assert _accepted_per_step(_run("optimal", n=2, gamma=3)) == pytest.approx(a * (1 + b + b * b), rel=0.02)
    assert a >= acceptance(p, q, 2, "rrs") - 1e-12


def test_optimal_wor_refuses_a_vocabulary_the_lp_cannot_hold():
    big = {"kind": "pair", "vocab": 16}
    with pytest.raises(ScenarioError, match="speculation.scheme"):
        simulator.run(scenario(drafter={**DRAFT, "gamma": 2}, acceptance=big,
                               speculation={"kind": "multidraft", "n": 4, "scheme": "optimal_wor"}))
