"""Progress of a long step on stderr, whether or not stderr is a terminal.

On a terminal: a tqdm bar. Otherwise (a log file, CI, a pipe): one plain line every `interval_s`
seconds, e.g. `draftsim: simulating: 1,200/2,000 req (60 %), 12.0 s`, from a background thread so that a
single long step without updates still says it is alive, and a closing line when at least one progress
line was printed. `quiet` prints nothing. Writes go to the stream given (stderr by default) so stdout
stays clean for results. Each update and the end of each step are where a Ctrl-C whose KeyboardInterrupt
was swallowed or deferred ends the command (simulator.console.interrupts).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

from simulator.console.interrupts import check

INTERVAL_S = 10.0  # seconds between two progress lines when stderr is not a terminal
UNSIZED_TERMINAL = (80, 24)   # columns and rows of the bar on a terminal that reports no size


def _terminal_columns(stream: TextIO) -> int:
    """The columns the terminal behind `stream` reports (0 when it reports none, or is no terminal)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def _count(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.1f}"


class Heartbeat:
    """`with Heartbeat(say, interval_s):` calls `say()` every `interval_s` seconds from a background thread until
    the block ends: for a command whose own progress lines come only as parts finish (a plan's DES
    confirmations, each of which may run for minutes), so that a long part still says it is alive. `say` None,
    or an interval of 0 (lines at every part, which the caller prints itself; a thread would print without a
    pause): nothing runs. `Progress` ticks off a terminal with one."""

    def __init__(self, say, interval_s: float = INTERVAL_S, name: str = "heartbeat"):
        self.say, self.interval_s, self.name = say, interval_s, name
        self._stop = threading.Event()
        self._ticker = None

    def _tick(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.say()

    def __enter__(self) -> "Heartbeat":
        if self.say is not None and self.interval_s > 0:
            self._ticker = threading.Thread(target=self._tick, name=self.name, daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None


class Progress:
    """`with Progress("simulating", total=n, unit="req") as bar: bar.update(k)` — `total` may be None."""

    def __init__(self, desc: str, total: float | None = None, unit: str = "it", *, quiet: bool = False,
                 stream: TextIO | None = None, interval_s: float = INTERVAL_S, tty: bool | None = None):
        self.desc, self.total, self.unit = desc, total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.interval_s = interval_s
        self.done = 0.0
        self._bar = None
        self._printed = False
        self._t0 = time.monotonic()
        self._ticker = None   # (off a terminal: a Heartbeat printing a line every interval_s)
        if quiet or self.stream is None:   # (None: stderr closed, `2>&-`; it asked None for isatty, exit 1)
            return
        is_tty = self.stream.isatty() if tty is None else tty
        if is_tty:
            from tqdm import tqdm
            # A terminal that reports no size (0 x 0: `script`, `docker run -t` before a resize, some CI
            # runners' pseudo-terminals) made tqdm's dynamic width draw nothing: no progress at all.
            size = {} if _terminal_columns(self.stream) else {"ncols": UNSIZED_TERMINAL[0], "nrows": UNSIZED_TERMINAL[1]}
            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.stream, leave=False,
                             dynamic_ncols=not size, **size)
        else:
            self._ticker = Heartbeat(self._line, interval_s, f"progress {desc}").__enter__()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close(finished=exc[0] is None)
        if exc[0] is None:
            check()   # a Ctrl-C swallowed during the step ends the command here, before the next step

    def set_total(self, total: float | None) -> None:
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def update(self, n: float = 1) -> None:
        check()   # (simulator.console.interrupts)
        self.done += n
        if self._bar is not None:
            self._bar.update(n)

    def _line(self, suffix: str = "") -> None:
        if self.total:
            count = f"{_count(self.done)}/{_count(self.total)} {self.unit} ({100.0 * self.done / self.total:.0f} %), "
        elif self.done:
            count = f"{_count(self.done)} {self.unit}, "
        else:  # a step without countable parts: say it is still running
            count = ""
        print(f"draftsim: {self.desc}: {count}{time.monotonic() - self._t0:.1f} s{suffix}", file=self.stream,
              flush=True)
        self._printed = True

    def close(self, finished: bool = True) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._ticker is not None:
            self._ticker.__exit__(None, None, None)
            self._ticker = None
            if self._printed and finished:
                self._line(", done")

