"""One engine of pools: disaggregated pools run every drafter family, speculation shape, control policy and
expert parallelism, on different hardware per pool (scenarios/disagg/eagle_tree_ep_h100_h200.yaml):
conservation, bulk ≡ step, determinism by seed, per-pool GPU counts and pricing, and closed loops."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.results.outputs import summary_json
from paths import REPO

SCENARIO = REPO / "scenarios" / "disagg" / "eagle_tree_ep_h100_h200.yaml"
SMALL = ["workload.num_requests=120"]


@pytest.fixture(scope="module")
def bulk():
    return simulator.run(SCENARIO, SMALL, step_mode="bulk")


def test_requests_and_tokens_are_conserved_across_the_pools(bulk):
    req, steps, s = bulk.requests, bulk.steps, bulk.summary
    assert s["requests_finished"] == s["requests_arrived"] == 120 and not req.dropped.any()
    assert (req.emitted_tokens == req.output_tokens).all()
    assert steps.emitted_tokens.sum() == req.output_tokens.sum()
    prefill = steps.replica < s["prefill_replicas"]
    assert (steps[prefill].decode_seqs == 0).all() and (steps[~prefill].prefill_tokens == 0).all()
    assert steps[prefill].prefill_tokens.sum() == req.prompt_tokens.sum()
    assert (req.decode_replica >= s["prefill_replicas"]).all() and s["kv_transfers"] == 120
    # every request's first token comes from its prefill, its others from the decode pool after its KV
    assert (req.kv_ready_s >= req.first_token_s).all() and (req.decode_start_s >= req.kv_ready_s).all()
    assert steps[~prefill].emitted_tokens.sum() == (req.output_tokens - 1).sum()


def test_the_decode_pool_verifies_the_eagle_tree_with_expert_parallelism(bulk):
    steps, s = bulk.steps, bulk.summary
    decode = steps[steps.replica >= s["prefill_replicas"]]
    assert (decode.query_tokens_per_seq == 24).all()          # the dynamic tree's 24 nodes
    assert decode.accepted_tokens.sum() > 0 and s["mean_accepted_length"] > 1.5
    assert (steps.alltoall_s > 0).all()                         # both pools are expert parallel
    # the EAGLE head's one-layer KV travels with the target's
    req = bulk.requests
    target_only = bulk.built.pools[1].kind.target.kv_bytes_per_token_per_gpu(
        bulk.built.pools[1].kind.parallelism, "bf16")
    assert (req.kv_bytes > req.prompt_tokens * target_only).all()


def test_pools_have_their_own_hardware_gpus_and_prices(bulk):
    s, pools = bulk.summary, bulk.built.pools
    assert (s["prefill_replicas"], s["prefill_gpus_per_replica"], s["decode_replicas"],
            s["decode_gpus_per_replica"]) == (2, 4, 1, 8)
    assert s["gpus"] == 2 * 4 + 8 and s["goodput_per_gpu_rps"] == pytest.approx(s["goodput_rps"] / 16)
    assert (s["prefill_hardware"], s["decode_hardware"]) == ("h100-sxm", "h200")
    assert pools[0].kind.hardware.id == "h100-sxm" and pools[1].kind.hardware.id == "h200"
    assert pools[0].kind.latency is not pools[1].kind.latency
    assert s["prefill_latency_source"]["system"] != s["decode_latency_source"]["system"]
    # the same decode step is cheaper on the H200's bandwidth than on the H100's
    step = (0, 0, 0, 16, 16 * 2000)
    h100 = simulator.run(SCENARIO, SMALL + ["cluster.disaggregation.decode.hardware=h100-sxm"]).built.pools[1]
    seconds = lambda kind: kind.cost.step(*step).seconds  # noqa: E731
    assert seconds(pools[1].kind) < seconds(h100.kind)


def test_bulk_and_step_modes_are_byte_identical(bulk):
    step = simulator.run(SCENARIO, SMALL, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    # (the latency sources' op counts say how many distinct shapes were priced, which differs by mode)
    strip = lambda summary: {k: v for k, v in summary.items() if not k.endswith("latency_source")}  # noqa: E731
    assert summary_json(strip(bulk.summary)) == summary_json(strip(step.summary))


def test_same_seed_same_outputs_other_seed_other_outputs(bulk):
    again = simulator.run(SCENARIO, SMALL)
    pd.testing.assert_frame_equal(bulk.requests, again.requests)
    assert summary_json(bulk.summary) == summary_json(again.summary)
    other = simulator.run(SCENARIO, SMALL + ["seed=14"])
    assert not bulk.requests.arrival_s.equals(other.requests.arrival_s)


SMALL_DISAGG = {"cluster.model": "llama-2-7b", "cluster.hardware": "a100-80gb", "cluster.moe": "{}",
                "cluster.disaggregation.prefill.parallelism.ep": 1, "cluster.disaggregation.decode.parallelism.ep": 1,
                "cluster.disaggregation.decode.hardware": "a100-80gb", "workload.num_requests": 60,
                "workload.arrival.qps": 6, "workload.context_overflow": "truncate", "cluster.engine.version": "0.15.0"}  # llama-2-7b: 4k context


@pytest.mark.parametrize("extra", [
    {"drafter": "{kind: ngram, gamma: 3}", "speculation": "{kind: chain}",
     "acceptance": "{kind: constant, alpha: 0.6}"},
    # alpha 0.8: at 0.6 SmartSpec's choice to speculate with a half-model layer-skip drafter is a knife edge
    # (gamma 1 costs 12.0 ms per token against 11.8 ms without), which the engine's CUDA-graph padding tips
    {"drafter": "{kind: layer_skip, gamma: 3, layers_fraction: 0.5}", "speculation": "{kind: chain}",
     "acceptance": "{kind: constant, alpha: 0.8}", "policy": "{kind: smartspec, max_gamma: 4}"},
    {"drafter": "{kind: draft_model, model: llama-68m, gamma: 3, placement: separate}",
     "speculation": "{kind: multidraft, n: 2}", "acceptance": "{kind: ranked, accept_probs: [0.6, 0.2]}"},
    {"drafter": "{kind: head, style: parallel, gamma: 3}",
     "speculation": "{kind: tree, builder: medusa, depth: 3, budget: 10}", "policy": "{kind: load_switch, max_batch: 4}",
     # no release drafts a Medusa tree (profiles.engine_time.tree_shapes): draftsim's own shape, no release named
     "cluster.engine.version": "null"},
    {"drafter": "{kind: draft_model, model: llama-68m, gamma: 4}", "speculation": "{kind: chain}",
     "acceptance": "{kind: constant, alpha: 0.7}", "policy": "{kind: specdecpp, threshold: 0.6}",
     "scheduler.kind": "sarathi"},
])
def test_every_drafter_shape_and_policy_runs_in_the_decode_pool(extra):
    overrides = [f"{k}={v}" for k, v in {**SMALL_DISAGG, **extra}.items()]
    bulk = simulator.run(SCENARIO, overrides, step_mode="bulk")
    step = simulator.run(SCENARIO, overrides, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    req = bulk.requests
    assert req.finish_s.notna().all() and (req.emitted_tokens == req.output_tokens).all()
    decode = bulk.steps[bulk.steps.replica >= bulk.summary["prefill_replicas"]]
    assert decode.accepted_tokens.sum() > 0


def test_closed_loop_runs_on_the_pools():
    overrides = SMALL + ["workload.arrival.process=closed_loop", "workload.arrival.concurrency=6",
                         "workload.arrival.qps=null"]
    bulk = simulator.run(SCENARIO, overrides, step_mode="bulk")
    step = simulator.run(SCENARIO, overrides, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    req = bulk.requests
    completions = np.sort(req.finish_s.to_numpy())
    np.testing.assert_array_equal(req.arrival_s.to_numpy()[6:], completions[: len(req) - 6])


def test_trtllm_prefill_pool_reserves_only_the_prompt():
    """A prefill replica holds a request's KV only for its prompt (simulator.cluster.pool_replicas), so
    TensorRT-LLM's GUARANTEED_NO_EVICT check there counts the prompt's blocks, not prompt + output. Before,
    a prompt of 600 tokens with 3,000 output tokens (3,601 > the 3,376 tokens an L40S prefill replica
    holds next to Llama-2-13B at gpu_memory_utilization 0.6) fitted the pool's has_work rule but never
    the scheduler's: the replica planned empty steps forever at one clock (the run never ended)."""
    import signal

    import simulator
    data = {"name": "trt", "seed": 1, "outputs": {"plots": False},
            "workload": {"arrival": {"process": "poisson", "qps": 2.0}, "num_requests": 3,
                         "prompt_tokens": {"kind": "fixed", "value": 600},
                         "output_tokens": {"kind": "fixed", "value": 3000}},
            "cluster": {"hardware": "l40s", "model": "llama-2-13b", "gpu_memory_utilization": 0.1,
                        # (TensorRT-LLM keeps this fraction of what the weights leave: fewer KV tokens than one
                        # request's 3,600-token life; vLLM would refuse this pool: < one 4,096-token request)
                        "engine": {"framework": "trtllm"},
                        "disaggregation": {"prefill": {"replicas": 1},
                                           "decode": {"replicas": 1, "hardware": "h100-sxm"},
                                           "kv_transfer": {"link": "scaleout"}}},
            "scheduler": {"kind": "trtllm", "max_batch_size": 8, "max_batched_tokens": 8192}}

    def hang(*_):
        raise TimeoutError("the run did not end")
    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    try:
        result = simulator.run(data)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert result.built.pools[0].replicas[0].kv.total_blocks * 16 < 3601
    req = result.requests
    assert req.finish_s.notna().all() and (req.emitted_tokens == 3000).all()
    assert (result.steps[result.steps.replica == 0].prefill_tokens.sum()) == 1800
