"""`draftsim plan` end to end on a small plan: ranked table, outputs, screen-vs-DES errors, and one-line
errors for bad plans."""
from __future__ import annotations

import pandas as pd
import pytest
import yaml

from contract import assert_one_line
from simulator.workflows.plan.main import build_parser, main

PLAN = {
    "name": "small", "seed": 2, "models": ["llama-3-8b"],
    "hardware": [{"id": "h100-sxm"}, {"id": "l40s", "usd_per_gpu_hour": 0.9}],
    "workload": {"arrival": {"process": "poisson", "qps": 12}, "prompt_tokens": {"kind": "fixed", "value": 400},
                 "output_tokens": {"kind": "uniform", "low": 50, "high": 150}, "num_requests": 250},
    "acceptance": {"kind": "constant", "alpha": 0.7}, "slo": {"ttft_s": 0.4, "tpot_s": 0.03, "attainment": 0.9},
    "scheduler": {"max_batch_size": 64},
    "search": {"tp": [1, 2], "replicas": [1, 2], "drafters": [{"kind": "none"},
                                                             {"kind": "draft_model", "model": "llama-68m", "gamma": 3}]},
    "confirm_top": 3,
}


def write(tmp_path, **changes):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({**PLAN, **changes}, sort_keys=False, allow_unicode=True))
    return path


@pytest.mark.slow  # end to end / long Monte Carlo: skipped by the fast inner loop (-m 'not slow')
def test_plan_end_to_end(tmp_path, capsys):
    out = tmp_path / "out"
    assert main([str(write(tmp_path)), "--out", str(out), "--executor", "serial"]) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "screened 16 candidates" in text and "with the DES" in text and "$/h" in text
    # progress: a line per stage on stderr (captured here, so not a terminal), one per confirmed candidate
    progress = captured.err.splitlines()
    assert all(line.startswith("draftsim plan: [") for line in progress)
    assert "screened 16 candidates" in progress[0] and "confirming" in progress[1] and "wrote" in progress[-1]
    assert sum("confirmed" in line for line in progress) == len(pd.read_csv(out / "ranked.csv"))
    ranked = pd.read_csv(out / "ranked.csv")
    screened = pd.read_csv(out / "candidates.csv")
    assert len(screened) == 16 and 3 <= len(ranked) <= 6  # 3 cheapest + up to 3 from the screen's front
    assert list(ranked["rank"]) == list(range(1, len(ranked) + 1))
    # the SLO-meeting candidates come first, cheapest first
    meets = ranked["meets_slo"].tolist()
    assert meets == sorted(meets, reverse=True)
    good = ranked[ranked.meets_slo]
    assert good.usd_per_hour.is_monotonic_increasing and len(good) >= 1
    for column in ("des_ttft_p50_s", "des_ttft_p99_s", "des_tpot_p50_s", "des_tpot_p99_s", "des_goodput_per_gpu_rps",
                   "tokens_per_s_per_usd_hour", "screen_err_ttft", "screen_err_tpot", "usd_per_hour", "gpus"):
        assert ranked[column].notna().all(), column
    assert (ranked.screen_err_tpot.abs() < 0.5).all()
    row = ranked.iloc[0]
    assert row.usd_per_hour == pytest.approx(row.gpus * (2.49 if row.hardware == "h100-sxm" else 0.9))
    assert (out / "pareto.png").stat().st_size > 10_000


