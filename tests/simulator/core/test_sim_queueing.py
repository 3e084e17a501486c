"""The simulator against queueing theory: M/D/1 waiting time and Little's law."""
from __future__ import annotations

import numpy as np
import pytest

import simulator
from sim_helpers import scenario


def _md1_scenario(qps: float, n: int) -> dict:
    # One replica, batch size 1, identical requests: each request occupies the replica for the same
    # deterministic service time D (its prefill step plus its decode steps) => an M/D/1 FCFS queue.
    return scenario(
        seed=3,
        workload={"arrival": {"process": "poisson", "qps": qps},
                  "prompt_tokens": {"kind": "fixed", "value": 256},
                  "output_tokens": {"kind": "fixed", "value": 8}, "num_requests": n},
        scheduler={"kind": "vllm", "max_batch_size": 1},
    )


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_md1_mean_wait_matches_pollaczek_khinchine():
    probe = simulator.run(_md1_scenario(0.01, 5))
    service_s = float((probe.requests.finish_s - probe.requests.admit_s).iloc[0])
    # Every request is served identically: D is the same for all of them.
    # (rtol 1e-9: finish - admit of absolute times of ~100 s keeps ~1e-14 s of rounding per step)
    np.testing.assert_allclose(probe.requests.finish_s - probe.requests.admit_s, service_s, rtol=1e-9)
    rho = 0.6
    qps = rho / service_s
    result = simulator.run(_md1_scenario(qps, 40_000))
    wait = (result.requests.admit_s - result.requests.arrival_s).to_numpy()
    measured_rho = service_s / np.diff(result.requests.arrival_s).mean()  # ρ = λ·D with the realized λ
    pk_wait = measured_rho * service_s / (2 * (1 - measured_rho))  # Pollaczek–Khinchine, deterministic service
    assert wait.mean() == pytest.approx(pk_wait, rel=0.03)


def test_littles_law_on_a_loaded_run():
    result = simulator.run(scenario(workload={"arrival": {"qps": 12.0}, "num_requests": 600}))
    req = result.requests
    window = req.finish_s.max() - req.arrival_s.min()
    # Time-average number in system, integrated on an event grid independently of the per-request sums.
    times = np.concatenate([req.arrival_s, req.finish_s])
    deltas = np.concatenate([np.ones(len(req)), -np.ones(len(req))])
    order = np.argsort(times, kind="stable")
    t, d = times[order], deltas[order]
    in_system = np.cumsum(d)[:-1]
    mean_in_system = float((in_system * np.diff(t)).sum() / window)
    lam = len(req) / window
    assert mean_in_system == pytest.approx(lam * req.e2e_s.mean(), rel=1e-9)
    summary = result.summary
    assert summary["little_L_requests"] == pytest.approx(mean_in_system, rel=1e-6)
    assert summary["little_lambda_W"] == pytest.approx(mean_in_system, rel=1e-6)
