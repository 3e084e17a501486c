"""Pydantic's failure of a config file as the user-facing error: its first error, the YAML path of the field
under the file's kind and pydantic's message in the project's wording. Apart from the scenario's schema
(simulator.config.scenario) so that `draftsim estimate`, which validates serving sections only, does not
build the other section models to word an error."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from models.errors import brief
from simulator.config.base import BOOL_NOT_NUMBER, FIELD_ERROR
from simulator.errors import ScenarioError


def _user_path(loc: tuple, data) -> str:
    """The YAML path of an error location, without the tags pydantic inserts for discriminated unions
    (e.g. `workload.prompt_tokens.uniform.high` becomes `workload.prompt_tokens.high`)."""
    parts, node, tagged = [], data, None
    for i, item in enumerate(loc):
        if node is not tagged and _is_tag(loc, i, node):
            tagged = node   # (one tag per mapping: `acceptance.trace` of {kind: trace} missing is trace, trace)
            continue
        parts.append(str(item))
        node = node.get(item) if isinstance(node, dict) else (
            node[item] if isinstance(node, list) and isinstance(item, int) and item < len(node) else None)
    return ".".join(parts)


def validation_error(err: ValidationError, data, prefix: str = "scenario") -> ScenarioError:
    """The user-facing error for a pydantic failure of a config file: its first error, the YAML path of the
    field under `prefix` (the file's kind, e.g. `sweep`; a scenario's paths start at its top level) and
    pydantic's message in the project's wording."""
    where, msg = _format_validation_error(err, data)
    if prefix == "scenario":
        return ScenarioError(where or prefix, msg)
    return ScenarioError(".".join(part for part in (prefix, where) if part), msg)


def _format_validation_error(err: ValidationError, data) -> tuple[str, str]:
    first = err.errors()[0]
    msg, loc, ctx = first["msg"], tuple(first["loc"]), first.get("ctx") or {}
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    elif msg == "Field required":
        msg = "required field is missing"
    elif first["type"] == "union_tag_not_found":
        loc, msg = loc + ("kind",), "required field is missing"
    elif first["type"] == "union_tag_invalid":
        loc, msg = loc + ("kind",), f"unknown kind {ctx.get('tag')!r}; allowed: {ctx.get('expected_tags')}"
    elif first["type"] in (BOOL_NOT_NUMBER, FIELD_ERROR):   # (raised for the section: its ctx names the field)
        loc = loc + tuple(ctx["field"].split("."))
    elif first["type"] == "value_error":  # a validator's own message, without pydantic's "Value error, "
        msg = str(ctx.get("error") or msg.removeprefix("Value error, "))
    elif first["type"] in _STRICT_KINDS:
        msg = type_message(first)
    if len(loc) >= 2 and loc[-1] == "[key]":   # (a mapping's key: named as such, at the mapping's path)
        loc, msg = loc[:-2], f"key {_repr_line(loc[-2])}: {msg}"
    value, depth = _value_at(loc, data)
    if first["type"] == "model_type":   # a section given as something else: pydantic names its class
        shown = "null" if value is None else _repr_line(value)   # (pydantic's own: '... or instance of MoeConfig')
        msg = f"{shown} is not allowed; expected a mapping of its fields"
    tagged = first["type"] in ("union_tag_invalid", "union_tag_not_found")   # (a bare word: `policy: nope`)
    if not tagged and depth < len(loc) - 1 and not isinstance(value, dict) and isinstance(loc[depth + 1], str):
        # a value of the wrong type where a union (e.g. a name or a mapping) was expected: pydantic tags each
        # member's error with the member's type; say which kinds of value the field takes instead
        prefix = loc[:depth + 1]
        kinds = [_UNION_MEMBERS.get(str(e["loc"][depth + 1]).split("[")[0], str(e["loc"][depth + 1]))
                 for e in err.errors() if tuple(e["loc"][:depth + 1]) == prefix and len(e["loc"]) > depth + 1]
        loc, msg = prefix, f"{_repr_line(value)} is not allowed; expected {' or '.join(dict.fromkeys(kinds))}"
    return _user_path(loc, data), msg


# strict mode's refusals of a value of another type: what the field takes (pydantic's words, and YAML's for a
# boolean), followed by what was given (`replicas: "2"` is text, `replicas: 2.0` a float)
_STRICT_KINDS = {"int_type": "Input should be a valid integer", "float_type": "Input should be a valid number",
                 "bool_type": "Input should be a valid boolean (true or false)",
                 "string_type": "Input should be a valid string"}


def type_message(error: dict) -> str:
    """Pydantic's message of one error (an item of `ValidationError.errors()`), for strict mode's refusal of a
    value of another type (simulator.config.base.Strict) saying what was given: 'Input should be a valid
    integer, not the text '2''."""
    if error["type"] not in _STRICT_KINDS or "input" not in error:
        return error["msg"]
    return f"{_STRICT_KINDS[error['type']]}, not {_shown(error['input'])}"


