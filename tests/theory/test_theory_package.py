"""The theory package: public names resolve, and it depends on no other draftsim package."""
import ast
import pathlib
import subprocess
import sys

import theory

THEORY_DIR = pathlib.Path(theory.__file__).parent
FORBIDDEN = {"simulator", "models", "profiles", "scenarios"}


def test_every_exported_name_resolves():
    for name in theory.__all__:
        assert getattr(theory, name) is not None, name


def test_no_imports_of_other_draftsim_packages():
    for path in THEORY_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert not roots & FORBIDDEN, f"{path.name} imports {roots & FORBIDDEN}"


def test_importing_everything_loads_no_other_draftsim_package():
    code = ("import sys, theory\n"
            "[getattr(theory, n) for n in theory.__all__]\n"
            f"bad = [m for m in sys.modules if m.split('.')[0] in {sorted(FORBIDDEN)!r}]\n"
            "print(','.join(bad))\n")
    from paths import repo_env
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=repo_env(),
                         cwd=THEORY_DIR.parent)
    assert out.stdout.strip() == ""
