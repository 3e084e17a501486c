"""`draftsim plan` writes the best candidate as vLLM and SGLang launch command lines, one per role."""
from __future__ import annotations

import json
import shlex

import pytest

from simulator.workflows.plan.launch import hf_repo, launch_script

COLOCATED = {
    "cluster": {"model": "llama-3.1-70b", "hardware": "h100-sxm", "dtype": "fp8", "kv_dtype": "fp8", "replicas": 3,
                "parallelism": {"tp": 4, "pp": 1, "ep": 1}, "gpu_memory_utilization": 0.92, "max_model_len": 32768},
    "drafter": {"kind": "draft_model", "model": "llama-3.1-8b", "gamma": 4, "tp": 1},
    "scheduler": {"kind": "vllm", "max_batch_size": 128, "max_batched_tokens": 4096, "block_size": 16},
}


def _commands(script: str) -> list[list[str]]:
    """The command lines of a launch script, split as the shell would."""
    joined = script.replace(" \\\n    ", " ")
    return [shlex.split(line) for line in joined.splitlines() if line and not line.startswith("#")]


def test_repositories_come_from_the_catalog_sources():
    assert hf_repo("llama-3.1-70b") == "meta-llama/Llama-3.1-70B"
    assert hf_repo("qwama-0.5b") == "turboderp/Qwama-0.5B-Instruct"
    assert hf_repo("gpt-oss-20b") == "openai/gpt-oss-20b"


