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
   `min(prompt tokens not cached, budget left)` and the blocks for its cached + scheduled tokens; the first one
   whose blocks do not fit stops admission and stays waiting (`allocate_slots` returns None: `break`). The KV
   manager's `need` screens it first; where that misses a block (a prefix hit's lookahead slots), the request
   goes back to the waiting queue's head (`Replica.unadmit_head`, its hit counted in the cache's saved tokens).
5. From vLLM 0.19 (`scheduler_reserve_full_isl`, default True; BatchLimits.admit_whole_prompt, set by
   simulator.cluster.build.batch_scheduler from profiles.engine_time.batch_defaults.vllm_whole_prompt_admission), a
   waiting request, new or preempted, is admitted only if its whole sequence's blocks (prompt, and a preempted
   request's output; its hit counted as computed, no lookahead) are free as well (0.19 - 0.20:
   `KVCacheManager.can_fit_full_sequence` before `allocate_slots` in the waiting loop; 0.21 on:
   `allocate_slots(..., full_sequence_must_fit=True)`), else admission stops (`break`); a check only, its blocks
   still come chunk by chunk (rule 3). From 0.20 a sliding-window group's blocks in the check are capped at
   `max_admission_blocks_per_request` (BatchLimits.whole_prompt_window_cap, `kv.whole_prompt_need`). Not modelled
   (named): 0.23+'s `reserved_blocks` (only for asynchronous KV-connector loads) and 0.24+'s `--watermark` (default
   0.0: no blocks).

Approximations, named here:
- A decoding request whose 1 + γ tokens exceed the budget left waits for the next step; vLLM would
  schedule it with fewer draft tokens (`min(num_new_tokens, token_budget)`). Only matters when the budget
  is within γ of running out, i.e. when `max_batched_tokens` is near `max_batch_size · (γ+1)`.
- vLLM also allocates `num_lookahead_tokens` slots beyond the tokens it schedules (`allocate_slots(...,
  num_lookahead_tokens=...)`: γ for EAGLE-style proposers from v0.8.4, draft models from v0.15.0; none for n-gram,
  suffix or Medusa; for a waiting request's first chunk too in v0.8.5 - v0.10.0 and from v0.23.0, none in
  v0.10.1 - v0.22.x): modelled (BatchLimits.kv_lookahead / admit_lookahead,
  set by simulator.cluster.build.batch_scheduler from profiles.engine_time.batch_defaults.vllm_kv_lookahead). A
  decoding request holds blocks for context + q + lookahead tokens, a prompt chunk for its tokens + lookahead,
  at most max_model_len (vLLM clamps from v0.9.0; approximation, named: v0.8.4 - v0.8.5 did not, which differs only
  within γ tokens of max_model_len).
