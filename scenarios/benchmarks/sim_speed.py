"""Simulator speed: wall time, steps simulated and steps/s on a 10,000-request workload, and cold start.

    python3 -m scenarios.benchmarks.sim_speed [--repeats 5]

Workload (scenarios/benchmarks/sim_speed.yaml): Llama-2-7B on one A100, TP1, one replica, Poisson
arrivals, prompts 512–2048, outputs 128–512, batch cap 128 — without speculation, with a co-located
Llama-68M draft (γ = 4, α = 0.7), and without speculation under vLLM V1's scheduler (chunked prefill). Each
figure is the median over --repeats runs (the machine is shared and noisy). Wall time covers building the
run (workload, replicas, cost model) and the event loop; metrics and file output are excluded. Cold start: a fresh interpreter importing the simulator and
building the scenario, timed from outside (process start to ready), median of --repeats.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from models.errors import bounded, doc_description, run_script, script_args

SCENARIO = Path(__file__).with_name("sim_speed.yaml")
# The speculating variant of the workload (also cluster_scale's and fleet_speed's): a co-located Llama-68M draft,
# chain γ = 4, α = 0.7, on vLLM 0.15.0 — the first V1 release that runs a draft model (the A100's measured tables
# are 0.14.0's, which refuses one: simulator.cluster.factory.make_engine_time).
SPEC = ["drafter.kind=draft_model", "drafter.model=llama-68m", "drafter.gamma=4",
        "acceptance.kind=constant", "acceptance.alpha=0.7", "cluster.engine.version=0.15.0"]
# The same workload under vLLM V1's scheduler (chunked prefill: each arrival's prompt rides on a step that
# decodes the whole batch, simulator.core.sched.vllm_v1) instead of the V0 prefill-first one of sim_speed.yaml.
V1 = ["scheduler.kind=vllm_v1"]
COLD = ("from simulator.config.scenario import load_scenario; from simulator.cluster.build import build; "
        f"s, d = load_scenario({str(SCENARIO)!r}); build(s, d)")


def _timed_run(overrides: list[str]) -> tuple[float, int]:
    from simulator.api import run
    result = run(SCENARIO, overrides)
    return result.wall_s, len(result.steps)


def _cold_start_s() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", COLD], check=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=doc_description(__doc__))
    ap.add_argument("--repeats", type=bounded(), default=5)
    args = script_args(ap, argv)
    print(f"{'case':24s} {'wall_s (median)':>16s} {'steps':>8s} {'steps/s':>10s}   runs")
    for label, overrides in [("no speculation", []), ("chain γ=4 (draft model)", SPEC), ("vLLM V1 scheduler", V1)]:
        runs = [_timed_run(overrides) for _ in range(args.repeats)]
        walls = [w for w, _ in runs]
        wall, steps = statistics.median(walls), runs[0][1]
        print(f"{label:24s} {wall:16.3f} {steps:8d} {steps / wall:10.0f}   "
              + " ".join(f"{w:.2f}" for w in walls))
    colds = [_cold_start_s() for _ in range(args.repeats)]
    print(f"{'cold start':24s} {statistics.median(colds):16.3f} {'':8s} {'':10s}   "
          + " ".join(f"{c:.2f}" for c in colds))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
