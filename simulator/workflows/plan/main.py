"""`draftsim plan PLAN.yaml`: the cheapest serving configurations that meet the SLOs.

1. Enumerate the search space (models × hardware × TP/PP × replicas × drafter/γ × deployment).
2. Screen every candidate analytically (:mod:`simulator.workflows.plan.screen`: latency model + theory + queueing,
   no DES) and keep those whose estimated mean TTFT and TPOT are within `SCREEN_SLACK` of the SLOs.
3. Confirm with the DES (in parallel through the sweep executors) the `confirm_top` cheapest of them and
   up to `confirm_top` more from the screen's cost/TPOT Pareto front (so the plot has a front), and
   report how far the screen was from the DES for each (relative error of mean TTFT, mean TPOT and output
   tokens/s).
4. Rank the confirmed candidates: meeting the SLO attainment first, then the plan's `rank_by` — cost per
   hour (default), cost per million output tokens or joules per output token (the DES's energy,
   simulator.results.energy) — then goodput per GPU. Outputs in --out (default out/plans/<name>/): ``ranked.csv`` (DES-confirmed), ``candidates.csv``
   (every screened candidate), ``pareto.png`` (cost per hour vs DES TPOT p50 with the Pareto front),
   ``launch_vllm.sh`` and ``launch_sglang.sh`` (the best candidate's server command line per role,
   simulator.workflows.plan.launch), and ``des_cache/`` (the DES runs, reused by a re-plan whatever its
   SLOs: simulator.workflows.plan.des_cache). The files are staged and moved in together
   (simulator.results.output_folder.staged_output); the cache's first run marks the folder as the plan's.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from simulator.errors import ScenarioError
from simulator.workflows.plan.screen import DEPLOYMENTS, screen, workload_means
from models.errors import bounded, is_integer
from simulator.workflows.plan.config import MAX_CONFIRM_TOP, enumerate_candidates, load_plan
from simulator.workflows.plan.des_cache import DesCache, confirm_point, run_key
from simulator.console.contract import QUIET_HELP, parse_args
from simulator.console.progress import INTERVAL_S, Heartbeat
from simulator.console.table import format_columns

SCREEN_PROGRESS_S = INTERVAL_S   # seconds between two progress lines of the screen (as other long steps off a terminal)
SCREEN_SLACK = 1.25        # keep candidates whose screen estimate is within 25 % of an SLO (screen error)
RANKED_CSV, CANDIDATES_CSV, PARETO_PNG = "ranked.csv", "candidates.csv", "pareto.png"
RANKED_HEAD = "rank,model,hardware"   # how every ranked.csv began: a user's own file of its name is not replaced
LAUNCH_FILES = {"vllm": "launch_vllm.sh", "sglang": "launch_sglang.sh"}
DES_CACHE = "des_cache"
PLAN_FILES = (RANKED_CSV, CANDIDATES_CSV, PARETO_PNG, *LAUNCH_FILES.values())   # every file a plan may write
# plan `rank_by` -> the ranked.csv column it orders by (ascending)
RANK_KEYS = {"usd_per_hour": "usd_per_hour", "usd_per_mtok": "usd_per_mtok", "j_per_token": "des_energy_per_output_token_j"}


def _rel_err(screen_value: float, des_value: float) -> float:
    return (screen_value - des_value) / des_value if des_value and math.isfinite(des_value) else math.nan


def _slack(row: dict, slo) -> float:
    """Largest ratio of a screened mean latency to its SLO (<= 1: within the SLOs). A TPOT of NaN (outputs of
    one token: no TPOT to miss) does not count."""
    ratios = [0.0]
    if slo.ttft_s:
        ratios.append(row["screen_ttft_s"] / slo.ttft_s)
    if slo.tpot_s and not math.isnan(row["screen_tpot_s"]):
        ratios.append(row["screen_tpot_s"] / slo.tpot_s)
    if slo.e2e_s:   # (not read before: with an e2e_s-only SLO every runnable candidate had slack 0)
        ratios.append(row["screen_e2e_s"] / slo.e2e_s)
    return max(ratios)


def screen_all(spec, base_dir: Path, progress=None) -> pd.DataFrame:
    """Every candidate screened (one row each), most within the SLOs first. `progress`, if given, is called
    with a line every SCREEN_PROGRESS_S seconds while the screen runs (up to 100,000 candidates at
    0.4–1.4 ms each: minutes that printed nothing); a screen shorter than that says nothing."""
    from simulator.console.interrupts import check

    with Heartbeat(None if progress is None else (lambda: progress("reading the workload")), SCREEN_PROGRESS_S):
        work = workload_means(spec, base_dir, spec.seed)   # (a trace of millions of requests: minutes)
    candidates = enumerate_candidates(spec, tuple(DEPLOYMENTS))
    rows = []
    next_line = time.perf_counter() + SCREEN_PROGRESS_S
    for done, cand in enumerate(candidates):
        check()   # (a Ctrl-C swallowed during a screen of minutes ends it here: simulator.console.interrupts)
        if progress is not None and time.perf_counter() >= next_line:
            progress(f"screening: {done:,}/{len(candidates):,} candidates ({100.0 * done / len(candidates):.0f} %)")
            next_line = time.perf_counter() + SCREEN_PROGRESS_S
        est = screen(cand, spec, work)
        row = {**asdict(cand), "gpus": cand.gpus, "usd_per_hour": cand.usd_per_hour, "screen_feasible": est.feasible,
               "screen_reason": est.reason, "screen_batch": est.batch, "screen_prefill_share": est.prefill_share,
               "screen_ttft_s": est.ttft_s, "screen_tpot_s": est.tpot_s, "screen_e2e_s": est.e2e_s,
               "screen_output_tokens_per_s": est.output_tokens_per_s, "screen_tokens_per_step": est.tokens_per_step}
        row["screen_slack"] = _slack(row, spec.slo) if est.feasible else math.inf
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.sort_values(["screen_slack", "usd_per_hour"], kind="stable").reset_index(drop=True)


def des_work(cand) -> tuple:
    """A sort key ordering candidates by how long their DES confirmation takes, largest first: a
    disaggregated run also simulates its KV transfers' network flows (3–4 s against 0.6–1.4 s colocated for
    the llama8b example, measured one by one), speculation adds a draft pass to every step (about 2× a
    plain run: scenarios/benchmarks/cluster_scale.py), and more GPUs mean more replicas to step. Rough by
    design: it only decides the order in which confirmations start (longest first packs the workers'
    time: the makespan of the example's 10 runs on 2 workers drops from 14.8 to 13.3 s of their
    one-by-one times), never a result."""
    return cand.deployment == "disaggregated", cand.drafter != "none", cand.gpus


# the DES summary's figures a ranked candidate keeps (as des_<key>), and what the ranking derives from them
DES_METRICS = ("ttft_p50_s", "ttft_p99_s", "ttft_mean_s", "tpot_p50_s", "tpot_p99_s", "tpot_mean_s", "goodput_rps",
               "goodput_per_gpu_rps", "output_tokens_per_s", "slo_attainment", "slo_attained",
               "energy_per_output_token_j", "avg_power_w")
DERIVED_COLUMNS = ("tokens_per_s_per_usd_hour", "usd_per_mtok", "screen_err_ttft", "screen_err_tpot",
                   "screen_err_tokens_per_s")


def confirm(spec, candidates: pd.DataFrame, base_dir: Path, executor, workers, progress=None,
            cache: DesCache | None = None, when_idle=None) -> pd.DataFrame:
    """DES results for the chosen candidates (one row each, DES metrics prefixed ``des_``); `progress`, if
    given, is called with a line as each run finishes; runs found in `cache` are not simulated again.
    `when_idle`, if given, is called once, as soon as a local worker process has no run left to start (a
    core of this machine is free while the others finish): work of the caller's that can go there."""
    from simulator.workflows.plan.config import Candidate
    from simulator.distributed.executors import ProcessExecutor, make_executor

    fields = Candidate.__dataclass_fields__
    tasks, keys, results, work = [], {}, {}, {}
    for i, row in candidates.iterrows():
        cand = Candidate(**{k: row[k] for k in fields})
        scenario = DEPLOYMENTS[cand.deployment].scenario(cand, spec, spec.seed)
        keys[i] = run_key(scenario) if cache is not None else None
        cached = cache.get(keys[i], spec.slo) if cache is not None else None
        if cached is not None:
            results[i] = cached
        else:
            tasks.append((str(i), scenario, str(base_dir)))
            work[str(i)] = des_work(cand)
    tasks.sort(key=lambda task: work[task[0]], reverse=True)   # longest first (stable: ties keep their order)
    if results and progress is not None:
        progress(f"{len(results)} of {len(candidates)} candidates from the DES cache ({cache.folder})")
    if tasks:
        finished = [0]   # (read by the heartbeat's thread: a line every SCREEN_PROGRESS_S while runs go on)
        alive = None if progress is None else \
            (lambda: progress(f"confirming with the DES: {finished[0]}/{len(tasks)} done, the others running"))
        with make_executor(executor, workers) as runner, Heartbeat(alive, SCREEN_PROGRESS_S):
            local = runner.workers if isinstance(runner, ProcessExecutor) else 0
            for done, (key, row, requests) in enumerate(runner.imap_unordered(confirm_point, tasks), 1):
                finished[0] = done
                results[int(key)] = row
                if cache is not None and requests is not None:
                    cache.put(keys[int(key)], row, requests)
                if progress is not None:
                    progress(f"confirmed {done}/{len(tasks)} with the DES ({row['status']})")
                if when_idle is not None and len(tasks) - done < local:
                    when_idle()
                    when_idle = None
    out = []
    for i, row in candidates.iterrows():
        des = results[i]
        merged = {**row.to_dict(), "des_status": des["status"], "des_error": des.get("error", "")}
        for key in DES_METRICS:
            value = des.get(key, math.nan)
            merged[f"des_{key}"] = math.nan if value is None else value
        merged["tokens_per_s_per_usd_hour"] = merged["des_output_tokens_per_s"] / row["usd_per_hour"]
        merged["usd_per_mtok"] = row["usd_per_hour"] / 3600.0 / merged["des_output_tokens_per_s"] * 1e6 \
            if merged["des_output_tokens_per_s"] and math.isfinite(merged["des_output_tokens_per_s"]) else math.nan
        merged["screen_err_ttft"] = _rel_err(row["screen_ttft_s"], merged["des_ttft_mean_s"])
        merged["screen_err_tpot"] = _rel_err(row["screen_tpot_s"], merged["des_tpot_mean_s"])
        merged["screen_err_tokens_per_s"] = _rel_err(row["screen_output_tokens_per_s"], merged["des_output_tokens_per_s"])
        out.append(merged)
    frame = pd.DataFrame(out)
    if frame.empty:   # (no column either: ranked.csv was an empty file, which pandas cannot read back)
        return pd.DataFrame(columns=["rank", *candidates.columns, "des_status", "des_error",
                                     *(f"des_{key}" for key in DES_METRICS), *DERIVED_COLUMNS, "meets_slo"])
    frame["meets_slo"] = frame["des_slo_attained"].eq(True) & (frame["des_status"] == "ok")   # (NaN: not attained)
    order = RANK_KEYS[getattr(spec, "rank_by", "usd_per_hour")]
    frame = frame.sort_values(["meets_slo", order, "des_goodput_per_gpu_rps"],
                              ascending=[False, True, False], kind="stable").reset_index(drop=True)
    frame.insert(0, "rank", range(1, len(frame) + 1))
    return frame


