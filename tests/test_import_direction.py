"""Inside simulator/, imports point one way (ARCHITECTURE: config at the boundary, the core below it): every
import statement of a sub-package (also inside functions) names a sub-package of the same or a lower layer,
and the core holds no pydantic model (it receives frozen dataclasses from simulator.config). A module's
`if __name__ == "__main__":` block is a program, not a dependency: it may start the executable
(simulator.launch, the top layer)."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SIMULATOR = ROOT / "simulator"
# lowest first; a module may import its own layer and those before it
LAYERS = ["errors", "console", "cost", "speculation", "results", "core", "config", "cluster", "distributed", "api", "workflows",
          "cli", "__init__", "launch"]
NO_PYDANTIC = ("core", "cost", "speculation", "results")


def _layer(path: pathlib.Path) -> str:
    parts = path.relative_to(SIMULATOR).parts
    return parts[0] if len(parts) > 1 else path.stem


def _imports(path: pathlib.Path) -> list[tuple[int, str]]:
    found = []
    tree = ast.parse(path.read_text())
    tree.body = [node for node in tree.body if not _main_block(node)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _main_block(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` at module level."""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def test_main_blocks_are_recognised():
    tree = ast.parse('if __name__ == "__main__":\n    import simulator.launch\nif x == "__main__":\n    pass\n')
    assert [_main_block(node) for node in tree.body] == [True, False]


def test_every_package_of_simulator_has_a_layer():
    packages = {_layer(p) for p in SIMULATOR.rglob("*.py")}
    assert packages <= set(LAYERS), sorted(packages - set(LAYERS))


def test_imports_inside_simulator_point_down():
    bad = []
    for path in sorted(SIMULATOR.rglob("*.py")):
        mine = LAYERS.index(_layer(path))
        for line, module in _imports(path):
            parts = module.split(".")
            if parts[0] == "simulator" and len(parts) > 1 and LAYERS.index(parts[1]) > mine:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not bad, "\n".join(bad)


def test_no_pydantic_below_the_config_boundary():
    bad = [f"{path.relative_to(ROOT)}:{line}" for layer in NO_PYDANTIC for path in (SIMULATOR / layer).rglob("*.py")
           for line, module in _imports(path) if module.split(".")[0] in ("pydantic", "pydantic_core")]
    assert not bad, bad


def test_simulator_imports_no_scenarios_module():
    bad = [f"{path.relative_to(ROOT)}:{line}" for path in SIMULATOR.rglob("*.py")
           for line, module in _imports(path) if module.split(".")[0] == "scenarios"]
    assert not bad, bad


def test_simulator_names_no_scenarios_module_in_a_string_either():
    """(importlib.import_module("scenarios...") would be the same arrow up)"""
    bad = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in SIMULATOR.rglob("*.py")
           for node in ast.walk(ast.parse(path.read_text()))
           if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("scenarios.")]
    assert not bad, bad


def test_scenarios_registers_its_commands_through_entry_points():
    import importlib
    import tomllib

    from simulator.cli import Command, commands
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["draftsim.commands"]
    assert set(declared) == {"validate", "reproduce"}
    for name, target in declared.items():
        module, attr = target.split(":")
        assert isinstance(getattr(importlib.import_module(module), attr), Command), name
    assert set(declared) <= set(commands()), "reinstall (pip install -e .) to refresh the entry points"


def test_tests_sit_in_the_folder_of_what_they_test():
    """tests/ mirrors the packages (tests/simulator/core/ tests simulator/core/, ...); only whole-project
    checks and the shared helpers stay at the top."""
    top = {p.name for p in (ROOT / "tests").glob("*.py")}
    assert top <= {"conftest.py", "contract.py", "paths.py", "sim_helpers.py", "test_declared_imports.py",
                   "test_determinism_fuzz.py", "test_equivalence_fuzz.py", "test_fuzz_inputs.py", "test_fuzz_scenarios.py", "test_hostile_inputs.py", "test_import_direction.py",
                   "test_output_hashes.py", "test_package_isolation.py", "test_readme_examples.py",
                   "test_startup_imports.py"}, sorted(top)
    folders = {p.relative_to(ROOT / "tests").parts[0] for p in (ROOT / "tests").rglob("test_*.py")
               if p.parent != ROOT / "tests"}
    assert folders <= {"models", "profiles", "theory", "simulator", "scenarios"}, sorted(folders)
    for path in (ROOT / "tests" / "simulator").rglob("test_*.py"):
        sub = path.relative_to(ROOT / "tests" / "simulator").parts
        assert len(sub) == 1 or (SIMULATOR / sub[0]).is_dir(), path


def test_test_module_basenames_are_unique():
    """pytest imports test modules by basename (rootdir import mode, no __init__.py): two test files of one name
    anywhere under tests/ stop the whole suite at collection (2026-11-29: tests/profiles/test_fp8_marlin.py and
    tests/simulator/cluster/test_fp8_marlin.py)."""
    from collections import Counter
    names = Counter(path.name for path in (ROOT / "tests").rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
