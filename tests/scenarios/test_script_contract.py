"""Every `python -m` script of scenarios/ and profiles/ keeps the command-line half of the error contract
(models.errors): an unknown flag or a bad flag value is one line naming the flag, exit 2, no usage block
and no traceback; Ctrl-C is one line, exit 130. The scripts are found by reading the tree, so a new script
that parses its flags with plain argparse fails here."""
from __future__ import annotations

import argparse
import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contract import snapshot
from models.errors import FieldError, bounded, one_line_usage_errors, run_script

ROOT = Path(__file__).resolve().parents[2]
# Standalone harnesses that import nothing from draftsim: they run by path in other environments (the vLLM
# venv, the GPU machine) and their text is part of the provenance of the data they measured
# (fingerprints hold their sha256).
STANDALONE = {
    "profiles/engine_time/measure_launch.py",
    "profiles/engine_time/measure_vllm.py",
    "profiles/engine_time/vllm_driver.py",
    "scenarios/validation/gpu/measure_forwards.py",
    "scenarios/validation/gpu/measure_verify_attention.py",
    "scenarios/validation/gpu/measure_sustained_gemm.py",
    "scenarios/validation/gpu/measure_sustained_forwards.py",
}


def _is_script(path: Path) -> bool:
    """A module with a `__main__` block that builds an argparse parser."""
    text = path.read_text()
    if "argparse" not in text:
        return False
    for node in ast.parse(text).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and \
                isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__":
            return True
    return False


SCRIPTS = sorted(str(p.relative_to(ROOT)) for base in ("scenarios", "profiles") for p in (ROOT / base).rglob("*.py")
                 if _is_script(p) and str(p.relative_to(ROOT)) not in STANDALONE)


def test_the_scripts_are_found():
    assert len(SCRIPTS) >= 30, SCRIPTS
    assert "scenarios/benchmarks/fleet_speed.py" in SCRIPTS and "profiles/acceptance/measure.py" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_an_unknown_flag_is_one_line_and_exit_2(script, capsys, monkeypatch):
    module = importlib.import_module(script[:-3].replace("/", "."))
    monkeypatch.setattr(sys, "argv", [script, "--no-such-flag"])
    try:
        code = module.main(["--no-such-flag"])
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert code == 2, script
    lines = captured.err.strip().splitlines()
    # (a script with required flags names those first)
    assert len(lines) == 1 and ": error: " in lines[0] and "usage:" not in captured.err, captured.err
    assert captured.out == ""


BOUNDED_FLAGS = [(script, flag) for script in SCRIPTS
                 for flag in re.findall(r'add_argument\("(--[\w-]+)"[^\n]*type=bounded\(', (ROOT / script).read_text())]


def test_the_bounded_flags_are_found():
    assert len(BOUNDED_FLAGS) >= 40 and ("scenarios/benchmarks/fleet_speed.py", "--repeats") in BOUNDED_FLAGS


