"""FP8 weights on a GPU without FP8 tensor cores (A100): weight-only W8A16 under the engine releases with FP8 Marlin
(simulator.cluster.fp8_marlin, profiles.engine_time.fp8_marlin), priced as the roofline prices weight-only formats
(profiles.roofline.WEIGHT_ONLY_FP8); refused, one line, under the releases without it. Before, every fp8 deployment
on an A100 was refused, and an FP8 checkpoint's config.json (which also refuses bf16) had no dtype that ran."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import simulator
from sim_helpers import assert_bulk_equals_step, scenario
from simulator.errors import ScenarioError

REPO = Path(__file__).resolve().parents[3]
A100_BANDWIDTH_B_PER_S = 2.039e12   # datasheet (profiles.hardware)
A100_MEMORY_FRACTION, LAUNCH_S = 0.88, 2.5e-6   # profiles.roofline DEFAULT_EFFICIENCY["a100-80gb"]
HIDDEN, KV_WIDTH, INTER, LAYERS, VOCAB = 4096, 1024, 14336, 32, 128256   # Llama-3-8B (8 KV heads x 128)


def _without_dtype(data: dict) -> dict:
    """A scenario that leaves cluster.dtype out (the small scenario gives bf16): the checkpoint's format then."""
    data["cluster"].pop("dtype")
    return data


