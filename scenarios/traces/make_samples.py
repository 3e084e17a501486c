"""Write the small sample traces of this folder, one per public format (`python3 -m scenarios.traces.make_samples`).

The samples are written by this script in each format's layout (column names, time encoding, prefix
block ids); they are not excerpts of the published traces, and their numbers are drawn from seeded
distributions chosen to look like the public traces' shape (lengths, burstiness, prefix reuse), not
fitted to them. What each format looks like is documented in `simulator/core/traces/formats.py`.

- `azure_sample.csv`: 300 requests of an Azure LLM inference "code" day in miniature — date-and-time
  stamps with 7 fraction digits, long prompts (lognormal, median 1,900 tokens), short outputs.
- `burstgpt_sample.csv`: 300 BurstGPT log rows — seconds from the log's start, ChatGPT and GPT-4
  conversation/API logs, bursty arrivals (gamma gaps, cv 3), and 5 % failed requests logged with 0
  response tokens (the importer skips them).
- `mooncake_sample.jsonl`: 400 Mooncake-style requests — ms timestamps, 512-token prefix blocks with
  reuse: 12 long shared contexts (documents / system prompts, 4–10 blocks, Zipf popularity) and
  multi-turn follow-ups (30 %) whose prompt is an earlier request's prompt and answer plus a new message
  (its full blocks keep their ids).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20261124


def _lognormal(rng, n, median, sigma, low, high):
    return np.clip(np.rint(np.exp(np.log(median) + sigma * rng.standard_normal(n))), low, high).astype(int)


def azure(rng: np.random.Generator, n: int = 300) -> str:
    gaps = rng.exponential(0.45, n)
    start = np.datetime64("2023-11-16T18:15:46.6805900")
    stamps = start + (np.cumsum(gaps) * 1e7).astype("timedelta64[100ns]") - np.timedelta64(int(gaps[0] * 1e7), "100ns")
    prompt = _lognormal(rng, n, 1900, 0.9, 8, 7437)
    output = _lognormal(rng, n, 24, 1.0, 1, 1899)
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for t, p, o in zip(stamps, prompt, output):
        lines.append(f"{str(t).replace('T', ' ')[:27]},{p},{o}")  # 100 ns digits, as the published files
    return "\n".join(lines) + "\n"


def burstgpt(rng: np.random.Generator, n: int = 300) -> str:
    shape = 1.0 / 9.0  # cv 3
    times = np.floor(np.cumsum(rng.gamma(shape, 2.0 / shape, n))).astype(int)
    prompt = _lognormal(rng, n, 600, 1.1, 1, 16000)
    output = _lognormal(rng, n, 220, 0.9, 1, 4000)
    failed = rng.random(n) < 0.05
    output[failed] = 0
    model = np.where(rng.random(n) < 0.8, "ChatGPT", "GPT-4")
    kind = np.where(rng.random(n) < 0.7, "Conversation log", "API log")
    lines = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"]
    for t, m, p, o, k in zip(times, model, prompt, output, kind):
        lines.append(f"{t},{m},{p},{o},{p + o},{k}")
    return "\n".join(lines) + "\n"


def mooncake(rng: np.random.Generator, n: int = 400, block: int = 512) -> str:
    next_id = 0

    def fresh(k: int) -> list[int]:
        nonlocal next_id
        ids = list(range(next_id, next_id + k))
        next_id += k
        return ids

    contexts = [fresh(int(k)) for k in rng.integers(4, 11, size=12)]
    popularity = np.arange(1, 13, dtype=float) ** -1.0
    popularity /= popularity.sum()
    times = np.cumsum(rng.exponential(400.0, n)).astype(int)
    times -= times[0]
    rows: list[dict] = []
    for t in times:
        if rows and rng.random() < 0.3:      # a follow-up turn: an earlier request's prompt and answer + a message
            parent = rows[int(rng.integers(max(0, len(rows) - 40), len(rows)))]
            head = list(parent["hash_ids"][: parent["input_length"] // block])   # its full blocks
            prompt = parent["input_length"] + parent["output_length"] + int(rng.integers(20, 400))
        else:                                 # a shared context + the request's own text
            head = list(contexts[int(rng.choice(12, p=popularity))])
            prompt = len(head) * block + int(rng.integers(50, 2 * block))
        ids = head + fresh(-(-prompt // block) - len(head))
        output = int(_lognormal(rng, 1, 180, 0.8, 4, 1500)[0])
        if prompt > 30000:                    # keep the sample's contexts moderate
            continue
        rows.append({"timestamp": int(t), "input_length": prompt, "output_length": output, "hash_ids": ids})
    return "".join(json.dumps(r) + "\n" for r in rows)


def main() -> None:
    rng = np.random.default_rng(SEED)
    a, b, m = rng.spawn(3)
    (HERE / "azure_sample.csv").write_text(azure(a))
    (HERE / "burstgpt_sample.csv").write_text(burstgpt(b))
    (HERE / "mooncake_sample.jsonl").write_text(mooncake(m))


if __name__ == "__main__":
    main()
