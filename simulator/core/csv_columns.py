"""Reading numeric columns of a large CSV file fast, with exact one-line errors.

`read_csv_columns(path, {name: kind}, field)` returns the named columns as arrays, validated by kind
(``"time"``: a finite float >= 0, float64; ``"count"``: an integer from 1 to 10^12, int64); other columns
are ignored (not kept in memory), blank lines are skipped, and every data row must have as many fields as
the header. Trace importers (workload traces, empirical length distributions, other trace formats) call
it with the columns they need.

Two paths give the same answer:
- fast: pyarrow's multi-threaded CSV reader converts only the named columns to float64 (a 200 MB trace in a
  few seconds, memory of the kept columns plus pyarrow's read blocks);
- exact: when pyarrow refuses the file or a value is out of range, the file is read again row by row
  (Python's csv module for the field counts, then pandas for the values) to name the file, column and
  physical line (1 = header) of the first problem. Files the fast path cannot take but that are valid
  (spaces around numbers, rows whose named fields are all blank) are read by the exact path.
Both parse decimal text to the nearest float64 (correctly rounded), so they return identical arrays.

Before anything is read (`check_data_file`): the path must be a regular file — a FIFO or `/dev/zero` was
read forever, `/dev/null` read as nothing — of at most `MAX_TRACE_BYTES` (16 GiB), whose first
`TEXT_CHECK_BYTES` are text (a UTF-16 file, as some Windows tools save a CSV, or a binary file read as
"invalid start byte"), all of it UTF-8 (the fast path converts only the named columns, so a Latin-1 byte in
another column passed it while the exact path and the other trace reader refused the file), and a file
holds at most `MAX_TRACE_ROWS` (100 million) rows. Both caps are far
above the public traces draftsim reads: the largest BurstGPT file, `BurstGPT_3.csv`, has 5.34 million
lines in ~220 MB (github.com/HPMLL/BurstGPT, README, "Release v2.0"); a run also keeps about 1 kB per
request (simulator.config.host_memory).
"""
from __future__ import annotations

import csv
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, Mapping

import numpy as np

from simulator.errors import ScenarioError

ColumnKind = Literal["time", "count"]
MAX_TOKENS = 10**12  # guards the int64 conversion against absurd values such as 1e30
_KIND_RULES = {"time": "a finite number >= 0 (seconds)", "count": "an integer from 1 to 10^12 (tokens)"}
_BLOCK_BYTES = 1 << 24
MAX_TRACE_BYTES = 16 * 1024**3
MAX_TRACE_ROWS = 100_000_000
TEXT_CHECK_BYTES = 64 * 1024
FIELD_CHARS = 2**31 - 1   # the csv module's field limit while a trace is read (a C long on every platform)


@contextmanager
def any_field_size():
    """The csv module's field limit (131,072 characters) lifted while a trace is read: a longer field (a column
    name of 200 kB, a quoted notes cell) raised `_csv.Error` — a traceback from the header, a valid file called
    unreadable from the field-count check. The file's size is bounded by MAX_TRACE_BYTES."""
    limit = csv.field_size_limit()
    csv.field_size_limit(FIELD_CHARS)
    try:
        yield
    finally:
        csv.field_size_limit(limit)


def check_data_file(path: Path, field: str, what: str = "CSV file") -> None:
    """ScenarioError naming `field` unless `path` is a regular file within MAX_TRACE_BYTES whose first
    TEXT_CHECK_BYTES look like UTF-8 text (no UTF-16 byte-order mark, no NUL byte: models.files) (module
    docstring)."""
    from models.files import file_kind_problem, text_bytes_problem
    from simulator.console.printable import printable

    shown = printable(str(path))   # (a NUL byte or a newline in the path was printed raw: a cut error line)
    problem = file_kind_problem(path)
    if problem == "file not found":
        raise ScenarioError(field, f"file not found: {shown}")
    if problem is not None:
        raise ScenarioError(field, f"{shown} {problem}; expected a {what}")
    size = Path(path).stat().st_size
    if size > MAX_TRACE_BYTES:
        raise ScenarioError(field, f"{shown} has {size / 1024**3:,.1f} GiB; at most {MAX_TRACE_BYTES // 1024**3} GiB "
                                   "are read (cut the trace first)")
    try:
        with open(path, "rb") as fh:
            head = fh.read(TEXT_CHECK_BYTES)
    except OSError as err:
        raise ScenarioError(field, f"cannot read {shown}: {err.strerror or err}") from None
    problem = text_bytes_problem(head) or _utf8_problem(path)
    if problem is not None:
        raise ScenarioError(field, f"{shown} {problem}")


