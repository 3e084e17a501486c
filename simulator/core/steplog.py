"""The step log of a run: what is kept of its steps (`outputs.steps`) and the totals the summary reads.

Replicas append single steps (`append_step`) and bulks of decode steps (`append_decode_bulk`, whose cost
columns are derived at the next flush, for all bulks of a cost model in one call). Every FLUSH_STEPS steps
the buffer becomes typed columns and is folded into:
- `totals` (simulator.results.step_totals.StepTotals): the exact sums the summary needs, so the summary
  is the same whatever is kept;
- what the mode keeps: `full` every step (compact dtypes in memory), `sampled` every `sample_every`-th
  step of each replica (counted in time order per replica, so the sample does not depend on how steps
  were batched), `aggregate` per-(replica, interval) sums (simulator.results.step_totals.aggregate_steps;
  each replica's latest interval is carried to the next flush until it is complete).
Memory then grows with requests (one summary per interval per replica at most), not with steps × columns.
"""
from __future__ import annotations

import struct
from itertools import chain, starmap

import numpy as np

from simulator.core.bulk import ACC, BLK, CS, DS, EM
from simulator.results.metrics import STEP_COLUMNS
from simulator.results.step_totals import StepTotals, aggregate_steps, gather, interval_index, replica_time_order

FLUSH_STEPS = 1 << 16
# Columns logged only when a feature that fills them is on (StepLog(extra=...)): `kv_io_s`, the part of a
# step's duration spent moving KV to or from host memory (simulator.core.kv.host_tier; 0 in bulks of decode
# steps, which move no KV).
OPTIONAL_STEP_COLUMNS = {"kv_io_s": np.float64}
STEP_MODES = ("full", "sampled", "aggregate")
_INT32 = np.iinfo(np.int32)


def _compact(values: np.ndarray) -> np.ndarray:
    """int64 columns as int32 when they fit (restored by `StepLog.columns`)."""
    if values.dtype == np.int64 and len(values) and _INT32.min <= values.min() and values.max() <= _INT32.max:
        return values.astype(np.int32)
    return values


def _per_step(values: tuple, counts: np.ndarray) -> np.ndarray:
    """One column from per-bulk values that are a number (every step of the bulk) or an array (per step)."""
    arrays = [i for i, v in enumerate(values) if isinstance(v, np.ndarray)]
    out = np.repeat(np.array([0 if isinstance(v, np.ndarray) else v for v in values], dtype=np.int64), counts)
    if arrays:
        ends = np.cumsum(counts).tolist()
        for i in arrays:
            out[ends[i] - len(values[i]):ends[i]] = values[i]
    return out


def _floats(values, count: int) -> np.ndarray:
    """`count` Python floats as a float64 array: packed by struct (C doubles, no numpy scalar conversion per
    value: about a third fewer instructions than np.fromiter, which runs per bulk boundary in a flush)."""
    return np.frombuffer(struct.pack(f"{count}d", *values), dtype=np.float64)


def _blocks_used(member_blocks: np.ndarray, other: tuple, counts: np.ndarray) -> np.ndarray:
    """Per step, the blocks in use: the members' plus the others', given per bulk as a number or, where a
    bulk's finishes released shared prefix units the others counted (simulator.core.bulk_replay), per step."""
    if np.ndarray not in map(type, other):   # (the common case; tested in C: this runs over every bulk)
        return member_blocks + np.repeat(np.array(other, dtype=np.int64), counts) if any(other) else member_blocks
    return member_blocks + _per_step(other, counts)


def _logged_q(rep, plan) -> int:
    """The verify width logged for a step: the replica's, or the rounded mean under a control policy."""
    if plan.counts is None or not len(plan.counts) or (plan.counts == rep.depth).all():
        return rep.q
    return int(round(float((plan.counts + 1).mean())))


