"""Reading the user's files (scenarios, sweeps, plans, model and hardware files): one parsed JSON or YAML
document, or one error line saying what is wrong with the file — never a traceback, never a hang.

Checked, in this order, before anything is parsed:
- the path is a regular file: a directory, a FIFO, `/dev/null`, `/dev/zero` or a socket is refused by name
  (a FIFO or a device would otherwise be read forever or read as nothing);
- at most `MAX_DOCUMENT_BYTES` (8 MiB; the largest shipped scenario is a few kB, a Hugging Face
  config.json a few kB, a model's generation config a few hundred bytes);
- text: no NUL byte (binary), no UTF-16/UTF-32 byte-order mark (saved by some Windows editors), valid
  UTF-8 (a UTF-8 byte-order mark is allowed); a Latin-1 file names the first byte that is not UTF-8 and
  its line.

YAML is parsed by a SafeLoader (no Python objects) that also refuses:
- a mapping with the same key twice (PyYAML keeps the last one without a word; the error names the key
  and both lines);
- nesting deeper than `MAX_DEPTH` (64) levels (deep nesting overflowed Python's stack: RecursionError);
- more than `MAX_DOCUMENT_NODES` (1,000,000) values written out, counted before the loader composes any:
  the pure-Python loader takes ~50 µs and ~800 B a value, and an 8 MiB flow list of 4.19 M values took
  222 s and 3.2 GB before the scenario named it an unknown field (the largest shipped YAML,
  scenarios/validation/published/points.yaml, holds 7,223 values; a sweep's longest explicit `points`
  list, 100,000 points of a key or two, about 500,000);
- anchors and aliases that add more than `MAX_NODES` (100,000) values when expanded, or refer to themselves
  (the "billion laughs": a few lines that expand to 9^8 values when the document is walked);
- an integer of more than 4,300 digits (Python's `sys.get_int_max_str_digits()`: int() raises a ValueError
  beyond it);
- a value an explicit tag cannot read (`!!int 3.5`, `!!bool maybe`, `!!timestamp 2024-13-45`: PyYAML's
  constructors raise ValueError, KeyError or IndexError, not a YAML error).
Numbers are plain decimals, as in YAML 1.2's core schema: YAML 1.1's octal (`017` was 15), sexagesimal
(`1:30` was 90), hexadecimal, binary and underscored (`1_000`) forms are read as text, which a number field
refuses naming the field; a leading zero is a decimal (`017`: 17) and an exponent needs no dot or sign (`1e9`,
`2E-3`: text to YAML 1.1).
JSON gets the same duplicate-key, depth and integer checks.
"""
from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import yaml

