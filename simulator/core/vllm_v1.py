"""vLLM V1's scheduler (`scheduler.kind: vllm_v1`), rule by rule, for replicas that must step the way a
real vLLM does (the `draftsim validate --engine vllm` comparison, and any user mirroring a vLLM server).

Read from vLLM 0.32's `vllm/v1/core/sched/scheduler.py`, `Scheduler.schedule` (unchanged in these rules
since V1 became the default engine):

1. One token budget per step, `max_num_batched_tokens` (`scheduler.max_batched_tokens`), shared by all
   requests; chunked prefill is always on.
2. RUNNING requests first, in admission order. Each asks for the tokens it has not computed: a decoding
   request 1 + its draft tokens (`num_tokens_with_spec − num_computed_tokens`, here the replica's q), a
   request mid-prefill the rest of its prompt; the request gets `min(asked, budget left)`.
3. KV blocks are allocated per step for the tokens scheduled (`KVCacheManager.allocate_slots`), not for
   the whole prompt at admission. When they do not fit, the most recently admitted running request is
   preempted (`self.running.pop()`, recompute: its blocks are freed and it goes back to the head of the
   waiting queue) until they fit; if the request itself was the one preempted, the running pass stops.
4. WAITING requests, FCFS, only if the running pass preempted nobody (`if not preempted_reqs`), while
   the budget lasts and fewer than `max_num_seqs` (`scheduler.max_batch_size`) requests run: each gets
   `min(prompt tokens not cached, budget left)` and its blocks; the first one whose blocks do not fit
   stops admission.

Approximations, named here:
- A decoding request whose 1 + γ tokens exceed the budget left waits for the next step; vLLM would
  schedule it with fewer draft tokens (`min(num_new_tokens, token_budget)`). Only matters when the budget
  is within γ of running out, i.e. when `max_batched_tokens` is near `max_batch_size · (γ+1)`.
- vLLM also allocates `num_lookahead_tokens` (= γ for draft-model and EAGLE proposers) slots per decoding
  request; here a decoding request holds blocks for context + q tokens, as in the other schedulers.
- Parallel sampling (n sequences per request): a request counts n sequences against `max_num_seqs`,
  n·q decode tokens against the budget, and its blocks as simulator.core.replica.Replica._kv_blocks.
- With a prefix cache or host tier (`cluster.kv_cache`) a request's prompt blocks are reserved at
  admission, as in the other schedulers (simulator.core.kv_cache decides hits and evictions per request).
"""
from __future__ import annotations

import numpy as np

from models.step import chunk_attention_pairs


def admissible(rep, token_room: int) -> bool:
    """The waiting head would be admitted now with `token_room` tokens of budget left (rule 4)."""
    if not rep.waiting or token_room <= 0 or rep._batch_full():
        return False
    r = rep.waiting[0]
    if rep.kv is not None:
        need, _ = rep._admission(r)
    else:
        need = rep._kv_blocks(r, min(int(rep.s.prefill_target[r]), token_room))
    return need <= rep.total_blocks - rep.used_blocks


def admission_room(rep) -> int:
    """Budget a waiting request would find in a decode-only step of the current batch."""
    return rep.sched.max_batched_tokens - rep._decode_rows(np.asarray(rep.running, dtype=np.int64)) * rep.q


def _grow(rep, r: int, tokens: int) -> bool:
    """Give request r blocks for `tokens` tokens of KV, preempting the newest running requests while
    they do not fit (rule 3). False when r itself had to be preempted."""
    s = rep.s
    need = int(rep._kv_blocks(r, tokens))
    if rep.kv is not None:
        need -= int(s.unit_blocks[r])
    extra = max(need - int(s.blocks[r]), 0)
    while extra > rep.total_blocks - rep.used_blocks:
        victim = rep.running[-1]
        rep._preempt(victim)
        if victim == r:
            return False
    s.blocks[r] += extra
    rep.used_blocks += extra
    if extra and rep.kv is not None and rep.kv.cache is not None:
        rep.kv.cache.take(extra)
    return True


def plan(rep, now_s: float):
    from simulator.core.replica import StepPlan
    rep.profile.dissolve()   # the step-by-step path reads and writes the requests' state
    s = rep.s
    budget = rep.sched.max_batched_tokens
    decode_ids: list[int] = []
    prefill_ids: list[int] = []
    chunks: list[int] = []
    pairs = 0
    preempted = False
    i = 0
    while i < len(rep.running) and budget > 0:                       # rule 2
        r = rep.running[i]
        if rep._is_decoding(r):
            n = rep.q * int(s.samples[r])   # every sequence of the request verifies q tokens
            if n > budget:
                i += 1
                continue
            tokens = int(s.ctx[r]) + rep.q   # per sequence
        else:
            n = int(min(s.prefill_target[r] - s.prefilled[r], budget))
            tokens = int(s.prefilled[r]) + n
        before = len(rep.running)
        ok = _grow(rep, r, tokens)
        preempted = preempted or len(rep.running) < before
        if not ok:
            break
        if rep._is_decoding(r):
            decode_ids.append(r)
        else:
            prefill_ids.append(r)
            chunks.append(n)
            pairs += chunk_attention_pairs(n, int(s.prefilled[r]))
        budget -= n
        i += 1
    if not preempted:                                                 # rule 4
        while admissible(rep, budget):
            r = rep._admit_head(now_s, reserve_prompt=False)   # blocks come with each chunk (rule 3)
            if rep._is_decoding(r):   # swapped back in (host tier): decodes from the next step
                continue
            n = int(min(s.prefill_target[r] - s.prefilled[r], budget))
            if rep.kv is None:
                _grow(rep, r, n)
            prefill_ids.append(r)
            chunks.append(n)
            pairs += chunk_attention_pairs(n, int(s.prefilled[r]))
            budget -= n
    ids = np.asarray(decode_ids, dtype=np.int64)
    return StepPlan(prefill_ids, chunks, ids, pairs, rep._decode_context(ids))
