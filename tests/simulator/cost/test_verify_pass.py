"""The verify pass: its op list (the verify step costs what its ops cost, LM head and sampling over every
verified token) and the q > 1 attention rule of profiles.measured.verify (FA3's packed row tiles, checked
by hand and against the measured tables)."""
from __future__ import annotations

import numpy as np
import pytest

from models import get_model
from models.opgraph import attention_ops, dense_ops
from models.ops import ATTN_DECODE, SAMPLING
from models.step import Parallelism, StepShape
from profiles.measured import source as src
from profiles.measured.verify import (REFERENCE_PROMPT_TOKENS, context_flop_rate, extra_tile_flops, padded_rows,
                                      verify_seconds)
from profiles.roofline import RooflineLatencyModel
from simulator.cost.step_cost import ForwardCost, StepCostModel

real = pytest.mark.skipif(src.data_root() is None, reason="aiconfigurator-core not installed (extra gpu-data)")


def _verify_ops(spec, seqs: int, q: int, ctx_sum: int, tree: bool = False):
    shape = StepShape(decode_seqs=seqs, query_tokens_per_seq=q, decode_context_tokens=ctx_sum, tree_attention=tree)
    return dense_ops(spec, seqs * q, seqs * q, Parallelism(), "bf16") + attention_ops(spec, shape, Parallelism(), "bf16")


@pytest.mark.parametrize("tree", [False, True])
def test_verify_pass_op_list_is_pinned_and_the_step_costs_what_its_ops_cost(tree):
    """A speculative decode step's target pass = Σ count · op_seconds over exactly these ops: every layer's
    GEMMs, norms, RoPE, activation and one ATTN_DECODE op with q query tokens per request, plus the LM head
    and the sampling over all seqs·q verified tokens (the rejection sampler reads every verified position's
    logits)."""
    spec = get_model("llama-3-8b")
    lat = RooflineLatencyModel("h100-sxm")
    seqs, gamma, ctx = 8, 4, 8 * 1000
    q = gamma + 1
    ops = _verify_ops(spec, seqs, q, ctx, tree)
    names = [(o.name, o.kind, o.count) for o in ops]
    assert names == [("embedding", "embedding", 1), ("norm", "norm", 65), ("qkv_proj", "gemm", 32),
                     ("rope", "rope", 32), ("o_proj", "gemm", 32), ("gate_up_proj", "gemm", 32),
                     ("act", "activation", 32), ("down_proj", "gemm", 32), ("lm_head", "gemm", 1),
                     ("sampling", "sampling", 1), ("attn_decode", "attn_decode", 32)]
    lm_head = next(o for o in ops if o.name == "lm_head")
    assert lm_head.dim("m") == seqs * q and lm_head.dim("n") == spec.vocab_size
    assert next(o for o in ops if o.kind == SAMPLING).dim("tokens") == seqs * q
    attn = next(o for o in ops if o.kind == ATTN_DECODE)
    assert attn.dim("q_per_seq") == q and attn.dim("seqs") == seqs and attn.dim("tree") == float(tree)
    target = ForwardCost(spec, Parallelism(), lat, "bf16")
    draft = ForwardCost(get_model("llama-68m"), Parallelism(), lat, "bf16")
    widths, verify_q = ((1,) * gamma, None) if not tree else ((2, 2), q)
    model = StepCostModel(target, draft, depth=gamma if not tree else 2, widths=widths, verify_q=verify_q, tree=tree)
    row = model.exact_decode_step(seqs, ctx)
    assert row[3] == pytest.approx(sum(o.count * lat.op_seconds(o) for o in ops), rel=1e-12)
    assert row[4] == pytest.approx(sum(o.count * o.flops for o in ops), rel=1e-12)


def test_fa3_row_tiles_by_hand():
    """hopper/tile_size.h: head dim 128 → 64-row tiles while the packed rows fit one warpgroup (≤ 64), else
    128; head dim ≤ 96 → 192; MLA latents (FlashMLA) → 64."""
    assert [padded_rows(r, 128) for r in (4, 20, 64, 65, 128, 129, 256)] == [64, 64, 64, 128, 128, 256, 256]
    assert [padded_rows(r, 64) for r in (7, 112, 192, 448)] == [192, 192, 192, 576]
    assert [padded_rows(r, 576) for r in (16, 128, 256)] == [64, 128, 256]
    # Llama-3-8B (32 query heads, 8 KV heads): q ≤ 16 adds no tile; q = 64 adds 192 rows per (seq, KV head).
    assert extra_tile_flops(32, 8, 128, 4, 1000, 16) == 0.0
    assert extra_tile_flops(32, 8, 128, 4, 1000, 64) == 4.0 * 128 * 1000 * 192 * 8 * 4


