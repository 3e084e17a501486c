"""Bulk advance of decode-only steps: many steps of one replica in one event, from its decode profile.

Accepted lengths are counter-based (a pure function of the request and its step index), so a decoding
request's whole future — tokens emitted, context and KV blocks at each of its decode steps, the step it
finishes in — does not depend on batching. `DecodeProfile` adds that future to per-step sums of its
replica once, when the request starts decoding (`join`): requests decoding, Σ context, tokens emitted,
accepted, blocks held, per future decode step. A bulk then only scans step durations (the same
interpolated step cost as the step-by-step path, in scalar arithmetic) until it must end, and applies the
finishes it passed. Nothing is computed per step and request.

A bulk is valid while no step can admit a request and nothing is mid-prefill (`Replica.bulk_ready`):
- waiting queue empty: the batch can only grow by an arrival routed to this replica, so the bulk ends at
  the first step boundary at or after that arrival (`next_arrival_s`; an arrival routed while the bulk
  is in flight cuts it there, `BulkPlan.cut`); requests finishing inside the bulk just leave the batch.
- waiting queue non-empty with a blocked head: arrivals join the tail and cannot unblock it (FCFS), but a
  finish frees a batch slot and KV blocks, so the bulk ends at the first step in which a request finishes.
- either way it ends before the first step that would need a preemption (KV exhaustion).
- closed-loop workloads (`stop_at_finish`): a finish sends the next request at that instant, so the bulk
  ends at the first step in which a request finishes.

The step-by-step path (`Replica.plan_step`/`apply_step`) reads and writes each request's state; before it
forms a step with decodes the profile is `dissolve`d (every member's state written back at the current
step), and the next bulk joins the running requests again. Every quantity is computed by the rules of
the step-by-step path (same cost rows and interpolation, same counter-based draws, same block
arithmetic), so both modes give identical outputs; the test suite checks this on every scheduling
scenario. A prefix of a bulk is itself a valid bulk, which is what lets a bulk be cut.

A KV manager whose free blocks are ordered (a prefix cache's eviction queue) or that wraps another (a host tier)
sees a bulk's growth and finishes one by one, in the step path's order: simulator.core.bulk_replay.
"""
from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import numpy as np

from simulator.core.lives import (ACC, AHEAD_BLOCK, BLK, CS, DS, EM, Life, LifeRows, Trajectory, draw_bound,
                                  fits_fresh, lives_ahead, step_range, step_rows)
from simulator.cost.step_cost import CTX_GRID_TOKENS

MAX_BULK_STEPS = 4096      # steps one bulk scans at most (a longer run takes several events)
_NO_FINISHES = np.zeros(0)   # (read only)
_SCAN_CHUNK = 16           # profile entries read into Python at first when the bulk's end is not timed (doubling after)
_SCAN_SLACK = 2            # entries read beyond those the time left takes at the latest step's duration


@dataclass(slots=True)
class _Member:
    start: int        # profile step of the request's first decode step in the profile (plain members: the
    #                   steps the request arrays have not counted yet start at max(start, DecodeProfile.synced))
    last: int         # profile step of its last decode step (the one it finishes in)
    accepted: int     # draft tokens accepted over them
    held_last: int    # blocks held in its last step
    # its trajectory (speculation; `col`: its column of a Trajectory, its first row of a LifeRows); None: plain
    # decoding, from the formulas
    batch: Trajectory | LifeRows | None = None
    col: int = 0


# DS, CS, BLK, EM, ACC (simulator.core.lives): rows of DecodeProfile.sums (columns of its `table`)
_ROW = 5                           # values per profile step


