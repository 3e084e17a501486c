"""Never destroy what a run did not write, never write outside the output folder (issue 29).

A run replaces only the files it wrote itself in its output folder (its manifest,
simulator.results.output_folder); sibling folders, other commands' files and the user's files stay as
they were. A scenario's name becomes one safe folder name or is refused in one line
(simulator.config.names). Property tests (hypothesis) over random names and over repeated runs into
one folder with random content check both, through the CLI, comparing snapshots of the whole tree.
"""
from __future__ import annotations

import json
import os
import string
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract import assert_one_line, cli, snapshot, write_scenario
from sim_helpers import scenario
from simulator.config.names import name_problem
from simulator.results.outputs import RUN_FILES

TINY = scenario(workload={"num_requests": 2})
MANIFEST = ".draftsim-run.json"
PROPERTY = settings(max_examples=int(os.environ.get("DRAFTSIM_OUTPUT_EXAMPLES", "60")), deadline=None,
                    derandomize=True, database=None, suppress_health_check=list(HealthCheck))


def _run(folder: Path, out, *extra, data=TINY):
    path = write_scenario(folder / "s.yaml", data)
    args = ["run", path, "--quiet", *extra] + (["--out", out] if out is not None else [])
    return cli(*args)


def test_a_rerun_replaces_only_its_own_files(tmp_path):
    out = tmp_path / "out"
    assert _run(tmp_path, out, "--trace")[0] == 0
    assert _run(tmp_path, out / "second")[0] == 0          # another run's output nested inside
    (out / "notes.txt").write_text("mine")                  # the user's file
    (out / "mine").mkdir()
    (out / "mine" / "summary.json").write_text("{}")
    before = snapshot(out / "second")
    assert _run(tmp_path, out)[0] == 0                     # again, without --trace
    assert snapshot(out / "second") == before
    assert (out / "notes.txt").read_text() == "mine" and (out / "mine" / "summary.json").read_text() == "{}"
    assert not (out / "trace.json").exists()               # written by the first run, not by this one
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["files"] == sorted(["requests.parquet", "steps.parquet", "summary.json"])


def test_a_file_the_run_did_not_write_is_never_overwritten(tmp_path):
    out = tmp_path / "out"
    assert cli("compare", write_scenario(tmp_path / "a.yaml", TINY), "--vary", "seed=2", "--out", out,
               "--quiet")[0] == 0
    (out / "summary.json").write_text("the user's")          # same name as a run output, not written by a run
    write_scenario(tmp_path / "s.yaml", TINY)
    before = snapshot(tmp_path)
    code, _, err = _run(tmp_path, out)
    assert code == 2
    assert_one_line(err, "--out")
    assert "was not written by draftsim run" in err and snapshot(tmp_path) == before  # (compare wrote latency_cdf.png)


def test_a_legacy_output_folder_is_taken_over_file_by_file(tmp_path):
    """A folder written before manifests existed (summary.json, no manifest): its run files are replaced,
    an output nested in it is kept."""
    out = tmp_path / "out"
    (out / "nested").mkdir(parents=True)
    for name in ("summary.json", "requests.parquet", "nested/summary.json"):
        (out / name).write_text("old")
    assert _run(tmp_path, out)[0] == 0
    assert (out / "nested" / "summary.json").read_text() == "old"
    assert (out / "summary.json").read_text() != "old" and (out / MANIFEST).is_file()


