"""Every command in a fenced block of README.md and the scenario READMEs runs as written, or is listed
here with the test that runs its equivalent (heavy measurement, the install/test commands CI itself runs).

Commands run from the repository root in a child process (the installed `draftsim` entry point is
replaced by `python3 -m simulator.cli`, the same main); an `--out` into a temporary folder is added where
the command writes outputs, so the checkout stays clean. A README command that is neither run nor
covered fails `test_every_readme_command_is_run_or_covered`, so new examples cannot go untested.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
READMES = [REPO / "README.md", *sorted((REPO / "scenarios").rglob("README.md"))]

# Commands (normalised: comments stripped) run by another test or by CI, with where.
COVERED = {
    "python3 -m pip install -e '.[dev,gpu-data]' && draftsim run scenarios/quickstart.yaml":
        "the README's first command: the install is CI's (.ci/run), the run is `draftsim run scenarios/quickstart.yaml` below",
    "python3 -m pip install -e '.[dev,torch,dask,gpu-data]' && python3 -m pytest -q": ".ci/run runs exactly this",
    'python3 -m pytest -q -m "not slow"': "a subset of the suite CI runs",
    "draftsim run scenarios/quickstart.yaml --executor dask://scheduler:8786":
        "tests/simulator/distributed/test_distributed.py runs scenarios on a running Dask scheduler's address (a LocalCluster's)",
    "python3 -m pytest -q tests/test_output_hashes.py": "a file of the suite CI runs",
    "python3 -m scenarios.validation.run --quick": "tests/scenarios/test_validate_cli.py::test_validate_quick_end_to_end",
    "python3 -m scenarios.validation.run --repeats 3 --out out/validate-cpu":
        "tests/scenarios/test_validate_cli.py::test_repeats_and_op_breakdown (on the quick scenario; the full CPU run "
        "takes ~10 min)",
    "python3 -m scenarios.validation.run --op-breakdown": "tests/scenarios/test_validate_cli.py::test_repeats_and_op_breakdown",
    "python3 -m scenarios.validation.run --profile-first":
        "tests/scenarios/test_validate_cli.py::test_profile_first_measures_the_scenarios_models_here_and_validates_with_them",
    "python3 -m scenarios.moe.des_grid":
        "tests/scenarios/test_moe_scenarios.py::test_des_grid_runs_ep_and_tp_with_and_without_prescheduling_and_speculation "
        "(the same grid, fewer requests)",
    "draftsim profile --engine vllm --models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b --out "
    "profiles/data/engine_profile/vllm-0.32.0-cpu--MACHINE":
        "needs vLLM (its own environment) and ~8 min; the profile it wrote is fitted and priced in "
        "tests/profiles/test_engine_profile.py, its refusals in tests/scenarios/test_vllm_validation.py::test_bad_input_is_one_line_and_exit_2",
    "draftsim validate --engine vllm --live --repeats 2 --profile-dir profiles/data/engine_profile/vllm-0.32.0-cpu--MACHINE":
        "needs vLLM and ~35 min; what it records is compared by "
        "tests/scenarios/test_vllm_validation.py::test_the_shipped_recorded_runs_compare",
    "draftsim validate --engine vllm":
        "tests/scenarios/test_vllm_validation.py::test_the_shipped_recorded_runs_compare (exit 1 when a target is missed)",
    "draftsim profile --device cuda --models llama-3-8b,qwama-0.5b --no-collectives --check --out out/profiles/my-gpu":
        "needs a CUDA GPU; its code paths run on the CPU in tests/profiles/test_engine_kernels.py::test_check_prices_the_op_graph_of_each_shape, "
        "what it wrote on an H100 is checked by tests/profiles/test_h100_profile.py::test_check_errors_are_the_reported_ones",
    "draftsim estimate --model llama-3-8b --hardware h100-sxm --batch 32 --context 2048 --source profile --profile-dir out/profiles/my-gpu":
        "the same command on the shipped H100 profile: "
        "tests/profiles/test_h100_profile.py::test_estimate_with_a_gpu_profile_dir_shows_the_profile_that_priced_it",
    "draftsim sweep scenarios/sweeps/quickstart_qps_gamma.yaml --executor dask://scheduler:8786":
        "needs a Dask scheduler named `scheduler`; test_readme_dask_example_without_a_scheduler_fails_cleanly",
}
# Commands that write into out/ by default: the flag that redirects them.
OUT_FLAG = {"run": "--out", "sweep": "--out", "plan": "--out", "reproduce": "--out", "compare": "--out"}
SLOW_PREFIXES = ("python3 -m scenarios.disagg.search", "draftsim plan", "draftsim sweep")


def readme_commands() -> list[tuple[str, str]]:
    """(README path relative to the repo, command) of every `draftsim` / `python3 -m` line in a fenced block."""
    found = []
    for path in READMES:
        for block in re.findall(r"```[a-z]*\n(.*?)```", path.read_text(), re.S):
            for line in block.splitlines():
                command = line.split("  #")[0].split("   #")[0].strip()
                if re.match(r"(draftsim|python3 -m) ", command):
                    found.append((str(path.relative_to(REPO)), command))
    return found


COMMANDS = readme_commands()
RUNNABLE = [c for _, c in COMMANDS if c not in COVERED]


def _argv(command: str, out_root: Path) -> list[str]:
    """The command's argv; outputs go to `out_root`/<sub-command>-<first argument>, so that consecutive
    README commands on the same file (a sweep, then the same sweep with --resume) share them as a user's do."""
    argv = shlex.split(command)
    if argv[0] == "draftsim":
        sub = argv[1] if len(argv) > 1 else ""
        argv = [sys.executable, "-m", "simulator.cli", *argv[1:]]
        if sub in OUT_FLAG and "--out" not in argv and "--list" not in argv:
            target = re.sub(r"[^A-Za-z0-9_.-]", "_", "-".join(argv[3:5] if len(argv) > 4 else argv[3:4]))
            argv += [OUT_FLAG[sub], str(out_root / target)]
    elif argv[:2] == ["python3", "-m"]:
        argv = [sys.executable, *argv[1:]]
    return argv


