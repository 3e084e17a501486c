"""SGLang's KV pool (simulator.cluster.sglang_memory): hand-worked default fractions and pools per release,
read in the PyPI wheels' server_args.py / arg_groups/memory_hook.py and model_runner.py; the published start-up
logs of profiles/data/sglang_memory/startup_logs.yaml (url + locator each); and the factory's use of it."""
import math
from pathlib import Path

import pytest
import yaml

from models.catalog import get_model
from models.step import Parallelism
from profiles.hardware import get_hardware
from simulator.cluster.factory import build_replica_kind
from simulator.cluster.replica_memory import free_bytes_per_gpu, kv_capacity_tokens
from simulator.cluster.sglang_memory import (GIB, STARTUP_SINGLE_GPU_BYTES, STARTUP_TENSOR_PARALLEL_BYTES,
                                            SglangDeployment, default_mem_fraction_static, pre_model_load_bytes)
from simulator.config.scenario import parse_scenario

LOGS = yaml.safe_load((Path(__file__).parents[2] / "profiles/data/sglang_memory/startup_logs.yaml").read_text())
H100, H200 = get_hardware("h100-sxm"), get_hardware("h200")
H100_MIB = 79.19 * 1024   # CUDA's total (profiles.hardware cuda_total_bytes), SGLang's gpu_mem here
H200_MIB = 139.72 * 1024
CELL_8B = 2 * 32 * 8 * 128 * 2   # Llama-3.1-8B bf16: K and V, 32 layers, 8 KV heads of 128: 131072 bytes a token
W_8B = get_model("llama-3.1-8b").weight_bytes("bf16")


def _kind(model="llama-3.1-8b", tp=1, version="0.5.9", hardware="h100-sxm", cluster=None, **sections):
    data = {"cluster": {"model": model, "hardware": hardware, "parallelism": {"tp": tp},
                        "engine": {"framework": "sglang", "version": version}, **(cluster or {})},
            "workload": {"arrival": {"process": "poisson", "qps": 1}, "prompt_tokens": {"kind": "fixed", "value": 100},
                         "output_tokens": {"kind": "fixed", "value": 10}, "num_requests": 10}, **sections}
    sc = parse_scenario(data)
    cl = sc.cluster
    return build_replica_kind(model=cl.model, hardware=cl.hardware, parallelism=cl.parallelism, dtype=cl.dtype,
                              latency=cl.latency, moe=cl.moe, memory_utilization=cl.gpu_memory_utilization,
                              drafter=sc.drafter, speculation=sc.speculation, acceptance=sc.acceptance,
                              policy=sc.policy, base_dir=Path("."), engine_config=cl.engine, scheduler=sc.scheduler,
                              kv_dtype=cl.kv_dtype)


