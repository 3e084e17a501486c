"""Host memory of a run: peak resident set size against the number of requests.

    python3 -m scenarios.benchmarks.host_memory [--small 20000] [--large 400000]

Runs scenarios/quickstart.yaml with the smallest requests a run can have (16 prompt tokens, 2 output
tokens, no drafter, 100 req/s) at two request counts, each in a fresh interpreter with the memory check
off, and prints the peak RSS of each and the slope between them (bytes per request) and the intercept
(the run's base). These are the lower-bound constants of simulator.config.host_memory, which refuses runs
that certainly do not fit; longer outputs, speculation and larger batches need more per request.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from models.errors import bounded, run_script, script_args

SCENARIO = Path(__file__).resolve().parents[1] / "quickstart.yaml"
OVERRIDES = ["workload.arrival.qps=100", "workload.output_tokens={kind: fixed, value: 2}",
             "workload.prompt_tokens={kind: fixed, value: 16}", "drafter={kind: none}"]
CHILD = """
import resource, sys
from simulator.api import simulate, Prepared, _as_scenario
from simulator.cluster.build import build
scenario, base = _as_scenario({path!r}, {overrides!r}, None)
cluster = build(scenario, base)
simulate(Prepared(scenario, cluster, 0.0))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def peak_rss_bytes(num_requests: int) -> int:
    code = CHILD.format(path=str(SCENARIO), overrides=[*OVERRIDES, f"workload.num_requests={num_requests}"])
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return int(out.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m scenarios.benchmarks.host_memory", description=__doc__)
    parser.add_argument("--small", type=bounded(), default=20_000)
    parser.add_argument("--large", type=bounded(), default=400_000)
    args = script_args(parser, argv)
    small, large = peak_rss_bytes(args.small), peak_rss_bytes(args.large)
    slope = (large - small) / (args.large - args.small)
    print(f"peak RSS {args.small:>9,} requests: {small / 1024**2:8.1f} MiB")
    print(f"peak RSS {args.large:>9,} requests: {large / 1024**2:8.1f} MiB")
    print(f"slope {slope:.0f} B/request, base {(small - slope * args.small) / 1024**2:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
