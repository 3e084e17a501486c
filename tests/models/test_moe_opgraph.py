"""Expert parallelism in the op graph: no all-to-all with one EP rank, dispatch/combine volumes equal the
routing's expected off-diagonal traffic (and its Monte Carlo), work is conserved across ranks, DP
attention splits the batch, and verification of more tokens per request costs more expert traffic."""
from __future__ import annotations

import numpy as np
import pytest

from models import get_model
from models.moe_routing import ExpertPlacement, UniformRouting, ZipfRouting, expected_ep_load, sample_ep_load
from models.opgraph import attention_ops, dense_ops, moe_ep_ops, moe_ep_ops_from_load, step_ops
from models.step import Parallelism, StepShape
from profiles.latency import ops_seconds
from profiles.roofline import RooflineLatencyModel

MOE = ("mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3")


def _by_name(ops):
    out = {}
    for op in ops:
        out.setdefault(op.name, []).append(op)
    return {k: v[0] for k, v in out.items()}


def test_parallelism_ep_layout():
    par = Parallelism(tp=2, pp=2, ep=8)
    assert par.attention_dp == 4 and par.gpus == 16
    assert Parallelism(tp=8, ep=8).gpus == 8 and Parallelism(tp=4, pp=3).gpus == 12
    assert Parallelism(4, 2).attention_dp == 1
    with pytest.raises(ValueError, match="ep=6 must be 1 or a multiple of tp=4"):
        Parallelism(tp=4, ep=6)
    with pytest.raises(ValueError, match="ep must be an integer >= 1"):
        Parallelism(ep=0)


@pytest.mark.parametrize("name", MOE)
@pytest.mark.parametrize("tp", [1, 2, 8])
def test_one_ep_rank_has_no_all_to_all(name, tp):
    ops = dense_ops(get_model(name), 256, 16, Parallelism(tp))
    assert not [op for op in ops if op.name in ("moe_dispatch", "moe_combine")]


@pytest.mark.parametrize("name,ep,tp", [("mixtral-8x7b", 8, 1), ("mixtral-8x7b", 4, 2), ("qwen3-30b-a3b", 16, 2),
                                        ("deepseek-v3", 32, 8)])
