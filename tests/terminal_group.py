"""A child started as a terminal starts a foreground job, for tests that press Ctrl-C as a terminal sends it
(SIGINT to the whole process group)."""
from __future__ import annotations

import os
import signal
import subprocess
from contextlib import contextmanager


@contextmanager
def foreground_job(argv: list[str], cwd, pythonpath: list[str]):
    """`argv` in a session of its own (a process group its Ctrl-C reaches, whatever it spawns), SIGINT at its
    default as a shell leaves it, stdout and stderr piped as text, PYTHONPATH = `pythonpath`. On leaving, whatever
    is left of the group is killed and the child reaped."""
    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)},
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        yield child
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()
