"""`draftsim estimate` / `simulator.estimate_step` (the simulator's own step price) and `draftsim validate
--published` (predicting the registry of published GPU measurements)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import simulator
from models.catalog import get_model
from models.step import Parallelism
from scenarios.validation.published import points as pts
from scenarios.validation.published.predict import predict, serving_scenario
from scenarios.validation.published.report import main as published_main
from sim_helpers import scenario
from simulator.cli import main as cli
from simulator.errors import ScenarioError


def test_estimate_equals_the_simulated_step_of_the_same_composition():
    result = simulator.run(scenario(workload={"num_requests": 60}))
    steps = result.steps
    dec = steps[(steps.prefill_tokens == 0) & (steps.decode_seqs > 1)]
    # A decode step whose requests all hold ctx/b tokens has the same Σ context as the logged one.
    dec = dec[dec.decode_context_tokens % dec.decode_seqs == 0].iloc[0]
    b, ctx = int(dec.decode_seqs), int(dec.decode_context_tokens)
    # the scenario's scheduler limits set the engine's CUDA-graph capture sizes (64 sequences)
    est = simulator.estimate_step("llama-3-8b", "h100-sxm", batch=b, context_tokens=ctx // b,
                                  scheduler={"max_batch_size": 64})
    assert est["seconds"] == pytest.approx(dec.duration_s, rel=1e-12)
    assert est["engine_seconds"] == pytest.approx(dec.engine_s, rel=1e-12)
    pre = steps[(steps.prefill_seqs == 1) & (steps.decode_seqs == 0)].iloc[0]
    est = simulator.estimate_step("llama-3-8b", "h100-sxm", prefill_tokens=int(pre.prefill_tokens),
                                  scheduler={"max_batch_size": 64})
    assert est["seconds"] == pytest.approx(pre.duration_s, rel=1e-12)
    assert est["engine_seconds"] == pytest.approx(pre.engine_s, rel=1e-12)


def test_a_step_beyond_the_derived_context_is_priced_with_allow_long_context_as_a_run_prices_it(capsys):
    """A run with cluster.engine.allow_long_context serves a max_model_len above the context the release derives
    (VLLM_ALLOW_LONG_MAX_MODEL_LEN), but `draftsim estimate` refused every step past it with no way round, and
    estimate_step's engine={"allow_long_context": True} was taken and ignored (session 24): the step is priced as
    the run's own step of that composition, and refused on a release without the variable, naming the flag."""
    result = simulator.run(scenario(workload={"num_requests": 1, "prompt_tokens": {"kind": "fixed", "value": 10000},
                                              "output_tokens": {"kind": "fixed", "value": 8}},
                                    cluster={"max_model_len": 16384, "engine": {"allow_long_context": True}},
                                    scheduler={"max_batched_tokens": 16384}))
    dec = result.steps[(result.steps.prefill_tokens == 0) & (result.steps.decode_seqs == 1)].iloc[0]
    ctx = int(dec.decode_context_tokens)
    assert ctx > 8192
    est = simulator.estimate_step("llama-3-8b", "h100-sxm", context_tokens=ctx, engine={"allow_long_context": True},
                                  scheduler={"max_batch_size": 64})
    assert est["seconds"] == pytest.approx(dec.duration_s, rel=1e-12)
    args = ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--context", str(ctx)]
    assert cli(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "allowed: at most 8192, or --allow-long-context" in err, err
    assert cli([*args, "--allow-long-context", "--json", "--max-num-seqs", "64"]) == 0
    assert json.loads(capsys.readouterr().out)["seconds"] == est["seconds"]
    assert cli([*args, "--allow-long-context", "--engine-version", "0.5.3"]) == 2
    assert capsys.readouterr().err.startswith("draftsim estimate: error: --allow-long-context: vllm 0.5.3 has no "
                                              "VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    assert simulator.estimate_step("llama-3-8b", "h100-sxm", context_tokens=4000, engine={"allow_long_context": True}) \
        == simulator.estimate_step("llama-3-8b", "h100-sxm", context_tokens=4000)   # (within it: nothing changes)


def test_estimate_breakdown_adds_up_and_names_its_sources():
    est = simulator.estimate_step("llama-3-70b", "h100-sxm", tp=8, batch=32, context_tokens=1000, query_tokens=5)
    assert sum(est["breakdown"].values()) == pytest.approx(est["kernel_seconds"], rel=1e-3)
    assert est["seconds"] == pytest.approx(est["kernel_seconds"] + est["engine_seconds"], rel=1e-12)
    assert set(est["breakdown"]) >= {"gemm", "attn_decode", "allreduce", "norm"}
    assert est["step"]["query_tokens"] == 5
    roof = simulator.estimate_step("llama-3-70b", "h100-sxm", tp=8, batch=32, context_tokens=1000,
                                   latency={"source": "roofline", "engine_time": False})
    assert roof["engine_seconds"] == 0.0 and roof["latency_source"]["source"] == "roofline"


def test_estimate_says_what_the_power_limit_adds():
    """The breakdown prices ops as the tables do; `power_limit` is what the sustained-load limit adds to the
    dense part (profiles.measured.power_limit), so the two add up to the kernels' time."""
    for kwargs in ({"batch": 32, "context_tokens": 2048, "query_tokens": 16}, {"prefill_tokens": 2048}):
        est = simulator.estimate_step("llama-3-8b", "h100-sxm", **kwargs)
        limit = est["power_limit"]
        assert 0.85 < limit["compute_bound_share"] < 0.9 and 1.09 < limit["factor"] < 1.1 and limit["seconds"] > 0
        assert sum(est["breakdown"].values()) + limit["seconds"] == pytest.approx(est["kernel_seconds"], rel=1e-9)
    decode = simulator.estimate_step("llama-3-8b", "h100-sxm", batch=64, context_tokens=2048)["power_limit"]
    assert decode["compute_bound_share"] == 0.0 and decode["seconds"] == 0.0
    h200 = simulator.estimate_step("llama-3-8b", "h200", prefill_tokens=2048)["power_limit"]
    assert h200["data"].endswith("h200-2026-11-27") and h200["factor"] > 1.14   # its own, steeper curve
    assert simulator.estimate_step("llama-3-8b", "b200", prefill_tokens=2048)["power_limit"] is None
    assert simulator.estimate_step("llama-3-8b", "h100-sxm", prefill_tokens=2048,
                                   latency={"source": "roofline"})["power_limit"] is None


@pytest.mark.parametrize("kwargs,field", [({"tp": 3}, "tp"), ({"batch": 0}, "batch"), ({"dtype": "fp6"}, "dtype"),
                                          ({"latency": {"source": "nope"}}, "latency.source"),
                                          ({"latency": {"framework": "tgi"}}, "latency.framework")])
def test_estimate_bad_input_names_the_argument(kwargs, field):
    with pytest.raises(ScenarioError, match=f"^{field}"):
        simulator.estimate_step("llama-3-8b", "h100-sxm", **kwargs)


def test_estimate_refuses_by_the_memory_cuda_reports():
    """`check_step_fits` refuses only what certainly cannot run. It compared weights + KV with the datasheet's
    decimal 80 GB for an H100, which CUDA reports as 79.19 GiB = 85.03 GB (profiles/hardware.py), so a step of
    82 GB was refused (2026-11-28). Worked by hand: Llama-3.1-8B in bf16 holds 16.06 GB of weights and 128 KiB of
    KV per token; 64 requests of 7,868 tokens hold 64 x 7,868 x 131,072 B = 66.0 GB of KV (82.1 GB in all: runs);
    of 8,401 tokens 70.5 GB (86.5 GB: refused, naming the GPU's 79.2 GiB)."""
    spec = get_model("llama-3.1-8b")
    assert spec.kv_bytes_per_token_per_gpu(Parallelism(1, 1), "bf16") == 131_072
    assert 80e9 < spec.weight_bytes("bf16") + 64 * 7_868 * 131_072 < 79.19 * 2 ** 30 \
        < spec.weight_bytes("bf16") + 64 * 8_401 * 131_072
    assert simulator.estimate_step("llama-3.1-8b", "h100-sxm", batch=64, context_tokens=7_867)["seconds"] > 0
    with pytest.raises(ScenarioError, match=r"^batch: .* h100-sxm has 79\.2 GiB$"):
        simulator.estimate_step("llama-3.1-8b", "h100-sxm", batch=64, context_tokens=8_400)


def test_estimate_takes_numpy_counts_and_refuses_numpy_booleans():
    """A NumPy integer (a notebook's `for b in np.arange(...)`) was refused as 'batch: must be an integer >= 1,
    got np.int64(4)' (2026-11-27); it prices as the Python int does. A NumPy boolean stays refused."""
    given = simulator.estimate_step("llama-3-8b", "h100-sxm", batch=np.int64(4), tp=np.int32(1),
                                    context_tokens=np.uint16(100))
    assert given == simulator.estimate_step("llama-3-8b", "h100-sxm", batch=4, context_tokens=100)
    with pytest.raises(ScenarioError, match=r"^batch: must be an integer >= 1"):
        simulator.estimate_step("llama-3-8b", "h100-sxm", batch=np.True_)


def test_estimate_takes_path_objects_for_a_model_or_hardware_file():
    """A Path to a config.json or a hardware YAML (what a notebook builds with pathlib) was refused where its text
    ran: 'model: expected a catalog name, a path to a config.json ...; got PosixPath(...)', 'hardware: unknown
    hardware ...'. It prices as its text does."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    config, hardware = root / "tests/data/hf_configs/Llama-3.1-8B/config.json", root / "scenarios/hardware/h20.yaml"
    assert simulator.estimate_step(config, hardware, batch=4) == simulator.estimate_step(str(config), str(hardware),
                                                                                         batch=4)


def test_estimate_cli(capsys):
    assert cli(["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--batch", "8", "--context", "512"]) == 0
    out = capsys.readouterr().out
    assert "engine time" in out and "gemm" in out and "latency:" in out
    assert cli(["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--prefill-tokens", "1024",
                "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["step"]["prefill_tokens"] == 1024 and data["seconds"] > 0
    assert cli(["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--prefill-tokens", "2048"]) == 0
    assert "power limit" in capsys.readouterr().out
    assert cli(["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--tp", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("draftsim estimate: error: --tp:") and len(err.strip().splitlines()) == 1
    assert cli(["estimate", "--model", "nope", "--hardware", "h100-sxm"]) == 2
    assert "or a catalog-format model YAML" in capsys.readouterr().err


def test_estimate_host_cpu_takes_a_calibration_as_the_engine_block_does(capsys):
    """`--host-cpu 9000` was looked up as a host's name ('unknown host', the error advising a
    {calibration_us: N} the command line cannot give); a number is the host's calibration_us now."""
    args = ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--batch", "8", "--async-scheduling",
            "off", "--json"]
    assert cli([*args, "--host-cpu", "9000"]) == 0
    flag = json.loads(capsys.readouterr().out)
    api = simulator.estimate_step("llama-3-8b", "h100-sxm", batch=8,
                                  engine={"async_scheduling": False, "host_cpu": {"calibration_us": 9000}})
    default = simulator.estimate_step("llama-3-8b", "h100-sxm", batch=8, engine={"async_scheduling": False})
    assert flag["seconds"] == api["seconds"] != default["seconds"]
    assert flag["engine_time"]["host_scale"] == api["engine_time"]["host_scale"] == pytest.approx(9000 / 8730, rel=1e-4)
    assert cli([*args, "--host-cpu", "1"]) == 2
    assert capsys.readouterr().err.startswith("draftsim estimate: error: --host-cpu: calibration_us: 1.0")


