"""Workers die with their parent (simulator.console.lifetime): after `kill -9` of a `draftsim sweep`, or of
any process whose pool uses the sweep executors, no pool worker is left running (issue 29: two ~300 MB
workers stayed alive for minutes)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from paths import REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")


def _children(pid: int) -> set[int]:
    kids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                kids.add(int(entry.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _kill_parent_and_watch(cmd: list[str], cwd: Path, want: int, timeout_s: float = 120) -> list[int]:
    """Start `cmd`, wait for `want` child processes, kill -9 the parent; the children still alive 10 s
    later."""
    child = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + timeout_s
        while len(workers) < want and time.monotonic() < deadline and child.poll() is None:
            workers = {p for p in _children(child.pid) if _alive(p)}
            time.sleep(0.1)
        assert len(workers) >= want, f"the pool did not start ({workers})"
        time.sleep(1.0)   # the workers are busy now
        child.send_signal(signal.SIGKILL)
        child.wait()
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        return [p for p in workers if _alive(p)]
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)   # clean up whatever is left of this test's own group
        except ProcessLookupError:
            pass


def test_pool_workers_die_when_their_parent_is_killed(tmp_path):
    script = textwrap.dedent("""
        import time
        from simulator.distributed.executors import make_executor
        with make_executor("local", 2) as pool:
            for _ in pool.imap_unordered(time.sleep, [60] * 4):
                pass
    """)
    assert _kill_parent_and_watch([sys.executable, "-c", script], tmp_path, want=2) == []


@pytest.mark.slow
def test_a_killed_sweep_leaves_no_workers(tmp_path):
    sweep = {"name": "k", "scenario": str(REPO / "scenarios" / "quickstart.yaml"),
             "set": ["workload.num_requests=200000", "outputs.plots=false"],
             "grid": {"workload.arrival.qps": [4, 8, 12, 16]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    cmd = [sys.executable, "-m", "simulator.cli", "sweep", str(path), "--out", str(tmp_path / "store"),
           "--workers", "2", "--quiet"]
    assert _kill_parent_and_watch(cmd, tmp_path, want=2) == []