@real
@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
def test_measured_verify_price_follows_the_tiles(framework):
    from profiles.measured import load_measured
    lat = load_measured("h100-sxm", "bf16", framework)
    gen, ctx_table = lat.attention["generation"], lat.attention["context"]
    b, ctx = 32, 2000
    decode = {q: gen.seconds("bf16", 32, 8, 128, b, ctx + q)[0] for q in (2, 8, 16, 64)}
    rate = context_flop_rate(ctx_table, "bf16", 32, 8, 128)
    assert 3e14 < rate < 9e14  # FA3 / TensorRT-LLM prefill attention on H100: 400–660 TFLOP/s
    for q in (2, 8, 16):  # one 64-row tile: the decode kernel over ctx + q keys
        assert verify_seconds(gen, ctx_table, framework, "bf16", 32, 8, 128, b, ctx, q, False)[0] == decode[q]
    got = verify_seconds(gen, ctx_table, framework, "bf16", 32, 8, 128, b, ctx, 64, False)[0]
    assert got == pytest.approx(decode[64] + extra_tile_flops(32, 8, 128, b, ctx + 64, 64) / rate, rel=1e-12)
    prices = [verify_seconds(gen, ctx_table, framework, "bf16", 32, 8, 128, b, ctx, q, False)[0]
              for q in (2, 4, 8, 16, 17, 32, 33, 64)]
    assert all(x <= y for x, y in zip(prices, prices[1:]))


@real
def test_sglang_tree_is_a_cascade_and_other_trees_cost_the_chain():
    from profiles.measured import load_measured
    for framework, extra in (("vllm", False), ("sglang", True)):
        lat = load_measured("h100-sxm", "bf16", framework)
        gen, ctx_table = lat.attention["generation"], lat.attention["context"]
        chain = verify_seconds(gen, ctx_table, framework, "bf16", 32, 8, 128, 16, 2000, 8, False)[0]
        tree = verify_seconds(gen, ctx_table, framework, "bf16", 32, 8, 128, 16, 2000, 8, True)[0]
        if not extra:
            assert tree == chain
        else:
            expand = gen.seconds("bf16", 32, 8, 128, 16 * 8, 8)[0]
            merge = gen.peaks.bound(0.0, 16 * 8 * 32 * 3.0 * (2.0 * 128 + 4.0))
            assert tree == pytest.approx(chain + expand + merge, rel=1e-12)


@real
def test_the_tile_rule_against_sglangs_own_table():
    """Out of sample: SGLang's H100 table measured 32 and 128 query heads per KV head at head dim 128 (64 vs
    128 padded rows per (sequence, KV head) in FA3's tiles). Where the table's work is largest (b·L =
    131,072 keys of one KV head: batch 16–128), the measured difference is within a factor 0.9–1.6 of the
    rule's 64 extra rows at the context kernel's FLOP rate. At small b·L the measured difference is a
    ~2 µs fixed cost of the two-warpgroup tile that the rule omits (< 1 % of a verify step)."""
    from profiles.measured import load_measured
    lat = load_measured("h100-sxm", "bf16", "sglang")
    gen, ctx_table = lat.attention["generation"], lat.attention["context"]
    rate = context_flop_rate(ctx_table, "bf16", 32, 8, 128)
    for b, keys in ((16, 8192), (32, 4096), (64, 2048), (128, 1024)):
        measured = gen.seconds("bf16", 128, 1, 128, b, keys)[0] - gen.seconds("bf16", 32, 1, 128, b, keys)[0]
        rule = 4.0 * 128 * keys * 64 * b / rate
        assert 0.5 < rule / measured < 2.0, (b, keys, measured, rule)
        assert measured < 12e-6  # the fixed part: a few µs, not a multiple of the kernel
    assert REFERENCE_PROMPT_TOKENS == 8192


@real
def test_verify_attention_is_priced_by_the_verify_rule_in_a_whole_step():
    from profiles.measured import load_measured
    lat = load_measured("h100-sxm", "bf16", "vllm")
    spec = get_model("llama-3-8b")
    shape = StepShape(decode_seqs=16, query_tokens_per_seq=64, decode_context_tokens=16 * 2048)
    op = attention_ops(spec, shape, Parallelism(), "bf16")[0]
    gen, ctx_table = lat.attention["generation"], lat.attention["context"]
    assert lat.op_seconds(op) == verify_seconds(gen, ctx_table, "vllm", "bf16", 32, 8, 128, 16, 2048, 64, False)[0]
    one = attention_ops(spec, StepShape(decode_seqs=16, decode_context_tokens=16 * 2048), Parallelism(), "bf16")[0]
    assert lat.op_seconds(one) == gen.seconds("bf16", 32, 8, 128, 16, 2049)[0]  # plain decode: unchanged path
    assert np.isfinite(lat.op_seconds(op))
