"""The test tree's own layout: pytest imports test modules by basename (rootdir import mode, no __init__.py), so
two test files of one name anywhere under tests/ make the whole suite fail to collect (it did, 2026-11-29:
tests/profiles/test_fp8_marlin.py and tests/simulator/cluster/test_fp8_marlin.py)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_module_basenames_are_unique():
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
