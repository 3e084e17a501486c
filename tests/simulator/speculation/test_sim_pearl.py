"""PEARL's pre-verify and post-verify in the DES (`policy: {kind: pearl}`, simulator.speculation.control.pearl)
against theory.policies.pearl's semi-Markov chain: tokens per step and the share of pre-verify steps (a
Monte-Carlo check of the phase transitions, timing-free), and the speedup over one-token target passes
with the DES's own pass prices (the closed form with `verify` = the γ-token pass / the one-token pass)."""
from __future__ import annotations

import numpy as np
import pytest

import simulator
from sim_helpers import assert_bulk_equals_step, merge, replica_kind, scenario
from simulator.errors import ScenarioError
from theory.policies.pearl import pearl, simulate_pearl

ALPHA = 0.8


def _data(gamma: int, output: int = 3000, requests: int = 4) -> dict:
    return scenario(workload={"arrival": {"process": "closed_loop", "concurrency": 1, "qps": None},
                              "prompt_tokens": {"kind": "fixed", "value": 64},
                              "output_tokens": {"kind": "fixed", "value": output}, "num_requests": requests},
                    cluster={"hardware": "h100-sxm", "model": "llama-3-70b", "parallelism": {"tp": 4},
                             "latency": {"source": "roofline", "engine_time": False}},
                    drafter={"kind": "draft_model", "model": "qwama-0.5b", "gamma": gamma, "tp": 1,
                             "placement": "separate"},
                    acceptance={"kind": "constant", "alpha": ALPHA}, policy={"kind": "pearl"})


@pytest.mark.parametrize("alpha,gamma,c,verify", [(0.8, 5, 0.2, 1.3), (0.7, 24, 0.06, 1.03), (0.9, 3, 0.5, 0.8)])
def test_closed_form_with_a_costlier_verify_pass_matches_monte_carlo(alpha, gamma, c, verify):
    tokens, elapsed = simulate_pearl(alpha, gamma, c, 60_000, np.random.default_rng(gamma), verify=verify)
    assert tokens / elapsed == pytest.approx(pearl(alpha, gamma, c, verify).speedup, rel=0.01)
    assert pearl(alpha, gamma, c, 1.0).speedup == pearl(alpha, gamma, c).speedup


@pytest.mark.parametrize("gamma", [6, 24])   # 24 draft passes outlast a target pass: max(draft, verify) binds
def test_des_follows_the_pearl_chain(gamma):
    result = simulator.run(_data(gamma))
    steps = result.steps
    dec = steps[steps["prefill_tokens"] == 0]
    theory = pearl(ALPHA, gamma, 0.1)            # tokens and phase shares do not depend on c
    n = len(dec)
    tokens = dec["emitted_tokens"].to_numpy(float)
    assert abs(tokens.mean() - theory.tokens_per_phase) < 4 * tokens.std() / np.sqrt(n)
    pre = (dec["query_tokens_per_seq"] == 1).to_numpy(float)   # pre-verify steps: one query token
    share = theory.draft_phase_share
    assert abs(pre.mean() - share) < 4 * np.sqrt(share * (1 - share) / n)
    assert set(dec["query_tokens_per_seq"].unique()) <= {1, gamma}

    # speedup over one-token target passes, with the DES's pass prices at the run's mean context
    cost = replica_kind(_data(gamma)).cost
    ctx = np.array([int(round(dec["decode_context_tokens"].mean()))])
    t1 = cost.target.decode_forward(1, 1, ctx)[0, 0]
    tv = cost.target.decode_forward(1, gamma, ctx)[0, 0]
    c = cost.draft.decode_forward(1, 1, ctx)[0, 0] / t1
    measured = dec["emitted_tokens"].sum() / dec["duration_s"].sum() * t1
    assert measured == pytest.approx(pearl(ALPHA, gamma, c, tv / t1).speedup, rel=0.01)
    if gamma * c > tv / t1:   # the step is max(draft, verify): the sum would be far slower
        serial = pearl(ALPHA, gamma, c, tv / t1).tokens_per_phase / (tv / t1 + gamma * c)
        assert measured > 1.2 * serial


def test_pearl_needs_a_separate_chain_drafter_and_runs_the_same_in_both_modes():
    small = _data(4, output=200, requests=2)
    assert_bulk_equals_step(small)
    with pytest.raises(ScenarioError, match="policy.kind.*placement: separate"):
        simulator.run(merge(small, {"drafter": {**small["drafter"], "placement": "colocated"}}))
    with pytest.raises(ScenarioError, match="drafter.gamma"):
        simulator.run(merge(small, {"drafter": {**small["drafter"], "gamma": 0}}))
