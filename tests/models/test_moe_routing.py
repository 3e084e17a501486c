"""MoE routing and EP traffic: send matrices against brute-force counting, all-to-all volume = off-diagonal
mass × bytes per token, expectations against Monte Carlo, distinct experts touched by verification."""
from __future__ import annotations

import numpy as np
import pytest

from models import get_model
from models.moe_routing import (ExpertPlacement, GroupLimitedRouting, TraceRouting, UniformRouting, ZipfRouting,
                                expected_distinct_experts, expected_ep_load, hierarchical_dispatch_counts,
                                rank_hit_probability, sample_ep_load, send_matrix,
                                uniform_remote_copies_per_token, verification_distinct_experts,
                                weight_bytes_per_gpu)
from models.step import Parallelism


def _brute_send(choices, token_ranks, rank_of, ranks, dedup):
    m = np.zeros((ranks, ranks), dtype=np.int64)
    for row, src in zip(choices, token_ranks):
        dests = [rank_of[e] for e in row if e >= 0]
        for d in (set(dests) if dedup else dests):
            m[src, d] += 1
    return m


@pytest.mark.parametrize("dedup", [True, False])
def test_send_matrix_matches_brute_force_and_volume_is_off_diagonal_mass(dedup):
    rng = np.random.default_rng(1)
    placement = ExpertPlacement.round_robin(16, 4)
    choices = ZipfRouting(16, 0.8).sample(300, 3, rng)
    token_ranks = rng.integers(0, 4, 300)
    m = send_matrix(choices, token_ranks, placement, dedup)
    assert np.array_equal(m, _brute_send(choices, token_ranks, placement.rank_of_expert, 4, dedup))
    load = sample_ep_load(UniformRouting(16), placement, [10, 20, 30, 40], 3, rng, dedup=dedup)
    bytes_per_token = 7168 * 2.0
    off_diagonal = load.send_tokens.sum() - np.trace(load.send_tokens)
    assert load.alltoall_bytes(bytes_per_token) == off_diagonal * bytes_per_token
    assert load.send_bytes_per_rank(bytes_per_token).sum() == pytest.approx(off_diagonal * bytes_per_token)
    assert load.recv_bytes_per_rank(bytes_per_token).sum() == pytest.approx(off_diagonal * bytes_per_token)
    # Every token is either kept or sent: row sums count (token, destination) pairs.
    if not dedup:
        assert np.array_equal(load.send_tokens.sum(axis=1), np.array([10, 20, 30, 40]) * 3)


def test_one_ep_rank_has_no_all_to_all():
    rng = np.random.default_rng(2)
    load = sample_ep_load(UniformRouting(8), ExpertPlacement.contiguous(8, 1), 500, 2, rng)
    assert load.remote_tokens() == 0 and load.alltoall_bytes(1e4) == 0.0
    assert uniform_remote_copies_per_token(8, 2, 1) == 0.0
    assert expected_ep_load(UniformRouting(8), ExpertPlacement.contiguous(8, 1), 500, 2).remote_tokens() == 0.0


@pytest.mark.parametrize("routing", [UniformRouting(32), ZipfRouting(32, 1.2), GroupLimitedRouting(32, 4, 2)])
@pytest.mark.parametrize("dedup", [True, False])
def test_expected_load_matches_monte_carlo(routing, dedup):
    rng = np.random.default_rng(5)
    placement = ExpertPlacement.contiguous(32, 4)
    tokens = [64, 64, 128, 32]
    runs = [sample_ep_load(routing, placement, tokens, 4, rng, dedup=dedup) for _ in range(150)]
    expected = expected_ep_load(routing, placement, tokens, 4, dedup=dedup)
    mean_send = np.mean([r.send_tokens for r in runs], axis=0)
    sd_send = np.std([r.send_tokens for r in runs], axis=0) / np.sqrt(len(runs))
    # MC estimates of π / hit probabilities (non-uniform routings) carry ≤ 0.0025 absolute error each.
    slack = 0.0 if isinstance(routing, UniformRouting) else 0.01 * np.array(tokens)[:, None] * (1 if dedup else 4)
    assert np.all(np.abs(mean_send - expected.send_tokens) <= 5 * sd_send + slack + 1e-9)
    mean_rows = np.mean([r.rows_per_rank for r in runs], axis=0)
    assert mean_rows == pytest.approx(expected.rows_per_rank, rel=0.03)
    mean_touched = np.mean([r.experts_touched_per_rank for r in runs], axis=0)
    assert mean_touched == pytest.approx(expected.experts_touched_per_rank, rel=0.03)


