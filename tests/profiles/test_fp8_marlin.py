"""Which engine releases serve FP8 weights on a GPU without FP8 tensor cores (weight-only, FP8 Marlin), release by
release as read in their sources (profiles.engine_time.fp8_marlin)."""
from __future__ import annotations

import pytest

from profiles.engine_time.fp8_marlin import refusal, runs


@pytest.mark.parametrize("framework, version, dtype, experts, expected", [
    ("vllm", "0.5.0.post1", "fp8", False, False),   # Fp8Config.get_min_capability 89
    ("vllm", "0.5.1", "fp8", False, True),          # PR #5975: Fp8LinearMethod.use_marlin below 8.9
    ("vllm", "0.5.1", "fp8", True, False),          # Fp8MoEMethod: Triton fp8 w8a8 (SM89)
    ("vllm", "0.8.5.post1", "fp8", False, True),
    ("vllm", "0.8.5.post1", "fp8_block", False, False),   # "Marlin doesn't support block-wise fp8"
    ("vllm", "0.8.5.post1", "fp8", True, False),
    ("vllm", "0.9.0", "fp8", True, True),            # Fp8MoEMethod.use_marlin, fused_marlin_moe
    ("vllm", "0.9.0", "fp8_block", True, True),      # block scales -> Marlin group scales
    ("vllm", "0.33.0", "fp8_block", False, True),    # MarlinFP8ScaledMMLinearKernel in the block kernels
    ("sglang", "0.4.0", "fp8", False, True),         # vLLM's Fp8LinearMethod
    ("sglang", "0.4.0", "fp8_block", False, False),
    ("sglang", "0.4.0.post1", "fp8", False, False),  # SGLANG_FORCE_FP8_MARLIN only
    ("sglang", "0.5.5.post3", "fp8", False, False),  # only with vLLM installed beside it
    ("sglang", "0.5.6", "fp8", False, True),         # can_auto_enable_marlin_fp8, sgl_kernel Marlin
    ("sglang", "0.5.23", "fp8_block", False, True),
    ("sglang", "0.5.23", "fp8", True, False),        # FP8 experts: the Triton runner only
    ("trtllm", "0.21.0", "fp8", False, False),       # support matrix: Ampere has no FP8
    ("trtllm", "1.4.0rc4", "fp8", False, False),
])
def test_the_releases_that_run_fp8_weights_weight_only(framework, version, dtype, experts, expected):
    assert runs(framework, version, dtype, experts) is expected
    assert (refusal(framework, version, dtype, experts, "a100-80gb") is None) is expected


def test_a_refusal_names_the_release_and_the_releases_that_run_it():
    assert refusal("vllm", "0.5.0", "fp8", False, "a100-80gb") == (
        "fp8 weights need FP8 tensor cores, which a100-80gb lacks, and vllm 0.5.0 has no weight-only FP8 (FP8 Marlin) "
        "kernel for fp8 weights; releases that run them as W8A16: vllm >= 0.5.1, sglang 0.4.0, sglang >= 0.5.6")
    assert refusal("sglang", "0.5.23", "fp8_block", True, "a100-40gb").endswith(
        "sglang 0.5.23 has no weight-only FP8 (FP8 Marlin) kernel for block-scaled fp8_block weights with MoE experts; "
        "releases that run them as W8A16: vllm >= 0.9.0")
    assert refusal("trtllm", "1.4.0rc4", "bf16", False, "a100-80gb") is None   # (not an FP8 format)
