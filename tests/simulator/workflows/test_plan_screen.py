"""The analytical screen of `draftsim plan`: its pieces against theory and the step-cost model, its
queueing fixed point, and its error against the DES on candidates across load."""
from __future__ import annotations


import numpy as np
import pytest

from simulator.api import run
from simulator.workflows.plan.main import pareto_front
from simulator.workflows.plan.screen import Colocated, Workload, replica_kind, tokens_per_step
from simulator.workflows.plan.config import Candidate, PlanConfig

SPEC = PlanConfig.model_validate({
    "name": "t", "seed": 4, "models": ["llama-3-8b"], "hardware": [{"id": "h100-sxm", "usd_per_gpu_hour": 2.0}],
    "workload": {"arrival": {"process": "poisson", "qps": 10.0}, "prompt_tokens": {"kind": "fixed", "value": 512},
                 "output_tokens": {"kind": "fixed", "value": 200}, "num_requests": 600},
    "acceptance": {"kind": "constant", "alpha": 0.75}, "slo": {"ttft_s": 0.5, "tpot_s": 0.05},
    "scheduler": {"kind": "vllm", "max_batch_size": 256}, "search": {"replicas": [1]}})


def cand(gamma: int = 0, replicas: int = 1, tp: int = 1) -> Candidate:
    return Candidate("llama-3-8b", "h100-sxm", 2.0, tp, 1, replicas, "llama-68m" if gamma else "none", gamma, 1,
                     "colocated")


def test_tokens_per_step_is_leviathans_formula():
    from theory.chain import expected_tokens, expected_tokens_positional

    assert tokens_per_step({"kind": "constant", "alpha": 0.6}, 4) == pytest.approx(expected_tokens(0.6, 4))
    assert tokens_per_step({"kind": "constant", "alpha": 0.6}, 0) == 1.0
    assert tokens_per_step({"kind": "positional", "alphas": [0.9, 0.5]}, 3) == pytest.approx(
        expected_tokens_positional([0.9, 0.5, 0.5]))


