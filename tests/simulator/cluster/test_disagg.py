"""Disaggregated prefill/decode in the DES (simulator.cluster.handoff): KV transfer times against the link model,
contention, conservation, causality, step == bulk, determinism, bad input."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from models import get_model
from models.step import Parallelism
from profiles.hardware import get_hardware
from profiles.roofline import default_efficiency
from simulator.api import run
from simulator.cli import main
from simulator.errors import ScenarioError
from sim_helpers import merge

A100 = get_hardware("a100-80gb")
FRACTION = default_efficiency("a100-80gb").collective_bandwidth_fraction
KV_BYTES_PER_TOKEN = get_model("llama-2-13b").kv_bytes_per_token_per_gpu(Parallelism(1, 1), "fp16")


def disagg(prefill=1, decode=1, link="scaleup", overlap=False, trace=None, **overrides) -> dict:
    base = {
        "name": "d", "seed": 3,
        "workload": {"arrival": {"process": "poisson", "qps": 8.0},
                     "prompt_tokens": {"kind": "uniform", "low": 128, "high": 1024},
                     "output_tokens": {"kind": "uniform", "low": 2, "high": 96}, "num_requests": 200},
        "cluster": {"hardware": "a100-80gb", "model": "llama-2-13b", "dtype": "fp16", "engine": {"version": "0.15.0"},
                    "disaggregation": {"prefill": {"replicas": prefill}, "decode": {"replicas": decode},
                                       "kv_transfer": {"link": link, "layerwise_overlap": overlap}}},
        "scheduler": {"kind": "vllm"},
        "slo": {"ttft_s": 0.4, "tpot_s": 0.04},
        "outputs": {"plots": False},
    }
    if trace is not None:
        base["workload"] = trace
    return merge(base, overrides)


def burst(tmp_path, n: int, prompt: int = 512, output: int = 8) -> dict:
    """`n` identical requests arriving together (a trace)."""
    csv = tmp_path / "burst.csv"
    csv.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(f"0.0,{prompt},{output}\n" for _ in range(n)))
    return {"arrival": {"process": "trace", "trace_csv": str(csv)}}


@pytest.mark.parametrize("link,bandwidth,latency", [("scaleup", A100.scaleup_bandwidth_bytes_per_s, A100.scaleup_latency_s),
                                                    ("scaleout", A100.scaleout_bandwidth_bytes_per_s, A100.scaleout_latency_s)])
def test_kv_transfer_on_an_idle_link_is_bytes_over_bandwidth_plus_latency(tmp_path, link, bandwidth, latency):
    res = run(disagg(link=link, trace=burst(tmp_path, 1)), base_dir=tmp_path)
    req = res.requests.iloc[0]
    assert req.kv_bytes == 512 * KV_BYTES_PER_TOKEN
    assert req.kv_transfer_s == pytest.approx(latency + req.kv_bytes / (bandwidth * FRACTION), rel=1e-9)
    assert req.kv_start_s == req.first_token_s          # the idle decode replica reserves at once
    assert req.decode_start_s == req.kv_ready_s


def test_kv_transfers_contend_for_the_receiving_nic(tmp_path):
    """Four prefill GPUs finish together and send into one decode GPU's NIC: max-min fair shares make
    every transfer take 4× the idle time's bandwidth part."""
    res = run(disagg(prefill=4, link="scaleout", trace=burst(tmp_path, 4)), base_dir=tmp_path)
    req = res.requests
    assert (req.kv_start_s == req.kv_start_s.iloc[0]).all()
    bw = A100.scaleout_bandwidth_bytes_per_s * FRACTION
    idle = A100.scaleout_latency_s + req.kv_bytes.iloc[0] / bw
    contended = A100.scaleout_latency_s + 4 * req.kv_bytes.iloc[0] / bw
    np.testing.assert_allclose(req.kv_transfer_s, contended, rtol=1e-9)
    assert contended > 3.5 * idle
    assert res.summary["kv_transfer_mean_s"] == pytest.approx(contended, rel=1e-9)


