"""Workload generation: when requests arrive and how long their prompts and outputs are.

Arrival processes (``workload.arrival.process``):

- ``poisson``: exponential inter-arrival gaps with mean 1/qps (coefficient of variation 1).
- ``gamma``: a renewal process with Gamma-distributed gaps, mean 1/qps and coefficient of variation `cv`
  (shape k = 1/cv^2, scale = 1/(qps k)). cv > 1 is burstier than Poisson, cv < 1 smoother, cv = 1 is
  Poisson in distribution. Approximation: the process starts fresh at t = 0 (an ordinary renewal process,
  first arrival after one full gap), not in its stationary regime; the difference fades after a few
  arrivals.
- ``trace``: replay a CSV with columns ``arrival_s, prompt_tokens, output_tokens`` (others are ignored).
  Rows are stably sorted by arrival time; times are used as they are (not shifted to start at 0).
- ``closed_loop``: `concurrency` clients, each sending its next request the instant its previous one
  finishes (or is dropped), as `vllm bench serve --max-concurrency`, AIPerf or a load generator with a
  fixed number of users do: the first `concurrency` requests arrive at t = 0, request i + concurrency
  arrives when the i-th completion happens. No think time. Arrival times are set by the simulation
  (the request table holds 0 until then); needs `num_requests`.

For poisson/gamma exactly one of ``num_requests`` or ``duration_s`` is given (``duration_s``: all arrivals
in [0, duration_s)). A trace may be cut by at most one of them.

Randomness: `generate_requests` spawns three independent child streams from the given Generator (arrival
gaps, prompt lengths, output lengths), so changing a length distribution does not move the arrival times.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.errors import ScenarioError
from simulator.core.csv_columns import read_csv_columns
from simulator.core.lengths import resolve_path
from simulator.core.prefixes import PrefixKeys, Sessions, SharedPrefix

FIELD = "workload"
# The longest stretch of simulated time a run may span, in seconds (about 3.2 years). Simulated time is a
# float64 number of seconds: at 1e8 s its resolution is 1e8 · 2^-52 ≈ 22 ns, still below the shortest
# GPU kernel (µs), while beyond ~1e9 s (0.2 µs) step durations start to round. A rate or speed-up that
# puts arrivals further out (qps: 1e-300) is a typo and is refused, naming the field
# (simulator.config.workload.WorkloadConfig, check_span).
MAX_SIM_SPAN_S = 1e8
# The most requests a synthetic or closed-loop workload may ask for: 10^12 requests need 900 TB of memory at
# the measured 900 B per request (simulator.config.host_memory), far beyond any machine, so no run that could
# fit is refused. Checked as an integer before any float arithmetic on the count (an int of 400 digits does
# not convert to a float: `num_requests / qps` raised OverflowError).
MAX_NUM_REQUESTS = 10**12
TRACE_COLUMNS = {"arrival_s": "time", "prompt_tokens": "count", "output_tokens": "count"}


@dataclass(frozen=True)
class TraceColumns:
    """Column (CSV) or key (JSONL) names of a trace layout other than the format's (simulator.core.traces)."""

    arrival: str | None = None
    prompt_tokens: str | None = None
    output_tokens: str | None = None
    hash_ids: str | None = None


@dataclass(frozen=True)
class Arrival:
    """`workload.arrival` (module docstring; trace options: simulator.core.traces)."""

    process: str                       # poisson | gamma | trace | closed_loop
    qps: float | None = None
    concurrency: int | None = None
    cv: float | None = None
    trace_csv: Path | None = None
    format: str = "draftsim"
    columns: TraceColumns | None = None
    time_unit: str | None = None
    start_s: float = 0.0
    end_s: float | None = None
    speedup: float = 1.0
    hash_block_tokens: int | None = None


@dataclass(frozen=True)
class Workload:
    """`workload`: arrivals, length distributions (simulator.core.lengths), one stopping rule, shared prefixes
    and sessions (simulator.core.prefixes), what to do with a request longer than the model's context
    (`context_overflow`: error | drop | truncate, simulator.core.context) and the sequences generated per
    request from one prompt (`parallel_samples`: parallel sampling n, beam width; simulator.core.state)."""

    arrival: Arrival
    dataset: object = None              # simulator.core.bench_clients.BenchDataset: both lengths, as a client draws
    prompt_tokens: object = None
    output_tokens: object = None
    num_requests: int | None = None
    duration_s: float | None = None
    shared_prefix: SharedPrefix | None = None
    sessions: Sessions | None = None
    context_overflow: str = "error"
    parallel_samples: int = 1


