"""Step costs of the engines' drafters (EAGLE-3, MTP) by batch, from the one replica factory: the draft passes
of one decode step against the verify pass and a plain decode step, the expected tokens per step, the
decode-step speedup E[tokens] · t_plain / (t_draft + t_verify), and the draft depth γ that maximises it.

    python3 -m scenarios.speculation.drafter_costs [SCENARIO ...] [--context 1024] [--batches 1,8,32,128]
                                                    [--depths 1,2,3,4,5,6]

Every number is the simulator's own pricing (the scenario's latency source and engine time) of decode-only
steps at a fixed context per request; the speedup is per decode step (no queueing), the quantity the
issue's trends are about: acceptance saturates with depth while draft cost keeps rising (best depth), and
the verify pass grows with batch while the draft passes keep costing (speedup falls with batch).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from models.errors import bounded, doc_description, run_script, script_args

FOLDER = Path(__file__).resolve().parent
SCENARIOS = ("eagle3_llama31_8b_h100", "eagle3_gpt_oss_120b_h100", "mtp_deepseek_v3_h200_ep8",
             "mtp_deepseek_v3_h200_disagg")


def replica_kind(path: Path, drafter: dict | None = None):
    """The decode replica kind of a scenario (the decode pool of a disaggregated one), optionally with
    another drafter section."""
    from simulator.cluster.build import pool_kind
    from simulator.config.scenario import parse_scenario, read_scenario_dict
    data = read_scenario_dict(path)
    if drafter is not None:
        data = {k: v for k, v in data.items() if k not in ("speculation", "policy")} | {"drafter": drafter}
    scenario = parse_scenario(data)
    disagg = scenario.cluster.disaggregation
    if disagg is not None:
        return pool_kind(scenario, disagg.decode, "cluster.disaggregation.decode", 0, path.parent)
    return pool_kind(scenario, None, "cluster", 0, path.parent)


def step_seconds(kind, batch: int, context: int) -> tuple[float, float]:
    """(draft seconds, target seconds incl. engine time) of one decode step of `batch` requests."""
    d, t = kind.cost.decode_steps(batch, np.array([batch * context]))
    return float(d[0, 0]), float(t[0, 0])


def table(name: str, context: int, batches: list[int], depths: list[int]) -> list[str]:
    from simulator.config.scenario import read_scenario_dict
    from simulator.errors import ScenarioError
    path = FOLDER / f"{name}.yaml"
    kind = replica_kind(path)
    plain = replica_kind(path, {"kind": "none"})
    drafter = dict(read_scenario_dict(path)["drafter"])
    tokens = 1.0 + kind.acceptance.expected_accepted()
    lines = [f"### {name} (context {context} per request, {kind.hardware.id}, "
             f"{kind.latency.describe().get('source', '?')} kernels)",
             "| batch | draft (ms) | verify (ms) | plain step (ms) | draft / verify | tokens/step | step speedup | "
             "best γ (speedup) |", "|---|---|---|---|---|---|---|---|"]
    by_depth = {}
    for g in depths:
        try:
            by_depth[g] = replica_kind(path, {**drafter, "gamma": g})
        except ScenarioError:   # a depth the scenario's shape does not take
            continue
    for b in batches:
        ds, ts = step_seconds(kind, b, context)
        _, ps = step_seconds(plain, b, context)
        best = max(((g, (1.0 + k.acceptance.expected_accepted()) * ps / sum(step_seconds(k, b, context)))
                    for g, k in by_depth.items()), key=lambda x: x[1], default=(0, float("nan")))
        lines.append(f"| {b} | {1e3 * ds:.3f} | {1e3 * ts:.3f} | {1e3 * ps:.3f} | {ds / ts:.3f} | {tokens:.2f} | "
                     f"{tokens * ps / (ds + ts):.2f}× | {best[0]} ({best[1]:.2f}×) |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=doc_description(__doc__))
    ap.add_argument("names", nargs="*", metavar="SCENARIO", help=f"default: {', '.join(SCENARIOS)}")
    ap.add_argument("--context", type=bounded(), default=1024, help="tokens in each request's KV cache")
    ap.add_argument("--batches", default="1,8,32,128", help="decode batch sizes (comma-separated)")
    ap.add_argument("--depths", default="1,2,3,4,5,6", help="draft depths γ to search (comma-separated)")
    args = script_args(ap, argv)
    batches = [int(x) for x in args.batches.split(",")]
    depths = [int(x) for x in args.depths.split(",")]
    for name in args.names or SCENARIOS:
        print("\n".join(table(name, args.context, batches, depths)) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
