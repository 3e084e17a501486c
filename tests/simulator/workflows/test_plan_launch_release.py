"""A plan's launch scripts work out a named engine's prefix caching at the release the DES run of the same candidate
reads (simulator.cluster.factory.pool_release): with the measured tables' version where the engine block names
none, as build_replica_kind reads it (factory.engine_release). Before, the launch read the newest modelled release
(vLLM 0.32.0) where the run read the H100 tables' 0.24.0 (the A100's 0.14.0)."""
from __future__ import annotations

from pathlib import Path

import pytest

import simulator
from simulator.workflows.plan.launch import engine_cache_record
from sim_helpers import scenario


@pytest.mark.parametrize("hardware, version", [("h100-sxm", "0.24.0"), ("a100-80gb", "0.14.0")])
def test_the_launch_reads_the_release_the_run_reads(hardware, version):
    sc = scenario(cluster={"hardware": hardware, "engine": {"framework": "vllm"}}, workload={"num_requests": 4})
    record = engine_cache_record(sc, Path("."))
    run = simulator.prepare(sc).cluster.engine_prefix_caching
    assert record == run and record["rule"].startswith(f"vllm {version}: ")


def test_a_named_version_wins_over_the_tables():
    sc = scenario(cluster={"engine": {"framework": "vllm", "version": "0.7.3"}}, workload={"num_requests": 4})
    record = engine_cache_record(sc, Path("."))
    assert record["rule"].startswith("vllm 0.7.3: ") and record["engine_default"] is False   # V0: off
    given = scenario(cluster={"engine": {"framework": "vllm", "prefix_caching": True}})
    assert engine_cache_record(given, Path(".")) is None   # a value given: no engine default to work out


@pytest.mark.parametrize("engine, flags", [
    ({"framework": "vllm", "version": "0.7.3"},
     ["--speculative-model turboderp/Qwama-0.5B-Instruct", "--num-speculative-tokens 3"]),
    ({"framework": "vllm", "version": "0.25.0"}, ["--speculative-config '{\"method\": \"draft_model\""]),
    ({"framework": "sglang", "version": "0.5.6"}, ["--speculative-config '{\"method\": \"draft_model\""]),
])
def test_a_v0_release_gets_its_own_draft_model_flags(engine, flags):
    """vLLM's V0 releases that run a draft model (0.4.1 - 0.7.x) have no --speculative-config (absent from the 0.7.3
    and 0.8.0 wheels' arg_utils.py: --speculative-model and --num-speculative-tokens): a plan naming vLLM 0.7.3
    wrote a line its server refuses (session 24). A plan naming another engine gets the vLLM script of the release
    vLLM's tables give (0.24.0 on an H100), the V1 config."""
    from simulator.workflows.plan.launch import launch_script
    sc = scenario(cluster={"engine": engine}, drafter={"kind": "draft_model", "model": "qwama-0.5b", "gamma": 3})
    script = launch_script(sc, "vllm", "t").replace(" \\\n    ", " ")
    assert all(flag in script for flag in flags), script
    assert ("--speculative-config" in script) != (engine["version"] == "0.7.3")
    wide = scenario(cluster={"engine": engine, "parallelism": {"tp": 2}},
                    drafter={"kind": "draft_model", "model": "qwama-0.5b", "gamma": 3, "tp": 2})
    assert ("--speculative-draft-tensor-parallel-size 2" in launch_script(wide, "vllm", "t").replace(" \\\n    ", " ")) \
        == (engine["version"] == "0.7.3")