def test_a_legacy_output_is_told_from_a_users_file_by_its_first_line(tmp_path):
    """Given the marker's `head`, a folder of the marker and no manifest is a legacy output only when the marker
    begins with that line (a CSV's later columns may vary): a user's own compare.csv or points.csv was replaced."""
    from simulator.errors import ScenarioError
    from simulator.results.output_folder import check_output_dir
    for name, text in (("ours", "metric,unit,key,a,b\n"), ("ours_exactly", "metric,unit,key\r\n"),
                       ("theirs", "metric,unit,keys\n"), ("theirs_binary", b"\xff\xfe")):
        (tmp_path / name).mkdir()
        write = (tmp_path / name / "compare.csv").write_bytes if isinstance(text, bytes) else \
            (tmp_path / name / "compare.csv").write_text
        write(text)
        check = lambda: check_output_dir(tmp_path / name, "compare", "compare.csv", ["compare.csv"],  # noqa: E731
                                         head="metric,unit,key")
        if name.startswith("ours"):
            check()
        else:
            with pytest.raises(ScenarioError, match="compare.csv exists and was not written by draftsim compare"):
                check()


def test_an_unrelated_folder_is_still_refused(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "thesis.tex").write_text("x")
    before = snapshot(tmp_path)
    code, _, err = _run(tmp_path, tmp_path / "docs")
    assert code == 2
    assert_one_line(err, "--out")
    assert {k: v for k, v in snapshot(tmp_path).items() if k != "s.yaml"} == \
        {k: v for k, v in before.items() if k != "s.yaml"}


@pytest.mark.parametrize("name", ["", ".", "..", "../ESCAPED", "/abs/path", "a/b", "a\\b", "a\nb", "tab\there",
                                  "nul\x00", " lead", "trail ", ".hidden", "x" * 256, "é" * 128, "\u2028"])