- Near max_model_len vLLM schedules `min(num_new_tokens, max_model_len − 1 − num_computed_tokens)` tokens
  ("Make sure the input position does not exceed the max model len. This is necessary when using spec
  decoding", `Scheduler.schedule`, read in the v0.11.0 and v0.19.1 wheels), so a decoding request's KV
  reaches at most max_model_len − 1 tokens: modelled (BatchLimits.decode_kv_cap, `Replica.decode_kv_tokens`).
  It binds only at the last steps of a request within q − 2 tokens of max_model_len (its context at the last
  step is prompt + output − 2), and never changes the tokens emitted (the drafts it trims lie past the
  request's own end); approximation, named: those steps still verify, and take from the budget, q tokens
  here (at most q − 1 too many per request).
- With a draft model vLLM keeps token slots for its proposer's rows (profiles.engine_time.batch_defaults
  .vllm_drafting_slots): 0.17 - 0.27 schedule at most max_num_batched_tokens - max_num_seqs tokens a step (the
  budget here, simulator.cluster.build.batch_scheduler); from 0.28 every request a step schedules takes its tokens +
  `limits.draft_slots` of the budget, gets at most the budget left less those slots, and none is scheduled once the
  budget left is at most them (`input_budget` in `Scheduler.schedule`).
- Parallel sampling (n sequences per request): a request counts n sequences against `max_num_seqs`,
  n·q decode tokens against the budget, and its blocks as simulator.core.kv.block_pool.BlockPool.blocks.

With a prefix cache or host tier (`cluster.kv_cache`) the same rules hold (`KVCacheManager.allocate_slots`, read in the
0.10.2 and 0.33.0 wheels, 2026-11-29): a waiting request's hit (its computed blocks) is taken at admission together with
its first chunk's blocks, the uncached rest grows chunk by chunk, and the full blocks of the scheduled tokens are cached
as they are allocated (`cache_blocks`; here `kv.cache_prompt`), so a request admitted later in the same step hits
them; a preempted request's blocks go back to the free queue with their units cached. gpt-oss's sliding-window pool
takes the window prefix cache under this scheduler even where no two requests share a prefix
(simulator.cluster.build.kv_manager; not with `shared_prefix_attention`, where it reserves prompts as named in
simulator.core.kv.sliding_window), so a preempted request hits its own blocks as in vLLM. Rule 5 holds with them
too (read in the 0.19.0, 0.20.0, 0.21.0, 0.24.0 and 0.33.0 wheels, 2026-11-29).
"""
from __future__ import annotations

import numpy as np

from simulator.core.sched import BatchLimits, Prefills, StepPlan


def _grow(view, r: int, tokens: int) -> bool:
    """Give request r blocks for `tokens` tokens of KV, preempting the newest running requests while
    they do not fit (rule 3). False when r itself had to be preempted."""
    while not view.kv.grow(r, tokens):
        victim = view.running[-1]
        view.preempt(victim)
        if victim == r:
            return False
    return True


def _every_running_in_full(view, budget: int):
    """Rule 2 when it schedules every running request in full: their asks (q tokens per sequence of a
    decoding request, the rest of a prompt) fit the budget together, and the blocks for them all fit the
    pool. The loop of rule 2 would then give each request what it asks and preempt nobody, so they are
    given at once, in one `grow` (for KV managers whose `grow` of several requests equals growing them one
    by one when all fit and changes nothing otherwise: `atomic_grow`). (ids, decoding mask, asks), or None
    (nothing done) when the loop must decide request by request."""
    running = view.running
    if not running or not view.kv.atomic_grow:
        return None
    s = view.s
    ids = np.array(running, dtype=np.int64)
    target, done = s.prefill_target[ids], s.prefilled[ids]
    decoding = done >= target
    asks = np.where(decoding, view.q * s.samples[ids], target - done)
    if int(asks.sum()) + view.limits.draft_slots * len(ids) > budget:
        return None
    limits = view.limits
    chunk_kv = limits.with_lookahead(target, limits.kv_lookahead)   # (a prompt's rest: its tokens + lookahead)
    if not view.kv.grow(ids, np.where(decoding, view.decode_kv_tokens(s.ctx[ids]), chunk_kv)):
        return None
    for r in ids[~decoding].tolist():   # (their prompts' rest is scheduled: its full units cached, rule 3)
        view.kv.cache_prompt(r, int(s.prefill_target[r]))
    return ids, decoding, asks


class VllmV1:
    caps_decode_kv = True   # near max_model_len (module docstring)
    allocates_per_chunk = True   # a prompt's blocks come with its chunks, also with a prefix cache (rule 3)

    def __init__(self, limits: BatchLimits):
        self.limits = limits

    def admissible(self, view, token_room: int) -> bool:
        """The waiting head would be admitted now with `token_room` tokens of budget left (rule 4)."""
        if not view.waiting or token_room <= 0 or view.batch_full():
            return False
        r = view.waiting[0]
        kv, limits = view.kv, self.limits
        if token_room <= limits.draft_slots:
            return False
        free = kv.total_blocks - kv.used_blocks
        if limits.admit_whole_prompt and kv.whole_prompt_need(r, limits.whole_prompt_window_cap) > free:
            return False   # (vLLM 0.19 on: the whole sequence's blocks must be free, rule 5)
        tokens = limits.with_lookahead(min(int(view.s.prefill_target[r]), token_room - limits.draft_slots),
                                       limits.admit_lookahead)
        return kv.need(r, int(tokens))[0] <= free

    def decodes_every_running(self, view) -> bool:
        """Rule 2 schedules every running request: their q tokens per sequence fit the budget together."""
        return self._decode_only_tokens(view) <= self.limits.max_batched_tokens

    def admission_room(self, view) -> int:
        """Budget a waiting request would find in a decode-only step of the current batch."""
        return self.limits.max_batched_tokens - self._decode_only_tokens(view)

    def _decode_only_tokens(self, view) -> int:
        """Budget a decode-only step of every running request takes: q per sequence, draft slots per request."""
        return view.decode_rows(view.running) * view.q + self.limits.draft_slots * len(view.running)

    def plan(self, view, now_s: float) -> StepPlan:
        view.settle()
        s = view.s
        budget, slots = self.limits.max_batched_tokens, self.limits.draft_slots
        decode_ids: list[int] = []
        prefills = Prefills()
        preempted = False
        i = 0
        whole = _every_running_in_full(view, budget)
        if whole is not None:   # rule 2 at once: the loop below would give every request all it asks
            ids, decoding, asks = whole
            decode_ids = ids[decoding].tolist()
            for r, n in zip(ids[~decoding].tolist(), asks[~decoding].tolist()):
                prefills.add(view, r, n)
            budget -= int(asks.sum()) + slots * len(ids)
            i = len(view.running)
        while i < len(view.running) and budget > slots:                  # rule 2
            r = view.running[i]
            decoding = view.decoding(r)
            if decoding:
                n = view.q * int(s.samples[r])   # every sequence of the request verifies q tokens
                if n > budget - slots:
                    i += 1
                    continue
                tokens = int(view.decode_kv_tokens(int(s.ctx[r])))   # per sequence
            else:
                n = int(min(s.prefill_target[r] - s.prefilled[r], budget - slots))
                tokens = int(self.limits.with_lookahead(int(s.prefilled[r]) + n, self.limits.kv_lookahead))
            before = len(view.running)
            ok = _grow(view, r, tokens)
            preempted = preempted or len(view.running) < before
            if not ok:
                break
            if decoding:
                decode_ids.append(r)
            else:
                view.kv.cache_prompt(r, int(s.prefilled[r]) + n)   # (rule 3: the scheduled blocks' full units)
                prefills.add(view, r, n)
            budget -= n + slots
            i += 1
        if not preempted:                                                 # rule 4
            while self.admissible(view, budget):
                r = view.admit_head(now_s, reserve=False)   # blocks come with each chunk (rule 3)
                if view.decoding(r):   # swapped back in (host tier): decodes from the next step
                    continue
                done = int(s.prefilled[r])   # (its cached prompt tokens: allocate_slots counts computed + new)
                n = int(min(s.prefill_target[r] - done, budget - slots))
                if not view.kv.grow(r, int(self.limits.with_lookahead(done + n, self.limits.admit_lookahead))):
                    view.unadmit_head(r)   # (vLLM: `if new_blocks is None: break`, nobody preempted)
                    break
                view.kv.cache_prompt(r, done + n)
                prefills.add(view, r, n)
                budget -= n + slots
        return prefills.plan(view, decode_ids)
