"""The MoE scenarios: the YAML scenarios load and one runs in the DES with requests conserved; the EP-vs-TP
script's table has the structure its README reads from it."""
from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.moe.ep_vs_tp import Setup, main, table
from simulator.api import run
from simulator.config.scenario import load_scenario
from paths import REPO

MOE_DIR = REPO / "scenarios" / "moe"


@pytest.mark.parametrize("path", sorted(MOE_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_moe_yaml_scenarios_load(path):
    scenario, _ = load_scenario(path)
    assert scenario.cluster.model in ("mixtral-8x7b", "qwen3-30b-a3b")


def test_a_speculative_moe_scenario_runs_and_conserves_requests():
    result = run(MOE_DIR / "mixtral_tp8_sd.yaml", ["workload.num_requests=60"])
    assert result.summary["requests_finished"] == 60 == len(result.requests)
    assert result.summary["tokens_per_step"] > 1.0


@pytest.fixture(scope="module")
def frame():
    return table(Setup(), models=("qwen3-30b-a3b",), gpu_counts=(8, 16))


def test_tp_has_no_all_to_all_and_ep_has_some(frame):
    tp = frame[frame.layout.str.startswith("TP")]
    ep = frame[frame.layout.str.startswith("EP")]
    assert (tp.alltoall_ms == 0).all() and (ep.alltoall_ms > 0).all()


def test_crossing_nodes_speculation_and_prescheduling_move_the_all_to_all_share(frame):
    def share(layout, spec, pre):
        row = frame[(frame.layout == layout) & (frame.spec_decoding == spec) & (frame.prescheduling == pre)]
        assert len(row) == 1
        return float(row.alltoall_share.iloc[0]), float(row.alltoall_ms.iloc[0])

    one_node, two_nodes = share("EP8 (DP attention)", False, False), share("EP16 (DP attention)", False, False)
    assert two_nodes[0] > 3 * one_node[0]
    assert share("EP16 (DP attention)", True, False)[1] > two_nodes[1]     # γ+1 tokens dispatched
    assert share("EP16 (DP attention)", False, True)[1] < two_nodes[1]     # pre-scheduling
    assert (frame.tokens_per_s_per_gpu > 0).all() and (frame.step_ms > frame.alltoall_ms).all()


def test_script_prints_the_table(capsys, tmp_path):
    assert main(["--csv", str(tmp_path / "t.csv")]) == 0
    out = capsys.readouterr().out
    assert "alltoall_share" in out and "assumptions" in out
    assert (tmp_path / "t.csv").stat().st_size > 500


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_des_grid_runs_ep_and_tp_with_and_without_prescheduling_and_speculation():
    from scenarios.moe.des_grid import table as des_table
    frame = des_table(models=("qwen3-30b-a3b",), gpu_counts=(16,), requests=48)
    assert set(frame.layout) == {"TP8 ×2", "EP16 (2 nodes)", "EP8 ×2"}
    tp = frame[frame.layout == "TP8 ×2"]
    assert (tp.alltoall_share == 0).all() and (frame[frame.layout != "TP8 ×2"].alltoall_share > 0).all()
    ep16 = frame[(frame.layout == "EP16 (2 nodes)") & ~frame.spec_decoding].set_index("prescheduling")
    ep8 = frame[(frame.layout == "EP8 ×2") & ~frame.spec_decoding].set_index("prescheduling")
    assert ep16.alltoall_share[True] < ep16.alltoall_share[False]
    assert ep16.alltoall_share[False] > 3 * ep8.alltoall_share[False]     # crossing nodes
    assert len(frame) == 2 + 4 + 4 and (frame.saturated_tok_s_per_gpu > 0).all()
