"""Drafter families: pass costs, placement, and the memory model (simulator.cost.drafters)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import simulator
from models import get_model
from models.step import Parallelism
from models.spec import dtype_bytes
from profiles.hardware import get_hardware
from sim_helpers import scenario, vllm_requested_bytes
from simulator.errors import ScenarioError
from simulator.cost.step_cost import ForwardCost

DRAFT = {"kind": "draft_model", "model": "llama-68m", "gamma": 4}
QUIET = {"arrival": {"qps": 0.5}, "num_requests": 20, "output_tokens": {"kind": "fixed", "value": 64}}


def _run(drafter, **kw):
    return simulator.run(scenario(drafter=drafter, workload=QUIET, **kw))


@pytest.fixture(scope="module")
def plain():
    return simulator.run(scenario(workload=QUIET))


def test_layer_skip_and_ngram_use_no_extra_memory(plain):
    for d in ({"kind": "layer_skip", "gamma": 3, "layers_fraction": 0.5}, {"kind": "ngram", "gamma": 3}):
        assert _run(d).built.kind.kv_tokens == plain.built.kind.kv_tokens


def test_ngram_drafts_for_free():
    result = _run({"kind": "ngram", "gamma": 3})
    dec = result.steps[result.steps.decode_seqs > 0]
    assert (dec.draft_s == 0).all() and (dec.verify_s > 0).all()


def test_layer_skip_pass_is_the_kept_layers_of_the_target():
    result = _run({"kind": "layer_skip", "gamma": 2, "layers_fraction": 0.25})
    cost = result.built.replicas[0].cost
    target = get_model("llama-3-8b")
    assert cost.draft.spec.num_layers == round(0.25 * target.num_layers)
    # A pass of 8 layers costs between a quarter and the whole of a target pass (embedding + LM head
    # are paid in full by both).
    d = cost.draft.exact_decode(8, 1, 8 * 400)[0]
    t = cost.target.exact_decode(8, 1, 8 * 400)[0]
    assert 0.25 * t < d < t


def test_eagle_head_memory_and_cost(plain):
    result = _run({"kind": "head", "style": "autoregressive", "gamma": 3})
    target = get_model("llama-3-8b")
    h, kv_dim, inter = target.hidden_size, target.num_kv_heads * target.head_dim, target.intermediate_size
    layer = 2 * h * h + 2 * h * kv_dim + 3 * h * inter + 2 * h   # q, o; k, v; gate, up, down; two pre-norms
    w = (layer + 2 * h * h) * dtype_bytes("bf16")                   # + the fc that reads two hidden states
    kv = 2 * target.num_kv_heads * target.head_dim * dtype_bytes("bf16")  # one layer
    per_token = target.kv_bytes_per_token_per_gpu(Parallelism(1, 1), "bf16")
    hw = get_hardware("h100-sxm")
    free = vllm_requested_bytes(hw, target, Parallelism(1, 1), "bf16", 0.9) - target.weight_bytes("bf16") - w
    assert result.built.kind.kv_tokens == int(free // (per_token + kv))
    assert result.built.kind.kv_tokens < plain.built.kind.kv_tokens
    cost = result.built.replicas[0].cost
    assert cost.draft.spec.num_layers == 1 and cost.draft_widths == (1, 1, 1)


def test_medusa_heads_run_once_per_step_whatever_the_tree():
    small = _run({"kind": "head", "style": "parallel", "gamma": 4},
                 acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]},
                 speculation={"kind": "tree", "builder": "medusa", "depth": 4, "budget": 8})
    big = _run({"kind": "head", "style": "parallel", "gamma": 4},
               acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]},
               speculation={"kind": "tree", "builder": "medusa", "depth": 4, "budget": 32})
    cs, cb = small.built.replicas[0].cost, big.built.replicas[0].cost
    assert cs.draft_widths == cb.draft_widths == (1,)
    np.testing.assert_array_equal(cs.decode_steps(4, np.array([4000]))[0], cb.decode_steps(4, np.array([4000]))[0])
    assert cb.decode_steps(4, np.array([4000]))[1][0, 0] > cs.decode_steps(4, np.array([4000]))[1][0, 0]


def test_medusa_tree_deeper_than_heads_is_an_error():
    with pytest.raises(ScenarioError, match="speculation.depth"):
        _run({"kind": "head", "style": "parallel", "gamma": 2},
             acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]},
             speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 3})


def test_separate_placement_overlaps_draft_with_verify(plain):
    """Step time = max(draft, verify) + (1 − P(full accept))·draft; no draft memory on the target GPUs."""
    alpha = 0.8
    col = _run(DRAFT, acceptance={"kind": "constant", "alpha": alpha})
    sep = _run({**DRAFT, "placement": "separate"}, acceptance={"kind": "constant", "alpha": alpha})
    assert sep.built.kind.kv_tokens == plain.built.kind.kv_tokens
    c_col, c_sep = col.built.replicas[0].cost, sep.built.replicas[0].cost
    for batch in (1, 16):
        d, t = c_col.decode_steps(batch, np.array([batch * 300]))
        ds, ts = c_sep.decode_steps(batch, np.array([batch * 300]))
        # Same target pass; the engine-time term is wall − device of each placement's own device time, so the
        # two agree to rounding (1 ulp), not bit for bit.
        np.testing.assert_allclose(t, ts, rtol=1e-13, atol=0.0)
        want = max(d[0, 0] - t[0, 0], 0.0) + (1 - alpha ** 4) * d[0, 0]
        assert ds[0, 0] == pytest.approx(want, rel=1e-9)
        assert ds[0, 1] == d[0, 1]  # FLOPs are kept
    # α = 1: the draft hides completely behind a longer verify
    full = _run({**DRAFT, "placement": "separate"}, acceptance={"kind": "constant", "alpha": 1.0})
    dec = full.steps[full.steps.decode_seqs > 0]
    assert (dec.draft_s == 0).all()
    assert sep.requests.e2e_s.mean() < col.requests.e2e_s.mean()


def test_cpu_placement_prices_the_host_profile_plus_pcie(plain):
    from profiles.predictor import load_latency_model

    result = _run({**DRAFT, "placement": "cpu", "gamma": 2})
    assert result.built.kind.kv_tokens == plain.built.kind.kv_tokens
    cost = result.built.replicas[0].cost
    cpu = ForwardCost(get_model("llama-68m"), Parallelism(1, 1), load_latency_model("cpu-local", dtype="fp32"),
                      "fp32")
    hw = get_hardware("h100-sxm")
    got = cost.draft.exact_decode(4, 1, 4 * 200)
    want = cpu.exact_decode(4, 1, 4 * 200)
    assert got[0] == pytest.approx(want[0] + hw.host_link_latency_s + 16 / hw.host_link_bandwidth_bytes_per_s,
                                   rel=1e-12)
    np.testing.assert_array_equal(got[1:], want[1:])


def test_chain_draft_model_results_unchanged_by_placement_default():
    a = _run(DRAFT)
    b = _run({**DRAFT, "placement": "colocated"})
    pd.testing.assert_frame_equal(a.steps, b.steps)


def test_a_head_of_a_hybrid_owns_the_weights_of_the_layers_it_runs():
    """A 1-layer head on Jamba (first layer dense, second MoE) runs the dense layer and owns its weights,
    not those of a MoE layer with 16 experts."""
    from types import SimpleNamespace

    from simulator.cost.drafters import build_drafter
    target = get_model("jamba-1.5-mini")
    d = SimpleNamespace(kind="head", style="autoregressive", gamma=1, layers=1, tokens_per_pass=1)
    built = build_drafter(d, target, Parallelism(2, 1), None, get_hardware("h100-sxm"), "bf16")
    assert built.cost.spec.ffn_types == ("dense",)
    w = target.with_layers(1).decoder_param_count() + 2 * target.hidden_size ** 2
    assert built.weight_bytes_per_gpu == w * dtype_bytes("bf16") / 2
    moe_layer = target.with_layers(2).decoder_param_count() - target.with_layers(1).decoder_param_count()
    assert w < moe_layer / 4
