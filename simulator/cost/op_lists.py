"""The op lists of forward passes, shared by the runs of one process.

A pass's op graph (models.opgraph: `dense_ops`, `attention_ops`) is a pure function of the model, its
parallelism, the weight and KV dtypes and the pass's shape. The runs of one process build the same passes
of the same models again: a plan's DES confirmations price the step shapes its screen priced, and at the
same grid points of mean context (simulator.cost.step_cost.CTX_GRID_TOKENS); a sweep's points likewise.
Building a list is most of what pricing a new step shape costs once the ops' prices are known
(profiles.measured.model.SHARED_PRICES), so the lists are kept here, per (model, parallelism, dtype, KV
dtype). Only the lists are shared: every run still prices each op through its own latency model, which
counts the distinct ops it priced (`latency_source`), so a run's outputs do not depend on what ran
before it in the process.

A model is keyed by identity (the catalog hands out one ModelSpec per name; a model read from a file is a
new object per run, with tables of its own): the table holds the spec, so its id cannot be reused while
the table lives. At most `limit` lists are kept in all; the next one empties every table and forgets the
models (tables held by live pass pricers keep working, emptied).
"""
from __future__ import annotations

from profiles.shared_tables import BoundedTables

MAX_SHARED_OP_LISTS = 50_000   # op lists kept in all: ~60 MB (1.2 kB a list with its key, measured over a plan's
#                                 confirmations, which build 29k)


class SharedOpLists(BoundedTables):
    """shape key -> op list, per (model, parallelism, dtype, KV dtype) (module docstring)."""

    def __init__(self, limit: int = MAX_SHARED_OP_LISTS):
        super().__init__(limit)
        self._models: dict[tuple, object] = {}   # table key -> its model, held: its id is not reused meanwhile

    def table(self, spec, parallelism, dtype: str, kv_dtype: str | None) -> dict:
        """The table of one model's passes under one parallelism and dtypes (empty the first time)."""
        key = (id(spec), parallelism, dtype, kv_dtype)
        if self._models.get(key) is not spec:
            self._models[key] = spec
            self._tables[key] = {}
        return self._table(key)

    def clear(self) -> None:
        """Empty every table in place and forget the models."""
        super().clear()
        self._tables.clear()
        self._models.clear()


SHARED_OP_LISTS = SharedOpLists()
