"""The first vLLM release that can load each model architecture (`profiles/data/engine_time/vllm_architectures.yaml`,
read in vLLM's model registry, release by release: each entry names the release that lists it and the one before
that does not).

`check(framework, version, model, field)` raises `UnsupportedCombination` where the engine is vLLM and `version`
predates the architecture of `model` (a ModelSpec: its architecture is the Hugging Face class of its family,
models.hf_config.ARCHITECTURES). Other engines, and architectures the data file does not list (Llama, Mistral,
Mixtral, Qwen2: in every release read), are not checked.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from models.files import load_shipped_yaml
from profiles.engine_time.support import UnsupportedCombination
from profiles.measured.source import version_key

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "engine_time" / "vllm_architectures.yaml"


@lru_cache(maxsize=1)
def first_releases() -> dict[str, str]:
    """Hugging Face architecture -> the first vLLM release whose model registry lists it."""
    raw = load_shipped_yaml(DATA_FILE)
    archs = raw.get("architectures") if isinstance(raw, dict) else None
    if not isinstance(archs, dict):
        raise ValueError(f"{DATA_FILE.name}: expected an 'architectures' mapping")
    out = {}
    for name, entry in archs.items():
        if not isinstance(entry, dict) or set(entry) != {"first", "source"}:
            raise ValueError(f"{DATA_FILE.name}: {name}: expected 'first' and 'source'")
        out[str(name)] = str(entry["first"])
    return out


# The catalog's model families (models/catalog/*.yaml `family`) that are not a family of models.hf_config.ARCHITECTURES,
# by the Hugging Face architecture of their published config.json (each entry's `source`): Llama 2/3.x, Vicuna,
# llama-68m and SmolLM2 ship LlamaForCausalLM; Qwen2.5 ships Qwen2ForCausalLM
CATALOG_FAMILIES = {"llama-2": "LlamaForCausalLM", "llama-3": "LlamaForCausalLM", "llama-3.1": "LlamaForCausalLM",
                    "llama-3.2": "LlamaForCausalLM", "llama-3.3": "LlamaForCausalLM", "vicuna": "LlamaForCausalLM",
                    "llama-draft": "LlamaForCausalLM", "smollm2": "LlamaForCausalLM", "qwen2.5": "Qwen2ForCausalLM"}


@lru_cache(maxsize=1)
def _architecture_of_family() -> dict[str, str]:
    from models.hf_config import ARCHITECTURES
    out: dict[str, str] = dict(CATALOG_FAMILIES)
    for arch, (family, _) in ARCHITECTURES.items():
        out.setdefault(family, arch)
    return out


def architecture(model) -> str | None:
    """The Hugging Face architecture of a ModelSpec (by its family: an imported config.json's, or a catalog
    family of CATALOG_FAMILIES), None where draftsim does not know it."""
    return _architecture_of_family().get(getattr(model, "family", None))


def check(framework: str, version: str | None, model, field: str = "cluster.engine.version") -> None:
    """UnsupportedCombination where vLLM `version` predates `model`'s architecture (module docstring)."""
    if framework != "vllm" or version is None or model is None:
        return
    arch = architecture(model)
    first = first_releases().get(arch) if arch is not None else None
    if first is not None and version_key(version) < version_key(first):
        raise UnsupportedCombination(field, f"vllm {version} has no {arch} ({model.name}): vLLM's model registry "
                                            f"lists it from v{first}; allowed: a version >= {first}")
