"""PNG plots of one run: latency CDFs and throughput / queue length over time.

Uses matplotlib's object API with the Agg canvas (never pyplot), so importing or calling this module does
not change the backend of an interactive session. PNGs carry no software/date metadata, so identical
inputs give byte-identical files. matplotlib is imported lazily: a run without plots does not pay for it.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

LATENCY_CDF_PNG = "latency_cdf.png"
TIMELINE_PNG = "throughput_queue.png"
PLOT_FILES = (LATENCY_CDF_PNG, TIMELINE_PNG)
TIMELINE_BINS = 100
_PNG_METADATA = {"Software": None}
_DPI = 100


def _new_figure(width_in: float, height_in: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_in, height_in), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path: Path) -> None:
    figure.savefig(path, format="png", dpi=_DPI, metadata=_PNG_METADATA)


def _finished(requests: pd.DataFrame) -> pd.DataFrame:
    keep = ~requests["dropped"].to_numpy(bool) & np.isfinite(requests["finish_s"].to_numpy(float))
    return requests.loc[keep]


def plot_latency_cdfs(requests: pd.DataFrame, summary: Mapping, path: Path) -> None:
    """Empirical CDFs of TTFT, TPOT and E2E over finished requests, with SLO thresholds when set."""
    plot_latency_cdfs_overlaid({"": requests}, summary, path)


_RUN_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:gray")
_LEGEND_COLUMNS = 4   # columns of the shared legend below the panels, when the runs are more than _RUN_COLORS


def _run_styles(count: int) -> list[tuple[str, str]]:
    """(colour, line style) of each of `count` runs: the seven colours, each run its own; beyond seven, the
    20 colours of tab20 with a line style per round of them (no two runs alike up to 80)."""
    if count <= len(_RUN_COLORS):
        return [(color, "-") for color in _RUN_COLORS[:count]]
    from matplotlib import colormaps
    cycle = colormaps["tab20"].colors
    styles = ("-", "--", ":", "-.")
    return [(cycle[i % len(cycle)], styles[(i // len(cycle)) % len(styles)]) for i in range(count)]


def plot_latency_cdfs_overlaid(runs: Mapping[str, pd.DataFrame], summary: Mapping, path: Path) -> None:
    """The latency CDFs of several runs overlaid (label -> requests frame; one colour each, in order), with
    the SLO thresholds of `summary` (the first run's) when set. One unlabelled run: `plot_latency_cdfs`.
    Up to seven runs each panel has its legend; more (a compare of many variants) share one legend below
    the panels, the figure growing with its rows (each panel's legend overflowed it: constrained layout
    collapsed the axes to nothing)."""
    shared = len(runs) > len(_RUN_COLORS)
    rows = -(-len(runs) // _LEGEND_COLUMNS) if shared else 0
    figure = _new_figure(12.0, 3.6 + 0.2 * rows)
    axes = figure.subplots(1, 3)
    styles = _run_styles(len(runs))
    panels = (("ttft_s", "TTFT (ms)", 1e3, "slo_ttft_s"), ("tpot_s", "TPOT (ms)", 1e3, "slo_tpot_s"),
              ("e2e_s", "E2E latency (s)", 1.0, "slo_e2e_s"))
    for ax, (column, label, scale, slo_key) in zip(axes, panels):
        drawn = False
        for (name, requests), (color, style) in zip(runs.items(), styles):
            values = np.sort(_finished(requests)[column].to_numpy(float))
            values = values[np.isfinite(values)] * scale
            if len(values):
                fraction = np.arange(1, len(values) + 1) / len(values)
                ax.step(np.concatenate([[values[0]], values]), np.concatenate([[0.0], fraction]), where="post",
                        color=color, linestyle=style, linewidth=1.5, label=name or None)
                drawn = True
        if not drawn:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        if summary.get(slo_key) is not None:
            ax.axvline(summary[slo_key] * scale, color="tab:red", linestyle="--", linewidth=1, label="SLO")
        if not shared and (summary.get(slo_key) is not None or (drawn and any(runs))):
            ax.legend(loc="lower right", fontsize=8 if len(runs) > 1 else None)
        ax.set_xlabel(label)
        ax.set_ylim(0.0, 1.02)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("fraction of finished requests")
    if shared:
        handles, labels = axes[0].get_legend_handles_labels()
        figure.legend(handles, labels, loc="outside lower center", ncols=_LEGEND_COLUMNS, fontsize=7)
    _save(figure, path)


def _integral_at(starts: np.ndarray, ends: np.ndarray, heights: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Exact integral from -inf to each `at` of the sum of boxes height * 1[start <= t < end].

    The sum is piecewise linear in t with slope changes +height at starts and -height at ends, so it is
    evaluated at the sorted breakpoints and linearly interpolated in between (exact, O(n log n)).
    """
    if len(starts) == 0:
        return np.zeros(len(at))
    times = np.concatenate([starts, ends])
    slope_change = np.concatenate([heights, -heights])
    order = np.argsort(times, kind="stable")
    times, slope = times[order], np.cumsum(slope_change[order])
    area = np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(times))])
    return np.interp(at, times, area, left=0.0, right=area[-1])


