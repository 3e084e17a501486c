"""Where the tests find the repository and their own data, wherever a test file sits below tests/."""
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"


def repo_env(**extra: str) -> dict:
    """The environment for a child Python that must import this checkout's packages: PYTHONPATH = REPO (the
    editable install may point at another checkout, e.g. the main one when tests run in a worktree)."""
    import os
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}
