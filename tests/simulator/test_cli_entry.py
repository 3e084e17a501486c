"""The `draftsim` executable is `simulator.launch.entry`: `main`, then `gc.freeze()` before the interpreter
shuts down (issue 30: start-up and exit time). Freezing must change nothing a user sees: the same exit code,
the same output files byte for byte, the same one-line error. Each side runs in its own fresh interpreter,
as the executable does."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from paths import REPO

_VIA_MAIN = "import sys; from simulator.cli import main; sys.exit(main(sys.argv[1:]))"
_VIA_ENTRY = "import sys; from simulator.launch import entry; sys.argv[0] = 'draftsim'; entry()"


def _draftsim(code: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_console_script_is_entry():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"draftsim": "simulator.launch:entry"}


def test_entry_writes_what_main_writes(tmp_path):
    args = ["run", str(REPO / "scenarios" / "quickstart.yaml"), "--set", "workload.num_requests=60", "--quiet"]
    runs = {}
    for name, code in (("main", _VIA_MAIN), ("entry", _VIA_ENTRY)):
        out = tmp_path / name
        done = _draftsim(code, [*args, "--out", str(out)], tmp_path)
        assert done.returncode == 0, (name, done.stderr)
        runs[name] = _files(out)
    assert "summary.json" in runs["main"] and "requests.parquet" in runs["main"], sorted(runs["main"])
    assert runs["entry"] == runs["main"]


def test_entry_keeps_the_exit_code_and_the_one_line_error(tmp_path):
    args = ["run", str(tmp_path / "missing.yaml")]
    via_main, via_entry = _draftsim(_VIA_MAIN, args, tmp_path), _draftsim(_VIA_ENTRY, args, tmp_path)
    assert via_entry.returncode == via_main.returncode == 2
    assert via_entry.stderr == via_main.stderr and via_entry.stderr.count("\n") == 1, via_entry.stderr
    assert "missing.yaml" in via_entry.stderr


def test_version_prints_the_installed_distributions_version(capsys):
    from importlib.metadata import version

    from simulator.cli import main
    assert main(["--version"]) == 0
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out == f"draftsim {version('draftsim')}\n" == f"draftsim {declared}\n"


def test_every_flag_of_draftsims_own_commands_has_a_help_text():
    """`draftsim <command> --help` explains each flag (compare's --step-mode, profile's --device and five flags
    of `profile --engine vllm` printed a bare name)."""
    import argparse
    import importlib
    import importlib.util

    from simulator.cli import DELEGATED, build_parser

    parsers = {}
    for action in build_parser(registered=False)._actions:
        if isinstance(action, argparse._SubParsersAction):
            parsers.update({name: sub for name, sub in action.choices.items() if name in ("run", "catalog")})
    for name, (module, _) in DELEGATED.items():
        built = getattr(importlib.import_module(module), "build_parser", None)
        if built is not None:
            parsers[name] = built()
    parsers["profile --engine vllm"] = importlib.import_module("simulator.workflows.profile_engine").build_parser()
    if importlib.util.find_spec("torch") is not None:   # (profiles.profiler.run imports torch: extra `torch`)
        parsers["profile"] = importlib.import_module("profiles.profiler.run").build_parser()
    # the commands scenarios/ registers (scenarios/commands.py): validate's three modes (its --device and four
    # flags of `validate --engine vllm` printed a bare name)
    for name, module in (("validate", "scenarios.validation.run"),
                         ("validate --published", "scenarios.validation.published.report"),
                         ("validate --engine vllm", "scenarios.validation.vllm.report")):
        parsers[name] = importlib.import_module(module).build_parser()
    assert {"run", "catalog", "compare", "estimate", "plan", "sweep", "validate"} <= set(parsers)
    bare = [(name, action.option_strings[-1]) for name, parser in parsers.items() for action in parser._actions
            if action.option_strings and not (action.help or "").strip()]
    assert not bare, bare


def test_a_commands_help_names_its_other_modes():
    """`draftsim validate --help` and `draftsim profile --help` list their own flags only: --published and
    --engine vllm, modes with parsers of their own, went unmentioned there (README: `draftsim validate
    --published`, `draftsim profile --engine vllm`)."""
    import importlib
    import importlib.util

    helps = {"validate": importlib.import_module("scenarios.validation.run").build_parser().format_help()}
    if importlib.util.find_spec("torch") is not None:   # (profiles.profiler.run imports torch: extra `torch`)
        helps["profile"] = importlib.import_module("profiles.profiler.run").build_parser().format_help()
    flat = {name: " ".join(text.split()) for name, text in helps.items()}
    assert "draftsim validate --published --help" in flat["validate"]
    assert "draftsim validate --engine vllm --help" in flat["validate"]
    assert "profile" not in flat or "draftsim profile --engine vllm --help" in flat["profile"]


def _into_a_closed_pipe(args: list[str], cwd: Path) -> tuple[int, str]:
    """`draftsim ARGS | head -0`: stdout is a pipe whose reader is gone before draftsim writes."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-c", _VIA_ENTRY, *args], cwd=cwd, stdout=write,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                              timeout=300)
    finally:
        os.close(write)
    return done.returncode, done.stderr


