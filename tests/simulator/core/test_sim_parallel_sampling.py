"""Parallel sampling / beam search (`workload.parallel_samples` = n): one prefill, n decode rows per step,
the prompt's full KV blocks held once (simulator.core.replica). Checked against the closed forms of KV
blocks with and without sharing, tokens generated = n × output, and against n separate requests that
decode the same rows (identical decode step prices)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import simulator
from sim_helpers import assert_bulk_equals_step, merge, scenario, vllm_requested_bytes
from simulator.errors import ScenarioError
from paths import REPO, repo_env

P, O, B = 1000, 100, 16   # prompt (not a multiple of the block), output, block size


def _one_prompt(n: int, copies: int = 1) -> dict:
    """`copies` requests of P prompt and O output tokens at t = 0, each with n sequences."""
    return scenario(workload={"arrival": {"process": "closed_loop", "concurrency": copies, "qps": None},
                              "prompt_tokens": {"kind": "fixed", "value": P},
                              "output_tokens": {"kind": "fixed", "value": O},
                              "num_requests": copies, "parallel_samples": n},
                    scheduler={"kind": "vllm", "max_batch_size": 64, "block_size": B})


def _decode_steps(result):
    steps = result.steps
    return steps[steps["prefill_tokens"] == 0].reset_index(drop=True)


@pytest.mark.parametrize("n", [2, 4, 7])
def test_kv_blocks_rows_and_tokens_follow_the_closed_forms(n):
    result = simulator.run(_one_prompt(n))
    dec = _decode_steps(result)
    k = np.arange(O - 1)                 # decode step k: context P + k per sequence, room for one more token
    assert len(dec) == O - 1
    per_seq = -(-(P + k + 1) // B)       # blocks of one sequence alone
    shared = P // B                      # the prompt's full blocks, held once
    np.testing.assert_array_equal(dec["kv_blocks_used"], shared + n * (per_seq - shared))
    # without sharing the n sequences would hold n × per_seq: the saving is the (n − 1) copies of the prompt
    np.testing.assert_array_equal(n * per_seq - dec["kv_blocks_used"], (n - 1) * shared)
    np.testing.assert_array_equal(dec["decode_seqs"], n)
    np.testing.assert_array_equal(dec["decode_context_tokens"], n * (P + k))
    assert result.steps["emitted_tokens"].sum() == n * O          # tokens generated = n × output
    req = result.requests
    assert req["emitted_tokens"].tolist() == [O] and req["parallel_samples"].tolist() == [n]
    assert result.steps["prefill_tokens"].sum() == P               # the prompt is prefilled once
    window = result.summary["window_s"]
    assert result.summary["output_tokens_per_s"] == pytest.approx(n * O / window, rel=1e-12)


def test_n_sequences_decode_as_n_requests_but_prefill_and_hold_the_prompt_once():
    n = 4
    shared, separate = simulator.run(_one_prompt(n)), simulator.run(_one_prompt(1, copies=n))
    a, b = _decode_steps(shared), _decode_steps(separate)
    assert len(a) == len(b) == O - 1
    for column in ("decode_seqs", "decode_context_tokens", "emitted_tokens"):
        np.testing.assert_array_equal(a[column], b[column])
    for column in ("verify_s", "engine_s", "duration_s"):   # the same prices (duration: end − start, rounded)
        np.testing.assert_allclose(a[column], b[column], rtol=1e-12)
    np.testing.assert_array_equal(b["kv_blocks_used"] - a["kv_blocks_used"], (n - 1) * (P // B))
    prefill_a = shared.steps[shared.steps["prefill_tokens"] > 0]
    prefill_b = separate.steps[separate.steps["prefill_tokens"] > 0]
    assert prefill_a["prefill_tokens"].sum() * n == prefill_b["prefill_tokens"].sum()
    assert prefill_a["duration_s"].sum() < prefill_b["duration_s"].sum()
    assert "parallel_samples" not in separate.requests   # one sequence per request: columns as before


@pytest.mark.parametrize("sched", [{"kind": "vllm", "max_batch_size": 64},
                                   {"kind": "sarathi", "max_batch_size": 64, "chunk_tokens": 512},
                                   {"kind": "vllm_v1", "max_batch_size": 64, "max_batched_tokens": 1024}])
def test_a_poisson_run_under_kv_pressure_conserves_tokens_and_blocks(sched):
    # about 1.14 GB of KV whatever the scheduler (vLLM's start-up profile depends on its limits)
    from models import get_model
    from models.step import Parallelism
    from profiles.hardware import get_hardware
    hw, llama = get_hardware("h100-sxm"), get_model("llama-3-8b")
    profile = vllm_requested_bytes(hw, llama, Parallelism(), "bf16", 0.0, sched.get("max_batched_tokens", 8192), 64)
    util = round((1.14e9 + llama.weight_bytes("bf16") - profile) / hw.cuda_total_bytes, 4)
    data = scenario(workload={"parallel_samples": 3, "num_requests": 120, "arrival": {"qps": 20.0}},
                    cluster={"gpu_memory_utilization": util}, scheduler=sched)
    result = simulator.run(data)
    req, steps = result.requests, result.steps
    assert req["finish_s"].notna().all() and req["preemptions"].sum() > 0
    assert (req["emitted_tokens"] == req["output_tokens"]).all()
    assert steps["emitted_tokens"].sum() == 3 * req["output_tokens"].sum()
    assert (steps["kv_blocks_used"] <= steps["kv_blocks_total"]).all()
    assert (steps["decode_seqs"] % 3 == 0).all()   # every decoding request contributes its 3 rows
    assert_bulk_equals_step(data)


def test_max_batch_size_counts_sequences():
    data = scenario(workload={"parallel_samples": 3, "num_requests": 60, "arrival": {"qps": 50.0}},
                    scheduler={"kind": "vllm", "max_batch_size": 8})
    steps = simulator.run(data).steps
    assert steps["decode_seqs"].max() == 6   # two requests of 3 sequences; a third would make 9 > 8
    with pytest.raises(ScenarioError, match="workload.parallel_samples.*max_batch_size"):
        simulator.run(merge(data, {"workload": {"parallel_samples": 9}}))


def test_one_sequence_is_the_default_and_bad_combinations_are_refused():
    base = _one_prompt(1)
    assert simulator.run(merge(base, {"workload": {"parallel_samples": 1}})).requests.equals(
        simulator.run(base).requests)
    with pytest.raises(ScenarioError, match="parallel_samples"):
        simulator.run(merge(_one_prompt(0), {}))
    drafted = merge(_one_prompt(2), {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 3}})
    with pytest.raises(ScenarioError, match="workload.parallel_samples.*drafter"):
        simulator.run(drafted)
    cached = merge(_one_prompt(2), {"cluster": {"kv_cache": {"prefix_caching": True}}})
    with pytest.raises(ScenarioError, match="prefix_caching"):
        simulator.run(cached)


def test_cli_refuses_a_drafter_in_one_line_with_exit_2(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "simulator.cli", "run", "scenarios/speculation/colocated_draft.yaml",
                           "--out", str(out), "--set", "workload.parallel_samples=2", "--quiet"],
                          cwd=REPO, env=repo_env(), capture_output=True, text=True)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "workload.parallel_samples" in proc.stderr
    assert not out.exists()


def test_plan_refuses_several_sequences_per_request(tmp_path, capsys):
    import yaml

    from test_plan_cli import PLAN
    from simulator.workflows.plan.main import main
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({**PLAN, "workload": {**PLAN["workload"], "parallel_samples": 2}}))
    assert main([str(plan), "--out", str(tmp_path / "o"), "--executor", "serial"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "plan.workload.parallel_samples" in err, err
    assert not (tmp_path / "o").exists()
