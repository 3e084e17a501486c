"""Energy, power and cost (profiles.power, simulator.results.energy): hand-worked steps (idle only,
compute-bound, memory-bound), the run's energy against a step-by-step recomputation from its steps.parquet,
$/Mtok from GPU-hours, J/token in the quickstart's summary and a plan ranked by it."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from contract import run_cli
from profiles.hardware import IDLE_FRACTION_OF_TDP, get_hardware
from profiles.power import gpu_power
from simulator.results.energy import RunPower
from simulator.results.step_totals import StepTotals
from sim_helpers import scenario
from paths import REPO

H100 = get_hardware("h100-sxm")
PEAK_F, PEAK_B = 989.4e12, 3.35e12          # H100 SXM datasheet, bf16 dense and HBM3
ETA_C, ETA_M = 0.76, 0.90                   # profiles.roofline DEFAULT_EFFICIENCY["h100-sxm"]
IDLE, TDP = 700 * IDLE_FRACTION_OF_TDP, 700.0


def steps(**cols) -> dict:
    base = {"replica": [0], "start_s": [1.0], "duration_s": [0.1], "draft_s": [0.0], "verify_s": [0.1],
            "engine_s": [0.0], "flops": [0.0], "bytes": [0.0], "kv_blocks_used": [0], "kv_blocks_total": [10],
            "queued_requests": [0], "running_requests": [1]}
    base.update(cols)
    return {k: np.asarray(v, dtype=np.float64 if k not in ("replica",) else np.int64) for k, v in base.items()}


def energy_above_idle(cols, model="utilization", gpus=2) -> float:
    power = RunPower(np.array([float(gpus)]), (gpu_power(H100, "bf16", model),), np.array([0.0]))
    totals = StepTotals(1, 0.0, power)
    totals.add(cols)
    return totals.sum("energy_above_idle_j")


def test_constants_are_the_datasheets_and_the_published_idle():
    model = gpu_power(H100, "bf16")
    assert (model.tdp_w, model.idle_w) == (TDP, pytest.approx(80.3))
    assert (model.peak_flops_per_s, model.peak_bytes_per_s) == (pytest.approx(PEAK_F), PEAK_B)
    assert (model.compute_fraction, model.memory_fraction) == (ETA_C, ETA_M)
    assert gpu_power(get_hardware("b200"), "nvfp4").peak_flops_per_s == 9000e12       # the FP4 rate
    assert gpu_power(get_hardware("cpu-local")) is None                               # no board power stated


def test_idle_only():
    """No step: the GPUs idle all window long; a step of host time only adds nothing above idle."""
    assert energy_above_idle(steps(replica=[], start_s=[], duration_s=[], draft_s=[], verify_s=[], engine_s=[],
                                   flops=[], bytes=[], kv_blocks_used=[], kv_blocks_total=[], queued_requests=[],
                                   running_requests=[])) == 0.0
    assert energy_above_idle(steps(verify_s=[0.0], engine_s=[0.1], flops=[1e12])) == 0.0


def test_compute_bound_step_draws_the_board_limit():
    """2 GPUs, 0.1 s of kernels at 80 % of the bf16 peak each: 0.8 / 0.76 > 1, so P = TDP; above idle:
    2 × (700 − 80.3) × 0.1 J."""
    flops = 0.8 * PEAK_F * 2 * 0.1
    assert energy_above_idle(steps(flops=[flops])) == pytest.approx(2 * (TDP - IDLE) * 0.1)


def test_memory_bound_step_by_hand():
    """2 GPUs, 0.1 s at 45 % of the HBM peak and 3.8 % of the compute peak each: activity 0.45/0.9 + 0.038/0.76
    = 0.55, P = 80.3 + 619.7 × 0.55 = 421.1 W."""
    nbytes, flops = 0.45 * PEAK_B * 2 * 0.1, 0.038 * PEAK_F * 2 * 0.1
    activity = 0.45 / ETA_M + 0.038 / ETA_C
    assert activity == pytest.approx(0.55)
    expected = 2 * (IDLE + (TDP - IDLE) * activity - IDLE) * 0.1
    assert energy_above_idle(steps(flops=[flops], bytes=[nbytes])) == pytest.approx(expected)
    # the load-scaled TDP baseline: the limit whatever the step does
    assert energy_above_idle(steps(flops=[flops], bytes=[nbytes]), "busy") == pytest.approx(2 * (TDP - IDLE) * 0.1)


def test_a_step_half_outside_the_window_counts_half():
    flops = 0.8 * PEAK_F * 2 * 0.1
    power = RunPower(np.array([2.0]), (gpu_power(H100),), np.array([0.0]))
    totals = StepTotals(1, 1.05, power)            # the window opens halfway through the step
    totals.add(steps(flops=[flops]))
    assert totals.sum("energy_above_idle_j") == pytest.approx(2 * (TDP - IDLE) * 0.05)


def _above_idle_recomputed(s: dict, st: pd.DataFrame, gpus: int) -> float:
    """Σ over the steps of an H100 bf16 run (`gpus` per replica) of their energy above idle inside the window."""
    lo, hi = s["window_start_s"], s["window_end_s"]
    inside = (np.minimum(st.end_s, hi) - np.maximum(st.start_s, lo)).clip(lower=0) / st.duration_s
    device = st.draft_s + st.verify_s
    per_gpu_f, per_gpu_b = st.flops / (gpus * device), st.bytes / (gpus * device)
    activity = np.minimum(per_gpu_f / (PEAK_F * ETA_C) + per_gpu_b / (PEAK_B * ETA_M), 1.0)
    return float((gpus * (TDP - IDLE) * activity * device * inside).sum())


def test_run_energy_equals_its_steps_recomputed_and_cost_per_mtok(tmp_path):
    data = scenario(cluster={"model": "llama-3-8b", "parallelism": {"tp": 2}},
                    energy={"usd_per_gpu_hour": 2.0, "usd_per_kwh": 0.1, "host_power_w_per_gpu": 100.0},
                    outputs={"steps": "full", "plots": False})
    code, err, out = run_cli(tmp_path, data)
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    st = pd.read_parquet(out / "steps.parquet")
    window, gpus = s["window_s"], 2
    gpu_j = gpus * IDLE * window + _above_idle_recomputed(s, st, gpus)
    assert s["gpu_energy_j"] == pytest.approx(gpu_j, rel=1e-9)
    assert s["host_energy_j"] == pytest.approx(gpus * 100.0 * window)
    tokens = s["output_tokens_per_s"] * window
    assert s["energy_j"] == pytest.approx(gpu_j + gpus * 100.0 * window)
    assert s["energy_per_output_token_j"] == pytest.approx(s["energy_j"] / tokens)
    assert s["avg_power_w"] == pytest.approx(s["energy_j"] / window)
    assert IDLE < s["avg_power_per_gpu_w"] < TDP
    cost = gpus * window / 3600 * 2.0 + s["energy_j"] / 3.6e6 * 0.1
    assert s["usd_per_mtok"] == pytest.approx(cost / tokens * 1e6)


def test_a_disaggregated_runs_energy_counts_both_pools(tmp_path):
    """The decode pool's steps count too: two pools of one GPU and dtype have equal power models, and the
    summary counted only the replicas of the first one's object (85 % of a DeepSeek-V3 run's energy above idle
    was missing, the J/token of every disaggregated plan candidate too low)."""
    data = scenario(workload={"num_requests": 120},
                    cluster={"disaggregation": {"prefill": {"replicas": 1}, "decode": {"replicas": 1}}},
                    outputs={"steps": "full", "plots": False})
    code, err, out = run_cli(tmp_path, data)
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    st = pd.read_parquet(out / "steps.parquet")
    assert set(st.replica) == {0, 1}
    decode = _above_idle_recomputed(s, st[st.replica == 1], 1)
    assert decode > 0
    gpu_j = 2 * IDLE * s["window_s"] + _above_idle_recomputed(s, st, 1)
    assert s["gpu_energy_j"] == pytest.approx(gpu_j, rel=1e-9)


def test_quickstart_reports_joules_per_token(tmp_path):
    from pathlib import Path
    import yaml
    root = REPO
    data = yaml.safe_load((root / "scenarios" / "quickstart.yaml").read_text())
    data["workload"]["num_requests"] = 200
    data["outputs"] = {"plots": False}
    code, err, out = run_cli(tmp_path, data)
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    assert 0 < s["gpu_energy_per_output_token_j"] < s["energy_per_output_token_j"] < 10
    assert s["power_model"] == "utilization" and s["usd_per_gpu_hour"] == 2.49     # the plan price table's H100
    assert math.isfinite(s["usd_per_mtok"]) and s["usd_per_mtok"] > 0


def test_energy_is_null_without_a_stated_board_power(tmp_path):
    hw = {"id": "my-gpu", "peak_flops": {"fp32": 6e13, "bf16": 8e14}, "hbm_bytes": 96e9,
          "hbm_bandwidth_bytes_per_s": 4e12, "scaleup_bandwidth_bytes_per_s": 4.5e11,
          "scaleout_bandwidth_bytes_per_s": 5e10}
    code, err, out = run_cli(tmp_path, scenario(cluster={"hardware": hw}, energy={"usd_per_gpu_hour": 1.0},
                                                workload={"num_requests": 30}))
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    assert s["energy_j"] is None and s["usd_per_mtok"] > 0       # GPU-hours still priced


@pytest.mark.slow  # a plan end to end (about 30 s)
def test_a_plan_ranks_by_joules_per_token_and_by_cost_per_mtok(tmp_path):
    import yaml
    import importlib.util
    spec = importlib.util.spec_from_file_location("plan_cli_cases", REPO / "tests" / "simulator" / "workflows" /
                                                  "test_plan_cli.py")
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    PLAN = cases.PLAN
    from simulator.workflows.plan.main import main
    for rank_by, column in (("j_per_token", "des_energy_per_output_token_j"), ("usd_per_mtok", "usd_per_mtok")):
        path = tmp_path / f"{rank_by}.yaml"
        path.write_text(yaml.safe_dump({**PLAN, "rank_by": rank_by, "confirm_top": 2}, sort_keys=False))
        assert main([str(path), "--out", str(tmp_path / rank_by), "--executor", "serial", "--quiet"]) == 0
        ranked = pd.read_csv(tmp_path / rank_by / "ranked.csv")
        good = ranked[ranked.meets_slo]
        assert len(good) >= 1 and good[column].is_monotonic_increasing
        assert (ranked.des_energy_per_output_token_j > 0).all()
        assert ranked.usd_per_mtok.to_numpy() == pytest.approx(
            (ranked.usd_per_hour / 3600 / ranked.des_output_tokens_per_s * 1e6).to_numpy())


def test_the_held_out_power_check_reads_every_measured_phase():
    """scenarios/benchmarks/power_check.py: the lead's H100 phases against both models (nothing fitted to them);
    the GEMM row by hand: 663 TFLOP/s and 243 GB/s → activity 0.881 + 0.080."""
    from scenarios.benchmarks.power_check import comparison
    table = comparison()
    measured = pd.read_csv(REPO / "profiles" / "data" / "gpu-forwards" / "h100-sxm-2026-11-26" / "power.csv")
    assert set(measured.phase) < set(table.phase) and len(table) == len(measured) + 1
    gemm = table[table.phase == "gemm_bf16_8192"].iloc[0]
    activity = gemm.flop_per_s / (PEAK_F * ETA_C) + gemm.bytes_per_s / (PEAK_B * ETA_M)
    assert gemm.utilization_w == pytest.approx(IDLE + (TDP - IDLE) * min(activity, 1.0))
    assert gemm.busy_w == TDP
    assert gemm.utilization_err == pytest.approx((gemm.utilization_w - gemm.measured_w) / gemm.measured_w)


@pytest.mark.parametrize("power_model", ["utilization", "busy"])
def test_a_separate_draft_models_gpus_are_counted_in_gpus_cost_mfu_and_energy(tmp_path, power_model):
    """A draft model at placement `separate` runs on its own `drafter.tp` GPUs (simulator.cost.drafters): the
    replica is target tp·pp + draft tp GPUs in `gpus`, MFU, $/Mtok and energy (idle all window, and busy for
    the steps' device time like the target's GPUs). Before, a tp-2 target with a separate tp-1 draft reported
    2 GPUs and priced 2 GPU-hours per hour."""
    data = scenario(workload={"num_requests": 60},
                    cluster={"model": "llama-3-8b", "parallelism": {"tp": 2}},
                    drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3, "tp": 1, "placement": "separate"},
                    acceptance={"kind": "constant", "alpha": 0.7},
                    energy={"usd_per_gpu_hour": 2.0, "host_power_w_per_gpu": 100.0, "power_model": power_model},
                    outputs={"steps": "full", "plots": False})
    code, err, out = run_cli(tmp_path, data)
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    st = pd.read_parquet(out / "steps.parquet")
    gpus = 2 * 1 + 1
    assert (s["gpus"], s["gpus_per_replica"]) == (gpus, gpus)
    window, tokens = s["window_s"], s["output_tokens_per_s"] * s["window_s"]
    lo, hi = s["window_start_s"], s["window_end_s"]
    inside = (np.minimum(st.end_s, hi) - np.maximum(st.start_s, lo)).clip(lower=0) / st.duration_s
    assert s["mfu"] == pytest.approx((st.flops * inside).sum() / (window * PEAK_F * gpus), rel=1e-9)
    assert s["goodput_per_gpu_rps"] == pytest.approx(s["goodput_rps"] / gpus)
    device = st.draft_s + st.verify_s
    if power_model == "busy":
        activity = np.ones(len(st))
    else:
        activity = np.minimum(st.flops / (gpus * device) / (PEAK_F * ETA_C)
                              + st.bytes / (gpus * device) / (PEAK_B * ETA_M), 1.0)
    gpu_j = gpus * IDLE * window + (gpus * (TDP - IDLE) * activity * device * inside).sum()
    assert s["gpu_energy_j"] == pytest.approx(gpu_j, rel=1e-9)
    assert s["host_energy_j"] == pytest.approx(gpus * 100.0 * window)
    assert s["usd_per_mtok"] == pytest.approx(gpus * window / 3600 * 2.0 / tokens * 1e6)
