"""Requests that share prompt prefixes: the content keys prefix caching matches on, and the generated
workloads that have them (shared system prompts, multi-turn sessions).

A request's token stream (prompt, then output) is cut into *units* of `unit_tokens` tokens (a multiple of
the KV block size). `PrefixKeys` gives, per request, the content keys of the first units of its stream:
two requests whose first j keys are equal have the same first j·unit_tokens tokens (keys are chained, as
vLLM's block hashes are: a key stands for all the tokens up to the end of its unit). Units past a
request's keys are private to it (simulator.core.kv.prefix_cache).

Generated sharing (`workload.shared_prefix`, `workload.sessions`; units = the scheduler's block size):

- `shared_prefix`: `prompts` system prompts of `tokens` tokens; every request's prompt is one of them
  (uniformly, or by Zipf popularity ∝ rank^−zipf_exponent) followed by its own `prompt_tokens`.
- `sessions`: multi-turn conversations. The arrival process starts sessions; a session has `turns`
  requests (a length distribution); turn k+1 arrives an exponential think time (mean `think_time_s`)
  after turn k arrived, and its prompt is turn k's prompt and output followed by a new message of
  `prompt_tokens` tokens (with `shared_prefix`, the first turn starts with a system prompt).
  Approximation: arrivals are open-loop (set before the run), so a turn that arrives before the
  previous one finished finds only the previous prompt cached, not its output; choose think times
  longer than response times, as in real chats, to avoid it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

UNIT_BITS = 24                      # up to 2^24 units per stream (4 G tokens at 256-token units)
SESSION_SPACE = 1 << 40             # keys of session streams start here (system prompts below)


@dataclass(frozen=True)
class PrefixKeys:
    """Ragged per-request unit keys: request r's are keys[offsets[r]:offsets[r + 1]] (int64, >= 0)."""

    keys: np.ndarray
    offsets: np.ndarray
    unit_tokens: int

    def __post_init__(self) -> None:
        if self.unit_tokens < 1 or self.offsets[0] != 0 or self.offsets[-1] != len(self.keys) or \
                np.any(np.diff(self.offsets) < 0):
            raise ValueError("PrefixKeys: offsets must rise from 0 to len(keys) and unit_tokens be >= 1")
        for a in (self.keys, self.offsets):
            a.setflags(write=False)

    @staticmethod
    def from_lists(rows: list, unit_tokens: int) -> "PrefixKeys":
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        keys = np.concatenate([np.asarray(r, dtype=np.int64) for r in rows]) if len(rows) and offsets[-1] \
            else np.zeros(0, dtype=np.int64)
        return PrefixKeys(keys, offsets, int(unit_tokens))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def of(self, r: int) -> np.ndarray:
        return self.keys[self.offsets[r]:self.offsets[r + 1]]

    def take(self, rows: np.ndarray) -> "PrefixKeys":
        """The keys of `rows`, in that order."""
        return PrefixKeys.from_lists([self.of(int(r)) for r in rows], self.unit_tokens)


@dataclass(frozen=True)
class SharedPrefix:
    """System prompts shared by the requests (module docstring): `popularity` uniform | zipf."""

    prompts: int
    tokens: int
    popularity: str = "uniform"
    zipf_exponent: float = 1.0

    def probabilities(self) -> np.ndarray:
        if self.popularity == "uniform":
            return np.full(self.prompts, 1.0 / self.prompts)
        weights = np.arange(1, self.prompts + 1, dtype=float) ** -self.zipf_exponent
        return weights / weights.sum()


@dataclass(frozen=True)
class Sessions:
    """Multi-turn conversations (module docstring): `turns` a length distribution (simulator.core.lengths)."""

    turns: object
    think_time_s: float


def _system_keys(prompt: int, units: int) -> list[int]:
    return [(prompt << UNIT_BITS) + j for j in range(units)]


def shared_prefix_table(prompt: np.ndarray, cfg: SharedPrefix, rng: np.random.Generator,
                        unit_tokens: int) -> tuple[np.ndarray, PrefixKeys]:
    """Each request's prompt grows by a system prompt drawn from `cfg`; returns the new prompt lengths and
    the keys (the system prompt's full units)."""
    choice = rng.choice(cfg.prompts, size=len(prompt), p=cfg.probabilities())
    units = cfg.tokens // unit_tokens   # (as arrays: Python lists of keys took 65 s for 200 prompts of 10^7 tokens)
    keys = ((choice.astype(np.int64) << UNIT_BITS)[:, None] + np.arange(units, dtype=np.int64)).ravel()
    return prompt + cfg.tokens, PrefixKeys(keys, np.arange(len(prompt) + 1, dtype=np.int64) * units, unit_tokens)


def session_table(starts: np.ndarray, message: callable, output: callable, cfg: Sessions,
                  shared: SharedPrefix | None, rngs, unit_tokens: int, limit: int | None,
                  horizon_s: float | None, base_dir, field: str):
    """Requests of sessions starting at `starts`: (arrival_s, prompt, output, PrefixKeys), sorted by
    arrival, at most `limit` of them (the earliest) or those arriving before `horizon_s`. `message(n)` and
    `output(n)` draw n new-message and output lengths; `rngs` = (turns, think times, system prompts)."""
    turn_rng, think_rng, system_rng = rngs
    n_sessions = len(starts)
    turns = cfg.turns.sample(n_sessions, turn_rng, base_dir, f"{field}.sessions.turns")
    total = int(turns.sum())
    session = np.repeat(np.arange(n_sessions), turns)
    first = np.concatenate(([0], np.cumsum(turns)[:-1]))
    index = np.arange(total) - np.repeat(first, turns)            # turn number within its session
    gaps = think_rng.exponential(cfg.think_time_s, size=total)
    gaps[index == 0] = 0.0
    arrival = starts[session] + _segment_cumsum(gaps, first, turns)
    new_msg, out = message(total), output(total)
    system = np.zeros(n_sessions, dtype=np.int64)
    sys_tokens = 0
    if shared is not None:
        system = system_rng.choice(shared.prompts, size=n_sessions, p=shared.probabilities())
        sys_tokens = shared.tokens
    prompt = np.empty(total, dtype=np.int64)
    rows: list[list[int]] = []
    sys_units = sys_tokens // unit_tokens
    for s in range(n_sessions):
        history = sys_tokens
        base = SESSION_SPACE + (s << UNIT_BITS)
        for i in range(first[s], first[s] + turns[s]):
            prompt[i] = history + new_msg[i]
            history = prompt[i] + out[i]
            # keys of every full unit of this turn's stream (prompt and output): the next turn's prompt
            # starts with the same tokens, so its cached units are these
            units = history // unit_tokens
            rows.append(_system_keys(int(system[s]), min(sys_units, units)) +
                        [base + j for j in range(min(sys_units, units), units)])
    order = np.argsort(arrival, kind="stable")
    if limit is not None:
        order = order[:limit]
    elif horizon_s is not None:
        order = order[arrival[order] < horizon_s]
    keys = PrefixKeys.from_lists([rows[i] for i in order], unit_tokens)
    return arrival[order], prompt[order], out[order], keys


def _segment_cumsum(values: np.ndarray, first: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at each segment (segments given by their first index and length)."""
    total = np.cumsum(values)
    before = np.concatenate(([0.0], total))[first]
    return total - np.repeat(before, lengths)
