"""Worker processes die with the process that started them.

A sweep's or plan's pool workers (simulator.distributed.executors) and a run's replica workers
(simulator.core.parallel) are children of the `draftsim` process. When that process ends normally it
stops them; when it is killed outright (`kill -9`, the OOM killer) nothing runs in it any more, and
without this each worker kept simulating its point for minutes, holding hundreds of MB.

On Linux a child asks the kernel for a parent-death signal: `prctl(PR_SET_PDEATHSIG, SIGTERM)` (man 2
prctl: "the signal that the calling process will get when its parent dies"), called through ctypes on
libc; SIGTERM's default action ends the worker at once. The kernel sends it when the *thread* that forked
the child exits; the executors fork from the main thread, which lives as long as the process. If the
parent died before the call, the child finds itself re-parented (`os.getppid()` changed) and exits.
Elsewhere (macOS, Windows) this is a no-op: the workers end when they next talk to their parent.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

PR_SET_PDEATHSIG = 1   # <linux/prctl.h>


def die_with_parent(parent_pid: int) -> bool:
    """In a child process: get SIGTERM when the parent dies; exit now if it already has. Returns whether
    the kernel took the request (False off Linux or without libc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        armed = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent_pid:   # the parent is already gone
        os._exit(1)
    return armed