def test_vllm_command_carries_every_simulated_setting():
    (cmd,) = _commands(launch_script(COLOCATED, "vllm", "title"))
    assert cmd[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-70B"]
    pairs = {cmd[i]: cmd[i + 1] for i in range(3, len(cmd) - 1) if cmd[i].startswith("--") and not cmd[i + 1].startswith("--")}
    assert pairs["--tensor-parallel-size"] == "4" and pairs["--pipeline-parallel-size"] == "1"
    assert pairs["--gpu-memory-utilization"] == "0.92" and pairs["--max-num-seqs"] == "128"
    assert pairs["--max-num-batched-tokens"] == "4096" and pairs["--block-size"] == "16"
    assert pairs["--kv-cache-dtype"] == "fp8" and pairs["--quantization"] == "fp8" and pairs["--max-model-len"] == "32768"
    assert "--no-enable-prefix-caching" in cmd          # the plan simulated no prefix caching
    spec = json.loads(pairs["--speculative-config"])
    assert spec == {"method": "draft_model", "model": "meta-llama/Llama-3.1-8B", "num_speculative_tokens": 4}


def test_sglang_command_and_disaggregated_roles():
    dis = {**COLOCATED, "cluster": {**COLOCATED["cluster"], "kv_cache": {"prefix_caching": True},
                                    "disaggregation": {"prefill": {"replicas": 2, "parallelism": {"tp": 2}},
                                                       "decode": {"replicas": 1, "parallelism": {"tp": 8, "ep": 1}}}}}
    script = launch_script(dis, "sglang", "title")
    prefill, decode = _commands(script)
    assert prefill[:5] == ["python", "-m", "sglang.launch_server", "--model-path", "meta-llama/Llama-3.1-70B"]
    assert prefill[prefill.index("--disaggregation-mode") + 1] == "prefill"
    assert decode[decode.index("--disaggregation-mode") + 1] == "decode"
    assert prefill[prefill.index("--tp-size") + 1] == "2" and decode[decode.index("--tp-size") + 1] == "8"
    assert "--speculative-algorithm" not in prefill and decode[decode.index("--speculative-num-steps") + 1] == "4"
    assert decode[decode.index("--speculative-num-draft-tokens") + 1] == "5"
    assert "--disable-radix-cache" not in decode                           # prefix caching was simulated on
    assert decode[decode.index("--kv-cache-dtype") + 1] == "fp8_e4m3"
    assert "# prefill: 2 replica(s) of 2 GPU(s) each" in script and "# decode: 1 replica(s) of 8 GPU(s) each" in script
    vllm = _commands(launch_script(dis, "vllm", "title"))
    for cmd in vllm:
        assert json.loads(cmd[cmd.index("--kv-transfer-config") + 1]) == {"kv_connector": "NixlConnector",
                                                                          "kv_role": "kv_both"}


@pytest.mark.parametrize("engine, flag", [("vllm", "--gpu-memory-utilization"), ("sglang", "--mem-fraction-static")])
def test_memory_fraction_is_written_only_when_the_scenario_sets_it(engine, flag):
    """A scenario without cluster.gpu_memory_utilization ran the engine's own default (SGLang's
    mem_fraction_static by release, simulator.cluster.sglang_memory): the command leaves the flag out, so the
    server picks the same default; one given is written as given (before: 0.9 written either way)."""
    (cmd,) = _commands(launch_script(COLOCATED, engine, "title"))
    assert cmd[cmd.index(flag) + 1] == "0.92"
    unset = {**COLOCATED, "cluster": {k: v for k, v in COLOCATED["cluster"].items() if k != "gpu_memory_utilization"}}
    (cmd,) = _commands(launch_script(unset, engine, "title"))
    assert flag not in cmd


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_draft_model_of_another_vocabulary_gets_no_speculative_flags(engine):
    """llama-68m (32,000 tokens) drafting for Llama-3-8B (128,256; llama8b_chat.yaml's search): vLLM refuses a
    draft_model of another vocabulary size at start (SpeculativeConfig.verify_equal_vocab_size_if_draft_model);
    the scripts wrote its --speculative-config all the same."""
    sc = {"cluster": {"model": "llama-3-8b"}, "drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 4}}
    script = launch_script(sc, engine, "t")
    (cmd,) = _commands(script)
    assert not [c for c in cmd if c.startswith("--speculative")]
    assert "# draft model llama-68m: a 32,000-token vocabulary, llama-3-8b has 128,256" in script
    same = {**sc, "drafter": {**sc["drafter"], "model": "llama-3.2-1b"}}   # the Llama-3 vocabulary: flags written
    (cmd,) = _commands(launch_script(same, engine, "t"))
    assert ("--speculative-config" if engine == "vllm" else "--speculative-algorithm") in cmd


def test_heterogeneous_drafting_launches_with_vllms_flag():
    """drafter.heterogeneous_vocab (vLLM >= 0.25.0: profiles.engine_time.draft_vocabulary) is the speculative
    config's use_heterogeneous_vocab; SGLang has none, so its script keeps the comment."""
    sc = {"cluster": {"model": "llama-3-8b"},
          "drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 4, "heterogeneous_vocab": True}}
    (cmd,) = _commands(launch_script(sc, "vllm", "t"))
    config = json.loads(cmd[cmd.index("--speculative-config") + 1])
    assert config == {"method": "draft_model", "model": "JackFram/llama-68m", "num_speculative_tokens": 4,
                      "use_heterogeneous_vocab": True}
    assert "# draft model llama-68m" in launch_script(sc, "sglang", "t")


def test_expert_parallel_layout_and_int4_note():
    moe = {"cluster": {"model": "qwen3-30b-a3b", "dtype": "int4", "parallelism": {"tp": 1, "ep": 8}}}
    (vllm,) = _commands(launch_script(moe, "vllm", "t"))
    assert "--enable-expert-parallel" in vllm and vllm[vllm.index("--data-parallel-size") + 1] == "8"
    (sglang,) = _commands(launch_script(moe, "sglang", "t"))
    assert sglang[sglang.index("--ep-size") + 1] == "8" and sglang[sglang.index("--dp-size") + 1] == "8"
    assert "AWQ or GPTQ" in launch_script(moe, "sglang", "t")


@pytest.mark.slow
def test_plan_writes_launch_scripts(tmp_path):
    import yaml

    from test_plan_cli import PLAN
    from simulator.workflows.plan.main import main
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({**PLAN, "confirm_top": 1}, sort_keys=False, allow_unicode=True))
    assert main([str(path), "--out", str(tmp_path / "out"), "--executor", "serial", "--quiet"]) == 0
    import pandas as pd
    best = pd.read_csv(tmp_path / "out" / "ranked.csv").iloc[0]
    for name in ("launch_vllm.sh", "launch_sglang.sh"):
        text = (tmp_path / "out" / name).read_text()
        assert "rank 1 of draftsim plan small" in text and "meta-llama/Meta-Llama-3-8B" in text
        assert f"--{'tensor-parallel-size' if 'vllm' in name else 'tp-size'} {best.tp}" in text.replace(" \\\n    ", " ")


WORKLOAD = {"arrival": {"process": "poisson", "qps": 2.0}, "num_requests": 100,   # (a plan's candidates carry one)
            "prompt_tokens": {"kind": "fixed", "value": 512}, "output_tokens": {"kind": "fixed", "value": 128}}


@pytest.mark.parametrize("engine, vllm_flag, sglang_disables", [
    ({"version": "0.15.0"}, "--enable-prefix-caching", False),                    # vLLM V1's default: on
    ({"framework": "vllm", "version": "0.7.3"}, "--no-enable-prefix-caching", True),   # V0's: off
    ({"version": "0.15.0", "prefix_caching": False}, "--no-enable-prefix-caching", True),   # given: wins
])
def test_a_plan_that_names_its_engine_launches_the_prefix_caching_the_des_ran(engine, vllm_flag, sglang_disables):
    """Where the candidate names its engine and gives no prefix caching, the DES ran that engine's default
    (simulator.cluster.engine_cache): the launch scripts write it."""
    sc = {**COLOCATED, "workload": WORKLOAD, "cluster": {**COLOCATED["cluster"], "engine": engine}}
    (vllm,) = _commands(launch_script(sc, "vllm", "title"))
    assert vllm_flag in vllm
    (sglang,) = _commands(launch_script(sc, "sglang", "title"))
    assert ("--disable-radix-cache" in sglang) is sglang_disables


def test_a_hybrid_candidate_launches_with_the_cache_off_as_simulated():
    """qwen3-next under SGLang: the engine caches it (MambaRadixCache), the DES kept it off (named approximation,
    simulator.cluster.engine_cache): the script says off."""
    sc = {"workload": WORKLOAD, "cluster": {"model": "qwen3-next-80b-a3b", "hardware": "h100-sxm", "parallelism": {"tp": 4},
                      "engine": {"framework": "sglang", "version": "0.5.23"}},
          "drafter": {"kind": "none"}, "scheduler": {"kind": "vllm", "max_batch_size": 64}}
    (sglang,) = _commands(launch_script(sc, "sglang", "title"))
    assert "--disable-radix-cache" in sglang


def test_sglang_launches_the_schedule_policy_the_des_ran():
    """cluster.engine.schedule_policy given: SGLang's --schedule-policy (server_args.py); none given: no flag, the
    release's own default, which the DES ran (profiles.engine_time.queue_defaults)."""
    named = {**COLOCATED, "cluster": {**COLOCATED["cluster"], "engine": {"framework": "sglang", "version": "0.4.5",
                                                                         "schedule_policy": "lpm"}}}
    (cmd,) = _commands(launch_script(named, "sglang", "title"))
    assert cmd[cmd.index("--schedule-policy") + 1] == "lpm"
    (cmd,) = _commands(launch_script(COLOCATED, "sglang", "title"))
    assert "--schedule-policy" not in cmd


@pytest.mark.parametrize("engine, flag, bf16", [("vllm", "fp8", "bfloat16"), ("sglang", "fp8_e4m3", "bf16")])
def test_launch_lines_write_the_kv_dtype_the_des_ran(engine, flag, bf16):
    """The launch line writes the KV dtype the DES ran (simulator.cluster.factory.resolve_kv_dtype): fp8 weights
    without a kv_dtype ran the release's default, a bf16 KV cache under vLLM and SGLang (their --kv-cache-dtype auto;
    the catalog's fp8 weights declare no KV quantization) and an fp8 one under TensorRT-LLM (its FP8 recipe), which
    the vLLM/SGLang line must then ask for; a checkpoint that declares an fp8 KV cache the engine's auto may take,
    run with a bf16 one, asks for bf16."""
    cluster = {k: v for k, v in COLOCATED["cluster"].items() if k != "kv_dtype"}
    (cmd,) = _commands(launch_script({**COLOCATED, "cluster": cluster}, engine, "title"))
    assert "--kv-cache-dtype" not in cmd
    trt = {**cluster, "engine": {"framework": "trtllm"}}
    (cmd,) = _commands(launch_script({**COLOCATED, "cluster": trt}, engine, "title"))
    assert cmd[cmd.index("--kv-cache-dtype") + 1] == flag
    (cmd,) = _commands(launch_script({**COLOCATED, "cluster": {**cluster, "dtype": "bf16"}}, engine, "title"))
    assert "--kv-cache-dtype" not in cmd
    # nvfp4 weights: NVIDIA's NVFP4 checkpoints declare an FP8 KV cache, which vLLM's auto takes from 0.14.0
    nvfp4 = {**cluster, "dtype": "nvfp4", "hardware": "b200", "engine": {"framework": "vllm", "version": "0.14.0"}}
    sc = {**COLOCATED, "cluster": nvfp4}
    (cmd,) = _commands(launch_script(sc, engine, "title"))
    assert cmd[cmd.index("--kv-cache-dtype") + 1] == flag
    sc = {**sc, "cluster": {**nvfp4, "kv_dtype": "bf16"}}
    (cmd,) = _commands(launch_script(sc, engine, "title"))
    assert cmd[cmd.index("--kv-cache-dtype") + 1] == bf16


# session 23, planfix: no launch script for an engine that cannot serve the best candidate
def test_no_launch_script_for_an_engine_that_cannot_serve_the_candidate(tmp_path, capsys):
    """FP8 MoE weights on an A100: vLLM runs the experts weight-only (FP8 Marlin), SGLang never does
    (profiles.engine_time.fp8_marlin). launch_sglang.sh was written as if SGLang could serve them; now it is not
    written (an earlier plan's goes), the plan warns on stderr (--quiet too) with the rule, and the outputs line
    lists only launch_vllm.sh."""
    import yaml
    from simulator.workflows.plan.main import main
    plan = {"name": "fp8moe", "models": ["qwen3-30b-a3b"], "hardware": [{"id": "a100-80gb"}], "dtype": "fp8",
            "workload": {"arrival": {"process": "poisson", "qps": 1}, "prompt_tokens": {"kind": "fixed", "value": 200},
                         "output_tokens": {"kind": "fixed", "value": 20}, "num_requests": 20},
            "slo": {"ttft_s": 2.0, "attainment": 0.5}, "search": {"tp": [1], "replicas": [1]}, "confirm_top": 1}
    path, out = tmp_path / "plan.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump({**plan, "dtype": "bf16"}))   # (both engines serve bf16 experts)
    assert main([str(path), "--out", str(out), "--executor", "serial", "--quiet"]) == 0
    assert not capsys.readouterr().err and (out / "launch_sglang.sh").is_file()
    path.write_text(yaml.safe_dump(plan))   # re-planned into the same folder: the earlier launch_sglang.sh goes
    assert main([str(path), "--out", str(out), "--executor", "serial", "--quiet"]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("draftsim plan: warning: launch_sglang.sh not written: SGLang cannot serve the best "
                          "candidate (qwen3-30b-a3b on 1xa100-80gb") and len(err.splitlines()) == 1, err
    assert "FP8 Marlin" in err and "MoE experts" in err, err
    assert (out / "launch_vllm.sh").is_file() and not (out / "launch_sglang.sh").exists()
    assert main([str(path), "--out", str(out), "--executor", "serial"]) == 0
    printed = capsys.readouterr().out
    assert not (out / "launch_sglang.sh").exists()
    assert printed.rstrip().endswith("pareto.png, launch_vllm.sh)"), printed
    # the engine the DES ran is not judged again, and an engine that serves it gets its script
    from simulator.workflows.plan.launch import engine_refusal
    bf16 = {"cluster": {"model": "qwen3-30b-a3b", "hardware": "a100-80gb", "dtype": "bf16", "replicas": 1,
                        "parallelism": {"tp": 1, "pp": 1, "ep": 1}},
            "workload": plan["workload"], "drafter": {"kind": "none"}}
    assert engine_refusal(bf16, "vllm") is None and engine_refusal(bf16, "sglang") is None
    fp8 = {**bf16, "cluster": {**bf16["cluster"], "dtype": "fp8"}}
    assert engine_refusal(fp8, "vllm") is None and "sglang" in engine_refusal(fp8, "sglang")
