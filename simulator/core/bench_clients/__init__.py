"""Request lengths drawn as a benchmark client draws them (`workload.dataset`): published serving runs are
measured with `vllm bench serve` or SGLang's `bench_serving`, each of which picks every request's prompt and
output length by its own rules. A client is one module with a `SAMPLERS` dict (dataset name -> function
`(spec, n, seed) -> (prompt_tokens, output_tokens)`, engine-side token counts, int64, >= 1); `CLIENTS` lists them.

The client's own `--seed` is `seed` when a scenario gives it (the client's draw, e.g. `seed: 0` for vLLM's
default); otherwise one is drawn from the scenario's prompt-length stream, so the scenario's seed decides.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.core.bench_clients import sglang, vllm

CLIENTS = {"vllm": vllm, "sglang": sglang}
#: Seeds drawn from a scenario's stream are below this (NumPy's legacy RandomState takes seeds < 2**32).
SEED_LIMIT = 2**32


@dataclass(frozen=True)
class BenchDataset:
    """`workload.dataset` (simulator.config.workload.BenchDatasetConfig): `client` (vllm | sglang), `name`
    (sharegpt | random), the client's `release` (None: the newest modelled), its `--seed`, the random
    dataset's `input_len`/`output_len`/`range_ratio` (None: the client's default), a fixed ShareGPT `output_len`,
    `special_tokens` (the tokenizer's `num_special_tokens_to_add()`: 1 for Llama's BOS, 0 for Qwen) and SGLang's
    `context_len` (`--sharegpt-context-len`)."""

    client: str
    name: str
    release: str | None = None
    seed: int | None = None
    input_len: int | None = None
    output_len: int | None = None
    range_ratio: float | None = None
    special_tokens: int = 0
    context_len: int | None = None

    def sample_pairs(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(prompt_tokens, output_tokens) of `n` requests; `rng` gives the client's seed when none is set."""
        seed = self.seed if self.seed is not None else int(rng.integers(SEED_LIMIT))
        return CLIENTS[self.client].SAMPLERS[self.name](self, n, seed)
