"""`draftsim profile`: the profiler's command (profiles.profiler.run) reporting progress with the
simulator's reporter (simulator.console.progress: a bar on a terminal, periodic lines otherwise), which
profiles/ cannot import itself (it depends on models/ only).

Checked before any kernel is timed (one line, exit 2): the profile's folder (`--out`, or the default one)
can receive the profile (probed as every command's output folder is, simulator.results.output_folder), holds
no profile of the other kind (`--engine vllm`'s, whose fingerprint.json it would replace) and is not inside the
shipped profiles' folder (only `--package-data` writes there), `--out` and `--package-data` are not both
given, and on a CPU every
model whose whole passes are timed for the host overhead (profiles.profiler.host_overhead builds the full
model with random weights) fits in the memory available
now: its weights in the profile's dtype, parameters × bytes per element, must be below MemAvailable
(simulator.config.host_memory.available_bytes). Without this check a 405B model on a 24 GiB machine ran
until it was killed.
"""
from __future__ import annotations

import re

from simulator.config.names import name_problem
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


def profile_folder(args) -> str | None:
    """The folder the profiler will write (profiles.profiler.run.profile_out_dir): `--out`, else the shipped
    profiles' folder with `--package-data`, else out/profiles/<device-id>/ — the default device id of a CPU or
    of this machine's GPU when none is given (None: `--device cuda` without a GPU, which the profiler refuses).
    The default folder was never checked: a user's own out/profiles/cpu-local/ops.csv was replaced, exit 0, and
    a file of that folder's name failed after the whole profile ('File exists', naming no flag)."""
    if args.out is not None:
        return args.out
    import torch

    from profiles.profiler.run import default_device_id, profile_out_dir
    if args.device == "cuda" and not torch.cuda.is_available():
        return None
    dev = torch.device(args.device)
    return str(profile_out_dir(None, args.package_data, args.device_id or default_device_id(dev), dev))


KERNEL_PROFILE, ENGINE_PROFILE = "kernel", "engine"
# each kind of profile folder, as an error names it
_PROFILE_KINDS = {KERNEL_PROFILE: "a kernel profile (ops.csv, written by draftsim profile)",
                  ENGINE_PROFILE: "a vLLM engine profile (written by draftsim profile --engine vllm)"}


def profile_kind(folder) -> str | None:
    """Which profile `folder` holds: KERNEL_PROFILE (an op table, ops.csv), ENGINE_PROFILE (a fingerprint.json
    written by the vLLM driver, `"tool"` naming it; profiles.engine_time.engine_profile) or None."""
    import os
    from pathlib import Path

    from models.files import read_document
    folder = Path(folder)
    if os.path.lexists(folder / "ops.csv"):
        return KERNEL_PROFILE
    try:
        found = read_document(folder / "fingerprint.json", "JSON") if (folder / "fingerprint.json").is_file() else None
    except (ValueError, OSError):   # (a damaged fingerprint: the folder's own checks name it, or it is replaced)
        return None
    return ENGINE_PROFILE if isinstance(found, dict) and "vllm_driver" in str(found.get("tool", "")) else None


def refuse_other_profile(out, kind: str) -> None:
    """ScenarioError on `--out` when it holds the other kind of profile: both write fingerprint.json, so each
    took the other's folder for its own earlier output and replaced its fingerprint (`draftsim profile --engine
    vllm --out profiles/data/cpu-local` left the shipped kernel profile's ops.csv beside an engine fingerprint,
    exit 0). An engine profile also refuses a folder holding another command's output (its manifest,
    simulator.results.output_folder): its loader reads every .json there as a model's passes
    (profiles.engine_time.engine_profile.load_engine_profile), so `--engine vllm --out <a run's folder>` wrote
    a profile that no latency source could read ('.draftsim-run.json is not an engine profile')."""
    from models.files import expand_home
    from simulator.results.output_folder import MANIFEST_PREFIX, MANIFEST_SUFFIX, STAGING_PREFIX
    try:
        folder = expand_home(out)
        there = profile_kind(folder)
        manifests = sorted(p.name for p in folder.glob(f"{MANIFEST_PREFIX}*{MANIFEST_SUFFIX}")
                           if not p.name.startswith(STAGING_PREFIX)) if folder.is_dir() else []
    except (OSError, ValueError):   # (a path --out's own check names)
        return
    if there is not None and there != kind:
        raise ScenarioError("--out", f"{out} holds {_PROFILE_KINDS[there]}, whose fingerprint.json this profile "
                                     "would replace; choose another folder")
    if kind == ENGINE_PROFILE and manifests:
        command = manifests[0][len(MANIFEST_PREFIX):-len(MANIFEST_SUFFIX)]
        raise ScenarioError("--out", f"{out} holds the output of draftsim {command} ({manifests[0]}), whose .json "
                                     "files an engine profile's loader would read as models' passes; choose "
                                     "another folder")


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
    if args.device_id is not None and (problem := name_problem(args.device_id)) is not None:
        # (the characters above pass the folder rule of scenario names, simulator.config.names, but for its
        # Windows part: a trailing '.', a device name such as CON, which made out/profiles/CON/, exit 0)
        raise ScenarioError("--device-id", f"names the profile's folder: {_shown(args.device_id)} {problem}")
    if args.check_out is not None:
        check_output_file(args.check_out, "--check-out")
    out = args.out if args.check_only else profile_folder(args)
    if out is not None and not args.check_only:
        names = PROFILE_FILES + ((CHECK_FILE,) if args.check and args.check_out is None else ())
        check_output_dir(out, marker="fingerprint.json", command="profile", names=names)
        refuse_other_profile(out, KERNEL_PROFILE)
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
    """ScenarioError on `--models` when it names no model, has an empty entry (`a,,b`, `a,`: read as a,b and a, while
    --tp refuses `1,,2`) or names one the catalog lacks (said as 'models must name at least one catalog model' and
    'unknown model ...', naming no flag)."""
    from models.catalog import get_model

    if not models:
        raise ScenarioError("--models", f"names no model ({given!r}); give comma-separated catalog models "
                                        "(draftsim catalog models)")
    if any(not entry.strip() for entry in given.split(",")):
        raise ScenarioError("--models", f"{given!r} has an empty entry; give comma-separated catalog models "
                                        "without empty entries (draftsim catalog models)")
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
    if not args.no_collectives and not args.check_only:   # (the collective ranks are spawned processes)
        from simulator.console.interrupts import spawn_with_ctrl_c_held
        spawn_with_ctrl_c_held()
    return run.main(argv, progress_factory=_progress, prog="draftsim profile")
