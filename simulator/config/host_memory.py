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
from pathlib import Path

from simulator.errors import ScenarioError

MIN_BYTES_PER_REQUEST = 900      # measured 979 B/request (2026-11-24, after the compact step log and decode
                                 # profiles of issue 18; 2,226 B before), less a margin for outputs.steps
                                 # aggregate/sampled, which keep fewer step bytes: see the module docstring
SESSION_KEY_BYTES = 60           # peak RSS per prefix key of generated sessions: 65 B measured (2026-11-28, quickstart
                                 # with 20 sessions of 100 and 200 turns: 544 and 1,623 MB), less a margin
PREFIX_KEY_BYTES = 8             # a shared prefix's keys: one int64 each (simulator.core.prefixes), a lower bound
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


def expected_requests(workload, base_dir: Path) -> tuple[str, float] | None:
    """(field, expected number of requests) of a synthetic or closed-loop workload; None for a trace. With
    `sessions`, every turn of every session started is drawn (simulator.core.prefixes.session_table) before
    the earliest num_requests are kept: the sessions times their mean turns."""
    if workload.num_requests is not None:
        field, n = "workload.num_requests", float(workload.num_requests)
    elif workload.duration_s is not None and workload.arrival.qps is not None:
        field, n = "workload.duration_s", workload.duration_s * workload.arrival.qps
    else:
        return None
    turns = _mean(workload.sessions.turns, base_dir, "workload.sessions.turns") if workload.sessions else 1.0
    if turns > 1:
        return "workload.sessions.turns", n * turns
    return field, n


def _mean(length, base_dir: Path, field: str) -> float:
    """The mean of a length distribution's config (an `empirical` one's column read from its file)."""
    return length.spec().least_and_mean(base_dir, field)[1]


def prefix_key_bytes(workload, block_size: int, base_dir: Path) -> tuple[str, float]:
    """(the field that sets their number, the bytes of the generated prefix keys), one key per full KV block of
    `block_size` tokens, from the mean lengths (simulator.core.prefixes builds them all before the earliest
    requests are kept): a shared prefix's tokens // block_size per request (PREFIX_KEY_BYTES each); a session's
    turn k re-sends the system prompt and the k − 1 turns before it, so its keys (SESSION_KEY_BYTES each) grow
    with turns²."""
    count = workload.num_requests if workload.num_requests is not None else \
        (workload.duration_s or 0.0) * (workload.arrival.qps or 0.0)
    system = workload.shared_prefix.tokens // block_size if workload.shared_prefix is not None else 0
    if workload.sessions is None:
        return "workload.shared_prefix.tokens", PREFIX_KEY_BYTES * count * system
    turns = _mean(workload.sessions.turns, base_dir, "workload.sessions.turns")
    message = _mean(workload.prompt_tokens, base_dir, "workload.prompt_tokens")
    output = _mean(workload.output_tokens, base_dir, "workload.output_tokens")
    per_turn = (message + output) / block_size
    return "workload.sessions.turns", SESSION_KEY_BYTES * count * turns * (system + per_turn * (turns + 1) / 2)


def check_memory(scenario, available: int | None = None, base_dir: Path | None = None) -> None:
    """Raise ScenarioError naming the workload field when the run needs more than the memory available
    (`base_dir`: the folder of the scenario's relative paths, default the working directory)."""
    check_workload_memory(scenario.workload, scenario.scheduler.block_size, available, base_dir=base_dir)


def check_workload_memory(workload, block_size: int, available: int | None = None, prefix: str = "",
                          base_dir: Path | None = None) -> None:
    """`check_memory` of a workload section whose requests use KV blocks of `block_size` tokens (a plan's,
    which each of its DES confirmations draws; `prefix`: where the section sits, e.g. 'plan.')."""
    base_dir = Path.cwd() if base_dir is None else Path(base_dir)
    expected = expected_requests(workload, base_dir)
    available = available_bytes() if available is None else available
    if expected is None or available is None:
        return
    field, n = expected
    field = prefix + field
    keys_field, keys = prefix_key_bytes(workload, block_size, base_dir)
    if keys > available:
        why, fix = (("the sessions' prompts re-send their earlier turns", "give fewer turns per session")
                    if workload.sessions is not None else
                    ("every prompt starts with a system prompt", "give fewer tokens or fewer requests"))
        raise ScenarioError(prefix + keys_field, f"{why}: their prefix keys need at least {keys / 1024**3:,.1f} GiB "
                            f"of memory but {available / 1024**3:.1f} GiB are available; {fix}")
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
    memory available together, though each would fit alone (`check_memory`). `scenarios`: (scenario, the
    folder of its relative paths) pairs."""
    counts = [expected_requests(scenario.workload, base_dir) for scenario, base_dir in scenarios]
    available = available_bytes() if available is None else available
    if available is None or len(counts) < 2:
        return
    need = BASE_BYTES + sum(n for _, n in filter(None, counts)) * MIN_BYTES_PER_REQUEST
    if need > available:
        raise ScenarioError(field, f"{len(counts)} runs held at once need at least {need / 1024**3:,.1f} GiB of "
                                   f"memory ({MIN_BYTES_PER_REQUEST} B per request, measured) but "
                                   f"{available / 1024**3:.1f} GiB are available; compare fewer runs at once, or "
                                   "run them with draftsim sweep, which keeps one at a time")
