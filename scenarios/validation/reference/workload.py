"""Validation workloads: offline request traces (every request arrives at t = 0).

Why offline: with all arrivals at 0 the scheduler's decisions depend only on request state, never on how
long a step took, so the reference engine and the simulator run the *same* step sequence and every step
can be matched one to one (with wall-clock arrivals a few % of timing error moves an arrival across a
step boundary and the sequences diverge). Continuous batching still happens: `max_batch_size` is below
the request count, so waiting requests are admitted (prefill steps) as running ones finish.

Lengths: prompts log-uniform in [prompt_min, prompt_max] (covers short and long prefills evenly in log
space), outputs uniform in [output_min, output_max]; integer-rounded. Seeded, so a trace file is
reproducible from its parameters (see scenarios/validation/README.md).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


def offline_trace(num_requests: int, prompt_range: tuple[int, int], output_range: tuple[int, int],
                  seed: int) -> dict[str, np.ndarray]:
    """Columns arrival_s (all 0), prompt_tokens, output_tokens of `num_requests` requests."""
    if num_requests < 1:
        raise ValueError(f"num_requests must be >= 1, got {num_requests}")
    for name, (lo, hi) in (("prompt_range", prompt_range), ("output_range", output_range)):
        if not 1 <= lo <= hi:
            raise ValueError(f"{name} must satisfy 1 <= low <= high, got {(lo, hi)}")
    rng = np.random.default_rng(seed)
    prompt = np.exp(rng.uniform(np.log(prompt_range[0]), np.log(prompt_range[1] + 1), num_requests))
    prompt = np.clip(np.floor(prompt), prompt_range[0], prompt_range[1]).astype(np.int64)
    output = rng.integers(output_range[0], output_range[1] + 1, num_requests).astype(np.int64)
    return {"arrival_s": np.zeros(num_requests), "prompt_tokens": prompt, "output_tokens": output}


def write_offline_trace(path: str | Path, num_requests: int, prompt_range: tuple[int, int],
                        output_range: tuple[int, int], seed: int) -> Path:
    """Write `offline_trace(...)` as a trace CSV (arrival_s, prompt_tokens, output_tokens)."""
    cols = offline_trace(num_requests, prompt_range, output_range, seed)
    path = Path(path)
    lines = ["arrival_s,prompt_tokens,output_tokens"]
    lines += [f"{a:.1f},{p},{o}" for a, p, o in zip(cols["arrival_s"], cols["prompt_tokens"], cols["output_tokens"])]
    path.write_text("\n".join(lines) + "\n")
    return path
