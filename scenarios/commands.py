"""The `draftsim` commands that live in scenarios/ (`validate` drives the simulator and real engines side by
side, `reproduce` the paper reproductions): registered with the CLI through the `draftsim.commands` entry
points of pyproject.toml, so that simulator/ imports nothing from scenarios/."""
from __future__ import annotations

from simulator.cli import Command


def _validate(argv: list[str]) -> int:
    if "--published" in argv:   # against published GPU runs, not a local loop
        from scenarios.validation.published.report import main
        if argv.count("--published") > 1:   # (taken out here, it is no flag of that parser: as its flags, once)
            from simulator.console.contract import fail
            return fail("argument --published: given twice; give it once (see draftsim validate --published --help)",
                        "validate --published")
        argv = [a for a in argv if a != "--published"]
    elif any(a == "--engine" or a.startswith("--engine=") for a in argv):   # against a real vLLM
        from scenarios.validation.vllm.report import main
    else:
        from scenarios.validation.run import main
    return int(main(argv) or 0)


def _reproduce(argv: list[str]) -> int:
    from scenarios.papers.registry import main
    return int(main(argv) or 0)


validate = Command("run a real torch serving loop and the simulator on the same requests and report the "
                   "simulator's error (see `draftsim validate --help`); --published: predict published real "
                   "GPU runs and report the error; --engine vllm: against a real vLLM", _validate)
reproduce = Command("reproduce a paper's figure/table with published-vs-reproduced checks "
                    "(see `draftsim reproduce --list`)", _reproduce)
