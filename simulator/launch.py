"""The `draftsim` executable (pyproject's console script; `python -m simulator.cli` comes here too).

It watches for Ctrl-C before it imports anything else of draftsim (simulator.console.interrupts), so a
press while the program is still loading is one line and exit 130 as well.

Then `main` and the exit. Interpreter shutdown runs the cyclic collector over every object still alive as
it tears the modules down (pandas', scipy's, matplotlib's and the run's: 0.07 s of a 0.5 s `draftsim
estimate`, 0.15 s of a 100-request `run`, 0.25 s of a `plan`); moving them to the collector's permanent
generation first (`gc.freeze`) skips those scans. Reference counting still frees them at shutdown (files
close, streams flush); only cyclic garbage left at this point is not collected, as the process ends anyway.
`simulator.cli.main` itself, which the tests call in their own process, freezes and watches nothing.
"""
from __future__ import annotations

import gc
import sys

from simulator.console import interrupts

interrupts.leave_to_spawner()   # (the `draftsim` script imports this module first, also in a spawned worker)


def entry(main=None) -> None:
    """Run `main` (default simulator.cli.main) as the executable and exit with its code."""
    interrupts.watch()
    from models.errors import keep_standard_streams
    keep_standard_streams()   # (`2>&-`: an error line goes nowhere, never into stdout; before any file is opened)
    try:
        if main is None:
            from simulator.cli import main
        code = main()
        if interrupts.pending():
            from models.errors import EXIT_INTERRUPTED
            if code != EXIT_INTERRUPTED:
                raise KeyboardInterrupt   # a press deferred or swallowed that nothing checked since
    except BaseException as exc:   # (a press while loading, before main's own contract holds)
        if not interrupts.after_ctrl_c(exc):
            raise
        from simulator.console.contract import interrupted
        code = interrupted()
    try:   # what is still buffered for a pipe (`draftsim estimate ... | head -1`) is written now, not at exit
        if sys.stdout is not None:   # (None when started with stdout closed, `>&-`: an AttributeError, exit 1)
            sys.stdout.flush()
    except BrokenPipeError:
        from simulator.console.contract import EXIT_READER_GONE, stdout_reader_gone
        if not stdout_reader_gone():
            raise
        code = EXIT_READER_GONE
    except OSError as exc:   # (`draftsim estimate ... >/dev/full`: the buffered report meets a full device)
        from simulator.console.contract import write_failed
        failed = write_failed(exc)
        if failed is None:
            raise
        code = failed
    gc.freeze()
    sys.exit(code)
