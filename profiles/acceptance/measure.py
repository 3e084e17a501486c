"""Acceptance measurement: one greedy target generation per prompt, then one parallel pass of each model
drafter over the generated text, gives every per-position quantity of the trace (see `trace`).

Why one pass suffices (greedy verification): every accepted draft token equals the target's token, so a
chain started at position t drafts its j-th token from the target's own text t … t+j−2, which is exactly
the context the parallel pass sees at position t+j−1. Chains therefore accept while the drafter's argmax
equals the target token, and any γ follows from per-position hits; `verify` checks this against a real
draft-then-verify loop. Target probabilities come from the generation's own decode logits (no second
target pass); β at other temperatures rescales both models' logits.

Offline entry point (downloads ~1.6 GB, needs ~10 GB RAM):
    python3 -m profiles.acceptance.measure --out profiles/data/acceptance/ [--quick]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from models.errors import bounded, run_script, script_args
from models.torch_impl.gguf_loader import LoadedModel, load_gguf
from models.torch_impl.qwen2 import Qwen2Model
from profiles.acceptance import trace as tr
from profiles.acceptance.drafters import NgramSettings, ngram_columns
from profiles.acceptance.layer_skip import choose_skip_layers
from profiles.acceptance.prompts import Prompt, build_prompt_set


@dataclass(frozen=True)
class MeasureSettings:
    max_new_tokens: int = 128
    batch_size: int = 8
    top_k: int = 8
    max_prompt_tokens: int = 400
    skip_counts: tuple[int, ...] = (4, 7, 10)     # candidate numbers of skipped target layers
    calibration_tokens: int = 256                 # per calibration text (prompt + real body), truncated
    ngram: NgramSettings = field(default_factory=NgramSettings)
    threads: int = 2

    def __post_init__(self) -> None:
        for name in ("max_new_tokens", "batch_size", "top_k", "max_prompt_tokens", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"MeasureSettings.{name} must be >= 1, got {getattr(self, name)}")


def _log(msg: str) -> None:
    print(f"[measure {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def greedy_generate(model: Qwen2Model, prompts: Sequence[Sequence[int]], max_new_tokens: int,
                    stop_ids: frozenset[int], batch_size: int) -> list[tuple[list[int], torch.Tensor]]:
    """Greedy generation, `batch_size` prompts decoded together (ragged contexts). Per prompt: the
    generated tokens (ending at the first stop token or after max_new_tokens) and the logits [n, vocab]
    each token was chosen from."""
    results: list[tuple[list[int], torch.Tensor]] = []
    for start in range(0, len(prompts), batch_size):
        group = [list(p) for p in prompts[start:start + batch_size]]
        cache = model.new_cache(len(group), max(len(p) for p in group) + max_new_tokens)
        rows = [[model.prefill(torch.tensor(p), cache, slot, last_only=True)[-1]] for slot, p in enumerate(group)]
        tokens = [[int(torch.argmax(r[0]))] for r in rows]
        active = [s for s in range(len(group)) if tokens[s][-1] not in stop_ids and max_new_tokens > 1]
        while active:
            logits = model.decode(torch.tensor([[tokens[s][-1]] for s in active]), cache, active)[:, -1]
            for row, s in zip(logits, active):
                rows[s].append(row)
                tokens[s].append(int(torch.argmax(row)))
            active = [s for s in active if tokens[s][-1] not in stop_ids and len(tokens[s]) < max_new_tokens]
        results += [(tokens[s], torch.stack(rows[s])) for s in range(len(group))]
    return results


def position_summaries(target_logits: torch.Tensor, drafter_logits: torch.Tensor, target_tokens: torch.Tensor,
                       top_k: int, prefix: str) -> dict[str, np.ndarray | list]:
    """The per-position model-drafter columns of the trace (names prefixed with `prefix`_)."""
    p = torch.softmax(target_logits, dim=-1)
    q = torch.softmax(drafter_logits, dim=-1)
    top_q, top_tokens = torch.topk(q, top_k, dim=-1)
    own = drafter_logits.gather(1, target_tokens[:, None])
    out: dict[str, np.ndarray | list] = {
        f"{prefix}_top_tokens": list(top_tokens.to(torch.int32).numpy()),
        f"{prefix}_top_probs": list(top_q.numpy().astype(np.float32)),
        f"{prefix}_target_probs": list(p.gather(1, top_tokens).numpy().astype(np.float32)),
        f"{prefix}_rank": (drafter_logits > own).sum(dim=1).to(torch.int32).numpy(),
        f"{prefix}_q_target": q.gather(1, target_tokens[:, None])[:, 0].numpy().astype(np.float32),
    }
    for temp in tr.TEMPERATURES:
        pt, qt = torch.softmax(target_logits / temp, -1), torch.softmax(drafter_logits / temp, -1)
        out[tr.beta_column(prefix, temp)] = torch.minimum(pt, qt).sum(-1).numpy().astype(np.float32)
    return out


def measure(target: LoadedModel, draft: LoadedModel, prompts: Sequence[Prompt], settings: MeasureSettings,
            skip_layers: Sequence[int] | None = None) -> tuple[pd.DataFrame, dict]:
    """Run the measurement; returns (trace, meta). `skip_layers` None = choose on calibration prompts."""
    torch.set_num_threads(settings.threads)
    tok = target.tokenizer
    if list(tok.tokens) != list(draft.tokenizer.tokens):
        raise ValueError("target and draft GGUF files must share one tokenizer vocabulary")
    t0 = time.perf_counter()
    measured = [p for p in prompts if p.split == "measure"]
    if not measured:
        raise ValueError("prompts must contain at least one prompt with split 'measure'")
    ids = [tok.encode(p.text)[-settings.max_prompt_tokens:] for p in measured]
    meta: dict = {"settings": asdict(settings), "timings_s": {}}
    with torch.inference_mode():
        if skip_layers is None:
            calib = [tok.encode(p.text + p.reference_completion)[:settings.calibration_tokens]
                     for p in prompts if p.split == "calibration"]
            counts = [k for k in settings.skip_counts if 1 <= k <= target.config.num_layers - 2]
            meta["layer_skip"] = choose_skip_layers(target.model, calib, counts)
            skip_layers = meta["layer_skip"]["skip_layers"]
            _log(f"layer skip: {skip_layers} ({meta['layer_skip']['pattern']})")
        else:
            meta["layer_skip"] = {"skip_layers": list(skip_layers), "pattern": "given"}
        meta["timings_s"]["calibration"] = time.perf_counter() - t0
        frames, gen_seconds, pass_seconds = [], 0.0, 0.0
        for start in range(0, len(measured), settings.batch_size):
            t1 = time.perf_counter()
            batch_ids = ids[start:start + settings.batch_size]
            generated = greedy_generate(target.model, batch_ids, settings.max_new_tokens, tok.stop_ids(),
                                        settings.batch_size)
            gen_seconds += time.perf_counter() - t1
            t1 = time.perf_counter()
            for offset, (prompt_ids, (gen, target_logits)) in enumerate(zip(batch_ids, generated)):
                seq = start + offset
                frames.append(_sequence_rows(seq, measured[seq], prompt_ids, gen, target_logits, target, draft,
                                             skip_layers, settings, tok.stop_ids()))
                measured_meta = {"prompt_id": measured[seq].prompt_id, "prompt_tokens": prompt_ids,
                                 "generated_tokens": gen, "generated_text": tok.decode(gen)}
                meta.setdefault("sequences", []).append(measured_meta)
            pass_seconds += time.perf_counter() - t1
            _log(f"{min(start + settings.batch_size, len(measured))}/{len(measured)} prompts, "
                 f"generation {gen_seconds:.0f} s, drafter passes {pass_seconds:.0f} s")
    meta["timings_s"].update(generation=gen_seconds, drafter_passes=pass_seconds,
                             total=time.perf_counter() - t0)
    meta["prompts"] = [{k: v for k, v in asdict(p).items() if k != "reference_completion"} for p in prompts]
    trace = pd.concat(frames, ignore_index=True)
    return trace, meta


def base_columns(seq: int, prompt: Prompt, prompt_ids: list[int], gen: list[int], target_logits: torch.Tensor,
                 max_new_tokens: int, stop_ids: frozenset[int]) -> dict:
    """The drafter-independent columns of one sequence's rows (see `trace`)."""
    n = len(gen)
    p = torch.softmax(target_logits, dim=-1)
    ended_by_stop = gen[-1] in stop_ids and n < max_new_tokens
    left = n - np.arange(n)
    return {
        "seq": np.full(n, seq, np.int32), "prompt_id": [prompt.prompt_id] * n, "kind": [prompt.kind] * n,
        "pos": np.arange(n, dtype=np.int32), "context_tokens": (len(prompt_ids) + np.arange(n)).astype(np.int32),
        "target_token": np.asarray(gen, np.int32),
        "target_top1_prob": p.gather(1, torch.tensor(gen)[:, None])[:, 0].numpy().astype(np.float32),
        "target_entropy_nats": (-(p * torch.log(p.clamp_min(1e-30))).sum(-1)).numpy().astype(np.float32),
        "max_accept": (left if ended_by_stop else left - 1).astype(np.int32),
    }


