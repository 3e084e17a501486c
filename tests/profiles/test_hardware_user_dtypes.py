"""User-defined hardware, weight dtypes a GPU can or cannot run, and a KV cache dtype apart from the weights'."""
from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

import simulator
from models import get_model
from models.opgraph import attention_ops
from models.step import Parallelism, StepShape
from profiles.hardware import get_hardware
from profiles.hardware_file import hardware_from_fields, load_hardware
from profiles.measured import source as src
from sim_helpers import merge, scenario, vllm_requested_bytes
from simulator.cli import main

GIB = 1024 ** 3
MY_GPU = {"id": "my-gpu", "name": "An accelerator", "peak_flops": {"fp32": 6.0e13, "bf16": "8.0e14", "fp8": 1.6e15},
          "hbm_bytes": 96.0e9, "hbm_bandwidth_bytes_per_s": 4.0e12, "scaleup_bandwidth_bytes_per_s": 450.0e9,
          "scaleout_bandwidth_bytes_per_s": 50.0e9, "source": "test"}


def test_user_hardware_from_a_file_and_inline(tmp_path):
    (tmp_path / "gpu.yaml").write_text(yaml.safe_dump(MY_GPU))
    hw = load_hardware("gpu.yaml", tmp_path)
    assert hw.id == "my-gpu" and hw.peak_flops["bf16"] == 8.0e14 and hw.gpus_per_node == 8
    assert hw.host_link_bandwidth_bytes_per_s == 64e9 and hw.scaleup_latency_s == 1e-6
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(cluster={"hardware": "gpu.yaml", "model": "llama-3-8b"},
                                            workload={"num_requests": 40})))
    by_file = simulator.run(path)
    assert by_file.summary["latency_source"]["source"] == "roofline"
    inline = simulator.run(scenario(cluster={"hardware": MY_GPU, "model": "llama-3-8b"}, workload={"num_requests": 40}))
    assert inline.summary["ttft_p50_s"] == by_file.summary["ttft_p50_s"]
    # more bandwidth than an H100 SXM's 3.35 TB/s, same roofline model: faster decode
    h100 = simulator.run(scenario(cluster={"model": "llama-3-8b", "latency": {"source": "roofline"}},
                                  workload={"num_requests": 40}))
    assert inline.summary["tpot_p50_s"] < h100.summary["tpot_p50_s"]


@pytest.mark.parametrize("change,message", [
    ({"hbm_bytes": -1}, "hardware.hbm_bytes: -1 is not a number > 0"),
    ({"peak_flops": {"bf16": 1e15}}, "hardware.peak_flops: needs a mapping with at least bf16 and fp32"),
    ({"peak_flops": {"bf16": 1e15, "fp32": 1e13, "fp6": 1}}, "hardware.peak_flops.fp6: unknown dtype"),
    ({"id": "h100-sxm"}, "hardware.id: 'h100-sxm' must be a new name"),
    ({"hbm_bandwith_bytes_per_s": 1e12}, "hardware.hbm_bandwith_bytes_per_s: unknown field"),
    ({"gpus_per_node": 2.5}, "hardware.gpus_per_node: 2.5 is not an integer >= 1"),
    # a boolean is no number (float(True) is 1.0: one GPU per node, a link without latency, before)
    ({"gpus_per_node": True}, "hardware.gpus_per_node: true is a boolean, not a number; expected an integer >= 1"),
    ({"scaleup_latency_s": False}, "hardware.scaleup_latency_s: false is a boolean, not a number"),
    ({"tdp_w": True}, "hardware.tdp_w: true is a boolean, not a number"),
    ({"compute_units": True}, "hardware.compute_units: true is a boolean"),
    ({"peak_flops": {"bf16": 1e15, "fp32": 1e13, "fp8": True}}, "hardware.peak_flops.fp8: true is a boolean"),
    ({"hbm_bytes": np.True_}, "hardware.hbm_bytes: true is a boolean"),
])
def test_user_hardware_is_validated_field_by_field(change, message):
    with pytest.raises(ValueError) as err:
        hardware_from_fields({**MY_GPU, **change})
    assert str(err.value).startswith(message)
    missing = {k: v for k, v in MY_GPU.items() if k != "hbm_bandwidth_bytes_per_s"}
    with pytest.raises(ValueError, match="hardware.hbm_bandwidth_bytes_per_s: required field is missing"):
        hardware_from_fields(missing)


def test_bad_user_hardware_in_a_scenario_is_one_line_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(cluster={"hardware": {**MY_GPU, "hbm_bytes": "lots"}, "model": "llama-3-8b"})))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "draftsim: error: cluster.hardware.hbm_bytes: 'lots' is not a number; expected a number > 0"
    assert not (tmp_path / "out").exists()


