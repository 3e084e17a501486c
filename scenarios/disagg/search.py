"""DistServe-style placement search: goodput per GPU of colocated and disaggregated layouts of a scenario.

For every layout within `--max-gpus` (colocated: replicas × tp × pp; disaggregated: prefill replicas × tp
× pp + decode replicas × tp × pp), the highest Poisson rate at which `slo.attainment` of the requests meet
the scenario's TTFT and TPOT SLOs is found by bisection with the DES (simulator.workflows.goodput.max_goodput), then
divided by the layout's GPUs; layouts that do not fit in memory are skipped. The scenario supplies the
model, hardware, workload lengths, request count, scheduler and seed; its rate and layout are replaced.

Why a script rather than `draftsim plan`: every candidate costs ~10 DES runs, so the search is a batch
job whose size the user picks (--max-gpus, --tp, --pp, --requests); `draftsim plan` screens analytically
and confirms a few candidates, a different trade-off.

Run:  python -m scenarios.disagg.search scenarios/disagg/colocated.yaml --max-gpus 3 --tp 1 2 --requests 300
"""
from __future__ import annotations

import argparse
import sys

from models.errors import bounded, doc_description, run_script, script_args
from models.files import ready_to_write
from simulator.errors import ScenarioError
from simulator.results.output_folder import file_flag
from simulator.workflows.goodput import candidate_count, search_placements
from simulator.config.scenario import apply_overrides, read_scenario_dict


# Layouts one search may try: each is a bisection of ~10 DES runs, so 1,000 layouts are ~10,000 runs (hours);
# --max-gpus 100000 listed 5e9 layouts and never printed a line.
MAX_LAYOUTS = 1_000


def check_layouts(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors before any work: a --tp or --pp degree given twice (every layout was searched and listed
    twice), no layout within --max-gpus (an empty table, exit 0), more than MAX_LAYOUTS layouts."""
    for flag, degrees in (("--tp", args.tp), ("--pp", args.pp)):
        if len(set(degrees)) < len(degrees):
            parser.error(f"argument {flag}: a degree is given twice: {' '.join(map(str, degrees))}")
    count = candidate_count(args.max_gpus, tuple(args.tp), tuple(args.pp))
    if count == 0:
        parser.error(f"argument --max-gpus: no layout of --tp {' '.join(map(str, args.tp))} x --pp "
                     f"{' '.join(map(str, args.pp))} fits in {args.max_gpus} GPUs")
    if count > MAX_LAYOUTS:
        parser.error(f"argument --max-gpus: {args.max_gpus} GPUs give {count:,} layouts to search (about 10 DES "
                     f"runs each); at most {MAX_LAYOUTS:,}: lower --max-gpus or give fewer --tp/--pp degrees")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("scenario", help="scenario YAML (its cluster layout and rate are replaced)")
    parser.add_argument("--max-gpus", type=bounded(), default=4)
    parser.add_argument("--tp", type=bounded(), nargs="+", default=[1, 2, 4])
    parser.add_argument("--pp", type=bounded(), nargs="+", default=[1])
    parser.add_argument("--link", choices=["scaleup", "scaleout"], default="scaleup")
    parser.add_argument("--requests", type=bounded(), help="override workload.num_requests (speed)")
    parser.add_argument("--rel-tol", type=bounded(float, 0.0, exclusive=True), default=0.03, help="bisection tolerance on the rate")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="scenario override")
    parser.add_argument("--csv", type=file_flag("--csv"), help="also write the table here")
    args = script_args(parser, argv)
    check_layouts(parser, args)
    try:
        data = apply_overrides(read_scenario_dict(args.scenario), args.set)
        if args.requests:
            data["workload"] = dict(data["workload"], num_requests=args.requests)
            data["workload"].pop("duration_s", None)
        table = search_placements(data, args.max_gpus, tps=tuple(args.tp), pps=tuple(args.pp), link=args.link,
                                  rel_tol=args.rel_tol,
                                  progress=lambda row: print(f"  {row['layout']}: {row['goodput_per_gpu_rps']:.2f} "
                                                             f"req/s/GPU", file=sys.stderr))
    except ScenarioError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.csv:
        table.to_csv(ready_to_write(args.csv), index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
