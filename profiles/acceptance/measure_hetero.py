"""Acceptance traces for a drafter whose vocabulary differs from the target's (TLI, see `hetero_vocab`).

Same prompts, target texts and trace schema as `measure`: one greedy target text per prompt (generated
here, or taken from an earlier trace of the same target with `texts_from`, whose target probabilities are
then recomputed by one parallel target pass over the text), and per target position the drafter columns
"draft" computed from TLI's q′ in the target's id space (`position_summaries`: argmax rank, top-k branch
ranks, β at every temperature of the schema) plus the prompt-lookup columns "ngram".

Offline entry point (pinned GGUF files from `fetch`; ~10 GB of RAM with the 1.5B target):
    python3 -m profiles.acceptance.measure_hetero --target target --drafter smollm2 \\
        --texts-from profiles/data/acceptance/qwen2.5-coder-1.5b-0.5b.parquet --out profiles/data/acceptance/
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from models.errors import bounded, run_script, script_args
from models.torch_impl.gguf_loader import LoadedModel, load_gguf
from profiles.acceptance import trace as tr
from profiles.acceptance.drafters import ngram_columns
from profiles.acceptance.hetero_vocab import build_vocab_map, tli_logits
from profiles.acceptance.measure import (MeasureSettings, _log, base_columns, greedy_generate, model_meta,
                                         position_summaries)
from profiles.acceptance.prompts import Prompt, build_prompt_set


def target_pass(target: LoadedModel, prompt_ids: Sequence[int], gen: Sequence[int]) -> torch.Tensor:
    """Target logits [len(gen), vocab] at every generated position, from one parallel pass."""
    return target.model.forward_full(torch.tensor(list(prompt_ids) + list(gen[:-1])),
                                     first_logit_row=len(prompt_ids) - 1)


def measure_hetero(target: LoadedModel, drafter: LoadedModel, prompts: Sequence[Prompt], settings: MeasureSettings,
                   texts: Sequence[tuple[list[int], list[int]]] | None = None) -> tuple[pd.DataFrame, dict]:
    """Trace and metadata. `texts` (optional): (prompt tokens, generated tokens) per measured prompt, in
    order, from an earlier greedy run of the same target; otherwise the target generates them."""
    torch.set_num_threads(settings.threads)
    tok, dtok = target.tokenizer, drafter.tokenizer
    vmap = build_vocab_map(dtok, tok)
    measured = [p for p in prompts if p.split == "measure"]
    if not measured:
        raise ValueError("prompts must contain at least one prompt with split 'measure'")
    ids = [tok.encode(p.text)[-settings.max_prompt_tokens:] for p in measured]
    if texts is not None and [list(t[0]) for t in texts] != ids:
        raise ValueError("texts must hold one (prompt tokens, generated tokens) pair per measured prompt, "
                         "with the prompt tokens this target's tokenizer gives for the same prompts")
    t0 = time.perf_counter()
    meta: dict = {"settings": asdict(settings), "timings_s": {}, "method": "TLI (token-level intersection)",
                  "vocab": {"target_tokens": tok.vocab_size, "drafter_tokens": dtok.vocab_size,
                            "shared_tokens": vmap.shared},
                  "texts_from": "given" if texts is not None else "generated", "sequences": []}
    frames, target_seconds, drafter_seconds, argmax_differs = [], 0.0, 0.0, 0
    stop_ids = tok.stop_ids()
    target_has = vmap.target_has()
    with torch.inference_mode():
        for start in range(0, len(measured), settings.batch_size):
            t1 = time.perf_counter()
            batch = ids[start:start + settings.batch_size]
            if texts is None:
                runs = greedy_generate(target.model, batch, settings.max_new_tokens, stop_ids, settings.batch_size)
            else:
                runs = [(list(g), target_pass(target, p, g)) for p, g in texts[start:start + settings.batch_size]]
            target_seconds += time.perf_counter() - t1
            t1 = time.perf_counter()
            for offset, (prompt_ids, (gen, target_logits)) in enumerate(zip(batch, runs)):
                seq = start + offset
                argmax_differs += int((torch.argmax(target_logits, -1) != torch.tensor(gen)).sum())
                cols = base_columns(seq, measured[seq], prompt_ids, gen, target_logits, settings.max_new_tokens,
                                    stop_ids)
                draft_logits = tli_logits(drafter.model, dtok, tok, vmap, prompt_ids, gen)
                cols.update(position_summaries(target_logits, draft_logits, torch.tensor(gen), settings.top_k,
                                               "draft"))
                proposal_len, match_len = ngram_columns(prompt_ids, gen, settings.ngram)
                cols.update(ngram_proposal_len=proposal_len, ngram_match_len=match_len)
                frames.append(pd.DataFrame(cols))
                meta["sequences"].append({"prompt_id": measured[seq].prompt_id, "prompt_tokens": prompt_ids,
                                          "generated_tokens": gen, "generated_text": tok.decode(gen),
                                          "target_tokens_shared": int(target_has[gen].sum())})
            drafter_seconds += time.perf_counter() - t1
            _log(f"{min(start + settings.batch_size, len(measured))}/{len(measured)} prompts, "
                 f"target {target_seconds:.0f} s, drafter {drafter_seconds:.0f} s")
    trace = pd.concat(frames, ignore_index=True)
    meta["timings_s"].update(target=target_seconds, drafter=drafter_seconds, total=time.perf_counter() - t0)
    meta["target_argmax_differs_from_text"] = argmax_differs
    meta["prompts"] = [{k: v for k, v in asdict(p).items() if k != "reference_completion"} for p in prompts]
    return trace, meta


def hetero_summary(trace: pd.DataFrame, meta: dict) -> dict:
    """`trace.summary` plus the share of target tokens the drafter's vocabulary can express."""
    shared = sum(s["target_tokens_shared"] for s in meta["sequences"])
    return {"summary": tr.summary(trace),
            "by_kind": {kind: tr.summary(part.reset_index(drop=True)) for kind, part in trace.groupby("kind")},
            "target_tokens_in_shared_vocab": shared / len(trace), "vocab": meta["vocab"],
            "target_argmax_differs_from_text": meta["target_argmax_differs_from_text"],
            "timings_s": meta["timings_s"]}


