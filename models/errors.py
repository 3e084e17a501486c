"""Errors raised by catalog look-ups (subclass ValueError so callers can map them to exit code 2)."""
from __future__ import annotations

from typing import Iterable


class UnknownNameError(ValueError):
    def __init__(self, what: str, name: str, allowed: Iterable[str]):
        self.what, self.name = what, name
        super().__init__(f"unknown {what} {name!r}; allowed: {', '.join(sorted(allowed))}")
