"""`simulator.run(scenario, overrides)` applies the overrides whatever form the scenario takes — a YAML path,
a raw dict or a parsed Scenario — and gives the same run as `draftsim run --set` (issue 29: a dict scenario
ignored them, a silent wrong answer)."""
from __future__ import annotations

import pandas as pd
import pytest
import yaml

import simulator
from simulator.config.scenario import parse_scenario
from simulator.errors import ScenarioError
from sim_helpers import scenario

DATA = scenario(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                acceptance={"kind": "constant", "alpha": 0.7}, workload={"num_requests": 40})
OVERRIDES = ["drafter.gamma=1", "workload.arrival.qps=9"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "s.yaml"
    path.write_text(yaml.safe_dump(DATA))
    return {"path": simulator.run(path, OVERRIDES), "dict": simulator.run(dict(DATA), OVERRIDES),
            "model": simulator.run(parse_scenario(DATA), OVERRIDES), "plain": simulator.run(dict(DATA))}


@pytest.mark.parametrize("kind", ["path", "dict", "model"])
def test_overrides_apply_to_every_kind_of_scenario(runs, kind):
    result = runs[kind]
    assert result.scenario.drafter.gamma == 1 and result.scenario.workload.arrival.qps == 9
    pd.testing.assert_frame_equal(result.requests, runs["path"].requests)
    pd.testing.assert_frame_equal(result.steps, runs["path"].steps)
    assert not result.requests.equals(runs["plain"].requests)        # the overrides changed the run


def test_the_callers_dict_is_not_changed_and_bad_overrides_name_the_field():
    data = dict(DATA)
    with pytest.raises(ScenarioError, match="drafter.gamma"):
        simulator.run(data, ["drafter.gamma=-1"])
    with pytest.raises(ScenarioError, match="^overrides: expected key.path=value, got 'no-equals-sign'"):
        simulator.run(parse_scenario(data), ["no-equals-sign"])   # (it named the command line's --set)
    assert data == DATA


@pytest.mark.parametrize("overrides, says", [
    (["seed=1", "seed=2"], "^overrides: seed is set twice \\(seed=1, then seed=2\\)"),
    (["workload.arrival.qps=3", "workload.arrival={process: poisson, qps: 9}"],
     "^overrides: workload.arrival, set after workload.arrival.qps, replaces it"),
    (["seed=[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["], "^overrides: seed: the value nests"),
])
def test_the_api_sets_each_key_once_as_the_command_line_does(overrides, says):
    """simulator.run(data, ["seed=1", "seed=2"]) ran seed 2 without a word (draftsim run --set refuses it), and a
    mapping set after a key inside it replaced that key."""
    with pytest.raises(ScenarioError, match=says):
        simulator.prepare(dict(DATA), overrides)


@pytest.mark.parametrize("overrides, shown", [
    ("drafter.gamma=1", "got str"),                 # read letter by letter: "expected key.path=value, got 'd'"
    ({"drafter.gamma": 1}, "got dict"),             # read by its keys: "got 'drafter.gamma'"
    (3, "got int"),                                 # TypeError: 'int' object is not iterable
    ([b"drafter.gamma=1"], "got a list holding bytes"),   # TypeError from bytes.partition
    (["drafter.gamma=1", 2], "got a list holding int"),
])
@pytest.mark.parametrize("kind", ["dict", "model"])
def test_overrides_of_another_type_name_overrides(overrides, shown, kind):
    data = dict(DATA) if kind == "dict" else parse_scenario(DATA)
    with pytest.raises(ScenarioError, match=f"^overrides: a list of key.path=value texts .*{shown}$"):
        simulator.prepare(data, overrides)


def test_an_unknown_step_mode_is_refused_before_any_work(monkeypatch):
    """step_mode="bogus" ran in bulk mode without a word."""
    monkeypatch.setattr(simulator.api, "prepare", lambda *a, **k: pytest.fail("prepared before the check"))
    with pytest.raises(ScenarioError, match="^step_mode: 'bulk' or 'step'.*got 'Step'$"):
        simulator.run(dict(DATA), step_mode="Step")


def test_spaces_around_the_parts_of_a_key_are_not_part_of_it():
    """`--set 'seed = 3'` or `' seed=3'` (spaces a shell kept) said ' seed: unknown field'."""
    from simulator.config.scenario import apply_overrides
    assert apply_overrides({}, [" seed = 3", "drafter . gamma=2"]) == {"seed": 3, "drafter": {"gamma": 2}}
    for text in (" . =3", "a. =1", "=1"):
        with pytest.raises(ScenarioError, match="bad key path"):
            apply_overrides({}, [text])


@pytest.mark.parametrize("section, field, value", [("acceptance", "alphas", {0.9, 0.8, 0.7}),
                                                   ("workload", "prompt_tokens", frozenset([3]))])
def test_a_set_is_refused_where_a_list_or_section_goes(section, field, value):
    """pydantic took a set for a list (positional alphas in the set's own order; for texts, an order that
    changes with the hash seed)."""
    data = scenario(workload={"num_requests": 3})
    data[section] = {"kind": "positional", field: value} if section == "acceptance" else {**data[section], field: value}
    with pytest.raises(ScenarioError, match=f"{section}.{field}: a set has no order; give a list"):
        simulator.prepare(data)


def test_an_override_list_sets_each_key_once():
    """`--set seed=1 --set seed=2` ran seed 2 without a word; a mapping set after a key inside it replaced that
    key. A key inside a mapping set before it refines the mapping and stays allowed."""
    from simulator.config.scenario import check_overrides_once
    check_overrides_once(["workload.arrival={qps: 4}", "workload.arrival.qps=8", "seed=1", "drafter.gamma=2"])
    for texts, says in ((["seed=1", " seed = 2"], "--set: seed is set twice (seed=1, then seed = 2)"),
                        (["a.b.c=1", "a.b=2"], "--set: a.b, set after a.b.c, replaces it")):
        with pytest.raises(ScenarioError) as info:
            check_overrides_once(texts)
        assert says in str(info.value), str(info.value)


def test_a_scenario_path_the_file_system_refuses_is_one_scenario_error():
    """simulator.run('a' * 5000) raised OSError: [Errno 36] File name too long."""
    with pytest.raises(ScenarioError, match=r"^scenario: a+\.\.\. cannot be read \(File name too long\)$"):
        simulator.prepare("a" * 5000)
