"""Check the one-pass shortcut of `measure` against a real greedy draft-then-verify loop.

The loop (`speculative_generate`): the target's cache holds the context minus its last token; each step
the drafter proposes γ' = min(γ, tokens still to generate − 1) tokens, the target runs one pass over
[last context token, proposals] and accepts proposals while they equal its own argmax, then appends its
argmax after the last accepted one (the bonus token) — unless an accepted token is a stop token, which
ends the request at once. Rejected rows of both caches are rolled back.

`compare` asserts, for each prompt and drafter, that the loop's tokens equal the trace's target tokens and
that its per-step accepted counts equal `trace.walk_accepted` on that sequence's rows.

    python3 -m profiles.acceptance.verify --trace profiles/data/acceptance/<name>.parquet --prompts 2 --gamma 4
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from models.errors import bounded, run_script, script_args
from models.torch_impl.gguf_loader import LoadedModel
from models.torch_impl.qwen2 import Qwen2Model
from profiles.acceptance import trace as tr
from profiles.acceptance.drafters import ModelDrafter, NgramSettings, ngram_propose


@dataclass(frozen=True)
class LoopResult:
    tokens: list[int]
    accepted: list[int]          # accepted draft tokens per step
    proposed: list[int]          # draft tokens proposed per step


class NgramDrafter:
    def __init__(self, settings: NgramSettings):
        self.settings = settings

    def propose(self, context: Sequence[int], count: int) -> list[int]:
        return ngram_propose(context, self.settings)[:max(count, 0)]


def speculative_generate(target: Qwen2Model, drafter, prompt: Sequence[int], max_new_tokens: int, gamma: int,
                         stop_ids: frozenset[int]) -> LoopResult:
    if gamma < 0 or max_new_tokens < 1 or len(prompt) < 1:
        raise ValueError(f"need gamma >= 0, max_new_tokens >= 1 and a non-empty prompt; got gamma={gamma}, "
                         f"max_new_tokens={max_new_tokens}, prompt of {len(prompt)} tokens")
    cache = target.new_cache(1, len(prompt) + max_new_tokens + gamma + 1)
    context = list(prompt)
    if len(context) > 1:
        target.prefill(torch.tensor(context[:-1]), cache, 0)
    generated: list[int] = []
    accepted_steps, proposed_steps = [], []
    while len(generated) < max_new_tokens:
        count = min(gamma, max_new_tokens - len(generated) - 1)
        proposal = drafter.propose(context, count)[:count]
        logits = target.decode(torch.tensor([[context[-1]] + proposal]), cache, [0])[0]
        verdict = torch.argmax(logits, dim=-1).tolist()
        tau = 0
        while tau < len(proposal) and proposal[tau] == verdict[tau]:
            tau += 1
        new = proposal[:tau] + [verdict[tau]]
        stops = [i for i, t in enumerate(new) if t in stop_ids]
        if stops:
            new = new[:stops[0] + 1]
            tau = min(tau, stops[0] + 1)
        accepted_steps.append(tau)
        proposed_steps.append(len(proposal))
        context += new
        generated += new
        cache.lengths[0] = len(context) - 1
        if stops:
            break
    return LoopResult(generated, accepted_steps, proposed_steps)


def truncate_sequence(rows: pd.DataFrame, max_tokens: int) -> pd.DataFrame:
    """One sequence's rows as if generation had been capped at `max_tokens` tokens: rows with
    pos < max_tokens, max_accept lowered to max_tokens − pos − 1 where the cap now ends the text."""
    if len(rows) < max_tokens:
        return rows.reset_index(drop=True)
    cut = rows[rows["pos"] < max_tokens].reset_index(drop=True).copy()
    cut["max_accept"] = np.minimum(cut["max_accept"], max_tokens - cut["pos"] - 1).astype("int32")
    return cut


def compared_tokens(meta: dict, max_new_tokens: int | None) -> int:
    """Tokens per sequence to compare: `max_new_tokens`, or the measurement's when None."""
    max_new = int(meta.get("settings", {}).get("max_new_tokens", 0))
    if max_new_tokens is None:
        return max_new
    if not 1 <= max_new_tokens <= max_new:
        raise ValueError(f"max_new_tokens must lie in 1…{max_new}, got {max_new_tokens}")
    return max_new_tokens


