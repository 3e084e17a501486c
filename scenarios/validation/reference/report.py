"""Validation outputs: the printed table, CSV/JSON files and the simulated-vs-measured plot.

Files (each written to a temporary name and renamed into place, so none is ever half-written):
  steps.csv        one row per matched step: composition, measured and simulated seconds, % errors
  requests.csv     one row per request: measured and simulated TTFT/TPOT/E2E, % errors
  validation.json  summary figures, targets, run metadata (reference engine, profile fingerprint)
  validation.png   steps (scatter and timeline) and requests (scatter), simulated vs measured
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.results.outputs import summary_json

STEPS_CSV, REQUESTS_CSV, SUMMARY_JSON, PLOT_PNG = "steps.csv", "requests.csv", "validation.json", "validation.png"
OPS_CSV = "ops.csv"   # with --op-breakdown (scenarios.validation.reference.diagnose)
_KIND_COLORS = {"prefill": "tab:orange", "decode": "tab:blue", "mixed": "tab:green"}


def _pct(value: float) -> str:
    return "   n/a" if value is None or not math.isfinite(value) else f"{value:6.2f}"


def _ms(value: float) -> str:
    return "      n/a" if value is None or not math.isfinite(value) else f"{value * 1e3:9.1f}"


def _flag(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def format_table(summary: dict) -> str:
    """The human-readable report of `summary` (as written to validation.json)."""
    st, rq, meta, targets = summary["steps"], summary["requests"], summary["reference"], summary["targets"]
    draft = f" + {meta['draft_model']} (γ={meta['gamma']})" if meta.get("draft_model") else ""
    lines = [f"draftsim validate: {summary['hardware']} ({meta['device_name']}), {meta['target_model']}{draft}, "
             f"{rq['requests']} requests, {meta['threads']} threads, {meta['dtype']}",
             f"steps: {st['steps_matched']} matched of {st['steps_measured']} measured / "
             f"{st['steps_simulated']} simulated"
             + ("" if st["first_divergence"] < 0 else f"  (sequences diverge at step {st['first_divergence']})"),
             "",
             "per step (|% error| of duration)   median     P90   mean signed",
             f"  all steps                        {_pct(st['step_median_abs_pct'])}  {_pct(st['step_p90_abs_pct'])}"
             f"   {_pct(st['step_mean_signed_pct'])}   target median <= 3 %: "
             f"{_flag(targets['step_median_abs_le_3pct'])}"]
    for kind in ("prefill", "decode", "mixed"):
        if st.get(f"steps_{kind}"):
            lines.append(f"  {kind:8s} ({st[f'steps_{kind}']:4d} steps)         "
                         f"{_pct(st[f'step_{kind}_median_abs_pct'])}  {_pct(st[f'step_{kind}_p90_abs_pct'])}"
                         f"   {_pct(st[f'step_{kind}_mean_signed_pct'])}")
    for part in ("draft", "target"):
        lines.append(f"  {part} passes only               {_pct(st[f'step_{part}_median_abs_pct'])}  "
                     f"{_pct(st[f'step_{part}_p90_abs_pct'])}   {_pct(st[f'step_{part}_mean_signed_pct'])}")
    lines += [f"  measured time outside model passes: median {st['measured_other_median_s'] * 1e3:.2f} ms/step",
              "",
              "per request        measured ms  simulated ms   |% err|   median per-request |% err|"]
    for metric in ("ttft", "tpot", "e2e"):
        for q in ("p50", "p99"):
            label = f"{metric.upper()} {q.upper()}"
            extra = f"   {_pct(rq[f'{metric}_request_median_abs_pct'])}" if q == "p50" else ""
            if metric == "e2e":
                bound = "3" if q == "p50" else "8"
                key = "e2e_p50_abs_le_3pct" if q == "p50" else "e2e_p99_abs_le_8pct"
                extra += f"   (target <= {bound} %: {_flag(targets[key])})"
            lines.append(f"  {label:10s}     {_ms(rq[f'{metric}_{q}_measured_s'])}     "
                         f"{_ms(rq[f'{metric}_{q}_simulated_s'])}    {_pct(rq[f'{metric}_{q}_abs_pct'])}{extra}")
    lines += ["", f"reference run: {meta['wall_s']:.1f} s wall; load average {meta['load_average_start']} at "
                  f"start, {meta['load_average_end']} at end (the machine has {summary['cpu_count']} CPUs)"]
    noise = summary.get("noise")
    if noise:
        lines.append(f"noise over {noise['repeats']} repeats (figures above use per-step medians): step duration "
                     f"spread (max-min)/median: median {noise['step_spread_median_pct']:.1f} %, P90 "
                     f"{noise['step_spread_p90_pct']:.1f} %; run totals spread {noise['run_total_spread_pct']:.1f} %")
        per = ", ".join(f"{d['step_median_abs_pct']:.1f}" for d in summary["per_repeat"])
        lines.append(f"  step median |% err| of each repeat alone: {per}")
    return "\n".join(lines)


def _atomic_write(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)


def write_outputs(out_dir: str | Path, steps: pd.DataFrame, requests: pd.DataFrame, summary: dict,
                  plot: bool = True) -> list[Path]:
    """Write the CSVs, the JSON summary and (optionally) the plot; returns the written paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / STEPS_CSV, out / REQUESTS_CSV, out / SUMMARY_JSON]
    _atomic_write(paths[0], lambda p: steps.to_csv(p, index=False, float_format="%.9g"))
    _atomic_write(paths[1], lambda p: requests.to_csv(p, index=False, float_format="%.9g"))
    _atomic_write(paths[2], lambda p: p.write_text(summary_json(summary)))
    if plot:
        paths.append(out / PLOT_PNG)
        _atomic_write(paths[3], lambda p: plot_validation(steps, requests, summary, p))
    return paths