def _pool_tokens(fraction, tp=1, weights=W_8B, cell=CELL_8B, hw=H100):
    """model_runner.py profile_max_num_token: (fraction × pre-load free memory − weights) // cell."""
    startup = STARTUP_TENSOR_PARALLEL_BYTES if tp > 1 else STARTUP_SINGLE_GPU_BYTES
    return int((fraction * (hw.cuda_total_bytes - startup) - weights) // cell)


@pytest.mark.parametrize("version, tp, hw, expected", [
    # 0.4.1 server_args.py __post_init__: `if self.tp_size >= 16: 0.79 ... elif >= 2: 0.87 else: 0.88`
    ("0.4.1", 1, H100, 0.88), ("0.4.1", 2, H100, 0.87), ("0.4.5", 8, H100, 0.81),
    # 0.4.6: `if gpu_mem <= 81920:` the table, `else: (gpu_mem - 1024 * 13) / gpu_mem`
    ("0.4.6", 1, H100, 0.88), ("0.4.6", 1, H200, (H200_MIB - 13312) / H200_MIB),
    # 0.4.7: gpu_mem > 96 GiB: min(f + 48 GiB (1 - f) / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem), f = 0.88
    ("0.4.7", 1, H200, min(0.88 + 49152 * 0.12 / H200_MIB, (H200_MIB - 18432) / H200_MIB)),
    # 0.4.8 - 0.5.2: H100 below 90 GiB: reserved (9.5 + tp·pp / 2) GiB, round(…, 3)
    ("0.5.2", 1, H100, round((H100_MIB - 10240) / H100_MIB, 3)), ("0.5.2", 2, H100, round((H100_MIB - 10752) / H100_MIB, 3)),
    ("0.5.2", 1, H200, round((H200_MIB - 12800) / H200_MIB, 3)),   # (12 + 1/2) GiB below 160 GiB
    # 0.5.3 - 0.5.9: 512 + 1.5 × 8192 (chunked_prefill_size) + 2 × 256 (cuda_graph_max_bs, tp < 4) + tp/8 GiB
    ("0.5.9", 1, H100, round((H100_MIB - 13440) / H100_MIB, 3)), ("0.5.9", 2, H100, round((H100_MIB - 13568) / H100_MIB, 3)),
    # 0.5.10 on: + 8 MiB for each of the 58 prefill graph buckets up to 8192 tokens (piecewise / breakable graphs)
    ("0.5.10", 1, H100, round((H100_MIB - 13904) / H100_MIB, 3)), ("0.5.23", 2, H100, round((H100_MIB - 14032) / H100_MIB, 3)),
])
def test_default_fraction_per_release(version, tp, hw, expected):
    # (the fraction does not depend on the model; a release before SGLang's Qwen3 (0.4.5.post2: its model registry,
    # profiles.engine_time.architectures) is refused for qwen3-32b, so Llama-architecture models stand in: 33B at tp 2,
    # 70B at tp 8, whose head counts divide)
    large = {2: "vicuna-33b", 8: "llama-2-70b"}.get(tp) if version in ("0.4.1", "0.4.5") else "qwen3-32b"
    kind = _kind(tp=tp, version=version, hardware=hw.id, model="llama-3.1-8b" if tp == 1 else large)
    fraction = (kind.kv_tokens * kind.target.kv_bytes_per_token_per_gpu(kind.parallelism, "bf16")
                + kind.target.weight_bytes("bf16") / tp) / pre_model_load_bytes(hw, tp)
    assert fraction == pytest.approx(expected, abs=2e-5)   # (the pool rounds down to whole tokens)


@pytest.mark.parametrize("version, fraction", [("0.4.1", 0.88), ("0.5.2", 0.874), ("0.5.9", 0.834), ("0.5.23", 0.829)])
def test_llama_8b_pool_on_one_h100(version, fraction):
    """Hand-worked: 0.5.9 0.834 × (79.19 − 0.38) GiB − 14.96 GiB of weights = 50.77 GiB → 415,907 tokens of
    128 KiB. The old plain rule (80 GB × 0.9 − weights) gave 426,784 tokens for every release."""
    assert _kind(version=version).kv_tokens == _pool_tokens(fraction)
    assert _kind(version="0.5.9").kv_tokens == 415907


def test_llama_8b_pool_on_one_a100_40gb_starts_from_cudas_total():
    """Hand-worked, 0.5.9 on an A100-SXM4-40GB: CUDA reports 42,298,834,944 bytes = 40339.3 MiB (deviceQuery,
    profiles.hardware); SGLang's own chunked_prefill_size there is 4096 (35 - 60 GiB from 0.5.3, the scenario
    names the engine and leaves the budget out: simulator.cluster.engine_scheduler); reserved 512 + 1.5 × 4096 +
    2 × 32 (cuda_graph_max_bs below 60 GiB at TP 1) + 128 = 6848 MiB → round((40339.3 − 6848) / 40339.3, 3) =
    0.830; 0.830 × (39.39 − 0.38) GiB − 14.96 GiB of weights → 142,737 tokens of 128 KiB. With --chunked-prefill-size
    8192 given, reserved 12992 MiB → 0.678 → 94,157 tokens (from the decimal 40 GB, 38147 MiB: 0.659, 76,527)."""
    a100 = get_hardware("a100-40gb")
    assert a100.cuda_total_bytes == 42298834944
    assert _kind(version="0.5.9", hardware="a100-40gb").kv_tokens == _pool_tokens(0.830, hw=a100) == 142737
    given = _kind(version="0.5.9", hardware="a100-40gb", scheduler={"max_batched_tokens": 8192})
    assert given.kv_tokens == _pool_tokens(0.678, hw=a100) == 94157


def test_qwen3_32b_tp2_pool():
    """Qwen3-32B bf16 over two H100s (0.5.9): reserved 13568 MiB → 0.833 × (79.19 − 2.43) GiB − 30.51 GiB."""
    kind = _kind(model="qwen3-32b", tp=2, version="0.5.9")
    weights = get_model("qwen3-32b").weight_bytes("bf16") / 2
    cell = 2 * 64 * 4 * 128 * 2   # 64 layers, 8 KV heads split over 2 GPUs
    assert kind.kv_tokens == _pool_tokens(0.833, tp=2, weights=weights, cell=cell) == 273850


def test_a_given_fraction_is_used_as_given():
    """cluster.gpu_memory_utilization is SGLang's --mem-fraction-static, exactly (no default rule applied)."""
    for version in ("0.4.1", "0.5.9", "0.5.23"):
        assert _kind(version=version, cluster={"gpu_memory_utilization": 0.7}).kv_tokens == _pool_tokens(0.7)
    # and vLLM's given fraction stays vLLM's (the same pool with or without the key at its default 0.9)
    vllm = {"engine": {"framework": "vllm", "version": "0.19.0"}}
    assert _kind(cluster={**vllm, "gpu_memory_utilization": 0.9}).kv_tokens == _kind(cluster=vllm).kv_tokens


@pytest.mark.parametrize("version, reserve_mib, counted", [("0.5.9", 2048, False), ("0.5.10", 4096, False),
                                                            ("0.5.14", 0, True)])
def test_eagle_draft_memory(version, reserve_mib, counted):
    """EAGLE-3 on Llama-3.1-8B. 0.5.9: + 2 GiB reserved (`elif self.speculative_algorithm != "NGRAM": reserved_mem
    += 2 * 1024`), the head outside the pool (its worker is built after the target's pool). 0.5.10: + 4 GiB, and
    the prefill graphs off with speculation (`_handle_piecewise_cuda_graph`). 0.5.14: no reserve, the prefill
    graphs' 58 buckets reserved (on for EAGLE targets), the head's weights loaded before the pool and its KV in
    the cell ("draft weights are now counted")."""
    kind = _kind(version=version, drafter={"kind": "eagle3", "gamma": 3})
    reserved = 13440 + (464 if version == "0.5.14" else 0) + reserve_mib
    fraction = round((H100_MIB - reserved) / H100_MIB, 3)
    head = kind.drafter
    if counted:
        expected = _pool_tokens(fraction, weights=W_8B + head.weight_bytes_per_gpu,
                                cell=CELL_8B + head.kv_bytes_per_token_per_gpu)
    else:
        expected = _pool_tokens(fraction)
    assert head.weight_bytes_per_gpu > 0 and head.kv_bytes_per_token_per_gpu > 0
    assert kind.kv_tokens == expected


@pytest.mark.parametrize("entry", LOGS, ids=lambda e: e["id"])
def test_pool_matches_the_logged_one(entry):
    """Within 1 % of the logged token count (seen: +0.25 %, -0.66 %); the old rule (datasheet HBM × 0.9 or the
    given fraction − weights) missed them by 4.0 % and 13.4 %."""
    model, hw, tp = get_model(entry["model"]), get_hardware(entry["hardware"]), entry["tp"]
    cluster = {"dtype": entry["dtype"]}
    if entry["given"]:
        cluster["gpu_memory_utilization"] = entry["mem_fraction_static"]
    kind = _kind(model=entry["model"], tp=tp, version=entry["version"], hardware=entry["hardware"], cluster=cluster)
    assert kind.kv_tokens == pytest.approx(entry["kv_tokens"], rel=0.01)
    par = Parallelism(tp=tp)
    old = (hw.hbm_bytes * entry["mem_fraction_static"] - model.weight_bytes(entry["dtype"]) / tp) \
        // model.kv_bytes_per_token_per_gpu(par, "bf16")
    assert abs(old - entry["kv_tokens"]) / entry["kv_tokens"] > 0.03
    if entry.get("calibration"):   # the start-up footprint is this log's (module docstring)
        assert hw.cuda_total_bytes - STARTUP_SINGLE_GPU_BYTES == pytest.approx(entry["avail_before_load_gib"] * GIB)


def test_free_bytes_and_capacity_take_the_deployment():
    """The factory's functions under SGLang: fraction × pre-load free memory − weights; a model too large says so
    in SGLang's terms, naming the field."""
    from simulator.errors import ScenarioError
    d = SglangDeployment(version="0.5.9", tp=1)
    par = Parallelism(tp=1)
    model = get_model("llama-3.1-8b")
    free = free_bytes_per_gpu(H100, model, par, "bf16", 0.8, framework="sglang", sglang=d)
    assert free == pytest.approx(0.8 * (H100.cuda_total_bytes - STARTUP_SINGLE_GPU_BYTES) - W_8B)
    assert kv_capacity_tokens(H100, model, par, "bf16", 0.8, framework="sglang", sglang=d) == math.floor(free / CELL_8B)
    with pytest.raises(ScenarioError) as err:
        free_bytes_per_gpu(H100, get_model("llama-3.3-70b"), par, "bf16", default_mem_fraction_static(d, H100),
                           framework="sglang", sglang=d)
    assert err.value.field == "cluster.model" and "mem_fraction_static=0.834" in err.value.message


def test_capture_tiers_read_the_same_gpu_memory_as_the_pool():
    """SGLang's gpu_mem (nvidia-smi's MiB) is taken as CUDA's total for the memory rules and the decode capture
    tiers alike (the factory passes vllm_memory.device_total_bytes to both). 0.4.7 captures range(256, 513, 16)
    above 180,000 MiB (cuda_graph_runner.py get_batch_sizes_to_capture): a B200's 178.36 GiB = 182,641 MiB is above
    (nvidia-smi: 183,359), the datasheet's 180 GB = 171,661 MiB was not; an H200 (139.72 GiB) stops at 256."""
    sched = {"scheduler": {"kind": "vllm", "max_batch_size": 1024}}
    assert _kind(version="0.4.7", hardware="b200", **sched).engine.graphs.decode_sizes[-1] == 512
    assert _kind(version="0.4.7", hardware="h200", **sched).engine.graphs.decode_sizes[-1] == 256
    assert _kind(version="0.5.2", hardware="h100-sxm", **sched).engine.graphs.decode_sizes[-1] == 160
