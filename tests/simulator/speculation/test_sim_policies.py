"""Speculation control policies (simulator.speculation.control) against theory/ and invariants."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import simulator
from sim_helpers import scenario
from simulator.cost.step_cost import CTX_GRID_TOKENS
from theory.policies.specdecpp import specdecpp_length

DRAFT = {"kind": "draft_model", "model": "llama-68m", "gamma": 4}
WORK = {"arrival": {"qps": 6.0}, "num_requests": 120}


def test_load_switch_that_never_fires_equals_fixed():
    fixed = simulator.run(scenario(drafter=DRAFT, workload=WORK))
    switch = simulator.run(scenario(drafter=DRAFT, workload=WORK,
                                    policy={"kind": "load_switch", "max_batch": 10_000}))
    pd.testing.assert_frame_equal(fixed.requests, switch.requests)
    pd.testing.assert_frame_equal(fixed.steps, switch.steps)


def test_load_switch_always_off_decodes_like_no_drafter():
    plain = simulator.run(scenario(workload=WORK))
    off = simulator.run(scenario(drafter=DRAFT, workload=WORK, policy={"kind": "load_switch", "max_batch": 0}))
    assert (off.requests.accepted_tokens == 0).all() and (off.requests.drafted_tokens == 0).all()
    assert (off.requests.decode_steps == plain.requests.output_tokens - 1).all()
    dec = off.steps[off.steps.prefill_tokens == 0]
    assert (dec.draft_s == 0).all()
    # priced as plain decoding on the speculative deployment's engine: its CUDA-graph capture sizes are
    # multiples of γ + 1 (vLLM rounds them for speculation), so its plain steps pad to those
    from simulator.cost.step_cost import StepCostModel
    plain_cost = StepCostModel(plain.built.replicas[0].cost.target, None, 0, engine=off.built.kind.engine)
    d, t = plain_cost.decode_steps(dec.decode_seqs.to_numpy(), dec.decode_context_tokens.to_numpy())
    np.testing.assert_allclose(dec.verify_s, t[:, 0] - t[:, 3], rtol=1e-12)  # target seconds carry engine time
    # prefill-only steps still prefill the draft model, so they cost a little more than plain ones
    pre = off.steps[off.steps.decode_seqs == 0]
    assert (pre.draft_s > 0).all()


def test_load_switch_turns_off_only_above_the_threshold():
    result = simulator.run(scenario(drafter=DRAFT, workload={**WORK, "arrival": {"qps": 20.0}},
                                    policy={"kind": "load_switch", "max_batch": 6}))
    dec = result.steps[result.steps.decode_seqs > 0]
    assert (dec.draft_s[dec.decode_seqs > 6] == 0).all()
    assert (dec.draft_s[dec.decode_seqs <= 6] > 0).all()
    assert (dec.decode_seqs > 6).any() and (dec.decode_seqs <= 6).any()


def test_specdecpp_lengths_follow_the_threshold_rule():
    alphas, h = [0.95, 0.85, 0.6, 0.5, 0.5, 0.5], 0.5
    result = simulator.run(scenario(drafter={**DRAFT, "gamma": 6}, workload=WORK,
                                    acceptance={"kind": "positional", "alphas": alphas},
                                    policy={"kind": "specdecpp", "threshold": h}))
    length = specdecpp_length(alphas, h)
    assert 1 <= length < 6
    req = result.requests
    assert (req.drafted_tokens == length * req.decode_steps).all()
    assert (req.accepted_tokens <= req.drafted_tokens).all()


def test_tetris_respects_the_verification_budget():
    budget = 10
    result = simulator.run(scenario(drafter={**DRAFT, "gamma": 6}, workload={**WORK, "arrival": {"qps": 15.0}},
                                    policy={"kind": "tetris", "budget_tokens": budget}))
    dec = result.steps[result.steps.decode_seqs > 0]
    # logged q is the rounded mean query length; Σ drafts per step <= budget means mean q <= 1 + budget/B
    assert (dec.query_tokens_per_seq <= np.round(1 + budget / dec.decode_seqs + 0.5)).all()
    req = result.requests
    assert req.drafted_tokens.sum() <= budget * len(dec)
    assert result.steps.emitted_tokens.sum() == req.output_tokens.sum()


def test_tetris_with_a_large_budget_equals_fixed_lengths():
    fixed = simulator.run(scenario(drafter=DRAFT, workload=WORK, simulation={"step_mode": "step"}))
    tetris = simulator.run(scenario(drafter=DRAFT, workload=WORK, policy={"kind": "tetris", "budget_tokens": 10_000}))
    pd.testing.assert_frame_equal(fixed.requests, tetris.requests)


def test_smartspec_picks_the_goodput_optimal_gamma_of_the_cost_model():
    from theory.policies.smartspec import goodput_optimal_gamma

    result = simulator.run(scenario(drafter=DRAFT, workload=WORK, acceptance={"kind": "constant", "alpha": 0.7},
                                    policy={"kind": "smartspec", "max_gamma": 6}))
    rep = result.built.replicas[0]
    pol = rep.policy
    for (batch, cell), gamma in list(pol._chosen.items())[:20]:
        ctx = cell * CTX_GRID_TOKENS * batch
        want = goodput_optimal_gamma(np.full(batch, 0.7), lambda b, g: pol._decode_seconds(g, b, ctx), 6)
        assert gamma == want.gamma
    assert len(set(pol._chosen.values())) >= 1
    assert result.steps.emitted_tokens.sum() == result.requests.output_tokens.sum()


def test_smartspec_turns_speculation_down_under_heavy_load():
    light = simulator.run(scenario(drafter=DRAFT, workload={"arrival": {"qps": 0.5}, "num_requests": 30},
                                   acceptance={"kind": "constant", "alpha": 0.6},
                                   policy={"kind": "smartspec", "max_gamma": 6}))
    heavy = simulator.run(scenario(drafter={**DRAFT, "model": "llama-3.2-1b"},   # (vLLM 0.15: the target's vocabulary)
                                   workload={"arrival": {"qps": 40.0}, "num_requests": 300},
                                   cluster={"model": "llama-3-8b", "hardware": "a100-80gb", "engine": {"version": "0.15.0"}},
                                   acceptance={"kind": "constant", "alpha": 0.6},
                                   scheduler={"max_batch_size": 256},
                                   policy={"kind": "smartspec", "max_gamma": 6}))

    def mean_q(r):
        d = r.steps[r.steps.decode_seqs > 0]
        return float((d.query_tokens_per_seq * d.decode_seqs).sum() / d.decode_seqs.sum())
    assert mean_q(heavy) < mean_q(light)


def test_load_switch_on_a_tree():
    result = simulator.run(scenario(
        drafter=DRAFT, workload={**WORK, "arrival": {"qps": 20.0}},
        acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]},
        speculation={"kind": "tree", "builder": "sequoia", "depth": 4, "budget": 12},
        policy={"kind": "load_switch", "max_batch": 6}))
    dec = result.steps[result.steps.decode_seqs > 0]
    assert (dec.query_tokens_per_seq[dec.decode_seqs > 6] == 1).all()
    assert (dec.query_tokens_per_seq[dec.decode_seqs <= 6] == 12).all()
    assert result.steps.emitted_tokens.sum() == result.requests.output_tokens.sum()


def test_specdecpp_on_trace_sampling_varies_lengths_per_request():
    """In trace sampling mode the acceptance head is the measured per-position β, so lengths differ
    between requests and steps; each request's drafts never exceed γ."""
    result = simulator.run(scenario(
        cluster={"model": "qwen2.5-coder-1.5b"},
        drafter={"kind": "draft_model", "model": "qwen2.5-coder-0.5b", "gamma": 6}, workload=WORK,
        acceptance={"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "draft", "mode": "sample"},
        policy={"kind": "specdecpp", "threshold": 0.5}))
    req = result.requests
    per_step = req.drafted_tokens / req.decode_steps
    assert per_step.min() >= 1 and per_step.max() <= 6
    assert per_step.std() > 0.05
    assert result.steps.emitted_tokens.sum() == req.output_tokens.sum()
