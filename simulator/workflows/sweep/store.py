"""The sweep result store: a parquet dataset with one file per finished point, each written atomically.

Layout of a store folder::

    manifest.json              what sweep this is (name, source file, created); marks the folder as a store
    points/<point_id>.parquet  one row: the point's parameters, seed, status and summary metrics
    results.parquet/.csv       all rows of the current sweep, rewritten (atomically) after each run

Crash safety: a row is first written to ``points/.tmp-<id>-<pid>-<n>`` and then renamed to
``<id>.parquet`` (rename is atomic on POSIX), so a killed sweep leaves every finished point complete and
no partial one visible; the file name is the point id, so a point can never be stored twice. Leftover
``.tmp-*`` files are removed when a store is opened for writing.
"""
from __future__ import annotations

import itertools
import json
import math
import os
import time
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simulator.errors import ScenarioError
from simulator.results.output_folder import absolute, refuse_link, refuse_package_folders

MANIFEST = "manifest.json"
POINTS_DIR = "points"
RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"
TMP_PREFIX = ".tmp-"
OUT_FIELD = "--out"
_POINT_COLUMNS = ("point_id", "status")   # what every stored point has (simulator.workflows.sweep.main)
_counter = itertools.count()


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write(path: Path, write) -> None:
    """write(tmp_path) then rename onto path; the temporary file is removed on any failure."""
    _atomic_writes([(path, write)])


def _atomic_writes(files: list[tuple[Path, object]]) -> None:
    """Each (path, write): write(tmp_path), then all renamed onto their paths together, Ctrl-C held back
    between the renames (simulator.console.interrupts.held); the temporary files are removed on any failure.
    results.parquet and results.csv were renamed one after the other: a Ctrl-C while the CSV was written left
    the new parquet beside the previous sweep's CSV, or beside none."""
    from simulator.console.interrupts import held

    temporaries = [(path.parent / f"{TMP_PREFIX}{path.name}-{os.getpid()}-{next(_counter)}", path) for path, _ in files]
    try:
        for (tmp, _), (_, write) in zip(temporaries, files):
            write(tmp)
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        with held():
            for tmp, path in temporaries:
                os.replace(tmp, path)
    except BaseException:
        for tmp, _ in temporaries:
            tmp.unlink(missing_ok=True)
        raise
    for folder in {path.parent for _, path in temporaries}:
        _fsync_dir(folder)


def _cell(value):
    """A parquet-friendly scalar: lists/dicts become JSON text, numpy scalars Python ones."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _kind(value) -> str:
    """What a column may hold together: numbers (ints and floats, not booleans), booleans, texts, ..."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    return "number" if isinstance(value, (int, float, np.integer, np.floating)) else type(value).__name__


