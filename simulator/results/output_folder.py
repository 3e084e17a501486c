"""An output folder that a command shares with whatever else lives there: a run replaces only its own files.

A command's files are first written into a fresh staging folder, then moved into the output folder. Each
command keeps a manifest of the files it wrote there, `.draftsim-<command>.json` (`{"files": [...]}`); a
later run of the same command into the same folder replaces those files, removes those of them it does
not write again, and leaves everything else — other commands' files, sibling folders (the outputs of
other runs nested inside), the user's own files — as it was.

Rules, checked before any work starts (`check_output_dir`) and again when installing:

- a missing folder is created (the staging folder is renamed into place: all or nothing);
- an empty folder, or one that holds a draftsim manifest (any command's) or a legacy output (a folder
  written before manifests existed, recognised by its marker file, e.g. `summary.json`, and where the command
  gives one, by the marker's first line, `head`: a user's own `points.csv` is no `validate --published`
  output; its manifest is taken to be the command's known file names found there, unless the folder holds a
  manifest of another command), receives the files;
- a file the run would write that exists there but is not in this command's manifest is never
  overwritten: the run is refused (`--out`, one line);
- any other non-empty folder, a file, or a symbolic link is refused.

Every path written is checked to resolve inside the output folder (`inside`). Moving the files in is a
handful of renames; Ctrl-C is held back during them (simulator.console.interrupts.held) so the folder never mixes two runs'
files: the interruption takes effect right after, with the new files complete. After a `kill -9` during
those renames, the manifest (written first as the union of old and new names) still lists every file
present, so the next run cleans up; a staging folder `.draftsim-tmp-*` may be left behind.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import unicodedata
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable

from models.files import DocumentError, expand_home, file_kind_problem, written_at
from simulator.console.interrupts import held
from simulator.errors import ScenarioError

OUT_FIELD = "--out"
MANIFEST_PREFIX, MANIFEST_SUFFIX = ".draftsim-", ".json"
STAGING_PREFIX = ".draftsim-tmp-"


def manifest_name(command: str) -> str:
    return f"{MANIFEST_PREFIX}{command}{MANIFEST_SUFFIX}"


def _refuse_empty(out_dir: Path | str, field: str) -> None:
    if str(out_dir).strip() == "":
        what = "the output folder, or omit --out for the default" if field == OUT_FIELD else f"a file path, or omit {field}"
        raise ScenarioError(field, f"an empty path; give {what}")


def given_or(out_dir: Path | str | None, default: Path) -> Path:
    """The output folder given (`--out`) as a Path, or `default` when none was. An empty one is refused as
    `absolute` refuses it before it becomes a Path: Path('') is '.', and `compare`, `sweep` and `plan` wrote
    their files into the current folder (exit 0) where `run` refused it."""
    if out_dir is None:
        return default
    _refuse_empty(out_dir, OUT_FIELD)
    return Path(out_dir)


def absolute(out_dir: Path | str, field: str = OUT_FIELD) -> Path:
    """`out_dir` as an absolute path (ScenarioError on `field`, --out unless told, when it is empty, or a
    path the file system cannot look up)."""
    _refuse_empty(out_dir, field)
    if "\x00" in str(out_dir):   # (only through the Python API: a shell cannot pass a NUL byte)
        raise ScenarioError(field, f"{str(out_dir)!r} holds a NUL byte")
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in str(out_dir)):
        # a newline pasted into --out made a folder 'a\nb' (and split the line that names it), while a scenario
        # name of such characters is refused (simulator.config.names)
        raise ScenarioError(field, f"{str(out_dir)!r} holds a control character (a newline, tab, escape, "
                                   "...); give a path without one")
    try:
        path = expand_home(out_dir).absolute()
    except DocumentError as exc:
        raise ScenarioError(field, str(exc)) from None
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        pass   # (a folder to create; a file in the way is refused by the caller, naming what is there)
    except OSError as exc:   # a name too long for the file system, a loop of links: one line naming the field
        raise ScenarioError(field, f"{path}: {exc.strerror or exc}") from None
    return path


def plain_name(name: str) -> bool:
    """Whether `name` is one file name: not empty, no folder, not '.' or '..', no NUL byte."""
    return bool(name) and Path(name).name == name and name not in (".", "..") and "\x00" not in name


def inside(folder: Path, name: str) -> Path:
    """`folder / name` for a plain file name that resolves inside `folder` (ValueError otherwise)."""
    if not plain_name(name):
        raise ValueError(f"{name!r} must be a plain file name")
    path = folder / name
    if path.resolve().parent != folder.resolve():
        raise ValueError(f"{name!r} resolves outside {folder}")
    return path


def _is_output_folder(entries: list[str], marker: str) -> bool:
    return marker in entries or any(e.startswith(MANIFEST_PREFIX) and e.endswith(MANIFEST_SUFFIX)
                                    and not e.startswith(STAGING_PREFIX) for e in entries)


def recorded(out_dir: Path, command: str) -> set[str] | None:
    """The files `command`'s manifest in `out_dir` lists, or None without one (ScenarioError on `--out` when
    the file of its name is not a draftsim manifest). An entry that is no plain file name (`plain_name`: a path,
    '..', '', a NUL byte; no draftsim command lists one) is no file of the folder and is left out: '..' or ''
    passed here and raised a ValueError traceback as the files were installed, after the whole run."""
    path = out_dir / manifest_name(command)
    if not path.is_file():
        return None
    try:
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
        return {f for f in files if isinstance(f, str) and plain_name(f)}
    except (OSError, ValueError, KeyError, TypeError):
        raise ScenarioError(OUT_FIELD, f"{path} is not a draftsim manifest; choose another --out") from None


def begins_with(path: Path, head: str) -> bool:
    """Whether `path` is a file whose first line is `head`, or begins with `head` and a comma (a CSV whose later
    columns vary: compare.csv's, one per run): how a command's file written before manifests existed is told
    from a user's own file of its name."""
    try:
        if not path.is_file():   # (a FIFO is never opened: it would wait for a writer)
            return False
        with open(path, encoding="utf-8", newline="") as handle:
            line = handle.readline(len(head) + 2)
    except (OSError, UnicodeDecodeError):
        return False
    return line.rstrip("\r\n") == head or line.startswith(head + ",")


def _owned(out_dir: Path, command: str, marker: str, known: Iterable[str], head: str | None = None) -> set[str]:
    """The files this command wrote into `out_dir` earlier (its manifest; for a legacy output, whose marker
    begins with `head` where one is given, the known names that exist there)."""
    files = recorded(out_dir, command)
    if files is not None:
        return files
    manifests = [p for p in out_dir.glob(f"{MANIFEST_PREFIX}*{MANIFEST_SUFFIX}") if not p.name.startswith(STAGING_PREFIX)]
    if (out_dir / marker).is_file() and not manifests and (head is None or begins_with(out_dir / marker, head)):
        return {name for name in known if (out_dir / name).is_file()}   # written before manifests existed
    return set()


def refuse_link(out_dir: Path) -> None:
    """Refuse (`--out`) an output path that is a symbolic link: its files would land wherever it points (every
    command that writes a folder refuses it alike; it was said to be 'not a directory' when it led to one)."""
    if out_dir.is_symlink():
        raise ScenarioError(OUT_FIELD, f"{out_dir} is a symbolic link (to {os.readlink(out_dir)}); give the folder "
                                       "itself, or another path")


# the commands that file what they measure into the package's shipped data (profiles/data/: `draftsim profile
# --engine vllm --out profiles/data/engine_profile/...`, validate's recorded vLLM runs: `validate-vllm`, the manifest
# name of `validate --engine vllm`); every other command's outputs stay out of it
SHIPPED_DATA_WRITERS = ("profile", "validate", "validate-vllm")
# draftsim's top-level packages (pyproject.toml, [tool.setuptools.packages.find] include): their folders hold its
# code and the data it reads; no command's outputs go there, but for the shipped data's writers above
PACKAGES = ("simulator", "models", "profiles", "theory", "scenarios")


def _package_folder(name: str) -> Path | None:
    """The folder of the top-level package `name`, found without importing it (a cold start's check of --out
    must not pay ~0.9 s for `profiles`); None where it is not found."""
    from importlib.util import find_spec
    package = find_spec(name)
    if package is None or not package.submodule_search_locations:
        return None
    return Path(list(package.submodule_search_locations)[0])


def shipped_data_dir() -> Path | None:
    """The package's shipped data folder, profiles.predictor.DATA_DIR; None where no `profiles` package is found."""
    profiles = _package_folder("profiles")
    return None if profiles is None else profiles / "data"


def package_folders() -> dict[str, Path]:
    """package name -> the folder of each of draftsim's top-level packages found (PACKAGES)."""
    return {name: folder for name in PACKAGES if (folder := _package_folder(name)) is not None}


def _within(folder: Path, home: Path | None) -> bool:
    """Whether `folder` (resolved) is `home` or inside it."""
    if home is None:
        return False
    try:
        home = home.resolve()
    except (OSError, RuntimeError):
        return False
    return folder == home or home in folder.parents


def refuse_package_folders(out_dir: Path | str, command: str) -> None:
    """Refuse (`--out`) an output folder that is, or is inside, one of draftsim's own package folders:
    - the shipped data (profiles/data/, profiles.predictor.DATA_DIR, which the predictor and the catalogs read),
      for a command not in SHIPPED_DATA_WRITERS: `draftsim plan ... --out profiles/data/x` wrote its ranked.csv,
      launch scripts and DES cache among the shipped profiles, exit 0;
    - any other folder of a package (PACKAGES: its source, its scenarios), for every command: `draftsim run
      s.yaml --out simulator/x` wrote requests.parquet, steps.parquet and summary.json among the simulator's
      modules, exit 0 (2026-11-29), as did every command that writes a folder."""
    try:
        folder = absolute(out_dir).resolve()
    except (OSError, RuntimeError):   # (a loop of links: the folder's own checks name it)
        return
    if _within(folder, shipped_data_dir()):
        if command in SHIPPED_DATA_WRITERS:
            return
        raise ScenarioError(OUT_FIELD, f"{out_dir} is inside the package's shipped data (profiles/data/), which "
                                       f"draftsim {command} does not write; choose another folder")
    for name, home in package_folders().items():
        if _within(folder, home):
            raise ScenarioError(OUT_FIELD, f"{out_dir} is inside draftsim's own package folder {name}/ ({home}), "
                                           f"which draftsim {command} does not write; choose another folder")


def refuse_package_source_file(path: Path, field: str) -> None:
    """Refuse (`field`) an output file inside one of draftsim's package folders (PACKAGES) but their shipped data,
    where the recorded measurements go (`profile --check --check-out simulator/check.json`, a script's `--csv
    scenarios/x.csv` wrote among the modules, exit 0): `refuse_package_folders`' rule for a file, whose command
    is not known here."""
    try:
        folder = path.parent.resolve()
    except (OSError, RuntimeError):
        return
    if _within(folder, shipped_data_dir()):
        return
    for name, home in package_folders().items():
        if _within(folder, home):
            raise ScenarioError(field, f"{path} is inside draftsim's own package folder {name}/ ({home}); choose "
                                       "another path")


def check_folder(out_dir: Path, command: str, marker: str, names: Iterable[str], head: str | None = None) -> set[str]:
    """Refuse (`--out`) a folder that may not receive `names`; returns the files this command owns there
    (`head`: the marker's first line, `_owned`)."""
    if not os.path.lexists(out_dir):
        return set()
    refuse_link(out_dir)
    if not out_dir.is_dir():
        raise ScenarioError(OUT_FIELD, f"{out_dir} exists and is not a directory; choose another path")
    entries = [p.name for p in out_dir.iterdir() if not p.name.startswith(STAGING_PREFIX)]
    if entries and not _is_output_folder(entries, marker):
        raise ScenarioError(OUT_FIELD, f"{out_dir} is a non-empty directory that is not a draftsim output "
                                       f"(no {marker} or draftsim manifest); choose an empty or new directory")
    names = set(names)
    owned = _owned(out_dir, command, marker, names, head)
    for name in sorted(names - owned):
        if os.path.lexists(out_dir / name):
            raise ScenarioError(OUT_FIELD, f"{out_dir / name} exists and was not written by draftsim {command}; "
                                           "move it or choose another --out")
    for name in sorted(names & owned):   # a file of its own since replaced by a link or a folder: a ValueError
        path = out_dir / name            # ('resolves outside') or 'Is a directory' when installing, after the run
        if os.path.lexists(path) and (path.is_symlink() or not path.is_file()):
            what = f"a symbolic link (to {os.readlink(path)})" if path.is_symlink() else "not a file"
            raise ScenarioError(OUT_FIELD, f"{path} is {what}; draftsim {command} writes a file there: move it or "
                                           "choose another --out")
    return owned


def write_manifest(out_dir: Path, command: str, files: Iterable[str]) -> None:
    """Record `files` as `command`'s in `out_dir` (for commands that write their files in place, such as
    `plan`, which never removes anything: the manifest marks the folder as theirs)."""
    _write_manifest(Path(out_dir), command, files)


def _write_manifest(out_dir: Path, command: str, files: Iterable[str]) -> None:
    path = out_dir / manifest_name(command)
    tmp = out_dir / f"{STAGING_PREFIX}{os.getpid()}{MANIFEST_SUFFIX}"
    tmp.write_text(json.dumps({"command": command, "files": sorted(files), "format": 1}, indent=1) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


def claim(out_dir: Path | str, command: str, marker: str, names: Iterable[str] = (), head: str | None = None) -> None:
    """Mark `out_dir` as `command`'s output before the command writes into it in place, ahead of its files
    (`plan`'s DES cache): creates the folder and, unless it already holds this command's manifest, writes one
    listing the files the command owns there now. A run stopped before its files are installed (Ctrl-C, a
    failure) so leaves a folder that the next run of the command accepts, and uses, rather than refuses as
    a non-empty folder that is not a draftsim output."""
    out_dir = absolute(out_dir)
    owned = check_folder(out_dir, command, marker, names, head)
    if (out_dir / manifest_name(command)).is_file():
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_manifest(out_dir, command, owned)


def _install(staged: Path, out_dir: Path, command: str, marker: str, known: set[str], head: str | None) -> None:
    """Move the staged files into `out_dir` (module docstring)."""
    new = {p.name for p in staged.iterdir()}
    if not os.path.lexists(out_dir):
        _write_manifest(staged, command, new)
        _into_place(staged, out_dir)
        return
    owned = check_folder(out_dir, command, marker, new | known, head)
    with held():
        _write_manifest(out_dir, command, owned | new)
        for name in sorted(new):
            os.replace(staged / name, inside(out_dir, name))
        for name in sorted(owned - new):
            target = inside(out_dir, name)
            if target.is_file() and not target.is_symlink():
                target.unlink()
        _write_manifest(out_dir, command, new)
        staged.rmdir()


def check_output_dir(out_dir: Path | str, command: str, marker: str, names: Iterable[str] = (),
                     head: str | None = None) -> Path:
    """Fail now (ScenarioError on `--out`) if `out_dir` could not receive the outputs later (module
    docstring; `head`: the marker's first line), or a staging folder cannot be created there. Probes by
    creating (and at once removing) the staging folder and any missing parents, so it leaves nothing behind."""
    out_dir = absolute(out_dir)
    refuse_package_folders(out_dir, command)
    check_folder(out_dir, command, marker, names, head)
    _probe(out_dir if out_dir.is_dir() else out_dir.parent, OUT_FIELD, out_dir)
    return out_dir


def check_writable_folder(out_dir: Path | str, command: str = "reproduce") -> Path:
    """Fail now (ScenarioError on `--out`) if `out_dir` cannot be a folder that a command writes its files
    into in place (`draftsim reproduce`): an empty path, a path that exists and is not a directory, a folder
    that cannot be created or written, the package's folders (its shipped data, its source). Probed as `check_output_dir` probes:
    nothing left behind."""
    out_dir = absolute(out_dir)
    refuse_package_folders(out_dir, command)
    refuse_link(out_dir)
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise ScenarioError(OUT_FIELD, f"{out_dir} exists and is not a directory; choose another path")
    _probe(out_dir if out_dir.is_dir() else out_dir.parent, OUT_FIELD, out_dir)
    return out_dir


def check_output_file(path: Path | str, field: str) -> Path:
    """Fail now (ScenarioError on `field`) if a file could not be written at `path` later: it is a folder,
    or its folder cannot be created or written, or is inside draftsim's package folders but their shipped data
    (`refuse_package_source_file`), or it is there as another kind of file than a regular one (a
    FIFO, a socket, a device: `draftsim profile --check-out FIFO` waited forever for a reader after the whole
    check). Probed as `check_output_dir` probes: nothing left behind; the writer makes the folder
    (models.files.ready_to_write) — for a link, its target's, where the file lands."""
    path = absolute(path, field)
    if path.is_dir():
        raise ScenarioError(field, f"{path} is a folder; give a file path")
    refuse_package_source_file(written_at(path), field)
    problem = file_kind_problem(path) if os.path.lexists(path) else None
    if problem is not None and problem != "file not found":   # (a link to nothing: written as its target)
        raise ScenarioError(field, f"{path} {problem}; give a regular file's path, or a new one")
    _probe(written_at(path).parent, field, path)   # (the target's folder for a link: it receives the file)
    return path


def _probe(home: Path, field: str, shown: Path) -> None:
    """Create `home` (and its missing parents) and a temporary folder in it, then remove what was created."""
    created = [p for p in (home, *home.parents) if not p.exists()]
    try:
        home.mkdir(parents=True, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=home))
    except OSError as err:
        raise ScenarioError(field, f"cannot create {shown}: {err.strerror or err}") from None
    finally:
        for folder in created:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                pass


@contextmanager
def _staging_folder(home: Path, out_dir: Path):
    """A fresh staging folder in `home`, or in its nearest existing folder when `home` is missing (the
    missing folders are made when the files are installed, `_into_place`: a failed run left them, empty; a
    ScenarioError on `--out` naming `out_dir` when it cannot be made), removed with all it holds if the block
    fails (Ctrl-C included)."""
    while not home.is_dir() and home.parent != home:
        home = home.parent
    try:
        staged = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=home))
    except OSError as err:
        raise ScenarioError(OUT_FIELD, f"cannot create {out_dir}: {err.strerror or err}") from None
    try:
        yield staged
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise


