"""The plain KV manager: a pool of `total_blocks` blocks of `block_size` tokens, counted, not placed.

A request holds ceil(tokens / block_size) blocks; fragmentation is zero under paging by construction, so
counting is exact for capacity purposes. Blocks are reserved for a prompt at admission (`admit`, or per
scheduled chunk when the scheduler asks `reserve=False`, vLLM V1) and grown as decodes add tokens
(`grow`); preemption frees them (recompute).

Parallel sampling and beam search (`workload.parallel_samples` = n > 1, `RequestState.samples`): a request
of n sequences holds its prompt's full blocks once and each sequence the rest (`blocks`), as a paged cache
with copy-on-write forks (vLLM) does. Approximations: the n − 1 copies of the prompt's partial last block
are reserved at admission rather than at the first decode step (at most n − 1 blocks early); beams of a
beam search share the prompt only, not the tokens of common ancestors (an upper bound). Such pools are not
`bulk_capable` (bulks count one sequence per request).
"""
from __future__ import annotations

import numpy as np

_NO_KEYS = np.zeros(0, dtype=np.int64)
_NO_KEYS.flags.writeable = False


class BlockPool:
    hit_tokens = loaded_tokens = swapped_tokens = 0   # (no prefix cache, no host memory)
    summarized = False   # the summary reads counters of it after the run (simulator.results.summary)
    atomic_grow = True   # `grow` of several requests = growing them one by one when all fit, nothing otherwise
    bulk_replay = False  # bulks count its blocks in use themselves (simulator.core.bulk)

    def __init__(self, state, total_blocks: int, block_size: int):
        self.s = state
        self.total_blocks, self.block_size = total_blocks, block_size
        self.used_blocks = 0
        self.multi_sample = bool((state.samples > 1).any())
        self.bulk_capable = not self.multi_sample

    @property
    def free_blocks(self) -> int:
        return self.total_blocks - self.used_blocks

    @property
    def free_tokens(self) -> int:
        """KV tokens of one sequence the free blocks hold (SGLang's reserve reads it: sched.sglang_reserve)."""
        return (self.total_blocks - self.used_blocks) * self.block_size

    def blocks_for(self, tokens):
        return -(-tokens // self.block_size)

    def blocks(self, ids, tokens):
        """Blocks request(s) `ids` hold with `tokens` tokens in each of their sequences: blocks_for(tokens)
        for one sequence, blocks_for(tokens) + (n − 1)·(blocks_for(tokens) − ⌊prompt / block_size⌋) for n."""
        blocks = self.blocks_for(tokens)
        if not self.multi_sample:
            return blocks
        s = self.s
        shared = np.minimum(s.prompt[ids] // self.block_size, blocks)
        return blocks + (s.samples[ids] - 1) * (blocks - shared)

    def need(self, r: int, tokens: int | None = None) -> tuple[int, int]:
        """(blocks admitting r takes from the free pool to hold `tokens` of its prompt (default: all of
        it), prompt tokens it will compute)."""
        target = int(self.s.prefill_target[r])
        return self.blocks(r, target if tokens is None else tokens), target

    def whole_prompt_need(self, r: int, window_cap: bool = False) -> int:
        """Blocks of the free pool r's whole prompt (for a preempted request, prompt and output) would take, its
        hit counted as computed and no lookahead: vLLM V1's whole-sequence admission check (0.19 on,
        profiles.engine_time.batch_defaults.vllm_whole_prompt_admission); `window_cap` concerns sliding-window
        pools only."""
        return int(self.need(r)[0])

    def admit(self, r: int, reserve: bool = True) -> tuple[int, bool]:
        """Admit r, reserving its prompt's blocks (`reserve` False: none yet, `grow` gives them per
        chunk). Returns (KV tokens it holds now, resumed from host memory): (0, False) here."""
        if not reserve:
            need = 0
        elif self.multi_sample:
            need = int(self.blocks(r, self.s.prefill_target.item(r)))
        else:   # (one sequence: `blocks` is `blocks_for`, a Python int here; one call fewer per admission)
            need = self.blocks_for(self.s.at.prefill_target[r])
        self.s.at.blocks[r] = need   # (memoryviews: simulator.core.state.ScalarViews)
        self.used_blocks += need
        return 0, False

    def _private_need(self, ids, tokens):
        return self.blocks(ids, tokens)

    def grow(self, ids, tokens) -> bool:
        """Give request(s) `ids` the blocks `tokens` tokens per sequence need; False, and nothing given,
        when they do not all fit."""
        s = self.s
        extra = np.maximum(self._private_need(ids, tokens) - s.blocks[ids], 0)
        n = int(extra.sum())
        if n > self.total_blocks - self.used_blocks:
            return False
        s.blocks[ids] += extra
        self.take(n)
        return True

    def cache_prompt(self, r: int, tokens: int) -> None:
        """r's first `tokens` prompt tokens are scheduled and their blocks grown: a prefix cache caches the full
        units among them (simulator.core.kv.prefix_cache.PrefixCachePool); nothing here."""

    def take(self, n: int) -> None:
        """n blocks of the free pool go into use (a growth, a reservation)."""
        self.used_blocks += n

    def release(self, r: int, keep: str = "shared") -> None:
        """Free r's blocks (finish, preemption, a pause that releases its KV)."""
        self.free(r, int(self.s.ctx[r]), int(self.s.blocks[r]), keep)
        self.s.blocks[r] = 0
        self.s.unit_blocks[r] = 0

    def free(self, r: int, ctx_tokens: int, private_blocks: int, keep: str) -> None:
        """Return r's `private_blocks` to the pool (`release` without touching the request's columns: a
        prefill replica frees a handed-off request's blocks once its KV has left)."""
        self.used_blocks -= private_blocks

    def shrink(self, r: int, tokens: int) -> None:
        """Keep only the blocks `tokens` tokens need (a request rolled back some of its newest tokens)."""
        keep = int(self.blocks_for(tokens))
        if self.s.blocks[r] > keep:
            self.used_blocks -= int(self.s.blocks[r]) - keep
            self.s.blocks[r] = keep

    def preempt(self, r: int, decoding: bool) -> bool:
        """Preemption by recompute: r's blocks are freed (its units stay cached in a prefix cache)."""
        self.release(r, "all")
        return False

    def cached(self, r: int, prompt_tokens: int) -> int:
        return 0

    def hit_in_use_tokens(self, r: int) -> int:
        return 0

    def inserts_held(self) -> bool:
        return False

    def prompt_keys(self, r: int, prompt_tokens: int) -> np.ndarray:
        """The shared prefix keys of r's prompt's full units (a prefix cache's; none here)."""
        return _NO_KEYS

    @property
    def prefix_unit_tokens(self) -> int:
        return self.block_size

    def on_plan(self, plan) -> None:
        """Add what this manager does in the step being formed to its plan (KV moved to or from host
        memory, shared-prefix aggregates): nothing here."""


class PagedLayout:
    """The target's KV paged in HBM (vLLM's layout; `cluster.kv_cache.layout.kind: paged`): every token's
    keys and values on the GPU, counted by a `BlockPool`. A KV layout says how much of a token's paged KV
    the GPU keeps (`gpu_fraction`, which sizes the pool), what it cannot hold (`refusal`: a message, or
    None) and which manager counts it (`pool`); simulator.core.kv.KV_LAYOUTS lists them."""

    def gpu_fraction(self, target, cfg) -> float:
        return 1.0

    def refusal(self, target, cfg) -> str | None:
        return None

    def pool(self, state, total_blocks: int, block_size: int, cfg):
        return BlockPool(state, total_blocks, block_size)
