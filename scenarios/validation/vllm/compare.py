"""The simulator against recorded vLLM runs: same requests, same engine configuration, per-request errors.

For a case (scenarios/validation/vllm/cases.py) and its recorded runs (profiles/engine_time/vllm_driver.py
`run` output, one per repeat, all on the same workload), the simulator is given only:
- the requests: arrival times, prompt lengths, output lengths (from the workload, identical in every run);
- the engine configuration the run reports (`fingerprint.engine`: token budget, max sequences, block size,
  and its KV blocks, mirrored as the replica's KV capacity);
- pass costs and host time from the engine profile (profiles/data/engine_profile/…, measured beforehand on
  random tokens by `draftsim profile --engine vllm`), and for speculation the acceptance measured on other
  prompts (profiles/data/acceptance).
Nothing from the runs' timings or acceptance counters enters the simulation.

Per metric (TTFT, TPOT, E2E — the definitions of simulator.results.metrics on both sides) it reports the
engine's P50 and P99 (median over repeats, with the repeats' spread: (max − min) / median), the
simulator's, and the relative error of each; the median per-request |error| against the repeats' mean;
throughput; for speculation the draft acceptance rate (vLLM's `spec_decode_num_accepted_tokens /
num_draft_tokens` counters against the simulator's accepted / drafted tokens) and the tokens each decode
step delivers per request (from vLLM's token times; the simulator's emitted / decode steps).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from scenarios.validation.vllm.cases import ENGINE, EngineCase

METRICS = ("ttft_s", "tpot_s", "e2e_s")


def engine_requests(run: dict) -> pd.DataFrame:
    """Per request of a recorded run: arrival, lengths, TTFT, TPOT, E2E (seconds), sorted by id."""
    from simulator.results.metrics import latency_columns
    for r in run["requests"]:
        if r["finish_s"] is None or not r["token_times_s"]:
            raise ValueError(f"recorded run: request {r['id']} did not finish")
    frame = pd.DataFrame({"id": [r["id"] for r in run["requests"]],
                          **{k: [r[k] for r in run["requests"]] for k in ("arrival_s", "prompt_tokens", "output_tokens")}})
    frame = frame.assign(**latency_columns(
        frame["arrival_s"].to_numpy(float), np.array([r["token_times_s"][0] for r in run["requests"]]),
        np.array([r["finish_s"] for r in run["requests"]]), np.array([sum(r["token_counts"]) for r in run["requests"]])))
    return frame.sort_values("id", ignore_index=True)


def draft_acceptance_rate(run: dict) -> float | None:
    """vLLM's accepted / proposed draft tokens, from its counters (None without speculation)."""
    c = run.get("spec_counters") or {}
    drafted, accepted = c.get("vllm:spec_decode_num_draft_tokens"), c.get("vllm:spec_decode_num_accepted_tokens")
    if not drafted or accepted is None:
        return None
    return float(accepted) / float(drafted)


def tokens_per_decode_step(run: dict) -> float:
    """Mean over requests of the tokens each decode step delivered (the first delivery, the prompt's
    token, excluded): 1 + the accepted drafts per verification, read from the token times."""
    per_request = [sum(r["token_counts"][1:]) / len(r["token_counts"][1:]) for r in run["requests"]
                   if len(r["token_counts"]) > 1]
    return float(np.mean(per_request))


def run_hardware(run: dict) -> str:
    """The catalog hardware of a recorded run's device: cpu-local, or the GPU by its name."""
    from profiles.hardware import hardware_id_for_gpu
    device = run["fingerprint"].get("device", {"kind": "cpu"})
    if device["kind"] == "cpu":
        return "cpu-local"
    found = hardware_id_for_gpu(device.get("name", ""))
    if found is None:
        raise ValueError(f"recorded run on {device.get('name')!r}: no such GPU in the hardware catalog")
    return found


