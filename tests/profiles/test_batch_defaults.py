"""The running-request limit an engine sets itself when the deployment gives none (profiles.engine_time.
batch_defaults), rule by rule as read in the releases' sources, and the DES running at that limit when a
scenario leaves scheduler.max_batch_size out (before: always 256, whatever the engine)."""
from __future__ import annotations

import pandas as pd
import pytest

import simulator
from profiles.engine_time.batch_defaults import default_max_num_seqs
from profiles.hardware import get_hardware
from sim_helpers import scenario

H100, H200, A100, L40S = (get_hardware(h) for h in ("h100-sxm", "h200", "a100-80gb", "l40s"))


@pytest.mark.parametrize("version,hardware,expected", [
    # vllm/engine/arg_utils.py, EngineArgs._set_default_args_v1 (0.8.x): `default_max_num_seqs = 1024`, any GPU
    ("0.8.0", A100, 1024), ("0.8.3", L40S, 1024),
    # 0.8.4: `if "h100" in device_name or "h200" in device_name: ... 1024 else 256`
    ("0.8.4", H200, 1024), ("0.8.4", A100, 256),
    # 0.8.5: `if device_memory >= 70 * GiB_bytes: ... 1024 else 256` (an A100-80GB has 80 GB)
    ("0.8.5", A100, 1024), ("0.8.5", L40S, 256),
    # 0.9.0 on, get_batch_defaults: `>= 70 * GiB_bytes and "a100" not in device_name` (PR #17885); LLM class
    # and OPENAI_API_SERVER alike (read in v0.9.0, v0.14.0, v0.33.0)
    ("0.9.0", A100, 256), ("0.14.0", H100, 1024), ("0.33.0", H100, 1024), ("0.33.0", L40S, 256),
    ("0.7.3", H100, 256),   # V0: EngineArgs.max_num_seqs = 256
])
def test_vllm_max_num_seqs_default_by_release_and_hardware(version, hardware, expected):
    assert default_max_num_seqs("vllm", version, hardware, None) == expected
    assert default_max_num_seqs("vllm", version, hardware, "eagle") == expected   # speculation does not change it


@pytest.mark.parametrize("version,drafter,expected", [
    # server_args.py ServerArgs.__post_init__ (PyPI wheels): v0.4.3.post2's EAGLE block disables the radix cache
    # and chunked prefill and sets no limit; v0.4.3.post3 - v0.4.4.post3: `if self.max_running_requests is None:
    # self.max_running_requests = 32` ("Max running request set to 32 because of using eagle speculative
    # decoding"); v0.4.4.post4 and v0.4.5: the same line with 48
    ("0.4.3", "eagle", None), ("0.4.3.post2", "eagle", None), ("0.4.3.post3", "eagle", 32),
    ("0.4.4", "eagle", 32), ("0.4.4.post3", "eagle", 32), ("0.4.4.post4", "eagle", 48), ("0.4.5", "eagle", 48),
    ("0.4.4", "draft_model", None), ("0.4.4", None, None),
    # STANDALONE (a draft model) joins the EAGLE branch in v0.5.2; NGRAM gets its own reset in v0.5.3
    ("0.5.1", "draft_model", None), ("0.5.2", "draft_model", 48),
    ("0.5.2", "ngram", None), ("0.5.3", "ngram", 48),
    # v0.5.14: arg_groups/speculative_hook.py _handle_eagle_family and _handle_ngram, the same 48
    ("0.5.14", "eagle", 48), ("0.5.14", "ngram", 48),
    ("0.5.14", None, None),   # no speculation: SGLang bounds running requests by its KV pool
])
def test_sglang_max_running_requests_with_speculation(version, drafter, expected):
    assert default_max_num_seqs("sglang", version, H100, drafter) == expected


@pytest.mark.parametrize("version,drafter,expected", [
    # tensorrt_llm/llmapi/llm_args.py BaseLlmArgs: `max_batch_size: Optional[int] = Field(default=2048, ...)`
    # (the PyTorch backend's LLM API from 1.0; 1.3.0rc27 and 1.4.0rc4 keep it); speculation does not change it
    ("1.0.0", None, 2048), ("1.2.0", "eagle", 2048), ("1.4.0rc4", "draft_model", 2048),
    ("0.21.0", None, None),   # TensorRT-engine releases: trtllm-build's own default, not read
])
def test_trtllm_max_batch_size_default(version, drafter, expected):
    assert default_max_num_seqs("trtllm", version, H100, drafter) == expected


def test_trtllm_serves_more_than_256_requests_at_once_without_a_max_batch_size():
    """300 concurrent clients on TensorRT-LLM 1.2.0 with no scheduler.max_batch_size: all 300 run at once
    (max_batch_size 2048, max_num_tokens 8192 fit 300 decodes; before: draftsim's 256 capped the batch)."""
    data = scenario(workload={"arrival": {"process": "closed_loop", "concurrency": 300, "qps": None},
                              "num_requests": 300, "prompt_tokens": {"kind": "fixed", "value": 16},
                              "output_tokens": {"kind": "fixed", "value": 8}},
                    cluster={"model": "llama-3.1-8b", "engine": {"framework": "trtllm", "version": "1.2.0"}},
                    outputs={"steps": "full", "plots": False})
    data["scheduler"] = {"kind": "trtllm"}
    result = simulator.run(data)
    assert pd.DataFrame(result.steps).running_requests.max() == 300
    assert result.summary["requests_finished"] == 300


