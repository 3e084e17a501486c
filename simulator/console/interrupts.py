"""Ctrl-C for the `draftsim` executable: every press ends in one line and exit 130, whenever it comes.

Python's own SIGINT handler raises KeyboardInterrupt wherever the main thread is, and three places lose it
(each seen by sending SIGINT 0.02–0.7 s into `draftsim run`, about one try in eight):

- inside a callback whose exceptions Python only prints — a weakref callback of the import system, the
  logging module's after-fork hook: "Exception ignored in: ..." and the run went on to exit 0;
- inside code run by `exec`/`eval` of a string (dataclasses and namedtuple build their methods so): the
  interpreter then marks the interrupt as unhandled for good, and `python -m simulator.cli` died by SIGINT
  (exit −2) after printing its line and returning 130;
- inside a `__set_name__` (a dataclass field): Python 3.11 wraps it in a RuntimeError, a traceback, exit 1.

So `watch()` (the executable calls it first thing; the Python API and tests never do) installs a handler
that records the press (`pending()`) before it raises, and does not raise inside code compiled from a string
(`<string>`): the next checkpoint does (`check()`: each progress update and the end of each phase,
simulator.console.progress). Python's message for an interrupt it swallowed is not printed
(`sys.unraisablehook`), and an exception that comes after a press, or from one, is the interruption
(`after_ctrl_c`): simulator.console.contract reports it, and a command that returns normally after a
press it never saw reports it too. Worker processes are forked with the signals `held` back and ignore
Ctrl-C before they let them through (`leave_to_parent`): their parent stops them, and a child stopped
mid-start no longer printed "Process ForkProcess-1:" above the line.

Only stdlib here, loaded before anything else of draftsim (simulator/launch.py, ~3 ms after the
interpreter's own start). A press during that start (the first ~30 ms: site, runpy) still gets Python's
traceback: no code of draftsim runs yet.
"""
from __future__ import annotations

import signal
import sys

_STRING_CODE = "<string>"   # co_filename of code compiled from a string by exec/eval (compile's default)
_pending = False
_watched = False   # watch() was called: this process is the executable


def _on_sigint(signum, frame) -> None:
    global _pending
    _pending = True
    if frame is not None and frame.f_code.co_filename == _STRING_CODE:
        return   # raised at the next check() instead (module docstring)
    raise KeyboardInterrupt


def _unraisable(args) -> None:
    if _pending and isinstance(args.exc_value, KeyboardInterrupt):
        return   # a press that a callback swallowed: check() raises it again
    sys.__unraisablehook__(args)


def watch() -> None:
    """Install the handler (main thread only: signal handlers are set there)."""
    global _watched
    _watched = True
    signal.signal(signal.SIGINT, _on_sigint)
    sys.unraisablehook = _unraisable


def pending() -> bool:
    """Ctrl-C was pressed (since `watch`)."""
    return _pending


def check() -> None:
    """Raise KeyboardInterrupt if Ctrl-C was pressed: a press whose exception was swallowed or deferred
    ends the command here."""
    if _pending:
        raise KeyboardInterrupt


def after_ctrl_c(exc: BaseException) -> bool:
    """`exc` is the interruption: a KeyboardInterrupt, an exception raised from one or while one was handled
    (its cause or context), or any failure after Ctrl-C was pressed (a worker pool broken by the same
    signal, a pipe closed by a child that stopped)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return _pending and not isinstance(exc, SystemExit)


class held:
    """`with held():` SIGINT and SIGTERM (or the `signals` given) are held back during the block (blocked,
    delivered when it ends): a few renames that must complete together, a fork whose child must not be
    stopped before it ignores them, a Dask cluster that must be whole to be closed. In a thread other than
    the main one, or without signal masks, nothing is held."""

    def __init__(self, *signals: int):
        self.signals = set(signals) or {signal.SIGINT, signal.SIGTERM}

    def __enter__(self) -> None:
        import threading   # (here: this module is imported before anything else, it stays light)
        self._old = None
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask"):
            self._old = signal.pthread_sigmask(signal.SIG_BLOCK, self.signals)

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old)


def leave_to_parent() -> None:
    """In a worker process forked under `held`: Ctrl-C is its parent's to handle (the parent stops its
    workers; one line, not one per worker), so SIGINT is ignored, then the held signals are let through."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def spawn_with_ctrl_c_held() -> None:
    """Processes that multiprocessing spawns from now on (a local-dask run's workers, `draftsim profile`'s
    collective ranks) start with SIGINT blocked, as the signal mask of the thread that launches
    them carries over the fork and the exec. Only in the executable (after `watch`), whose spawned children run
    `leave_to_spawner` first (a script of the Python API's user would spawn children that never unblock it). A spawned child runs Python's start and multiprocessing's
    preparation (runpy) before `leave_to_spawner`, its first line of draftsim, can ignore Ctrl-C: a press in
    that second or so printed each starting worker's KeyboardInterrupt traceback above the one line (seen with
    SIGINT to the process group 0.5 s into a local-dask run). Blocked, the press waits in the child until
    `leave_to_spawner` ignores it. Dask launches its workers from threads of its own, not the main thread, so
    `held` (main thread only) could not do this. Imported only by the commands that spawn (multiprocessing's
    spawn module costs ~9 ms of start-up)."""
    if not _watched or not hasattr(signal, "pthread_sigmask"):
        return
    from multiprocessing import popen_spawn_posix

    launch = popen_spawn_posix.Popen._launch
    if getattr(launch, "ctrl_c_held", False):
        return

    def launch_held(self, process_obj):
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return launch(self, process_obj)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    launch_held.ctrl_c_held = True
    popen_spawn_posix.Popen._launch = launch_held


def leave_to_spawner() -> None:
    """In a process that multiprocessing spawned from the executable (a Dask worker of a `local-dask` run):
    it runs the executable's main module again, as `__mp_main__`, before anything else, and calls this
    there. Ctrl-C is the executable's to handle (it closes the cluster), so SIGINT is ignored: a press
    while the workers were still importing printed each one's traceback above the one line."""
    # (the module running as __mp_main__, or made so: in the executable, that key holds its __main__)
    if getattr(sys.modules.get("__mp_main__"), "__name__", None) == "__mp_main__":
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # (a press held back since its launch is dropped here)
        if hasattr(signal, "pthread_sigmask"):   # (blocked by spawn_with_ctrl_c_held)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
