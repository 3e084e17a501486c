"""The CSV column reader of traces: its fast (pyarrow) and exact (row by row) paths return identical
arrays, rows with too few or too many fields are one-line errors naming the file and line, and the CLI
exits 2 on them without writing anything."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.core import csv_columns
from simulator.core.csv_columns import read_csv_columns
from simulator.errors import ScenarioError

KINDS = {"arrival_s": "time", "prompt_tokens": "count", "output_tokens": "count"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    return path


def test_fast_and_exact_paths_return_identical_arrays(tmp_path):
    rng = np.random.default_rng(3)
    n = 5000
    arrival = np.sort(rng.random(n) * 1e4)
    digits = rng.integers(1, 20, size=n)
    lines = [f"r{i},{a:.{d}g},{rng.integers(1, 4000)},{rng.integers(1, 900)},\"free, text\""
             for i, (a, d) in enumerate(zip(arrival, digits))]
    path = _write(tmp_path, "id,arrival_s,prompt_tokens,output_tokens,note\n" + "\n".join(lines) + "\n")
    fast = csv_columns._read_fast(path, {name: name for name in KINDS})
    assert fast is not None   # the fast path takes this file
    exact = csv_columns._read_exact(path, KINDS, "f", 5)
    got = read_csv_columns(path, KINDS, "f")
    for name in KINDS:
        np.testing.assert_array_equal(got[name], exact[name])
        assert got[name].dtype == exact[name].dtype
    np.testing.assert_array_equal(fast["arrival_s"], exact["arrival_s"])


def test_padded_values_and_blank_rows_are_read_by_the_exact_path(tmp_path):
    path = _write(tmp_path, "arrival_s, prompt_tokens, output_tokens\n 0.5, 10 ,3\n,,\n\n1.25,7, 9\n")
    got = read_csv_columns(path, KINDS, "f")
    assert got["arrival_s"].tolist() == [0.5, 1.25]
    assert got["prompt_tokens"].tolist() == [10, 7]
    assert got["output_tokens"].tolist() == [3, 9]


def test_a_byte_order_mark_before_the_header_is_ignored(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_bytes("\ufeffarrival_s,prompt_tokens,output_tokens\n0.5,10,3\n".encode("utf-8"))
    assert read_csv_columns(path, KINDS, "f")["arrival_s"].tolist() == [0.5]


def test_a_column_named_twice_in_the_header_is_a_one_line_error(tmp_path):
    path = _write(tmp_path, "arrival_s,prompt_tokens, arrival_s,output_tokens\n0.0,10,5.0,3\n")
    with pytest.raises(ScenarioError) as err:
        read_csv_columns(path, KINDS, "workload.arrival.trace_csv")
    assert str(err.value).endswith(f"{path}: column 'arrival_s' appears 2 times in the header (fields 1, 3); keep one")
    other = _write(tmp_path, "note,arrival_s,prompt_tokens,output_tokens,note\na,0.5,10,3,b\n")   # not one it reads
    assert read_csv_columns(other, KINDS, "f")["arrival_s"].tolist() == [0.5]


@pytest.mark.parametrize("text, line, fields", [
    ("arrival_s,prompt_tokens,output_tokens,note\n0,1,2,a\n1,2,3\n", 3, 3),           # too few (a named one kept)
    ("arrival_s,prompt_tokens,output_tokens\n0,1,2\n\n1,2,3,4\n", 4, 4),               # extra field
    ("arrival_s,prompt_tokens,output_tokens\n0,1,2,9\n1,2,3,4\n", 2, 4),               # extra in every row
])
def test_rows_with_a_wrong_field_count_name_the_file_and_line(tmp_path, text, line, fields):
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as err:
        read_csv_columns(path, KINDS, "workload.arrival.trace_csv")
    message = str(err.value)
    assert f"{path}, line {line}: {fields} fields" in message and len(message.splitlines()) == 1


def test_cli_exits_2_on_a_short_row(tmp_path, capsys):
    _write(tmp_path, "arrival_s,prompt_tokens,output_tokens\n0.0,12,5\n0.5,12\n")
    data = {"name": "t", "seed": 1, "workload": {"arrival": {"process": "trace", "trace_csv": "trace.csv"}},
            "cluster": {"hardware": "h100-sxm", "model": "llama-3-8b"}, "outputs": {"plots": False}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    code = main(["run", str(tmp_path / "s.yaml"), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "line 3: 2 fields" in err and "trace_csv" in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_a_field_beyond_the_csv_modules_limit_is_read(tmp_path):
    """A field of more than 131,072 characters (the csv module's default limit): a column name raised _csv.Error
    from the header (a traceback); a notes cell, met by the field-count check of the exact path (a blank row
    sends the file there), called a valid file unreadable."""
    name, note = "n" * 200_000, "x" * 200_000
    path = _write(tmp_path, f"arrival_s,prompt_tokens,output_tokens,{name}\n0.5,10,3,{note}\n\n1.5,7,9,y\n")
    got = read_csv_columns(path, KINDS, "f")
    assert got["arrival_s"].tolist() == [0.5, 1.5] and got["prompt_tokens"].tolist() == [10, 7]
    assert csv_columns.csv.field_size_limit() == 131_072   # (lifted only while the file is read)


def test_a_missing_column_of_a_wide_header_names_a_few_of_its_columns(tmp_path):
    """A header of 200,000 columns lacking one: the error line named every column (20 MB of 2 million)."""
    path = _write(tmp_path, "arrival_s,output_tokens," + ",".join(f"c{i}" for i in range(200_000)) + "\n1,2,3\n")
    with pytest.raises(ScenarioError) as err:
        read_csv_columns(path, KINDS, "f")
    assert str(err.value).endswith("lacks column(s) 'prompt_tokens'; found 'arrival_s', 'output_tokens', 'c0', 'c1', "
                                   "'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9', ... (200,002 in all)")
