"""Tables shared by the runs of one process, bounded in all.

A plan's DES confirmations and a sweep's points run in one process one after another and need the same
pure functions again (an op's price, a pass's op list). `BoundedTables` keeps one dict per key (a set of
tables, a GPU and dtypes; a model and its parallelism) for them, and at most `limit` values in all: the
next one empties every table in place, so a long sweep over many GPUs, dtypes and models cannot grow it
past that, and a holder of a table keeps using it (emptied). What is kept must be a pure function of the
table's key and the value's own key: a run's outputs must not depend on what ran before it.
"""
from __future__ import annotations


class BoundedTables:
    """key -> its table (a dict), at most `limit` values in all (module docstring)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._tables: dict[tuple, dict] = {}
        self._count = 0   # values added since the tables were last emptied

    def _table(self, key: tuple) -> dict:
        found = self._tables.get(key)
        if found is None:
            found = self._tables[key] = {}
        return found

    def add(self, table: dict, key, value) -> None:
        """table[key] = value, emptying every table first when `limit` values were added since the last time."""
        if self._count >= self.limit:
            self.clear()
        table[key] = value
        self._count += 1

    def clear(self) -> None:
        """Empty every table (in place: the holders of one keep it)."""
        for found in self._tables.values():
            found.clear()
        self._count = 0

    def __len__(self) -> int:
        return sum(len(found) for found in self._tables.values())
