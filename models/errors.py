"""Errors about user input (subclass ValueError so callers can map them to exit code 2): catalog look-ups, the
one base of every error that names the field to change (`FieldError`), and the command-line half of the error
contract that the `python -m` scripts of every package keep (they may not import simulator, whose
simulator.console.contract keeps the rest for the `draftsim` commands): a usage error is one line, exit 2;
Ctrl-C is one line, exit 130."""
from __future__ import annotations

import argparse
import numbers
import sys
from pathlib import Path
from typing import Callable, Iterable, Sequence

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130   # the shell's 128 + SIGINT
EXIT_READER_GONE = 141   # the shell's 128 + SIGPIPE: stdout is a pipe whose reader has closed it
EXIT_WRITE_FAILED = 1    # the machine could not take the output (no space, over quota, an I/O error)
# errnos of a write the machine could not take, whatever the command's input (a read-only or missing --out
# is the user's choice of path: bad input, exit 2)
_WRITE_FAILURES = ("ENOSPC", "EDQUOT", "EIO", "EFBIG")


def catalog_key(name):
    """The key a catalog (models, hardware, EAGLE-3 heads) looks `name` up by: case and surrounding blanks do not
    matter. Anything but a string is its own key (the look-up then fails, naming it)."""
    return name.strip().lower() if isinstance(name, str) else name


class UnknownNameError(ValueError):
    def __init__(self, what: str, name: str, allowed: Iterable[str], also: str = ""):
        """`also`: what else is allowed beside the names, after their sorted list ("or a path to ...")."""
        self.what, self.name = what, name
        self._parts = (what, name, tuple(allowed), also)
        super().__init__(f"unknown {what} {name!r}; allowed: {', '.join(sorted(self._parts[2]))}{', ' + also if also else ''}")

    def __reduce__(self):
        """Pickled as the parts it was made of (FieldError.__reduce__: the same reason)."""
        return self.__class__, self._parts


class FieldError(ValueError):
    """Bad input naming the field to change and what is allowed: `field`, `message`; str(err) is
    "field: message", or "field (not given: implied): message" where the input left the field out and the
    refused value was implied (`implied`: the value and what implied it, simulator.cluster.implied). Callers that
    rename the field read the three, never the text."""

    def __init__(self, field: str, message: str, implied: str | None = None):
        self.field, self.message, self.implied = field, message, implied
        named = field if implied is None else f"{field} (not given: {implied})"
        super().__init__(f"{named}: {message}")

    def __reduce__(self):
        """Pickled as its three parts (an error raised in a worker process or on a Dask worker reaches the
        caller): Exception's own reduce re-calls the class with the one formatted text, which lacks `message`."""
        return self.__class__, (self.field, self.message, self.implied)


def is_boolean(value) -> bool:
    """A Python or a NumPy boolean (`np.True_` out of an array or a DataFrame, through the Python API): never a
    number where a field takes one, though `int(True)` and `float(np.True_)` read it as 1."""
    if isinstance(value, bool):
        return True
    np = sys.modules.get("numpy")   # not imported: no NumPy boolean can exist
    return np is not None and isinstance(value, np.bool_)


def is_integer(value) -> bool:
    """A Python or a NumPy integer (`np.int64` out of an array or a DataFrame row, through the Python API), never
    a boolean; `int(value)` is the Python int."""
    return isinstance(value, numbers.Integral) and not is_boolean(value)


def brief(value) -> str:
    """`repr(value)` for an error line, but an integer of more than 20 digits as its length ("an integer of 400
    digits"): a 400-digit `hidden_size` filled the one line with nines."""
    if isinstance(value, int) and not is_boolean(value) and abs(value) >= 10**20:
        try:
            digits = f"{len(str(abs(value))):,}"
        except ValueError:   # (beyond sys.get_int_max_str_digits: str() refuses it)
            digits = f"more than {sys.get_int_max_str_digits():,}"
        return f"an integer of {digits} digits"
    return repr(value)


