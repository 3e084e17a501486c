"""vLLM V1's KV budget (simulator.cluster.vllm_memory) against published start-up logs
(profiles/data/vllm_memory/startup_logs.yaml: url + locator each), and the factory's use of it."""
from pathlib import Path

import pytest
import yaml

from models.catalog import get_model
from models.step import Parallelism
from profiles.hardware import get_hardware
from simulator.cluster.factory import build_replica_kind, deployment_release, make_latency_model, max_num_seqs
from simulator.cluster.replica_memory import free_bytes_per_gpu, kv_capacity_tokens, vllm_profile_run
from simulator.cluster.vllm_memory import (GIB, ProfileRun, activation_peak_bytes, device_total_bytes,
                                           mxfp4_backend, mxfp4_layout_extra_bytes)
from simulator.config.engine import EngineConfig
from simulator.config.serving import LatencyConfig, MoeConfig, ParallelismConfig, SchedulerConfig

LOGS = yaml.safe_load((Path(__file__).parents[2] / "profiles/data/vllm_memory/startup_logs.yaml").read_text())


def _case(entry):
    return (get_model(entry["model"]), Parallelism(tp=entry["tp"]), get_hardware(entry["hardware"]),
            ProfileRun(entry["version"], entry.get("max_num_batched_tokens", 8192), entry.get("max_num_seqs", 1024)))


@pytest.mark.parametrize("entry", [e for e in LOGS if "kv_gib" in e], ids=lambda e: e["id"])
def test_kv_budget_matches_the_logged_one(entry):
    """Within 0.5 % of the logged "Available KV cache memory" (seen: +0.2 %, +0.3 %); the old rule (datasheet
    HBM × utilization − weights) missed it by > 3 % (55.82 vs 58.11 GiB)."""
    model, par, hw, run = _case(entry)
    util = entry["gpu_memory_utilization"]
    free = free_bytes_per_gpu(hw, model, par, "bf16", util, profile=run) / GIB
    assert free == pytest.approx(entry["kv_gib"], rel=0.005)
    old = free_bytes_per_gpu(hw, model, par, "bf16", util) / GIB
    assert abs(old - entry["kv_gib"]) / entry["kv_gib"] > 0.03
    tokens = kv_capacity_tokens(hw, model, par, "bf16", util, profile=run)
    assert tokens == pytest.approx(entry["kv_tokens"], rel=0.005)


@pytest.mark.parametrize("entry", [e for e in LOGS if "activation_gib" in e], ids=lambda e: e["id"])
def test_activation_peak_matches_the_logged_one(entry):
    """The profile run's activation peak within 7 % (seen: 4-6 % under, 0.11-0.12 GiB: the Triton top-k/top-p
    buffer of 0.19.0 and the small tensors of the dummy run are not counted)."""
    model, par, _, run = _case(entry)
    assert activation_peak_bytes(model, par, run) / GIB == pytest.approx(entry["activation_gib"], rel=0.07)


@pytest.mark.parametrize("entry", [e for e in LOGS if "weights_gib" in e], ids=lambda e: e["id"])
def test_weights_as_loaded_match_the_logged_ones(entry):
    """"Model loading took X GiB": the checkpoint's bytes (within 1 %: replicated norms are shared out by tp, -0.8 %
    at tp=4), and for MXFP4 experts the backend's layout (within 0.5 %: Triton 64.18 vs 64.38, Marlin 65.89 vs
    65.97 GiB; the checkpoint's 60.77 GiB misses both by > 5 %)."""
    model, par, hw, run = _case(entry)
    dtype = entry.get("dtype", "bf16")
    loaded = model.weight_bytes(dtype) / par.gpus
    if dtype == "mxfp4":
        assert abs(loaded / GIB - entry["weights_gib"]) / entry["weights_gib"] > 0.05
        backend = mxfp4_backend(hw, run.version)   # the release's rule, as the KV budget applies it
        assert backend == entry["mxfp4_backend"]   # (what the log names)
        loaded += mxfp4_layout_extra_bytes(model, par, backend)
    assert loaded / GIB == pytest.approx(entry["weights_gib"], rel=0.005 if dtype == "mxfp4" else 0.01)


def test_mxfp4_backend_by_gpu_generation_and_release():
    assert mxfp4_backend(get_hardware("h100-sxm")) == "triton"
    assert mxfp4_backend(get_hardware("a100-80gb")) == "marlin"
    assert mxfp4_backend(get_hardware("b200")) == "flashinfer_trtllm"
    # vLLM 0.10.1 - 0.11.x run Marlin experts on Hopper (no triton_kernels: profiles.engine_time.mxfp4_moe)
    for version, backend in (("0.10.1", "marlin"), ("0.10.2", "marlin"), ("0.11.0", "marlin"),
                             ("0.12.0", "triton"), ("0.14.1", "triton")):
        assert mxfp4_backend(get_hardware("h100-sxm"), version) == backend
    assert mxfp4_backend(get_hardware("a100-80gb"), "0.14.1") == "marlin"
    assert mxfp4_backend(get_hardware("b200"), "0.11.0") == "flashinfer_trtllm"


def test_kv_budget_of_a_release_running_marlin_holds_its_layout():
    """The KV budget of gpt-oss-120b on one H100 under vLLM 0.10.2 (Marlin experts) is smaller than under 0.12.0
    (Triton) by the difference of the two layouts (loaded: Marlin 65.97 GiB logged under 0.10.1, Triton 64.38
    under 0.14.1), the profile run being the same."""
    model, par, hw = get_model("gpt-oss-120b"), Parallelism(), get_hardware("h100-sxm")
    old = free_bytes_per_gpu(hw, model, par, "mxfp4", 0.9, profile=ProfileRun("0.10.2", 8192, 1024))
    new = free_bytes_per_gpu(hw, model, par, "mxfp4", 0.9, profile=ProfileRun("0.12.0", 8192, 1024))
    layouts = mxfp4_layout_extra_bytes(model, par, "marlin") - mxfp4_layout_extra_bytes(model, par, "triton")
    assert layouts / GIB > 1.0
    assert new - old == pytest.approx(layouts, rel=1e-9)


