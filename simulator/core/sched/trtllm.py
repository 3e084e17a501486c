"""`scheduler.kind: trtllm` — TensorRT-LLM's in-flight batching (IFB): its capacity scheduler with the
default GUARANTEED_NO_EVICT policy, then its micro-batch scheduler under `max_num_tokens`
(`scheduler.max_batched_tokens`) and `max_batch_size`, with context chunking on or off
(`cluster.engine.chunked_prefill`; the LLM API's enable_chunked_prefill, default False).

Rule by rule (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp and microBatchScheduler.cpp,
`MicroBatchScheduler::operator()`):
- capacity (GUARANTEED_NO_EVICT): a new request starts only if the KV blocks of its whole life (prompt +
  output; `view.life_tokens`: the prompt alone on a disaggregated prefill replica, which hands the request
  off after its prompt) fit beside the blocks every running request still needs to finish; running
  requests are never evicted (no preemption);
- the active requests are walked in order (those generating first: they arrived earlier); a generation
  request takes 1 + its draft tokens of the budget; a context request without chunking takes its whole
  prompt; the first request that does not fit in `max_num_tokens` ends the walk (`break`), as does reaching
  `max_batch_size`;
- with chunking, context requests are collected and, if they do not all fit in what the generation
  requests left, cut first-come-first-served (kFIRST_COME_FIRST_SERVED) into chunks that are whole KV
  blocks (`chunkUnitSize` = tokens per block), the last chunk of a prompt excepted.
A step mixes context and generation requests (in-flight batching).

`cluster.engine.capacity_scheduler_policy: max_utilization` (the LLM API's scheduler_config.
capacity_scheduler_policy MAX_UTILIZATION; GUARANTEED_NO_EVICT is the default there and in trtllm-bench)
replaces the capacity rule (capacityScheduler.cpp `MaxUtilizationScheduler::operator()` and
`trySchedulingRequestMaxUtilization`, scheduledBlocksManager.h `MaxUtilizationScheduledBlocksManager`,
kvCacheManager.cpp `getNeededBlocksOneStep`, read at NVIDIA/TensorRT-LLM 02a10fed):
- the active requests are walked in order, each asking for the blocks of its next step only: a generation
  request those its next 1 + draft tokens open beyond what it holds (`Replica.decode_kv_tokens`), a context
  request at its first chunk the blocks of its whole prompt, a context request between chunks none (its
  prompt was reserved at its first chunk); the running total must fit the free blocks;
- a request that does not fit pauses the last started request (generating, or between context chunks) —
  its KV is freed (`schedulingRemoveSequence`) — and is tried again, until it fits or is itself the one
  paused; requests after a paused one, new ones included, are not scheduled in that step. A paused request
  computes its prompt and the tokens it generated again as a new context (`LlmRequest::pause`):
  `Replica.preempt`, recompute, back at the head of the waiting queue (it keeps its place among the active
  requests, ahead of every newer one);
- a new request that does not fit, with no started request after it, ends the walk (FCFS).
Approximations, named: a running request the micro-batch pass then leaves out of the step (token budget,
max_batch_size) gets its next step's blocks with the others (TensorRT-LLM counts them in the capacity pass
and allocates them in the step that runs it); the two-step look-ahead of several micro-batches
(`manyMicroBatches`, pipeline parallelism) is not modelled; a paused request's new prompt is not capped at
max_input_len (without context chunking, simulator.cluster.build refuses a budget such a prompt would not fit). With either policy, TensorRT-LLM's `beneficialToSkip` (a context request waits a step when
an earlier context request of the step is computing its first uncached block, for reuse) is not modelled.
"""
from __future__ import annotations

import numpy as np

from simulator.core.sched import BatchLimits, Prefills, StepPlan, grow_decodes


