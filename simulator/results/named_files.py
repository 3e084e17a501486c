"""Files named after what a command made, written into a folder it shares with anything else (`draftsim reproduce`:
NAME.png, NAME.csv and NAME_checks.csv in out/papers; the `python -m` scripts of scenarios/ that write their table
and figure into `--out`). Unlike `output_folder.staged_output`, the folder need not be a draftsim output, but:

- a file of one of the command's names that the command did not write there — it is not in the command's manifest
  `.draftsim-<command>.json` (simulator.results.output_folder), nor, in a folder without that manifest, an output of
  the command from before manifests (`legacy`, e.g. its CSV's header line) — is never replaced: refused (`--out`,
  one line) before any work, and again just before the files are moved in;
- a link or a folder of one of those names is refused alike (it was a traceback after the work);
- the files are staged and move in together, the manifest first (`output_folder.staged_files`): all or nothing.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from simulator.errors import ScenarioError
from simulator.results.output_folder import (OUT_FIELD, begins_with, check_writable_folder, flag_type, recorded,
                                             staged_files, write_manifest)

# (folder, file name) -> whether that file there is the command's, written before it kept a manifest
Legacy = Callable[[Path, str], bool]


def first_line(csv_name: str, head: str) -> Legacy:
    """`Legacy` of a command whose outputs written before manifests are told by `csv_name` beginning with `head`
    (its header, or the first columns of it): a user's own file of that name is not."""
    return lambda folder, name: begins_with(folder / csv_name, head)


@dataclass(frozen=True)
class NamedFiles:
    command: str                  # its manifest: .draftsim-<command>.json
    writer: str                   # what a refusal names as the writer ("draftsim reproduce", "python3 -m ...")
    legacy: Legacy | None = None

    def check(self, out_dir: Path | str, names: list[str] | tuple[str, ...]) -> Path:
        """The output folder as an absolute path; ScenarioError on `--out` when it cannot be written
        (`check_writable_folder`) or a file of `names` in it may not be replaced (module docstring)."""
        out = check_writable_folder(out_dir, self.command)
        if not out.is_dir():
            return out
        owned = recorded(out, self.command)
        for name in names:
            path = out / name
            if not os.path.lexists(path):
                continue
            legacy = owned is None and self.legacy is not None and self.legacy(out, name)
            if name not in (owned or set()) and not legacy:
                raise ScenarioError(OUT_FIELD, f"{path} exists and was not written by {self.writer}; move it or "
                                               "choose another --out")
            if path.is_symlink() or not path.is_file():
                what = f"a symbolic link (to {os.readlink(path)})" if path.is_symlink() else "not a file"
                raise ScenarioError(OUT_FIELD, f"{path} is {what}; {self.writer} writes a file there: move it or "
                                               "choose another --out")
        return out

    def flag(self, names: tuple[str, ...]):
        """An argparse `type` for a `python -m` script's `--out`: `check` when the flags are parsed, so that a
        folder that may not receive `names` is argparse's one-line usage error naming the flag, before any work."""
        return flag_type(lambda text: self.check(text, names), "folder")

    @contextmanager
    def staged(self, out_dir: Path | str, names: list[str] | tuple[str, ...]):
        """`with files.staged(out, names) as folder:` write `names` into `folder`; on success they move into
        `out` together with the command's manifest (which keeps the names its earlier runs wrote there), after
        `check` passes again; on any failure (Ctrl-C included) nothing moves and `out` is left as it was."""
        out = self.check(out_dir, names)
        with staged_files(out) as staging:
            yield staging
            self.check(out, names)   # (a file of one of the names put there while the command worked)
            # (staged with the files and moved in first: a run stopped during the renames leaves a manifest
            # listing every file it may have moved in)
            write_manifest(staging, self.command, (recorded(out, self.command) or set()) | set(names))

    def write_table(self, out_dir: Path | str, csv_name: str, rows: list[dict], figures: dict | None = None) -> None:
        """`rows` as `csv_name` (the columns of its first row) and each matplotlib figure of `figures` (file name ->
        figure, 120 dpi), staged together: all or none."""
        import csv
        figures = figures or {}
        with self.staged(out_dir, (csv_name, *figures)) as staged:
            with open(staged / csv_name, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
            for name, figure in figures.items():
                figure.savefig(staged / name, dpi=120)
