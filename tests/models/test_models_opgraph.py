"""Op graph of one engine step: FLOP totals against ModelSpec, TP sharding, op counts, attention
aggregates against brute-force sums over requests, MoE expert coverage against Monte Carlo."""
from __future__ import annotations

import math

import numpy as np
import pytest

from models import get_model, list_models
from models.opgraph import (attention_ops, dense_ops, expected_experts_touched, step_ops)
from models.ops import (ALLREDUCE, ALLTOALL, ATTN_DECODE, ATTN_PREFILL, GEMM, MOE_ROUTER, NORM, OP_KINDS, P2P,
                        Op)
from models.spec import kv_heads_per_gpu
from models.step import Parallelism, StepShape, chunk_attention_pairs

TP1 = Parallelism()

# The dims each kind must carry (models/ops.py); extra dims are allowed.
REQUIRED_DIMS = {
    "gemm": {"m", "n", "k"}, "attn_prefill": {"seqs", "q_tokens", "attn_pairs", "heads", "kv_heads", "head_dim"},
    "attn_decode": {"seqs", "q_per_seq", "ctx_per_seq", "heads", "kv_heads", "head_dim", "tree"},
    "norm": {"tokens", "hidden"}, "activation": {"tokens", "width"}, "embedding": {"tokens", "hidden"},
    "rope": {"tokens", "heads", "head_dim"}, "sampling": {"tokens", "vocab"},
    "moe_router": {"tokens", "experts", "top_k"}, "allreduce": {"bytes", "ranks"},
    "alltoall": {"bytes", "ranks"}, "p2p": {"bytes"},
    "gdn_prefill": {"tokens", "seqs", "heads", "key_dim", "value_dim", "chunk"},
    "gdn_decode": {"seqs", "q_per_seq", "heads", "key_dim", "value_dim"},
    "ssm_prefill": {"version", "tokens", "seqs", "heads", "state", "head_dim", "chunk"},
    "ssm_decode": {"version", "seqs", "q_per_seq", "heads", "state", "head_dim"},
    "conv1d": {"decode", "tokens", "seqs", "channels", "kernel"},
}


def total(ops, kinds=None, attr="flops"):
    return sum(op.count * getattr(op, attr) for op in ops if kinds is None or op.kind in kinds)


def by_name(ops):
    named = {op.name: op for op in ops}
    assert len(named) == len(ops), "op names must be unique within a step"
    return named


def mixed_shape():
    chunks = [(100, 0), (37, 500)]  # (chunk tokens, cached tokens)
    return StepShape(prefill_tokens=sum(c for c, _ in chunks), prefill_seqs=len(chunks),
                     prefill_attn_pairs=sum(chunk_attention_pairs(c, o) for c, o in chunks),
                     decode_seqs=6, query_tokens_per_seq=4, decode_context_tokens=6 * 900)


@pytest.mark.parametrize("name", list_models())
def test_gemm_flops_equal_spec_flops_per_token(name):
    spec = get_model(name)
    gemm_per_token = spec.flops_per_token(0) - spec.recurrent_flops_per_token()   # recurrent work: state ops
    for tokens in (1, 7, 256):
        ops = dense_ops(spec, tokens, tokens, TP1)
        assert total(ops, (GEMM, MOE_ROUTER)) == pytest.approx(tokens * gemm_per_token, rel=1e-12)


@pytest.mark.parametrize("name", list_models())
def test_every_op_has_its_kind_dims_and_sane_numbers(name):
    spec = get_model(name)
    heads = spec.num_heads
    tp = next(t for t in (4, 2, 3) if heads % t == 0 and (spec.num_kv_heads % t == 0 or t % spec.num_kv_heads == 0))
    ops = step_ops(spec, mixed_shape(), Parallelism(tp=tp, pp=2))
    by_name(ops)
    for op in ops:
        assert op.kind in OP_KINDS
        assert REQUIRED_DIMS[op.kind] <= {k for k, _ in op.dims}, op
        assert [k for k, _ in op.dims] == sorted(k for k, _ in op.dims)
        assert op.count >= 1 and op.flops >= 0 and op.bytes > 0 and math.isfinite(op.flops + op.bytes)


@pytest.mark.parametrize("name", ["llama-2-7b", "llama-3-70b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"])
def test_op_counts(name):
    spec = get_model(name)
    L = spec.num_layers
    ops = by_name(step_ops(spec, mixed_shape(), Parallelism(tp=8, pp=4)))
    assert ops["norm"].count == 2 * L + 1
    assert ops["o_proj"].count == L and ops["rope"].count == L
    assert ops["attn_prefill"].count == L and ops["attn_decode"].count == L
    assert ops["tp_allreduce"].count == 2 * L and ops["tp_allreduce"].dim("ranks") == 8
    assert ops["embedding_allreduce"].count == 1 and ops["logits_allgather"].count == 1
    assert ops["pp_send"].count == 3 and ops["pp_send"].dim("span") == 32
    assert ops["lm_head"].count == 1 and ops["sampling"].count == 1
    if spec.is_moe:
        assert ops["moe_router"].count == ops["moe_gate_up"].count == spec.num_moe_layers
    if spec.num_dense_layers:
        assert ops["gate_up_proj"].count == ops["down_proj"].count == spec.num_dense_layers
    single = step_ops(spec, mixed_shape(), TP1)
    assert not [op for op in single if op.kind in (ALLREDUCE, ALLTOALL, P2P)]


