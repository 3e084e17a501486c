"""Ctrl-C while a local-dask run's workers are starting: one line, exit 130, nothing written. A spawned
worker runs Python's start and multiprocessing's preparation before it can ignore Ctrl-C (which the executable
handles: simulator.console.interrupts.leave_to_spawner); a press then printed each starting worker's
KeyboardInterrupt traceback above the line. Here that window is made wide (a `sitecustomize` that sleeps in
spawned children only, before any of draftsim's code runs in them) and the press comes inside it, for real:
SIGINT to the process group, as a terminal sends it, 0.5 s after a worker process is launched."""
from __future__ import annotations

import sys

import pytest
import yaml

from paths import REPO, foreground_job
from sim_helpers import scenario

pytest.importorskip("distributed")

_PROBE = """
from simulator.launch import entry   # (first, as the executable's script)

if __name__ == "__main__":
    import multiprocessing.process as process, os, signal, sys
    start = process.BaseProcess.start

    def start_then_press(self):
        start(self)
        if self.name.startswith("Dask Worker"):   # launched, and still starting (sitecustomize)
            import threading
            threading.Timer(0.5, os.killpg, (os.getpgrp(), signal.SIGINT)).start()

    process.BaseProcess.start = start_then_press
    sys.argv = ["draftsim", "run", sys.argv[1], "--out", sys.argv[2], "--executor", "local-dask", "--workers", "1"]
    entry()
"""

_SLOW_START = """
import sys, time
if "--multiprocessing-fork" in sys.argv:   # a spawned child, before its main module
    time.sleep(2.0)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and signal masks")
def test_ctrl_c_while_dask_workers_start_is_one_line_and_130(tmp_path):
    (tmp_path / "probe.py").write_text(_PROBE)
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(_SLOW_START)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario(workload={"num_requests": 50})))
    with foreground_job([sys.executable, str(tmp_path / "probe.py"), str(tmp_path / "s.yaml"), str(tmp_path / "out")],
                        tmp_path, [str(tmp_path / "site"), str(REPO)]) as child:
        out, err = child.communicate(timeout=180)
    assert (child.returncode, err) == (130, "draftsim: interrupted\n"), (child.returncode, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["probe.py", "s.yaml", "site"]
