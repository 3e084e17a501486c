"""Where the measured GPU kernel tables live and which of them a run uses.

The tables are real per-kernel measurements published in the PyPI package `aiconfigurator-core`
(NVIDIA, Apache-2.0; extra `gpu-data`): `aiconfigurator_core/systems/data/<system>/<family>/<framework>/
<version>/*.parquet`, one folder per GPU system, op family (gemm, attention, comm, moe…), serving
framework (vllm, sglang, trtllm) and framework version, latencies in milliseconds. draftsim reads them
from the installed package (never a copy in this repository) and records the package version with every
run (`latency_source`).

Version resolution (`resolve`): a run names a framework and optionally a version; the default is the
newest version of that framework that has both GEMM and attention tables for the system. Each op family
then uses the chosen version if it was measured there, else the newest *older* version of the same
framework that has it (backward fill, the package's own convention; never a newer version), and the
summary says which version priced which family.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from models.errors import FieldError

PACKAGE = "aiconfigurator_core"
DISTRIBUTION = "aiconfigurator-core"
INSTALL_HINT = "pip install -e '.[gpu-data]'"

# draftsim hardware id -> the package's system folder. Systems whose folders hold no tables in the
# installed version (a100_pcie, h100_pcie, a30, l4) are not mapped.
SYSTEMS: dict[str, str] = {
    "h100-sxm": "h100_sxm",
    "h800": "h100_sxm",
    "h200": "h200_sxm",
    "a100-80gb": "a100_sxm",
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb200": "gb200",
    "gb300": "gb300",
    "l40s": "l40s",
    "rtx-pro-6000": "rtx_pro_6000_server",
}
# Hardware priced from another system's kernel tables (same die, clocks and HBM) but not its collectives:
# the H800 is an H100 SXM with NVLink cut to 400 GB/s, so its collectives fall back to the roofline.
KERNELS_ONLY = frozenset({"h800"})
FRAMEWORKS = ("vllm", "sglang", "trtllm")

# Op families draftsim reads, and the parquet file of each (relative to <family>/<framework>/<version>/).
GEMM = "gemm"
CONTEXT_ATTENTION = "context_attention"
GENERATION_ATTENTION = "generation_attention"
CUSTOM_ALLREDUCE = "custom_allreduce"
MOE = "moe"
LINEAR_ATTENTION = "linear_attention"
FAMILY_FILES: dict[str, tuple[str, str]] = {
    GEMM: ("gemm", "gemm_perf.parquet"),
    CONTEXT_ATTENTION: ("attention", "context_attention_perf.parquet"),
    GENERATION_ATTENTION: ("attention", "generation_attention_perf.parquet"),
    CUSTOM_ALLREDUCE: ("comm", "custom_allreduce_perf.parquet"),
    MOE: ("moe", "moe_perf.parquet"),
    LINEAR_ATTENTION: ("linear_attention", "gdn_perf.parquet"),   # gated DeltaNet kernels (hybrid models)
}
REQUIRED_FAMILIES = (GEMM, GENERATION_ATTENTION)  # a framework version is offered only with these
NCCL = "nccl"  # comm/nccl/<nccl version>/nccl_perf.parquet: framework-independent collectives


class MeasuredDataError(FieldError):
    """The measured source cannot serve a request; `field` names the scenario field to change."""


@lru_cache(maxsize=1)
def package_root() -> Path | None:
    """The installed package's folder, or None when `aiconfigurator-core` is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@lru_cache(maxsize=1)
def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def data_root() -> Path | None:
    root = package_root()
    if root is None:
        return None
    data = root / "systems" / "data"
    return data if data.is_dir() else None


def version_before(version: str, other: str) -> bool:
    """Release `version` comes before release `other` (by `version_key`)."""
    return version_key(version) < version_key(other)


def version_in_span(version: str, since: str | None, until: str | None) -> bool:
    """Release `version` is `since` or later and before `until` (None: unbounded on that side; by `version_key`)."""
    v = version_key(version)
    return (since is None or version_key(since) <= v) and (until is None or v < version_key(until))


def version_within(version: str, first: str, last: str | None) -> bool:
    """Release `version` is one of `first` to `last`, both included (`last` None: every later one; by `version_key`)."""
    v = version_key(version)
    return version_key(first) <= v and (last is None or v <= version_key(last))


def is_prerelease(version: str) -> bool:
    """`version` is a pre-release (rc, dev: PEP 440), which release notes that describe final releases do not cover."""
    key = version_key(version)
    return key[0] == 1 and key[1].is_prerelease


