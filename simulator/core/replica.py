"""One model replica: continuous batching with a paged KV cache and speculative decoding (chain, tree,
multi-draft; simulator.speculation.shapes), optionally under a control policy
(simulator.speculation.control, step by step). Batching schedulers: `BATCHING` at the end.

The replica forms one step at a time (`plan_step` → `apply_step`) or, when its batch cannot change
until the next arrival or the first finish, a bulk of decode steps at once (`plan_bulk` → `apply_bulk`).
Both paths produce identical results: they price steps with the same function, draw acceptance from the
same counter-based stream (simulator.speculation.acceptance) and allocate KV blocks by the same rule.

KV blocks are counted, not placed: a request holds ceil(tokens / block_size) blocks; fragmentation is
zero under paging by construction, so counting is exact for capacity purposes. With `cluster.kv_cache`
(prefix caching, a host tier, swap preemption: `kv`, a simulator.core.kv_cache.KVTiers) the blocks of
cached units are counted once however many requests use them (`RequestState.unit_blocks`), and steps
that move KV to or from host memory pay for it (`StepPlan.io_tokens`).

Parallel sampling and beam search (`workload.parallel_samples` = n > 1, `RequestState.samples`): the prompt
is prefilled once; its n sequences then decode in lockstep, each one a decode row attending its own
context, and the request finishes when they all have emitted output_tokens tokens. KV: the prompt's full
blocks are held once and each sequence holds the rest (`_kv_blocks`). Approximations, named: every
sequence has the request's output length (fixed-length sampling, `ignore_eos`; beams of equal length); a
preempted request re-prefills prompt + the tokens of one sequence, not of all n (the recompute of the other
n − 1 sequences' tokens is not priced); such replicas run step by step (no bulks). `max_batch_size` counts
sequences, as vLLM's max_num_seqs does (`_batch_full`).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from models.step import chunk_attention_pairs
from simulator.speculation.acceptance import ChainAcceptance
from simulator.config.scenario import SchedulerConfig
from simulator.core.bulk import DecodeProfile
from simulator.core.state import RequestState
from simulator.core.steplog import StepLog
from simulator.cost.step_cost import StepCostModel
from simulator.core import vllm_v1

_NO_IDS = np.zeros(0, dtype=np.int64)   # the decode ids of a step without decodes (shared, read-only)
_NO_IDS.flags.writeable = False


@dataclass
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

    @property
    def empty(self) -> bool:
        return not self.prefill_ids and not len(self.decode_ids)


class Replica:
    def __init__(self, index: int, state: RequestState, sched: SchedulerConfig, cost: StepCostModel,
                 acceptance: ChainAcceptance | None, total_blocks: int, log: StepLog, policy=None, kv=None):
        self.index = index
        self.s = state
        self.sched = sched
        self.batching = BATCHING[sched.kind]
        self.cost = cost
        self.acceptance = acceptance
        self.depth = acceptance.depth if acceptance is not None else 0
        # draft tokens verified per request per step (tree nodes for trees) and verify query tokens
        self.draft_tokens = acceptance.draft_tokens if acceptance is not None else 0
        self.q = cost.q if acceptance is not None else 1
        self.policy = policy  # a simulator.speculation.control.ControlPolicy, or None (fixed shape)
        self.total_blocks = total_blocks
        self.used_blocks = 0
        self.log = log
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.prefilling = 0  # running requests whose prefill is not complete
        self.pending_finish_s = np.zeros(0)  # sorted finish times inside the bulk in flight
        self.clock_s = 0.0
        self.last_step_s = 0.0  # duration of the latest decode-only step (sizes bulk plans; no effect on results)
        self.stop_bulk_at_finish = False  # closed-loop workloads: a finish sends a new request at once
        self.kv = kv                      # simulator.core.kv_cache.KVTiers, or None (plain block counting)
        self._io = [0, 0]                 # KV tokens and transfers to or from the host for the step being formed
        self.arrivals = None   # simulator.core.timeline.OwnArrivals when routed ahead of time, else None
        self.cuttable_end_s = -np.inf  # end of a bulk in flight that an arrival routed here would cut
        self.profile = DecodeProfile(self)  # the decoding requests' futures, for bulks (simulator.core.bulk)
        self.multi_sample = bool((state.samples > 1).any())  # some request decodes several sequences
        # bulks need one sequence per request, block counting per request and a fixed shape (`bulk_ready`)
        self._bulk_capable = policy is None and kv is None and not self.multi_sample
        self.paused = None   # simulator.core.pauses.PausedRequests when requests may leave the batch for a while

    @property
    def parallel_safe(self) -> bool:
        """Its state read after a run is its clock and the requests' and the step log's (no policy, KV tier
        or pause state): it may run in a worker process (simulator.core.parallel)."""
        return self.policy is None and self.kv is None and self.paused is None

    # ---- load seen by the router -------------------------------------------------------------------
    def outstanding_at(self, now_s: float) -> int:
        """Requests routed here and not finished at `now_s`. A bulk in flight has applied none of its
        finishes yet, so those that happen before `now_s` are subtracted (as in step-by-step mode, where
        a finish at exactly `now_s` is processed after an arrival at `now_s`)."""
        pending = self.pending_finish_s
        early = int(np.searchsorted(pending, now_s, side="left")) if len(pending) else 0
        return len(self.waiting) + len(self.running) - early

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def blocks_for(self, tokens) -> np.ndarray | int:
        return -(-tokens // self.sched.block_size)

    def _kv_blocks(self, ids, tokens):
        """Blocks request(s) `ids` hold with `tokens` tokens in each of their sequences: blocks_for(tokens)
        for one sequence. A request of n > 1 sequences holds its prompt's full blocks once and each sequence
        the rest, blocks_for(tokens) + (n − 1)·(blocks_for(tokens) − ⌊prompt / block_size⌋), as a paged cache
        with copy-on-write forks (vLLM) does. Approximations: the n − 1 copies of the prompt's partial last
        block are reserved at admission rather than at the first decode step (at most n − 1 blocks early);
        beams of a beam search share the prompt only, not the tokens of common ancestors (an upper bound)."""
        blocks = self.blocks_for(tokens)
        if not self.multi_sample:
            return blocks
        s = self.s
        shared = np.minimum(s.prompt[ids] // self.sched.block_size, blocks)
        return blocks + (s.samples[ids] - 1) * (blocks - shared)

    def _batch_full(self) -> bool:
        """The waiting head cannot join: the batch's sequences would exceed max_batch_size."""
        if not self.multi_sample:
            return len(self.running) >= self.sched.max_batch_size
        s = self.s
        rows = int(s.samples[self.running].sum()) if self.running else 0
        return rows + int(s.samples[self.waiting[0]]) > self.sched.max_batch_size

    def _decode_rows(self, ids: np.ndarray) -> int:
        """Decode rows of the decode requests `ids`: one per sequence."""
        return int(self.s.samples[ids].sum()) if self.multi_sample else len(ids)

    def _decode_context(self, ids: np.ndarray) -> int:
        """Σ context over the decode rows of `ids`: every sequence attends its own context, the shared
        prompt included (no shared-prefix attention kernel)."""
        s = self.s
        return int((s.samples[ids] * s.ctx[ids]).sum()) if self.multi_sample else int(s.ctx[ids].sum())

    def fits(self, r: int) -> bool:
        """Request `r` can ever run here: its whole life (prompt + output + a verify window) fits in KV."""
        s = self.s
        return self._kv_blocks(r, int(s.prompt[r] + s.output[r] + self.q)) <= self.total_blocks

    def fits_mask(self, ids: np.ndarray) -> np.ndarray:
        """`fits` of many requests at once."""
        s = self.s
        return self._kv_blocks(ids, s.prompt[ids] + s.output[ids] + self.q) <= self.total_blocks

    # ---- admission / preemption --------------------------------------------------------------------
    def _is_decoding(self, r: int) -> bool:
        return self.s.prefilled[r] >= self.s.prefill_target[r]

    def _admission(self, r: int) -> tuple[int, int]:
        """(blocks taken from the free pool, prompt tokens to compute) if request r were admitted now."""
        target = int(self.s.prefill_target[r])
        kv = self.kv
        if kv is None:
            return self._kv_blocks(r, target), target
        if kv.host is not None and r in kv.host.swapped:   # swapped out: its KV comes back, nothing to compute
            return self.blocks_for(kv.host.swapped[r]), 0
        if kv.cache is None:
            return self.blocks_for(target), target
        need = kv.cache.need_blocks(r, target, self.blocks_for(target))
        return need, target

    def _head_admissible(self, token_room: int, batch_len: int) -> bool:
        if not self.waiting or self._batch_full():
            return False
        if self.kv is None:  # (the hot path of plain runs: `_admission` inlined)
            r = self.waiting[0]
            tokens = int(self.s.prefill_target[r])
            need = self._kv_blocks(r, tokens)
        else:
            need, tokens = self._admission(self.waiting[0])
        if need > self.total_blocks - self.used_blocks:
            return False
        return token_room > 0 and (batch_len == 0 or tokens <= token_room)

    def _admit_head(self, now_s: float, reserve_prompt: bool = True) -> int:
        """Admit the waiting head: reserve its prompt's blocks (cached prefix units shared) and set what is
        left to compute (`prefilled` = cached tokens). A swapped-out request resumes decoding instead.
        `reserve_prompt` False (plain block counting only): no blocks yet, the scheduler allocates them
        with each chunk it schedules (simulator.core.vllm_v1)."""
        r = self.waiting.popleft()
        s = self.s
        if math.isnan(s.admit_s[r]):
            s.admit_s[r] = now_s
        self.running.append(r)
        kv = self.kv
        if kv is not None and kv.host is not None and r in kv.host.swapped:
            tokens = kv.host.swap_in(r)
            need = int(self.blocks_for(tokens))
            if kv.cache is not None:
                kv.cache.take(need)
            s.blocks[r], s.unit_blocks[r] = need, 0
            self.used_blocks += need
            s.ctx[r] = tokens
            s.prefilled[r] = s.prefill_target[r]
            self._io[0] += tokens
            self._io[1] += 1
            return r
        target = int(s.prefill_target[r])
        need = int(self._kv_blocks(r, target)) if reserve_prompt or kv is not None else 0
        if kv is None or kv.cache is None:
            s.blocks[r] = need
            self.used_blocks += need
            s.prefilled[r] = 0
            s.ctx[r] = 0
        else:
            got = kv.cache.admit(r, target, need)
            s.blocks[r], s.unit_blocks[r] = got.private_blocks, got.unit_blocks
            self.used_blocks += got.taken_blocks
            s.prefilled[r] = s.ctx[r] = got.hit_tokens
            if s.preemptions[r] == 0:
                s.cached_prompt_tokens[r] = got.hit_tokens
            kv.hit_tokens += got.hit_tokens
            if got.loaded_tokens:
                kv.loaded_tokens += got.loaded_tokens
                self._io[0] += got.loaded_tokens
                self._io[1] += 1
        self.prefilling += 1
        return r

    def _release(self, r: int, cache: str) -> None:
        """Free request r's blocks (`cache`: which of its units to keep cached, simulator.core.kv_cache)."""
        s = self.s
        kv = self.kv
        if kv is None or kv.cache is None:
            self.used_blocks -= int(s.blocks[r])
        else:
            self.used_blocks -= kv.cache.release(r, int(s.ctx[r]), int(s.blocks[r]), cache)
        s.blocks[r] = 0
        s.unit_blocks[r] = 0

    def _preempt(self, r: int) -> None:
        """Preemption by recompute: free the request's KV; on re-admission it re-prefills prompt + emitted
        (with prefix caching its own blocks stay cached until evicted). With `kv_cache.preemption: swap`
        a decoding request's KV goes to host memory instead (when it fits there) and comes back on
        re-admission; both copies are paid in the steps that make them."""
        s = self.s
        decoding = self._is_decoding(r)
        if not decoding:
            self.prefilling -= 1
        kv = self.kv
        swap = kv is not None and kv.swap and decoding and kv.host.swap_out(r, int(s.ctx[r]))
        self._release(r, "none" if swap else "all")
        if swap:
            kv.swapped_tokens += int(s.ctx[r])
            self._io[0] += int(s.ctx[r])
            self._io[1] += 1
        else:
            s.ctx[r] = 0
            s.prefilled[r] = 0
            s.prefill_target[r] = s.prompt[r] + s.emitted[r]
        s.preemptions[r] += 1
        self.running.remove(r)
        self.waiting.appendleft(r)

    def _reserve_decode_blocks(self, decode_ids: list[int]) -> list[int]:
        """Make room for each decode request's ctx + q tokens, preempting the most recently admitted
        requests (LIFO, as vLLM does) until they fit. Returns the surviving decode ids."""
        self.profile.dissolve()   # the step-by-step path reads and writes the requests' state
        s = self.s
        while decode_ids:
            ids = np.asarray(decode_ids)
            need = self._kv_blocks(ids, s.ctx[ids] + self.q)
            if self.kv is not None:
                need = need - s.unit_blocks[ids]
            extra = np.maximum(need - s.blocks[ids], 0)
            if int(extra.sum()) <= self.total_blocks - self.used_blocks:
                s.blocks[ids] += extra
                self.used_blocks += int(extra.sum())
                if self.kv is not None and self.kv.cache is not None:
                    self.kv.cache.take(int(extra.sum()))
                return decode_ids
            victim = self.running[-1]
            self._preempt(victim)
            if victim in decode_ids:
                decode_ids = [r for r in decode_ids if r != victim]
        return decode_ids

    # ---- step formation ----------------------------------------------------------------------------
    def plan_step(self, now_s: float) -> StepPlan:
        plan = self._plan(now_s)
        plan.queued, plan.running = len(self.waiting), len(self.running)
        if self.policy is not None and len(plan.decode_ids):
            plan.counts = self.policy.counts(self, plan.decode_ids, plan.queued)
        if self.kv is not None:
            plan.io_tokens, plan.io_transfers = self._io
            self._io = [0, 0]
            if self.kv.shared_attention and len(plan.decode_ids) > 1:
                plan.shared = self.kv.cache.shared_context(plan.decode_ids)
        return plan

    def _plan(self, now_s: float) -> StepPlan:
        return self.batching.plan(self, now_s)

    def _plan_vllm(self, now_s: float) -> StepPlan:
        """Prefill-first: if any waiting request can be admitted, this step prefills the admitted ones
        (FCFS, up to max_batched_tokens; a lone prompt longer than the budget is admitted alone)."""
        prefill_ids: list[int] = []
        room = self.sched.max_batched_tokens
        s = self.s
        while self._head_admissible(room if prefill_ids else max(room, 1), len(prefill_ids)):
            r = self._admit_head(now_s)
            if self._is_decoding(r):   # swapped back in: decodes from the next decode step
                continue
            prefill_ids.append(r)
            room -= int(s.prefill_target[r] - s.prefilled[r])
        if prefill_ids:
            chunks, pairs = [], 0
            for r in prefill_ids:
                done = int(s.prefilled[r])
                chunks.append(int(s.prefill_target[r]) - done)
                pairs += chunk_attention_pairs(chunks[-1], done)
            return StepPlan(prefill_ids, chunks, _NO_IDS, pairs, 0)
        decode_ids = self._reserve_decode_blocks(list(self.running))
        ids = np.asarray(decode_ids, dtype=np.int64)
        return StepPlan([], [], ids, 0, self._decode_context(ids))

    def _plan_sarathi(self, now_s: float) -> StepPlan:
        """Chunked prefill (Sarathi-Serve): all decodes run every step; prompt chunks fill the rest of a
        `chunk_tokens` token budget, partially prefilled requests first, then new admissions (FCFS)."""
        s = self.s
        decode_ids = self._reserve_decode_blocks([r for r in self.running if self._is_decoding(r)])
        room = self.sched.chunk_tokens - self._decode_rows(np.asarray(decode_ids, dtype=np.int64)) * self.q
        prefill_ids, chunks = [], []
        pairs = 0
        for r in self.running:
            if room <= 0:
                break
            if not self._is_decoding(r):
                c = int(min(room, s.prefill_target[r] - s.prefilled[r]))
                prefill_ids.append(r), chunks.append(c)
                pairs += chunk_attention_pairs(c, int(s.prefilled[r]))
                room -= c
        while room > 0 and self.waiting and not self._batch_full():
            r = self.waiting[0]
            if self._admission(r)[0] > self.total_blocks - self.used_blocks:
                break
            self._admit_head(now_s)
            if self._is_decoding(r):   # swapped back in: decodes from the next step
                continue
            c = int(min(room, s.prefill_target[r] - s.prefilled[r]))
            prefill_ids.append(r), chunks.append(c)
            pairs += chunk_attention_pairs(c, int(s.prefilled[r]))
            room -= c
        ids = np.asarray(decode_ids, dtype=np.int64)
        return StepPlan(prefill_ids, chunks, ids, pairs, self._decode_context(ids))

    # ---- executing one step ------------------------------------------------------------------------
    def _sample_tau(self, ids: np.ndarray, step_index: np.ndarray) -> np.ndarray:
        if self.acceptance is None:
            return np.zeros(np.broadcast(ids, step_index).shape, dtype=np.int64)
        return self.acceptance.draw(ids, step_index, self.s.emitted[ids])

    def step_costs(self, plan: StepPlan):
        if plan.counts is not None:
            costs = self.policy.price(plan, self)
        else:
            costs = self.cost.step(sum(plan.prefill_chunks), len(plan.prefill_ids), plan.prefill_attn_pairs,
                                   self._decode_rows(plan.decode_ids), plan.decode_context_tokens, plan.shared)
        if plan.io_tokens:
            costs = (costs[0], costs[1].with_kv_io(self.kv.io_seconds(plan.io_tokens, plan.io_transfers)))
        return costs

    def apply_step(self, plan: StepPlan, start_s: float, end_s: float, costs, finished: list[int]) -> None:
        s = self.s
        draft, target = costs
        blocks_used = self.used_blocks
        if not plan.prefill_ids:  # a prefill step's duration says nothing about the next decode steps
            self.last_step_s = end_s - start_s
        emitted_total = 0
        for r, c in zip(plan.prefill_ids, plan.prefill_chunks):
            s.prefilled[r] += c
            s.ctx[r] += c
            if s.prefilled[r] >= s.prefill_target[r]:
                self.prefilling -= 1
                s.emitted[r] += 1
                emitted_total += int(s.samples[r])   # each sequence's first token, from the prompt's logits
                if math.isnan(s.first_token_s[r]):
                    s.first_token_s[r] = end_s
        ids = plan.decode_ids
        tau_sum = 0
        if len(ids):
            tau = self._sample_tau(ids, s.decode_steps[ids])
            drafted = self.draft_tokens
            if plan.counts is not None:  # a policy verified fewer drafts: nested draws, truncate
                tau = np.minimum(tau, plan.counts)
                drafted = np.where(plan.counts == self.depth, self.draft_tokens, plan.counts)
            inc = np.minimum(tau + 1, s.output[ids] - s.emitted[ids])
            s.emitted[ids] += inc
            s.ctx[ids] += inc
            s.decode_steps[ids] += 1
            s.accepted[ids] += tau
            s.drafted[ids] += drafted
            tau_sum = int(tau.sum())
            emitted_total += int((inc * s.samples[ids]).sum()) if self.multi_sample else int(inc.sum())
        ds, ts = self.cost.flops_scales  # per-GPU op-graph FLOPs/bytes → replica totals
        self.log.append_row(   # the columns of simulator.results.metrics.STEP_COLUMNS, in its order
            (self.index, start_s, end_s - start_s, sum(plan.prefill_chunks), len(plan.prefill_ids),
             self._decode_rows(ids), self._logged_q(plan), plan.decode_context_tokens, draft.seconds,
             target.seconds - target.engine_s - target.kv_io_s, target.engine_s, tau_sum, emitted_total,
             ds * draft.flops + ts * target.flops, ds * draft.bytes + ts * target.bytes, blocks_used,
             self.total_blocks, plan.queued, plan.running),
            kv_io_s=target.kv_io_s)
        candidates = plan.prefill_ids + ids.tolist()
        if self.paused is not None:   # some of them leave the batch for a while (simulator.core.pauses)
            candidates = self.paused.hook.after_step(self, candidates, end_s)
        self._finish_done(candidates, end_s, finished)

    def _logged_q(self, plan: StepPlan) -> int:
        if plan.counts is None or not len(plan.counts):
            return self.q
        if (plan.counts == self.depth).all():
            return self.q
        return int(round(float((plan.counts + 1).mean())))

    def _finish_done(self, candidates, end_s: float, finished: list[int]) -> None:
        s = self.s
        for r in candidates:
            if s.emitted[r] >= s.output[r] and np.isnan(s.finish_s[r]):
                s.finish_s[r] = end_s
                self._release(r, "shared")
                self.running.remove(r)
                finished.append(r)

    # ---- bulk of decode-only steps -----------------------------------------------------------------
    def bulk_ready(self) -> bool:
        """True when the next steps are decode-only and the batch cannot change before a finish, an
        arrival, or KV exhaustion: nothing is mid-prefill and the waiting head cannot be admitted (its
        admissibility only shrinks while decodes grow their KV). A replica whose KV manager decides
        evictions block by block (prefix caching, a host tier) runs step by step: bulks (simulator.core.bulk)
        count blocks per request, not the shared, cached units of a prefix cache."""
        if not self.running or self.prefilling or not self._bulk_capable or self.paused is not None:
            return False
        return not self.head_admissible()

    def head_admissible(self) -> bool:
        """The waiting head would be admitted by the next step (the batching scheduler's rule)."""
        batching = self.batching
        return batching.admissible(self, batching.admission_room(self))


class BatchingScheduler:
    """A batching scheduler: how a replica forms a step (`plan`), the token room a waiting request
    must fit for the batch to change (`admission_room`) and whether the waiting head would be admitted
    with that room (`admissible`); the last two decide when bulk stepping is safe."""

    def __init__(self, plan, admission_room, admissible=lambda rep, room: rep._head_admissible(room, 0)):
        self.plan, self.admission_room, self.admissible = plan, admission_room, admissible


# scheduler.kind -> BatchingScheduler (a new one: a plan method plus one line here)
BATCHING = {
    "vllm": BatchingScheduler(Replica._plan_vllm, lambda rep: max(rep.sched.max_batched_tokens, 1)),
    "sarathi": BatchingScheduler(Replica._plan_sarathi, lambda rep: rep.sched.chunk_tokens - len(rep.running) * rep.q),
    "vllm_v1": BatchingScheduler(vllm_v1.plan, vllm_v1.admission_room, vllm_v1.admissible),
}
