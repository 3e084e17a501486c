"""Reading one trace file (CSV or JSON lines) into arrays, with one-line errors naming file, column and line."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.core.csv_columns import (check_data_file, check_field_counts, check_row_count, check_unique_columns,
                                       header_names, shown_names)
from simulator.core.traces.formats import JSON_LINES_SUFFIXES, TIME_UNITS, TraceFormat
from simulator.errors import ScenarioError

MAX_TOKENS = 10**12


@dataclass(frozen=True)
class TraceRows:
    arrival_s: np.ndarray            # float64, as read (unsorted)
    prompt: np.ndarray               # int64 >= 1
    output: np.ndarray               # int64 >= 1
    hash_ids: list | None            # per row, a list of ints (None: the trace has no prefix ids)
    skipped: int                     # rows left out (failed requests with 0 tokens, `skip_zero_tokens`)


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs) -> dict:
    """A JSON object's pairs as a dict; _DuplicateKey when a key appears twice (json.loads keeps the last)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _NotJson(ValueError):
    def __init__(self, constant: str):
        super().__init__(constant)
        self.constant = constant


def _no_constant(constant: str):
    """json.loads reads NaN, Infinity and -Infinity, which JSON has not (a NaN time read as a missing one)."""
    raise _NotJson(constant)


def _is_jsonl(path: Path, fmt: TraceFormat) -> bool:
    suffix = path.suffix.lower()
    return suffix in JSON_LINES_SUFFIXES or (fmt.file_kind == "jsonl" and suffix not in (".csv", ".txt"))


