"""The KV cache's dtype each serving engine release runs when none is given: vLLM's and SGLang's
`--kv-cache-dtype auto` (their default) and TensorRT-LLM's `KvCacheConfig.dtype` "auto". Every engine's "auto" is
the model's 16-bit dtype unless the checkpoint's quantization config declares a quantized KV cache (models.
quant_config.checkpoint_kv: modelopt `kv_cache_quant_algo` / `kv_cache_scheme`, compressed-tensors
`kv_cache_scheme`, fp8 `kv_cache_quant_algo`) *and* the release takes that declaration. So an fp8 checkpoint that
declares nothing (DeepSeek-V3's block-FP8, llm-compressor's FP8-dynamic, vLLM's online `--quantization fp8`) keeps
a 16-bit KV cache under every engine's default: half the KV tokens of an fp8 one.

Read in each release's source (PyPI wheels; TensorRT-LLM in its repository):

- vLLM through 0.13.0: "auto" is the model's dtype (`GPUModelRunner.__init__`: `if cache_config.cache_dtype ==
  "auto": self.kv_cache_dtype = self.dtype`, vllm/v1/worker/gpu_model_runner.py, read 0.4.0 - 0.12.0; 0.13.0
  has no resolve_kv_cache_dtype_string); the checkpoint's KV scales are loaded only under an fp8 cache.
- vLLM from 0.14.0: `EngineArgs.create_engine_config` resolves "auto" with `resolve_kv_cache_dtype_string`
  (vllm/utils/torch_utils.py): a modelopt quant_method's `kv_cache_scheme` / `kv_cache_quant_algo` through
  MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP — {"fp8"} in 0.14.0 - 0.19.1 (an NVFP4 declaration falls back to "auto"
  with a warning), {"fp8", "nvfp4"} from 0.20.0. Other formats are not read there.
- vLLM from 0.15.0: `Attention.__init__` sets an fp8 cache for a compressed-tensors checkpoint with a
  `kv_cache_scheme` ("llm-compressor mdls need to set cache_dtype to "fp8" manually", vllm/attention/layer.py
  0.15.0, model_executor/layers/attention/attention.py later) — whatever `--kv-cache-dtype` says in 0.15.0 -
  0.20.2 (`FORCING`), only for "auto" from 0.22.0 ("Honor it only when the user did not explicitly pick a
  kv_cache_dtype; an explicit choice (e.g. bfloat16) must win", read 0.22.0 - 0.33.0).
- SGLang through 0.5.3rc0: "auto" is the model's dtype (`ModelRunner.init_memory_pool`: `if
  server_args.kv_cache_dtype == "auto": self.kv_cache_dtype = self.dtype`, srt/model_executor/model_runner.py,
  read 0.3.6 - 0.5.3rc0).
- SGLang from 0.5.3 (0.5.3rc2): "auto" is fp8 where the loaded quant config's `kv_cache_quant_algo` is "FP8" (the
  same test moved to srt/mem_cache/kv_cache_dtype.py `configure_kv_cache_dtype` by 0.5.23), else the model's
  dtype. The configs that carry it: ModelOptFp4Config (NVFP4 checkpoints) from 0.5.3, ModelOptFp8Config (the
  ModelOptQuantConfig base) from 0.5.4, Fp8Config (quant_method fp8) from 0.5.18 (not 0.5.15; 0.5.16 - 0.5.17 not
  read, taken as 0.5.18). No NVFP4 KV from a declaration; compressed-tensors' `kv_cache_scheme` is not read.
- TensorRT-LLM: the KV cache is fp8 where the checkpoint's quant config has `kv_cache_quant_algo` (QuantConfig
  .kv_cache_quant_algo; `get_cache_size_per_token`, _torch/pyexecutor/_util.py: 1 byte per element under
  `has_fp8_kv_cache()`, else 2). The 1.x PyTorch backend's `ModelLoader._update_from_hf_quant_config`
  (llmapi/llm_utils.py) takes it from modelopt's hf_quant_config.json / config.json (FP8, NVFP4) and from a
  compressed-tensors `kv_cache_scheme` (float 8-bit: FP8; models/quant_config_utils.py); `quant_method: fp8`
  (DeepSeek-V3's block FP8) sets none. The trtllm-build flow (< 1.0) bakes the KV dtype into the engine from the
  quantized checkpoint's config (examples/quantization/quantize.py `--kv_cache_dtype`, default None: no KV
  quantization; `KvCacheConfig.dtype is not supported by the TensorRT backend`).

A model without a checkpoint quantization config (a catalog model, or a 16-bit config.json served quantized) has
no declaration to read, so draftsim takes the checkpoint each engine's own quantization path produces
(`recipe_declaration`, a named approximation): NVFP4 weights come from NVIDIA's ModelOpt NVFP4 checkpoints, which
declare `kv_cache_quant_algo: FP8` (nvidia/DeepSeek-V3.1-NVFP4, nvidia/Qwen3-235B-A22B-NVFP4), under every engine;
FP8 weights under TensorRT-LLM come from its FP8 recipe, which quantizes the KV cache too ("# FP8 quantization.
python quantize.py --model_dir $MODEL_PATH --qformat fp8 --kv_cache_dtype fp8", examples/quantization/README.md),
and under vLLM and SGLang from their own fp8 quantization (`--quantization fp8`, llm-compressor FP8_DYNAMIC),
which declares no KV scheme: a catalog model with fp8 weights gets an fp8 KV cache under TensorRT-LLM and a 16-bit
one under vLLM and SGLang. fp8_block (DeepSeek-V3's format, quant_method fp8 without a KV declaration), int4 and
mxfp4 (gpt-oss) declare none: 16-bit everywhere.

Approximations, named: TensorRT-LLM's reading is that of the newest sources read (commits of unknown release),
taken for every release; vLLM 0.21.0 was not read (taken as 0.22.0); SGLang's flat-format ModelOptFp8Config reads
only `kv_cache_scheme` before 0.5.9 (a flat `kv_cache_quant_algo` alone is taken as read there too).
"""
from __future__ import annotations