def ascii_number(kind: type, text: str):
    """`kind(text)` (int or float) of text in ASCII only, an int of ASCII digits alone (a minus sign before them,
    for the bounds to name); ValueError otherwise. Python's int() and float() read any Unicode decimal digits
    ('٣', '３' and '𝟑' are all 3), which no user means as a flag's number, and int() also '1_0', '+3' and ' 5'
    (`--workers=1_0` ran 10 workers)."""
    if not text.isascii() or (kind is int and not text.removeprefix("-").isdigit()):
        raise ValueError(f"not {'ASCII digits' if kind is int else 'ASCII'}: {text!r}")
    return kind(text)


def _ascii_type(kind: type):
    def parse(text: str):
        return ascii_number(kind, text)

    parse.__name__ = kind.__name__   # (argparse's message: "invalid int value: '٣'")
    return parse


def keep_standard_streams() -> None:
    """Errors go to stderr or nowhere, never into stdout's data: started with a standard stream closed
    (`draftsim run s.yaml 2>&-`), Python sets `sys.stderr` to None, and `print(..., file=sys.stderr)` then
    falls back to stdout (an error line in the numbers a user pipes on), while `sys.stderr.isatty()` raises.
    Each closed descriptor 0-2 is opened on os.devnull — so that no file the command opens later takes its
    number, and a child's or a C library's write to fd 2 cannot land in an output file — and a None
    `sys.stderr` becomes a writer of that null device. Only a closed stream changes; a missing stdout stays
    None (what is printed there goes nowhere, as before); the exit code still says how the command ended."""
    import os
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:   # (closed: the lower ones are open by now, so the null device takes this number)
            opened = os.open(os.devnull, mode)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


def one_line_usage_errors(parser: argparse.ArgumentParser) -> None:
    """Make `parser` and its sub-command parsers print a usage error as one line, `PROG: error: MESSAGE
    (see PROG --help)`, exit 2, instead of argparse's usage block followed by the error; their `type=int` and
    `type=float` flags read ASCII digits only (`ascii_number`). Every command's parser comes here first, so
    it also keeps an error off stdout when stderr was closed (`keep_standard_streams`)."""
    keep_standard_streams()

    def error(message: str, p=parser):
        p.exit(EXIT_USAGE, f"{p.prog}: error: {message} (see {p.prog} --help)\n")

    parser.error = error
    parser._print_message = _stdout_writes_told(parser._print_message)
    _refuse_repeats(parser)
    _end_of_options_taken(parser)
    for action in parser._actions:
        if action.type in (int, float):
            action.type = _ascii_type(action.type)
        if action.option_strings and isinstance(action, _SINGLE_VALUED):
            action.__class__ = _given_once(type(action))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                one_line_usage_errors(sub)


def _stdout_writes_told(print_message):
    """argparse's `_print_message` with its write to stdout (the help) left to raise: argparse passes over an
    OSError there, so `draftsim --help >/dev/full` wrote nothing and exited 0, and `| head -0` exited 0 as if
    read. The caller (simulator.console.contract.parse_args) tells it as any other output that cannot be
    written. Writes to stderr (a usage error) keep argparse's way: there is nowhere left to tell that."""
    def _print_message(message, file=None):
        if message and file is not None and file is sys.stdout:
            file.write(message)
        else:
            print_message(message, file)

    return _print_message


# the actions whose repeat replaces the value (argparse keeps the last: `--out a --out b` wrote to b); append,
# extend, count, help and version are meant to repeat or exit, and keep argparse's way
_SINGLE_VALUED = (argparse._StoreAction, argparse._StoreConstAction, argparse.BooleanOptionalAction)
_GIVEN = "_draftsim_given"   # the parser's {dest: option string} of the parse under way (`_refuse_repeats`)


