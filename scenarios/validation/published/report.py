"""`draftsim validate --published`: predict every published GPU measurement and report the error.

Prints one line per point (published, predicted, signed error, what priced it), then the median and
P90 of |error| per kind, per pricing source, per publication and overall, and writes them to
`--out` (`points.csv`, `summary.csv`). Points whose speculative acceptance comes from the timed run
itself are listed but kept out of the headline statistics (not out of sample), as are points that
cannot be expressed (with the reason). Exit code 0 when every expressible point was predicted, 1 when
a prediction failed unexpectedly.
"""
from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import pandas as pd

from scenarios.validation.published.points import KINDS, load_points
from scenarios.validation.published.predict import Unpredictable, predict, relative_error
from simulator.console.contract import parse_args
from simulator.console.printable import printable
from simulator.console.progress import Progress
from simulator.errors import ScenarioError
from simulator.results.output_folder import check_output_dir, staged_output

POINTS_CSV, SUMMARY_CSV = "points.csv", "summary.csv"
POINTS_HEAD = "id,kind,hardware,engine,publication"   # the columns every points.csv began with (run_points)
COMMAND = "validate-published"   # the output folder's manifest: .draftsim-validate-published.json
GROUPS = (("kind", "kind"), ("pricing", "pricing"), ("publication", "publication"))
# Speculative points are also grouped by method and engine, and by method, engine and batch size.
SPEC_GROUPS = (("spec method", "spec_method"), ("spec batch", "spec_batch"))


