"""Decode-step costs on a (batch size × mean-context grid index) table, filled on demand.

`StepCostModel.decode_steps` interpolates whole-step costs linearly in mean context per sequence for a
given batch size (simulator.cost.step_cost). A bulk of decode steps changes batch size every time a request
finishes, so its rows belong to several batch sizes; with one table per batch size that means a Python
loop over the runs of equal batch size, several numpy calls each. Here every batch size's rows live in one
array `cube[batch, i - base]`, so a whole bulk is looked up with a fixed handful of numpy calls whatever
its number of batch sizes: this is the simulator's hottest path (once per bulk of steps).

Values are exactly those of the per-batch tables: the same row function, the same interpolation formula
(below·(1 − w) + above·w, elementwise), so results are bit-identical to `interpolate_on_grid`.

Memory: batch sizes up to the largest seen × the span of grid indices seen × row width, float64. When
that would exceed MAX_TABLE_BYTES (very long and very varied contexts at large batch), lookups go
through the per-batch tables instead — same values, slower.
"""
from __future__ import annotations

import numpy as np

MAX_TABLE_BYTES = 64 * 2**20


class BatchContextTable:
    """row(batch, i) for batch ≥ 1 and grid index i ≥ 0, computed once each and kept in one array."""

    def __init__(self, row, width: int):
        self.row = row
        self.width = width
        self.cube = np.zeros((1, 0, width))       # [batch, i - base, column]
        self.have = np.zeros((1, 0), dtype=bool)  # row computed
        self.ok = np.zeros((1, 0), dtype=bool)    # ok[b, j]: rows j and j + 1 both computed
        self.base = 0

    def lookup(self, seqs: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Rows (batch seqs[k], index lo[k]) and (seqs[k], lo[k] + 1) for every k, or None when the
        table would grow past MAX_TABLE_BYTES."""
        j = lo - self.base
        batches, span = self.cube.shape[:2]
        at = seqs * span + j   # row (seqs[k], j[k]) of the cube's (batch × index) rows; the next index at + 1
        # (ok has a column fewer per batch: its cell (seqs[k], j[k]) is at - seqs[k], when in range)
        if j.min() < 0 or j.max() + 1 >= span or seqs.max() >= batches or not self.ok.ravel().take(at - seqs).all():
            if not self._fill(seqs, lo):
                return None
            span = self.cube.shape[1]
            at = seqs * span + (lo - self.base)
        rows = self.cube.reshape(-1, self.width)   # (clip mode: no bounds check per index, all checked above)
        return rows.take(at, axis=0, mode="clip"), rows.take(at + 1, axis=0, mode="clip")

    def pair(self, batch: int, i: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Rows (batch, i) and (batch, i + 1) (copies), or None when the table would outgrow MAX_TABLE_BYTES.
        The scalar form of `lookup` (one step of a bulk scan at a time), with the same rows."""
        j = i - self.base
        batches, span = self.cube.shape[:2]
        if not (0 <= j and j + 1 < span and batch < batches and self.ok[batch, j]):
            if not self._fill(np.array([batch]), np.array([i])):
                return None
            j = i - self.base
        return self.cube[batch, j].copy(), self.cube[batch, j + 1].copy()

    def _fill(self, seqs: np.ndarray, lo: np.ndarray) -> bool:
        if not self._grow(int(seqs.max()), int(lo.min()), int(lo.max()) + 1):
            return False
        cells = set(zip(seqs.tolist(), lo.tolist()))
        have, ok = self.have, self.ok
        for b, i in sorted(cells | {(b, i + 1) for b, i in cells}):
            j = i - self.base
            if not have[b, j]:
                self.cube[b, j] = self.row(b, i)
                have[b, j] = True
                if j > 0:   # ok[b, j - 1] and ok[b, j]: the pairs this row completes (not the whole table again)
                    ok[b, j - 1] = have[b, j - 1]
                if j + 1 < have.shape[1]:
                    ok[b, j] = have[b, j + 1]
        return True

    def _grow(self, max_batch: int, first: int, last: int) -> bool:
        """Make room for batch ≤ max_batch and indices first..last, with headroom so that a run grows
        the array a few times only (rows are computed when first needed, not when room is made).
        False when that does not fit in MAX_TABLE_BYTES."""
        batches, span = self.cube.shape[0], self.cube.shape[1]
        lo, hi = (first, last) if not span else (min(first, self.base), max(last, self.base + span - 1))
        if span and lo == self.base and hi == self.base + span - 1 and max_batch < batches:
            return True
        headroom = max(32, (hi - lo + 1) // 2)
        for new_batches, new_lo, new_hi in (
                (max(max_batch + 1, batches + 16), max(0, lo - (headroom if lo < self.base else 0)),
                 hi + (headroom if not span or hi > self.base + span - 1 else 0)),
                (max(max_batch + 1, batches), lo, hi)):
            if new_batches * (new_hi - new_lo + 1) * self.width * 8 <= MAX_TABLE_BYTES:
                break
        else:
            return False
        cube = np.zeros((new_batches, new_hi - new_lo + 1, self.width))
        have = np.zeros(cube.shape[:2], dtype=bool)
        if span:
            shift = self.base - new_lo
            cube[:batches, shift:shift + span] = self.cube
            have[:batches, shift:shift + span] = self.have
        self.cube, self.have, self.base = cube, have, new_lo
        self.ok = have[:, :-1] & have[:, 1:]
        return True


class SecondsRows(dict):
    """(batch, grid index i) -> (draft seconds, target seconds) of rows i and i + 1 of a decode-step table,
    as Python floats: (d_i, t_i, d_i+1, t_i+1). Filled on first use from `pair(batch, i)`; a bulk of decode
    steps interpolates its step durations from it in scalar arithmetic (simulator.core.bulk), with the
    same formula and the same rows as the vectorized lookups, so the values are bit-identical."""

    def __init__(self, pair):
        super().__init__()
        self._pair = pair

    def __missing__(self, key):
        below, above = self._pair(*key)
        value = self[key] = (float(below[0]), float(below[3]), float(above[0]), float(above[3]))
        return value
