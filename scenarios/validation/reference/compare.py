"""Simulator vs. reference engine: per-step and per-request errors.

Error convention: relative to the measurement, in percent: err = (simulated − measured) / measured · 100;
"abs" statistics use |err|, "signed" ones keep the sign (> 0: the simulator is slower than reality).

Steps are matched by index: for an offline workload both runs execute the same step sequence, which is
checked on the step composition (prefill tokens and sequences, decode sequences, Σ decode context,
accepted and emitted tokens). If the sequences diverge (they should not; e.g. a scheduler change on one
side), only the common prefix before the first difference is compared, and the divergence is reported.

Requests are matched by request id. Percentiles are numpy's linear interpolation between order statistics,
the same as the simulator's summary.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

STEP_KEYS = ("prefill_tokens", "prefill_seqs", "decode_seqs", "decode_context_tokens", "accepted_tokens",
             "emitted_tokens")
REQUEST_METRICS = ("ttft", "tpot", "e2e")
PERCENTILES = {"p50": 50.0, "p99": 99.0}
TARGETS_PCT = {"step_median_abs": 3.0, "e2e_p50_abs": 3.0, "e2e_p99_abs": 8.0}


def pct_error(simulated: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """(simulated − measured) / measured · 100, NaN where the measurement is not positive."""
    simulated, measured = np.asarray(simulated, float), np.asarray(measured, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(measured > 0, (simulated - measured) / measured * 100.0, np.nan)


def step_kind(prefill_seqs: np.ndarray, decode_seqs: np.ndarray) -> np.ndarray:
    """'prefill', 'decode' or 'mixed' (chunked prefill piggy-backed on decodes) per step."""
    prefill, decode = np.asarray(prefill_seqs) > 0, np.asarray(decode_seqs) > 0
    return np.where(prefill & decode, "mixed", np.where(prefill, "prefill", "decode"))


@dataclass(frozen=True)
class StepMatch:
    frame: pd.DataFrame            # one row per matched step
    measured_steps: int
    simulated_steps: int
    first_divergence: int | None   # index of the first step whose composition differs (None: identical)


def match_steps(measured: pd.DataFrame, simulated: pd.DataFrame) -> StepMatch:
    """Pair steps by index over the common prefix of identical compositions."""
    n = min(len(measured), len(simulated))
    keys = list(STEP_KEYS)
    same = (measured[keys].to_numpy()[:n] == simulated[keys].to_numpy()[:n]).all(axis=1)
    diverge = int(np.argmin(same)) if n and not same.all() else None
    if diverge is None and len(measured) != len(simulated):
        diverge = n
    m = n if diverge is None else diverge
    meas, sim = measured.iloc[:m], simulated.iloc[:m]
    frame = pd.DataFrame({"step": np.arange(m)})
    for key in keys:
        frame[key] = meas[key].to_numpy()
    frame["kind"] = step_kind(frame["prefill_seqs"], frame["decode_seqs"])
    frame["measured_s"] = meas["duration_s"].to_numpy(float)
    frame["simulated_s"] = sim["duration_s"].to_numpy(float)
    frame["err_pct"] = pct_error(frame["simulated_s"], frame["measured_s"])
    frame["measured_draft_s"] = meas["draft_s"].to_numpy(float)
    frame["simulated_draft_s"] = sim["draft_s"].to_numpy(float)
    frame["draft_err_pct"] = pct_error(frame["simulated_draft_s"], frame["measured_draft_s"])
    frame["measured_target_s"] = meas["verify_s"].to_numpy(float)
    frame["simulated_target_s"] = sim["verify_s"].to_numpy(float)
    frame["target_err_pct"] = pct_error(frame["simulated_target_s"], frame["measured_target_s"])
    frame["measured_other_s"] = frame["measured_s"] - frame["measured_draft_s"] - frame["measured_target_s"]
    return StepMatch(frame, len(measured), len(simulated), diverge)


def _abs_stats(err: np.ndarray, prefix: str) -> dict[str, float]:
    err = err[np.isfinite(err)]
    if not len(err):
        return {f"{prefix}_median_abs_pct": np.nan, f"{prefix}_p90_abs_pct": np.nan,
                f"{prefix}_mean_signed_pct": np.nan}
    return {f"{prefix}_median_abs_pct": float(np.median(np.abs(err))),
            f"{prefix}_p90_abs_pct": float(np.percentile(np.abs(err), 90)),
            f"{prefix}_mean_signed_pct": float(err.mean())}


def step_summary(match: StepMatch) -> dict[str, float]:
    """Median / P90 |error| and mean signed error of step durations, overall, per step kind and for the
    draft and target parts; plus counts and the measured non-model time per step (scheduler, bookkeeping)."""
    f = match.frame
    out: dict[str, float] = {"steps_measured": match.measured_steps, "steps_simulated": match.simulated_steps,
                             "steps_matched": len(f),
                             "first_divergence": -1 if match.first_divergence is None else match.first_divergence}
    out.update(_abs_stats(f["err_pct"].to_numpy(float), "step"))
    for kind in ("prefill", "decode", "mixed"):
        sel = f["kind"].to_numpy() == kind
        out[f"steps_{kind}"] = int(sel.sum())
        if sel.any():
            out.update(_abs_stats(f["err_pct"].to_numpy(float)[sel], f"step_{kind}"))
    out.update(_abs_stats(f["draft_err_pct"].to_numpy(float), "step_draft"))
    out.update(_abs_stats(f["target_err_pct"].to_numpy(float), "step_target"))
    out["measured_total_s"] = float(f["measured_s"].sum())
    out["simulated_total_s"] = float(f["simulated_s"].sum())
    out["measured_other_median_s"] = float(np.median(f["measured_other_s"])) if len(f) else np.nan
    return out


def match_requests(measured: pd.DataFrame, simulated: pd.DataFrame) -> pd.DataFrame:
    """Per request: measured and simulated TTFT/TPOT/E2E and their % errors (rows joined on request_id)."""
    meas = measured.set_index("request_id")
    sim = simulated.set_index("request_id").reindex(meas.index)
    frame = pd.DataFrame({"request_id": meas.index.to_numpy(),
                          "prompt_tokens": meas["prompt_tokens"].to_numpy(),
                          "output_tokens": meas["output_tokens"].to_numpy()})
    for metric in REQUEST_METRICS:
        m = meas[f"{metric}_s"].to_numpy(float)
        s = sim[f"{metric}_s"].to_numpy(float)
        frame[f"measured_{metric}_s"], frame[f"simulated_{metric}_s"] = m, s
        frame[f"{metric}_err_pct"] = pct_error(s, m)
    return frame


def request_summary(frame: pd.DataFrame) -> dict[str, float]:
    """For TTFT, TPOT and E2E: measured and simulated P50/P99, |% error| of each percentile, and the
    median and P90 over requests of the per-request |% error|."""
    out: dict[str, float] = {"requests": len(frame)}
    for metric in REQUEST_METRICS:
        m = frame[f"measured_{metric}_s"].to_numpy(float)
        s = frame[f"simulated_{metric}_s"].to_numpy(float)
        ok = np.isfinite(m) & np.isfinite(s)
        for name, q in PERCENTILES.items():
            mp = float(np.percentile(m[ok], q)) if ok.any() else np.nan
            sp = float(np.percentile(s[ok], q)) if ok.any() else np.nan
            out[f"{metric}_{name}_measured_s"], out[f"{metric}_{name}_simulated_s"] = mp, sp
            out[f"{metric}_{name}_abs_pct"] = float(abs(pct_error(sp, mp)))
        err = np.abs(frame[f"{metric}_err_pct"].to_numpy(float)[ok])
        out[f"{metric}_request_median_abs_pct"] = float(np.median(err)) if len(err) else np.nan
        out[f"{metric}_request_p90_abs_pct"] = float(np.percentile(err, 90)) if len(err) else np.nan
    return out


def targets_met(steps: dict, requests: dict) -> dict[str, bool]:
    """The issue's CPU targets: step median |err| ≤ 3 %, E2E P50 ≤ 3 %, E2E P99 ≤ 8 %."""
    return {"step_median_abs_le_3pct": bool(steps["step_median_abs_pct"] <= TARGETS_PCT["step_median_abs"]),
            "e2e_p50_abs_le_3pct": bool(requests["e2e_p50_abs_pct"] <= TARGETS_PCT["e2e_p50_abs"]),
            "e2e_p99_abs_le_8pct": bool(requests["e2e_p99_abs_pct"] <= TARGETS_PCT["e2e_p99_abs"])}