@pytest.mark.slow  # three plans end to end
def test_replan_with_another_slo_reuses_the_des_cache_and_ranks_as_a_fresh_plan(tmp_path, capsys):
    out = tmp_path / "cached"
    assert main([str(write(tmp_path)), "--out", str(out), "--executor", "serial"]) == 0
    capsys.readouterr()
    (out / "ranked.csv").rename(tmp_path / "first.csv")
    tighter = {**PLAN["slo"], "ttft_s": 0.1, "attainment": 0.99}
    assert main([str(write(tmp_path, slo=tighter)), "--out", str(out), "--executor", "serial"]) == 0
    err = capsys.readouterr().err
    assert "from the DES cache" in err
    fresh = tmp_path / "fresh"
    assert main([str(write(tmp_path, slo=tighter)), "--out", str(fresh), "--executor", "serial", "--no-cache"]) == 0
    assert "from the DES cache" not in capsys.readouterr().err
    assert not (fresh / "des_cache").exists()
    cached_ranked = pd.read_csv(out / "ranked.csv")
    pd.testing.assert_frame_equal(cached_ranked, pd.read_csv(fresh / "ranked.csv"))
    first = pd.read_csv(tmp_path / "first.csv")
    both = cached_ranked.merge(first, on=["hardware", "tp", "replicas", "drafter", "deployment"],
                               suffixes=("", "_first"))
    assert len(both) and (both.des_goodput_rps != both.des_goodput_rps_first).any()   # recomputed, not copied


