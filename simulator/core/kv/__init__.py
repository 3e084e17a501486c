"""KV managers: how a replica's KV cache holds requests, apart from how its batching scheduler forms steps
(simulator.core.sched), as vLLM V1 keeps `KVCacheManager` apart from `Scheduler`.

Every manager counts KV blocks of `block_size` tokens and writes the request columns it owns
(`RequestState.blocks`, `.unit_blocks`); the scheduler asks it, per request:

- `need(r, tokens)`   blocks the admission of r would take from the free pool, and its prompt tokens to compute;
- `admit(r, reserve)` admit r: (KV tokens it holds now, True when that KV came back from host memory);
- `grow(ids, tokens)` give requests `ids` blocks for `tokens` tokens per sequence; False (nothing given) if
                      they do not fit;
- `cache_prompt(r, tokens)` r's first `tokens` prompt tokens are scheduled: a prefix cache caches their full units
                      (vLLM V1's allocate_slots, with blocks grown per chunk);
- `release(r, keep)`  free r's blocks (`keep`: which of its units a prefix cache keeps cached);
- `preempt(r, decoding)` free r's KV at preemption; True when it was swapped to host memory instead;
- `cached(r, tokens)` prompt tokens of r this cache would serve (prefix-aware routing);
- `hit_in_use_tokens(r)` of those, the tokens running requests hold (SGLang's admission does not charge them);
- `inserts_held()`    computed prompts wait to be cached until the next step is formed (SGLang's overlap loop).

Implementations, one file each: `block_pool.BlockPool` (plain counting, parallel-sampling forks),
`prefix_cache.PrefixCachePool` (vLLM's automatic prefix caching), `host_tier.HostTier` (swap preemption and
a second tier for evicted prefix units, wrapped around either), `hybrid_state.HybridStatePool` (attention KV and
recurrent state in one pool), `sliding_window.SlidingWindowPool` (vLLM V1 freeing sliding-window blocks outside
the window), `window_prefix_cache.WindowPrefixCachePool` (its prefix cache where requests share prefixes) and the
layouts of `KV_LAYOUTS`
(`cluster.kv_cache.layout.kind` → how much of a token's KV the GPU keeps and which pool counts it: paged,
ShadowKV). A new layout (e.g. hybrid attention/state models) is one file plus one line in KV_LAYOUTS.
"""
from __future__ import annotations

from typing import Protocol


class KVManager(Protocol):
    block_size: int
    total_blocks: int
    used_blocks: int
    bulk_capable: bool      # blocks are per request and growth is the pool's formula: bulks may count them
    bulk_replay: bool       # bulks hand it their growth and finishes in the step path's order (take, free:
    #                         simulator.core.bulk_replay) instead of setting `used_blocks`
    atomic_grow: bool       # `grow(ids, ...)` of several requests = growing them one by one when all fit, no change otherwise
    summarized: bool        # the summary reads its counters after the run (not in a worker process)
    hit_tokens: int         # prompt tokens found cached over all admissions (a prefix cache; 0 otherwise)
    loaded_tokens: int      # of which loaded from host memory
    swapped_tokens: int     # tokens swapped out to host memory (and back)
    free_blocks: int        # total − used (a property of the implementations)
    free_tokens: int        # KV tokens of one sequence the free blocks hold (a property of the implementations)
    def blocks_for(self, tokens): ...
    def blocks(self, ids, tokens): ...
    def need(self, r: int, tokens: int | None = None) -> tuple[int, int]: ...
    def whole_prompt_need(self, r: int, window_cap: bool = False) -> int: ...
    def admit(self, r: int, reserve: bool = True) -> tuple[int, bool]: ...
    def grow(self, ids, tokens) -> bool: ...
    def cache_prompt(self, r: int, tokens: int) -> None: ...
    def take(self, n: int) -> None: ...
    def release(self, r: int, keep: str = "shared") -> None: ...
    def free(self, r: int, ctx_tokens: int, private_blocks: int, keep: str) -> None: ...
    def shrink(self, r: int, tokens: int) -> None: ...
    def preempt(self, r: int, decoding: bool) -> bool: ...
    def cached(self, r: int, prompt_tokens: int) -> int: ...
    def hit_in_use_tokens(self, r: int) -> int: ...
    def inserts_held(self) -> bool: ...
    def on_plan(self, plan) -> None: ...
    def io_seconds(self, tokens: int, transfers: int) -> float: ...


from simulator.core.kv.block_pool import PagedLayout  # noqa: E402  (the registry below)
from simulator.core.kv.shadowkv import ShadowKVLayout  # noqa: E402

# cluster.kv_cache.layout.kind -> layout (a new one: its file plus one line here)
KV_LAYOUTS = {
    "paged": PagedLayout(),
    "shadowkv": ShadowKVLayout(),
}
