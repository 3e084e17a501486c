"""Per-request state of a run as a structure of numpy arrays (indexed by request id), and the step log.

Invariant while a request decodes: ctx = tokens in its KV cache = prefill_target + emitted_since_admit − 1,
i.e. every emitted token except the newest one is cached (the newest is the next step's first query).
"""
from __future__ import annotations

import numpy as np

from simulator.core.workload import RequestTable

DROP_EXCEEDS_KV = "exceeds_kv_capacity"
DROP_UNFINISHED = "unfinished_at_horizon"


class RequestState:
    def __init__(self, table: RequestTable):
        n = len(table)
        self.n = n
        self.arrival_s = table.arrival_s.copy()  # closed-loop runs set arrival times as they happen
        self.prompt = table.prompt_tokens.astype(np.int64)
        self.output = table.output_tokens.astype(np.int64)
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

    def columns(self) -> dict[str, np.ndarray]:
        return {
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


STEP_COLUMNS = {
    "replica": np.int64, "start_s": np.float64, "duration_s": np.float64,
    "prefill_tokens": np.int64, "prefill_seqs": np.int64, "decode_seqs": np.int64,
    "query_tokens_per_seq": np.int64, "decode_context_tokens": np.int64,
    "draft_s": np.float64, "verify_s": np.float64, "engine_s": np.float64, "accepted_tokens": np.int64,
    "emitted_tokens": np.int64, "flops": np.float64, "bytes": np.float64,
    "kv_blocks_used": np.int64, "kv_blocks_total": np.int64,
    "queued_requests": np.int64, "running_requests": np.int64,
}


_COSTS = "_costs"  # chunk key of deferred cost arrays (see StepLog.append_bulk)


# Columns logged only when a feature that fills them is on (StepLog(extra=...)): `kv_io_s`, the part of a
# step's duration spent moving KV to or from host memory (simulator.core.kv_cache).
OPTIONAL_STEP_COLUMNS = {"kv_io_s": np.float64}


class StepLog:
    """Append-only log of steps: single steps as rows, bulks of steps as column arrays.

    The final order is fixed by the caller (sorted by start time and replica), so append order is free.
    `extra`: names of OPTIONAL_STEP_COLUMNS to log too (0 in bulks of decode steps, which move no KV).
    """

    def __init__(self, extra: tuple[str, ...] = ()):
        self._rows: list[tuple] = []
        self._chunks: list[dict[str, np.ndarray]] = []
        self._schema = {**STEP_COLUMNS, **{k: OPTIONAL_STEP_COLUMNS[k] for k in extra}}

    def append_row(self, **cols) -> None:
        self._rows.append(tuple(cols[k] for k in self._schema))

    def append_bulk(self, n: int, costs=None, **cols) -> None:
        """Append n steps; each column is an array of length n or a scalar shared by the n steps.
        `costs` = (draft, target, (draft_scale, target_scale)): the steps' (n, 3) draft and (n, 4) target
        (seconds, FLOPs, bytes[, engine seconds included in the target's seconds]) and the multipliers from
        per-GPU work to replica totals; the draft_s, verify_s, engine_s, flops and bytes columns are
        derived from them when the log is read (once, vectorized)."""
        self._chunks.append((n, cols if costs is None else {**cols, _COSTS: costs}))

    def _derive_cost_columns(self) -> None:
        for _, cols in self._chunks:
            costs = cols.pop(_COSTS, None)
            if costs is not None:
                draft, target, (draft_scale, target_scale) = costs
                cols["draft_s"], cols["verify_s"], cols["engine_s"] = draft[:, 0], target[:, 0] - target[:, 3], target[:, 3]
                cols["flops"] = draft_scale * draft[:, 1] + target_scale * target[:, 1]
                cols["bytes"] = draft_scale * draft[:, 2] + target_scale * target[:, 2]

    def columns(self) -> dict[str, np.ndarray]:
        out = {}
        self._derive_cost_columns()
        counts = np.array([n for n, _ in self._chunks], dtype=np.int64)
        by_column = list(zip(*self._rows)) if self._rows else None
        for i, (k, dtype) in enumerate(self._schema.items()):
            values = [c.get(k, 0) for _, c in self._chunks]
            if all(np.ndim(v) == 0 for v in values):
                bulk = np.repeat(np.array(values, dtype=dtype), counts)
            else:
                bulk = np.concatenate([np.asarray(v, dtype=dtype) if np.ndim(v) else np.full(n, v, dtype=dtype)
                                       for v, n in zip(values, counts)])
            rows = np.array(by_column[i], dtype=dtype) if by_column else np.zeros(0, dtype=dtype)
            out[k] = np.concatenate([bulk, rows])
        return out