def pareto_front(cost, latency) -> list[int]:
    """Indices of points not dominated in (lower cost, lower latency), sorted by cost."""
    order = sorted(range(len(cost)), key=lambda i: (cost[i], latency[i]))
    front, best = [], math.inf
    for i in order:
        if latency[i] < best:
            front.append(i)
            best = latency[i]
    return front


def import_plotting() -> None:
    """Import what `plot_pareto` draws with (~0.4 s on the development VM): `run_plan` does it while a
    confirmation worker is idle instead of after the last confirmation."""
    import importlib
    for module in ("matplotlib.figure", "matplotlib.backends.backend_agg"):
        importlib.import_module(module)


def plot_pareto(screened: pd.DataFrame, ranked: pd.DataFrame, slo, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.0, 4.6), dpi=100)
    # fixed margins that fit this plot's labels and ticks up to 6 digits (matplotlib's constrained layout
    # measured every text twice: 0.05 of the 0.14 s the plot takes, on the serial tail of a ~5 s plan)
    figure.subplots_adjust(left=0.13, right=0.98, bottom=0.11, top=0.93)
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    ok = screened[screened.screen_feasible]
    ax.scatter(ok.usd_per_hour, ok.screen_tpot_s * 1e3, s=10, color="0.75", label="screened (estimate)")
    if not ranked.empty:
        good = ranked[ranked.meets_slo]
        bad = ranked[~ranked.meets_slo]
        ax.scatter(bad.usd_per_hour, bad.des_tpot_p50_s * 1e3, marker="x", color="tab:red", label="DES: misses SLO")
        ax.scatter(good.usd_per_hour, good.des_tpot_p50_s * 1e3, color="tab:blue", label="DES: meets SLO")
        if not good.empty:
            idx = pareto_front(good.usd_per_hour.tolist(), good.des_tpot_p50_s.tolist())
            front = good.iloc[idx]
            ax.step(front.usd_per_hour, front.des_tpot_p50_s * 1e3, where="post", color="tab:blue", label="Pareto front")
    if slo.tpot_s:
        ax.axhline(slo.tpot_s * 1e3, ls="--", color="k", lw=0.8, label="TPOT SLO")
    ax.set(xlabel="cost (US$ per hour)", ylabel="TPOT p50 (ms)", title="Cost vs latency of the candidates")
    ax.legend(fontsize=7)
    figure.savefig(path, format="png", metadata={"Software": None})


