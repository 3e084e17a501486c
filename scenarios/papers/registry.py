"""Paper-figure reproductions: a registry, the common output format, and `draftsim reproduce`.

A reproduction (`Reproduction`) names its source paper and returns an `Outcome`: the figure's data (a
DataFrame, written as ``<name>.csv``), a matplotlib figure (``<name>.png``) and a list of `Check`s: a
published quantity next to the reproduced one with a stated tolerance and PASS/FAIL
(``<name>_checks.csv``, also printed). Each check states its *basis*:

- ``published value``: a number printed in the paper (table/figure named in ``source``);
- ``published formula``: the paper's closed form / theorem evaluated at the stated inputs, compared with
  an independent computation (Monte Carlo of the real algorithm, an LP, brute force or the DES);
- ``published claim``: an inequality the paper states (e.g. "never worse than"), checked numerically;
- ``model vs Monte Carlo`` / ``model limit``: where the paper gives no closed form, our model of its
  algorithm (theory/) against an explicit run of the algorithm, or at limits the algorithm implies.

Reproductions are registered by module path and loaded lazily; each module defines ``REPRODUCTION``.
`tests/test_reproduce_*.py` runs every registered one and requires all checks to pass, so they double
as regression tests. Entries that need features not in the simulator yet (trees/multi-draft/adaptive
policies in the DES) are not registered.
"""
from __future__ import annotations

import argparse
import importlib
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from simulator.console.contract import fail, guarded, parse_args
from simulator.console.progress import Progress
from simulator.console.table import format_columns
from simulator.errors import ScenarioError
from simulator.results.named_files import NamedFiles
from simulator.results.output_folder import begins_with

RELATIONS = ("≈", "≥", "≤")

#: name -> module defining REPRODUCTION (add new reproductions here)
REGISTRY: dict[str, str] = {
    "leviathan": "scenarios.papers.repro_leviathan",
    "sequoia-tree-budget": "scenarios.papers.repro_sequoia",
    "multidraft-optimal-vs-n": "scenarios.papers.repro_multidraft",
    "tetris": "scenarios.papers.repro_tetris",
    "pearl": "scenarios.papers.repro_pearl",
    "deepep": "scenarios.papers.repro_deepep",
    "vllm-spec-under-load": "scenarios.papers.repro_vllm_spec_load",
    "smartspec-adaptive": "scenarios.papers.repro_smartspec",
    "sequoia-tree-vs-batch": "scenarios.papers.repro_sequoia_batch",
    "distserve": "scenarios.papers.repro_distserve",
    "cascade-drafting": "scenarios.papers.repro_cascade",
    "eagle2-dynamic-tree": "scenarios.papers.repro_eagle2",
    "magicdec-long-context": "scenarios.papers.repro_magicdec",
    "multidraft-optimal-des": "scenarios.papers.repro_multidraft_des",
    "shadowkv-long-context": "scenarios.papers.repro_shadowkv",
}


@dataclass(frozen=True)
class Check:
    """reproduced vs published: ``≈`` |r - p| <= tolerance; ``≥`` r >= p - tolerance; ``≤`` r <= p + tol."""

    quantity: str
    basis: str
    source: str
    published: float
    reproduced: float
    tolerance: float
    relation: str = "≈"

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {self.relation!r}")
        if not self.tolerance >= 0:
            raise ValueError(f"tolerance must be >= 0, got {self.tolerance}")

    @property
    def passed(self) -> bool:
        p, r, t = self.published, self.reproduced, self.tolerance
        if not (math.isfinite(p) and math.isfinite(r)):
            return False
        if self.relation == "≈":
            return abs(r - p) <= t
        return r >= p - t if self.relation == "≥" else r <= p + t


@dataclass
class Outcome:
    data: pd.DataFrame
    checks: list[Check]
    figure: object                       # matplotlib Figure with an Agg canvas
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Reproduction:
    name: str
    title: str
    citation: str                        # paper, venue/arXiv id, and the table/figure reproduced
    run: Callable[[], Outcome]


@dataclass(frozen=True)
class Report:
    name: str
    checks: list[Check]
    files: list[Path]
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


def new_figure(width_in: float = 6.4, height_in: float = 4.2, ncols: int = 1):
    """A matplotlib Figure on the Agg canvas (no pyplot state) and its axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.subplots(1, ncols)


def get(name: str) -> Reproduction:
    if name not in REGISTRY:
        raise ValueError(f"reproduction: unknown name {name!r}; known: {', '.join(sorted(REGISTRY))}")
    repro = importlib.import_module(REGISTRY[name]).REPRODUCTION
    if repro.name != name:
        raise RuntimeError(f"{REGISTRY[name]} defines {repro.name!r}, registered as {name!r}")
    return repro


def checks_frame(checks: list[Check]) -> pd.DataFrame:
    return pd.DataFrame([{"quantity": c.quantity, "basis": c.basis, "source": c.source,
                          "published": c.published, "relation": c.relation, "reproduced": c.reproduced,
                          "tolerance": c.tolerance, "status": "PASS" if c.passed else "FAIL"}
                         for c in checks])


def format_checks(checks: list[Check]) -> str:
    rows = [(c.quantity, c.basis, f"{c.published:.6g}", c.relation, f"{c.reproduced:.6g}", f"{c.tolerance:.3g}",
             "PASS" if c.passed else "FAIL") for c in checks]
    head = ("quantity", "basis", "published", "", "reproduced", "tolerance", "status")
    sources = sorted({c.source for c in checks})
    return format_columns(head, rows, left=len(head)) + "\nsources: " + "; ".join(sources)


COMMAND = "reproduce"   # the output folder's manifest of the files reproductions wrote there
CHECKS_HEAD = "quantity,basis,source,published,relation,reproduced,tolerance,status"   # (checks_frame's columns)


def files_of(name: str) -> list[str]:
    """The files reproduction `name` writes."""
    return [f"{name}.png", f"{name}.csv", f"{name}_checks.csv"]


def _written_before_manifests(out_dir: Path, file: str) -> bool:
    """`file` in `out_dir` is a reproduction's of a draftsim without manifests: that reproduction's checks file is
    there with the checks' header."""
    name = file.removesuffix(".png").removesuffix("_checks.csv").removesuffix(".csv")
    return begins_with(out_dir / f"{name}_checks.csv", CHECKS_HEAD)


