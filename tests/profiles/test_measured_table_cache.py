"""The per-user cache of decoded measured tables (profiles.measured.table_cache): exact (every column of
every table the installed package holds, read through the cache, equals the parquet read: values, dtypes,
text labels), keyed by the table file (a changed file is read again), and never in the way (a damaged
entry, an unwritable folder or `DRAFTSIM_CACHE_DIR=off` read parquet as before)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from profiles.measured import source, table_cache, tables

pytestmark = pytest.mark.skipif(source.data_root() is None, reason="aiconfigurator-core is not installed")


def _paths() -> list[Path]:
    found = set()
    for hardware_id in sorted(source.SYSTEMS):
        for framework, versions in source.available(hardware_id).items():
            for version in versions:
                src = source.resolve(hardware_id, framework, version)
                found.update(p for p in (src.path(f) for f in source.FAMILY_FILES) if p is not None)
    return sorted(found)


def _same(a: tables.Columns, b: tables.Columns) -> None:
    assert a.columns == b.columns
    for name in a.columns:
        x, y = a[name], b[name]
        assert x.dtype == y.dtype, name
        if x.dtype == object:
            assert x.tolist() == y.tolist() and [type(v) for v in x.tolist()] == [type(v) for v in y.tolist()], name
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)


def _all_columns(path: Path) -> list[str]:
    import pyarrow.parquet as pq
    return list(pq.read_schema(path).names)


def test_every_table_reads_back_exactly(tmp_path, monkeypatch):
    monkeypatch.setenv("DRAFTSIM_CACHE_DIR", str(tmp_path))
    paths = _paths()
    assert len(paths) >= 20   # (the package holds tables for ten GPU systems)
    for path in paths:
        columns = _all_columns(path) + ["no_such_column"]
        fresh = tables.Columns(*tables._read_parquet(path, columns))
        first = tables.read(path, columns)     # parquet, entry written
        second = tables.read(path, columns)    # from the entry
        _same(fresh, first)
        _same(fresh, second)
    assert len(list((tmp_path / "measured-tables").glob("*.npz"))) == len(paths)


def test_an_entry_is_used_and_a_changed_table_is_read_again(tmp_path, monkeypatch):
    monkeypatch.setenv("DRAFTSIM_CACHE_DIR", str(tmp_path / "cache"))
    original = _paths()[0]
    table = tmp_path / "gemm_perf.parquet"
    table.write_bytes(original.read_bytes())
    columns = _all_columns(table)
    reads = []
    real = tables._read_parquet
    monkeypatch.setattr(tables, "_read_parquet", lambda p, c: reads.append(p) or real(p, c))
    tables.read(table, columns)
    tables.read(table, columns)
    assert len(reads) == 1                       # the second came from the cache
    os.utime(table, ns=(table.stat().st_atime_ns, table.stat().st_mtime_ns + 10**9))   # replaced in place
    tables.read(table, columns)
    assert len(reads) == 2
    tables.read(table, columns[:2])              # other columns: another entry
    assert len(reads) == 3


def test_a_damaged_entry_or_an_unwritable_folder_reads_parquet(tmp_path, monkeypatch):
    path = _paths()[0]
    columns = _all_columns(path)
    fresh = tables.Columns(*tables._read_parquet(path, columns))
    monkeypatch.setenv("DRAFTSIM_CACHE_DIR", str(tmp_path))
    tables.read(path, columns)
    entry = table_cache.entry_path(tmp_path / "measured-tables", path, columns)
    for damage in (b"", b"not a zip file", entry.read_bytes()[: entry.stat().st_size // 2]):
        entry.write_bytes(damage)
        _same(fresh, tables.read(path, columns))   # read from parquet and written again
        _same(fresh, tables.read(path, columns))
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("DRAFTSIM_CACHE_DIR", str(blocked))   # its measured-tables/ cannot be made
    _same(fresh, tables.read(path, columns))
    monkeypatch.setenv("DRAFTSIM_CACHE_DIR", table_cache.OFF)
    assert table_cache.cache_folder() is None
    _same(fresh, tables.read(path, columns))


def test_the_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("DRAFTSIM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert table_cache.cache_folder() == tmp_path / "xdg" / "draftsim" / "measured-tables"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    assert table_cache.cache_folder() == tmp_path / "home" / ".cache" / "draftsim" / "measured-tables"


def test_a_home_that_does_not_exist_gets_no_cache(monkeypatch, tmp_path):
    """HOME=/nonexistent (system users' convention): reading a table made /nonexistent/.cache/draftsim/..."""
    monkeypatch.delenv("DRAFTSIM_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "nonexistent"))
    assert table_cache.cache_folder() is None
    path = _paths()[0]
    tables.read(path, _all_columns(path)[:2])
    assert not (tmp_path / "nonexistent").exists()


def test_only_absolute_folders_are_used(monkeypatch, tmp_path):
    """A relative folder was read against wherever a command ran, making a cache folder there (a quoted
    `~/x` made a folder named `~`): `~` is expanded, a relative DRAFTSIM_CACHE_DIR turns the cache off and a
    relative XDG_CACHE_HOME is ignored (XDG Base Directory specification)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("DRAFTSIM_CACHE_DIR", "~/x")
    assert table_cache.cache_folder() == tmp_path / "home" / "x" / "measured-tables"
    monkeypatch.setenv("DRAFTSIM_CACHE_DIR", "relative/dir")
    assert table_cache.cache_folder() is None
    monkeypatch.delenv("DRAFTSIM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    assert table_cache.cache_folder() == tmp_path / "home" / ".cache" / "draftsim" / "measured-tables"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DRAFTSIM_CACHE_DIR", "relative/dir")
    path = _paths()[0]
    tables.read(path, _all_columns(path)[:2])
    assert not (tmp_path / "relative").exists()
