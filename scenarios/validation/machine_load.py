"""Is this machine quiet enough to time a reference run? Measured just before the run.

The reference engine's timings are only comparable with a profile measured on an idle machine when the
run gets its threads' cores to itself. Other processes' CPU use is sampled from /proc/stat over
`sample_s` seconds while this process sleeps (so it counts only the others — unlike the load average,
which still holds this process's own simulation run a moment earlier). The run is *oversubscribed* when
the other processes' busy cores plus the reference run's threads exceed the CPU count by more than
`TOLERANCE_CORES` (background noise of a normal idle system).
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass

TOLERANCE_CORES = 0.25


@dataclass(frozen=True)
class MachineLoad:
    cpu_count: int
    other_busy_cores: float | None     # None where /proc/stat cannot be read
    load_average_1min: float
    threads: int

    @property
    def oversubscribed(self) -> bool:
        busy = self.other_busy_cores if self.other_busy_cores is not None else self.load_average_1min
        return busy + self.threads > self.cpu_count + TOLERANCE_CORES

    def as_dict(self) -> dict:
        return {**asdict(self), "oversubscribed": self.oversubscribed}

    def describe(self) -> str:
        busy = "n/a" if self.other_busy_cores is None else f"{self.other_busy_cores:.2f}"
        return (f"other processes kept {busy} of {self.cpu_count} cores busy (load average "
                f"{self.load_average_1min:.2f}) before a reference run on {self.threads} threads")


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat, or None."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def measure_load(threads: int, sample_s: float = 1.0) -> MachineLoad:
    cpus = os.cpu_count() or 1
    first = _cpu_times()
    time.sleep(sample_s)
    second = _cpu_times()
    busy = None
    if first is not None and second is not None and second[1] > first[1]:
        busy = cpus * (second[0] - first[0]) / (second[1] - first[1])
    return MachineLoad(cpus, busy, os.getloadavg()[0], threads)
