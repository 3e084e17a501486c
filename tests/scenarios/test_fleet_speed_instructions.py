"""`scenarios.benchmarks.fleet_speed --instructions`: the instruction count it reads from valgrind's
callgrind is the command's (more work, more instructions; the same work, the same count within noise of
the interpreter's start-up)."""
from __future__ import annotations

import shutil
import sys

import pytest

from scenarios.benchmarks.fleet_speed import _instructions

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")


def test_instruction_counts_follow_the_work():
    idle = _instructions([sys.executable, "-c", "pass"])
    busy = _instructions([sys.executable, "-c", "sum(range(3_000_000))"])
    again = _instructions([sys.executable, "-c", "pass"])
    assert idle > 1e6
    assert busy - idle > 3_000_000 * 10   # at least ten instructions per element summed
    assert abs(again - idle) < 0.01 * idle
