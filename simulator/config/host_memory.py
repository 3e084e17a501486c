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
SESSION_KEY_BYTES = 60           # peak RSS per prefix key of generated sessions: 65 B measured (2026-11-28, quickstart
                                 # with 20 sessions of 100 and 200 turns: 544 and 1,623 MB), less a margin
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
    """(field, expected number of requests) of a synthetic or closed-loop workload; None for a trace. With
    `sessions`, every turn of every session started is drawn (simulator.core.prefixes.session_table) before
    the earliest num_requests are kept: the sessions times their mean turns."""
    if workload.num_requests is not None:
        field, n = "workload.num_requests", float(workload.num_requests)
    elif workload.duration_s is not None and workload.arrival.qps is not None:
        field, n = "workload.duration_s", workload.duration_s * workload.arrival.qps
    else:
        return None
    turns = _mean(workload.sessions.turns) if workload.sessions is not None else None
    if turns is not None and turns > 1:
        return "workload.sessions.turns", n * turns
    return field, n


def _mean(length) -> float | None:
    """The mean of a length distribution's config, where known without reading a file (not `empirical`)."""
    mean = getattr(length.spec(), "mean", None)
    return float(mean()) if mean is not None else None


def session_key_bytes(workload, block_size: int) -> float:
    """The bytes of the sessions' prefix keys (SESSION_KEY_BYTES per key of a full KV block of `block_size`
    tokens, from the mean lengths): a session's turn k re-sends the k − 1 turns before it, so its keys grow
    with turns² (simulator.core.prefixes builds them all before keeping the earliest requests)."""
    sessions = workload.sessions
    if sessions is None:
        return 0.0
    means = [_mean(sessions.turns), _mean(workload.prompt_tokens), _mean(workload.output_tokens)]
    count = workload.num_requests if workload.num_requests is not None else \
        (workload.duration_s or 0.0) * (workload.arrival.qps or 0.0)
    if any(m is None for m in means) or not count:
        return 0.0
    turns, message, output = means
    per_turn = (message + output) / block_size
    return SESSION_KEY_BYTES * count * per_turn * turns * (turns + 1) / 2


def check_memory(scenario, available: int | None = None) -> None:
    """Raise ScenarioError naming the workload field when the run needs more than the memory available."""
    check_workload_memory(scenario.workload, scenario.scheduler.block_size, available)


def check_workload_memory(workload, block_size: int, available: int | None = None, prefix: str = "") -> None:
    """`check_memory` of a workload section whose requests use KV blocks of `block_size` tokens (a plan's,
    which each of its DES confirmations draws; `prefix`: where the section sits, e.g. 'plan.')."""
    expected = expected_requests(workload)
    available = available_bytes() if available is None else available
    if expected is None or available is None:
        return
    field, n = expected
    field = prefix + field
    keys = session_key_bytes(workload, block_size)
    if keys > available:
        raise ScenarioError(f"{prefix}workload.sessions.turns", f"the sessions' prompts re-send their earlier turns: "
                            f"their prefix keys need at least {keys / 1024**3:,.1f} GiB of memory but "
                            f"{available / 1024**3:.1f} GiB are available; give fewer turns per session")
    need = BASE_BYTES + n * MIN_BYTES_PER_REQUEST
    if need > available:
        allowed = max(0, int((available - BASE_BYTES) / MIN_BYTES_PER_REQUEST))
        raise ScenarioError(field, f"{n:,.0f} requests need at least {need / 1024**3:,.1f} GiB of memory "
                                   f"({MIN_BYTES_PER_REQUEST} B per request, measured) but "
                                   f"{available / 1024**3:.1f} GiB are available; allowed here: at most "
                                   f"about {allowed:,} requests")


def check_memory_together(scenarios, field: str, available: int | None = None) -> None:
    """Raise ScenarioError on `field` when runs held in memory at once (`draftsim compare` builds every run
    before the first simulates and keeps every run's requests for its table and plot) need more than the
    memory available together, though each would fit alone (`check_memory`)."""
    counts = [expected_requests(scenario.workload) for scenario in scenarios]
    available = available_bytes() if available is None else available
    if available is None or len(counts) < 2:
        return
    need = BASE_BYTES + sum(n for _, n in filter(None, counts)) * MIN_BYTES_PER_REQUEST
    if need > available:
        raise ScenarioError(field, f"{len(counts)} runs held at once need at least {need / 1024**3:,.1f} GiB of "
                                   f"memory ({MIN_BYTES_PER_REQUEST} B per request, measured) but "
                                   f"{available / 1024**3:.1f} GiB are available; compare fewer runs at once, or "
                                   "run them with draftsim sweep, which keeps one at a time")
