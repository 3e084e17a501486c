"""Parquet tables that carry their provenance: a JSON metadata blob under a named key of the schema
metadata, written atomically (a `.partial` file renamed into place). Acceptance traces
(`profiles.acceptance.trace`) and session corpora (`profiles.acceptance.sessions`) are stored this way."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def write_with_meta(frame: pd.DataFrame, path: str | Path, key: bytes, meta: dict) -> None:
    """Write `frame` (its index dropped) as zstd parquet with `meta` (JSON-serializable, keys sorted) under
    `key`; the file appears whole or not at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           key: json.dumps(meta, sort_keys=True).encode()})
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".partial")
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(path)


def read_with_meta(path: str | Path, key: bytes, what: str) -> pd.DataFrame:
    """The table at `path` with its metadata under `key` in `.attrs["meta"]` ({} when absent);
    ValueError naming `what` when `path` is not a file, naming `key` when its metadata is not a JSON object."""
    import pyarrow.parquet as pq
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{what} {str(path)!r} is not a file")
    table = pq.read_table(path)
    frame = table.to_pandas()
    frame.attrs["meta"] = _meta((table.schema.metadata or {}).get(key, b"{}"), key)
    return frame


def _meta(blob: bytes, key: bytes) -> dict:
    """The JSON object `blob`; ValueError naming `key` otherwise (bad JSON or UTF-8, nesting deeper than the
    parser recurses, which raised RecursionError, or another JSON value, e.g. a list)."""
    where = f"schema metadata {key.decode(errors='replace')!r}"
    try:
        meta = json.loads(blob)
    except RecursionError:
        raise ValueError(f"{where} nests too deeply; it must be a JSON object") from None
    except ValueError as exc:
        raise ValueError(f"{where} must be a JSON object: {exc}") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{where} must be a JSON object, not a JSON {type(meta).__name__}")
    return meta
