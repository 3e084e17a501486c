"""Reading the user's model and hardware files: one parsed JSON or YAML document, or one error line."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

PARSERS = {"JSON": (json.loads, json.JSONDecodeError), "YAML": (yaml.safe_load, yaml.YAMLError)}


def read_document(path: Path, kind: str, error: type[ValueError] = ValueError):
    """The parsed content of the `kind` ("JSON" | "YAML") file at `path`; `error` naming the path (and the
    reason, not a traceback) when it is missing or cannot be read or parsed."""
    parse, parse_error = PARSERS[kind]
    try:
        return parse(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError, parse_error) as exc:
        raise error(f"{path}: not a readable {kind} file ({type(exc).__name__})") from None