def version_key(text: str):
    """Sort key of a framework version string (PEP 440: 1.3.0rc20 < 1.3.0rc23 < 1.3.0; 0.5.6.post2)."""
    from packaging.version import InvalidVersion, Version  # a dependency of aiconfigurator-core and pip tools
    try:
        return (1, Version(str(text)))
    except InvalidVersion:
        return (0, str(text))


def _family_versions(system_dir: Path, family: str, framework: str) -> list[str]:
    folder, filename = FAMILY_FILES[family]
    base = system_dir / folder / framework
    if not base.is_dir():
        return []
    return sorted((d.name for d in base.iterdir() if (d / filename).is_file()), key=version_key)


def table_framework(path: Path) -> str:
    """The framework whose collector measured the table file `path` (the package's <system>/<family folder>/
    <framework>/<version>/<file> layout, `_family_versions`)."""
    return path.parent.parent.name


@lru_cache(maxsize=None)
def framework_versions(system: str, framework: str, root: Path) -> tuple[str, ...]:
    """Versions of `framework` with every required family measured on `system`, oldest first."""
    system_dir = root / system
    have = [set(_family_versions(system_dir, family, framework)) for family in REQUIRED_FAMILIES]
    return tuple(sorted(set.intersection(*have), key=version_key)) if have else ()


@dataclass(frozen=True)
class ResolvedSource:
    """The tables one run reads: package folder, system, framework, version and each family's file."""

    root: Path
    hardware_id: str
    system: str
    framework: str
    version: str
    family_paths: tuple[tuple[str, Path], ...]     # family -> parquet actually used
    family_versions: tuple[tuple[str, str], ...]   # family -> version it was measured with
    nccl_path: Path | None
    nccl_version: str | None

    def path(self, family: str) -> Path | None:
        return dict(self.family_paths).get(family)

    def label(self, family: str) -> str:
        version = dict(self.family_versions).get(family, self.version)
        return f"{DISTRIBUTION} {package_version()} {self.system}/{self.framework} {version}"


def available(hardware_id: str) -> dict[str, tuple[str, ...]]:
    """framework -> versions measured for `hardware_id` (empty when the package or the system is absent)."""
    root = data_root()
    system = SYSTEMS.get(hardware_id)
    if root is None or system is None or not (root / system).is_dir():
        return {}
    found = {fw: framework_versions(system, fw, root) for fw in FRAMEWORKS}
    return {fw: versions for fw, versions in found.items() if versions}


def _listing(found: dict[str, tuple[str, ...]]) -> str:
    return "; ".join(f"{fw}: {', '.join(v)}" for fw, v in found.items()) or "none"


def resolve(hardware_id: str, framework: str = "vllm", version: str | None = None) -> ResolvedSource:
    """The tables for `hardware_id` under `framework` (`version` or the newest). MeasuredDataError naming
    the field when the package, the system, the framework or the version is missing."""
    root = data_root()
    if root is None:
        raise MeasuredDataError("cluster.latency.source", f"'measured' needs the {DISTRIBUTION} package "
                                f"({INSTALL_HINT}); or use source: roofline")
    system = SYSTEMS.get(hardware_id)
    if system is None or not (root / system).is_dir():
        have = sorted(h for h in SYSTEMS if (root / SYSTEMS[h]).is_dir() and available(h))
        raise MeasuredDataError("cluster.hardware", f"no measured kernel tables for {hardware_id!r}; measured "
                                f"hardware: {', '.join(have)} (or use cluster.latency.source: roofline)")
    found = available(hardware_id)
    if framework not in found:
        raise MeasuredDataError("cluster.latency.framework", f"{framework!r} has no measured tables on "
                                f"{hardware_id}; available: {_listing(found)}")
    versions = found[framework]
    chosen = versions[-1] if version is None else \
        next((v for v in versions if version_key(v) == version_key(version)), version)   # ("0.24" is 0.24.0)
    if chosen not in versions:
        raise MeasuredDataError("cluster.latency.version", f"{framework} {chosen!r} was not measured on "
                                f"{hardware_id}; available: {', '.join(versions)}")
    system_dir = root / system
    paths, used = [], []
    for family, (folder, filename) in FAMILY_FILES.items():
        older = [v for v in _family_versions(system_dir, family, framework)
                 if version_key(v) <= version_key(chosen)]
        if older:
            paths.append((family, system_dir / folder / framework / older[-1] / filename))
            used.append((family, older[-1]))
    nccl_versions = sorted((d.name for d in (system_dir / "comm" / NCCL).glob("*")
                            if (d / "nccl_perf.parquet").is_file()), key=version_key)
    nccl = nccl_versions[-1] if nccl_versions else None
    return ResolvedSource(root, hardware_id, system, framework, chosen, tuple(paths), tuple(used),
                          system_dir / "comm" / NCCL / nccl / "nccl_perf.parquet" if nccl else None, nccl)
