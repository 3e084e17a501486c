"""Goodput per GPU (DistServe's metric) and a placement search over colocated and disaggregated layouts.

Goodput of a configuration = the highest request rate (Poisson arrivals, `workload.arrival.qps`) at which
at least a target fraction (`slo.attainment`, e.g. 0.9) of requests meet every SLO that is set (TTFT and
TPOT; a request dropped or unfinished never meets it), found by bisection on the rate with the DES;
goodput per GPU divides it by the configuration's GPUs. Every DES run uses the scenario's seed and
request count, so the search is deterministic.

Approximation: bisection assumes attainment falls monotonically with the rate. With a fixed seed the
arrival pattern is the same sequence scaled in time, so attainment is monotone up to the discrete
effects of batching; the bracket is refined to `rel_tol` of the rate. A configuration that misses the
target at every rate the DES simulates (down to num_requests / MAX_SIM_SPAN_S requests/s) has goodput 0.

`search_placements` enumerates, within a GPU budget: colocated replicas × (tp, pp), and disaggregated
(prefill tp/pp, decode tp/pp, prefill replicas : decode replicas), skipping layouts that do not fit in
memory, and ranks them by goodput per GPU.
"""
from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simulator.errors import ScenarioError
from simulator.config.scenario import parse_scenario


@dataclass(frozen=True)
class Goodput:
    rate_rps: float          # highest rate found that meets the attainment target (0 if none)
    gpus: int
    attainment: float        # attainment measured at rate_rps
    evaluations: int         # DES runs spent
    curve: tuple[tuple[float, float], ...] = ()   # (rate, attainment) of every DES run, by rate

    @property
    def per_gpu_rps(self) -> float:
        return self.rate_rps / self.gpus


def scenario_gpus(data: dict) -> int:
    """The GPUs of a raw scenario's replicas, a separate-GPU draft model's own `drafter.tp` counted in each
    (simulator.cluster.factory.ReplicaKind.gpus, as the run's summary counts them)."""
    cl = data["cluster"]
    dis = cl.get("disaggregation")
    drafter = data.get("drafter") or {}
    own = drafter.get("tp", 1) if drafter.get("kind") == "draft_model" and drafter.get("placement") == "separate" \
        and drafter.get("gamma", 4) > 0 else 0

    def gpus(par: dict | None) -> int:
        par = par or {}
        tp, pp, ep = par.get("tp", 1), par.get("pp", 1), par.get("ep", 1)
        return (max(ep, tp) if ep > 1 else tp) * pp + own

    if dis:
        return sum(dis.get(k, {}).get("replicas", 1) * gpus(dis.get(k, {}).get("parallelism")) for k in ("prefill", "decode"))
    return cl.get("replicas", 1) * gpus(cl.get("parallelism"))


def attainment_at(data: dict, rate_rps: float, base_dir: Path | None = None) -> float:
    """SLO attainment of the scenario (a raw dict) run at `rate_rps` requests/s."""
    from simulator.api import run

    d = copy.deepcopy(data)
    d["workload"]["arrival"] = dict(d["workload"]["arrival"], process="poisson", qps=float(rate_rps))
    d["workload"]["arrival"].pop("cv", None)
    d.setdefault("outputs", {})["plots"] = False
    return float(run(parse_scenario(d), base_dir=base_dir).summary["slo_attainment"])


def max_goodput(data: dict, *, attainment: float | None = None, start_rps: float | None = None,
                rel_tol: float = 0.02, max_evaluations: int = 24, base_dir: Path | None = None) -> Goodput:
    """Highest Poisson rate meeting the attainment target (bisection; module docstring)."""
    scenario = parse_scenario(data)
    if scenario.slo.ttft_s is None and scenario.slo.tpot_s is None and scenario.slo.e2e_s is None:
        raise ScenarioError("slo", "goodput needs at least one SLO (ttft_s, tpot_s or e2e_s)")
    target = scenario.slo.attainment if attainment is None else attainment
    gpus = scenario_gpus(data)
    from simulator.core.workload import MAX_SIM_SPAN_S
    requests = scenario.workload.num_requests
    floor_rps = requests / MAX_SIM_SPAN_S if requests else 0.0   # the lowest rate the DES simulates
    evals = 0
    cache: dict[float, float] = {}

    def ok(rate: float) -> bool:
        nonlocal evals
        if rate not in cache:
            evals += 1
            cache[rate] = attainment_at(data, rate, base_dir)
        return cache[rate] >= target

    lo, hi = 0.0, float(start_rps or gpus)
    while ok(hi):                      # grow the bracket
        lo, hi = hi, hi * 2.0
        if evals >= max_evaluations:
            return Goodput(lo, gpus, cache[lo], evals, tuple(sorted(cache.items())))
    while hi - lo > rel_tol * hi and evals < max_evaluations:
        mid = 0.5 * (lo + hi)
        if mid < floor_rps:             # no rate the DES can simulate meets the target: goodput 0
            break
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return Goodput(lo, gpus, cache.get(lo, math.nan), evals, tuple(sorted(cache.items())))