def pass_model_errors(runs: list[dict], profile_dir: Path, model: str) -> dict:
    """The engine profile's forward-pass model against the target forward passes these runs recorded
    (a check of the pass model alone, apart from scheduling; nothing is fitted to them): relative error
    median and P90 of |predicted − measured| / measured, and the signed mean."""
    from profiles.engine_time.engine_profile import load_engine_profile, step_attention_pairs
    passes = load_engine_profile(str(profile_dir)).pass_model(model)
    measured, predicted = [], []
    for run in runs:
        for step in run["steps"]:
            forwards = [p for p in step.get("passes", ()) if p[0] == "target" and p[1] == "forward"]
            if len(forwards) != 1 or not step.get("seqs"):
                continue
            pre, dec = step_attention_pairs(step)
            measured.append(forwards[0][3])
            predicted.append(float(passes.forward_s(forwards[0][2], pre, dec)[0]))
    if not measured:
        return {}
    m, p = np.array(measured), np.array(predicted)
    rel = (p - m) / m
    return {"passes": int(len(m)), "median_abs": float(np.median(np.abs(rel))),
            "p90_abs": float(np.quantile(np.abs(rel), 0.9)), "mean_signed": float(rel.mean())}


def scenario_for(case: EngineCase, requests: pd.DataFrame, engine: dict, profile_dir: Path, trace_csv: Path,
                 seed: int = 1, hardware: str = "cpu-local") -> dict:
    """The draftsim scenario of a case: the recorded requests as a trace, vLLM V1's scheduler with the run's
    engine configuration, passes priced from the engine profile, on `hardware` (the run's device)."""
    requests[["arrival_s", "prompt_tokens", "output_tokens"]].to_csv(trace_csv, index=False, float_format="%.6f")
    data = {"name": f"vllm-{case.name}", "seed": seed,
            "workload": {"arrival": {"process": "trace", "trace_csv": str(trace_csv)}},
            "cluster": {"hardware": hardware, "model": case.target, "dtype": "fp32" if hardware == "cpu-local" else "bf16",
                        "latency": {"source": "engine_profile", "profile_dir": str(profile_dir)}},
            "scheduler": {"kind": "vllm_v1", "max_batch_size": int(engine["max_num_seqs"]),
                          "max_batched_tokens": int(engine["max_num_batched_tokens"]),
                          "block_size": int(engine["block_size"])},
            "outputs": {"plots": False}}
    if engine.get("max_model_len"):   # vLLM checks at start-up that its KV holds one such request
        data["cluster"]["max_model_len"] = int(engine["max_model_len"])
    data.update(case.speculation_sections())
    util = mirrored_memory_utilization(case, engine, hardware, data["cluster"]["dtype"])
    if util is not None:
        data["cluster"]["gpu_memory_utilization"] = util
    return data


def mirrored_memory_utilization(case: EngineCase, engine: dict, hardware: str, dtype: str) -> float | None:
    """The memory fraction that gives the simulated replica vLLM's own KV capacity: the run's KV blocks
    (`num_kv_blocks`, which hold the draft model's layers too) × block size tokens, plus the weights and, on a
    GPU, vLLM's start-up profile (simulator.cluster.vllm_memory), over the device's memory
    (simulator.cluster.replica_memory.kv_capacity_tokens inverted). None when the run does not report its blocks."""
    from models.catalog import get_model
    from models.step import Parallelism
    from profiles.hardware import get_hardware
    from simulator.cluster.factory import CPU_ID
    from simulator.cluster.vllm_memory import ProfileRun, device_total_bytes, profile_overhead_bytes
    blocks = engine.get("num_kv_blocks")
    if not blocks:
        return None
    hw = get_hardware(hardware)
    models = [get_model(m) for m in (case.target, case.draft) if m]
    weights = sum(m.weight_bytes(dtype) for m in models)
    kv = int(blocks) * int(engine["block_size"]) * sum(m.kv_bytes_per_token(dtype) for m in models)
    if hw.id == CPU_ID:   # (the plain rule: simulator.cluster.replica_memory.vllm_profile_run)
        return min(1.0, (weights + kv) / hw.hbm_bytes)
    run = ProfileRun(engine.get("version"), int(engine["max_num_batched_tokens"]), int(engine["max_num_seqs"]))
    overhead = profile_overhead_bytes(hw, models[0], Parallelism(), dtype, run)
    return min(1.0, (weights + kv + overhead) / device_total_bytes(hw))


def _relative(sim: float, real: float) -> float:
    return abs(sim - real) / real if real else float("nan")


