"""Cascade Speculative Drafting: theory.cascade against runs of the algorithm, and the DES's cascade
drafter against the theory and against direct pricing of its stage passes."""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

import simulator
from sim_helpers import replica_kind, scenario
from simulator.errors import ScenarioError
from theory.cascade import best_horizontal_split, cascade_step, expected_passes, simulate_passes
from theory.chain import expected_tokens_positional

ALPHAS = [0.7, 0.7, 0.3, 0.3, 0.3]
CASCADE = {"kind": "cascade", "stages": [{"model": "llama-68m", "tokens": 2, "inner_gamma": 2, "inner_alpha": 0.35},
                                         {"tokens": 3}]}
BASE = dict(drafter=CASCADE, acceptance={"kind": "positional", "alphas": ALPHAS},
            cluster={"hardware": "a100-80gb", "model": "llama-2-7b", "engine": {"version": "0.15.0"}})


@pytest.mark.parametrize("tokens,alpha,gamma", [(1, 0.5, 3), (4, 0.6, 3), (6, 0.8, 2), (7, 0.3, 5), (5, 0.0, 3),
                                                (5, 1.0, 2)])
def test_expected_passes_equal_a_run_of_the_inner_loop(tokens, alpha, gamma):
    runs = simulate_passes(tokens, alpha, gamma, 20_000, np.random.default_rng(tokens))
    want = expected_passes(tokens, alpha, gamma)
    assert runs.mean() == pytest.approx(want, abs=max(4 * runs.std() / np.sqrt(len(runs)), 1e-12))
    assert expected_passes(tokens, alpha, 0) == tokens           # no inner drafter: autoregressive
    assert expected_passes(tokens, 1.0, gamma) == pytest.approx(np.ceil(tokens / (gamma + 1)))


def test_horizontal_cascade_gives_early_positions_to_the_better_drafter():
    """CS Drafting's allocation argument: among all splits, the best puts the accurate, costly drafter
    first; the reversed order never beats it."""
    split, rate = best_horizontal_split(6, [0.8, 0.4], [0.08, 0.0])
    reversed_split, reversed_rate = best_horizontal_split(6, [0.4, 0.8], [0.0, 0.08])
    assert split[0] >= 1 and rate >= reversed_rate
    step = cascade_step(split, [0.8, 0.4], [0.08, 0.0])
    assert rate == pytest.approx(step.expected_tokens / (1.0 + step.draft_cost))


def test_des_tokens_per_step_are_the_positional_chains():
    result = simulator.run(scenario(**BASE, workload={"num_requests": 300,
                                                      "output_tokens": {"kind": "uniform", "low": 200, "high": 400}}))
    st = result.steps[result.steps.decode_seqs > 0]
    assert st.accepted_tokens.sum() / st.decode_seqs.sum() + 1 == pytest.approx(
        expected_tokens_positional(ALPHAS), rel=0.01)


def test_draft_time_is_the_stage_passes_priced_directly():
    """A decode step's draft seconds = E[passes] × the 68M model's pass over 3 tokens per request (the
    max-gram stage is free), priced op by op with the same latency model."""
    from simulator.cost.step_cost import ForwardCost
    from models import get_model
    from models.step import Parallelism
    kind = replica_kind(scenario(**BASE))
    step = kind.cost.exact_decode_step(8, 8 * 512)
    small = ForwardCost(get_model("llama-68m"), Parallelism(1, 1), kind.latency, "bf16")
    passes = expected_passes(2, 0.35, 2)
    assert step[0] == pytest.approx(passes * small.exact_decode(8, 3, 8 * 512)[0], rel=1e-12)
    assert kind.cost.pass_layout.gpu_passes == 1 + int(np.ceil(passes))


def test_vertical_cascade_cuts_draft_time_and_keeps_acceptance():
    plain = scenario(**{**BASE, "drafter": {"kind": "cascade", "stages": [{"model": "llama-68m", "tokens": 2},
                                                                          {"tokens": 3}]}})
    a, b = simulator.run(scenario(**BASE)), simulator.run(plain)
    pd.testing.assert_series_equal(a.requests.accepted_tokens, b.requests.accepted_tokens)
    assert a.steps.draft_s.sum() < b.steps.draft_s.sum()


def test_cascade_refuses_control_policies_and_bad_stages():
    with pytest.raises(ScenarioError, match="policy.kind"):
        simulator.run(scenario(**BASE, policy={"kind": "smartspec"}))
    with pytest.raises(ScenarioError, match=r"drafter.stages\[0\].model"):
        simulator.run(scenario(**{**BASE, "drafter": {"kind": "cascade", "stages": [{"model": "nope", "tokens": 2}]}}))


def test_simulated_passes_refuse_a_reuse_rate_or_alpha_outside_0_1():
    """expected_passes validated reuse_rate and reuse_alpha, its Monte Carlo did not (2.0 reused every pass)."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="reuse_rate"):
        simulate_passes(10, 0.5, 3, 5, rng, reuse_rate=2.0, reuse_alpha=0.5)
    with pytest.raises(ValueError, match="reuse_alpha"):
        simulate_passes(10, 0.5, 3, 5, rng, reuse_rate=0.5, reuse_alpha=5.0)


@pytest.mark.parametrize("stages,target_cost,match", [([], 1.0, "at least one stage"), ([0.8], 0.0, "target_cost"),
                                                      ([0.8], -1.0, "target_cost"), ([0.8], float("nan"), "target_cost")])
def test_best_split_refuses_no_stage_and_a_target_pass_of_no_time(stages, target_cost, match):
    """No stage recursed until RecursionError; target_cost 0 with free stages divided by 0; a negative or NaN
    one returned (None, -1.0)."""
    with pytest.raises(ValueError, match=match):
        best_horizontal_split(3, stages, [0.0] * len(stages), target_cost)
