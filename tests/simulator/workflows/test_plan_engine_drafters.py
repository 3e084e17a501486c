"""`draftsim plan` choosing among the engines' drafters (EAGLE-3 heads, MTP modules) and their depths: candidates
carry their drafter section and own acceptance into the one replica factory, the screen ranks depths as the
step-cost model does, bad choices are one-line errors, and the launch scripts name the engines' methods."""
from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.workflows.plan.config import Candidate, PlanConfig, enumerate_candidates
from simulator.workflows.plan.launch import launch_script
from simulator.workflows.plan.screen import DEPLOYMENTS, Colocated, Workload, replica_kind, tokens_per_step

EAGLE_ACC = {"kind": "constant", "alpha": 0.7435}
PLAN = {
    "name": "t", "seed": 4, "models": ["llama-3.1-8b"], "hardware": [{"id": "h100-sxm", "usd_per_gpu_hour": 2.0}],
    "workload": {"arrival": {"process": "poisson", "qps": 10.0}, "prompt_tokens": {"kind": "fixed", "value": 512},
                 "output_tokens": {"kind": "fixed", "value": 200}, "num_requests": 400},
    "acceptance": {"kind": "constant", "alpha": 0.6}, "slo": {"ttft_s": 0.5, "tpot_s": 0.05},
    "scheduler": {"kind": "vllm", "max_batch_size": 256},
    "search": {"replicas": [1], "drafters": [{"kind": "none"},
                                              {"kind": "eagle3", "gamma": [1, 2, 3, 4, 5, 6], "acceptance": EAGLE_ACC},
                                              {"kind": "mtp", "gamma": [1, 2]}]}}


def _eagle(cands, gamma):
    return next(c for c in cands if c.drafter == "eagle3" and c.gamma == gamma)


def test_candidates_carry_the_drafter_section_and_its_own_acceptance():
    spec = PlanConfig.model_validate(PLAN)
    cands = enumerate_candidates(spec, tuple(DEPLOYMENTS))
    assert sorted((c.drafter, c.gamma) for c in cands) == sorted(
        [("none", 0)] + [("eagle3", g) for g in range(1, 7)] + [("mtp", 1), ("mtp", 2)])
    c = _eagle(cands, 3)
    sc = Colocated().scenario(c, spec, 0)
    assert sc["drafter"] == {"kind": "eagle3", "gamma": 3} and sc["acceptance"] == EAGLE_ACC
    kind = replica_kind(c, spec)
    assert kind.cost.proposer is not None and kind.drafter.hidden_state is not None
    assert Colocated().scenario(next(c for c in cands if c.drafter == "none"), spec, 0)["acceptance"] == \
        PLAN["acceptance"]


def test_mtp_on_a_model_without_modules_is_screened_out_with_the_reason():
    spec = PlanConfig.model_validate(PLAN)
    c = next(c for c in enumerate_candidates(spec, tuple(DEPLOYMENTS)) if c.drafter == "mtp")
    est = Colocated().screen(c, spec, Workload(1.0, 512, 200))
    assert not est.feasible and "ships none" in est.reason


def test_the_screen_ranks_eagle3_depths_as_the_step_cost_model_does():
    """At vanishing load every depth's screened TPOT is one decode step alone over E[tokens]: the screen's best γ
    is the step-cost model's (draft passes + verify) / E maximiser."""
    spec = PlanConfig.model_validate(PLAN)
    cands = enumerate_candidates(spec, tuple(DEPLOYMENTS))
    work = Workload(1e-4, 512, 200)
    tpot, by_hand = {}, {}
    for g in range(1, 7):
        c = _eagle(cands, g)
        tpot[g] = Colocated().screen(c, spec, work).tpot_s
        d, t = replica_kind(c, spec).cost.decode_steps(1, np.array([612]))
        by_hand[g] = (d[0, 0] + t[0, 0]) / tokens_per_step(EAGLE_ACC, g)
    for g in tpot:
        assert tpot[g] == pytest.approx(by_hand[g], rel=1e-3)
    assert min(tpot, key=tpot.get) == min(by_hand, key=by_hand.get)
    assert len({round(v, 6) for v in tpot.values()}) == 6       # depth matters