class _GivenOnce(argparse.Action):
    """A single-valued option refusing a second occurrence in one parse, under any spelling argparse takes
    (`--out=b`, the abbreviation `--ou b`, `--no-plots` after `--plots`): a usage error naming the flag, raised
    before the command does any work."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(parser, _GIVEN, None)
        if given is not None:
            if self.dest in given:
                first = given[self.dest]
                how = "" if first == option_string else f" ({first}, then {option_string})"
                raise argparse.ArgumentError(self, f"given twice{how}; give it once")
            given[self.dest] = option_string
        super().__call__(parser, namespace, values, option_string)


_ONCE_CLASSES: dict[type, type] = {}


def _given_once(kind: type) -> type:
    """`kind` (an argparse action class) with `_GivenOnce`'s check first; `kind` itself if it has it."""
    if issubclass(kind, _GivenOnce):
        return kind
    if kind not in _ONCE_CLASSES:
        _ONCE_CLASSES[kind] = type(kind.__name__, (_GivenOnce, kind), {})
    return _ONCE_CLASSES[kind]


def _refuse_repeats(parser: argparse.ArgumentParser) -> None:
    """Give each parse of `parser` (a sub-command's parser parses its part of argv on its own) a fresh record of
    the options given, which `_GivenOnce` checks."""
    if getattr(parser, _GIVEN, False) is not False:   # (already done: a parser parsed twice comes here twice)
        return
    parse = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):
        outer = getattr(parser, _GIVEN)
        setattr(parser, _GIVEN, {})
        try:
            return parse(args, namespace)
        finally:
            setattr(parser, _GIVEN, outer)

    setattr(parser, _GIVEN, None)
    parser.parse_known_args = parse_known_args


END_OF_OPTIONS = "--"


def _end_of_options_taken(parser: argparse.ArgumentParser) -> None:
    """Take a `--` that ends the options (POSIX) where no operand follows it: Python 3.11's argparse removes it
    only when a positional argument takes the words after it, and otherwise reports it as an unrecognized
    argument (`draftsim estimate --model m --hardware h --` and `draftsim run s.yaml --out o --` were refused,
    exit 2). Only the first `--` of the arguments is the marker: a later one is an operand, and stays
    unrecognized where the command takes none."""
    if getattr(parser, "_draftsim_end_of_options", False):   # (already done: a parser parsed twice comes here twice)
        return
    parse = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        namespace, extras = parse(args, namespace)
        if END_OF_OPTIONS in extras and args.count(END_OF_OPTIONS) == extras.count(END_OF_OPTIONS):
            extras.remove(END_OF_OPTIONS)   # (the marker itself, which argparse left untaken)
        return namespace, extras

    parser._draftsim_end_of_options = True
    parser.parse_known_args = parse_known_args


def bounded(kind: type = int, minimum: float = 1, maximum: float | None = None, exclusive: bool = False):
    """An argparse `type` for a number of `kind` (int or float) within [minimum, maximum] (above `minimum`
    when `exclusive`): a value outside, or not a number of that kind, is argparse's one-line usage error
    naming the flag ("argument --repeats: must be >= 1, got 0")."""
    what = "a whole number" if kind is int else "a number"

    def parse(text: str):
        try:
            value = ascii_number(kind, text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} in ASCII digits is required, got {text!r}") from None
        if not (value > minimum if exclusive else value >= minimum):   # (also refuses NaN)
            raise argparse.ArgumentTypeError(f"must be {'>' if exclusive else '>='} {minimum}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {text}")
        return value

    parse.__name__ = kind.__name__   # (argparse names the type in its fallback message)
    return parse


def doc_description(doc: str | None) -> str:
    """A script's `--help` description from its module docstring: the whole first paragraph (argparse re-wraps
    it). Its first line alone stopped mid-sentence wherever the paragraph wrapped ('... walks, figures and the
    shipped')."""
    return (doc or "").strip().split("\n\n")[0]


def script_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """`parser.parse_args(argv)` of a `python -m` script, with one-line usage errors (SystemExit 2)."""
    one_line_usage_errors(parser)
    return parser.parse_args(argv)


