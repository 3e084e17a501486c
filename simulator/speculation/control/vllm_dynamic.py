"""vllm_dynamic: vLLM's Dynamic Speculative Decoding (DSD) — a draft length per batch size.

What vLLM ships (read 2026-11-26):
- `num_speculative_tokens_per_batch_size` in the speculative config (vllm/config/speculative.py): a list of
  inclusive `[start_bs, end_bs, K]` entries; `num_speculative_tokens` stays the maximum draft window (the
  buffers' size). Added by PR #32374 "[V1][Spec Decode] Add Dynamic SD" (merged 2026-05), first released in
  v0.24.0 (release notes, 2026-07-10, "Speculative decoding: Dynamic SD (#32374)"); documented in
  docs/features/speculative_decoding/dynamic_speculative_decoding.md. No default schedule ships (the PR
  says the best schedule is hardware- and model-dependent).
- The lookup (vllm/v1/spec_decode/dynamic/utils.py, `build_dynamic_sd_schedule_lookup`): the first range
  must start at 1; a batch size in a gap between ranges takes the K of the range before it; batch sizes
  above the last range take the last K; every K is clamped to min(num_speculative_tokens, K).
- When it applies (vllm/v1/core/sched/scheduler.py, `schedule`): after scheduling step t the scheduler
  reads K_t = lookup[len(num_scheduled_tokens)] — the number of requests scheduled in step t, prefill
  chunks included — and passes it in the SchedulerOutput; the drafter drafts K_t tokens at the end of
  step t (llm_base_proposer.py), and each running request verifies them in step t+1. So the draft
  length verified in a step is the one of the previous step's batch size.
- Limits: the docs say it was tested with EAGLE, EAGLE-3 and DFlash; with data parallelism > 1 vLLM
  disables it and falls back to num_speculative_tokens (refused here, naming policy fixed, which is what
  vLLM then runs; so are versions before v0.24.0 and other engines: profiles.engine_time.support);
  suffix decoding drafts its own per-request length and does not take part (vllm-ascend PR #12368 notes
  the same of upstream vLLM). Model Runner V2's
  autoregressive speculator ignored the scheduler's K until a fix (issue #51510, open 2026-08): modelled
  here is the MRv1 path that honours it.
- Not shipped: an acceptance-driven "adaptive K" (PRs #44336 closed, #47111 open, #26495 closed) — not
  modelled; vLLM V0's `speculative_disable_by_batch_size` left with V0.

Here: a step's batch size is the replica's running requests when the step is formed (prefills
included — vLLM schedules every running request unless the token budget runs out: approximation, exact
whenever the budget does not bind). Each replica remembers the K its previous step chose; its first step
uses its own batch size (the prefill step before it is not seen by the policy).
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np

from simulator.speculation.control.base import ControlPolicy


def dense_lookup(schedule, max_k: int, max_batch: int) -> np.ndarray:
    """K for batch sizes 0 … max_batch (index = batch size) from `[start, end, K]` entries, as
    vLLM's build_dynamic_sd_schedule_lookup expands them (module docstring)."""
    entries = sorted((int(a), int(b), int(k)) for a, b, k in schedule)
    table = np.zeros(max_batch + 1, dtype=np.int64)
    next_bs, last_k = 1, None
    for lo, hi, k in entries:
        if lo > next_bs and last_k is not None:
            table[next_bs:min(lo, max_batch + 1)] = min(max_k, last_k)
        table[max(lo, next_bs):min(hi, max_batch) + 1] = min(max_k, k)
        next_bs, last_k = max(next_bs, hi + 1), k
        if next_bs > max_batch:
            break
    if last_k is not None and next_bs <= max_batch:
        table[next_bs:] = min(max_k, last_k)
    return table


class VllmDynamic(ControlPolicy):
    """K per batch size as `dense_lookup` expands the schedule, read from the ranges' starts instead of a
    table of every batch size up to the last range's end (an end of 10**12 allocated 8 TB: MemoryError):
    a batch size takes the K of the last range starting at or below it (in the range, in the gap after
    it, or above the last range), clamped to num_speculative_tokens; 0 below the first range (batch 0)."""
    chain_only = True
    needs_gamma = True

    def __init__(self, params, spec, gamma: int, cost):
        super().__init__(params, spec, gamma, cost)
        entries = sorted((int(lo), min(gamma, int(k))) for lo, _, k in params.schedule)
        self._starts = [lo for lo, _ in entries]
        self._ks = [k for _, k in entries]
        self._last: dict[int, int] = {}     # id(replica) -> K chosen by its previous step

    def k_for(self, batch: int) -> int:
        i = bisect_right(self._starts, batch) - 1
        return self._ks[i] if i >= 0 else 0

    def counts(self, rep, ids: np.ndarray, queued: int) -> np.ndarray:
        batch = len(rep.running)
        key = id(rep)
        k = self._last.get(key, self.k_for(batch))
        self._last[key] = self.k_for(batch)
        return np.full(len(ids), k, dtype=np.int64)