def test_layerwise_overlap_hides_all_but_the_last_layer(tmp_path):
    spec = get_model("llama-2-13b")
    bw = A100.scaleout_bandwidth_bytes_per_s * FRACTION
    plain = run(disagg(link="scaleout", trace=burst(tmp_path, 1)), base_dir=tmp_path).requests.iloc[0]
    over = run(disagg(link="scaleout", overlap=True, trace=burst(tmp_path, 1)), base_dir=tmp_path).requests.iloc[0]
    assert over.first_token_s == plain.first_token_s
    tail = A100.scaleout_latency_s + over.kv_bytes / spec.num_layers / bw
    assert over.kv_exposed_s == pytest.approx(tail, rel=1e-9)
    assert plain.kv_exposed_s == pytest.approx(plain.kv_transfer_s, rel=1e-12)
    assert over.kv_exposed_s < plain.kv_exposed_s / 20
    assert over.kv_start_s < over.first_token_s        # sending began during the prefill


VARIANTS = {
    "vllm": {},
    "overlap_scaleout": {"cluster": {"disaggregation": {"kv_transfer": {"link": "scaleout", "layerwise_overlap": True}}}},
    "sarathi_2p2d": {"scheduler": {"kind": "sarathi", "chunk_tokens": 256},
                     "cluster": {"disaggregation": {"prefill": {"replicas": 2}, "decode": {"replicas": 2, "router": "least_outstanding"}}}},
    "drafter_small_kv": {"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                         "acceptance": {"kind": "constant", "alpha": 0.7}, "cluster": {"gpu_memory_utilization": 0.37},
                         "workload": {"arrival": {"qps": 14.0}}},
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_step_and_bulk_modes_identical_and_invariants_hold(name):
    data = merge(disagg(), VARIANTS[name])
    bulk, step = run(data, step_mode="bulk"), run(data, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    req, s = bulk.requests, bulk.summary
    # conservation: every request finished with all its tokens; the step log emitted exactly those
    assert s["requests_finished"] == len(req) and s["requests_dropped"] == 0 and s["requests_unfinished"] == 0
    assert (req.emitted_tokens == req.output_tokens).all()
    assert bulk.steps.emitted_tokens.sum() == req.output_tokens.sum()
    assert bulk.steps.prefill_tokens.sum() == req.prompt_tokens.sum()   # no preemption in either pool
    # causality: first token ≤ KV start(+overlap) ≤ KV ready ≤ first decode step
    dec = req[req.output_tokens > 1]
    assert (dec.kv_ready_s > dec.kv_start_s).all()
    assert (dec.decode_start_s >= dec.kv_ready_s).all()
    assert (dec.kv_ready_s > dec.first_token_s).all()
    assert (dec.finish_s > dec.decode_start_s).all()
    single = req[req.output_tokens == 1]
    assert single.kv_start_s.isna().all()
    # prefill steps only on prefill replicas, decode steps only on decode replicas
    n_prefill = s["prefill_replicas"]
    steps = bulk.steps
    assert (steps[steps.replica < n_prefill].decode_seqs == 0).all()
    assert (steps[steps.replica >= n_prefill].prefill_seqs == 0).all()
    assert set(dec.decode_replica) <= set(range(n_prefill, n_prefill + s["decode_replicas"]))
    if name == "drafter_small_kv":   # decode memory is tight: reservations wait for finishes
        assert (dec.kv_wait_s > 0.05).sum() > 20
    # Little's law from the request records
    assert s["little_L_requests"] == pytest.approx(s["little_lambda_W"], rel=1e-9)
    assert s["gpus"] == n_prefill + s["decode_replicas"]
    assert s["goodput_per_gpu_rps"] == pytest.approx(s["goodput_rps"] / s["gpus"])


def test_speculative_decoding_runs_in_the_decode_pool():
    data = merge(disagg(), VARIANTS["drafter_small_kv"])
    res = run(data)
    steps = res.steps[res.steps.replica >= res.summary["prefill_replicas"]]
    assert (steps.query_tokens_per_seq == 4).all() and steps.accepted_tokens.sum() > 0
    assert res.summary["mean_accepted_length"] > 1.0
    # the prefill pool also prefills the draft model and ships its KV: more bytes than the target's alone
    req = res.requests[res.requests.output_tokens > 1]
    assert (req.kv_bytes > req.prompt_tokens * KV_BYTES_PER_TOKEN).all()


@pytest.mark.parametrize("memory", [None, 0.37])
def test_decode_pool_joins_compute_no_lives_they_could_not_use(monkeypatch, memory):
    """A life computed ahead for a join (simulator.core.lives) is used only if it fits the request's state
    (`Life.fits`); a join computes lives only when its own would fit. A decode replica often holds more KV
    blocks for a request than its first decode step needs (the transferred prompt's and its output's
    reservation), and such joins go the general way without computing lives for nothing (the outputs are
    the same either way: step == bulk above)."""
    from simulator.core import bulk
    from simulator.core.lives import Life

    joining, checked = [], {}
    lives_ahead, fits = bulk.lives_ahead, Life.fits

    def counted_lives(rep, ids):
        joining.append(ids[0])
        return lives_ahead(rep, ids)

    def counted_fits(self, s, r, blocks):
        checked.setdefault(r, fits(self, s, r, blocks))
        return fits(self, s, r, blocks)

    monkeypatch.setattr(bulk, "lives_ahead", counted_lives)
    monkeypatch.setattr(Life, "fits", counted_fits)
    data = merge(disagg(), {"drafter": VARIANTS["drafter_small_kv"]["drafter"],
                            "acceptance": VARIANTS["drafter_small_kv"]["acceptance"]})
    if memory is not None:
        data = merge(data, {"cluster": {"gpu_memory_utilization": memory}, "workload": {"arrival": {"qps": 14.0}}})
    res = run(data)
    assert res.summary["mean_accepted_length"] > 1.0
    assert joining and all(checked[r] for r in joining if r in checked)   # each joiner's own life fitted


def test_same_seed_same_outputs_other_seed_other_outputs():
    a, b = run(disagg()), run(disagg())
    pd.testing.assert_frame_equal(a.requests, b.requests)
    assert a.summary == b.summary
    c = run(disagg(seed=4))
    assert not a.requests.arrival_s.equals(c.requests.arrival_s)


@pytest.mark.parametrize("data,field", [
    (disagg(cluster={"model": "llama-2-70b"}), "cluster.disaggregation.prefill.parallelism"),
    (merge(disagg(), {"cluster": {"disaggregation": {"prefill": {"parallelism": {"tp": 8}},
                                                     "decode": {"parallelism": {"tp": 1}}}, "model": "llama-2-70b"}}),
     "cluster.disaggregation.decode.parallelism"),
    (disagg(cluster={"replicas": 2}), "cluster"),
    (disagg(cluster={"disaggregation": {"decode": {"parallelism": {"ep": 2}}}}), "cluster.disaggregation.decode.parallelism.ep"),
    (disagg(cluster={"disaggregation": {"decode": {"router": "nope"}}}), "cluster.disaggregation.decode.router"),
    (disagg(cluster={"disaggregation": {"kv_transfer": {"link": "carrier_pigeon"}}}), "cluster.disaggregation.kv_transfer.link"),
    (disagg(cluster={"disaggregation": {"prefill": {"hardware": "h900"}}}), "cluster.disaggregation.prefill.hardware"),
    (disagg(cluster={"disaggregation": {"decode": {"hardware": "h100-sxm"}}}), "cluster.disaggregation.kv_transfer.link"),
    (disagg(drafter={"kind": "head", "style": "autoregressive", "gamma": 4},
            speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 2}), "acceptance.kind"),
    # vLLM 0.15.0 drafts a token tree from EAGLE-style heads only (profiles.engine_time.tree_shapes)
    (disagg(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
            speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 2}), "drafter.kind"),
])
def test_bad_disaggregation_input_names_the_field(data, field):
    with pytest.raises(ScenarioError) as err:
        run(data)
    assert err.value.field == field or str(err.value).startswith(field), str(err.value)


