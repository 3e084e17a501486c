"""Per-request state of a run as a structure of numpy arrays (indexed by request id); the step log is
simulator.core.steplog.

A request may generate `samples` > 1 sequences from its prompt (parallel sampling and beam search,
`workload.parallel_samples`): `ctx`, `emitted`, `prefill_target` and `prefilled` are then those of each one
of its sequences, which advance in lockstep; `blocks` counts the blocks of all of them
(simulator.core.kv.block_pool). The prompt is prefilled once; its n sequences then decode in lockstep, each
one a decode row attending its own context (no shared-prefix attention kernel), and the request finishes
when they all have emitted output_tokens tokens; `max_batch_size` counts sequences, as vLLM's max_num_seqs
does (simulator.core.replica). Approximations, named: every sequence has the request's output length
(fixed-length sampling, `ignore_eos`; beams of equal length); a preempted request re-prefills prompt + the
tokens of one sequence, not of all n (the recompute of the other n − 1 sequences' tokens is not priced);
such replicas run step by step (no bulks).

Invariant while a request decodes: ctx = tokens in its KV cache = prefill_target + emitted_since_admit − 1,
i.e. every emitted token except the newest one is cached (the newest is the next step's first query).
"""
from __future__ import annotations

import numpy as np

from simulator.core.workload import RequestTable

DROP_EXCEEDS_KV = "exceeds_kv_capacity"
DROP_UNFINISHED = "unfinished_at_horizon"
# The columns the step loop reads and writes one request at a time (per arrival of a prefill-first fleet), also
# held as memoryviews (`RequestState.at`)
SCALAR_COLUMNS = frozenset({"ctx", "emitted", "prefilled", "prefill_target", "output", "blocks", "finish_s", "admit_s",
                            "first_token_s", "decode_steps", "accepted", "drafted"})


class ScalarViews:
    """Memoryviews of a RequestState's `SCALAR_COLUMNS`, by the same names: `s.at.ctx[r]` is `s.ctx.item(r)` and
    `s.at.ctx[r] = v` is `s.ctx[r] = v` (the same buffer, the same Python ints and floats), at about half the
    instructions of a NumPy scalar read or write (callgrind: ~290 against ~670 a read, ~350 against ~610 a write)."""


class RequestState:
    def __init__(self, table: RequestTable, samples: int = 1):
        n = len(table)
        self.n = n
        self.arrival_s = table.arrival_s.copy()  # closed-loop runs set arrival times as they happen
        self.prompt = table.prompt_tokens.astype(np.int64)
        self.output = table.output_tokens.astype(np.int64)
        self.samples = np.full(n, samples, dtype=np.int64)   # sequences per request (workload.parallel_samples)
        self.replica = np.full(n, -1, dtype=np.int64)
        self.admit_s = np.full(n, np.nan)
        self.first_token_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        self.emitted = np.zeros(n, dtype=np.int64)
        self.prefill_target = self.prompt.copy()   # tokens to (re)compute on admission
        self.prefilled = np.zeros(n, dtype=np.int64)
        self.ctx = np.zeros(n, dtype=np.int64)
        self.blocks = np.zeros(n, dtype=np.int64)        # blocks only this request uses
        self.unit_blocks = np.zeros(n, dtype=np.int64)   # blocks of cached prefix units it shares (kv_cache)
        self.cached_prompt_tokens = np.zeros(n, dtype=np.int64)  # prompt tokens found cached at first admission
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.decode_steps = np.zeros(n, dtype=np.int64)
        self.accepted = np.zeros(n, dtype=np.int64)
        self.drafted = np.zeros(n, dtype=np.int64)
        self.dropped = np.zeros(n, dtype=bool)
        self.drop_reason = np.full(n, "", dtype=object)

    def __setattr__(self, name, value) -> None:
        """Set an attribute; a scalar column's view (`at`) follows the column (a column rebound, e.g. grown by
        simulator.distributed.group, gets a view of the new array)."""
        object.__setattr__(self, name, value)
        if name in SCALAR_COLUMNS:   # (getattr, not self.__dict__: reading __dict__ makes CPython give up the
            # inline attribute values, and every later read of a column gets slower)
            at = getattr(self, "at", None)
            if at is None:
                at = ScalarViews()
                object.__setattr__(self, "at", at)
            setattr(at, name, memoryview(value))

    def __getstate__(self) -> dict:
        """Pickled and copied without the views (a memoryview is neither): `__setstate__` makes them again."""
        return {name: value for name, value in vars(self).items() if name != "at"}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def columns(self) -> dict[str, np.ndarray]:
        cols = {
            "request_id": np.arange(self.n, dtype=np.int64),
            "replica": self.replica,
            "arrival_s": self.arrival_s,
            "admit_s": self.admit_s,
            "first_token_s": self.first_token_s,
            "finish_s": self.finish_s,
            "prompt_tokens": self.prompt,
            "output_tokens": self.output,
            "emitted_tokens": self.emitted,
            "preemptions": self.preemptions,
            "decode_steps": self.decode_steps,
            "accepted_tokens": self.accepted,
            "drafted_tokens": self.drafted,
            "dropped": self.dropped,
            "drop_reason": self.drop_reason.astype(str),
        }
        if (self.samples > 1).any():   # runs of one sequence per request keep their columns as they were
            cols["parallel_samples"] = self.samples
        return cols