def test_device_total_is_what_cuda_reports():
    assert device_total_bytes(get_hardware("h100-sxm")) / GIB == pytest.approx(79.19)
    assert device_total_bytes(get_hardware("a100-40gb")) == 42298834944                # deviceQuery's total
    assert device_total_bytes(get_hardware("h100-pcie")) == get_hardware("h100-pcie").hbm_bytes   # none recorded


def test_profile_run_only_for_vllm_on_a_gpu():
    hw, sched = get_hardware("h100-sxm"), SchedulerConfig(max_batch_size=512, max_batched_tokens=4096)
    run = vllm_profile_run(("vllm", "0.11.0"), hw, sched, 512)   # (max_num_seqs resolved by factory.max_num_seqs)
    assert run == ProfileRun("0.11.0", 4096, 512)
    assert vllm_profile_run(("sglang", "0.5.23"), hw, sched) is None
    assert vllm_profile_run(("vllm", "0.11.0"), get_hardware("cpu-local"), sched) is None


def test_memory_rules_read_the_engine_release_engine_time_reads():
    """One engine release for every rule: without an engine block, an A100's measured tables are vLLM 0.14.0's,
    and so is the start-up profile run whose memory is subtracted (before, the memory rules took the newest
    release and a MoE model on an A100 kept 0.19's persistent fused-MoE workspace while its engine was 0.14's)."""
    hw, model, lat_cfg = get_hardware("a100-80gb"), get_model("qwen3-30b-a3b"), LatencyConfig(source="measured")
    sched = SchedulerConfig(max_batch_size=256, max_batched_tokens=8192)
    lat = make_latency_model(lat_cfg, hw, "bf16", Path("."))
    assert deployment_release(lat_cfg, None, lat) == ("vllm", lat.version) == ("vllm", "0.14.0")
    kind = build_replica_kind(model=model, hardware=hw, parallelism=ParallelismConfig(tp=1), dtype="bf16",
                              latency=lat_cfg, moe=MoeConfig(), memory_utilization=0.9, base_dir=Path("."),
                              scheduler=sched)
    par = Parallelism(tp=1)
    assert max_num_seqs(sched, lat_cfg, None, hw, lat, None) == 256   # (the scheduler's limit)
    as_engine = kv_capacity_tokens(hw, model, par, "bf16", 0.9, profile=ProfileRun("0.14.0", 8192, 256))
    newest = kv_capacity_tokens(hw, model, par, "bf16", 0.9, profile=ProfileRun(None, 8192, 256))
    assert kind.kv_tokens == as_engine != newest
    # an engine block's version is the one release of both
    assert deployment_release(lat_cfg, EngineConfig(version="0.19.0"), lat) == ("vllm", "0.19.0")
    # a version without an engine-time entry: the configured one (make_engine_time names the field)
    assert deployment_release(lat_cfg, EngineConfig(version="0.1.0"), lat) == ("vllm", "0.1.0")


def test_moe_workspace_persists_from_0_19():
    """vLLM 0.19's WorkspaceManager keeps the fused-MoE workspaces through the sampler's peak (0.11.0: freed)."""
    model, par = get_model("qwen3-30b-a3b"), Parallelism(tp=1)
    new = activation_peak_bytes(model, par, ProfileRun("0.19.0", 8192, 1024))
    old = activation_peak_bytes(model, par, ProfileRun("0.11.0", 8192, 1024))
    ws = 8192 * 8 * (2048 + 2048) * 2   # (M, topk, max(N/2, K)) + (M, topk, max(N, K)), bf16
    assert new - old == pytest.approx(ws)


def test_moe_workspace_takes_whole_experts_under_expert_parallelism():
    """TritonExperts.workspace_shapes (0.19.0) with N = 2 × the expert width on the GPU: 1/tp of it with tensor
    parallelism, all of it under EP (whole experts per GPU)."""
    from simulator.cluster.vllm_memory import moe_workspace_bytes
    mixtral, tokens = get_model("mixtral-8x7b"), 8192
    tp8 = tokens * 2 * (max(1792, 4096) + max(3584, 4096)) * 2          # width 14336 / 8
    ep8 = tokens * 2 * (max(14336, 4096) + max(28672, 4096)) * 2        # the whole width
    assert moe_workspace_bytes(mixtral, Parallelism(tp=8), tokens, 2) == tp8
    assert moe_workspace_bytes(mixtral, Parallelism(8, 1, 8), tokens, 2) == ep8


def test_a_hardware_file_gives_the_memory_cuda_reports():
    from profiles.hardware_file import load_hardware
    fields = {"id": "my-gpu", "peak_flops": {"fp32": 6e13, "bf16": 8e14}, "hbm_bytes": 96e9,
              "hbm_bandwidth_bytes_per_s": 4e12, "scaleup_bandwidth_bytes_per_s": 4.5e11,
              "scaleout_bandwidth_bytes_per_s": 5e10}
    assert device_total_bytes(load_hardware(fields)) == 96e9                                   # not given: the datasheet's
    assert device_total_bytes(load_hardware({**fields, "cuda_total_bytes": 95.0 * GIB})) == 95.0 * GIB
