"""A scenario that names its engine runs that engine's own batching scheduler and token budget where it leaves
them out (simulator.cluster.engine_scheduler; the rule in profiles.engine_time.batch_defaults.engine_batching,
hand-worked here from the engines' sources cited there)."""
from __future__ import annotations

import pytest
import yaml

import simulator
from profiles.engine_time.batch_defaults import engine_batching
from profiles.hardware import get_hardware
from simulator.cli import main
from simulator.cluster.vllm_memory import device_total_bytes
from simulator.errors import ScenarioError


def _batching(framework, version, hardware, entrypoint="api_server", max_model_len=8192):
    hw = get_hardware(hardware)
    return engine_batching(framework, version, hw, device_total_bytes(hw), entrypoint, max_model_len)


@pytest.mark.parametrize("framework, version, hardware, entrypoint, max_model_len, expected", [
    # vLLM V0 (before 0.8.0): prefill-first, max(max_model_len, 2048) (EngineArgs / SchedulerConfig v0.5 - v0.7)
    ("vllm", "0.7.3", "h100-sxm", "api_server", 8192, ("vllm", 8192)),
    ("vllm", "0.6.0", "h100-sxm", "api_server", 1024, ("vllm", 2048)),
    ("vllm", "0.6.0", "a100-80gb", "llm", 131072, ("vllm", 131072)),
    # vLLM V1 (get_batch_defaults by UsageContext): large-default GPUs 16384 (LLM) / 8192 (API server)
    ("vllm", "0.11.0", "h100-sxm", "api_server", 8192, ("vllm_v1", 8192)),
    ("vllm", "0.11.0", "h100-sxm", "llm", 8192, ("vllm_v1", 16384)),
    # ... an A100 never gets them from 0.9.0 (vLLM PR #17885): 2048 / 8192
    ("vllm", "0.11.0", "a100-80gb", "api_server", 8192, ("vllm_v1", 2048)),
    ("vllm", "0.11.0", "a100-80gb", "llm", 8192, ("vllm_v1", 8192)),
    # ... 0.8.4 by device name only (h100 / h200): a B200 gets the small ones
    ("vllm", "0.8.4", "b200", "api_server", 8192, ("vllm_v1", 2048)),
    ("vllm", "0.8.5", "b200", "api_server", 8192, ("vllm_v1", 8192)),
    # SGLang: prefill batches apart from decodes, chunked_prefill_size by GPU memory and release
    ("sglang", "0.5.9", "b200", "api_server", 8192, ("vllm", 16384)),      # >= 160 GiB
    ("sglang", "0.5.9", "h100-sxm", "api_server", 8192, ("vllm", 8192)),   # 60 - 160 GiB
    ("sglang", "0.5.9", "l40s", "api_server", 8192, ("vllm", 4096)),       # 44.31 GiB: 35 - 60 from 0.5.3
    ("sglang", "0.5.2", "l40s", "api_server", 8192, ("vllm", 8192)),       # 0.4.8 - 0.5.2: 8192 from 35 GiB
    # TensorRT-LLM: in-flight batching, max_num_tokens 8192 (BaseLlmArgs)
    ("trtllm", "1.2.0", "h100-sxm", "api_server", 8192, ("trtllm", 8192)),
])
def test_engine_batching_by_release_and_gpu(framework, version, hardware, entrypoint, max_model_len, expected):
    assert _batching(framework, version, hardware, entrypoint, max_model_len) == expected


def test_engine_batching_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match="entrypoint"):
        _batching("vllm", "0.11.0", "h100-sxm", entrypoint="serve")
    with pytest.raises(ValueError, match="framework"):
        _batching("tgi", "3.0", "h100-sxm")


def _scenario(engine: dict | None, scheduler: dict | None = None, hardware: str = "h100-sxm") -> dict:
    data = {
        "name": "engine-scheduler", "seed": 3,
        "cluster": {"hardware": hardware, "model": "llama-3-8b", **({"engine": engine} if engine else {})},
        "workload": {"arrival": {"process": "poisson", "qps": 8.0},
                     "prompt_tokens": {"kind": "uniform", "low": 256, "high": 3000},
                     "output_tokens": {"kind": "uniform", "low": 16, "high": 96}, "num_requests": 120},
        "outputs": {"plots": False, "steps": "full"},
    }
    if scheduler is not None:
        data["scheduler"] = scheduler
    return data


def _mixed_steps(result) -> int:
    steps = result.steps
    return int(((steps.prefill_tokens > 0) & (steps.decode_seqs > 0)).sum())


def test_a_named_vllm_v1_release_runs_v1s_scheduler_and_a_scenario_naming_none_keeps_draftsims():
    named = simulator.run(_scenario({"framework": "vllm", "version": "0.11.0"}))
    assert (named.scenario.scheduler.kind, named.scenario.scheduler.max_batched_tokens) == ("vllm_v1", 8192)
    assert _mixed_steps(named) > 0            # V1: prompt chunks ride along with decodes
    plain = simulator.run(_scenario(None))
    assert (plain.scenario.scheduler.kind, plain.scenario.scheduler.max_batched_tokens) == ("vllm", 8192)
    assert _mixed_steps(plain) == 0           # prefill-first


def test_filled_defaults_run_exactly_as_the_same_values_given():
    filled = simulator.run(_scenario({"framework": "sglang", "version": "0.5.9"}, hardware="l40s"))
    given = simulator.run(_scenario({"framework": "sglang", "version": "0.5.9"},
                                    {"kind": "vllm", "max_batched_tokens": 4096}, hardware="l40s"))
    assert filled.scenario.scheduler == given.scenario.scheduler
    assert filled.requests.equals(given.requests) and filled.steps.equals(given.steps)
    assert int(filled.steps.prefill_tokens.max()) <= 4096   # SGLang's 4096-token chunks on a 44 GiB GPU


