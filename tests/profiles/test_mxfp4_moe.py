"""Which fused-MoE kernel a vLLM release runs MXFP4 experts with, release by release as read in their sources
(profiles.engine_time.mxfp4_moe), and what a deployment of such a release is priced with."""
from __future__ import annotations

import pytest

from profiles.engine_time.mxfp4_moe import MARLIN, moe_kernel, vllm_mxfp4_moe_kernel
from profiles.measured import source as src


@pytest.mark.parametrize("version, hardware, expected", [
    ("0.10.0", "h100-sxm", None),          # no MXFP4 MoE method yet
    ("0.10.1", "h100-sxm", MARLIN),        # _should_use_marlin: no triton_kernels
    ("0.10.2", "h100-sxm", MARLIN),        # get_mxfp4_backend: not has_triton_kernels()
    ("0.11.2", "h200", MARLIN),
    ("0.12.0", "h100-sxm", None),          # triton_kernels shipped in the wheel: the tables' Triton experts
    ("0.24.0", "h800", None),
    ("0.10.2", "a100-80gb", MARLIN),       # below SM90: Marlin in every release
    ("0.24.0", "l40s", MARLIN),
    ("0.11.0", "b200", None),              # FlashInfer (an optional extra) or not: the tables' kernel
    (None, "h100-sxm", None),              # the newest release
])
def test_the_kernel_each_release_runs_mxfp4_experts_with(version, hardware, expected):
    assert vllm_mxfp4_moe_kernel(version, hardware) == expected


def test_only_vllm_mxfp4_deployments_get_a_kernel_of_their_own():
    assert moe_kernel(("vllm", "0.11.0"), "h100-sxm", "mxfp4") == MARLIN
    assert moe_kernel(("vllm", "0.11.0"), "h100-sxm", "bf16") is None
    assert moe_kernel(("sglang", "0.5.3"), "h100-sxm", "mxfp4") is None


real = pytest.mark.skipif(src.data_root() is None, reason="aiconfigurator-core not installed (extra gpu-data)")


@real
def test_a_release_that_runs_marlin_experts_is_priced_with_them():
    """gpt-oss-20b on an H100: vLLM 0.11.0 prices its experts with the tables' Marlin rows (another configuration,
    at the same rows per expert), 0.12.0 with the Triton rows measured for gpt-oss; a prefill-sized step is
    slower with Marlin (its measured efficiency at 256 rows per expert is well below OpenAI's Triton kernel's)."""
    import simulator
    steps = {v: simulator.estimate_step("gpt-oss-20b", "h100-sxm", tp=1, dtype="mxfp4", batch=1,
                                        context_tokens=0, prefill_tokens=8192,
                                        latency={"framework": "vllm", "engine_version": v})
             for v in ("0.11.0", "0.12.0")}
    kernels = {v: s["latency_source"]["kernels"]["moe"] for v, s in steps.items()}
    assert kernels["0.11.0"].startswith("marlin") and "triton" in kernels["0.12.0"]
    moe = {v: next(op["seconds"] for op in s["ops"] if op["name"] == "moe_gate_up") for v, s in steps.items()}
    assert moe["0.11.0"] > 1.5 * moe["0.12.0"]