def combine_repeats(runs: list[tuple[pd.DataFrame, pd.DataFrame]]) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Median run of repeated reference runs of one offline workload.

    Each run is (steps, requests) of the reference engine. With every arrival at 0 and steps tiling the
    timeline from 0, all repeats execute the same step sequence (checked), so a step's duration (and its
    draft / target parts) can be taken as its median over repeats, and request times re-derived from the
    median timeline: a request's admission, first token and finish are the start / end of the same step
    indices in every repeat. This removes most of the noise other processes add to a shared machine
    (the profile itself is a median over repetitions too). Returns (steps, requests, noise) where noise
    holds the run-to-run spread: per step (max − min) / median over repeats, median and P90 over steps,
    and the spread of the runs' total times.
    """
    if not runs:
        raise ValueError("combine_repeats: no runs")
    steps0, req0 = runs[0]
    if (req0["arrival_s"].to_numpy(float) != 0).any():
        raise ValueError("repeats: only offline workloads (every arrival_s = 0) have a fixed step sequence")
    keys = list(STEP_KEYS)
    for steps, _ in runs[1:]:
        if len(steps) != len(steps0) or (steps[keys].to_numpy() != steps0[keys].to_numpy()).any():
            raise ValueError("repeats: the runs executed different step sequences")
    stack = {c: np.stack([s[c].to_numpy(float) for s, _ in runs]) for c in ("duration_s", "draft_s", "verify_s")}
    steps = steps0.copy()
    for column, values in stack.items():
        steps[column] = np.median(values, axis=0)
    end = np.cumsum(steps["duration_s"].to_numpy())
    start = end - steps["duration_s"].to_numpy()
    steps["start_s"], steps["end_s"] = start, end

    def remap(times: np.ndarray, grid: np.ndarray, new_grid: np.ndarray) -> np.ndarray:
        idx = np.clip(np.searchsorted(grid, times), 0, len(grid) - 1)
        ok = np.isfinite(times)
        if not np.allclose(grid[idx][ok], times[ok], rtol=0, atol=1e-9):
            raise ValueError("repeats: a request time is not a step boundary (is the workload offline?)")
        return np.where(ok, new_grid[idx], np.nan)

    old_start, old_end = steps0["start_s"].to_numpy(float), steps0["end_s"].to_numpy(float)
    req = req0.copy()
    req["admit_s"] = remap(req0["admit_s"].to_numpy(float), old_start, start)
    req["first_token_s"] = remap(req0["first_token_s"].to_numpy(float), old_end, end)
    req["finish_s"] = remap(req0["finish_s"].to_numpy(float), old_end, end)
    emitted = req["emitted_tokens"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        req["ttft_s"] = req["first_token_s"] - req["arrival_s"]
        req["e2e_s"] = req["finish_s"] - req["arrival_s"]
        req["queue_s"] = req["admit_s"] - req["arrival_s"]
        req["tpot_s"] = np.where(emitted > 1, (req["finish_s"] - req["first_token_s"]) / np.maximum(emitted - 1, 1),
                                 np.nan)
    durations = stack["duration_s"]
    spread = (durations.max(axis=0) - durations.min(axis=0)) / np.median(durations, axis=0) * 100
    totals = durations.sum(axis=1)
    noise = {"repeats": len(runs), "step_spread_median_pct": float(np.median(spread)),
             "step_spread_p90_pct": float(np.percentile(spread, 90)),
             "run_total_s": [float(t) for t in totals],
             "run_total_spread_pct": float((totals.max() - totals.min()) / np.median(totals) * 100)}
    return steps, req, noise
