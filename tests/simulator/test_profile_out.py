"""`draftsim profile --out` never writes into the shipped profiles' folder (profiles.predictor.DATA_DIR): only
`--package-data` does. `--out profiles/data/cpu-local` overwrote the shipped CPU profile with a quick llama-68m
one, exit 0 (its fingerprint.json made the folder a draftsim output)."""
from __future__ import annotations

from contract import cli, errors_only, snapshot


def test_out_inside_the_shipped_profiles_is_refused(tmp_path, monkeypatch):
    import profiles.predictor as predictor
    shipped = tmp_path / "profiles" / "data"
    (shipped / "cpu-local").mkdir(parents=True)
    for name in ("ops.csv", "fingerprint.json"):
        (shipped / "cpu-local" / name).write_text("the shipped profile\n")
    monkeypatch.setattr(predictor, "DATA_DIR", shipped)
    before = snapshot(tmp_path)
    for out in (shipped / "cpu-local", shipped / "new-device", shipped):
        code, _, err = cli("profile", "--device", "cpu", "--quick", "--no-collectives", "--no-progress", "--quiet",
                           "--models", "llama-68m", "--out", out)
        assert code == 2 and errors_only(err) == (f"draftsim profile: error: --out: {out} is inside the shipped "
                                                  "profiles' folder (profiles/data/), which only --package-data "
                                                  "writes; choose another folder"), err
    assert snapshot(tmp_path) == before
