"""Reasoning-step speculation (SpecReason): the cycle formula of theory.reasoning against explicit cycles,
and the DES's per-request pattern (step acceptance rate, a regeneration of γ − 1 plain steps after each
rejected step) against it."""
from __future__ import annotations

import math

import numpy as np
import pytest

import simulator
from sim_helpers import scenario
from simulator.errors import ScenarioError
from theory.reasoning import simulate_specreason, specreason_rate

GAMMA, ACCEPT = 8, 0.6
DATA = dict(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": GAMMA},
            acceptance={"kind": "step_level", "accept": ACCEPT}, policy={"kind": "specreason"},
            workload={"num_requests": 80, "output_tokens": {"kind": "uniform", "low": 400, "high": 600}})


@pytest.mark.parametrize("a,L", [(0.6, 8), (0.3, 32), (0.9, 16), (0.0, 4), (1.0, 4)])
def test_cycle_formula_equals_explicit_cycles(a, L):
    costs = (0.002, 0.02, 0.015)
    rate = specreason_rate(a, L, *costs)
    tokens, seconds = simulate_specreason(a, L, *costs, 20_000, np.random.default_rng(L))
    assert tokens / 20_000 == pytest.approx(rate.tokens_per_cycle, rel=0.01)
    assert seconds / 20_000 == pytest.approx(rate.seconds_per_cycle, rel=0.01)


@pytest.mark.parametrize("a,L", [(1.0, 4), (0.5, 1)])
def test_a_cycle_of_no_time_is_refused(a, L):
    """Free small and judging passes with nothing regenerated: the rate divided by 0 (ZeroDivisionError)."""
    with pytest.raises(ValueError, match="a cycle takes no time"):
        specreason_rate(a, L, 0.0, 0.0, 0.015)


def test_des_accepts_steps_at_the_rate_and_regenerates_rejected_steps():
    req = simulator.run(scenario(**DATA)).requests
    spec_steps = req.drafted_tokens / GAMMA                  # speculative (judged) steps per request
    accepted_steps = req.accepted_tokens / GAMMA
    assert (req.accepted_tokens % GAMMA == 0).all() and (req.drafted_tokens % GAMMA == 0).all()
    assert accepted_steps.sum() / spec_steps.sum() == pytest.approx(ACCEPT, abs=0.03)
    rejected = spec_steps - accepted_steps
    plain = req.decode_steps - spec_steps
    # every rejection is followed by γ − 1 plain steps, except the last one a request's end cuts short
    assert (plain <= rejected * (GAMMA - 1)).all()
    assert (plain >= (rejected - 1).clip(lower=0) * (GAMMA - 1)).all()
    # tokens: accepted steps emit γ + 1, rejected ones 1 + (γ − 1) regenerated (before the end cap)
    assert (req.output_tokens <= 1 + accepted_steps * (GAMMA + 1) + rejected * GAMMA).all()


def test_specreason_needs_step_level_acceptance():
    with pytest.raises(ScenarioError, match="acceptance.kind"):
        simulator.run(scenario(**{**DATA, "acceptance": {"kind": "constant", "alpha": 0.6}}))


def test_deterministic():
    a, b = simulator.run(scenario(**DATA)), simulator.run(scenario(**DATA))
    assert a.requests.equals(b.requests) and a.steps.equals(b.steps)


@pytest.mark.parametrize("costs, name", [((-1.0, 0.1, 0.2), "small_pass_s"), ((0.1, math.nan, 0.2), "judge_pass_s"),
                                         ((0.1, 0.1, 0.0), "target_pass_s")])
def test_simulate_specreason_names_a_bad_time(costs, name):
    """The Monte Carlo ran with a pass of -1 s (43 tokens in -34.8 s) or NaN s; it now checks what
    specreason_rate checks."""
    with pytest.raises(ValueError, match=name):
        simulate_specreason(0.5, 4, *costs, 10, np.random.default_rng(0))