@contextmanager
def _connected(runner):
    """`runner` entered, so connected, at once where it connects (the Dask executors,
    simulator.distributed.executors), and closed on the way out whatever happens (`confirm` entering it
    again keeps the connection); a local pool is entered by `confirm` only, as before."""
    if getattr(runner, "connect", None) is None:
        yield
        return
    with runner:
        yield


def run_plan(plan: str | Path, out: str | Path | None = None, *, executor="local", workers=None,
             confirm_top: int | None = None, progress=None, cache: bool = True, warn=None
             ) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
    """Screen, confirm, rank and write the outputs; returns (ranked, screened, out_dir). `progress`, if
    given, is called with one line per stage (and per confirmed candidate), prefixed by the seconds since
    the start. `cache`: reuse and keep DES runs in <out_dir>/des_cache (simulator.workflows.plan.des_cache).
    `warn`, if given, is called with a line per launch script not written (an engine that cannot serve the best
    candidate: write_launch_scripts)."""
    t0 = time.perf_counter()

    def report(line: str) -> None:
        if progress is not None:
            progress(f"[{time.perf_counter() - t0:6.1f} s] {line}")

    from simulator.results.output_folder import check_output_dir, claim, given_or, staged_output
    from simulator.distributed.executors import make_executor

    if confirm_top is not None and (not is_integer(confirm_top) or not 0 <= confirm_top <= MAX_CONFIRM_TOP):
        # (a flag of 10^8 confirmed every feasible candidate with the DES: hours, where the plan file stops at 1000)
        raise ScenarioError("confirm_top", f"an integer in 0..{MAX_CONFIRM_TOP} (as the plan's confirm_top), "
                                           f"got {confirm_top!r}")
    confirm_top = None if confirm_top is None else int(confirm_top)   # (a NumPy integer, through the Python API)
    spec, base_dir = load_plan(plan)
    out_dir = given_or(out, Path("out") / "plans" / spec.name)
    check_output_dir(out_dir, "plan", RANKED_CSV, PLAN_FILES, RANKED_HEAD)
    runner = make_executor(executor, workers)   # a bad --executor or --workers fails before the screen,
    with _connected(runner):                    # and so does an unreachable Dask scheduler
        # (a bad plan is reported before any progress line: load_plan, and the screen's own checks before its first)
        screened = screen_all(spec, base_dir, report)
        report(f"plan {spec.name!r}: screened {len(screened)} candidates analytically "
               f"({int(screened.screen_feasible.sum())} feasible)")
        top = spec.confirm_top if confirm_top is None else confirm_top
        keep = screened[screened.screen_feasible & (screened.screen_slack <= SCREEN_SLACK)]
        cheapest = keep.sort_values(["usd_per_hour", "screen_slack"], kind="stable").head(top)
        front = keep.iloc[pareto_front(keep.usd_per_hour.tolist(), keep.screen_tpot_s.tolist())].head(top)
        chosen = pd.concat([cheapest, front])
        chosen = chosen[~chosen.index.duplicated()]
        report(f"confirming {len(chosen)} candidates with the DES (executor {executor!r})")
        # the cache's first run marks the folder as the plan's: stopped before its files are in (Ctrl-C), a
        # plan left a folder of des_cache/ alone, which the next plan refused as not a draftsim output
        des_cache = DesCache(out_dir / DES_CACHE, lambda: claim(out_dir, "plan", RANKED_CSV, PLAN_FILES, RANKED_HEAD))
        ranked = confirm(spec, chosen, base_dir, runner, workers, report, des_cache if cache else None,
                         when_idle=import_plotting)
    # all together or none (Ctrl-C, a full disk); an earlier plan's launch scripts go when this one has no
    # candidate to launch (they were left beside its empty ranking)
    with staged_output(out_dir, "plan", RANKED_CSV, PLAN_FILES, RANKED_HEAD) as staged:
        screened.to_csv(staged / CANDIDATES_CSV, index=False)
        ranked.to_csv(staged / RANKED_CSV, index=False)
        plot_pareto(screened, ranked, spec.slo, staged / PARETO_PNG)
        skipped = write_launch_scripts(spec, ranked, staged, base_dir)
    for name, why in skipped.items():
        if warn is not None:
            warn(f"{name} not written: {why}")
    report(f"wrote {out_dir}/")
    return ranked, screened, out_dir