def _into_place(staged: Path, out_dir: Path) -> None:
    """Rename the staging folder to the missing `out_dir`, making its missing parents first (the staging
    folder lies in one of them or in their nearest existing folder: one file system, so a rename)."""
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ScenarioError(OUT_FIELD, f"cannot create {out_dir}: {err.strerror or err}") from None
    os.replace(staged, out_dir)


@contextmanager
def staged_output(out_dir: Path | str, command: str, marker: str, known: Iterable[str] = (), head: str | None = None):
    """`with staged_output(out, "run", "summary.json", names) as folder:` write files into `folder`; on
    success they are installed into `out` (module docstring), on any failure (Ctrl-C included) the
    staging folder is removed and `out` is left as it was. `known`: every name the command may write
    (a legacy output's files; names a run does not write again are removed); `head`: the marker's first line."""
    out_dir, known = absolute(out_dir), set(known)
    check_folder(out_dir, command, marker, known, head)
    with _staging_folder(out_dir if out_dir.is_dir() else out_dir.parent, out_dir) as staged:
        os.chmod(staged, 0o755)  # mkdtemp makes it private; an output folder is a normal folder
        yield staged
        _install(staged, out_dir, command, marker, known, head)


@contextmanager
def staged_files(out_dir: Path | str):
    """`with staged_files(out) as folder:` write files into `folder`; on success each moves into `out`,
    replacing a file of the same name, all together (Ctrl-C held back during the renames; a missing `out` is
    the staging folder renamed into place, so it comes into being only with its files); on any failure (Ctrl-C
    included) nothing moves and the staging folder is removed. For a command whose files are named after what
    it made, in a folder it shares with its other runs (`draftsim reproduce`: NAME.png, NAME.csv,
    NAME_checks.csv, and the `python -m` scripts' --out: they keep the manifest of every file their runs wrote
    there, staged with them, simulator.results.named_files; `draftsim profile --engine vllm`: NAME.json, NAME.log,
    fingerprint.json): nothing is half-written. The files move in name order, so a manifest
    (`.draftsim-...`) moves before the files it lists."""
    out_dir = absolute(out_dir)
    with _staging_folder(out_dir if out_dir.is_dir() else out_dir.parent, out_dir) as staged:
        yield staged
        if not os.path.lexists(out_dir):   # (a folder created up front stayed, empty, after a failure)
            os.chmod(staged, 0o755)   # mkdtemp makes it private; an output folder is a normal folder
            _into_place(staged, out_dir)
            return
        with held():
            for path in sorted(staged.iterdir()):
                os.replace(path, inside(out_dir, path.name))
        staged.rmdir()


def folder_flag(command: str):
    """An argparse `type` for a `python -m` script's output folder (`--out`): checked as
    `check_writable_folder` checks, when the flags are parsed, so that a folder that cannot receive the
    files is argparse's one-line usage error naming the flag before any work (a script's `--out` naming an
    existing file was a FileExistsError traceback after its whole run)."""
    return flag_type(lambda text: check_writable_folder(text, command), "folder")


def file_flag(field: str):
    """An argparse `type` for a script's output file (`--csv`): checked as `check_output_file` checks, when
    the flags are parsed (a folder given as `--csv` was an IsADirectoryError after the whole search)."""
    return flag_type(lambda text: check_output_file(text, field), "file")


def flag_type(check, name: str):
    """`check(text)` as an argparse `type` named `name`: its ScenarioError becomes argparse's usage error."""
    def parse(text: str) -> Path:
        try:
            return check(text)
        except ScenarioError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None
    parse.__name__ = name
    return parse