def test_fp8_weights_without_fp8_tensor_cores_fail_before_the_run_where_the_engine_has_no_fp8_marlin(tmp_path, capsys):
    """On an A100 fp8 weights run weight-only under the releases with FP8 Marlin (simulator.cluster.fp8_marlin);
    vLLM 0.5.0 had none (Fp8Config minimum capability 89): one line, exit 2, nothing written."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(cluster={"hardware": "a100-80gb", "model": "llama-3-8b", "dtype": "fp8",
                                                     "engine": {"version": "0.5.0"}})))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert re.match(r"draftsim: error: cluster.dtype: fp8 weights need FP8 tensor cores, which a100-80gb lacks, and "
                    r"vllm 0.5.0 has no weight-only FP8 .*allowed here: fp32, bf16, fp16, int4$", err), err
    assert not (tmp_path / "out").exists()
    with pytest.raises(Exception, match="cluster.dtype: fp8_block .* vllm 0.8.0 .*allowed here: fp32, bf16, fp16, fp8, "
                                        "int4$"):
        simulator.run(scenario(cluster={"hardware": "a100-80gb", "model": "llama-3-8b", "dtype": "fp8_block",
                                        "engine": {"version": "0.8.0"}}))


def test_the_dtypes_a_refusal_allows_are_the_ones_that_run():
    """A GPU without an fp16 rate of its own runs fp16 weights at its bf16 rate (HardwareSpec.matmul_flops); the
    fp8 refusal's 'allowed here' list left fp16 out while fp16 ran."""
    hw = hardware_from_fields({**MY_GPU, "peak_flops": {"fp32": 6.0e13, "bf16": 8.0e14}})
    assert hw.weight_dtype_error("fp16") is None and hw.matmul_flops("fp16") == 8.0e14
    assert hw.allowed_weight_dtypes() == [d for d in ("fp32", "bf16", "fp16", "fp8", "fp8_block", "int4", "nvfp4",
                                                      "mxfp4") if hw.weight_dtype_error(d) is None]
    assert hw.weight_dtype_error("fp8").endswith("allowed here: fp32, bf16, fp16, int4, mxfp4")


def test_a_measured_table_version_on_user_hardware_is_an_error_not_dropped():
    """User hardware has no measured tables, so a `version` of them named the tables of nothing: it was
    dropped and the run priced on the roofline (`draftsim estimate --hardware h20.yaml --version 99.9.9`, exit 0)."""
    with pytest.raises(ValueError, match=r"cluster.latency.version: '0.24.0' selects measured kernel tables, but "
                                         r"my-gpu has none"):
        simulator.run(scenario(cluster={"hardware": MY_GPU, "model": "llama-3-8b", "latency": {"version": "0.24.0"}},
                               workload={"num_requests": 5}))
    with pytest.raises(ValueError, match="cluster.latency.version: '0.24.0' .* h100-pcie has none"):
        simulator.run(scenario(cluster={"hardware": "h100-pcie", "model": "llama-3-8b",
                                        "latency": {"version": "0.24.0"}}, workload={"num_requests": 5}))


def test_int4_weights_run_where_bf16_does_with_their_gemms_on_the_roofline():
    base = {"cluster": {"hardware": "a100-80gb", "model": "llama-3-8b"}, "workload": {"num_requests": 40}}
    bf16 = simulator.run(scenario(**base))
    int4 = simulator.run(scenario(**merge(base, {"cluster": {"dtype": "int4"}})))
    # weights are 4x smaller: more KV room, and the decode steps stream fewer weight bytes
    weights = get_model("llama-3-8b").weight_bytes
    a100, llama = get_hardware("a100-80gb"), get_model("llama-3-8b")
    room = lambda w, d: vllm_requested_bytes(a100, llama, Parallelism(), d, 0.9) - w  # noqa: E731
    assert int4.summary["kv_tokens_per_replica"] == pytest.approx(
        bf16.summary["kv_tokens_per_replica"] * room(weights("int4"), "int4") / room(weights("bf16"), "bf16"), rel=1e-4)
    assert int4.summary["tpot_p50_s"] < bf16.summary["tpot_p50_s"]
    assert 0 < int4.summary["mfu"] < 1      # the summary's peak: bf16 math (weight-only), no KeyError
    kinds = int4.summary["latency_source"].get("op_kinds", {})
    if int4.summary["latency_source"]["source"] == "measured":
        assert kinds["gemm"]["source"] == "roofline" and "attn_decode" in kinds
        assert kinds["attn_decode"]["source"] != "roofline"


