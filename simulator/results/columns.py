"""A run's request and step records as named NumPy columns (`ColumnTable`), the form the simulator builds
them in: the summary reads them and `draftsim run` writes them as parquet without pandas, whose import
costs a short run about a third of its wall time. `to_pandas` gives the DataFrame the Python API returns
(`simulator.Result.requests`), `to_arrow` the table the parquet files hold — the same arrow types and
values as `pyarrow.Table.from_pandas` of that DataFrame (NaN as null, text as large_string), so the files'
bytes do not depend on which of the two wrote them (tests/simulator/results/test_columns.py)."""
from __future__ import annotations

from typing import Mapping

import numpy as np


class ColumnTable:
    """Equal-length NumPy columns in insertion order. Text columns are NumPy unicode ('U') arrays."""

    def __init__(self, columns: Mapping[str, np.ndarray] | None = None):
        self._columns: dict[str, np.ndarray] = {}
        self._rows: int | None = None
        for name, values in (columns or {}).items():
            self[name] = values

    def __len__(self) -> int:
        return self._rows or 0

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __getitem__(self, name: str) -> np.ndarray:
        return self._columns[name]

    def __setitem__(self, name: str, values) -> None:
        values = np.asarray(values)
        if values.ndim != 1:
            raise ValueError(f"column {name!r}: one value per row, got shape {values.shape}")
        if self._rows is not None and len(values) != self._rows:
            raise ValueError(f"column {name!r}: {len(values)} values for {self._rows} rows")
        self._rows = len(values)
        self._columns[name] = values

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    def to_pandas(self):
        """A DataFrame of these columns (text as pandas' string dtype; numbers share no memory with it)."""
        import pandas as pd
        return pd.DataFrame({name: pd.array(values, dtype="str") if values.dtype.kind == "U" else values.copy()
                             for name, values in self._columns.items()}, index=pd.RangeIndex(len(self)))

    def to_arrow(self):
        """The pyarrow Table of these columns, with no schema metadata."""
        import pyarrow as pa
        return pa.Table.from_arrays([_arrow(values) for values in self._columns.values()], names=self.columns)


def _arrow(values: np.ndarray):
    """One column as an arrow array built from its buffers: `pyarrow.array` imports pandas (to recognise
    its types), which a run that writes no DataFrame does not need. Floats: NaN as null (as
    `Table.from_pandas`); text as large_string; booleans bit-packed; other kinds through `pyarrow.array`."""
    import pyarrow as pa
    n = len(values)
    if values.dtype.kind in "iuf":
        values = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("="))
        missing = np.isnan(values) if values.dtype.kind == "f" else None
        nulls = int(missing.sum()) if missing is not None else 0
        valid = pa.py_buffer(np.packbits(~missing, bitorder="little")) if nulls else None
        return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), n, [valid, pa.py_buffer(values)], nulls)
    if values.dtype.kind == "b":
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(values, bitorder="little"))], 0)
    if values.dtype.kind == "U":
        encoded = [text.encode() for text in values.tolist()]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))], 0)
    array = pa.array(values, from_pandas=True)
    return array.cast(pa.large_string()) if pa.types.is_string(array.type) else array
