"""profiles.engine_time.kv_cache_auto: what each engine release's KV dtype "auto" takes from a checkpoint's
declaration, at the release boundaries read in the wheels (the module docstring)."""
from __future__ import annotations

import dataclasses

import pytest

from models import get_model
from profiles.engine_time.kv_cache_auto import auto_kv_dtype, declaration, forced_kv_dtype


def _declaring(fmt: str, kv: str, weights: str):
    """llama-3-8b as a checkpoint holding `weights` and declaring a `fmt` `kv` KV cache."""
    return dataclasses.replace(get_model("llama-3-8b"), checkpoint_dtype=weights, checkpoint_kv_format=fmt,
                               checkpoint_kv_dtype=kv)


@pytest.mark.parametrize("framework, version, fmt, kv, weights, expected", [
    ("vllm", "0.13.0", "modelopt", "fp8", "fp8", None),          # no resolve_kv_cache_dtype_string
    ("vllm", "0.14.0", "modelopt", "fp8", "fp8", "fp8"),
    ("vllm", "0.19.1", "modelopt", "nvfp4", "nvfp4", None),      # MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP: fp8 only
    ("vllm", "0.20.0", "modelopt", "nvfp4", "nvfp4", "nvfp4"),
    ("vllm", "0.14.1", "compressed-tensors", "fp8", "fp8", None),
    ("vllm", "0.15.0", "compressed-tensors", "fp8", "fp8", "fp8"),
    ("vllm", "0.33.0", "fp8", "fp8", "fp8_block", None),          # Fp8Config's kv_cache_quant_algo: not read
    ("sglang", "0.5.2", "modelopt", "fp8", "nvfp4", None),
    ("sglang", "0.5.3", "modelopt", "fp8", "nvfp4", "fp8"),       # ModelOptFp4Config
    ("sglang", "0.5.3", "modelopt", "fp8", "fp8", None),          # ModelOptFp8Config carries it from 0.5.4
    ("sglang", "0.5.4", "modelopt", "fp8", "fp8", "fp8"),
    ("sglang", "0.5.23", "compressed-tensors", "fp8", "fp8", None),   # kv_cache_scheme not read
    ("sglang", "0.5.15", "fp8", "fp8", "fp8_block", None),
    ("sglang", "0.5.18", "fp8", "fp8", "fp8_block", "fp8"),
    ("trtllm", "1.0.0", "compressed-tensors", "fp8", "fp8", "fp8"),
    ("trtllm", "1.0.0", "", "", "fp8_block", None),               # DeepSeek-V3's quant_method fp8: no KV algo
])
def test_auto_takes_the_declaration_where_the_release_reads_it(framework, version, fmt, kv, weights, expected):
    assert auto_kv_dtype(framework, version, weights, _declaring(fmt, kv, weights)) == expected


def test_a_catalog_model_takes_its_engines_own_quantization_recipe():
    """No checkpoint: fp8 weights declare an fp8 KV cache under TensorRT-LLM's FP8 recipe only; nvfp4 weights
    NVIDIA's NVFP4 checkpoints' FP8 under every engine; the other formats nothing."""
    llama = get_model("llama-3-8b")
    assert [declaration(fw, "fp8", llama) for fw in ("vllm", "sglang", "trtllm")] == \
        [("", ""), ("", ""), ("modelopt", "fp8")]
    assert {declaration(fw, "nvfp4", llama) for fw in ("vllm", "sglang", "trtllm")} == {("modelopt", "fp8")}
    assert {declaration(fw, d, llama) for fw in ("vllm", "trtllm") for d in ("fp8_block", "int4", "mxfp4", "bf16")} \
        == {("", "")}
    # a config.json with a quantization_config that declares nothing keeps its own (no) declaration
    assert declaration("trtllm", "fp8", _declaring("", "", "fp8")) == ("", "")


def test_vllm_forces_a_compressed_tensors_kv_scheme_through_0_20_2():
    ct = _declaring("compressed-tensors", "fp8", "fp8")
    assert [forced_kv_dtype("vllm", v, "fp8", ct) for v in ("0.14.1", "0.15.0", "0.20.2", "0.22.0")] == \
        [None, "fp8", "fp8", None]
