"""The first release of each engine that can load each model architecture, one data file per engine beside this
module (`profiles/data/engine_time/<framework>_architectures.yaml`): vLLM's and SGLang's read in their model
registries release by release (each entry names the release that lists it and the one before that does not),
TensorRT-LLM's in its release notes (its wheels are not on PyPI; only final releases are checked there, and only
those the notes cite: `last_without`).

`check(framework, version, model, field, model_field)` raises `UnsupportedCombination` where `version` predates
the architecture of `model` (a ModelSpec: its architecture is the Hugging Face class of its family,
models.hf_config.ARCHITECTURES), naming `field` (cluster.engine.version), or where no release read has it at all
(`first: none`), naming `model_field` (cluster.model, or drafter.model for a draft model). Architectures a data
file does not list (in every release read, or whose first release could not be cited) are not checked.

The same check, with the same data form beside it (`vllm_v1_architectures.yaml`, section `v1_architectures`),
refuses a vLLM release whose default engine is V1 (from 0.8.0) but whose V1 engine cannot load the architecture
(its class is SupportsV0Only: vLLM falls back to the V0 engine, which draftsim does not model from 0.8.0).

The same check, with the same data form beside it (`<framework>_rope_types.yaml`, section `rope_types`), refuses
a release before the first that runs the model's rope scaling type (ModelSpec.rope_scaling_type, config.json's
rope_scaling: models.context_config): the engine's `get_rope` raises 'Unknown RoPE scaling type' for a type it
does not know, so the release cannot build the model (vLLM 0.2.0 and Llama 3.1's llama3 block). A row's `last`
refuses the releases after it too (vLLM's `extended`, 0.5.3 only); `first: none` refuses every release, naming the
model's field (SGLang has no `extended`). Checked before
any memory, pricing or context work (profiles.engine_time.context_length derives no context for such a release).

TensorRT-LLM loads config.json's `architectures[0]` only (FIRST_ENTRY_ONLY): a model whose config.json draftsim read
from a later entry (ModelSpec.hf_first_architecture; vLLM and SGLang try each entry, models.hf_config) is refused
there, naming `model_field`; so are the releases that do not serve a config.json's sliding_window of 0 or null on
sliding layers (profiles.engine_time.sliding_window_unset).
"""
from __future__ import annotations

from dataclasses import dataclass, field as default
from functools import lru_cache
from pathlib import Path

from models.files import load_shipped_yaml
from profiles.engine_time import sliding_window_unset
from profiles.engine_time.support import UnsupportedCombination
from profiles.measured.source import is_prerelease, version_key

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "engine_time"
FRAMEWORKS = ("vllm", "sglang", "trtllm")
NEVER = "none"                   # `first`: no release read has the architecture
ROW_KEYS = {"first", "source"}   # and optionally last_without or last (the newest release that has it)


# what a data file gates: its file suffix and the section that lists the keys
ARCHITECTURES, ROPE_TYPES, V1_ARCHITECTURES = "architectures", "rope_types", "v1_architectures"
V1_ENGINES = ("vllm",)   # the engines with a V1_ARCHITECTURES file (vLLM's V1 engine, the default from V1_FROM)


def data_file(framework: str, kind: str = ARCHITECTURES) -> Path:
    return DATA_DIR / f"{framework}_{kind}.yaml"


@dataclass(frozen=True)
class Registry:
    """One engine's data file: `registry` (what was read, quoted in the refusal), `firsts` (architecture -> its
    first release, or NEVER), `last_without` (architecture -> the newest release cited to lack it, where releases
    between it and `first` were not read), `lasts` (key -> the newest release that has it, where a later release
    dropped it), `finals_only`: pre-releases are not checked."""

    registry: str
    firsts: dict[str, str]
    last_without: dict[str, str]
    finals_only: bool = False
    lasts: dict[str, str] = default(default_factory=dict)


