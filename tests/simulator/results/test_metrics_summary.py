"""Metrics: derived request columns and the summary on a hand-built run with known answers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from simulator.config.scenario import SLOConfig
from simulator.results.metrics import SLO, build_requests_frame, build_steps_frame, format_summary_table, summarize

NAN = np.nan


def tiny_run():
    """One replica, two GPUs, window [0, 1] s. Request 3 is dropped; request 2 emits a single token.

    Sojourns: r0 [0, 0.5), r1 [0.2, 1.0), r2 [0.4, 0.6), r3 dropped at arrival => integral of N(t) = 1.5.
    The step log's (queued + running) counts integrate to the same 1.5 request-seconds.
    """
    requests = dict(
        request_id=np.arange(4), replica=np.zeros(4, int), arrival_s=np.array([0.0, 0.2, 0.4, 0.6]),
        admit_s=np.array([0.0, 0.5, 0.5, NAN]), first_token_s=np.array([0.1, 0.6, 0.6, NAN]),
        finish_s=np.array([0.5, 1.0, 0.6, NAN]), prompt_tokens=np.array([10, 20, 30, 40]),
        output_tokens=np.array([5, 3, 1, 7]), emitted_tokens=np.array([5, 3, 1, 0]),
        preemptions=np.array([0, 1, 0, 0]), decode_steps=np.array([2, 1, 0, 0]),
        accepted_tokens=np.array([2, 1, 0, 0]), drafted_tokens=np.array([4, 2, 0, 0]),
        dropped=np.array([False, False, False, True]), drop_reason=np.array(["", "", "", "kv_capacity"]))
    steps = dict(
        replica=np.zeros(5, int), start_s=np.array([0.0, 0.2, 0.4, 0.5, 0.6]),
        duration_s=np.array([0.2, 0.2, 0.1, 0.1, 0.4]), prefill_tokens=np.array([10, 0, 20, 30, 0]),
        prefill_seqs=np.array([1, 0, 1, 1, 0]), decode_seqs=np.array([0, 1, 1, 1, 1]),
        query_tokens_per_seq=np.full(5, 3), decode_context_tokens=np.array([0, 11, 12, 33, 22]),
        draft_s=np.array([0.0, 0.05, 0.02, 0.02, 0.1]), verify_s=np.array([0.0, 0.15, 0.08, 0.08, 0.3]),
        engine_s=np.zeros(5),
        accepted_tokens=np.array([0, 1, 1, 0, 1]), emitted_tokens=np.array([1, 2, 2, 2, 2]),
        flops=np.full(5, 1e12), bytes=np.full(5, 2e11), kv_blocks_used=np.array([10, 20, 30, 40, 20]),
        kv_blocks_total=np.full(5, 100), queued_requests=np.array([0, 1, 2, 0, 0]),
        running_requests=np.array([1, 1, 1, 2, 1]))
    return requests, steps


SLO_TINY = SLO(ttft_s=0.3, tpot_s=0.15)
HW = dict(num_replicas=1, gpus_per_replica=2, peak_flops_per_gpu=1e13, peak_bw_per_gpu=1e12)


def tiny_summary(slo=SLO_TINY, sim_end_s=1.0):
    requests, steps = tiny_run()
    frame = build_requests_frame(requests, slo)
    return frame, summarize(frame, build_steps_frame(steps), slo=slo, sim_end_s=sim_end_s, **HW)


def test_derived_request_columns():
    frame, _ = tiny_summary()
    np.testing.assert_allclose(frame["ttft_s"], [0.1, 0.4, 0.2, NAN])
    np.testing.assert_allclose(frame["tpot_s"], [0.1, 0.2, NAN, NAN])  # single token => no TPOT
    np.testing.assert_allclose(frame["e2e_s"], [0.5, 0.8, 0.2, NAN])
    np.testing.assert_allclose(frame["queue_s"], [0.0, 0.3, 0.1, NAN])
    np.testing.assert_allclose(frame["mean_accepted_length"], [1.0, 1.0, NAN, NAN])
    assert frame["slo_met"].tolist() == [True, False, True, False]
    assert str(frame["drop_reason"].dtype) == "str" and frame["dropped"].dtype == bool


def test_summary_known_answers():
    _, s = tiny_summary()
    assert (s["requests_arrived"], s["requests_finished"], s["requests_dropped"]) == (4, 3, 1)
    assert s["dropped_by_reason"] == {"kv_capacity": 1} and s["requests_unfinished"] == 0
    # TTFT over finished requests: sorted [0.1, 0.2, 0.4]; linear interpolation between order statistics
    assert s["ttft_p50_s"] == pytest.approx(0.2)
    assert s["ttft_p90_s"] == pytest.approx(0.2 + 0.8 * 0.2)
    assert s["ttft_p99_s"] == pytest.approx(0.2 + 0.98 * 0.2)
    assert s["ttft_mean_s"] == pytest.approx(0.7 / 3)
    assert s["tpot_p50_s"] == pytest.approx(0.15) and s["e2e_p50_s"] == pytest.approx(0.5)
    assert s["window_s"] == pytest.approx(1.0)
    assert s["output_tokens_per_s"] == pytest.approx(9.0)
    assert s["requests_per_s"] == pytest.approx(3.0)
    assert s["goodput_rps"] == pytest.approx(2.0) and s["goodput_per_gpu_rps"] == pytest.approx(1.0)
    assert s["slo_attainment"] == pytest.approx(0.5) and s["slo_attained"] is False
    assert s["mean_accepted_length"] == pytest.approx(1.0) and s["tokens_per_step"] == pytest.approx(2.0)
    assert s["draft_acceptance_rate"] == pytest.approx(0.5)
    assert s["utilization_mean"] == pytest.approx(1.0)
    assert s["mfu"] == pytest.approx(5e12 / (1.0 * 1e13 * 2))
    assert s["mbu"] == pytest.approx(1e12 / (1.0 * 1e12 * 2))
    assert s["kv_use_mean"] == pytest.approx((0.1 * 0.2 + 0.2 * 0.2 + 0.3 * 0.1 + 0.4 * 0.1 + 0.2 * 0.4) / 1.0)
    assert s["kv_use_max"] == pytest.approx(0.4)
    assert s["steps"] == 5 and s["preemptions"] == 1
    assert s["little_lambda_rps"] == pytest.approx(4.0) and s["little_W_s"] == pytest.approx(0.375)
    assert s["little_L_requests"] == pytest.approx(1.5) and s["little_L_steps"] == pytest.approx(1.5)
    assert s["little_rel_err"] == pytest.approx(0.0, abs=1e-12)


def test_no_slo_means_every_finished_request_counts():
    _, s = tiny_summary(slo=SLO())
    assert s["goodput_rps"] == pytest.approx(3.0) and s["slo_attainment"] == pytest.approx(0.75)


def test_longer_window_dilutes_rates_and_utilization():
    _, s = tiny_summary(sim_end_s=2.0)
    assert s["requests_per_s"] == pytest.approx(1.5) and s["utilization_mean"] == pytest.approx(0.5)
    assert s["mfu"] == pytest.approx(5e12 / (2.0 * 1e13 * 2)) and s["mfu_busy"] == pytest.approx(0.25)


def test_little_time_integral_matches_brute_force_with_clipping():
    """Random sojourns, a window that cuts some of them: the integral of N(t) against a fine time grid."""
    rng = np.random.default_rng(4)
    n = 300
    arrival = np.sort(rng.uniform(0, 10, n))
    finish = arrival + rng.exponential(1.0, n)
    requests = dict(
        request_id=np.arange(n), replica=np.zeros(n, int), arrival_s=arrival, admit_s=arrival,
        first_token_s=arrival, finish_s=finish, prompt_tokens=np.ones(n, int), output_tokens=np.ones(n, int),
        emitted_tokens=np.ones(n, int), preemptions=np.zeros(n, int), decode_steps=np.zeros(n, int),
        accepted_tokens=np.zeros(n, int), drafted_tokens=np.zeros(n, int), dropped=np.zeros(n, bool),
        drop_reason=np.full(n, ""))
    steps = {k: np.zeros(0, dtype=float if k.endswith("_s") or k in ("flops", "bytes") else int)
             for k in tiny_run()[1]}
    end = 8.0
    s = summarize(build_requests_frame(requests), build_steps_frame(steps), slo=SLO(), sim_end_s=end, **HW)
    grid = np.linspace(arrival[0], end, 400_001)
    mid = 0.5 * (grid[1:] + grid[:-1])
    in_system = np.zeros(len(mid))
    for a, f in zip(arrival, finish):
        lo, hi = np.searchsorted(mid, [a, f])
        in_system[lo:hi] += 1
    brute = in_system.sum() * (grid[1] - grid[0]) / (end - arrival[0])
    assert s["little_L_requests"] == pytest.approx(brute, rel=1e-3)
    assert s["utilization_mean"] == 0.0 and math.isnan(s["kv_use_mean"]) and s["steps"] == 0


def test_multiple_replicas_utilization_spread():
    requests, steps = tiny_run()
    steps["replica"] = np.array([0, 0, 0, 0, 0])
    s = summarize(build_requests_frame(requests), build_steps_frame(steps), slo=SLO(), sim_end_s=1.0,
                  num_replicas=2, gpus_per_replica=1, peak_flops_per_gpu=1e13, peak_bw_per_gpu=1e12)
    assert s["utilization_max"] == pytest.approx(1.0) and s["utilization_min"] == 0.0
    assert s["utilization_mean"] == pytest.approx(0.5)
    steps["replica"] = np.array([0, 0, 0, 0, 2])
    with pytest.raises(ValueError, match="replica"):
        summarize(build_requests_frame(requests), build_steps_frame(steps), slo=SLO(), sim_end_s=1.0,
                  num_replicas=2, gpus_per_replica=1, peak_flops_per_gpu=1e13, peak_bw_per_gpu=1e12)


def test_frames_validate_columns_and_keep_extras():
    requests, steps = tiny_run()
    del requests["drafted_tokens"]
    with pytest.raises(ValueError, match="drafted_tokens"):
        build_requests_frame(requests)
    requests, steps = tiny_run()
    steps["note"] = np.arange(5)
    frame = build_steps_frame(steps)
    assert list(frame.columns)[-2:] == ["note", "end_s"]
    np.testing.assert_allclose(frame["end_s"], [0.2, 0.4, 0.5, 0.6, 1.0])
    steps["replica"] = np.zeros(4, int)
    with pytest.raises(ValueError, match="length"):
        build_steps_frame(steps)


def test_slo_model_validation():
    with pytest.raises(ValidationError):
        SLOConfig(ttft_s=-1.0)
    with pytest.raises(ValidationError):
        SLOConfig(attainment=1.5)
    with pytest.raises(ValidationError):
        SLOConfig(ttfts=1.0)


def test_summary_table_is_compact_and_handles_missing_values():
    _, s = tiny_summary()
    table = format_summary_table(s)
    lines = table.splitlines()
    assert len(lines) == 12 and max(len(line) for line in lines) <= 110
    assert "TTFT ms" in table and "200.00" in table and "kv_capacity 1" in table
    assert "missed" in table
    s = dict(s, mfu=math.nan, tpot_p99_s=None)
    assert "MFU -" in format_summary_table(s)


def test_summary_latency_columns_stay_aligned_for_any_magnitude():
    """Values far wider than the usual column (hours of queueing in ms) widen the column instead of
    running into the next one: every latency row has its cells' right edges at the header's."""
    _, s = tiny_summary()
    s = dict(s, ttft_p50_s=637788.221, ttft_p90_s=132075.791, ttft_p99_s=244032.64, ttft_mean_s=1.0)
    lines = format_summary_table(s).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("latency"))
    block = lines[start:start + 5]
    ends = [[m.end() for m in __import__("re").finditer(r"\S+", line)][-4:] for line in block]
    assert all(e == ends[0] for e in ends), block
    assert "637788221.00" in block[1] and "132075791.00" in block[1]


def test_pools_priced_apart_each_print_their_source():
    """Pools on different hardware report their sources apart (summary `<pool>_latency_source`); the printed table
    showed the first pool's alone, `latency  roofline (h20)`, for a decode pool priced from measured A100 tables."""
    _, s = tiny_summary()
    roofline = {"source": "roofline", "hardware": "my-gpu"}
    engine = {"framework": "vllm", "versions": "0.28.0..", "overlap": True}
    one = format_summary_table(dict(s, latency_source=roofline, engine_time=engine, engine_time_fraction=0.05))
    assert "latency      roofline (my-gpu)\nengine time  vllm 0.28.0.. (overlapped)   5.0 % of busy time" in one
    both = format_summary_table(dict(s, latency_source=roofline, engine_time=engine, engine_time_fraction=0.05,
                                     prefill_latency_source=roofline, prefill_engine_time=engine,
                                     decode_latency_source={"source": "roofline", "hardware": "h100-sxm"},
                                     decode_engine_time=None))
    assert ("latency      prefill: roofline (my-gpu)\nlatency      decode: roofline (h100-sxm)\n"
            "engine time  prefill: vllm 0.28.0.. (overlapped)\nengine time  decode: none\n"
            "engine time  5.0 % of busy time, all pools") in both
