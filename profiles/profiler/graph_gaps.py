"""How much idle time a CUDA graph leaves between its kernels, as a function of how long they run.

`draftsim profile --check` compares whole forwards replayed from a CUDA graph with the sum of their
profiled ops. A forward of small kernels (a 0.5B drafter: ~330 kernels of a few µs) left its H100 idle
between kernels for a quarter of its time in one run and a tenth in others, a forward of large ones (an 8B
target) for ~2 %; the check records that idle part per shape (observe.kernel_summary). This measures the
same thing on kernels whose duration is set, with nothing else varying: a graph of `KERNELS` back-to-back
spin kernels (`torch.cuda._sleep`, a kernel that waits a given number of clock cycles) per duration,
replayed and observed with torch.profiler. Per duration it reports each kernel's median time, the idle time
per gap (span − busy over kernels − 1 gaps) and replay time per kernel; a second series alternates the spin
kernel with a one-element add, so that consecutive nodes are different kernels, as in a forward.

    python3 -m profiles.profiler.graph_gaps --out DIR     # CUDA only; writes DIR/graph_gaps.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

from models.errors import doc_description, run_script, script_args
from profiles.profiler.observe import kernel_events, kernel_summary
from profiles.profiler.timing import capture_graph, replay_seconds

CYCLES = (0, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000)   # spin lengths (≈ 0.5 µs each 1,000 at 2 GHz)
KERNELS = 200      # kernel nodes per graph
REPLAYS = 20       # timed replays per graph (median)
OUT_FILE = "graph_gaps.json"


def measure_series(cycles: int, alternate: bool, device: torch.device) -> dict:
    """One graph of KERNELS nodes: spin kernels of `cycles` (alternating with a one-element add)."""
    x = torch.zeros(1, device=device)

    def body():
        for i in range(KERNELS):
            if alternate and i % 2:
                x.add_(1.0)
            else:
                torch.cuda._sleep(cycles)

    graph = capture_graph(body, device)
    replay = statistics.median(replay_seconds(graph) for _ in range(REPLAYS))
    events = kernel_events(graph.replay, device)
    summary = kernel_summary(events)
    busy, span = summary["busy_s"], summary["span_s"]
    by_name: dict[str, list[float]] = {}
    for name, took, _ in events:
        by_name.setdefault(name[:80], []).append(took)
    del graph
    return {"cycles": cycles, "alternate_add": alternate, "kernels": len(events),
            "kernel_median_s": {name: statistics.median(t) for name, t in by_name.items()},
            "replay_per_kernel_s": replay / KERNELS,
            "idle_per_gap_s": (span - busy) / max(len(events) - 1, 1), "busy_s": busy, "span_s": span}


def run(device_name: str = "cuda") -> dict:
    device = torch.device(device_name)
    rows = [measure_series(c, alternate, device) for alternate in (False, True) for c in CYCLES]
    props = torch.cuda.get_device_properties(device)
    return {"device_name": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
            "kernels_per_graph": KERNELS, "replays": REPLAYS, "series": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m profiles.profiler.graph_gaps",
                                     description=doc_description(__doc__))
    parser.add_argument("--out", required=True, help="folder for graph_gaps.json")
    args = script_args(parser, argv)
    if not torch.cuda.is_available():
        print("graph_gaps: needs a CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    result = run()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / OUT_FILE).write_text(json.dumps(result, indent=2) + "\n")
    for row in result["series"]:
        kernels = " ".join(f"{t * 1e6:.2f}" for t in row["kernel_median_s"].values())
        print(f"graph_gaps cycles {row['cycles']:>6} {'alternating' if row['alternate_add'] else 'same kernel'}: "
              f"kernels {kernels} us  idle/gap {row['idle_per_gap_s'] * 1e6:6.2f} us  "
              f"replay/kernel {row['replay_per_kernel_s'] * 1e6:7.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
