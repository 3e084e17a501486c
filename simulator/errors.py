"""User-facing errors. The CLI prints `str(err)` on one line and exits 2; no traceback."""
from __future__ import annotations

from models.errors import FieldError


class ScenarioError(FieldError):
    """Bad user input: names the offending field/value and what is allowed (`field`, `message`)."""
