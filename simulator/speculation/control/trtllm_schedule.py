"""trtllm_schedule: TensorRT-LLM's dynamic draft length (`draft_len_schedule`) and its acceptance gate
(`acceptance_window`, `acceptance_length_threshold`), PyTorch backend.

What TensorRT-LLM ships (read 2026-11-26):
- `draft_len_schedule: dict[int, int]` (tensorrt_llm/llmapi/llm_args.py, DecodingBaseConfig, a "developer
  interface"), resolved every iteration by `get_draft_len_for_batch_size` (tensorrt_llm/_torch/speculative/
  utils.py): the keys are batch-size upper bounds — the draft length of the first key ≥ the batch size
  (bisect_left); a batch larger than every key drafts 0 tokens (speculation off, implicitly). Example from
  the docstring: {4: 4, 8: 2, 32: 1} gives 4 for batch 1-4, 2 for 5-8, 1 for 9-32, 0 from 33. These
  semantics came with PR #10860 ("Dynamic draft length on spec decode one-model path", merged 2026-03-13,
  after v1.3.0rc7 of 2026-03-10); the first version (PR #8194, stage 1, merged 2025-10, the 1.2 line) read
  keys as lower bounds (largest key ≤ batch, bisect_right) — not modelled: profiles.engine_time.support
  refuses a draft_len_schedule on TensorRT-LLM before 1.3.0rc8. Mutually exclusive with `max_concurrency`; values ≤ max_draft_len.
- The batch size is `len(active_requests)` (tensorrt_llm/_torch/pyexecutor/py_executor.py, before drafting
  in each iteration): the requests the executor holds, context and generation alike; the draft length
  applies to the same iteration's generation requests.
- The gate (tensorrt_llm/_torch/speculative/speculation_gate.py, `SpeculationGate`), in two forms:
  before PR #12905 (`record_avg_decoded`; read at commit 41080dc): each completed request contributes
  accepted_len = max(0, avg_decoded_tokens_per_iter − 1) (LlmRequest: generated tokens / decoding
  iterations, "number of draft tokens accepted per step + 1"); once at least `acceptance_window` requests
  have completed, if the mean over the last `acceptance_window` of them is below
  `acceptance_length_threshold`, speculation is disabled permanently (window 0 or unset: off).
  From PR #12905 ("BREAKING: Acceptance rate based speculation off", merged 2026-04; `record_acceptance_rate`,
  fed by py_executor.py with total_accepted_tokens / total_draft_tokens of the iteration): the fields are
  `acceptance_rate_window_size` and `acceptance_rate_threshold` (0 to 1), and each speculation-enabled
  iteration contributes one batch-level acceptance rate; once `acceptance_rate_window_size` iterations are
  recorded, a mean of the last ones below the threshold disables speculation permanently. The Eagle3/Eagle
  DecodingConfig API references of 1.3.0rc27, 1.4.0rc1 and 1.4.0rc4 have the new fields (the release
  candidate that first took the PR was not identified: profiles.engine_time.support refuses each form where
  the other one is the release's).

Here: a replica is one executor; its active requests are its running plus waiting requests (approximation:
TensorRT-LLM fetches waiting requests into active_requests up to its capacity limits, which are not
modelled); a request's decoding iterations are its decode steps plus the context step that produced its
first token, so a plain decode averages exactly 1. Completed requests are folded into the gate at the
replica's next step, in order of finish time. The rate gate records a speculating step's accepted and drafted
tokens (the request arrays' `accepted`, `drafted`) at the replica's next step (TensorRT-LLM records them as
it processes that iteration's results).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque

import numpy as np

from simulator.speculation.control.base import ControlPolicy


def draft_len_for_batch(schedule: dict, batch: int, max_draft_len: int) -> int:
    """TensorRT-LLM's get_draft_len_for_batch_size (module docstring); no schedule: max_draft_len."""
    if not schedule:
        return max_draft_len
    keys = sorted(schedule)
    i = bisect_left(keys, batch)
    return min(max_draft_len, int(schedule[keys[i]])) if i < len(keys) else 0


class AcceptanceRateGate:
    """The rolling acceptance gate of one executor, PR #12905 on (module docstring): the mean of the last
    `window` values recorded (one accepted/drafted rate per speculating iteration) turns speculation off for
    good when it falls below `threshold`, once `window` values were recorded."""

    def __init__(self, window: int | None, threshold: float | None):
        self.window, self.threshold = window, threshold
        self.history: deque = deque()
        self.recorded = 0
        self.disabled = False

    def record(self, value: float) -> None:
        if self.disabled or not self.window or self.threshold is None:
            return
        self.history.append(float(value))
        if len(self.history) > self.window:
            self.history.popleft()
        self.recorded += 1
        if self.recorded >= self.window and sum(self.history) / len(self.history) < self.threshold:
            self.disabled = True


class SpeculationGate(AcceptanceRateGate):
    """The gate before PR #12905 (module docstring): the same rolling mean over completed requests, of their
    accepted length per iteration max(0, avg_decoded − 1)."""

    def record(self, avg_decoded_per_iter: float) -> None:
        super().record(max(0.0, float(avg_decoded_per_iter) - 1.0))


class TrtllmSchedule(ControlPolicy):
    chain_only = True
    needs_gamma = True

    def __init__(self, params, spec, gamma: int, cost):
        super().__init__(params, spec, gamma, cost)
        self.schedule = {int(k): int(v) for k, v in (params.draft_len_schedule or {}).items()}
        self._gates: dict[int, SpeculationGate | AcceptanceRateGate] = {}
        self._seen: dict[int, set] = {}
        self._last: dict[int, tuple] = {}   # rate gate: the last speculating step's (ids, accepted, drafted)

    def _observe(self, rep, gate: SpeculationGate, ids: np.ndarray) -> None:
        s, seen = rep.s, self._seen.setdefault(id(rep), set())
        done = [r for r in seen if not np.isnan(s.finish_s[r])]
        for r in sorted(done, key=lambda r: (s.finish_s[r], r)):
            gate.record(s.emitted[r] / (s.decode_steps[r] + 1.0))
            seen.discard(r)
        seen.update(ids.tolist())

    def _observe_rate(self, rep, gate: AcceptanceRateGate) -> None:
        last = self._last.pop(id(rep), None)
        if last is None:
            return
        prev, accepted, drafted = last
        d = int(rep.s.drafted[prev].sum()) - drafted
        if d > 0:
            gate.record(min(1.0, (int(rep.s.accepted[prev].sum()) - accepted) / d))

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        p = self.params
        if p.gate == "rate":
            gate = self._gates.setdefault(id(rep), AcceptanceRateGate(p.acceptance_rate_window_size,
                                                                      p.acceptance_rate_threshold))
            self._observe_rate(rep, gate)
        else:
            gate = self._gates.setdefault(id(rep), SpeculationGate(p.acceptance_window, p.acceptance_length_threshold))
            self._observe(rep, gate, ids)
        k = 0 if gate.disabled else draft_len_for_batch(self.schedule, len(rep.running) + queued, self.gamma)
        if k > 0 and p.gate == "rate":
            self._last[id(rep)] = (ids.copy(), int(rep.s.accepted[ids].sum()), int(rep.s.drafted[ids].sum()))
        return np.full(len(ids), k, dtype=np.int64)
