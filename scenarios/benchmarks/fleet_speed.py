"""Fleet scale and start-up (issue 30): the figures the README's "Speed" and "Fleet scale" sections report.

    python3 -m scenarios.benchmarks.fleet_speed [--parts startup one fleet sync] [--repeats 3]
        [--dask-workers 2] [--fleet-requests 10000000] [--fleet-replicas 1024] [--instructions]

Every run is a fresh interpreter (its own imports, its own peak RSS). The workload is the cluster_scale one
(scenarios/benchmarks/sim_speed.yaml: Llama-2-7B on A100s, Poisson at 3 req/s per replica, prompts
512–2048, outputs 128–512, round-robin routing, `outputs.steps: aggregate`), without speculation and with
a co-located Llama-68M draft (chain, γ = 4, α = 0.7). Parts:

- `startup`: wall time from process start to exit of `draftsim estimate` (Llama-3.1-8B, H100, batch 64,
  4,096 tokens of context: measured kernels), `draftsim catalog models` and `catalog hardware`,
  `draftsim run` of 100 requests (outputs written, no plots) and `draftsim plan` of
  scenarios/plans/llama8b_chat.yaml (`--no-cache`, a fresh output folder); medians of --repeats, after
  one unmeasured run of each (bytecode compiled; the benchmark clears PYTHONDONTWRITEBYTECODE for its
  children, as an installed package has its bytecode). `--instructions`: one more run of each under
  valgrind's callgrind, which counts the instructions it executes — a figure that does not drift with the
  VM's load and clock as wall times do, to compare two commits exactly (the plan takes ~10 minutes so).
- `one`: 1M requests on 64 replicas (--one) in one process (`simulation.workers: 1`), without and with
  speculation, the two alternating run by run: `sim s` (building the run and the event loop, as
  cluster_scale reports it), CPU s and peak RSS; medians of --repeats; the speculation / plain ratio of the
  medians and of each pair.
- `fleet`: --fleet-requests on --fleet-replicas through a Dask LocalCluster of --dask-workers processes
  (`simulation.executor: local-dask`), and 1M on 64 the same way: wall time of `simulator.run` (build,
  simulation, frames and summary), the driver's and each worker's peak RSS, CPU s of driver + workers,
  and the cost per replica-hour simulated of both (their ratio: linear cost is 1).
- `sync`: least_outstanding routing (30k requests on 16 replicas, --sync-requests) in one process against the
  distributed run at load_sync_s 0 (exact), 0.05 s and 0.5 s: the headline metrics, their relative
  difference, and the fewest and most requests one replica received.

Each part prints the load average before and after, the CPU model and the core count. Publish figures
from a quiet machine only (load average well below the core count).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from models.errors import bounded, doc_description, run_script, script_args
from scenarios.benchmarks.sim_speed import SCENARIO, SPEC
from simulator.core.parallel import local_workers_max

ROOT = Path(__file__).resolve().parents[2]
QPS_PER_REPLICA = 3.0
ESTIMATE = ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "64", "--context", "4096"]
PLAN = ROOT / "scenarios" / "plans" / "llama8b_chat.yaml"


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def conditions(label: str) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"[{label}] {time.strftime('%Y-%m-%d %H:%M:%S %Z')}  load average (1, 5, 15 min): {load}  "
          f"CPU: {cpu_model()}  cores: {os.cpu_count()}", flush=True)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def overrides(requests: int, replicas: int, spec: bool, *extra: str) -> list[str]:
    return [f"workload.num_requests={requests}", f"cluster.replicas={replicas}", "cluster.router=round_robin",
            f"workload.arrival.qps={QPS_PER_REPLICA * replicas}", "outputs.steps=aggregate", "outputs.plots=false",
            *(SPEC if spec else []), *extra]


# ---- start-up ---------------------------------------------------------------------------------------
def _timed(argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=_env(), check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def startup(repeats: int, instructions: bool = False) -> None:
    conditions("startup")
    draftsim = [sys.executable, "-m", "simulator.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cases = {
            "draftsim estimate (H100, measured kernels)": lambda i: draftsim + ESTIMATE,
            "draftsim catalog models": lambda i: draftsim + ["catalog", "models"],
            "draftsim catalog hardware": lambda i: draftsim + ["catalog", "hardware"],
            "draftsim run, 100 requests": lambda i: draftsim + ["run", str(SCENARIO), "--set", "workload.num_requests=100",
                                                                 "--no-plots", "--quiet", "--out", str(tmp / f"run{i}")],
            "draftsim plan llama8b_chat": lambda i: draftsim + ["plan", str(PLAN), "--no-cache", "--quiet",
                                                                 "--out", str(tmp / f"plan{i}")],
        }
        print(f"{'command':44s} {'median s':>9s}   runs" + ("   instructions (callgrind)" if instructions else ""))
        for label, argv in cases.items():
            _timed(argv(-1), ROOT)   # bytecode compiled, caches warm (as a user's second command)
            runs = [_timed(argv(i), ROOT) for i in range(repeats)]
            count = f"   {_instructions(argv(repeats)) / 1e9:.3f} G" if instructions else ""
            print(f"{label:44s} {statistics.median(runs):9.2f}   " + " ".join(f"{r:.2f}" for r in runs) + count,
                  flush=True)
    conditions("startup")


def _instructions(argv: list[str]) -> int:
    """Instructions the command executes (all its processes), counted by valgrind's callgrind: the same
    on every run of the same code, whatever the machine's load or clock (wall times on a shared VM drift
    by tens of per cent), so two commits compare exactly. About 50× slower than running it."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], cwd=ROOT,
                          env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    counts = [int(line.rsplit(":", 1)[1].replace(",", "")) for line in done.stderr.splitlines()
              if "Collected :" in line]
    if not counts:
        raise SystemExit("valgrind printed no instruction count")
    return sum(counts)


