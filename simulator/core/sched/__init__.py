"""Batching schedulers: how a replica forms its next step (`plan(view, now_s) -> StepPlan`), apart from its
KV manager (simulator.core.kv), as vLLM V1 keeps `Scheduler` apart from `KVCacheManager`.

A scheduler reads and changes the replica through its view (`simulator.core.replica.Replica`): the request
columns `s`, the queues `waiting` (FCFS) and `running` (admission order), the KV manager `kv`, the verify
width `q`, and the moves `admit_head(now_s, reserve)` and `preempt(r)`. Besides `plan` it says the token
room a waiting request would find in a decode-only step of the current batch (`admission_room`) and
whether the waiting head would be admitted with it (`admissible`): the replica runs bulks of decode steps
(simulator.core.bulk) only while no step can admit anyone.

`SCHEDULERS` maps `scheduler.kind` to its class, one file each; a new one is its file plus one line there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from models.step import chunk_attention_pairs

NO_IDS = np.zeros(0, dtype=np.int64)   # the decode ids of a step without decodes (shared, read-only)
NO_IDS.flags.writeable = False


@dataclass(frozen=True)
class BatchLimits:
    """What bounds a step (the `scheduler:` section): sequences in the batch (vLLM's max_num_seqs), tokens
    per step (max_num_batched_tokens) and Sarathi's chunk budget; `decode_kv_cap`: the most KV tokens a
    decoding request's step may reach (vLLM V1: max_model_len − 1, `Replica.decode_kv_tokens`), None: none;
    `kv_lookahead` / `admit_lookahead`: KV slots reserved beyond a running request's scheduled tokens / a waiting
    request's first chunk (vLLM V1's num_lookahead_tokens: profiles.engine_time.batch_defaults.vllm_kv_lookahead),
    at most decode_kv_cap + 1 (max_model_len) tokens in all; `prefill_requests`: the most requests one prefill step
    admits (SGLang's prefill_only_one_req: batch_defaults.sglang_prefill_requests), None: no such limit;
    `prefill_input_tokens`: the prefill-first scheduler chunks prompts as SGLang does (simulator.core.sched.vllm),
    a step's prompts bounded by max_batched_tokens (chunked_prefill_size) and a prompt not started behind others
    where it exceeds this many tokens less the step's (max_prefill_tokens); None: no chunking; `draft_slots`: tokens of
    the budget every request a step schedules takes beyond its own (vLLM V1 0.28 on with a draft model: its
    proposer's extra row, profiles.engine_time.batch_defaults.vllm_drafting_slots); `output_reserve`: SGLang's
    reserve for the running requests' future output that a waiting request must fit beside
    (simulator.core.sched.sglang_reserve), None: none; `queue_order`: the order in which the prefill-first scheduler
    takes waiting requests (SGLang's --schedule-policy: simulator.core.sched.queue_order), None: arrival order;
    `admit_whole_prompt`: a waiting request is admitted only when the blocks of its whole prompt (for a preempted
    request, prompt and output) are free besides those of its first chunk (vLLM V1 0.19 on, scheduler_reserve_full_isl:
    profiles.engine_time.batch_defaults.vllm_whole_prompt_admission), with `whole_prompt_window_cap` a sliding-window
    group's blocks in that check at most its peak over steps of max_batched_tokens (0.20 on)."""

    max_batch_size: int
    max_batched_tokens: int
    chunk_tokens: int
    decode_kv_cap: int | None = None
    kv_lookahead: int = 0
    admit_lookahead: int = 0
    prefill_requests: int | None = None
    prefill_input_tokens: int | None = None
    draft_slots: int = 0
    output_reserve: object = None   # sglang_reserve.OutputReserve
    queue_order: object = None      # queue_order.Fcfs / LongestPrefixMatch / LongestOutputFirst
    admit_whole_prompt: bool = False
    whole_prompt_window_cap: bool = False

    def with_lookahead(self, tokens, lookahead: int):
        """KV slots a request asks for to hold `tokens` (an int or an array) and `lookahead` slots beyond them,
        at most max_model_len (decode_kv_cap + 1) where the cap is set (vLLM: `num_tokens_need_slot =
        min(computed + new + lookahead, max_model_len)`, kv_cache_manager.py from v0.9.0)."""
        if not lookahead:
            return tokens
        need = tokens + lookahead
        cap = self.decode_kv_cap
        return need if cap is None else np.minimum(need, cap + 1)


@dataclass(slots=True)
class StepPlan:
    prefill_ids: list[int]
    prefill_chunks: list[int]
    decode_ids: np.ndarray
    prefill_attn_pairs: int
    decode_context_tokens: int
    queued: int = 0   # waiting requests when the step was formed
    running: int = 0  # admitted requests when the step was formed
    counts: np.ndarray | None = None  # per-decode-request draft counts chosen by a policy (None: fixed)
    io_tokens: int = 0       # KV tokens moved to or from host memory in this step (swap, host-tier loads)
    io_transfers: int = 0
    shared: tuple[int, int, int] | None = None  # shared-prefix attention aggregates of the decode requests
    host_free: bool = False  # the engine's host work of this step was done for its group (multi-step)

    @property
    def empty(self) -> bool:
        return not self.prefill_ids and not len(self.decode_ids)


class Scheduler(Protocol):
    def plan(self, view, now_s: float) -> StepPlan: ...

    def admission_room(self, view) -> int: ...

    def admissible(self, view, token_room: int) -> bool: ...

    # Optional: `decodes_every_running(view) -> bool`, False when the next decode-only step would leave some
    # running request out (a token budget below Σ q), or where a waiting request could be admitted after some
    # decode steps although not now (SGLang's reserve: sched.vllm); bulks of decode steps (Replica.bulk_ready)
    # step every running request, so they wait until it is True again. Absent: every decode-only step decodes
    # them all. Optional: `after_bulk(steps)`, told of every bulk applied (simulator.core.bulk.apply_bulk).
    # Optional: `allocates_per_chunk = True` where a prompt's KV blocks come with its chunks, not at admission (the
    # KV manager then caches its units as they are allocated: simulator.cluster.build.kv_manager).
    # Optional: `reuses_head_verdict = True` where `plan(view, now_s, head_ok=True)` skips its first check of
    # the waiting head, which the caller has just made with `admissible(view, admission_room(view))`
    # (Replica.bulk_ready, nothing mid-prefill) and found true. Absent: plan(view, now_s) checks it again.
    # Optional: `prefills_apart = True` where a step with prompts decodes nobody and completes every prompt it starts,
    # and the next step has prompts exactly when the waiting head is admissible (`admissible`): a bulk of decode steps
    # may then run through arrivals known ahead, their prefill steps folded in (simulator.core.bulk_arrivals).
    # Optional: `caps_decode_kv = True` where a decoding request's KV reaches at most max_model_len − 1 tokens
    # (BatchLimits.decode_kv_cap, set by simulator.cluster.build.batch_scheduler). Absent: context + q.


class Prefills:
    """The prompt chunks of a step being formed."""

    def __init__(self):
        self.ids: list[int] = []
        self.chunks: list[int] = []
        self.pairs = 0

    def add(self, view, r: int, room: int | None = None) -> int:
        """Schedule the rest of r's prompt, at most `room` tokens of it; returns the chunk's tokens."""
        s = view.s
        done = s.prefilled.item(r)
        c = s.prefill_target.item(r) - done
        if room is not None and room < c:
            c = int(room)
        self.ids.append(r)
        self.chunks.append(c)
        self.pairs += chunk_attention_pairs(c, done)
        return c

    def plan(self, view, decode_ids) -> StepPlan:
        if not len(decode_ids):
            return StepPlan(self.ids, self.chunks, NO_IDS, self.pairs, 0)
        ids = np.asarray(decode_ids, dtype=np.int64)
        return StepPlan(self.ids, self.chunks, ids, self.pairs, view.decode_context(ids))


def head_admissible(view, token_room: int, batch_len: int) -> bool:
    """The waiting head fits now: a batch slot, its prompt's blocks, and its prompt within `token_room`
    (a step's first prompt may take the whole room whatever its length)."""
    if not view.waiting or view.batch_full():
        return False
    need, tokens = view.kv.need(view.waiting[0])
    if need > view.kv.total_blocks - view.kv.used_blocks:
        return False
    return token_room > 0 and (batch_len == 0 or tokens <= token_room)


def plain_head_admissible(view, token_room: int, batch_len: int) -> bool:
    """`head_admissible` for a replica whose KV manager is the plain block pool and whose requests decode one
    sequence each (`Replica.plain_kv`): the same rule, with the pool's arithmetic inline (the hot path)."""
    waiting = view.waiting
    if not waiting or len(view.running) + view.held_rows >= view.limits.max_batch_size:
        return False
    kv = view.kv
    tokens = view.s.at.prefill_target[waiting[0]]   # (a memoryview: simulator.core.state.ScalarViews)
    if -(-tokens // kv.block_size) > kv.total_blocks - kv.used_blocks:
        return False
    return token_room > 0 and (batch_len == 0 or tokens <= token_room)


def grow_decodes(view, decode_ids: list[int]) -> list[int]:
    """Give each decode request blocks for its context + q tokens (`Replica.decode_kv_tokens`), preempting the
    most recently admitted requests (LIFO, as vLLM does) until they fit. Returns the surviving decode ids."""
    view.settle()
    s = view.s
    while decode_ids:
        ids = np.asarray(decode_ids)
        if view.kv.grow(ids, view.decode_kv_tokens(s.ctx[ids])):
            return decode_ids
        victim = view.running[-1]
        view.preempt(victim)
        if victim in decode_ids:
            decode_ids = [r for r in decode_ids if r != victim]
    return decode_ids


from simulator.core.sched.decode_only import DecodeOnly  # noqa: E402  (the registries below)
from simulator.core.sched.multi_step import MultiStep  # noqa: E402
from simulator.core.sched.sarathi import Sarathi  # noqa: E402
from simulator.core.sched.trtllm import TrtllmIfb  # noqa: E402
from simulator.core.sched.vllm import Vllm  # noqa: E402
from simulator.core.sched.vllm_v1 import VllmV1  # noqa: E402

# scheduler.kind -> scheduler class (a new one: its file plus one line here)
SCHEDULERS = {
    "vllm": Vllm,
    "sarathi": Sarathi,
    "vllm_v1": VllmV1,
    "trtllm": TrtllmIfb,
}

__all__ = ["BatchLimits", "DecodeOnly", "MultiStep", "NO_IDS", "SCHEDULERS", "Scheduler", "StepPlan"]