def _fp8_checkpoint(tmp_path: Path) -> Path:
    """Llama-3.1-8B's config.json with an FP8 checkpoint's quantization_config (vLLM Fp8Config, per tensor)."""
    cfg = json.loads((REPO / "tests/data/hf_configs/Llama-3.1-8B/config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    path = tmp_path / "Llama-3.1-8B-FP8" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg))
    return path


def test_weight_bytes_and_a_decode_step_worked_by_hand_on_a100():
    """fp8 Llama-3-8B on one A100: decoder weights 1 byte each, embedding and LM head 16-bit; a one-token decode
    GEMM is bandwidth-bound and reads its 1-byte weights once, so q/k/v costs half its bf16 bytes."""
    from models import get_model
    from simulator.workflows.estimate import estimate_step
    linear = LAYERS * (HIDDEN * (HIDDEN + 2 * KV_WIDTH) + HIDDEN * HIDDEN + 3 * HIDDEN * INTER)   # 6.98e9 weights
    by_hand = linear * 1 + 2 * VOCAB * HIDDEN * 2
    assert by_hand == 9_080_668_160
    # (+ the 66 norm vectors, 270 KB, counted at the weights' byte)
    assert get_model("llama-3-8b").weight_bytes("fp8") == pytest.approx(by_hand, abs=300e3)

    step = estimate_step("llama-3-8b", "a100-80gb", dtype="fp8", kv_dtype="bf16", batch=1,
                         latency={"source": "roofline"})
    qkv = {op["name"]: op for op in step["ops"]}["qkv_proj"]
    n = HIDDEN + 2 * KV_WIDTH
    moved = n * HIDDEN * 1 + 2 * (HIDDEN + n)   # fp8 weights + bf16 activations in and out, m = 1
    assert qkv["count"] == LAYERS
    assert qkv["seconds"] == pytest.approx(LAYERS * (LAUNCH_S + moved / (A100_BANDWIDTH_B_PER_S * A100_MEMORY_FRACTION)),
                                           rel=1e-12)
    bf16 = {op["name"]: op for op in estimate_step("llama-3-8b", "a100-80gb", dtype="bf16", batch=1,
                                                   latency={"source": "roofline"})["ops"]}["qkv_proj"]
    assert (qkv["seconds"] / LAYERS - LAUNCH_S) / (bf16["seconds"] / LAYERS - LAUNCH_S) == pytest.approx(
        moved / (n * HIDDEN * 2 + 2 * (HIDDEN + n)), rel=1e-12)
    assert "weight_only" in step["latency_source"] and "FP8 Marlin" in step["latency_source"]["weight_only"]


def test_measured_a100_tables_price_the_rest_and_name_the_weight_only_gemms():
    """Under the measured A100 tables (vLLM 0.14.0: bf16 GEMMs only) the fp8 GEMMs are the roofline's W8A16, the
    bf16-KV attention stays measured, and latency_source says which approximation priced the GEMMs."""
    from simulator.results.latency_source import format_latency_source
    from simulator.workflows.estimate import estimate_step
    step = estimate_step("llama-3-8b", "a100-80gb", dtype="fp8", kv_dtype="bf16", batch=32, context_tokens=2048,
                         latency={"source": "measured"})
    source = step["latency_source"]
    assert source["kernels"]["gemm"] == "roofline" and source["op_kinds"]["gemm"]["source"] == "roofline"
    assert source["op_kinds"]["attn_decode"]["source"] != "roofline"
    assert format_latency_source(source).endswith("weight-only FP8 (W8A16 as FP8 Marlin runs it): GEMMs on the roofline")
    h100 = estimate_step("llama-3-8b", "h100-sxm", dtype="fp8", batch=32, context_tokens=2048,
                         latency={"source": "measured"})["latency_source"]
    assert "weight_only" not in h100 and h100["kernels"]["gemm"] != "roofline"   # FP8 tensor cores: unchanged


def test_an_fp8_checkpoint_runs_on_a100_where_it_was_refused(tmp_path):
    """A config.json whose quantization_config is fp8 takes fp8 weights (and refuses bf16: the engines'
    _verify_quantization); on an A100 it was refused too, so no dtype ran. vLLM serves it with FP8 Marlin."""
    model = str(_fp8_checkpoint(tmp_path))
    result = simulator.run(_without_dtype(scenario(cluster={"hardware": "a100-80gb", "model": model},
                                                   workload={"num_requests": 30})))
    assert result.requests.finish_s.notna().all()
    assert "weight_only" in result.summary["latency_source"]
    with pytest.raises(ScenarioError, match="cluster.dtype: bf16 contradicts"):
        simulator.run(scenario(cluster={"hardware": "a100-80gb", "model": model, "dtype": "bf16"}))


@pytest.mark.parametrize("model, dtype, engine, says", [
    ("llama-3-8b", "fp8", {"framework": "trtllm"}, "trtllm 1.0.0 has no weight-only FP8 (FP8 Marlin) kernel for "
     "fp8 weights; releases that run them as W8A16: vllm >= 0.5.1, sglang 0.4.0, sglang >= 0.5.6; allowed here: fp32, "
     "bf16, fp16, int4"),
    ("llama-3-8b", "fp8", {"version": "0.5.0"}, "vllm 0.5.0 has no weight-only FP8"),
    ("llama-3-8b", "fp8_block", {"framework": "sglang", "version": "0.5.5"}, "sglang 0.5.5 has no weight-only FP8 "
     "(FP8 Marlin) kernel for block-scaled fp8_block weights; releases that run them as W8A16: vllm >= 0.9.0, "
     "sglang >= 0.5.6; allowed here: fp32, bf16, fp16, int4"),
    ("mixtral-8x7b", "fp8", {"version": "0.8.0"}, "vllm 0.8.0 has no weight-only FP8 (FP8 Marlin) kernel for fp8 "
     "weights with MoE experts; releases that run them as W8A16: vllm >= 0.9.0; allowed here: fp32, bf16, fp16, int4, "
     "mxfp4"),
    ("qwen3-30b-a3b", "fp8", {"framework": "sglang"}, "sglang 0.5.10 has no weight-only FP8"),
])
def test_releases_without_fp8_marlin_refuse_in_one_line(model, dtype, engine, says):
    with pytest.raises(ScenarioError) as caught:
        simulator.run(scenario(cluster={"hardware": "a100-80gb", "model": model, "dtype": dtype, "engine": engine,
                                        "parallelism": {"tp": 8 if model != "llama-3-8b" else 1}}))
    assert caught.value.field == "cluster.dtype" and "\n" not in str(caught.value)
    assert caught.value.message.startswith(f"{dtype} weights need FP8 tensor cores, which a100-80gb lacks, and ")
    assert says in caught.value.message


def test_an_fp8_checkpoint_under_a_release_without_it_names_what_would_run_it(tmp_path):
    with pytest.raises(ScenarioError, match=r"cluster.dtype \(not given: fp8, llama-3.1-8b-fp8's config.json "
                                            r"quantization_config\): fp8 weights .* trtllm 1.0.0 .*; allowed: one of "
                                            r"those releases \(cluster.engine\), or a GPU with FP8 tensor cores"):
        simulator.run(_without_dtype(scenario(cluster={"hardware": "a100-80gb", "model": str(_fp8_checkpoint(tmp_path)),
                                                       "engine": {"framework": "trtllm"}})))


def test_moe_and_block_fp8_run_on_a100_under_vllm_0_9():
    for model, dtype in (("mixtral-8x7b", "fp8"), ("llama-3-8b", "fp8_block")):
        result = simulator.run(scenario(cluster={"hardware": "a100-80gb", "model": model, "dtype": dtype,
                                                 "engine": {"version": "0.9.0"},
                                                 "parallelism": {"tp": 2 if model != "llama-3-8b" else 1}},
                                        workload={"num_requests": 10}))
        assert result.requests.finish_s.notna().all() and not math.isnan(result.summary["tpot_p50_s"])


def test_a100_fp8_bulk_equals_step():
    assert_bulk_equals_step(scenario(cluster={"hardware": "a100-80gb", "model": "llama-3-8b", "dtype": "fp8"},
                                     workload={"num_requests": 40, "arrival": {"process": "poisson", "qps": 20.0}}))
