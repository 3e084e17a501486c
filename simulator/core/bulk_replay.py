"""Decode bulks over a KV manager that must see their growth and finishes one by one, in the step path's order
(`kv.bulk_replay`): a prefix cache, whose free blocks are an eviction queue (simulator.core.kv.prefix_cache), and
a host tier, which keeps the blocks count of the pool it wraps (simulator.core.kv.host_tier).

What a prefix cache counts (`PrefixCachePool`): a request's KV is `RequestState.blocks` private blocks plus
`RequestState.unit_blocks` blocks of the cached prefix units it references, and a unit several requests
reference is in use once. Decode growth asks for private blocks only (`BlockPool.grow` through
`PrefixCachePool._private_need`: blocks_for(context + q) − unit blocks, never fewer than held). So here a
member's row of blocks held (`sums[BLK]`) is its private part, max(blocks_for(context + q) − unit blocks,
private blocks at its join); the units in use stay in the bulk's `other_blocks`. A finish inside the bulk may
free a unit the others counted: the step path's blocks in use drop by it from the next step, and so does the
bulk's log (`other_blocks` per step); the bulk's room check keeps the units to its end, so it can only stop
earlier than needed (a prefix of a bulk is a bulk), never pass a step the step path would preempt in.

The order of evictions: decode growth takes blocks from the head of the cache's free queue (evicting the least
recently freed units, offloading them to host memory where there is a host tier) and a finish releases the
request's blocks and units to its tail (`PrefixCache.take`, `.release`). The step path does, per decode-only
step, the growth of all its decodes when the step is formed (`Replica.plan_step`: the scheduler's `grow`, one
`take` of their sum, or one per request in running order: consecutive takes are one take, `PrefixCache.take`
consumes the queue from its head in one pass either way), then the releases of the requests finishing in it,
in its decode order (the running order), when it is applied (`Replica.finish_done`). `_Replay` does exactly
that for a bulk: for each step in which members finish, one take of all members' growth since the last take,
then their releases; then the growth to the bulk's end. A decode-only step moves no KV to or from host memory
(host-tier loads and swaps are made by admissions and preemptions, never in a bulk), so its log has no io.

A prefix-aware router reads every replica's cache when it routes an arrival (simulator.core.engine
`_prefix_view`), while other replicas may have bulks in flight: `ReplayProfile.sync` first brings such a cache
to where the step path has it at that instant (the growth of the steps formed before it, the releases of the
steps ended before it; an arrival at a step's end instant is routed before that step ends, as the engine's
arrivals are urgent events). Approximation, named: a closed loop sends from a replica's step end, after the step
ends of the same instant of the replicas before it (simulator.core.engine `_step_priority`); a bulk in flight on
such a replica whose inner step boundary falls on exactly that float instant is read as if that step had not
ended. Replicas in lockstep end their bulks at the same finish instant instead (tested); other exact ties of
float sums of step durations are not expected.
"""
from __future__ import annotations

import heapq
from bisect import bisect_left

import numpy as np

from simulator.core.bulk import BLK, DecodeProfile, finishing_entries, log_bulk


class _Replay:
    """The KV work of one bulk's steps done so far, in the step path's order (module docstring)."""

    __slots__ = ("kv", "held", "groups", "done", "base", "taken", "other", "changes")

    def __init__(self, rep, plan):
        prof, s = rep.profile, rep.s
        i0 = plan.k0 - prof.base
        self.kv = rep.kv
        self.held = prof.sums[BLK, i0:i0 + plan.steps]   # members' private blocks per step (a view of past columns)
        found = [(e[0], e[2]) for e in finishing_entries(prof.finishes, plan.k0 + plan.steps)]   # (last, request)
        if len(found) > 1:   # the step path releases one step's finishes in its decode order: running order
            where = {r: i for i, r in enumerate(rep.running)}
            found.sort(key=lambda e: (e[0], where[e[1]]))
        self.groups: list[tuple[int, list[tuple[int, int, int]]]] = []   # (step in the bulk, [(request, final
        members = prof.members                                          # context, private blocks at its last step)])
        for last, r in found:
            f = last - plan.k0
            if not self.groups or self.groups[-1][0] != f:
                self.groups.append((f, []))
            self.groups[-1][1].append((r, s.ctx.item(r) + s.output.item(r) - s.emitted.item(r), members[r].held_last))
        self.done = 0          # groups released
        self.base = prof.member_blocks   # private blocks the members hold after the last take or release
        self.taken = -1        # the last step whose growth was taken
        self.other = plan.other_blocks   # blocks in use by others than the members: non-members, units in use
        self.changes: list[tuple[int, int]] = []   # (step, `other` from that step on) after a release freed units

    def _take_to(self, j: int) -> None:
        """Take the members' growth of steps taken + 1 .. j (one take: no release between them)."""
        if j > self.taken:
            held = self.held.item(j)
            if held > self.base:
                self.kv.take(held - self.base)
            self.base, self.taken = held, j

    def advance(self, formed: int, ended: int) -> None:
        """Bring the KV manager to where the step path has it when the bulk's first `formed` steps were formed
        and its first `ended` steps were applied (ended ≤ formed)."""
        groups, kv = self.groups, self.kv
        while self.done < len(groups) and groups[self.done][0] < ended:
            f, finishing = groups[self.done]
            self._take_to(f)
            before = kv.used_blocks
            private = 0
            for r, ctx, blocks in finishing:
                kv.free(r, ctx, blocks, "shared")   # (Replica.finish_done's release; the columns: `apply`)
                private += blocks
            self.base -= private
            units = before - kv.used_blocks - private   # blocks of units no one references any more
            if units:
                self.other -= units
                self.changes.append((f + 1, self.other))
            self.done += 1
        self._take_to(formed - 1)

    def other_per_step(self, n: int, other0: int):
        """`other_blocks` of the first n steps: an int, or one per step where a release freed units."""
        if not self.changes or self.changes[0][0] >= n:
            return other0
        out = np.full(n, other0, dtype=np.int64)
        for step, other in self.changes:
            out[step:] = other
        return out


