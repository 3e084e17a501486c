"""The step log of a run: what is kept of its steps (`outputs.steps`) and the totals the summary reads.

Replicas append single steps (`append_row`) and bulks of steps (`append_bulk`, `append_decode_bulk`: the
latter's cost columns are derived later, for all bulks of a cost model at once). Every FLUSH_STEPS
steps the buffer becomes typed columns and is folded into:
- `totals` (simulator.results.step_totals.StepTotals): the exact sums the summary needs, so the summary
  is the same whatever is kept;
- what the mode keeps: `full` every step (compact dtypes in memory), `sampled` every `sample_every`-th
  step of each replica (counted in time order per replica, so the sample does not depend on how steps
  were batched), `aggregate` per-(replica, interval) sums (simulator.results.step_totals.aggregate_steps;
  each replica's latest interval is carried to the next flush until it is complete).
Memory then grows with requests (one summary per interval per replica at most), not with steps × columns.
"""
from __future__ import annotations

import numpy as np

from simulator.results.metrics import STEP_COLUMNS
from simulator.results.step_totals import StepTotals, aggregate_steps

FLUSH_STEPS = 1 << 16
STEP_MODES = ("full", "sampled", "aggregate")
_COSTS = "_costs"    # chunk key: (draft (n, 3), target (n, 4), (draft scale, target scale)) or a cost model
_INT32 = np.iinfo(np.int32)


def _compact(values: np.ndarray) -> np.ndarray:
    """int64 columns as int32 when they fit (restored by `StepLog.columns`)."""
    if values.dtype == np.int64 and len(values) and _INT32.min <= values.min() and values.max() <= _INT32.max:
        return values.astype(np.int32)
    return values


