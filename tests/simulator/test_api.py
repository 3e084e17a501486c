"""The Python API (simulator/__init__.py, simulator/api.py, simulator.workflows.sweep.main.sweep): overrides
apply to a YAML path, a dict and a Scenario alike; prepare + simulate is run; a sweep in memory gives, point
by point, what run gives, on every executor; bad input raises one ScenarioError naming the field; the
README's Python block runs as written."""
from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import simulator
from simulator.errors import ScenarioError
from paths import REPO

QUICK = REPO / "scenarios" / "quickstart.yaml"
SMALL = ["workload.num_requests=60", "outputs.plots=false"]


def _gamma(result) -> int:
    return result.scenario.drafter.gamma


@pytest.mark.parametrize("form", ["path", "dict", "model"])
def test_overrides_apply_to_every_form_of_scenario(form):
    base = {"path": QUICK, "dict": yaml.safe_load(QUICK.read_text()),
            "model": simulator.load_scenario(QUICK)[0]}[form]
    result = simulator.run(base, SMALL + ["drafter.gamma=1"], base_dir=REPO / "scenarios")
    assert _gamma(result) == 1 and len(result.requests) == 60
    assert result.requests["decode_steps"].sum() > 0
    # the Scenario given is not changed, nor the dict
    if form == "model":
        assert base.drafter.gamma == 4
    if form == "dict":
        assert base["drafter"]["gamma"] == 4 and base["workload"]["num_requests"] == 2000


def test_prepare_then_simulate_is_run():
    a = simulator.run(QUICK, SMALL)
    b = simulator.simulate(simulator.prepare(QUICK, SMALL))
    pd.testing.assert_frame_equal(a.requests, b.requests)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    assert a.summary == b.summary
    assert isinstance(a, simulator.Result) and isinstance(a.summary, dict)


def test_bad_input_raises_one_scenario_error_naming_the_field():
    with pytest.raises(ScenarioError, match=r"^drafter\.gamma"):
        simulator.prepare(QUICK, ["drafter.gamma=-1"])
    with pytest.raises(ScenarioError, match=r"^scenario"):
        simulator.run(3.5)
    with pytest.raises(ScenarioError, match=r"^grid"):
        simulator.sweep(QUICK, {"drafter..gamma": [1]})


@pytest.mark.parametrize("executor", ["serial", "local"])
def test_a_sweep_in_memory_gives_what_run_gives_point_by_point(executor):
    frame = simulator.sweep(QUICK, {"drafter.gamma": [1, 2]}, seeds=[0, 3], overrides=SMALL, executor=executor,
                            workers=2 if executor == "local" else None)   # (serial runs in this process)
    assert list(frame["drafter.gamma"]) == [1, 1, 2, 2] and list(frame["seed"]) == [0, 3, 0, 3]
    assert (frame["status"] == "ok").all()
    for _, row in frame.iterrows():
        one = simulator.run(QUICK, SMALL + [f"drafter.gamma={row['drafter.gamma']}", f"seed={row['seed']}"])
        for key in ("tpot_p50_s", "ttft_p99_s", "goodput_rps", "output_tokens_per_s"):
            assert row[key] == one.summary[key], key


def test_a_point_that_cannot_be_built_is_a_row_with_its_reason():
    frame = simulator.sweep(QUICK, {"cluster.model": ["llama-3-8b", "llama-3-70b"]}, overrides=SMALL,
                            executor="serial")
    assert list(frame["status"]) == ["ok", "invalid"]
    assert frame["error"].iloc[1].startswith("cluster.model") and np.isnan(frame["tpot_p50_s"].iloc[1])


def _readme_python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Python API"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_readme_python_example_runs_as_written(monkeypatch, capsys):
    blocks = _readme_python_blocks()
    assert blocks and "simulator.sweep(" in blocks[0] and "simulator.prepare(" in blocks[0]
    monkeypatch.chdir(REPO)
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "TPOT p50" in out and "goodput_rps" in out