class ReplayProfile(DecodeProfile):
    """The decode profile of a replica whose KV manager sees a bulk's growth and finishes (`kv.bulk_replay`,
    module docstring): members' rows count their private blocks (their unit blocks are the others'), and a
    bulk is applied through `_Replay`."""

    replays = True

    def __init__(self, rep):
        super().__init__(rep)
        self.flight = None   # the bulk in flight whose replay a router's read may advance (`sync`)
        self.replay: _Replay | None = None   # the flight's replay so far (None: not started)

    # ---- members count private blocks ---------------------------------------------------------------
    def join(self, ids: list[int]) -> None:
        """`DecodeProfile.join` with each request's held formula max(blocks_for(context + q) − unit blocks,
        private blocks): computed as the plain formula on private + unit blocks, less the unit blocks."""
        s = self.rep.s
        blocks, unit_blocks = s.blocks, s.unit_blocks
        units = [unit_blocks.item(r) for r in ids]   # (a few requests join at a time: Python ints)
        if not any(units):
            super().join(ids)
            return
        for r, u in zip(ids, units):
            blocks[r] = blocks.item(r) + u
        try:
            super().join(ids)
        finally:
            for r, u in zip(ids, units):
                blocks[r] = blocks.item(r) - u
        base, blk, members = self.base, self.sums[BLK], self.members
        for r, u in zip(ids, units):
            if u:
                m = members[r]
                blk[m.start - base:m.last + 1 - base] -= u
                m.held_last -= u
                if m.batch is not None:   # (its own column of a trajectory computed at this join)
                    m.batch.held[:, m.col] -= u
        self.member_blocks -= sum(units)

    def _join_ahead(self, r: int) -> bool:
        """Lives computed ahead (simulator.core.lives) are computed before admission, when the request's unit
        blocks are not known: never used here."""
        return False

    def _held(self, r: int, m, j: int) -> int:
        if m.batch is not None:
            return int(m.batch.held[j - 1, m.col])   # (private: `join`)
        s = self.rep.s
        units = s.unit_blocks.item(r)
        return self._plain_held(s.ctx.item(r), j, s.blocks.item(r) + units) - units

    def dissolve(self) -> None:
        """`DecodeProfile.dissolve`; plain members' private blocks by the plain formula on private + unit
        blocks, less the unit blocks (speculating members write back their trajectories' private blocks)."""
        if not self.members or self.suspended_at >= 0 or self.rep.acceptance is not None:
            super().dissolve()
            return
        s = self.rep.s
        ids = np.fromiter(self.members, dtype=np.int64, count=len(self.members))
        units = s.unit_blocks[ids]
        s.blocks[ids] += units
        super().dissolve()
        s.blocks[ids] -= units

    def finalize(self, r: int, member, finish_s: float) -> None:
        super().finalize(r, member, finish_s)
        self.rep.s.unit_blocks[r] = 0   # (its units were released by the replay: BlockPool.release's columns)

    # ---- bulks ---------------------------------------------------------------------------------------
    def sync(self, now_s: float) -> None:
        """A router reads the KV manager at `now_s`: replay the bulk in flight up to it (module docstring)."""
        plan = self.flight
        if plan is None:
            return
        bounds, n = plan.bounds_s, plan.steps
        if now_s <= bounds[0]:
            return
        if self.replay is None:
            self.replay = _Replay(self.rep, plan)
        formed = bisect_left(bounds, now_s, 0, n)        # steps that started before now
        ended = bisect_left(bounds, now_s, 1, n + 1) - 1   # steps that ended before now
        self.replay.advance(formed, ended)

    def apply(self, plan, finished: list[int]) -> None:
        """simulator.core.bulk.apply_bulk for this profile: the replay to the bulk's end, then the members'
        finishes (in the step path's order) and the log."""
        rep = self.rep
        replay = self.replay if plan is self.flight and self.replay is not None else _Replay(rep, plan)
        self.flight = self.replay = None
        k0, n = plan.k0, plan.steps
        k1 = k0 + n
        replay.advance(n, n)
        bounds = plan.bounds_s
        if len(bounds) > n + 1:   # (cut)
            bounds = bounds[:n + 1]
        heap, members = self.finishes, self.members
        while heap and heap[0][0] < k1:
            last, _, r = heapq.heappop(heap)
            self.finalize(r, members.pop(r), bounds[last - k0 + 1])
            rep.running.remove(r)
        for _, finishing in replay.groups[:replay.done]:
            finished.extend(r for r, _, _ in finishing)
        i0 = k0 - self.base
        self.k = k1
        self.member_blocks = replay.base
        log_bulk(rep, plan, bounds, self.sums[:, i0:i0 + n], replay.other_per_step(n, plan.other_blocks))