def test_cli_exit_2_with_one_line_for_a_pool_that_does_not_fit(tmp_path, capsys):
    import yaml
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(disagg(cluster={"model": "llama-2-70b"})))
    code = main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "cluster.disaggregation.prefill.parallelism" in err
    assert not (tmp_path / "out").exists()


def test_a_drafter_kv_that_cannot_split_as_handed_off_is_refused_before_the_run():
    """(found by tests/test_fuzz_scenarios.py: a cascade's inner draft model of 14 heads shipped to a tp=8 decode
    pool raised mid-run)"""
    import yaml

    from simulator.api import prepare
    from simulator.errors import ScenarioError
    data = yaml.safe_load("""
    workload: {arrival: {process: poisson, qps: 1.9}, prompt_tokens: {kind: fixed, value: 427},
               output_tokens: {kind: fixed, value: 64}, num_requests: 4}
    cluster: {hardware: a100-40gb, model: llama-2-13b,
              disaggregation: {prefill: {replicas: 1}, decode: {replicas: 1, parallelism: {tp: 8}}}}
    drafter: {kind: cascade, stages: [{tokens: 4, model: llama-68m, inner_gamma: 3, inner_alpha: 0.68,
                                       inner_model: qwen2.5-coder-0.5b}, {tokens: 2}]}
    """)
    with pytest.raises(ScenarioError, match=r"^cluster\.disaggregation\.decode\.parallelism\.tp: .*num_heads=14"):
        prepare(data)