def test_dispatch_volume_is_the_expected_off_diagonal_traffic(name, ep, tp):
    spec = get_model(name)
    par = Parallelism(tp=tp, ep=ep)
    tokens = 64 * ep
    ops = _by_name(dense_ops(spec, tokens, tokens, par))
    a = 2.0
    per_token = spec.hidden_size * a
    load = expected_ep_load(UniformRouting(spec.num_experts), ExpertPlacement.contiguous(spec.num_experts, ep),
                            tokens // ep, spec.experts_per_token)
    for name_ in ("moe_dispatch", "moe_combine"):
        op = ops[name_]
        assert op.kind == "alltoall" and op.dim("ranks") == ep and op.count == spec.num_moe_layers
        # The op's buffer is the NCCL convention: (n−1)/n of it leaves the rank.
        assert op.bytes * (ep - 1) / ep == pytest.approx(load.send_bytes_per_rank(per_token)[0], rel=1e-12)
        assert op.bytes * (ep - 1) / ep * ep == pytest.approx(load.alltoall_bytes(per_token), rel=1e-12)
    rows = tokens * spec.experts_per_token / ep
    assert ops["moe_act"].dim("tokens") == pytest.approx(rows)
    assert ops["moe_gate_up"].dim("groups", 1.0) == pytest.approx(load.experts_touched_per_rank[0])


def test_dispatch_volume_matches_a_monte_carlo_of_the_routing():
    spec = get_model("qwen3-30b-a3b")
    ep, tokens = 8, 256
    op = _by_name(dense_ops(spec, tokens, 1, Parallelism(ep=ep)))["moe_dispatch"]
    rng = np.random.default_rng(12)
    placement = ExpertPlacement.contiguous(spec.num_experts, ep)
    sent = [sample_ep_load(UniformRouting(spec.num_experts), placement, tokens // ep, spec.experts_per_token,
                           rng).remote_tokens() / ep for _ in range(300)]
    per_rank_bytes = op.bytes * (ep - 1) / ep / (spec.hidden_size * 2.0)
    assert per_rank_bytes == pytest.approx(np.mean(sent), abs=4 * np.std(sent) / np.sqrt(len(sent)))


@pytest.mark.parametrize("name,ep", [("mixtral-8x7b", 8), ("qwen3-30b-a3b", 16), ("deepseek-v3", 16)])
def test_expert_work_is_conserved_across_ranks(name, ep):
    """EP ranks together do the routed-expert FLOPs and weight reads of one unsharded GPU (ep=1, tp=1)."""
    spec = get_model(name)
    tokens = 512
    one = _by_name(dense_ops(spec, tokens, 0, Parallelism()))
    rank = _by_name(dense_ops(spec, tokens, 0, Parallelism(ep=ep)))
    for n in ("moe_gate_up", "moe_down", "moe_act"):
        assert rank[n].flops * ep == pytest.approx(one[n].flops, rel=1e-12)
    w = 2.0
    weights_one = one["moe_gate_up"].dim("groups", 1.0) * 2 * spec.moe_intermediate_size * spec.hidden_size * w
    weights_rank = rank["moe_gate_up"].dim("groups", 1.0) * 2 * spec.moe_intermediate_size * spec.hidden_size * w
    assert weights_rank * ep == pytest.approx(weights_one, rel=1e-12)


def test_dp_attention_splits_the_batch_over_groups():
    spec = get_model("qwen3-30b-a3b")
    shape = StepShape(prefill_tokens=800, prefill_seqs=4, prefill_attn_pairs=200_000, decode_seqs=32,
                      query_tokens_per_seq=5, decode_context_tokens=32 * 1500)
    tp_only = attention_ops(spec, shape, Parallelism(tp=2))
    grouped = attention_ops(spec, shape, Parallelism(tp=2, ep=8))   # 4 groups of 2 GPUs
    for a, b in zip(tp_only, grouped):
        assert b.flops * 4 == pytest.approx(a.flops, rel=1e-12)
        assert b.dim("seqs") * 4 == pytest.approx(a.dim("seqs"))
    dense_tp = _by_name(dense_ops(spec, 960, 36, Parallelism(tp=2)))
    dense_ep = _by_name(dense_ops(spec, 960, 36, Parallelism(tp=2, ep=8)))
    for n in ("qkv_proj", "o_proj", "lm_head", "moe_router"):
        assert dense_ep[n].flops * 4 == pytest.approx(dense_tp[n].flops, rel=1e-12)
    assert dense_ep["tp_allreduce"].dim("ranks") == 2


def test_verification_touches_more_experts_and_moves_more_tokens():
    spec = get_model("qwen3-30b-a3b")
    par = Parallelism(ep=8)
    model = RooflineLatencyModel("h100-sxm")
    costs, touched = [], []
    for q in (1, 3, 5, 9):
        ops = _by_name(step_ops(spec, StepShape(decode_seqs=16, query_tokens_per_seq=q,
                                                decode_context_tokens=16 * 2000), par))
        touched.append(ops["moe_gate_up"].dim("groups", 1.0))
        costs.append(sum(model.op_seconds(ops[n]) for n in ("moe_gate_up", "moe_down", "moe_dispatch")))
    assert touched == sorted(touched) and len(set(touched)) == 4 and touched[-1] <= spec.num_experts / 8
    assert costs == sorted(costs)


def test_skewed_routing_straggler_costs_more_than_the_uniform_expectation():
    spec = get_model("qwen3-30b-a3b")
    par = Parallelism(ep=8)
    model = RooflineLatencyModel("h100-sxm")
    placement = ExpertPlacement.contiguous(spec.num_experts, 8)
    rng = np.random.default_rng(3)
    uniform = moe_ep_ops_from_load(spec, par, expected_ep_load(UniformRouting(128), placement, 256, 8))
    skewed = moe_ep_ops_from_load(spec, par, sample_ep_load(ZipfRouting(128, 1.2), placement, 256, 8, rng))
    assert ops_seconds(model, skewed) > 1.5 * ops_seconds(model, uniform)
    with pytest.raises(ValueError, match="load has 8 ranks but parallelism.ep=16"):
        moe_ep_ops_from_load(spec, Parallelism(ep=16), expected_ep_load(UniformRouting(128), placement, 4, 8))
    assert moe_ep_ops(spec, par, 0.0, 0.0, 0.0) == []


def test_bad_expert_parallelism_is_refused_with_the_field_named():
    with pytest.raises(ValueError, match="ep=16 must divide num_experts=8 of mixtral-8x7b"):
        dense_ops(get_model("mixtral-8x7b"), 8, 1, Parallelism(ep=16))
    with pytest.raises(ValueError, match="ep=2 needs an MoE model; llama-3-8b has no experts"):
        attention_ops(get_model("llama-3-8b"), StepShape(decode_seqs=1), Parallelism(ep=2))
    with pytest.raises(ValueError, match="moe_ep_ops needs parallelism.ep > 1"):
        moe_ep_ops(get_model("mixtral-8x7b"), Parallelism(), 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="rows > 0 exactly when experts are touched"):
        moe_ep_ops(get_model("mixtral-8x7b"), Parallelism(ep=2), 5.0, 0.0, 1.0)
