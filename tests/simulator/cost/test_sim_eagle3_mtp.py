"""EAGLE-3 and MTP drafters (issue 31 items 1-2): the draft passes cost what their op graphs cost, memory holds
their weights and KV, the shipped scenarios are deterministic and bulk ≡ step, bad input is one line, exit 2,
and the trends the issue asks for come out of the pricing without tuning."""
from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
import yaml

import simulator
from models import get_model
from models.eagle3 import capture_ops, fuse_ops, get_eagle3_head, head_for_target, pass_ops
from models.mtp import extra_ops, module_spec, own_params
from models.opgraph import attention_ops, dense_ops
from models.spec import kv_cache_dtype
from models.step import Parallelism, StepShape
from contract import assert_one_line, run_cli
from sim_helpers import merge, replica_kind, scenario, vllm_requested_bytes
from simulator.cost.step_cost import _price
from paths import REPO

FOLDER = REPO / "scenarios" / "speculation"
NEW = ("eagle3_llama31_8b_h100", "eagle3_gpt_oss_120b_h100", "mtp_deepseek_v3_h200_ep8", "mtp_deepseek_v3_h200_disagg")
ROOFLINE = {"source": "roofline", "engine_time": False}
EAGLE3 = {"kind": "eagle3", "head": "llama-3.1-8b-eagle3", "gamma": 3}
LLAMA = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "dtype": "bf16", "latency": ROOFLINE}
DEEPSEEK = {"hardware": "h200", "model": "deepseek-v3", "dtype": "fp8_block", "latency": ROOFLINE}


# ---- EAGLE-3 ---------------------------------------------------------------------------------------------
def test_llama_head_counts_its_published_tensors():
    """fc 3h·h, qkv (2h in), o, gate/up/down, three layer norms, final norm, 32k LM head; no embedding (the
    target's): 424,689,664 parameters, 0.85 GB in fp16 as the published checkpoint."""
    head = get_eagle3_head("llama-3.1-8b-eagle3")
    h, kv = 4096, 8 * 128
    by_hand = 3 * h * h + 2 * h * (h + 2 * kv) + h * h + 3 * h * 14336 + 3 * h + h + 32000 * h
    assert head.param_count() == by_hand == 424_689_664
    assert head_for_target("llama-3.1-8b") is head and head_for_target("vicuna-7b") is None


def test_eagle3_pass_reads_two_hidden_widths_and_maps_to_the_target_vocabulary():
    head = get_eagle3_head("gpt-oss-120b-eagle3")
    ops = {op.name: op for op in pass_ops(head, 40, 10, 2)}
    assert ops["qkv_proj"].dim("k") == 2 * 2880 and ops["qkv_proj"].dim("n") == (32 + 2 * 4) * 64
    assert ops["lm_head"].dim("n") == 32000 / 2 and ops["lm_head"].dim("m") == 10
    assert ops["d2t_map"].dim("vocab") == ops["sampling"].dim("vocab") == 201088
    assert "hidden_norm" in ops and ops["hidden_norm"].dim("tokens") == 40
    fc, = fuse_ops(head, 40)
    assert (fc.dim("m"), fc.dim("n"), fc.dim("k")) == (40, 2880, 3 * 2880)
    capture, = capture_ops(get_model("gpt-oss-120b"), 40)
    assert capture.bytes == 15 * 2 * 40 * 2880


def _hand_eagle3_draft(kind, batch: int, context: int) -> np.ndarray:
    """The draft passes of one decode step priced op by op from models.eagle3 (simulator.cost.proposer's
    layout: the draft extend over q tokens per request with the fc, then the later widths)."""
    d, lat = kind.drafter.cost, kind.latency
    head, spec, tp, dt = d.head, d.spec, kind.parallelism.tp, d.dtype
    kv = kind.drafter_kv_dtype if hasattr(kind, "drafter_kv_dtype") else kind.kv_dtype
    q, later = kind.cost.q, kind.cost.proposer.later_widths

    def attention(width: int, ctx: int):
        return attention_ops(spec, StepShape(decode_seqs=batch, query_tokens_per_seq=width, decode_context_tokens=ctx),
                             Parallelism(tp, 1), dt, kv)
    total = _price(lat, pass_ops(head, batch * q, batch, tp, dt) + fuse_ops(head, batch * q, dt) + attention(q, context))
    for j, width in enumerate(later):
        total = total + _price(lat, pass_ops(head, batch * width, batch * width, tp, dt) +
                               attention(width, context + batch * q + j * batch))
    return total


