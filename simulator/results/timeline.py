"""Chrome / Perfetto timeline traces of a run (`draftsim run ... --trace` writes ``trace.json``).

Open the file in https://ui.perfetto.dev (or chrome://tracing). Layout (Trace Event Format, JSON object
form, timestamps in microseconds of simulated time):

- one process per replica (``replica i``), thread ``engine steps``: per step a ``draft`` span (the draft
  model's passes, `draft_s` of the step log) followed by the target pass (`verify_s`), named ``prefill``
  (only prompt chunks), ``verify`` (decode requests checking γ+1 query tokens each), ``decode`` (plain
  decoding) or ``prefill+verify`` / ``prefill+decode`` (a Sarathi step mixing both). Each target span
  carries the step's composition and the request ids derivable from the request records:
  ``admitted`` (admitted at the step's start), ``first_token`` (their prefill completed with this step:
  first_token_s equals the step's end) and ``finished`` (finish_s equals the step's end). A counter track
  ``requests`` shows queued and running requests at each step start.
- process ``requests``: one async slice per request (``queued`` arrival→admission, ``prefill``
  admission→first token, ``decode`` first token→finish) for the first `max_request_tracks` request ids,
  so that huge runs stay loadable.

- expert parallelism (a step log with `alltoall_s`): thread ``all-to-all`` of the replica, one span per
  step with the step's dispatch + combine time over all MoE layers, drawn from the start of the target
  pass (in reality it is interleaved with the layers' compute; the span shows its total, not its phase).
- disaggregated runs (request records with `kv_start_s`/`kv_ready_s`): replicas are named ``prefill
  replica i`` / ``decode replica j``; process ``KV transfers`` has one thread per (prefill replica →
  decode replica) pair with one async slice per request's KV transfer (``kv r<id>``: request id, bytes,
  source and destination replicas); the request tracks add ``kv_wait`` (first token → transfer start)
  and ``kv_transfer``; ``finished`` ids are matched on the decode replica.

Not shown: per-node tree spans (issue 6). Matching times: the engine stamps request events with the exact float
end/start of the step that caused them; matching is exact with a 1e-9 s tolerance for safety.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

US = 1e6
MATCH_TOLERANCE_S = 1e-9
DEFAULT_MAX_REQUEST_TRACKS = 1000
REQUEST_PID = 1_000_000
KV_PID = 1_000_001
_STEP_COLUMNS = ("replica", "start_s", "duration_s", "draft_s", "verify_s", "engine_s", "prefill_tokens", "prefill_seqs",
                 "decode_seqs", "query_tokens_per_seq", "accepted_tokens", "emitted_tokens",
                 "queued_requests", "running_requests")
_REQUEST_COLUMNS = ("request_id", "replica", "arrival_s", "admit_s", "first_token_s", "finish_s")


def _check(frame: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: missing column(s) {', '.join(missing)}")


def _match(step_times: np.ndarray, step_index: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each time, the index (into the steps table) of the step whose time equals it, or -1."""
    out = np.full(len(times), -1, dtype=np.int64)
    if not len(step_times) or not len(times):
        return out
    order = np.argsort(step_times, kind="stable")
    sorted_times = step_times[order]
    pos = np.clip(np.searchsorted(sorted_times, times), 0, len(sorted_times) - 1)
    for candidate in (pos, np.clip(pos - 1, 0, None)):
        hit = (out < 0) & np.isfinite(times) & (np.abs(sorted_times[candidate] - times) <= MATCH_TOLERANCE_S)
        out[hit] = step_index[order[candidate[hit]]]
    return out


def _ids_by_step(steps: pd.DataFrame, requests: pd.DataFrame, step_col: str, req_col: str) -> dict[int, list[int]]:
    found: dict[int, list[int]] = defaultdict(list)
    step_replica = steps["replica"].to_numpy(np.int64)
    req_replica = requests["replica"].to_numpy(np.int64)
    step_times = steps[step_col].to_numpy(float)
    req_times = requests[req_col].to_numpy(float)
    req_ids = requests["request_id"].to_numpy(np.int64)
    for replica in np.unique(step_replica):
        on = np.flatnonzero(step_replica == replica)
        mine = np.flatnonzero(req_replica == replica)
        matched = _match(step_times[on], on, req_times[mine])
        for step, rid in zip(matched, req_ids[mine]):
            if step >= 0:
                found[int(step)].append(int(rid))
    return found


def _target_name(prefill_tokens: int, decode_seqs: int, query_tokens: int) -> str:
    if decode_seqs == 0:
        return "prefill"
    decode = "verify" if query_tokens > 1 else "decode"
    return f"prefill+{decode}" if prefill_tokens > 0 else decode


