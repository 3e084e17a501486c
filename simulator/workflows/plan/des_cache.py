"""DES confirmations of a plan, cached so that a re-plan with other SLOs re-simulates nothing it ran before.

A confirmation's simulation does not depend on the SLOs (they only classify the finished requests), so a
run is keyed by its candidate scenario without `slo`, plus a fingerprint of the code and data that price
it (path, size and modification time of every file of the `simulator`, `models`, `profiles` and `theory`
packages: an edit or a re-measured table starts a new cache). Stored per key, in
`<plan output>/des_cache/`: the run's summary row and, per request, dropped, finish_s, ttft_s, tpot_s and
e2e_s. On a hit the SLO fields are recomputed by `simulator.results.metrics.slo_summary`, the function the
summary itself calls, so a cached row equals the row of a fresh run with the new SLOs (tested). Delete the
folder to drop the cache.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.results.metrics import SLO, slo_summary
from simulator.workflows.sweep.store import _atomic_write

REQUEST_COLUMNS = ("dropped", "finish_s", "ttft_s", "tpot_s", "e2e_s")
_PACKAGES = ("simulator", "models", "profiles", "theory")
_fingerprint: str | None = None


def code_fingerprint() -> str:
    """A hash of (path, size, mtime) of every file of the packages that simulate and price a run."""
    global _fingerprint
    if _fingerprint is None:
        root = Path(__file__).resolve().parents[3]
        digest = hashlib.sha256()
        for package in _PACKAGES:
            for folder, dirs, files in os.walk(root / package):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    stat = os.stat(os.path.join(folder, name))
                    digest.update(f"{folder}/{name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
        _fingerprint = digest.hexdigest()
    return _fingerprint


def run_key(scenario: dict) -> str:
    """The cache key of a candidate's run: its scenario without the SLOs, and the code fingerprint."""
    rest = {k: v for k, v in scenario.items() if k != "slo"}
    text = json.dumps(rest, sort_keys=True, default=str) + code_fingerprint()
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def confirm_point(task: tuple) -> tuple[str, dict, dict | None]:
    """Worker: simulate one candidate; (id, summary row, request columns for the cache or None)."""
    point_id, scenario, base_dir = task
    from models.errors import UnknownNameError
    from simulator.api import run
    from simulator.errors import ScenarioError
    from simulator.workflows.sweep.main import STATUS_INVALID, summary_row

    t0 = time.perf_counter()
    try:
        result = run(dict(scenario), base_dir=base_dir)
    except (ScenarioError, UnknownNameError) as exc:
        return point_id, {"status": STATUS_INVALID, "error": str(exc).splitlines()[0],
                          "wall_s": time.perf_counter() - t0}, None
    requests = {name: result.requests[name].to_numpy() for name in REQUEST_COLUMNS}
    return point_id, summary_row(result.summary, time.perf_counter() - t0), requests


class DesCache:
    """The cache folder of one plan's confirmations (module docstring)."""

    def __init__(self, folder: Path, before_first_write=None):
        """`before_first_write()`: called once, before the folder is first written to (the plan marks its
        output folder as its own then: simulator.results.output_folder.claim)."""
        self.folder = Path(folder)
        self._before_first_write = before_first_write

    def _check_folder(self) -> None:
        """ScenarioError on `--out` when the cache folder is a symbolic link (the runs were written where it led)
        or no folder."""
        from simulator.errors import ScenarioError
        if os.path.lexists(self.folder) and (self.folder.is_symlink() or not self.folder.is_dir()):
            what = f"a symbolic link (to {os.readlink(self.folder)})" if self.folder.is_symlink() else "not a folder"
            raise ScenarioError("--out", f"{self.folder} is {what}; a plan keeps its DES cache in a folder of its "
                                         "own there: move it or choose another --out")

    def get(self, key: str, slo: SLO) -> dict | None:
        """The cached row of run `key` with its SLO fields for `slo`, or None. A stored run that cannot be read
        back (edited, a FIFO, another file of its name) is a ScenarioError on `--out` naming it: it was a
        JSONDecodeError or AttributeError traceback, and a FIFO hung the plan."""
        from models.files import file_kind_problem, read_text
        from simulator.errors import ScenarioError
        self._check_folder()
        row_path, req_path = self.folder / f"{key}.json", self.folder / f"{key}.npz"
        if not (os.path.lexists(row_path) and os.path.lexists(req_path)):
            return None
        try:
            for path in (row_path, req_path):
                problem = "is a symbolic link" if path.is_symlink() else file_kind_problem(path)
                if problem is not None:
                    raise ValueError(f"{path.name} {problem}")
            row = json.loads(read_text(row_path))
            if not isinstance(row, dict):
                raise ValueError(f"{row_path.name} is not a JSON object")
            if not zipfile.is_zipfile(req_path):
                raise ValueError(f"{req_path.name} is not a NumPy .npz archive")
            with np.load(req_path) as stored:
                requests = pd.DataFrame({name: stored[name] for name in REQUEST_COLUMNS})
            window_s, gpus = row["window_s"], row["gpus"]
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
            detail = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise ScenarioError("--out", f"{self.folder / key}.json/.npz is not a cached DES run ({detail}); "
                                         "delete the two files to run it again, or pass --no-cache") from None
        row.update(slo_summary(requests, slo, window_s, gpus))
        return row

    def put(self, key: str, row: dict, requests: dict) -> None:
        self._check_folder()
        if self._before_first_write is not None:
            self._before_first_write()
            self._before_first_write = None
        self.folder.mkdir(parents=True, exist_ok=True)

        def write_npz(tmp: Path) -> None:
            with open(tmp, "wb") as f:
                np.savez(f, **requests)

        _atomic_write(self.folder / f"{key}.npz", write_npz)
        text = json.dumps(row, default=lambda value: value.item())   # (numpy scalars as Python numbers)
        _atomic_write(self.folder / f"{key}.json", lambda tmp: Path(tmp).write_text(text))
