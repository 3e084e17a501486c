"""The thompson policy: its Beta posterior is the exact conjugate count of the chain's Bernoulli trials, it
concentrates at the true α, and its choices converge to SmartSpec's with α known."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import simulator
from sim_helpers import replica_kind
from simulator.config.scenario import load_scenario
from theory.policies.smartspec import goodput_optimal_gamma
from paths import REPO

SHIPPED = REPO / "scenarios" / "speculation" / "thompson_gamma.yaml"
ALPHA = 0.7


def _policy():
    return replica_kind(load_scenario(SHIPPED)[0]).policy


def _drive(policy, steps: int, batch: int, rng):
    """Run `steps` steps of a fixed batch against the policy with i.i.d. Bernoulli(α) drafts."""
    rep = SimpleNamespace(s=SimpleNamespace(accepted=np.zeros(batch, dtype=np.int64),
                                            ctx=np.full(batch, 800, dtype=np.int64)))
    ids = np.arange(batch)
    succ = fail = 0
    chosen = []
    for step in range(steps):
        g = int(policy.counts(rep, ids, 0)[0])
        chosen.append(g)
        if step == steps - 1:
            break  # the policy reads a step's outcome at the next step
        for r in range(batch):
            tau = 0
            while tau < g and rng.random() < ALPHA:
                tau += 1
            rep.s.accepted[r] += tau
            succ += tau
            fail += int(g > 0 and tau < g)
    return succ, fail, np.array(chosen)


def test_posterior_counts_are_the_chain_trials():
    policy = _policy()
    succ, fail, _ = _drive(policy, 300, 4, np.random.default_rng(3))
    assert (policy.successes, policy.failures) == (succ, fail)


def test_posterior_concentrates_at_alpha_and_choices_at_smartspec():
    policy = _policy()
    _, _, chosen = _drive(policy, 2500, 4, np.random.default_rng(4))
    n = policy.successes + policy.failures
    sd = np.sqrt(ALPHA * (1 - ALPHA) / n)
    assert n > 2000 and abs(policy.posterior_mean() - ALPHA) < 4 * sd
    cell = 800 // 16
    best = goodput_optimal_gamma(np.full(4, ALPHA), lambda b, g: policy._seconds(b, g, cell), 8).gamma
    late = chosen[-500:]
    assert np.mean(late == best) > 0.6 and np.mean(chosen[:20] != best) > 0  # explores early, settles late


def test_des_run_matches_smartspec_and_is_deterministic():
    th = simulator.run(SHIPPED, ["workload.num_requests=80"])
    again = simulator.run(SHIPPED, ["workload.num_requests=80"])
    pd.testing.assert_frame_equal(th.steps, again.steps)
    ss = simulator.run(SHIPPED, ["workload.num_requests=80", "policy={kind: smartspec, max_gamma: 8}"])
    per_step = lambda r: r.steps.emitted_tokens.sum() / r.steps.decode_seqs.sum()
    assert per_step(th) == pytest.approx(per_step(ss), rel=0.05)
    assert th.summary["tpot_mean_s"] == pytest.approx(ss.summary["tpot_mean_s"], rel=0.05)
