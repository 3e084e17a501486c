"""Speculative-MoE pre-scheduling (theory/moe_prescheduling.py) against a Monte Carlo of the routing: tokens
with a home expert group, predicted ranks, pre-scheduled placement, counted remote activations."""
from __future__ import annotations

import numpy as np
import pytest

from models.moe_routing import ExpertPlacement, UniformRouting, sample_ep_load
from theory.moe_prescheduling import (alltoall_volume_bytes, breakeven_hit_rate, hit_rate, local_fraction,
                                      moe_layer_alltoall_s, remote_activations_per_token, remote_ranks_per_token,
                                      volume_ratio)


def _simulate(p, rho, ranks, experts, k, tokens, rng):
    """Run the scheme on explicit experts: per token a home rank; each activation picks an expert of the
    home rank's group with probability ρ, else any expert; the predictor names the home rank with
    probability p, else a random rank; the token is moved there. Returns per-token remote activations,
    distinct remote ranks, and whether the token had to move from its original (random) rank."""
    m = experts // ranks
    home = rng.integers(0, ranks, tokens)
    in_home = rng.random((tokens, k)) < rho
    expert = np.where(in_home, home[:, None] * m + rng.integers(0, m, (tokens, k)),
                      rng.integers(0, experts, (tokens, k)))
    rank_of = expert // m
    guess = np.where(rng.random(tokens) < p, home, rng.integers(0, ranks, tokens))
    remote = rank_of != guess[:, None]
    hit = np.zeros((tokens, ranks), dtype=bool)
    np.put_along_axis(hit, rank_of, True, axis=1)
    hit[np.arange(tokens), guess] = False
    moved = guess != rng.integers(0, ranks, tokens)
    return remote.sum(axis=1), hit.sum(axis=1), moved


@pytest.mark.parametrize("p,rho", [(0.0, 0.0), (0.9, 0.8), (0.6, 0.5), (1.0, 1.0), (0.3, 0.9)])
@pytest.mark.parametrize("ranks,k", [(8, 2), (16, 8)])
def test_remote_traffic_vs_hit_rate_matches_monte_carlo(p, rho, ranks, k):
    rng = np.random.default_rng(int(100 * p + 10 * rho) + ranks)
    remote, remote_ranks, _ = _simulate(p, rho, ranks, 8 * ranks, k, 40_000, rng)
    h = hit_rate(p, rho)
    se = remote.std() / np.sqrt(len(remote)) + 1e-12
    assert remote_activations_per_token(h, ranks, k) == pytest.approx(remote.mean(), abs=5 * se)
    se = remote_ranks.std() / np.sqrt(len(remote_ranks)) + 1e-12
    assert remote_ranks_per_token(p, rho, ranks, k) == pytest.approx(remote_ranks.mean(), abs=5 * se)
    assert 1 - local_fraction(h, ranks) == pytest.approx(remote.mean() / k, abs=5 * se / k + 1e-3)


def test_volume_falls_linearly_with_hit_rate():
    for ranks in (2, 8, 64):
        base = alltoall_volume_bytes(1000, 8, 14336.0, 0.0, ranks)
        for h in (0.0, 0.25, 0.5, 0.9, 1.0):
            assert alltoall_volume_bytes(1000, 8, 14336.0, h, ranks) == pytest.approx(base * (1 - h))
            assert volume_ratio(h, ranks) == pytest.approx(1 - h)
    assert volume_ratio(0.5, 1) == 1.0 and remote_activations_per_token(0.3, 1, 4) == 0.0


def test_no_prescheduling_equals_the_uniform_routing_of_models_moe_routing():
    """h = 0 is plain EP with uniform routing: remote copies per token k(R−1)/R; with per-rank dedup the
    rank-level model (activations drawn with replacement) is within 2 % of top-k without replacement."""
    rng = np.random.default_rng(7)
    ranks, experts, k = 8, 128, 8
    placement = ExpertPlacement.contiguous(experts, ranks)
    copies = sample_ep_load(UniformRouting(experts), placement, 2000, k, rng, dedup=False)
    per_token = copies.remote_tokens() / (2000 * ranks)
    assert remote_activations_per_token(0.0, ranks, k) == pytest.approx(per_token, rel=0.01)
    dedup = sample_ep_load(UniformRouting(experts), placement, 2000, k, rng, dedup=True)
    assert remote_ranks_per_token(0.0, 0.0, ranks, k) == pytest.approx(dedup.remote_tokens() / 16000, rel=0.02)


def test_alltoall_time_and_the_breakeven_of_a_separate_shuffle():
    bw, lat = 40e9, 5e-6
    t0 = moe_layer_alltoall_s(512, 8, 7168.0, 0.0, 16, bw, lat)
    assert t0 == pytest.approx(2 * (lat + 512 * 8 * 15 / 16 * 7168.0 / bw))
    assert moe_layer_alltoall_s(512, 8, 7168.0, 1.0, 16, bw, lat) == pytest.approx(2 * lat)
    assert moe_layer_alltoall_s(512, 8, 7168.0, 0.5, 1, bw, lat) == 0.0
    # Bytes of dispatch + combine + a separate shuffle equal plain EP at h = 1/(2k) (Monte Carlo).
    k, ranks = 4, 8
    h = breakeven_hit_rate(k)
    assert h == 1 / 8
    rng = np.random.default_rng(21)
    plain, _, _ = _simulate(0.0, 0.0, ranks, 64, k, 60_000, rng)
    pre, _, moved = _simulate(1.0, h, ranks, 64, k, 60_000, rng)
    assert 2 * pre.mean() + moved.mean() == pytest.approx(2 * plain.mean(), rel=0.01)
    no_hide = moe_layer_alltoall_s(512, k, 1.0, h, ranks, 1.0, 0.0, shuffle_hidden=False)
    assert no_hide == pytest.approx(moe_layer_alltoall_s(512, k, 1.0, 0.0, ranks, 1.0, 0.0))


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="hit_rate must be a number in"):
        local_fraction(1.5, 8)
    with pytest.raises(ValueError, match="ranks must be an integer >= 1"):
        local_fraction(0.5, 0)
    with pytest.raises(ValueError, match="top_k must be an integer >= 1"):
        remote_ranks_per_token(0.5, 0.5, 8, 0)
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        moe_layer_alltoall_s(1, 1, 1.0, 0.0, 2, 0.0)
    with pytest.raises(ValueError, match="affinity must be a number in"):
        hit_rate(0.5, -0.1)
