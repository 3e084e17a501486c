"""What pricing a pass costs in lookups, and that the cheaper forms give the same floats as the forms they
replaced (simulator.cost.step_cost): the same values to the last bit, not approximately."""
from __future__ import annotations

import numpy as np
import pytest

from models.catalog import get_model
from models.step import Parallelism
from profiles.latency import power_limited_seconds
from profiles.measured import load_measured
from simulator.cost.step_cost import ForwardCost, _price


@pytest.fixture(scope="module")
def h100():
    model = load_measured("h100-sxm", "bf16", "vllm")
    assert model.power_limit is not None   # (the case this file is about: a dense pass priced at the limit)
    return model


def test_a_dense_pass_at_the_power_limit_looks_each_op_up_once(h100, monkeypatch):
    # (it looked each op up twice: once to sum the pass, once more for the power limit's share)
    looked_up = []
    price = h100.op_seconds
    monkeypatch.setattr(h100, "op_seconds", lambda op: looked_up.append(op) or price(op))
    cost = ForwardCost(get_model("llama-3-8b"), Parallelism(1, 1), h100, "bf16")
    ops = cost._dense_ops(2048, 1)
    cost.dense(2048, 1)
    assert looked_up == list(ops)


@pytest.mark.parametrize("tp", [1, 2])
@pytest.mark.parametrize("tokens, logits", [(1, 1), (37, 1), (600, 1), (2048, 1), (4096, 3), (64, 64), (9000, 0)])
def test_a_dense_pass_at_the_power_limit_is_what_price_then_limit_gave(h100, tp, tokens, logits):
    cost = ForwardCost(get_model("llama-3-8b"), Parallelism(tp, 1), h100, "bf16")
    ops = cost._dense_ops(tokens, logits)
    before = _price(h100, ops)   # the old form: the pass's sums, then its seconds at the limit
    before[0] = power_limited_seconds(h100, ops)
    assert np.array_equal(cost.dense(tokens, logits), before)   # bit-identical


def test_ops_built_without_the_named_tuples_new_are_the_same_ops():
    from models.ops import GEMM, Op, op_of
    dims = (("k", 4096.0), ("m", 600.0), ("n", 6144.0))
    fast, plain = op_of(GEMM, "qkv_proj", 1.5e12, 3.2e7, 32, dims), Op(GEMM, "qkv_proj", 1.5e12, 3.2e7, 32, dims)
    assert type(fast) is Op and fast == plain and hash(fast) == hash(plain) and fast.dim("m") == 600.0
    made = Op.make(GEMM, "qkv_proj", 1.5e12, 3.2e7, 32, n=6144, m=600, k=4096)
    assert type(made) is Op and made == plain and hash(made) == hash(plain)


# (model, parallelism): plain, tensor parallel, sliding-window layers, MLA with expert parallelism and DP
# attention, a hybrid model with state layers (whose ops read the shape), a draft model
SHAPE_FREE_MODELS = [("llama-3-8b", (1, 1, 1)), ("llama-3-8b", (2, 1, 1)), ("gpt-oss-20b", (1, 1, 1)),
                     ("deepseek-v3", (2, 1, 8)), ("nemotron-h-56b", (1, 1, 1)), ("llama-68m", (1, 1, 1))]


@pytest.mark.parametrize("name, par", SHAPE_FREE_MODELS)
def test_attention_ops_built_without_a_step_shape_are_attention_ops(name, par):
    from models.opgraph import attention_ops, decode_attention_ops, prefill_attention_ops
    from models.step import StepShape
    spec, parallelism = get_model(name), Parallelism(*par)
    for kv in (None, "fp8"):
        for tokens, seqs, pairs in ((1, 1, 1), (600, 1, 600 * 601 // 2), (5000, 3, 4_200_000), (4096, 1, 9_000_000)):
            shape = StepShape(prefill_tokens=tokens, prefill_seqs=seqs, prefill_attn_pairs=pairs)
            assert prefill_attention_ops(spec, tokens, seqs, pairs, parallelism, "bf16", kv) == \
                attention_ops(spec, shape, parallelism, "bf16", kv)
        for seqs, q, ctx, tree in ((1, 1, 0, False), (16, 5, 16 * 700, False), (64, 1, 64 * 9000, False),
                                   (8, 12, 8 * 300, True), (3, 2, 7, False)):
            shape = StepShape(decode_seqs=seqs, query_tokens_per_seq=q, decode_context_tokens=ctx, tree_attention=tree)
            assert decode_attention_ops(spec, seqs, q, ctx, tree, parallelism, "bf16", kv) == \
                attention_ops(spec, shape, parallelism, "bf16", kv)


def test_attention_ops_built_without_a_step_shape_refuse_what_attention_ops_refuses():
    from models.opgraph import decode_attention_ops, prefill_attention_ops
    spec = get_model("llama-3-8b")
    with pytest.raises(ValueError, match="prefill_seqs >= 1"):
        prefill_attention_ops(spec, 10, 0, 55, Parallelism(1, 1))
    with pytest.raises(ValueError, match="query_tokens_per_seq must be >= 1"):
        decode_attention_ops(spec, 4, 0, 100, False, Parallelism(1, 1))
