"""The step totals' exact sums (simulator.results.step_totals): both ways of summing (split at two scales and
summed in float64, or mantissas binned by exponent) give the exact sum, checked against Fractions."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from simulator.results import step_totals
from simulator.results.step_totals import _exact_parts, _exact_parts_by_exponent, _split_scales


def _fraction_parts(values: np.ndarray, groups, num_groups: int) -> list[int]:
    sums = [Fraction(0)] * num_groups
    for value, group in zip(values.tolist(), [0] * len(values) if groups is None else groups.tolist()):
        sums[group] += Fraction(value)
    units = [s * 2 ** step_totals._SCALE_BITS for s in sums]
    assert all(u.denominator == 1 for u in units)
    return [int(u) for u in units]


def _arrays():
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 5, 97, 4096, 70_000):
        yield f"durations{n}", rng.uniform(1e-3, 1e-1, n), True
        yield f"flops{n}", rng.uniform(1e12, 1e14, n), True
        yield f"signed{n}", rng.normal(0.0, 1.0, n) * 2.0 ** rng.integers(-8, 8, n), n <= 4096
        yield f"zeros{n}", np.where(rng.random(n) < 0.3, 0.0, rng.uniform(1.0, 3.0, n)), True
        yield f"wide{n}", rng.uniform(0.5, 1.0, n) * 10.0 ** rng.integers(-40, 40, n), n == 1
    yield "signed zeros", np.array([-0.0, 0.0, -0.0]), True
    yield "all zero", np.zeros(10), True
    yield "cancelling", np.array([2.0 ** 52, 1.0, -(2.0 ** 52), 2.0 ** -20]), False
    yield "subnormal", np.array([5e-324, 1e-320, 3e-310]), False
    yield "huge", np.array([1.7976931348623157e308, -1.7976931348623157e308, 8e307]), False
    yield "tiny equal", np.full(1000, 2.0 ** -1000), False


@pytest.mark.parametrize("name, values, split", list(_arrays()), ids=[a[0] for a in _arrays()])
def test_exact_parts_are_exact_either_way(name, values, split):
    groups = np.random.default_rng(len(values)).integers(0, 3, len(values))
    # the case takes the path it is meant to test
    assert (_split_scales(values) is not None) == split
    for g, k in ((None, 1), (groups, 3)):
        exact = _fraction_parts(values, g, k)
        assert _exact_parts(values, g, k) == exact
        assert _exact_parts_by_exponent(values, g, k) == exact


def test_not_finite_values_are_summed_by_exponent():
    values = np.array([1.0, np.nan, 2.5, np.inf])
    assert _split_scales(values) is None
    with np.errstate(invalid="ignore"):
        assert _exact_parts(values, None, 1) == _exact_parts_by_exponent(values, None, 1)


def _steps(n: int, seed: int) -> dict[str, np.ndarray]:
    """Random steps in no particular order: 3 replicas, several steps per interval, float columns whose
    sums round differently in different orders."""
    rng = np.random.default_rng(seed)
    cols = {name: rng.integers(0, 50, n) for name in ("prefill_tokens", "prefill_seqs", "decode_seqs",
                                                       "emitted_tokens", "accepted_tokens", "queued_requests",
                                                       "running_requests", "kv_blocks_used", "kv_blocks_total")}
    cols["replica"] = rng.integers(0, 3, n)
    cols["start_s"] = rng.uniform(0.0, 3.0, n)
    for name in ("duration_s", "draft_s", "verify_s", "engine_s", "flops", "bytes", "kv_io_s"):
        cols[name] = rng.uniform(0.0, 1.0, n) * 10.0 ** rng.integers(-6, 6, n)
    return cols


def _aggregate_by_hand(cols, origin_s: float, interval_s: float) -> dict[str, list]:
    """Bins in (replica, interval) order; each bin's float sums added one step at a time in start order."""
    steps = sorted(range(len(cols["replica"])), key=lambda i: (cols["replica"][i], cols["start_s"][i]))
    bins: dict[tuple, list[int]] = {}
    for i in steps:
        bins.setdefault((int(cols["replica"][i]), int(np.floor((cols["start_s"][i] - origin_s) / interval_s))), []).append(i)
    out: dict[str, list] = {}

    def put(name, value):
        out.setdefault(name, []).append(value)

    for (replica, interval), members in bins.items():
        put("replica", replica)
        put("interval_start_s", origin_s + interval * interval_s)
        put("steps", len(members))
        floats = {"busy_s": cols["duration_s"], **{name: cols[name] for name in
                  ("draft_s", "verify_s", "engine_s", "flops", "bytes", "kv_io_s")},
                  "queued_request_s": cols["queued_requests"] * cols["duration_s"],
                  "running_request_s": cols["running_requests"] * cols["duration_s"]}
        for name, values in floats.items():
            acc = 0.0
            for i in members:
                acc += float(values[i])
            put(name, acc)
        for name in ("prefill_tokens", "prefill_seqs", "decode_seqs", "emitted_tokens", "accepted_tokens"):
            put(name, sum(int(cols[name][i]) for i in members))
        put("kv_blocks_used_max", max(int(cols["kv_blocks_used"][i]) for i in members))
        put("kv_blocks_total", max(int(cols["kv_blocks_total"][i]) for i in members))
    return out


@pytest.mark.parametrize("given", ["none", "sorted", "order", "order and keys"])
def test_aggregate_steps_sums_each_bin_in_time_order(given):
    cols = _steps(3000, 11)
    expected = _aggregate_by_hand(cols, 0.25, 0.5)
    order = np.lexsort((cols["start_s"], cols["replica"]))
    if given == "none":      # unsorted, sorted by aggregate_steps
        got = step_totals.aggregate_steps(cols, 0.25, 0.5)
    elif given == "sorted":  # already sorted: read in place
        got = step_totals.aggregate_steps({name: values[order] for name, values in cols.items()}, 0.25, 0.5)
    else:                    # the caller's order (the step log's), a subset (every step but two), and its keys
        keep = np.ones(len(order), dtype=bool)
        keep[[5, 17]] = False
        kept = order[keep]
        expected = _aggregate_by_hand({name: values[np.sort(kept)] for name, values in cols.items()}, 0.25, 0.5)
        keys = None if given == "order" else (cols["replica"][kept],
                                              step_totals.interval_index(cols["start_s"][kept], 0.25, 0.5))
        got = step_totals.aggregate_steps(cols, 0.25, 0.5, order=kept, keys=keys)
    assert set(got) == set(expected)
    for name, values in expected.items():
        assert got[name].tolist() == values, name
        assert got[name].dtype == (np.float64 if isinstance(values[0], float) else np.int64), name
