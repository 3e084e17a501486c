"""Hybrid models (gated DeltaNet, Mamba-1/2 beside softmax attention): layouts read from their config.json,
KV and recurrent-state bytes and KV capacity against hand computations, recurrent op FLOPs and bytes by hand,
state copies under speculation, and the one-line refusals (no layer-type list, FP4 without FP4 tensor cores)."""
from __future__ import annotations

import copy
import math
import dataclasses
import json
from pathlib import Path

import pytest

from contract import assert_one_line, run_cli
from models import get_model
from models.hf_config import UnsupportedModelError, load_hf_config, spec_from_hf_config
from models.mixers import state_copies
from models.opgraph import attention_ops, dense_ops
from models.opgraph_hybrid import state_step_ops
from models.ops import CONV1D, GDN_DECODE, GDN_PREFILL, GEMM, SSM_DECODE
from models.step import Parallelism, StepShape
from profiles.hardware import get_hardware
from sim_helpers import scenario
from simulator.cluster.replica_memory import hybrid_layout, kv_capacity_tokens, state_bytes_per_request
from simulator.cluster.vllm_memory import ProfileRun
from paths import DATA

CONFIGS = DATA / "hf_configs"
GIB = 1024 ** 3


def config(folder: str) -> dict:
    return json.loads((CONFIGS / folder / "config.json").read_text())


def test_layouts_are_read_from_the_configs():
    qn = load_hf_config(CONFIGS / "Qwen3-Next-80B-A3B-Instruct" / "config.json")
    assert qn.layer_types[3::4] == ("full_attention",) * 12 and qn.layer_types.count("linear_attention") == 36
    assert qn.num_moe_layers == 48 and qn.num_shared_experts == 1 and qn.shared_expert_gate and qn.attn_output_gate
    nh = load_hf_config(CONFIGS / "Nemotron-H-56B-Base-8K" / "config.json")
    pattern = config("Nemotron-H-56B-Base-8K")["hybrid_override_pattern"]
    assert (nh.mixer_layers("mamba"), nh.mixer_layers("full_attention"), nh.num_dense_layers) == \
        (pattern.count("M"), pattern.count("*"), pattern.count("-"))
    assert nh.num_layers == 118 and not nh.gated_mlp and nh.mamba_version == 2 and nh.mamba_inner_size == 16384
    jamba = load_hf_config(CONFIGS / "Jamba-1.5-Mini" / "config.json")
    assert [i for i, t in enumerate(jamba.layer_types) if t == "full_attention"] == [4, 12, 20, 28]
    assert [i for i, f in enumerate(jamba.ffn_types) if f == "moe"] == list(range(1, 32, 2))
    assert jamba.mamba_version == 1 and jamba.mamba_inner_size == 8192 and jamba.mamba_dt_rank == 256
    nano = load_hf_config(CONFIGS / "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16" / "config.json")
    assert nano.ssm_state_dtype == "fp32" and nano.shared_expert_width == 3712 and nano.router_bias


@pytest.mark.parametrize("folder,keys", [
    ("Qwen3-Next-80B-A3B-Instruct", ("layer_types", "full_attention_interval")),
    ("Nemotron-H-56B-Base-8K", ("hybrid_override_pattern",)),
    ("Jamba-1.5-Mini", ("attn_layer_period",)),
])
def test_a_hybrid_config_without_its_layer_types_is_refused_naming_the_field(folder, keys, tmp_path):
    raw = config(folder)
    for key in keys:
        raw.pop(key)
    with pytest.raises(UnsupportedModelError, match=keys[0]):
        spec_from_hf_config(raw, "x")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    code, err, out = run_cli(tmp_path, scenario(cluster={"model": str(path)}))
    assert code == 2 and not out.exists()
    assert_one_line(err, "cluster.model")
    assert keys[0] in err


