"""`draftsim profile`: the profiler's command (profiles.profiler.run) reporting progress with the
simulator's reporter (simulator.console.progress: a bar on a terminal, periodic lines otherwise), which
profiles/ cannot import itself (it depends on models/ only).

Checked before any kernel is timed (one line, exit 2): `--out` can receive the profile (probed as every
command's output folder is, simulator.results.output_folder) and is not inside the shipped profiles' folder
(only `--package-data` writes there), `--out` and `--package-data` are not both given, and on a CPU every
model whose whole passes are timed for the host overhead (profiles.profiler.host_overhead builds the full
model with random weights) fits in the memory available
now: its weights in the profile's dtype, parameters × bytes per element, must be below MemAvailable
(simulator.config.host_memory.available_bytes). Without this check a 405B model on a 24 GiB machine ran
until it was killed.
"""
from __future__ import annotations

import re

from simulator.console.progress import Progress
from simulator.errors import ScenarioError

PROFILE_FILES = ("ops.csv", "fingerprint.json")
DEVICE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")   # a folder name, never a path (profiles/data/<id>/)
# the longest folder name Linux file systems take (NAME_MAX, bytes; the id is ASCII): a 300-character id was
# profiled for 14 s, then "File name too long" named neither --device-id nor --out
DEVICE_ID_MAX_CHARS = 255
CHECK_FILE = "check.json"   # profiles.profiler.check.CHECK_FILE: written beside the profile by --check


def _shown(text: str, most: int = 80) -> str:
    """`text` quoted, cut to `most` characters (an over-long value is not echoed whole)."""
    return repr(text) if len(text) <= most else f"{text[:most]!r}... ({len(text)} characters)"


def _progress(desc: str, total: int, unit: str) -> Progress:
    return Progress(desc, total=total, unit=unit)


def check_fits(models: list[str], device: str, dtype: str | None, available: int | None) -> None:
    """ScenarioError on `--models` when a model timed as whole passes cannot fit in `available` bytes."""
    from models.catalog import get_model
    from models.spec import dtype_bytes
    from profiles.profiler.host_overhead import supported

    if device != "cpu" or available is None:
        return
    dtype = dtype or "fp32"
    for name in models:
        spec = get_model(name)
        need = spec.param_count() * dtype_bytes(dtype)
        if supported(spec) and need > available:
            raise ScenarioError("--models", f"{name} needs {need / 1024**3:,.1f} GiB for its {dtype} weights (its "
                                            f"whole passes are timed for the host overhead) but "
                                            f"{available / 1024**3:,.1f} GiB of memory are available; profile "
                                            "smaller models here")


def _outside_the_shipped_profiles(out) -> None:
    """ScenarioError on `--out` when it is, or is inside, the shipped profiles' folder (profiles.predictor.DATA_DIR):
    `--out profiles/data/cpu-local` overwrote the shipped CPU profile (its fingerprint.json made it a draftsim
    output), exit 0, though only --package-data writes there."""
    from pathlib import Path

    from models.files import expand_home
    from profiles.predictor import DATA_DIR
    try:
        folder, shipped = expand_home(out).resolve(), DATA_DIR.resolve()
    except (OSError, ValueError):   # (a path --out's own check names)
        return
    if folder == shipped or shipped in folder.parents:
        raise ScenarioError("--out", f"{out} is inside the shipped profiles' folder ({Path(*DATA_DIR.parts[-2:])}/), "
                                     "which only --package-data writes; choose another folder")


def check_arguments(args) -> None:
    """The up-front checks of the module docstring."""
    from simulator.config.host_memory import available_bytes
    from simulator.results.output_folder import check_output_file
    from simulator.results.outputs import check_output_dir

    if args.out is not None and args.package_data:
        raise ScenarioError("--package-data", "writes into the shipped profiles' folder; it excludes --out")
    if args.out is not None and not args.check_only:
        _outside_the_shipped_profiles(args.out)
    if args.device_id is not None and not (DEVICE_ID.fullmatch(args.device_id)
                                           and len(args.device_id) <= DEVICE_ID_MAX_CHARS):
        raise ScenarioError("--device-id", f"names the profile's folder: letters, digits, '.', '_' and '-', starting "
                                           f"with a letter or digit, at most {DEVICE_ID_MAX_CHARS} characters; got "
                                           f"{_shown(args.device_id)}")
    if args.check_out is not None:
        check_output_file(args.check_out, "--check-out")
    out = args.out
    if out is None and not args.package_data and args.device_id is not None:   # (the profiler's default folder)
        from profiles.profiler.run import profile_out_dir
        out = str(profile_out_dir(None, False, args.device_id, None))
    if out is not None and not args.check_only:
        names = PROFILE_FILES + ((CHECK_FILE,) if args.check and args.check_out is None else ())
        check_output_dir(out, marker="fingerprint.json", command="profile", names=names)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    check_models(models, args.models)
    check_tp(models, args.tp)
    check_fits(models, args.device, args.dtype, available_bytes())


def check_tp(models: list[str], given: str) -> None:
    """ScenarioError on `--tp` when a degree cannot split one of `models` (it said 'parallelism.tp=5 must divide
    num_heads=12 of llama-68m', a scenario's field); a list that is no list of degrees is named by the profiler."""
    from models.catalog import get_model
    from models.errors import ascii_number
    from models.spec import validate_parallelism
    from models.step import Parallelism

    try:
        tps = [ascii_number(int, x.strip()) for x in given.split(",") if x.strip()]
    except ValueError:
        return
    for name in models:
        for tp in (tp for tp in tps if tp >= 1):
            try:
                validate_parallelism(get_model(name), Parallelism(tp=tp))
            except ValueError as exc:
                raise ScenarioError("--tp", str(exc).removeprefix("parallelism.")) from None


def check_models(models: list[str], given: str) -> None:
    """ScenarioError on `--models` when it names no model or one the catalog lacks (said as 'models must name at
    least one catalog model' and 'unknown model ...', naming no flag)."""
    from models.catalog import get_model

    if not models:
        raise ScenarioError("--models", f"names no model ({given!r}); give comma-separated catalog models "
                                        "(draftsim catalog models)")
    for name in models:
        try:
            get_model(name)
        except ValueError as exc:
            raise ScenarioError("--models", str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    from profiles.profiler import run
    from simulator.console.contract import parse_args

    args = parse_args(run.build_parser(), argv)
    if isinstance(args, int):
        return args
    check_arguments(args)
    return run.main(argv, progress_factory=_progress)
