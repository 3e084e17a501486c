"""The held-out H100 forwards data and the script that measured it.

The script runs on a bare GPU machine; here its CPU dry run exercises every code path on a tiny model, and
its GQA-packed tree attention (the engines' layout) is checked against plain GQA attention with the full mask.
The shipped data is checked for completeness and for the figures the data README states.
"""
from __future__ import annotations

import csv
import functools
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from paths import REPO

SCRIPT = REPO / "scenarios" / "validation" / "gpu" / "measure_forwards.py"
DATA = REPO / "profiles" / "data" / "gpu-forwards" / "h100-sxm-2026-11-26"


@functools.cache
def _script():
    spec = importlib.util.spec_from_file_location("measure_forwards", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def _rows():
    with open(DATA / "forwards.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_packed_tree_attention_equals_masked_gqa_attention():
    assert _script().check_packed_attention() < 1e-5


def test_tree_mask_is_each_node_and_its_ancestors():
    m = _script().verify_mask("tree", 5, 3, "cpu")
    assert m.shape == (5, 8) and bool(m[:, :3].all())
    # BFS binary tree: parent of i is (i - 1) // 2
    expected = {0: {0}, 1: {0, 1}, 2: {0, 2}, 3: {0, 1, 3}, 4: {0, 1, 4}}
    for i, ancestors in expected.items():
        assert {j for j in range(5) if m[i, 3 + j]} == ancestors


@pytest.mark.slow
def test_cpu_dry_run_writes_every_file(tmp_path):
    assert _script().main(["--out", str(tmp_path), "--device", "cpu", "--tiny"]) == 0
    for name in ("forwards.csv", "eager.csv", "host.json", "fingerprint.json", "log.txt"):
        assert (tmp_path / name).is_file(), name
    fingerprint = json.loads((tmp_path / "fingerprint.json").read_text())
    assert "failed_parts" not in fingerprint
    with open(tmp_path / "forwards.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["mask"] for r in rows} == {"none", "chain", "tree"}
    assert all(float(r["forward_s"]) > 0 for r in rows)


def test_shipped_h100_data_is_complete():
    fingerprint = json.loads((DATA / "fingerprint.json").read_text())
    assert fingerprint["device_name"] == "NVIDIA H100 80GB HBM3" and "failed_parts" not in fingerprint
    assert fingerprint["attention_backend"] == {"decode": "flash", "chain": "flash", "tree": "cudnn"}
    rows = _rows()
    llama = {(int(r["batch"]), int(r["ctx"]), int(r["q"]), r["mask"]) for r in rows if r["model"] == "llama-3-8b"}
    for batch in (1, 4, 16, 32, 64, 128):
        for q in (1, 2, 4, 5, 8, 16, 32, 64):
            assert (batch, 2048, q, "none" if q == 1 else "chain") in llama
    assert len(rows) == 108


def test_readme_headline_ratios_match_the_csv():
    """README: verify of 4 tokens (tree rows) over decode at ctx 2048 is +21 %, +10 %, +18 %, +31 % at
    batch 1, 32, 64, 128."""
    by = {(int(r["batch"]), int(r["q"]), r["mask"]): float(r["forward_s"])
          for r in _rows() if r["model"] == "llama-3-8b" and r["ctx"] == "2048"}
    for batch, pct in ((1, 21), (32, 10), (64, 18), (128, 31)):
        assert round(100 * (by[(batch, 4, "tree")] / by[(batch, 1, "none")] - 1)) == pct
