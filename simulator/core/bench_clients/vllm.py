"""Request lengths as vLLM's benchmark client draws them (`vllm bench serve`, formerly
`benchmarks/benchmark_serving.py`; `benchmarks/benchmark_throughput.py` samples ShareGPT by the same rule).

Sources (vllm-project/vllm):
- `vllm/benchmarks/datasets.py` at commit 0056b87 (`RandomDataset.sample`/`get_sampling_params`,
  `ShareGPTDataset.load_data`/`sample`, `BenchmarkDataset.maybe_oversample_requests`) and
  `vllm/benchmarks/dataset_utils.py` `is_valid_sequence`;
- PR #16126 "Fix range_ratio Bug in RandomDataset" (merged 2025-04, between v0.8.3 of 2025-04-06 and v0.8.4 of
  2025-04-14): before it, `--random-range-ratio` r drew lengths from [int(L·r), L] with default r = 1.0 (every
  request exactly L); from it, [L(1 − r), L(1 + r)] with default r = 0.0 and r < 1 required;
- PR #17408 "Fixed prompt length for random dataset": the prompt range is built around L − s, s = the tokenizer's
  `num_special_tokens_to_add()` (1 for Llama's BOS), so that the server, which adds the BOS again, sees L.

`random` (release >= 0.8.4, `RandomDataset.get_sampling_params`): with L' = max(0, L − s),
input ~ U{floor(L'(1 − r)), ceil(L'(1 + r))}, output ~ U{max(1, floor(O(1 − r))), max(1, ceil(O(1 + r)))}, both
inclusive, drawn as `numpy.random.default_rng(seed).integers` (inputs for every request, then outputs); the
engine's prompt is the sampled length + s (the server's special tokens). Approximation, named: releases from
0.8.4 until the module moved to `default_rng` drew from the same ranges with int() bounds and the global NumPy
stream (`np.random.seed(seed)`; `randint`): the same distribution up to one token at each bound, other draws for
a given seed; PR #17408's special-token subtraction is applied to every release >= 0.8.4. The prompt text's
decode/re-encode (which may move a prompt by a token) is not modelled.

`random` (release < 0.8.4, `benchmark_serving.py` `sample_random_requests`):
input ~ U{int(L·r), L}, output ~ U{int(O·r), O} (`np.random.seed(seed)` then `randint`, inputs then outputs);
the engine's prompt is the sampled length + s. A drawn length of 0 (r < 1/L) is a request the engine rejects;
draftsim keeps it as 1 token (named approximation: such requests are rare unless r is 0).

`sharegpt` (every release): conversations with >= 2 turns in file order, `random.seed(seed); random.shuffle`,
then in that order each (turn 0, turn 1) with prompt p = tokens(turn 0) + s and output o = tokens(turn 1) + s
(`tokenizer(text).input_ids` adds the special tokens; `output_len` replaces o, `--sharegpt-output-len`) is kept
when `is_valid_sequence(p, o)`: p >= 4, o >= 4 (not checked for a fixed `output_len`), p <= 1024 and p + o <= 2048,
until `n` are kept; fewer are oversampled with `random.seed(seed)` and one `random.choice` per missing request
(`maybe_oversample_requests`). Of the 17,400 shipped conversations 15,460 pass (15,765 with s = 1), so oversampling
starts beyond that many requests. Approximation, named: releases whose ShareGPT sampler predates the
`BenchmarkDataset` classes (benchmark_serving.py `sample_sharegpt_requests`) did not oversample, and 0.8.x drew
the missing ones with one `random.choices` call: both only matter beyond 15,460 requests.
"""
from __future__ import annotations

import math
import random

import numpy as np
from packaging.version import Version

from simulator.core.bench_clients.pool import sharegpt_pool
from simulator.core.bench_clients.walk import first_valid, shuffled_order

