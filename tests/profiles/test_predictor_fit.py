"""The vectorised roofline used for fitting equals RooflineLatencyModel; grid interpolation vs brute force."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from models.catalog import get_model
from models.ops import COLLECTIVE_KINDS, Op
from profiles.hardware import get_hardware
from profiles.profiler.fit import RooflineArrays, fit_collectives, raised_peaks
from profiles.profiler.interp import Grid, axis_coord, fill_holes
from profiles.profiler.plan import QUICK_GRID, plan_points
from profiles.roofline import RooflineEfficiency, RooflineLatencyModel


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_vectorised_roofline_matches_op_seconds(dtype):
    eff = RooflineEfficiency(0.3, 0.7, 7e-6, gemm_m_half=11.0, gemm_nk_half=33.0,
                             attention_compute_fraction=0.25, attention_memory_fraction=0.45)
    specs = [get_model(n) for n in ("llama-68m", "qwen2.5-coder-0.5b", "mixtral-8x7b")]
    ops = [Op.make(p.kind, p.kind, p.flops, p.bytes, 1, **p.all_dims()) for p in plan_points(specs, QUICK_GRID, dtype)]
    ops = [op for op in ops if op.kind not in COLLECTIVE_KINDS]
    for hw_id in ("cpu-local", "h100-sxm"):
        model = RooflineLatencyModel(hw_id, eff, dtype)
        arrays = RooflineArrays(ops, get_hardware(hw_id), dtype)
        expected = np.array([model.op_seconds(op) for op in ops])
        assert np.allclose(arrays.seconds(eff), expected, rtol=1e-12, atol=0)


def test_raised_peaks_cover_the_fastest_measurement():
    hw = get_hardware("cpu-local")
    op = Op.make("gemm", "g", 2e12, 1e6, 1, m=1000, n=1000, k=1000)
    raised = raised_peaks(hw, [op], np.array([1.0]), "fp32")      # 2 TFLOP/s achieved > 256 GFLOP/s nominal
    assert raised.matmul_flops("fp32") == pytest.approx(2e12)
    assert raised_peaks(hw, [op], np.array([100.0]), "fp32") is hw


def test_fit_collectives_recovers_alpha_and_bandwidth():
    alpha, bw, launch = 4e-5, 3e9, 1e-5
    ops, secs = [], []
    for size in (1e3, 1e5, 1e7):
        ops.append(Op.make("allreduce", "a", 0.0, size, 1, bytes=size, ranks=4))
        secs.append(launch + 6 * alpha + 1.5 * size / bw)
        ops.append(Op.make("p2p", "p", 0.0, size, 1, bytes=size))
        secs.append(launch + alpha + size / bw)
    got_alpha, got_bw = fit_collectives(ops, secs, launch)
    assert got_alpha == pytest.approx(alpha, rel=1e-6) and got_bw == pytest.approx(bw, rel=1e-6)
    assert fit_collectives([], [], launch) is None


def test_grid_multilinear_matches_brute_force_and_is_exact_at_nodes():
    rng = np.random.default_rng(7)
    axes = [[1, 4, 16, 64], [0, 64, 512], [1, 2]]
    values = rng.normal(size=(4, 3, 2))
    grid = Grid(axes, values)
    for idx in itertools.product(range(4), range(3), range(2)):
        cells, outside = grid.locate([axes[d][i] for d, i in enumerate(idx)])
        assert outside == 0.0 and grid.interpolate(cells)[0] == pytest.approx(values[idx])
    for _ in range(50):
        point = [rng.uniform(1, 64), rng.uniform(0, 512), rng.uniform(1, 2)]
        cells, outside = grid.locate(point)
        # brute force: weights from log1p coordinates, sum over the 8 corners
        total = 0.0
        for corner in itertools.product((0, 1), repeat=3):
            w, idx = 1.0, []
            for d, bit in enumerate(corner):
                coords = [axis_coord(v) for v in axes[d]]
                hi = next(i for i in range(1, len(coords)) if axis_coord(point[d]) <= coords[i])
                frac = (axis_coord(point[d]) - coords[hi - 1]) / (coords[hi] - coords[hi - 1])
                w *= frac if bit else 1 - frac
                idx.append(hi if bit else hi - 1)
            total += w * values[tuple(idx)]
        value, lo, hi_val = grid.interpolate(cells)
        assert value == pytest.approx(total, abs=1e-12)
        assert lo - 1e-12 <= value <= hi_val + 1e-12
    cells, outside = grid.locate([256, 0, 1])
    assert outside == pytest.approx(math.log1p(256) - math.log1p(64))
    assert grid.interpolate(cells)[0] == pytest.approx(values[3, 0, 0])


def test_fill_holes_takes_nearest_measured_value_and_rejects_empty():
    values = np.array([[1.0, np.nan], [3.0, 4.0]])
    filled = fill_holes(values)
    assert not np.isnan(filled).any() and filled[0, 1] in (1.0, 4.0)
    with pytest.raises(ValueError, match="no measured"):
        fill_holes(np.full((2, 2), np.nan))
