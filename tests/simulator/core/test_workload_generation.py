"""Workload generation: arrival processes, length distributions, config validation."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError
from scipy import stats

from simulator.errors import ScenarioError
from simulator.config.workload import LengthDist, WorkloadConfig
from simulator.core.workload import RequestTable, arrival_times, generate_requests

LENGTHS = TypeAdapter(LengthDist)


def workload(arrival: dict, **extra):
    body = {"arrival": arrival, "prompt_tokens": {"kind": "fixed", "value": 8},
            "output_tokens": {"kind": "fixed", "value": 4}}
    body.update(extra)
    return WorkloadConfig.model_validate(body).spec()


def sample(spec: dict, n: int, seed: int = 0, base_dir: Path = Path(".")) -> np.ndarray:
    return LENGTHS.validate_python(spec).spec().sample(n, np.random.default_rng(seed), base_dir, "x")


def test_fixed_length_is_constant():
    values = sample({"kind": "fixed", "value": 37}, 1000)
    assert values.dtype == np.int64 and np.all(values == 37)


def test_uniform_length_is_inclusive_and_flat():
    values = sample({"kind": "uniform", "low": 3, "high": 7}, 50_000)
    assert values.dtype == np.int64 and values.min() == 3 and values.max() == 7
    counts = np.bincount(values)[3:]
    # chi-square goodness of fit against the discrete uniform on 3..7
    assert stats.chisquare(counts).pvalue > 1e-3
    assert abs(values.mean() - 5.0) < 0.03


def test_lognormal_untruncated_median_and_mean():
    spec = {"kind": "lognormal", "median": 400.0, "sigma": 0.5}
    values = sample(spec, 200_000)
    assert values.min() >= 1
    assert abs(np.median(values) / 400.0 - 1) < 0.01
    expected_mean = 400.0 * np.exp(0.5 * 0.5**2)
    assert abs(values.mean() / expected_mean - 1) < 0.01
    assert abs(LENGTHS.validate_python(spec).spec().mean() / expected_mean - 1) < 1e-12


def test_lognormal_truncation_bounds_and_mean_match_brute_force():
    spec = {"kind": "lognormal", "median": 500.0, "sigma": 1.0, "min": 64, "max": 2048}
    values = sample(spec, 200_000, seed=3)
    assert values.min() >= 64 and values.max() <= 2048
    # brute force: rejection sampling from the untruncated lognormal
    raw = np.random.default_rng(9).lognormal(np.log(500.0), 1.0, 2_000_000)
    kept = raw[(raw >= 64) & (raw <= 2048)]
    assert abs(values.mean() / kept.mean() - 1) < 0.01
    assert abs(LENGTHS.validate_python(spec).spec().mean() / kept.mean() - 1) < 0.005
    # truncation, not clipping: no probability mass piles up at the bounds
    assert np.mean(values == 2048) < 0.002 and np.mean(values == 64) < 0.002


def test_lognormal_far_upper_tail_range_is_sampled_precisely():
    # median 10, range [200, 400]: z_low ~ 6 sigma, where naive CDF inversion loses all precision
    values = sample({"kind": "lognormal", "median": 10.0, "sigma": 0.5, "min": 200, "max": 400}, 20_000)
    assert values.min() >= 200 and values.max() <= 400
    assert np.mean(values < 230) > 0.8  # the density falls steeply inside the range


def test_lognormal_negligible_range_is_rejected():
    with pytest.raises(ValidationError) as err:
        LENGTHS.validate_python({"kind": "lognormal", "median": 10, "sigma": 0.1, "min": 1000})
    assert "probability" in str(err.value)


def test_empirical_length_resamples_the_column(tmp_path):
    (tmp_path / "lens.csv").write_text("id,tokens\n1,5\n2,9\n3,9\n")
    values = sample({"kind": "empirical", "csv": "lens.csv", "column": "tokens"}, 30_000, base_dir=tmp_path)
    assert set(np.unique(values)) == {5, 9}
    assert abs(np.mean(values == 9) - 2 / 3) < 0.01


def test_empirical_length_bad_column_names_the_field(tmp_path):
    (tmp_path / "lens.csv").write_text("tokens\n5\n0\n")
    with pytest.raises(ScenarioError) as err:
        sample({"kind": "empirical", "csv": "lens.csv", "column": "tokens"}, 10, base_dir=tmp_path)
    assert err.value.field == "x.csv" and "'tokens'" in str(err.value) and "line 3" in str(err.value)


def test_poisson_gaps_have_mean_one_over_qps_and_cv_one():
    arrival = workload({"process": "poisson", "qps": 4.0}, num_requests=10).arrival
    times = arrival_times(arrival, np.random.default_rng(1), num_requests=200_000)
    gaps = np.diff(np.concatenate([[0.0], times]))
    assert abs(gaps.mean() * 4.0 - 1) < 0.01
    assert abs(gaps.std() / gaps.mean() - 1) < 0.01
    assert stats.kstest(gaps, "expon", args=(0, 0.25)).pvalue > 1e-3


@pytest.mark.parametrize("cv", [0.5, 1.0, 3.0])
def test_gamma_gaps_match_requested_cv(cv):
    arrival = workload({"process": "gamma", "qps": 10.0, "cv": cv}, num_requests=10).arrival
    times = arrival_times(arrival, np.random.default_rng(2), num_requests=400_000)
    gaps = np.diff(np.concatenate([[0.0], times]))
    assert abs(gaps.mean() * 10.0 - 1) < 0.02
    assert abs(gaps.std() / gaps.mean() / cv - 1) < 0.02


def test_duration_mode_keeps_arrivals_inside_window_and_count_is_poisson():
    arrival = workload({"process": "poisson", "qps": 50.0}, num_requests=10).arrival
    counts = []
    for seed in range(300):
        times = arrival_times(arrival, np.random.default_rng(seed), duration_s=2.0)
        assert np.all(times < 2.0) and np.all(np.diff(times) >= 0)
        counts.append(len(times))
    counts = np.array(counts)
    assert abs(counts.mean() / 100 - 1) < 0.02  # E[N] = qps * T
    assert abs(counts.var() / 100 - 1) < 0.2  # Var[N] = qps * T for a Poisson process


def test_generate_requests_is_reproducible_and_lengths_do_not_move_arrivals():
    base = workload({"process": "gamma", "qps": 5.0, "cv": 2.0}, num_requests=1000)
    first = generate_requests(base, np.random.default_rng(7), Path("."))
    second = generate_requests(base, np.random.default_rng(7), Path("."))
    assert np.array_equal(first.arrival_s, second.arrival_s)
    assert np.array_equal(first.prompt_tokens, second.prompt_tokens)
    other = workload({"process": "gamma", "qps": 5.0, "cv": 2.0}, num_requests=1000,
                     prompt_tokens={"kind": "uniform", "low": 1, "high": 100})
    third = generate_requests(other, np.random.default_rng(7), Path("."))
    assert np.array_equal(first.arrival_s, third.arrival_s)
    assert len(first) == 1000 and first.arrival_s.dtype == np.float64
    assert first.prompt_tokens.dtype == np.int64 and np.all(first.output_tokens == 4)
    with pytest.raises(ValueError):
        first.arrival_s[0] = 1.0  # read-only


def test_request_table_rejects_bad_columns():
    with pytest.raises(ValueError, match="sorted"):
        RequestTable(np.array([1.0, 0.5]), np.array([1, 1]), np.array([1, 1]))
    with pytest.raises(ValueError, match="prompt_tokens"):
        RequestTable(np.array([0.5, 1.0]), np.array([0, 1]), np.array([1, 1]))
    with pytest.raises(ValueError, match="equal length"):
        RequestTable(np.array([0.5]), np.array([1, 1]), np.array([1, 1]))


@pytest.mark.parametrize("body, loc", [
    ({"arrival": {"process": "gamma", "qps": 1.0}}, ("arrival", "cv")),
    ({"arrival": {"process": "poisson", "qps": 0.0}}, ("arrival", "qps")),
    ({"arrival": {"process": "poisson", "qps": 1.0, "cv": 2.0}}, ("arrival", "cv")),
    ({"arrival": {"process": "poisson"}}, ("arrival", "qps")),
    ({"arrival": {"process": "trace"}}, ("arrival", "trace_csv")),
    ({"arrival": {"process": "poisson", "qps": 1.0}, "num_requests": 3, "duration_s": 2.0}, ("duration_s",)),
    ({"arrival": {"process": "poisson", "qps": 1.0}}, ("duration_s",)),
    ({"arrival": {"process": "poisson", "qps": 1.0}, "num_requests": 3, "bogus": 1}, ("bogus",)),
    ({"arrival": {"process": "poisson", "qps": 1.0}, "num_requests": 3,
      "prompt_tokens": {"kind": "uniform", "low": 9, "high": 3}}, ("prompt_tokens", "uniform", "high")),
])
def test_config_errors_name_the_field(body, loc):
    body = {"prompt_tokens": {"kind": "fixed", "value": 8}, "output_tokens": {"kind": "fixed", "value": 4},
            **body}
    with pytest.raises(ValidationError) as err:
        WorkloadConfig.model_validate(body)
    assert loc in [tuple(e["loc"]) for e in err.value.errors()]


def test_trace_forbids_length_distributions():
    with pytest.raises(ValidationError) as err:
        WorkloadConfig.model_validate({"arrival": {"process": "trace", "trace_csv": "t.csv"},
                                       "prompt_tokens": {"kind": "fixed", "value": 8}})
    assert ("prompt_tokens",) in [tuple(e["loc"]) for e in err.value.errors()]


def test_missing_length_distribution_is_reported():
    with pytest.raises(ValidationError) as err:
        WorkloadConfig.model_validate({"arrival": {"process": "poisson", "qps": 1.0}, "num_requests": 3})
    locs = [tuple(e["loc"]) for e in err.value.errors()]
    assert ("prompt_tokens",) in locs and ("output_tokens",) in locs


def test_empty_duration_window_is_a_user_error():
    cfg = workload({"process": "poisson", "qps": 1e-6}, duration_s=1e-3)
    with pytest.raises(ScenarioError) as err:
        generate_requests(cfg, np.random.default_rng(0), Path("."))
    assert err.value.field == "workload.duration_s"
