"""The theory paper scripts run end to end, reproduce their published numbers and write their files."""
import csv

from scenarios.papers import leviathan_table1, multidraft_vs_n, tree_budget


def test_leviathan_table1_reproduces_published_values(tmp_path, capsys):
    assert leviathan_table1.main(["--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "leviathan_table1.csv")))
    assert len(rows) == 3 and all(r["match"] == "True" for r in rows)
    assert (tmp_path / "leviathan_table1.png").stat().st_size > 0
    assert "3.689" in capsys.readouterr().out


def test_tree_budget_optimal_dominates_other_shapes(tmp_path):
    assert tree_budget.main(["--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "tree_budget.csv")))
    assert len(rows) == tree_budget.MAX_BUDGET
    for row in rows:
        best = float(row["optimal"])
        for name, value in row.items():
            if name != "budget":
                assert float(value) <= best + 1e-9, (row["budget"], name)
    assert (tmp_path / "tree_budget.png").stat().st_size > 0


def test_multidraft_vs_n_optimum_dominates_iid_schemes(tmp_path):
    assert multidraft_vs_n.main(["--out", str(tmp_path)]) == 0  # also checks LP vs fast and Monte Carlo
    rows = list(csv.DictReader(open(tmp_path / "multidraft_vs_n.csv")))
    for row in rows:
        for scheme in ("rrs", "kseq", "naive"):
            assert float(row[scheme]) <= float(row["optimum"]) + 1e-9
        assert float(row["rrs_wor"]) <= float(row["optimum w/o repl."]) + 1e-7
    assert (tmp_path / "multidraft_vs_n.png").stat().st_size > 0


def test_a_paper_script_shares_its_out_folder_and_keeps_a_users_file(tmp_path, capsys):
    """Its files and manifest land beside what was there; a rerun replaces them; a user's file of one of its names
    is never overwritten (it was, exit 0); an output of the script from before manifests is taken over."""
    import json

    import pytest

    (tmp_path / "notes.txt").write_text("the user's")
    for _ in range(2):
        assert leviathan_table1.main(["--out", str(tmp_path)]) == 0
    manifest = json.loads((tmp_path / ".draftsim-leviathan_table1.json").read_text())
    assert manifest["files"] == ["leviathan_table1.csv", "leviathan_table1.png"]
    assert (tmp_path / "notes.txt").read_text() == "the user's"
    (tmp_path / ".draftsim-leviathan_table1.json").unlink()   # (as a run before manifests left it)
    assert leviathan_table1.main(["--out", str(tmp_path)]) == 0
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "leviathan_table1.png").write_bytes(b"my figure")
    with pytest.raises(SystemExit) as exited:
        leviathan_table1.main(["--out", str(mine)])
    assert exited.value.code == 2 and "leviathan_table1.png exists and was not written" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["leviathan_table1.png"]
    assert (mine / "leviathan_table1.png").read_bytes() == b"my figure"
