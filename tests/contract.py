"""The one error-contract harness of the tests: run a `draftsim` command in this process, capture what it
prints, and check the contract of simulator.console.contract — bad input is one line
`draftsim[ COMMAND]: error: <field>: ...` on stderr, exit 2, no traceback, nothing written.

`cli(*argv)` runs any command; `run_cli(tmp_path, data, *extra)` writes the scenario `data` (a dict, or text
or bytes as they are) and runs `draftsim run` on it; `assert_one_line(err, field)` checks a refusal's line;
`snapshot(folder)` records every path under a folder (to prove nothing was written or removed).
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
from pathlib import Path

import yaml

from simulator.cli import main

WARNING_PREFIX = "draftsim: warning:"


def cli(*argv) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `draftsim ARGV` run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue().strip()


def write_scenario(path: Path, data) -> Path:
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data)
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run_cli(tmp_path: Path, data, *extra, out_name: str = "out") -> tuple[int, str, Path]:
    """`draftsim run s.yaml --out OUT --quiet EXTRA` on the scenario `data`: (exit code, stderr, OUT)."""
    path = write_scenario(tmp_path / "s.yaml", data)
    out = tmp_path / out_name
    code, _, err = cli("run", path, "--out", out, "--quiet", *extra)
    return code, err, out


def errors_only(err: str) -> str:
    """stderr without the warning lines (a refusal may follow warnings printed while reading the input)."""
    return "\n".join(line for line in err.splitlines() if not line.startswith(WARNING_PREFIX))


def assert_one_line(err: str, field: str) -> None:
    """`err` is one error line of the contract that names `field`."""
    err = errors_only(err)
    assert len(err.splitlines()) == 1, err
    assert err.startswith("draftsim") and "error:" in err and field in err, err
    assert "Traceback" not in err


HASHED_BYTES = 64 * 1024**2   # larger files (a test's sparse 17 GiB trace) are recorded by size and mtime


def _fingerprint(path: str) -> str:
    info = os.lstat(path)
    if info.st_size > HASHED_BYTES:
        return f"size {info.st_size} mtime {info.st_mtime_ns}"
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def snapshot(folder: Path) -> dict[str, str]:
    """relative path -> kind and content hash of everything under `folder` (symbolic links, FIFOs and
    devices are recorded by kind, never opened)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            out[os.path.relpath(os.path.join(root, name), folder)] = "dir"
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                out[os.path.relpath(path, folder)] = "other"
            else:
                out[os.path.relpath(path, folder)] = _fingerprint(path)
    return out


class _Parsed(Exception):
    """Raised in place of parsing: the parser a command built (`parser_of`)."""

    def __init__(self, parser):
        super().__init__(parser.prog)
        self.parser = parser


def parser_of(call) -> "argparse.ArgumentParser":
    """The argparse parser that `call()` (a command's or a script's `main(argv)`) builds and hands to the error
    contract (models.errors.one_line_usage_errors, through simulator.console.contract.parse_args or
    models.errors.script_args), stopped there: nothing parsed, no work done. The contract is not applied yet."""
    import models.errors
    import simulator.console.contract as contract

    def stop(parser):
        raise _Parsed(parser)

    hooks = (models.errors.one_line_usage_errors, contract.one_line_usage_errors)
    models.errors.one_line_usage_errors = contract.one_line_usage_errors = stop
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            call()
    except _Parsed as parsed:
        return parsed.parser
    finally:
        models.errors.one_line_usage_errors, contract.one_line_usage_errors = hooks
    raise AssertionError(f"{call} parsed no arguments through the error contract")


def single_valued_twice(parser) -> list[tuple[str, list[str]]]:
    """(option, argv) giving each single-valued option of `parser` (a repeat replaces its value: store, store_const,
    store_true/false, BooleanOptionalAction) twice, with a value its `type` and `choices` take."""
    import argparse

    def value(action) -> list[str]:
        if action.nargs == 0:
            return []
        texts = [str(c) for c in action.choices] if action.choices else ["1", "0.5", "x"]
        for text in texts:
            try:
                converted = action.type(text) if callable(action.type) else text
            except (ValueError, TypeError, argparse.ArgumentTypeError):
                continue
            if not action.choices or converted in action.choices:
                return [text] * (action.nargs if isinstance(action.nargs, int) else 1)
        raise AssertionError(f"no value found for {action.option_strings}")

    single = (argparse._StoreAction, argparse._StoreConstAction, argparse.BooleanOptionalAction)
    return [(a.option_strings[-1], [a.option_strings[-1], *value(a), a.option_strings[-1], *value(a)])
            for a in parser._actions if a.option_strings and isinstance(a, single)]
