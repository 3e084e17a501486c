"""The KV manager of models with sliding-window layers beside full attention (gpt-oss), as vLLM V1's hybrid
KV-cache manager holds them: one pool of uniform pages, blocks of the sliding-window groups wholly outside
the window freed as the request advances.

vLLM's rules (file names under vllm/, read in 0.11.0 and 0.32.0):
* KV-cache groups (`v1/core/kv_cache_utils.py`, _get_kv_cache_groups_uniform_page_size): layers of one
  attention type form groups of `group_size` layers (simulator.core.kv.hybrid_state.group_size: 0.32's rule,
  the fewest layers of a type, or the most when they are < 1.5 × the fewest; 0.11 always took the fewest),
  the last group of a type padded; `get_kv_cache_config_from_groups` makes group_size tensors, each shared by
  one layer of every group, so one block id costs group_size pages on every GPU and the pool has
  free memory // (group_size · page) blocks. Its logged "GPU KV cache size" is
  num_blocks // num_groups · block_size tokens (`kv_tokens` here).
* per request and step (`v1/core/kv_cache_manager.py` KVCacheManager.allocate_slots): first
  `remove_skipped_blocks(num_computed_tokens)` — SlidingWindowManager replaces the blocks wholly before
  token C − W + 1 by the null block and frees them (`v1/core/single_type_kv_cache_manager.py`,
  SlidingWindowManager.remove_skipped_blocks in 0.11, get_num_skipped_tokens = max(0, C − W + 1) in 0.32),
  even when the allocation then fails — then every group's block table grows to ceil(N / block_size) for the
  N = computed + new tokens of the step. So with C tokens computed and N needing slots a request holds
  `full_groups · ceil(N / B) + window_groups · (ceil(N / B) − ⌊max(0, C − W + 1) / B⌋)` blocks
  (`WindowPageLayout.held`): a whole prompt prefilled in one step holds its whole length in every group
  until the next step frees it; a decoding request's window groups hold about ceil((W − 1 + q) / B) + 1.
* its peak over a life whose steps compute at most M tokens each is at most
  `full_groups · ceil(T / B) + window_groups · min(ceil(T / B), ceil((W − 1 + M) / B) + 1)`
  (`v1/kv_cache_interface.py` SlidingWindowSpec.max_memory_usage_bytes, M = max_num_batched_tokens; the
  start-up check check_enough_kv_cache_memory sums it over the layers for a request of max_model_len).

When vLLM applies it (`config/__init__.py` VllmConfig.__post_init__, 0.11.0): the hybrid manager is off on
platforms without it (the CPU backend) and with a KV connector (`kv_transfer_config`: disaggregated
prefill), so those deployments keep every layer at the full context (simulator.cluster.factory decides).

Approximations, named: a colocated drafter's KV per token counts as ceil(its bytes / one layer's bytes)
extra full-attention layers (vLLM gives a draft model's or EAGLE head's layers their own specs, which join
the full-attention type when their page size matches: 0.32's "gpt-oss-20b + eagle, 12 sw + 13 full");
pipeline stages hold ceil(layers of a type / pp) layers of it (the types interleave); 0.32's
`extra_retained_tokens` (multi-module MTP re-prefill) is 0, and its in-flight bound (2 batches under async
scheduling) is one batch; drafted tokens a rejection discards keep their blocks until the next step, as in
vLLM (`grow` asks for context + q). Host memory and parallel sampling are not modelled with it
(simulator.cluster.build keeps the full-context pool for them); prefix caching where requests may share prefixes
is simulator.core.kv.window_prefix_cache's (this layout and table, hits as vLLM's hybrid coordinator finds them). Growth
and freeing depend on each request's computed tokens step by step, so this pool is not `bulk_capable` (steps
run one by one).

Prefix caching where no two requests can share a prefix (`reserve_prompts`): vLLM's cache then serves only a
request's own blocks, to itself: a request preempted mid-prompt (vLLM V1 preempts the newest running request
when a chunk's blocks do not fit) is admitted again at the cached length of its computed blocks, so its chunks
are not computed twice (`KVCacheManager.get_computed_blocks`; for a sliding-window group
`SlidingWindowManager.find_longest_cache_hit` matches the window's blocks before that length, which the
preemption freed last). Approximation, named, for the schedulers that reserve a prompt at admission: a request reserves the peak of its prompt (`WindowPageLayout.peak` over steps of the
scheduler's budget) at admission and holds at least that until its prompt is computed, so it is admitted when
its whole prompt fits instead of a chunk at a time, and its own chunks never preempt it; a request preempted
all the same (other requests' decode blocks taking the pool) computes its prompt and output again (vLLM: a
cache hit on its blocks while they are not evicted). Under the vllm_v1 scheduler, which grows a prompt's blocks per
chunk (simulator.core.sched.vllm_v1), simulator.cluster.build.kv_manager takes the window prefix cache instead (each
request's units private to it, its own blocks hit again after a preemption), except with `shared_prefix_attention`
(not modelled there), where this reservation stays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.core.kv.block_pool import BlockPool
from simulator.core.kv.hybrid_state import group_size


def _cdiv(a, b):
    return -(-a // b)


@dataclass(frozen=True)
class WindowPageLayout:
    """One replica's page layout of full-attention and sliding-window groups (module docstring)."""

    block_tokens: int              # tokens per block (scheduler.block_size)
    window: int                    # the sliding window W (tokens)
    group_size: int                # layers sharing one block id
    full_groups: int
    window_groups: int
    block_bytes: float             # one block id: group_size pages on every GPU
    total_blocks: int
    step_tokens: int | None = None   # most prompt tokens one step computes for a request (None: a whole prompt)
    q: int = 1                     # tokens a decode step computes (the token and its drafts)

    @property
    def kv_tokens(self) -> int:
        """vLLM's "GPU KV cache size": num_blocks // num_groups · block_size."""
        return self.total_blocks // (self.full_groups + self.window_groups) * self.block_tokens

    def skipped_blocks(self, computed):
        """Blocks of one sliding-window group wholly before the window of the next token (vLLM's
        get_num_skipped_tokens // block_size)."""
        return np.maximum(computed - self.window + 1, 0) // self.block_tokens

    def held(self, computed, tokens):
        """Blocks a request holds in a step that needs slots for `tokens` tokens with `computed` computed
        before it (module docstring)."""
        return self.held_by_table(computed, _cdiv(tokens, self.block_tokens))

    def held_by_table(self, computed, table):
        """Blocks a request holds with block tables of `table` entries per group and `computed` computed
        tokens: every entry of the full-attention groups, the window groups' entries past the skipped ones."""
        window = np.maximum(table - self.skipped_blocks(computed), 0)
        return self.full_groups * table + self.window_groups * window

    def window_cap(self, step_tokens: int) -> int:
        """Blocks a sliding-window group holds at most when a step computes up to `step_tokens` tokens."""
        return _cdiv(self.window - 1 + step_tokens, self.block_tokens) + 1

    def peak(self, tokens, step_tokens):
        """The most blocks a request of `tokens` tokens holds in its life when no step computes more than
        `step_tokens` of its tokens (SlidingWindowSpec.max_memory_usage_bytes)."""
        table = _cdiv(tokens, self.block_tokens)
        return self.full_groups * table + self.window_groups * np.minimum(table, self.window_cap(step_tokens))

    def max_context(self, step_tokens: int) -> int:
        """The longest request whose `peak` fits the pool (vLLM's estimate_max_model_len); 0 if none does."""
        lo, hi = 0, self.total_blocks * self.block_tokens
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.peak(mid, step_tokens) <= self.total_blocks:
                lo = mid
            else:
                hi = mid - 1
        return lo