TINY = {"name": "t", "seed": 7, "workload": {"arrival": {"process": "poisson", "qps": 4.0},
                                              "prompt_tokens": {"kind": "fixed", "value": 64},
                                              "output_tokens": {"kind": "fixed", "value": 16}, "num_requests": 4},
        "cluster": {"hardware": "h100-sxm", "model": "llama-3-8b"}, "outputs": {"plots": False}}


@pytest.mark.parametrize("kwargs, says", [
    # each raised a Python exception from inside the sweep (AttributeError, TypeError, KeyError, yaml's
    # RepresenterError) or ran every point as an 'invalid' row, before (2026-11-27)
    ({"grid": [("seed", [1])]}, r"^grid: Input should be a valid dictionary"),
    ({"grid": None}, r"^grid: Input should be a valid dictionary"),
    ({"grid": {1: [1]}}, r"^grid: key 1 is not text"),
    ({"grid": {"workload.arrival.qps": []}}, r"^grid: workload.arrival.qps must list at least one value"),
    ({"grid": {}, "points": {"seed": 1}}, r"^points: Input should be a valid list"),
    ({"grid": {}, "points": ["workload.arrival.qps=2"]}, r"^points.0: Input should be a valid dictionary"),
    ({"grid": {}, "seeds": 3}, r"^seeds: Input should be a valid list"),
    ({"grid": {}, "seeds": "12"}, r"^seeds: Input should be a valid list"),
    ({"grid": {}, "step_mode": "bogus"}, r"^step_mode: 'bulk' or 'step'"),
    # an override of a swept key (or one inside it) was replaced by every point's value without a word
    ({"grid": {"workload.arrival.qps": [2]}, "overrides": ["workload.arrival.qps=3"]},
     r"^overrides: workload.arrival.qps is also swept \(workload.arrival.qps\)"),
    ({"grid": {}, "seeds": [1, 2], "overrides": ["seed=3"]}, r"^overrides: seed is also swept \(seeds\)"),
    # a value no scenario file holds: yaml's RepresenterError from inside the sweep
    ({"grid": {"cluster.model": [Decimal("1")]}}, r"^grid: cluster.model: Decimal\('1'\) is not a value"),
    ({"grid": {}, "points": [{"workload.arrival": {"process": "poisson", "qps": Decimal("4")}}]},
     r"^points: workload.arrival: Decimal\('4'\) is not a value a scenario file holds"),
    # a path object is its text, as a scenario dict takes it: where the field takes no text, refused as text
    ({"grid": {}, "points": [{"workload.arrival": {"process": "poisson", "qps": Path("4")}}]},
     r"^point \(workload.arrival=\{process: poisson, qps: '4'\}, seed=7\): workload.arrival.qps: Input should be a "
     r"valid number, not the text '4'"),
    # a TypeError; an error of no field (': keys both ...'); the command line's flags and sweep file named
    ({"grid": {}, "base_dir": 5}, r"^base_dir: the folder a scenario's relative paths are read from"),
    ({"grid": {"workload.arrival.qps": [2]}, "points": [{"workload.arrival.qps": 3}]},
     r"^points: keys both in grid and points: workload.arrival.qps$"),
    ({"grid": {}, "seeds": [2**70]}, r"^seeds: seed 1180591620717411303424 is beyond"),
    ({"grid": {"workload.arrival.qps": [float("nan")]}}, r"^point \(workload.arrival.qps=.nan, seed=7\): "),
    ({"grid": {"workload.arrival.qps": [2, 2.0]}}, r"^grid: points \(workload.arrival.qps=2, seed=7\) and "),
    ({"grid": {}, "workers": 0}, r"^workers: must be an integer >= 1, got 0"),
    ({"grid": {}, "executor": "bogus"}, r"^executor: unknown executor 'bogus'"),
    # any true value drew the progress bar, 'x' included (2026-11-28)
    ({"grid": {}, "progress": "x"}, r"^progress: True \(a progress bar on stderr\) or False; got 'x'"),
    ({"grid": {}, "progress": 1}, r"^progress: True \(a progress bar on stderr\) or False; got 1"),
])
def test_a_sweeps_bad_arguments_raise_one_scenario_error_naming_them(kwargs, says):
    with pytest.raises(ScenarioError, match=says):
        simulator.sweep(TINY, **{"executor": "serial", **kwargs})


