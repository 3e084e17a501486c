"""simulator.results.named_files: a command's named files in a folder it shares (`draftsim reproduce`, the
`python -m` scripts' `--out`) — a file of one of its names that it did not write is never replaced, the files and
the manifest land together or not at all."""
from __future__ import annotations

import json
import os

import pytest

from contract import snapshot
from simulator.errors import ScenarioError
from simulator.results.named_files import NamedFiles, first_line

NAMES = ("demo.csv", "demo.png")
FILES = NamedFiles("demo", "python3 -m demo", first_line("demo.csv", "a,b"))


def _write(staged, text="a,b\n1,2\n"):
    (staged / "demo.csv").write_text(text)
    (staged / "demo.png").write_bytes(b"png")


def test_the_files_land_with_the_manifest_beside_what_was_there(tmp_path):
    (tmp_path / "notes.txt").write_text("the user's")
    out = tmp_path / "new" / "deeper"
    for folder in (tmp_path, out):   # (a folder that is no draftsim output, and a missing one)
        for _ in range(2):           # (a rerun replaces its own files)
            with FILES.staged(folder, NAMES) as staged:
                _write(staged)
            assert json.loads((folder / ".draftsim-demo.json").read_text())["files"] == sorted(NAMES)
            assert (folder / "demo.csv").read_text() == "a,b\n1,2\n"
    assert (tmp_path / "notes.txt").read_text() == "the user's"
    assert not [p for p in tmp_path.rglob(".draftsim-tmp-*")]


def test_a_users_file_of_one_of_the_names_is_refused_and_kept(tmp_path):
    (tmp_path / "demo.png").write_bytes(b"my picture")
    before = snapshot(tmp_path)
    with pytest.raises(ScenarioError, match="demo.png exists and was not written by python3 -m demo; move it"):
        FILES.check(tmp_path, NAMES)
    with pytest.raises(ScenarioError, match="--out: "):
        with FILES.staged(tmp_path, NAMES) as staged:
            _write(staged)
    assert snapshot(tmp_path) == before


def test_a_file_put_there_during_the_work_is_refused_before_anything_moves(tmp_path):
    before = snapshot(tmp_path)
    with pytest.raises(ScenarioError, match="demo.csv exists and was not written"):
        with FILES.staged(tmp_path, NAMES) as staged:
            _write(staged)
            (tmp_path / "demo.csv").write_text("the user's, written meanwhile")
    assert set(snapshot(tmp_path)) == set(before) | {"demo.csv"}   # (no manifest, no staging folder left)
    assert (tmp_path / "demo.csv").read_text() == "the user's, written meanwhile"


def test_a_failure_moves_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with FILES.staged(tmp_path / "out", NAMES) as staged:
            _write(staged)
            raise RuntimeError("the work failed")
    assert snapshot(tmp_path) == {}


def test_an_output_from_before_manifests_is_told_from_a_users_file_by_its_first_line(tmp_path):
    legacy, users = tmp_path / "legacy", tmp_path / "users"
    for folder, head in ((legacy, "a,b"), (users, "name,notes")):
        folder.mkdir()
        _write(folder, f"{head}\n1,2\n")
    with FILES.staged(legacy, NAMES) as staged:
        _write(staged, "a,b\n3,4\n")
    assert (legacy / "demo.csv").read_text() == "a,b\n3,4\n"
    with pytest.raises(ScenarioError, match="users/demo.csv exists and was not written"):
        FILES.check(users, NAMES)


def test_a_link_or_a_folder_of_one_of_the_names_is_refused(tmp_path):
    (tmp_path / "demo.csv").mkdir()
    with pytest.raises(ScenarioError, match="demo.csv exists and was not written"):
        FILES.check(tmp_path, NAMES)
    (tmp_path / ".draftsim-demo.json").write_text(json.dumps({"files": list(NAMES)}))
    with pytest.raises(ScenarioError, match="demo.csv is not a file; python3 -m demo writes a file there"):
        FILES.check(tmp_path, NAMES)
    os.rmdir(tmp_path / "demo.csv")
    os.symlink(tmp_path / "elsewhere", tmp_path / "demo.csv")
    with pytest.raises(ScenarioError, match="demo.csv is a symbolic link"):
        FILES.check(tmp_path, NAMES)