def write_launch_scripts(spec, ranked: pd.DataFrame, out_dir: Path, base_dir: Path | None = None) -> dict[str, str]:
    """`launch_vllm.sh` and `launch_sglang.sh` for the best DES-confirmed candidate (the first that meets
    the SLOs, else the first ranked): its server command line per role (simulator.workflows.plan.launch);
    `base_dir`: the plan's folder, which the DES read the candidate's relative paths from. An engine that cannot
    serve the candidate (simulator.workflows.plan.launch.engine_refusal: a server that would not start) gets no
    script: returns {file name: why} for those."""
    from simulator.workflows.plan.config import Candidate
    from simulator.workflows.plan.launch import ENGINE_NAMES, engine_refusal, launch_script
    if ranked.empty:
        return {}
    best = ranked.iloc[0]
    cand = Candidate(**{k: best[k] for k in Candidate.__dataclass_fields__})
    scenario = DEPLOYMENTS[cand.deployment].scenario(cand, spec, spec.seed)
    verdict = "meets the SLOs" if bool(best["meets_slo"]) else "best found, misses the SLOs"
    title = f"{cand.label}: rank 1 of draftsim plan {spec.name} ({verdict})"
    skipped = {}
    for engine, name in LAUNCH_FILES.items():
        refusal = engine_refusal(scenario, engine, base_dir)
        if refusal is not None:
            skipped[name] = f"{ENGINE_NAMES[engine]} cannot serve the best candidate ({cand.label}): {refusal}"
            continue
        script = launch_script(scenario, engine, title, base_dir)
        (out_dir / name).write_text(script, encoding="utf-8")
    return skipped


