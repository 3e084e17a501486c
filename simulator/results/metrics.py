"""Per-request and per-step metrics frames, and the run summary.

The engine hands over column dicts of numpy arrays (`REQUEST_COLUMNS`, `STEP_COLUMNS`); this module turns
them into DataFrames with derived latencies and reduces them to a flat summary dict (JSON-ready apart from
numpy scalars, which `outputs` converts).

Definitions (all times in seconds):

- ttft = first_token - arrival; e2e = finish - arrival; queue = admit - arrival (admit = first scheduled);
  tpot = (finish - first_token) / (emitted - 1), NaN for a request that emitted a single token.
- A request is *finished* when it is not dropped and has a finite finish time. Latency percentiles are
  over finished requests (numpy's linear interpolation between order statistics); NaN when none.
- SLO met: finished, and every SLO that is set holds (<=). A single-token request has no TPOT and meets
  any TPOT SLO. Dropped or unfinished requests never meet the SLO.
- Measured window: [first arrival, sim_end_s]. Rates (throughput, goodput, lambda), utilization and MFU/MBU
  use its length; step busy time and request sojourns are clipped to it. Sums over steps are exact
  (simulator.results.step_totals: the same whether the run kept every step, a sample or aggregates).
- Speculation: mean accepted length tau = sum(accepted_tokens) / sum(decode_steps) over all requests
  (excludes the bonus token); tokens per step = tau + 1, i.e. what a decode step yields before truncation
  at a request's output limit; draft acceptance rate = sum(accepted) / sum(drafted).
- `flops` and `bytes` in a step are totals over the replica's GPUs; MFU = sum(flops) / (window * peak *
  num_replicas * gpus_per_replica) (idle time counts against it); `mfu_busy` divides by busy GPU-time only.
- KV use: per step kv_blocks_used / kv_blocks_total, mean weighted by step duration (busy time only).
- Little's law: lambda = arrivals / window, W = mean sojourn (departure - arrival; departure = finish_s,
  or sim_end_s for a request still in the system, or arrival_s for a drop with no finish time).
  `little_L_steps` is the time-average of sum over replicas of (queued + running) from the step log, an
  independent measurement of the engine's bookkeeping. Approximation: the step log samples the counts
  at step starts, so a request arriving while its replica is busy is counted from the next step; this
  biases L_steps low by about lambda * (mean residual step time), a relative error of roughly
  (step duration / 2) / W. The counts are those of a replica's queues, so requests outside every queue are
  not in L_steps: paused out of the batch (iterative retrieval, simulator.core.pauses; L_steps fell 13-96 %
  below lambda * W in fuzzed retrieval runs) and between the pools of a disaggregated cluster
  (simulator.cluster.handoff). `little_L_requests` integrates N(t) exactly from the request records; it
  equals lambda * W whenever every sojourn lies inside the window.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from simulator.results.columns import ColumnTable
from simulator.results.latency_source import format_latency_source  # noqa: F401  (re-exported)
from simulator.results.slo import SLO  # noqa: F401  (re-exported: the objectives are read here)
from simulator.results.step_totals import StepTotals

REQUEST_COLUMNS = {
    "request_id": np.int64, "replica": np.int64, "arrival_s": np.float64, "admit_s": np.float64,
    "first_token_s": np.float64, "finish_s": np.float64, "prompt_tokens": np.int64,
    "output_tokens": np.int64, "emitted_tokens": np.int64, "preemptions": np.int64,
    "decode_steps": np.int64, "accepted_tokens": np.int64, "drafted_tokens": np.int64,
    "dropped": np.bool_, "drop_reason": str,
}
STEP_COLUMNS = {
    "replica": np.int64, "start_s": np.float64, "duration_s": np.float64, "prefill_tokens": np.int64,
    "prefill_seqs": np.int64, "decode_seqs": np.int64, "query_tokens_per_seq": np.int64,
    "decode_context_tokens": np.int64, "draft_s": np.float64, "verify_s": np.float64,
    "engine_s": np.float64, "accepted_tokens": np.int64, "emitted_tokens": np.int64, "flops": np.float64, "bytes": np.float64,
    "kv_blocks_used": np.int64, "kv_blocks_total": np.int64, "queued_requests": np.int64,
    "running_requests": np.int64,
}
LATENCIES = ("ttft", "tpot", "e2e", "queue")
QUANTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0}


def _table(cols: Mapping[str, np.ndarray], schema: Mapping[str, type], what: str) -> ColumnTable:
    missing = [name for name in schema if name not in cols]
    if missing:
        raise ValueError(f"{what}: missing column(s) {', '.join(missing)}")
    sizes = {len(np.asarray(cols[name])) for name in cols}
    if len(sizes) > 1:
        raise ValueError(f"{what}: columns differ in length ({sorted(sizes)})")
    table = ColumnTable()
    for name, dtype in schema.items():
        table[name] = np.asarray(cols[name]).astype(dtype, copy=True)
    for name in cols:  # extra engine columns are kept, after the contract ones
        if name not in schema:
            table[name] = np.array(cols[name], copy=True)
    return table


def column(records, name: str, dtype=None) -> np.ndarray:
    """A column of a ColumnTable or a DataFrame (the API's frames) as NumPy."""
    return np.asarray(records[name], dtype=dtype)


def finished_mask(requests) -> np.ndarray:
    return ~column(requests, "dropped", bool) & np.isfinite(column(requests, "finish_s", float))


def slo_met_mask(requests, slo: SLO | None) -> np.ndarray:
    """Per request: finished and every set SLO holds. Uses the derived ttft_s/tpot_s/e2e_s columns."""
    ok = finished_mask(requests)
    if slo is None:
        return ok
    with np.errstate(invalid="ignore"):
        if slo.ttft_s is not None:
            ok &= column(requests, "ttft_s", float) <= slo.ttft_s
        if slo.tpot_s is not None:
            tpot = column(requests, "tpot_s", float)
            ok &= np.isnan(tpot) | (tpot <= slo.tpot_s)
        if slo.e2e_s is not None:
            ok &= column(requests, "e2e_s", float) <= slo.e2e_s
    return ok


def latency_columns(arrival: np.ndarray, first: np.ndarray, finish: np.ndarray,
                    emitted: np.ndarray) -> dict[str, np.ndarray]:
    """ttft_s, tpot_s and e2e_s of requests (the module docstring's definitions); also used for runs of a
    real engine (scenarios.validation.vllm.compare) so that both sides are measured alike."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"ttft_s": first - arrival,
                "tpot_s": np.where(emitted > 1, (finish - first) / np.maximum(emitted - 1, 1), np.nan),
                "e2e_s": finish - arrival}


def request_table(cols: Mapping[str, np.ndarray], slo: SLO | None = None) -> ColumnTable:
    """Request records plus ttft_s, tpot_s, e2e_s, queue_s, mean_accepted_length and slo_met."""
    table = _table(cols, REQUEST_COLUMNS, "requests")
    arrival = table["arrival_s"]
    steps = table["decode_steps"]
    for name, values in latency_columns(arrival, table["first_token_s"], table["finish_s"],
                                        table["emitted_tokens"]).items():
        table[name] = values
    with np.errstate(invalid="ignore", divide="ignore"):
        table["queue_s"] = table["admit_s"] - arrival
        table["mean_accepted_length"] = np.where(steps > 0, table["accepted_tokens"] / np.maximum(steps, 1), np.nan)
    table["slo_met"] = slo_met_mask(table, slo)
    return table


def build_requests_frame(cols: Mapping[str, np.ndarray], slo: SLO | None = None):
    """`request_table` as a pandas DataFrame."""
    return request_table(cols, slo).to_pandas()


AGGREGATE_COLUMNS = {
    "replica": np.int64, "interval_start_s": np.float64, "steps": np.int64, "busy_s": np.float64,
    "prefill_tokens": np.int64, "prefill_seqs": np.int64, "decode_seqs": np.int64, "emitted_tokens": np.int64,
    "accepted_tokens": np.int64, "draft_s": np.float64, "verify_s": np.float64, "engine_s": np.float64,
    "flops": np.float64, "bytes": np.float64, "kv_blocks_used_max": np.int64, "kv_blocks_total": np.int64,
    "queued_request_s": np.float64, "running_request_s": np.float64,
}


def aggregate_table(cols: Mapping[str, np.ndarray]) -> ColumnTable:
    """Per-(replica, interval) step aggregates (`outputs.steps: aggregate`; simulator.results.step_totals)."""
    return _table(cols, AGGREGATE_COLUMNS, "step aggregates")


def step_table(cols: Mapping[str, np.ndarray]) -> ColumnTable:
    """Step log plus end_s = start_s + duration_s."""
    table = _table(cols, STEP_COLUMNS, "steps")
    table["end_s"] = table["start_s"] + table["duration_s"]
    return table


def build_aggregate_frame(cols: Mapping[str, np.ndarray]):
    """`aggregate_table` as a pandas DataFrame."""
    return aggregate_table(cols).to_pandas()


def build_steps_frame(cols: Mapping[str, np.ndarray]):
    """`step_table` as a pandas DataFrame."""
    return step_table(cols).to_pandas()


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator) / float(denominator) if denominator > 0 else math.nan


def _latency_stats(name: str, values: np.ndarray) -> dict[str, float]:
    values = values[np.isfinite(values)]
    stats = {f"{name}_{q}_s": (float(np.percentile(values, p)) if len(values) else math.nan)
             for q, p in QUANTILES.items()}
    stats[f"{name}_mean_s"] = float(values.mean()) if len(values) else math.nan
    return stats


def _clipped_lengths(start: np.ndarray, end: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0.0, None)


def slo_summary(requests, slo: SLO, window_s: float, gpus: int) -> dict:
    """The summary's SLO fields (goodput, attainment, the SLOs): the only ones that depend on the SLOs,
    from the requests' dropped, finish_s, ttft_s, tpot_s and e2e_s."""
    met = slo_met_mask(requests, slo)
    out = {"goodput_rps": _ratio(met.sum(), window_s)}
    out["goodput_per_gpu_rps"] = out["goodput_rps"] / gpus
    out["slo_attainment"] = _ratio(met.sum(), len(requests))
    out["slo_target_attainment"] = float(slo.attainment)
    out["slo_attained"] = bool(out["slo_attainment"] >= slo.attainment)
    out.update({"slo_ttft_s": slo.ttft_s, "slo_tpot_s": slo.tpot_s, "slo_e2e_s": slo.e2e_s})
    return out


def summarize(requests_df, steps, *, slo: SLO, num_replicas: int,
              gpus_per_replica: int, peak_flops_per_gpu: float, peak_bw_per_gpu: float,
              sim_end_s: float) -> dict:
    """Reduce a run to a flat dict of scalars (plus `dropped_by_reason`, a dict reason -> count). `steps`:
    the run's step totals (simulator.results.step_totals, accumulated while it ran), or a frame of all
    its steps. `requests_df`: a ColumnTable or a DataFrame of the request records."""
    if num_replicas < 1 or gpus_per_replica < 1:
        raise ValueError(f"summarize: num_replicas and gpus_per_replica must be >= 1; got "
                         f"{num_replicas}, {gpus_per_replica}")
    if not (peak_flops_per_gpu > 0 and peak_bw_per_gpu > 0):
        raise ValueError("summarize: peak_flops_per_gpu and peak_bw_per_gpu must be > 0")
    req = requests_df
    arrival = column(req, "arrival_s", float)
    finish = column(req, "finish_s", float)
    dropped = column(req, "dropped", bool)
    finished = finished_mask(req)
    start_s = float(arrival.min()) if len(arrival) else 0.0
    window_s = float(sim_end_s) - start_s
    totals = steps if isinstance(steps, StepTotals) else \
        StepTotals.from_frame(steps, num_replicas, start_s, float(sim_end_s))
    gpus = num_replicas * gpus_per_replica
    out: dict = {
        "num_replicas": int(num_replicas), "gpus_per_replica": int(gpus_per_replica),
        "window_start_s": start_s, "window_end_s": float(sim_end_s), "window_s": window_s,
        "requests_arrived": int(len(req)), "requests_finished": int(finished.sum()),
        "requests_dropped": int(dropped.sum()),
        "requests_unfinished": int(len(req) - finished.sum() - dropped.sum()),
        "dropped_by_reason": _counts(column(req, "drop_reason")[dropped]),
        "preemptions": int(column(req, "preemptions").sum()),
    }
    for name in LATENCIES:
        out.update(_latency_stats(name, column(req, f"{name}_s", float)[finished]))

    admitted = np.isfinite(column(req, "admit_s", float))
    emitted = column(req, "emitted_tokens")   # per sequence: × parallel_samples sequences per request
    if "parallel_samples" in req:
        emitted = emitted * column(req, "parallel_samples")
    out["output_tokens_per_s"] = _ratio(emitted.sum(), window_s)
    out["prompt_tokens_per_s"] = _ratio(column(req, "prompt_tokens")[admitted].sum(), window_s)
    out["requests_per_s"] = _ratio(finished.sum(), window_s)
    out.update(slo_summary(req, slo, window_s, gpus))

    decode_steps = column(req, "decode_steps").sum()
    accepted = column(req, "accepted_tokens").sum()
    out["mean_accepted_length"] = _ratio(accepted, decode_steps)
    out["tokens_per_step"] = out["mean_accepted_length"] + 1.0
    out["draft_acceptance_rate"] = _ratio(accepted, column(req, "drafted_tokens").sum())

    busy_per_replica = totals.busy_per_replica()
    busy = totals.busy_weighted(np.ones(num_replicas))
    utilization = busy_per_replica / window_s if window_s > 0 else np.full(num_replicas, math.nan)
    out["utilization_mean"] = float(utilization.mean())
    out["utilization_min"] = float(utilization.min())
    out["utilization_max"] = float(utilization.max())
    flops, moved = totals.sum("flops"), totals.sum("bytes")
    out["mfu"] = _ratio(flops, window_s * peak_flops_per_gpu * gpus)
    out["mbu"] = _ratio(moved, window_s * peak_bw_per_gpu * gpus)
    out["mfu_busy"] = _ratio(flops, busy * gpus_per_replica * peak_flops_per_gpu)
    out["mbu_busy"] = _ratio(moved, busy * gpus_per_replica * peak_bw_per_gpu)
    out["kv_use_mean"] = _ratio(totals.sum("kv_weighted_s"), totals.sum("kv_duration_s"))
    out["kv_use_max"] = totals.kv_max
    out["steps"] = totals.steps
    duration = totals.sum("duration_s")
    out["mean_step_s"] = duration / totals.steps if totals.steps else math.nan
    out["draft_time_fraction"] = _ratio(totals.sum("draft_s"), duration)

    departure = np.where(np.isfinite(finish), finish, np.where(dropped, arrival, float(sim_end_s)))
    out["little_lambda_rps"] = _ratio(len(req), window_s)
    out["little_W_s"] = float((departure - arrival).mean()) if len(req) else math.nan
    out["little_lambda_W"] = out["little_lambda_rps"] * out["little_W_s"]
    out["little_L_requests"] = _ratio(_clipped_lengths(arrival, departure, start_s, float(sim_end_s)).sum(),
                                      window_s)
    out["little_L_steps"] = _ratio(totals.sum("in_system_busy_s"), window_s)
    out["little_rel_err"] = _ratio(abs(out["little_L_steps"] - out["little_lambda_W"]), out["little_lambda_W"])
    return out


def _counts(values: np.ndarray) -> dict[str, int]:
    """value -> count, keys sorted (the summary's dropped_by_reason)."""
    labels, counts = np.unique(values.astype(str), return_counts=True)
    return {str(label): int(count) for label, count in zip(labels.tolist(), counts.tolist())}


def _num(value, scale: float = 1.0, digits: int = 2) -> str:
    """A number as text, or '-' when missing/NaN."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * scale:.{digits}f}"


def _pct(value) -> str:
    text = _num(value, 100.0, 1)
    return text if text == "-" else f"{text} %"


def _engine_time(engine: Mapping | None) -> str:
    """A pool's engine-time model in a few words (summary `engine_time`)."""
    return "none" if engine is None else \
        f"{engine['framework']} {engine['versions']} ({'overlapped' if engine['overlap'] else 'synchronous'})"


def format_summary_table(summary: Mapping) -> str:
    """Compact table of the headline numbers (for the terminal); the latency columns widen with their
    values (simulator.console.table), so any magnitude stays aligned."""
    from simulator.console.table import format_columns

    s = summary
    reasons = ", ".join(f"{k} {v}" for k, v in s["dropped_by_reason"].items())
    requests = (f"arrived {s['requests_arrived']}  finished {s['requests_finished']}  "
                f"dropped {s['requests_dropped']}" + (f" ({reasons})" if reasons else ""))
    if s["requests_unfinished"]:
        requests += f"  unfinished {s['requests_unfinished']}"
    rows = [
        ("requests", requests),
        ("window", f"{_num(s['window_s'], digits=3)} s   steps {s['steps']}   "
                   f"preemptions {s['preemptions']}"),
    ]
    lines = [f"{label:<13}{text}" for label, text in rows]
    latency = [[label.ljust(11), *(_num(s[f"{name}_{q}_s"], scale) for q in (*QUANTILES, "mean"))]
               for name, label, scale in (("ttft", "TTFT ms", 1e3), ("tpot", "TPOT ms", 1e3),
                                          ("e2e", "E2E s", 1.0), ("queue", "queue ms", 1e3))]
    lines += format_columns(["latency".ljust(11), *QUANTILES, "mean"], latency).splitlines()
    verdict = "met" if s["slo_attained"] else "missed"
    rows = [
        ("throughput", f"{_num(s['output_tokens_per_s'], digits=1)} tok/s   "
                       f"{_num(s['requests_per_s'], digits=3)} req/s"),
        ("goodput", f"{_num(s['goodput_rps'], digits=3)} req/s   {_num(s['goodput_per_gpu_rps'], digits=3)} "
                    f"req/s/GPU   SLO attainment {_pct(s['slo_attainment'])} "
                    f"(target {_pct(s['slo_target_attainment'])}: {verdict})"),
        ("speculation", f"accepted length {_num(s['mean_accepted_length'])}   tokens/step "
                        f"{_num(s['tokens_per_step'])}   draft acceptance {_pct(s['draft_acceptance_rate'])}"),
        ("hardware", f"utilization {_pct(s['utilization_mean'])}   MFU {_pct(s['mfu'])}   "
                     f"MBU {_pct(s['mbu'])}   KV mean {_pct(s['kv_use_mean'])} max {_pct(s['kv_use_max'])}"),
        ("Little's law", f"L {_num(s['little_L_steps'])} (step log) vs lambda*W {_num(s['little_lambda_W'])}"
                         f"   rel. error {_pct(s['little_rel_err'])}"),
    ]
    if "prefix_cache_hit_rate" in s or "kv_swapped_tokens" in s:   # cluster.kv_cache (results.summary.kv_cache_summary)
        parts = []
        if "prefix_cache_hit_rate" in s:
            parts.append(f"prefix-cache hit rate {_pct(s['prefix_cache_hit_rate'])}   saved prefill tokens "
                         f"{s['prefix_cache_saved_prefill_tokens']:,}")
        if "prefix_cache_host_loaded_tokens" in s:
            parts.append(f"loaded from host {s['prefix_cache_host_loaded_tokens']:,}")
        if "kv_swapped_tokens" in s:
            parts.append(f"swapped {s['kv_swapped_tokens']:,} tokens   KV I/O {_pct(s['kv_io_time_fraction'])} of busy time")
        rows.append(("KV cache", "   ".join(parts)))
    if s.get("energy_per_output_token_j") is not None and math.isfinite(s["energy_per_output_token_j"]):
        cost = s.get("usd_per_mtok")
        rows.append(("energy", f"{_num(s['energy_per_output_token_j'], digits=3)} J/token "
                               f"({_num(s['gpu_energy_per_output_token_j'], digits=3)} GPU only)   "
                               f"{_num(s['avg_power_per_gpu_w'], digits=0)} W per GPU   "
                               + (f"${_num(cost, digits=3)} per M output tokens" if cost is not None and math.isfinite(cost)
                                  else "no $/GPU-hour: set energy.usd_per_gpu_hour")))
    if "latency_source" in s:
        # pools priced apart (simulator.results.summary.pricing_summary: other hardware) one line each; the first
        # pool's alone hid the other's source (prefill on a user GPU, roofline; decode on an A100, measured)
        pools = [key.removesuffix("_latency_source") for key in s if key.endswith("_latency_source")]
        busy = f"{_pct(s.get('engine_time_fraction', 0.0))} of busy time"
        if pools:
            rows += [("latency", f"{pool}: {format_latency_source(s[pool + '_latency_source'])}") for pool in pools]
            rows += [("engine time", f"{pool}: {_engine_time(s[pool + '_engine_time'])}") for pool in pools]
            rows.append(("engine time", f"{busy}, all pools"))
        else:
            rows.append(("latency", format_latency_source(s["latency_source"])))
            rows.append(("engine time", f"{_engine_time(s.get('engine_time'))}   {busy}"))
    lines += [f"{label:<13}{text}" for label, text in rows]
    return "\n".join(lines)
