"""The model catalog: YAML files in this folder, one per family, each entry a `ModelSpec` by name.

Loaded once, on first use (a few ms), so that importing `models` stays cheap.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path

from models.errors import UnknownNameError, catalog_key
from models.files import load_shipped_yaml
from models.spec import ModelSpec

CATALOG_DIR = Path(__file__).resolve().parent
_FIELDS = {f.name for f in dataclasses.fields(ModelSpec)}


def _load_file(path: Path) -> dict[str, ModelSpec]:
    raw = load_shipped_yaml(path) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path.name}: expected a mapping of model name -> fields")
    specs: dict[str, ModelSpec] = {}
    for name, fields in raw.items():
        if not isinstance(fields, dict):
            raise ValueError(f"{path.name}: entry {name!r} must be a mapping of fields")
        unknown = set(fields) - _FIELDS
        if unknown:
            raise ValueError(f"{path.name}: entry {name!r} has unknown fields {sorted(unknown)}")
        specs[str(name)] = ModelSpec(name=str(name), **fields)
    return specs


@lru_cache(maxsize=1)
def catalog() -> dict[str, ModelSpec]:
    """All catalog entries, name -> spec. Duplicate names across files are an error."""
    specs: dict[str, ModelSpec] = {}
    for path in sorted(CATALOG_DIR.glob("*.yaml")):
        for name, spec in _load_file(path).items():
            if name in specs:
                raise ValueError(f"model {name!r} is defined twice in the catalog ({path.name})")
            specs[name] = spec
    return specs


def get_model(name: str) -> ModelSpec:
    """The catalog spec called `name` (case-insensitive); UnknownNameError listing the names otherwise."""
    specs = catalog()
    key = catalog_key(name)
    if key not in specs:
        raise UnknownNameError("model", str(name), specs)
    return specs[key]


def list_models() -> list[str]:
    return sorted(catalog())