class _Ramps:
    """What a plain join adds, for any request: one int64 table whose row x is (1, x, (x + K) // block_size, 0, 0),
    K = `reach` = q + block_size − 1, in the profile's row layout (`DecodeProfile.table`), so that a request's rows
    at its steps j < length, (1, ctx0 + j, blocks_for(ctx0 + j + q), 0, 0) = row ctx0 + j, are the table's rows
    ctx0 .. ctx0 + length − 1: one contiguous run of it (`rows`, flat), added to the profile's in one operation."""

    def __init__(self, block_size: int, q: int):
        self.block, self.reach = block_size, q + block_size - 1
        self.flat = np.zeros(0, dtype=np.int64)

    def rows(self, ctx0: int, length: int) -> np.ndarray:
        """Rows ctx0 .. ctx0 + length − 1, flat (5 × length values)."""
        end = (ctx0 + length) * _ROW
        if end > len(self.flat):
            self._grow(ctx0 + length)
        return self.flat[ctx0 * _ROW:end]

    def _grow(self, at_least: int) -> None:
        size = max(at_least, 2 * len(self.flat) // _ROW, 4096)
        table = np.zeros((size, _ROW), dtype=np.int64)
        x = step_range(size)
        table[:, DS] = 1
        table[:, CS] = x
        table[:, BLK] = (x + self.reach) // self.block
        self.flat = table.reshape(-1)


class DecodeProfile:
    """Per future decode step of one replica, sums over its decoding requests (members): `sums[DS]` requests
    decoding, `sums[CS]` Σ context, `sums[BLK]` blocks held, `sums[EM]` tokens emitted and `sums[ACC]` draft
    tokens accepted (the last two with speculation only; plain decoding emits `sums[DS]`). They are held step by
    step, `table[i]` the five of column i (a bulk's scan reads a step's values together, and a plain join's are one
    contiguous run: `_Ramps`); `sums` is the same array by row. A KV manager that must see a bulk's growth and
    finishes in the step path's order (`bulk_replay`: a prefix cache's eviction queue, a host tier) gets
    simulator.core.bulk_replay.ReplayProfile instead (`replays`)."""

    replays = False   # apply_bulk hands the bulk to `apply` (ReplayProfile)

    def __init__(self, rep):
        self.rep = rep
        self.k = 0             # the next decode step, in profile steps
        self.base = 0          # profile step of column 0 of `sums`
        self._hold(np.zeros((0, _ROW), dtype=np.int64))
        self.members: dict[int, _Member | Life] = {}   # (a fresh join's Life is its member: `_join_ahead`)
        self.finishes: list[tuple[int, int, int]] = []   # heap of (last step, join order, request)
        self.joined = 0
        self.member_blocks = 0   # blocks the members hold now
        self.last_finish = -1    # the last step of the member finishing last
        self._ramps: _Ramps | None = None   # (made at the first plain join: the KV manager's block size)
        self._ahead: dict = {}   # request -> its simulator.core.lives.Life, computed ahead for a fresh join
        self.suspended_at = -1   # the step k at which `dissolve` wrote the members back and kept them (-1: not)
        # The step from which the request arrays have not counted the decode steps of the plain members that
        # joined before it (`dissolve` and `after_step` write them back, and re-base them here at once instead
        # of member by member; -1: never): a plain member's steps not in the arrays start at `_start`.
        self.synced = -1

    def __len__(self) -> int:
        return len(self.members)

    def _hold(self, table: np.ndarray) -> None:
        """Hold the sums in `table` (steps × five, C order) from now on."""
        self.table, self.flat, self.sums = table, table.reshape(-1), table.T

    def sync(self, now_s: float) -> None:
        """A router reads the replica's KV manager at `now_s` while a bulk may be in flight: nothing to bring
        up to date here (the KV manager's state between bulks is all a router reads of a plain pool)."""

    # ---- joining -------------------------------------------------------------------------------------
    def join(self, ids: list[int]) -> None:
        """Requests starting to decode at step `k` (their state in the request arrays is current)."""
        if len(ids) == 1:
            self.join_one(ids[0])
            return
        if self.rep.acceptance is None:
            for r in ids:
                self._join_plain(r)
            return
        rep, s = self.rep, self.rep.s
        ids_a = np.array(ids, dtype=np.int64)
        emitted0 = s.emitted[ids_a]
        remaining = s.output[ids_a] - emitted0
        ctx0, blocks0 = s.ctx[ids_a], s.blocks[ids_a]
        tau, cum = self._draws(ids_a, s.decode_steps[ids_a], emitted0, remaining)
        capped = np.minimum(cum, remaining)
        done = cum >= remaining
        lengths = done.argmax(axis=0) + 1   # cum is increasing down the rows
        active = step_rows(len(cum)) < lengths
        ctx = ctx0 + (cum - tau - 1)
        tau = tau * active
        block = rep.kv.block_size
        held = np.maximum((rep.decode_kv_tokens(ctx) + (block - 1)) // block, blocks0)  # blocks_for(Replica
        # .decode_kv_tokens), never less
        rows = np.stack([active.sum(axis=1), (ctx * active).sum(axis=1), (held * active).sum(axis=1),
                         np.diff(capped.sum(axis=1), prepend=0), tau.sum(axis=1)])
        self._add(rows)
        batch = Trajectory(tau, capped, held)
        accepted = tau.sum(axis=0).tolist()
        held_last = held[lengths - 1, np.arange(len(ids))].tolist()
        for col, (r, length) in enumerate(zip(ids, lengths.tolist())):
            self._enter(r, _Member(self.k, self.k + length - 1, accepted[col], held_last[col], batch, col))
        self.member_blocks += int(blocks0.sum())

    def join_one(self, r: int) -> None:
        """`join` of one request r (a bulk's prefill step folded in joins its requests one by one:
        simulator.core.bulk_arrivals)."""
        if self.rep.acceptance is None:
            self._join_plain(r)
        elif not self._join_ahead(r):
            self._join_one(r)

    def _start(self, m: _Member) -> int:
        """The first of member m's profile steps that the request arrays do not count yet (`synced` stays -1 in
        a profile of speculating members: `dissolve` empties it instead of re-basing them)."""
        return max(m.start, self.synced)

    def _enter(self, r: int, member: _Member | Life) -> None:
        last = member.last
        self.members[r] = member
        heapq.heappush(self.finishes, (last, self.joined, r))
        self.joined += 1
        if last > self.last_finish:
            self.last_finish = last

    def _join_plain(self, r: int) -> None:
        """`join` of one request without speculation (the common case): its rows (1, context, blocks_for(context
        + q) at each of its steps) are one contiguous run of the replica's `_Ramps`, added in one operation. (A
        scheduler's decode_kv_cap, max_model_len − 1, never binds here: q = 1 and a context is at most
        prompt + output − 2.)"""
        rep, s = self.rep, self.rep.s
        at = s.at   # (memoryviews: cheaper scalar reads, simulator.core.state.ScalarViews)
        length = at.output[r] - at.emitted[r]
        ctx0, blocks0 = at.ctx[r], at.blocks[r]
        ramps = self._ramps
        if ramps is None:
            ramps = self._ramps = _Ramps(rep.kv.block_size, rep.q)
        need = ctx0 + ramps.reach
        first = need // ramps.block          # blocks_for(ctx0 + q)
        i = self._room(length)
        if first >= blocks0:
            view = self.flat[i * _ROW:(i + length) * _ROW]
            view += ramps.rows(ctx0, length)   # (in place: an operator, not np.add's out= keyword, parsed per join)
            held_last = (need + length - 1) // ramps.block
        else:   # holds more than its context needs (a reservation): max(need, blocks held)
            steps = step_range(length)
            held = np.maximum((need + steps) // ramps.block, blocks0)
            self.sums[DS, i:i + length] += 1
            self.sums[CS, i:i + length] += steps + ctx0
            self.sums[BLK, i:i + length] += held
            held_last = int(held[-1])
        self._enter(r, _Member(self.k, self.k + length - 1, 0, held_last))
        self.member_blocks += blocks0

    def _join_one(self, r: int) -> None:
        """`join` of one speculating request that did not join from a life computed ahead (`_join_ahead`),
        with 1-D arrays (its five rows built in one array and added to the profile at once)."""
        rep, s = self.rep, self.rep.s
        acc = rep.acceptance
        emitted_0 = int(s.emitted[r])
        remaining = int(s.output[r]) - emitted_0
        steps_0 = int(s.decode_steps[r])
        # `_draws` for one request, in 1-D (a request's draws do not depend on the pieces they come in)
        ids, steps0, emitted0 = np.array([r]), np.array([steps_0]), np.array([emitted_0])
        tau = acc.draws(ids, steps0, emitted0, min(remaining, draw_bound(remaining, acc.depth)))[:, 0]
        cum = (tau + 1).cumsum()
        if cum[-1] < remaining:
            tau, cum = self._draw_more(ids, steps0, emitted0, remaining, tau[:, None], cum[:, None])
            tau, cum = tau[:, 0], cum[:, 0]
        length = int(cum.searchsorted(remaining)) + 1   # the first step reaching the output length (methods: no wrapper)
        tau, cum = tau[:length], cum[:length]
        block = rep.kv.block_size
        blocks0 = int(s.blocks[r])
        rows = np.empty((length, _ROW), dtype=np.int64)   # (the profile's layout: one addition)
        ones, ctx, held, emitted, accepted = rows.T
        ones.fill(1)
        np.subtract(cum, tau, out=ctx)
        ctx += int(s.ctx[r]) - 1                                   # context before each step
        np.add(rep.decode_kv_tokens(ctx), block - 1, out=held)
        held //= block                                            # blocks_for(Replica.decode_kv_tokens)
        if held[0] < blocks0:
            np.maximum(held, blocks0, out=held)
        np.add(tau, 1, out=emitted)
        emitted[-1] = remaining - (int(cum[-2]) if length > 1 else 0)   # capped at the output length
        accepted[:] = tau
        i = self._room(length)
        view = self.flat[i * _ROW:(i + length) * _ROW]
        np.add(view, rows.reshape(-1), out=view)
        capped = np.minimum(cum, remaining)
        self._enter(r, _Member(self.k, self.k + length - 1, int(cum[-1]) - length, int(held[-1]),   # Σ τ = Σ (τ + 1) − length
                               Trajectory(tau[:, None], capped[:, None], held[:, None]), 0))
        self.member_blocks += blocks0

    def _join_ahead(self, r: int) -> bool:
        """Join request r from its life computed ahead (simulator.core.lives) when it joins fresh: one slice
        addition. False (nothing done) when it does not (a resumed, preempted or non-counter-based join)."""
        rep, s = self.rep, self.rep.s
        life = self._ahead.pop(r, None)
        if life is None:
            acc = rep.acceptance
            if acc is None or not acc.counter_based or not fits_fresh(rep, r):
                return False   # (not computing lives for nothing: its own would not be used)
            self._ahead.update(lives_ahead(rep, self._expected(r)))
            life = self._ahead.pop(r, None)
            if life is None:
                return False
        blocks = s.at.blocks[r]
        if not life.fits(s, r, blocks):
            return False
        length = life.length
        i = self._room(length)
        view = self.flat[i * _ROW:(i + length) * _ROW]
        view += life.rows
        life.start, life.last = self.k, self.k + length - 1
        self._enter(r, life)   # (the life is its member: _Member's fields)
        self.member_blocks += blocks
        return True

    def fresh_steps(self, r: int) -> int:
        """The most decode steps request r, never admitted yet, takes in the profile once its prompt is prefilled: those
        of its life computed ahead, else its output less the prompt's token (a step emits at least one)."""
        life = self._ahead.get(r)
        return life.length if life is not None else self.rep.s.output.item(r) - 1

    def _expected(self, r: int) -> list[int]:
        """r and up to AHEAD_BLOCK − 1 requests expected to join this replica after it, without a life
        computed yet: the waiting queue, then its own next arrivals (never admitted: fresh joins)."""
        rep, ahead = self.rep, self._ahead
        block = [r]
        seen = {r}
        for b in rep.waiting:
            if len(block) >= AHEAD_BLOCK:
                break
            if b not in seen and b not in ahead:
                block.append(b)
                seen.add(b)
        arrivals = rep.arrivals
        if arrivals is not None and len(block) < AHEAD_BLOCK:
            for b in arrivals.ids[arrivals.pos:arrivals.pos + AHEAD_BLOCK - len(block)]:
                if b not in seen and b not in ahead:
                    block.append(b)
        return block

    def _draws(self, ids, steps0, emitted0, remaining):
        """Accepted lengths τ of each request's decode steps until it finishes, and the tokens emitted
        by the end of each (uncapped): (T, B) arrays, T the most steps any of them needs. Drawn in
        pieces (a prefix of the draws does not depend on how many follow)."""
        need = int(remaining.max())
        acc = self.rep.acceptance
        tau = acc.draws(ids, steps0, emitted0, min(need, draw_bound(need, acc.depth)))
        return self._draw_more(ids, steps0, emitted0, remaining, tau, np.cumsum(tau + 1, axis=0))

    def _draw_more(self, ids, steps0, emitted0, remaining, tau, cum):
        """(T, B) draws `tau` and their running sums of τ + 1 `cum`, extended until every request's sum
        reaches `remaining`, in pieces of half the length drawn (at least 8)."""
        acc = self.rep.acceptance
        while (cum[-1] < remaining).any():
            more = acc.draws(ids, steps0 + len(tau), emitted0 + cum[-1], max(8, len(tau) // 2))
            tau = np.concatenate([tau, more])
            cum = np.concatenate([cum, cum[-1] + np.cumsum(more + 1, axis=0)])
        return tau, cum

    def _add(self, rows: np.ndarray) -> None:
        """Add per-step sums (5, n) for steps k, k + 1, ... to the profile."""
        i = self._room(rows.shape[1])
        self.sums[:, i:i + rows.shape[1]] += rows

    def _room(self, ahead: int) -> int:
        """The column of step k, with room for `ahead` steps from there. When the array must grow, past
        steps are dropped into a new array (the step log holds views of past columns)."""
        i = self.k - self.base
        if i + ahead <= len(self.table):
            return i
        live = self.table[i:]
        table = np.zeros((max(2 * ahead, 2 * len(live), 256), _ROW), dtype=np.int64)
        table[:len(live)] = live
        self._hold(table)
        self.base = self.k
        return 0

    # ---- writing the state back ----------------------------------------------------------------------
    def finalize(self, r: int, member: _Member | Life, finish_s: float) -> None:
        """A member finished: its request's final state (the request arrays hold its state as of its join)."""
        rep = self.rep
        at = rep.s.at   # (memoryviews of the columns: cheaper scalar reads and writes, simulator.core.state.ScalarViews)
        if type(member) is Life:   # joined fresh (`Life.fits`: context ctx0, 1 token emitted, no decode step; so
            # nothing drafted or accepted yet: those columns grow only with decode_steps, which never shrinks)
            steps = member.length   # (`_start` is its start: a profile of speculating members never re-bases)
            at.ctx[r] = member.ctx0 + member.output - 1
            at.emitted[r] = member.output
            at.decode_steps[r] = steps
            at.accepted[r] = member.accepted
            at.drafted[r] = rep.draft_tokens * steps
        else:
            output = at.output[r]
            at.ctx[r] = at.ctx[r] + output - at.emitted[r]
            at.emitted[r] = output
            steps = member.last - self._start(member) + 1
            at.decode_steps[r] = at.decode_steps[r] + steps
            if rep.acceptance is not None:   # (Python ints, as above: no NumPy scalar arithmetic per finish)
                at.accepted[r] = at.accepted[r] + member.accepted
                at.drafted[r] = at.drafted[r] + rep.draft_tokens * steps
        at.blocks[r] = 0
        at.finish_s[r] = finish_s

    def blocks_held(self, ids) -> np.ndarray:
        """Blocks each request of `ids` holds at step k, members or not (what `dissolve` would write back;
        the request arrays hold a member's blocks as of its join, or now while suspended): for schedulers that
        read them between bulks (simulator.core.sched.trtllm's capacity rule)."""
        s = self.rep.s
        held = s.blocks[ids].copy()
        if self.suspended_at >= 0:
            return held
        for i, r in enumerate(np.asarray(ids).tolist()):
            m = self.members.get(r)
            if m is not None and self.k > self._start(m):
                held[i] = self._held(r, m, self.k - self._start(m))
        return held

    def _held(self, r: int, m: _Member, j: int) -> int:
        """Blocks member r holds after its first j ≥ 1 steps in the profile."""
        if m.batch is None:
            return self._plain_held(int(self.rep.s.ctx[r]), j, int(self.rep.s.blocks[r]))
        return m.batch.held_after(j, m.col)

    def _plain_held(self, ctx, j, blocks):
        """Blocks a plain member holds after its first j ≥ 1 steps, from the context and blocks the arrays hold
        for it (one token per step; the join's formula, blocks_for(context + q), never less than it held);
        ints (in Python arithmetic: a between-bulk check reads it member by member) or arrays."""
        block = self.rep.kv.block_size
        need = (ctx + j - 1 + (self.rep.q + block - 1)) // block
        return np.maximum(need, blocks) if isinstance(need, np.ndarray) else max(need, blocks)

    def dissolve(self) -> None:
        """Write every member's state at step k back to the request arrays (before the step-by-step path forms
        a step with decodes). Members decoding without speculation are kept, suspended and re-based at k (their
        sums are a function of the state the arrays now hold, as a join computes them), until the step is
        applied (`after_step`): a step that decodes each of them once is their step k, and they go on from
        k + 1 without joining again. Speculating members (their trajectories are indexed from their join) and
        anything unexpected empty the profile (`clear`): the running requests join the next bulk afresh."""
        if not self.members or self.suspended_at >= 0:
            return
        members, k = self.members, self.k
        if self.rep.acceptance is not None:   # (members speculate exactly when the replica does: `join`)
            self._write_back()
            self.clear()
            return
        # plain members, all at once: the arrays hold each one's state at its `_start` (`_held`'s formula)
        ids = np.fromiter(members, dtype=np.int64, count=len(members))
        j = np.full(len(ids), k - self.synced, dtype=np.int64)
        # Members join in step order, so those that joined after the last re-base (start > synced) are the
        # last ones: read from the end (the others' steps start at `synced`).
        later = []
        for m in reversed(members.values()):
            if m.start <= self.synced:
                break
            later.append(m.start)
        if later:
            j[len(j) - len(later):] = k - np.array(later[::-1], dtype=np.int64)
        s = self.rep.s
        ctx, blocks = s.ctx[ids], s.blocks[ids]
        s.blocks[ids] = np.where(j > 0, self._plain_held(ctx, j, blocks), blocks)
        s.emitted[ids] += j
        s.ctx[ids] = ctx + j
        s.decode_steps[ids] += j
        self.synced = k   # every member re-based: the arrays hold its state at step k
        self.suspended_at = k

    def _write_back(self) -> None:
        """Every member's state at step k into the request arrays, member by member (speculating members)."""
        rep, s = self.rep, self.rep.s
        for r, m in self.members.items():
            j = self.k - self._start(m)
            if j == 0:
                continue
            held = self._held(r, m, j)
            if m.batch is None:
                emitted = j
            else:
                emitted = m.batch.emitted_by(j, m.col)
                s.accepted[r] += m.batch.accepted_by(j, m.col)
                s.drafted[r] += rep.draft_tokens * j
            s.emitted[r] += emitted
            s.ctx[r] += emitted
            s.decode_steps[r] += j
            s.blocks[r] = held

    def after_step(self, decode_ids) -> None:
        """The step formed after `dissolve` was applied; `decode_ids` are the requests it decoded. If it
        decoded every member once and the members decode without speculation (their sums are a function of
        the state the arrays now hold, simulator.core.bulk's join), they continue from step k + 1: the
        members whose last step this was finished in it and leave. Otherwise the profile is emptied and the
        running requests join the next bulk afresh (the same sums, computed again)."""
        k = self.suspended_at
        if k < 0:
            return
        self.suspended_at = -1
        members = self.members
        if not members:
            return
        s = self.rep.s
        decoded = set(np.asarray(decode_ids).tolist()) if len(decode_ids) else set()
        if not decoded.issuperset(members):
            self.clear()
            return
        heap = self.finishes
        while heap and heap[0][0] == k:
            _, _, r = heapq.heappop(heap)
            del members[r]
        if not members:
            self.k, self.member_blocks, self.last_finish = k + 1, 0, -1
            return
        ids = np.fromiter(members, dtype=np.int64, count=len(members))
        if not np.isnan(s.finish_s[ids]).all():   # (a member finished off its profile's last step: never)
            self.clear()
            return
        self.k = self.synced = k + 1   # the members decoded once more: re-based at k + 1
        self.member_blocks = int(s.blocks[ids].sum())

    def clear(self) -> None:
        """Empty the profile: no members, no future sums (the request arrays hold every member's state)."""
        self.suspended_at = -1
        self.sums[:, self.k - self.base:] = 0
        self.members.clear()
        self.finishes.clear()
        self.member_blocks = 0
        self.last_finish = -1


@dataclass(slots=True)
class BulkPlan:
    """Decode steps k0 .. k0 + steps - 1 of one replica's profile, scanned from `bounds_s[0]`, and the prefill steps
    folded in among them (`prefill_at`; simulator.core.bulk_arrivals)."""

    k0: int
    steps: int
    bounds_s: list[float]   # step boundaries: step j runs from bounds_s[j] to bounds_s[j + 1] (read one by one)
    other_blocks: int      # blocks held by requests that are not members (e.g. reserved, in transfer)
    queued: int            # waiting requests when the bulk was planned
    end_s: float           # the end of its last step (a field that `cut` keeps, not a property: the driver reads it
    #                        twice per bulk)
    cuttable: bool = True  # it stops at arrivals: one routed here while it is in flight cuts it (`cut`)
    # Prefill steps folded into the bulk (simulator.core.bulk_arrivals), each as the number of the bulk's decode steps
    # before it, in step order; `bounds_s` holds their boundaries among the decode steps'. None: none. (A bulk with
    # some is never cut: they are folded only where the arrivals are known ahead.)
    prefill_at: list[int] | None = None
    applied: int = 0       # its decode steps whose finishes and blocks are applied (`settle_decodes`)

    def end_index(self, j: int) -> int:
        """The index in `bounds_s` of the end of the bulk's decode step j (past the prefill steps folded before it)."""
        return j + 1 + (bisect_right(self.prefill_at, j) if self.prefill_at else 0)

    def cut(self, at_s: float) -> None:
        """Apply only the steps up to the first boundary at or after `at_s` (an arrival routed to this
        replica, or a KV transfer that arrived, while the bulk is in flight). (The boundaries increase:
        the step ending first at or after `at_s` is found by bisection on the list itself.)"""
        self.steps = min(self.steps, bisect_left(self.bounds_s, at_s, 1, self.steps + 1))
        self.end_s = self.bounds_s[self.steps]

    def finish_times(self, profile: DecodeProfile) -> np.ndarray:
        """Sorted finish times of the members finishing in the applied steps (`finishing_entries`: the part of
        the members' heap below the bulk's end, not every member)."""
        entries = finishing_entries(profile.finishes, self.k0 + self.steps)
        if not entries:
            return _NO_FINISHES
        last = sorted(e[0] for e in entries)
        bounds, shift = self.bounds_s, 1 - self.k0
        return np.array([bounds[f + shift] for f in last])   # (not the whole list as an array: it may hold
        #                                                      thousands of boundaries)


def finishing_entries(heap: list, end: int) -> list[tuple]:
    """The entries (last step, ..., request) of a members' heap (`DecodeProfile.finishes`) whose last step is
    before `end`, in no order: only the part of its tree below `end` is visited (a child is never less than its
    parent), not every member."""
    if not heap or heap[0][0] >= end:
        return []
    found, todo, size = [], [0], len(heap)
    while todo:
        i = todo.pop()
        if heap[i][0] < end:
            found.append(heap[i])
            todo.extend(range(2 * i + 1, min(2 * i + 3, size)))
    return found


def not_joined(running, members) -> list[int]:
    """The running requests that are not members, in running order. Searched from the end: requests join
    as their prefill completes, so the newest admissions are the ones missing (a dissolved profile misses
    all of them, and the search then reads the whole list)."""
    missing = len(running) - len(members)
    if missing == 1 and running[-1] not in members:   # (the common case: one admission, the newest)
        return [running[-1]]
    found = []
    for r in reversed(running):
        if r not in members:
            found.append(r)
            if len(found) == missing:
                break
    found.reverse()
    return found


def plan_bulk(rep, now_s: float, next_arrival_s: float, stop_at_arrival: bool | None = None, *,
              horizon_s: float | None = None, stop_at_finish: bool = False, until_s: float = math.inf
              ) -> BulkPlan | None:
    """Plan decode steps of replica `rep` from `now_s`; None when the very next step needs preemption.
    stop_at_arrival: end at the first step boundary at or after `next_arrival_s` (default: only when the
    waiting queue is empty; a disaggregated decode replica, whose arrivals are KV transfers that join
    the batch directly, always stops there). `horizon_s`: when the next arrival is not known ahead
    (routing at arrival time) the bulk also ends at the first boundary at or after this guess, and is
    cut (`BulkPlan.cut`) if an arrival comes first. stop_at_finish: end at the first finish. `until_s`: the
    end of the arrivals known (simulator.core.timeline.OwnArrivals): end at the first boundary at or after
    it whatever else (a prefix of a bulk is a bulk, so this never changes results)."""
    prof = rep.profile
    if prof.suspended_at >= 0:   # dissolved for a step that was never applied (an empty plan): join afresh
        prof.clear()
    if len(prof.members) < len(rep.running):
        prof.join(not_joined(rep.running, prof.members))
    blocked_head = bool(rep.waiting)
    if stop_at_arrival is None:
        stop_at_arrival = not blocked_head
    stop_s = next_arrival_s if stop_at_arrival else math.inf
    if stop_at_arrival and horizon_s is not None and horizon_s < stop_s:
        stop_s = horizon_s
    if until_s < stop_s:
        stop_s = until_s
    k = prof.k
    last = prof.finishes[0][0] if blocked_head or stop_at_finish else prof.last_finish
    other = rep.kv.used_blocks - prof.member_blocks
    bounds = [now_s]
    n = scan_steps(rep, k - prof.base, 0, min(last - k + 1, MAX_BULK_STEPS), rep.kv.total_blocks - other, stop_s,
                   bounds)
    if n == 0:
        return None
    return BulkPlan(k, n, bounds, other, len(rep.waiting), bounds[-1], stop_at_arrival)


def scan_steps(rep, i0: int, n: int, n_max: int, room: int, stop_s: float, bounds: list[float]) -> int:
    """Scan the decode steps n, n + 1, ... of a bulk whose step 0 is column `i0` of `rep`'s profile, appending their
    ends to `bounds` (its last element is where step n starts), until step `n_max` (excluded), a step whose
    members' blocks exceed `room` (excluded: it needs a preemption) or the first step ending at or after `stop_s`
    (included). Returns the bulk's decode steps scanned by then."""
    rows = rep.cost.decode_seconds_rows
    grid = CTX_GRID_TOKENS
    t = bounds[-1]
    append = bounds.append
    table = rep.profile.table
    chunk = _SCAN_CHUNK
    step_s = rep.last_step_s
    scanned = len(bounds) - n   # (bounds[scanned + j] is the end of step j from here on)
    # The grid rows in hand (consecutive steps mostly share them): those of batch `key_seqs` around grid cell
    # `lo` <= x < `hi` (floats; lo == hi: none). Testing x against the cell costs no int() per step.
    key_seqs, per_seq = -1, 1
    lo = hi = 0.0
    while n < n_max:
        if stop_s < math.inf and step_s > 0:
            chunk = _steps_within(stop_s - t, step_s)
        j1 = min(n + chunk, n_max)
        chunk *= 2
        stopped = False
        for seqs, ctx, held in table[i0 + n:i0 + j1, :BLK + 1].tolist():
            if held > room:
                stopped = True
                break
            if seqs != key_seqs:
                key_seqs, per_seq, hi = seqs, grid * seqs, lo
            x = ctx / per_seq
            if not lo <= x < hi:
                cell = int(x)
                d_lo, t_lo, d_hi, t_hi = rows[seqs, cell]
                lo = float(cell)
                hi = lo + 1.0
            w = x - lo   # (x − int(x): lo is that int, exactly)
            u = 1.0 - w
            t = t + ((d_lo * u + d_hi * w) + (t_lo * u + t_hi * w))
            append(t)
            if t >= stop_s:
                stopped = True
                break
        n = len(bounds) - scanned
        if stopped:
            break
        step_s = t - bounds[-2]
    return n


def _steps_within(span_s: float, step_s: float) -> int:
    """Profile entries for `scan_steps` to read next: the steps `span_s` (the time left until the bulk must end)
    takes at `step_s` a step, and `_SCAN_SLACK` more (steps lengthen as contexts grow). Reading an entry into
    Python costs about as much as scanning it: reading a fixed chunk read twice the entries a bulk scanned."""
    return max(int(span_s / step_s), 0) + _SCAN_SLACK


def apply_bulk(rep, plan: BulkPlan, finished: list[int]) -> None:
    """Apply the plan's first `plan.steps` steps to the replica and its requests; finished requests are
    appended to `finished` in finishing order."""
    prof = rep.profile
    counted = getattr(rep.scheduler, "after_bulk", None)   # (a scheduler whose state counts decode steps)
    if counted is not None:
        counted(plan.steps)
    if prof.replays:   # (the KV manager sees the bulk's growth and finishes: simulator.core.bulk_replay)
        prof.apply(plan, finished)
        return
    settle_decodes(rep, plan, finished)
    log_profile_bulk(rep, plan)


def log_profile_bulk(rep, plan: BulkPlan) -> None:
    """`log_bulk` of the plan's steps, their sums the profile's columns (a cut plan's boundaries up to its end)."""
    prof = rep.profile
    n = plan.steps
    i0 = plan.k0 - prof.base
    bounds = plan.bounds_s
    if len(bounds) > n + 1 and plan.prefill_at is None:   # (cut)
        bounds = bounds[:n + 1]
    log_bulk(rep, plan, bounds, prof.table[i0:i0 + n].T, plan.other_blocks)   # (= sums[:, i0:i0 + n], the same view:
    #                                                                         one slice is a cheaper index than two)


def settle_decodes(rep, plan: BulkPlan, finished: list[int]) -> None:
    """Apply the plan's decode steps not applied yet (from `plan.applied` on): the members finishing in them leave at
    their last step's end (appended to `finished` in finishing order), and the blocks in use are those after the
    last of them. The profile's next step is then the one after them."""
    n = plan.steps
    if plan.applied == n:
        return
    prof = rep.profile
    k0 = plan.k0
    k1 = k0 + n
    bounds = plan.bounds_s
    released = 0
    heap, members = prof.finishes, prof.members
    while heap and heap[0][0] < k1:
        last, _, r = heapq.heappop(heap)
        member = members.pop(r)
        prof.finalize(r, member, bounds[plan.end_index(last - k0)])
        if last == k1 - 1:
            released += member.held_last
        rep.running.remove(r)
        finished.append(r)
    prof.k = k1
    prof.member_blocks = prof.sums.item(BLK, k1 - 1 - prof.base) - released
    rep.kv.used_blocks = plan.other_blocks + prof.member_blocks
    plan.applied = n


def log_bulk(rep, plan: BulkPlan, bounds: list[float], sums: np.ndarray, other_blocks) -> None:
    """Log the applied steps of `plan` (`bounds` their boundaries, `sums` their profile columns; `other_blocks`
    the blocks non-members hold, an int or one per step)."""
    n = plan.steps
    queued = plan.queued
    if len(rep.waiting) > queued and plan.prefill_at is None:  # arrivals that joined behind a blocked head during
        # the bulk (those waiting at the end of a bulk with prefill steps folded in were taken at its last
        # boundary, after every decode step of it started: simulator.core.bulk_arrivals)
        joined = rep.s.arrival_s[list(rep.waiting)[queued:]]
        queued = queued + np.searchsorted(joined, bounds[:-1], side="right")
    if n:   # (a bulk of prefill steps folded in only has none: simulator.core.bulk_arrivals)
        last = plan.end_index(n - 1)
        rep.last_step_s = bounds[last] - bounds[last - 1]
    rep.log.append_decode_bulk(rep.cost, rep.index, rep.q, rep.kv.total_blocks, bounds, sums, other_blocks,
                               rep.acceptance is not None, queued, plan.prefill_at)
