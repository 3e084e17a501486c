"""`draftsim profile`: the profiler's command (profiles.profiler.run) reporting progress with the
simulator's reporter (simulator.console.progress: a bar on a terminal, periodic lines otherwise), which
profiles/ cannot import itself (it depends on models/ only)."""
from __future__ import annotations

from simulator.console.progress import Progress


def _progress(desc: str, total: int, unit: str) -> Progress:
    return Progress(desc, total=total, unit=unit)


def main(argv: list[str] | None = None) -> int:
    from profiles.profiler import run

    return run.main(argv, progress_factory=_progress)