@dataclass(frozen=True)
class RequestTable:
    """All requests of a run, one row per request, sorted by arrival time. Arrays are read-only."""

    arrival_s: np.ndarray  # float64, ascending
    prompt_tokens: np.ndarray  # int64, >= 1
    output_tokens: np.ndarray  # int64, >= 1
    prefixes: PrefixKeys | None = None  # content keys of shared prefixes (simulator.core.prefixes), if any

    def __post_init__(self) -> None:
        columns = {  # private read-only copies: callers keep ownership of what they passed in
            "arrival_s": np.array(self.arrival_s, dtype=np.float64),
            "prompt_tokens": np.array(self.prompt_tokens, dtype=np.int64),
            "output_tokens": np.array(self.output_tokens, dtype=np.int64),
        }
        sizes = {name: a.shape for name, a in columns.items()}
        if len(set(sizes.values())) != 1 or columns["arrival_s"].ndim != 1:
            raise ValueError(f"RequestTable: columns must be 1-D and of equal length; got shapes {sizes}")
        if len(columns["arrival_s"]) > 1 and np.any(np.diff(columns["arrival_s"]) < 0):
            raise ValueError("RequestTable.arrival_s: must be sorted ascending")
        for name in ("prompt_tokens", "output_tokens"):
            if len(columns[name]) and columns[name].min() < 1:
                raise ValueError(f"RequestTable.{name}: every value must be >= 1")
        for name, array in columns.items():
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        if self.prefixes is not None and len(self.prefixes) != len(columns["arrival_s"]):
            raise ValueError("RequestTable.prefixes: one row of keys per request")

    def __len__(self) -> int:
        return len(self.arrival_s)


def _gaps(process: str, qps: float, cv: float | None, n: int, rng: np.random.Generator) -> np.ndarray:
    if process == "poisson":
        return rng.exponential(1.0 / qps, size=n)
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, 1.0 / (qps * shape), size=n)


def arrival_times(arrival: Arrival, rng: np.random.Generator, *, num_requests: int | None = None,
                  duration_s: float | None = None) -> np.ndarray:
    """Arrival instants of a poisson/gamma process: `num_requests` of them, or all in [0, duration_s)."""
    if arrival.process in ("trace", "closed_loop"):
        raise ValueError(f"arrival_times: process {arrival.process!r} has no synthetic arrivals; use "
                         "generate_requests")
    qps, cv = arrival.qps, arrival.cv
    if num_requests is not None:
        return np.cumsum(_gaps(arrival.process, qps, cv, num_requests, rng))
    if duration_s is None:
        raise ValueError("arrival_times: give num_requests or duration_s")
    expected = qps * duration_s
    spread = (cv if cv is not None else 1.0) * np.sqrt(expected)
    chunk = int(expected + 6.0 * spread + 16)  # almost always enough in one draw
    times = np.cumsum(_gaps(arrival.process, qps, cv, chunk, rng))
    while times[-1] < duration_s:
        more = times[-1] + np.cumsum(_gaps(arrival.process, qps, cv, chunk, rng))
        times = np.concatenate([times, more])
    return times[: np.searchsorted(times, duration_s, side="left")]


def _replay_trace(cfg: Workload, base_dir: Path) -> RequestTable:
    field = f"{FIELD}.arrival.trace_csv"
    path = resolve_path(cfg.arrival.trace_csv, base_dir, "workload.arrival.trace_csv")
    cols = read_csv_columns(path, TRACE_COLUMNS, field)
    order = np.argsort(cols["arrival_s"], kind="stable")
    arrival_s = cols["arrival_s"][order]
    count = len(arrival_s)
    if cfg.num_requests is not None:
        if cfg.num_requests > count:
            raise ScenarioError(f"{FIELD}.num_requests", f"{cfg.num_requests} exceeds the {count} requests "
                                                         f"in {path}")
        count = cfg.num_requests
    elif cfg.duration_s is not None:
        count = int(np.searchsorted(arrival_s, cfg.duration_s, side="left"))
        if count == 0:
            raise ScenarioError(f"{FIELD}.duration_s", f"no request of {path} arrives before "
                                                       f"{cfg.duration_s} s")
    keep = order[:count]
    check_span(arrival_s[:count], field)
    return RequestTable(arrival_s[:count], cols["prompt_tokens"][keep], cols["output_tokens"][keep])