def test_low_load_reduces_to_one_request_alone():
    """At vanishing load the batch is ~0-1 and TPOT is one decode step of one request over E tokens."""
    work = Workload(qps=1e-4, mean_prompt_tokens=512, mean_output_tokens=200)
    est = Colocated().screen(cand(gamma=3), SPEC, work)
    cost = replica_kind(cand(gamma=3), SPEC).cost
    d, t = cost.decode_steps(1, np.array([612]))
    one_step = d[0, 0] + t[0, 0]
    assert est.feasible and est.batch < 0.05
    assert est.tpot_s == pytest.approx(one_step / tokens_per_step(SPEC.acceptance, 3), rel=1e-3)
    prefill = cost.step(512, 1, 512 * 513 // 2, 0, 0)
    # a decode step is in progress at an arrival with probability <= B (~0 here): TTFT is the prefill alone
    # (the screen added half a decode step at every load: prefill + one_step / 2)
    assert est.ttft_s == pytest.approx(prefill.seconds, rel=0.01)


@pytest.mark.parametrize("gamma", [0, 3])
def test_low_load_ttft_is_the_des(gamma):
    """At 0.05 and 0.5 QPS (mean batch 0.04 - 0.6) the screen's mean TTFT is within 5 % of the DES's (it was
    20 - 35 % above: half a decode step counted as always in progress)."""
    for qps in (0.05, 0.5):
        spec = PlanConfig.model_validate({**SPEC.model_dump(), "workload": {
            **SPEC.workload, "num_requests": 300, "arrival": {"process": "poisson", "qps": qps}}})
        est = Colocated().screen(cand(gamma), spec, Workload(qps, 512, 200))
        des = run(Colocated().scenario(cand(gamma), spec, spec.seed)).summary
        assert est.batch < 1.0 and abs(est.ttft_s / des["ttft_mean_s"] - 1) < 0.05, (qps, est.ttft_s, des["ttft_mean_s"])


def test_batch_solves_littles_law():
    work = Workload(qps=25.0, mean_prompt_tokens=512, mean_output_tokens=200)
    est = Colocated().screen(cand(), SPEC, work)
    assert est.feasible
    # B = λ · (decode steps per request) · (wall time per decode step)
    wall_per_step = est.tpot_s * est.tokens_per_step
    assert est.batch == pytest.approx(25.0 * 199 / est.tokens_per_step * wall_per_step, rel=1e-6)


def test_overload_and_memory_are_infeasible():
    heavy = Workload(qps=400.0, mean_prompt_tokens=512, mean_output_tokens=200)
    assert not Colocated().screen(cand(), SPEC, heavy).feasible
    big = PlanConfig.model_validate({**SPEC.model_dump(), "models": ["llama-3-70b"]})
    est = Colocated().screen(Candidate("llama-3-70b", "h100-sxm", 2.0, 1, 1, 1, "none", 0, 1, "colocated"), big,
                             Workload(1.0, 512, 200))
    assert not est.feasible and "GiB" in est.reason


@pytest.mark.parametrize("qps, gamma", [(4.0, 0), (4.0, 3), (16.0, 0), (16.0, 3)])
def test_screen_is_close_to_the_des(qps, gamma):
    """Mean TPOT within 30 % and mean TTFT within 40 % of the DES on uncongested candidates."""
    spec = PlanConfig.model_validate({**SPEC.model_dump(), "workload": {**SPEC.workload, "arrival":
                                                                      {"process": "poisson", "qps": qps}}})
    c = cand(gamma)
    est = Colocated().screen(c, spec, Workload(qps, 512, 200))
    des = run(Colocated().scenario(c, spec, spec.seed)).summary
    assert abs(est.tpot_s / des["tpot_mean_s"] - 1) < 0.30, (est.tpot_s, des["tpot_mean_s"])
    assert abs(est.ttft_s / des["ttft_mean_s"] - 1) < 0.40, (est.ttft_s, des["ttft_mean_s"])
    assert abs(est.e2e_s / des["e2e_mean_s"] - 1) < 0.30, (est.e2e_s, des["e2e_mean_s"])


def test_an_e2e_slo_is_screened():
    """A plan whose only SLO is e2e_s: every runnable candidate's slack was 0 (the screen read ttft_s and
    tpot_s only), so the cheapest were confirmed whatever their latency. The slack is now the screen's mean
    E2E (TTFT + (L - 1) TPOT) over the limit, and the limit no candidate reaches is named."""
    from pathlib import Path

    from simulator.workflows.plan.main import SCREEN_SLACK, infeasible_reasons, screen_all

    spec = PlanConfig.model_validate({**SPEC.model_dump(), "slo": {"e2e_s": 2.0},
                                      "search": {"replicas": [1, 2], "drafters": [{"kind": "none"}]}})
    screened = screen_all(spec, Path.cwd())
    ok = screened[screened.screen_feasible]
    assert len(ok) >= 2
    np.testing.assert_allclose(ok.screen_e2e_s, ok.screen_ttft_s + 199 * ok.screen_tpot_s, rtol=1e-12)
    np.testing.assert_allclose(ok.screen_slack, ok.screen_e2e_s / 2.0, rtol=1e-12)
    assert (ok.screen_slack > 0.5).all()   # ~200 tokens at >= 6 ms each: over half of the 2 s
    tight = PlanConfig.model_validate({**spec.model_dump(), "slo": {"e2e_s": 0.1}})
    lines = infeasible_reasons(screen_all(tight, Path.cwd()), tight.slo)
    assert any(line.startswith("slo.e2e_s: the best of") for line in lines), lines
    assert not (screen_all(tight, Path.cwd()).screen_slack <= SCREEN_SLACK).any()


@pytest.mark.parametrize("clients, gamma", [(4, 0), (4, 3), (32, 0), (32, 3), (300, 3)])
def test_closed_loop_is_screened_at_the_rate_littles_law_gives(clients, gamma):
    """A closed-loop workload has no arrival times before the run: the screen took 1 request/s whatever the
    concurrency (output 200 tok/s against the DES's 3,147 at 32 clients, TPOT 68 % low at 300). It now
    solves λ · E2E(λ) = N; at 300 clients a batch of 256 saturates and the rest wait for admission."""
    from pathlib import Path

    from simulator.workflows.plan.screen import screen, workload_means

    spec = PlanConfig.model_validate({**SPEC.model_dump(), "workload": {
        **SPEC.workload, "num_requests": 400, "arrival": {"process": "closed_loop", "concurrency": clients}}})
    work = workload_means(spec, Path.cwd(), spec.seed)
    assert work.concurrency == clients
    c = cand(gamma)
    est = screen(c, spec, work)
    rate = est.output_tokens_per_s / 200.0
    assert est.feasible and rate * est.e2e_s == pytest.approx(clients, rel=1e-3)   # Little's law, by construction
    des = run(Colocated().scenario(c, spec, spec.seed)).summary
    assert abs(est.output_tokens_per_s / des["output_tokens_per_s"] - 1) < 0.10, (est, des["output_tokens_per_s"])
    assert abs(est.e2e_s / des["e2e_mean_s"] - 1) < 0.30, (est.e2e_s, des["e2e_mean_s"])
    if clients < 256:   # (saturated: the open-loop TPOT at the edge of the batch is 45-60 % high)
        assert abs(est.tpot_s / des["tpot_mean_s"] - 1) < 0.30, (est.tpot_s, des["tpot_mean_s"])


def test_one_token_outputs_have_no_tpot_to_screen():
    """Every request emits one token: the DES has no TPOT (NaN, an SLO it cannot miss), but the screen
    estimated one and a plan with tpot_s 2 ms found no candidate ('estimated at 3.5 ms'). Its TPOT is NaN
    now, leaves the slack alone, and E2E is the TTFT."""
    from pathlib import Path

    from simulator.workflows.plan.main import SCREEN_SLACK, screen_all

    spec = PlanConfig.model_validate({**SPEC.model_dump(), "slo": {"ttft_s": 0.5, "tpot_s": 0.0001},
                                      "workload": {**SPEC.workload, "output_tokens": {"kind": "fixed", "value": 1}}})
    screened = screen_all(spec, Path.cwd())
    ok = screened[screened.screen_feasible]
    assert len(ok) and ok.screen_tpot_s.isna().all() and (ok.screen_e2e_s == ok.screen_ttft_s).all()
    np.testing.assert_allclose(ok.screen_slack, ok.screen_ttft_s / 0.5, rtol=1e-12)
    assert (ok.screen_slack <= SCREEN_SLACK).all()   # (each was ~60x over the 0.1 ms TPOT: refused)
    des = run(Colocated().scenario(cand(), spec, spec.seed)).summary
    assert des["slo_attainment"] == 1.0   # the DES agrees: a 0.1 ms TPOT SLO met by every request


def test_closed_loop_on_a_disaggregated_deployment():
    """The same root for 1 prefill + 1 decode replica at 16 clients: throughput and E2E within 20 % of the
    DES (its TTFT is not: equal-length clients come back together, a burst the screen's wait ignores)."""
    from pathlib import Path

    from simulator.workflows.plan.screen import Disaggregated, screen, workload_means

    spec = PlanConfig.model_validate({**SPEC.model_dump(), "workload": {
        **SPEC.workload, "num_requests": 300, "arrival": {"process": "closed_loop", "concurrency": 16}}})
    c = disagg_cand(1, 2)
    est = screen(c, spec, workload_means(spec, Path.cwd(), spec.seed))
    assert est.output_tokens_per_s / 200.0 * est.e2e_s == pytest.approx(16, rel=1e-3)
    des = run(Disaggregated().scenario(c, spec, spec.seed)).summary
    assert abs(est.output_tokens_per_s / des["output_tokens_per_s"] - 1) < 0.20, (est, des["output_tokens_per_s"])
    assert abs(est.e2e_s / des["e2e_mean_s"] - 1) < 0.20, (est.e2e_s, des["e2e_mean_s"])


def test_pareto_front_matches_brute_force():
    rng = np.random.default_rng(3)
    cost, lat = rng.integers(1, 20, 60).astype(float).tolist(), rng.random(60).tolist()
    front = set(pareto_front(cost, lat))
    for i in range(60):
        dominated = any((cost[j] <= cost[i] and lat[j] < lat[i]) or (cost[j] < cost[i] and lat[j] <= lat[i])
                        for j in range(60))
        assert (i in front) == (not dominated), i


def disagg_cand(prefill: int, replicas: int, gamma: int = 0) -> Candidate:
    return Candidate("llama-3-8b", "h100-sxm", 2.0, 1, 1, replicas, "llama-68m" if gamma else "none", gamma, 1,
                     "disaggregated", prefill)


def test_disaggregated_candidates_cover_every_split():
    from simulator.workflows.plan.screen import DEPLOYMENTS
    from simulator.workflows.plan.config import enumerate_candidates

    spec = PlanConfig.model_validate({**SPEC.model_dump(), "search": {"replicas": [1, 3],
                                                                    "deployments": ["colocated", "disaggregated"]}})
    found = enumerate_candidates(spec, tuple(DEPLOYMENTS))
    splits = sorted((c.replicas, c.prefill_replicas) for c in found if c.deployment == "disaggregated")
    assert splits == [(3, 1), (3, 2)]                      # one replica cannot be split
    assert sorted(c.replicas for c in found if c.deployment == "colocated") == [1, 3]
    assert all(c.gpus == c.replicas for c in found)


def test_disaggregated_screen_at_low_load_is_prefill_then_lone_decode_plus_kv_transfer():
    from models import get_model
    from models.step import Parallelism
    from profiles.hardware import get_hardware
    from simulator.workflows.plan.screen import Disaggregated

    work = Workload(qps=1e-4, mean_prompt_tokens=512, mean_output_tokens=200)
    est = Disaggregated().screen(disagg_cand(1, 2, gamma=3), SPEC, work)
    cost = replica_kind(cand(gamma=3), SPEC).cost
    d, t = cost.decode_steps(1, np.array([612]))
    hw = get_hardware("h100-sxm")
    t_kv = (512 * get_model("llama-3-8b").kv_bytes_per_token_per_gpu(Parallelism(1, 1), "bf16")
            / hw.scaleup_bandwidth_bytes_per_s + hw.scaleup_latency_s)
    assert est.feasible and est.batch < 0.05
    assert est.tpot_s == pytest.approx((d[0, 0] + t[0, 0]) / tokens_per_step(SPEC.acceptance, 3) + t_kv / 199,
                                       rel=1e-3)
    prefill = cost.step(512, 1, 512 * 513 // 2, 0, 0)
    assert est.ttft_s == pytest.approx(prefill.seconds, rel=1e-3)   # no decode step to wait for
    # too few prefill replicas for the rate is infeasible, more of them fixes it
    heavy = Workload(qps=100.0, mean_prompt_tokens=512, mean_output_tokens=200)
    starved = Disaggregated().screen(disagg_cand(1, 6), SPEC, heavy)
    assert not starved.feasible and "prefill" in starved.reason
    assert Disaggregated().screen(disagg_cand(3, 6), SPEC, heavy).feasible


@pytest.mark.parametrize("qps", [4.0, 16.0])
def test_disaggregated_screen_is_close_to_the_des(qps):
    """Mean TPOT and TTFT within 30 % / 40 % of the DES run of the same 1 prefill + 1 decode layout."""
    from simulator.workflows.plan.screen import Disaggregated

    spec = PlanConfig.model_validate({**SPEC.model_dump(), "workload": {**SPEC.workload, "arrival":
                                                                      {"process": "poisson", "qps": qps}}})
    c = disagg_cand(1, 2)
    scenario = Disaggregated().scenario(c, spec, spec.seed)
    assert scenario["cluster"]["disaggregation"]["prefill"]["replicas"] == 1
    est = Disaggregated().screen(c, spec, Workload(qps, 512, 200))
    des = run(scenario).summary
    assert des["gpus"] == 2
    assert abs(est.tpot_s / des["tpot_mean_s"] - 1) < 0.30, (est.tpot_s, des["tpot_mean_s"])
    assert abs(est.ttft_s / des["ttft_mean_s"] - 1) < 0.40, (est.ttft_s, des["ttft_mean_s"])
    assert abs(est.e2e_s / des["e2e_mean_s"] - 1) < 0.30, (est.e2e_s, des["e2e_mean_s"])


def test_expert_parallel_candidates_count_ep_gpus_and_screen_close_to_the_des():
    from simulator.workflows.plan.screen import DEPLOYMENTS
    from simulator.workflows.plan.config import enumerate_candidates

    spec = PlanConfig.model_validate({
        **SPEC.model_dump(), "models": ["qwen3-30b-a3b"], "moe": {"routing": "zipf", "zipf_exponent": 0.8},
        "workload": {**SPEC.workload, "arrival": {"process": "poisson", "qps": 8.0}, "num_requests": 200},
        "search": {"tp": [1], "ep": [1, 8], "max_gpus": 8}})
    found = enumerate_candidates(spec, tuple(DEPLOYMENTS))
    assert sorted({(c.ep, c.gpus_per_replica) for c in found}) == [(1, 1), (8, 8)]
    assert max(c.gpus for c in found) == 8 and [c.replicas for c in found if c.ep == 8] == [1]
    c = next(c for c in found if c.ep == 8)
    scenario = Colocated().scenario(c, spec, spec.seed)
    assert scenario["cluster"]["parallelism"]["ep"] == 8 and scenario["cluster"]["moe"]["routing"] == "zipf"
    est = Colocated().screen(c, spec, Workload(8.0, 512, 200))
    des = run(scenario).summary
    assert des["alltoall_time_fraction"] > 0
    assert abs(est.tpot_s / des["tpot_mean_s"] - 1) < 0.30, (est.tpot_s, des["tpot_mean_s"])
    assert abs(est.ttft_s / des["ttft_mean_s"] - 1) < 0.40, (est.ttft_s, des["ttft_mean_s"])
    dense = Candidate("llama-3-8b", "h100-sxm", 2.0, 1, 1, 1, "none", 0, 1, "colocated", 0, 8)
    assert not Colocated().screen(dense, SPEC, Workload(8.0, 512, 200)).feasible   # ep on a dense model


def test_tree_drafters_are_screened_with_the_des_construction_and_close_to_the_des():
    from simulator.workflows.plan.screen import DEPLOYMENTS
    from simulator.workflows.plan.config import enumerate_candidates
    from theory.tree_search import optimal_tree

    probs = [0.6, 0.15, 0.05]
    spec = PlanConfig.model_validate({
        **SPEC.model_dump(), "acceptance": {"kind": "ranked", "accept_probs": probs},
        "workload": {**SPEC.workload, "arrival": {"process": "poisson", "qps": 4.0}, "num_requests": 300},
        "search": {"replicas": [1], "deployments": ["colocated", "disaggregated"], "drafters": [
            {"kind": "draft_model", "model": "llama-68m", "gamma": 4,
             "speculation": {"kind": "tree", "builder": "sequoia", "budget": 16}}]}})
    found = enumerate_candidates(spec, tuple(DEPLOYMENTS))
    assert len(found) == 1 and '"sequoia"' in found[0].speculation   # one replica: no disaggregated split
    c = found[0]
    est = Colocated().screen(c, spec, Workload(4.0, 512, 200))
    assert est.feasible
    # tokens per step: the optimal 16-node tree's expected tokens (Sequoia's DP)
    assert est.tokens_per_step == pytest.approx(optimal_tree(probs, 16, 4).expected_tokens, rel=1e-6)
    des = run(Colocated().scenario(c, spec, spec.seed)).summary
    assert des["tokens_per_step"] == pytest.approx(est.tokens_per_step, rel=0.05)
    assert abs(est.tpot_s / des["tpot_mean_s"] - 1) < 0.30, (est.tpot_s, des["tpot_mean_s"])
    split = Candidate(**{**c.__dict__, "deployment": "disaggregated", "replicas": 2, "prefill_replicas": 1})
    # disaggregated pools run trees too: the split is screened with the same replica kind
    pooled = DEPLOYMENTS["disaggregated"].screen(split, spec, Workload(4.0, 512, 200))
    assert pooled.feasible and pooled.tokens_per_step == est.tokens_per_step


def test_the_screen_counts_a_sliding_window_models_batch_by_its_blocks():
    """gpt-oss under vLLM (hybrid KV manager: window groups hold the window, not the context): the screen's
    largest batch is the pool's blocks over one decoding request's blocks, about twice the KV tokens over the
    context at 8K context (18 full + 18 window layers). Before, kv_tokens / context halved it."""
    from pathlib import Path
    from simulator.cluster.build import Streams, pool_kind
    from simulator.config.scenario import parse_scenario
    from simulator.workflows.plan.screen import requests_that_fit
    data = {"name": "w", "seed": 0, "outputs": {"plots": False},
            "workload": {"arrival": {"process": "poisson", "qps": 1.0}, "num_requests": 1,
                         "prompt_tokens": {"kind": "fixed", "value": 16}, "output_tokens": {"kind": "fixed", "value": 4}},
            "cluster": {"hardware": "h100-sxm", "model": "gpt-oss-120b", "dtype": "mxfp4", "max_model_len": 16384,
                        "engine": {"version": "0.32.0"}}}
    kind = pool_kind(parse_scenario(data), None, "cluster", Streams.from_seed(0).acceptance_seed, Path.cwd())
    lay = kind.window_layout
    assert lay is not None
    fit = requests_that_fit(kind, 8192)
    assert fit == lay.total_blocks / (lay.full_groups * 512 + lay.window_groups * min(512, lay.window_cap(1)))
    assert 1.8 < fit / (kind.kv_tokens / 8192) < 2.05


def test_the_screen_reads_the_requests_the_confirmations_run():
    """The screen's mean lengths and rate are those of the requests a DES confirmation runs (its scenario's
    seed): before, the screen drew its own sample (default_rng(seed)), other requests than the runs it screens
    candidates for (here mean prompts of 856 tokens against the runs' 805)."""
    from pathlib import Path

    from simulator.workflows.plan.screen import workload_means

    spec = PlanConfig.model_validate({**SPEC.model_dump(), "workload": {
        **SPEC.workload, "num_requests": 300, "prompt_tokens": {"kind": "lognormal", "median": 600, "sigma": 0.8}}})
    work = workload_means(spec, Path.cwd(), spec.seed)
    requests = run(Colocated().scenario(cand(0), spec, spec.seed)).requests
    assert work.mean_prompt_tokens == pytest.approx(requests.prompt_tokens.mean(), rel=1e-12)
    assert work.mean_output_tokens == pytest.approx(requests.output_tokens.mean(), rel=1e-12)
    span = requests.arrival_s.max() - requests.arrival_s.min()
    assert work.qps == pytest.approx((len(requests) - 1) / span, rel=1e-12)


def test_the_screen_sizes_the_kv_cache_its_engine_release_runs():
    """A plan of fp8 weights without kv_dtype: its candidates' replicas (the DES's own factory) keep vLLM's bf16
    default (half the KV tokens of an fp8 cache); the plan's kv_dtype, when given, wins."""
    fp8 = SPEC.model_copy(update={"dtype": "fp8"})
    kind = replica_kind(cand(), fp8)
    pinned = replica_kind(cand(), fp8.model_copy(update={"kv_dtype": "fp8"}))
    assert (kind.kv_dtype, pinned.kv_dtype) == ("bf16", "fp8")
    assert kind.kv_tokens == pinned.kv_tokens // 2
    trt = replica_kind(cand(), fp8.model_copy(update={"engine": {"framework": "trtllm"}}))
    assert trt.kv_dtype == "fp8"
