"""Where the tests find the repository and their own data, wherever a test file sits below tests/."""
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"
