"""A profile's fingerprint names the commit its code came from and whether the files differ from it: the
H100 runs of 2026-11-27 ran on a copy of the working tree whose git metadata named the session's first
commit, and only `git_dirty` would have said the files were newer."""
from __future__ import annotations

import subprocess

from profiles.profiler.table import git_commit, git_dirty


def test_fingerprints_say_whether_the_files_differ_from_the_commit_they_name(tmp_path):
    assert git_dirty(tmp_path) is None and git_commit(tmp_path) == "unknown"   # not a repository
    repo = tmp_path / "repo"
    repo.mkdir()
    run = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (repo / "a.txt").write_text("one\n")
    run("add", "a.txt")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    assert git_dirty(repo) is False and len(git_commit(repo)) == 40
    (repo / "b.txt").write_text("untracked files do not count\n")
    assert git_dirty(repo) is False
    (repo / "a.txt").write_text("two\n")
    assert git_dirty(repo) is True