def test_a_decode_reservation_covers_the_lookahead_slots_of_a_requests_last_steps():
    """vLLM V1 with EAGLE-3 asks for 5 lookahead slots beyond context + q at every decode step (BatchLimits.
    kv_lookahead); a decode replica reserved prompt + output + q at hand-off (652 + 30 + 6 = 688 tokens, 43 blocks)
    while a request's last steps ask for 691 (44 blocks). Here the decode pool holds exactly three reservations
    (129 blocks): the first request to reach its last steps preempted the newest one, which was reserved and sent a
    second time, and its prefill replica's second release raised KeyError (found by tests/test_equivalence_fuzz.py,
    draw 1412). The reservation now covers the peak (DecodeReplica.reservation_tokens): no decode replica
    preempts, and bulk and step modes agree."""
    data = {"name": "disagg-lookahead", "seed": 1,
            "workload": {"arrival": {"process": "poisson", "qps": 50.0}, "num_requests": 8,
                         "prompt_tokens": {"kind": "fixed", "value": 652}, "output_tokens": {"kind": "fixed", "value": 30}},
            "cluster": {"hardware": "h100-sxm", "model": "llama-3.1-8b", "engine": {"framework": "vllm", "version": "0.11.0"},
                        "disaggregation": {"prefill": {"replicas": 1}, "decode": {"replicas": 1}},
                        "max_model_len": 2048, "gpu_memory_utilization": 0.228},
            "drafter": {"kind": "eagle3", "gamma": 5}, "outputs": {"plots": False}}
    bulk, step = run(data, step_mode="bulk"), run(data, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    decode = bulk.built.pools[1].replicas[0]
    assert decode.kv.total_blocks == 129 and decode.limits.kv_lookahead == 5
    assert int(decode.kv.blocks_for(decode.reservation_tokens(0))) == 44
    req = bulk.requests
    assert bulk.summary["requests_finished"] == 8 and (req.emitted_tokens == 30).all()
    assert (req.preemptions == 0).all() and bulk.summary["preemptions"] == 0
    assert (req.kv_wait_s > 0).any()   # (the pool is full: later requests wait for a reservation)


def test_a_prefill_replica_waits_for_a_release_where_trtllm_would_not_admit_its_head(monkeypatch):
    """TensorRT-LLM's GUARANTEED_NO_EVICT admits a prompt only where the blocks of its whole prompt are free; with
    prefix caching a prefill replica's `can_admit_head` counted the 64 blocks of the shared 1,024-token prefix,
    in use by the requests held there for their transfer (the decode pool is full), as the head's own, so the
    replica had work by its own rule while the scheduler planned nothing: empty steps at one clock forever
    (`draftsim run` hung; found by tests/test_equivalence_fuzz.py). It now waits for a release; bulk and step
    modes agree. (An empty prefill plan at one clock 1,000 times in a row fails the test instead of hanging.)"""
    from simulator.cluster.pool_replicas import PrefillReplica

    plan_step, seen = PrefillReplica.plan_step, {}

    def bounded(self, now_s):
        plan = plan_step(self, now_s)
        key = (self.index, now_s)
        seen[key] = seen.get(key, 0) + 1 if plan.empty else 0
        assert seen[key] < 1000, f"prefill replica {self.index} plans empty steps at {now_s} s"
        return plan

    monkeypatch.setattr(PrefillReplica, "plan_step", bounded)
    data = {"name": "disagg-trtllm-prefix", "seed": 1,
            "workload": {"arrival": {"process": "poisson", "qps": 100.0}, "num_requests": 30,
                         "prompt_tokens": {"kind": "fixed", "value": 80}, "output_tokens": {"kind": "fixed", "value": 100},
                         "shared_prefix": {"prompts": 1, "tokens": 1024}},
            "cluster": {"hardware": "h100-sxm", "model": "llama-3.1-8b",
                        "disaggregation": {"prefill": {"replicas": 1}, "decode": {"replicas": 1}},
                        "kv_cache": {"prefix_caching": True}, "max_model_len": 1300, "gpu_memory_utilization": 0.217},
            "scheduler": {"kind": "trtllm"}, "outputs": {"plots": False}}
    bulk, step = run(data, step_mode="bulk"), run(data, step_mode="step")
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)
    assert bulk.built.pools[0].replicas[0].kv.total_blocks == 93
    assert bulk.summary["requests_finished"] == 30 and (bulk.requests.emitted_tokens == 100).all()
    assert (bulk.requests.cached_prompt_tokens > 0).sum() > 20