from dataclasses import dataclass

from profiles.measured.source import version_within


@dataclass(frozen=True)
class AutoKv:
    """Releases `first` to `last` (both included; `last` None: every later one) of `framework` whose KV dtype
    "auto" takes a `fmt` checkpoint's declared KV dtype when it is one of `kv` (and, where `weights` is given, the
    checkpoint's weights are one of those dtypes)."""
    framework: str
    first: str
    last: str | None
    fmt: str
    kv: tuple[str, ...]
    weights: tuple[str, ...] | None = None

    def covers(self, framework: str, version: str) -> bool:
        return framework == self.framework and version_within(version, self.first, self.last)

    def takes(self, fmt: str, kv: str, weights: str) -> bool:
        return fmt == self.fmt and kv in self.kv and (self.weights is None or weights in self.weights)


RULES = (
    AutoKv("vllm", "0.14.0", "0.19.1", "modelopt", ("fp8",)),
    AutoKv("vllm", "0.20.0", None, "modelopt", ("fp8", "nvfp4")),
    AutoKv("vllm", "0.15.0", None, "compressed-tensors", ("fp8",)),
    AutoKv("sglang", "0.5.3", None, "modelopt", ("fp8",), weights=("nvfp4",)),
    AutoKv("sglang", "0.5.4", None, "modelopt", ("fp8",), weights=("fp8", "fp8_block")),
    AutoKv("sglang", "0.5.18", None, "fp8", ("fp8",)),
    AutoKv("trtllm", "0.5.0", None, "modelopt", ("fp8", "nvfp4")),
    AutoKv("trtllm", "0.5.0", None, "compressed-tensors", ("fp8",)),
)
# Releases whose declared KV dtype wins over an explicit one too (vLLM's compressed-tensors rule, module docstring).
FORCING = (AutoKv("vllm", "0.15.0", "0.20.2", "compressed-tensors", ("fp8",)),)


def recipe_declaration(framework: str, dtype: str) -> tuple[str, str]:
    """(format, KV dtype) of the checkpoint `framework`'s own quantization path makes for `dtype` weights, for a
    model without a checkpoint quantization config (module docstring); ("", "") where it declares none."""
    if dtype == "nvfp4" or (dtype == "fp8" and framework == "trtllm"):
        return "modelopt", "fp8"
    return "", ""


def declaration(framework: str, dtype: str, model) -> tuple[str, str]:
    """(format, KV dtype) the checkpoint of `model` (a ModelSpec) declares: its config.json's (checkpoint_kv_*)
    where it has a quantization config, else `recipe_declaration`'s."""
    if model is not None and model.checkpoint_dtype:
        return model.checkpoint_kv_format, model.checkpoint_kv_dtype
    return recipe_declaration(framework, dtype)


def auto_kv_dtype(framework: str, version: str, dtype: str, model) -> str | None:
    """The quantized KV dtype `framework` `version`'s "auto" takes from `model`'s checkpoint when serving `dtype`
    weights (fp8 or nvfp4), or None: the model's 16-bit dtype (module docstring)."""
    fmt, kv = declaration(framework, dtype, model)
    if fmt and any(r.covers(framework, version) and r.takes(fmt, kv, dtype) for r in RULES):
        return kv
    return None


def forced_kv_dtype(framework: str, version: str, dtype: str, model) -> str | None:
    """The KV dtype `framework` `version` runs for `model`'s checkpoint whatever KV dtype is asked for, or None."""
    fmt, kv = declaration(framework, dtype, model)
    if fmt and any(r.covers(framework, version) and r.takes(fmt, kv, dtype) for r in FORCING):
        return kv
    return None