# ---- one process ------------------------------------------------------------------------------------
def _child(argv: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-m", "scenarios.benchmarks.fleet_speed", "--child", *argv], cwd=ROOT,
                         env=_env(), check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _run_child(requests: int, replicas: int, spec: bool, executor: str, workers: int) -> None:
    import simulator
    extra = [f"simulation.workers={workers}"] + ([f"simulation.executor={executor}"] if executor != "local" else [])
    worker_stats = {}
    t0 = time.perf_counter()
    if executor == "local":
        result = simulator.run(SCENARIO, overrides(requests, replicas, spec, *extra))
    else:
        from simulator.api import prepare, simulate
        from simulator.distributed import open_executor
        prepared = prepare(SCENARIO, overrides(requests, replicas, spec, *extra))
        with open_executor(prepared.scenario) as ex:
            result = simulate(prepared, executor=ex)
            worker_stats = ex.client.run(_worker_usage)
            # read while the cluster's workers still run: a local cluster's workers are this process's
            # children, reaped when it closes, and would count twice (theirs and RUSAGE_CHILDREN's)
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = time.perf_counter() - t0
    own = resource.getrusage(resource.RUSAGE_SELF)
    if executor == "local":
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers_cpu = sum(w["cpu_s"] for w in worker_stats.values())
    print(json.dumps({"sim_s": result.wall_s, "total_s": total, "steps": result.summary["steps"],
                      "cpu_s": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + workers_cpu,
                      "rss_mb": own.ru_maxrss / 1024,
                      "worker_rss_mb": sorted(w["rss_mb"] for w in worker_stats.values()),
                      "simulated_s": result.summary["window_s"]}))


def _worker_usage() -> dict:
    import resource as r
    usage = r.getrusage(r.RUSAGE_SELF)
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}


def one_process(repeats: int, requests: int, replicas: int) -> None:
    conditions("one process")
    print(f"{'case':22s} {'sim s':>8s} {'cpu s':>8s} {'steps':>11s} {'peak RSS':>9s}   sim s of each run")
    medians = {}
    # plain and speculating runs alternate, so that both see the same phases of a VM whose speed drifts by
    # tens of per cent within minutes (and each pair's ratio is of runs minutes apart)
    by_case = {False: [], True: []}
    for _ in range(repeats):
        for spec in (False, True):
            by_case[spec].append(_child([str(requests), str(replicas), "1" if spec else "0", "local", "1"]))
    for spec, runs in by_case.items():
        sim = statistics.median(r["sim_s"] for r in runs)
        medians[spec] = sim
        print(f"{f'{requests:,} / {replicas}, ' + ('chain γ=4' if spec else 'plain'):22s} {sim:8.2f} "
              f"{statistics.median(r['cpu_s'] for r in runs):8.2f} {runs[0]['steps']:11,d} "
              f"{statistics.median(r['rss_mb'] for r in runs):6.0f} MB   " + " ".join(f"{r['sim_s']:.2f}" for r in runs),
              flush=True)
    pairs = [c["sim_s"] / p["sim_s"] for p, c in zip(by_case[False], by_case[True])]
    print(f"speculation / plain: {medians[True] / medians[False]:.2f} (medians); each pair: "
          + " ".join(f"{r:.2f}" for r in pairs))
    conditions("one process")