@pytest.mark.parametrize("changes, field", [
    ({"search": {"replicas": [1], "deployments": ["on_the_moon"]}}, "plan.search.deployments.0"),
    ({"hardware": [{"id": "l40s"}]}, "plan.hardware.0.usd_per_gpu_hour"),
    ({"hardware": [{"id": "tpu-v9", "usd_per_gpu_hour": 1.0}]}, "plan.hardware.0.id"),
    ({"models": ["llama-9000"]}, "plan.models.0"),
    ({"search": {"replicas": [1], "max_gpus": 4}}, "plan.search"),
    ({"search": {"replicas": [1], "drafters": [{"kind": "tree", "model": "x"}]}}, "plan.search.drafters.0"),
    ({"acceptance": {"kind": "trace", "trace": "x"}}, "plan.acceptance"),
    ({"workload": {"arrival": {"process": "poisson", "qps": -1}}}, "plan.workload.arrival.qps"),
    ({"confirm_top": -1}, "plan.confirm_top"),
    ({"moe": {"routing": "zipf", "zipf_exponent": -2}}, "plan.moe.zipf_exponent"),
    ({"moe": {"routing": "trace", "routing_trace": "r.npy"}}, "plan.moe.routing"),
    # booleans where numbers go (pydantic alone reads true as 1), alone and in lists
    ({"confirm_top": True}, "plan.confirm_top: Input should be a number, not the boolean true"),
    ({"search": {"tp": [True, 2]}}, "plan.search.tp: Input should be a number, not the boolean true"),
    ({"search": {"replicas": [1], "drafters": [{"kind": "draft_model", "model": "llama-68m", "gamma": [2, False]}]}},
     "plan.search.drafters.0.gamma: Input should be a number, not the boolean false"),
    # a request beyond the model's context (context_overflow error): every DES confirmation failed 'invalid' and
    # the plan said no candidate met the SLOs (exit 1, outputs written)
    ({"workload": {"arrival": {"process": "poisson", "qps": 12}, "prompt_tokens": {"kind": "fixed", "value": 9000},
                   "output_tokens": {"kind": "fixed", "value": 50}, "num_requests": 20}},
     "plan.workload: request 0 needs 9050 tokens (prompt 9000 + output 50) but the context of llama-3-8b "
     "(plan.models.0) is 8192"),
    # an engine release without an engine model: every candidate was screened out with its reason (exit 1)
    ({"engine": {"version": "9.9"}}, "plan.engine.version: vllm 9.9 is newer than the newest release known here"),
    ({"engine": {"framework": "sglang", "version": "0.3.0"}}, "plan.engine.version: no engine model for sglang 0.3.0"),
])
def test_bad_plans_exit_2_with_one_line(tmp_path, capsys, changes, field):
    assert main([str(write(tmp_path, **changes)), "--out", str(tmp_path / "o"), "--executor", "serial"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # distributed's connect timeout (10 s)
def test_an_unreachable_dask_scheduler_is_one_line_before_the_screen(tmp_path, capsys, monkeypatch):
    """The scheduler is reached before any work: one line, exit 2, no progress line, nothing written, and
    the screen never ran (it used to run first and report the scheduler after its progress lines)."""
    pytest.importorskip("distributed")

    def screened(*args):
        raise AssertionError("the screen ran before the scheduler was reached")

    monkeypatch.setattr("simulator.workflows.plan.main.screen_all", screened)
    out = tmp_path / "out"
    code = main([str(write(tmp_path)), "--out", str(out), "--executor", "dask://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1   # (no progress line before it)
    assert_one_line(err, "--executor: cannot reach the Dask scheduler at tcp://127.0.0.1:9")
    assert not out.exists()


def test_help_reads_well(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = capsys.readouterr().out
    assert "cheapest" in text and "example:" in text and "--confirm-top" in text


def test_confirmations_start_longest_first_and_the_ranking_does_not_depend_on_it(tmp_path, monkeypatch):
    """`confirm` hands the DES runs to the executor largest `des_work` first (disaggregated, then
    speculating, then more GPUs); which order they run in changes no row of the ranking."""
    from simulator.workflows.plan import main as plan_main
    from simulator.workflows.plan.config import load_plan

    spec, base_dir = load_plan(write(tmp_path, search={**PLAN["search"], "deployments": ["colocated", "disaggregated"]}))
    screened = plan_main.screen_all(spec, base_dir)
    chosen = screened[screened.screen_feasible].groupby(["deployment", "drafter"], sort=False).head(2)
    assert set(chosen.deployment) == {"colocated", "disaggregated"} and chosen.drafter.nunique() == 2
    handed = []

    class Recorder:   # an executor that records the order it is handed the runs in and simulates nothing
        def __init__(self, reverse: bool):
            self.reverse = reverse

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def imap_unordered(self, fn, tasks):
            tasks = list(tasks)
            handed.append([key for key, _, _ in tasks])
            for key, _, _ in (reversed(tasks) if self.reverse else tasks):   # finishing in either order
                row = chosen.loc[int(key)]
                yield key, {"status": "ok", "ttft_mean_s": row.screen_ttft_s, "tpot_mean_s": row.screen_tpot_s,
                            "output_tokens_per_s": row.screen_output_tokens_per_s, "goodput_per_gpu_rps": 1.0,
                            "slo_attained": True}, None

    frames = []
    for reverse in (False, True):
        monkeypatch.setattr("simulator.distributed.executors.make_executor",
                            lambda executor, workers, reverse=reverse: Recorder(reverse))
        frames.append(plan_main.confirm(spec, chosen, base_dir, "serial", 1))
    order = [chosen.loc[int(key)] for key in handed[0]]
    work = [(row.deployment == "disaggregated", row.drafter != "none", row.gpus) for row in order]
    assert work == sorted(work, reverse=True) and work[0] > work[-1]
    pd.testing.assert_frame_equal(frames[0], frames[1])


@pytest.mark.parametrize("workers, tasks, idle_after", [(2, 5, 4), (2, 1, 1), (4, 6, 3), (1, 3, 3)])
def test_the_idle_hook_runs_once_when_a_local_worker_has_no_run_left(tmp_path, monkeypatch, workers, tasks, idle_after):
    """`confirm(when_idle=...)` calls the hook once, after the result that leaves fewer runs unfinished than
    local worker processes (a core is free from then on), and never for executors that are not local
    worker processes (`serial` runs in the caller's own process)."""
    from simulator.distributed.executors import ProcessExecutor
    from simulator.workflows.plan import main as plan_main
    from simulator.workflows.plan.config import load_plan

    spec, base_dir = load_plan(write(tmp_path))
    screened = plan_main.screen_all(spec, base_dir)
    chosen = screened[screened.screen_feasible].head(tasks)
    assert len(chosen) == tasks
    events = []

    class Pool(ProcessExecutor):   # local worker processes, run here one after another
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def imap_unordered(self, fn, runs):
            for key, _, _ in runs:
                events.append("result")
                row = chosen.loc[int(key)]
                yield key, {"status": "ok", "ttft_mean_s": row.screen_ttft_s, "tpot_mean_s": row.screen_tpot_s,
                            "output_tokens_per_s": row.screen_output_tokens_per_s, "goodput_per_gpu_rps": 1.0,
                            "slo_attained": True}, None

    hook = lambda: events.append("idle")  # noqa: E731
    plan_main.confirm(spec, chosen, base_dir, Pool(workers), workers, when_idle=hook)
    expected = ["result"] * tasks
    expected.insert(idle_after, "idle")
    assert events == expected

    events.clear()   # the serial executor: the caller's process is the worker, never idle
    monkeypatch.setattr("simulator.workflows.plan.main.confirm_point",
                        lambda task: (task[0], {"status": "invalid", "error": "x", "wall_s": 0.0}, None))
    plan_main.confirm(spec, chosen, base_dir, "serial", None, when_idle=hook)   # (serial reads no workers)
    assert "idle" not in events


def test_a_plan_whose_confirmed_candidates_all_miss_the_slos_exits_1(tmp_path, capsys):
    """One l40s replica, estimated within 1.25x of a 36 ms TPOT (so confirmed), measures 39.6 ms p50 in the DES:
    the plan writes its outputs and says that no confirmed candidate meets the SLOs (a failed check)."""
    out = tmp_path / "out"
    path = write(tmp_path, hardware=[{"id": "l40s", "usd_per_gpu_hour": 0.9}],
                 workload={**PLAN["workload"], "output_tokens": {"kind": "fixed", "value": 50}, "num_requests": 100},
                 slo={"ttft_s": 0.4, "tpot_s": 0.036},
                 search={"tp": [1], "replicas": [1], "drafters": [{"kind": "none"}]},
                 confirm_top=1)
    assert main([str(path), "--out", str(out), "--executor", "serial", "--quiet"]) == 1
    assert capsys.readouterr().err.strip() == (f"draftsim plan: none of the 1 candidates confirmed with the DES meets "
                                               f"the SLOs (outputs in {out}/)")
    ranked = pd.read_csv(out / "ranked.csv")
    assert len(ranked) == 1 and not ranked.meets_slo.any()


ONE_CANDIDATE = dict(hardware=[{"id": "h100-sxm"}], search={"tp": [1], "replicas": [1], "drafters": [{"kind": "none"}]},
                     confirm_top=1, workload={**PLAN["workload"], "num_requests": 60})


def test_a_plan_stopped_after_its_first_des_run_leaves_a_folder_the_next_plan_takes(tmp_path, monkeypatch, capsys):
    """Ctrl-C once the DES cache held a run left `out/des_cache/` alone: the next plan into the same --out was
    refused ('a non-empty directory that is not a draftsim output'). The cache's first run now marks the
    folder as the plan's; nothing else is written, and the next plan takes the folder and the cached run."""
    from simulator.workflows.plan.des_cache import DesCache

    out, path = tmp_path / "out", write(tmp_path, **ONE_CANDIDATE)
    put = DesCache.put

    def put_then_ctrl_c(self, *args):
        put(self, *args)
        raise KeyboardInterrupt

    monkeypatch.setattr(DesCache, "put", put_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        main([str(path), "--out", str(out), "--executor", "serial", "--quiet"])
    assert sorted(p.name for p in out.iterdir()) == [".draftsim-plan.json", "des_cache"]
    monkeypatch.setattr(DesCache, "put", put)
    assert main([str(path), "--out", str(out), "--executor", "serial"]) == 0
    assert "1 of 1 candidates from the DES cache" in capsys.readouterr().err
    assert (out / "ranked.csv").is_file() and (out / "launch_vllm.sh").is_file()


def test_a_plan_stopped_while_writing_its_files_writes_none(tmp_path, monkeypatch):
    """candidates.csv and ranked.csv were in place before pareto.png was drawn: Ctrl-C (or a full disk) there
    left a folder of half a plan. The files are staged and moved in together."""
    out = tmp_path / "out"

    def ctrl_c(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("simulator.workflows.plan.main.plot_pareto", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        main([str(write(tmp_path, **ONE_CANDIDATE)), "--out", str(out), "--executor", "serial", "--quiet", "--no-cache"])
    assert not out.exists()


def test_a_replan_without_a_candidate_removes_the_launch_scripts_of_the_one_before(tmp_path, capsys):
    """A re-plan into the same --out whose screen kept no candidate wrote an empty ranked.csv and left the
    earlier plan's launch_vllm.sh ('... meets the SLOs') beside it, listed in the manifest as this plan's."""
    out = tmp_path / "out"
    assert main([str(write(tmp_path, **ONE_CANDIDATE)), "--out", str(out), "--executor", "serial", "--quiet"]) == 0
    assert (out / "launch_vllm.sh").is_file() and (out / "launch_sglang.sh").is_file()
    impossible = write(tmp_path, **ONE_CANDIDATE, slo={"ttft_s": 0.001, "tpot_s": 0.001, "attainment": 0.9})
    assert main([str(impossible), "--out", str(out), "--executor", "serial", "--quiet"]) == 1
    capsys.readouterr()
    assert pd.read_csv(out / "ranked.csv").empty   # (no candidate: the header, no rows)
    assert sorted(p.name for p in out.iterdir()) == [".draftsim-plan.json", "candidates.csv", "des_cache",
                                                     "pareto.png", "ranked.csv"]


def test_confirm_top_0_says_the_screen_passed_candidates_and_none_was_confirmed(tmp_path, capsys):
    """--confirm-top 0 (screen only) printed 'no candidate passed the screen; widen the search space or relax
    the SLOs' right under 'screened 1 candidates (1 feasible)'."""
    out = tmp_path / "out"
    assert main([str(write(tmp_path, **ONE_CANDIDATE)), "--out", str(out), "--confirm-top", "0"]) == 0
    printed = capsys.readouterr().out
    assert "(1 feasible); confirmed 0 with the DES" in printed and "passed the screen" not in printed
    assert "no candidate confirmed with the DES (confirm_top 0)" in printed
    # ranked.csv holds the ranking's header (it was an empty file: pandas could not read it back)
    ranked = pd.read_csv(out / "ranked.csv")
    assert ranked.empty and {"rank", "deployment", "des_goodput_per_gpu_rps", "usd_per_mtok", "meets_slo"} <= set(ranked)


def test_the_context_check_reads_the_requests_the_des_draws(tmp_path):
    """The plan's context check draws the requests as every DES confirmation does (simulator.cluster.build:
    the scenario seed's workload stream), not the screen's own draw: a lognormal tail beyond llama-3-8b's 8192
    tokens is refused exactly when the first confirmation's run refuses it, and context_overflow drop lets it
    through."""
    import simulator
    from simulator.errors import ScenarioError
    from simulator.workflows.plan.config import enumerate_candidates, load_plan
    from simulator.workflows.plan.screen import DEPLOYMENTS
    workload = {"arrival": {"process": "poisson", "qps": 12}, "num_requests": 60,
                "prompt_tokens": {"kind": "lognormal", "median": 3000, "sigma": 0.4, "max": 20000},
                "output_tokens": {"kind": "fixed", "value": 50}}
    outcomes = set()
    for seed in range(10):
        path = write(tmp_path, seed=seed, workload=workload)
        try:
            load_plan(path)
            refused = None
        except ScenarioError as exc:
            refused = exc
        spec, _ = load_plan(write(tmp_path, seed=seed, workload={**workload, "context_overflow": "drop"}))
        cand = enumerate_candidates(spec, tuple(DEPLOYMENTS))[0]
        data = DEPLOYMENTS[cand.deployment].scenario(cand, spec, spec.seed)
        data["workload"] = workload
        try:
            simulator.prepare(data)
            ran = True
        except ScenarioError as exc:
            assert "but the context of llama-3-8b is 8192" in str(exc), str(exc)
            ran = False
        assert ran == (refused is None), (seed, refused)
        if refused is not None:
            assert refused.field == "plan.workload" and "(plan.models.0) is 8192" in str(refused)
        outcomes.add(ran)
    assert outcomes == {True, False}   # (the seeds give both: the check is not vacuous)


@pytest.mark.parametrize("quiet", [False, True])
def test_a_long_screen_reports_its_progress_unless_quiet(tmp_path, capsys, monkeypatch, quiet):
    """A search space of 98,304 candidates (under the 100,000 cap) screened for minutes with nothing printed:
    the screen says how far it is every SCREEN_PROGRESS_S seconds (0 here: before every candidate), with the
    plan's other progress lines; --quiet prints none."""
    import simulator.workflows.plan.main as plan_main
    monkeypatch.setattr(plan_main, "SCREEN_PROGRESS_S", 0.0)
    args = [str(write(tmp_path)), "--out", str(tmp_path / "out"), "--confirm-top", "0"]
    assert main(args + ["--quiet"] * quiet) == 0
    err = capsys.readouterr().err.splitlines()
    if quiet:
        assert err == []
        return
    screening = [line for line in err if "screening:" in line]
    assert all(line.startswith("draftsim plan: [") for line in err)
    assert screening[0].endswith("screening: 0/16 candidates (0 %)") and screening[-1].endswith("15/16 candidates (94 %)")
    assert len(screening) == 16 and "screened 16 candidates" in err[len(screening)]



@pytest.mark.parametrize("changes, twice", [
    ({"models": ["llama-3-8b", "LLAMA-3-8B"]}, "'LLAMA-3-8B' is listed twice"),
    ({"models": ["llama-3-8b", " llama-3-8b"]}, "' llama-3-8b' is listed twice"),
    ({"hardware": [{"id": "l40s", "usd_per_gpu_hour": 0.9}, {"id": "L40S", "usd_per_gpu_hour": 0.8}]},
     "'L40S' is listed twice"),
])
def test_a_model_or_gpu_listed_twice_in_another_case_is_refused(tmp_path, capsys, changes, twice):
    """The catalogs look names up whatever their case (and surrounding blanks): listed twice so, the same
    candidates were screened and confirmed twice, taking the places of others."""
    out = tmp_path / "o"
    assert main([str(write(tmp_path, **changes)), "--out", str(out), "--executor", "serial"]) == 2
    err = capsys.readouterr().err
    assert_one_line(err, twice)
    assert "plan.models" in err or "plan.hardware" in err
    assert not out.exists()


def test_the_confirming_run_prices_the_gpu_at_the_plans_price(tmp_path):
    """A plan's own usd_per_gpu_hour reached ranked.csv but not the DES scenario it confirms with: `draftsim run`
    of that candidate priced $/Mtok at the catalog's $2.49 per H100-hour, 2.49/3.10 of ranked.csv's."""
    import simulator
    from simulator.workflows.plan.config import Candidate, load_plan
    from simulator.workflows.plan.screen import DEPLOYMENTS

    out = tmp_path / "out"
    path = write(tmp_path, **{**ONE_CANDIDATE, "hardware": [{"id": "h100-sxm", "usd_per_gpu_hour": 3.10}]})
    assert main([str(path), "--out", str(out), "--executor", "serial", "--quiet"]) == 0
    row = pd.read_csv(out / "ranked.csv").iloc[0]
    spec, base_dir = load_plan(path)
    cand = Candidate(**{k: "" if pd.isna(row[k]) else row[k] for k in Candidate.__dataclass_fields__})   # (CSV: "" as NaN)
    summary = simulator.run(DEPLOYMENTS[cand.deployment].scenario(cand, spec, spec.seed), base_dir=base_dir).summary
    assert cand.usd_per_gpu_hour == 3.10
    assert summary["usd_per_mtok"] == pytest.approx(row.usd_per_mtok, rel=1e-9)


# session 23, planfix: the plan's up-front checks read the engine release each candidate runs
SMALL = {"arrival": {"process": "poisson", "qps": 1}, "prompt_tokens": {"kind": "fixed", "value": 200},
         "output_tokens": {"kind": "fixed", "value": 20}, "num_requests": 20}


def test_the_context_check_reads_the_release_the_candidates_run(tmp_path):
    """TensorRT-LLM before 1.0 builds a yarn model's max_seq_len as max_position_embeddings × the rope factor
    (profiles.engine_time.context_length): the plan took max_position_embeddings (163840 for DeepSeek-V3) and
    refused requests every candidate's run serves (exit 2); it now takes the run's limit. Under TensorRT-LLM 1.x
    (yarn exempt) the same requests are refused, and the refusal names the release's rule."""
    import simulator
    from simulator.errors import ScenarioError
    from simulator.workflows.plan.config import enumerate_candidates, load_plan
    from simulator.workflows.plan.screen import DEPLOYMENTS
    long = {**SMALL, "prompt_tokens": {"kind": "fixed", "value": 170000}, "output_tokens": {"kind": "fixed", "value": 16},
            "num_requests": 2}
    plan = dict(models=["deepseek-v3"], hardware=[{"id": "h200"}], dtype="fp8_block", workload=long,
                search={"tp": [8], "replicas": [1]}, slo={"ttft_s": 600.0, "attainment": 0.5}, confirm_top=0)
    engine = {"framework": "trtllm", "version": "0.19.0", "chunked_prefill": True}
    spec, base = load_plan(write(tmp_path, engine=engine, **plan))   # (it said: the context ... is 163840)
    cand = enumerate_candidates(spec, tuple(DEPLOYMENTS))[0]
    assert simulator.prepare(DEPLOYMENTS[cand.deployment].scenario(cand, spec, spec.seed), base_dir=base)
    with pytest.raises(ScenarioError) as exc:
        load_plan(write(tmp_path, engine={**engine, "version": "1.0.0"}, **plan))
    assert exc.value.field == "plan.workload" and "(plan.models.0) is 163840" in exc.value.message
    assert "trtllm" in exc.value.message.lower() and "on h200" in exc.value.message, exc.value.message


def test_the_screen_refuses_what_the_confirming_run_refuses_to_start(tmp_path):
    """DeepSeek-V3 on vLLM 0.7.3, TP8 on one H200: its max_model_len (163840, yarn) needs more KV blocks than the
    replica holds, so vLLM refuses to start (check_enough_kv_cache_memory) and so does the confirming run; the
    screen, which never applied that check, ranked the candidate feasible. Screen and run now refuse it with one
    reason, from one function (simulator.cluster.build.check_pool_starts)."""
    import simulator
    from simulator.errors import ScenarioError
    from simulator.workflows.plan.config import enumerate_candidates, load_plan
    from simulator.workflows.plan.screen import DEPLOYMENTS, screen, workload_means
    plan = dict(models=["deepseek-v3"], hardware=[{"id": "h200"}], dtype="fp8_block", workload=SMALL,
                search={"tp": [8], "replicas": [1]}, slo={"ttft_s": 600.0, "attainment": 0.5}, confirm_top=0,
                engine={"framework": "vllm", "version": "0.7.3"})
    spec, base = load_plan(write(tmp_path, **plan))
    (cand,) = enumerate_candidates(spec, tuple(DEPLOYMENTS))
    with pytest.raises(ScenarioError) as run_refusal:
        simulator.prepare(DEPLOYMENTS[cand.deployment].scenario(cand, spec, spec.seed), base_dir=base)
    refusal = str(run_refusal.value)
    assert run_refusal.value.field == "cluster.max_model_len" and "check_enough_kv_cache_memory" in refusal
    est = screen(cand, spec, workload_means(spec, base, spec.seed))
    assert not est.feasible and est.reason == refusal.splitlines()[0]
    # disaggregated (1 prefill + 1 decode replica): the run refuses the prefill pool first, and names it
    spec, base = load_plan(write(tmp_path, **{**plan, "search": {"tp": [8], "replicas": [2],
                                                                 "deployments": ["disaggregated"]}}))
    (cand,) = [c for c in enumerate_candidates(spec, tuple(DEPLOYMENTS)) if c.deployment == "disaggregated"]
    with pytest.raises(ScenarioError) as run_refusal:
        simulator.prepare(DEPLOYMENTS[cand.deployment].scenario(cand, spec, spec.seed), base_dir=base)
    refusal = str(run_refusal.value)
    assert "(cluster.disaggregation.prefill) holds" in refusal, refusal
    est = screen(cand, spec, workload_means(spec, base, spec.seed))
    assert not est.feasible and est.reason == refusal.splitlines()[0]


def test_a_model_no_candidate_release_loads_is_refused_without_a_version(tmp_path, capsys):
    """plan.engine {framework: sglang} names no version: every candidate runs the release SGLang's measured tables
    or newest entry give, which has no Jamba; each was screened out alone (exit 1, outputs written). Now refused
    before any work, naming the release, as with the version given."""
    out = tmp_path / "o"
    for engine in ({"framework": "sglang"}, {"framework": "sglang", "version": "0.5.23"}):
        path = write(tmp_path, models=["jamba-1.5-mini"], hardware=[{"id": "h100-sxm"}], engine=engine,
                     workload=SMALL, search={"tp": [2], "replicas": [1]}, confirm_top=1)
        assert main([str(path), "--out", str(out), "--executor", "serial"]) == 2
        err = capsys.readouterr().err.strip()
        assert_one_line(err, "plan.models.0")
        assert err.startswith("draftsim plan: error: plan.models.0: sglang ") and "has no JambaForCausalLM" in err, err
        assert ("plan.engine names no version" in err) == ("version" not in engine), err
        assert not out.exists()


def test_a_model_one_gpus_release_loads_is_left_to_the_screen(tmp_path):
    """Where the candidates on one GPU run a release that loads the model, the plan goes on (those of another GPU
    are screened out with the reason), as for a parallelism that splits some planned models."""
    from simulator.workflows.plan.config import _check_architectures, load_plan
    spec, _ = load_plan(write(tmp_path, models=["jamba-1.5-mini"], hardware=[{"id": "h100-sxm"}], workload=SMALL,
                              search={"tp": [2], "replicas": [1]}))
    _check_architectures(spec, {"h100-sxm": ("vllm", "0.24.0"), "a100-80gb": ("sglang", "0.5.23")})
    from simulator.errors import ScenarioError
    with pytest.raises(ScenarioError, match="has no JambaForCausalLM"):
        _check_architectures(spec, {"a100-80gb": ("sglang", "0.5.23")})


def test_long_confirmations_and_a_long_workload_read_report_progress(tmp_path, capsys, monkeypatch):
    """The plan's progress came as each DES confirmation finished: a confirmation of minutes (a large
    workload on many replicas), or the screen's workload read of a long trace, printed nothing meanwhile. A line
    now comes every SCREEN_PROGRESS_S seconds (0.02 here) while they run, here each made slow."""
    import time

    import simulator.workflows.plan.main as plan_main
    monkeypatch.setattr(plan_main, "SCREEN_PROGRESS_S", 0.02)
    confirm_point, means = plan_main.confirm_point, plan_main.workload_means
    monkeypatch.setattr(plan_main, "confirm_point", lambda task: (time.sleep(0.2), confirm_point(task))[1])
    monkeypatch.setattr(plan_main, "workload_means", lambda *a: (time.sleep(0.2), means(*a))[1])
    path = write(tmp_path, **ONE_CANDIDATE)
    assert main([str(path), "--out", str(tmp_path / "out"), "--executor", "serial", "--no-cache"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert all(line.startswith("draftsim plan: [") for line in err), err
    confirmed = next(i for i, line in enumerate(err) if "confirmed 1/1 with the DES" in line)
    assert any(line.endswith("confirming with the DES: 0/1 done, the others running") for line in err[:confirmed]), err
    screened = next(i for i, line in enumerate(err) if "screened 1 candidates" in line)
    assert any(line.endswith("] reading the workload") for line in err[:screened]), err
    assert main([str(path), "--out", str(tmp_path / "q"), "--executor", "serial", "--no-cache", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
