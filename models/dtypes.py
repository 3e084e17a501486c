"""Dtypes of weights, activations and the KV cache: bytes per element (block scales included), which dtype a
KV cache takes by default, and the activations' width (re-exported by models.spec)."""
from __future__ import annotations

# Bytes per element of each supported dtype. `fp8_block`: fp8 with per-block scales (DeepSeek-V3 style,
# 128×128 weight blocks; the scales' bytes are below 0.01 % and not counted).
# FP4 formats count their block scales. NVFP4 = 4-bit E2M1 values + one FP8 E4M3 scale per 16 values + one FP32
# scale per tensor (NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", developer
# blog 2025; modelopt checkpoints' hf_quant_config.json `group_size: 16`): 0.5 + 1/16 bytes per value, the
# per-tensor 4 bytes not counted (< 1e-6 of any catalog model's weights). MXFP4 = E2M1 values + one E8M0 scale
# per 32 values (OCP Microscaling Formats (MX) Specification v1.0, 2023, MXFP4: k = 32): 0.5 + 1/32 bytes.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "fp8_block": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nvfp4": 0.5 + 1.0 / 16.0,
    "mxfp4": 0.5 + 1.0 / 32.0,
}
# Weight dtypes that are weight-only quantization: 16-bit activations and math, narrow weights in memory
# (int4: GPTQ/AWQ checkpoints run by Marlin-style kernels; mxfp4: below).
WEIGHT_ONLY_DTYPES = frozenset({"int4", "mxfp4"})
# Weight dtypes that quantize only the routed experts, every other weight staying 16-bit: MXFP4 is the format of
# the gpt-oss checkpoints, and vLLM's `Mxfp4Config.get_quant_method` (vllm/model_executor/layers/quantization/
# mxfp4.py at commit 007d50058a06) gives linear layers `UnquantizedLinearMethod` and leaves attention unquantized; only
# `FusedMoE` layers get MXFP4 weights. Their default kernels are W4A16 (`get_supported_act_dtypes`: bf16): on
# Hopper OpenAI's Triton MXFP4 experts (FlashInfer's MXFP4 × BF16 with VLLM_USE_FLASHINFER_MOE_MXFP4_BF16), on
# Blackwell (SM100) FlashInfer's TRT-LLM MXFP4 × BF16 unless VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8 opts into MXFP8
# activations, elsewhere Marlin (`get_mxfp4_backend`); `get_min_capability` 80 (Ampere). So mxfp4 is weight-only
# on every GPU, not W4A4: it needs no FP4 tensor cores.
EXPERT_ONLY_DTYPES = frozenset({"mxfp4"})
# Dtypes a model's weights can be served in (cluster.dtype; int8 is a byte width here, no serving format), in the
# order the allowed ones are listed in errors.
WEIGHT_DTYPES = ("fp32", "bf16", "fp16", "fp8", "fp8_block", "int4", "nvfp4", "mxfp4")
# Dtypes a KV cache can be stored in (vLLM --kv-cache-dtype: auto = the model's 16-bit dtype, fp8, nvfp4 —
# vllm/v1/kv_cache_interface.py KVQuantMode.NVFP4: "packed fp4 data + fp8 block scales", one scale per 16).
KV_DTYPES = ("fp32", "bf16", "fp16", "fp8", "nvfp4")
# The unquantized ones: what "auto" keeps where nothing quantizes the KV cache (the model's dtype).
UNQUANTIZED_KV_DTYPES = ("fp32", "bf16", "fp16")
# Weight dtypes computed on FP4 tensor cores (Blackwell): both operands in 4 bits (W4A4).
FP4_DTYPES = frozenset({"nvfp4"})


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of `dtype`; ValueError naming the dtype when it is not one of DTYPE_BYTES."""
    try:
        return DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise ValueError(f"dtype {dtype!r} is not supported; allowed: {', '.join(DTYPE_BYTES)}") from None


def dense_weight_dtype(dtype: str) -> str:
    """The dtype of the weights outside the routed experts when the model is served in `dtype`: bf16 under an
    EXPERT_ONLY_DTYPES format, `dtype` itself otherwise."""
    return "bf16" if dtype in EXPERT_ONLY_DTYPES else dtype


def vocab_weight_dtype(dtype: str) -> str:
    """The dtype of the input embedding and the LM head when the model is served in `dtype`: `dtype` itself for a
    16- or 32-bit format, bf16 under every quantized one. Engines quantize the decoder's matmuls only: vLLM's
    `Fp8Config.get_quant_method` (vllm/model_executor/layers/quantization/fp8.py at commit 0071b24) gives a quant
    method to LinearBase, FusedMoE and Attention layers and None to anything else, so ParallelLMHead and
    VocabParallelEmbedding (not LinearBase) load unquantized; Mxfp4Config quantizes FusedMoE layers alone
    (`dense_weight_dtype`). Taken for every engine and quantized dtype (int8, int4, fp8, fp8_block, nvfp4, mxfp4)."""
    return dtype if dtype_bytes(dtype) >= 2.0 else "bf16"


def kv_cache_dtype(dtype: str, kv_dtype: str | None = None, auto: str | None = None) -> str:
    """The KV cache's dtype, the one rule every caller takes: `kv_dtype` when given (cluster.kv_dtype, plan
    kv_dtype, estimate --kv-dtype), else `auto`, the quantized KV dtype the deployment's engine release takes from
    the checkpoint's declaration (its --kv-cache-dtype auto: profiles.engine_time.kv_cache_auto.auto_kv_dtype,
    which simulator.cluster.factory.resolve_kv_dtype passes), else the model's 16-bit dtype: the weights' own
    where they are a 16/32-bit KV format, bf16 under every quantized format (the activations' dtype of fp8,
    fp8_block, nvfp4, int4 and mxfp4 checkpoints, which vLLM's and SGLang's "auto" keeps: an fp8 checkpoint that
    declares no KV quantization runs a bf16 KV cache)."""
    for given, name in ((kv_dtype, "kv_dtype"), (auto, "auto")):
        if given is not None:
            if given not in KV_DTYPES:
                raise ValueError(f"{name} {given!r} is not supported; allowed: {', '.join(KV_DTYPES)}")
            return given
    return dtype if dtype in UNQUANTIZED_KV_DTYPES else "bf16"


def activation_bytes(dtype: str) -> float:
    """Bytes per activation element when weights are stored in `dtype`.

    Approximation: fp32 models run fp32 activations; every other dtype (including the weight-only or
    W8A8 quantized ones) keeps 16-bit activations between kernels, as vLLM and TensorRT-LLM do.
    """
    return 4.0 if dtype_bytes(dtype) == 4.0 else 2.0
