"""Errors about user input (subclass ValueError so callers can map them to exit code 2): catalog look-ups, and
the one base of every error that names the field to change (`FieldError`)."""
from __future__ import annotations

from typing import Iterable


class UnknownNameError(ValueError):
    def __init__(self, what: str, name: str, allowed: Iterable[str]):
        self.what, self.name = what, name
        super().__init__(f"unknown {what} {name!r}; allowed: {', '.join(sorted(allowed))}")


class FieldError(ValueError):
    """Bad input naming the field to change and what is allowed: `field`, `message`; str(err) is
    "field: message". Callers that rename the field read the two, never the text."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}")
