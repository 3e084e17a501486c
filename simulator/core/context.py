"""The context length limit: a request's prompt plus output must fit the model's context.

The limit is `cluster.max_model_len` (vLLM's --max-model-len), by default the model's
`max_position_embeddings`, never above it. Requests over it are handled by `workload.context_overflow`:

- `error` (default): a one-line error before the run, naming the first such request;
- `drop`: the request is rejected at arrival, as vLLM's API server rejects a request whose prompt plus
  `max_tokens` exceeds the context (HTTP 400); it counts as dropped (`drop_reason` exceeds_context);
- `truncate`: the prompt keeps its first max_model_len − output tokens (the client cut the prompt's tail
  to fit); an output longer than the context itself is cut to max_model_len − 1 after a 1-token prompt.
  Prefix keys beyond the kept prompt are dropped.
"""
from __future__ import annotations

import numpy as np

from simulator.core.prefixes import PrefixKeys
from simulator.core.workload import RequestTable
from simulator.errors import ScenarioError

DROP_EXCEEDS_CONTEXT = "exceeds_context"


def context_limit(model, max_model_len: int | None) -> int:
    """The context limit of a run (ScenarioError when max_model_len exceeds the model's)."""
    limit = model.max_position_embeddings
    if max_model_len is not None:
        if max_model_len > limit:
            raise ScenarioError("cluster.max_model_len", f"{max_model_len} exceeds max_position_embeddings={limit} "
                                                         f"of {model.name}; allowed: 2..{limit}")
        limit = max_model_len
    return limit


def apply_context_limit(table: RequestTable, limit: int, mode: str, model_name: str) -> tuple[RequestTable, np.ndarray]:
    """(the table after `mode`, mask of requests to drop at arrival). Nothing changes when all fit."""
    total = table.prompt_tokens + table.output_tokens
    over = total > limit
    if not over.any():
        return table, over
    if mode == "error":
        i = int(np.argmax(over))
        raise ScenarioError("workload", f"request {i} needs {int(total[i])} tokens (prompt {int(table.prompt_tokens[i])}"
                                        f" + output {int(table.output_tokens[i])}) but the context of {model_name} is "
                                        f"{limit} (cluster.max_model_len); set workload.context_overflow: drop or "
                                        "truncate, or use a longer context")
    if mode == "drop":
        return table, over
    output = np.minimum(table.output_tokens, limit - 1)
    prompt = np.where(over, np.maximum(limit - output, 1), table.prompt_tokens)
    keys = table.prefixes
    if keys is not None:
        unit = keys.unit_tokens
        keys = PrefixKeys.from_lists([keys.of(r)[: prompt[r] // unit] if over[r] else keys.of(r)
                                      for r in range(len(prompt))], unit)
    return RequestTable(table.arrival_s, prompt, output, keys), np.zeros(len(prompt), dtype=bool)