@pytest.mark.parametrize("shape", [None, {"kind": "dynamic_tree", "builder": "eagle2", "top_k": 4, "depth": 3,
                                          "budget": 8}], ids=["vllm_chain", "sglang_tree"])
@pytest.mark.parametrize("batch", [1, 16, 48])
def test_eagle3_draft_cost_equals_its_op_graph(shape, batch):
    extra = {} if shape is None else {"speculation": shape, "acceptance": {"kind": "ranked",
                                                                          "accept_probs": [0.6, 0.15, 0.05]}}
    kind = replica_kind(scenario(cluster=LLAMA, drafter=EAGLE3, **extra))
    context = batch * 16 * 40
    row = kind.cost.exact_decode_step(batch, context)
    np.testing.assert_allclose(row[:3], _hand_eagle3_draft(kind, batch, context), rtol=1e-9)
    assert kind.cost.pass_layout.draft_passes == (3 if shape is None else 3)


def test_eagle3_target_pays_the_hidden_state_capture():
    kind = replica_kind(scenario(cluster=LLAMA, drafter=EAGLE3))
    cost = kind.cost
    import dataclasses
    without = dataclasses.replace(cost, proposer=dataclasses.replace(cost.proposer, capture=None))
    for batch in (1, 8):
        with_capture = cost.exact_decode_step(batch, batch * 256)[3:6]
        plain = without.exact_decode_step(batch, batch * 256)[3:6]
        np.testing.assert_allclose(with_capture - plain,
                                   _price(kind.latency, capture_ops(kind.target, batch * cost.q)), rtol=1e-9)


