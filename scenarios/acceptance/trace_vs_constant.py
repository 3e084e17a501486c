"""Measured acceptance vs. a constant α with the same mean: the Jensen gap in tokens per step and tails.

    python3 -m scenarios.acceptance.trace_vs_constant [--gammas 2,4,6,8] [--drafter draft] [--out DIR]

For each γ, runs scenarios/acceptance/qwen_coder_trace.yaml twice: with the measured trace, and with a
constant per-token α equal to the trace's mean per-token acceptance (the fraction of positions where the
drafter's greedy token equals the target's). Acceptance along real text is bursty (easy boilerplate,
hard identifiers), so equal mean α does not mean equal speed: the table shows tokens per step, TPOT and
E2E percentiles of both, and the relative gap. Writes trace_vs_constant.csv into --out.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from models.errors import bounded_list, doc_description, run_script, script_args
from simulator.results.named_files import NamedFiles, first_line

SCENARIO = Path(__file__).with_name("qwen_coder_trace.yaml")
CSV = "trace_vs_constant.csv"
# (a user's own file of this name in --out is never replaced: simulator.results.named_files)
OUTPUT = NamedFiles("trace_vs_constant", "python3 -m scenarios.acceptance.trace_vs_constant",
                    first_line(CSV, "gamma,acceptance,alpha,tokens_per_step"))


def compare(gammas: list[int], drafter: str) -> pd.DataFrame:
    from profiles.acceptance.trace import agreement, empirical_mean_accepted, load_trace
    from simulator.api import run
    from simulator.speculation.trace_acceptance import resolve_trace_path
    from theory.chain import expected_tokens

    trace = load_trace(resolve_trace_path("qwen2.5-coder-1.5b-0.5b", SCENARIO.parent))
    alpha = agreement(trace, drafter)
    rows = []
    for gamma in gammas:
        common = [f"drafter.gamma={gamma}"]
        traced = run(SCENARIO, common + [f"acceptance.drafter={drafter}"])
        constant = run(SCENARIO, common + [f"acceptance={{kind: constant, alpha: {alpha}}}"])
        for label, res in (("trace", traced), ("constant", constant)):
            s = res.summary
            rows.append({"gamma": gamma, "acceptance": label, "alpha": alpha,
                         "tokens_per_step": s["tokens_per_step"],
                         "tokens_per_step_theory": (empirical_mean_accepted(trace, gamma, drafter) + 1
                                                    if label == "trace" else expected_tokens(alpha, gamma)),
                         "tpot_p50_ms": 1e3 * s["tpot_p50_s"], "tpot_p99_ms": 1e3 * s["tpot_p99_s"],
                         "e2e_p50_s": s["e2e_p50_s"], "e2e_p99_s": s["e2e_p99_s"]})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=doc_description(__doc__))
    ap.add_argument("--gammas", type=bounded_list(), default="2,4,6,8")
    ap.add_argument("--drafter", default="draft", choices=["draft", "skip", "ngram"])
    ap.add_argument("--out", type=OUTPUT.flag((CSV,)), default="out/acceptance")
    args = script_args(ap, argv)
    table = compare(args.gammas, args.drafter)
    out = args.out
    with OUTPUT.staged(out, (CSV,)) as staged:
        table.to_csv(staged / CSV, index=False)
    with pd.option_context("display.width", 160, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