def _one_kind_per_column(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with each column whose values are of several kinds written as text (texts as they are, the others
    as JSON): a swept key of values such as [auto, 1] (simulation.workers) made a column pyarrow cannot type, an
    ArrowTypeError traceback after every point had run and no results written."""
    out = frame
    for column in frame.columns:
        if frame[column].dtype != object:
            continue
        values = frame[column].tolist()
        present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if len({_kind(v) for v in present}) > 1:
            out = out.copy() if out is frame else out
            out[column] = [v if v is None or isinstance(v, str) or (isinstance(v, float) and math.isnan(v))
                           else json.dumps(_cell(v), sort_keys=True) for v in values]
    return out


class SweepStore:
    """A store folder. `open_store` creates or validates one; rows are written with `put`."""

    def __init__(self, root: Path):
        self.root = root
        self.points_dir = root / POINTS_DIR

    # ---- reading -------------------------------------------------------------------------------
    def finished_ids(self) -> set[str]:
        if not self.points_dir.is_dir():
            return set()
        return {p.name[:-len(".parquet")] for p in self.points_dir.iterdir()
                if p.name.endswith(".parquet") and not p.name.startswith(".")}

    def read_rows(self, point_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """Stored rows (all, or those of `point_ids` that are finished), ordered by point_index."""
        ids = self.finished_ids() if point_ids is None else set(point_ids) & self.finished_ids()
        frames = [self._read_point(pid) for pid in sorted(ids)]
        if not frames:
            return pd.DataFrame()
        frame = pd.concat(frames, ignore_index=True)
        if "point_index" in frame:
            frame = frame.sort_values("point_index", kind="stable").reset_index(drop=True)
        return frame

    def _read_point(self, point_id: str) -> pd.DataFrame:
        path = self.points_dir / f"{point_id}.parquet"
        try:
            return pq.read_table(path).to_pandas()
        except (OSError, pa.ArrowException) as err:
            raise ScenarioError(OUT_FIELD, _unreadable(path, str(err).splitlines()[0])) from None

    def check_points(self, point_ids: Iterable[str]) -> None:
        """Before a resumed sweep runs anything: each stored point of `point_ids` has a readable parquet
        footer (pyarrow reads the footer alone), so a file damaged outside draftsim (a copy cut short, an
        edit) is one line here rather than a traceback after the missing points ran. (draftsim itself
        writes points atomically.)"""
        from models.files import file_kind_problem
        for pid in sorted(point_ids):
            path = self.points_dir / f"{pid}.parquet"
            # (a FIFO of a point's name hung the resumed sweep: pyarrow waited for a writer)
            problem = "a symbolic link" if path.is_symlink() else file_kind_problem(path)
            if problem is not None:
                raise ScenarioError(OUT_FIELD, _unreadable(path, problem))
            try:
                problem = _point_problem(pq.read_metadata(path), path, pid)
            except (OSError, pa.ArrowException) as err:
                problem = str(err).splitlines()[0]
            if problem is not None:
                raise ScenarioError(OUT_FIELD, _unreadable(path, problem))

    def manifest(self) -> dict:
        """The manifest's fields (ScenarioError on `--out` when it is not a JSON object: edited, cut short)."""
        path = self.root / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ScenarioError(OUT_FIELD, f"{path} is not a sweep store's manifest ({err}); choose another "
                                           "--out") from None
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise ScenarioError(OUT_FIELD, f"{path} is not a sweep store's manifest (no name); choose another "
                                           "--out")
        return data

    # ---- writing -------------------------------------------------------------------------------
    def put(self, point_id: str, row: Mapping) -> Path:
        """Store one point's row atomically (replacing none: a finished id is never written twice)."""
        target = self.points_dir / f"{point_id}.parquet"
        if target.exists():
            raise ValueError(f"point {point_id} is already stored in {self.root}")
        cells = {key: [_cell(value)] for key, value in row.items()}
        table = pa.Table.from_pydict(cells).replace_schema_metadata(None)
        _atomic_write(target, lambda tmp: pq.write_table(table, tmp, compression="zstd"))
        return target

    def write_results(self, frame: pd.DataFrame) -> None:
        """Consolidated results of the current sweep (parquet + CSV), replaced together (_atomic_writes)."""
        frame = _one_kind_per_column(frame)
        table = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)
        _atomic_writes([(self.root / RESULTS_PARQUET, lambda tmp: pq.write_table(table, tmp, compression="zstd")),
                        (self.root / RESULTS_CSV, lambda tmp: frame.to_csv(tmp, index=False))])

    def remove_temporaries(self) -> int:
        removed = 0
        for folder in (self.root, self.points_dir):
            if folder.is_dir():
                for p in folder.iterdir():
                    if p.name.startswith(TMP_PREFIX):
                        p.unlink(missing_ok=True)
                        removed += 1
        return removed


def _point_problem(meta, path: Path, point_id: str) -> str | None:
    """What keeps a stored point's file from being point `point_id`'s one row, or None. A parquet file of
    another table (copied in, written by another tool) was read as no row of this point: the sweep said it
    was complete, the point missing from its results."""
    names = meta.schema.names
    missing = [c for c in _POINT_COLUMNS if c not in names]
    if missing:
        return f"no {', '.join(missing)} column"
    if meta.num_rows != 1:
        return f"{meta.num_rows} rows, not one"
    stats = meta.row_group(0).column(names.index("point_id")).statistics   # (draftsim writes them)
    found = stats.min if stats is not None and stats.has_min_max and isinstance(stats.min, str) else \
        str(pq.read_table(path, columns=["point_id"]).column("point_id")[0])
    return None if found == point_id else f"it holds point {found}"


