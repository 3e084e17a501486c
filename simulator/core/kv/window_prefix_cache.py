"""Prefix caching for models with sliding-window layers beside full attention (gpt-oss) where requests share
prefixes, as vLLM V1's hybrid KV-cache manager does it: the window groups keep only the window's blocks, and a
request hits a cached prefix only as far as both kinds of group can serve it (`WindowPrefixCachePool`, over the
free queue `WindowPrefixCache`).

vLLM's rules (file names under vllm/v1/core/, read in the 0.10.0, 0.11.0 and 0.33.0 wheels):
* every full block of every group is cached under its block hash when allocated (`cache_blocks`); a block freed
  keeps its hash and stays a cache hit until its block is taken from the free queue's head (`block_pool.py`);
* `remove_skipped_blocks(num_computed_tokens)` frees, at each `allocate_slots`, the sliding-window groups' blocks
  wholly before token C − W + 1 (`SlidingWindowManager`), the last first (one `free_blocks` call), so they join
  the free queue as cached blocks (simulator.core.kv.sliding_window: the block counts);
* `get_computed_blocks` → `HybridKVCacheCoordinator.find_longest_cache_hit` (`kv_cache_coordinator.py`): first the
  full-attention groups' longest run of cached blocks from the prompt's start (at most prompt − 1 tokens), then,
  WITHIN it, `SlidingWindowManager.find_longest_cache_hit`: scanning from the right, the first run of
  ceil((W − 1) / B) contiguous cached blocks of the window groups; the hit ends where that run ends (or, where no
  such run exists, at the end of the run of cached blocks from the prompt's start); the full-attention hit is
  cut to that length. The hit's window-group blocks are the run only (those before it: null blocks). Without
  full-attention layers (every layer windowed, `UnitaryKVCacheCoordinator`) the window search alone decides;
* with an EAGLE-style drafter (`drop_tokens`, as simulator.core.kv.prefix_cache) the window run needs one block
  more and the hit drops its last block (`_contiguous_blocks_for_hit` 0.33.0; the coordinator's eagle margin);
* `KVCacheCoordinator.free` frees its groups one after the other in group order, each from its last block.

Here a prefix unit is one KV block (generated workloads: `workload.shared_prefix`, `sessions`; a trace whose
hash blocks are the KV block). A unit's full-attention blocks (`full_groups` of them) sit in the free queue under
its key, its window blocks (`window_groups`) under `WindowUnit(key)`; each has its own references, so one can be
evicted while the other stays cached, as in vLLM. Per request: its table (positions allocated, null ones
included), its registered units (positions 0..n−1: referenced in the full groups, and in the window groups from
its first held position `wlo`), its private blocks (the rest).

Approximations, named:
- a position's full-group blocks (and its window-group blocks) are evicted together (vLLM: block by block; as
  simulator.core.kv.prefix_cache keeps a unit's blocks together);
- a request's groups are freed window groups first: gpt-oss's first layer is a sliding-window one, so its
  window groups come first in vLLM's group order; a model whose first layer attends fully frees its full groups
  first there (their blocks are then evicted first; the counts do not change);
- decode-produced blocks become cached units only at release (as PrefixCache), and a window block of them freed
  by the window while the request decodes is a plain free block: a later hit ending inside a request's own
  output, short of its end, is not served (a next session turn's hit ends at the end of that output, whose
  window the request held until its release);
- a unit computed twice (its key cached when the request's position is allocated) stays private to the second
  request, and the request's later prompt positions too (PrefixCache's rule);
- with `drop_tokens`, the hit's last block stays referenced and a request whose last hit block is in use by
  another computes it again into a private block of each group kind (PrefixCache's rule); vLLM 0.11 drops one
  block more there (its full-attention hit drops its last block before the window search): not modelled;
- `need` for a first chunk of `tokens` prompt tokens counts the hit plus the chunk, at most the whole prompt (vLLM
  adds the lookahead slots; the vllm_v1 scheduler passes them inside `tokens`).
The pool runs step by step (SlidingWindowPool: not `bulk_capable`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.core.kv.prefix_cache import PrefixCache
from simulator.core.kv.sliding_window import SlidingWindowPool, WindowPageLayout, _cdiv


@dataclass(frozen=True, slots=True)
class WindowUnit:
    """The window groups' blocks of prefix unit `key` in the free queue (its full groups' are keyed `key`)."""

    key: int


@dataclass(slots=True)
class _Held:
    """What one admitted request holds (module docstring): per position 0..len − 1 of its prompt's full units the
    key its full groups' and its window groups' blocks are cached under (None: private to it)."""

    full: list
    window: list
    wlo: int            # its first window-group position held (those before: vLLM's null blocks)
    kend: int           # prompt positions below it are units (when allocated)
    nf: int = 0         # positions whose full-group blocks are cached units
    nw: int = 0         # positions from wlo on whose window-group blocks are cached units
    copied: int = 0     # private blocks of a dropped hit block computed again (`drop_tokens`)


@dataclass
class WindowPrefixCache(PrefixCache):
    """The free queue, cached units and requests' tables of one replica (module docstring). `refs`: full-group
    references per key; `wrefs`: window-group references per key. Block counts are exact: blocks in use +
    `free_blocks` = total blocks; `taken` − `freed` = blocks in use."""

    layout: WindowPageLayout | None = None
    wrefs: dict = field(default_factory=dict)
    reqs: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.unit_tokens != self.block_size or self.layout is None or self.host is not None:
            raise ValueError("the sliding-window prefix cache needs units of one KV block, a page layout and no "
                             "host tier")
        lay = self.layout
        self.gf, self.gw = lay.full_groups, lay.window_groups
        # contiguous window blocks a hit needs: ceil((W − 1) / B), one more with an EAGLE-style drafter
        self.run_blocks = _cdiv(lay.window - 1, self.block_size) + (1 if self.drop_tokens else 0)
        self._free_window = 0   # window units in the free queue
        self.taken = self.freed = 0

    # ---- lookups ---------------------------------------------------------------------------------
    def _full(self, k: int) -> str | None:
        return "used" if k in self.refs else "free" if k in self.queue else None

    def _window(self, k: int) -> str | None:
        return "used" if k in self.wrefs else "free" if WindowUnit(k) in self.queue else None

    def _cached(self, k: int) -> bool:
        return k in self.refs or k in self.queue or k in self.wrefs or WindowUnit(k) in self.queue

    def hit(self, r: int, target_tokens: int) -> tuple[int, list, list]:
        """(positions of r's hit, where the full groups' blocks of positions 0.. are, where the window
        groups' blocks of its last positions are): vLLM's find_longest_cache_hit (module docstring)."""
        memo_key = (r, target_tokens, self.version)
        found = self._memo.get(memo_key)
        if found is not None:
            return found
        if len(self._memo) > 4096:
            self._memo.clear()
        keys, limit = self._keys(r), (target_tokens - 1) // self.block_size
        full: list = []
        if self.gf:
            for j in range(limit):
                where = self._full(self.key(r, j, keys))
                if where is None:
                    break
                full.append(where)
        bound = len(full) if self.gf else limit
        run, end = 0, None
        for j in range(bound - 1, -1, -1):   # from the right: the first run of `run_blocks`
            if self._window(self.key(r, j, keys)) is None:
                run = 0
                continue
            run += 1
            if run >= self.run_blocks:
                end = j + run
                break
        e = run if end is None else end      # (no such run: the run from the prompt's start)
        lo = max(0, e - self.run_blocks)
        window = [self._window(self.key(r, j, keys)) for j in range(lo, e)]
        found = self._memo[memo_key] = (e, full[:e], window)
        return found

    def _copied(self, e: int, full: list, window: list) -> int:
        """Private blocks of the dropped hit block computed again while another request uses it."""
        if not (self.drop_tokens and e):
            return 0
        return (self.gf if full and full[-1] == "used" else 0) + (self.gw if window[-1] == "used" else 0)

    def match_tokens(self, r: int, prompt_tokens: int) -> int:
        return self._served(self.hit(r, prompt_tokens)[0])

    @property
    def cached_tokens(self) -> int:
        """Tokens of the units cached in the full groups (the window groups' where the model has none)."""
        if self.gf:
            return (len(self.refs) + self._free_units - self._free_window) * self.unit_tokens
        return (len(self.wrefs) + self._free_window) * self.unit_tokens

    def need_blocks(self, r: int, target_tokens: int, tokens: int | None, window_cap: int | None = None) -> int:
        """Blocks admitting r and allocating its first `tokens` prompt tokens (None: all) takes from the free
        queue: the free cached blocks its hit touches, its new positions in every group, its copies. `window_cap`
        (vLLM 0.20 on's whole-sequence check, `tokens` None): a window group asks for at most that many positions
        less the hit's or the skipped ones (single_type_kv_cache_manager.py `get_num_blocks_to_allocate`:
        max(min(required, cap) − max(skipped, hit), 0))."""
        e, full, window = self.hit(r, target_tokens)
        served = self._served(e)
        chunk = target_tokens - served if tokens is None else int(tokens)
        positions = max(e, _cdiv(min(served + chunk, max(target_tokens, chunk)), self.block_size))
        touched = self.gf * full.count("free") + self.gw * window.count("free")
        new_window = positions - e
        if window_cap is not None:
            new_window = max(min(positions, window_cap) - max(int(self.layout.skipped_blocks(served)), e), 0)
        return touched + self.gf * (positions - e) + self.gw * new_window + self._copied(e, full, window)

    # ---- the free queue ----------------------------------------------------------------------------
    def take(self, n: int) -> None:
        super().take(n)
        self.taken += n

    def _evicted(self, key) -> None:
        if type(key) is WindowUnit:
            self._free_window -= 1
        super()._evicted(key)

    def _push(self, key, blocks: int) -> None:
        if blocks <= 0:
            return
        super()._push(key, blocks)
        self.freed += blocks
        if type(key) is WindowUnit:
            self._free_window += 1

    def _touch(self, key, blocks: int) -> None:
        """A free cached unit a hit finds leaves the free queue into use."""
        del self.queue[key]
        self._free_units -= 1
        if type(key) is WindowUnit:
            self._free_window -= 1
        self.free_blocks -= blocks
        self.taken += blocks

    def _plain(self, blocks: int) -> None:
        self._push(("free", next(self._segments)), blocks)

    # ---- a request's life --------------------------------------------------------------------------
    def _sides(self, h: _Held) -> list:
        """(blocks per position, references, r's keys per position, queue key) of its window groups, then of its
        full groups (the order vLLM frees them in: module docstring)."""
        sides = [(self.gw, self.wrefs, h.window, WindowUnit)] if self.gw else []
        return sides + ([(self.gf, self.refs, h.full, int)] if self.gf else [])

    def admit(self, r: int, target_tokens: int) -> tuple[int, int]:
        """Admit r with its hit referenced (module docstring); returns (hit positions, prompt tokens served)."""
        e, full, window = self.hit(r, target_tokens)
        keys = self._keys(r)
        held = [self.key(r, j, keys) for j in range(e)]
        lo = e - len(window)
        h = _Held(held if self.gf else [None] * e, [None] * lo + held[lo:], lo, target_tokens // self.block_size,
                  len(held) if self.gf else 0, e - lo)
        for blocks, refs, unit, found in ((self.gf, self.refs, int, full), (self.gw, self.wrefs, WindowUnit, window)):
            for k, where in zip(held[e - len(found):], found):   # (full: none without full groups)
                if where == "used":
                    refs[k] += 1
                else:
                    self._touch(unit(k), blocks)
                    refs[k] = 1
        h.copied = self._copied(e, full, window)
        self.take(h.copied)
        self.reqs[r] = h
        self.version += 1
        return e, self._served(e)

    def _release(self, blocks: int, refs: dict, keys: list, unit, hi: int, lo: int, extra=None) -> None:
        """Free positions hi − 1 down to lo of one kind of group: a unit when its last reference goes (or one
        of `extra`, position -> key, cached now), else plain blocks (vLLM's free_blocks order)."""
        plain = 0
        for j in range(hi - 1, lo - 1, -1):
            k = keys[j] if j < len(keys) else None
            if k is not None:
                left = refs[k] - 1
                if left:
                    refs[k] = left
                    continue
                del refs[k]
            elif extra is not None and j in extra:
                k = extra[j]
            else:
                plain += blocks
                continue
            self._plain(plain)
            plain = 0
            self._push(unit(k), blocks)
        self._plain(plain)

    def skip(self, r: int, table: int, computed_tokens: int) -> None:
        """vLLM's remove_skipped_blocks: free r's window-group blocks wholly before the window of its next token,
        the last first."""
        h = self.reqs[r]
        new = min(table, max(h.wlo, int(self.layout.skipped_blocks(computed_tokens))))
        if new <= h.wlo or not self.gw:
            h.wlo = max(h.wlo, new)
            return
        h.nw -= sum(1 for k in h.window[h.wlo:new] if k is not None)
        self._release(self.gw, self.wrefs, h.window, WindowUnit, new, h.wlo)
        h.wlo = new
        self.version += 1

    def allocate(self, r: int, table: int, new_table: int) -> None:
        """Give r positions table..new_table − 1 in every group (the caller checked they fit). A prompt unit's
        blocks of one kind are cached under its key where that kind holds no copy; where a free copy is cached
        the position takes it (vLLM takes a new block from the queue's head and leaves the cached copy: one
        other unit evicted there instead of this copy's key, the same count); where another request uses it,
        it is a private duplicate."""
        if new_table <= table:
            return
        h = self.reqs[r]
        keys, fresh = self._keys(r), (self.gf + self.gw) * (new_table - table)
        for j in range(table, min(new_table, h.kend)):
            k = self.key(r, j, keys)
            for blocks, refs, mine, unit in self._sides(h):
                if k in refs:
                    mine.append(None)
                    continue
                if unit(k) in self.queue:
                    self._touch(unit(k), blocks)
                    fresh -= blocks
                refs[k] = 1
                mine.append(k)
                if unit is int:
                    h.nf += 1
                else:
                    h.nw += 1
            if not self.gf:
                h.full.append(None)
            self.version += 1
        self.take(fresh)

    def release(self, r: int, table: int, ctx_tokens: int, cache: str) -> None:
        """Free r's blocks (finish or preemption), its window groups first, each from its last position. `cache`:
        which of its other full units (its output's) to cache, where no copy of a kind is cached: as
        PrefixCache.release ("shared": those with shared keys, "all": private ones too, "none")."""
        h = self.reqs.pop(r)
        keys, units = self._keys(r), len(h.full)
        for blocks, refs, mine, unit in self._sides(h):
            extra = {}
            if cache != "none":
                for j in range(units, min(ctx_tokens // self.block_size, table)):
                    k = self.key(r, j, keys)
                    if k < 0 and cache == "shared":
                        break
                    if k not in refs and unit(k) not in self.queue:
                        extra[j] = k
            self._release(blocks, refs, mine, unit, table, h.wlo if unit is WindowUnit else 0, extra)
        self._plain(h.copied)
        self.version += 1

    def shrink(self, r: int, table: int, new_table: int) -> None:
        """Free r's positions new_table..table − 1 in every group (it rolled back its newest tokens)."""
        h = self.reqs[r]
        for blocks, refs, mine, unit in self._sides(h):
            self._release(blocks, refs, mine, unit, table, max(new_table, h.wlo if unit is WindowUnit else 0))
        h.nf -= sum(1 for k in h.full[new_table:] if k is not None)
        h.nw -= sum(1 for k in h.window[max(new_table, h.wlo):] if k is not None)
        del h.full[new_table:], h.window[new_table:]
        h.kend = min(h.kend, new_table)
        h.wlo = min(h.wlo, new_table)
        self.version += 1

    def held_blocks(self, r: int, table: int) -> tuple[int, int]:
        """(private blocks, blocks of the units it references) of r with `table` positions."""
        h = self.reqs.get(r)
        if h is None:
            return 0, 0
        private = self.gf * (table - h.nf) + self.gw * (table - h.wlo - h.nw) + h.copied
        return private, self.gf * h.nf + self.gw * h.nw


class WindowPrefixCachePool(SlidingWindowPool):
    """A SlidingWindowPool (its layout, peak and table) whose free blocks are `cache`'s free queue: admission
    references the hit both kinds of group serve, `grow` frees the window groups' blocks before the window into
    the cache and allocates the new positions, release caches the request's units (module docstring)."""

    summarized = True

    def __init__(self, state, layout: WindowPageLayout, cache: WindowPrefixCache):
        super().__init__(state, layout)
        self.cache = cache
        self.hit_tokens = 0

    def _sync(self, ids) -> None:
        cache, s = self.cache, self.s
        for r in ids:
            s.blocks[r], s.unit_blocks[r] = cache.held_blocks(r, int(self.table[r]))
        self.used_blocks = self.total_blocks - cache.free_blocks
        self.taken_blocks, self.freed_blocks = cache.taken, cache.freed

    def need(self, r: int, tokens: int | None = None) -> tuple[int, int]:
        target = int(self.s.prefill_target[r])
        return self.cache.need_blocks(r, target, tokens), target

    def whole_prompt_need(self, r: int, window_cap: bool = False) -> int:
        """SlidingWindowPool.whole_prompt_need with r's hit (its blocks counted as computed, the free ones as taken)."""
        lay = self.layout
        cap = int(lay.window_cap(max(lay.step_tokens, lay.q))) if window_cap and lay.step_tokens else None
        return self.cache.need_blocks(r, int(self.s.prefill_target[r]), None, cap)

    def admit(self, r: int, reserve: bool = True) -> tuple[int, bool]:
        s = self.s
        target = int(s.prefill_target[r])
        positions, served = self.cache.admit(r, target)
        self.table[r] = positions
        if reserve:   # the whole prompt now (a scheduler that does not allocate per chunk)
            self._allocate(r, _cdiv(target, self.block_size))
        self._sync((r,))
        if s.preemptions[r] == 0:
            s.cached_prompt_tokens[r] = served
        self.hit_tokens += served
        return served, False

    def _allocate(self, r: int, new_table: int) -> None:
        table = int(self.table[r])
        if new_table > table:
            self.cache.allocate(r, table, new_table)
            self.table[r] = new_table

    def grow(self, ids, tokens) -> bool:
        """vLLM's allocate_slots for request(s) `ids` needing slots for `tokens` tokens: remove_skipped_blocks
        first (kept even when the rest does not fit), then every group's table grows to ceil(tokens / B); False,
        and nothing allocated, when the new blocks do not all fit."""
        s, cache = self.s, self.cache
        ids = np.atleast_1d(np.asarray(ids, dtype=np.int64)).tolist()
        news = np.broadcast_to(_cdiv(np.asarray(tokens, dtype=np.int64), self.block_size), (len(ids),)).tolist()
        for r in ids:
            cache.skip(r, int(self.table[r]), int(s.ctx[r]))
        extra = sum(max(0, new - int(self.table[r])) for r, new in zip(ids, news))
        ok = (cache.gf + cache.gw) * extra <= cache.free_blocks
        if ok:
            for r, new in zip(ids, news):
                self._allocate(r, new)
        self._sync(ids)
        return ok

    def take(self, n: int) -> None:
        self.cache.take(n)
        self.used_blocks = self.total_blocks - self.cache.free_blocks

    def free(self, r: int, ctx_tokens: int, private_blocks: int, keep: str) -> None:
        self.cache.release(r, int(self.table[r]), ctx_tokens, keep)
        self.table[r] = 0
        self._sync(())

    def shrink(self, r: int, tokens: int) -> None:
        table = int(self.table[r])
        new = min(table, _cdiv(tokens, self.block_size))
        if new < table:
            self.cache.shrink(r, table, new)
            self.table[r] = new
        self._sync((r,))

    def cached(self, r: int, prompt_tokens: int) -> int:
        return self.cache.match_tokens(r, prompt_tokens)

    @property
    def cached_tokens(self) -> int:
        return self.cache.cached_tokens