class StepLog:
    """Append-only log of steps (module docstring). `alltoall`: callable(replica ids, tokens) → the
    all-to-all seconds of those steps (expert-parallel pools), or None. `extra`: names of
    OPTIONAL_STEP_COLUMNS to log too."""

    def __init__(self, mode: str = "full", *, num_replicas: int = 1, window_start_s: float = 0.0,
                 sample_every: int = 100, interval_s: float = 1.0, alltoall=None, extra: tuple[str, ...] = (),
                 power=None):
        if mode not in STEP_MODES:
            raise ValueError(f"outputs.steps: {mode!r}; allowed: {', '.join(STEP_MODES)}")
        self.mode, self.sample_every, self.interval_s = mode, sample_every, interval_s
        self.window_start_s = window_start_s
        self.alltoall = alltoall
        self._schema = {**STEP_COLUMNS, **{name: OPTIONAL_STEP_COLUMNS[name] for name in extra}}
        # a single step's row as C values (int64 'q', float64 'd', native, all 8 bytes: no padding) and the
        # numpy record of the same layout: rows become columns through one packed buffer (`_row_columns`)
        self._row_struct = struct.Struct("".join("q" if dtype is np.int64 else "d" for dtype in self._schema.values()))
        self._row_record = np.dtype(list(self._schema.items()))
        if set(self._schema.values()) - {np.int64, np.float64} or self._row_struct.size != self._row_record.itemsize:
            raise AssertionError("step log: step columns are int64 or float64, 8 bytes each")
        self._extra = tuple(extra)
        # A bulk of decode steps with prefill steps folded in is being formed (simulator.core.bulk_arrivals): its
        # prefill steps' rows come first, its decode steps at its end (`append_decode_bulk`, which clears this). A
        # flush between them would fold a replica's later steps before its earlier ones, but a flush must see each
        # replica's steps in time order after those of the flushes before (its sample's ranks, its carried interval).
        self.defer_flush = False
        self.power = power   # simulator.results.energy.RunPower, for the totals' energy (None: not counted)
        self._empty_log(num_replicas)

    def _empty_log(self, num_replicas: int) -> None:
        """No steps logged yet: totals, buffers and what the mode keeps."""
        self.totals = StepTotals(num_replicas, self.window_start_s, self.power)
        self._rows: list[tuple] = []
        self._decode: dict[int, tuple[object, list[tuple]]] = {}
        self._pending = 0
        self._kept: list[dict[str, np.ndarray]] = []
        self._seen = np.zeros(num_replicas, dtype=np.int64)
        self._carry: dict[str, np.ndarray] | None = None
        self._done = False

    # ---- appending -----------------------------------------------------------------------------------
    def append_step(self, rep, plan, start_s: float, end_s: float, costs, accepted: int, emitted: int,
                    blocks_used: int) -> None:
        """One step of replica `rep` (simulator.core.replica): its plan, costs (simulator.cost.step_cost.StepCost), draft tokens
        accepted, tokens emitted and the blocks in use when it was formed; the columns of STEP_COLUMNS in
        their order, then the optional ones this log keeps."""
        draft, target = costs.draft, costs.target
        ds, ts = rep.cost.flops_scales  # per-GPU op-graph FLOPs/bytes → replica totals
        ids = plan.decode_ids   # (none in a prefill-first step: one per arrival, no call for its rows)
        row = (rep.index, start_s, end_s - start_s, sum(plan.prefill_chunks), len(plan.prefill_ids),
               rep.decode_rows(ids) if len(ids) else 0, rep.q if plan.counts is None else _logged_q(rep, plan),
               plan.decode_context_tokens, draft.seconds,
               costs.verify_s, target.engine_s, accepted, emitted,
               ds * draft.flops + ts * target.flops, ds * draft.bytes + ts * target.bytes, blocks_used,
               rep.kv.total_blocks, plan.queued, plan.running)
        if self._extra:
            optional = {"kv_io_s": target.kv_io_s}
            row = row + tuple(optional[name] for name in self._extra)
        self._rows.append(row)
        self._pending += 1
        if self._pending >= FLUSH_STEPS and not self.defer_flush:
            self._flush()

    def append_decode_bulk(self, cost, replica: int, query_tokens: int, kv_blocks_total: int, bounds_s: list[float],
                           sums: np.ndarray, other_blocks, speculating: bool, queued,
                           prefill_at: list[int] | None = None) -> None:
        """n decode-only steps of one replica: `bounds_s` their n + 1 boundaries (step j from bounds_s[j] to
        bounds_s[j + 1]), `sums` their (5, n) per-step sums in simulator.core.bulk.DecodeProfile's rows
        (requests decoding, Σ context, blocks held by them, tokens emitted and draft tokens accepted, the
        last two with speculation only: plain decoding emits one token per request and accepts none),
        `other_blocks` the blocks other requests hold and `queued`, each an int or an array. Their costs are
        `cost.decode_steps(requests decoding, Σ context)` of `cost`, a simulator.cost.step_cost.StepCostModel,
        priced at the next flush, all bulks of a model at once; the columns are derived there too.
        `prefill_at`: prefill steps among them (simulator.core.bulk.BulkPlan.prefill_at), whose boundaries
        `bounds_s` holds too and whose rows were appended by `append_step` (`defer_flush`), else None."""
        group = self._decode.get(id(cost))
        if group is None:
            group = self._decode[id(cost)] = (cost, [])
        group[1].append((replica, query_tokens, kv_blocks_total, bounds_s, sums, other_blocks, speculating, queued,
                         prefill_at))
        self._pending += sums.shape[1]
        self.defer_flush = False
        if self._pending >= FLUSH_STEPS:
            self._flush()

    # ---- parts logged in other processes (simulator.core.parallel) --------------------------------------
    def start_part(self) -> None:
        """Empty this copy of the log: a worker process logs its replicas' steps into it from here."""
        self._empty_log(self.totals.num_replicas)

    def export_part(self) -> tuple:
        """What a worker's copy logged since `start_part`, folded (for `merge_part` in the parent)."""
        self.finish()
        return self.totals, self._kept, self._seen

    def merge_part(self, part: tuple) -> None:
        """Add a worker's `export_part` (its replicas are not logged here): exact totals add up, kept
        steps or aggregates join the kept list (read sorted by time and replica)."""
        totals, kept, seen = part
        self.totals.merge(totals)
        self._kept.extend(kept)
        self._seen += seen

    # ---- reading -------------------------------------------------------------------------------------
    def columns(self) -> dict[str, np.ndarray]:
        """The kept steps (`full` or `sampled`) as column arrays (append order; sort them to read)."""
        self.finish()
        if self.mode == "aggregate":
            raise ValueError("the step log keeps per-interval aggregates (outputs.steps: aggregate), not steps")
        names = list(self._schema) + (["alltoall_s"] if self.alltoall is not None else [])
        return {name: np.concatenate([np.zeros(0, dtype=self._schema.get(name, np.float64))]
                                     + [batch[name] for batch in self._kept]).astype(self._schema.get(name, np.float64))
                for name in names}

    def aggregates(self) -> dict[str, np.ndarray]:
        """Per-(replica, interval) sums (`aggregate`), ordered by interval and replica."""
        self.finish()
        if self.mode != "aggregate":
            raise ValueError("the step log keeps steps, not aggregates")
        if not self._kept:
            return aggregate_steps(self._empty(), self.window_start_s, self.interval_s)
        out = {name: np.concatenate([b[name] for b in self._kept]) for name in self._kept[0]}
        order = np.lexsort((out["replica"], out["interval_start_s"]))
        return {name: values[order] for name, values in out.items()}

    def finish(self) -> None:
        """Fold the last buffered steps in (before reading `totals`); appending after this is an error."""
        if not self._done:
            self._flush(final=True)
            self._done = True

    # ---- flushing ------------------------------------------------------------------------------------
    def _flush(self, final: bool = False) -> None:
        carried, self._carry = self._carry, None
        cols = self._materialize(carried)
        fresh = 0 if carried is None else len(carried["replica"])
        self.totals.add({name: values[fresh:] for name, values in cols.items()} if fresh else cols)
        if self.mode == "full":
            if len(cols["start_s"]):
                self._kept.append({name: _compact(values) for name, values in cols.items()})
        elif self.mode == "sampled":
            self._keep_sample(cols)
        else:
            self._aggregate(cols, final)

    def _keep_sample(self, cols: dict[str, np.ndarray]) -> None:
        replica = cols["replica"]
        if not len(replica):
            return
        order = replica_time_order(replica, cols["start_s"])
        sorted_replica = replica[order]
        first = np.searchsorted(sorted_replica, sorted_replica, side="left")
        rank = self._seen[sorted_replica] + np.arange(len(order)) - first
        keep = np.sort(order[rank % self.sample_every == 0])
        self._seen += np.bincount(replica, minlength=len(self._seen))
        self._kept.append({name: _compact(values[keep]) for name, values in cols.items()})

    def _aggregate(self, cols: dict[str, np.ndarray], final: bool) -> None:
        """Aggregate `cols` (the steps carried from the last flush, then the new ones) but each replica's latest
        interval, carried to the next flush unless this is the last."""
        replica = cols["replica"]
        if not len(replica):
            return
        order = replica_time_order(replica, cols["start_s"])   # each replica's steps in time order
        replica = gather(replica, order)
        interval = interval_index(gather(cols["start_s"], order), self.window_start_s, self.interval_s)
        # (aggregate_steps gathers in this order only the columns it aggregates)
        bins = aggregate_steps(cols, self.window_start_s, self.interval_s, order=order, keys=(replica, interval))
        if final:
            self._kept.append(bins)
            return
        # each replica's latest interval may go on in the next batch: carry its steps, those of the replica's last
        # bin (its steps' intervals do not decrease in time order), and keep its other bins (each bin's sums are
        # its own steps', whichever other steps were aggregated beside it)
        last = np.ones(len(bins["replica"]), dtype=bool)
        last[:-1] = bins["replica"][1:] != bins["replica"][:-1]
        held = gather(order, np.flatnonzero(np.repeat(last, bins["steps"])))
        self._carry = {name: gather(values, held) for name, values in cols.items()}
        if not last.all():
            self._kept.append({name: values[~last] for name, values in bins.items()})

    def _empty(self) -> dict[str, np.ndarray]:
        return {name: np.zeros(0, dtype=dtype) for name, dtype in self._schema.items()}

    def _materialize(self, carried: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """The buffered steps as typed columns (decode bulks first, then single rows), after the steps `carried`
        from the last flush (`aggregate`: so that the columns are joined once); empties the buffer."""
        parts = [self._decode_columns(cost, bulks) for cost, bulks in self._decode.values()]
        for part in parts:   # decode bulks move no KV to or from the host
            for name in self._schema.keys() - part.keys():
                part[name] = np.zeros(len(part["start_s"]), dtype=self._schema[name])
        rows = self._rows
        self._decode, self._rows, self._pending = {}, [], 0
        if rows:
            parts.append(self._row_columns(rows))
        fresh = 0
        if carried is not None:
            parts.insert(0, carried)
            fresh = len(carried["replica"])
        if not parts:
            out = self._empty()
        elif len(parts) == 1:
            out = parts[0]
        else:
            out = {name: np.concatenate([part[name] for part in parts]) for name in self._schema}
        if self.alltoall is not None:   # priced for the new steps (the carried ones have theirs)
            tokens = out["prefill_tokens"][fresh:] + out["decode_seqs"][fresh:] * out["query_tokens_per_seq"][fresh:]
            seconds = self.alltoall(out["replica"][fresh:], tokens)
            out["alltoall_s"] = seconds if carried is None else np.concatenate([carried["alltoall_s"], seconds])
        return out

    def _row_columns(self, rows: list[tuple]) -> dict[str, np.ndarray]:
        """Single steps' rows as typed columns: packed into one buffer of C records (a third of the
        instructions of a np.fromiter per column, which converts each value through a numpy scalar), or, when
        a value is of a type struct does not take as its column's (e.g. a float where an int64 goes),
        converted column by column as before."""
        try:
            table = np.frombuffer(b"".join(starmap(self._row_struct.pack, rows)), dtype=self._row_record)
        except struct.error:
            by_column = list(zip(*rows))
            return {name: np.fromiter(by_column[i], dtype=dtype, count=len(rows))
                    for i, (name, dtype) in enumerate(self._schema.items())}
        return {name: table[name].copy() for name in self._schema}   # (contiguous, writable, not the buffer's views)

    @staticmethod
    def _decode_columns(cost, bulks: list[tuple]) -> dict[str, np.ndarray]:
        """Columns of the decode bulks of one cost model, their costs priced in one call."""
        (replica, q, kv_total, bounds, sums, other, speculating, queued, folded) = zip(*bulks)
        spans = np.fromiter(map(len, bounds), dtype=np.int64, count=len(bounds)) - 1   # steps per bulk, folded prefill
        # steps included
        edge_ends = np.cumsum(spans + 1)   # each bulk's boundaries end there in `edges`, one bulk after the other
        starts_step = np.ones(int(edge_ends[-1]) - 1, dtype=bool)   # the boundaries that start a decode step: not
        starts_step[edge_ends[:-1] - 1] = False                     # a bulk's last one, nor a folded prefill step's
        counts = spans   # decode steps per bulk
        if any(folded):   # the i-th prefill step of a bulk, after `decodes` of its decode steps, starts at its
            # boundary decodes + i (one array op each: a bulk's prefill steps are one per arrival, thousands a flush)
            prefills = np.fromiter((len(at) if at else 0 for at in folded), dtype=np.int64, count=len(folded))
            decodes = np.fromiter(chain.from_iterable(filter(None, folded)), dtype=np.int64, count=int(prefills.sum()))
            firsts = edge_ends - spans - 1   # each bulk's first boundary in `edges`
            rank = np.arange(len(decodes)) - np.repeat(np.cumsum(prefills) - prefills, prefills)   # i
            starts_step[np.repeat(firsts, prefills) + decodes + rank] = False
            counts = spans - prefills
        n = int(counts.sum())
        rows = np.concatenate(sums, axis=1).astype(np.int64, copy=False)
        if rows.shape[1] != n:
            raise AssertionError("step log: a decode bulk's boundaries and per-step sums disagree in length")
        plain_queued = np.ndarray not in map(type, queued)   # (the common case: nobody joined a queue during a bulk)
        per_bulk = [np.repeat(np.array(values, dtype=np.int64), counts)   # each value given per bulk, for its steps
                    for values in (replica, q, kv_total) + ((queued,) if plain_queued else ())]   # (one (4, n) array
        # repeated at once measured slower in a flush: more fresh pages)
        edges = _floats(chain.from_iterable(bounds), len(starts_step) + 1)  # each bulk's boundaries, one bulk after
        # the other: each but the bulk's last starts a step ending at the next
        starts, durations = edges[:-1][starts_step], np.diff(edges)[starts_step]
        decode_seqs, context = rows[DS], rows[CS]
        draft, target = cost.decode_steps(decode_seqs, context)
        draft_scale, target_scale = cost.flops_scales
        zeros = np.zeros(n, dtype=np.int64)
        if all(speculating):
            emitted, accepted = rows[EM], rows[ACC]
        elif any(speculating):
            spec = np.repeat(np.array(speculating, dtype=bool), counts)
            emitted, accepted = np.where(spec, rows[EM], decode_seqs), np.where(spec, rows[ACC], 0)
        else:
            emitted, accepted = decode_seqs, zeros
        return {
            "replica": per_bulk[0], "start_s": starts, "duration_s": durations,
            "prefill_tokens": zeros, "prefill_seqs": zeros, "decode_seqs": decode_seqs,
            "query_tokens_per_seq": per_bulk[1], "decode_context_tokens": context,
            "draft_s": draft[:, 0], "verify_s": target[:, 0] - target[:, 3], "engine_s": target[:, 3],
            "accepted_tokens": accepted, "emitted_tokens": emitted,
            "flops": draft_scale * draft[:, 1] + target_scale * target[:, 1],
            "bytes": draft_scale * draft[:, 2] + target_scale * target[:, 2],
            "kv_blocks_used": _blocks_used(rows[BLK], other, counts),
            "kv_blocks_total": per_bulk[2],
            "queued_requests": per_bulk[3] if plain_queued else _per_step(queued, counts),
            "running_requests": decode_seqs,
        }
