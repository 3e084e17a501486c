"""Every registered paper reproduction runs, writes its figure, data and check table, and passes:
the reproductions double as regression tests. Plus the `draftsim reproduce` command line."""
from __future__ import annotations

import hashlib

import pandas as pd
import pytest

from scenarios.papers.registry import REGISTRY, Check, get, main, reproduce

# sha256[:16] of each reproduction's NAME.csv, recorded on commit dc52e50 (see test_output_hashes.py)
REPRODUCTION_SHA256 = {
    "deepep": "a0195e8548d50bd4",
    "distserve": "fd0fb23d5ba70393",
    "leviathan": "6b68586568814d0e",
    "multidraft-optimal-vs-n": "c5caf794085953bc",
    "pearl": "4db2a9cab39b7564",
    "sequoia-tree-budget": "9dd09818dc665c26",
    "sequoia-tree-vs-batch": "6b9293a6697dc136",
    "smartspec-adaptive": "f12ecc7bc4a8abbc",
    "tetris": "04ff5e7dc05f7268",
    "vllm-spec-under-load": "9ca4b56eca0e8ecc",
    # added with issue 17 (recorded on its branch)
    "cascade-drafting": "a1bc4ac773919402",
    "eagle2-dynamic-tree": "49173853b0c31d79",
    "magicdec-long-context": "4ca6c29108cb7b8d",
    "multidraft-optimal-des": "52245a427114ac8a",
    "shadowkv-long-context": "f5efd6334a0217d4",
}


@pytest.mark.slow  # end to end (the DES ones ~10 s each): skipped by the fast inner loop (-m 'not slow')
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_reproduction_passes_and_writes_its_files(tmp_path, name):
    report = reproduce(name, tmp_path)
    failed = [c for c in report.checks if not c.passed]
    assert not failed, failed
    png, data, checks = report.files
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert len(pd.read_csv(data)) > 0
    table = pd.read_csv(checks)
    assert list(table.columns) == ["quantity", "basis", "source", "published", "relation", "reproduced",
                                   "tolerance", "status"]
    assert len(table) >= 3 and set(table.status) == {"PASS"}
    assert table.source.str.len().min() > 10  # every check cites where its published number comes from
    repro = get(name)
    assert repro.citation and repro.title
    assert hashlib.sha256(data.read_bytes()).hexdigest()[:16] == REPRODUCTION_SHA256[name]


@pytest.mark.slow
def test_leviathan_table1_is_checked_against_the_printed_values(tmp_path):
    table = pd.read_csv(reproduce("leviathan", tmp_path).files[2])
    printed = table[table.basis == "published value"]
    assert len(printed) == 6 and printed.source.str.contains("Table 1").all()
    assert (table.quantity.str.contains("DES batch 1")).sum() == 6


def test_a_check_fails_outside_its_tolerance():
    assert Check("x", "published value", "s", 1.0, 1.004, 0.005).passed
    assert not Check("x", "published value", "s", 1.0, 1.006, 0.005).passed
    assert Check("x", "published claim", "s", 1.0, 3.0, 0.0, "≥").passed
    assert not Check("x", "published claim", "s", 1.0, 0.9, 0.0, "≥").passed
    assert not Check("x", "published claim", "s", 1.0, float("nan"), 1.0).passed
    with pytest.raises(ValueError, match="relation"):
        Check("x", "b", "s", 1.0, 1.0, 0.1, "~")


def test_cli_list_unknown_and_missing_name(capsys, tmp_path):
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in REGISTRY) and "Leviathan" in out
    assert main(["nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown reproduction 'nope'" in err
    assert main([]) == 2
    assert "--list" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_cli_runs_one_and_exits_0_on_pass(capsys, tmp_path):
    from simulator.cli import main as draftsim

    assert draftsim(["reproduce", "tetris", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "[PASS]" in out and "published" in out and "tolerance" in out
    assert (tmp_path / "tetris_checks.csv").is_file()
