"""A release the scenario names is checked against what it offers and refuses (profiles.engine_time.support) whether
or not its engine time is paid (`cluster.latency.engine_time: false`): with it off, suffix decoding ran on a named
SGLang and a draft model on vLLM 0.11.0, exit 0, where the same scenarios with engine time on were refused."""
from __future__ import annotations

import pytest

import simulator
from sim_helpers import scenario
from simulator.errors import ScenarioError

SMALL = {"workload": {"num_requests": 8}}


@pytest.mark.parametrize("engine_time", [True, False])
@pytest.mark.parametrize("engine, sections, refusal", [
    ({"framework": "vllm", "version": "0.11.0"}, {"drafter": {"kind": "draft_model", "model": "llama-3.2-1b"}},
     r"^cluster.engine.version: vllm 0.11.0 raises at start-up for a draft model"),
    ({"framework": "sglang", "version": "0.5.23"}, {"drafter": {"kind": "suffix"}, "acceptance": {"kind": "sessions"}},
     r"^drafter.kind: sglang 0.5.23 has no suffix decoding"),
    ({"framework": "vllm", "version": "0.9.0", "async_scheduling": True}, {},
     r"^cluster.engine.async_scheduling: vllm 0.9.0 has no such flag"),
])
def test_a_named_release_refuses_what_it_lacks_with_or_without_engine_time(engine_time, engine, sections, refusal):
    model = "qwen2.5-coder-0.5b" if "acceptance" in sections else "llama-3-8b"
    with pytest.raises(ScenarioError, match=refusal):
        simulator.run(scenario(cluster={"model": model, "engine": engine, "latency": {"engine_time": engine_time}},
                               **sections, **SMALL))


def test_without_engine_time_an_implied_release_is_not_checked():
    """Engine time off and no release named: the speculation runs as the algorithm (a Medusa head, which the
    newest vLLM, the implied release on roofline kernels, no longer has)."""
    result = simulator.run(scenario(cluster={"latency": {"source": "roofline", "engine_time": False}},
                                    drafter={"kind": "head", "style": "parallel", "gamma": 2}, **SMALL))
    assert result.summary["requests_finished"] == 8
