"""A run's records as NumPy columns (simulator.results.columns): the parquet `draftsim run` writes from them
is byte for byte the file pandas' DataFrame of the same records gave (NaN as null, text as large_string,
booleans, other widths), and the DataFrames the API returns hold the run's columns. (That a run without plots
never imports pandas: tests/test_startup_imports.py.)"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.results.columns import ColumnTable
from simulator.results.outputs import write_parquet

REPO = Path(__file__).resolve().parents[3]


def _records() -> dict[str, np.ndarray]:
    return {"request_id": np.arange(5, dtype=np.int64), "small": np.array([1, -2, 3, 0, 7], dtype=np.int32),
            "unsigned": np.array([1, 2, 3, 4, 2**40], dtype=np.uint64),
            "finish_s": np.array([0.5, np.nan, 1e-300, -0.0, np.inf]),
            "single": np.array([1.5, np.nan, 2.5, 3.5, 4.5], dtype=np.float32),
            "dropped": np.array([False, True, False, True, True]),
            "drop_reason": np.array(["", "exceeds_context", "ünïcode ✓", "", "a" * 300]),
            "mixed": np.array(["x", None, "y", "z", None], dtype=object)}


@pytest.mark.parametrize("rows", [5, 0, 1])
def test_parquet_bytes_equal_the_dataframe_path(tmp_path, rows):
    table = ColumnTable({k: v[:rows] for k, v in _records().items()})
    write_parquet(table, tmp_path / "columns.parquet")
    write_parquet(table.to_pandas(), tmp_path / "frame.parquet")
    assert (tmp_path / "columns.parquet").read_bytes() == (tmp_path / "frame.parquet").read_bytes()
    back = pd.read_parquet(tmp_path / "columns.parquet")
    assert back["finish_s"].isna().tolist() == [np.isnan(v) for v in _records()["finish_s"][:rows]]


def test_a_table_refuses_ragged_columns_and_reads_like_a_frame():
    table = ColumnTable({"a": np.arange(3)})
    with pytest.raises(ValueError, match="3 rows"):
        table["b"] = np.arange(4)
    with pytest.raises(ValueError, match="one value per row"):
        table["c"] = np.zeros((3, 2))
    table["b"] = np.array(["x", "y", "z"])
    assert len(table) == 3 and "b" in table and "d" not in table and table.columns == ["a", "b"]
    frame = table.to_pandas()
    assert list(frame.columns) == ["a", "b"] and frame["b"].dtype == "str" and frame.index.equals(pd.RangeIndex(3))
    frame.loc[0, "a"] = 99
    assert table["a"][0] == 0   # the frame owns its numbers


def test_the_api_frames_hold_the_run_columns(tmp_path):
    result = simulator.run("scenarios/quickstart.yaml", ["workload.num_requests=12", "outputs.steps=full"],
                           base_dir=REPO)
    for table, frame in ((result.request_table, result.requests), (result.step_table, result.steps)):
        assert list(frame.columns) == table.columns and len(frame) == len(table)
        for name in table.columns:
            values = frame[name].to_numpy()
            if table[name].dtype.kind == "U":
                assert values.tolist() == table[name].tolist()
            else:
                np.testing.assert_array_equal(values, table[name])
    assert result.requests is result.requests   # built once
    assert result.requests["drop_reason"].dtype == "str"