def run_points(points, progress=None, latency: dict | None = None) -> pd.DataFrame:
    """One row per point: published and predicted values (SI), signed relative error, status."""
    rows = []
    for i, p in enumerate(points):
        spec = p.kind in ("spec_speedup", "spec_tpot")
        method = f"{p.kind} · {p.w('method')} · {p.engine}" if spec else ""
        row = {"id": p.id, "kind": p.kind, "hardware": p.hardware, "engine": p.engine, "publication": p.publication,
               "spec_method": method, "spec_batch": f"{method} · batch {p.w('batch', '?')}" if spec else "",
               "published": p.seconds_or_value, "unit": p.unit, "predicted": np.nan, "error": np.nan,
               "pricing": "", "status": "", "note": ""}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pred = predict(p, latency)
        except Unpredictable as exc:
            row.update(status="not expressible", note=str(exc))
        except (ValueError, KeyError, RuntimeError, TypeError) as exc:  # reported, and the exit code says so
            # (TypeError: a workload field the kind needs is missing from the point, e.g. `batch: null`)
            row.update(status="failed", note=f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
        else:
            if not np.isfinite(pred.value):   # a failed check, never a headline number (a NaN made the summary nan)
                row.update(status="failed", note=f"the prediction is not a finite number ({pred.value})")
            else:
                same_run = p.acceptance is not None and p.acceptance.same_run
                row.update(predicted=pred.value, error=relative_error(pred.value, row["published"]),
                           pricing=pred.pricing, note=pred.note,
                           status="acceptance from the same run" if same_run else "predicted")
        rows.append(row)
        if progress is not None:
            progress(i + 1, len(points), p.id)
    return pd.DataFrame(rows)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Median and P90 of |error| and the signed mean, by kind, pricing, publication and overall
    (headline points only: status 'predicted')."""
    ok = frame[frame["status"] == "predicted"]
    out = []

    def add(group: str, name: str, part: pd.DataFrame) -> None:
        err = part["error"].to_numpy(float)
        out.append({"group": group, "name": name, "n": len(err),
                    "median_abs_error": float(np.median(np.abs(err))) if len(err) else np.nan,
                    "p90_abs_error": float(np.percentile(np.abs(err), 90)) if len(err) else np.nan,
                    "mean_signed_error": float(err.mean()) if len(err) else np.nan})

    for group, column in GROUPS + SPEC_GROUPS:
        for name, part in ok.groupby(column, sort=True):
            if name != "":
                add(group, str(name), part)
    add("overall", "all", ok)
    same = frame[frame["status"] == "acceptance from the same run"]
    for name, part in same.groupby("spec_method", sort=True):
        if name != "":
            add("same-run acc.", str(name), part)
    return pd.DataFrame(out)


def _fmt_value(value: float, unit: str) -> str:
    if np.isnan(value):
        return "—"
    if unit in ("us", "ms", "s"):
        return f"{value * 1e6:.1f} µs" if value < 1e-3 else f"{value * 1e3:.2f} ms" if value < 1 else f"{value:.3f} s"
    return f"{value:.4g} {unit}"


def format_report(frame: pd.DataFrame, summary: pd.DataFrame) -> str:
    lines = [f"{'point':<64}{'published':>13}{'predicted':>13}{'error':>9}  pricing"]
    for r in frame.itertuples():
        err = "" if np.isnan(r.error) else f"{100 * r.error:+.1f} %"
        tail = r.pricing if r.status == "predicted" else f"[{r.status}] {r.note}"
        lines.append(f"{r.id[:63]:<64}{_fmt_value(r.published, r.unit):>13}{_fmt_value(r.predicted, r.unit):>13}"
                     f"{err:>9}  {tail}")
    lines.append("")
    lines.append(f"{'group':<12}{'name':<52}{'n':>4}{'median |err|':>14}{'P90 |err|':>11}{'mean err':>10}")
    for r in summary.itertuples():
        lines.append(f"{r.group:<12}{r.name[:51]:<52}{r.n:>4}{100 * r.median_abs_error:>13.1f}%"
                     f"{100 * r.p90_abs_error:>10.1f}%{100 * r.mean_signed_error:>+9.1f}%")
    counts = frame["status"].value_counts()
    lines.append("points: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="draftsim validate --published", description=(
        "Predict published real GPU measurements (scenarios/validation/published/points.yaml) with "
        "draftsim's defaults and report the error per point, kind, pricing source and publication."))
    p.add_argument("--points", default=None, help="one points YAML (default: every file of the shipped registry)")
    p.add_argument("--kind", action="append", choices=KINDS, help="only these kinds (repeatable)")
    p.add_argument("--id", action="append", default=[], help="only the points whose id contains this text")
    p.add_argument("--out", default="out/validation/published", help="folder for points.csv and summary.csv")
    p.add_argument("--source", choices=["auto", "measured", "roofline"], default=None,
                   help="price kernels with this source instead of the default (for comparisons)")
    p.add_argument("--no-engine-time", action="store_true", help="leave out the engine's per-step time (comparison)")
    p.add_argument("--quiet", action="store_true", help="no progress and no report on stdout (the files are written; "
                                                        "exit 1 and a line on stderr when a prediction failed)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    if args.points is not None and not args.points.strip():   # ('' was read as the current folder)
        print("draftsim validate: error: --points: an empty path; give a points YAML, or omit --points for the "
              "shipped registry", file=sys.stderr)
        return 2
    if any(not text.strip() for text in args.id):   # ('' is in every id: all the points were priced, ~30 s)
        print("draftsim validate: error: --id: an empty text matches every point; give part of a point's id, or "
              "omit --id for all of them", file=sys.stderr)
        return 2
    try:
        points = load_points(args.points)
    except (OSError, ValueError) as exc:
        print(f"draftsim validate: error: --points: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    if not points:   # (it said '--kind/--id: no point matches' where neither was given)
        print(f"draftsim validate: error: --points: no points in {printable(args.points)}", file=sys.stderr)
        return 2
    if args.kind:
        points = [p for p in points if p.kind in args.kind]
    if args.id:
        points = [p for p in points if any(text in p.id for text in args.id)]
    if not points:
        print("draftsim validate: error: --kind/--id: no point matches", file=sys.stderr)
        return 2
    try:   # before the first point is priced (all of them take a minute)
        # (a folder of the user's own, --out ., had its summary.csv replaced without a word)
        out = check_output_dir(args.out, COMMAND, POINTS_CSV, (POINTS_CSV, SUMMARY_CSV), POINTS_HEAD)
    except ScenarioError as exc:
        print(f"draftsim validate: error: {exc}", file=sys.stderr)
        return 2

    latency = {**({"source": args.source} if args.source else {}),
               **({"engine_time": False} if args.no_engine_time else {})}
    with Progress("predicting published points", total=len(points), unit="pt", quiet=args.quiet) as bar:
        frame = run_points(points, lambda i, n, ident: bar.update(1), latency or None)
    summary = summarize(frame)
    with staged_output(out, COMMAND, POINTS_CSV, (POINTS_CSV, SUMMARY_CSV), POINTS_HEAD) as staged:   # both or neither
        frame.to_csv(staged / POINTS_CSV, index=False)
        summary.to_csv(staged / SUMMARY_CSV, index=False)
    if not args.quiet:
        print(format_report(frame, summary))
        print(f"wrote {out / POINTS_CSV} and {out / SUMMARY_CSV}")
    failed = frame[frame["status"] == "failed"]
    if failed.empty:
        return 0
    print(f"draftsim validate --published: {len(failed)} of {len(frame)} points failed to predict (first: "
          f"{failed.iloc[0]['id']}: {failed.iloc[0]['note']}); see {out / POINTS_CSV}", file=sys.stderr)
    return 1
