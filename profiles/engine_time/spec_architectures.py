"""Which target architectures an engine release runs EAGLE-3 and MTP speculation on
(`profiles/data/engine_time/spec_architectures.yaml`, read in the engines' sources release by release).

`check(framework, version, method, model)` raises `UnsupportedCombination` (field `drafter.kind`) where the
engine refuses `method` (eagle3 or mtp, simulator.cluster.factory.speculation_method) on `model`'s architecture
at start-up: vLLM's EAGLE-3 needs a target that implements SupportsEagle3 (and, before 0.17.0, whose model type
is on its eagle3_target_supported list), SGLang's a target with set_eagle3_layers_to_capture; MTP needs an
architecture whose MTP modules the engine has a class for (DeepSeek-V3, Qwen3-Next, Nemotron-H, ...). Each
refusal names the engine release, the target's architecture and the architectures (with their first releases)
the engine runs the method on. Not checked: other methods, a release the table has no entry for (None), a
model whose architecture draftsim does not know (profiles.engine_time.architectures.architecture is None), an
architecture an entry with `others: unchecked` does not list (TensorRT-LLM's EAGLE-3, cited from its release
notes: only the targets the notes name a first release for), and a pre-release where `prereleases: unchecked`.
Approximations are named in the data file (releases between two read ones; TensorRT-LLM's MTP from one snapshot).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from models.files import load_shipped_yaml
from profiles.engine_time.architectures import architecture
from profiles.engine_time.support import UnsupportedCombination
from profiles.measured.source import is_prerelease, version_key

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "engine_time" / "spec_architectures.yaml"
ANY = "any"                      # `first`: every release that has the method (support.RULES gates the method itself)
METHOD_NAMES = {"eagle3": "EAGLE-3", "mtp": "MTP", "any": "any"}   # `any`: every speculation method
FRAMEWORK_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


KEYS = {"cite", "check", "read", "last_read", "architectures"}
OPTIONAL = {"since", "targets", "others", "prereleases"}


@dataclass(frozen=True)
class Gate:
    """One engine's rule for one method: `archs` (architecture -> first release, or ANY) are the targets it
    runs the method on from `since` (releases before it are not checked); `hybrid_only`: the rule binds targets
    with Mamba / linear-attention layers only (ModelSpec.is_hybrid); `others_unchecked`: an architecture not in
    `archs` is not checked (else refused); `finals_only`: pre-releases are not checked."""

    cite: str
    archs: dict[str, str]
    since: str = "0"
    hybrid_only: bool = False
    others_unchecked: bool = False
    finals_only: bool = False


@lru_cache(maxsize=1)
def table() -> dict[str, dict[str, "Gate"]]:
    """method -> framework -> its Gate, as the data file gives it."""
    raw = load_shipped_yaml(DATA_FILE)
    methods = raw.get("methods") if isinstance(raw, dict) else None
    if not isinstance(methods, dict) or set(methods) - set(METHOD_NAMES):
        raise ValueError(f"{DATA_FILE.name}: expected a 'methods' mapping of {', '.join(METHOD_NAMES)}")
    out: dict[str, dict[str, Gate]] = {}
    for method, engines in methods.items():
        for framework, entry in (engines or {}).items():
            if framework not in FRAMEWORK_NAMES or not isinstance(entry, dict) \
                    or not KEYS <= set(entry) or set(entry) - KEYS - OPTIONAL \
                    or entry.get("targets", "all") not in ("all", "hybrid") \
                    or entry.get("others", "refused") not in ("refused", "unchecked") \
                    or entry.get("prereleases", "checked") not in ("checked", "unchecked"):
                raise ValueError(f"{DATA_FILE.name}: {method}.{framework}: expected {', '.join(sorted(KEYS))}, "
                                 "optionally since, targets (all | hybrid), others (refused | unchecked) and "
                                 "prereleases (checked | unchecked)")
            archs = {}
            for arch, row in entry["architectures"].items():
                if not isinstance(row, dict) or set(row) != {"first", "source"}:
                    raise ValueError(f"{DATA_FILE.name}: {method}.{framework}.{arch}: expected 'first' and 'source'")
                archs[str(arch)] = str(row["first"])
            out.setdefault(method, {})[framework] = Gate(str(entry["cite"]), archs, str(entry.get("since", "0")),
                                                         entry.get("targets", "all") == "hybrid",
                                                         entry.get("others") == "unchecked",
                                                         entry.get("prereleases") == "unchecked")
    return out


def _allowed(archs: dict[str, str]) -> str:
    return ", ".join(arch if first == ANY else f"{arch} (from {first})" for arch, first in archs.items())


def check(framework: str, version: str | None, method: str | None, model, field: str = "drafter.kind") -> None:
    """UnsupportedCombination where `framework` at `version` refuses speculation `method` on `model`'s
    architecture at start-up (module docstring): the method's own gate, then the gate of every method."""
    arch = architecture(model) if model is not None else None
    if method is None or version is None or arch is None:
        return
    for key in (method, "any"):
        gate = table().get(key, {}).get(framework)
        if gate is None or version_key(version) < version_key(gate.since) or (gate.hybrid_only and not model.is_hybrid) \
                or (gate.finals_only and is_prerelease(version)):
            continue
        first = gate.archs.get(arch)
        if (first is None and gate.others_unchecked) \
                or (first is not None and (first == ANY or version_key(version) >= version_key(first))):
            continue
        name = "speculative decoding" if key == "any" else f"{METHOD_NAMES[key]} speculation"
        when = f"from {first}" if first is not None else "in no release read"
        scope = " with Mamba / linear-attention layers" if gate.hybrid_only else ""
        allowed = (f": a version >= {first}" if gate.others_unchecked else   # (unlisted targets unchecked: no list)
                   f" targets{scope}: {_allowed(gate.archs)}")
        raise UnsupportedCombination(
            field, f"{framework} {version} does not run {name} on {arch} ({model.name}): {FRAMEWORK_NAMES[framework]} "
                   f"runs it on that architecture {when} ({gate.cite}; profiles/data/engine_time/"
                   f"spec_architectures.yaml); allowed{allowed}; or another drafter")
