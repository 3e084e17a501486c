"""Write a run's outputs atomically: requests.parquet, steps.parquet, summary.json and PNG plots.

Everything is first written into a fresh staging folder and then moved into place
(simulator.results.output_folder), so after any failure there is either the complete new output or
nothing new (a previous output is kept intact), and a run replaces only the files it wrote itself.
Files are reproducible byte for byte: parquet without pandas/schema metadata (no versions, no index),
JSON with sorted keys and floats rounded to 12 significant digits, PNGs without metadata.

An existing output folder receives the files only when it is empty or an earlier draftsim output; a file
the run did not write is never replaced or removed, so `--out` can never wipe an unrelated folder.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping

import numpy as np

from simulator.results import output_folder
from simulator.results.columns import ColumnTable
from simulator.results.plots import PLOT_FILES, write_plots

REQUESTS_PARQUET = "requests.parquet"
STEPS_PARQUET = "steps.parquet"
SUMMARY_JSON = "summary.json"
TRACE_JSON = "trace.json"
OUT_FIELD = "--out"
FLOAT_DIGITS = 12
RESERVED_NAMES = (REQUESTS_PARQUET, STEPS_PARQUET, SUMMARY_JSON, *PLOT_FILES)
RUN_FILES = (*RESERVED_NAMES, TRACE_JSON)   # every file `draftsim run` may write


def write_parquet(records, path: Path) -> None:
    """Parquet with only the data and its arrow types (a ColumnTable or a DataFrame): identical records give
    identical bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = records.to_arrow() if isinstance(records, ColumnTable) else \
        pa.Table.from_pandas(records, preserve_index=False).replace_schema_metadata(None)
    pq.write_table(table, path, compression="zstd", write_statistics=True)


def _plain(value):
    """JSON-ready copy: numpy scalars to Python, NaN/inf to None, floats rounded to 12 significant digits."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(item) for item in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return float(f"{value:.{FLOAT_DIGITS}g}") if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"summary: cannot store {type(value).__name__} in JSON")


def summary_json(summary: Mapping) -> str:
    return json.dumps(_plain(summary), sort_keys=True, indent=2, allow_nan=False) + "\n"


def check_output_dir(out_dir: Path | str, marker: str = SUMMARY_JSON, command: str = "run",
                     names=RUN_FILES, head: str | None = None) -> Path:
    """Fail now (ScenarioError on `--out`) if `out_dir` could not receive a `command`'s outputs later
    (simulator.results.output_folder); called before a run starts, so a bad `--out` never costs a
    simulation. `marker`: the file that marks a legacy output of the command (`head`: its first line);
    `names`: the files it may write."""
    return output_folder.check_output_dir(out_dir, command, marker, names, head)


def staged_output(out_dir: Path | str, marker: str = SUMMARY_JSON, command: str = "run", names=RUN_FILES,
                  head: str | None = None):
    """`with staged_output(out) as folder:` write files into `folder`; on success they replace this
    command's earlier files in `out` and nothing else (simulator.results.output_folder)."""
    return output_folder.staged_output(out_dir, command, marker, names, head)


def write_outputs(out_dir: Path | str, requests_df, steps_df, summary: Mapping,
                  *, plots: bool = True, extra_files: Mapping[str, str | bytes] | None = None,
                  steps_kept=None) -> Path:
    """Write all outputs into `out_dir` atomically; returns the output folder. `requests_df`, `steps_df`: the
    records as ColumnTables (a run's) or DataFrames. `steps_kept`: the scenario's
    `outputs` section, which says whether `steps_df` holds every step, a sample or interval sums (the
    timeline plot reads it; None: every step).

    `extra_files` (file name -> text or bytes) lets the caller add files, e.g. the resolved scenario,
    in the same atomic step. Raises ScenarioError('--out', ...) when out_dir cannot be used.
    """
    out_dir = output_folder.absolute(out_dir)
    extra_files = extra_files or {}
    for name in extra_files:
        if (name in RESERVED_NAMES or not output_folder.plain_name(name)
                or name.startswith(output_folder.MANIFEST_PREFIX)):
            raise ValueError(f"extra_files: {name!r} must be a plain file name not used by the outputs")
    names = (*RUN_FILES, *(name for name in extra_files if name not in RUN_FILES))
    with staged_output(out_dir, names=names) as staged:
        write_parquet(requests_df, staged / REQUESTS_PARQUET)
        write_parquet(steps_df, staged / STEPS_PARQUET)
        (staged / SUMMARY_JSON).write_text(summary_json(summary), encoding="utf-8")
        for name, content in extra_files.items():
            target = output_folder.inside(staged, name)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        if plots:
            write_plots(staged, _frame(requests_df), _frame(steps_df), summary, steps_kept)
    return out_dir


def _frame(records):
    """A DataFrame of records given as a ColumnTable or a DataFrame (the plots read pandas)."""
    return records.to_pandas() if isinstance(records, ColumnTable) else records
