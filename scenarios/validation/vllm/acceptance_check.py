"""vLLM's acceptance on the acceptance trace's own prompts, against the trace (a cross-check of the
measurement in profiles/data/acceptance, not part of the validation's prediction).

The trace was measured with draftsim's own torch implementation in one pass per prompt (every position's
draft and target predictions from the target's greedy text); vLLM runs real draft-then-verify loops on the
same 32 code prompts with the same weights (fp32, greedy, γ = 4, the first 64 tokens). For each prompt the
trace's walk gives the steps a greedy speculative decoder takes from the token after the prompt's first
(vLLM's first speculative step follows the prefill's token) to the 64th; vLLM's token deliveries give its
steps. Compared: accepted / drafted tokens (vLLM's counters), tokens per decode step overall and per
prompt.

    python -m scenarios.validation.vllm.acceptance_check [--data DIR]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from models.errors import doc_description, run_script, script_args
from scenarios.validation.vllm.cases import DATA_DIR
from scenarios.validation.vllm.compare import draft_acceptance_rate

GAMMA = 4


def trace_walk(rows, drafter: str, tokens: int) -> tuple[int, int, int]:
    """(steps, accepted, drafted) of a greedy speculative decoder over one trace sequence, from position 1
    until `tokens` tokens exist (the last step's acceptance capped at what is left)."""
    from profiles.acceptance.trace import accepted_lengths
    tau = accepted_lengths(rows, GAMMA, drafter)
    proposed = np.minimum(rows["ngram_proposal_len"].to_numpy(), GAMMA) if drafter == "ngram" else None
    pos, steps, accepted, drafted = 1, 0, 0, 0
    while pos < min(tokens, len(tau)):
        t = int(min(tau[pos], tokens - pos - 1))
        steps, accepted = steps + 1, accepted + t
        drafted += GAMMA if proposed is None else int(proposed[pos])
        pos += int(tau[pos]) + 1
    return steps, accepted, drafted


def check(data: Path) -> dict:
    from profiles.acceptance.trace import load_trace
    from scenarios.validation.vllm.workload import ACCEPTANCE_TRACE
    workload = json.loads((data / "acceptance_check" / "workload.json").read_text())
    trace = load_trace(ACCEPTANCE_TRACE)
    seq_of = {p: s for s, p in trace.groupby("seq")["prompt_id"].first().items()}
    out = {}
    for drafter, name in (("draft", "draft"), ("ngram", "ngram")):
        run = json.loads((data / "acceptance_check" / f"{name}.json").read_text())
        tokens = workload["output_tokens"]
        by_id = {r["id"]: r for r in run["requests"]}
        real_tps, trace_tps, t_acc, t_drafted = [], [], 0, 0
        for req in workload["requests"]:
            rows = trace[trace["seq"] == seq_of[req["prompt_id"]]]
            steps, accepted, drafted = trace_walk(rows, drafter, tokens)
            counts = by_id[req["id"]]["token_counts"][1:]
            if not steps or not counts:
                continue
            t_acc, t_drafted = t_acc + accepted, t_drafted + drafted
            trace_tps.append((accepted + steps) / steps)
            real_tps.append(sum(counts) / len(counts))
        real_tps, trace_tps = np.array(real_tps), np.array(trace_tps)
        out[name] = {"prompts": int(len(real_tps)), "vllm_acceptance_rate": draft_acceptance_rate(run),
                     "trace_acceptance_rate": t_acc / t_drafted if t_drafted else None,
                     "vllm_tokens_per_step": float(real_tps.mean()), "trace_tokens_per_step": float(trace_tps.mean()),
                     "per_prompt_correlation": float(np.corrcoef(real_tps, trace_tps)[0, 1]),
                     "per_prompt_median_abs_diff": float(np.median(np.abs(real_tps - trace_tps)))}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=doc_description(__doc__))
    p.add_argument("--data", default=str(DATA_DIR))
    args = script_args(p, argv)
    for name, r in check(Path(args.data)).items():
        print(f"{name}: {r['prompts']} prompts; accepted/drafted vLLM {100 * r['vllm_acceptance_rate']:.1f} %, trace "
              f"{100 * r['trace_acceptance_rate']:.1f} %; tokens per step vLLM {r['vllm_tokens_per_step']:.2f}, trace "
              f"{r['trace_tokens_per_step']:.2f}; per prompt: correlation {r['per_prompt_correlation']:.2f}, "
              f"median |difference| {r['per_prompt_median_abs_diff']:.2f} tokens per step")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
