"""Host memory beside a replica's GPU KV (`cluster.kv_cache.host_memory_gib` per GPU): swap preemption and a
second tier for evicted prefix units (LMCache, vLLM's CPU KV offloading; vLLM V0's swap space).

`HostMemory` holds, in tokens, the requests swapped out (`preemption: swap`) and the prefix units a prefix
cache evicted from the GPU (LRU; a later hit loads them over the host link instead of recomputing them,
simulator.core.kv.prefix_cache); swapped-out requests take room first, evicting offloaded units.
`HostTier` is the KV manager of a replica with host memory: it wraps the replica's GPU pool (a block pool
or a prefix cache) and adds the swap: a decoding request preempted while its KV fits in host memory keeps
it there and, re-admitted, resumes decoding with it instead of re-prefilling. A prompt's blocks come as the
wrapped pool gives them (per chunk under vLLM V1's scheduler, else at admission). Moving KV costs `io_s_per_token` (bytes of one
token's KV per GPU / the GPU's host-link bandwidth; every GPU of the replica moves its own shard over its
own link, in parallel) plus `io_latency_s` per transfer, paid by the step that makes the copy
(approximation: the step waits for it, no overlap with its compute).
"""
from __future__ import annotations

from collections import OrderedDict


class HostMemory:
    """Host memory of a replica for swapped requests and offloaded prefix units, in tokens."""

    def __init__(self, capacity_tokens: int, unit_tokens: int):
        self.capacity, self.unit_tokens = int(capacity_tokens), int(unit_tokens)
        self.units: OrderedDict[int, None] = OrderedDict()   # offloaded prefix units, LRU first
        self.swapped: dict[int, int] = {}                      # request -> tokens swapped out
        self.used = 0

    def _make_room(self, tokens: int) -> bool:
        while self.used + tokens > self.capacity and self.units:
            self.units.popitem(last=False)
            self.used -= self.unit_tokens
        return self.used + tokens <= self.capacity

    def swap_out(self, r: int, tokens: int) -> bool:
        """Keep `tokens` of request r (evicting offloaded units if needed); False when they do not fit."""
        if not self._make_room(tokens):
            return False
        self.swapped[r] = tokens
        self.used += tokens
        return True

    def swap_in(self, r: int) -> int:
        tokens = self.swapped.pop(r)
        self.used -= tokens
        return tokens

    def offload(self, key: int) -> None:
        if key in self.units:
            self.units.move_to_end(key)
        elif self._make_room(self.unit_tokens):
            self.units[key] = None
            self.used += self.unit_tokens

    def touch(self, key: int) -> None:
        if key in self.units:   # (it may have made room for later offloads meanwhile)
            self.units.move_to_end(key)


class HostTier:
    """The KV manager of a replica with host memory (module docstring): `gpu`'s, plus swapping. What it
    does not define is `gpu`'s (blocks, growth, release, cache lookups)."""

    def __init__(self, gpu, memory: HostMemory, swap: bool, io_s_per_token: float, io_latency_s: float):
        self.gpu, self.memory, self.swap = gpu, memory, swap
        self.io_s_per_token, self.io_latency_s = io_s_per_token, io_latency_s
        self.swapped_tokens = 0
        # Decode bulks run where the wrapped pool's do: a decode-only step moves no KV to or from host memory
        # (swaps and loads are made by preemptions and admissions), and a bulk hands its growth and finishes to
        # the wrapped pool (`bulk_replay`: this wrapper does not hold `used_blocks`, the pool does).
        self.bulk_capable, self.bulk_replay, self.summarized = gpu.bulk_capable, True, True
        self.io = [0, 0]   # KV tokens and transfers swapped for the step being formed

    def __getattr__(self, name):
        return getattr(self.gpu, name)

    def need(self, r: int, tokens: int | None = None) -> tuple[int, int]:
        swapped = self.memory.swapped.get(r)
        if swapped is not None:   # its KV comes back: nothing to compute
            return self.gpu.blocks_for(swapped), 0
        return self.gpu.need(r, tokens)

    def whole_prompt_need(self, r: int, window_cap: bool = False) -> int:
        """`need`'s blocks for a request swapped out (its KV comes back whole), else the GPU pool's."""
        if r in self.memory.swapped:
            return int(self.need(r)[0])
        return self.gpu.whole_prompt_need(r, window_cap)

    def hit_in_use_tokens(self, r: int) -> int:
        return 0 if r in self.memory.swapped else self.gpu.hit_in_use_tokens(r)

    def admit(self, r: int, reserve: bool = True) -> tuple[int, bool]:
        if r not in self.memory.swapped:
            return self.gpu.admit(r, reserve)
        tokens = self.memory.swap_in(r)
        need = int(self.gpu.blocks_for(tokens))
        self.gpu.take(need)
        self.gpu.s.blocks[r], self.gpu.s.unit_blocks[r] = need, 0
        self.io[0] += tokens
        self.io[1] += 1
        return tokens, True

    def preempt(self, r: int, decoding: bool) -> bool:
        ctx = int(self.gpu.s.ctx[r])
        if not (self.swap and decoding and self.memory.swap_out(r, ctx)):
            return self.gpu.preempt(r, decoding)
        self.gpu.release(r, "none")
        self.swapped_tokens += ctx
        self.io[0] += ctx
        self.io[1] += 1
        return True

    def on_plan(self, plan) -> None:
        self.gpu.on_plan(plan)
        plan.io_tokens += self.io[0]
        plan.io_transfers += self.io[1]
        self.io = [0, 0]

    def io_seconds(self, tokens: int, transfers: int) -> float:
        return tokens * self.io_s_per_token + transfers * self.io_latency_s
