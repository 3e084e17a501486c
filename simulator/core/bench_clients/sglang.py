"""Request lengths as SGLang's benchmark client draws them (`python -m sglang.bench_serving`).

Source: sgl-project/sglang `python/sglang/bench_serving.py` at commit 0033168f (`run_benchmark`: `random.seed(seed)`
and `np.random.seed(seed)`, `--seed` default 1; `sample_random_requests`; `sample_sharegpt_requests`).

`random`: input ~ U{max(int(L·r), 1), L}, output ~ U{int(O·r), O} (`np.random.randint`, inputs for every request,
then outputs), `--random-range-ratio` r default 0.0: unlike vLLM since 0.8.4 (symmetric around L, default every
request exactly L), SGLang's default draws lengths uniformly from 1..L (mean about L/2; sgl-project/sglang issue
#7253). The engine's prompt is the sampled length + s, the special tokens the server's tokenizer adds to the
prompt text (1 for Llama's BOS). A drawn output of 0 tokens (r < 1/O) is kept as 1 token (named approximation:
draftsim's requests decode at least one token).

`sharegpt`: conversations with >= 2 turns in file order, `random.shuffle`, then in that order each (turn 0,
turn 1) with p = tokens(turn 0) + s, o = tokens(turn 1) + s (`tokenizer.encode` adds the special tokens;
`output_len` replaces o, `--sharegpt-output-len`, >= 4) is kept unless p < 2 or o < 2, or p + o > `context_len`
(`--sharegpt-context-len`, default none), until `n` are kept. SGLang does not oversample: a run that asks for
more requests than pass is refused. Releases before PR #2922 ("Improve benchmark scripts", merged 2025-01-16,
which added --sharegpt-context-len) pruned as vLLM does: p < 4 or o < 4, p > 1024, or p + o > 2048 unless
`output_len` is fixed. Approximation, named: that rule is applied to releases before 0.4.2 (the 0.4.1.postN
releases of January 2025 are taken as before the PR); the current rule (commit 0033168f) to 0.4.2 and later
(its `< 2` may have been `< 4` in the first releases after the PR). Not modelled: `--apply-chat-template`.
"""
from __future__ import annotations

import numpy as np
from packaging.version import Version

from simulator.core.bench_clients.pool import sharegpt_pool
from simulator.core.bench_clients.walk import first_valid, shuffled_order

#: The first release with each dataset: bench_serving.py (PR #657, merged 2024-07-19, renamed by PR #694) ships
#: in the sglang 0.1.22 wheel with both `sharegpt` and `random` (its --dataset-name choices); 0.1.21 has none.
FIRST_RELEASES = {"sharegpt": Version("0.1.22"), "random": Version("0.1.22")}
#: SGLang's `--seed` and `--random-range-ratio` defaults (bench_serving.py argument parser).
DEFAULT_SEED = 1
DEFAULT_RANGE_RATIO = 0.0
#: SGLang's `--num-prompts` default (bench_serving.py argument parser).
DEFAULT_NUM_PROMPTS = 1000
#: sample_sharegpt_requests: prompts and outputs shorter than this are pruned; a fixed output below 4 is refused.
MIN_LEN = 2
MIN_FIXED_OUTPUT_LEN = 4
#: Releases before this prune ShareGPT as vLLM does (PR #2922, see the module docstring).
CONTEXT_LEN_FROM = Version("0.4.2")
LEGACY_MIN_LEN, LEGACY_MAX_PROMPT_LEN, LEGACY_MAX_TOTAL_LEN = 4, 1024, 2048


def legacy_filter(release: str | None) -> bool:
    """Whether `release` (None: the newest) prunes ShareGPT by the 4/1024/2048 rule."""
    return release is not None and Version(release) < CONTEXT_LEN_FROM


def random_bounds(spec) -> tuple[tuple[int, int], tuple[int, int]]:
    r = DEFAULT_RANGE_RATIO if spec.range_ratio is None else spec.range_ratio
    return (max(int(spec.input_len * r), 1), spec.input_len), (int(spec.output_len * r), spec.output_len)


def random_lengths(spec, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    (in_low, in_high), (out_low, out_high) = random_bounds(spec)
    state = np.random.RandomState(seed)   # (np.random.seed(seed) + np.random.randint draw the same)
    prompt = state.randint(in_low, in_high + 1, size=n).astype(np.int64)
    output = state.randint(out_low, out_high + 1, size=n).astype(np.int64)
    return prompt + spec.special_tokens, np.maximum(output, 1)


class TooFewRequests(ValueError):
    """SGLang keeps fewer ShareGPT requests than asked for (it does not oversample)."""


def sharegpt_lengths(spec, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    pool = sharegpt_pool()
    prompt = pool.prompt_tokens + spec.special_tokens
    output = np.full(len(pool), spec.output_len, np.int64) if spec.output_len is not None \
        else pool.output_tokens + spec.special_tokens
    if legacy_filter(spec.release):
        valid = (prompt >= LEGACY_MIN_LEN) & (output >= LEGACY_MIN_LEN) & (prompt <= LEGACY_MAX_PROMPT_LEN)
        if spec.output_len is None:
            valid &= prompt + output <= LEGACY_MAX_TOTAL_LEN
    else:
        valid = (prompt >= MIN_LEN) & (output >= MIN_LEN)
    if spec.context_len is not None:
        valid &= prompt + output <= spec.context_len
    rows = first_valid(shuffled_order(len(pool), seed), valid, n)
    if len(rows) < n:
        raise TooFewRequests(f"SGLang's ShareGPT sampler keeps {len(rows)} of the {len(pool)} conversations draftsim "
                             f"ships, fewer than the {n} requests asked for (it does not oversample)")
    return prompt[rows], output[rows]


SAMPLERS = {"random": random_lengths, "sharegpt": sharegpt_lengths}
