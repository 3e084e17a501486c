"""profiles.profiler.busy_ab's CPU-side parts: which points it times and what its summary says."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from models.catalog import get_model  # noqa: E402
from profiles.profiler.busy_ab import MODELS, main, small_points, summarize  # noqa: E402
from profiles.profiler.plan import plan_points  # noqa: E402
from profiles.profiler.run import default_grid  # noqa: E402


def test_small_points_are_the_microsecond_scale_ones():
    points = small_points(plan_points([get_model(m) for m in MODELS], default_grid("cuda", False), "bf16"))
    kinds = {p.kind for p in points}
    assert kinds == {"gemm", "norm", "rope", "embedding", "activation", "attn_decode"}
    for p in points:
        d = p.all_dims()
        if p.kind == "gemm":
            assert d["m"] <= 16
        elif p.kind == "attn_decode":
            assert d["seqs"] <= 2 and d["ctx_per_seq"] <= 2048 and d["q_per_seq"] == 1
        else:
            assert d["tokens"] <= 256
    assert 200 <= len(points) <= 400   # a minute or two of GPU time both ways over three rounds


def test_summary_counts_spread_and_ratio():
    rows = [{"no_spin": [1.0, 4.0, 1.0], "spin": [1.0, 1.1, 1.0]},
            {"no_spin": [2.0, 2.0, 2.0], "spin": [1.0, 1.0, 1.0]},
            {"no_spin": [1.0, 1.6, 1.0], "spin": [1.0, 1.0, 1.0]}]
    out = summarize(rows)
    assert out["no_spin"] == {"median_spread": 1.6, "max_spread": 4.0, "points_spread_over_1_5x": 2,
                              "points_spread_over_3x": 1}
    assert out["spin"]["points_spread_over_1_5x"] == 0 and out["spin"]["max_spread"] == pytest.approx(1.1)
    assert out["no_spin_over_spin_median"] == 1.0   # medians over rounds: 1/1, 2/1, 1/1
    assert out["points"] == 3


def test_cli_refuses_without_cuda_or_with_one_round(capsys, tmp_path):
    assert main(["--out", str(tmp_path), "--rounds", "1"]) == 2
    assert "--rounds" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