def test_uniform_closed_forms_against_enumeration():
    from itertools import combinations
    e, k, m = 10, 3, 4
    sets = list(combinations(range(e), k))
    hit = np.mean([any(x < m for x in s) for s in sets])
    assert rank_hit_probability(e, k, m) == pytest.approx(hit)
    assert uniform_remote_copies_per_token(8, 2, 4, dedup=True) == pytest.approx(3 * rank_hit_probability(8, 2, 2))
    assert uniform_remote_copies_per_token(8, 2, 4, dedup=False) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="ranks=3 must divide num_experts=8"):
        uniform_remote_copies_per_token(8, 2, 3)


@pytest.mark.parametrize("routing", [UniformRouting(64), ZipfRouting(64, 1.0)])
def test_verifying_more_tokens_touches_more_distinct_experts_as_monte_carlo_says(routing):
    """A decode batch of 8 requests verifying γ+1 tokens each (independent draws) touches more distinct
    experts of an MoE layer than plain decoding; the closed form Σ 1 − (1 − π)^T matches Monte Carlo."""
    rng = np.random.default_rng(11)
    pi = routing.inclusion_probabilities(6)
    previous = 0.0
    for q in (1, 2, 4, 8):
        mc = np.mean([len(np.unique(routing.sample(8 * q, 6, rng))) for _ in range(400)])
        model = verification_distinct_experts(pi, 8, q)
        assert model == pytest.approx(mc, rel=0.02)
        assert model > previous
        previous = model
    assert expected_distinct_experts(UniformRouting(64).inclusion_probabilities(6), 10) == pytest.approx(
        64 * (1 - (1 - 6 / 64) ** 10))


def test_hot_experts_make_a_straggler():
    rng = np.random.default_rng(4)
    placement = ExpertPlacement.contiguous(64, 8)
    uniform = sample_ep_load(UniformRouting(64), placement, 256, 4, rng)
    skewed = sample_ep_load(ZipfRouting(64, 1.0), placement, 256, 4, rng)
    assert uniform.imbalance < 1.2 < skewed.imbalance
    assert skewed.straggler_rank == 0       # experts 0..7 are the hottest and live on rank 0
    assert skewed.rows_per_rank[0] == skewed.rows_per_rank.max()
    # A hot-order permutation moves the straggler; round-robin placement spreads the hot experts.
    moved = ZipfRouting(64, 1.0, hot_order=tuple(range(63, -1, -1)))
    assert sample_ep_load(moved, placement, 256, 4, rng).straggler_rank == 7
    spread = sample_ep_load(ZipfRouting(64, 1.0), ExpertPlacement.round_robin(64, 8), 256, 4, rng)
    assert spread.imbalance < skewed.imbalance


def test_shared_experts_add_local_rows_and_no_traffic():
    rng = np.random.default_rng(6)
    placement = ExpertPlacement.contiguous(16, 4)
    a = sample_ep_load(UniformRouting(16), placement, [5, 6, 7, 8], 2, np.random.default_rng(6))
    b = sample_ep_load(UniformRouting(16), placement, [5, 6, 7, 8], 2, np.random.default_rng(6), num_shared_experts=2)
    assert np.array_equal(a.send_tokens, b.send_tokens)
    assert np.array_equal(b.shared_rows_per_rank, [10, 12, 14, 16]) and a.shared_rows_per_rank.sum() == 0
    del rng