def texts_of(trace_path: Path) -> list[tuple[list[int], list[int]]]:
    meta = tr.load_trace(trace_path).attrs["meta"]
    return [(list(s["prompt_tokens"]), list(s["generated_tokens"])) for s in meta["sequences"]]


def main(argv: list[str] | None = None) -> int:
    from profiles.acceptance.fetch import PINNED_MODELS, fetch
    parser = argparse.ArgumentParser(description="Measure a TLI acceptance trace for a drafter with its own vocabulary.")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--target", choices=sorted(PINNED_MODELS), default="target", help="pinned target GGUF")
    parser.add_argument("--drafter", choices=sorted(PINNED_MODELS), default="smollm2", help="pinned drafter GGUF")
    parser.add_argument("--texts-from", type=Path, default=None,
                        help="trace of the same target and prompts whose greedy texts to reuse")
    parser.add_argument("--name", type=str, required=True)
    parser.add_argument("--n-code", type=bounded(), default=32)
    parser.add_argument("--n-text", type=bounded(), default=8)
    parser.add_argument("--max-new-tokens", type=bounded(), default=128)
    parser.add_argument("--threads", type=bounded(maximum=os.cpu_count() or 1), default=1)
    parser.add_argument("--seed", type=bounded(minimum=0), default=0)
    args = script_args(parser, argv)
    settings = MeasureSettings(max_new_tokens=args.max_new_tokens, threads=args.threads)
    torch.set_num_threads(settings.threads)
    prompts = build_prompt_set(args.n_code, args.n_text, 2, args.seed)
    target_path, drafter_path = fetch(args.target), fetch(args.drafter)
    _log(f"loading {target_path.name} and {drafter_path.name}")
    target, drafter = load_gguf(target_path), load_gguf(drafter_path)
    texts = texts_of(args.texts_from) if args.texts_from else None
    trace, meta = measure_hetero(target, drafter, prompts, settings, texts)
    meta.update(target=model_meta(target, Path(str(target_path) + ".json")),
                draft=model_meta(drafter, Path(str(drafter_path) + ".json")),
                prompt_seed=args.seed, python=platform.python_version(), torch=torch.__version__,
                torch_threads=torch.get_num_threads(), texts_from_trace=args.texts_from.name if args.texts_from else "",
                stdlib_prompts_from=f"Python {platform.python_version()} standard library")
    args.out.mkdir(parents=True, exist_ok=True)
    tr.write_trace(trace, args.out / f"{args.name}.parquet", meta)
    figures = hetero_summary(trace, meta)
    (args.out / f"{args.name}.summary.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures["summary"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