def test_a_reader_that_goes_away_is_no_input_error(tmp_path):
    """`draftsim catalog models | head -3` printed 'draftsim: error: Broken pipe' and exited 2 (bad input), or
    Python's 'Exception ignored ... BrokenPipeError' and 120 when the output was still buffered at exit; it
    ends quietly with 141 (128 + SIGPIPE) now, as a tool killed by SIGPIPE."""
    from simulator.console.contract import EXIT_READER_GONE
    assert EXIT_READER_GONE == 141
    for args in (["catalog", "models"], ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--json"],
                 ["sweep", str(REPO / "scenarios" / "sweeps" / "quickstart_qps_gamma.yaml"), "--dry-run"]):
        code, err = _into_a_closed_pipe(args, tmp_path)
        assert (code, err) == (EXIT_READER_GONE, ""), (args, code, err)


def test_a_closed_stdout_is_no_failure(tmp_path):
    """`draftsim run ... >&-` (a cron job or daemon with stdout closed): Python sets sys.stdout to None, print()
    writes nothing, and entry's final flush raised AttributeError: a traceback and exit 1 after the run had
    written its outputs. It exits as main does now, with the same files."""
    args = ["run", str(REPO / "scenarios" / "quickstart.yaml"), "--set", "workload.num_requests=20", "--no-plots"]
    for name, command in (("run", args), ("catalog", ["catalog", "models"])):
        out = tmp_path / name
        done = subprocess.run([sys.executable, "-c", _VIA_ENTRY, *command, *(["--out", str(out)] if name == "run" else [])],
                              cwd=tmp_path, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1),
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)   # (closed before exec)
        assert (done.returncode, done.stderr) == (0, ""), (name, done.stderr)
    assert "summary.json" in _files(tmp_path / "run")


