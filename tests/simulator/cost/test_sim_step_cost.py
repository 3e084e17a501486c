"""Step cost: the interpolated decode-attention pricing against exact op-graph pricing."""
from __future__ import annotations

import numpy as np
import pytest

from models import get_model
from models.opgraph import attention_ops, dense_ops
from models.step import Parallelism, StepShape
from profiles.roofline import RooflineLatencyModel
from simulator.cost import step_table
from simulator.cost.step_cost import CTX_GRID_TOKENS, ForwardCost, StepCostModel, interpolate_on_grid


def _exact(fc: ForwardCost, seqs: int, q: int, ctx_sum: int) -> np.ndarray:
    shape = StepShape(decode_seqs=seqs, query_tokens_per_seq=q, decode_context_tokens=ctx_sum)
    ops = dense_ops(fc.spec, seqs * q, seqs * q, fc.parallelism, fc.dtype) + \
        attention_ops(fc.spec, shape, fc.parallelism, fc.dtype)
    return np.array([sum(o.count * fc.latency.op_seconds(o) for o in ops),
                     sum(o.count * o.flops for o in ops), sum(o.count * o.bytes for o in ops)])


@pytest.mark.parametrize("model,hw,tp", [("llama-3-8b", "h100-sxm", 1), ("llama-2-70b", "a100-80gb", 4),
                                         ("qwen2.5-coder-1.5b", "l40s", 1)])
def test_interpolated_decode_cost_matches_exact_pricing(model, hw, tp):
    fc = ForwardCost(get_model(model), Parallelism(tp, 1), RooflineLatencyModel(hw), "bf16")
    rng = np.random.default_rng(0)
    worst = 0.0
    for seqs, q in [(1, 1), (7, 5), (64, 1), (200, 3)]:
        sums = rng.integers(0, 8000 * seqs, size=200)
        got = fc.decode_forward(seqs, q, sums)
        want = np.array([_exact(fc, seqs, q, int(c)) for c in sums])
        np.testing.assert_allclose(got[:, 1:], want[:, 1:], rtol=1e-9)  # FLOPs and bytes: affine, exact
        worst = max(worst, float(np.max(np.abs(got[:, 0] / want[:, 0] - 1))))
        # At grid points the price is exact.
        grid = np.arange(0, 50) * CTX_GRID_TOKENS * seqs
        np.testing.assert_allclose(fc.decode_forward(seqs, q, grid),
                                   np.array([_exact(fc, seqs, q, int(c)) for c in grid]), rtol=1e-12)
    assert worst < 1e-3


def test_step_cost_of_decode_only_step_is_draft_passes_plus_verify():
    lat = RooflineLatencyModel("h100-sxm")
    target = ForwardCost(get_model("llama-3-8b"), Parallelism(), lat, "bf16")
    draft = ForwardCost(get_model("llama-68m"), Parallelism(), lat, "bf16")
    model = StepCostModel(target, draft, depth=3)
    costs = model.step(0, 0, 0, decode_seqs=8, decode_context_tokens=8 * 1024)
    d, t = costs.draft, costs.target
    want_t = target.decode_forward(8, 4, np.array([8 * 1024]))[0]
    want_d = sum(draft.decode_forward(8, 1, np.array([8 * 1024 + j * 8]))[0] for j in range(3))
    np.testing.assert_allclose([t.seconds, t.flops, t.bytes], want_t, rtol=1e-12)
    np.testing.assert_allclose([d.seconds, d.flops, d.bytes], want_d, rtol=1e-12)
    # A verify of γ+1 tokens costs more than a plain decode step, and less than γ+1 of them.
    plain = target.decode_forward(8, 1, np.array([8 * 1024]))[0][0]
    assert plain < t.seconds < 4 * plain


@pytest.mark.parametrize("gamma", [0, 3])
def test_interpolated_whole_decode_step_matches_op_by_op(gamma):
    lat = RooflineLatencyModel("a100-80gb")
    target = ForwardCost(get_model("llama-2-7b"), Parallelism(), lat, "bf16")
    draft = ForwardCost(get_model("llama-68m"), Parallelism(), lat, "bf16") if gamma else None
    model = StepCostModel(target, draft, gamma)
    rng = np.random.default_rng(1)
    for seqs in (1, 5, 48, 128):
        sums = np.sort(rng.integers(0, 3000 * seqs, size=100))
        d, t = model.decode_steps(seqs, sums)
        exact = np.array([model.exact_decode_step(seqs, int(c)) for c in sums])
        np.testing.assert_allclose(d[:, 1:], exact[:, 1:3], rtol=1e-9)
        np.testing.assert_allclose(t[:, 1:], exact[:, 4:], rtol=1e-9)
        np.testing.assert_allclose(d[:, 0] + t[:, 0], exact[:, 0] + exact[:, 3], rtol=1e-3)
    # a varying batch size along the array is priced like each size alone
    seqs = np.array([9, 9, 9, 4, 4, 1])
    sums = np.array([900, 1000, 1100, 800, 820, 300])
    d, t = model.decode_steps(seqs, sums)
    for i in range(len(seqs)):
        di, ti = model.decode_steps(int(seqs[i]), sums[i:i + 1])
        np.testing.assert_array_equal(d[i], di[0])
        np.testing.assert_array_equal(t[i], ti[0])