def _prepared(hardware: str, engine: dict, drafter: dict, scheduler: dict):
    data = scenario(workload={"num_requests": 5}, cluster={"hardware": hardware, "model": "llama-3.1-8b",
                                                           "engine": engine}, drafter=drafter)
    data["scheduler"] = scheduler   # (sim_helpers' scenario sets max_batch_size 64)
    return simulator.prepare(data)


@pytest.mark.parametrize("hardware,engine,drafter,given,expected", [
    ("h100-sxm", {"version": "0.24.0"}, {"kind": "none"}, None, 1024),
    ("a100-80gb", {"version": "0.24.0"}, {"kind": "none"}, None, 256),
    ("h100-sxm", {"version": "0.24.0"}, {"kind": "none"}, 300, 300),           # the scenario's own limit
    ("h100-sxm", {"framework": "sglang", "version": "0.5.14"}, {"kind": "eagle3", "gamma": 3}, None, 48),
    ("h100-sxm", {"framework": "sglang", "version": "0.5.14"}, {"kind": "eagle3", "gamma": 3}, 128, 128),
    # SGLang's request pool from its KV pool: Llama-3.1-8B's pool / 131072 × 512 < 2048 → 2048 (not draftsim's 256)
    ("h100-sxm", {"framework": "sglang", "version": "0.5.14"}, {"kind": "none"}, None, 2048),
    ("h100-sxm", {"framework": "trtllm", "version": "1.2.0"}, {"kind": "eagle3", "gamma": 3}, None, 2048),
])
def test_replicas_run_at_the_engines_limit_unless_the_scenario_sets_one(hardware, engine, drafter, given, expected):
    extra = {"max_batch_size": given} if given is not None else {}
    prepared = _prepared(hardware, engine, drafter, {"kind": "vllm", **extra})
    assert {rep.limits.max_batch_size for rep in prepared.cluster.replicas} == {expected}
    assert prepared.cluster.kind.max_batch_size == expected


def test_sglang_speculation_runs_at_most_48_requests_at_once(tmp_path):
    """100 concurrent clients on SGLang with EAGLE-3 and no max_batch_size: the running batch reaches 48 and
    never more (before: draftsim's 256 applied, so all 100 ran at once)."""
    data = scenario(workload={"arrival": {"process": "closed_loop", "concurrency": 100, "qps": None},
                              "num_requests": 200},
                    cluster={"model": "llama-3.1-8b", "engine": {"framework": "sglang", "version": "0.5.14"}},
                    drafter={"kind": "eagle3", "gamma": 3}, outputs={"steps": "full", "plots": False})
    del data["scheduler"]["max_batch_size"]
    result = simulator.run(data)
    steps = pd.DataFrame(result.steps)
    assert steps.running_requests.max() == 48
    assert result.summary["requests_finished"] == 200


@pytest.mark.parametrize("version,expected", [("0.11.0", 1024), ("0.11.1", 512), ("0.33.0", 512)])
def test_vllm_lowers_a_defaulted_max_num_seqs_to_the_token_budget_from_0_11_1(version, expected):
    """vllm/engine/arg_utils.py `_set_default_max_num_seqs_and_batched_tokens_args` (v0.11.1 on): when
    max_num_seqs was not given, `self.max_num_seqs = min(self.max_num_seqs, self.max_num_batched_tokens)`;
    v0.11.0 has no such line."""
    assert default_max_num_seqs("vllm", version, H100, None, max_num_batched_tokens=512) == expected


def test_a_token_budget_below_the_defaulted_limit_is_refused_where_vllm_refuses_it():
    """vLLM 0.11.0 on an H100 defaults max_num_seqs to 1024 and keeps it above --max-num-batched-tokens 512:
    SchedulerConfig._verify_args raises (vllm/config/scheduler.py); v0.11.1 lowers it to 512 and runs."""
    from simulator.errors import ScenarioError
    with pytest.raises(ScenarioError) as err:
        _prepared("h100-sxm", {"version": "0.11.0"}, {"kind": "none"}, {"kind": "vllm", "max_batched_tokens": 512})
    assert err.value.field == "scheduler.max_batched_tokens" and "1024" in str(err.value), str(err.value)
    ok = _prepared("h100-sxm", {"version": "0.11.1"}, {"kind": "none"}, {"kind": "vllm", "max_batched_tokens": 512})
    assert ok.cluster.kind.max_batch_size == 512