def test_kv_and_state_bytes_by_hand():
    qn = get_model("qwen3-next-80b-a3b")
    # KV: 12 full-attention layers × (K and V) × 2 KV heads × 256 × 2 bytes; the 36 DeltaNet layers hold none.
    assert qn.kv_bytes_per_token() == 12 * 2 * 2 * 256 * 2
    # State per DeltaNet layer: conv (2·16·128 + 32·128 = 8192 channels) × (4 − 1) + 32 heads × 128 × 128.
    per_layer = (8192 * 3 + 32 * 128 * 128) * 2
    assert qn.state_bytes_per_request_per_gpu(Parallelism()) == 36 * per_layer
    # TP 4: heads and conv channels split; one replicated KV head per rank (2 KV heads < 4 ranks).
    assert qn.state_bytes_per_request_per_gpu(Parallelism(tp=4)) == 36 * per_layer / 4
    assert qn.kv_bytes_per_token_per_gpu(Parallelism(tp=4)) == 12 * 2 * 1 * 256 * 2
    # PP 2: each stage holds 6 attention and 18 DeltaNet layers.
    assert qn.kv_bytes_per_token_per_gpu(Parallelism(pp=2)) == 6 * 2 * 2 * 256 * 2
    assert qn.state_bytes_per_request_per_gpu(Parallelism(pp=2)) == 18 * per_layer
    # Nemotron-H-56B, Mamba-2: conv (16384 + 2·8·256) × 3 + 256 heads × 64 × 256, 54 Mamba layers.
    nh = get_model("nemotron-h-56b")
    assert nh.state_bytes_per_request_per_gpu(Parallelism()) == 54 * ((16384 + 2 * 8 * 256) * 3 + 256 * 64 * 256) * 2
    assert nh.kv_bytes_per_token() == 10 * 2 * 8 * 128 * 2
    # Jamba, Mamba-1: conv 8192 × 3 + state 8192 × 16, 28 Mamba layers.
    jamba = get_model("jamba-1.5-mini")
    assert jamba.state_bytes_per_request_per_gpu(Parallelism()) == 28 * (8192 * 3 + 8192 * 16) * 2
    # Nemotron-3-Nano keeps its SSM state in fp32 (config mamba_ssm_cache_dtype), the conv state in bf16.
    nano = get_model("nemotron-3-nano-30b-a3b")
    assert nano.state_bytes_per_request_per_gpu(Parallelism()) == 23 * ((4096 + 2 * 8 * 128) * 3 * 2 + 64 * 64 * 128 * 4)


def test_state_copies_under_speculation():
    qn = get_model("qwen3-next-80b-a3b")
    assert state_copies("vllm", 0) == state_copies("sglang", 0) == 1
    assert state_copies("vllm", 3) == 4          # vLLM: 1 + num_speculative_blocks
    assert state_copies("sglang", 3) == 5        # SGLang: persistent slot + one state per verified token
    one = qn.state_bytes_per_request_per_gpu(Parallelism())
    conv, temporal = 36 * 8192 * 3 * 2, 36 * 32 * 128 * 128 * 2
    assert one == conv + temporal
    # γ = 3 under vLLM: the conv window keeps the 3 draft positions, 4 temporal states.
    assert state_bytes_per_request(qn, Parallelism(), "bf16", "vllm", 3) == 36 * 8192 * 6 * 2 + 4 * temporal


def all_attention_twin(spec):
    """The same model with every layer full softmax attention (the comparison of the README)."""
    return dataclasses.replace(spec, name=spec.name + "-all-attention", layer_types=("full_attention",) * spec.num_layers,
                               ffn_types=tuple(f if f != "none" else "dense" for f in spec.ffn_types))