def _shown(value) -> str:
    """A value of the wrong type for an error line: text quoted and said to be text (YAML reads `"2"` and
    `0x10` as text), a number as written, a container by its kind."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}{'...' if len(value) > 40 else ''}"
    if isinstance(value, float):
        return repr(float(value))   # (a NumPy float as written)
    if isinstance(value, int):   # (repr of an int beyond 4,300 digits raises)
        return repr(int(value)) if abs(value) < 10 ** 40 else "an integer of over 40 digits"
    return {"list": "a list", "dict": "a mapping", "NoneType": "null"}.get(type(value).__name__,
                                                                          f"a {type(value).__name__}")


def _repr_line(value, limit: int = 80) -> str:
    """`repr(value)` for the one error line: an object whose repr spans lines (a pandas Series or DataFrame, a
    2-D NumPy array given through the Python API) by its kind, a long repr cut at `limit` characters."""
    text = brief(value)
    if "\n" in text:
        return f"a {type(value).__name__}"
    return text if len(text) <= limit else text[:limit - 3] + "..."


_UNION_MEMBERS = {"str": "a name or path (string)", "dict": "a mapping", "int": "an integer", "float": "a number",
                  "list": "a list", "bool": "true or false"}


def _is_tag(loc: tuple, i: int, node) -> bool:
    """Whether `loc[i]` is the tag pydantic inserts after a discriminated union's field: the `kind` of the
    mapping at `node`, not one of its keys — or one of its keys too when the field is named like its kind
    (acceptance `{kind: contexts, contexts: [...]}` errs at `acceptance.contexts.contexts.0.weight`)."""
    item = loc[i]
    if not isinstance(node, dict) or node.get("kind") != item:
        return False
    if item not in node:
        return True
    # a field named like the kind: the tag when the location goes on below it where its value has nothing below
    # (`acceptance: {kind: trace, trace: NAME, drafter: bogus}` errs at `acceptance.trace.drafter`)
    after = loc[i + 1] if i + 1 < len(loc) else None
    return after is not None and (after == item or not isinstance(node[item], (dict, list)))


def _value_at(loc: tuple, data) -> tuple[Any, int]:
    """The user's value at the longest prefix of `loc` present in `data`, and that prefix's last index."""
    node, depth, tagged = data, -1, None
    for i, item in enumerate(loc):
        if node is not tagged and _is_tag(loc, i, node):
            depth, tagged = i, node
            continue
        if isinstance(node, dict) and item in node:
            node = node[item]
        elif isinstance(node, list) and isinstance(item, int) and item < len(node):
            node = node[item]
        else:
            break
        depth = i
    return node, depth


def validate_config(model: type[BaseModel], data: dict, prefix: str = "scenario"):
    """`data` validated as `model`, or the user-facing error (`validation_error`) naming its field."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise validation_error(err, data, prefix) from None
