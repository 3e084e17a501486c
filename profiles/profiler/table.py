"""The profile table (CSV, one row per op kind + shape) and the device fingerprint that goes with it.

Columns: `kind`, the kind's dims (the names of `models.ops`, blank where a kind does not use one, plus
`vocab` for embedding and `greedy` for sampling, which the bench needs), `flops` and `bytes` of the op as
the op graph counts them, then `median_s`, `p10_s`, `p90_s`, `reps`. CSV rather than parquet: small,
diffable in review, and readable without pyarrow.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

TABLE_FILE = "ops.csv"
FINGERPRINT_FILE = "fingerprint.json"
DIM_COLUMNS = ("m", "n", "k", "bias", "groups", "seqs", "q_tokens", "attn_pairs", "q_per_seq", "ctx_per_seq", "heads",
               "kv_heads", "head_dim", "tree", "tokens", "hidden", "width", "vocab", "greedy", "experts",
               "top_k", "bytes_msg", "ranks", "layers")
# Dim columns added after profiles were first shipped: a table without them reads them as blank.
LATER_DIM_COLUMNS = ("layers",)
STAT_COLUMNS = ("median_s", "p10_s", "p90_s", "reps")
COLUMNS = ("kind",) + DIM_COLUMNS + ("flops", "bytes") + STAT_COLUMNS
# Row kind of the host overhead of whole passes (profiles.profiler.host_overhead); not an op graph kind.
HOST_OVERHEAD = "host_overhead"
# Collective ops name their message size dim "bytes", which would clash with the op's bytes-moved column.
MESSAGE_DIM = "bytes"


def row_dims(row: Mapping[str, object]) -> dict[str, float]:
    """The op dims of one table row (message size renamed back to `bytes` for collectives)."""
    dims = {}
    for col in DIM_COLUMNS:
        value = row.get(col)
        if value is None or pd.isna(value):
            continue
        dims[MESSAGE_DIM if col == "bytes_msg" else col] = float(value)
    return dims


def make_row(kind: str, dims: Mapping[str, float], flops: float, bytes_: float, median_s: float,
             p10_s: float, p90_s: float, reps: int) -> dict:
    row: dict = {"kind": kind}
    for key, value in dims.items():
        col = "bytes_msg" if key == MESSAGE_DIM else key
        if col not in DIM_COLUMNS:
            raise ValueError(f"unknown profile dim {key!r}; allowed: {', '.join(DIM_COLUMNS)}")
        row[col] = float(value)
    row.update(flops=float(flops), bytes=float(bytes_), median_s=float(median_s), p10_s=float(p10_s),
               p90_s=float(p90_s), reps=int(reps))
    return row


PARTIAL_FILE = "ops.partial.csv"   # rows so far of a long run (removed when ops.csv is written)


def write_table(rows: Iterable[Mapping], out_dir: str | os.PathLike, name: str = TABLE_FILE) -> Path:
    frame = pd.DataFrame(list(rows), columns=list(COLUMNS))
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    frame.to_csv(tmp, index=False, float_format="%.12g")   # dims such as attn_pairs exact up to 1e12
    os.replace(tmp, path)
    return path


def read_table(profile_dir: str | os.PathLike) -> pd.DataFrame:
    path = Path(profile_dir) / TABLE_FILE
    if not path.is_file():
        raise ValueError(f"profile_dir {str(profile_dir)!r} has no {TABLE_FILE}")
    try:
        frame = pd.read_csv(path)
    except (ValueError, OSError) as exc:   # (binary, not UTF-8, rows of other lengths: pandas' own words)
        raise ValueError(f"profile table {path} cannot be read as CSV ({str(exc).splitlines()[0]})") from None
    for col in LATER_DIM_COLUMNS:
        if col not in frame.columns:
            frame[col] = float("nan")
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"profile table {path} lacks columns {missing}")
    return frame


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(args: list[str], repo: str | os.PathLike | None) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=repo or Path(__file__).resolve().parents[2],
                             capture_output=True, text=True, timeout=5, check=True)
        return out.stdout
    except (OSError, subprocess.SubprocessError):
        return None


def git_commit(repo: str | os.PathLike | None = None) -> str:
    out = _git(["rev-parse", "HEAD"], repo)
    return out.strip() if out is not None else "unknown"


def git_dirty(repo: str | os.PathLike | None = None) -> bool | None:
    """Whether tracked files differ from `git_commit` (None: not known). A copy of a working tree whose git
    metadata is older than its files (the device machine's copy, 2026-11-27: every H100 fingerprint named
    the session's first commit) says so here."""
    out = _git(["status", "--porcelain", "--untracked-files=no"], repo)
    return None if out is None else bool(out.strip())


def fingerprint(device_id: str, device_name: str, torch_version: str, threads: int, dtype: str,
                models: Iterable[str], llc_bytes: int, extra: Mapping | None = None) -> dict:
    return {
        "device_id": device_id,
        "device_name": device_name,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_version": torch_version,
        "threads": int(threads),
        "dtype": dtype,
        "models": list(models),
        "llc_bytes": int(llc_bytes),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "git_dirty": git_dirty(),
        "python": platform.python_version(),
        **(dict(extra) if extra else {}),
    }


def write_fingerprint(fp: Mapping, out_dir: str | os.PathLike) -> Path:
    """fingerprint.json, written to a temporary file and renamed into place (as `write_table`): an interrupted
    write left the profile's fingerprint.json cut short, or empty."""
    path = Path(out_dir) / FINGERPRINT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(fp, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def read_fingerprint(profile_dir: str | os.PathLike) -> dict:
    from models.files import read_document
    path = Path(profile_dir) / FINGERPRINT_FILE
    if not path.is_file():
        raise ValueError(f"profile_dir {str(profile_dir)!r} has no {FINGERPRINT_FILE}")
    found = read_document(path, "JSON")   # (ValueError naming the file: '{bad' said only 'Expecting property name')
    if not isinstance(found, dict):
        raise ValueError(f"{path} is not a profile's fingerprint (a JSON object)")
    return found