@pytest.mark.parametrize("script,flag", BOUNDED_FLAGS)
def test_a_count_below_its_minimum_is_one_line_naming_the_flag(script, flag, capsys, monkeypatch):
    """Counts, sizes, seeds and rates: -1 is refused before any work (a --repeats 0 used to reach
    statistics.median of nothing, a --threads 100000 torch's allocator)."""
    module = importlib.import_module(script[:-3].replace("/", "."))
    monkeypatch.setattr(sys, "argv", [script, flag, "-1", "-1"])
    with pytest.raises(SystemExit) as exited:
        module.main([flag, "-1", "-1"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2
    assert len(lines) == 1 and f"argument {flag}" in lines[0] and "must be >" in lines[0], lines


def test_bounded_parses_numbers_of_its_kind_within_bounds():
    count, rate, threads = bounded(), bounded(float, 0.0, exclusive=True), bounded(maximum=4)
    assert count("3") == 3 and rate("0.5") == 0.5 and threads("4") == 4
    for parse, text in ((count, "0"), (count, "2.5"), (count, "x"), (rate, "0"), (rate, "nan"), (threads, "5")):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)


def test_run_script_turns_ctrl_c_and_field_errors_into_one_line(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["scenarios/benchmarks/example.py"])

    def interrupted():
        raise KeyboardInterrupt

    def bad_field():
        raise FieldError("--repeats", "must be >= 1, got 0")

    assert run_script(interrupted) == 130
    assert capsys.readouterr().err == "example.py: interrupted\n"
    assert run_script(bad_field) == 2
    assert capsys.readouterr().err == "example.py: error: --repeats: must be >= 1, got 0\n"
    assert run_script(lambda: 1) == 1 and run_script(lambda: None) == 0


def test_run_script_turns_a_failed_child_into_one_line(capsys, monkeypatch):
    """A benchmark's own runs are child processes (`subprocess.run(check=True)`): one that fails is one
    line with its exit code and the last line of its captured stderr; exit 2 when it refused its input."""
    monkeypatch.setattr(sys, "argv", ["scenarios/benchmarks/example.py"])
    child = [sys.executable, "-c", "import sys; sys.stderr.write('Traceback\\n  ...\\nchild: error: x: bad\\n'); "
             "sys.exit(int(sys.argv[1]))"]

    def failing(code: str, capture: bool):
        return lambda: subprocess.run([*child, code], check=True, capture_output=capture, text=True)

    assert run_script(failing("2", True)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("example.py: error: a child process failed (")
    assert err.endswith(": exit 2): child: error: x: bad\n")
    assert run_script(failing("7", True)) == 1
    assert capsys.readouterr().err.endswith(": exit 7): child: error: x: bad\n")
    assert run_script(failing("3", False)) == 1   # (stderr not captured: the child wrote it above)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"example.py: error: a child process failed ({Path(sys.executable).name} -c ")
    assert err.endswith(" 3: exit 3)\n")


def test_every_script_exits_through_run_script():
    """Their `__main__` blocks hand `main` to run_script (Ctrl-C and field errors as one line), or they run
    under the draftsim commands' whole contract (simulator.console.contract)."""
    bad = [script for script in SCRIPTS if "run_script(main)" not in (text := (ROOT / script).read_text())
           and "simulator.console.contract" not in text]
    assert not bad, bad


DOC_DESCRIBED = [script for script in SCRIPTS if re.search(r"description=[^\n]*__doc__", (ROOT / script).read_text())]


def test_a_description_from_the_docstring_is_its_whole_first_paragraph():
    """`__doc__.splitlines()[0]` cut 16 scripts' --help descriptions mid-sentence ('suffix_acceptance.py ...:
    walks, figures and the shipped'); one rule, models.errors.doc_description, takes the first paragraph."""
    assert len(DOC_DESCRIBED) >= 25 and "scenarios/acceptance/suffix_acceptance.py" in DOC_DESCRIBED
    first_line = re.compile(r'__doc__\.(splitlines\(\)|split\("\\n"\))\[0\]')
    bad = [script for script in DOC_DESCRIBED if first_line.search((ROOT / script).read_text())]
    assert not bad, bad


@pytest.mark.parametrize("script", DOC_DESCRIBED)
def test_help_prints_the_docstrings_first_paragraph(script, capsys, monkeypatch):
    module = importlib.import_module(script[:-3].replace("/", "."))
    monkeypatch.setattr(sys, "argv", [script, "--help"])
    try:
        code = module.main(["--help"])
    except SystemExit as exc:
        code = exc.code
    assert code == 0
    # (compared without whitespace: argparse re-wraps the paragraph, breaking lines after hyphens too)
    paragraph = "".join(module.__doc__.strip().split("\n\n")[0].split())
    assert paragraph in "".join(capsys.readouterr().out.split()), script


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_report_nobody_can_take_is_one_line_or_nothing(tmp_path):
    """A script's report into a full device (`>/dev/full`) was a traceback, exit 1 (the interpreter's own
    exit 120 when the report was still buffered); into a pipe whose reader has left (`| head -1`) a traceback
    too. Now: one line saying the output could not be written, exit 1; nothing, exit 141 (as the draftsim
    commands, simulator.console.contract)."""
    import os
    argv = [sys.executable, "-m", "scenarios.papers.leviathan_table1", "--out", str(tmp_path)]
    with open("/dev/full", "w") as full:
        done = subprocess.run(argv, cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ("leviathan_table1.py: error: the output: could not be written: No space left on device "
                           "(no input error: free space or write elsewhere)\n")
    read_end, write_end = os.pipe()
    os.close(read_end)   # (the reader has gone before the first line: every write meets EPIPE)
    try:
        done = subprocess.run(argv, cwd=ROOT, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


OUTPUT_FLAGS = [(script, flag) for script in SCRIPTS if script.startswith("scenarios/")
                for flag in re.findall(r'add_argument\("(--out|--csv)"', (ROOT / script).read_text())]


FILE_FLAGS = {("scenarios/validation/vllm/workload.py", "--out")}   # an output file, not a folder
# what a draftsim command needs besides the flag before it looks at its output (`draftsim reproduce NAME`,
# `draftsim validate --engine vllm`)
NEEDS = {"scenarios/papers/registry.py": ["leviathan"], "scenarios/validation/vllm/report.py": ["--engine", "vllm"]}


def test_the_output_flags_are_found():
    assert len(OUTPUT_FLAGS) >= 12 and ("scenarios/disagg/search.py", "--csv") in OUTPUT_FLAGS


@pytest.mark.parametrize("script,flag", OUTPUT_FLAGS)
def test_an_output_path_that_cannot_be_written_is_one_line_before_any_work(script, flag, tmp_path, capsys,
                                                                          monkeypatch):
    """An `--out` folder that is an existing file, or a `--csv` file that is a folder, is refused when the
    flags are parsed (simulator.results.output_folder.folder_flag / file_flag, or the command's own check
    before its work): a FileExistsError or IsADirectoryError traceback came after the whole run."""
    (tmp_path / "a-file").write_text("the user's")
    given = tmp_path / ("" if (script, flag) in FILE_FLAGS or flag == "--csv" else "a-file")   # (a folder for a file)
    module = importlib.import_module(script[:-3].replace("/", "."))
    argv = [*NEEDS.get(script, []), flag, str(given)]
    monkeypatch.setattr(sys, "argv", [script, *argv])
    monkeypatch.chdir(tmp_path)
    try:
        code = module.main(argv)
    except SystemExit as exc:
        code = exc.code
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2, (script, lines)
    assert len(lines) == 1 and flag in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"] and (tmp_path / "a-file").read_text() == "the user's"


def test_bounded_list_reads_comma_separated_counts():
    from models.errors import bounded_list
    assert bounded_list()("2,4, 6") == [2, 4, 6]
    for text in ("", "2,,4", "abc", "0,2", "2,"):
        with pytest.raises(argparse.ArgumentTypeError):
            bounded_list()(text)


def test_the_placement_search_refuses_a_search_it_cannot_finish_or_that_finds_nothing(capsys):
    """scenarios.disagg.search: --max-gpus 100000 listed 5e9 layouts and never printed a line; --tp 1 1 searched
    every layout twice; no layout within --max-gpus printed an empty table, exit 0."""
    from scenarios.disagg import search
    from simulator.workflows.goodput import candidate_count, candidates
    scenario = str(ROOT / "scenarios" / "disagg" / "colocated.yaml")
    for flags, says in ((["--max-gpus", "100000"], "argument --max-gpus: 100000 GPUs give 5,000,050,000 layouts"),
                        (["--tp", "1", "1"], "argument --tp: a degree is given twice: 1 1"),
                        (["--max-gpus", "2", "--tp", "3"], "argument --max-gpus: no layout of --tp 3 x --pp 1 fits")):
        with pytest.raises(SystemExit) as exited:
            search.main([scenario, *flags] if "--tp" in flags else [scenario, "--tp", "1", *flags])   # (--tp once)
        lines = capsys.readouterr().err.strip().splitlines()
        assert exited.value.code == 2 and len(lines) == 1 and says in lines[0], lines
    for gpus in range(1, 13):
        for tps, pps in (((1, 2, 4), (1, 2)), ((3,), (1,)), ((2, 8), (1,))):
            assert candidate_count(gpus, tps, pps) == len(candidates(gpus, tps, pps))


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_single_valued_flag_given_twice_is_one_line_naming_it(script, capsys, monkeypatch, tmp_path):
    """`python -m scenarios.papers.tree_budget --out a --out b` wrote into b without a word (argparse keeps the
    last value): each single-valued flag of every script, given twice, is a usage error naming it."""
    from contract import parser_of, single_valued_twice
    from models.errors import one_line_usage_errors

    module = importlib.import_module(script[:-3].replace("/", "."))
    monkeypatch.setattr(sys, "argv", [script])
    monkeypatch.chdir(tmp_path)
    parser = parser_of(lambda: module.main(NEEDS.get(script, [])))
    one_line_usage_errors(parser)
    for option, argv in single_valued_twice(parser):
        with pytest.raises(SystemExit) as exited:
            parser.parse_args([*NEEDS.get(script, []), *argv])
        lines = capsys.readouterr().err.strip().splitlines()
        assert exited.value.code == 2 and len(lines) == 1, (option, lines)
        assert f"argument {option}" in lines[0] and "given twice; give it once" in lines[0], lines
    assert not list(tmp_path.iterdir())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--out")
    parser.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--verbose", "-v", action="count", default=0)
    parser.add_argument("--cases", nargs="+")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("go").add_argument("--batch", type=int)
    return parser


@pytest.mark.parametrize("argv,named", [
    (["--out", "a", "--out", "b"], "argument --out: given twice; give it once"),
    (["--out=a", "--out", "b"], "argument --out: given twice"),
    (["--ou", "a", "--out=b"], "argument --out: given twice"),   # (an abbreviation argparse takes)
    (["--plots", "--no-plots"], "argument --plots/--no-plots: given twice (--plots, then --no-plots)"),
    (["--quiet", "--quiet"], "argument --quiet: given twice"),
    (["--cases", "a", "b", "--cases", "c"], "argument --cases: given twice"),
    (["go", "--batch", "2", "--batch=4"], "tool go: error: argument --batch: given twice"),
])
def test_the_contract_refuses_a_repeated_single_valued_flag(argv, named, capsys):
    parser = _parser()
    one_line_usage_errors(parser)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and named in err, err


def test_the_contract_keeps_repeatable_flags_and_each_parse_apart(capsys):
    """append and count repeat as before; a parser parsed twice (or hooked twice) starts each parse afresh; the
    help is argparse's own."""
    parser = _parser()
    help_before = parser.format_help()
    one_line_usage_errors(parser)
    one_line_usage_errors(parser)
    assert parser.format_help() == help_before
    for _ in range(2):
        args = parser.parse_args(["--set", "a=1", "--set", "b=2", "-vv", "--out", "x", "go", "--batch", "3"])
        assert (args.set, args.verbose, args.out, args.batch) == (["a=1", "b=2"], 2, "x", 3)


NAMED_OUTPUTS = [script for script in SCRIPTS if "OUTPUT = NamedFiles(" in (ROOT / script).read_text()]


def test_every_script_writing_into_an_out_folder_keeps_its_files_apart_from_the_users():
    """A script's `--out` folder is a NamedFiles' (simulator.results.named_files), as `draftsim reproduce`'s: a bare
    `folder_flag` with writes in place overwrote a user's file of the same name (tree_budget.csv, exit 0)."""
    assert len(NAMED_OUTPUTS) >= 6 and "scenarios/papers/tree_budget.py" in NAMED_OUTPUTS
    assert not [script for script in SCRIPTS if "folder_flag(" in (ROOT / script).read_text()]


@pytest.mark.parametrize("script", NAMED_OUTPUTS)
def test_a_users_file_of_a_scripts_output_name_is_refused_before_any_work(script, tmp_path, capsys, monkeypatch):
    module = importlib.import_module(script[:-3].replace("/", "."))
    mine = tmp_path / "out" / module.CSV
    mine.parent.mkdir()
    mine.write_text("the user's")
    before = snapshot(tmp_path)
    monkeypatch.setattr(sys, "argv", [script, "--out", str(mine.parent)])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        module.main(["--out", str(mine.parent)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(lines) == 1, lines
    module_name = script[:-3].replace("/", ".")
    assert f"argument --out: {mine} exists and was not written by python3 -m {module_name}" in lines[0], lines
    assert snapshot(tmp_path) == before
