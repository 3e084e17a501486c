"""Trace replay beyond draftsim's own CSV: public formats (`formats.FORMATS`), column mapping for other
CSV/JSONL layouts, date-and-time or relative timestamps, a time window and rate scaling.

`workload.arrival` fields (process `trace`; each is optional, a trace workload needs no other field):

- `format`: draftsim (default) | azure | burstgpt | mooncake — the column names, time unit and file kind;
- `columns`: {arrival, prompt_tokens, output_tokens, hash_ids} — column (CSV) or key (JSONL) names that
  replace the format's, for other layouts; the file kind follows the extension (`.jsonl`/`.json`: JSON
  lines, anything else CSV);
- `time_unit`: s | ms | us | datetime — how to read the arrival column (default: the format's).
  Datetimes (ISO 8601, any fraction digits, optional UTC offset) count from the first request;
- `start_s`, `end_s`: keep the requests arriving in [start_s, end_s) after the trace's first arrival;
  the kept window is shifted to start at 0 (without a window, numeric times are used as they are); a
  window that keeps a single request of several is refused (a window typed in ms or µs);
- `speedup`: replay k× faster (arrival times divided by k; the same requests at k× the rate); the
  replayed arrivals must stay within simulator.core.workload.MAX_SIM_SPAN_S (1e8 s);
- `hash_block_tokens`: tokens per prefix hash id (mooncake: 512); a request keeps the ids of its full
  blocks (the last, partial block is never reused, as vLLM caches only full blocks). A request's ids must
  cover its prompt (one per block, the partial block's id optional): another count is another block size,
  refused naming the line. It needs a hash_ids column, and a mapped hash_ids column needs it where the
  format has no block size. Ids are chained (an id stands for its block and all before it): one id at two
  positions, or after two ids, is refused naming both lines (`reader._check_chained`).

Then `workload.num_requests` (the first n) or `workload.duration_s` (arrivals before it) cuts the trace,
as for the draftsim format. Plain draftsim CSV traces without these options keep the original reader
(`simulator.core.workload._replay_trace`); a `.jsonl`/`.json` one is read here, as JSON lines.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from simulator.core.prefixes import PrefixKeys
from simulator.core.traces.formats import FORMATS, JSON_LINES_SUFFIXES, TraceFormat
from simulator.errors import ScenarioError

FIELD = "workload.arrival"
# option -> its default (the plain draftsim CSV)
TRACE_OPTIONS = {"columns": None, "time_unit": None, "start_s": 0.0, "end_s": None, "speedup": 1.0,
                 "hash_block_tokens": None}


def uses_importer(arrival) -> bool:
    """Whether a trace needs this module (any format or option beyond the plain draftsim CSV, or a JSON-lines
    file: the original reader reads CSV only, whatever the extension, so that a .jsonl of the draftsim
    columns was refused without options and read with a no-op one, `time_unit: s`)."""
    return arrival.format != "draftsim" or Path(str(arrival.trace_csv)).suffix.lower() in JSON_LINES_SUFFIXES \
        or any(getattr(arrival, name) != default for name, default in TRACE_OPTIONS.items())


def trace_format(arrival) -> TraceFormat:
    """The format of `arrival` with its `columns`, `time_unit` and `hash_block_tokens` overrides."""
    fmt = FORMATS[arrival.format]
    columns = fmt.columns()
    if arrival.columns is not None:
        columns.update({k: v for k, v in vars(arrival.columns).items() if v is not None})
    block = arrival.hash_block_tokens if arrival.hash_block_tokens is not None else fmt.hash_block_tokens
    return TraceFormat(fmt.name, fmt.file_kind, columns["arrival"], columns["prompt_tokens"], columns["output_tokens"],
                       arrival.time_unit or fmt.time_unit, columns["hash_ids"], block if columns["hash_ids"] else 0,
                       fmt.skip_zero_tokens)


def load_trace(cfg, base_dir: Path, resolve_path) -> tuple[np.ndarray, np.ndarray, np.ndarray, PrefixKeys | None]:
    """(arrival_s, prompt, output, prefix keys or None) of the trace of workload `cfg`, sorted by arrival."""
    from simulator.core.workload import check_span
    arrival = cfg.arrival
    path = resolve_path(arrival.trace_csv, base_dir, "workload.arrival.trace_csv")
    fmt = trace_format(arrival)
    from simulator.core.traces.reader import read_trace   # (pandas: imported only to read a trace)
    rows = read_trace(path, fmt, f"{FIELD}.trace_csv")
    order = np.argsort(rows.arrival_s, kind="stable")
    times = rows.arrival_s[order]
    if arrival.start_s or arrival.end_s is not None:
        t0 = times[0] + arrival.start_s
        end = np.inf if arrival.end_s is None else times[0] + arrival.end_s
        keep = (times >= t0) & (times < end)
        if not keep.any():
            raise ScenarioError(f"{FIELD}.start_s", f"no request of {path} arrives in the window "
                                                    f"[{arrival.start_s}, {arrival.end_s}) s after its first")
        if keep.sum() == 1 and len(times) > 1:   # e.g. end_s: 1e-6 (a window in ms or µs typed as s)
            raise ScenarioError(f"{FIELD}.end_s", f"the window [{arrival.start_s:g}, {arrival.end_s:g}) s after the "
                                                  f"first arrival keeps 1 of the {len(times)} requests of {path} "
                                                  "(start_s and end_s are seconds); widen it, or take one request "
                                                  "with workload.num_requests: 1")
        order, times = order[keep], times[keep] - t0
    times = times / arrival.speedup
    count = len(times)
    if cfg.num_requests is not None:
        if cfg.num_requests > count:
            raise ScenarioError("workload.num_requests", f"{cfg.num_requests} exceeds the {count} requests in {path}")
        count = cfg.num_requests
    elif cfg.duration_s is not None:
        count = int(np.searchsorted(times, cfg.duration_s, side="left"))
        if count == 0:
            raise ScenarioError("workload.duration_s", f"no request of {path} arrives before {cfg.duration_s} s")
    keep = order[:count]
    dates = fmt.time_unit == "datetime" and count   # ('times in seconds?' misled there: 1700 and 2200 are dates)
    check_span(times[:count], f"{FIELD}.speedup" if arrival.speedup != 1.0 else f"{FIELD}.trace_csv",
               _timestamps_apart(fmt.arrival, times[count - 1] * arrival.speedup) if dates else None)
    prompt = rows.prompt[keep]
    keys = None
    if rows.hash_ids is not None:
        block = fmt.hash_block_tokens
        keys = _compact(PrefixKeys.from_lists([rows.hash_ids[i][: prompt[j] // block] for j, i in enumerate(keep)],
                                              block))
    return times[:count], prompt, rows.output[keep], keys


def _timestamps_apart(column: str, span_s: float) -> str:
    """How far apart the first and last times of a trace of datetimes in `column` are (the span check's hint)."""
    days = span_s / 86400
    return f"the first and last {column} are " + (f"{days / 365.25:,.0f} years" if days >= 730 else
                                                  f"{days:,.0f} days" if days >= 2 else f"{span_s:,.3g} s") + " apart"


def _compact(keys: PrefixKeys) -> PrefixKeys:
    """The same keys renumbered 0, 1, … in order of first appearance (trace ids can be any integers)."""
    _, first, inverse = np.unique(keys.keys, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return PrefixKeys(rank[inverse].astype(np.int64), keys.offsets.copy(), keys.unit_tokens)


__all__ = ["FORMATS", "TRACE_OPTIONS", "load_trace", "trace_format", "uses_importer"]