FILES = NamedFiles(COMMAND, "draftsim reproduce", legacy=_written_before_manifests)


def check_out(out_dir: str | Path, names: list[str]) -> Path:
    """Refuse (`--out`, before any reproduction runs) a folder in which a file these reproductions would
    write exists and was not written by `draftsim reproduce` (it was replaced without a word: `--out .`
    beside a user's own tetris.csv), or is a link or a folder; returns the folder."""
    return FILES.check(out_dir, [file for name in names for file in files_of(name)])


def reproduce(name: str, out_dir: str | Path) -> Report:
    """Run one reproduction and write <name>.png, <name>.csv and <name>_checks.csv into out_dir (a file of
    these names that draftsim reproduce did not write there is refused before it runs: `check_out`)."""
    repro = get(name)
    out = check_out(out_dir, [name])
    outcome = repro.run()
    names = files_of(name)
    with FILES.staged(out, names) as staged:   # the three land together, or none (Ctrl-C, a full disk)
        outcome.figure.savefig(staged / names[0], format="png", metadata={"Software": None})
        # 12 significant digits, as summary.json: an LP solver or BLAS build moves only the last bits of a
        # float, and the written figures must not depend on which one ran.
        outcome.data.to_csv(staged / names[1], index=False, float_format="%.12g")
        checks_frame(outcome.checks).to_csv(staged / names[2], index=False, float_format="%.12g")
    return Report(name, outcome.checks, [Path(out_dir) / n for n in names], list(outcome.notes))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="draftsim reproduce",
        description="Reproduce a paper's figure/table: writes NAME.png (figure), NAME.csv (data) and "
                    "NAME_checks.csv (published vs reproduced with tolerance and PASS/FAIL). Exit 0 when "
                    "every check passes, 1 when one fails.",
        epilog="examples: draftsim reproduce --list;  draftsim reproduce leviathan;  draftsim reproduce all")
    parser.add_argument("names", nargs="*", metavar="NAME", help="reproduction name(s), or 'all'")
    parser.add_argument("--list", action="store_true", help="list the registered reproductions")
    parser.add_argument("--out", default=None, help="output folder (default: out/papers)")
    parser.add_argument("--quiet", action="store_true", help="no progress and no tables; the exit code and "
                                                             "a line per failed reproduction still tell")
    args = parse_args(parser, argv)   # a bad flag: one line, exit 2
    if isinstance(args, int):
        return args
    if args.list and args.names:
        return fail(f"--list takes no NAME (got {args.names[0]!r}); give --list alone, or the NAME(s) to reproduce",
                    "reproduce")
    if args.list and args.out is not None:
        return fail(f"--out: --list writes nothing (got --out {args.out!r}); give --out with the NAME(s) to reproduce",
                    "reproduce")
    args.out = "out/papers" if args.out is None else args.out
    if args.list or not args.names:
        for name in sorted(REGISTRY):
            repro = get(name)
            print(f"{name:26s} {repro.title}\n{'':26s} {repro.citation}")
        if args.list:
            return 0
        print("draftsim reproduce: error: give a reproduction NAME, 'all', or --list", file=sys.stderr)
        return 2
    if "all" in args.names and len(args.names) > 1:
        return fail("'all' reproduces every reproduction; give it alone, or only NAMEs", "reproduce")
    names = sorted(REGISTRY) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        return fail(f"unknown reproduction {unknown[0]!r}; known: {', '.join(sorted(REGISTRY))} (or 'all')",
                    "reproduce")
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        return fail(f"reproduction {twice!r} is given twice", "reproduce")
    try:   # before any reproduction runs (a few take minutes)
        check_out(args.out, names)
    except ScenarioError as exc:
        return fail(str(exc), "reproduce")
    failed = 0
    for name in names:
        # (an OSError is the contract's, `guarded`: a full disk is a write failure, exit 1, naming the output; this
        # loop's own handler said 'error: : No space left on device', exit 2, as if the input were bad)
        with Progress(f"reproducing {name}", quiet=args.quiet):
            report = reproduce(name, args.out)
        repro = get(name)
        verdict = "PASS" if report.passed else "FAIL"
        failed += not report.passed
        if args.quiet:
            if not report.passed:
                print(f"draftsim reproduce: {name}: a check failed (see {report.files[-1]})", file=sys.stderr)
            continue
        print(f"== {name}: {repro.title} [{verdict}]\n   {repro.citation}")
        print(format_checks(report.checks))
        for note in report.notes:
            print(f"note: {note}")
        print("wrote " + ", ".join(str(p) for p in report.files) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(guarded(main, "reproduce"))