def compared_sequences(trace: pd.DataFrame, seqs: Sequence[int], max_new_tokens: int | None):
    """(seq, rows truncated to the compared tokens, prompt tokens, compared tokens) per sequence in `seqs`."""
    meta = trace.attrs.get("meta", {})
    max_new = compared_tokens(meta, max_new_tokens)
    for seq in seqs:
        yield seq, truncate_sequence(trace[trace["seq"] == seq], max_new), meta["sequences"][seq]["prompt_tokens"], max_new


def compare(trace: pd.DataFrame, target: LoadedModel, draft: LoadedModel, seqs: Sequence[int],
            gammas: Sequence[int], drafters: Sequence[str] = tr.DRAFTERS,
            max_new_tokens: int | None = None) -> list[dict]:
    """Run the real loop on trace sequences `seqs`; one report row per (seq, drafter, γ) with `match`.
    `max_new_tokens` (default: the measurement's) compares only the first tokens of each sequence."""
    meta = trace.attrs.get("meta", {})
    settings = meta.get("settings", {})
    ngram = NgramSettings(**settings.get("ngram", {}))
    skip_layers = meta.get("layer_skip", {}).get("skip_layers", [])
    stop_ids = target.tokenizer.stop_ids()
    report = []
    with torch.inference_mode():
        for seq, rows, prompt, max_new in compared_sequences(trace, seqs, max_new_tokens):
            for name in drafters:
                for gamma in gammas:
                    if name == "draft":
                        drafter = ModelDrafter(draft.model, len(prompt) + max_new + gamma + 1)
                    elif name == "skip":
                        drafter = ModelDrafter(target.model, len(prompt) + max_new + gamma + 1, skip_layers)
                    else:
                        drafter = NgramDrafter(ngram)
                    loop = speculative_generate(target.model, drafter, prompt, max_new, gamma, stop_ids)
                    expected_tokens = rows["target_token"].tolist()
                    expected_steps = tr.walk_accepted(rows, gamma, name).tolist()
                    report.append({"seq": int(seq), "drafter": name, "gamma": int(gamma),
                                   "tokens_match": loop.tokens == expected_tokens,
                                   "accepted_match": loop.accepted == expected_steps,
                                   "match": loop.tokens == expected_tokens and loop.accepted == expected_steps,
                                   "steps": len(loop.accepted), "accepted_total": int(sum(loop.accepted)),
                                   "trace_accepted_total": int(sum(expected_steps))})
    return report


def main(argv: list[str] | None = None) -> int:
    from models.torch_impl.gguf_loader import load_gguf
    from profiles.acceptance.fetch import fetch
    parser = argparse.ArgumentParser(description="Real draft-then-verify loop vs the measured trace.")
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--seqs", type=str, default="0", help="comma-separated trace sequence indices")
    parser.add_argument("--gamma", type=str, default="4", help="comma-separated γ values")
    parser.add_argument("--drafters", type=str, default=",".join(tr.DRAFTERS))
    parser.add_argument("--max-new-tokens", type=bounded(), default=None, help="compare only this many tokens")
    parser.add_argument("--target-gguf", type=Path, default=None)
    parser.add_argument("--draft-gguf", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write the report as JSON here")
    args = script_args(parser, argv)
    torch.set_num_threads(2)
    trace = tr.load_trace(args.trace)
    target = load_gguf(args.target_gguf or fetch("target"))
    draft = load_gguf(args.draft_gguf or fetch("draft"))
    report = compare(trace, target, draft, [int(s) for s in args.seqs.split(",")],
                     [int(g) for g in args.gamma.split(",")], args.drafters.split(","), args.max_new_tokens)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if all(r["match"] for r in report) else 1


if __name__ == "__main__":
    sys.exit(run_script(main))
