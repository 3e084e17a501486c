"""Ctrl-C whenever it comes (simulator.console.interrupts): one line `draftsim: interrupted`, exit 130,
nothing written. Each way Python itself loses or disfigures a KeyboardInterrupt is provoked for real, with
`signal.raise_signal` at the exact spot (in the handler's own process: a child interpreter that runs
the executable's `entry`), and each failed before the module existed: a press swallowed by a weakref
callback (exit 0, "Exception ignored in"), one inside a `__set_name__` (RuntimeError, exit 1), one
inside `exec`-built code under `python -m` (exit −2, after the line)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from paths import REPO
from simulator.console import interrupts
from simulator.console.contract import guarded

_PROBE = """
import signal, sys, weakref
from pathlib import Path
from simulator.console.contract import guarded
from simulator.launch import entry
from simulator.console.progress import Progress

OUT = Path(sys.argv[1])

def press_in_a_callback():   # a weakref callback's exception is only printed ("Exception ignored in")
    class Thing:
        pass
    thing = Thing()
    ref = weakref.ref(thing, lambda _: signal.raise_signal(signal.SIGINT))
    del thing
    return ref

def press_in_set_name():   # Python 3.11 wraps an exception of __set_name__ in a RuntimeError
    class Field:
        def __set_name__(self, owner, name):
            signal.raise_signal(signal.SIGINT)
    class Owner:
        field = Field()

def press_in_exec():   # dataclasses and namedtuple build methods with exec of a string
    exec("import signal; signal.raise_signal(signal.SIGINT)")

def work():
    with Progress("working", quiet=True):
        {case}()
    OUT.write_text("written after the press")   # must not happen
    return 0

entry(lambda: guarded(work, "probe"))
"""


def _probe(case: str, tmp_path: Path, as_module: bool = False) -> tuple[subprocess.CompletedProcess, Path]:
    (tmp_path / "ctrl_c_probe.py").write_text(_PROBE.replace("{case}", case))
    out = tmp_path / "out.txt"
    argv = ["-m", "ctrl_c_probe"] if as_module else [str(tmp_path / "ctrl_c_probe.py")]
    done = subprocess.run([sys.executable, *argv, str(out)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])},
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return done, out


@pytest.mark.parametrize("case", ["press_in_a_callback", "press_in_set_name", "press_in_exec"])
@pytest.mark.parametrize("as_module", [False, True], ids=["script", "python -m"])
def test_a_press_python_loses_or_disfigures_is_one_line_and_130(case, as_module, tmp_path):
    done, out = _probe(case, tmp_path, as_module)
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr == "draftsim: interrupted\n"
    assert not out.exists()


def test_a_press_while_loading_is_one_line_and_130(tmp_path):
    """Before `main`'s contract holds (draftsim's own modules still importing): the executable's guard."""
    code = ("import signal; from simulator.launch import entry\n"
            "def main():\n    signal.raise_signal(signal.SIGINT)\n    import simulator.cli\nentry(main)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)},
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert (done.returncode, done.stderr) == (130, "draftsim: interrupted\n")


def test_python_m_simulator_cli_is_the_executable(tmp_path):
    """`python -m simulator.cli` runs under the same guard as `draftsim` (simulator.launch)."""
    done = subprocess.run([sys.executable, "-m", "simulator.cli", "catalog", "hardware"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "h100" in done.stdout.lower(), done.stderr


_SPAWNER = """
import multiprocessing as mp, signal
if __name__ == "__main__":   # Ctrl-C as a terminal's command has it (a CI job started in the background inherits
    signal.signal(signal.SIGINT, signal.default_int_handler)   # SIGINT ignored, and so did this script)
import simulator.launch   # as the `draftsim` script's first line does

def report(queue):
    queue.put(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")   # (Dask's LocalCluster starts its workers so)
    queue = ctx.Queue()
    worker = ctx.Process(target=report, args=(queue,))
    worker.start()
    print(queue.get(timeout=60), signal.getsignal(signal.SIGINT) == signal.SIG_IGN)
    worker.join()
"""


def test_a_worker_spawned_from_the_executable_leaves_ctrl_c_to_it(tmp_path):
    """A spawned worker runs the executable's main module again (as __mp_main__): there it ignores SIGINT,
    which the executable handles (a press while Dask's workers were importing printed their tracebacks);
    the executable itself does not."""
    (tmp_path / "spawner.py").write_text(_SPAWNER)
    done = subprocess.run([sys.executable, str(tmp_path / "spawner.py")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["True", "False"], done.stderr


# ---- the rules, in this process (the handler is not installed here: `watch` is the executable's) ----------
@pytest.fixture
def pressed(monkeypatch):
    monkeypatch.setattr(interrupts, "_pending", True)


def test_the_handler_records_and_raises_but_not_inside_string_code(monkeypatch):
    monkeypatch.setattr(interrupts, "_pending", False)
    with pytest.raises(KeyboardInterrupt):
        interrupts._on_sigint(signal.SIGINT, sys._getframe())
    assert interrupts.pending()
    monkeypatch.setattr(interrupts, "_pending", False)
    scope: dict = {}
    exec("import sys; frame = sys._getframe()", scope)
    interrupts._on_sigint(signal.SIGINT, scope["frame"])   # deferred: no exception
    assert interrupts.pending()
    with pytest.raises(KeyboardInterrupt):
        interrupts.check()


def test_check_and_after_ctrl_c_without_a_press(monkeypatch):
    monkeypatch.setattr(interrupts, "_pending", False)
    interrupts.check()   # nothing pressed: nothing raised
    assert not interrupts.after_ctrl_c(ValueError("a bug"))
    wrapped = RuntimeError("Error calling __set_name__")
    wrapped.__cause__ = KeyboardInterrupt()
    assert interrupts.after_ctrl_c(wrapped)
    during = OSError("pipe closed")
    during.__context__ = KeyboardInterrupt()
    assert interrupts.after_ctrl_c(during)
    looped = ValueError("a")
    looped.__context__ = other = ValueError("b")
    other.__context__ = looped   # a cycle ends the walk
    assert not interrupts.after_ctrl_c(looped)


def test_after_a_press_any_failure_is_the_interruption_but_exit_is_exit(pressed):
    assert interrupts.after_ctrl_c(EOFError("a worker's pipe closed"))
    assert not interrupts.after_ctrl_c(SystemExit(2))


def test_a_swallowed_interrupt_is_not_printed_other_unraisables_are(pressed, monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "__unraisablehook__", seen.append)
    interrupts._unraisable(types.SimpleNamespace(exc_value=KeyboardInterrupt()))
    assert seen == []
    other = types.SimpleNamespace(exc_value=ValueError("in a __del__"))
    interrupts._unraisable(other)
    assert seen == [other]


def test_guarded_reports_a_press_the_work_swallowed_once(pressed, capsys):
    assert guarded(lambda: 0, "probe") == 130
    assert guarded(lambda: guarded(lambda: 0)) == 130   # nested: the inner one says it
    assert capsys.readouterr().err == "draftsim: interrupted\n" * 2


def test_guarded_keeps_bugs_and_bad_input_as_they_were(monkeypatch, capsys):
    from simulator.errors import ScenarioError
    monkeypatch.setattr(interrupts, "_pending", False)

    def bad_input():
        raise ScenarioError("workload.qps", "must be > 0")

    assert guarded(bad_input, "run") == 2
    assert capsys.readouterr().err.count("\n") == 1

    def bug():
        raise ZeroDivisionError("a bug keeps its traceback")

    with pytest.raises(ZeroDivisionError):
        guarded(bug, "run")