def test_what_the_scenario_gives_stays():
    budget = simulator.run(_scenario({"version": "0.11.0"}, {"max_batched_tokens": 4096}), ["workload.num_requests=5"])
    assert (budget.scenario.scheduler.kind, budget.scenario.scheduler.max_batched_tokens) == ("vllm_v1", 4096)
    # a kind that is not the engine's own keeps draftsim's budget (the A100's V1 API-server budget would be 2048)
    other = simulator.run(_scenario({"version": "0.11.0"}, {"kind": "vllm"}, hardware="a100-80gb"),
                          ["workload.num_requests=5"])
    assert (other.scenario.scheduler.kind, other.scenario.scheduler.max_batched_tokens) == ("vllm", 8192)
    # the older spelling of the release names the engine too
    old = simulator.run(_scenario(None), ["cluster.latency.engine_version=0.7.3", "workload.num_requests=5"])
    assert old.scenario.scheduler.kind == "vllm" and old.scenario.scheduler.max_batched_tokens == 8192


def test_a_given_limit_the_engines_budget_cannot_hold_is_refused_with_the_field(tmp_path, capsys):
    data = _scenario({"framework": "vllm", "version": "0.11.0"}, {"max_batch_size": 4096}, hardware="a100-80gb")
    with pytest.raises(ScenarioError) as err:
        simulator.run(data)
    assert err.value.field == "scheduler.max_batched_tokens" and "2048" in err.value.message
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    code = main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    err_text = capsys.readouterr().err.strip()
    assert code == 2 and len(err_text.splitlines()) == 1 and "scheduler.max_batched_tokens" in err_text
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("engine, kind", [
    ({"framework": "trtllm", "chunked_prefill": True}, "trtllm"),     # TensorRT-LLM's IFB with chunked context
    ({"framework": "trtllm", "chunked_prefill": False}, "trtllm"),    # ... and without (whole prompts)
    ({"framework": "vllm", "version": "0.11.0", "chunked_prefill": True}, "vllm_v1"),
    ({"framework": "vllm", "version": "0.7.3", "chunked_prefill": True}, "sarathi"),   # V0's chunked prefill
    ({"chunked_prefill": True}, "sarathi"),                           # no engine named: as before
    ({"chunked_prefill": False}, "vllm"),
])
def test_chunked_prefill_picks_the_named_engines_scheduler(engine, kind):
    prepared = simulator.prepare(_scenario(engine), ["workload.num_requests=5"])
    assert prepared.scenario.scheduler.kind == kind


def test_a_plans_launch_flags_leave_the_budget_to_a_named_engine():
    from simulator.workflows.plan.launch import launch_script

    sc = {"cluster": {"model": "llama-3-8b", "hardware": "h100-sxm", "engine": {"version": "0.11.0"}},
          "scheduler": {"max_batch_size": 64}}
    for engine in ("vllm", "sglang"):   # the DES ran vLLM 0.11.0's own budget: no flag, as for max_batch_size unset
        script = launch_script(sc, engine, "title")
        assert "--max-num-batched-tokens" not in script and "--chunked-prefill-size" not in script
    unnamed = {**sc, "cluster": {"model": "llama-3-8b", "hardware": "h100-sxm"}}
    assert "--max-num-batched-tokens 8192" in launch_script(unnamed, "vllm", "title").replace(" \\\n    ", " ")


@pytest.mark.parametrize("pool_tokens, context_len, expected", [
    (415_907, 131_072, 2048),   # Llama-3.1-8B on an H100: 415907 / 131072 × 512 = 1624 → at least 2048
    (415_907, 8_192, 4096),     # ... its 8K sibling: 25,994 → at most 4096
    (1_500_000, 262_144, 2929),  # 1.5M tokens of 256K contexts: int(2929.7) in between
    (3_000, 131_072, 1500),     # a pool of 3,000 tokens: at most half of it (the newest releases' bound)
])
def test_sglang_request_pool_from_its_kv_pool(pool_tokens, context_len, expected):
    from profiles.engine_time.batch_defaults import sglang_max_running_requests
    assert sglang_max_running_requests(pool_tokens, context_len) == expected


def test_an_sglang_replica_runs_as_many_requests_as_its_request_pool():
    base = ["cluster.engine.framework=sglang", "cluster.engine.version=0.5.9", "cluster.model=llama-3.1-8b",
            "workload.num_requests=5"]
    kind = simulator.prepare(_scenario(None), base).cluster.pools[0].kind
    assert kind.max_batch_size == 2048 and int(kind.kv_tokens / 131_072 * 512) < 2048   # (not draftsim's 256)
    short = simulator.prepare(_scenario(None), base + ["cluster.max_model_len=4096"]).cluster.pools[0].kind
    assert short.max_batch_size == 4096                                                 # --context-length 4096
    given = simulator.prepare(_scenario(None), base + ["scheduler.max_batch_size=300"]).cluster.pools[0].kind
    assert given.max_batch_size == 300
    eagle = simulator.prepare(_scenario(None), base + ["drafter.kind=eagle3", "drafter.gamma=3"]).cluster.pools[0].kind
    assert eagle.max_batch_size == 48   # speculation resets max_running_requests to 48 (0.4.5 on)