@lru_cache(maxsize=None)
def registry(framework: str, kind: str = ARCHITECTURES) -> Registry | None:
    """`framework`'s data file of `kind` (ARCHITECTURES, ROPE_TYPES), None for an engine that has none."""
    if framework not in FRAMEWORKS:
        return None
    path = data_file(framework, kind)
    raw = load_shipped_yaml(path)
    archs = raw.get(kind) if isinstance(raw, dict) else None
    if not isinstance(archs, dict) or not isinstance(raw.get("registry"), str) \
            or raw.get("prereleases", "checked") not in ("checked", "unchecked"):
        raise ValueError(f"{path.name}: expected 'registry', a '{kind}' mapping and optionally "
                         "prereleases (checked | unchecked)")
    firsts, last_without, lasts = {}, {}, {}
    for name, entry in archs.items():
        if not isinstance(entry, dict) or not ROW_KEYS <= set(entry) \
                or set(entry) - ROW_KEYS - {"last_without", "last"} \
                or (str(entry["first"]) == NEVER and ("last_without" in entry or "last" in entry)):
            raise ValueError(f"{path.name}: {name}: expected 'first' and 'source', optionally 'last_without' and "
                             "'last'")
        firsts[str(name)] = str(entry["first"])
        if "last_without" in entry:
            last_without[str(name)] = str(entry["last_without"])
        if "last" in entry:
            lasts[str(name)] = str(entry["last"])
    return Registry(raw["registry"], firsts, last_without, raw.get("prereleases") == "unchecked", lasts)


def first_releases(framework: str = "vllm") -> dict[str, str]:
    """Hugging Face architecture -> the first `framework` release whose registry lists it (NEVER: none read)."""
    found = registry(framework)
    return dict(found.firsts) if found is not None else {}


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


def _through(version: str, bound: str) -> bool:
    """`version` is `bound` or older, its .postN releases included (a post release rebuilds the same release)."""
    key = version_key(version)
    if key[0] != 1:
        return False
    return version_key(key[1].base_version) <= version_key(bound)


def check(framework: str, version: str | None, model, field: str = "cluster.engine.version",
          model_field: str = "cluster.model") -> None:
    """UnsupportedCombination where `framework` at `version` cannot load `model`'s architecture or run its rope
    scaling type (module docstring)."""
    _check_first_entry(framework, version, model, model_field)
    sliding_window_unset.check(framework, version, model, model_field)
    table = registry(framework)
    if table is None or version is None or model is None:
        return
    arch = architecture(model)
    if arch is not None and table.firsts.get(arch) == NEVER:
        raise UnsupportedCombination(model_field, f"{framework} {version} has no {arch} ({model.name}): "
                                                  f"{table.registry} has it in no release read; allowed: a model "
                                                  f"of another architecture{_elsewhere(framework, arch)}")
    if arch is not None:
        _check_release(table, framework, version, arch, f"has no {arch} ({model.name})", field)
    if arch is not None and framework in V1_ENGINES:
        _check_v1(framework, version, arch, model, field)
    rope = getattr(model, "rope_scaling_type", "")
    if rope:
        what = f"cannot run {model.name}'s rope scaling type {rope}"
        ropes = registry(framework, ROPE_TYPES)
        if ropes is not None and ropes.firsts.get(rope) == NEVER:
            raise UnsupportedCombination(model_field, f"{framework} {version} {what}: {ropes.registry} has it in no "
                                                      f"release read; allowed: a model of another rope scaling type"
                                                      f"{_elsewhere(framework, rope, ROPE_TYPES)}")
        _check_release(ropes, framework, version, rope, what, field)


# engines that load config.json's architectures[0] only, with where they read it (vLLM and SGLang try each entry:
# models.hf_config)
FIRST_ENTRY_ONLY = {"trtllm": "AutoModelForCausalLM, tensorrt_llm/_torch/models/modeling_auto.py; "
                              "tensorrt_llm/models/automodel.py before 1.0"}