def window_page_layout(full_layers: int, window_layers: int, window: int, bytes_per_token_per_layer: float,
                       free_bytes_per_gpu: float, block_tokens: int, attention_dp: int = 1,
                       extra_kv_bytes_per_token: float = 0.0, step_tokens: int | None = None,
                       q: int = 1) -> WindowPageLayout:
    """The layout of a replica whose GPUs hold `full_layers` full-attention and `window_layers` sliding-window
    layers of `bytes_per_token_per_layer` KV each, with `free_bytes_per_gpu` left after the weights;
    `extra_kv_bytes_per_token` per GPU: a colocated drafter's KV (module docstring)."""
    if window_layers < 1 or window < 1:
        raise ValueError("the sliding-window layout needs sliding-window layers and a window >= 1")
    full = full_layers + (int(_cdiv(extra_kv_bytes_per_token, bytes_per_token_per_layer))
                          if extra_kv_bytes_per_token > 0 else 0)
    kinds = [n for n in (full, window_layers) if n > 0]
    size = group_size(kinds)
    block_bytes = size * block_tokens * bytes_per_token_per_layer
    total = int(free_bytes_per_gpu // block_bytes) * attention_dp
    return WindowPageLayout(block_tokens, window, size, _cdiv(full, size), _cdiv(window_layers, size),
                            block_bytes, total, step_tokens, q)


class SlidingWindowPool(BlockPool):
    """A BlockPool whose requests hold the blocks of vLLM's per-group block tables: `table[r]` entries (null
    blocks included) per group, of which the sliding-window groups' first ⌊max(0, C − W + 1) / B⌋ are freed
    at each growth before the new ones are taken (module docstring). `taken_blocks` and `freed_blocks` count
    every block that went into and out of use."""

    atomic_grow = False   # `grow` frees blocks outside the window even when the new ones then do not fit

    def __init__(self, state, layout: WindowPageLayout, reserve_prompts: bool = False):
        super().__init__(state, layout.total_blocks, layout.block_tokens)
        if self.multi_sample:
            raise ValueError("workload.parallel_samples > 1 is not modelled with the sliding-window pool")
        self.layout = layout
        self.bulk_capable = False
        self.table = np.zeros(state.n, dtype=np.int64)   # block-table length per group and request
        self.taken_blocks = self.freed_blocks = 0
        # blocks a request holds at least until its prompt is computed (module docstring: prefix caching)
        self.reserve_prompts = reserve_prompts
        self.reserved = np.zeros(state.n, dtype=np.int64)

    def blocks_for(self, tokens):
        """Blocks a request holds when it computes `tokens` tokens from nothing in one step (its prompt's
        first chunk): every group holds all of them."""
        return self.layout.held(0, tokens)

    def blocks(self, ids, tokens):
        """The most blocks request(s) `ids` hold in a life of `tokens` tokens (`WindowPageLayout.peak`; a step
        computes at most the scheduler's budget, or, when it does not chunk, the whole prompt)."""
        lay = self.layout
        step = lay.step_tokens
        if step is None:
            step = np.maximum(self.s.prefill_target[ids], self.s.prompt[ids])
        return lay.peak(tokens, np.maximum(step, lay.q))

    def need(self, r: int, tokens: int | None = None) -> tuple[int, int]:
        target = int(self.s.prefill_target[r])
        if self.reserve_prompts:   # the prompt's peak, whatever the chunk (module docstring: prefix caching)
            return int(self.blocks(r, target)), target
        return int(self.blocks_for(target if tokens is None else tokens)), target

    def whole_prompt_need(self, r: int, window_cap: bool = False) -> int:
        """vLLM's whole-sequence check (BlockPool.whole_prompt_need) of a request with nothing computed: every
        group's blocks of its sequence, the window groups' at most `SlidingWindowSpec.max_admission_blocks_per_request`
        with `window_cap` (vLLM 0.20 on; the layout's `peak` over steps of the scheduler's budget, which vLLM's cap
        is: ceil((W − 1 + max_num_batched_tokens) / B) + 1)."""
        need = int(self.need(r)[0])
        return min(need, int(self.blocks(r, int(self.s.prefill_target[r])))) if window_cap else need

    def admit(self, r: int, reserve: bool = True) -> tuple[int, bool]:
        if self.reserve_prompts:
            need = self.reserved[r] = int(self.blocks(r, int(self.s.prefill_target[r])))
            self.table[r] = 0
        else:
            target = int(self.s.prefill_target[r]) if reserve else 0
            self.table[r] = _cdiv(target, self.block_size)
            need = int(self.blocks_for(target))
        self.s.blocks[r] = need
        self.take(need)
        return 0, False

    def _held(self, ids, table):
        """Blocks requests `ids` hold with block tables of `table` entries: their tables' blocks, or their
        reservation while their prompt is not computed (`reserve_prompts`)."""
        held = self.layout.held_by_table(self.s.ctx[ids], table)
        if not self.reserve_prompts:
            return held
        s = self.s
        return np.maximum(held, np.where(s.prefilled[ids] < s.prefill_target[ids], self.reserved[ids], 0))

    def grow(self, ids, tokens) -> bool:
        """vLLM's allocate_slots for request(s) `ids` needing slots for `tokens` tokens, their computed
        tokens being their context now: remove_skipped_blocks frees the window groups' blocks before the
        window (even when the rest then does not fit), then the tables grow to ceil(tokens / B); False, and
        nothing taken, when the new blocks do not all fit."""
        s = self.s
        ids = np.atleast_1d(np.asarray(ids, dtype=np.int64))
        table = self.table[ids]
        kept = self._held(ids, table)
        freed = int((s.blocks[ids] - kept).sum())
        if freed:
            s.blocks[ids] = kept
            self.used_blocks -= freed
            self.freed_blocks += freed
        grown = np.maximum(table, _cdiv(np.asarray(tokens, dtype=np.int64), self.block_size))
        extra = self._held(ids, grown) - kept
        n = int(extra.sum())
        if n > self.total_blocks - self.used_blocks:
            return False
        s.blocks[ids] += extra
        self.table[ids] = grown
        self.take(n)
        return True

    def take(self, n: int) -> None:
        self.used_blocks += n
        self.taken_blocks += n

    def release(self, r: int, keep: str = "shared") -> None:
        super().release(r, keep)
        self.table[r] = 0
        self.reserved[r] = 0

    def free(self, r: int, ctx_tokens: int, private_blocks: int, keep: str) -> None:
        self.used_blocks -= private_blocks
        self.freed_blocks += private_blocks

    def shrink(self, r: int, tokens: int) -> None:
        """Keep only the table entries `tokens` tokens need (a request rolled back its newest tokens)."""
        table = min(int(self.table[r]), _cdiv(tokens, self.block_size))
        keep = int(self._held(np.array([r]), np.array([table]))[0])
        self.table[r] = table
        if self.s.blocks[r] > keep:
            self.freed_blocks += int(self.s.blocks[r]) - keep
            self.used_blocks -= int(self.s.blocks[r]) - keep
            self.s.blocks[r] = keep