def test_capacity_factor_drops_rows_over_capacity_and_is_off_by_default():
    rng = np.random.default_rng(8)
    placement = ExpertPlacement.contiguous(16, 4)
    free = sample_ep_load(ZipfRouting(16, 1.5), placement, 256, 2, np.random.default_rng(8))
    capped = sample_ep_load(ZipfRouting(16, 1.5), placement, 256, 2, np.random.default_rng(8), capacity_factor=1.0)
    capacity = int(np.ceil(1.0 * 1024 * 2 / 16))
    assert free.dropped_rows == 0 and capped.dropped_rows > 0
    assert capped.rows_per_rank.sum() + capped.dropped_rows == free.rows_per_rank.sum()
    assert capped.rows_per_rank.max() <= 4 * capacity
    assert capped.remote_tokens() <= free.remote_tokens()
    with pytest.raises(ValueError, match="capacity_factor must be > 0"):
        sample_ep_load(UniformRouting(16), placement, 4, 2, rng, capacity_factor=0.0)


def test_trace_routing_replays_recorded_choices():
    trace = np.array([[0, 1], [1, 2], [0, 3], [2, 3]])
    routing = TraceRouting(trace, 4)
    assert routing.inclusion_probabilities(2) == pytest.approx([0.5, 0.5, 0.5, 0.5])
    drawn = routing.sample(50, 2, np.random.default_rng(0))
    assert all(any((row == t).all() for t in trace) for row in drawn)
    with pytest.raises(ValueError, match="does not match the trace's top_k=2"):
        routing.sample(3, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="same expert twice"):
        TraceRouting(np.array([[1, 1]]), 4)
    with pytest.raises(ValueError, match="expert ids in 0..3"):
        TraceRouting(np.array([[0, 4]]), 4)


def test_hierarchical_counts_against_brute_force():
    rng = np.random.default_rng(9)
    g, nodes = 4, 3
    placement = ExpertPlacement.contiguous(24, g * nodes)
    choices = UniformRouting(24).sample(200, 4, rng)
    src = rng.integers(0, g * nodes, 200)
    c = hierarchical_dispatch_counts(choices, src, placement, g)
    r = g * nodes
    want = {k: np.zeros(r) for k in c}
    for row, s in zip(choices, src):
        ranks = {placement.rank_of_expert[e] for e in row}
        for node in {d // g for d in ranks}:
            want["scaleout_logical"][s] += 1
            if node != s // g:
                want["scaleout_send"][s] += 1
                want["scaleout_recv"][node * g + s % g] += 1
        for d in ranks:
            want["recv_total"][d] += 1
            if d % g != s % g:
                want["scaleup_recv"][d] += 1
                want["scaleup_send"][(d // g) * g + s % g] += 1
    for key in c:
        assert np.array_equal(c[key], want[key]), key


def test_weight_bytes_per_gpu_with_expert_parallelism():
    spec = get_model("qwen3-30b-a3b")
    assert weight_bytes_per_gpu(spec, Parallelism(4)) == spec.weight_bytes() / 4
    routed = spec.routed_expert_param_count()
    ep = weight_bytes_per_gpu(spec, Parallelism(1, ep=8))
    assert ep == pytest.approx(((spec.param_count() - routed) + routed / 8) * 2.0)
    # The replica's GPUs together hold the routed experts once and the rest once per attention group.
    assert ep * 8 == pytest.approx((8 * (spec.param_count() - routed) + routed) * 2.0)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="num_ranks=3 must divide num_experts=8"):
        ExpertPlacement.contiguous(8, 3)
    with pytest.raises(ValueError, match="top_k=9 exceeds num_experts=8"):
        UniformRouting(8).sample(1, 9, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator"):
        UniformRouting(8).sample(1, 2, 0)
    with pytest.raises(ValueError, match="zipf exponent"):
        ZipfRouting(8, -1.0)
    with pytest.raises(ValueError, match="placement has 8 experts, routing 16"):
        expected_ep_load(UniformRouting(16), ExpertPlacement.contiguous(8, 2), 4, 2)
    with pytest.raises(ValueError, match="token_ranks"):
        send_matrix(np.zeros((2, 1), dtype=int), np.array([0, 5]), ExpertPlacement.contiguous(4, 2))
    with pytest.raises(ValueError, match="tokens_per_rank must be integers"):
        expected_ep_load(UniformRouting(8), ExpertPlacement.contiguous(8, 2), [1.5, 2], 2)
