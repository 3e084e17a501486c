"""The engine-time constants of each serving framework and version range, read from
`profiles/data/engine_time/frameworks.yaml` (each constant with its source)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from models.errors import FieldError
from profiles.engine_time.model import EngineTime

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "engine_time" / "frameworks.yaml"
_US_FIELDS = ("step_us", "per_seq_us", "per_token_us", "step_gap_us", "graph_launch_us", "piecewise_per_layer_us",
              "spec_step_us", "spec_per_pass_us")


def _version_key(text: str):
    from profiles.measured.source import version_key
    return version_key(text)


@lru_cache(maxsize=1)
def _entries() -> tuple[dict, ...]:
    raw = yaml.safe_load(DATA_FILE.read_text())
    entries = raw.get("frameworks") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{DATA_FILE.name}: expected a 'frameworks' list")
    return tuple(entries)


def frameworks() -> list[str]:
    return sorted({e["framework"] for e in _entries()})


def _build(entry: dict) -> EngineTime:
    c = entry["constants"]
    missing = [k for k in (*_US_FIELDS, "overlap", "graph_max_tokens", "graph_max_seqs", "spec_host_us") if k not in c]
    if missing:
        raise ValueError(f"{DATA_FILE.name}: {entry['framework']} {entry['versions']} lacks {', '.join(missing)}")
    return EngineTime(entry["framework"], f"{entry['versions'].get('min', '')}..{entry['versions'].get('max', '')}",
                      **{k[:-3] + "_s": float(c[k]) * 1e-6 for k in _US_FIELDS},
                      overlap=bool(c["overlap"]), graph_max_tokens=int(c["graph_max_tokens"]),
                      graph_max_seqs=int(c["graph_max_seqs"]), spec_host_step_s=0.0, spec_host_per_seq_s=0.0,
                      sync_drafters=tuple(c.get("sync_drafters", ())),
                      spec_host_by_drafter={k: (float(v[0]) * 1e-6, float(v[1]) * 1e-6)
                                            for k, v in c["spec_host_us"].items()},
                      sources=dict(entry.get("sources", {})))


def engine_time_for(framework: str, version: str | None = None) -> EngineTime:
    """The constants of `framework` at `version` (None: its newest range). FieldError otherwise."""
    entries = [e for e in _entries() if e["framework"] == framework]
    if not entries:
        raise FieldError("cluster.latency.framework", f"no engine-time model for {framework!r}; "
                                                      f"allowed: {', '.join(frameworks())}")
    if version is None:
        return _build(max(entries, key=lambda e: _version_key(e["versions"].get("min", "0"))))
    v = _version_key(version)
    for e in entries:
        lo, hi = e["versions"].get("min"), e["versions"].get("max")
        if (lo is None or _version_key(lo) <= v) and (hi is None or v < _version_key(hi)):
            return _build(e)
    ranges = ", ".join(f"{e['versions'].get('min', '')}..{e['versions'].get('max', '')}" for e in entries)
    raise FieldError("cluster.latency.version", f"no engine-time model for {framework} {version}; ranges: {ranges}")