def _bulk_like_inputs(rng) -> tuple[np.ndarray, np.ndarray]:
    """Batch sizes that only shrink with contexts growing between shrinks, as in a bulk of steps."""
    seqs = np.repeat([40, 37, 36, 20, 3], [5, 3, 7, 2, 4])
    sums = np.cumsum(rng.integers(0, 4000, size=len(seqs))) + 500 * seqs
    return seqs, sums


def test_batch_context_table_gives_the_per_batch_tables_values_bit_for_bit():
    lat = RooflineLatencyModel("a100-80gb")
    target = ForwardCost(get_model("llama-2-7b"), Parallelism(), lat, "bf16")
    draft = ForwardCost(get_model("llama-68m"), Parallelism(), lat, "bf16")
    model = StepCostModel(target, draft, depth=4)
    seqs, sums = _bulk_like_inputs(np.random.default_rng(3))
    d, t = model.decode_steps(seqs, sums, monotone=True)
    want = interpolate_on_grid({}, model._make_step_grid, seqs, sums)  # the per-batch-table path
    np.testing.assert_array_equal(np.concatenate([d, t], axis=1), want)
    # growing the table in every direction (smaller and larger contexts, larger batches) keeps rows
    d2, t2 = model.decode_steps(np.array([200, 1]), np.array([200 * 16 * 900, 3]))
    d3, t3 = model.decode_steps(seqs, sums, monotone=True)
    np.testing.assert_array_equal(np.concatenate([d3, t3], axis=1), want)
    assert model._step_table.have.sum() < model._step_table.have.size  # filled on demand, not all


def test_step_costs_fall_back_to_per_batch_tables_past_the_memory_cap(monkeypatch):
    lat = RooflineLatencyModel("a100-80gb")
    target = ForwardCost(get_model("llama-2-7b"), Parallelism(), lat, "bf16")
    seqs, sums = _bulk_like_inputs(np.random.default_rng(4))
    roomy = StepCostModel(target, None, depth=0)
    want = roomy.decode_steps(seqs, sums, monotone=True)
    monkeypatch.setattr(step_table, "MAX_TABLE_BYTES", 1024)
    capped = StepCostModel(ForwardCost(get_model("llama-2-7b"), Parallelism(), lat, "bf16"), None, depth=0)
    got = capped.decode_steps(seqs, sums, monotone=True)
    assert capped._step_table.cube.size == 0 and capped._step_grid  # the fallback did the work
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_lazy_grid_computes_only_the_rows_asked_for_and_fills_holes_when_asked():
    """Rows between two ranges asked for are not computed (they were, when the table grew: what the grid
    priced then depended on the order of lookups — replicas sharing a grid in one process against replicas
    in worker processes — and so did the summary's count of distinct op shapes); a lookup over a hole
    computes it, and every value is f's."""
    from simulator.cost.step_cost import LazyGrid
    asked = []

    def f(i):
        asked.append(i)
        return np.array([i * 1.5, -i, 2.0 ** -i])

    grid = LazyGrid(f, 3)
    grid.rows(3, 5)
    grid.rows(10, 11)
    assert sorted(asked) == [3, 4, 5, 10, 11] and grid.gaps == 4
    assert not grid.covers(5, 6) and grid.covers(10, 11)
    x = np.array([7.5 * CTX_GRID_TOKENS])   # one sequence, between grid rows 7 and 8 (a hole)
    got = interpolate_on_grid({1: grid}, None, 1, x)
    assert sorted(asked) == [3, 4, 5, 7, 8, 10, 11]
    np.testing.assert_array_equal(got[0], 0.5 * f(7) + 0.5 * f(8))
    table, base = grid.rows(3, 11)   # filling every hole: the whole table is f's rows
    np.testing.assert_array_equal(table, np.array([f(i) for i in range(3, 12)]))
    assert base == 3 and grid.gaps == 0 and np.array_equal(grid.upper, table[1:])


def test_one_context_is_interpolated_to_the_same_floats_as_many():
    """A single (batch, Σ context) takes a scalar path (`_interpolate_one`: a mixed step's decode attention);
    its floats must be those of the vectorized path, which prices the same value among others."""
    fc = ForwardCost(get_model("llama-2-7b"), Parallelism(), RooflineLatencyModel("a100-80gb"), "bf16")
    rng = np.random.default_rng(11)
    for seqs in (1, 3, 32, 117):
        sums = rng.integers(0, 4000 * seqs, size=60)
        many = fc.decode_forward(seqs, 1, sums)
        for i, s in enumerate(sums.tolist()):
            one = fc.decode_forward(seqs, 1, np.array([s]))
            assert one.shape == (1, 3) and one[0].tolist() == many[i].tolist()
        # a float context (callers may pass one) is divided, not truncated, as in the vectorized path
        assert fc.decode_forward(seqs, 1, np.array([123.75 * seqs]))[0].tolist() == \
            fc.decode_forward(seqs, 1, np.array([123.75 * seqs, 0.0]))[0].tolist()
