"""`draftsim profile` times every point in passes over the grid and keeps each point's fastest median
(profiles.profiler.run): a GPU-wide stall while one point is timed (an H100 run of 2026-11-27 read single
norm, RoPE and embedding points at 7-150x their time in the run before) must not become the profile's
price. Worked by hand here on fake timings of real planned points."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from models.catalog import get_model  # noqa: E402
from profiles.profiler.plan import GridSpec, plan_points  # noqa: E402
from profiles.profiler.run import (_rows, default_passes, main, pass_disagreements, pass_order,  # noqa: E402
                                   run_profile)
from profiles.profiler.table import HOST_OVERHEAD, read_table  # noqa: E402
from profiles.profiler.timing import TimingConfig, TimingResult  # noqa: E402

TINY = GridSpec(tokens=(1, 8), logits_tokens_max=8, prefill_chunks=(8,), prefill_prefixes=(0, 8),
                decode_seqs=(1, 2), decode_q_per_seq=(1, 3), decode_contexts=(0, 16), tree_q_per_seq=(3,),
                sampling_greedy=(1, 0), collective_ranks=(2,), collective_bytes=(4096,))


def _result(us: float, reps: int = 5) -> TimingResult:
    return TimingResult(us * 1e-6, 0.9 * us * 1e-6, 1.1 * us * 1e-6, reps)


def test_passes_alternate_direction():
    assert pass_order(3, 1) == [0, 1, 2]
    assert pass_order(3, 2) == [0, 1, 2, 2, 1, 0]
    assert pass_order(2, 3) == [0, 1, 1, 0, 0, 1]


def test_two_passes_on_gpus_one_on_cpus_and_quick_runs():
    assert default_passes("cuda", quick=False) == 2
    assert default_passes("cpu", quick=False) == 1 and default_passes("cuda", quick=True) == 1


def test_each_point_keeps_its_fastest_pass_and_large_disagreements_are_listed():
    points = plan_points([get_model("llama-68m")], TINY, "fp32")[:4]
    timings = [
        [_result(10.0), _result(2.0, reps=7)],   # a stall in pass 1: 5x
        [_result(2.0), _result(2.1)],            # 5 % apart: agrees
        [None, _result(3.0)],                    # failed in pass 1 only
        [None, None],                            # never ran: no row
    ]
    rows = _rows(points, timings)
    assert len(rows) == 3
    assert rows[0]["median_s"] == pytest.approx(2e-6) and rows[0]["reps"] == 7
    assert rows[0]["p90_s"] == pytest.approx(2.2e-6)
    assert rows[1]["median_s"] == pytest.approx(2e-6) and rows[2]["median_s"] == pytest.approx(3e-6)
    listed = pass_disagreements(points, timings)
    assert len(listed) == 1 and listed[0].startswith(points[0].kind) and "5.00x (10.00 / 2.00 us)" in listed[0]
    # rows before the second pass (a partial table): pass 1's results
    assert [r["median_s"] for r in _rows(points, [t[:1] for t in timings])] == pytest.approx([10e-6, 2e-6])


def test_bad_passes_are_refused_before_any_work(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"passes must be an integer in 1\.\.100, got 0"):
        run_profile("cpu", ["llama-68m"], tmp_path / "p", quick=True, passes=0, progress=False)
    # 1e9 passes: the timing order (points x passes indices) took 24 GB and the OOM killer ended it (2026-11-28)
    with pytest.raises(ValueError, match=r"passes must be an integer in 1\.\.100, got 1000000000"):
        run_profile("cpu", ["llama-68m"], tmp_path / "p", quick=True, passes=10**9, progress=False)
    assert main(["--device", "cpu", "--models", "llama-68m", "--quick", "--passes", "0",
                 "--out", str(tmp_path / "q")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "passes" in err
    assert not (tmp_path / "p").exists() and not (tmp_path / "q").exists()


@pytest.mark.slow
def test_a_two_pass_profile_records_its_passes(tmp_path):
    out = run_profile("cpu", ["llama-68m"], tmp_path / "two", quick=True, threads=1, grid=TINY, passes=2,
                      timing=TimingConfig(warmup=1, min_reps=3, max_reps=3, target_s=1e-3), progress=False,
                      collectives=False)
    fp = json.loads((out / "fingerprint.json").read_text())
    assert fp["timing_passes"] == 2 and fp["pass_disagreement_threshold"] == 0.2
    assert fp["pass_disagreements"] == len(fp["pass_disagreement_examples"]) or fp["pass_disagreements"] > 40
    table = read_table(out)   # every planned point once (from its faster pass), plus the CPU's host-overhead rows
    assert (table["kind"] != HOST_OVERHEAD).sum() == len(plan_points([get_model("llama-68m")], TINY, "fp32"))