# ---- fleet on Dask ----------------------------------------------------------------------------------
def fleet(requests: int, replicas: int, workers: int, base: tuple[int, int]) -> None:
    conditions("fleet")
    print(f"Dask LocalCluster: {workers} worker processes (one thread each)")
    print(f"{'case':16s} {'wall s':>8s} {'sim s':>8s} {'cpu s':>9s} {'steps':>13s} {'driver RSS':>11s} "
          f"{'worker peak RSS':>16s} {'replica-h':>10s} {'cpu s / replica-h':>18s}")
    rows = {}
    for n, r in (base, (requests, replicas)):
        run = _child([str(n), str(r), "0", "local-dask", str(workers)])
        replica_h = r * run["simulated_s"] / 3600.0
        rows[(n, r)] = (run, replica_h)
        print(f"{f'{n:,} / {r}':16s} {run['total_s']:8.1f} {run['sim_s']:8.1f} {run['cpu_s']:9.1f} {run['steps']:13,d} "
              f"{run['rss_mb']:8.0f} MB {max(run['worker_rss_mb'] or [0]):13.0f} MB {replica_h:10.1f} "
              f"{run['cpu_s'] / replica_h:18.3f}", flush=True)
    (small, small_h), (big, big_h) = rows[base], rows[(requests, replicas)]
    print(f"cost ratio {requests:,}/{replicas} vs {base[0]:,}/{base[1]}: wall {big['total_s'] / small['total_s']:.2f}, "
          f"CPU {big['cpu_s'] / small['cpu_s']:.2f}, for {big_h / small_h:.2f}x the replica-hours "
          f"(CPU per replica-hour: {(big['cpu_s'] / big_h) / (small['cpu_s'] / small_h):.2f}x)")
    conditions("fleet")


# ---- load synchronisation ---------------------------------------------------------------------------
METRICS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p99_s", "goodput_rps")


def _sync_child(sync: str, workers: int, requests: int) -> None:
    import simulator
    data = overrides(requests, 16, False, "cluster.router=least_outstanding")
    if sync != "none":
        data += ["simulation.executor=local-dask", f"simulation.workers={workers}", f"simulation.load_sync_s={sync}"]
    result = simulator.run(SCENARIO, data)
    print(json.dumps({"summary": {k: result.summary[k] for k in METRICS},
                      "replica": result.requests["replica"].tolist()}))


def sync(workers: int, requests: int) -> None:
    conditions("sync")
    print(f"least_outstanding, {requests:,} requests on 16 replicas (3 req/s per replica): one process against the "
          f"distributed run ({workers} Dask workers) at load_sync_s Δt")
    one = _child(["sync", "none", str(workers), str(requests)])
    print(f"{'run':18s} " + " ".join(f"{m:>13s}" for m in METRICS) + f" {'per replica':>16s}")
    print(f"{'one process':18s} " + " ".join(f"{one['summary'][m]:13.5g}" for m in METRICS) + f" {_spread(one):>16s}")
    for dt in ("0", "0.05", "0.5"):
        run = _child(["sync", dt, str(workers), str(requests)])
        same = "identical routing" if run["replica"] == one["replica"] else _spread(run)
        print(f"{'Δt = ' + dt + ' s':18s} " + " ".join(f"{run['summary'][m]:13.5g}" for m in METRICS) + f" {same:>16s}")
        print(f"{'  difference':18s} " + " ".join(f"{_rel(run['summary'][m], one['summary'][m]):>13s}" for m in METRICS))
    conditions("sync")


def _spread(run: dict) -> str:
    """The fewest and most requests routed to one replica."""
    counts = [run["replica"].count(i) for i in range(max(run["replica"]) + 1)]
    return f"{min(counts)}–{max(counts)} req"


def _rel(value: float, reference: float) -> str:
    if reference == 0:
        return "n/a" if value else "0"
    return f"{100.0 * (value - reference) / reference:+.2f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=doc_description(__doc__))
    ap.add_argument("--parts", nargs="+", default=["startup", "one", "fleet", "sync"],
                    choices=["startup", "one", "fleet", "sync"])
    ap.add_argument("--repeats", type=bounded(), default=3)
    ap.add_argument("--dask-workers", type=bounded(maximum=local_workers_max()), default=min(2, local_workers_max()))
    ap.add_argument("--fleet-requests", type=bounded(), default=10_000_000)
    ap.add_argument("--fleet-replicas", type=bounded(), default=1024)
    ap.add_argument("--one", nargs=2, type=bounded(), default=[1_000_000, 64], metavar=("REQUESTS", "REPLICAS"),
                    help="the one-process case, and the fleet part's baseline (default 1000000 64)")
    ap.add_argument("--sync-requests", type=bounded(), default=30_000)
    ap.add_argument("--instructions", action="store_true",
                    help="startup: also count each command's instructions under valgrind (deterministic; slow)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = script_args(ap, argv)
    if args.child:
        if args.child[0] == "sync":
            _sync_child(args.child[1], int(args.child[2]), int(args.child[3]))
        else:
            requests, replicas, spec, executor, workers = args.child
            _run_child(int(requests), int(replicas), spec == "1", executor, int(workers))
        return 0
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        print("(PYTHONDONTWRITEBYTECODE is set here; the benchmark's children run without it)")
    if args.instructions and shutil.which("valgrind") is None:
        print("fleet_speed: --instructions needs valgrind on PATH", file=sys.stderr)
        return 2
    if "startup" in args.parts:
        startup(args.repeats, args.instructions)
    if "one" in args.parts:
        one_process(args.repeats, *args.one)
    if "fleet" in args.parts:
        fleet(args.fleet_requests, args.fleet_replicas, args.dask_workers, tuple(args.one))
    if "sync" in args.parts:
        sync(args.dask_workers, args.sync_requests)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