def test_requests_fit_both_pools_contexts_and_the_summary_names_each(tmp_path, capsys):
    """The pools' releases follow their GPUs' measured tables (vLLM 0.24.0 on an H100 SXM; the newest modelled
    release, >= 0.30, on an H100 PCIe without tables), which derive different contexts for Qwen3-8B with Qwen's YaRN
    block: 131,072 (original 32,768 × 4) and 40,960 (yarn exempt from 0.30). Before, only the decode pool's was
    applied, so a prefill pool at 40,960 ran 60,010-token requests its server refuses, and summary.json named one
    pool's limit as the run's (session 24)."""
    import json
    from pathlib import Path
    cfg = json.loads((Path(__file__).resolve().parents[2] / "data/hf_configs/Qwen3-8B/config.json").read_text())
    cfg["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    (tmp_path / "qwen3").mkdir()
    (tmp_path / "qwen3" / "config.json").write_text(json.dumps(cfg))

    def data(prefill_gpu: str, decode_gpu: str, prompt: int) -> dict:
        out = disagg(link="scaleout", workload={"prompt_tokens": {"kind": "fixed", "value": prompt},
                                                "output_tokens": {"kind": "fixed", "value": 10},
                                                "num_requests": 3, "arrival": {"process": "poisson", "qps": 0.5}},
                     cluster={"model": str(tmp_path / "qwen3" / "config.json"), "hardware": "h100-sxm",
                              "dtype": "bf16", "disaggregation": {"prefill": {"hardware": prefill_gpu},
                                                                  "decode": {"hardware": decode_gpu}}})
        del out["cluster"]["engine"]
        return out

    for prefill_gpu, decode_gpu in (("h100-pcie", "h100-sxm"), ("h100-sxm", "h100-pcie")):
        with pytest.raises(ScenarioError, match="needs 60010 tokens .* the context of qwen3 is 40960"):
            run(data(prefill_gpu, decode_gpu, 60000))
    summary = run(data("h100-sxm", "h100-pcie", 6000)).summary
    assert summary["context_limit_tokens"] == {"decode": 40960, "prefill": 131072}
    assert summary["context_rule"]["decode"].startswith("max_position_embeddings: vLLM")
    assert summary["context_rule"]["prefill"].startswith("rope_scaling.original_max_position_embeddings × ")