def bounded_list(kind: type = int, minimum: float = 1, maximum: float | None = None):
    """An argparse `type` for a comma-separated list of numbers, each as `bounded` takes it (`--gammas
    2,4,6`): an empty list, an empty entry or an entry out of bounds is argparse's one-line usage error naming
    the flag (a script's `--gammas abc` was a ValueError traceback)."""
    one = bounded(kind, minimum, maximum)

    def parse(text: str) -> list:
        entries = text.split(",")
        if not text.strip() or any(not e.strip() for e in entries):
            raise argparse.ArgumentTypeError(f"a comma-separated list without empty entries is required, got {text!r}")
        return [one(e.strip()) for e in entries]

    parse.__name__ = f"{kind.__name__} list"
    return parse


def write_failure(exc: OSError) -> str | None:
    """The one-line text (without prefix) of a write the machine could not take (a full disk: stdout on
    /dev/full, an output file on a full volume, an I/O error); None for any other OSError."""
    import errno
    if exc.errno not in {getattr(errno, name) for name in _WRITE_FAILURES if hasattr(errno, name)}:
        return None
    where = getattr(exc, "filename", None) or "the output"
    return f"{where}: could not be written: {exc.strerror or exc} (no input error: free space or write elsewhere)"


def stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll says POLLERR on its write end); if so, stdout
    is pointed at /dev/null, so that the interpreter's flush of what is still buffered at exit does not fail
    again ('Exception ignored ... BrokenPipeError', exit 120)."""
    import select
    try:
        watch = select.poll()
        watch.register(sys.stdout.fileno(), select.POLLOUT)
        gone = any(events & select.POLLERR for _, events in watch.poll(0))
    except (AttributeError, OSError, ValueError):   # (no poll on this platform, stdout closed or replaced)
        return False
    if gone:
        _stdout_to_devnull()
    return gone


def run_script(main: Callable[[], int | None]) -> int:
    """A `python -m` script's exit code: `main()`'s; Ctrl-C one line, 130; a `FieldError` or
    `UnknownNameError` (bad input found after parsing) one line, 2; a child process that failed
    (`subprocess.run(check=True)`: a benchmark's or measurement's own runs) one line with its exit code and
    the last line it wrote to a captured stderr, exit 2 when the child refused its input, else 1; stdout's
    reader gone (`| head -1`) nothing, 141; a report the machine could not take (`>/dev/full`) one line, 1 —
    what is still buffered is written here, not at the interpreter's exit, so that it fails inside the contract."""
    import subprocess   # (here: the draftsim commands import this module and never start children)
    prog = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "script"   # (argparse's prog)
    try:
        code = int(main() or 0)
        if sys.stdout is not None:
            sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (FieldError, UnknownNameError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except subprocess.CalledProcessError as exc:
        print(f"{prog}: error: {_child_failure(exc)}", file=sys.stderr)
        return EXIT_USAGE if exc.returncode == EXIT_USAGE else 1
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise
        return EXIT_READER_GONE
    except OSError as exc:
        text = write_failure(exc)
        if text is None:
            raise
        try:   # (what is still buffered would fail again at the interpreter's exit: exit 120)
            _stdout_to_devnull()
        except (AttributeError, OSError, ValueError):
            pass
        print(f"{prog}: error: {text}", file=sys.stderr)
        return EXIT_WRITE_FAILED


def _stdout_to_devnull() -> None:
    """Point stdout's file descriptor at /dev/null: what is still buffered for it is written there at exit."""
    import os
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _child_failure(exc) -> str:
    """One line for a failed child process: what ran, its exit code and the last line of its captured
    stderr (when it was not captured the child printed it above)."""
    cmd = exc.cmd if isinstance(exc.cmd, (list, tuple)) else [str(exc.cmd)]
    what = " ".join(" ".join(Path(str(part)).name if i == 0 else str(part) for i, part in enumerate(cmd[:4])).split())
    err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    last = next((line.strip() for line in reversed(err.splitlines()) if line.strip()), "")
    return f"a child process failed ({what}{' ...' if len(cmd) > 4 else ''}: exit {exc.returncode})" + \
        (f": {last}" if last else "")
