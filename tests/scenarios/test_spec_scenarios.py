"""Every drafter-family scenario under scenarios/speculation/ runs, conserves tokens, and speculates (RaLMSpec:
on documents, with rollbacks)."""
from __future__ import annotations

from pathlib import Path

import pytest

import simulator
from paths import REPO

FOLDER = REPO / "scenarios" / "speculation"
SCENARIOS = sorted(FOLDER.glob("*.yaml"))


def test_one_scenario_per_drafter_family_and_a_readme():
    names = {p.stem for p in SCENARIOS}
    assert {"colocated_draft", "separate_draft", "cpu_draft", "medusa_heads", "eagle_dynamic_tree",
            "layer_skip", "ngram", "multidraft", "sequoia_tree"} <= names
    readme = (FOLDER / "README.md").read_text()
    for name in names:
        assert f"`{name}.yaml`" in readme, name


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_runs_and_speculates(path):
    result = simulator.run(path, ["workload.num_requests=30"])
    req = result.requests
    assert req.finish_s.notna().all()
    if result.scenario.retrieval is not None:   # RaLMSpec speculates on documents: discarded tokens were generated
        assert result.steps.emitted_tokens.sum() == req.output_tokens.sum() + req.discarded_tokens.sum()
        assert req.output_tokens.sum() == req.emitted_tokens.sum() and req.rollbacks.sum() > 0
        return
    assert result.steps.emitted_tokens.sum() == req.output_tokens.sum() == req.emitted_tokens.sum()
    assert req.drafted_tokens.sum() > 0 and 0 < req.accepted_tokens.sum() <= req.drafted_tokens.sum()
