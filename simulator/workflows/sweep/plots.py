"""Standard plots of a sweep: each metric against one swept key, one line per combination of the others.

x: ``plot.x`` of the sweep file, else the first swept key with numeric values, else the first swept key
(categorical axis): `SweepConfig.plot_x`. Lines: one per combination of the remaining swept keys (``plot.hue`` first in the
label). Points: mean over seeds; the shaded band spans min..max over seeds. One PNG per metric,
``<metric>_vs_<x>.png``; rows with status other than ``ok`` are left out. Uses matplotlib's Agg canvas
directly (no pyplot state), PNGs without metadata.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simulator.errors import ScenarioError
from simulator.workflows.sweep.config import SweepConfig
from simulator.workflows.sweep.store import _atomic_write


def _numeric(series: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(series)) and not pd.api.types.is_bool_dtype(series)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def plot_sweep(frame: pd.DataFrame, spec: SweepConfig, out_dir: Path) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    keys = spec.param_keys
    ok = frame[frame["status"] == "ok"] if not frame.empty else frame
    if ok.empty:
        return []
    x = spec.plot_x
    if x not in ok.columns:
        raise ScenarioError("sweep.plot.x", f"{x!r} is not a swept key; swept: {', '.join(keys) or 'none'}")
    others = [k for k in keys if k != x]
    if spec.plot.hue:
        if spec.plot.hue not in others:
            raise ScenarioError("sweep.plot.hue", f"{spec.plot.hue!r} is not a swept key other than x")
        others = [spec.plot.hue] + [k for k in others if k != spec.plot.hue]
    out_dir.mkdir(parents=True, exist_ok=True)
    if ok[x].isna().any():   # a null among the values (slo.ttft_s: [null, 0.5]): no place on a numeric axis, and
        # groupby left its points out of every plot without a word; the axis is categorical, 'null' one category
        ok = ok.assign(**{x: ok[x].map(lambda v: "null" if pd.isna(v) else str(v))})
    numeric_x = _numeric(ok[x])
    categories = list(dict.fromkeys(ok[x].tolist()))
    paths = []
    for metric in spec.plot.metrics:
        if metric not in ok.columns:
            raise ScenarioError("sweep.plot.metrics", f"{metric!r} is not a summary metric")
        figure = Figure(figsize=(6.4, 4.2), dpi=100, layout="constrained")
        FigureCanvasAgg(figure)
        ax = figure.subplots()
        groups = ok.groupby(others, sort=False, dropna=False) if others else [((), ok)]
        for label, part in groups:
            label = label if isinstance(label, tuple) else (label,)
            stats = part.groupby(x, sort=True)[metric].agg(["mean", "min", "max"])
            xs = stats.index.to_numpy(float) if numeric_x else np.array([categories.index(v) for v in stats.index])
            name = ", ".join(f"{k}={v}" for k, v in zip(others, label)) or metric
            ax.plot(xs, stats["mean"].to_numpy(float), marker="o", label=name)
            if (stats["max"] > stats["min"]).any():
                ax.fill_between(xs, stats["min"].to_numpy(float), stats["max"].to_numpy(float), alpha=0.15)
        if not numeric_x:
            ax.set_xticks(range(len(categories)), [str(c) for c in categories])
        ax.set_xlabel(x)
        ax.set_ylabel(metric)
        ax.set_title(f"{spec.name}: {metric} (mean over seeds, band = min..max)", fontsize=9)
        if others:
            ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        path = out_dir / f"{_safe(metric)}_vs_{_safe(x)}.png"
        # aside, then renamed: a Ctrl-C while the PNG was being written left it cut short
        _atomic_write(path, lambda tmp, figure=figure: figure.savefig(tmp, format="png", metadata={"Software": None}))
        paths.append(path)
    return paths