def test_a_closed_stderr_is_no_failure(tmp_path):
    """`draftsim run ... 2>&-`: sys.stderr is None, and the progress reporter asked None whether it was a
    terminal (AttributeError): exit 1, no outputs, and nothing said (stderr closed). The run ends as with
    --quiet now."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", _VIA_ENTRY, "run", str(REPO / "scenarios" / "quickstart.yaml"),
                           "--set", "workload.num_requests=20", "--no-plots", "--out", str(out)], cwd=tmp_path,
                          stdout=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(2),
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert done.returncode == 0 and "outputs in" in done.stdout, (done.returncode, done.stdout[-500:])
    assert "summary.json" in _files(out)


def _with_stderr_closed(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=cwd, stdout=subprocess.PIPE, text=True,
                          preexec_fn=lambda: os.close(2), env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)


def test_an_error_never_lands_in_stdout_with_stderr_closed(tmp_path):
    """`draftsim run missing.yaml 2>&-`: Python sets sys.stderr to None and print(file=None) falls back to stdout,
    so the error line went into the data a user pipes on (exit 2, 'draftsim: error: scenario: file not found'
    on stdout). It goes nowhere now; the exit code still says it. The `python -m` scripts (their parsers) too."""
    for argv in (["-c", _VIA_ENTRY, "run", "missing.yaml"], ["-c", _VIA_ENTRY, "catalog", "bogus"],
                 ["-m", "simulator.workflows.plan.main", "missing.yaml"]):
        done = _with_stderr_closed(argv, tmp_path)
        assert (done.returncode, done.stdout) == (2, ""), (argv, done.returncode, done.stdout)


def test_a_closed_standard_descriptor_is_no_file_of_the_commands(tmp_path):
    """With fd 2 closed the first file a command opened took number 2, where a child's or a C library's error
    text would land in it; the null device holds the number now."""
    code = ("from models.errors import keep_standard_streams; keep_standard_streams(); "
            "import sys; f = open(sys.argv[1], 'w'); print(f.fileno())")
    done = _with_stderr_closed(["-c", code, str(tmp_path / "file")], tmp_path)
    assert done.returncode == 0 and int(done.stdout) > 2, (done.returncode, done.stdout)


def test_the_profiler_runs_with_stderr_closed(tmp_path):
    """`python -m profiles.profiler ... 2>&-`: its progress bar asked sys.stderr (None) whether it was a
    terminal: an AttributeError, exit 1, no profile and nothing said. It profiles as with --no-progress now."""
    import pytest
    pytest.importorskip("torch")
    done = _with_stderr_closed(["-m", "profiles.profiler", "--device", "cpu", "--models", "llama-68m", "--quick",
                                "--no-collectives", "--threads", "1", "--out", str(tmp_path / "p")], tmp_path)
    assert done.returncode == 0 and "profile written to" in done.stdout, (done.returncode, done.stdout[-300:])
    assert (tmp_path / "p" / "ops.csv").is_file()


def test_a_full_device_is_a_failed_write_not_bad_input(tmp_path):
    """`draftsim catalog models >/dev/full` said 'draftsim: error: No space left on device' and exited 2, the code
    of bad input, though nothing the user typed was wrong (and a short report, flushed at exit, ended in a
    traceback). Now: one line saying the output could not be written, exit 1 (EXIT_WRITE_FAILED)."""
    import pytest
    from simulator.console.contract import EXIT_WRITE_FAILED
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this platform")
    assert EXIT_WRITE_FAILED == 1
    for args in (["catalog", "models"], ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--json"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-c", _VIA_ENTRY, *args], cwd=tmp_path, stdout=full,
                                  stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                                  timeout=300)
        lines = done.stderr.splitlines()
        assert done.returncode == EXIT_WRITE_FAILED and len(lines) == 1, (args, done.returncode, done.stderr)
        assert "could not be written: No space left on device" in lines[0], (args, lines)


def test_help_and_version_that_cannot_be_written_are_told():
    """`draftsim --help >/dev/full` exited 0 with nothing written (argparse passes over an OSError of its help),
    `draftsim --version >/dev/full` ended in an OSError traceback, and `draftsim --version | head -0` in a
    BrokenPipeError traceback. A failed write is one line and exit 1 now, a reader gone exit 141, as for any
    other output; a usage error on stderr keeps its exit 2."""
    import pytest
    from simulator.console.contract import EXIT_READER_GONE, EXIT_WRITE_FAILED
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this platform")
    for args in (["--help"], ["--version"], ["run", "--help"], ["catalog", "--help"], ["sweep", "--help"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-c", _VIA_ENTRY, *args], stdout=full, stderr=subprocess.PIPE,
                                  text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
        lines = done.stderr.splitlines()
        assert done.returncode == EXIT_WRITE_FAILED and len(lines) == 1, (args, done.returncode, done.stderr)
        assert "could not be written: No space left on device" in lines[0], (args, lines)
        assert _into_a_closed_pipe(args, REPO) == (EXIT_READER_GONE, ""), args
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-c", _VIA_ENTRY, "catalog", "bogus"], stdout=subprocess.PIPE,
                              stderr=full, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert (done.returncode, done.stdout) == (2, b""), (done.returncode, done.stdout)
