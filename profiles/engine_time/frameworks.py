"""The engine-time constants of each serving framework and version range, read from
`profiles/data/engine_time/frameworks.yaml` (each constant with its source), and the engine of one
deployment (`build_engine`): those constants with the deployment's CUDA-graph policy, scheduling overlap
and host CPU."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from models.errors import FieldError
from models.files import load_shipped_yaml
from profiles.engine_time.graphs import GraphTraits, PrefillContext, graph_policy
from profiles.engine_time.host import get_host, resolve_host
from profiles.engine_time.model import EngineTime

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "engine_time" / "frameworks.yaml"
_US_FIELDS = ("step_us", "per_seq_us", "per_token_us", "step_gap_us", "graph_launch_us", "piecewise_per_layer_us",
              "spec_step_us", "spec_per_pass_us", "eager_kernel_us", "eager_collective_us")
_HOST_WORK = ("step_us", "per_seq_us", "per_token_us")
_LAUNCH = ("eager_kernel_us", "eager_collective_us")


def _version_key(text: str):
    from profiles.measured.source import version_key
    return version_key(text)


# The fields of an entry, each read by this module: a field no code reads would state a fact nothing applies (the
# scheduler and cache defaults an engine runs are rules by release and speculation elsewhere:
# profiles.engine_time.batch_defaults, cache_defaults)
ENTRY_FIELDS = ("framework", "versions", "graphs", "measured_on", "constants", "sources", "newest_release", "latest")


@lru_cache(maxsize=1)
def _entries() -> tuple[dict, ...]:
    raw = load_shipped_yaml(DATA_FILE)
    entries = raw.get("frameworks") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{DATA_FILE.name}: expected a 'frameworks' list")
    for e in entries:
        unread = sorted(set(e) - set(ENTRY_FIELDS))
        if unread:
            raise ValueError(f"{DATA_FILE.name}: {e.get('framework')} {version_range(e)} has fields no code reads: "
                             f"{', '.join(unread)}; allowed: {', '.join(ENTRY_FIELDS)}")
    return tuple(entries)


def engine_entries() -> tuple[dict, ...]:
    """Every engine-time entry of frameworks.yaml, in the file's order (one release range each)."""
    return _entries()


def frameworks() -> list[str]:
    return sorted({e["framework"] for e in _entries()})


def version_range(entry: dict) -> str:
    return f"{entry['versions'].get('min', '')}..{entry['versions'].get('max', '')}"


def newest_release(framework: str) -> str | None:
    """The newest release of `framework` known here (frameworks.yaml `newest_release`: a later one is refused,
    its rules unknown), or None where none is recorded."""
    found = [e["newest_release"] for e in _entries() if e["framework"] == framework and "newest_release" in e]
    return found[0] if found else None


def entry_for(framework: str, version: str | None, field: str = "cluster.engine") -> dict:
    """The constants entry of `framework` at `version` (None: its newest range); FieldError naming
    `field`.framework / `field`.version and what exists."""
    entries = [e for e in _entries() if e["framework"] == framework]
    if not entries:
        raise FieldError(f"{field}.framework", f"no engine-time model for {framework!r}; "
                                               f"allowed: {', '.join(frameworks())}")
    if version is None:
        return max(entries, key=lambda e: _version_key(e["versions"].get("min", "0")))
    v = _version_key(version)
    newest = [found] if (found := newest_release(framework)) is not None else []   # (on the newest entry)
    if newest and v > _version_key(newest[0]):
        first = min(entries, key=lambda e: _version_key(e["versions"].get("min", "0")))["versions"].get("min", "")
        raise FieldError(f"{field}.version", f"{framework} {version} is newer than the newest release known here "
                                             f"({newest[0]}, 2026-11-28); allowed: {first} to {newest[0]}")
    from profiles.engine_time.releases import not_a_release
    problem = not_a_release(framework, version)
    if problem is not None:
        raise FieldError(f"{field}.version", problem)
    for e in entries:
        lo, hi = e["versions"].get("min"), e["versions"].get("max")
        if (lo is None or _version_key(lo) <= v) and (hi is None or v < _version_key(hi)):
            return e
    ranges = ", ".join(version_range(e) for e in entries)
    raise FieldError(f"{field}.version", f"no engine model for {framework} {version}; ranges: {ranges}")


def modelled_release(entry: dict) -> str:
    """The release an engine-time entry stands for when none is given: its `latest` (the newest release whose
    rules were read), else the first of its range."""
    return entry.get("latest") or entry["versions"].get("min", "")