def _metadata(pid: int, name: str, sort_index: int, threads: dict[int, str]) -> list[dict]:
    events = [{"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": name}},
              {"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": sort_index}}]
    events += [{"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": tname}}
               for tid, tname in threads.items()]
    return events


def _step_events(steps: pd.DataFrame, requests: pd.DataFrame) -> list[dict]:
    admitted = _ids_by_step(steps, requests, "start_s", "admit_s")
    first = _ids_by_step(steps, requests, "end_s", "first_token_s")
    finishers = requests
    if "decode_replica" in requests:   # disaggregated: requests finish on their decode replica
        dec = requests["decode_replica"].to_numpy(np.int64)
        finishers = requests.assign(replica=np.where(dec >= 0, dec, requests["replica"].to_numpy(np.int64)))
    finished = _ids_by_step(steps, finishers, "end_s", "finish_s")
    alltoall = steps["alltoall_s"].to_numpy(float) if "alltoall_s" in steps else None
    cols = {c: steps[c].to_numpy() for c in _STEP_COLUMNS}
    events = []
    for i in range(len(steps)):
        pid = int(cols["replica"][i])
        start, draft, verify = float(cols["start_s"][i]), float(cols["draft_s"][i]), float(cols["verify_s"][i])
        prefill, decode = int(cols["prefill_tokens"][i]), int(cols["decode_seqs"][i])
        if draft > 0:
            events.append({"ph": "X", "pid": pid, "tid": 0, "name": "draft", "cat": "draft",
                           "ts": start * US, "dur": draft * US, "args": {"step": i}})
        args = {"step": i, "prefill_tokens": prefill, "prefill_seqs": int(cols["prefill_seqs"][i]),
                "decode_seqs": decode, "query_tokens_per_seq": int(cols["query_tokens_per_seq"][i]),
                "accepted_tokens": int(cols["accepted_tokens"][i]),
                "emitted_tokens": int(cols["emitted_tokens"][i])}
        for key, table in (("admitted", admitted), ("first_token", first), ("finished", finished)):
            if i in table:
                args[key] = table[i]
        name = _target_name(prefill, decode, int(cols["query_tokens_per_seq"][i]))
        events.append({"ph": "X", "pid": pid, "tid": 0, "name": name, "cat": "target",
                       "ts": (start + draft) * US, "dur": verify * US, "args": args})
        engine = float(cols["engine_s"][i])
        if engine > 0:
            events.append({"ph": "X", "pid": pid, "tid": 0, "name": "engine", "cat": "engine",
                           "ts": (start + draft + verify) * US, "dur": engine * US, "args": {"step": i}})
        if alltoall is not None and alltoall[i] > 0:
            events.append({"ph": "X", "pid": pid, "tid": 1, "name": "all-to-all", "cat": "alltoall",
                           "ts": (start + draft) * US, "dur": float(alltoall[i]) * US,
                           "args": {"step": i, "share_of_target_pass": float(alltoall[i]) / verify if verify > 0 else 0.0}})
        events.append({"ph": "C", "pid": pid, "tid": 0, "name": "requests", "ts": start * US,
                       "args": {"queued": int(cols["queued_requests"][i]),
                                "running": int(cols["running_requests"][i])}})
    return events


def _request_events(requests: pd.DataFrame, max_tracks: int) -> list[dict]:
    events = []
    part = requests.sort_values("request_id").head(max_tracks)
    for row in part.itertuples(index=False):
        kv_start, kv_ready = getattr(row, "kv_start_s", np.nan), getattr(row, "kv_ready_s", np.nan)
        if np.isfinite(kv_ready):
            marks = [("queued", row.arrival_s, row.admit_s), ("prefill", row.admit_s, row.first_token_s),
                     ("kv_wait", row.first_token_s, kv_start), ("kv_transfer", max(kv_start, row.first_token_s), kv_ready),
                     ("decode", kv_ready, row.finish_s)]
        else:
            marks = [("queued", row.arrival_s, row.admit_s), ("prefill", row.admit_s, row.first_token_s),
                     ("decode", row.first_token_s, row.finish_s)]
        for name, begin, end in marks:
            if np.isfinite(begin) and np.isfinite(end) and end >= begin:
                common = {"pid": REQUEST_PID, "tid": 0, "cat": "request", "name": name,
                          "id": int(row.request_id)}
                events.append({**common, "ph": "b", "ts": float(begin) * US,
                               "args": {"request_id": int(row.request_id), "replica": int(row.replica)}})
                events.append({**common, "ph": "e", "ts": float(end) * US})
    return events