def test_estimate_takes_a_catalog_format_model_yaml(tmp_path, capsys):
    """README: `draftsim estimate --model` takes what `cluster.model` does, a catalog-format YAML too (its
    --help and its unknown-model error named only a catalog name or a config.json)."""
    import dataclasses

    import yaml

    from models.catalog import get_model
    spec = get_model("llama-3-8b")
    fields = {k: v for k, v in dataclasses.asdict(spec).items() if k not in ("name", "source")}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"my-llama": fields}))
    args = ["estimate", "--hardware", "h100-sxm", "--batch", "8", "--context", "512", "--json"]
    assert cli([*args, "--model", "llama-3-8b"]) == 0
    catalog = json.loads(capsys.readouterr().out)
    assert cli([*args, "--model", str(path)]) == 0
    mine = json.loads(capsys.readouterr().out)
    assert mine["step"]["model"] == "my-llama" and mine["seconds"] == catalog["seconds"]


def test_unknown_framework_version_is_a_one_line_exit_2(tmp_path, capsys):
    out = tmp_path / "o"
    code = cli(["run", "scenarios/quickstart.yaml", "--out", str(out), "--set", "cluster.latency.version=9.9.9",
                "--set", "cluster.latency.source=measured", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert err.startswith("draftsim: error: cluster.latency.") and len(err.strip().splitlines()) == 1


def test_the_registry_is_well_formed():
    points = pts.load_points()
    assert len(points) >= 30
    assert len({p.id for p in points}) == len(points)
    for p in points:
        assert p.source.url.startswith("http") and p.source.locator
    kinds = {p.kind for p in points}
    assert {"gemm", "decode_step", "prefill_step", "ttft", "itl", "output_throughput", "spec_speedup"} <= kinds


def test_serving_points_become_scenarios_of_their_setup():
    points = {p.id: p for p in pts.load_points()}
    nim = serving_scenario(points["nim-1.8.0-h100x2-llama33-70b-fp8-tp2-isl5000-osl500-c25-itl"])
    assert nim["workload"]["arrival"] == {"process": "closed_loop", "concurrency": 25}
    assert nim["cluster"]["parallelism"]["tp"] == 2 and nim["cluster"]["dtype"] == "fp8"
    assert nim["cluster"]["latency"]["framework"] == "trtllm"
    batch = serving_scenario(points["trtllm-v061doc-h100-sxm-llama2-7b-fp8-tp1-bs768-isl128-osl128"])
    assert batch["scheduler"] == {"kind": "vllm", "max_batch_size": 768, "max_batched_tokens": 768 * 128}


def test_a_published_kv_dtype_is_the_one_predicted():
    """A point whose publication states its KV dtype carries it (kv_dtype: TensorRT-LLM v0.6.1's FP8 builds used
    --fp8_kv_cache), and its scenario runs it; a point that does not state it runs its engine release's default."""
    points = {p.id: p for p in pts.load_points()}
    stated = serving_scenario(points["trtllm-v061doc-h100-sxm-llama2-7b-fp8-tp1-bs768-isl128-osl128"])
    assert stated["cluster"]["kv_dtype"] == "fp8"
    unstated = points["gpustack-h100-qwen3-32b-fp8-trtllm120rc1-tp1-isl128-reqtput"]
    assert unstated.kv_dtype is None and "kv_dtype" not in serving_scenario(unstated)["cluster"]


def test_estimate_prices_the_kv_dtype_its_engine_release_runs(capsys):
    """fp8 weights without --kv-dtype: vLLM's and SGLang's auto keep a bf16 KV cache (a catalog model's fp8 weights
    declare none), TensorRT-LLM's FP8 recipe an fp8 one; --kv-dtype wins. Before, every engine read an fp8 cache."""
    step = dict(model="llama-3-8b", hardware="h100-sxm", dtype="fp8", batch=32, context_tokens=4096)
    runs = {fw: simulator.estimate_step(**step, latency={"framework": fw}) for fw in ("vllm", "sglang", "trtllm")}
    assert [runs[fw]["step"]["kv_dtype"] for fw in ("vllm", "sglang", "trtllm")] == ["bf16", "bf16", "fp8"]
    fp8 = simulator.estimate_step(**step, latency={"framework": "vllm"}, kv_dtype="fp8")
    assert fp8["step"]["kv_dtype"] == "fp8" and fp8["seconds"] < runs["vllm"]["seconds"]
    assert cli(["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--dtype", "fp8", "--batch", "8",
                "--framework", "trtllm", "--kv-dtype", "bf16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["step"]["kv_dtype"] == "bf16"


def test_a_kernel_and_a_step_point_are_predicted_within_reason():
    points = {p.id: p for p in pts.load_points()}
    for ident in ("vllm-pr49363-h100-bf16-m1-n12288-k5376", "trtllm-v05-h100-sxm-llama2-7b-fp8-tp1-isl2048-first-token"):
        p = points[ident]
        pred = predict(p)
        assert np.isfinite(pred.value) and abs(pred.value / p.seconds_or_value - 1) < 1.0


def test_validate_published_cli_writes_its_tables(tmp_path, capsys):
    code = published_main(["--kind", "gemm", "--kind", "prefill_step", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "overall" in out and "median |err|" in out
    import pandas as pd
    frame = pd.read_csv(tmp_path / "points.csv")
    assert (frame["status"] == "predicted").all() and len(frame) >= 20
    assert np.isfinite(frame["error"]).all()
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert set(summary["group"]) == {"kind", "pricing", "publication", "overall"}
    assert published_main(["--kind", "gemm", "--id", "no-such-point", "--out", str(tmp_path)]) == 2


def test_catalog_hardware_says_which_gpus_have_measured_kernels(capsys):
    from profiles.measured import available
    assert cli(["catalog", "hardware"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "mi300x" in lines and "none (roofline)" in lines["mi300x"]
    for fw, versions in available("h100-sxm").items():
        assert f"{fw} {versions[-1]}" in lines["h100-sxm"]


def test_speculative_points_take_their_acceptance_from_the_registry():
    """Every speculative point that can be predicted names a registry row; the prediction uses it (its note
    says which) and the EAGLE-3 chain on SGLang at batch 8 lands within 25 % of the published speedup."""
    from scenarios.validation.published.points import load_points
    spec = [p for p in load_points() if p.kind in ("spec_speedup", "spec_tpot")]
    assert len(spec) >= 40
    assert sum(p.acceptance_entry is not None for p in spec) >= len(spec) - 2  # the two vLLM blog headlines have none
    point = next(p for p in spec if p.id == "eagle3-paper-sglang-h100-llama31-8b-chain3-bs8")
    pred = predict(point)
    assert point.acceptance_entry in pred.note
    assert abs(pred.value / point.value - 1.0) < 0.25


def test_an_unknown_registry_row_is_a_one_line_error(tmp_path):
    import yaml
    from scenarios.validation.published.points import POINTS_FILE, load_points
    raw = yaml.safe_load(POINTS_FILE.read_text())
    entry = next(p for p in raw if p.get("acceptance_entry"))
    entry["acceptance_entry"] = "no-such-row"
    path = tmp_path / "points.yaml"
    path.write_text(yaml.safe_dump([entry]))
    with pytest.raises(ValueError, match="acceptance_entry: no registry row 'no-such-row'"):
        load_points(path)


def test_mtp_depth_points_take_two_independent_rows():
    """TensorRT-LLM's MTP depth sweep (points_spec.yaml) is predicted from DeepSeek-V3's first-position
    acceptance decayed to the nebius K = 7 length, never from the blog's own acceptance column."""
    from scenarios.validation.published.points import load_points
    points = {p.id: p for p in load_points() if p.id.startswith("trtllm-blog1-")}
    assert sorted(int(p.w("num_speculative_tokens")) for p in points.values()) == [1, 2, 3, 4, 5]
    for p in points.values():
        assert p.acceptance_first_alpha_entry == "deepseek-v3-report-mtp-second-token"
        assert not p.acceptance.same_run and "trtllm-blog1" not in p.acceptance_entry
    pred = predict(points["trtllm-blog1-b200x8-deepseek-r1-fp4-bs1-mtp2"])
    assert "deepseek-v3-report-mtp-second-token" in pred.note and "nebius" in pred.note
    assert abs(pred.value / points["trtllm-blog1-b200x8-deepseek-r1-fp4-bs1-mtp2"].value - 1.0) < 0.2


def test_sglang_tree_points_are_predicted_from_the_rows_tokens_per_step():
    from scenarios.validation.published.points import load_points
    point = next(p for p in load_points() if p.id == "eagle3-paper-sglang-h100-llama31-8b-bs1-eagle3")
    pred = predict(point)
    assert "tree: 8 steps, top-8, 64 tokens" in pred.note and point.acceptance_entry in pred.note
    assert abs(pred.value / point.value - 1.0) < 0.25


@pytest.mark.parametrize("change, message", [
    ({"acceptance_first_alpha_entry": "no-such-row"}, "acceptance_first_alpha_entry: no registry row"),
    ({"acceptance_entry": None, "acceptance_first_alpha_entry": "deepseek-v3-report-mtp-second-token"},
     "acceptance_first_alpha_entry: needs acceptance_entry"),
])
def test_a_bad_first_alpha_row_is_a_one_line_error(tmp_path, change, message):
    import yaml
    from scenarios.validation.published.points import POINTS_FILES, load_points
    spec_file = next(f for f in POINTS_FILES if f.name == "points_spec.yaml")
    entry = dict(yaml.safe_load(spec_file.read_text())[0], **change)
    path = tmp_path / "points.yaml"
    path.write_text(yaml.safe_dump([entry]))
    with pytest.raises(ValueError, match=message):
        load_points(path)


def test_sglang_points_get_sglangs_chunked_prefill_size():
    """SGLang's default chunked_prefill_size by GPU memory and release (profiles.engine_time.batch_defaults):
    a 40 GB A100 point without a release runs the newest modelled SGLang, 4096 tokens a chunk (before: 8192 for
    every SGLang point, which under SGLang's memory rule also reserved 12 GiB of activations on a 37 GiB GPU)."""
    from scenarios.validation.published.predict import scheduler_defaults
    assert scheduler_defaults("sglang", "a100-40gb", None)["max_batched_tokens"] == 4096
    assert scheduler_defaults("sglang", "a100-40gb", "0.4.6")["max_batched_tokens"] == 8192
    assert scheduler_defaults("sglang", "h100-sxm", "0.5.3")["max_batched_tokens"] == 8192
    assert scheduler_defaults("sglang", "b200", "0.5.9")["max_batched_tokens"] == 16384


def test_vllm_serve_points_get_the_api_servers_batching_defaults():
    """vLLM V1's EngineArgs.get_batch_defaults keys max_num_batched_tokens by UsageContext: the offline LLM
    class 16384 (>= 70 GiB, not A100) / 8192, the API server (`vllm serve`) 8192 / 2048; max_num_seqs 1024 /
    256 for both. Before, every vLLM V1 point got the LLM class's (a `vllm bench serve` run on one H100 was
    simulated with 16384-token steps)."""
    from scenarios.validation.published.predict import Unpredictable, scheduler_defaults
    assert scheduler_defaults("vllm", "h100-sxm", "0.11.0")["max_batched_tokens"] == 16384
    api = scheduler_defaults("vllm", "h100-sxm", "0.11.0", "api_server")
    assert (api["kind"], api["max_batched_tokens"], api["max_batch_size"]) == ("vllm_v1", 8192, 1024)
    a100 = scheduler_defaults("vllm", "a100-80gb", "0.11.0", "api_server")
    assert (a100["max_batched_tokens"], a100["max_batch_size"]) == (2048, 256)
    assert scheduler_defaults("vllm", "a100-80gb", "0.11.0")["max_batched_tokens"] == 8192
    with pytest.raises(Unpredictable, match="entrypoint 'serve'"):
        scheduler_defaults("vllm", "h100-sxm", "0.11.0", "serve")
    # per release, as profiles.engine_time.batch_defaults reads them (the A100 exception is vLLM 0.9.0's, PR
    # #17885: 0.8.5 keyed on >= 70 GiB alone, 0.8.4 on the device name, 0.8.0-0.8.3 gave every GPU 1024)
    for version, seqs, tokens in (("0.8.2", 1024, 8192), ("0.8.4", 256, 2048), ("0.8.5", 1024, 8192), ("0.9.0", 256, 2048)):
        got = scheduler_defaults("vllm", "a100-80gb", version, "api_server")
        assert (got["max_batch_size"], got["max_batched_tokens"]) == (seqs, tokens), version
    points = {p.id: p for p in pts.load_points()}
    served = serving_scenario(points["gpustack-h100-gpt-oss-120b-vllm0102-tp1-isl2000-reqtput"])
    assert served["scheduler"]["max_batched_tokens"] == 8192 and served["cluster"]["dtype"] == "mxfp4"
    assert served["cluster"]["kv_cache"] == {"prefix_caching": True}   # V1's default
    assert served["cluster"]["model"] == "gpt-oss-120b"
    assert all(p.w("entrypoint") == "api_server" for i, p in points.items() if i.startswith("vllm-pr25444-"))


def _served_beyond_kv_point(n: int):
    """A `vllm bench serve` burst of 32000-token prompts for Qwen3-32B bf16 on one H100 SXM: its weights leave
    draftsim's replica ~6 GiB of KV (fewer tokens than one prompt), while the engine that ran it served them all."""
    return pts.Point.model_validate({
        "id": "synthetic-h100-qwen3-32b-isl32000", "kind": "request_throughput", "statistic": "single", "value": 0.09,
        "unit": "req/s", "hardware": "h100-sxm", "gpus": 1, "engine": "vllm", "framework_version": "0.11.0",
        "model": "Qwen/Qwen3-32B", "dtype": "bf16", "tp": 1, "pp": 1,
        "workload": {"mode": "offline", "entrypoint": "api_server", "num_prompts": n, "input_tokens": 32000,
                     "output_tokens": 100},
        "source": {"title": "synthetic", "url": "https://example.org", "locator": "none"}})


def test_a_run_that_drops_the_published_requests_is_a_failed_prediction():
    """Before: every request was dropped (exceeds_kv_capacity), the metric of no requests was NaN, the point
    counted as predicted and every summary row it entered read nan (exit 0). Now the prediction fails with the
    reason, run_points marks it failed and the summary stays finite."""
    from scenarios.validation.published.predict import DroppedRequests
    from scenarios.validation.published.report import run_points, summarize
    point = _served_beyond_kv_point(2)
    # under vLLM the start-up check refuses a KV cache smaller than one max_model_len request (Qwen3-32B's
    # 40,960 tokens): the published engine started, so that is a failed prediction too
    with pytest.raises(DroppedRequests, match=r"contradicts the published run.*cluster.max_model_len"):
        predict(point)
    sglang = point.model_copy(update={"engine": "sglang", "framework_version": "0.5.3"})   # (no start-up check)
    with pytest.raises(DroppedRequests, match=r"dropped 2 of 2 requests .*exceeds_kv_capacity 2"):
        predict(sglang)
    ok = pts.load_points()
    ok = [p for p in ok if p.id == "vllm-pr49363-h100-bf16-m1-n12288-k5376"]
    frame = run_points([point, sglang] + ok)
    assert list(frame["status"]) == ["failed", "failed", "predicted"]
    assert "max_model_len" in frame["note"].iloc[0] and "exceeds_kv_capacity" in frame["note"].iloc[1]
    summary = summarize(frame)
    assert np.isfinite(summary["median_abs_error"]).all() and (summary["n"] == 1).all()


def test_a_non_finite_prediction_is_never_a_headline_number(monkeypatch):
    from scenarios.validation.published import report
    from scenarios.validation.published.predict import Prediction
    monkeypatch.setattr(report, "predict", lambda p, latency=None: Prediction(float("nan"), "measured"))
    frame = report.run_points(pts.load_points()[:1])
    assert list(frame["status"]) == ["failed"] and "not a finite number" in frame["note"].iloc[0]


def test_the_held_out_points_load_and_each_becomes_a_scenario_of_its_setup():
    """points_heldout.yaml is part of the registry (POINTS_FILES) and every point names a catalog model (the
    FP8 checkpoints Qwen3-8B-FP8 / Qwen3-32B-FP8 are their models in fp8_block) and an engine draftsim models."""
    heldout = next(f for f in pts.POINTS_FILES if f.name == "points_heldout.yaml")
    points = pts.load_points(heldout)
    assert len(points) == 20 and {p.id for p in points} <= {p.id for p in pts.load_points()}
    for p in points:
        sc = serving_scenario(p)
        assert sc["cluster"]["model"] in ("qwen3-32b", "qwen3-8b", "gpt-oss-20b")
        assert sc["cluster"]["dtype"] == p.dtype and sc["cluster"]["latency"]["framework"] == p.engine
    trt = next(p for p in points if p.id.endswith("fp8-trtllm120rc1-tp1-isl32000-reqtput"))
    assert serving_scenario(trt)["cluster"]["engine"] == {"chunked_prefill": True}


def test_estimate_names_the_scheduler_fields_by_their_flags():
    """A scheduler field in an error, bare or under its block's name, reads as the flag that sets it: the engine
    rule's 'or set scheduler.max_batch_size' read 'or set scheduler.--max-num-seqs' (the flag spliced into the
    field's name)."""
    from simulator.errors import ScenarioError
    from simulator.workflows.estimate import _in_flags
    text = _in_flags(ScenarioError("scheduler.max_batched_tokens", "512 is below 1024; allowed: max_batched_tokens "
                                   ">= 1024, or set scheduler.max_batch_size"))
    assert text == "--max-num-batched-tokens: 512 is below 1024; allowed: --max-num-batched-tokens >= 1024, or set " \
                   "--max-num-seqs"


# ---- draftsim validate --published: ShareGPT points without published lengths ----

def _point(ident: str):
    return next(p for p in pts.load_points() if p.id == ident)


def test_published_sharegpt_points_draw_their_clients_lengths():
    """(simulator.core.bench_clients; before, Unpredictable: the lengths are not published with the points)"""
    import math
    from scenarios.validation.published.predict import Unpredictable
    ci = _point("vllm-ci-9515-h200-throughput-llama8B_tp1-sharegpt200")
    assert ci.w("input_tokens") is None   # (before: Unpredictable, lengths not published)
    workload = serving_scenario(ci)["workload"]
    assert workload["dataset"] == {"client": "vllm", "name": "sharegpt", "special_tokens": 1, "seed": 0}
    assert workload["num_requests"] == 200 and "prompt_tokens" not in workload
    value = predict(ci).value
    assert math.isfinite(value) and 0.5 < value / ci.value < 2.0
    # vllm bench serve's defaults where GPUStack's page leaves them out: 1000 prompts, Qwen's tokenizer (no BOS)
    qwen = _point("gpustack-a100-qwen3-32b-vllm0110-sharegpt-tpot")
    workload = serving_scenario(qwen)["workload"]
    assert workload["dataset"]["special_tokens"] == 0 and workload["dataset"]["release"] == "0.11.0"
    assert workload["num_requests"] == 1000
    # a client not known for the engine, a tokenizer not known: still not expressible, saying why
    with pytest.raises(Unpredictable, match="benchmark client .* engine 'sglang'"):
        serving_scenario(ci.model_copy(update={"engine": "sglang", "framework_version": "0.5.3"}))
    with pytest.raises(Unpredictable, match="special tokens"):
        serving_scenario(ci.model_copy(update={"model": "openai/gpt-oss-120b"}))


def test_gpustack_a100_qwen3_32b_row_runs_the_max_model_len_its_source_states():
    """The ShareGPT row is the vLLM block of the page's 'Choosing the Inference Engine' section, served with
    `vllm serve Qwen/Qwen3-32B --max-model-len 32768`; without it the point took the config's 40960, which vLLM
    0.11.0's own accounting cannot hold on an A100-80GB at 0.9 (10.30 GiB after the weights, 10.00 GiB for one
    request's KV, and the profile run's MLP alone 0.29 GiB), and the point failed as DroppedRequests."""
    import math
    qwen = _point("gpustack-a100-qwen3-32b-vllm0110-sharegpt-tpot")
    assert serving_scenario(qwen)["cluster"]["max_model_len"] == 32768
    assert math.isfinite(predict(qwen).value)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 0.0, -9.4])
def test_a_published_value_that_is_no_finite_positive_number_is_a_one_line_error(tmp_path, capsys, value):
    """`value: .inf` was priced (points.csv published inf, error empty, exit 0) where NaN, 0 and negatives were
    refused naming `value`; the same holds for a point's published acceptance length."""
    import yaml
    from contract import assert_one_line
    point = {"id": "x", "kind": "gemm", "statistic": "single", "value": value, "unit": "us", "hardware": "h100-sxm",
             "gpus": 1, "engine": "cublas", "dtype": "bf16", "tp": 1, "pp": 1,
             "workload": {"m": 64, "n": 2112, "k": 7168},
             "source": {"title": "t", "url": "u", "date": "2025-01-01", "locator": "l"}}
    path = tmp_path / "points.yaml"
    path.write_text(yaml.safe_dump([point]))
    assert cli(["validate", "--published", "--points", str(path), "--out", str(tmp_path / "pub")]) == 2
    assert_one_line(capsys.readouterr().err, "points.yaml: point x: value: Input should be")
    assert not (tmp_path / "pub").exists()
    spec = next(p for p in yaml.safe_load(pts.POINTS_FILE.read_text()) if p.get("acceptance"))
    spec["acceptance"]["mean_accepted_tokens_per_step"] = value
    path.write_text(yaml.safe_dump([spec]))
    with pytest.raises(ValueError, match="acceptance.mean_accepted_tokens_per_step: Input should be"):
        pts.load_points(path)