def _read_frame(path: Path, fmt: TraceFormat, field: str, wanted: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """The `wanted` columns (CSV) or keys (JSON lines) of the trace as a frame with each row's `__line__`, and
    the names the file has (its header, or every key of its objects in order of appearance). Only the wanted
    ones are kept: pandas made a column of each of a header's two million names (a 25 MB trace held it over
    ten minutes, and 12 GB)."""
    check_data_file(path, field, "trace file")
    have: dict[str, None] = {}
    try:
        if _is_jsonl(path, fmt):
            records = []
            with path.open("r", encoding="utf-8-sig") as fh:   # (a byte-order mark, as the CSV reader allows)
                for line_no, line in enumerate(fh, start=1):
                    if line.strip():
                        check_row_count(len(records) + 1, path, field)
                        try:
                            record = json.loads(line, object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
                        except _DuplicateKey as dup:
                            raise ScenarioError(field, f"{path}, line {line_no}: key {dup.key!r} appears twice in "
                                                       "one object; keep one") from None
                        except _NotJson as bad:
                            raise ScenarioError(field, f"{path}, line {line_no}: {bad.constant} is not a JSON "
                                                       "number; give a finite number") from None
                        except RecursionError:
                            raise ScenarioError(field, f"{path}, line {line_no}: nests too deeply to be read") from None
                        except json.JSONDecodeError:
                            raise ScenarioError(field, f"{path}, line {line_no}: not a JSON object") from None
                        except ValueError:   # int()'s digit limit (sys.get_int_max_str_digits): no number of a trace
                            raise ScenarioError(field, f"{path}, line {line_no}: holds an integer of more than "
                                                       f"{sys.get_int_max_str_digits():,} digits") from None
                        if not isinstance(record, dict):
                            raise ScenarioError(field, f"{path}, line {line_no}: not a JSON object")
                        have.update(dict.fromkeys(record))
                        records.append({**{key: record[key] for key in wanted if key in record}, "__line__": line_no})
            frame = pd.DataFrame.from_records(records) if records else pd.DataFrame()
        else:
            header = header_names(path)
            if not any(header):
                raise ScenarioError(field, f"{path} is empty" if path.stat().st_size == 0 else
                                           f"{path}, line 1: blank; expected the header row ({', '.join(wanted)})")
            _check_columns(header, wanted, fmt, path, field)
            check_unique_columns(header, wanted, path, field)   # (pandas renamed a second 'x' to 'x.1', read the first)
            have = dict.fromkeys(header)
            frame = _read_csv(path, field, wanted)
    except pd.errors.EmptyDataError:
        raise ScenarioError(field, f"{path} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        if isinstance(err, pd.errors.ParserError):   # a row of more fields than the header: name it as such
            check_field_counts(path, None, field)
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ScenarioError(field, f"{path} is not a readable CSV file ({detail})") from None
    except OSError as err:
        raise ScenarioError(field, f"cannot read {path}: {err.strerror or err}") from None
    if frame.empty or not have:
        raise ScenarioError(field, f"{path} has no data rows")
    return frame, list(have)


def _read_csv(path: Path, field: str, wanted: list[str]) -> pd.DataFrame:
    """The `wanted` columns of the CSV trace (its header has each once) as text and their `__line__` numbers
    (1 = the header), rows blank in all of them left out (as `csv_columns.read_csv_columns` leaves them out of
    a plain draftsim trace)."""
    check_field_counts(path, None, field)   # (read for some columns, pandas passed a row longer than the header)
    keep = set(wanted)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True, skip_blank_lines=False,
                        usecols=lambda name: name.strip() in keep)
    check_row_count(len(frame), path, field)
    frame.columns = [str(c).strip() for c in frame.columns]
    frame["__line__"] = np.arange(len(frame)) + 2    # (blank lines kept as rows until here: exact numbers)
    blank = (frame.drop(columns="__line__").apply(lambda column: column.str.strip()) == "").all(axis=1)
    return frame[~blank.to_numpy()]


def _check_columns(have: list[str], wanted: list[str], fmt: TraceFormat, path: Path, field: str) -> None:
    """ScenarioError naming the `wanted` columns (or JSON keys) the trace has not, and those it has."""
    missing = [c for c in wanted if c not in have]
    if missing:
        raise ScenarioError(field, f"{path} lacks column(s) {', '.join(repr(m) for m in missing)} of format "
                                   f"'{fmt.name}'; found {shown_names(have)} (map other names with "
                                   "workload.arrival.columns)")


def _bad(field: str, path: Path, column: str, line, value, rule: str) -> ScenarioError:
    where = f"{path}, column '{column}', line {line}"
    if isinstance(value, np.generic):   # a JSON line's number, as pandas holds it: -5, not np.int64(-5)
        value = value.item()
    if value is None or (isinstance(value, float) and value != value):   # a JSON line without the key
        return ScenarioError(field, f"{where}: the value is missing; expected {rule}")
    if isinstance(value, str) and value.strip() == column:
        return ScenarioError(field, f"{where}: the header row again (files joined together?); remove it")
    return ScenarioError(field, f"{where}: {value!r} is not {rule}")


def _times(frame: pd.DataFrame, column: str, unit: str, path: Path, field: str) -> np.ndarray:
    raw = frame[column]
    lines = frame["__line__"].to_numpy()
    if unit == "datetime":
        text = raw.astype(str).str.strip()
        zoned = text.str.contains(_ZONE, regex=True).to_numpy()
        if zoned.any() and not zoned.all():   # naive times would silently be taken as UTC beside zoned ones
            i = int(np.argmax(zoned != zoned[0]))
            raise ScenarioError(field, f"{path}, column '{column}', line {lines[i]}: {raw.iloc[i]!r} "
                                       f"{'has' if zoned[i] else 'lacks'} a UTC offset and line {lines[0]} "
                                       f"{'does' if zoned[0] else 'does not'}; give every time with an offset "
                                       "or none")
        stamps = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
        bad = stamps.isna().to_numpy()
        if bad.any():
            i = int(np.argmax(bad))
            # (times are held in ns since 1970 as int64: 9999-12-31, a valid date, was said to be no date)
            raise _bad(field, path, column, lines[i], raw.iloc[i], f"a date and time from "
                                                                   f"{pd.Timestamp.min.ceil('s'):%Y-%m-%d %H:%M:%S} to "
                                                                   f"{pd.Timestamp.max.floor('s'):%Y-%m-%d %H:%M:%S} "
                                                                   "UTC (ISO 8601, e.g. "
                                                                   "2023-11-16 18:15:46.6805900)")
        ns = stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64)
        # differences as uint64 (modulo 2^64, exact: any span of int64 ns is below 2^64): in int64 a span past
        # 292 years (1700 to 2200) wrapped to negative times, run with exit 0; load_trace's span bound refuses it
        unsigned = ns.view(np.uint64)
        return (unsigned - unsigned[np.argmin(ns)]) * 1e-9
    values = pd.to_numeric(raw.astype(str).str.strip(), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise _bad(field, path, column, lines[i], raw.iloc[i], f"a finite number >= 0 ({unit}; use time_unit: "
                                                               "datetime for dates)")
    return values * TIME_UNITS[unit]


def _counts(frame: pd.DataFrame, column: str, path: Path, field: str, allow_zero: bool) -> np.ndarray:
    raw = frame[column]
    values = pd.to_numeric(raw.astype(str).str.strip(), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    low = 0 if allow_zero else 1
    bad = ~np.isfinite(values) | (values < low) | (values > MAX_TOKENS) | (values != np.rint(values))
    if bad.any():
        i = int(np.argmax(bad))
        raise _bad(field, path, column, frame["__line__"].iloc[i], raw.iloc[i],
                   f"an integer from {low} to 10^12 (tokens{'; rows of 0 are failed requests, skipped' if allow_zero else ''})")
    return values.astype(np.int64)


# an ISO 8601 UTC offset after the time of day (Z, +hh, +hhmm, +hh:mm)
_ZONE = r"\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?\s*(?:[zZ]|[+-]\d\d(?::?\d\d)?)$"
_ID_RANGE = (-2**63, 2**63)                   # block ids are stored as int64


def _hash_ids(frame: pd.DataFrame, column: str, path: Path, field: str) -> list:
    out = []
    for value, line in zip(frame[column].tolist(), frame["__line__"].tolist()):
        if isinstance(value, str):  # a CSV cell: "[1, 2, 3]" or "1 2 3"
            text = value.strip().strip("[]").replace(",", " ").replace(";", " ")
            try:
                value = [int(v) for v in text.split()]
            except ValueError:
                raise _bad(field, path, column, line, value, "a list of integer block ids") from None
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise _bad(field, path, column, line, value, "a list of integer block ids")
        big = next((v for v in value if not _ID_RANGE[0] <= v < _ID_RANGE[1]), None)
        if big is not None:
            raise ScenarioError(field, f"{path}, column '{column}', line {line}: block id {big} does not fit in 64 "
                                       "bits; ids must be integers from -2^63 to 2^63-1")
        out.append(value)
    return out


def read_trace(path: Path, fmt: TraceFormat, field: str) -> TraceRows:
    """The rows of `path` read as `fmt` (ScenarioError naming `field`, the file, column and line otherwise)."""
    wanted = [fmt.arrival, fmt.prompt_tokens, fmt.output_tokens] + ([fmt.hash_ids] if fmt.hash_ids else [])
    frame, have = _read_frame(Path(path), fmt, field, wanted)
    _check_columns(have, wanted, fmt, path, field)
    prompt = _counts(frame, fmt.prompt_tokens, path, field, fmt.skip_zero_tokens)
    output = _counts(frame, fmt.output_tokens, path, field, fmt.skip_zero_tokens)
    keep = (prompt > 0) & (output > 0)
    skipped = int((~keep).sum())
    if not keep.all():
        frame, prompt, output = frame[keep], prompt[keep], output[keep]
        if frame.empty:
            raise ScenarioError(field, f"{path} has no request with both token counts >= 1")
    times = _times(frame, fmt.arrival, fmt.time_unit, path, field)
    hashes = None
    if fmt.hash_ids:
        hashes = _hash_ids(frame, fmt.hash_ids, path, field)
        _check_block_counts(hashes, prompt, fmt, frame["__line__"].to_numpy(), path, field)
        _check_chained(hashes, fmt.hash_ids, frame["__line__"].to_numpy(), path, field)
    return TraceRows(times, prompt, output, hashes, skipped)


def _check_block_counts(hashes: list, prompt: np.ndarray, fmt: TraceFormat, lines: np.ndarray, path: Path,
                        field: str) -> None:
    """Each request's hash ids cover its prompt: one id per `hash_block_tokens` block, the last partial block
    with or without its own (Mooncake's traces give it one). More ids or fewer are another block size
    (`workload.arrival.hash_block_tokens`) or another column: read as they were, the prefix cache was priced
    from ids that do not describe the prompt."""
    block = fmt.hash_block_tokens
    counts = np.fromiter((len(ids) for ids in hashes), dtype=np.int64, count=len(hashes))
    low, high = prompt // block, -(-prompt // block)
    bad = (counts < low) | (counts > high)
    if bad.any():
        i = int(np.argmax(bad))
        expected = f"{low[i]}" if low[i] == high[i] else f"{low[i]} or {high[i]}"
        raise ScenarioError(field, f"{path}, column '{fmt.hash_ids}', line {lines[i]}: {counts[i]} block ids for "
                                   f"{prompt[i]} prompt tokens; expected {expected}, one per {block}-token block "
                                   "(workload.arrival.hash_block_tokens)")


def _check_chained(hashes: list, column: str, lines: np.ndarray, path: Path, field: str) -> None:
    """Hash ids are chained (Mooncake's, as vLLM's block hashes): an id stands for its block and every block
    before it, so wherever it appears it is the same block of the prompt after the same id. An id twice in one
    request ([7, 7]: a KeyError traceback as the prefix cache released the request) or at another place in
    another ([10, 11] then [11, 10]: a prefix-cache hit on a prefix not shared, exit 0) describes no prompt."""
    counts = np.fromiter((len(ids) for ids in hashes), dtype=np.int64, count=len(hashes))
    ids = np.fromiter((v for row in hashes for v in row), dtype=np.int64, count=int(counts.sum()))
    row = np.repeat(np.arange(len(hashes)), counts)
    pos = np.arange(len(ids)) - np.repeat(np.cumsum(counts) - counts, counts)   # 0: the first block
    prev = np.where(pos > 0, np.r_[0, ids[:-1]], 0)   # (a first block has none: its position tells it apart)
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    first = first[inverse]   # per id, where it appeared first
    bad = (pos != pos[first]) | (prev != prev[first])
    if bad.any():
        i = int(np.argmax(bad))
        j = first[i]
        place = lambda k: f"block {pos[k] + 1} (after id {prev[k]})" if pos[k] else "block 1"
        raise ScenarioError(field, f"{path}, column '{column}', line {lines[row[i]]}: block id {ids[i]} is "
                                   f"{place(i)} here and {place(j)} on line {lines[row[j]]}; hash ids are chained "
                                   "(an id stands for its block and every block before it), so an id keeps one "
                                   "position and one predecessor")