def _utf8_problem(path: Path) -> str | None:
    """Where the file `path` stops being UTF-8 (models.files.not_utf8, as read_text says it), read in blocks of
    `_BLOCK_BYTES` (a second pass over the file, at the speed of the disk cache), or None."""
    from models.files import not_utf8
    carry, lines = b"", 0
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_BLOCK_BYTES)
            data, carry = carry + block, b""
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                if block and exc.end == len(data) and exc.reason == "unexpected end of data":
                    carry = data[exc.start:]   # a character cut by the block's end: decoded with the next block
                else:
                    return not_utf8(data, exc, lines)
            if not block:
                return None
            lines += data.count(b"\n") - carry.count(b"\n")


def check_row_count(rows: int, path: Path, field: str) -> None:
    if rows > MAX_TRACE_ROWS:
        raise ScenarioError(field, f"{path} has more than {MAX_TRACE_ROWS:,} rows; cut the trace first")


def read_csv_columns(path: Path, columns: Mapping[str, ColumnKind], field: str) -> dict[str, np.ndarray]:
    """The named numeric columns of a CSV file with a header row (module docstring). Any problem raises
    ScenarioError(field, ...) naming the file (and, for a row or value, its column and line)."""
    path = Path(path)
    check_data_file(path, field)
    header = _header(path, columns, field)
    fast = _read_fast(path, {name: header[name] for name in columns})
    if fast is not None and len(fast[next(iter(columns))]) and not _invalid(fast, columns).any():
        check_row_count(len(fast[next(iter(columns))]), path, field)
        return {name: values if columns[name] == "time" else values.astype(np.int64)
                for name, values in fast.items()}
    return _read_exact(path, columns, field, len(header["*"]))


def _header(path: Path, columns: Mapping[str, ColumnKind], field: str) -> dict:
    """{stripped name: name as written} of the requested columns, and "*": all header fields."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            first = f.readline()
    except FileNotFoundError:
        raise ScenarioError(field, f"file not found: {path}") from None
    except IsADirectoryError:
        raise ScenarioError(field, f"{path} is a directory, expected a CSV file") from None
    except UnicodeDecodeError as err:
        raise ScenarioError(field, f"{path} is not a readable CSV file ({err.reason})") from None
    except OSError as err:
        raise ScenarioError(field, f"cannot read {path}: {err.strerror or err}") from None
    if not first.strip():
        raise ScenarioError(field, f"{path} is empty; expected a header row with columns {', '.join(columns)}")
    with any_field_size():
        names = next(csv.reader([first]))
    stripped = [name.strip() for name in names]
    found = dict(zip(stripped, names))
    missing = [name for name in columns if name not in found]
    if missing:
        raise ScenarioError(field, f"{path} lacks column(s) {', '.join(repr(m) for m in missing)}; "
                                   f"found {shown_names(stripped)}")
    check_unique_columns(stripped, columns, path, field)
    return {**{name: found[name] for name in columns}, "*": names}


SHOWN_NAMES, SHOWN_NAME_CHARS = 12, 60   # of a header's names an error line shows, and of each name's characters


def shown_names(names: list[str]) -> str:
    """The first SHOWN_NAMES of a header's `names`, quoted, each cut at SHOWN_NAME_CHARS, and how many there are
    in all: a header of two million columns missing one made an error line of 20 MB."""
    cut = [repr(n if len(n) <= SHOWN_NAME_CHARS else n[:SHOWN_NAME_CHARS] + "...") for n in names[:SHOWN_NAMES]]
    return ", ".join(cut) + (f", ... ({len(names):,} in all)" if len(names) > SHOWN_NAMES else "")


def header_names(path: Path) -> list[str]:
    """The stripped field names of the first line of the CSV file `path` (a byte-order mark dropped)."""
    with open(path, newline="", encoding="utf-8-sig") as f, any_field_size():
        return [name.strip() for name in next(csv.reader([f.readline()]), [])]


def check_unique_columns(header: list[str], wanted, path: Path, field: str) -> None:
    """ScenarioError when a `wanted` column appears more than once in `header` (stripped names): which of two
    columns of one name holds the values is anyone's guess (pandas would read the first, as 'x' and 'x.1')."""
    for name in wanted:
        at = [i + 1 for i, n in enumerate(header) if n == name]
        if len(at) > 1:
            raise ScenarioError(field, f"{path}: column {name!r} appears {len(at)} times in the header (fields "
                                       f"{', '.join(map(str, at))}); keep one")


