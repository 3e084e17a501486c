"""The base of every section model of the pydantic boundary."""
from __future__ import annotations

import dataclasses
import os
import re
import sys
import types
from functools import cache
from typing import Annotated, Any, ClassVar, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_validator
from pydantic import Strict as StrictMode
from pydantic_core import PydanticCustomError

from models.errors import is_boolean

BOOL_NOT_NUMBER = "bool_not_number"   # the error type of a boolean given for a number (its ctx names the field)
FIELD_ERROR = "field_error"           # a section's check of several fields, worded for one of them (ctx names it)


def field_error(field: str, message: str) -> PydanticCustomError:
    """The error of a section's check across its fields that is reported at its sub-field `field` (a dotted
    path below the section), e.g. `cluster.moe: ...` rather than `cluster: ...`."""
    return PydanticCustomError(FIELD_ERROR, message, {"field": field})


# What pydantic's strict mode refuses that YAML can write only one way, allowed where a field takes it: a path
# (YAML has text, strict mode wants a Path object) and a fixed-length row (YAML has a list, strict mode wants a
# tuple); the items of a row stay strict. `Annotated[Path, FROM_YAML]`, `Annotated[tuple[int, float], FROM_YAML]`
FROM_YAML = StrictMode(False)


class Strict(BaseModel):
    """A section of a scenario (or a sweep, or a plan): unknown keys are errors; a validated section is
    immutable; a boolean is no number (pydantic would read `true` as 1 where a field takes an int or a
    float: `num_requests: true` ran one request); and every value is of its field's own type (pydantic's
    strict mode): pydantic's lax mode read `replicas: "2"` or `replicas: 2.0` as 2, `plots: "off"` or
    `plots: 0` as false and `qps: "20"` as 20.0 — a value the user may not have meant, run without a word.
    An int is still taken where a float goes (`gpu_memory_utilization: 1`), YAML's own booleans (`true`,
    and YAML 1.1's `yes`/`no` as PyYAML reads them) where a boolean goes; FROM_YAML lifts strictness for
    paths and rows. `SPEC`: the frozen dataclass of the simulator's inside
    that `spec()` builds from the section's fields of the same names (nested sections converted too), what
    the core receives."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    SPEC: ClassVar[type | None] = None

    @model_validator(mode="before")
    @classmethod
    def _no_bool_as_number(cls, data):
        if isinstance(data, dict):
            for name, value in data.items():
                field = cls.model_fields.get(name)
                found = None if field is None else _bool_for_number(field.annotation, value)
                if found is not None:
                    raise PydanticCustomError(BOOL_NOT_NUMBER, "Input should be a number, not the boolean {value}",
                                              {"field": name, "value": str(found).lower()})
        return data

    @model_validator(mode="before")
    @classmethod
    def _numpy_as_python(cls, data):
        """A NumPy integer or boolean (out of an array or a DataFrame row: the Python API, the plan's table of
        candidates) as the Python int or bool it holds, which strict mode takes; a NumPy float is a Python
        float already."""
        if isinstance(data, dict) and "numpy" in sys.modules:
            return {name: _python_scalars(value, sys.modules["numpy"]) for name, value in data.items()}
        return data

    @model_validator(mode="before")
    @classmethod
    def _python_and_json_forms(cls, data):
        """What strict mode refuses that a Python or a JSON user writes for a field, as the field's own form
        (pydantic's lax mode took both; everything else stays strict):
        - a tuple (or a 1-D NumPy array) where a field takes a list, as the list of its items (`alphas=(0.8,
          0.7)`, `capture_sizes=np.arange(1, 9)` through the Python API: 'Input should be a valid list'); the
          items stay strict (`_as_lists`);
        - a mapping's key written as a decimal integer in text where the field's keys are integers
          (`draft_len_schedule: {"4": 2}`, `slots: {"1": ...}`): JSON writes every key as text (a scenario in
          JSON, SGLang's adaptive-config file); any other text stays refused (`_int_keys`)."""
        if isinstance(data, dict):
            return {name: _int_keys(cls.model_fields[name].annotation,
                                    _as_lists(cls.model_fields[name].annotation, value), name)
                    if name in cls.model_fields else value for name, value in data.items()}
        return data

    @model_validator(mode="before")
    @classmethod
    def _no_sets(cls, data):
        """A Python set (through the API) has no order of its own: pydantic took {0.9, 0.8} for a list of
        positional alphas in whatever order the set iterates (for texts, one that changes with the hash seed)."""
        if isinstance(data, dict):
            for name, value in data.items():
                if isinstance(value, (set, frozenset)) and name in cls.model_fields:
                    raise PydanticCustomError(FIELD_ERROR, "a set has no order; give a list (in the order meant)",
                                              {"field": name})
        return data

    def spec(self):
        return self.SPEC(**{f.name: _spec(getattr(self, f.name)) for f in dataclasses.fields(self.SPEC)})


def _python_scalars(value, np):
    """`value` with its NumPy integers and booleans, through lists, tuples and dicts (keys too), as Python's."""
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(_python_scalars(item, np) for item in value)
    if isinstance(value, dict):
        return {_python_scalars(key, np): _python_scalars(item, np) for key, item in value.items()}
    return value


def _as_lists(annotation, value):
    """`value` with a tuple as a list where `annotation` (through unions and Annotated) takes a list and no tuple,
    and a NumPy array as its (nested) list of Python scalars where it takes a list or a row (a 2-D array for a
    list of rows), through the items of lists and the values of mappings the annotation types."""
    kinds = _members(annotation)
    lists, rows = (any(get_origin(k) is kind for k in kinds) for kind in (list, tuple))
    np = sys.modules.get("numpy")
    if (lists or rows) and np is not None and isinstance(value, np.ndarray) and value.ndim >= 1:
        value = value.tolist()
    elif lists and not rows and isinstance(value, tuple) and not any(k in (tuple, Any) for k in kinds):
        value = list(value)
    if isinstance(value, list):
        items = [get_args(k)[0] for k in kinds if get_origin(k) is list and get_args(k)]
        return [_as_lists(items[0], item) for item in value] if len(items) == 1 else value
    if isinstance(value, dict):
        values = [get_args(k)[1] for k in kinds if get_origin(k) is dict and len(get_args(k)) == 2]
        return {key: _as_lists(values[0], item) for key, item in value.items()} if len(values) == 1 else value
    return value


def _int_keys(annotation, value, field: str):
    """`value` with its text keys that are decimal integers ("4", "-1") as ints, where it is a mapping and
    `annotation` (through unions and Annotated) takes one whose keys are ints; a key given both ways ("4" and 4)
    is refused (FIELD_ERROR at `field`)."""
    if not isinstance(value, dict) or not any(get_origin(k) is dict and get_args(k) and _members(get_args(k)[0]) == [int]
                                              for k in _members(annotation)):
        return value
    out = {}
    for key, item in value.items():
        number = int(key) if isinstance(key, str) and re.fullmatch(r"-?[0-9]{1,18}", key) else key
        if number in out and not is_boolean(number):
            raise PydanticCustomError(FIELD_ERROR, "key {key} is given twice (as text and as a number)",
                                      {"field": field, "key": number})
        out[number] = item
    return out


def path_as_text(value):
    """A path object (pathlib.Path, any os.PathLike of text) as its text, where a field takes a name or a path
    as text (`cluster.model=Path("configs/config.json")` through the Python API; YAML writes text)."""
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        return path if isinstance(path, str) else value
    return value


# a field that takes a catalog name or a file path as text: a path object is taken as its text
PATH_TEXT = BeforeValidator(path_as_text)


def _members(kind) -> list:
    """The types a field's annotation admits, through unions and Annotated."""
    origin = get_origin(kind)
    if origin is Annotated:
        return _members(get_args(kind)[0])
    if origin is Union or origin is types.UnionType:
        return [m for arg in get_args(kind) for m in _members(arg)]
    return [kind]


@cache
def _number_not_bool(annotation) -> bool:
    """Whether a field takes a number (an int or a float, through unions and Annotated) and not a boolean
    as itself (bool or Any)."""
    kinds = _members(annotation)
    if any(kind is bool or kind is Any for kind in kinds):
        return False
    return any(isinstance(kind, type) and issubclass(kind, (int, float)) for kind in kinds)


def _bool_for_number(annotation, value):
    """The first boolean that `value` gives where `annotation` takes a number, through lists, tuples (by
    position) and dicts (keys and values: `draft_len_schedule: {4: true}`); None when there is none, or
    when a member of the annotation that takes this kind of container takes the boolean as itself."""
    if is_boolean(value):
        return value if _number_not_bool(annotation) else None
    if isinstance(value, (list, tuple)):
        origins, pairs = (list, tuple), lambda args: _items(args, value)
    elif isinstance(value, dict):
        origins, pairs = (dict,), lambda args: [(a, x) for k, v in value.items()
                                                for a, x in zip(args or (Any, Any), (k, v))]
    else:
        return None
    found = [next((f for a, x in pairs(get_args(kind)) if (f := _bool_for_number(a, x)) is not None), None)
             for kind in _members(annotation) if get_origin(kind) in origins]
    return found[0] if found and all(f is not None for f in found) else None


def _items(args: tuple, value) -> list:
    """(annotation, item) of a list or tuple `value` under list[X] / tuple[X, ...] / tuple[X, Y, Z]."""
    if len(args) == 2 and args[1] is Ellipsis or len(args) == 1:
        return [(args[0], item) for item in value]
    return list(zip(args, value)) if args else []


def _spec(value):
    return value.spec() if isinstance(value, Strict) and value.SPEC is not None else value


def _version_is_text(value):
    """A release number as text, in its canonical PEP 440 spelling (" 0.11.0" and "v0.11.0" are 0.11.0, as pip
    and the engines' version tables compare them; before, they were kept as typed, compared equal to 0.11.0 by
    the engine rules and unequal by the measured tables' lookup)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise PydanticCustomError("version_text", "give the version as a quoted string (YAML reads {v} as a "
                                                  "number), e.g. \"0.10.0\"", {"v": value})
    if not isinstance(value, str):
        return value
    from packaging.version import InvalidVersion, Version
    try:
        return str(Version(value))
    except InvalidVersion:
        raise PydanticCustomError("version_text", "'{v}' is not a release number; give one such as \"0.11.0\" "
                                                  "or \"1.3.0rc20\"", {"v": value[:40]}) from None


# a release number written as text ("0.10.0"; YAML would read 0.10 as a float), canonical (PEP 440)
VersionText = Annotated[str | None, BeforeValidator(_version_is_text)]
