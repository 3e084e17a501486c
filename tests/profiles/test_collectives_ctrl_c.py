"""Ctrl-C while `draftsim profile` times collectives: the rank processes (spawned, so they leave Ctrl-C to
the executable: simulator.console.interrupts.leave_to_spawner) are stopped with it. They were left running:
the executable printed its line, then waited at exit for ranks whose rendezvous file it had already removed,
for ever (seen with `draftsim profile --quick` and SIGINT to its process group, 2026-11-29)."""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from paths import REPO, foreground_job

pytest.importorskip("torch")

_PROBE = """
from simulator.launch import entry   # (first, as the executable's script)

def work():
    from profiles.profiler.collectives import time_collectives
    from profiles.profiler.timing import TimingConfig
    time_collectives([2], [4096], TimingConfig(warmup=0, min_reps=1, max_reps=10**9, target_s=3600.0))
    return 0

if __name__ == "__main__":
    from simulator.console.contract import guarded
    entry(lambda: guarded(work, "profile"))
"""


def _group(pgid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the live processes of process group `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append((int(entry.name), (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()))
        except (OSError, ValueError):
            continue
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process groups from /proc")
def test_ctrl_c_while_timing_collectives_stops_the_ranks_and_exits_130(tmp_path):
    (tmp_path / "probe.py").write_text(_PROBE)
    with foreground_job([sys.executable, str(tmp_path / "probe.py")], tmp_path, [str(REPO)]) as child:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and child.poll() is None:
            if sum("spawn_main" in cmd for _, cmd in _group(child.pid)) >= 2:
                break
            time.sleep(0.2)
        assert child.poll() is None, child.communicate()
        time.sleep(3.0)   # the ranks past their imports, inside the rendezvous or the timing loop
        os.killpg(child.pid, signal.SIGINT)   # a terminal's Ctrl-C: the whole foreground group
        out, err = child.communicate(timeout=60)   # (it hung here, for ever)
        assert (child.returncode, err) == (130, "draftsim: interrupted\n"), (child.returncode, err)
        time.sleep(0.5)
        assert _group(child.pid) == [] or all("resource_tracker" in cmd for _, cmd in _group(child.pid))
