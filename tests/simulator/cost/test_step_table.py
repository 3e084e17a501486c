"""simulator.cost.step_table.BatchContextTable: the rows it hands out are the row function's, whichever of
its two lookups asks (`lookup` for a bulk's arrays, `pair` for one step) and in whatever order the table
grows; its `ok` map (both rows of a pair computed) is kept in step with what was computed."""
from __future__ import annotations

import numpy as np

from simulator.cost.step_table import BatchContextTable


def _row(batch: int, i: int) -> np.ndarray:
    return np.array([batch * 1000.0 + i, batch - 0.5 * i, float(i * i)])


def test_pairs_and_lookups_hand_out_the_row_function_rows_in_any_order():
    rng = np.random.default_rng(5)
    table = BatchContextTable(_row, 3)
    calls = []
    for _ in range(400):
        if rng.random() < 0.6:
            b, i = int(rng.integers(1, 90)), int(rng.integers(0, 400))
            below, above = table.pair(b, i)
            calls.append((b, i))
            assert np.array_equal(below, _row(b, i)) and np.array_equal(above, _row(b, i + 1))
        else:
            seqs = rng.integers(1, 90, size=int(rng.integers(1, 20)))
            lo = rng.integers(0, 400, size=len(seqs))
            below, above = table.lookup(seqs, lo)
            assert np.array_equal(below, np.array([_row(b, i) for b, i in zip(seqs.tolist(), lo.tolist())]))
            assert np.array_equal(above, np.array([_row(b, i + 1) for b, i in zip(seqs.tolist(), lo.tolist())]))
        assert np.array_equal(table.ok, table.have[:, :-1] & table.have[:, 1:])
    assert len(calls) > 100


def test_a_pair_is_a_copy_and_a_computed_row_is_not_computed_again():
    computed = []

    def row(batch, i):
        computed.append((batch, i))
        return _row(batch, i)

    table = BatchContextTable(row, 3)
    below, _ = table.pair(4, 10)
    below[:] = -1.0   # the caller's copy, not the table
    assert np.array_equal(table.pair(4, 10)[0], _row(4, 10))
    assert computed == [(4, 10), (4, 11)]
    table.pair(4, 11)
    assert computed == [(4, 10), (4, 11), (4, 12)]
