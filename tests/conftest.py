import sys
from pathlib import Path

# Test modules import helpers from each other by file name (pytest's rootdir-less "prepend" mode puts a
# test file's own folder on sys.path only when it collects that file): put every folder under tests/ on the
# path up front, so a file imports its helper whichever subset of the suite runs.
_TESTS = Path(__file__).parent
for _folder in sorted({p.parent for p in _TESTS.rglob("test_*.py")} | {_TESTS}, reverse=True):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))


def _hypothesis_without_local_constants() -> None:
    """Hypothesis (6.13x and later) mixes literal constants of every non-site-packages module in sys.modules
    into its draws (hypothesis.internal.conjecture.providers._get_local_constants). So a derandomized test drew
    other examples depending on which modules the tests before it had imported: the determinism fuzz drew
    140 runs alone and 150 after tests/scenarios was collected, and in a whole-suite run heavier ones (40 s
    alone, 400 s in the suite). The fixed example sets that CI runs must not depend on the test order or on how
    pytest-xdist splits the suite: the draws here use hypothesis's own constants only. (Private API: where a
    later release moves it, nothing is patched here and tests/test_determinism_fuzz.py
    test_hypothesis_draws_take_no_constants_from_loaded_modules fails.)"""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:   # (hypothesis not installed: the suite's property tests are skipped with it)
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        empty = providers.Constants()
        providers._get_local_constants = lambda: empty


_hypothesis_without_local_constants()
