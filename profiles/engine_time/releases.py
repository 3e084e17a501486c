"""The releases each serving framework has shipped (`profiles/data/engine_time/releases.yaml`, written by
`python -m profiles.engine_time.fetch_releases` from PyPI, plus TensorRT-LLM candidates published on NVIDIA's
index only, each with its source).

An engine version inside a modelled range that no release carries (vLLM 0.7.9: 0.7.3 was followed by 0.8.0;
TensorRT-LLM 0.99.0) was modelled as its range, exit 0: `not_a_release` names the field's problem and the
nearest releases instead. A version the installed measured tables carry (aiconfigurator-core's folders, such as
vLLM 0.1.dev19262, a development build) is taken as well: the tables' version is the engine's by default.
Versions compare as PEP 440 does (`0.11` is 0.11.0; `v0.11.0` too).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from models.files import load_shipped_yaml

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "engine_time" / "releases.yaml"
PACKAGES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt-llm"}   # framework -> its PyPI distribution


@lru_cache(maxsize=1)
def _data() -> dict:
    raw = load_shipped_yaml(DATA_FILE)
    frameworks = raw.get("frameworks") if isinstance(raw, dict) else None
    if not isinstance(frameworks, dict) or set(frameworks) != set(PACKAGES):
        raise ValueError(f"{DATA_FILE.name}: expected 'frameworks' with {', '.join(PACKAGES)}")
    return raw


@lru_cache(maxsize=None)
def releases(framework: str) -> tuple:
    """The releases of `framework` as packaging Versions, oldest first: PyPI's and those of other indexes
    (`elsewhere`, each with its source)."""
    from packaging.version import Version
    entry = _data()["frameworks"][framework]
    texts = list(entry["pypi"]) + [v for other in entry.get("elsewhere", []) for v in other["versions"]]
    return tuple(sorted({Version(str(v)) for v in texts}))


@lru_cache(maxsize=None)
def _table_versions(framework: str) -> frozenset[str]:
    """The versions of `framework` the installed measured tables carry (folder names, any GPU and family)."""
    from profiles.measured.source import data_root
    root = data_root()
    if root is None:
        return frozenset()
    return frozenset(p.name for p in root.glob(f"*/*/{framework}/*") if p.is_dir())


def not_a_release(framework: str, version: str) -> str | None:
    """None when `version` is a release of `framework` (or a version its measured tables carry), else why not,
    with the nearest releases: the text of a one-line error naming the field."""
    if framework not in PACKAGES:
        return None   # (no list: an engine without one is refused by its own field)
    from packaging.version import InvalidVersion, Version
    if str(version) in _table_versions(framework):
        return None
    known = releases(framework)
    try:
        wanted = Version(str(version))
    except InvalidVersion:
        return f"{version!r} is not a version; allowed: a {framework} release such as {known[-1]}"
    if wanted in known:
        return None
    below = [v for v in known if v < wanted]
    above = [v for v in known if v > wanted]
    nearest = " and ".join(str(v) for v in (below[-1:] + above[:1]))
    return (f"{framework} {version} is not a release ({PACKAGES[framework]} had {len(known)} on "
            f"{_data()['fetched']}: profiles/data/engine_time/{DATA_FILE.name}); allowed: a release, the nearest "
            f"{nearest}")