def test_a_name_that_is_not_one_folder_is_refused(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    data = dict(TINY, name=name)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    before = snapshot(tmp_path)
    code, _, err = cli("run", path, "--quiet")                # default --out: out/<name>
    assert code == 2
    assert_one_line(err, "name:")
    assert snapshot(tmp_path) == before


def test_an_empty_out_is_refused(tmp_path):
    code, _, err = _run(tmp_path, "")
    assert code == 2
    assert_one_line(err, "--out: an empty path")


@pytest.mark.parametrize("kind", ["name too long", "loop of links"])
def test_an_out_the_file_system_cannot_look_up_names_out(tmp_path, kind):
    """A path component longer than the file system allows (255 bytes on ext4) was 'draftsim: error: PATH:
    File name too long', not naming --out; a loop of symbolic links (named already) stays so."""
    if kind == "loop of links":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        out = tmp_path / "a" / "x"
    else:
        out = tmp_path / ("n" * 300)
    before = snapshot(tmp_path)
    code, _, err = _run(tmp_path, str(out))
    assert code == 2
    assert_one_line(err, "--out:")
    after = snapshot(tmp_path)
    after.pop("s.yaml")   # (the scenario _run wrote)
    assert after == before


NAMES = st.one_of(st.text(max_size=40),
                  st.text(alphabet=string.printable + "é\u2028\x00/\\.", max_size=12),
                  st.sampled_from(["..", ".", "../x", "/tmp/x", "a/../../b", "~", "-", "out", "CON"]))


@PROPERTY
@given(name=NAMES)
def test_any_name_writes_only_under_out_or_is_refused(name):
    """Default --out (out/<name>): a name is either one safe folder, and the run writes exactly
    out/<name>/ and nothing else, or it is refused in one line and nothing is written anywhere."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "neighbour").mkdir()
        (root / "neighbour" / "keep.txt").write_text("keep")
        path = write_scenario(root / "s.yaml", dict(TINY, name=name))
        before = snapshot(root.parent / root.name)
        cwd = os.getcwd()
        os.chdir(root)
        try:
            code, _, err = cli("run", path, "--quiet")
        finally:
            os.chdir(cwd)
        after = snapshot(root)
        new = sorted(set(after) - set(before))
        assert {k: v for k, v in after.items() if k in before} == before     # nothing changed or removed
        if name_problem(name) is None:
            assert code == 0, err
            folder = os.path.join("out", name)
            assert sorted(new) == sorted(["out", folder, *(os.path.join(folder, f) for f in
                                                          ("requests.parquet", "steps.parquet", "summary.json",
                                                           MANIFEST))])
        else:
            assert code == 2
            assert_one_line(err, "name:")
            assert new == []


USER_NAMES = st.sampled_from(["notes.txt", "summary.json", "trace.json", "steps.parquet", "sub", "sub2",
                              ".hidden", "data.csv", "latency_cdf.png", MANIFEST.replace("run", "compare")])
RUN_FLAGS = st.lists(st.sampled_from([(), ("--trace",), ("--no-plots",), ("--trace", "--no-plots")]),
                     min_size=1, max_size=4)


@PROPERTY
@given(user=st.lists(st.tuples(USER_NAMES, st.booleans()), max_size=5, unique_by=lambda t: t[0]),
       after_first=st.booleans(), runs=RUN_FLAGS, plots=st.booleans())
def test_repeated_runs_into_one_folder_delete_nothing_they_did_not_write(user, after_first, runs, plots):
    """The user's files and folders (put there before the first run, or between runs) survive any
    sequence of runs into the folder; a run refused because of them changes nothing; nothing outside the
    output folder changes; what the folder holds of ours is exactly what the last run wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = root / "out"
        (root / "neighbour").mkdir()
        (root / "neighbour" / "summary.json").write_text("keep")
        data = dict(TINY, outputs={"plots": plots})
        write_scenario(root / "s.yaml", data)

        def place_user_files() -> dict[str, str]:
            """Create the user's entries that do not exist yet; returns their snapshot."""
            out.mkdir(exist_ok=True)
            placed = set()
            for name, is_dir in user:
                target = out / name
                if os.path.lexists(target):
                    continue
                placed.add(name)
                if is_dir:
                    target.mkdir()
                    (target / "inside.txt").write_text(name)
                else:
                    target.write_text(f"user {name}")
            return {k: v for k, v in snapshot(out).items() if k.split(os.sep)[0] in placed}

        user_state = {} if after_first else place_user_files()
        outside = {k: v for k, v in snapshot(root).items() if not k.startswith("out")}
        for i, flags in enumerate(runs):
            before = snapshot(root)
            code, _, err = _run(root, out, *flags, data=data)
            assert code in (0, 2), err
            if code == 2:
                assert_one_line(err, "--out")
                assert snapshot(root) == before
            else:
                written = set(json.loads((out / MANIFEST).read_text())["files"])
                assert written == {n for n in RUN_FILES if (out / n).is_file()}
                assert ("trace.json" in written) == ("--trace" in flags)
                assert ("latency_cdf.png" in written) == (plots and "--no-plots" not in flags)
            if after_first and i == 0:
                user_state = place_user_files()
            now = snapshot(out)
            for key, value in user_state.items():
                assert now.get(key) == value, key                       # the user's entries, untouched
            assert {k: v for k, v in snapshot(root).items() if not k.startswith("out")} == outside


def test_profile_writes_the_shipped_profiles_only_when_asked(tmp_path, monkeypatch):
    """`draftsim profile` without --out writes out/profiles/<device-id>/, never profiles/data/ (issue 29: a
    quick profile overwrote the shipped cpu-local--amd-epyc table); --package-data files it there."""
    pytest.importorskip("torch")
    from profiles.predictor import DATA_DIR
    from profiles.profiler import run

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run, "plan_points", lambda *a, **k: [])          # nothing to time: where it writes
    monkeypatch.setattr(run, "supported", lambda spec: False)
    written = []
    monkeypatch.setattr(run, "write_table", lambda rows, out: written.append(Path(out)))
    monkeypatch.setattr(run, "write_fingerprint", lambda fp, out: written.append(Path(out)))
    before = snapshot(DATA_DIR)
    assert cli("profile", "--device", "cpu", "--quick", "--models", "llama-68m", "--no-collectives",
               "--no-progress")[0] == 0
    assert written == [Path("out/profiles/cpu-local")] * 2
    written.clear()
    assert cli("profile", "--device", "cpu", "--quick", "--models", "llama-68m", "--no-collectives",
               "--no-progress", "--package-data")[0] == 0
    assert written and all(p.parent == DATA_DIR for p in written)
    assert snapshot(DATA_DIR) == before                                  # (writes were intercepted)


