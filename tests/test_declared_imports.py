"""Every third-party module that the package or its tests import at module level comes from a distribution
that pyproject.toml declares (core or an extra), directly or through that distribution's own requirements.

A fresh machine installs only what pyproject.toml names; an import that only works because a package was
installed by hand fails there at collection (issue 29: `regex` did). Imports inside a function or a `try`
block are optional by construction (vLLM in its own venv, CUDA-only kernels) and are not checked here.
"""
from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("simulator", "models", "profiles", "theory", "scenarios", "tests")


def _dist_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _declared_closure() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [_dist_name(r) for r in project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        todo += [_dist_name(r) for r in extra]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            todo += [_dist_name(r) for r in (md.requires(name) or [])]
        except md.PackageNotFoundError:
            pass
    return seen


def _module_level_imports(tree: ast.Module):
    """Top-level names imported outside functions and try blocks."""
    lazy: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Try)):
            lazy.update(id(inner) for inner in ast.walk(node) if inner is not node)
    for node in ast.walk(tree):
        if id(node) in lazy:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def test_every_module_level_import_is_declared():
    declared = _declared_closure()
    providers = md.packages_distributions()
    local = {p.stem for p in ROOT.rglob("*.py")} | {p.parent.name for p in ROOT.rglob("__init__.py")}
    missing: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for top in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
                if top in sys.stdlib_module_names or top in local or top == "__future__":
                    continue
                dists = {d.lower().replace("_", "-") for d in providers.get(top, [])}
                if not dists & declared:
                    missing.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    assert not missing, f"imports no declared dependency provides: {missing}"


def test_the_check_sees_an_undeclared_import():
    """The walk above would report an import of a module no declared distribution provides."""
    tree = ast.parse("import os\nimport numpy\nimport not_a_declared_module\ndef f():\n    import vllm\n")
    assert list(_module_level_imports(tree)) == ["os", "numpy", "not_a_declared_module"]
    assert "numpy" in _declared_closure()
    assert "not-a-declared-module" not in _declared_closure()
