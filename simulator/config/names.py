"""Names that become folder names: a scenario's, a sweep's or a plan's `name` is the last component of its
default output folder (`out/<name>/`, `out/sweeps/<name>/`, `out/plans/<name>/`), so it must be exactly one
safe path component — or the file is refused in one line naming `name`.

Allowed: 1 to 255 bytes of UTF-8, not starting with `.` (so neither `.` nor `..`, nor a hidden folder), no
`/` or `\\` (separators on POSIX and Windows), no control character (Unicode category Cc: NUL, newline,
tab, escape, DEL, …) and no line or paragraph separator, no invisible format character (category Cf: a
right-to-left override U+202E or a zero-width space U+200B made a folder whose name reads otherwise or not at
all; the joiners U+200C/U+200D that some scripts and emoji need are allowed), no lone surrogate (a YAML
"\ud800" escape: the folder could not be created, a UnicodeEncodeError; U+DC80..U+DCFF, the bytes of a file
name that is not UTF-8 as Python reads it, stay allowed), no leading or trailing white space.
255 bytes is the longest file name of ext4, XFS, APFS and NTFS.
"""
from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

MAX_NAME_BYTES = 255
JOINERS = "\u200c\u200d"   # zero-width non-joiner and joiner: part of some scripts' and emoji's spelling
RULE = ("one folder name: 1-255 bytes, no '/' or '\\', no control or invisible format characters, not starting "
        "with '.', no leading or trailing spaces")


def name_problem(name: str) -> str | None:
    """Why `name` cannot be one path component, or None."""
    if not isinstance(name, str) or not name:
        return "is empty"
    if name.startswith("."):
        return "starts with '.'"
    if "/" in name or "\\" in name:
        return "holds a path separator"
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name):
        return "holds a control character"
    # (U+DC80..U+DCFF stand for the bytes of a file name that is not UTF-8, as Python decodes one: a scenario
    # file so named, without a `name`, gets its stem as its name, and the folder is created with those bytes)
    surrogate = next((c for c in name if unicodedata.category(c) == "Cs" and not "\udc80" <= c <= "\udcff"), None)
    if surrogate is not None:
        return f"holds a lone surrogate U+{ord(surrogate):04X}, which is not Unicode text"
    hidden = next((c for c in name if unicodedata.category(c) == "Cf" and c not in JOINERS), None)
    if hidden is not None:
        return f"holds the invisible format character U+{ord(hidden):04X}"
    if name != name.strip():
        return "has leading or trailing white space"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    return None


def _check(name: str) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise PydanticCustomError("folder_name", "{name} {problem}; a name must be {rule}",
                                  {"name": repr(name), "problem": problem, "rule": RULE})
    return name


#: A str field that must be one safe path component (module docstring).
FolderName = Annotated[str, AfterValidator(_check)]
