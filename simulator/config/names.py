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

Names Windows file systems cannot hold are refused as well, as '\\' is (an output folder is copied, synced and
shared onto them): none of the characters < > : " | ? * (':' on NTFS names an alternate data stream: a folder
`a:b` becomes a stream of `a`), no trailing '.' (Windows drops it: `run.` and `run` are one folder), and no
reserved device name — CON, PRN, AUX, NUL, COM1-COM9, LPT1-LPT9, in any case, alone or before an extension
(`nul.x`) — which opens the device rather than a folder. Source: Microsoft Learn, "Naming Files, Paths, and
Namespaces" (learn.microsoft.com/windows/win32/fileio/naming-a-file), "Naming Conventions", read 2026-11-29.
"""
from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

MAX_NAME_BYTES = 255
JOINERS = "\u200c\u200d"   # zero-width non-joiner and joiner: part of some scripts' and emoji's spelling
WINDOWS_RESERVED_CHARACTERS = '<>:"|?*'
WINDOWS_DEVICE_NAMES = frozenset(["CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                                  *(f"LPT{i}" for i in range(1, 10))])
RULE = ("one folder name: 1-255 bytes, no '/' or '\\' or any of <>:\"|?*, no control or invisible format "
        "characters, not starting or ending with '.', no leading or trailing spaces, not a Windows device name "
        "(CON, NUL, COM1, ...)")


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
    reserved = next((c for c in name if c in WINDOWS_RESERVED_CHARACTERS), None)
    if reserved is not None:
        return f"holds {reserved!r}, which Windows file systems do not allow in a name"
    if name.endswith("."):
        return "ends with '.', which Windows drops from a name"
    if name.split(".")[0].upper() in WINDOWS_DEVICE_NAMES:
        return f"is the Windows device name {name.split('.')[0].upper()}, which opens the device, not a folder"
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
