"""Write a run's outputs atomically: requests.parquet, steps.parquet, summary.json and PNG plots.

Everything is first written into a fresh temporary folder next to the output folder and then renamed into
place, so after any failure there is either the complete new output or nothing new (a previous output
folder is kept intact). Files are reproducible byte for byte: parquet without pandas/schema metadata (no
versions, no index), JSON with sorted keys and floats rounded to 12 significant digits, PNGs without
metadata.

An existing output folder is replaced only when it is empty or looks like an earlier draftsim output
(has summary.json); anything else is refused, so `--out` can never wipe an unrelated folder.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simulator.errors import ScenarioError
from simulator.results.plots import PLOT_FILES, write_plots

REQUESTS_PARQUET = "requests.parquet"
STEPS_PARQUET = "steps.parquet"
SUMMARY_JSON = "summary.json"
OUT_FIELD = "--out"
FLOAT_DIGITS = 12
RESERVED_NAMES = (REQUESTS_PARQUET, STEPS_PARQUET, SUMMARY_JSON, *PLOT_FILES)


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """Parquet with only the data and its arrow types: identical frames give identical bytes."""
    table = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)
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


def _check_replaceable(out_dir: Path, marker: str = SUMMARY_JSON) -> None:
    if not os.path.lexists(out_dir):
        return
    if not out_dir.is_dir() or out_dir.is_symlink():
        raise ScenarioError(OUT_FIELD, f"{out_dir} exists and is not a directory; choose another path")
    entries = list(out_dir.iterdir())
    if entries and not (out_dir / marker).is_file():
        raise ScenarioError(OUT_FIELD, f"{out_dir} is a non-empty directory that is not a draftsim output "
                                       f"(no {marker}); choose an empty or new directory")


def check_output_dir(out_dir: Path | str, marker: str = SUMMARY_JSON) -> Path:
    """Fail now (ScenarioError on `--out`) if `out_dir` could not receive the outputs later: it exists and
    is not a replaceable output folder, or a staging folder cannot be created beside it. Probes by creating
    (and at once removing) the staging folder and any missing parents, so it leaves nothing behind.
    Called before a run starts, so a bad `--out` never costs a simulation. `marker`: the file that marks
    a folder as an earlier output of the same command."""
    out_dir = Path(out_dir).expanduser().absolute()
    _check_replaceable(out_dir, marker)
    created = [p for p in (out_dir.parent, *out_dir.parent.parents) if not p.exists()]
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=f".{out_dir.name}.probe-", dir=out_dir.parent))
    except OSError as err:
        raise ScenarioError(OUT_FIELD, f"cannot create {out_dir}: {err.strerror or err}") from None
    finally:
        for folder in created:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                pass
    return out_dir


def _install(staged: Path, out_dir: Path) -> None:
    """Move the staged folder to out_dir; an existing out_dir is swapped out and then deleted."""
    if not os.path.lexists(out_dir):
        os.replace(staged, out_dir)
        return
    backup = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    os.rmdir(backup)  # only the unique name is needed
    os.replace(out_dir, backup)
    try:
        os.replace(staged, out_dir)
    except BaseException:
        os.replace(backup, out_dir)
        raise
    shutil.rmtree(backup, ignore_errors=True)


@contextmanager
def staged_output(out_dir: Path | str, marker: str = SUMMARY_JSON):
    """`with staged_output(out) as folder:` write files into `folder`; on success it replaces `out`
    atomically, on any failure (Ctrl-C included) it is removed and `out` is left as it was."""
    out_dir = Path(out_dir).expanduser().absolute()
    _check_replaceable(out_dir, marker)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staged = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    except OSError as err:
        raise ScenarioError(OUT_FIELD, f"cannot create {out_dir}: {err.strerror or err}") from None
    try:
        os.chmod(staged, 0o755)  # mkdtemp makes it private; an output folder is a normal folder
        yield staged
        _install(staged, out_dir)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise


def write_outputs(out_dir: Path | str, requests_df: pd.DataFrame, steps_df: pd.DataFrame, summary: Mapping,
                  *, plots: bool = True, extra_files: Mapping[str, str | bytes] | None = None) -> Path:
    """Write all outputs into `out_dir` atomically; returns the output folder.

    `extra_files` (file name -> text or bytes) lets the caller add files, e.g. the resolved scenario,
    in the same atomic step. Raises ScenarioError('--out', ...) when out_dir cannot be used.
    """
    out_dir = Path(out_dir).expanduser().absolute()
    with staged_output(out_dir) as staged:
        write_parquet(requests_df, staged / REQUESTS_PARQUET)
        write_parquet(steps_df, staged / STEPS_PARQUET)
        (staged / SUMMARY_JSON).write_text(summary_json(summary), encoding="utf-8")
        for name, content in (extra_files or {}).items():
            if Path(name).name != name or name in RESERVED_NAMES:
                raise ValueError(f"extra_files: {name!r} must be a plain file name not used by the outputs")
            target = staged / name
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        if plots:
            write_plots(staged, requests_df, steps_df, summary)
    return out_dir
