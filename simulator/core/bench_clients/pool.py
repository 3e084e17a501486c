"""The ShareGPT pool the benchmark clients draw from: the first two turns' token counts of every
ShareGPT V3 conversation with >= 2 turns, in file order (profiles/data/workloads/README.md; written by
`python -m profiles.acceptance.sharegpt_lengths`). Loaded once per process; its rows are checked against the
fingerprint in its metadata, so a damaged or hand-edited file is refused rather than sampled."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

POOL_PATH = Path(__file__).resolve().parents[3] / "profiles" / "data" / "workloads" / "sharegpt-first-turns.parquet"


@dataclass(frozen=True)
class Pool:
    """Token counts of turn 0 (prompt) and turn 1 (reference reply), int64, one row per conversation, file order;
    counted without special tokens (the clients' `special_tokens` are added when sampling)."""

    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    meta: dict

    def __len__(self) -> int:
        return len(self.prompt_tokens)


@cache
def sharegpt_pool(path: Path = POOL_PATH) -> Pool:
    """The shipped pool; ValueError when it is missing or its rows do not match its fingerprint."""
    import pyarrow.parquet as pq
    from profiles.acceptance.sharegpt_lengths import META_KEY, lengths_fingerprint
    if not path.is_file():
        raise ValueError(f"the ShareGPT length pool {path} is missing (regenerate it: python -m "
                         "profiles.acceptance.sharegpt_lengths --out profiles/data/workloads/)")
    table = pq.read_table(path)
    meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
    prompt = table.column("prompt_tokens").to_numpy().astype(np.int64)
    output = table.column("output_tokens").to_numpy().astype(np.int64)
    if lengths_fingerprint(prompt, output) != meta.get("fingerprint"):
        raise ValueError(f"the ShareGPT length pool {path} does not match its fingerprint; regenerate it")
    for array in (prompt, output):
        array.setflags(write=False)
    return Pool(prompt, output, meta)
