"""simulator.console: progress on stderr with or without a terminal; aligned tables."""
from __future__ import annotations

import io
import re
import time

from simulator.console.progress import Progress
from simulator.console.table import format_columns


def test_progress_without_a_terminal_prints_periodic_lines_and_a_closing_one():
    buf = io.StringIO()
    with Progress("simulating", total=10, unit="req", stream=buf, interval_s=0.05, tty=False) as bar:
        for _ in range(10):
            time.sleep(0.02)
            bar.update()
    lines = buf.getvalue().splitlines()
    assert len(lines) >= 2
    assert all(re.fullmatch(r"draftsim: simulating: \d+/10 req \(\d+ %\), \d+\.\d s(, done)?", l) for l in lines), lines
    assert lines[-1].startswith("draftsim: simulating: 10/10 req (100 %)") and lines[-1].endswith(", done")


def test_progress_of_a_single_long_step_says_it_is_alive():
    """No update at all (one long step, e.g. a plan's DES confirmations): the ticker still prints."""
    buf = io.StringIO()
    with Progress("planning", stream=buf, interval_s=0.05, tty=False):
        time.sleep(0.2)
    lines = buf.getvalue().splitlines()
    assert len(lines) >= 2 and re.fullmatch(r"draftsim: planning: \d+\.\d s", lines[0]), lines


def test_progress_is_silent_when_quiet_or_fast_and_no_closing_line_after_an_error():
    for kwargs in ({"quiet": True, "interval_s": 0.01}, {"interval_s": 60.0}):
        buf = io.StringIO()
        with Progress("x", total=3, stream=buf, tty=False, **kwargs) as bar:
            time.sleep(0.05)
            bar.update(3)
        assert buf.getvalue() == ""
    buf = io.StringIO()
    try:
        with Progress("x", total=3, stream=buf, tty=False, interval_s=0.02):
            time.sleep(0.06)
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert "done" not in buf.getvalue()


def test_progress_on_a_terminal_is_a_tqdm_bar():
    buf = io.StringIO()
    with Progress("x", total=4, unit="op", stream=buf, tty=True) as bar:
        bar.update(4)
    assert "/4 [" in buf.getvalue() and "op/s" in buf.getvalue() and "\r" in buf.getvalue()  # a redrawn bar


def test_progress_on_a_terminal_that_reports_no_size_still_draws_its_bar():
    """A pseudo-terminal of 0 x 0 (`script -qc`, `docker run -t` before a resize): tqdm's dynamic width drew
    nothing there, so a 200k-request run showed no progress at all on that terminal."""
    import os
    import pty

    master, slave = pty.openpty()
    try:
        assert os.get_terminal_size(slave).columns == 0   # (a new pseudo-terminal has no size)
        with os.fdopen(os.dup(slave), "w") as stream:
            with Progress("simulating", total=4, unit="req", stream=stream) as bar:
                bar.update(4)
        os.set_blocking(master, False)
        try:
            drawn = os.read(master, 65536).decode()
        except BlockingIOError:   # nothing was drawn
            drawn = ""
    finally:
        os.close(master)
        os.close(slave)
    assert "simulating:" in drawn and "/4 [" in drawn


def test_columns_widen_with_their_widest_cell():
    text = format_columns(["name", "a", "b"], [["x", "1.00", "2"], ["long name", "123456789.00", "-"]])
    lines = text.splitlines()
    assert [len(l) for l in lines] == [len(lines[0])] * 3
    assert lines[2] == "long name  123456789.00  -"
    assert lines[1].startswith("x ") and lines[1].endswith("1.00  2")
