"""`draftsim profile --engine vllm` writes its files as every command does: into a staging folder, moved into
`--out` only when every model was profiled (simulator.results.output_folder.staged_files). A run whose second
model failed left the first model's NAME.json and both NAME.log files in `--out` (a half-written profile that
`cluster.latency.source: engine_profile` then read without fingerprint.json); the failing model's log is kept
outside `--out`, where the error line says.

vLLM itself is not needed: a fake interpreter stands for it (the probe `-c ...` succeeds; the driver copies a
shipped engine profile to its `--out`, or fails for a model folder holding a file named `fail`)."""
from __future__ import annotations

import re
import stat
from pathlib import Path

from contract import cli, errors_only, snapshot

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "profiles" / "data" / "engine_profile" / "vllm-0.32.0-cpu--amd-epyc"
MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def _fake_vllm(tmp: Path, failing: set[str]) -> list:
    """The command line's `--models-dir` and `--vllm-python` for a fake vLLM that fails for `failing`."""
    python = tmp / "fake-python"
    python.write_text('#!/bin/sh\n[ "$1" = "-c" ] && exit 0\n'   # the probe: vLLM importable
                      'echo "fake vLLM starting $4"\n'
                      'if [ -f "$4/fail" ]; then echo "RuntimeError: fake engine failure"; exit 1; fi\n'
                      f'cp "{SHIPPED}/$(basename "$4").json" "$6"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    for name in MODELS:
        folder = tmp / "hf" / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        if name in failing:
            (folder / "fail").write_text("")
    return ["--models-dir", tmp / "hf", "--vllm-python", python]


def test_a_failing_model_leaves_nothing_in_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    logs = tmp_path / "system-tmp"
    logs.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(logs))
    fake = _fake_vllm(tmp_path, failing={"qwen2.5-coder-1.5b"})
    (tmp_path / "existing").mkdir()
    for out in (tmp_path / "new" / "profile", tmp_path / "existing"):   # a folder to create, an empty one
        before = snapshot(tmp_path)
        code, _, err = cli("profile", "--engine", "vllm", "--models", ",".join(MODELS), "--out", out, "--quiet",
                           *fake)
        err = errors_only(err)
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "vLLM driver failed (profiling vLLM qwen2.5-coder-1.5b, exit 1): RuntimeError: fake engine failure" \
            in err, err
        log = Path(re.search(r"log: (\S+)$", err).group(1))   # kept, outside --out, for the user to read
        assert logs in log.parents and "fake engine failure" in log.read_text()
        after = snapshot(tmp_path)
        written = {k for k in after if before.get(k) != after[k] and not k.startswith("system-tmp")}
        assert not written, f"{out}: {sorted(written)}"


def test_a_full_profile_is_installed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    logs = tmp_path / "system-tmp"
    logs.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(logs))
    out = tmp_path / "out" / "profile"
    code, _, err = cli("profile", "--engine", "vllm", "--models", ",".join(MODELS), "--out", out, "--quiet",
                       *_fake_vllm(tmp_path, failing=set()))
    assert code == 0, err
    files = {p.name for p in out.iterdir()}
    assert {f"{m}{ext}" for m in MODELS for ext in (".json", ".log")} | {"fingerprint.json"} <= files, files
    assert not [p for p in out.iterdir() if p.name.startswith(".draftsim-tmp-")]
    assert "fake vLLM starting" in (out / "qwen2.5-coder-0.5b.log").read_text()
    assert list(logs.iterdir()) == []   # nothing left in the system's temporary folder
    # the folder is an engine profile the latency source reads
    from simulator.workflows.estimate import estimate_step
    est = estimate_step("qwen2.5-coder-0.5b", "cpu-local", dtype="fp32", batch=2, context_tokens=64,
                        latency={"source": "engine_profile", "profile_dir": str(out)})
    assert est["kernel_seconds"] > 0