def test_a_sweep_takes_path_objects_where_a_scenario_dict_does(tmp_path):
    """A grid of pathlib.Path values (models' config.json files) was refused, "PosixPath(...) is not a value a
    scenario file holds", where simulator.run takes cluster.model=Path(...) (simulator.config.base.PATH_TEXT)."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 1024,
                                  "intermediate_size": 4096, "num_attention_heads": 16, "num_hidden_layers": 4,
                                  "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 4096}))
    frame = simulator.sweep(TINY, {"cluster.model": [Path("llama-3-8b"), config]}, executor="serial")
    assert list(frame["status"]) == ["ok", "ok"], list(frame["error"])
    assert list(frame["cluster.model"]) == ["llama-3-8b", str(config)]
    by_run = simulator.run({**TINY, "cluster": {**TINY["cluster"], "model": config}}).summary
    assert frame["tpot_p50_s"].iloc[1] == by_run["tpot_p50_s"]


def test_a_sweep_takes_numpy_grids_and_seeds():
    frame = simulator.sweep(TINY, {"workload.arrival.qps": np.linspace(2, 4, 2)}, seeds=np.arange(2),
                            executor="serial")
    assert list(frame["workload.arrival.qps"]) == [2.0, 2.0, 4.0, 4.0] and list(frame["seed"]) == [0, 1, 0, 1]
    assert (frame["status"] == "ok").all()


def test_a_sweep_takes_a_dataframes_columns_for_its_grid_and_seeds():
    """A pandas column (`df["qps"]`, `df.index`) as a grid's values or the seeds was refused: 'grid.workload.arrival.qps:
    Input should be a valid list'; it runs as the list of its values."""
    import pandas as pd

    table = pd.DataFrame({"qps": [2.0, 4.0], "seed": np.array([0, 1], dtype=np.int32)})
    frame = simulator.sweep(TINY, {"workload.arrival.qps": table["qps"]}, seeds=pd.Index(table["seed"]),
                            executor="serial")
    assert list(frame["workload.arrival.qps"]) == [2.0, 2.0, 4.0, 4.0] and list(frame["seed"]) == [0, 1, 0, 1]
    assert (frame["status"] == "ok").all()


def test_simulate_refuses_what_it_cannot_run_in_one_scenario_error():
    """A dict or None (an AttributeError), a Prepared simulated once already (numpy's broadcast ValueError),
    an executor for a local scenario (ignored), a progress that cannot be called (a TypeError at the first
    finished request), a base_dir that is no path, a dict given to load_scenario (TypeErrors) (2026-11-27)."""
    with pytest.raises(ScenarioError, match=r"^prepared: a Prepared"):
        simulator.simulate(TINY)
    prepared = simulator.prepare(TINY)
    with pytest.raises(ScenarioError, match=r"^executor: "):
        simulator.simulate(prepared, executor="bogus")
    with pytest.raises(ScenarioError, match=r"^progress: a callable"):
        simulator.simulate(prepared, progress="x")
    simulator.simulate(prepared)
    with pytest.raises(ScenarioError, match=r"^prepared: was simulated already"):
        simulator.simulate(prepared)
    with pytest.raises(ScenarioError, match=r"^progress: a callable"):
        simulator.run(TINY, progress=3)
    with pytest.raises(ScenarioError, match=r"^base_dir: "):
        simulator.run(TINY, base_dir=3)
    with pytest.raises(ScenarioError, match=r"^scenario: a YAML path"):
        simulator.load_scenario(TINY)
    with pytest.raises(ScenarioError, match=r"^overrides: "):
        simulator.load_scenario(QUICK, "seed=1")
