"""`load_model(ref, base_dir)`: the ModelSpec a scenario names — a catalog name, a file, or an inline block.

- a catalog name (`draftsim catalog models`), case-insensitive;
- a path to a Hugging Face `config.json` (any `*.json`; `models.hf_config`), or to a YAML file with one
  catalog-format entry (`name: {fields}`, as in `models/catalog/*.yaml`); relative paths resolve against
  `base_dir` (the scenario file's folder);
- a mapping: ModelSpec fields inline (`name` and `family` optional), or a whole Hugging Face config
  (recognised by its `architectures` key). Read in its JSON form: a tuple (the Python API's
  `architectures=("LlamaForCausalLM",)`) is the list JSON writes for it (`_json_form`).

Every failure is a ValueError whose message names what is wrong and what is allowed.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path


from models.catalog import catalog, get_model
from models.errors import UnknownNameError, catalog_key
from models.files import expand_home, file_kind_problem, is_folder, read_document
from models.hf_config import load_hf_config, spec_from_hf_config
from models.spec import ModelSpec

FIELDS = {f.name for f in dataclasses.fields(ModelSpec)}
FILE_SUFFIXES = (".json", ".yaml", ".yml")


def spec_from_fields(fields: dict, default_name: str = "inline") -> ModelSpec:
    """A ModelSpec from a mapping of its fields (unknown fields are an error listing the allowed ones)."""
    unknown = sorted(map(str, set(fields) - FIELDS))   # (str: YAML reads `1: 2` as a number key)
    if unknown:
        raise ValueError(f"unknown model field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(FIELDS))}")
    fields = {"name": default_name, "family": "custom", **fields}
    try:
        return ModelSpec(**fields)
    except TypeError as exc:  # a required field is missing
        missing = sorted(f.name for f in dataclasses.fields(ModelSpec)
                         if f.default is dataclasses.MISSING and f.name not in fields)
        raise ValueError(f"model fields missing: {', '.join(missing) or exc}") from None


def _yaml_entry(path: Path) -> ModelSpec:
    raw = read_document(path, "YAML")
    if not isinstance(raw, dict) or len(raw) != 1 or not isinstance(next(iter(raw.values())), dict):
        raise ValueError(f"{path}: expected one entry `name: {{model fields}}` as in models/catalog/*.yaml")
    name, fields = next(iter(raw.items()))
    return spec_from_fields({"source": str(path), **fields}, str(name))


def _folder_problem(ref: str, path: Path) -> str:
    """What to give instead of the folder `ref` (at `path`): its config.json's path, when it holds one."""
    inside = str(Path(ref) / "config.json")
    if (path / "config.json").is_file():
        return f"{ref!r} is a folder; give the path of its config.json instead: {inside}"
    return (f"{ref!r} is a folder without a config.json; give a catalog name (draftsim catalog models) or the "
            "path of a Hugging Face config.json (a model folder's config.json)")


def _json_form(value):
    """`value` with its tuples as lists, through lists and mappings: what json.dumps writes for them, as a
    config.json holds them. (Through the Python API an inline config's `architectures=("LlamaForCausalLM",)`
    was refused, "architectures is ('LlamaForCausalLM',); expected a list of strings", where the scenario's own
    list fields take a tuple: simulator.config.base; so were a tuple `layer_types` or `weight_block_size`.)"""
    if isinstance(value, (list, tuple)):
        return [_json_form(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_form(item) for key, item in value.items()}
    return value


def load_model(ref, base_dir: Path | str | None = None) -> ModelSpec:
    """The ModelSpec of a scenario's model reference (module docstring)."""
    if isinstance(ref, ModelSpec):
        return ref
    if isinstance(ref, dict):
        ref = _json_form(ref)
        if "architectures" in ref:
            return spec_from_hf_config(ref, str(ref.get("name", "inline")), where="inline config")
        return spec_from_fields(ref)
    if not isinstance(ref, str):
        raise ValueError(f"expected a catalog name, a path to a config.json or a mapping of model fields; got {ref!r}")
    if catalog_key(ref) in catalog():
        return get_model(ref)
    path = expand_home(ref)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if not ref.lower().endswith(FILE_SUFFIXES):
        if ref.strip() and is_folder(path):   # ('' is the current folder to pathlib)
            raise ValueError(_folder_problem(ref, path))
        raise UnknownNameError("model", ref, catalog(), also="or a path to a Hugging Face config.json or a catalog-format model YAML")
    if file_kind_problem(path) == "file not found":   # (a FIFO, a device, ...: read_document says what it is)
        raise ValueError(f"{path}: file not found (a model file is a Hugging Face config.json or a catalog-format YAML)")
    return load_hf_config(path) if path.suffix.lower() == ".json" else _yaml_entry(path)
