"""Model catalog and ModelSpec derived sizes: published totals, KV bytes, an independent tensor-by-tensor
count of each checkpoint's parameters, FLOPs per token, errors."""
from __future__ import annotations

import math

import pytest

import models
from models import UnknownNameError, get_model, list_models
from models.catalog import _load_file
from models.spec import ModelSpec, dtype_bytes, validate_parallelism
from models.step import Parallelism

# The models, plus qwama-0.5b: the Llama-3 draft of the vLLM speculation-under-load reproduction, and
# smollm2-135m: the cross-vocabulary drafter of the measured TLI traces (profiles/data/acceptance); llama-3.2-1b/3b:
# the Llama-3-vocabulary draft models of vLLM's draft_model studies (SpecDecode-Bench).
CATALOG = ["deepseek-v3", "gpt-oss-120b", "gpt-oss-20b", "jamba-1.5-mini", "llama-2-13b", "llama-2-70b", "llama-2-7b",
           "llama-3-70b", "llama-3-8b", "llama-3.1-405b", "llama-3.1-70b", "llama-3.1-8b", "llama-3.2-1b", "llama-3.2-3b",
           "llama-3.3-70b", "llama-68m",
           "mixtral-8x7b", "nemotron-3-nano-30b-a3b", "nemotron-h-56b", "qwama-0.5b", "qwen2.5-72b", "qwen2.5-7b",
           "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "qwen3-235b-a22b", "qwen3-30b-a3b", "qwen3-32b", "qwen3-8b",
           "qwen3-next-80b-a3b", "smollm2-135m", "vicuna-13b", "vicuna-33b", "vicuna-7b"]


def test_catalog_lists_exactly_the_expected_models():
    assert list_models() == CATALOG
    for name in CATALOG:
        spec = get_model(name)
        assert spec.name == name and spec.source.startswith("https://huggingface.co/")


def test_lookup_is_case_insensitive_and_unknown_names_raise():
    assert get_model("Llama-3-8B") is get_model("llama-3-8b")
    with pytest.raises(UnknownNameError, match="unknown model 'llama-5'.*llama-2-7b"):
        get_model("llama-5")
    with pytest.raises(ValueError):  # UnknownNameError is a ValueError (CLI exit 2)
        get_model("gpt-2")