def release_or_modelled(framework: str, version: str | None) -> str:
    """`version`, or (None) the release `framework`'s newest engine-time entry stands for (`modelled_release`):
    the release a rule reads where a deployment names none."""
    return version if version is not None else modelled_release(entry_for(framework, None))


def traits_of(entry: dict) -> GraphTraits:
    g = entry["graphs"]
    return GraphTraits(g["default_mode"], tuple(g["modes"]), g["decode"], g["mixed"], g["unit"], bool(g["padding"]),
                       bool(g["lm_head_in_graph"]), bool(g.get("v1", True)))


@dataclass(frozen=True)
class Deployment:
    """What of the deployment the engine's rules read: the scheduler's limits (max running sequences and
    scheduled tokens), query tokens per decoding request (1 + γ, or a tree's nodes), whether it speculates,
    the GPU's memory and the tensor-parallel degree (SGLang's capture sizes depend on them), and what decides
    SGLang's prefill graphs (`prefill`)."""

    max_num_seqs: int = 256
    max_num_tokens: int = 8192
    q: int = 1
    speculating: bool = False
    gpu_memory_bytes: float = 80 * 2 ** 30   # what CUDA reports (vllm_memory.device_total_bytes); SGLang's gpu_mem
    tp: int = 1
    datacenter_blackwell: bool = False   # an SM 10.x GPU (profiles.engine_time.graphs.DATACENTER_BLACKWELL)
    prefill: PrefillContext = PrefillContext()


@dataclass(frozen=True)
class EngineSettings:
    """`cluster.engine` as the core sees it (simulator.config.engine validates it): None = the version's
    default."""

    framework: str
    version: str | None = None
    cuda_graphs: str | None = None
    capture_sizes: tuple[int, ...] | None = None
    graph_padding: bool | None = None
    async_scheduling: bool | None = None
    host_cpu: object = None              # None, a catalog id, or calibration_us (float)


def _build(entry: dict, settings: EngineSettings, deployment: Deployment) -> EngineTime:
    c = entry["constants"]
    missing = [k for k in (*_US_FIELDS, "overlap", "spec_host_us") if k not in c]
    if missing:
        raise ValueError(f"{DATA_FILE.name}: {entry['framework']} {version_range(entry)} lacks {', '.join(missing)}")
    measured = entry["measured_on"]
    host = resolve_host(settings.host_cpu)
    work_scale = host.scale_from(get_host(measured["host_work"]))
    launch_scale = host.scale_from(get_host(measured["launch"]))
    values = {}
    for k in _US_FIELDS:
        scale = work_scale if k in _HOST_WORK else launch_scale if k in _LAUNCH else 1.0
        values[k[:-3] + "_s"] = float(c[k]) * 1e-6 * scale
    version = settings.version or modelled_release(entry)
    policy = graph_policy(entry["framework"], version, traits_of(entry),
                          mode=settings.cuda_graphs, capture_sizes=settings.capture_sizes,
                          padding=settings.graph_padding, max_num_seqs=deployment.max_num_seqs,
                          max_tokens=deployment.max_num_tokens, q=deployment.q, speculating=deployment.speculating,
                          gpu_memory_bytes=deployment.gpu_memory_bytes, tp=deployment.tp,
                          datacenter_blackwell=deployment.datacenter_blackwell, prefill=deployment.prefill)
    overlap = bool(c["overlap"]) if settings.async_scheduling is None else settings.async_scheduling
    return EngineTime(entry["framework"], version_range(entry), **values, overlap=overlap, graphs=policy,
                      spec_host_step_s=0.0, spec_host_per_seq_s=0.0, host_scale=work_scale, host=host.id,
                      version=version,
                      sync_drafters=tuple(c.get("sync_drafters", ())), sync_trees=bool(c.get("sync_trees", False)),
                      spec_host_by_drafter={k: (float(v[0]) * 1e-6 * work_scale, float(v[1]) * 1e-6 * work_scale)
                                            for k, v in c["spec_host_us"].items()},
                      sources=dict(entry.get("sources", {})))


def build_engine(settings: EngineSettings, deployment: Deployment = Deployment()) -> EngineTime:
    """The engine of a deployment (FieldError naming the cluster.engine field on an unknown framework or
    version)."""
    return _build(entry_for(settings.framework, settings.version), settings, deployment)


def engine_time_for(framework: str, version: str | None = None) -> EngineTime:
    """The constants of `framework` at `version` (None: its newest range) with the version's defaults, on
    the default host. FieldError naming the field."""
    try:
        entry = entry_for(framework, version, "cluster.latency")
    except FieldError as exc:
        raise FieldError(exc.field, exc.message.replace("no engine model", "no engine-time model")) from None
    return _build(entry, EngineSettings(framework, version), Deployment())