def compare_case(case: EngineCase, runs: list[dict], profile_dir: Path, workdir: Path) -> dict:
    """Simulate `case` on the requests of its recorded `runs` and compare (module docstring)."""
    import simulator
    real = [engine_requests(r) for r in runs]
    base = real[0]
    for other in real[1:]:
        if not (other[["id", "arrival_s", "prompt_tokens", "output_tokens"]]
                .equals(base[["id", "arrival_s", "prompt_tokens", "output_tokens"]])):
            raise ValueError(f"{case.name}: the recorded runs do not share one workload")
    engine = runs[0]["fingerprint"]["engine"]
    workdir.mkdir(parents=True, exist_ok=True)
    data = scenario_for(case, base, engine, profile_dir, workdir / f"{case.name}-requests.csv",
                        hardware=run_hardware(runs[0]))
    result = simulator.run(data)
    sim = result.requests.sort_values("arrival_s", kind="stable", ignore_index=True)
    sim = sim.assign(id=base["id"].to_numpy())   # trace order = arrival order = id order (workload.py)
    out = {"case": case.name, "description": case.description, "repeats": len(runs),
           "requests": int(len(base)), "engine": engine, "metrics": {}}
    mean_real = pd.concat([r[list(METRICS)] for r in real]).groupby(level=0).mean()
    for m in METRICS:
        p50s = np.array([np.nanquantile(r[m], 0.5) for r in real])
        p99s = np.array([np.nanquantile(r[m], 0.99) for r in real])
        s50, s99 = float(np.nanquantile(sim[m], 0.5)), float(np.nanquantile(sim[m], 0.99))
        r50, r99 = float(np.median(p50s)), float(np.median(p99s))
        per_request = np.abs(sim[m].to_numpy() - mean_real[m].to_numpy()) / mean_real[m].to_numpy()
        out["metrics"][m] = {
            "real_p50": r50, "real_p99": r99, "sim_p50": s50, "sim_p99": s99,
            "err_p50": _relative(s50, r50), "err_p99": _relative(s99, r99),
            "spread_p50": float((p50s.max() - p50s.min()) / r50) if len(runs) > 1 else None,
            "spread_p99": float((p99s.max() - p99s.min()) / r99) if len(runs) > 1 else None,
            "per_request_median_err": float(np.nanmedian(per_request))}
    span = [float(r.arrival_s.min()) for r in real]
    real_tput = [float(r.output_tokens.sum()) / float((r.arrival_s + r.e2e_s).max() - s) for r, s in zip(real, span)]
    sim_tput = float(sim.output_tokens.sum()) / float((sim.arrival_s + sim.e2e_s).max() - sim.arrival_s.min())
    out["throughput_tok_s"] = {"real": float(np.median(real_tput)), "sim": sim_tput,
                               "err": _relative(sim_tput, float(np.median(real_tput)))}
    out["mean_e2e_s"] = {"real": float(np.median([r.e2e_s.mean() for r in real])), "sim": float(sim.e2e_s.mean())}
    if case.speculative:
        rates = [a for a in (draft_acceptance_rate(r) for r in runs) if a is not None]
        req = result.requests
        decoding = req[req.decode_steps > 0]
        out["draft_acceptance_rate"] = {"real": float(np.median(rates)) if rates else None,
                                        "sim": float(req.accepted_tokens.sum() / max(req.drafted_tokens.sum(), 1))}
        out["tokens_per_decode_step"] = {
            "real": float(np.median([tokens_per_decode_step(r) for r in runs])),
            "sim": float(((decoding.emitted_tokens - 1) / decoding.decode_steps).mean())}
    out["target_pass_model"] = pass_model_errors(runs, profile_dir, case.target)
    out["sim_steps"] = int(len(result.steps))
    out["real_steps"] = int(np.median([len(r["steps"]) for r in runs]))
    out["load"] = [{"start": r["fingerprint"]["loadavg_at_start"], "end": r["loadavg_at_end"],
                    "other_processes_cores": r["cpu"]["other_processes_cores"]} for r in runs]
    out["_frames"] = {"real": real, "sim": sim}
    return out


def speedup(spec: dict, baseline: dict) -> dict:
    """Mean E2E of the plain baseline over the speculative case's (> 1: speculation helps), real and simulated."""
    real = baseline["mean_e2e_s"]["real"] / spec["mean_e2e_s"]["real"]
    sim = baseline["mean_e2e_s"]["sim"] / spec["mean_e2e_s"]["sim"]
    return {"real": real, "sim": sim, "err": _relative(sim, real), "same_direction": (real > 1) == (sim > 1)}


def load_runs(folder: Path) -> list[dict]:
    files = sorted(folder.glob("run-*.json"))
    if not files:
        raise ValueError(f"no recorded runs (run-*.json) in {folder}")
    return [json.loads(f.read_text()) for f in files]