def _sequence_rows(seq: int, prompt: Prompt, prompt_ids: list[int], gen: list[int], target_logits: torch.Tensor,
                   target: LoadedModel, draft: LoadedModel, skip_layers: Sequence[int],
                   settings: MeasureSettings, stop_ids: frozenset[int]) -> pd.DataFrame:
    text = torch.tensor(prompt_ids + gen[:-1])
    first = len(prompt_ids) - 1
    target_tokens = torch.tensor(gen)
    cols = base_columns(seq, prompt, prompt_ids, gen, target_logits, settings.max_new_tokens, stop_ids)
    draft_logits = draft.model.forward_full(text, first_logit_row=first)
    cols.update(position_summaries(target_logits, draft_logits, target_tokens, settings.top_k, "draft"))
    del draft_logits
    skip_logits = target.model.forward_full(text, skip_layers=skip_layers, first_logit_row=first)
    cols.update(position_summaries(target_logits, skip_logits, target_tokens, settings.top_k, "skip"))
    del skip_logits
    proposal_len, match_len = ngram_columns(prompt_ids, gen, settings.ngram)
    cols.update(ngram_proposal_len=proposal_len, ngram_match_len=match_len)
    return pd.DataFrame(cols)


def model_meta(loaded: LoadedModel, record_path: Path | None = None) -> dict:
    out = {"name": loaded.name, "file": Path(loaded.path).name, "config": asdict(loaded.config),
           "tensor_types": dict(loaded.tensor_types)}
    if record_path is not None and record_path.exists():
        record = json.loads(record_path.read_text())
        out.update(sha256=record["sha256"], size_bytes=record["size_bytes"], packages=record["packages"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure acceptance traces on the pinned Qwen2.5-Coder pair.")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--quick", action="store_true", help="4 code + 2 text prompts, 32 tokens each")
    parser.add_argument("--n-code", type=bounded(), default=32)
    parser.add_argument("--n-text", type=bounded(), default=8)
    parser.add_argument("--n-calibration", type=bounded(), default=2)
    parser.add_argument("--max-new-tokens", type=bounded(), default=128)
    parser.add_argument("--batch-size", type=bounded(), default=8)
    parser.add_argument("--seed", type=bounded(minimum=0), default=0)
    parser.add_argument("--skip-layers", type=str, default=None, help="comma-separated; default: calibrate")
    parser.add_argument("--target-gguf", type=Path, default=None, help="default: fetch the pinned file")
    parser.add_argument("--draft-gguf", type=Path, default=None, help="default: fetch the pinned file")
    parser.add_argument("--name", type=str, default="qwen2.5-coder-1.5b-0.5b")
    args = script_args(parser, argv)
    if args.quick:
        args.n_code, args.n_text, args.n_calibration, args.max_new_tokens = 4, 2, 1, 32
        args.name += "-quick"
    from profiles.acceptance.fetch import fetch
    target_path = args.target_gguf or fetch("target")
    draft_path = args.draft_gguf or fetch("draft")
    settings = MeasureSettings(max_new_tokens=args.max_new_tokens, batch_size=args.batch_size)
    torch.set_num_threads(settings.threads)
    prompts = build_prompt_set(args.n_code, args.n_text, args.n_calibration, args.seed)
    _log(f"loading {target_path.name} and {draft_path.name}")
    target, draft = load_gguf(target_path), load_gguf(draft_path)
    skip = [int(x) for x in args.skip_layers.split(",")] if args.skip_layers else None
    trace, meta = measure(target, draft, prompts, settings, skip)
    meta.update(target=model_meta(target, Path(str(target_path) + ".json")),
                draft=model_meta(draft, Path(str(draft_path) + ".json")),
                prompt_seed=args.seed, python=platform.python_version(), torch=torch.__version__,
                stdlib_prompts_from=f"Python {platform.python_version()} standard library")
    args.out.mkdir(parents=True, exist_ok=True)
    tr.write_trace(trace, args.out / f"{args.name}.parquet", meta)
    figures = tr.summary(trace)
    by_kind = {kind: tr.summary(part.reset_index(drop=True)) for kind, part in trace.groupby("kind")}
    (args.out / f"{args.name}.summary.json").write_text(json.dumps(
        {"summary": figures, "by_kind": by_kind, "layer_skip": meta["layer_skip"],
         "timings_s": meta["timings_s"]}, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