def test_fp8_kv_halves_the_kv_bytes_and_doubles_capacity_as_the_formula_says():
    spec, hw = get_model("llama-3.1-8b"), get_hardware("h100-sxm")
    base = {"cluster": {"model": "llama-3.1-8b"}, "workload": {"num_requests": 30}}
    bf16 = simulator.run(scenario(**base))
    fp8 = simulator.run(scenario(**merge(base, {"cluster": {"kv_dtype": "fp8"}})))
    free = vllm_requested_bytes(hw, spec, Parallelism(), "bf16", 0.9) - spec.weight_bytes("bf16")
    per_token = 32 * 2 * 8 * 128  # layers × (K, V) × KV heads × head dim, elements
    assert bf16.summary["kv_tokens_per_replica"] == int(free // (per_token * 2))
    assert fp8.summary["kv_tokens_per_replica"] == int(free // per_token)
    shape = StepShape(decode_seqs=32, decode_context_tokens=32 * 4000)
    kv_bytes = {kv: attention_ops(spec, shape, Parallelism(), "bf16", kv)[0].bytes for kv in ("bf16", "fp8")}
    queries_bytes = 32 * 2 * 32 * (128 + 128)       # q and o of 32 heads in bf16 activations
    assert kv_bytes["bf16"] - queries_bytes == pytest.approx(2 * (kv_bytes["fp8"] - queries_bytes))
    # priced by the roofline, a memory-bound decode attention takes time in proportion to its bytes
    from profiles.roofline import RooflineLatencyModel
    roof = RooflineLatencyModel("h100-sxm")
    ops = {kv: attention_ops(spec, shape, Parallelism(), "bf16", kv)[0] for kv in ("bf16", "fp8")}
    busy = {kv: roof.op_seconds(op) - roof.efficiency.launch_s for kv, op in ops.items()}
    assert busy["fp8"] / busy["bf16"] == pytest.approx(ops["fp8"].bytes / ops["bf16"].bytes)


@pytest.mark.skipif(src.data_root() is None, reason="aiconfigurator-core not installed (extra gpu-data)")
def test_the_measured_attention_lookup_uses_the_kv_dtype():
    from profiles.measured import load_measured
    from profiles.measured.attention import GENERATION
    spec = get_model("llama-3.1-8b")
    op = attention_ops(spec, StepShape(decode_seqs=16, decode_context_tokens=16 * 2048), Parallelism(), "bf16", "fp8")[0]
    model = load_measured("h100-sxm", "bf16", kv_dtype="fp8")
    assert model.kv_dtype == "fp8" and model.describe()["kernels"]["gemm"] != "roofline"
    table = model.attention[GENERATION]
    expected, _ = table.seconds("fp8", 32, 8, 128, 16, 2048 + 1)
    assert model.op_seconds(op) == pytest.approx(expected)
    plain = load_measured("h100-sxm", "bf16")
    assert plain.kv_dtype == "bf16"
    assert plain.op_seconds(op) == pytest.approx(table.seconds("bf16", 32, 8, 128, 16, 2048 + 1)[0])


def test_catalog_lists_models_and_hardware_with_key_figures(capsys):
    assert main(["catalog", "models"]) == 0
    out = capsys.readouterr().out
    assert "NAME" in out and "llama-3.1-405b" in out and "gpt-oss-120b" in out
    line = next(x for x in out.splitlines() if x.startswith("qwen3-30b-a3b "))
    assert "30.53" in line and "3.35" in line and "40960" in line and "128x8" in line
    assert main(["catalog", "hardware"]) == 0
    hw = capsys.readouterr().out.splitlines()
    assert hw[0].split()[:6] == ["ID", "NAME", "MEM_GB", "MEM_TB/S", "BF16_TFLOPS", "FP8_TFLOPS"]
    a100 = next(x for x in hw if x.startswith("a100-80gb "))
    assert " 80 " in a100 and " 312 " in a100 and " - " in a100      # no FP8 tensor cores


def test_the_plausible_ranges_hold_every_catalog_entry_with_10x_to_spare():
    """The plausibility ranges of user hardware (profiles.hardware_file.PLAUSIBLE) are not fitted to refuse
    anything real: every catalog datasheet figure lies at least 10x inside them."""
    from profiles.hardware import HARDWARE
    from profiles.hardware_file import PLAUSIBLE
    for spec in HARDWARE.values():
        for name, (lo, hi) in PLAUSIBLE.items():
            values = spec.peak_flops.values() if name == "peak_flops" else [getattr(spec, name)]
            for value in values:
                if value == 0 and name in ("tdp_w", "idle_w", "host_w_per_gpu", "cuda_total_bytes"):   # (0: unknown)
                    continue
                margin = 1 if name in ("gpus_per_node", "compute_units") else 10   # (counts: 1 is real; a CPU's 2 cores)
                assert lo * margin <= value <= hi / margin, (spec.id, name, value)