def check_span(arrival_s: np.ndarray, field: str, hint: str | None = None) -> None:
    """ScenarioError on `field` when the last arrival lies beyond MAX_SIM_SPAN_S (see there); `hint` fits the
    trace's time format (default: numbers, maybe not in seconds)."""
    if len(arrival_s) and arrival_s[-1] > MAX_SIM_SPAN_S:
        raise ScenarioError(field, f"arrivals reach {arrival_s[-1]:.3g} s of simulated time; at most "
                                   f"{MAX_SIM_SPAN_S:g} s (3.2 years) are simulated ({hint or 'times in seconds?'})")


def generate_requests(cfg: Workload, rng: np.random.Generator, base_dir: Path, *,
                      block_size: int = 16) -> RequestTable:
    """Draw (or replay) the requests of one run. Relative CSV paths are resolved against `base_dir`.

    Child streams are spawned from `rng` (its own stream is not advanced, but each call spawns new
    children), so pass a freshly seeded Generator to reproduce a run. `block_size`: the KV block size,
    the unit of generated shared prefixes (simulator.core.prefixes).
    """
    if cfg.arrival.process == "trace":
        from simulator.core.traces import load_trace, uses_importer
        if uses_importer(cfg.arrival):
            return RequestTable(*load_trace(cfg, Path(base_dir), resolve_path))
        return _replay_trace(cfg, Path(base_dir))
    if cfg.shared_prefix is not None or cfg.sessions is not None:
        return _shared_requests(cfg, rng, Path(base_dir), block_size)
    arrival_rng, prompt_rng, output_rng = rng.spawn(3)
    if cfg.arrival.process == "closed_loop":  # set by the simulation as requests are sent
        arrival_s = np.zeros(cfg.num_requests)
    else:
        arrival_s = arrival_times(cfg.arrival, arrival_rng, num_requests=cfg.num_requests,
                                  duration_s=cfg.duration_s)
    n = len(arrival_s)
    if n == 0:
        raise ScenarioError(f"{FIELD}.duration_s", f"no request arrived within {cfg.duration_s} s at "
                                                   f"qps={cfg.arrival.qps}; increase duration_s or qps")
    if cfg.dataset is not None:
        return RequestTable(arrival_s, *_client_lengths(cfg.dataset, n, prompt_rng))
    prompt = cfg.prompt_tokens.sample(n, prompt_rng, Path(base_dir), f"{FIELD}.prompt_tokens")
    output = cfg.output_tokens.sample(n, output_rng, Path(base_dir), f"{FIELD}.output_tokens")
    return RequestTable(arrival_s, prompt, output)


def _client_lengths(dataset, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(prompt, output) lengths of `n` requests drawn as the benchmark client draws them (the client's seed,
    when not given, from the prompt-length stream); ScenarioError on `workload.dataset` when it cannot."""
    try:
        return dataset.sample_pairs(n, rng)
    except ValueError as exc:
        raise ScenarioError(f"{FIELD}.dataset", str(exc)) from None


def _shared_requests(cfg: Workload, rng: np.random.Generator, base_dir: Path, block_size: int) -> RequestTable:
    """Requests with shared system prompts and/or multi-turn sessions (simulator.core.prefixes); their own
    child streams, so that the plain workload's draws stay as they are."""
    from simulator.core.prefixes import session_table, shared_prefix_table
    arrival_rng, prompt_rng, output_rng, turn_rng, think_rng, system_rng = rng.spawn(6)
    field = FIELD
    message = lambda n: cfg.prompt_tokens.sample(n, prompt_rng, base_dir, f"{field}.prompt_tokens")  # noqa: E731
    output = lambda n: cfg.output_tokens.sample(n, output_rng, base_dir, f"{field}.output_tokens")  # noqa: E731
    if cfg.sessions is None:
        arrival_s = arrival_times(cfg.arrival, arrival_rng, num_requests=cfg.num_requests, duration_s=cfg.duration_s)
        if len(arrival_s) == 0:
            raise ScenarioError(f"{FIELD}.duration_s", f"no request arrived within {cfg.duration_s} s")
        n = len(arrival_s)
        prompt, keys = shared_prefix_table(message(n), cfg.shared_prefix, system_rng, block_size)
        return RequestTable(arrival_s, prompt, output(n), keys)
    starts = arrival_times(cfg.arrival, arrival_rng, num_requests=cfg.num_requests, duration_s=cfg.duration_s)
    if len(starts) == 0:
        raise ScenarioError(f"{FIELD}.duration_s", f"no session started within {cfg.duration_s} s")
    arrival_s, prompt, out, keys = session_table(starts, message, output, cfg.sessions, cfg.shared_prefix,
                                                 (turn_rng, think_rng, system_rng), block_size, cfg.num_requests,
                                                 cfg.duration_s, base_dir, FIELD)
    return RequestTable(arrival_s, prompt, out, keys)