def _unreadable(path: Path, detail: str) -> str:
    return (f"{path} is not a readable stored point ({detail}); delete it to run that point again, or pass "
            "--overwrite to start the sweep again")


def open_store(root: str | Path, name: str, source: str, *, resume: bool, overwrite: bool,
               expected_ids: set[str], create: bool = True) -> SweepStore:
    """Create the store folder, or reopen an existing one.

    An existing store with results of this sweep needs `resume` (continue) or `overwrite` (start again);
    a folder that is not a sweep store and not empty is refused, as is a store of another sweep name.
    Returns the store with stale temporary files removed. `create=False`: only check all of this and
    return the store as it is, writing (and, with `overwrite`, removing) nothing yet.
    """
    root = absolute(root)
    refuse_package_folders(root, "sweep")
    refuse_link(root)
    store = SweepStore(root)
    if root.exists() and not root.is_dir():
        raise ScenarioError(OUT_FIELD, f"{root} exists and is not a directory")
    has_manifest = (root / MANIFEST).is_file()
    if root.is_dir() and any(root.iterdir()) and not has_manifest:
        raise ScenarioError(OUT_FIELD, f"{root} is a non-empty directory that is not a sweep store "
                                       f"(no {MANIFEST}); choose an empty or new directory")
    if has_manifest:
        old = store.manifest().get("name")
        if old != name and not overwrite:
            raise ScenarioError(OUT_FIELD, f"{root} holds sweep {old!r}, not {name!r}; choose another "
                                           f"--out or pass --overwrite")
        points = store.points_dir
        if os.path.lexists(points) and (points.is_symlink() or not points.is_dir()):
            # (a link there: the points were written where it leads, and --overwrite deleted the .parquet files
            # found there)
            what = f"a symbolic link (to {os.readlink(points)})" if points.is_symlink() else "not a folder"
            raise ScenarioError(OUT_FIELD, f"{points} is {what}; a sweep keeps its points in a folder of its own "
                                           "there: move it or choose another --out")
        done = store.finished_ids() & expected_ids
        if overwrite and create:
            for p in store.points_dir.glob("*.parquet"):
                p.unlink()
            for name_ in (RESULTS_PARQUET, RESULTS_CSV):
                (root / name_).unlink(missing_ok=True)
        elif done and not resume and done != expected_ids:
            raise ScenarioError(OUT_FIELD, f"{root} already holds {len(done)} of this sweep's "
                                           f"{len(expected_ids)} points; pass --resume to finish it or "
                                           f"--overwrite to start again")
        if not overwrite:
            store.check_points(done)   # (what a resumed or finished sweep will read back)
        # what the sweep replaces: a folder there failed with 'Is a directory', after the points ran
        for path in [root / RESULTS_PARQUET, root / RESULTS_CSV] + ([*store.points_dir.glob("*.parquet")]
                                                                     if overwrite else []):
            if os.path.lexists(path) and (path.is_symlink() or not path.is_file()):
                raise ScenarioError(OUT_FIELD, f"{path} is not a file a sweep wrote; move it or choose another "
                                               "--out")
    if not create:
        return store
    try:
        store.points_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ScenarioError(OUT_FIELD, f"cannot create {store.points_dir}: {err.strerror or err}") from None
    if not has_manifest or overwrite:
        text = json.dumps({"name": name, "source": source, "created_unix_s": math.floor(time.time()),
                           "format": "draftsim-sweep-1"}, indent=2, sort_keys=True) + "\n"
        _atomic_write(root / MANIFEST, lambda tmp: tmp.write_text(text))
    store.remove_temporaries()
    return store
