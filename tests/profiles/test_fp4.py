"""FP4 weights and KV on Blackwell: byte counts with block scales, the FP4 tensor-core rate in the roofline,
the measured NVFP4 GEMM/MoE tables, and the FP4 scenario's summary naming what priced each op kind."""
from __future__ import annotations

import json

import pytest
import yaml

from contract import run_cli
from models import get_model
from models.opgraph import dense_ops
from models.step import Parallelism
from profiles.hardware import get_hardware
from profiles.measured import source as src
from profiles.roofline import RooflineLatencyModel, gemm_seconds
from paths import REPO
from sim_helpers import vllm_requested_bytes

real = pytest.mark.skipif(src.data_root() is None, reason="aiconfigurator-core not installed (extra gpu-data)")


def test_fp4_rates_and_refusals_of_the_hardware_catalog():
    assert get_hardware("b200").matmul_flops("nvfp4") == 9000e12
    # mxfp4 is weight-only (vLLM's MXFP4 MoE kernels take bf16 activations): 16-bit math, on every GPU
    assert get_hardware("b200").matmul_flops("mxfp4") == get_hardware("b200").matmul_flops("bf16")
    for hw in ("h100-sxm", "h200", "a100-80gb", "l40s", "mi300x", "b200"):
        assert get_hardware(hw).weight_dtype_error("mxfp4") is None
    assert get_hardware("gb200").matmul_flops("nvfp4") == 10000e12
    for hw in ("h100-sxm", "h200", "a100-80gb", "l40s", "mi300x"):
        assert "FP4 tensor cores" in get_hardware(hw).weight_dtype_error("nvfp4")
        assert get_hardware(hw).kv_dtype_error("nvfp4") is not None
    assert get_hardware("b200").weight_dtype_error("nvfp4") is None and get_hardware("b200").kv_dtype_error("nvfp4") is None


def test_a_large_fp4_gemm_runs_at_twice_the_fp8_rate_and_a_thin_one_reads_9_16_of_the_bf16_bytes():
    big = 16384
    fp8, fp4 = gemm_seconds("b200", big, big, big, "fp8"), gemm_seconds("b200", big, big, big, "nvfp4")
    assert fp8 / fp4 == pytest.approx(2.0, rel=0.05)
    model = RooflineLatencyModel("b200", dtype="nvfp4")
    gemm = next(op for op in dense_ops(get_model("llama-3.1-70b"), 1, 1, Parallelism(), "nvfp4") if op.name == "down_proj")
    weights = gemm.dim("k") * gemm.dim("n")
    assert gemm.bytes == pytest.approx(weights * 9 / 16 + 2 * (gemm.dim("k") + gemm.dim("n")))
    assert model.op_seconds(gemm) > 0


@real
def test_measured_nvfp4_gemm_and_moe_tables_price_deepseek_on_b200(tmp_path):
    data = yaml.safe_load((REPO / "scenarios" / "fp4" / "deepseek_r1_nvfp4_b200.yaml").read_text())
    data["workload"]["num_requests"] = 30
    data["outputs"] = {"plots": False}
    code, err, out = run_cli(tmp_path, data)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    source = summary["latency_source"]
    assert "NvFp4" in source["kernels"]["gemm"] and "nvfp4" in source["kernels"]["moe"]
    kinds = source["op_kinds"]
    assert kinds["gemm"]["source"].startswith("aiconfigurator-core") and kinds["norm"]["source"] == "roofline"
    assert summary["kv_tokens_per_replica"] > 0
    spec = get_model("deepseek-v3")
    vocab = 2 * spec.vocab_size * spec.hidden_size + spec.hidden_size   # embeddings and LM head stay 16-bit
    requested = vllm_requested_bytes(get_hardware("b200"), spec, Parallelism(tp=8), "nvfp4", 0.9, 8192, 256)
    free = requested - ((spec.param_count() - vocab) * (0.5 + 1 / 16) + 2 * vocab) / 8
    assert summary["kv_tokens_per_replica"] == int(free // spec.kv_bytes_per_token_per_gpu(Parallelism(tp=8), "fp8"))


@real
@pytest.mark.parametrize("hw, kernel", [("h100-sxm", "triton_oaitritonmxfp4experts"),
                                        ("b200", "flashinfer_trtllm_mxfp4_bf16")])
def test_mxfp4_experts_are_priced_by_the_w4a16_moe_table_and_the_other_gemms_by_the_bf16_one(hw, kernel):
    """gpt-oss in mxfp4: its experts are MXFP4 × BF16 (vLLM's default MXFP4 MoE kernel on the GPU: OpenAI's Triton
    experts on Hopper, FlashInfer TRT-LLM MXFP4 × BF16 on B200), every other GEMM is bf16."""
    from profiles.measured import load_measured
    lat, bf16 = load_measured(hw, "mxfp4", "vllm"), load_measured(hw, "bf16", "vllm")
    spec = get_model("gpt-oss-120b")
    ops = {op.name: op for op in dense_ops(spec, 8, 8, Parallelism(), "mxfp4")}
    same = {op.name: op for op in dense_ops(spec, 8, 8, Parallelism(), "bf16")}
    assert ops["qkv_proj"] == same["qkv_proj"] and ops["lm_head"] == same["lm_head"]   # bf16 weights
    assert lat.op_seconds(ops["qkv_proj"]) == bf16.op_seconds(same["qkv_proj"])
    experts = ops["moe_gate_up"]
    assert experts.bytes < same["moe_gate_up"].bytes * 0.3   # 17/32 bytes per weight instead of 2
    assert lat.op_seconds(experts) > 0 and lat.op_seconds(ops["moe_down"]) == 0.0   # the fused layer's time
    assert kernel in lat.describe()["kernels"]["moe"]
    assert lat.coverage()["gemm"]["source"].startswith("aiconfigurator-core")
    # the whole layer costs less than bf16 experts' (4.25 of 16 bits read) at a decode batch
    assert lat.op_seconds(experts) < bf16.op_seconds(same["moe_gate_up"])


def test_a_dense_model_cannot_be_served_in_mxfp4(tmp_path):
    data = yaml.safe_load((REPO / "scenarios" / "benchmarks" / "sim_speed.yaml").read_text())
    data["cluster"].update(hardware="b200", model="llama-3.1-8b", dtype="mxfp4")
    code, err, out = run_cli(tmp_path, data)
    assert code == 2 and not out.exists()
    assert "\n" not in err.strip() and "cluster.dtype" in err and "routed experts" in err and "int4" in err
