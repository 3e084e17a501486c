"""The error contract every `draftsim` command keeps, in one place.

- Bad input (a scenario field, a flag, a file, a missing optional dependency): one line
  `draftsim[ COMMAND]: error: <field>: <what is allowed>` on stderr, exit 2 (`EXIT_USAGE`).
- A check the command reports as failed (a validation target missed): exit 1 (`EXIT_FAILED_CHECK`).
- Ctrl-C: one line `draftsim: interrupted`, exit 130 (`EXIT_INTERRUPTED`, the shell's 128 + SIGINT)
  whenever it comes (simulator.console.interrupts);
  outputs are written atomically (simulator.results.outputs) and sweeps store finished points only,
  so nothing is half-written and `draftsim sweep --resume` continues.
- stdout's reader gone (`draftsim catalog models | head -3`): nothing printed, exit 141 (`EXIT_READER_GONE`,
  the shell's 128 + SIGPIPE, as a tool killed by SIGPIPE); it is not bad input.
- An output that cannot be written (`draftsim catalog models >/dev/full`, a full disk or quota, an I/O error):
  one line saying so, exit 1 (`EXIT_WRITE_FAILED`, as coreutils' write errors); it is not bad input.
- Anything else is a bug in draftsim and keeps its traceback.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from models.errors import (EXIT_INTERRUPTED, EXIT_READER_GONE, EXIT_USAGE, EXIT_WRITE_FAILED,
                           one_line_usage_errors, stdout_reader_gone, write_failure)
from simulator.console.interrupts import after_ctrl_c, pending

EXIT_OK = 0
EXIT_FAILED_CHECK = 1
# --quiet of the commands: progress and the report go; a warning (e.g. a price from the roofline where no
# measurement covers it) and errors still go to stderr
QUIET_HELP = "no progress and no report on success (warnings and errors still go to stderr)"

# top-level module of an optional dependency -> the pyproject extra that installs it
OPTIONAL_MODULES = {"torch": "torch", "gguf": "torch", "dask": "dask", "distributed": "dask",
                    "aiconfigurator_core": "gpu-data", "hypothesis": "dev", "pytest": "dev"}


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None,
               own_unknown: bool = False) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code argparse chose (it has printed its one-line usage error, or
    the help) — for commands' `main`s, which return codes instead of raising SystemExit. `own_unknown`: an
    argument no parser knows is the error of the sub-command it follows (`draftsim run: error: unrecognized
    arguments: --bogus (see draftsim run --help)`), not of the top parser, whose help lists no such flags."""
    one_line_usage_errors(parser)
    try:
        if not own_unknown:
            return parser.parse_args(argv)
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            command = getattr(args, subs[0].dest, None) if subs else None
            owner = subs[0].choices.get(command, parser) if subs else parser
            owner.error(f"unrecognized arguments: {' '.join(unknown)}")
        return args
    except SystemExit as exc:
        return int(exc.code or 0)
    except OSError as exc:   # --help or --version meeting a full device or a reader gone (models.errors)
        return _failed(exc, None)


def error_line(message: str, command: str | None = None) -> str:
    prog = f"draftsim {command}" if command else "draftsim"
    return f"{prog}: error: {message.splitlines()[0] if message else 'failed'}"


def fail(message: str, command: str | None = None, code: int = EXIT_USAGE) -> int:
    print(error_line(message, command), file=sys.stderr)
    return code


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one-line message for an optional dependency that is not installed, or None if `exc` is not one."""
    root = (exc.name or "").split(".")[0]
    extra = OPTIONAL_MODULES.get(root)
    if extra is None:
        return None
    return (f"{root}: this command needs the optional dependency {root!r}, which is not installed; "
            f"install it with: pip install -e '.[{extra}]'")


def interrupted() -> int:
    """Ctrl-C: the one line, and the exit code."""
    print("draftsim: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def guarded(action: Callable[[], int | None], command: str | None = None) -> int:
    """Run a command's work under the contract; returns its exit code. Whatever comes of a Ctrl-C — its
    KeyboardInterrupt, an exception it caused, a failure after it, a normal return after a press the work
    swallowed — is the interruption (simulator.console.interrupts)."""
    try:
        code = int(action() or 0)
    except BaseException as exc:
        if after_ctrl_c(exc):
            return interrupted()
        return _failed(exc, command)
    if pending() and code != EXIT_INTERRUPTED:   # (130: an inner `guarded` said it already)
        return interrupted()
    return code


def _failed(exc: BaseException, command: str | None) -> int:
    """The exit code of a command that raised `exc`, its one line printed; a bug keeps its traceback."""
    from models.errors import UnknownNameError
    from simulator.errors import ScenarioError

    if isinstance(exc, (ScenarioError, UnknownNameError)):
        return fail(str(exc), command)
    if isinstance(exc, BrokenPipeError) and stdout_reader_gone():   # (it printed 'error: Broken pipe', exit 2)
        return EXIT_READER_GONE
    if isinstance(exc, ModuleNotFoundError) and (message := missing_extra(exc)) is not None:
        return fail(message, command)
    if isinstance(exc, MemoryError):
        return fail("out of memory: the run needs more memory than this machine has; use fewer requests "
                    "(workload.num_requests / duration_s) or a shorter trace", command, EXIT_FAILED_CHECK)
    if isinstance(exc, OSError) and (code := write_failed(exc, command)) is not None:
        return code
    if isinstance(exc, OSError):
        where = getattr(exc, "filename", None)
        return fail(f"{where}: {exc.strerror or exc}" if where else str(exc.strerror or exc), command)
    raise exc


def write_failed(exc: OSError, command: str | None = None) -> int | None:
    """`EXIT_WRITE_FAILED`, its one line printed, when `exc` is a write the machine could not take (a full
    disk: stdout on /dev/full, an output file on a full volume); None for any other OSError."""
    text = write_failure(exc)
    if text is None:
        return None
    print(error_line(text, command), file=sys.stderr)
    return EXIT_WRITE_FAILED


def command_main(parser: argparse.ArgumentParser, argv: list[str] | None, action: Callable[[argparse.Namespace], int | None],
                 command: str) -> int:
    """A command's `main`: parse `argv` (argparse's own exit code on a usage error or --help), then run
    `action(args)` under the contract."""
    args = parse_args(parser, argv)
    if isinstance(args, int):
        return args
    return guarded(lambda: action(args), command)
