"""Op lists shared by the runs of one process (`simulator.cost.op_lists`): a pass's list is the op graph
models.opgraph builds for it, one list per model object, parallelism and dtypes, and a run's outputs are
the same under any bound. (That a repeated run builds none again and gives the same outputs, whatever
the process ran before: tests/profiles/test_shared_prices.py, with the op prices.)"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import simulator
from models.catalog import get_model
from models.opgraph import attention_ops, dense_ops
from models.step import Parallelism, StepShape
from paths import REPO
from profiles.hardware import get_hardware
from profiles.roofline import RooflineLatencyModel
from sim_helpers import assert_same_outputs, run_outputs
from simulator.cost import op_lists
from simulator.cost.op_lists import SharedOpLists
from simulator.cost.step_cost import ForwardCost, _price

SCENARIO = REPO / "scenarios" / "quickstart.yaml"   # Llama-3-8B + Llama-68M on the measured H100 tables
RUN = ["workload.num_requests=60"]


def test_a_run_is_the_same_under_a_tiny_bound(monkeypatch):
    op_lists.SHARED_OP_LISTS.clear()
    first = run_outputs(simulator.run(SCENARIO, RUN))
    monkeypatch.setattr(op_lists.SHARED_OP_LISTS, "limit", 5)   # emptied every few lists, mid-run
    op_lists.SHARED_OP_LISTS.clear()
    assert_same_outputs(first, run_outputs(simulator.run(SCENARIO, RUN)))
    assert len(op_lists.SHARED_OP_LISTS) <= 5
    op_lists.SHARED_OP_LISTS.clear()


def test_the_lists_are_the_op_graphs_and_keyed_by_model_parallelism_and_dtypes():
    spec, hw = get_model("llama-3-8b"), get_hardware("h100-sxm")
    op_lists.SHARED_OP_LISTS.clear()
    cost = ForwardCost(spec, Parallelism(1), RooflineLatencyModel(hw, dtype="bf16"), "bf16")
    cost.dense(48, 12)
    cost.prefill_attention(300, 2, 30_000)
    cost.exact_decode(8, 5, 8 * 700)
    table = op_lists.SHARED_OP_LISTS.table(spec, Parallelism(1), "bf16", None)
    # (one TP and PP rank: the ops before the LM head, then the LM head and sampling, kept apart)
    assert table[("dense", 48, 0)] + table[("logits", 12)] == tuple(dense_ops(spec, 48, 12, Parallelism(1), "bf16"))
    prefill = StepShape(prefill_tokens=300, prefill_seqs=2, prefill_attn_pairs=30_000)
    assert table[("prefill", 300, 2, 30_000)] == tuple(attention_ops(spec, prefill, Parallelism(1), "bf16"))
    decode = StepShape(decode_seqs=8, query_tokens_per_seq=5, decode_context_tokens=8 * 700)
    assert table[("decode", 8, 5, 8 * 700, False)] == tuple(attention_ops(spec, decode, Parallelism(1), "bf16"))
    # another parallelism, dtype or KV dtype, or another model object: tables of their own
    assert op_lists.SHARED_OP_LISTS.table(spec, Parallelism(2), "bf16", None) == {}
    assert op_lists.SHARED_OP_LISTS.table(spec, Parallelism(1), "fp8", None) == {}
    assert op_lists.SHARED_OP_LISTS.table(spec, Parallelism(1), "bf16", "fp8") == {}
    assert op_lists.SHARED_OP_LISTS.table(dataclasses.replace(spec), Parallelism(1), "bf16", None) == {}
    # a second pricer of the same model builds nothing and prices the same
    again = ForwardCost(spec, Parallelism(1), RooflineLatencyModel(hw, dtype="bf16"), "bf16")
    assert again._op_lists is table
    assert np.array_equal(again.exact_decode(8, 5, 8 * 700), cost.exact_decode(8, 5, 8 * 700))
    op_lists.SHARED_OP_LISTS.clear()


def test_the_bound_empties_every_table_in_place_and_forgets_the_models():
    shared = SharedOpLists(limit=3)
    a = shared.table("model a", "par", "bf16", None)
    b = shared.table("model b", "par", "bf16", None)
    assert shared.table("model a", "par", "bf16", None) is a
    shared.add(a, ("dense", 1, 1), ("op",))
    shared.add(b, ("dense", 2, 2), ("op",))
    shared.add(b, ("dense", 3, 3), ("op",))
    assert len(shared) == 3
    shared.add(a, ("dense", 4, 4), ("op",))   # the 4th list empties both tables, in place, first
    assert a == {("dense", 4, 4): ("op",)} and b == {}
    assert len(shared) == 0                    # the models are forgotten: their next table is a new one
    assert shared.table("model a", "par", "bf16", None) is not a


@pytest.mark.parametrize("spec_name", ["qwen3-30b-a3b", "qwen3-next-80b-a3b"])
def test_moe_and_hybrid_passes_cost_what_their_op_graphs_price(spec_name):
    """Another model family, priced by a pricer that built the lists and by one that found them: each
    costs what the op graph, built here directly, prices at (the roofline has no host overhead)."""
    spec, hw, par = get_model(spec_name), get_hardware("h100-sxm"), Parallelism(2)
    latency = RooflineLatencyModel(hw, dtype="bf16")
    decode = StepShape(decode_seqs=16, query_tokens_per_seq=1, decode_context_tokens=16 * 900)
    prefill = StepShape(prefill_tokens=512, prefill_seqs=1, prefill_attn_pairs=512 * 513 // 2)
    expected = [_price(latency, dense_ops(spec, 64, 8, par, "bf16")),
                _price(latency, attention_ops(spec, prefill, par, "bf16")),
                _price(latency, dense_ops(spec, 16, 16, par, "bf16")) + _price(latency, attention_ops(spec, decode, par,
                                                                                                   "bf16"))]
    op_lists.SHARED_OP_LISTS.clear()
    for _ in range(2):   # the first pricer builds the lists, the second finds them
        cost = ForwardCost(spec, par, RooflineLatencyModel(hw, dtype="bf16"), "bf16")
        got = [cost.dense(64, 8), cost.prefill_attention(512, 1, 512 * 513 // 2), cost.exact_decode(16, 1, 16 * 900)]
        for x, y in zip(got, expected):
            assert np.array_equal(x, y)
    assert len(op_lists.SHARED_OP_LISTS) == 4   # dense 64/8 and 16/16, one prefill, one decode
    op_lists.SHARED_OP_LISTS.clear()


@pytest.mark.parametrize("model, dtype, par", [
    ("llama-2-7b", "bf16", Parallelism(1, 1)), ("qwen3-30b-a3b", "bf16", Parallelism(1, 1)),
    ("jamba-1.5-mini", "bf16", Parallelism(1, 1)), ("qwen3-next-80b-a3b", "fp8", Parallelism(1, 1)),
    ("llama-3-8b", "int4", Parallelism(1, 1)), ("llama-3-8b", "bf16", Parallelism(2, 1)),
    ("llama-3-70b", "bf16", Parallelism(2, 2))])
@pytest.mark.parametrize("gpu", ["a100-80gb", "h100-sxm"])
def test_a_dense_pass_priced_in_two_parts_is_the_whole_list_priced(model, dtype, par, gpu):
    """ForwardCost.dense prices the ops before the LM head once per token count and goes on from their sums
    (mixed steps repeat token counts with other logits rows): every (tokens, logits) must give the floats of
    the whole op list priced in order, as before the split."""
    spec = get_model(model)
    latency = RooflineLatencyModel(get_hardware(gpu))
    cost = ForwardCost(spec, par, latency, dtype)
    for tokens, logits in [(1, 1), (37, 5), (37, 37), (2048, 1), (2048, 31), (2049, 31), (8192, 128), (64, 0)]:
        whole = _price(latency, dense_ops(spec, tokens, logits, par, dtype))
        whole[0] += latency.host_overhead_s(spec.num_layers, tokens)
        assert cost.dense(tokens, logits).tolist() == whole.tolist(), (tokens, logits)
    with pytest.raises(ValueError):
        cost.dense(4, 5)
