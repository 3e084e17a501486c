"""Dependencies point one way (ARCHITECTURE: simulator → {models, profiles, theory}, profiles → models):
`models/` imports no other draftsim package and `profiles/` imports only `models/`, checked in the source
(every import statement, also inside functions) and at run time (importing every module of the package
loads no forbidden package). theory/ has its own test (test_theory_package.py)."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

from paths import repo_env

ROOT = pathlib.Path(__file__).resolve().parent.parent
FORBIDDEN = {"models": {"simulator", "profiles", "scenarios", "theory"},
             "profiles": {"simulator", "scenarios", "theory"}}


def _imported_roots(path: pathlib.Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots.add((node.module or "").split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_source_imports_of_forbidden_packages(package):
    for path in (ROOT / package).rglob("*.py"):
        bad = _imported_roots(path) & FORBIDDEN[package]
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.slow  # a fresh interpreter importing every module: skipped by the fast inner loop
@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_importing_every_module_loads_no_forbidden_package(package):
    """Modules that need an optional extra (torch, gguf, aiconfigurator-core) are skipped when it is absent."""
    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
               for p in sorted((ROOT / package).rglob("*.py"))]
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except ImportError as exc:\n"
            f"        if (exc.name or '').split('.')[0] in {sorted(FORBIDDEN[package])!r}: raise\n"
            f"bad = sorted({{m for m in sys.modules if m.split('.')[0] in {sorted(FORBIDDEN[package])!r}}})\n"
            "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=repo_env())
    assert out.stdout.strip() == "", out.stdout
