"""The context length limit: a request's prompt plus output must fit the model's context.

The limit is `cluster.max_model_len` (vLLM's --max-model-len, SGLang's --context-length, TensorRT-LLM's
max_seq_len), by default the context the deployment's engine and release derive from the model's config.json
(max_position_embeddings, the other length keys and rope scaling: profiles.engine_time.context_length), and
above it only where that engine serves a longer one given by hand. Requests over it are handled by `workload.context_overflow`:

- `error` (default): a one-line error before the run, naming the first such request (before any is drawn,
  `check_least_request`, when a shared prefix or a session's turns make even the smallest request too long);
- `drop`: the request is rejected at arrival, as vLLM's API server rejects a request whose prompt plus
  `max_tokens` exceeds the context (HTTP 400); it counts as dropped (`drop_reason` exceeds_context);
- `truncate`: the prompt keeps its first max_model_len − output tokens (the client cut the prompt's tail
  to fit); an output longer than the context itself is cut to max_model_len − 1 after a 1-token prompt.
  Prefix keys beyond the kept prompt are dropped.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simulator.errors import ScenarioError

if TYPE_CHECKING:
    from simulator.core.workload import RequestTable

DROP_EXCEEDS_CONTEXT = "exceeds_context"


def _modelled(release: tuple[str, str | None]) -> tuple[str, str]:
    """(framework, version) of `release`, a version of None read as the release modelled where none is given."""
    from profiles.engine_time.frameworks import release_or_modelled
    from models.errors import FieldError
    framework, version = release
    try:
        return framework, release_or_modelled(framework, version)
    except FieldError:   # (an engine without engine-time entries: the rule keyed by framework alone)
        return framework, version or "0"


def context_and_rule(model, max_model_len: int | None, release: tuple[str, str | None] = ("vllm", None),
                     allow_long: bool = False) -> tuple[int, str]:
    """(the context limit of a run on `release` (framework, version; None: the release modelled where none is given),
    the config keys and engine rule it was derived from, "" where `max_model_len` gives it): `max_model_len`, else
    the engine's derived limit (profiles.engine_time.context_length.derived_context); ScenarioError naming
    cluster.max_model_len where the engine refuses or cuts the value given (`allow_long`: the engine's variable
    that allows a longer one is set, cluster.engine.allow_long_context)."""
    from profiles.engine_time.context_length import check_given, derived_context
    from profiles.engine_time.support import UnsupportedCombination
    try:
        if max_model_len is None:
            return derived_context(*_modelled(release), model)
        check_given(*_modelled(release), model, max_model_len, allow_long)
    except UnsupportedCombination as exc:
        raise ScenarioError(exc.field, exc.message) from None
    return max_model_len, ""


def check_least_request(workload, context: str, limit: int, base_dir, field: str = "workload") -> None:
    """Before any request is drawn, from the smallest value of each length distribution: ScenarioError when
    a shared system prompt cannot fit with a prompt and an output token (whatever `context_overflow` says), or,
    with context_overflow 'error', when the smallest request (with sessions: the smallest session's last
    turn, which re-sends every turn before it) exceeds the context, which `apply_context_limit` would say only
    after every turn of every session was drawn. A session that is only likely to outgrow the context is left to
    that check. `workload`: a simulator.core.workload.Workload; `context`: e.g. "the context of llama-3-8b"."""
    shared, sessions = workload.shared_prefix, workload.sessions
    if shared is None and sessions is None:
        return
    system = shared.tokens if shared is not None else 0
    if system > limit - 2:
        raise ScenarioError(f"{field}.shared_prefix.tokens", f"{system} tokens of system prompt before every prompt, "
                            f"but {context} is {limit}; allowed: at most {limit - 2} (a prompt and an output token "
                            "must fit too)")
    if workload.context_overflow != "error":
        return
    message = workload.prompt_tokens.least_and_mean(base_dir, f"{field}.prompt_tokens")[0]
    output = workload.output_tokens.least_and_mean(base_dir, f"{field}.output_tokens")[0]
    turns = sessions.turns.least_and_mean(base_dir, f"{field}.sessions.turns")[0] if sessions is not None else 1
    least = system + turns * (message + output)
    if least <= limit:
        return
    fix = "or set workload.context_overflow: drop or truncate"
    if system + message + output > limit:
        raise ScenarioError(f"{field}.shared_prefix.tokens" if system else field,
                            f"every request needs at least {system + message + output} tokens (system prompt "
                            f"{system} + prompt {message} + output {output}, the distributions' smallest) but "
                            f"{context} is {limit}; allowed here: a system prompt of at most "
                            f"{max(limit - message - output, 0)} tokens, {fix}")
    raise ScenarioError(f"{field}.sessions.turns", f"every session has at least {turns} turns and each turn re-sends "
                        f"the turns before it: the last needs at least {least:,} tokens (system prompt {system} + "
                        f"{turns} × (message {message} + output {output}), the distributions' smallest) but {context} "
                        f"is {limit}; allowed here: at most {(limit - system) // (message + output)} turns, {fix}")


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
    from simulator.core.prefixes import PrefixKeys
    from simulator.core.workload import RequestTable   # imported here: `draftsim estimate` needs only context_and_rule
    output = np.minimum(table.output_tokens, limit - 1)
    prompt = np.where(over, np.maximum(limit - output, 1), table.prompt_tokens)
    keys = table.prefixes
    if keys is not None:
        unit = keys.unit_tokens
        keys = PrefixKeys.from_lists([keys.of(r)[: prompt[r] // unit] if over[r] else keys.of(r)
                                      for r in range(len(prompt))], unit)
    return RequestTable(table.arrival_s, prompt, output, keys), np.zeros(len(prompt), dtype=bool)