def test_kv_capacity_against_an_all_attention_twin_by_hand():
    """Qwen3-Next-80B-A3B on 4 × H100 (bf16, gpu_memory_utilization 0.9) against the same model with all 48
    layers full attention, every number by hand: vLLM V1's unified pages (simulator.core.kv.hybrid_state)."""
    hw, par, qn = get_hardware("h100-sxm"), Parallelism(tp=4), get_model("qwen3-next-80b-a3b")
    free = 80e9 * 0.9 - qn.param_count() * 2 / 4
    attn_token = 2 * 1 * 256 * 2                    # one replicated KV head of 256 per rank, K and V, bf16
    state_page = (2048 * 3 + 8 * 128 * 128) * 2     # one DeltaNet layer's conv + temporal state per rank
    block_tokens = 16 * -(-state_page // (16 * attn_token))
    assert block_tokens == 272                      # vLLM: "Setting attention block size to 272 tokens"
    block_bytes = 12 * block_tokens * attn_token    # group size 12 (12 attention, 36 DeltaNet layers)
    layout = hybrid_layout(hw, qn, par, "bf16", "bf16", 0.9, None, "vllm", 0)
    assert (layout.group_size, layout.attention_groups, layout.state_groups) == (12, 1, 3)
    assert layout.total_blocks == int(free // block_bytes)
    assert layout.kv_tokens == layout.total_blocks * 272
    # a 2,000-token request: ceil(2000 / 272) = 8 attention blocks + 3 state blocks
    assert layout.max_requests(2000) == layout.total_blocks // 11
    # the README's row: 8,192-token requests, 31 + 3 blocks each, against the twin's 8,192 tokens each
    assert layout.total_blocks == 9622 and layout.max_requests(8192) == 9622 // 34 == 283
    assert kv_capacity_tokens(hw, all_attention_twin(qn), par, "bf16", 0.9) // 8192 == 80
    twin = all_attention_twin(qn)
    twin_free = 80e9 * 0.9 - twin.param_count() * 2 / 4
    twin_tokens = kv_capacity_tokens(hw, twin, par, "bf16", 0.9)
    assert twin_tokens == int(twin_free // (48 * attn_token))
    assert layout.max_requests(2000) > 2.5 * (twin_tokens // 2000)
    # speculating γ = 3 under vLLM: 4 temporal states per request, the conv window 3 columns longer
    spec = hybrid_layout(hw, qn, par, "bf16", "bf16", 0.9, None, "vllm", 3)
    assert spec.state_blocks_per_request == 3 * 4
    assert spec.block_tokens == 16 * -(-((2048 * 6 + 8 * 128 * 128) * 2) // (16 * attn_token))


def test_recurrent_ops_by_hand():
    qn = get_model("qwen3-next-80b-a3b")
    decode = StepShape(decode_seqs=8, query_tokens_per_seq=3, decode_context_tokens=8 * 1000)
    ops = {op.name: op for op in state_step_ops(qn, decode, Parallelism(tp=2))}
    core = ops["gdn_recurrent_decode"]
    assert core.kind == GDN_DECODE and core.count == 36
    heads, dk, dv = 16, 128, 128                                  # 32 value heads over TP 2
    assert core.flops == 8 * 3 * 6 * heads * dk * dv
    # the state is read once per request and written after each of the 3 query tokens
    io = 8 * 3 * heads * (2 * dk + 2 * dv + 2) * 2
    assert core.bytes == io + 8 * (1 + 3) * heads * dk * dv * 2
    conv = ops["gdn_conv1d_decode"]
    assert conv.kind == CONV1D and conv.flops == 8 * 3 * 2 * 4 * 4096   # 8192 conv channels / 2, kernel 4
    prefill = StepShape(prefill_tokens=640, prefill_seqs=2, prefill_attn_pairs=2 * 320 * 321 // 2)
    ops = {op.name: op for op in state_step_ops(qn, prefill, Parallelism())}
    chunked = ops["gdn_chunk_prefill"]
    assert chunked.kind == GDN_PREFILL and chunked.flops == 640 * 2 * 32 * (3 * 64 * 128 + 2 * 64 * 128 + 3 * 128 * 128)
    # Nemotron-H: the Mamba-2 state update, 2·2·N·P + N·P FLOPs per head and token.
    nh = get_model("nemotron-h-56b")
    ops = {op.name: op for op in state_step_ops(nh, StepShape(decode_seqs=4, decode_context_tokens=400), Parallelism())}
    assert ops["mamba_state_update"].kind == SSM_DECODE
    assert ops["mamba_state_update"].flops == 4 * 5 * 256 * 256 * 64


def test_attention_ops_cover_only_the_attention_layers():
    qn = get_model("qwen3-next-80b-a3b")
    shape = StepShape(decode_seqs=4, decode_context_tokens=4 * 2000)
    attn = [op for op in attention_ops(qn, shape, Parallelism()) if op.kind == "attn_decode"]
    assert [op.count for op in attn] == [12]
    gemms = {op.name: op for op in dense_ops(qn, 4, 4, Parallelism()) if op.kind == GEMM}
    assert gemms["qkv_proj"].count == 12 and gemms["qkv_proj"].dim("n") == (16 + 16 + 2 * 2) * 256   # q, gate, k, v
    assert gemms["gdn_in_proj_qkvz"].count == 36 and gemms["moe_gate_up"].count == 48


def test_fp4_on_hopper_is_one_line_naming_the_field(tmp_path):
    code, err, out = run_cli(tmp_path, scenario(cluster={"hardware": "h100-sxm", "dtype": "nvfp4"}))
    assert code == 2 and not out.exists()
    assert_one_line(err, "cluster.dtype")
    assert "FP4 tensor cores" in err and "h100-sxm" in err
    code, err, _ = run_cli(tmp_path, scenario(cluster={"hardware": "h200", "dtype": "mxfp4", "model": "llama-3.1-8b"}))
    assert code == 2   # mxfp4 quantizes routed experts only (models.dtypes.EXPERT_ONLY_DTYPES): a dense model has none
    assert_one_line(err, "cluster.dtype")
    assert "routed experts" in err
    code, err, _ = run_cli(tmp_path, scenario(cluster={"hardware": "h100-sxm", "kv_dtype": "nvfp4"}))
    assert code == 2
    assert_one_line(err, "cluster.kv_dtype")


def test_a_hybrid_runs_end_to_end_with_state_blocks_per_request(tmp_path):
    data = scenario(cluster={"model": "qwen3-next-80b-a3b", "parallelism": {"tp": 4}},
                    workload={"num_requests": 60}, outputs={"steps": "full", "plots": False})
    code, err, out = run_cli(tmp_path, data)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    layout = hybrid_layout(get_hardware("h100-sxm"), get_model("qwen3-next-80b-a3b"), Parallelism(tp=4), "bf16",
                           "bf16", 0.9, None, "vllm", 0, profile=ProfileRun(None, 8192, 64))   # vLLM's start-up profile
    assert summary["kv_tokens_per_replica"] == layout.kv_tokens and summary["requests_finished"] == 60
    import pandas as pd
    steps = pd.read_parquet(out / "steps.parquet")
    decode_only = steps[(steps.prefill_seqs == 0) & (steps.decode_seqs > 0)]
    # every running request holds its 3 state blocks beside ceil(tokens / 272) attention blocks
    assert (decode_only.kv_blocks_used >= decode_only.decode_seqs * 4).all()
    assert (steps.kv_blocks_total == layout.total_blocks).all()
    code, err, _ = run_cli(tmp_path, merge_prefix(data), out_name="o2")
    assert code == 2
    assert_one_line(err, "cluster.kv_cache.prefix_caching")


def merge_prefix(data: dict) -> dict:
    out = copy.deepcopy(data)
    out["cluster"]["kv_cache"] = {"prefix_caching": True}
    return out


def test_with_layers_keeps_a_hybrid_prefix():
    qn = get_model("qwen3-next-80b-a3b")
    head = qn.with_layers(4)
    assert head.layer_types == ("linear_attention",) * 3 + ("full_attention",) and head.num_attention_layers == 1
    raw = copy.deepcopy(config("Qwen3-Next-80B-A3B-Instruct"))
    del raw["layer_types"]            # the interval alone gives the same layout (HF Qwen3NextConfig's default)
    assert spec_from_hf_config(raw, "x").layer_types == qn.layer_types


def test_with_layers_prefix_without_moe_layers_is_dense():
    """Jamba alternates dense and MoE FFNs from a dense first layer: its 1-layer prefix (a draft head, a
    layer-skipping draft) has no routed experts; a 2-layer prefix has its one MoE layer."""
    jamba = get_model("jamba-1.5-mini")
    one, two = jamba.with_layers(1), jamba.with_layers(2)
    assert one.ffn_types == ("dense",) and not one.is_moe and one.experts_per_token == 0
    assert two.ffn_types == ("dense", "moe") and two.is_moe and two.num_experts == jamba.num_experts
    assert two.num_moe_layers == 1 and one.param_count() < two.param_count()
    # the parameters outside the decoder layers (embeddings, LM head, final norm) are the same for both
    assert one.param_count() - one.decoder_param_count() == two.param_count() - two.decoder_param_count() \
        == jamba.param_count() - jamba.decoder_param_count()


@pytest.mark.parametrize("name,kv_heads,v_heads,kv_dtype,logged", [
    # vLLM's log lines "Setting attention block size to N tokens to ensure that attention page size is >= mamba
    # page size" for Qwen3.5 models (fp32 SSM state: their config's mamba_ssm_dtype), as users posted them:
    ("qwen3.5-9b", 4, 32, "bf16", 528),     # and 1056 with an fp8 KV cache (a plugin's README table)
    ("qwen3.5-9b", 4, 32, "fp8", 1056),
    ("qwen3.5-27b", 4, 48, "bf16", 784),    # kaitchup/Qwen3.5-27B-autoround-W4A16 on vLLM 0.19.1, TP 1
])
def test_the_attention_block_size_matches_vllm_logs(name, kv_heads, v_heads, kv_dtype, logged):
    """Only the page sizes of one attention and one DeltaNet layer enter the block size; the Qwen3.5 text
    configs (aiconfigurator-core model_configs): head_dim 256, 16 key heads, 128-wide key and value heads."""
    from models.load import spec_from_fields
    from simulator.core.kv.hybrid_state import hybrid_page_layout
    spec = spec_from_fields({"hidden_size": 4096, "num_layers": 4, "num_heads": 16, "num_kv_heads": kv_heads,
                             "head_dim": 256, "intermediate_size": 8192, "vocab_size": 1000,
                             "layer_types": ["linear_attention"] * 3 + ["full_attention"],
                             "linear_num_key_heads": 16, "linear_num_value_heads": v_heads, "linear_key_head_dim": 128,
                             "linear_value_head_dim": 128, "linear_conv_kernel": 4, "ssm_state_dtype": "fp32"}, name)
    assert hybrid_page_layout(spec, Parallelism(), "bf16", kv_dtype, 1e10).block_tokens == logged


def test_speculating_with_mtp_holds_one_state_per_draft_position():
    """Qwen3-Next with its MTP module, γ = 2 under vLLM: 1 + 2 temporal states per DeltaNet group; the conv
    window keeps the two draft positions (their pages set the block size)."""
    from pathlib import Path as _Path
    from simulator.cluster.build import pool_kind
    from simulator.config.scenario import parse_scenario
    data = scenario(cluster={"model": "qwen3-next-80b-a3b", "parallelism": {"tp": 4}},
                    drafter={"kind": "mtp", "gamma": 2})
    kind = pool_kind(parse_scenario(data), None, "cluster", 0, _Path("."))
    layout = kind.hybrid_layout
    assert (layout.state_groups, layout.state_copies, layout.state_blocks_per_request) == (3, 3, 9)
    attn_token = 2 * 1 * 256 * 2 + kind.drafter.kv_bytes_per_token_per_gpu / 12
    state_page = (2048 * (3 + 2) + 8 * 128 * 128) * 2
    assert layout.block_tokens == 16 * math.ceil(state_page / (16 * attn_token))
    assert kind.state_bytes_per_request == 36 * (2048 * 5 * 2 + 3 * 8 * 128 * 128 * 2)