def infeasible_reasons(screened: pd.DataFrame, slo) -> list[str]:
    """Why no candidate passed the screen, one line per constraint: the screen's reasons (candidates that
    cannot run: memory, overload, KV capacity), grouped with their counts, then each SLO the feasible ones
    miss with the best screened value against the limit (SLO × SCREEN_SLACK)."""
    import re
    lines = []
    bad = screened[~screened.screen_feasible]
    groups: dict[str, list[str]] = {}
    for reason in bad.screen_reason:
        groups.setdefault(re.sub(r"\d+(\.\d+)?", "N", str(reason)), []).append(str(reason))
    for _, reasons in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"{len(reasons)} of {len(screened)} candidates cannot run: {reasons[0]}")
    ok = screened[screened.screen_feasible]
    for name, column in (("ttft_s", "screen_ttft_s"), ("tpot_s", "screen_tpot_s"), ("e2e_s", "screen_e2e_s")):
        limit = getattr(slo, name)
        if limit and not ok.empty and ok[column].min() > limit * SCREEN_SLACK:
            lines.append(f"slo.{name}: the best of {len(ok)} runnable candidates is estimated at "
                         f"{ok[column].min():.4g} s against {limit:g} s (within {SCREEN_SLACK:g}x is confirmed)")
    if not ok.empty and len(lines) == len(groups):   # each SLO alone is met by some, never all at once
        names = [name for name in ("ttft_s", "tpot_s", "e2e_s") if getattr(slo, name)]
        lines.append(f"slo: no runnable candidate meets every SLO at once ({', '.join(names)} within "
                     f"{SCREEN_SLACK:g}x)")
    return lines


