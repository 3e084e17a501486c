"""Sweep files: expansion into points, stable point ids, one-line errors naming the field."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulator.errors import ScenarioError
from simulator.workflows.sweep.config import expand_points, load_sweep
from sim_helpers import scenario


def write_sweep(tmp_path: Path, **spec) -> Path:
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(scenario(workload={"num_requests": 30})))
    data = {"name": "s", "scenario": "base.yaml", **spec}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def points_of(path: Path):
    spec, folder = load_sweep(path)
    return expand_points(spec, folder)[0]


def test_grid_times_points_times_seeds(tmp_path):
    path = write_sweep(tmp_path, grid={"workload.arrival.qps": [1, 2, 3], "scheduler.max_batch_size": [8, 16]},
                       points=[{"slo.ttft_s": 0.5}, {"slo.ttft_s": 2.0}], seeds=[5, 6])
    points = points_of(path)
    assert len(points) == 3 * 2 * 2 * 2
    assert len({p.point_id for p in points}) == len(points)
    first = points[0]
    assert first.params == {"workload.arrival.qps": 1, "scheduler.max_batch_size": 8, "slo.ttft_s": 0.5}
    assert first.seed == 5 and first.scenario["seed"] == 5
    assert first.scenario["workload"]["arrival"]["qps"] == 1 and first.scenario["scheduler"]["max_batch_size"] == 8


def test_replications_offset_the_base_seed(tmp_path):
    points = points_of(write_sweep(tmp_path, grid={"workload.arrival.qps": [1]}, replications=3))
    assert [p.seed for p in points] == [7, 8, 9]  # sim_helpers' scenario has seed 7


def test_point_ids_depend_only_on_the_simulation(tmp_path):
    """Same validated scenario ⇒ same id, whatever the spelling; growing a grid keeps the old ids."""
    small = points_of(write_sweep(tmp_path, grid={"workload.arrival.qps": [1, 2]}))
    grown = points_of(write_sweep(tmp_path, grid={"workload.arrival.qps": [1, 2, 4]}))
    assert [p.point_id for p in small] == [p.point_id for p in grown[:2]]
    as_float = points_of(write_sweep(tmp_path, grid={"workload.arrival.qps": [1.0]}))
    assert as_float[0].point_id == small[0].point_id
    # a default spelled out explicitly is the same simulation as leaving it out
    explicit = points_of(write_sweep(tmp_path, grid={"workload.arrival.qps": [1]}, set=["cluster.replicas=1"]))
    assert explicit[0].point_id == small[0].point_id
    # (cluster.gpu_memory_utilization's default is the engine's own, None: 0.9 spelled out is vLLM's value but not
    # SGLang's, so it names another point)
    given = points_of(write_sweep(tmp_path, grid={"workload.arrival.qps": [1]},
                                  set=["cluster.gpu_memory_utilization=0.9"]))
    assert given[0].point_id != small[0].point_id


@pytest.mark.parametrize("spec, field", [
    ({"grid": {"drafter..gamma": [1]}}, "sweep.grid"),
    ({"grid": {"workload.arrival.qps": []}}, "sweep.grid"),
    ({"grid": {"seed": [1, 2]}}, "sweep.grid"),
    ({"seeds": [1], "replications": 2}, "sweep"),
    ({"replications": 0}, "sweep.replications"),
    ({"gird": {"a": [1]}}, "sweep.gird"),
    ({"grid": {"workload.arrival.qps": [-1]}}, "workload.arrival.qps"),
    ({"grid": {"cluster.gpus": [2]}}, "cluster.gpus"),
    ({"grid": {"workload.arrival.qps": [1, 1.0]}}, "same simulation"),
    ({"scenario": "missing.yaml"}, "sweep.scenario"),
])
def test_bad_sweep_files_name_the_field(tmp_path, spec, field):
    with pytest.raises(ScenarioError) as err:
        points_of(write_sweep(tmp_path, **spec))
    text = str(err.value)
    assert field in text and len(text.splitlines()) == 1, text


def test_a_swept_key_inside_a_swept_mapping_refines_it_when_nothing_is_dropped(tmp_path):
    """A mapping and a key inside it may vary together (the arrival process and its rate) when the key is
    applied after the mapping and the mapping's values do not give it: each point has both. When a value would
    be dropped — the mapping gives the key too, or the mapping comes after the key — the sweep is refused
    (helper1 2026-11-28: grid {workload.arrival: [{..., qps: 4}], workload.arrival.qps: [8]} ran qps 8 only)."""
    arrivals = [{"process": "poisson"}, {"process": "gamma", "cv": 2}]
    points = points_of(write_sweep(tmp_path, grid={"workload.arrival": arrivals, "workload.arrival.qps": [4, 8]}))
    assert [(p.scenario["workload"]["arrival"]["process"], p.scenario["workload"]["arrival"]["qps"])
            for p in points] == [("poisson", 4), ("poisson", 8), ("gamma", 4), ("gamma", 8)]
    with pytest.raises(ScenarioError, match=r"^sweep\.grid: workload\.arrival gives qps in its values"):
        points_of(write_sweep(tmp_path, grid={"workload.arrival": [{"process": "poisson", "qps": 4}],
                                              "workload.arrival.qps": [8]}))
    with pytest.raises(ScenarioError, match=r"^sweep\.grid: workload\.arrival, applied after workload\.arrival\.qps"):
        points_of(write_sweep(tmp_path, grid={"workload.arrival.qps": [8], "workload.arrival": arrivals}))


def test_a_point_label_writes_a_text_inside_a_value_on_one_line(tmp_path):
    """YAML writes a text holding a newline single-quoted and folded over lines, inside a mapping too: the label
    read `workload.arrival={process: 'poisson` (the error line keeps its first line). It is double-quoted with
    YAML's escapes, and parses back to the same value in the point's override."""
    from simulator.workflows.sweep.config import value_text

    with pytest.raises(ScenarioError) as err:
        points_of(write_sweep(tmp_path, grid={"workload.arrival": [{"process": "poisson\n", "qps": 4}]}))
    assert str(err.value).startswith(r'sweep point (workload.arrival={process: "poisson\n", qps: 4}, seed=7): '
                                     "workload.arrival.process: "), str(err.value)
    assert value_text("plain") == "plain" and value_text("1") == "'1'" and value_text(None) == "null"
    assert value_text(b"x\n") == r"!!binary |\n  eAo="


def test_a_text_the_scenario_reader_would_read_as_a_number_stays_text_in_its_point(tmp_path):
    """PyYAML's dumper (YAML 1.1) wrote the text '1e3' plain in a point's override, which the scenario reader
    (models.files: YAML 1.2's numbers) read back as 1000.0: a grid of names ['1e3'] was refused ('name: Input
    should be a valid string, not 1000.0') though `draftsim run --set name="'1e3'"` runs it."""
    from models.files import parse_yaml
    from simulator.workflows.sweep.config import _flow_text

    path = write_sweep(tmp_path)
    path.write_text(path.read_text() + "grid: {name: ['1e3'], workload.arrival.qps: [1, 2]}\n")   # (quoted: text)
    points = points_of(path)
    assert [p.scenario["name"] for p in points] == ["1e3", "1e3"]
    for value in ["1e3", "2E-3", "1.0e9", "017", "0x10", "yes", "~", "", "1:30", "-.inf", "5", ["1e3", 2],
                  {"1e5": "1e5"}, 1e3, 5, None, True]:
        back = parse_yaml(f"v: {_flow_text(value)}")["v"]
        assert back == value and type(back) is type(value), (value, _flow_text(value))


@pytest.mark.parametrize("spec, message", [
    ({"grid": {"workload.arrival.qps": [1], "workload.arrival.qps ": [3]}},
     "sweep.grid: workload.arrival.qps is given twice ('workload.arrival.qps' and 'workload.arrival.qps ')"),
    ({"grid": {"workload. arrival.qps": [1], "workload.arrival.qps": [3]}}, "sweep.grid: workload.arrival.qps is given twice"),
    ({"set": ["workload.arrival.qps=3"], "grid": {"workload.arrival.qps ": [3, 4]}},
     "sweep.set: workload.arrival.qps is also swept"),
    ({"points": [{"drafter.kind": "none", " drafter.kind": "none"}]}, "sweep.points: drafter.kind is given twice in one point"),
    ({"grid": {"workload.arrival.qps": [1]}, "points": [{"workload.arrival.qps ": 2}]},
     "sweep.points: keys both in grid and points: workload.arrival.qps"),
    ({"grid": {"workload.arrival.qps": [8], "workload.arrival ": [{"process": "poisson"}]}},
     "sweep.grid: workload.arrival, applied after workload.arrival.qps"),
    ({"grid": {"seed ": [1, 2]}}, "sweep.grid: sweep seeds with `seeds:`"),
    ({"grid": {"name=a": ["b"]}}, "sweep.grid: bad key path 'name=a'"),
    ({"grid": {"workload\narrival.qps": [1]}}, r"sweep.grid: bad key path 'workload\narrival.qps'"),
])
def test_keys_are_compared_as_an_override_reads_them(tmp_path, spec, message):
    """An override strips each part of its key, so 'workload.arrival.qps ' sets workload.arrival.qps: beside it in
    the grid one of the two lists was dropped without a word (exit 0, rows labelled with the other), and a `set:`
    of it got through. Keys are read that way before they are compared; a key given twice is named."""
    with pytest.raises(ScenarioError) as err:
        points_of(write_sweep(tmp_path, **spec))
    text = str(err.value)
    assert text.startswith(message) and len(text.splitlines()) == 1, text


def test_a_key_spelt_with_spaces_is_the_key_it_sets(tmp_path):
    """(Its results column and plot axis are named as the key is read, as in the refusals above.)"""
    from simulator.workflows.sweep.config import load_sweep

    path = write_sweep(tmp_path, grid={" workload . arrival.qps ": [1, 2]}, plot={"x": "workload.arrival.qps "})
    spec, _ = load_sweep(path)
    assert spec.param_keys == ["workload.arrival.qps"] and spec.plot_x == "workload.arrival.qps"
    assert [p.params for p in points_of(path)] == [{"workload.arrival.qps": 1}, {"workload.arrival.qps": 2}]


def test_the_python_api_reads_keys_alike(tmp_path):
    import simulator

    with pytest.raises(ScenarioError, match=r"^grid: drafter.kind is given twice"):
        simulator.sweep(scenario(workload={"num_requests": 4}), {"drafter.kind": ["none"], "drafter.kind ": ["none"]})


def test_the_scenario_path_expands_the_home_folder(tmp_path, monkeypatch):
    """`scenario: ~/base.yaml` was read as <sweep's folder>/~/base.yaml ('file not found'), where every path a
    scenario file holds (trace_csv, a model's config.json, ...) expands `~`."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "base.yaml").write_text(yaml.safe_dump(scenario(workload={"num_requests": 30})))
    monkeypatch.setenv("HOME", str(home))
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "scenario": "~/base.yaml", "grid": {"workload.arrival.qps": [1, 2]}}))
    spec, folder = load_sweep(path)
    points, base_dir = expand_points(spec, folder)
    assert len(points) == 2 and base_dir == home.resolve()