#: The first release whose `--random-range-ratio` is symmetric around the length (PR #16126).
SYMMETRIC_RANGE_FROM = Version("0.8.4")
#: The first release with each dataset: ShareGPT is the sampler of benchmarks/benchmark_serving.py, in the
#: repository from the first release on (0.1.0; PyPI's 0.0.1 is a placeholder); `random` came with PR #5857
#: ("add benchmark for fix length input and output", merged 2024-07-07), first released in 0.5.2.
FIRST_RELEASES = {"sharegpt": Version("0.1.0"), "random": Version("0.5.2")}
#: vLLM's `--seed` default (vllm bench serve, benchmark_serving.py).
DEFAULT_SEED = 0
#: vLLM's `--num-prompts` default (vllm bench serve, benchmark_serving.py, benchmark_throughput.py).
DEFAULT_NUM_PROMPTS = 1000
# is_valid_sequence's defaults (vllm/benchmarks/dataset_utils.py): min_len, max_prompt_len, max_total_len
MIN_LEN, MAX_PROMPT_LEN, MAX_TOTAL_LEN = 4, 1024, 2048


def symmetric_range(release: str | None) -> bool:
    """Whether `release` (None: the newest, whose rules apply when a scenario names none) draws symmetric ranges."""
    return release is None or Version(release) >= SYMMETRIC_RANGE_FROM


def default_range_ratio(release: str | None) -> float:
    return 0.0 if symmetric_range(release) else 1.0


def random_bounds(spec) -> tuple[tuple[int, int], tuple[int, int]]:
    """((input low, high), (output low, high)), both inclusive, of the client's sampled lengths (before the
    server's special tokens)."""
    r = default_range_ratio(spec.release) if spec.range_ratio is None else spec.range_ratio
    if not symmetric_range(spec.release):
        return (int(spec.input_len * r), spec.input_len), (int(spec.output_len * r), spec.output_len)
    real = max(0, spec.input_len - spec.special_tokens)
    out_low = max(math.floor(spec.output_len * (1 - r)), 1)
    out_high = max(math.ceil(spec.output_len * (1 + r)), 1)
    return (math.floor(real * (1 - r)), math.ceil(real * (1 + r))), (out_low, out_high)


def random_lengths(spec, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    (in_low, in_high), (out_low, out_high) = random_bounds(spec)
    if symmetric_range(spec.release):
        rng = np.random.default_rng(seed)
        prompt = rng.integers(in_low, in_high + 1, size=n)
        output = rng.integers(out_low, out_high + 1, size=n)
    else:
        state = np.random.RandomState(seed)   # (np.random.seed(seed) + np.random.randint draw the same)
        prompt = state.randint(in_low, in_high + 1, size=n)
        output = state.randint(out_low, out_high + 1, size=n)
    prompt = np.maximum(prompt.astype(np.int64), 1) + spec.special_tokens
    return prompt, np.maximum(output.astype(np.int64), 1)


def sharegpt_lengths(spec, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    pool = sharegpt_pool()
    prompt = pool.prompt_tokens + spec.special_tokens
    output = np.full(len(pool), spec.output_len, np.int64) if spec.output_len is not None \
        else pool.output_tokens + spec.special_tokens
    valid = (prompt >= MIN_LEN) & (prompt <= MAX_PROMPT_LEN) & (prompt + output <= MAX_TOTAL_LEN)
    if spec.output_len is None:
        valid &= output >= MIN_LEN
    kept = list(first_valid(shuffled_order(len(pool), seed), valid, n))
    if len(kept) < n:   # maybe_oversample_requests: random.seed(seed), one random.choice per missing request
        chooser = random.Random(seed)
        first = list(kept)
        kept += [chooser.choice(first) for _ in range(n - len(first))]
    rows = np.asarray(kept, dtype=np.int64)
    return prompt[rows], output[rows]


SAMPLERS = {"random": random_lengths, "sharegpt": sharegpt_lengths}
