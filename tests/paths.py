"""Where the tests find the repository and their own data, wherever a test file sits below tests/, and how they
start a child process of this checkout (`repo_env`; `foreground_job`: started as a terminal starts a foreground job,
for tests that press Ctrl-C as a terminal sends it, SIGINT to the whole process group)."""
import os
import signal
import subprocess
from contextlib import contextmanager
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"


def repo_env(**extra: str) -> dict:
    """The environment for a child Python that must import this checkout's packages: PYTHONPATH = REPO (the
    editable install may point at another checkout, e.g. the main one when tests run in a worktree)."""
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


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