def _check_first_entry(framework: str, version: str | None, model, model_field: str) -> None:
    """UnsupportedCombination naming `model_field` where `framework` reads config.json's architectures[0] only and
    draftsim read a later entry of `model`'s (ModelSpec.hf_first_architecture): the engine would not load it."""
    first = getattr(model, "hf_first_architecture", "")
    if not first or framework not in FIRST_ENTRY_ONLY:
        return
    others = " or ".join(f for f in FRAMEWORKS if f not in FIRST_ENTRY_ONLY)
    raise UnsupportedCombination(model_field, f"{framework} {version or ''}".rstrip() + f" loads config.json's "
                                 f"architectures[0] only ({first!r}, not {architecture(model) or model.family} of "
                                 f"{model.name}: {FIRST_ENTRY_ONLY[framework]}); allowed: a config.json that lists "
                                 f"{architecture(model) or model.family} first, or the engine {others} (which try "
                                 "each entry)")


def _check_release(table: Registry | None, framework: str, version: str, key: str, what: str, field: str) -> None:
    """UnsupportedCombination naming `field` where `table` cites `version` to predate `key` (`what`: the refusal's
    subject, after the release)."""
    first = table.firsts.get(key) if table is not None else None
    if first is None or first == NEVER or (table.finals_only and is_prerelease(version)):
        return
    bound = table.last_without.get(key)
    if bound is not None:
        if _through(version, bound):
            raise UnsupportedCombination(field, f"{framework} {version} {what}: {table.registry} has it from "
                                                f"v{first}, not in v{bound} or earlier; allowed: a version after {bound}")
        return
    last = table.lasts.get(key)
    if last is not None and not version_key(first) <= version_key(version) <= version_key(last):
        raise UnsupportedCombination(field, f"{framework} {version} {what}: {table.registry} has it in "
                                            f"{_span(first, last, 'v')} only; allowed: {_span(first, last)}")
    if version_key(version) < version_key(first):
        raise UnsupportedCombination(field, f"{framework} {version} {what}: {table.registry} lists it from "
                                            f"v{first}; allowed: a version >= {first}")


def _span(first: str, last: str, v: str = "") -> str:
    """'v0.5.3' / 'version 0.5.3' for one release, else 'v0.5.3 to v0.6.0' / 'a version 0.5.3 to 0.6.0'."""
    if first == last:
        return f"{v}{first}" if v else f"version {first}"
    return f"{v}{first} to {v}{last}" if v else f"a version {first} to {last}"


def _check_v1(framework: str, version: str, arch: str, model, field: str) -> None:
    """UnsupportedCombination naming `field` where `version` is a release whose default engine is V1 (from
    batch_defaults.V1_FROM) but whose V1 engine cannot load `arch` (<framework>_v1_architectures.yaml): the engine
    falls back to V0, which draftsim does not model there."""
    from profiles.engine_time.batch_defaults import V1_FROM
    table = registry(framework, V1_ARCHITECTURES)
    first = table.firsts.get(arch) if table is not None else None
    if first is None or not version_key(V1_FROM) <= version_key(version) < version_key(first):
        return
    older = registry(framework).firsts.get(arch, "0")   # (the release that added it, where the registry says)
    before = f"a version {older} to {V1_FROM} (excl.), or " if older != NEVER and older != "0" \
        and version_key(older) < version_key(V1_FROM) else ""
    raise UnsupportedCombination(field, f"{framework} {version} runs {arch} ({model.name}) on its V0 engine only "
                                        f"(the class is SupportsV0Only: {table.registry} falls back to V0, which "
                                        f"draftsim does not model from {V1_FROM}; V1 loads it from v{first}); "
                                        f"allowed: {before}a version >= {first}")


def _elsewhere(framework: str, arch: str, kind: str = ARCHITECTURES) -> str:
    """', or the engine vllm (from 0.5.1)' for each other engine whose data file of `kind` has `arch` (one that
    lists it with a `last`: 'vllm (0.5.3 only)')."""
    found = [f"{other} ({_span(table.firsts[arch], table.lasts[arch])} only)" if arch in table.lasts
             else f"{other} (from {table.firsts[arch]})" for other in FRAMEWORKS
             if other != framework and (table := registry(other, kind)) is not None
             and table.firsts.get(arch) not in (None, NEVER)]
    return f", or the engine {' or '.join(found)}" if found else ""