# Published parameter totals (model cards / papers): (name, total, active, relative tolerance).
PUBLISHED = [
    ("llama-2-7b", 6.74e9, None, 0.005),
    ("llama-2-13b", 13.0e9, None, 0.01),
    ("llama-2-70b", 69.0e9, None, 0.01),
    ("llama-3-8b", 8.03e9, None, 0.005),
    ("llama-3-70b", 70.6e9, None, 0.005),
    ("llama-3.1-8b", 8.03e9, None, 0.005),
    ("llama-3.1-70b", 70.6e9, None, 0.005),
    ("llama-3.3-70b", 70.6e9, None, 0.005),
    # Meta's Llama 3.2 model card: 1.23B and 3.21B parameters (tied embeddings counted once).
    ("llama-3.2-1b", 1.23e9, None, 0.01),
    ("llama-3.2-3b", 3.21e9, None, 0.01),
    ("qwen3-32b", 32.8e9, None, 0.01),
    ("vicuna-7b", 6.74e9, None, 0.005),
    ("vicuna-33b", 32.5e9, None, 0.01),
    ("qwen2.5-coder-0.5b", 0.49e9, None, 0.02),
    ("qwen2.5-coder-1.5b", 1.54e9, None, 0.005),
    ("llama-68m", 68e6, None, 0.01),
    ("mixtral-8x7b", 46.7e9, 12.9e9, 0.005),
    ("qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02),
    ("deepseek-v3", 671e9, 37e9, 0.02),
    # Model cards: Llama-3.1-405B 405B (the Hub's safetensors total 405.9B); Qwen2.5 "Number of Parameters"
    # 7.61B / 72.7B; Qwen3-8B 8.2B; Qwen3-235B-A22B 235B total, 22B activated; gpt-oss 20.91B / 116.83B
    # total, 3.61B / 5.13B active (OpenAI's gpt-oss model card, Table 1; its active counts exclude the input
# embedding, which ModelSpec.active_param_count includes: added back here).
    ("llama-3.1-405b", 405.9e9, None, 0.005),
    ("qwen2.5-7b", 7.61e9, None, 0.005),
    ("qwen2.5-72b", 72.7e9, None, 0.005),
    ("qwen3-8b", 8.2e9, None, 0.01),
    ("qwen3-235b-a22b", 235e9, 22e9, 0.01),
    ("gpt-oss-20b", 20.91e9, 3.61e9 + 201088 * 2880, 0.005),
    ("gpt-oss-120b", 116.83e9, 5.13e9 + 201088 * 2880, 0.005),
    # Hybrids: Jamba-1.5-Mini 52B total / 12B active (AI21's model card); Nemotron-H-56B (arXiv 2504.03624);
    # Nemotron-3-Nano-30B-A3B 31.6B total, 3.6B active including embeddings (NVIDIA's model card).
    ("jamba-1.5-mini", 52e9, 12e9, 0.01),
    ("nemotron-h-56b", 56e9, None, 0.01),
    ("nemotron-3-nano-30b-a3b", 31.6e9, 3.6e9, 0.01),
]


@pytest.mark.parametrize("name,total,active,tol", PUBLISHED)
def test_param_counts_match_published_totals(name, total, active, tol):
    spec = get_model(name)
    assert spec.param_count() == pytest.approx(total, rel=tol)
    if active is None:
        assert not spec.is_moe and spec.active_param_count() == spec.param_count()
    else:
        assert spec.is_moe and spec.active_param_count() == pytest.approx(active, rel=tol)


def _attention_tensors(spec: ModelSpec):
    h, nh, kvh, hd = spec.hidden_size, spec.num_heads, spec.num_kv_heads, spec.head_dim
    if spec.is_mla:
        qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        yield (spec.q_lora_rank, h)                          # q_a_proj
        yield (spec.q_lora_rank,)                            # q_a_layernorm
        yield (nh * qk, spec.q_lora_rank)                    # q_b_proj
        yield (spec.kv_lora_rank + spec.qk_rope_head_dim, h)  # kv_a_proj_with_mqa
        yield (spec.kv_lora_rank,)                           # kv_a_layernorm
        yield (nh * (spec.qk_nope_head_dim + spec.v_head_dim), spec.kv_lora_rank)  # kv_b_proj
        yield (h, nh * spec.v_head_dim)                      # o_proj
        return
    q_rows = nh * hd * (2 if spec.attn_output_gate else 1)   # Qwen3-Next: query and gate in one q_proj
    for rows in (q_rows, kvh * hd, kvh * hd):                # q, k, v
        yield (rows, h)
        if spec.qkv_bias:
            yield (rows,)
    if spec.qk_norm:
        yield (hd,)
        yield (hd,)
    yield (h, nh * hd)                                       # o_proj
    if spec.attention_output_bias:
        yield (h,)                                           # o_proj bias (gpt-oss)
    if spec.attention_sinks:
        yield (nh,)                                          # sinks (gpt-oss)


def _state_mixer_tensors(spec: ModelSpec, kind: str):
    """HF Qwen3NextGatedDeltaNet, NemotronHMamba2Mixer and JambaMambaMixer, tensor by tensor."""
    h = spec.hidden_size
    if kind == "linear_attention":
        nk, nv, dk, dv = (spec.linear_num_key_heads, spec.linear_num_value_heads, spec.linear_key_head_dim,
                          spec.linear_value_head_dim)
        yield (2 * nk * dk + 2 * nv * dv, h)                 # in_proj_qkvz
        yield (2 * nv, h)                                    # in_proj_ba
        yield (2 * nk * dk + nv * dv, 1, spec.linear_conv_kernel)  # conv1d.weight (no bias)
        yield (nv,)                                          # dt_bias
        yield (nv,)                                          # A_log
        yield (dv,)                                          # norm.weight
        yield (h, nv * dv)                                   # out_proj
        return
    d, n, k = spec.mamba_inner_size, spec.ssm_state_size, spec.mamba_conv_kernel
    if spec.mamba_version == 2:
        heads, groups = spec.mamba_num_heads, spec.mamba_groups
        conv = d + 2 * groups * n
        yield (2 * d + 2 * groups * n + heads, h)            # in_proj
        yield (conv, 1, k)                                   # conv1d.weight
        yield (conv,)                                        # conv1d.bias
        for _ in ("dt_bias", "A_log", "D"):
            yield (heads,)
        yield (d,)                                           # norm.weight
        yield (h, d)                                         # out_proj
        return
    r = spec.mamba_dt_rank
    yield (2 * d, h)                                         # in_proj
    yield (d, 1, k)                                          # conv1d.weight
    yield (d,)                                               # conv1d.bias
    yield (r + 2 * n, d)                                     # x_proj
    yield (d, r)                                             # dt_proj.weight
    yield (d,)                                               # dt_proj.bias
    yield (d, n)                                             # A_log
    yield (d,)                                               # D
    yield (h, d)                                             # out_proj
    if spec.mamba_inner_norms:
        yield (r,)                                           # dt_layernorm
        yield (n,)                                           # b_layernorm
        yield (n,)                                           # c_layernorm


def _ffn_tensors(spec: ModelSpec, kind: str):
    h = spec.hidden_size
    inputs = ("gate", "up") if spec.gated_mlp else ("up",)
    if kind == "moe":
        yield (spec.num_experts, h)                          # router
        if spec.router_bias:
            yield (spec.num_experts,)
        experts = [spec.moe_intermediate_size] * spec.num_experts
        if spec.num_shared_experts:
            experts.append(spec.num_shared_experts * (spec.shared_expert_intermediate_size or spec.moe_intermediate_size))
        for width in experts:
            for _ in inputs:
                yield (width, h)                             # gate, up
            yield (h, width)                                 # down
            if spec.expert_bias:
                yield (2 * width,)                           # gate_up_proj_bias row (gpt-oss)
                yield (h,)                                   # down_proj_bias row
        if spec.shared_expert_gate:
            yield (1, h)                                     # shared_expert_gate (Qwen3-Next)
    elif kind == "dense":
        for _ in inputs:
            yield (spec.intermediate_size, h)
        yield (h, spec.intermediate_size)


def checkpoint_tensor_shapes(spec: ModelSpec):
    """Shapes of every tensor in the Hugging Face checkpoint of `spec`'s architecture, listed one by one
    (an independent enumeration, not the closed form of ModelSpec)."""
    h = spec.hidden_size
    yield (spec.vocab_size, h)                                   # embed_tokens
    for layer in range(spec.num_layers):
        mixer = spec.layer_types[layer] if spec.layer_types else "full_attention"
        if spec.ffn_types:
            ffn = spec.ffn_types[layer]
        else:
            ffn = "moe" if spec.is_moe and layer >= spec.first_dense_layers else "dense"
        for part in (mixer, ffn):
            if part != "none":
                yield (h,)                                       # the part's pre-norm
        if mixer in ("full_attention", "sliding_attention"):
            yield from _attention_tensors(spec)
        elif mixer != "none":
            yield from _state_mixer_tensors(spec, mixer)
        yield from _ffn_tensors(spec, ffn)
    yield (h,)                                                   # final norm
    if not spec.tie_word_embeddings:
        yield (spec.vocab_size, h)                               # lm_head


@pytest.mark.parametrize("name", CATALOG)
def test_param_count_equals_tensor_by_tensor_count(name):
    spec = get_model(name)
    assert spec.param_count() == sum(math.prod(shape) for shape in checkpoint_tensor_shapes(spec))


def test_kv_bytes_per_token():
    assert get_model("llama-2-7b").kv_bytes_per_token() == 524_288
    assert get_model("llama-3-8b").kv_bytes_per_token() == 131_072
    assert get_model("llama-2-70b").kv_bytes_per_token("fp8") == 80 * 2 * 8 * 128
    # MLA caches the 512-wide latent plus the 64-wide RoPE key once per layer.
    assert get_model("deepseek-v3").kv_bytes_per_token() == 61 * (512 + 64) * 2
    assert get_model("llama-3-8b").kv_bytes_per_token("int4") == 131_072 / 4


def test_kv_bytes_per_gpu_splits_heads_and_layers():
    llama = get_model("llama-3-8b")  # 8 KV heads
    total = llama.kv_bytes_per_token()
    assert llama.kv_bytes_per_token_per_gpu(Parallelism(tp=2)) == total / 2
    assert llama.kv_bytes_per_token_per_gpu(Parallelism(tp=8)) == total / 8
    assert llama.kv_bytes_per_token_per_gpu(Parallelism(tp=16)) == total / 8   # 1 replicated head per rank
    assert llama.kv_bytes_per_token_per_gpu(Parallelism(pp=2)) == total / 2
    ds = get_model("deepseek-v3")  # latent replicated on every TP rank; ceil(61/2) = 31 layers per stage
    assert ds.kv_bytes_per_token_per_gpu(Parallelism(tp=8, pp=2)) == 31 * 576 * 2


def test_weight_bytes_and_dtypes():
    spec = get_model("llama-2-7b")
    assert spec.weight_bytes() == 2 * spec.param_count()
    assert spec.weight_bytes("fp32") == 4 * spec.param_count()
    vocab = 2 * spec.vocab_size * spec.hidden_size + spec.hidden_size   # embeddings, LM head, final norm: 16-bit
    assert spec.weight_bytes("int4") == (spec.param_count() - vocab) / 2 + 2 * vocab
    for bad in ("bf8", "float16", None):
        with pytest.raises(ValueError, match="dtype"):
            spec.weight_bytes(bad)
    assert set(models.DTYPE_BYTES) == {"fp32", "bf16", "fp16", "fp8", "fp8_block", "int8", "int4", "nvfp4", "mxfp4"}
    assert dtype_bytes("fp8") == 1.0


def test_fp4_block_scales_are_counted_in_the_weight_bytes():
    """NVFP4: 16 E2M1 values (8 bytes) share one E4M3 scale (1 byte) -> 9 bytes per 16 values; MXFP4: 32 values
    (16 bytes) share one E8M0 scale (1 byte) -> 17 bytes per 32 values (the formats' specifications)."""
    spec = get_model("llama-2-7b")
    vocab = 2 * spec.vocab_size * spec.hidden_size + spec.hidden_size   # 16-bit (test_quantized_checkpoints_...)
    assert spec.weight_bytes("nvfp4") == (spec.param_count() - vocab) * 9 / 16 + 2 * vocab
    # MXFP4 holds the routed experts only (gpt-oss checkpoints; vLLM's Mxfp4Config keeps the rest in bf16)
    oss = get_model("gpt-oss-120b")
    experts = 36 * 128 * 3 * 2880 * 2880     # layers × experts × (gate, up, down) of 2880 × 2880
    assert oss.routed_expert_param_count() == experts
    assert oss.weight_bytes("mxfp4") == experts * 17 / 32 + (oss.param_count() - experts) * 2
    # OpenAI's gpt-oss model card (Aug 2025, table 1): checkpoint sizes 60.8 GiB (120b) and 12.8 GiB (20b)
    assert oss.weight_bytes("mxfp4") / 2**30 == pytest.approx(60.8, rel=0.01)
    assert get_model("gpt-oss-20b").weight_bytes("mxfp4") / 2**30 == pytest.approx(12.8, rel=0.01)
    assert spec.weight_bytes("mxfp4") == spec.weight_bytes("bf16")   # a dense model has no experts to quantize
    # without an engine's reading of the checkpoint ("auto"): the model's 16-bit dtype, whatever the weights
    assert models.spec.kv_cache_dtype("nvfp4") == models.spec.kv_cache_dtype("fp8") == "bf16"
    assert models.spec.kv_cache_dtype("nvfp4", auto="fp8") == "fp8"   # modelopt NVFP4: kv_cache_quant_algo FP8
    assert models.spec.kv_cache_dtype("nvfp4", "bf16", auto="fp8") == "bf16"   # an explicit KV dtype wins
    assert models.spec.kv_cache_dtype("mxfp4") == "bf16"      # gpt-oss keeps a 16-bit KV cache
    assert models.spec.kv_cache_dtype("fp16") == "fp16"
    assert models.spec.kv_cache_dtype("bf16", "nvfp4") == "nvfp4"
    assert spec.kv_bytes_per_token("nvfp4") == spec.kv_bytes_per_token() * 9 / 32


@pytest.mark.parametrize("name", CATALOG)
def test_flops_per_token_is_two_per_active_matmul_weight(name):
    spec = get_model(name)
    f0 = spec.flops_per_token()
    # ≈ 2·active parameters: only the input embedding (a look-up) and norm/bias vectors do no matmul;
    # the embedding is a sizeable share only for the tiny draft model and for gpt-oss (a 201k vocabulary
    # beside 3.6B / 5.1B active weights).
    low = 0.6 if spec.param_count() < 1e9 else 0.8 if spec.family == "gpt-oss" else 0.9
    assert low < f0 / (2 * spec.active_param_count()) <= 1.0
    lookups = 0 if spec.tie_word_embeddings else spec.vocab_size * spec.hidden_size
    recurrent = spec.recurrent_flops_per_token()   # the state layers' update: no weights (models.mixers)
    assert (recurrent > 0) == spec.is_hybrid
    assert f0 - recurrent == pytest.approx(2 * (spec.active_param_count() - lookups), rel=1e-3)
    # Attention adds 2·(qk + v) FLOPs per head, softmax-attention layer and context token (a sliding-window
    # layer: per token of its window); linear-attention and Mamba layers add nothing per context token.
    per_layer = 2 * spec.num_heads * (spec.qk_head_dim + spec.attn_v_head_dim)
    swa = spec.sliding_window_layers
    attended = (spec.num_attention_layers - swa) * 1000 + swa * min(1000, spec.sliding_window)
    assert spec.flops_per_token(1000) - f0 == pytest.approx(per_layer * attended)
    with pytest.raises(ValueError, match="context_tokens"):
        spec.flops_per_token(-1)


def test_llama_2_7b_flops_per_token_by_hand():
    # 32 layers × (4·4096² attention + 3·4096·11008 MLP) + LM head 4096·32000, two FLOPs per weight.
    by_hand = 2 * (32 * (4 * 4096**2 + 3 * 4096 * 11008) + 4096 * 32000)
    assert get_model("llama-2-7b").flops_per_token() == by_hand


def test_moe_structure():
    ds = get_model("deepseek-v3")
    assert ds.is_moe and ds.is_mla and ds.num_moe_layers == 58 and ds.num_dense_layers == 3
    mix = get_model("mixtral-8x7b")
    assert mix.num_moe_layers == 32 and mix.num_dense_layers == 0 and not mix.is_mla
    assert not get_model("llama-2-7b").is_moe


def test_validate_parallelism_errors_name_the_field():
    spec = get_model("llama-2-7b")
    validate_parallelism(spec, Parallelism(tp=8, pp=4))
    with pytest.raises(ValueError, match="tp=3 must divide num_heads=32"):
        validate_parallelism(spec, Parallelism(tp=3))
    with pytest.raises(ValueError, match="pp=33 exceeds num_layers=32"):
        validate_parallelism(spec, Parallelism(pp=33))
    with pytest.raises(ValueError, match="tp and pp must be integers >= 1"):
        validate_parallelism(spec, Parallelism(tp=0))
    with pytest.raises(ValueError, match="num_kv_heads=2"):
        validate_parallelism(get_model("qwen2.5-coder-1.5b"), Parallelism(tp=3))  # 12 heads, 2 KV heads


def test_spec_validation():
    base = dict(name="x", family="f", hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16,
                intermediate_size=128, vocab_size=100)
    ModelSpec(**base)
    with pytest.raises(ValueError, match="hidden_size"):
        ModelSpec(**{**base, "hidden_size": 0})
    with pytest.raises(ValueError, match="multiple of num_kv_heads"):
        ModelSpec(**{**base, "num_kv_heads": 3})
    with pytest.raises(ValueError, match="experts_per_token"):
        ModelSpec(**{**base, "num_experts": 4, "experts_per_token": 5, "moe_intermediate_size": 8})


def test_catalog_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("m1:\n  family: f\n  hidden_sise: 5\n")
    with pytest.raises(ValueError, match="unknown fields \\['hidden_sise'\\]"):
        _load_file(bad)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ValueError, match="mapping"):
        _load_file(bad)


