"""Check a TLI trace (`measure_hetero`) against a real greedy draft-then-verify loop.

The loop is `verify.speculative_generate` with a `hetero_vocab.TLIDrafter`: the real drafter re-tokenizes
the target's text, drafts γ tokens autoregressively in its own ids over the shared tokens, and the real
target verifies their target ids. The target's text is the same whatever is drafted (greedy), so the
loop's tokens must equal the trace's. Its accepted counts can differ from the one-pass walk for γ ≥ 2,
because the k-th draft (k ≥ 2) reads the drafter's own tokens rather than the re-tokenized text
(`hetero_vocab` docstring); the first draft of a step reads exactly what the trace recorded. The report
says both: per run, whether every step's first draft agrees with the trace at the loop's own positions
(it must), and how the accepted counts of the loop compare with the trace's τ at the same positions and
with the trace's own walk.

    python3 -m profiles.acceptance.verify_hetero --trace profiles/data/acceptance/<name>.parquet \\
        --target target --drafter smollm2 --seqs 0,32 --gamma 1,4 --max-new-tokens 64
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from models.errors import bounded, run_script, script_args
from models.torch_impl.gguf_loader import LoadedModel
from profiles.acceptance import trace as tr
from profiles.acceptance.hetero_vocab import TLIDrafter, build_vocab_map
from profiles.acceptance.verify import compared_sequences, speculative_generate


def loop_positions(accepted: Sequence[int]) -> np.ndarray:
    """Text position at which each step of a loop starts (step k+1 starts τ_k + 1 after step k)."""
    return np.r_[0, np.cumsum(np.asarray(accepted, dtype=np.int64) + 1)[:-1]].astype(np.int64)


def compare_hetero(trace: pd.DataFrame, target: LoadedModel, drafter: LoadedModel, seqs: Sequence[int],
                   gammas: Sequence[int], max_new_tokens: int | None = None) -> list[dict]:
    """One report row per (seq, γ): the real TLI loop against the trace (see the module docstring)."""
    vmap = build_vocab_map(drafter.tokenizer, target.tokenizer)
    stop_ids = target.tokenizer.stop_ids()
    report = []
    with torch.inference_mode():
        for seq, rows, prompt, max_new in compared_sequences(trace, seqs, max_new_tokens):
            text_bytes = len(target.tokenizer.decode_bytes(list(prompt) + rows["target_token"].tolist()))
            for gamma in gammas:
                context = min(drafter.config.max_context, text_bytes + 16 * (gamma + 1))
                loop = speculative_generate(target.model, TLIDrafter(drafter.model, drafter.tokenizer,
                                                                     target.tokenizer, vmap, context),
                                            prompt, max_new, gamma, stop_ids)
                walk = tr.walk_accepted(rows, gamma, "draft")
                tau = np.asarray(loop.accepted, dtype=np.int64)
                positions = loop_positions(loop.accepted)
                if positions.size and positions.max() >= len(rows):
                    raise ValueError(f"seq {seq}: the loop's text is longer than the trace's")
                at_same = tr.accepted_lengths(rows, gamma, "draft")[positions]
                report.append({
                    "seq": int(seq), "gamma": int(gamma), "compared_tokens": int(max_new),
                    "tokens_match": loop.tokens == rows["target_token"].tolist(),
                    "first_draft_match": bool(np.array_equal(np.minimum(tau, 1), np.minimum(at_same, 1))),
                    "steps": len(tau), "steps_same_tau": int((tau == at_same).sum()),
                    "accepted_total": int(tau.sum()), "trace_tau_same_positions_total": int(at_same.sum()),
                    "trace_walk_steps": len(walk), "trace_walk_accepted_total": int(walk.sum())})
    return report


def main(argv: list[str] | None = None) -> int:
    from models.torch_impl.gguf_loader import load_gguf
    from profiles.acceptance.fetch import PINNED_MODELS, fetch
    parser = argparse.ArgumentParser(description="Real TLI draft-then-verify loop vs a measured trace.")
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--target", choices=sorted(PINNED_MODELS), default="target")
    parser.add_argument("--drafter", choices=sorted(PINNED_MODELS), default="smollm2")
    parser.add_argument("--seqs", type=str, default="0", help="comma-separated trace sequence indices")
    parser.add_argument("--gamma", type=str, default="1,4", help="comma-separated γ values")
    parser.add_argument("--max-new-tokens", type=bounded(), default=None, help="compare only this many tokens")
    parser.add_argument("--threads", type=bounded(maximum=os.cpu_count() or 1), default=1)
    parser.add_argument("--out", type=Path, default=None, help="write the report as JSON here")
    args = script_args(parser, argv)
    torch.set_num_threads(args.threads)
    trace = tr.load_trace(args.trace)
    target, drafter = load_gguf(fetch(args.target)), load_gguf(fetch(args.drafter))
    report = compare_hetero(trace, target, drafter, [int(s) for s in args.seqs.split(",")],
                            [int(g) for g in args.gamma.split(",")], args.max_new_tokens)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if all(r["tokens_match"] and r["first_draft_match"] for r in report) else 1


if __name__ == "__main__":
    sys.exit(run_script(main))
