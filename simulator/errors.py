"""User-facing errors. The CLI prints `str(err)` on one line and exits 2; no traceback."""
from __future__ import annotations


class ScenarioError(ValueError):
    """Bad user input: names the offending field/value and what is allowed."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")
