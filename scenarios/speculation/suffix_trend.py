"""Published trend, checked without tuning: n-gram and suffix decoding win big on repetitive turns and
nothing elsewhere (SuffixDecoding, Oliaro et al., NeurIPS 2025, arXiv:2411.04975: large speedups on
agentic/code-editing workloads, small ones on open-ended chat; Snowflake's blog: 1.96–3.12x on BlazeEdit
vs 1.0–1.28x on SpecBench).

    python3 -m scenarios.speculation.suffix_trend [--requests 200] [--out DIR]

Runs scenarios/speculation/suffix_code.yaml with no drafter, n-gram prompt lookup (γ = 4, verifying what
it proposes: policy `proposed`) and suffix decoding, each on three workloads whose texts the drafters walk:
the multi-turn code edits and the agent loop of the model's own session corpus, and open-ended chat
(ShareGPT conversations, profiles/data/acceptance/sessions/sessions-sharegpt.parquet). Prints and writes
(suffix_trend.csv) tokens per step, mean TPOT and the speedup of mean TPOT over no drafter.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

from models.errors import bounded, doc_description, run_script, script_args
from simulator.results.named_files import NamedFiles, first_line

SCENARIO = Path(__file__).with_name("suffix_code.yaml")
CSV = "suffix_trend.csv"
# (a user's own file of this name in --out is never replaced: simulator.results.named_files)
OUTPUT = NamedFiles("suffix_trend", "python3 -m scenarios.speculation.suffix_trend",
                    first_line(CSV, "workload,drafter,tokens_per_step,mean_tpot_ms,speedup"))
WORKLOADS = {"code_edit": ("sessions-qwen2.5-coder-0.5b", ["code_edit"]),
             "agentic": ("sessions-qwen2.5-coder-0.5b", ["agentic"]),
             "chat (ShareGPT)": ("sessions-sharegpt", None)}
DRAFTERS = {"none": ({"kind": "none"}, {"kind": "fixed"}),
            # lookups 3 to 1, as the README's table was computed (vLLM's own default is 5 and 5)
            "ngram (γ=4)": ({"kind": "ngram", "gamma": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 1},
                            {"kind": "proposed"}),
            "suffix": ({"kind": "suffix"}, {"kind": "fixed"})}


def scenario_for(workload: str, drafter: str, requests: int) -> dict:
    data = yaml.safe_load(SCENARIO.read_text())
    corpus, subset = WORKLOADS[workload]
    data["workload"]["num_requests"] = requests
    data["drafter"], data["policy"] = DRAFTERS[drafter]
    data["acceptance"] = ({"kind": "sessions", "corpus": corpus, **({"workloads": subset} if subset else {})}
                          if drafter != "none" else {"kind": "constant"})
    return data


def trend(requests: int) -> pd.DataFrame:
    from simulator.api import run
    rows = []
    for workload in WORKLOADS:
        base = None
        for drafter in DRAFTERS:
            result = run(scenario_for(workload, drafter, requests), base_dir=SCENARIO.parent)
            req = result.requests
            decode = req["decode_steps"].sum()
            tpot = ((req["finish_s"] - req["first_token_s"]) / (req["emitted_tokens"] - 1).clip(lower=1)).mean()
            base = tpot if drafter == "none" else base
            rows.append({"workload": workload, "drafter": drafter,
                         "tokens_per_step": float((req["emitted_tokens"] - 1).sum() / max(decode, 1)),
                         "mean_tpot_ms": 1e3 * float(tpot), "speedup": float(base / tpot)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--requests", type=bounded(), default=200)
    parser.add_argument("--out", type=OUTPUT.flag((CSV,)), default=None)
    args = script_args(parser, argv)
    table = trend(args.requests)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out is not None:
        with OUTPUT.staged(args.out, (CSV,)) as staged:
            table.to_csv(staged / CSV, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