def test_mtp_depths_are_planned_on_a_model_that_ships_them():
    spec = PlanConfig.model_validate({**PLAN, "models": ["deepseek-v3"], "hardware": [{"id": "h200",
                                                                                     "usd_per_gpu_hour": 3.0}],
                                      "dtype": "fp8_block", "search": {"replicas": [1], "ep": [8], "drafters": [
                                          {"kind": "mtp", "gamma": [1, 2, 3], "modules": 1,
                                           "acceptance": {"kind": "positional", "alphas": [0.875, 0.726, 0.603]}}]}})
    cands = enumerate_candidates(spec, tuple(DEPLOYMENTS))
    assert [c.drafter for c in cands] == ["mtp:1"] * 3
    assert Colocated().scenario(cands[0], spec, 0)["drafter"] == {"kind": "mtp", "modules": 1, "gamma": 1}
    ests = [Colocated().screen(c, spec, Workload(0.5, 512, 200)) for c in cands]
    assert all(e.feasible for e in ests)
    assert [round(e.tokens_per_step, 6) for e in ests] == [round(tokens_per_step(
        {"kind": "positional", "alphas": [0.875, 0.726, 0.603]}, g), 6) for g in (1, 2, 3)]


BAD = [
    ({"kind": "draft_model", "model": "llama-68m", "head": "llama-3.1-8b-eagle3"}, "head goes with a eagle3"),
    ({"kind": "eagle3", "model": "llama-68m"}, "model goes with a draft_model"),
    ({"kind": "mtp", "gamma": [0]}, "gamma must list"),
    ({"kind": "eagle3", "acceptance": {"kind": "trace", "trace": "x"}}, "plan acceptance must be"),
    ({"kind": "eagle3", "head": "llama-9-eagle3"}, "plan.search.drafters.0.head"),
]


