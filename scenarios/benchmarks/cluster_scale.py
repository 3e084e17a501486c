"""Cluster-scale speed and memory: the sim_speed workload at 3 req/s per replica on 1, 16 and 64 replicas.

    python3 -m scenarios.benchmarks.cluster_scale [--repeats 3] [--cases 10k/1 100k/16 1M/64] [--steps aggregate]
        [--router round_robin] [--speculation both|none|chain] [--workers auto|N]

Workload: scenarios/benchmarks/sim_speed.yaml (Llama-2-7B on A100s, TP1, Poisson arrivals at 3 req/s per
replica, prompts 512–2048, outputs 128–512, batch cap 128, measured A100 kernels and vLLM's engine time),
with 10,000 requests on 1 replica, 100,000 on 16 and 1,000,000 on 64 (round-robin routing unless
--router), without speculation and with a co-located Llama-68M draft (γ = 4, α = 0.7). Each run is a
fresh interpreter, so its peak RSS (ru_maxrss) is its own. Per case, the median over --repeats runs of:
- `sim s`: building the run (workload, replicas, cost model) and the event loop (as sim_speed reports);
- `total s`: all of `simulator.run` (plus the request and step frames and the summary);
- `cpu s`: CPU seconds of the whole process and its replica workers (imports included);
- `steps`, `steps/s` (steps simulated per second of `sim s`), `peak RSS`: the process's own, plus its largest
  replica worker's when it forked any (an upper bound of their simultaneous use: pages the worker shares
  with its parent are counted twice).
`--workers` is the run's `simulation.workers` (simulator.core.parallel: independent replicas in forked worker
processes; `auto`, the default, uses the cores for runs of ≥ 50,000 requests; 1 = one process). Outputs
are identical whatever it is.
`--steps` is the run's `outputs.steps` (aggregate by default: the summary is the same, memory is not).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from models.errors import bounded, doc_description, run_script, script_args
from scenarios.benchmarks.sim_speed import SCENARIO, SPEC

CASES = {"10k/1": (10_000, 1), "100k/16": (100_000, 16), "1M/64": (1_000_000, 64)}
QPS_PER_REPLICA = 3.0


def overrides(requests: int, replicas: int, spec: bool, steps: str, router: str = "round_robin",
              workers: str = "auto") -> list[str]:
    return ([f"workload.num_requests={requests}", f"cluster.replicas={replicas}", f"cluster.router={router}",
             f"workload.arrival.qps={QPS_PER_REPLICA * replicas}", f"outputs.steps={steps}",
             f"simulation.workers={workers}"] + (SPEC if spec else []))


def _child(requests: int, replicas: int, spec: bool, steps: str, router: str, workers: str) -> None:
    from simulator.api import run
    t0 = time.perf_counter()
    result = run(SCENARIO, overrides(requests, replicas, spec, steps, router, workers))
    total = time.perf_counter() - t0
    own, forked = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"sim_s": result.wall_s, "total_s": total, "steps": result.summary["steps"],
                      "cpu_s": own.ru_utime + own.ru_stime + forked.ru_utime + forked.ru_stime,
                      "rss_mb": (own.ru_maxrss + forked.ru_maxrss) / 1024}))


def measure(case: str, spec: bool, steps: str, router: str, workers: str) -> dict:
    requests, replicas = CASES[case]
    out = subprocess.run([sys.executable, "-m", "scenarios.benchmarks.cluster_scale", "--child", str(requests),
                          str(replicas), "1" if spec else "0", steps, router, workers], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _workers(text: str):
    """--workers: "auto" or a process count, 1 .. the cores (simulation.workers' own rule, checked here
    before any run)."""
    from simulator.core.parallel import local_workers_max
    if text == "auto":
        return text
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"'auto' or a whole number is required, got {text!r}")
    return str(bounded(maximum=local_workers_max())(text))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=doc_description(__doc__))
    ap.add_argument("--repeats", type=bounded(), default=3)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--steps", default="aggregate", choices=["full", "sampled", "aggregate"])
    ap.add_argument("--router", default="round_robin",
                    help="cluster.router (round_robin: replicas simulated apart; a load-reading router such as "
                         "least_outstanding runs the coupled SimPy driver)")
    ap.add_argument("--speculation", default="both", choices=["both", "none", "chain"])
    ap.add_argument("--workers", type=_workers, default="auto",
                    help="simulation.workers: auto (default) or a process count (at most the cores)")
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = script_args(ap, argv)
    if args.child:
        requests, replicas, spec, steps, router, workers = args.child
        _child(int(requests), int(replicas), spec == "1", steps, router, workers)
        return 0
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"simulation.workers: {args.workers} (cores: {os.cpu_count()})")
    print(f"{'case':10s} {'speculation':12s} {'sim s':>8s} {'total s':>8s} {'cpu s':>8s} {'steps':>11s} "
          f"{'steps/s':>9s} {'peak RSS':>9s}   sim s of each run")
    for case in args.cases:
        for spec in {"both": (False, True), "none": (False,), "chain": (True,)}[args.speculation]:
            runs = [measure(case, spec, args.steps, args.router, args.workers) for _ in range(args.repeats)]
            sim = statistics.median(r["sim_s"] for r in runs)
            total = statistics.median(r["total_s"] for r in runs)
            rss = statistics.median(r["rss_mb"] for r in runs)
            cpu = statistics.median(r["cpu_s"] for r in runs)
            steps = runs[0]["steps"]
            print(f"{case:10s} {'chain γ=4' if spec else 'none':12s} {sim:8.2f} {total:8.2f} {cpu:8.2f} {steps:11,d} "
                  f"{steps / sim:9.0f} {rss:7.0f} MB   " + " ".join(f"{r['sim_s']:.2f}" for r in runs), flush=True)
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