def plot_validation(steps: pd.DataFrame, requests: pd.DataFrame, summary: dict, path: Path) -> None:
    """Three panels: step durations simulated vs measured (log-log, by step kind), step durations over
    the run, and per-request TTFT/E2E simulated vs measured. Agg canvas, no PNG metadata."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 4.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax_scatter, ax_line, ax_req = fig.subplots(1, 3)
    for kind, color in _KIND_COLORS.items():
        sel = steps["kind"] == kind
        if sel.any():
            ax_scatter.scatter(steps.loc[sel, "measured_s"] * 1e3, steps.loc[sel, "simulated_s"] * 1e3, s=12,
                               color=color, alpha=0.7, label=f"{kind} ({int(sel.sum())})")
    _diagonal(ax_scatter, np.concatenate([steps["measured_s"], steps["simulated_s"]]) * 1e3)
    ax_scatter.set(xscale="log", yscale="log", xlabel="measured step (ms)", ylabel="simulated step (ms)",
                   title=f"steps: median |err| {summary['steps']['step_median_abs_pct']:.1f} %")
    ax_scatter.legend(fontsize=8)
    ax_line.plot(steps["step"], steps["measured_s"] * 1e3, lw=1.0, color="black", label="measured")
    ax_line.plot(steps["step"], steps["simulated_s"] * 1e3, lw=1.0, color="tab:red", ls="--", label="simulated")
    ax_line.set(xlabel="step", ylabel="duration (ms)", title="step durations over the run")
    ax_line.legend(fontsize=8)
    for metric, marker in (("ttft", "o"), ("e2e", "s")):
        ax_req.scatter(requests[f"measured_{metric}_s"], requests[f"simulated_{metric}_s"], s=16, marker=marker,
                       alpha=0.7, label=metric.upper())
    _diagonal(ax_req, np.concatenate([requests["measured_e2e_s"], requests["simulated_e2e_s"],
                                      requests["measured_ttft_s"], requests["simulated_ttft_s"]]))
    rq = summary["requests"]
    ax_req.set(xlabel="measured (s)", ylabel="simulated (s)",
               title=f"requests: E2E P50 err {rq['e2e_p50_abs_pct']:.1f} %, P99 {rq['e2e_p99_abs_pct']:.1f} %")
    ax_req.legend(fontsize=8)
    fig.savefig(path, format="png", dpi=100, metadata={"Software": None})


def _diagonal(ax, values: np.ndarray) -> None:
    values = values[np.isfinite(values) & (values > 0)]
    if len(values):
        lo, hi = values.min() * 0.9, values.max() * 1.1
        ax.plot([lo, hi], [lo, hi], color="gray", lw=0.8, ls=":")
