"""`draftsim catalog engines` and `draftsim catalog acceptance`: what a scenario can name for
`cluster.engine` and `acceptance: {kind: published, entry}`, read from the same data the simulator reads."""
from __future__ import annotations

import contextlib
import io

import pytest

from profiles.engine_time.frameworks import engine_entries
from simulator.cli import main
from simulator.errors import ScenarioError
from simulator.speculation.published import RegistryError, find_entry, load_registry


def _printed(what: str) -> list[list[str]]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["catalog", what]) == 0
    lines = out.getvalue().splitlines()
    return [line.split() for line in lines]


def test_engines_lists_every_release_range_and_the_release_a_scenario_without_version_gets():
    head, *rows = _printed("engines")
    assert head == ["ENGINE", "RELEASES", "CUDA_GRAPHS", "ASYNC_SCHEDULING", "SYNCHRONOUS_DRAFTERS",
                    "RELEASE_IF_UNSET", "NEWEST_KNOWN"]
    assert len(rows) == len(engine_entries())
    by_range = {(row[0], row[1]): row for row in rows}
    # frameworks.yaml: vLLM from 0.28.0 is modelled as 0.32.0 (its host work measured there), 0.33.0 the newest
    newest = by_range[("vllm", "0.28.0..")]
    assert newest[2:4] == ["full", "on"] and newest[-2:] == ["0.32.0", "0.33.0"]
    # V0 without async scheduling: every drafter runs synchronously; not the release used without a version
    old = by_range[("vllm", "0.2.6..0.8.0")]
    assert old[3:] == ["off", "all", "-", "-"]
    for framework in ("vllm", "sglang", "trtllm"):
        unset = [row for row in rows if row[0] == framework and row[-2] != "-"]
        assert len(unset) == 1, framework   # one entry serves a scenario that names no version


def test_acceptance_lists_every_registry_row_once_with_its_figure_and_source():
    head, *rows = _printed("acceptance")
    assert head[0] == "ID" and head[-1] == "SOURCE"
    registry = load_registry()
    assert [row[0] for row in rows] == [entry.id for entry in registry]
    first = rows[0]
    entry = find_entry(first[0])
    assert first[-1] == entry.source.id and f"{entry.mean_tokens:.2f}" in first


def test_an_unknown_published_entry_points_at_the_catalog():
    with pytest.raises(RegistryError, match="draftsim catalog acceptance"):
        find_entry("no-such-row")
    import simulator
    scenario = "scenarios/quickstart.yaml"
    with pytest.raises(ScenarioError, match="draftsim catalog acceptance"):
        simulator.prepare(scenario, ["acceptance={kind: published, entry: no-such-row}"])
