"""Refuse, before any work, a run that cannot fit in this machine's memory.

A run keeps per-request columns (workload, state, the requests frame) and a step log whose length grows
with the number of requests. `MIN_BYTES_PER_REQUEST` is a lower bound on the peak resident memory per
request, measured (scenarios/benchmarks/host_memory.py: peak RSS of two runs of 20,000 and 400,000
requests of 16 prompt + 2 output tokens, no drafter, the slope between them) — real runs with longer
outputs or speculation need more, so the check only refuses runs that certainly cannot fit (e.g.
`num_requests: 1e9`), it does not promise that an accepted run fits. Trace workloads are bounded by their
file and are not checked here.
"""
from __future__ import annotations

import os

from simulator.errors import ScenarioError

MIN_BYTES_PER_REQUEST = 900      # measured 979 B/request (2026-11-24, after the compact step log and decode
                                 # profiles of issue 18; 2,226 B before), less a margin for outputs.steps
                                 # aggregate/sampled, which keep fewer step bytes: see the module docstring
BASE_BYTES = 300 * 1024**2       # resident memory of an empty run (imports, tables): 310 MiB measured, same script


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else physical memory from sysconf, else None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def expected_requests(workload) -> tuple[str, float] | None:
    """(field, expected number of requests) of a synthetic or closed-loop workload; None for a trace."""
    if workload.num_requests is not None:
        return "workload.num_requests", float(workload.num_requests)
    if workload.duration_s is not None and workload.arrival.qps is not None:
        return "workload.duration_s", workload.duration_s * workload.arrival.qps
    return None


def check_memory(scenario, available: int | None = None) -> None:
    """Raise ScenarioError naming the workload field when the run needs more than the memory available."""
    expected = expected_requests(scenario.workload)
    available = available_bytes() if available is None else available
    if expected is None or available is None:
        return
    field, n = expected
    need = BASE_BYTES + n * MIN_BYTES_PER_REQUEST
    if need > available:
        allowed = max(0, int((available - BASE_BYTES) / MIN_BYTES_PER_REQUEST))
        raise ScenarioError(field, f"{n:,.0f} requests need at least {need / 1024**3:,.1f} GiB of memory "
                                   f"({MIN_BYTES_PER_REQUEST} B per request, measured) but "
                                   f"{available / 1024**3:.1f} GiB are available; allowed here: at most "
                                   f"about {allowed:,} requests")
