"""The prefix-caching KV manager (`cluster.kv_cache.prefix_caching`): vLLM's automatic prefix caching and the
accounting of blocks several requests share (`PrefixCachePool`, over the free queue `PrefixCache`).

Prefix caching, as vLLM v1 does it (`vllm/v1/core/kv_cache_manager.py`, `block_pool.py`,
`kv_cache_utils.py`; docs "Automatic Prefix Caching"):
- the KV of a request is cut into units of `unit_tokens` tokens (the block size for generated
  workloads, a trace's hash block for Mooncake traces); a *full* unit is cached under a key that stands
  for every token up to its end (the chained block hash; `simulator.core.prefixes`);
- on admission the longest run of cached units at the start of the prompt is a hit, limited so that at
  least one prompt token is computed (the last token's logits are needed): the hit tokens skip the
  prefill (`get_computed_blocks`); the prompt's other full units are cached as they are allocated
  (`cache_full_blocks`), so a request admitted later — even in the same step — hits them;
- a unit several running requests use is stored once (reference counts);
- freed blocks go to the tail of one free queue, a request's in reverse order (its last blocks first,
  so they are evicted first); allocation takes blocks from the head, evicting the cached unit a block
  holds (least recently freed first, LRU); a hit on a free cached unit takes it out of the queue.
Approximations (named): caching is per unit, so a trace's 512-token blocks are hit or evicted whole
(vLLM's 16-token blocks of one trace block are freed together, hence adjacent in its queue); a unit
computed twice (a later unit of a prompt already cached while an earlier one was evicted) stays private
to the second request instead of being a second cached copy; units a request produces while decoding
become visible to others when it finishes or is preempted (vLLM: as each block fills).

SGLang's radix cache (`deferred`, engine_batch_rules' insert_after_forward) matches as above but caches a prompt
only once its batch has run: managers/scheduler.py (scheduler_output_processor_mixin.py from 0.4.4)
`process_batch_result_prefill` calls `tree_cache.cache_unfinished_req(req)` ("This updates radix so others can
match") for each request of a prefill batch after its forward, and `get_next_batch_to_run` calls it for the request
being chunked (its tokens so far) before forming the next batch (read in 0.4.0, 0.4.3, 0.4.5, 0.4.9, 0.5.2, 0.5.6).
So requests of one prefill batch do not hit each other: each computes a prefix they share (the in-batch check of
lpm, simulator.core.sched.queue_order, only moves such a request to the queue's tail). When they are inserted, in
batch order, the first caches the prefix and a later one's copy is freed (mem_cache/radix_cache.py
`cache_unfinished_req`: `token_to_kv_pool.free(kv_indices[len(req.prefix_indices):new_prefix_len])`) and it
references the cached one (`insert`). Units a request computes are visible to lookups (a match, the lpm order, a
router) from the next step, in draftsim when the step's prefilled tokens are applied. With the overlap loop
(`overlapped`; `event_loop_overlap`, the default: `disable_overlap_schedule = False` in 0.4.0 - 0.5.6) batch k+1 is
formed before batch k's results are processed, so a prompt completed in step k is inserted once step k+1 is planned
(`on_plan`); a chunk is inserted before the next batch in both loops. The loop is the engine-time model's (its
`overlap`, off for the drafters SGLang runs synchronously: profiles.engine_time.model); without an engine-time
model the synchronous loop. Approximations, named: units and blocks as above (SGLang's tree is per token, page 1);
a prompt's blocks are all reserved at admission (SGLang allocates a chunk's); a request that finishes in its prefill
step is cached at once (`release`; SGLang's `cache_finished_req` runs with its batch's results); the disaggregated
prefill server's loop is taken as the colocated one's (not read).

With a host tier (simulator.core.kv.host_tier) units evicted from the GPU are kept in host memory and a
later hit on them is loaded over the host link instead of recomputed.

`drop_tokens` (one KV block; vLLM V1 with an EAGLE-style drafter: profiles.engine_time.cache_defaults
.vllm_eagle_drops_hit_block): a hit serves that many tokens less, its last block computed again into a block of the
request's own, as vLLM's `get_computed_blocks` / `find_longest_cache_hit` pops the last matched block so that the
drafter gets the hidden states of its tokens. The matched units stay referenced; where the last one is in use by
another request, the request's own copy of the dropped block is one private block more (its unit blocks one
fewer: `RequestState.unit_blocks`), as in vLLM. Approximation, named: where the dropped block was a free cached
one, vLLM leaves it in the free queue and takes a block from the queue's head for the copy; here its unit leaves
the queue (the same count of blocks, another block evicted). A hit loaded from the host tier is loaded whole.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import count

import numpy as np

from simulator.core.kv.block_pool import BlockPool
from simulator.core.kv.host_tier import HostMemory
from simulator.core.prefixes import UNIT_BITS, PrefixKeys

_NO_KEYS = np.zeros(0, dtype=np.int64)


@dataclass
class Admission:
    hit_tokens: int        # prompt tokens found cached (on the GPU or loaded from the host tier)
    loaded_tokens: int     # of which loaded from the host tier
    taken_blocks: int      # blocks that left the free queue (newly in use)
    private_blocks: int    # blocks only this request uses
    unit_blocks: int       # blocks of the cached units it references


@dataclass
class PrefixCache:
    """The free queue and cached units of one replica (module docstring). Block counts are exact: the
    replica's blocks in use + `free_blocks` = total blocks, always."""

    total_blocks: int
    block_size: int
    unit_tokens: int
    prefixes: PrefixKeys | None
    host: HostMemory | None = None
    drop_tokens: int = 0                              # tokens of a hit computed again (module docstring)
    deferred: bool = False                            # SGLang: computed units cached by `insert`, not at admission
    computing: dict = field(default_factory=dict)     # (deferred) r -> [first unit not cached yet, their keys]
    growing: dict = field(default_factory=dict)       # (per chunk) r -> its next prompt unit to cache (`cache_prompt`)
    refs: dict = field(default_factory=dict)          # cached unit in use -> requests referencing it
    queue: OrderedDict = field(default_factory=OrderedDict)  # free blocks, head first: unit key -> its blocks,
    held: dict = field(default_factory=dict)          # or ("free", n) -> blocks of a plain segment
    version: int = 0                                  # changes whenever a lookup could change
    _segments: object = field(default_factory=count)

    def __post_init__(self) -> None:
        if self.unit_tokens % self.block_size:
            raise ValueError(f"prefix units of {self.unit_tokens} tokens are not whole KV blocks of {self.block_size}")
        self.unit_blocks = self.unit_tokens // self.block_size
        self.free_blocks = self.total_blocks
        self.queue[("free", next(self._segments))] = self.total_blocks
        self._memo: dict = {}
        self._free_units = 0   # cached units in the free queue

    # ---- keys ------------------------------------------------------------------------------------
    def _keys(self, r: int) -> np.ndarray:
        return self.prefixes.of(r) if self.prefixes is not None else _NO_KEYS

    def key(self, r: int, j: int, keys: np.ndarray | None = None) -> int:
        """Unit j of request r's stream: its shared key, else a key private to r (negative)."""
        keys = self._keys(r) if keys is None else keys
        return int(keys[j]) if j < len(keys) else -((r << UNIT_BITS) | j) - 1

    def _match(self, r: int, target_tokens: int) -> list[tuple[int, str]]:
        """The cached run at the start of r's prompt of `target_tokens` (at most target − 1 tokens)."""
        keys, found = self._keys(r), []
        for j in range((target_tokens - 1) // self.unit_tokens):
            k = self.key(r, j, keys)
            if k in self.refs:
                found.append((k, "used"))
            elif k in self.queue:
                found.append((k, "free"))
            elif self.host is not None and k in self.host.units:
                found.append((k, "host"))
            else:
                break
        return found

    def match_tokens(self, r: int, prompt_tokens: int) -> int:
        """Tokens of r's prompt this cache would serve (GPU or host tier), for prefix-aware routing and SGLang's
        lpm queue order (simulator.core.sched.queue_order, which asks for every waiting request each step)."""
        memo_key = ("match", r, prompt_tokens, self.version)
        found = self._memo.get(memo_key)
        if found is None:
            if len(self._memo) > 4096:
                self._memo.clear()
            found = self._memo[memo_key] = self._served(len(self._match(r, prompt_tokens)))
        return found

    def prompt_keys(self, r: int, prompt_tokens: int) -> np.ndarray:
        """The shared keys of the full units within the first `prompt_tokens` − 1 tokens of r's stream (what
        SGLang's waiting-queue tree holds of a request: schedule_policy.py `adjust_max_prefix_ids`)."""
        return self._keys(r)[:max(prompt_tokens - 1, 0) // self.unit_tokens]

    def _served(self, units: int) -> int:
        """The prompt tokens a hit of `units` cached units serves: `drop_tokens` fewer (module docstring)."""
        return max(units * self.unit_tokens - self.drop_tokens, 0) if units else 0

    @property
    def cached_tokens(self) -> int:
        """Tokens of the cached units, in use or free (the size of SGLang's radix tree)."""
        return (len(self.refs) + self._free_units) * self.unit_tokens

    def need_blocks(self, r: int, target_tokens: int, blocks: int) -> int:
        """Blocks r's admission takes from the free queue: its `blocks` minus those of units in use."""
        memo_key = (r, target_tokens, blocks, self.version)
        found = self._memo.get(memo_key)
        if found is None:
            if len(self._memo) > 4096:
                self._memo.clear()
            matched = self._match(r, target_tokens)
            used = sum(1 for _, where in matched if where == "used")
            found = self._memo[memo_key] = blocks - used * self.unit_blocks + self._copied_blocks(matched)
        return found

    def _copied_blocks(self, found: list) -> int:
        """Blocks of a hit (`found`, _match's) that the request computes again into blocks of its own while the
        cached ones are in use (module docstring: `drop_tokens`)."""
        return self.drop_tokens // self.block_size if self.drop_tokens and found and found[-1][1] == "used" else 0

    # ---- the free queue --------------------------------------------------------------------------
    def take(self, n: int) -> None:
        """Move n blocks from the head of the free queue into use, evicting the cached units they hold."""
        if n > self.free_blocks:
            raise RuntimeError(f"take({n}) with {self.free_blocks} free blocks")
        self.free_blocks -= n
        queue = self.queue
        while n > 0:
            key, blocks = next(iter(queue.items()))
            if isinstance(key, tuple):         # a plain segment
                if blocks > n:
                    queue[key] = blocks - n
                    return
                del queue[key]
                n -= blocks
            else:                              # a cached unit: evicted
                del queue[key]
                self._evicted(key)
                if blocks > n:                 # the rest of the unit's blocks stay free, at the head
                    rest = ("free", next(self._segments))
                    queue[rest] = blocks - n
                    queue.move_to_end(rest, last=False)
                    return
                n -= blocks

    def _evicted(self, key) -> None:
        """A free cached unit left the cache (its blocks taken from the free queue)."""
        self._free_units -= 1
        self.version += 1
        if self.host is not None:
            self.host.offload(key)

    def _push(self, key, blocks: int) -> None:
        self.queue[key] = blocks
        self.free_blocks += blocks
        if not isinstance(key, tuple):
            self._free_units += 1

    def _reference(self, k) -> bool:
        """One more reference on cached unit k: a unit in use gains a user, a free cached one leaves the free queue.
        False where k is not cached (on the GPU)."""
        if k in self.refs:
            self.refs[k] += 1
        elif k in self.queue:
            del self.queue[k]
            self._free_units -= 1
            self.free_blocks -= self.unit_blocks
            self.refs[k] = 1
        else:
            return False
        return True

    # ---- a request's life ------------------------------------------------------------------------
    def admit(self, r: int, target_tokens: int, blocks: int, reserve: bool = True) -> Admission:
        """Admit r, whose prompt (to compute) is `target_tokens` tokens in `blocks` blocks. `reserve` False (vLLM
        V1's allocate_slots, not with `deferred`): only its hit is taken now, no `blocks`; the blocks of its prompt's
        chunks come with `grow` and their full units are cached by `cache_prompt` (module docstring)."""
        found = self._match(r, target_tokens)
        keys = self._keys(r)
        for k, where in found:
            if where != "host":
                self._reference(k)
        touched = sum(1 for _, where in found if where == "free") * self.unit_blocks
        loaded = [k for k, where in found if where == "host"]
        new = []
        per_chunk = not reserve and not self.deferred
        for j in range(len(found), len(found) if per_chunk else target_tokens // self.unit_tokens):
            k = self.key(r, j, keys)
            if not self.deferred and (k in self.refs or k in self.queue):
                break   # cached already (an earlier unit of this prompt was evicted): computed, kept private
            new.append(k)
        held = [k for k, _ in found] + new
        unit_blocks = len(held) * self.unit_blocks - self._copied_blocks(found)
        private = 0 if per_chunk else blocks - unit_blocks
        if per_chunk:
            self.growing[r] = len(found)
        fresh = (len(loaded) + len(new)) * self.unit_blocks + private
        for k in loaded:
            self.host.touch(k)
        self.take(fresh)
        for k in loaded if self.deferred else loaded + new:
            self.refs[k] = 1
        if self.deferred and new:   # cached once computed (`insert`)
            self.computing[r] = [len(found), new]
        self.held[r] = held
        self.version += 1
        return Admission(self._served(len(found)), len(loaded) * self.unit_tokens, touched + fresh, private,
                         unit_blocks)

    def cache_prompt(self, r: int, tokens: int, target_tokens: int) -> int:
        """(per chunk) Cache the full units of r's prompt (of `target_tokens`) within its first `tokens` tokens that
        it holds as private blocks (allocated by `grow` for its scheduled tokens), in prompt order, as vLLM's
        allocate_slots caches the full blocks of the computed + scheduled tokens (`cache_blocks`) right after
        allocating them: a request admitted later, even in the same step, hits them. A unit cached already (an
        earlier unit of this prompt was evicted) stays private, and so do the units after it (as `admit`). Returns
        the units cached (each `unit_blocks` of r's private blocks now those of a unit it references)."""
        first = self.growing.get(r)
        if first is None:
            return 0
        end = min(tokens, target_tokens) // self.unit_tokens
        if end <= first:
            return 0
        keys, held, refs, queue = self._keys(r), self.held[r], self.refs, self.queue
        n = 0
        for j in range(first, end):
            k = self.key(r, j, keys)
            if k in refs or k in queue:
                end = None
                break
            refs[k] = 1
            held.append(k)
            n += 1
        if end is None or end >= target_tokens // self.unit_tokens:
            del self.growing[r]
        else:
            self.growing[r] = end
        if n:
            self.version += 1
        return n

    def insert(self, r: int, tokens: int) -> int:
        """(deferred) Cache the units r computed within its first `tokens` tokens, in prompt order, as SGLang's
        `RadixCache.cache_unfinished_req` inserts a request's tokens (module docstring): a unit cached meanwhile
        (by a request of the same prefill batch inserted before it) is r's reference from now on, and r's own copy
        of it is freed. Returns the blocks that joined the free queue."""
        entry = self.computing.get(r)
        if entry is None:
            return 0
        first, keys = entry
        n = min(len(keys), tokens // self.unit_tokens - first)
        if n <= 0:
            return 0
        before, dups = self.free_blocks, 0
        for k in keys[:n]:
            if self._reference(k):   # (a free cached copy: an earlier unit of r's prompt was evicted)
                dups += 1
            else:
                self.refs[k] = 1
        if n == len(keys):
            del self.computing[r]
        else:
            entry[0], entry[1] = first + n, keys[n:]
        if dups:
            self._push(("free", next(self._segments)), dups * self.unit_blocks)
        self.version += 1
        return self.free_blocks - before

    def release(self, r: int, ctx_tokens: int, private_blocks: int, cache: str) -> int:
        """Free r's blocks (finish or preemption) and return how many joined the free queue. `cache`:
        which of its other full units (beyond those already cached) to cache first: "shared" (units with
        shared keys, e.g. a session's answer that the next turn's prompt repeats), "all" (its private
        units too, for a re-admission after preemption by recompute), "none". (deferred) The units it
        computed are inserted first; those it had not computed yet are freed uncached."""
        before = self.free_blocks
        held = self.held.pop(r, [])
        self.growing.pop(r, None)
        if r in self.computing:
            self.insert(r, ctx_tokens)
            entry = self.computing.pop(r, None)
            if entry is not None:
                del held[len(held) - len(entry[1]):]
                private_blocks += len(entry[1]) * self.unit_blocks
        extra = []
        if cache != "none":
            keys = self._keys(r)
            for j in range(len(held), ctx_tokens // self.unit_tokens):
                k = self.key(r, j, keys)
                if (k < 0 and cache == "shared") or k in self.refs or k in self.queue:
                    break
                extra.append(k)
        private_blocks -= len(extra) * self.unit_blocks
        if private_blocks > 0:
            self._push(("free", next(self._segments)), private_blocks)
        for k in reversed(extra):
            self._push(k, self.unit_blocks)
        for k in reversed(held):
            left = self.refs[k] - 1
            if left:
                self.refs[k] = left
            else:
                del self.refs[k]
                self._push(k, self.unit_blocks)
        self.version += 1
        return self.free_blocks - before

    def shared_context(self, ids) -> tuple[int, int, int]:
        """(context tokens in units shared by at least two of requests `ids`, distinct such tokens,
        requests sharing) — the aggregates of shared-prefix attention (models.step.StepShape)."""
        lists = [self.held.get(int(r), ()) for r in ids]
        if len(lists) < 2:
            return 0, 0, 0
        flat = np.fromiter((k for keys in lists for k in keys), dtype=np.int64)
        if len(flat) == 0:
            return 0, 0, 0
        uniq, counts = np.unique(flat, return_counts=True)
        shared = counts >= 2
        if not shared.any():
            return 0, 0, 0
        shared_keys = set(uniq[shared].tolist())
        sharers = sum(1 for keys in lists if keys and keys[0] in shared_keys)
        return int(counts[shared].sum()) * self.unit_tokens, int(shared.sum()) * self.unit_tokens, sharers


class PrefixCachePool(BlockPool):
    """A block pool whose free blocks are `cache`'s free queue: admission reuses cached units (their
    blocks are counted once however many requests use them, `RequestState.unit_blocks`) and whatever
    takes blocks evicts the least recently freed units. A prompt's blocks are reserved at admission, except under a
    scheduler that admits with `reserve=False` (vLLM V1): then admission takes the hit only, `grow` gives each
    chunk's blocks and `cache_prompt` caches the full units among the scheduled tokens (vLLM's allocate_slots). `shared_attention`: decode steps read the units
    their requests share once (`StepPlan.shared`).

    Decode bulks (simulator.core.bulk) replay their growth and finishes through `take` and `free` in the
    step path's order (simulator.core.bulk_replay: the eviction order is the step path's). Not with
    `shared_attention`: its decode steps are priced with the shared-prefix aggregates of their batch
    (`on_plan`), which a bulk's scan, priced from the per-step sums of requests and context only, does not
    have; those replicas run step by step."""

    bulk_replay = True

    def __init__(self, state, total_blocks: int, block_size: int, cache: PrefixCache, shared_attention: bool,
                 overlapped: bool = False):
        super().__init__(state, total_blocks, block_size)
        self.bulk_capable = self.bulk_capable and not shared_attention   # (the rule above; BlockPool's: one
        #                                                                   sequence per request)
        self.cache, self.shared_attention = cache, shared_attention
        self.overlapped = overlapped and cache.deferred   # SGLang's overlap loop (module docstring)
        self._last_batch: frozenset = frozenset()   # (overlapped) the prompts of the step planned last
        self.summarized = True
        self.hit_tokens = self.loaded_tokens = 0
        self.io = [0, 0]   # KV tokens and transfers loaded from host memory for the step being formed

    def _insert_computed(self, hold_last: bool = True) -> None:
        """(deferred) Cache what the running requests computed in the steps SGLang has processed by now (module
        docstring): their prefilled tokens, except, with the overlap loop (`hold_last`), the prompts that the
        step planned last completed, whose results SGLang processes after forming the next batch."""
        computing = self.cache.computing
        if not computing:
            return
        s, last = self.s, self._last_batch if self.overlapped and hold_last else ()
        for r in list(computing):
            done = s.prefilled.item(r)
            if r in last and done >= s.prefill_target.item(r):
                continue
            self.used_blocks -= self.cache.insert(r, done)

    def inserts_held(self) -> bool:
        """Having cached what SGLang has processed by now: some completed prompt waits to be cached until the next
        step is formed (the overlap loop), so that step is formed alone (a bulk of decode steps would skip the
        insertion: sched.vllm's `_bulk_allowed`)."""
        computing = self.cache.computing
        if not computing:
            return False
        self._insert_computed()
        s = self.s
        return any(r in computing and s.prefilled.item(r) >= s.prefill_target.item(r) for r in self._last_batch)

    def need(self, r: int, tokens: int | None = None) -> tuple[int, int]:
        """(blocks admitting r takes from the free queue, prompt tokens it computes): for its whole prompt, or, given
        `tokens` (the KV slots of its first chunk beyond its hit, vLLM V1), for its hit and that chunk, at most its
        prompt plus the slots beyond it (as `WindowPrefixCache.need_blocks`: vLLM's get_num_blocks_to_allocate
        counts the hit's free cached blocks and the new ones)."""
        self._insert_computed()
        target = int(self.s.prefill_target[r])
        if tokens is None or self.cache.deferred:
            return self.cache.need_blocks(r, target, self.blocks_for(target)), target
        served = self.cache.match_tokens(r, target)
        total = min(served + int(tokens), max(target, int(tokens)))
        return self.cache.need_blocks(r, target, int(self.blocks_for(total))), target

    def hit_in_use_tokens(self, r: int) -> int:
        """Tokens of r's cache hit that running requests hold (SGLang's PrefillAdder does not charge them:
        sched.vllm's docstring)."""
        self._insert_computed()
        target = int(self.s.prefill_target[r])
        return (int(self.blocks_for(target)) - self.cache.need_blocks(r, target, self.blocks_for(target))) \
            * self.block_size

    def admit(self, r: int, reserve: bool = True) -> tuple[int, bool]:
        self._insert_computed()
        s = self.s
        target = int(s.prefill_target[r])
        got = self.cache.admit(r, target, int(self.blocks(r, target)), reserve)
        s.blocks[r], s.unit_blocks[r] = got.private_blocks, got.unit_blocks
        self.used_blocks += got.taken_blocks
        if s.preemptions[r] == 0:
            s.cached_prompt_tokens[r] = got.hit_tokens
        self.hit_tokens += got.hit_tokens
        if got.loaded_tokens:
            self.loaded_tokens += got.loaded_tokens
            self.io[0] += got.loaded_tokens
            self.io[1] += 1
        return got.hit_tokens, False

    def _private_need(self, ids, tokens):
        return self.blocks(ids, tokens) - self.s.unit_blocks[ids]

    def cache_prompt(self, r: int, tokens: int) -> None:
        """r's first `tokens` prompt tokens are scheduled (their blocks grown): its full units among them are cached
        now (PrefixCache.cache_prompt), their blocks counted as the units' (`RequestState.unit_blocks`)."""
        cache = self.cache
        if r not in cache.growing:
            return
        n = cache.cache_prompt(r, tokens, int(self.s.prefill_target[r])) * cache.unit_blocks
        if n:
            self.s.blocks[r] -= n
            self.s.unit_blocks[r] += n

    def take(self, n: int) -> None:
        self.cache.take(n)
        self.used_blocks += n

    def free(self, r: int, ctx_tokens: int, private_blocks: int, keep: str) -> None:
        self.used_blocks -= self.cache.release(r, ctx_tokens, private_blocks, keep)

    def cached(self, r: int, prompt_tokens: int) -> int:
        self._insert_computed()
        return self.cache.match_tokens(r, prompt_tokens)

    def prompt_keys(self, r: int, prompt_tokens: int) -> np.ndarray:
        return self.cache.prompt_keys(r, prompt_tokens)

    @property
    def prefix_unit_tokens(self) -> int:
        return self.cache.unit_tokens

    @property
    def cached_tokens(self) -> int:
        self._insert_computed()
        return self.cache.cached_tokens

    def on_plan(self, plan) -> None:
        if self.cache.deferred:   # the results of the step before are processed (module docstring)
            self._insert_computed(hold_last=False)
            if self.overlapped:
                self._last_batch = frozenset(plan.prefill_ids)
        plan.io_tokens, plan.io_transfers = self.io
        self.io = [0, 0]
        if self.shared_attention and len(plan.decode_ids) > 1:
            plan.shared = self.cache.shared_context(plan.decode_ids)