def test_a_token_budget_below_sglangs_running_limit_is_not_refused_in_vllms_words():
    """SGLang has no rule like vLLM's `max_num_batched_tokens >= max_num_seqs` (server_args.py neither checks
    --chunked-prefill-size against --max-running-requests nor raises): a SGLang engine with a 16-token budget and
    no max_batch_size runs at its request pool's 2048 (profiles.engine_time.batch_defaults.sglang_max_running_requests).
    Before, it was refused as `sglang 0.5.14 ... the engine refuses max_num_batched_tokens < max_num_seqs (vLLM
    0.8-0.11.0, SchedulerConfig._verify_args)`."""
    prepared = _prepared("h100-sxm", {"framework": "sglang", "version": "0.5.14"}, {"kind": "none"},
                         {"kind": "vllm", "max_batched_tokens": 16})
    assert prepared.cluster.kind.max_batch_size == 2048
    assert {rep.limits.max_batched_tokens for rep in prepared.cluster.replicas} == {16}
    # vLLM V0 keeps the rule (its SchedulerConfig._verify_args raised before V1 existed), named by release
    from simulator.errors import ScenarioError
    with pytest.raises(ScenarioError, match=r"vllm 0\.6\.0 on h100-sxm.*\(vLLM through 0\.11\.0"):
        _prepared("h100-sxm", {"version": "0.6.0"}, {"kind": "none"}, {"kind": "vllm", "max_batched_tokens": 16})


def test_sglang_chunked_prefill_size_by_gpu_memory_and_release():
    """SGLang's default --chunked-prefill-size (server_args.py of 0.4.1, 0.4.7, 0.4.8 - 0.5.2 and
    `_handle_gpu_memory_settings` 0.5.3 on; memory_hook.py 0.5.20 for the 20-35 GiB class): the 40 GB A100
    and the L40S get 4096 from 0.5.3 (`elif gpu_mem < 60 * 1024`), B200/MI300X 16384 (`else`), 80-141 GB 8192."""
    from profiles.engine_time.batch_defaults import GIB, sglang_chunked_prefill_size as chunk
    assert [chunk(39.4 * GIB, v) for v in ("0.4.1", "0.5.2", "0.5.3", "0.5.23")] == [8192, 8192, 4096, 4096]
    assert [chunk(79.19 * GIB, v) for v in ("0.4.1", "0.4.7", "0.5.2", "0.5.23")] == [8192] * 4
    assert [chunk(178.36 * GIB, v) for v in ("0.4.6", "0.4.7", "0.4.8", "0.5.23")] == [8192, 16384, 16384, 16384]
    assert [chunk(24.5 * GIB, v) for v in ("0.4.1", "0.5.2", "0.5.19", "0.5.20")] == [8192, 2048, 2048, 4096]
    assert chunk(24 * GIB, "0.4.1") == 2048   # (`gpu_mem < 25_000` MiB)
    assert [chunk(16 * GIB, v) for v in ("0.4.1", "0.5.23")] == [2048, 2048]


@pytest.mark.parametrize("version,expected", [("0.4.4", 32), ("0.4.5", 48)])
def test_sglang_0_4_4_runs_eagle_at_32_requests(version, expected):
    """SGLang 0.4.4's `ServerArgs.__post_init__` sets `max_running_requests = 32` with EAGLE (EAGLE3 taken as
    0.4.4: profiles.engine_time.support), 0.4.5's sets 48 (before: 0.4.4 got SGLang's request pool from its KV
    pool, 2048)."""
    prepared = _prepared("h100-sxm", {"framework": "sglang", "version": version}, {"kind": "eagle3", "gamma": 3},
                         {"kind": "vllm"})
    assert {rep.limits.max_batch_size for rep in prepared.cluster.replicas} == {expected}


def test_sglang_chunked_prefill_size_on_the_catalogs_h200_and_b200():
    """The catalog's H200 and B200 through the memory CUDA reports (simulator.cluster.vllm_memory
    .device_total_bytes: 139.7 and 178.4 GiB) at each rule's boundaries, read in the PyPI wheels: 0.4.6
    `gpu_mem < 25_000` else 8192; 0.4.7 `gpu_mem > 180_000` → 16384 (the B200's 182,641 MiB); 0.4.8 - 0.5.2
    `elif gpu_mem < 160 * 1024: # H100, H200, A100, H20` 8192 else 16384; 0.5.3 - 0.5.18 server_args.py
    `_handle_gpu_memory_settings` and 0.5.19 - 0.5.23 arg_groups/memory_hook.py: `elif gpu_mem < 160 * 1024: #
    H20, H200` 8192, `else: # B200, MI300` 16384."""
    from profiles.engine_time.batch_defaults import sglang_chunked_prefill_size as chunk
    from simulator.cluster.vllm_memory import device_total_bytes
    versions = ("0.4.6", "0.4.7", "0.4.8", "0.5.2", "0.5.3", "0.5.19", "0.5.23")
    assert [chunk(device_total_bytes(H200), v) for v in versions] == [8192] * 7
    b200 = device_total_bytes(get_hardware("b200"))
    assert [chunk(b200, v) for v in versions] == [8192] + [16384] * 6
