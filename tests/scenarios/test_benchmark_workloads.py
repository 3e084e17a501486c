"""The benchmarks' workloads run (scenarios/benchmarks/): their figures are published from them, so a scenario a
later rule refuses must fail here, not when the benchmark is next run. (The speculating variant broke that
way: vLLM 0.11-0.14 refuse a draft model, and the A100's measured tables are 0.14.0's; SPEC now names 0.15.0.)"""
import pytest

import simulator
from scenarios.benchmarks import cluster_scale, fleet_speed, sim_speed


@pytest.mark.parametrize("spec", [False, True], ids=["plain", "chain"])
def test_fleet_and_cluster_scale_workloads_run(spec):
    for overrides in (fleet_speed.overrides(60, 2, spec, "simulation.workers=1"),
                      cluster_scale.overrides(60, 2, spec, "aggregate", "round_robin", 1)):
        result = simulator.run(sim_speed.SCENARIO, overrides)
        assert result.summary["requests_finished"] == 60
        assert (result.summary["draft_acceptance_rate"] > 0) == spec


def test_sim_speed_variants_run():
    result = simulator.run(sim_speed.SCENARIO, ["workload.num_requests=40", *sim_speed.SPEC])
    assert result.summary["requests_finished"] == 40 and result.summary["draft_acceptance_rate"] > 0
    v1 = simulator.run(sim_speed.SCENARIO, ["workload.num_requests=40", *sim_speed.V1])
    assert v1.summary["requests_finished"] == 40
    assert ((v1.steps.prefill_seqs > 0) & (v1.steps.decode_seqs > 0)).any()   # chunks ride on decode steps