def _kv_events(requests: pd.DataFrame, replica_names: dict[int, str], sort_index: int) -> list[dict]:
    """One thread per (prefill → decode replica) pair, one async slice per request's KV transfer."""
    done = requests[np.isfinite(requests["kv_ready_s"].to_numpy(float))]
    if not len(done):
        return []
    pairs = sorted({(int(a), int(b)) for a, b in zip(done["replica"], done["decode_replica"])})
    tid = {pair: i for i, pair in enumerate(pairs)}
    name = lambda r: replica_names.get(r, f"replica {r}")  # noqa: E731
    events = _metadata(KV_PID, "KV transfers", sort_index, {tid[p]: f"{name(p[0])} → {name(p[1])}" for p in pairs})
    for row in done.itertuples(index=False):
        t = tid[(int(row.replica), int(row.decode_replica))]
        common = {"pid": KV_PID, "tid": t, "cat": "kv_transfer", "name": f"kv r{int(row.request_id)}",
                  "id": int(row.request_id)}
        events.append({**common, "ph": "b", "ts": float(row.kv_start_s) * US,
                       "args": {"request_id": int(row.request_id), "bytes": float(row.kv_bytes),
                                "src_replica": int(row.replica), "dst_replica": int(row.decode_replica),
                                "seconds": float(row.kv_ready_s - row.kv_start_s)}})
        events.append({**common, "ph": "e", "ts": float(row.kv_ready_s) * US})
    return events


def trace_events(requests: pd.DataFrame, steps: pd.DataFrame, *,
                 max_request_tracks: int = DEFAULT_MAX_REQUEST_TRACKS, gpus_per_replica: int | None = None,
                 replica_names: dict[int, str] | None = None) -> list[dict]:
    """All trace events of a run (see the module docstring) from its requests and steps frames."""
    _check(steps, _STEP_COLUMNS, "steps")
    _check(requests, _REQUEST_COLUMNS, "requests")
    if max_request_tracks < 0:
        raise ValueError(f"max_request_tracks must be >= 0, got {max_request_tracks}")
    steps = steps.reset_index(drop=True)
    if "end_s" not in steps:
        steps = steps.assign(end_s=steps["start_s"].to_numpy(float) + steps["duration_s"].to_numpy(float))
    events = []
    replicas = sorted(set(steps["replica"].astype(int)) | set(requests["replica"][requests["replica"] >= 0].astype(int)))
    gpus = f" ({gpus_per_replica} GPU{'s' if gpus_per_replica != 1 else ''})" if gpus_per_replica else ""
    names = replica_names or {}
    threads = {0: "engine steps", 1: "all-to-all"} if "alltoall_s" in steps else {0: "engine steps"}
    for r in replicas:
        events += _metadata(r, names.get(r, f"replica {r}{gpus}"), r, threads)
    events += _step_events(steps, requests)
    if "kv_ready_s" in requests:
        events += _kv_events(requests, names, len(replicas))
    if max_request_tracks:
        events += _metadata(REQUEST_PID, "requests", len(replicas) + 1, {})
        events += _request_events(requests, max_request_tracks)
    return events


def pool_replica_names(summary: dict) -> dict[int, str] | None:
    """Track names of a disaggregated run's replicas from its summary (None for a colocated run)."""
    if "prefill_replicas" not in summary:
        return None
    p, d = int(summary["prefill_replicas"]), int(summary["decode_replicas"])
    gp, gd = int(summary["prefill_gpus_per_replica"]), int(summary["decode_gpus_per_replica"])
    names = {i: f"prefill replica {i} ({gp} GPU{'s' if gp != 1 else ''})" for i in range(p)}
    names.update({p + j: f"decode replica {j} ({gd} GPU{'s' if gd != 1 else ''})" for j in range(d)})
    return names


def trace_json(requests: pd.DataFrame, steps: pd.DataFrame, **kwargs) -> str:
    """The trace as JSON text (Trace Event Format object with ``traceEvents``)."""
    doc = {"traceEvents": trace_events(requests, steps, **kwargs), "displayTimeUnit": "ms",
           "otherData": {"producer": "draftsim", "time": "simulated seconds x 1e6"}}
    return json.dumps(doc, separators=(",", ":"), allow_nan=False)


def write_trace(path: str | Path, requests: pd.DataFrame, steps: pd.DataFrame, **kwargs) -> Path:
    path = Path(path)
    path.write_text(trace_json(requests, steps, **kwargs), encoding="utf-8")
    return path
