"""The requests of a `validate --engine vllm` run: real code prompts, Poisson arrivals, fixed output lengths.

Prompts are `def` line + docstring of Python standard-library functions (profiles.acceptance.prompts,
completion mode, no chat template), drawn with their own seed from stdlib files that the acceptance
measurement (profiles/data/acceptance) did not use, so that the acceptance the simulator is given was
measured on other prompts. They are tokenized with the Qwen2.5 tokenizer read from the pinned GGUF file
(models.torch_impl; the same vocabulary as the converted HF folder vLLM loads). Arrivals are a Poisson
process of `rate_rps` (numpy default_rng(seed)); every request asks for exactly `output_tokens` tokens
(`ignore_eos`), so output lengths are inputs of both sides, not outcomes.

    python -m scenarios.validation.vllm.workload --requests 16 --rate 0.2 --output-tokens 48 --seed 5 --out W.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from models.errors import bounded, doc_description, run_script, script_args
from models.files import ready_to_write
from simulator.results.output_folder import file_flag

ACCEPTANCE_TRACE = Path(__file__).resolve().parents[3] / "profiles" / "data" / "acceptance" / \
    "qwen2.5-coder-1.5b-0.5b.parquet"


def acceptance_files() -> set[str]:
    """Stdlib files whose prompts the acceptance measurement used (prompt ids `code:<file>:<function>`)."""
    import pyarrow.parquet as pq
    ids = pq.read_table(ACCEPTANCE_TRACE, columns=["prompt_id"]).column("prompt_id").unique().to_pylist()
    return {i.split(":")[1] for i in ids if i.startswith("code:")}


def held_out_prompts(n: int, seed: int):
    from profiles.acceptance.prompts import code_prompts
    used = acceptance_files()
    pool = code_prompts(n + len(used), 0, seed)
    prompts = [p for p in pool if p.source not in used][:n]
    if len(prompts) < n:
        raise ValueError(f"only {len(prompts)} held-out prompts; asked for {n}")
    return prompts


def build_workload(n: int, rate_rps: float, output_tokens: int, seed: int, tokenizer, max_prompt_tokens: int) -> dict:
    prompts = held_out_prompts(2 * n, seed)
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate_rps, size=n)
    arrivals = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    requests = []
    for prompt in prompts:
        ids = tokenizer.encode(prompt.text)
        if len(ids) > max_prompt_tokens:
            continue
        i = len(requests)
        requests.append({"id": f"r{i:03d}", "arrival_s": round(float(arrivals[i]), 6), "prompt_token_ids": ids,
                         "max_tokens": output_tokens, "prompt_id": prompt.prompt_id})
        if len(requests) == n:
            break
    if len(requests) < n:
        raise ValueError(f"only {len(requests)} prompts are at most {max_prompt_tokens} tokens")
    return {"seed": seed, "rate_rps": rate_rps, "output_tokens": output_tokens,
            "prompts": "held-out stdlib code prompts (scenarios/validation/vllm/workload.py)", "requests": requests}


def acceptance_set_workload(tokenizer, output_tokens: int) -> dict:
    """The acceptance measurement's own code prompts (the trace's metadata), all arriving at t = 0: vLLM's
    acceptance on exactly the prompts the trace was measured on (a cross-check of the measurement, not a
    validation workload)."""
    from profiles.acceptance.trace import load_trace
    meta = load_trace(ACCEPTANCE_TRACE).attrs["meta"]
    prompts = [p for p in meta["prompts"] if p["split"] == "measure" and p["kind"] == "code"]
    return {"seed": None, "rate_rps": None, "output_tokens": output_tokens,
            "prompts": "the acceptance trace's measured code prompts (profiles/data/acceptance)",
            "requests": [{"id": f"a{i:03d}", "arrival_s": 0.0, "prompt_token_ids": tokenizer.encode(p["text"]),
                          "max_tokens": output_tokens, "prompt_id": p["prompt_id"]} for i, p in enumerate(prompts)]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=doc_description(__doc__))
    p.add_argument("--requests", type=bounded(), default=16)
    p.add_argument("--rate", type=bounded(float, 0.0, exclusive=True), default=0.2, help="Poisson arrival rate, requests per second")
    p.add_argument("--output-tokens", type=bounded(), default=48)
    p.add_argument("--max-prompt-tokens", type=bounded(), default=384)
    p.add_argument("--seed", type=bounded(minimum=0), default=5)
    p.add_argument("--gguf", default=None, help="GGUF file whose tokenizer to use (default: the pinned draft)")
    p.add_argument("--acceptance-set", action="store_true",
                   help="the acceptance trace's own prompts, all at t = 0 (a cross-check, not a validation workload)")
    p.add_argument("--out", type=file_flag("--out"), required=True)
    args = script_args(p, argv)
    from models.torch_impl.gguf_loader import read_fields
    from models.torch_impl.tokenizer import tokenizer_from_gguf_fields
    from gguf import GGUFReader
    from profiles.acceptance.fetch import fetch
    gguf = Path(args.gguf) if args.gguf else fetch("draft")
    tokenizer = tokenizer_from_gguf_fields(read_fields(GGUFReader(str(gguf))))
    workload = acceptance_set_workload(tokenizer, args.output_tokens) if args.acceptance_set else \
        build_workload(args.requests, args.rate, args.output_tokens, args.seed, tokenizer, args.max_prompt_tokens)
    ready_to_write(args.out).write_text(json.dumps(workload) + "\n")
    lengths = [len(r["prompt_token_ids"]) for r in workload["requests"]]
    print(f"{args.out}: {len(lengths)} requests, prompts {min(lengths)}-{max(lengths)} tokens, "
          f"last arrival {workload['requests'][-1]['arrival_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