def test_the_readmes_hold_commands_and_every_one_is_run_or_covered():
    assert len(COMMANDS) >= 15
    for readme, command in COMMANDS:
        assert command in RUNNABLE or command in COVERED, (readme, command)
    for command, where in COVERED.items():
        assert any(command == c for _, c in COMMANDS), f"stale entry: {command}"
        for test_file, name in re.findall(r"(tests/\w+\.py)(?:::(\w+))?", where):
            assert (REPO / test_file).is_file(), where
            assert not name or f"def {name}(" in (REPO / test_file).read_text(), where


@pytest.fixture(scope="module")
def out_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("readme-out")


@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.slow) if c.startswith(SLOW_PREFIXES)
                                     else c for c in dict.fromkeys(RUNNABLE)])
def test_readme_command_runs_as_written(command, out_root):
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    done = subprocess.run(_argv(command, out_root), cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr
    assert done.stdout.strip(), command  # every example prints its result


@pytest.mark.slow
def test_readme_dask_example_without_a_scheduler_fails_cleanly(tmp_path):
    command = "draftsim sweep scenarios/sweeps/quickstart_qps_gamma.yaml --executor dask://scheduler:8786"
    pytest.importorskip("distributed")
    done = subprocess.run(_argv(command, tmp_path), cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--executor" in lines[0] and "scheduler:8786" in lines[0], done.stderr
    assert not any(tmp_path.iterdir())  # no empty store left behind


# Folders of this repository: a backticked path starting with one of them names a file or folder of the
# checkout, which must exist (a test file moved into tests/<package>/ left four stale names in README.md).
REPO_ROOTS = ("models/", "profiles/", "theory/", "simulator/", "scenarios/", "tests/", ".ci/")


def _expand_braces(path: str) -> list[str]:
    """`a/{b,c}_{d,e}.yaml` -> the four paths it stands for."""
    match = re.match(r"(.*?)\{(.*?)\}(.*)", path)
    if not match:
        return [path]
    return [p for part in match.group(2).split(",") for p in _expand_braces(match.group(1) + part + match.group(3))]


def readme_paths() -> list[tuple[str, str]]:
    """(README, path) of every backticked repository path in README.md; placeholders (`<id>`) and globs are
    cut at their first placeholder, so that the folder before it is what must exist."""
    found = []
    for token in re.findall(r"`([^`\s]+)`", (REPO / "README.md").read_text()):
        token = token.split("::")[0].rstrip(".,;:")
        if token.startswith(REPO_ROOTS):
            for path in _expand_braces(token):
                found.append(("README.md", re.split(r"[<*\[]", path)[0]))
    return found


def test_every_repository_path_the_readme_names_exists():
    paths = readme_paths()
    assert len(paths) >= 100 and ("README.md", "simulator/core/kv/") in paths
    assert _expand_braces("h/{a,b}_{c,d}.yaml") == ["h/a_c.yaml", "h/a_d.yaml", "h/b_c.yaml", "h/b_d.yaml"]
    missing = sorted({path for _, path in paths if not (REPO / path).exists()})
    assert not missing, f"README.md names paths that do not exist: {missing}"
    # every README's test files, backticked or not (scenarios/speculation/README.md named tests/test_engine_policies.py)
    tests = {(str(readme.relative_to(REPO)), path) for readme in READMES
             for path in re.findall(r"(?<![\w/])tests/[\w/]+\.py", readme.read_text())}
    assert len(tests) >= 20
    assert not sorted(t for t in tests if not (REPO / t[1]).is_file())


def readme_scenario_block() -> str:
    """The README's annotated scenario: its first YAML block, the quick start with every section's options."""
    blocks = re.findall(r"```yaml\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    assert blocks and blocks[0].startswith("name: quickstart"), blocks[:1]
    return blocks[0]


def test_the_readmes_annotated_scenario_is_one_a_user_can_copy():
    """Copied into a file, the README's scenario block validates and builds: its uncommented `early_exit` beside
    the block's draft model was refused (early exit is modelled for plain decoding only)."""
    import yaml

    import simulator

    data = yaml.safe_load(readme_scenario_block())
    assert data["drafter"]["kind"] == "draft_model" and data["simulation"]["step_mode"] == "bulk"
    prepared = simulator.prepare(data, ["workload.num_requests=20"], base_dir=REPO / "scenarios")
    assert prepared.num_requests == 20