MAX_DOCUMENT_BYTES = 8 * 1024**2
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_DOCUMENT_NODES = 1_000_000
_NODE_EVENTS = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)
_BOMS = {b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32", b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class DocumentError(ValueError):
    """What is wrong with a file's bytes or structure (the message starts with what, not with the path)."""


def expand_home(path: str | Path) -> Path:
    """`path` with a leading `~` or `~user` expanded; DocumentError naming it when that home folder is unknown
    (pathlib raises a RuntimeError: `--out ~bob/x` for a user bob this machine lacks was a traceback)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        raise DocumentError(f"{path}: cannot expand {str(path).split('/', 1)[0]!r}: no such user's home "
                            "folder") from None


def written_at(path: str | Path) -> Path:
    """The file that writing `path` creates: `path` itself, or the target of a link (a link to nothing is
    written as its target, which may lie in another folder)."""
    return Path(os.path.realpath(path))


def ready_to_write(path: str | Path) -> Path:
    """`path` (an output file the command checked up front, simulator.results.output_folder.check_output_file)
    with the folder that will receive it made: `--csv new/t.csv` or `--check-out new/c.json` failed after the
    whole run (pandas: 'Cannot save file into a non-existent directory', a traceback; profile: 'No such file
    or directory'), as did a link to a file in a missing folder."""
    written_at(path).parent.mkdir(parents=True, exist_ok=True)
    return Path(path)


def _mode(path: Path) -> int | str:
    """os.stat's st_mode of `path`, or why it cannot be read ("file not found", "cannot be read (File name too
    long)", ...). pathlib's `is_dir`/`is_file` raise for a name longer than the file system allows (255 bytes):
    a 256-character model name was an unnamed "File name too long" line."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        return "file not found"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    except UnicodeEncodeError:   # a lone surrogate (a YAML "\ud800" escape): not encodable as a file name
        return "cannot be read (its path holds a lone surrogate, which is not Unicode text)"
    except ValueError:   # os.stat refuses a NUL byte (a YAML "\0" escape): `trace_csv: "a\0b"` was a traceback
        return "cannot be read (its path holds a NUL byte)"


def file_kind_problem(path: Path) -> str | None:
    """Why `path` is not a regular file that can be read ("not found", "a FIFO (named pipe)", ...), or None."""
    mode = _mode(path)
    if isinstance(mode, str):
        return mode
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"is {kind}, not a regular file"


def folder_problem(path: Path) -> str | None:
    """Why `path` is not a folder ("no such directory: P", "P is not a directory", "P cannot be read (...)"),
    or None."""
    mode = _mode(path)
    if mode == "file not found":
        return f"no such directory: {path}"
    if isinstance(mode, str):
        return f"{path} {mode}"
    return None if stat.S_ISDIR(mode) else f"{path} is not a directory"


def is_folder(path: Path) -> bool:
    """`path.is_dir()` that answers False where the name cannot be looked up at all (too long, a NUL byte)."""
    return folder_problem(path) is None


def text_bytes_problem(data: bytes) -> str | None:
    """Why bytes read from the start of a file are not UTF-8 text ("is UTF-16 text; save it as UTF-8", "is
    binary (a NUL byte at offset 3), not text"), or None: a UTF-16/UTF-32 byte-order mark or a NUL byte."""
    for bom, name in _BOMS.items():
        if data.startswith(bom):
            return f"is {name} text; save it as UTF-8"
    nul = data.find(b"\x00")
    if nul >= 0:
        return f"is binary (a NUL byte at offset {nul}), not text"
    return None


def read_text(path: Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of the regular file `path` (DocumentError, module docstring)."""
    problem = file_kind_problem(path)
    if problem is not None:
        raise DocumentError(problem)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise DocumentError(f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise DocumentError(f"is larger than {max_bytes // 1024**2} MiB; a configuration file is a few kB")
    problem = text_bytes_problem(data)
    if problem is not None:
        raise DocumentError(problem)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(not_utf8(data, exc)) from None


def not_utf8(data: bytes, exc: UnicodeDecodeError, lines_before: int = 0) -> str:
    """What is wrong with `data`, whose decoding as UTF-8 raised `exc`: the first byte that is not UTF-8 and its
    line (`lines_before`: the lines of the file before `data`, when it is one block of a longer file)."""
    line = lines_before + data[:exc.start].count(b"\n") + 1
    return (f"is not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line} (Latin-1 or another encoding?); "
            "save it as UTF-8")


class _Loader(yaml.SafeLoader):
    """SafeLoader with a depth limit on composing and duplicate keys refused on constructing."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise DocumentError(f"nests deeper than {MAX_DEPTH} levels at line {mark.line + 1}")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):   # the mapping's own keys (a merge `<<` may override keys)
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:   # an unhashable key: the base class reports it
                    continue
                if first is not None:
                    raise DocumentError(f"key {key!r} appears twice in one mapping, at lines {first} and {line}; "
                                        "keep one")
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _integer_digits_problem(text: str, where: str = "") -> str | None:
    """Why the integer written `text` cannot be read (Python reads at most sys.get_int_max_str_digits() digits
    of a decimal integer, 4,300 by default, and raises a ValueError beyond: a traceback), or None."""
    limit = sys.get_int_max_str_digits()
    digits = sum(c.isdigit() for c in text)
    if limit and digits > limit:
        return f"holds an integer of {digits:,} digits{where}; at most {limit:,} are read"
    return None


_DECIMAL_INT = re.compile(r"^[-+]?[0-9]+$")
# YAML 1.2's core schema float (`1e9`, `2E-3`, `1.0e9`: PyYAML's YAML 1.1 wants a dot and a signed exponent,
# and read them as text, which pydantic's lax mode parsed where a float goes and strict mode refuses), and
# its infinities and NaN
_DECIMAL_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


def _yaml_int(loader: _Loader, node):
    problem = _integer_digits_problem(node.value, f" at line {node.start_mark.line + 1}")
    if problem:
        raise DocumentError(problem)
    if _DECIMAL_INT.match(node.value):   # (SafeLoader reads a leading 0 as octal)
        return int(node.value)
    return yaml.SafeLoader.construct_yaml_int(loader, node)   # (an explicit !!int tag)


_Loader.add_constructor("tag:yaml.org,2002:int", _yaml_int)


def _tagged(construct):
    """`construct` (a scalar constructor) with the errors of a value an explicit tag cannot read as one
    DocumentError naming the tag, the value and its line: `seed: !!int 3.5` (a ValueError), `!!bool maybe`
    (a KeyError), `!!float` of nothing (an IndexError), `!!timestamp 2024-13-45` were tracebacks."""
    def checked(loader: _Loader, node):
        try:
            return construct(loader, node)
        except DocumentError:
            raise
        except (ValueError, KeyError, IndexError, OverflowError):
            kind = node.tag.rsplit(":", 1)[-1]
            raise DocumentError(f"!!{kind} {node.value!r} at line {node.start_mark.line + 1} is not "
                                f"{_TAGGED[kind]}; drop the tag or give such a value") from None
    return checked


_TAGGED = {"int": "an integer", "float": "a number", "bool": "true or false", "timestamp": "a date or date and time"}
for _kind in _TAGGED:
    _tag = f"tag:yaml.org,2002:{_kind}"
    _Loader.add_constructor(_tag, _tagged(_Loader.yaml_constructors[_tag]))
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_Loader.yaml_implicit_resolvers = {first: [(tag, regexp) for tag, regexp in resolvers if tag not in _NUMBER_TAGS]
                                   for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(_NUMBER_TAGS[0], _DECIMAL_INT, list("-+0123456789"))
_Loader.add_implicit_resolver(_NUMBER_TAGS[1], _DECIMAL_FLOAT, list("-+0123456789."))


def reads_as_text(text: str) -> bool:
    """Whether `text` written plain (unquoted) reads back as that text here, not as a number, boolean, null or
    date: a writer of YAML for this loader (PyYAML's dumper resolves YAML 1.1, and left `1e3` plain, which
    reads as the number 1000.0 here) quotes it otherwise."""
    resolvers = _Loader.yaml_implicit_resolvers   # (as yaml.resolver.BaseResolver.resolve reads a plain scalar)
    found = resolvers.get(text[:1], []) + resolvers.get(None, [])
    return not any(regexp.match(text) for _, regexp in found)


def _check_expansion(root) -> None:
    """Refuse aliases that expand to more than MAX_NODES values or refer to themselves (module docstring).
    Only the values aliases add count: a node met again is an alias of an anchored one (PyYAML composes an
    alias as the anchored node itself); a document written out is bounded by MAX_DOCUMENT_BYTES instead."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    via_aliases = 0

    def size(node) -> int:
        nonlocal via_aliases
        key = id(node)
        if key in sizes:
            via_aliases += sizes[key]
            if via_aliases > MAX_NODES:
                raise DocumentError(f"anchors and aliases expand to more than {MAX_NODES:,} values (line "
                                    f"{node.start_mark.line + 1}); write the values out")
            return sizes[key]
        if key in active:
            raise DocumentError(f"an alias refers to its own anchor (line {node.start_mark.line + 1}); "
                                "recursive documents are not allowed")
        active.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        active.discard(key)
        sizes[key] = total
        return total

    size(root)


def load_shipped_yaml(path: Path):
    """A YAML data file shipped with draftsim (the model catalog, engine and host constants): trusted, so
    parsed without the checks above, by libyaml's C SafeLoader where PyYAML has it (the pure-Python one
    costs start-up time: several ms a file)."""
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _check_node_count(text: str) -> None:
    """Refuse a document of more than MAX_DOCUMENT_NODES values written out (module docstring), counted on the
    parser's events, by libyaml's C parser where PyYAML has it (a million events in ~2 s, some 17 times
    faster than the pure-Python loader): the count stops at the bound, so a file at MAX_DOCUMENT_BYTES is
    refused in seconds. A syntax error stops the count too: the loader reports it as it always has."""
    count = 0
    try:
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, _NODE_EVENTS):
                count += 1
                if count > MAX_DOCUMENT_NODES:
                    raise DocumentError(f"holds more than {MAX_DOCUMENT_NODES:,} values (at line "
                                        f"{event.start_mark.line + 1}); at most {MAX_DOCUMENT_NODES:,} are read (a "
                                        "scenario holds a few hundred)")
    except yaml.YAMLError:
        return


def parse_yaml(text: str):
    """The YAML document `text` (DocumentError for the module docstring's cases, yaml.YAMLError for syntax)."""
    _check_node_count(text)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except RecursionError:
        raise DocumentError(f"nests too deeply to be read (keep it under {MAX_DEPTH} levels)") from None
    finally:
        loader.dispose()


def _json_pairs(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise DocumentError(f"key {key!r} appears twice in one object; keep one")
        out[key] = value
    return out


def _json_int(text: str) -> int:
    problem = _integer_digits_problem(text)
    if problem:
        raise DocumentError(problem)
    return int(text)


def parse_json(text: str):
    try:
        return json.loads(text, object_pairs_hook=_json_pairs, parse_int=_json_int)
    except RecursionError:
        raise DocumentError("nests too deeply to be read") from None


PARSERS = {"JSON": (parse_json, json.JSONDecodeError), "YAML": (parse_yaml, yaml.YAMLError)}


def syntax_error(exc: Exception, kind: str) -> str:
    """One line for a JSON/YAML syntax error: what and where."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f"malformed {kind} at line {mark.line + 1}, column {mark.column + 1} ({getattr(exc, 'problem', '')})"
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed {kind} at line {exc.lineno}, column {exc.colno} ({exc.msg})"
    return f"malformed {kind}"


def load_document(path: Path, kind: str):
    """The parsed content of the `kind` ("JSON" | "YAML") file at `path`; DocumentError saying what is wrong
    (without the path) otherwise."""
    parse, parse_error = PARSERS[kind]
    text = read_text(Path(path))
    try:
        return parse(text)
    except parse_error as exc:
        raise DocumentError(syntax_error(exc, kind)) from None


def describe(path: Path | str, problem: DocumentError | str) -> str:
    """One line naming `path` and its problem: "file not found: P", "P is a FIFO ...", "malformed YAML in P at
    line L, column C (...)", "P: key 'x' appears twice ..."."""
    text = str(problem)
    if text == "file not found":
        return f"file not found: {path}"
    if text.startswith("malformed "):
        kind, _, rest = text[len("malformed "):].partition(" ")
        return f"malformed {kind} in {path} {rest}".rstrip()
    if text.startswith(("is ", "cannot ")):
        return f"{path} {text}"
    return f"{path}: {text}"


def read_document(path: Path, kind: str, error: type[ValueError] = ValueError):
    """The parsed content of the `kind` ("JSON" | "YAML") file at `path`; `error` naming the path (and the
    reason, not a traceback) when it is missing or cannot be read or parsed."""
    try:
        return load_document(path, kind)
    except DocumentError as exc:
        raise error(describe(path, exc)) from None