class StepLog:
    """Append-only log of steps (module docstring). `alltoall`: callable(replica ids, tokens) → the
    all-to-all seconds of those steps (expert-parallel pools), or None."""

    def __init__(self, mode: str = "full", *, num_replicas: int = 1, window_start_s: float = 0.0,
                 sample_every: int = 100, interval_s: float = 1.0, alltoall=None):
        if mode not in STEP_MODES:
            raise ValueError(f"outputs.steps: {mode!r}; allowed: {', '.join(STEP_MODES)}")
        self.mode, self.sample_every, self.interval_s = mode, sample_every, interval_s
        self.window_start_s = window_start_s
        self.alltoall = alltoall
        self.totals = StepTotals(num_replicas, window_start_s)
        self._rows: list[tuple] = []
        self._chunks: list[tuple[int, dict]] = []
        self._pending = 0
        self._kept: list[dict[str, np.ndarray]] = []
        self._seen = np.zeros(num_replicas, dtype=np.int64)
        self._carry: dict[str, np.ndarray] | None = None
        self._done = False

    # ---- appending -----------------------------------------------------------------------------------
    def append_row(self, **cols) -> None:
        self._rows.append(tuple(cols[k] for k in STEP_COLUMNS))
        self._pending += 1
        if self._pending >= FLUSH_STEPS:
            self._flush()

    def append_bulk(self, n: int, costs=None, **cols) -> None:
        """Append n steps; each column is an array of length n or a scalar shared by the n steps.
        `costs` = (draft, target, (draft_scale, target_scale)): the steps' (n, 3) draft and (n, 4) target
        (seconds, FLOPs, bytes[, engine seconds included in the target's seconds]) and the multipliers from
        per-GPU work to replica totals; the draft_s, verify_s, engine_s, flops and bytes columns are
        derived from them."""
        self._chunks.append((n, cols if costs is None else {**cols, _COSTS: costs}))
        self._pending += n
        if self._pending >= FLUSH_STEPS:
            self._flush()

    def append_decode_bulk(self, n: int, cost, **cols) -> None:
        """Append n decode-only steps whose costs are `cost.decode_steps(decode_seqs, decode_context_tokens)`
        (a simulator.cost.step_cost.StepCostModel; derived at the next flush)."""
        self.append_bulk(n, cost, **cols)

    # ---- reading -------------------------------------------------------------------------------------
    def columns(self) -> dict[str, np.ndarray]:
        """The kept steps (`full` or `sampled`) as column arrays (append order; sort them to read)."""
        self.finish()
        if self.mode == "aggregate":
            raise ValueError("the step log keeps per-interval aggregates (outputs.steps: aggregate), not steps")
        names = list(STEP_COLUMNS) + (["alltoall_s"] if self.alltoall is not None else [])
        return {name: np.concatenate([np.zeros(0, dtype=STEP_COLUMNS.get(name, np.float64))]
                                     + [batch[name] for batch in self._kept]).astype(STEP_COLUMNS.get(name, np.float64))
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
        cols = self._materialize()
        self.totals.add(cols)
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
        order = np.lexsort((cols["start_s"], replica))
        sorted_replica = replica[order]
        first = np.searchsorted(sorted_replica, sorted_replica, side="left")
        rank = self._seen[sorted_replica] + np.arange(len(order)) - first
        keep = np.sort(order[rank % self.sample_every == 0])
        self._seen += np.bincount(replica, minlength=len(self._seen))
        self._kept.append({name: _compact(values[keep]) for name, values in cols.items()})

    def _aggregate(self, cols: dict[str, np.ndarray], final: bool) -> None:
        if self._carry is not None:
            cols = {name: np.concatenate([self._carry[name], values]) for name, values in cols.items()}
            self._carry = None
        replica = cols["replica"]
        if not len(replica):
            return
        order = np.lexsort((cols["start_s"], replica))   # each replica's steps in time order
        cols = {name: values[order] for name, values in cols.items()}
        replica = cols["replica"]
        if not final:  # each replica's latest interval may go on in the next batch: carry it
            interval = np.floor((cols["start_s"] - self.window_start_s) / self.interval_s).astype(np.int64)
            latest = np.full(int(replica.max()) + 1, np.iinfo(np.int64).min)
            np.maximum.at(latest, replica, interval)
            held = interval == latest[replica]
            self._carry = {name: values[held] for name, values in cols.items()}
            cols = {name: values[~held] for name, values in cols.items()}
        if len(cols["replica"]):
            self._kept.append(aggregate_steps(cols, self.window_start_s, self.interval_s))

    def _empty(self) -> dict[str, np.ndarray]:
        return {name: np.zeros(0, dtype=dtype) for name, dtype in STEP_COLUMNS.items()}

    def _materialize(self) -> dict[str, np.ndarray]:
        """The buffered steps as typed columns (chunks first, then single rows); empties the buffer."""
        chunks, rows = self._chunks, self._rows
        self._chunks, self._rows, self._pending = [], [], 0
        self._derive_costs(chunks)
        counts = np.array([n for n, _ in chunks], dtype=np.int64)
        by_column = list(zip(*rows)) if rows else None
        out = {}
        for i, (name, dtype) in enumerate(STEP_COLUMNS.items()):
            values = [c[name] for _, c in chunks]
            if all(np.ndim(v) == 0 for v in values):
                bulk = np.repeat(np.array(values, dtype=dtype), counts)
            else:
                bulk = np.concatenate([np.asarray(v, dtype=dtype) if np.ndim(v) else np.full(n, v, dtype=dtype)
                                       for v, n in zip(values, counts)])
            single = np.array(by_column[i], dtype=dtype) if by_column else np.zeros(0, dtype=dtype)
            out[name] = np.concatenate([bulk, single])
        if self.alltoall is not None:
            tokens = out["prefill_tokens"] + out["decode_seqs"] * out["query_tokens_per_seq"]
            out["alltoall_s"] = self.alltoall(out["replica"], tokens)
        return out

    @staticmethod
    def _derive_costs(chunks: list[tuple[int, dict]]) -> None:
        """Fill each chunk's draft_s, verify_s, engine_s, flops and bytes from its costs; decode bulks of
        one cost model are priced in one call."""
        by_model: dict[int, list[dict]] = {}
        for _, cols in chunks:
            cost = cols.get(_COSTS)
            if cost is not None and not isinstance(cost, tuple):
                by_model.setdefault(id(cost), []).append(cols)
        for group in by_model.values():
            cost = group[0][_COSTS]
            seqs = np.concatenate([np.asarray(c["decode_seqs"], dtype=np.int64) for c in group])
            ctx = np.concatenate([np.asarray(c["decode_context_tokens"], dtype=np.int64) for c in group])
            draft, target = cost.decode_steps(seqs, ctx)
            edges = np.cumsum([len(c["decode_seqs"]) for c in group])[:-1]
            for c, d, t in zip(group, np.split(draft, edges), np.split(target, edges)):
                c[_COSTS] = (d, t, cost.flops_scales)
        for _, cols in chunks:
            costs = cols.pop(_COSTS, None)
            if costs is not None:
                draft, target, (draft_scale, target_scale) = costs
                cols["draft_s"], cols["verify_s"], cols["engine_s"] = draft[:, 0], target[:, 0] - target[:, 3], target[:, 3]
                cols["flops"] = draft_scale * draft[:, 1] + target_scale * target[:, 1]
                cols["bytes"] = draft_scale * draft[:, 2] + target_scale * target[:, 2]