def timeline_bins(steps: pd.DataFrame, start_s: float, end_s: float, bins: int = TIMELINE_BINS, *,
                  weight: float = 1.0):
    """Per time bin: output tokens/s (tokens counted at their step's end) and the time-averaged number of
    queued and running requests summed over replicas (idle replicas count zero). `weight`: how many steps
    each row stands for (`outputs.steps: sampled` keeps every `step_sample_every`-th step of a replica, so
    each kept step is counted that many times: an estimate, exact only where steps are alike)."""
    edges = np.linspace(start_s, end_s if end_s > start_s else start_s + 1.0, bins + 1)
    width = np.diff(edges)
    begin = steps["start_s"].to_numpy(float)
    finish = begin + steps["duration_s"].to_numpy(float)
    tokens, _ = np.histogram(finish, bins=edges, weights=steps["emitted_tokens"].to_numpy(float) * weight)
    averages = {}
    for column in ("queued_requests", "running_requests"):
        area = _integral_at(begin, finish, steps[column].to_numpy(float) * weight, edges)
        averages[column] = np.diff(area) / width
    return edges, tokens / width, averages["queued_requests"], averages["running_requests"]


def aggregate_timeline_bins(aggregates: pd.DataFrame, start_s: float, end_s: float, interval_s: float,
                            bins: int = TIMELINE_BINS):
    """`timeline_bins` of a step log kept as per-(replica, interval) sums (`outputs.steps: aggregate`): each
    interval's tokens and queued/running request-seconds are spread evenly over its `interval_s` (the sums
    say no more where inside it they fell; tokens are binned by their step's start, not its end)."""
    edges = np.linspace(start_s, end_s if end_s > start_s else start_s + 1.0, bins + 1)
    width = np.diff(edges)
    begin = aggregates["interval_start_s"].to_numpy(float)
    finish = begin + interval_s
    rates = [np.diff(_integral_at(begin, finish, aggregates[column].to_numpy(float) / interval_s, edges)) / width
             for column in ("emitted_tokens", "queued_request_s", "running_request_s")]
    return (edges, *rates)


def plot_timeline(steps: pd.DataFrame, summary: Mapping, path: Path, kept=None) -> None:
    """Output throughput and queue/batch occupancy over the measured window. `kept`: what the step frame
    holds (the scenario's `outputs` section: every step — the default —, a sample or interval sums)."""
    window = float(summary["window_start_s"]), float(summary["window_end_s"])
    mode = kept.steps if kept is not None else "full"
    if mode == "aggregate":
        edges, throughput, queued, running = aggregate_timeline_bins(steps, *window, kept.step_interval_s)
    else:
        edges, throughput, queued, running = timeline_bins(
            steps, *window, weight=kept.step_sample_every if mode == "sampled" else 1.0)
    figure = _new_figure(10.0, 6.0)
    top, bottom = figure.subplots(2, 1, sharex=True)
    top.stairs(throughput, edges, color="tab:blue", linewidth=1.2)
    note = f" (est. from every {kept.step_sample_every}th step)" if mode == "sampled" else ""
    top.set_ylabel("output tokens/s" + note)
    top.grid(True, alpha=0.3)
    bottom.stairs(queued, edges, color="tab:red", linewidth=1.2, label="queued (waiting)")
    bottom.stairs(running, edges, color="tab:green", linewidth=1.2, label="running (admitted)")
    bottom.set_ylabel("requests (all replicas)" + note)
    bottom.set_xlabel("time (s)")
    bottom.legend(loc="upper right")
    bottom.grid(True, alpha=0.3)
    _save(figure, path)


def write_plots(out_dir: Path, requests: pd.DataFrame, steps: pd.DataFrame, summary: Mapping,
                steps_kept=None) -> list[Path]:
    """Write every plot into `out_dir`; returns the written paths. `steps_kept`: the scenario's `outputs`
    section when the step frame is not every step (`plot_timeline`)."""
    out_dir = Path(out_dir)
    plot_latency_cdfs(requests, summary, out_dir / LATENCY_CDF_PNG)
    plot_timeline(steps, summary, out_dir / TIMELINE_PNG, steps_kept)
    return [out_dir / name for name in PLOT_FILES]
