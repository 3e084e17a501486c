"""User-given text shown on one line: a label of a run or of a sweep point, a value in an error line."""
from __future__ import annotations

import unicodedata

ESCAPED = ("Cc", "Cf", "Zl", "Zp")   # control, invisible format, line and paragraph separators


def printable(text: str) -> str:
    """`text` with its control and invisible format characters written as escapes: '\\n', '\\x1b', '\\u202e'.
    A newline cut an error line (the contract keeps its first line) or split a table's header over two lines
    and a CSV into quoted lines; ESC [31m coloured the terminal; U+202E reversed what followed it."""
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in ESCAPED else c for c in text)