def test_quantized_checkpoints_keep_the_embeddings_and_lm_head_in_16_bit():
    """vLLM quantizes LinearBase / FusedMoE / Attention layers only (Fp8Config.get_quant_method,
    vllm/model_executor/layers/quantization/fp8.py at commit 0071b24): ParallelLMHead and the embedding load in
    16 bits. vLLM's FP8 doc logs it: Meta-Llama-3-8B-Instruct-FP8 'Loading model weights took 8.4596 GB' (GiB;
    docs/source/quantization/fp8.rst at commit fb487d7). Before, every weight counted 1 byte: 7.48 GiB (-11.6 %),
    and the LM head GEMM of every fp8 step read fp8 weights on the fp8 GEMM table."""
    from models.opgraph import dense_ops
    from models.step import Parallelism
    llama = get_model("llama-3-8b")
    assert llama.weight_bytes("fp8") / 2**30 == pytest.approx(8.4596, rel=0.002)
    assert models.dtypes.vocab_weight_dtype("fp8") == "bf16" == models.dtypes.vocab_weight_dtype("nvfp4")
    assert models.dtypes.vocab_weight_dtype("fp32") == "fp32" and models.dtypes.vocab_weight_dtype("fp16") == "fp16"
    qwen = get_model("qwen3-8b")
    head = next(op for op in dense_ops(qwen, 4, 4, Parallelism(), "fp8_block") if op.name == "lm_head")
    assert head.dim("vocab_16bit") == 1.0
    assert head.bytes == pytest.approx(2 * qwen.vocab_size * qwen.hidden_size + 2 * 4 * (qwen.vocab_size + qwen.hidden_size))
    plain = next(op for op in dense_ops(qwen, 4, 4, Parallelism(), "bf16") if op.name == "lm_head")
    assert plain.dim("vocab_16bit", 0.0) == 0.0 and plain.bytes == head.bytes   # same bytes, no flag


@pytest.mark.parametrize("source", ["measured", "roofline"])
def test_a_quantized_models_lm_head_is_priced_as_a_16_bit_gemm(source):
    """The flagged LM head of an fp8 step costs what the same GEMM costs in a bf16 step, on the measured tables
    (their bf16 GEMM table) and on the roofline (its bf16 rate)."""
    from models.opgraph import dense_ops
    from profiles.select import LatencySourceConfig, select_latency
    qwen = get_model("qwen3-8b")
    for tokens in (4, 2048):
        fp8_head = next(op for op in dense_ops(qwen, tokens, tokens, Parallelism(), "fp8") if op.name == "lm_head")
        bf16_head = next(op for op in dense_ops(qwen, tokens, tokens, Parallelism(), "bf16") if op.name == "lm_head")
        fp8 = select_latency("h100-sxm", "fp8", LatencySourceConfig(source=source))
        bf16 = select_latency("h100-sxm", "bf16", LatencySourceConfig(source=source))
        assert fp8.op_seconds(fp8_head) == pytest.approx(bf16.op_seconds(bf16_head), rel=1e-12)