def test_eagle3_memory_holds_the_head_weights_and_its_kv():
    """KV tokens by hand: (vLLM's requested memory − target weights − head weights) / (target KV + head KV)."""
    kind = replica_kind(scenario(cluster=LLAMA, drafter=EAGLE3))
    hw, target = kind.hardware, kind.target
    head_weights = 2.0 * (424_689_664 - 3 * 4096 * 4096) + 2.0 * 3 * 4096 * 4096 + 32000 * 8   # tp 1
    head_kv = 2 * 8 * 128 * 2
    free = vllm_requested_bytes(hw, target, Parallelism(), "bf16", 0.9) - target.weight_bytes("bf16") - head_weights
    assert kind.drafter.weight_bytes_per_gpu == pytest.approx(head_weights, rel=1e-12)
    assert kind.drafter.kv_bytes_per_token_per_gpu == head_kv
    assert kind.kv_tokens == int(free // (target.kv_bytes_per_token("bf16") + head_kv))


# ---- MTP -------------------------------------------------------------------------------------------------
def test_mtp_module_is_deepseek_v3s_moe_layer_with_the_shared_embedding_and_head():
    ds = get_model("deepseek-v3")
    spec = module_spec(ds)
    assert (spec.num_layers, spec.num_moe_layers, spec.is_mla) == (1, 1, True)
    total, routed = own_params(ds)
    assert routed == 256 * 3 * 7168 * 2048
    # the report's 685B checkpoint = 671B main model + 14B MTP module (own weights + embedding + LM head)
    assert (total + 2 * ds.vocab_size * ds.hidden_size) / 1e9 == pytest.approx(14.0, rel=0.05)


def test_mtp_draft_cost_equals_its_op_graph_under_tensor_parallelism():
    kind = replica_kind(scenario(cluster={**DEEPSEEK, "parallelism": {"tp": 8}}, drafter={"kind": "mtp", "gamma": 2},
                                 acceptance={"kind": "constant", "alpha": 0.8}))
    ds, lat, par, dt = kind.target, kind.latency, Parallelism(8, 1), "fp8_block"
    spec, kv = module_spec(ds), kv_cache_dtype("fp8_block")
    for batch in (1, 8, 32):
        context = batch * 16 * 30

        def one_pass(tokens, logits, width, ctx):
            shape = StepShape(decode_seqs=batch, query_tokens_per_seq=width, decode_context_tokens=ctx)
            return _price(lat, dense_ops(spec, tokens, logits, par, dt) + extra_ops(ds, tokens, dt) +
                          attention_ops(spec, shape, par, dt, kv))
        hand = one_pass(batch * 3, batch, 3, context) + one_pass(batch, batch, 1, context + batch * 3)
        np.testing.assert_allclose(kind.cost.exact_decode_step(batch, context)[:3], hand, rtol=1e-9)


def test_mtp_under_expert_parallelism_prices_its_moe_like_the_targets():
    """The MTP module's pass = simulator.cost.moe's EP pricing of its MoE layer (same routing, same all-to-all
    on the node's links) + eh_proj and the two input norms per attention group."""
    from simulator.config.scenario import MoeConfig
    from simulator.cost.moe import make_ep_forward_cost
    kind = replica_kind(scenario(cluster={**DEEPSEEK, "parallelism": {"tp": 1, "ep": 8}},
                                 drafter={"kind": "mtp", "gamma": 2}, acceptance={"kind": "constant", "alpha": 0.8}))
    draft, target = kind.drafter.cost, kind.cost.target
    module = make_ep_forward_cost(module_spec(kind.target), Parallelism(1, 1, 8), kind.latency, "fp8_block",
                                  kind.hardware, MoeConfig(), REPO, kind.kv_dtype)
    for tokens in (8, 24, 96):
        expected = module.dense(tokens, tokens) + _price(kind.latency, extra_ops(kind.target, tokens / 8, "fp8_block"))
        np.testing.assert_allclose(draft.dense(tokens, tokens), expected, rtol=1e-12)
        assert draft.alltoall_seconds(tokens) > 0
        assert draft.alltoall_seconds(tokens) == pytest.approx(target.alltoall_seconds(tokens) / 58, rel=1e-12)


def test_mtp_memory_holds_the_modules_weights_and_kv_per_gpu():
    kind = replica_kind(scenario(cluster={**DEEPSEEK, "latency": ROOFLINE, "parallelism": {"tp": 1, "ep": 8}},
                                 drafter={"kind": "mtp", "gamma": 2}, acceptance={"kind": "constant", "alpha": 0.8}))
    from models.moe_routing import weight_bytes_per_gpu
    ds, par = kind.target, Parallelism(1, 1, 8)
    total, routed = own_params(ds)
    eh = 2 * 7168 * 7168
    module_weights = (total - routed - eh) + routed / 8 + eh   # fp8: one byte each
    mtp_kv = (512 + 64) * 2                                     # one MLA latent per token, bf16 KV
    assert kind.drafter.weight_bytes_per_gpu == pytest.approx(module_weights, rel=1e-12)
    assert kind.drafter.kv_bytes_per_token_per_gpu == mtp_kv
    free = vllm_requested_bytes(kind.hardware, ds, par, "fp8_block", 0.9) - weight_bytes_per_gpu(ds, par, "fp8_block") \
        - module_weights
    per_token = ds.kv_bytes_per_token_per_gpu(par, "bf16") + mtp_kv
    assert kind.kv_tokens == int(free // per_token) * 8


# ---- the shipped scenarios -------------------------------------------------------------------------------
def _small(name: str) -> dict:
    from simulator.config.scenario import read_scenario_dict
    data = read_scenario_dict(FOLDER / f"{name}.yaml")
    return merge(data, {"workload": {"num_requests": 40}, "outputs": {"plots": False}})


@pytest.mark.parametrize("name", NEW)
def test_new_scenarios_bulk_equals_step_and_are_deterministic(name):
    data = _small(name)
    bulk = simulator.run(data, base_dir=FOLDER)
    step = simulator.run(merge(data, {"simulation": {"step_mode": "step"}}), base_dir=FOLDER)
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    again = simulator.run(data, base_dir=FOLDER)
    digest = lambda r: hashlib.sha256(pd.util.hash_pandas_object(r.steps).values.tobytes()).hexdigest()  # noqa: E731
    assert digest(again) == digest(bulk)
    assert bulk.requests.accepted_tokens.sum() > 0


# ---- bad input -------------------------------------------------------------------------------------------
BAD = {
    "mtp_on_llama": (dict(cluster=LLAMA, drafter={"kind": "mtp"}), "drafter.kind"),
    "mtp_more_modules_than_shipped": (dict(cluster={**DEEPSEEK, "parallelism": {"tp": 8}},
                                           drafter={"kind": "mtp", "modules": 2}), "drafter.modules"),
    "eagle3_unknown_head": (dict(cluster=LLAMA, drafter={"kind": "eagle3", "head": "llama-9-eagle3"}), "drafter.head"),
    "eagle3_head_of_another_model": (dict(cluster=LLAMA, drafter={"kind": "eagle3", "head": "gpt-oss-120b-eagle3"}),
                                     "drafter.head"),
    "eagle3_no_head_for_target": (dict(cluster={**LLAMA, "model": "vicuna-7b"}, drafter={"kind": "eagle3"}),
                                  "drafter.head"),
    # (a kary tree is vLLM's static speculative_token_tree, drafted from EAGLE-3 heads: tests/simulator/cost/
    # test_eagle3_static_tree.py; a Sequoia tree no engine drafts from one)
    "eagle3_sequoia_tree": (dict(cluster=LLAMA, drafter=EAGLE3, acceptance={"kind": "ranked", "accept_probs": [0.6]},
                                 speculation={"kind": "tree", "builder": "sequoia", "depth": 2, "budget": 6}),
                            "speculation.builder"),
    "eagle3_with_dp_attention": (dict(cluster={"hardware": "h100-sxm", "model": "qwen3-30b-a3b",
                                               "parallelism": {"ep": 8}},
                                      drafter={"kind": "eagle3", "head": {
                                          "hidden_size": 2048, "intermediate_size": 6144, "num_heads": 32,
                                          "num_kv_heads": 4, "head_dim": 128, "draft_vocab_size": 32000,
                                          "target_hidden_size": 2048, "vocab_size": 151936}}),
                                 "parallelism.ep"),
    "eagle3_bad_inline_head": (dict(cluster=LLAMA, drafter={"kind": "eagle3", "head": {"hidden_size": 4096}}),
                               "drafter.head"),
    # a 2048-wide head "sharing" a 4096-wide target's embedding: no engine hands it over (models.eagle3.Eagle3Head)
    "eagle3_narrow_head_sharing_the_target_embedding": (dict(cluster=LLAMA, drafter={"kind": "eagle3", "head": {
        "hidden_size": 2048, "intermediate_size": 8192, "num_heads": 16, "num_kv_heads": 8, "head_dim": 128,
        "draft_vocab_size": 32000, "target_hidden_size": 4096, "vocab_size": 128256}}), "drafter.head"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_drafter_input_exits_2_with_one_line(tmp_path, name):
    overrides, field = BAD[name]
    code, err, out = run_cli(tmp_path, scenario(**overrides))
    assert code == 2, err
    assert len(err.splitlines()) == 1, err   # no warning line before the refusal either
    assert_one_line(err, field)
    assert not out.exists()


# ---- trends the issue asks for (no tuning: the scenarios' cited acceptance and the default pricing) ---------
def test_acceptance_saturates_with_depth_while_mtp_draft_cost_keeps_rising():
    from scenarios.speculation.drafter_costs import replica_kind as kind_of, step_seconds
    path = FOLDER / "mtp_deepseek_v3_h200_ep8.yaml"
    kinds = {g: kind_of(path, {"kind": "mtp", "gamma": g}) for g in range(1, 7)}
    tokens = [1 + kinds[g].acceptance.expected_accepted() for g in range(1, 7)]
    gains = np.diff(tokens)
    assert (gains > 0).all() and (np.diff(gains) < 0).all()          # saturating
    for batch in (1, 32):
        drafts = [step_seconds(kinds[g], batch, 1024)[0] for g in range(1, 7)]
        assert (np.diff(drafts) > 0).all()                            # draft cost keeps rising
        plain = step_seconds(kind_of(path, {"kind": "none"}), batch, 1024)[1]
        speedups = [t * plain / sum(step_seconds(kinds[g], batch, 1024)) for g, t in zip(range(1, 7), tokens)]
        assert 1 <= int(np.argmax(speedups)) + 1 <= 4                 # the best MTP depth is small


@pytest.mark.parametrize("name", ["eagle3_llama31_8b_h100", "mtp_deepseek_v3_h200_ep8"])
def test_step_speedup_falls_with_batch(name):
    from scenarios.speculation.drafter_costs import replica_kind as kind_of, step_seconds
    path = FOLDER / f"{name}.yaml"
    kind, plain = kind_of(path), kind_of(path, {"kind": "none"})
    tokens = 1 + kind.acceptance.expected_accepted()
    speedup = [tokens * step_seconds(plain, b, 1024)[1] / sum(step_seconds(kind, b, 1024)) for b in (1, 128)]
    assert speedup[1] < speedup[0]


def test_per_request_draft_lengths_price_like_the_uniform_layout_when_they_agree():
    """A control policy's per-request counts (simulator.cost.proposer.draft_counts) equal the fixed layout at the
    same depth when every request drafts the same number of tokens, and cost less when some draft fewer."""
    kind = replica_kind(scenario(cluster=LLAMA, drafter=EAGLE3))
    proposer, d = kind.cost.proposer, kind.drafter.cost
    ctx = np.full(8, 480)
    for g in (1, 2, 3):
        uniform = proposer.with_depth(g).draft(d, g + 1, 0, 0, 0, 8, int(ctx.sum()))
        np.testing.assert_allclose(proposer.draft_counts(d, np.full(8, g), ctx, 0, 0, 0), uniform, rtol=1e-12)
    mixed = proposer.draft_counts(d, np.array([3, 3, 3, 3, 1, 1, 0, 0]), ctx, 0, 0, 0)
    assert mixed[0] < proposer.draft_counts(d, np.full(8, 3), ctx, 0, 0, 0)[0]


def test_disaggregated_hand_off_ships_the_mtp_modules_kv_too():
    """Each request's KV crosses from the prefill to the decode node with its MTP layer: 61 + 1 MLA latents
    (512 + 64 bf16 elements) per prompt token."""
    result = simulator.run(_small("mtp_deepseek_v3_h200_disagg"), base_dir=FOLDER)
    req = result.requests
    np.testing.assert_array_equal(req.kv_bytes / req.prompt_tokens, (61 + 1) * (512 + 64) * 2)


def test_dense_gqa_model_with_two_mtp_modules_cycles_them_and_holds_both():
    """A dense GQA model shipping two MTP modules (inline, Llama-3.1-8B's layer): each pass is its decoder layer
    + eh_proj + the norms + the shared LM head (the op graph), and memory holds both modules' weights and KV."""
    import dataclasses
    fields = {k: v for k, v in dataclasses.asdict(get_model("llama-3.1-8b")).items() if k not in ("name", "source")}
    # (a family of no architecture draftsim knows: no engine runs MTP on LlamaForCausalLM, and
    # profiles.engine_time.spec_architectures refuses it; this test is about the op graph, not the engines)
    model = {**fields, "name": "llama-mtp", "family": "dense-mtp", "num_mtp_modules": 2}
    # (gamma 4, a multiple of the 2 modules: vLLM from 0.8.0 refuses 3, profiles.engine_time.mtp_draft_length)
    kind = replica_kind(scenario(cluster={**LLAMA, "model": model}, drafter={"kind": "mtp", "gamma": 4},
                                 acceptance={"kind": "constant", "alpha": 0.7}))
    target, lat, par = kind.target, kind.latency, Parallelism(1, 1)
    spec = module_spec(target)
    assert (spec.num_layers, spec.is_moe, spec.is_mla) == (1, False, False)
    batch, context = 4, 4 * 16 * 20

    def one_pass(width, ctx):
        shape = StepShape(decode_seqs=batch, query_tokens_per_seq=width, decode_context_tokens=ctx)
        tokens = batch * width   # logits: one row per request in every pass of a chain
        return _price(lat, dense_ops(spec, tokens, batch, par, "bf16") + extra_ops(target, tokens) +
                      attention_ops(spec, shape, par, "bf16", "bf16"))
    hand = one_pass(5, context) + sum(one_pass(1, context + batch * 5 + j * batch) for j in range(3))
    np.testing.assert_allclose(kind.cost.exact_decode_step(batch, context)[:3], hand, rtol=1e-9)
    layer, routed = own_params(target)
    assert routed == 0 and layer == get_model("llama-3.1-8b").with_layers(2).param_count() - \
        get_model("llama-3.1-8b").with_layers(1).param_count() + 2 * 4096 * 4096 + 3 * 4096
    assert kind.drafter.weight_bytes_per_gpu == 2 * layer * 2.0
    assert kind.drafter.kv_bytes_per_token_per_gpu == 2 * (2 * 8 * 128 * 2)


@pytest.mark.parametrize("version,gamma,n_predict,refused", [
    ("0.7.3", 1, 1, False), ("0.7.3", 2, 1, True), ("0.7.3", 2, 2, False), ("0.7.3", 3, 2, True),
    ("0.9.0", 2, 1, False), ("0.9.0", 3, 2, True), ("0.9.0", 4, 2, False), ("0.33.0", 5, 3, True),
    ("0.33.0", 6, 3, False), ("0.33.0", 2, 3, False),
])
def test_vllm_mtp_draft_lengths_by_release_worked_by_hand(version, gamma, n_predict, refused):
    """vLLM 0.7.3 (V0 DeepSeek MTP) runs at most n_predict = num_nextn_predict_layers MTP tokens a step; from 0.8.0
    more must be a multiple of n_predict, the modules cycled (vllm/config.py, vllm/config/speculative.py
    SpeculativeConfig: profiles.engine_time.mtp_draft_length)."""
    from profiles.engine_time.mtp_draft_length import vllm_mtp_gamma_refusal
    why = vllm_mtp_gamma_refusal(version, gamma, n_predict)
    assert (why is not None) == refused, why
    if refused:
        assert f"vllm {version}" in why and "\n" not in why and "allowed:" in why


def test_mtp_beyond_n_predict_on_vllm_0_7_3_is_refused_in_a_run():
    """DeepSeek-V3 ships one MTP module: vLLM 0.7.3 raises for num_speculative_tokens 2; SGLang (NextN as an EAGLE
    draft) and vLLM from 0.8.0 (the module reused) run it."""
    import simulator
    from simulator.errors import ScenarioError
    from sim_helpers import scenario
    base = {"cluster": {"hardware": "h200", "model": "deepseek-v3", "dtype": "fp8", "kv_dtype": "fp8",
                        "parallelism": {"tp": 8}, "engine": {"framework": "vllm", "version": "0.7.3"}},
            "drafter": {"kind": "mtp", "gamma": 2}, "workload": {"num_requests": 3}}
    with pytest.raises(ScenarioError) as err:
        simulator.run(scenario(**base))
    assert err.value.field == "drafter.gamma" and "vllm 0.7.3" in str(err.value)
