"""Trace-driven acceptance: the simulator replays measured accepted lengths faithfully."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import simulator
from profiles.acceptance.trace import TEMPERATURES, beta_column, empirical_mean_accepted, write_trace
from sim_helpers import scenario
from theory.chain import expected_tokens, expected_tokens_positional


def _bursty_trace(path, sequences=40, length=220, seed=0):
    """A synthetic trace whose draft hits follow a two-state Markov chain (easy/hard stretches), so that
    acceptance is correlated along the text, as in real code completion."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(sequences):
        easy = True
        for pos in range(length):
            easy = (rng.random() < 0.9) if easy else (rng.random() < 0.25)
            hit = rng.random() < (0.92 if easy else 0.35)
            rank = 0 if hit else int(rng.integers(1, 5))
            rows.append({"seq": s, "prompt_id": f"p{s}", "kind": "code", "pos": pos,
                         "context_tokens": 50 + pos, "target_token": 7, "target_top1_prob": 0.9,
                         "target_entropy_nats": 0.3, "max_accept": length - pos - 1,
                         "draft_top_tokens": [7, 8, 9, 10, 11], "draft_top_probs": [0.5, 0.2, 0.1, 0.1, 0.1],
                         "draft_target_probs": [0.6, 0.1, 0.1, 0.1, 0.1], "draft_rank": rank,
                         "draft_q_target": 0.5, **{beta_column("draft", t): 0.7 for t in TEMPERATURES}})
    frame = pd.DataFrame(rows)
    for col in ("seq", "pos", "context_tokens", "target_token", "max_accept", "draft_rank"):
        frame[col] = frame[col].astype(np.int32)
    write_trace(frame, path, {"synthetic": True})
    return frame


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "bursty.parquet"
    return path, _bursty_trace(path)


def _run(path, gamma, **extra):
    return simulator.run(scenario(
        cluster={"model": "qwen2.5-coder-1.5b", "hardware": "l40s"},
        drafter={"kind": "draft_model", "model": "qwen2.5-coder-0.5b", "gamma": gamma},
        acceptance={"kind": "trace", "trace": str(path), "drafter": "draft"},
        workload={"num_requests": 400, "output_tokens": {"kind": "uniform", "low": 150, "high": 220}},
        **extra))


@pytest.mark.parametrize("gamma", range(1, 9))
def test_simulated_mean_accepted_length_equals_trace_empirical(trace, gamma):
    path, frame = trace
    result = _run(path, gamma)
    steps = result.steps[result.steps.decode_seqs > 0]
    simulated = steps.accepted_tokens.sum() / steps.decode_seqs.sum()
    assert simulated == pytest.approx(empirical_mean_accepted(frame, gamma), rel=0.02)
    # theory's positional formula on the walk's conditional acceptance gives the same tokens per step
    acc = result.built.replicas[0].acceptance
    survival = [(acc.flat >= i).mean() for i in range(1, gamma + 1)]
    betas = [survival[0]] + [survival[i] / survival[i - 1] for i in range(1, gamma)]
    assert expected_tokens_positional(betas) == pytest.approx(1 + acc.flat.mean(), rel=1e-9)


def test_correlated_trace_differs_from_constant_alpha_at_equal_mean(trace):
    """The Jensen gap: at the same per-token acceptance α, bursty acceptance gives fewer tokens per step
    than i.i.d. acceptance: a decoder spends more steps in hard stretches (one token each) than in easy
    ones (many tokens each), so the step-weighted acceptance is below the position-weighted α, and a
    constant-α simulation overestimates the speed-up."""
    path, frame = trace
    alpha = float((frame.draft_rank == 0).mean())
    gamma = 6
    traced = empirical_mean_accepted(frame, gamma) + 1
    assert traced < 0.97 * expected_tokens(alpha, gamma)


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_requests_replay_their_sequence_deterministically(trace):
    path, _ = trace
    a, b = _run(path, 4), _run(path, 4)
    pd.testing.assert_frame_equal(a.requests, b.requests)
    bulk, step = _run(path, 4), _run(path, 4, simulation={"step_mode": "step"})
    pd.testing.assert_frame_equal(bulk.steps, step.steps)


def test_unknown_trace_is_a_scenario_error(tmp_path):
    from simulator.errors import ScenarioError
    with pytest.raises(ScenarioError, match="acceptance.trace"):
        simulator.run(scenario(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 2},
                               acceptance={"kind": "trace", "trace": "no-such-trace"}))


def _constant_beta_trace(path, beta_value, sequences=5, length=300):
    frame = _bursty_trace(path, sequences=sequences, length=length, seed=1)
    for t in TEMPERATURES:
        frame[beta_column("draft", t)] = np.float32(beta_value)
    write_trace(frame, path, {"synthetic": True})
    return frame


def _run_sampled(path, gamma, step_mode="bulk", temperature=1.0):
    return simulator.run(scenario(
        cluster={"model": "qwen2.5-coder-1.5b", "hardware": "l40s"},
        drafter={"kind": "draft_model", "model": "qwen2.5-coder-0.5b", "gamma": gamma},
        acceptance={"kind": "trace", "trace": str(path), "mode": "sample", "temperature": temperature},
        workload={"num_requests": 300, "output_tokens": {"kind": "uniform", "low": 100, "high": 300}},
        simulation={"step_mode": step_mode}))


def test_sampling_mode_with_constant_beta_matches_closed_form(tmp_path):
    path = tmp_path / "flat.parquet"
    _constant_beta_trace(path, 0.75)
    result = _run_sampled(path, 5)
    steps = result.steps[result.steps.decode_seqs > 0]
    tokens = steps.accepted_tokens.sum() / steps.decode_seqs.sum() + 1
    assert tokens == pytest.approx(expected_tokens(0.75, 5), rel=0.01)


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_sampling_mode_follows_per_position_beta(trace, tmp_path):
    """Monte Carlo of the same walk, written independently: per request, start at its sequence's
    position 0, accept drafts while u < β[pos + j], move by τ + 1."""
    path, frame = trace
    col = beta_column("draft", 0.5)
    rng = np.random.default_rng(5)
    varied = frame.copy()
    varied[col] = rng.uniform(0.2, 0.95, len(frame)).astype(np.float32)
    vpath = tmp_path / "varied.parquet"
    write_trace(varied, vpath, {"synthetic": True})
    result = _run_sampled(vpath, 3, temperature=0.5)
    steps = result.steps[result.steps.decode_seqs > 0]
    simulated = steps.accepted_tokens.sum() / steps.decode_seqs.sum()
    taus = []
    for _, rows in varied.groupby("seq"):
        b = rows[col].to_numpy()
        pos = 0
        while pos < 5000:
            tau = 0
            while tau < 3 and rng.random() < b[(pos + tau) % len(b)]:
                tau += 1
            taus.append(tau)
            pos += tau + 1
    assert simulated == pytest.approx(np.mean(taus), rel=0.03)
    pd.testing.assert_frame_equal(result.steps, _run_sampled(vpath, 3, "step", temperature=0.5).steps)