@pytest.mark.parametrize("stage", ["staged_output", "staged_files"])
def test_a_failure_leaves_no_missing_parent_folder_behind(tmp_path, stage):
    """A staged output into `new/a/b` whose command failed left `new/a`, empty (the staging folder was made in
    the output's parent, its missing parents created for it); now the missing folders come with the files."""
    from simulator.results import output_folder
    out = tmp_path / "new" / "a" / "b"
    stager = output_folder.staged_output(out, "run", "summary.json", RUN_FILES) if stage == "staged_output" \
        else output_folder.staged_files(out)
    with pytest.raises(RuntimeError, match="the command failed"):
        with stager as staged:
            (staged / "summary.json").write_text("{}")
            raise RuntimeError("the command failed")
    assert snapshot(tmp_path) == {}
    stager = output_folder.staged_output(out, "run", "summary.json", RUN_FILES) if stage == "staged_output" \
        else output_folder.staged_files(out)
    with stager as staged:
        (staged / "summary.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".draftsim-run")) == ["summary.json"]
    assert out.stat().st_mode & 0o777 == 0o755   # (mkdtemp makes it private)



def test_the_shipped_data_is_no_output_folder_but_for_its_writers():
    """`draftsim plan ... --out profiles/data/x` wrote a plan among the shipped profiles (exit 0); the commands
    that file measurements there (profile, validate) still may. Probed only: nothing is created."""
    from profiles.predictor import DATA_DIR
    from simulator.errors import ScenarioError
    from simulator.results import output_folder
    assert output_folder.shipped_data_dir().resolve() == DATA_DIR.resolve()
    target = DATA_DIR / "draftsim-test-never-written" / "x"
    for command in ("run", "plan", "compare"):
        with pytest.raises(ScenarioError, match="inside the package's shipped data"):
            output_folder.check_output_dir(target, command, "summary.json")
    with pytest.raises(ScenarioError, match="draftsim reproduce does not write"):
        output_folder.check_writable_folder(DATA_DIR)
    output_folder.check_output_dir(target, "profile", "fingerprint.json")   # (probed and removed)
    assert not target.parent.exists()


def test_an_output_file_is_probed_where_it_lands(tmp_path):
    """A link to nothing is written as its target: its target's folder is probed up front (a link into a folder
    that cannot be made failed after `draftsim profile --check`'s whole check), and nothing is left behind."""
    from simulator.errors import ScenarioError
    from simulator.results.output_folder import check_output_file
    bad = tmp_path / "bad.json"
    bad.symlink_to("/proc/no-such-folder/x.json")
    with pytest.raises(ScenarioError, match="^--check-out: cannot create .*bad.json"):
        check_output_file(bad, "--check-out")
    good = tmp_path / "good.json"
    good.symlink_to(tmp_path / "new" / "x.json")
    assert check_output_file(good, "--check-out") == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "good.json"]


@pytest.mark.parametrize("entry", ["..", "", "a\x00b"])
def test_a_manifest_entry_that_is_no_file_name_is_no_file_of_the_folder(tmp_path, entry):
    """A manifest listing '..', '' or a name with a NUL byte (no draftsim command writes one: a damaged or
    hand-made manifest) raised a ValueError traceback as the run's files were installed, after the whole run,
    exit 1, leaving the manifest of both runs; the entry is left out as a path entry ('../x') always was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text(json.dumps({"files": [entry, "summary.json"]}))
    assert _run(tmp_path, out)[0] == 0
    assert json.loads((out / MANIFEST).read_text())["files"] == sorted(["requests.parquet", "steps.parquet",
                                                                          "summary.json"])
