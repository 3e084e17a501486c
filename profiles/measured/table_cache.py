"""A per-user cache of the measured tables' columns as NumPy files, so that a command which prices a few
steps (`draftsim estimate`, a short `run`) neither imports pyarrow nor decodes parquet again.

Exact: an entry holds the very arrays `tables.read` built (numbers with their dtype, text columns as codes
and their labels), keyed by the table's resolved path, size and modification time, the columns asked for
and `FORMAT`; a table replaced in place (a package upgrade) gets a new key. Where the cache cannot be read
or written (no home folder, a read-only disk, a damaged entry) the table is read from parquet as before:
the cache only ever saves time.

Location: `$DRAFTSIM_CACHE_DIR`, else `$XDG_CACHE_HOME/draftsim`, else `~/.cache/draftsim` (absolute
folders only: `cache_folder`); entries live in its `measured-tables/` folder (a few MB per GPU system; delete
it at will). `DRAFTSIM_CACHE_DIR=off` turns the cache off.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

FORMAT = 1   # bump when `Columns` or this file's layout changes
OFF = "off"


def cache_folder() -> Path | None:
    """The folder of the measured-table entries, or None when the cache is off or has no home.

    Only absolute folders are used: a relative `$DRAFTSIM_CACHE_DIR` (after `~` is expanded) turns the cache
    off, and a relative `$XDG_CACHE_HOME` is ignored as the XDG Base Directory specification asks. Either
    was read against the folder each command ran in, making a cache folder there (`~/x` in quotes made a
    folder named `~`). A home folder that does not exist is no home: the cache made it (a run as a user whose
    HOME is /nonexistent created /nonexistent/.cache/draftsim)."""
    root = os.environ.get("DRAFTSIM_CACHE_DIR")
    if root == OFF:
        return None
    if root:
        root = os.path.expanduser(root)
        if not os.path.isabs(root):
            return None
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        if xdg and os.path.isabs(xdg):
            root = os.path.join(xdg, "draftsim")
        else:
            home = os.path.expanduser("~")
            if not os.path.isabs(home) or not os.path.isdir(home):
                return None   # no home folder (HOME=/nonexistent, the system users' convention): none is made
            root = os.path.join(home, ".cache", "draftsim")
    return Path(root) / "measured-tables"


def entry_path(folder: Path, table: Path, columns: list[str]) -> Path | None:
    """The entry of `table`'s `columns` in `folder` (None when the table cannot be stat'ed)."""
    try:
        resolved = table.resolve()
        stat = resolved.stat()
    except OSError:
        return None
    key = json.dumps([FORMAT, str(resolved), stat.st_size, stat.st_mtime_ns, list(columns)])
    return folder / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".npz")


def cached_read(table: Path, columns: list[str], read: Callable, build: Callable):
    """`build(numbers, texts)` from the cache entry of (`table`, `columns`), else from `read(table, columns)`
    (which returns `(numbers, texts)`), writing the entry for next time."""
    folder = cache_folder()
    entry = entry_path(folder, table, columns) if folder is not None else None
    if entry is not None:
        loaded = _load(entry)
        if loaded is not None:
            return build(*loaded)
    numbers, texts = read(table, columns)
    if entry is not None:
        _store(entry, numbers, texts)
    return build(numbers, texts)


def _load(entry: Path) -> tuple[dict, dict] | None:
    try:
        with np.load(entry, allow_pickle=False) as data:
            header = json.loads(bytes(data["header"]).decode())
            numbers = {name: data[f"n{i}"] for i, name in enumerate(header["numbers"])}
            texts = {}
            for i, (name, labels) in enumerate(zip(header["texts"], header["labels"])):
                values = np.empty(len(labels), dtype=object)
                values[:] = labels
                texts[name] = (data[f"c{i}"], values)
    except Exception:   # absent, or damaged in any way (truncated zip, EOF, bad JSON): read parquet again
        return None
    return numbers, texts


def _store(entry: Path, numbers: dict, texts: dict) -> None:
    labels = [[_plain(v) for v in values] for _, values in texts.values()]
    try:
        header = json.dumps({"numbers": list(numbers), "texts": list(texts), "labels": labels}).encode()
    except (TypeError, ValueError):   # a label JSON cannot hold: leave this table uncached
        return
    arrays = {"header": np.frombuffer(header, dtype=np.uint8)}
    arrays.update({f"n{i}": values for i, values in enumerate(numbers.values())})
    arrays.update({f"c{i}": codes for i, (codes, _) in enumerate(texts.values())})
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as out:
                np.savez(out, **arrays)
            os.replace(tmp, entry)   # atomic: a concurrent reader sees the old entry or the whole new one
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass   # a read-only or full disk: the next command reads parquet again


def _plain(value):
    """A label as JSON keeps it (text, None, int, float)."""
    return value.item() if isinstance(value, np.generic) else value