def _pct(value: float) -> str:
    return f"{value:+.0%}" if value is not None and math.isfinite(value) else "-"   # (no TPOT: '+nan%')


def _ms(value: float) -> str:
    return f"{value * 1e3:.1f}" if value is not None and math.isfinite(value) else "-"


def format_ranked(ranked: pd.DataFrame) -> str:
    if ranked.empty:
        # (a plan with no candidate through the screen exits 1 before the table: here confirm_top was 0, and
        # this line said "no candidate passed the screen" under "185 feasible")
        return (f"no candidate confirmed with the DES (confirm_top 0): the screen's estimates are in "
                f"{CANDIDATES_CSV}; raise --confirm-top to confirm and rank them")
    head = ["#", "config", "GPUs", "$/h", "$/Mtok", "J/tok", "goodput/GPU", "TTFT p50/p99 ms", "TPOT p50/p99 ms",
            "tok/s per $/h", "SLO", "screen err TTFT/TPOT"]
    rows = []
    for _, r in ranked.iterrows():
        draft = f"{r.drafter} γ{r.gamma}" if r.gamma else "no draft"
        split = f" {r.prefill_replicas}P+{r.replicas - r.prefill_replicas}D" if r.prefill_replicas else ""
        ep = f"ep{r.ep}" if r.ep > 1 else ""
        rows.append([str(r["rank"]), f"{r.model} {r.replicas}x{r.hardware} tp{r.tp}pp{r.pp}{ep}{split} {draft}", str(r.gpus),
                     f"{r.usd_per_hour:.2f}", f"{r.usd_per_mtok:.3f}", f"{r.des_energy_per_output_token_j:.3f}",
                     f"{r.des_goodput_per_gpu_rps:.3f}",
                     f"{_ms(r.des_ttft_p50_s)}/{_ms(r.des_ttft_p99_s)}", f"{_ms(r.des_tpot_p50_s)}/{_ms(r.des_tpot_p99_s)}",
                     f"{r.tokens_per_s_per_usd_hour:.0f}", "met" if r.meets_slo else "missed",
                     f"{_pct(r.screen_err_ttft)}/{_pct(r.screen_err_tpot)}" if r.des_status == "ok" else r.des_error])
    return format_columns(head, rows, left=len(head))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="draftsim plan",
        description="Find the cheapest serving configurations that meet a workload's SLOs: screen the search "
                    "space analytically, confirm the best candidates with the DES, rank them and draw a "
                    "cost/latency Pareto plot.",
        epilog="example: draftsim plan scenarios/plans/llama8b_chat.yaml")
    p.add_argument("plan", help="plan YAML (see scenarios/plans/)")
    p.add_argument("--out", help="output folder (default: out/plans/<plan name>)")
    p.add_argument("--confirm-top", type=bounded(minimum=0, maximum=MAX_CONFIRM_TOP), default=None,
                   help=f"override the plan's confirm_top (0..{MAX_CONFIRM_TOP}, as in the plan file)")
    p.add_argument("--executor", default="local", help="where DES confirmations run (as for draftsim sweep)")
    p.add_argument("--workers", type=int, default=None, help="parallel DES runs: processes of --executor local or local-dask (default: CPU cores)")
    p.add_argument("--no-cache", action="store_true",
                   help=f"simulate every confirmation again (default: reuse <out>/{DES_CACHE}, valid across SLO "
                        "changes)")
    p.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    return p


