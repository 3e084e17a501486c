import sys
from pathlib import Path

# Test modules import helpers from each other by file name (pytest's rootdir-less "prepend" mode puts a
# test file's own folder on sys.path only when it collects that file): put every folder under tests/ on the
# path up front, so a file imports its helper whichever subset of the suite runs.
_TESTS = Path(__file__).parent
for _folder in sorted({p.parent for p in _TESTS.rglob("test_*.py")} | {_TESTS}, reverse=True):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))