@pytest.mark.parametrize("drafter, message", BAD, ids=[m for _, m in BAD])
def test_bad_drafter_choices_exit_2_with_one_line(tmp_path, capsys, drafter, message):
    plan = {**PLAN, "search": {"replicas": [1], "drafters": [drafter]}}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(plan))
    code = main(["plan", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err


def _scenario(drafter: dict, **extra) -> dict:
    return {"cluster": {"model": "llama-3.1-8b", "hardware": "h100-sxm", "parallelism": {"tp": 1}},
            "drafter": drafter, "scheduler": {}, **extra}


def test_launch_scripts_name_the_engines_methods():
    eagle = _scenario({"kind": "eagle3", "gamma": 3})
    vllm = launch_script(eagle, "vllm", "t")
    cfg = json.loads(vllm.split("--speculative-config ")[1].split("\n")[0].strip().strip("'"))
    assert cfg == {"method": "eagle3", "num_speculative_tokens": 3, "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
    sglang = launch_script(eagle, "sglang", "t")
    for flag in ("--speculative-algorithm EAGLE3", "--speculative-draft-model-path yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                 "--speculative-num-steps 3", "--speculative-eagle-topk 1", "--speculative-num-draft-tokens 4"):
        assert flag in sglang
    tree = _scenario({"kind": "eagle3", "gamma": 3},
                     speculation={"kind": "dynamic_tree", "top_k": 4, "depth": 5, "budget": 8})
    assert "--speculative-num-steps 5" in launch_script(tree, "sglang", "t") and \
        "--speculative-eagle-topk 4" in launch_script(tree, "sglang", "t")
    mtp = {**_scenario({"kind": "mtp", "gamma": 2}), "cluster": {"model": "deepseek-v3", "parallelism": {"ep": 8}}}
    assert '"method": "mtp", "num_speculative_tokens": 2' in launch_script(mtp, "vllm", "t")
    assert "--speculative-algorithm EAGLE " in launch_script(mtp, "sglang", "t").replace("\n", " ")
    no_repo = _scenario({"kind": "eagle3", "head": "qwen3-8b-eagle3", "gamma": 2})
    assert "HEAD_REPOSITORY" in launch_script(no_repo, "vllm", "t")


def test_candidate_fields_default_to_a_draft_model():
    """Older candidate rows (no drafter_block) still mean a draft model of that name."""
    c = Candidate("llama-3-8b", "h100-sxm", 2.0, 1, 1, 1, "llama-68m", 3, 1, "colocated")
    spec = PlanConfig.model_validate({**PLAN, "models": ["llama-3-8b"]})
    assert Colocated().scenario(c, spec, 0)["drafter"] == {"kind": "draft_model", "model": "llama-68m", "gamma": 3,
                                                          "tp": 1}


def test_a_plans_engine_block_reaches_every_candidate_and_lets_a100_draft_models_run():
    """vLLM 0.11-0.14 refuse a draft model and 0.14.0 is the A100 tables' release, so without an engine block
    an A100 draft-model candidate is screened out naming cluster.engine.version; the plan-level `engine`
    (as cluster.engine) names the release every candidate runs: with 0.15.0 it is priced. Before, a plan had
    no engine block, so no plan could keep such candidates."""
    plan = {**PLAN, "models": ["llama-3-8b"], "hardware": [{"id": "a100-80gb", "usd_per_gpu_hour": 1.6}],
            "search": {"replicas": [1], "drafters": [{"kind": "draft_model", "model": "llama-3.2-1b", "gamma": [3]}]}}
    work = Workload(1.0, 512, 200)
    refused = PlanConfig.model_validate(plan)
    c = enumerate_candidates(refused, ("colocated",))[0]
    est = Colocated().screen(c, refused, work)
    assert not est.feasible and est.reason.startswith(
        "cluster.engine.version (not given: vllm 0.14.0, the release of a100-80gb's measured tables"), est.reason
    spec = PlanConfig.model_validate({**plan, "engine": {"version": "0.15.0"}})
    c = enumerate_candidates(spec, ("colocated",))[0]
    assert Colocated().scenario(c, spec, 0)["cluster"]["engine"] == {"version": "0.15.0"}
    est = Colocated().screen(c, spec, work)
    assert est.feasible and est.tokens_per_step > 1, est.reason


def test_a_bad_plan_engine_block_is_one_line_naming_it(tmp_path, capsys):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({**PLAN, "engine": {"cuda_graph": "full"}}))
    assert main(["plan", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "plan.engine" in err and "cuda_graph" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("engine,says", [
    ({"framework": "sglang", "version": "0.5.6", "schedule_policy": "random"}, "'random' (sglang 0.5.6) is not modelled"),
    ({"framework": "sglang", "version": "0.4.2", "schedule_policy": "lof"}, "sglang 0.4.2 has no schedule policy 'lof'"),
    ({"schedule_policy": "lpm"}, "and vllm has none; allowed: leave it out, or plan.engine.framework: sglang"),
])
def test_a_schedule_policy_no_candidate_runs_is_refused_before_the_screen(tmp_path, capsys, engine, says):
    """Each candidate was screened out with the same reason, exit 1 and outputs written (session 24)."""
    from simulator.workflows.plan.config import load_plan
    plan = {**PLAN, "search": {"replicas": [1], "drafters": [{"kind": "none"}]}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({**plan, "engine": engine}))
    assert main(["plan", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "plan.engine.schedule_policy: " in err and says in err, err
    assert not (tmp_path / "out").exists()
    path.write_text(yaml.safe_dump({**plan, "engine": {"framework": "sglang", "version": "0.5.6",
                                                         "schedule_policy": "lof"}}))
    assert load_plan(path)[0].engine["schedule_policy"] == "lof"   # one the release runs: planned


def _vocab_plan(tmp_path, engine: dict | None, drafter: dict, models=("llama-3-8b",)):
    plan = {**PLAN, "models": list(models), "search": {"replicas": [1], "drafters": [{"kind": "none"}, drafter]}}
    if engine is not None:
        plan["engine"] = engine
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def test_a_plan_drafts_across_vocabularies_with_heterogeneous_vocab_as_a_run_does(tmp_path):
    """plan.search.drafters took no heterogeneous_vocab, so where plan.engine named vLLM >= 0.25.0 a draft model of
    another vocabulary (llama-68m for Llama-3-8B) was screened out with a reason that pointed at
    drafter.heterogeneous_vocab, a field the plan refused (session 24). The candidate now carries it into its
    scenario, is priced as the run of that scenario is, and its vLLM launch line sets use_heterogeneous_vocab."""
    from simulator.workflows.plan.config import load_plan
    drafter = {"kind": "draft_model", "model": "llama-68m", "gamma": [3], "heterogeneous_vocab": True}
    spec, _ = load_plan(_vocab_plan(tmp_path, {"version": "0.25.0"}, drafter))
    c = next(c for c in enumerate_candidates(spec, ("colocated",)) if c.gamma)
    sc = Colocated().scenario(c, spec, 0)
    assert sc["drafter"] == {"kind": "draft_model", "model": "llama-68m", "tp": 1, "gamma": 3,
                             "heterogeneous_vocab": True}
    est = Colocated().screen(c, spec, Workload(1.0, 512, 200))
    assert est.feasible and est.tokens_per_step > 1, est.reason
    cfg = json.loads(launch_script(sc, "vllm", "t").split("--speculative-config ")[1].split("\n")[0].strip().strip("'"))
    assert cfg["use_heterogeneous_vocab"] is True and cfg["model"] == "JackFram/llama-68m"
    plain = {**drafter, "heterogeneous_vocab": False}   # (the default: no drafter_block, as before)
    spec, _ = load_plan(_vocab_plan(tmp_path, None, plain))
    c = next(c for c in enumerate_candidates(spec, ("colocated",)) if c.gamma)
    assert c.drafter_block == "" and "heterogeneous_vocab" not in Colocated().scenario(c, spec, 0)["drafter"]


@pytest.mark.parametrize("engine, drafter, says", [
    ({"version": "0.24.0"}, {}, "plan.search.drafters.1.model: llama-68m has a 32,000-token vocabulary and llama-3-8b "
     "128,256: vllm 0.24.0 refuses such a draft model"),
    ({"version": "0.25.0"}, {}, "; or plan.search.drafters.1.heterogeneous_vocab: true (use_heterogeneous_vocab"),
    ({"version": "0.24.0"}, {"heterogeneous_vocab": True},
     "plan.search.drafters.1.heterogeneous_vocab: vllm 0.24.0 has no use_heterogeneous_vocab (from 0.25.0"),
    (None, {"heterogeneous_vocab": True}, "plan.search.drafters.1.heterogeneous_vocab: vllm 0.24.0 has no "
     "use_heterogeneous_vocab (from 0.25.0, PR #38174) (plan.engine names no version; the candidates run vllm 0.24.0 "
     "on h100-sxm)"),
    ({"framework": "sglang"}, {"heterogeneous_vocab": True}, "plan.search.drafters.1.heterogeneous_vocab: sglang "
     "has no heterogeneous-vocabulary drafting"),
])
def test_a_draft_model_no_candidates_release_serves_is_refused_before_the_screen(tmp_path, capsys, engine, drafter,
                                                                                   says):
    """Each candidate of the drafter was screened out with the same reason: exit 0 beside other drafters, the
    plan's table silent about it (session 24)."""
    path = _vocab_plan(tmp_path, engine, {"kind": "draft_model", "model": "llama-68m", "gamma": [3], **drafter})
    assert main(["plan", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err
    assert not (tmp_path / "out").exists()


def test_a_draft_model_one_planned_model_pairs_with_is_left_to_the_screen(tmp_path):
    """llama-68m shares Llama-2's 32,000-token vocabulary: planned beside Llama-3-8B under vLLM 0.24.0 it is kept, its
    Llama-3 candidates screened out with the reason; a plan naming no release simulates the pairing, as a run does;
    heterogeneous_vocab goes with a draft model only."""
    from simulator.workflows.plan.config import load_plan
    drafter = {"kind": "draft_model", "model": "llama-68m", "gamma": [3]}
    spec, _ = load_plan(_vocab_plan(tmp_path, {"version": "0.24.0"}, drafter, models=("llama-3-8b", "llama-2-7b")))
    ests = {c.model: Colocated().screen(c, spec, Workload(1.0, 512, 200))
            for c in enumerate_candidates(spec, ("colocated",)) if c.gamma}
    assert ests["llama-2-7b"].feasible and not ests["llama-3-8b"].feasible
    assert ests["llama-3-8b"].reason.startswith("drafter.model: llama-68m has a 32,000-token vocabulary")
    assert load_plan(_vocab_plan(tmp_path, None, drafter))[0].search.drafters[1].model == "llama-68m"
    with pytest.raises(Exception, match="heterogeneous_vocab goes with a draft_model drafter"):
        load_plan(_vocab_plan(tmp_path, None, {"kind": "eagle3", "gamma": [2], "heterogeneous_vocab": True}))


def _mtp_plan(tmp_path, version: str, gamma: list[int]):
    plan = {**PLAN, "models": ["deepseek-v3"], "hardware": [{"id": "h200", "usd_per_gpu_hour": 3.0}],
            "dtype": "fp8_block", "engine": {"framework": "vllm", "version": version},
            "search": {"replicas": [1], "ep": [8], "drafters": [{"kind": "none"}, {"kind": "mtp", "gamma": gamma}]}}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def test_an_mtp_gamma_no_candidates_release_drafts_is_refused_before_the_screen(tmp_path, capsys):
    """vLLM 0.7.3 drafts at most n_predict (DeepSeek-V3: 1) MTP tokens a step (profiles.engine_time.mtp_draft_length):
    a plan listing gamma [1, 2, 3] screened 2 and 3 out with that reason and ranked the rest, silent about it (exit 0
    beside other candidates; session 26). Refused naming the entry's gamma, nothing written; 0.9.0 cycles the one
    module for any gamma."""
    from simulator.workflows.plan.config import load_plan
    path = _mtp_plan(tmp_path, "0.7.3", [1, 2, 3])
    assert main(["plan", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "plan.search.drafters.1.gamma: gamma 2: vllm 0.7.3 drafts at most " \
        "n_predict = 1 MTP token(s) a step" in err, err
    assert not (tmp_path / "out").exists()
    assert load_plan(_mtp_plan(tmp_path, "0.7.3", [1]))[0].search.drafters[1].gamma == [1]
    assert load_plan(_mtp_plan(tmp_path, "0.9.0", [1, 2, 3]))[0].search.drafters[1].gamma == [1, 2, 3]