def _progress_line(line: str) -> None:
    """Progress on stderr, a line per stage, whether or not stderr is a terminal (logs of batch jobs too)."""
    print(f"draftsim plan: {line}", file=sys.stderr, flush=True)


def _warning_line(line: str) -> None:
    """A warning on stderr, with --quiet too (QUIET_HELP)."""
    print(f"draftsim plan: warning: {line}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    from models.errors import UnknownNameError

    try:
        ranked, screened, out_dir = run_plan(args.plan, args.out, executor=args.executor, workers=args.workers,
                                             confirm_top=args.confirm_top,
                                             progress=None if args.quiet else _progress_line,
                                             cache=not args.no_cache, warn=_warning_line)
    except (ScenarioError, UnknownNameError) as exc:
        print(f"draftsim plan: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"draftsim plan: error: {getattr(exc, 'filename', '') or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if not (screened.screen_feasible & (screened.screen_slack <= SCREEN_SLACK)).any():
        from simulator.workflows.plan.config import load_plan as _load
        slo = _load(args.plan)[0].slo
        print(f"draftsim plan: no feasible candidate among {len(screened)} (outputs in {out_dir}/):", file=sys.stderr)
        for line in infeasible_reasons(screened, slo):
            print(f"draftsim plan:   {line}", file=sys.stderr)
        return 1
    if not args.quiet:
        feasible = int(screened.screen_feasible.sum())
        print(f"screened {len(screened)} candidates ({feasible} feasible); confirmed {len(ranked)} with the DES")
        print(format_ranked(ranked))
        written = [name for name in LAUNCH_FILES.values() if (out_dir / name).is_file()]
        launch = f", {', '.join(written)}" if written else ""
        print(f"outputs in {out_dir}/ ({RANKED_CSV}, {CANDIDATES_CSV}, {PARETO_PNG}{launch})")
    if not ranked.empty and not ranked.meets_slo.any():   # the plan's check: a confirmed way to meet the SLOs
        print(f"draftsim plan: none of the {len(ranked)} candidates confirmed with the DES meets the SLOs "
              f"(outputs in {out_dir}/)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