class TrtllmIfb:
    def __init__(self, limits: BatchLimits, chunking: bool = False, max_utilization: bool = False):
        self.limits, self.chunking, self.max_utilization = limits, chunking, max_utilization

    # ---- capacity: GUARANTEED_NO_EVICT -------------------------------------------------------------------
    def _reserved_blocks(self, view) -> int:
        """Blocks the running requests still need to finish (their whole life here, `life_tokens`, minus what they
        hold now: read through the view, since between bulks the request arrays hold a decoding request's blocks
        as of its join, simulator.core.bulk). What a request holds counts the prefix-cache units it shares
        (`RequestState.unit_blocks`, with cluster.kv_cache.prefix_caching: its prompt's full blocks) beside its
        private blocks, as TensorRT-LLM's getRemainingBlocksToCompletion counts every block allocated to the
        request, reused ones included (GuaranteedNoEvictScheduler, capacityScheduler.cpp): without them a running
        request's prompt was reserved a second time and the next request waited for its finish."""
        kv = view.kv
        if not view.running:
            return 0
        ids = np.asarray(view.running)
        life = kv.blocks_for(view.life_tokens(ids))
        return int(np.maximum(life - view.blocks_held(ids) - view.s.unit_blocks[ids], 0).sum())

    def _fits_for_life(self, view, r: int) -> bool:
        kv = view.kv
        life = int(kv.blocks_for(int(view.life_tokens(r))))
        return life <= kv.total_blocks - kv.used_blocks - self._reserved_blocks(view)

    # ---- capacity: MAX_UTILIZATION -----------------------------------------------------------------------
    @staticmethod
    def _pause_until_next_step_fits(view) -> bool:
        """Give every generating request the blocks of its next step, pausing the last started requests
        (`Replica.preempt`) until they fit (module docstring); True when it paused any. The walk of
        `MaxUtilizationScheduler` schedules the longest run of the active requests whose next-step blocks fit
        the free blocks plus those of the requests it paused after them: with needs of zero or more, that is
        the requests left once the last started ones are paused until the rest's needs fit, which
        `grow_decodes` does (a request between context chunks needs none)."""
        before = len(view.running)
        grow_decodes(view, [r for r in view.running if view.decoding(r)])
        return len(view.running) < before

    def _fits_now(self, view, r: int) -> bool:
        """The waiting request r may start under the capacity policy: its whole life's blocks beside what
        the running requests still need (GUARANTEED_NO_EVICT), or its prompt's blocks in the free ones
        (MAX_UTILIZATION, after the running requests' next-step blocks)."""
        if not self.max_utilization:
            return self._fits_for_life(view, r)
        kv = view.kv
        return kv.need(r)[0] <= kv.total_blocks - kv.used_blocks

    # ---- micro-batch -------------------------------------------------------------------------------------
    def plan(self, view, now_s: float) -> StepPlan:
        paused = self.max_utilization and self._pause_until_next_step_fits(view)
        budget = self.limits.max_batched_tokens
        slots = self.limits.max_batch_size
        decode_ids: list[int] = []
        prefills = Prefills()
        for r in view.running:                 # generation requests (and chunked contexts in progress)
            if len(decode_ids) + len(prefills.ids) >= slots:
                break
            if view.decoding(r):
                if budget < view.q:
                    break
                decode_ids.append(r)
                budget -= view.q
            elif self.chunking:
                chunk = self._chunk(view, r, budget)
                if chunk <= 0:
                    break
                budget -= prefills.add(view, r, chunk)
            else:                              # (a whole prompt admitted earlier, still to compute)
                rest = int(view.s.prefill_target[r] - view.s.prefilled[r])
                if rest > budget:
                    break
                budget -= prefills.add(view, r)
        while not paused and view.waiting and len(decode_ids) + len(prefills.ids) < slots:
            r = view.waiting[0]
            if not self._fits_now(view, r) or view.batch_full():
                break
            prompt = int(view.s.prefill_target[r])
            if not self.chunking and prompt > budget:
                break
            if self.chunking and min(prompt, budget // view.kv.block_size * view.kv.block_size) <= 0:
                break
            view.admit_head(now_s)
            if view.decoding(r):   # swapped back in: decodes from the next step
                continue
            budget -= prefills.add(view, r, self._chunk(view, r, budget) if self.chunking else None)
        # blocks for the decodes' next tokens: reserved for life at admission (GUARANTEED_NO_EVICT) or given by
        # the capacity pass (MAX_UTILIZATION), so this never preempts
        return prefills.plan(view, grow_decodes(view, decode_ids) if decode_ids else [])

    def _chunk(self, view, r: int, budget: int) -> int:
        """FCFS chunk: the rest of r's prompt, or the budget rounded down to whole KV blocks."""
        rest = int(view.s.prefill_target[r] - view.s.prefilled[r])
        if rest <= budget:
            return rest
        unit = view.kv.block_size
        return budget // unit * unit

    def decodes_every_running(self, view) -> bool:
        """The walk of `plan` takes every running request: 1 + draft tokens each fit `max_num_tokens` and
        `max_batch_size` (admission can overshoot the budget: prompts of a step are counted at their size,
        not at the q tokens they decode with from the next step)."""
        return len(view.running) * view.q <= self.limits.max_batched_tokens and \
            len(view.running) <= self.limits.max_batch_size

    def admission_room(self, view) -> int:
        return self.limits.max_batched_tokens - sum(1 for r in view.running if view.decoding(r)) * view.q

    def admissible(self, view, token_room: int) -> bool:
        """The waiting head would start with `token_room` tokens left (MAX_UTILIZATION: its prompt fits the blocks
        free now, a bound on what the capacity pass leaves it, as bulks need: simulator.core.sched)."""
        if not view.waiting or view.batch_full():
            return False
        r = view.waiting[0]
        if not self._fits_now(view, r):
            return False
        return token_room > 0 and (self.chunking or int(view.s.prefill_target[r]) <= token_room)