def colocated(data: dict, replicas: int, tp: int, pp: int) -> dict:
    d = copy.deepcopy(data)
    cl = d["cluster"]
    cl.pop("disaggregation", None)
    cl["replicas"], cl["parallelism"] = replicas, {"tp": tp, "pp": pp}
    return d


def disaggregated(data: dict, prefill: tuple[int, int, int], decode: tuple[int, int, int], link: str = "scaleup",
                  layerwise_overlap: bool = False) -> dict:
    """prefill/decode = (replicas, tp, pp). The scenario's `cluster.router` routes each pool (it was read by
    nothing here before: both pools routed round robin whatever the scenario said)."""
    d = copy.deepcopy(data)
    cl = d["cluster"]
    cl.pop("replicas", None), cl.pop("parallelism", None)
    router = {"router": cl.pop("router")} if "router" in cl else {}
    cl["disaggregation"] = {
        "prefill": {"replicas": prefill[0], "parallelism": {"tp": prefill[1], "pp": prefill[2]}, **router},
        "decode": {"replicas": decode[0], "parallelism": {"tp": decode[1], "pp": decode[2]}, **router},
        "kv_transfer": {"link": link, "layerwise_overlap": layerwise_overlap}}
    return d


def candidates(max_gpus: int, tps=(1, 2, 4, 8), pps=(1, 2)) -> list[tuple[str, tuple]]:
    """(kind, layout) pairs within `max_gpus`: ("colocated", (replicas, tp, pp)) and
    ("disaggregated", ((prefill replicas, tp, pp), (decode replicas, tp, pp)))."""
    shapes = [(tp, pp) for tp in tps for pp in pps if tp * pp <= max_gpus]
    out = []
    for tp, pp in shapes:
        for n in range(1, max_gpus // (tp * pp) + 1):
            out.append(("colocated", (n, tp, pp)))
    for (ptp, ppp), (dtp, dpp) in itertools.product(shapes, shapes):
        for np_ in range(1, (max_gpus - dtp * dpp) // (ptp * ppp) + 1):
            for nd in range(1, (max_gpus - np_ * ptp * ppp) // (dtp * dpp) + 1):
                out.append(("disaggregated", ((np_, ptp, ppp), (nd, dtp, dpp))))
    return out


def candidate_count(max_gpus: int, tps=(1, 2, 4, 8), pps=(1, 2)) -> int:
    """len(candidates(...)) without listing them (at --max-gpus 100000 the list alone would not end)."""
    shapes = [tp * pp for tp in tps for pp in pps if tp * pp <= max_gpus]
    count = sum(max_gpus // g for g in shapes)
    for prefill, decode in itertools.product(shapes, shapes):
        count += sum((max_gpus - n * prefill) // decode for n in range(1, (max_gpus - decode) // prefill + 1))
    return count


def search_placements(data: dict, max_gpus: int, *, tps=(1, 2, 4, 8), pps=(1, 2), link: str = "scaleup",
                      rel_tol: float = 0.05, base_dir: Path | None = None, progress=None) -> pd.DataFrame:
    """Goodput per GPU of every candidate layout, best first. Layouts the model does not allow (memory,
    a tp that does not divide the heads) get NaN goodput and the reason in `skipped`."""
    rows = []
    for kind, layout in candidates(max_gpus, tps, pps):
        d = colocated(data, *layout) if kind == "colocated" else disaggregated(data, *layout, link=link)
        if scenario_gpus(d) > max_gpus:   # (a separate draft model's own GPUs took it past the budget)
            continue
        label = (f"colocated {layout[0]}× tp{layout[1]} pp{layout[2]}" if kind == "colocated" else
                 f"prefill {layout[0][0]}× tp{layout[0][1]} pp{layout[0][2]} + decode {layout[1][0]}× "
                 f"tp{layout[1][1]} pp{layout[1][2]}")
        row = {"kind": kind, "layout": label, "gpus": scenario_gpus(d), "goodput_rps": math.nan,
               "goodput_per_gpu_rps": math.nan, "attainment": math.nan, "des_runs": 0, "skipped": ""}
        try:
            g = max_goodput(d, rel_tol=rel_tol, base_dir=base_dir)
            row.update(goodput_rps=g.rate_rps, goodput_per_gpu_rps=g.per_gpu_rps, attainment=g.attainment,
                       des_runs=g.evaluations)
        except ScenarioError as exc:
            if not ("parallelism" in exc.field or exc.field == "cluster.model"):
                raise
            row["skipped"] = str(exc)   # does not fit, or an invalid split: not a candidate
        rows.append(row)
        if progress is not None:
            progress(rows[-1])
    frame = pd.DataFrame(rows)
    return frame.sort_values(["goodput_per_gpu_rps", "gpus"], ascending=[False, True], kind="stable",
                             ignore_index=True, na_position="last") if len(frame) else frame