@pytest.mark.parametrize("name,tp", [("llama-2-7b", 4), ("llama-3-8b", 8), ("qwen2.5-coder-0.5b", 2),
                                     ("mixtral-8x7b", 8), ("vicuna-33b", 4)])
def test_tp_divides_gemm_flops(name, tp):
    spec = get_model(name)
    one = by_name(dense_ops(spec, 64, 16, TP1))
    many = by_name(dense_ops(spec, 64, 16, Parallelism(tp=tp)))
    for gemm in ("o_proj", "lm_head", "gate_up_proj", "down_proj", "moe_gate_up", "moe_down"):
        if gemm in one:
            assert many[gemm].flops * tp == pytest.approx(one[gemm].flops), gemm
            assert many[gemm].dim("m") == one[gemm].dim("m")
    # QKV: query heads split over ranks; KV heads split too (each rank keeps >= 1).
    kv = kv_heads_per_gpu(spec, tp)
    assert many["qkv_proj"].dim("n") == (spec.num_heads // tp + 2 * kv) * spec.head_dim
    if spec.num_kv_heads >= tp:
        assert total(many.values(), (GEMM, MOE_ROUTER)) * tp == pytest.approx(
            total(one.values(), (GEMM,)) + tp * total([one[n] for n in one if one[n].kind == MOE_ROUTER]))


def test_mla_replicated_down_projections_and_sharded_up_projections():
    spec = get_model("deepseek-v3")
    one = by_name(dense_ops(spec, 32, 8, TP1))
    eight = by_name(dense_ops(spec, 32, 8, Parallelism(tp=8)))
    assert eight["q_kv_a_proj"].flops == one["q_kv_a_proj"].flops          # replicated on every rank
    assert eight["moe_router"].flops == one["moe_router"].flops
    for gemm in ("q_b_proj", "kv_b_proj", "o_proj", "shared_gate_up", "moe_down"):
        assert eight[gemm].flops * 8 == pytest.approx(one[gemm].flops), gemm


def test_empty_and_bad_inputs():
    spec = get_model("llama-2-7b")
    assert step_ops(spec, StepShape(), TP1) == []
    assert dense_ops(spec, 0, 0, TP1) == []
    assert attention_ops(spec, StepShape(), TP1) == []
    with pytest.raises(ValueError, match="logits_tokens"):
        dense_ops(spec, 4, 5, TP1)
    with pytest.raises(ValueError, match="num_tokens"):
        dense_ops(spec, -1, 0, TP1)
    with pytest.raises(ValueError, match="dtype 'fp4'"):
        dense_ops(spec, 4, 1, TP1, dtype="fp4")
    with pytest.raises(ValueError, match="tp=3"):
        step_ops(spec, mixed_shape(), Parallelism(tp=3))
    with pytest.raises(ValueError, match="prefill_seqs"):
        attention_ops(spec, StepShape(prefill_tokens=5, prefill_seqs=0, prefill_attn_pairs=15), TP1)
    # A prefill chunk that does not finish its prompt computes no logits: no LM head, no sampling.
    names = {op.name for op in dense_ops(spec, 16, 0, TP1)}
    assert "lm_head" not in names and "sampling" not in names


def test_decode_attention_against_per_request_sums():
    spec = get_model("llama-3-8b")
    rng = np.random.default_rng(0)
    contexts = rng.integers(10, 3000, size=9).tolist()
    for q in (1, 5):
        shape = StepShape(decode_seqs=len(contexts), query_tokens_per_seq=q, decode_context_tokens=sum(contexts))
        (op,) = attention_ops(spec, shape, TP1)
        assert op.kind == ATTN_DECODE and op.count == spec.num_layers
        assert op.dim("ctx_per_seq") == pytest.approx(np.mean(contexts))
        # Brute force: query j (0-based) of a request with c cached tokens attends to c + j + 1 keys.
        pairs = sum(c + j + 1 for c in contexts for j in range(q))
        assert op.count * op.flops == pytest.approx(spec.attention_flops_per_token_per_context() * pairs)
        # K/V of every cached and new token read once per layer, plus q and o activations.
        kv_read = spec.kv_bytes_per_token() * (sum(contexts) + len(contexts) * q)
        qo = spec.num_layers * len(contexts) * q * 2 * spec.num_heads * spec.head_dim * 2
        assert op.count * op.bytes == pytest.approx(kv_read + qo)
        tree_shape = StepShape(decode_seqs=len(contexts), query_tokens_per_seq=q,
                               decode_context_tokens=sum(contexts), tree_attention=True)
        (tree,) = attention_ops(spec, tree_shape, TP1)
        assert tree.dim("tree") == 1.0 and (tree.flops > op.flops if q > 1 else tree.flops == op.flops)


def test_prefill_attention_against_per_chunk_sums():
    spec = get_model("llama-2-7b")
    chunk = 64
    offsets = [0, 128, 512, 1000]
    pairs = sum(chunk_attention_pairs(chunk, o) for o in offsets)
    shape = StepShape(prefill_tokens=chunk * len(offsets), prefill_seqs=len(offsets), prefill_attn_pairs=pairs)
    (op,) = attention_ops(spec, shape, TP1)
    assert op.kind == ATTN_PREFILL
    assert op.count * op.flops == pytest.approx(spec.attention_flops_per_token_per_context() * pairs)
    # Bytes: Q and O of every new token, K/V of every key each chunk reads (its cache + itself),
    # exact for equal-length chunks.
    keys = sum(o + chunk for o in offsets)
    qo = shape.prefill_tokens * 2 * spec.num_heads * spec.head_dim * 2
    kv = keys * 2 * spec.num_kv_heads * spec.head_dim * 2
    assert op.bytes == pytest.approx(qo + kv)


def test_attention_sharding_and_mla_cache_reads():
    llama = get_model("llama-2-70b")
    shape = mixed_shape()
    one = attention_ops(llama, shape, TP1)
    eight = attention_ops(llama, shape, Parallelism(tp=8))
    for a, b in zip(one, eight):
        assert b.flops * 8 == pytest.approx(a.flops) and b.dim("heads") == a.dim("heads") / 8
    ds = get_model("deepseek-v3")
    decode = StepShape(decode_seqs=3, decode_context_tokens=3000)
    for tp in (1, 8):
        (op,) = attention_ops(ds, decode, Parallelism(tp=tp))
        # The latent cache (576 values per token and layer) is read in full on every TP rank.
        latent_read = ds.kv_bytes_per_token() * (3000 + 3)
        qo = ds.num_layers * 3 * (128 // tp) * (576 + 512) * 2
        assert op.count * op.bytes == pytest.approx(latent_read + qo)
        assert op.dim("kv_heads") == 1 and op.dim("head_dim") == 576


def test_attention_ops_match_op_make():
    spec = get_model("qwen3-30b-a3b")
    for op in attention_ops(spec, mixed_shape(), Parallelism(tp=2)):
        assert op == Op.make(op.kind, op.name, op.flops, op.bytes, op.count, **dict(op.dims))


def test_step_ops_is_dense_plus_attention():
    spec = get_model("mixtral-8x7b")
    shape = mixed_shape()
    par = Parallelism(tp=2)
    expected = dense_ops(spec, shape.num_tokens, shape.effective_logits_tokens, par) + attention_ops(spec, shape, par)
    assert step_ops(spec, shape, par) == expected
    assert by_name(expected)["lm_head"].dim("m") == shape.prefill_seqs + shape.decode_tokens


@pytest.mark.parametrize("experts,k,tokens", [(8, 2, 1), (8, 2, 3), (256, 8, 16), (128, 8, 40)])
def test_expected_experts_touched_against_monte_carlo(experts, k, tokens):
    rng = np.random.default_rng(1234)
    trials = 4000
    # Each token picks k distinct experts uniformly: the k smallest of E uniform keys.
    keys = rng.random((trials, tokens, experts))
    chosen = np.argpartition(keys, k - 1, axis=2)[:, :, :k]
    touched = np.array([len(np.unique(c)) for c in chosen])
    expected = expected_experts_touched(experts, k, tokens)
    assert abs(touched.mean() - expected) < 4 * touched.std() / math.sqrt(trials) + 1e-9
    if tokens == 1:
        assert expected == pytest.approx(k)


def test_moe_grouped_gemm_covers_all_routed_rows():
    spec = get_model("qwen3-30b-a3b")
    for tokens in (1, 50, 4096):
        ops = by_name(dense_ops(spec, tokens, 1, TP1))
        gate_up = ops["moe_gate_up"]
        touched = gate_up.dim("groups")
        assert touched == pytest.approx(expected_experts_touched(128, 8, tokens))
        assert gate_up.dim("m") * touched == pytest.approx(tokens * 8)
        # Weight traffic grows with the experts touched, up to all 128 experts.
        weights = touched * spec.hidden_size * 2 * spec.moe_intermediate_size * 2
        assert gate_up.bytes > weights
    assert by_name(dense_ops(spec, 4096, 1, TP1))["moe_gate_up"].dim("groups") == pytest.approx(128)


def test_norm_counts_and_fp32_activations():
    spec = get_model("llama-2-7b")
    bf16 = by_name(dense_ops(spec, 8, 8, TP1))
    fp32 = by_name(dense_ops(spec, 8, 8, TP1, dtype="fp32"))
    assert bf16["norm"].kind == NORM and fp32["norm"].bytes == 2 * bf16["norm"].bytes
    int4 = by_name(dense_ops(spec, 8, 8, TP1, dtype="int4"))
    # Weight-only int4 keeps 16-bit activations: only the weight part of the GEMM bytes shrinks.
    o = bf16["o_proj"]
    weight_bytes = 4096 * 4096 * 2
    assert int4["o_proj"].bytes == pytest.approx(o.bytes - weight_bytes * 0.75)