def _read_fast(path: Path, written: Mapping[str, str]) -> dict[str, np.ndarray] | None:
    """pyarrow's reading of the columns as float64, or None where it refuses the file or a value is blank."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    try:
        table = pacsv.read_csv(
            path, read_options=pacsv.ReadOptions(block_size=_BLOCK_BYTES),
            parse_options=pacsv.ParseOptions(ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(include_columns=list(written.values()),
                                                 column_types={w: pa.float64() for w in written.values()},
                                                 null_values=[], strings_can_be_null=False))
    except (pa.ArrowException, UnicodeDecodeError, OSError):
        return None
    out = {}
    for name, w in written.items():
        column = table.column(w)
        if column.null_count:
            return None
        out[name] = column.to_numpy()
    return out


def _invalid(cols: Mapping[str, np.ndarray], kinds: Mapping[str, ColumnKind]) -> np.ndarray:
    """Rows where some column breaks its kind's rule."""
    bad = np.zeros(len(next(iter(cols.values()))), dtype=bool)
    for name, values in cols.items():
        bad |= ~np.isfinite(values)
        if kinds[name] == "time":
            bad |= values < 0
        else:
            bad |= (values < 1) | (values > MAX_TOKENS) | (values != np.rint(values))
    return bad


def check_field_counts(path: Path, expected: int | None, field: str) -> None:
    """A one-line error at the first non-blank row whose field count differs from the header's (`expected`
    fields; None: as many as the header row has)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f, any_field_size():
            reader = csv.reader(f)
            header = next(reader, None)
            if expected is None:
                expected = len(header or [])
            for row in reader:
                if row and len(row) != expected:
                    raise ScenarioError(field, f"{path}, line {reader.line_num}: {len(row)} fields; the header "
                                               f"has {expected}")
    except (csv.Error, UnicodeDecodeError) as err:
        raise ScenarioError(field, f"{path} is not a readable CSV file ({err})") from None


def _read_exact(path: Path, columns: Mapping[str, ColumnKind], field: str, expected: int) -> dict[str, np.ndarray]:
    """The row-by-row reading that names the first bad row or value (module docstring)."""
    import pandas as pd   # (deferred: only trace files are read with it, and pandas costs start-up time)
    check_field_counts(path, expected, field)
    try:   # (the named columns only: a text column of each of two million columns held pandas for minutes)
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False,
                            skipinitialspace=True, usecols=lambda name: name.strip() in columns)
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ScenarioError(field, f"{path} is not a readable CSV file ({detail})") from None
    check_row_count(len(frame), path, field)
    frame.columns = [str(name).strip() for name in frame.columns]
    raw = {name: frame[name].to_numpy(dtype=object) for name in columns}
    line = np.arange(len(frame)) + 2  # header is line 1; blank lines are kept as rows, so this is exact
    blank = np.logical_and.reduce([np.char.strip(v.astype(str)) == "" for v in raw.values()]) \
        if len(frame) else np.zeros(0, dtype=bool)
    keep = ~blank
    line = line[keep]
    if len(line) == 0:
        raise ScenarioError(field, f"{path} has no data rows")
    out: dict[str, np.ndarray] = {}
    for name, kind in columns.items():
        text = raw[name][keep]
        values = pd.to_numeric(pd.Series(text, dtype=object).str.strip(), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan)
        bad = _invalid({name: values}, {name: kind})
        if bad.any():
            i = int(np.argmax(bad))
            if str(text[i]).strip() == name:
                raise ScenarioError(field, f"{path}, column '{name}', line {line[i]}: the header row again (files "
                                           "joined together?); remove it")
            raise ScenarioError(field, f"{path}, column '{name}', line {line[i]}: {text[i]!r} is not "
                                       f"{_KIND_RULES[kind]}")
        out[name] = values if kind == "time" else values.astype(np.int64)
    return out
