"""Trace replay: exact replay, sorting, truncation and malformed files."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulator.errors import ScenarioError
from simulator.config.workload import WorkloadConfig
from simulator.core.workload import generate_requests
from paths import REPO

FIELD = "workload.arrival.trace_csv"


def replay(tmp_path: Path, text: str, **extra):
    (tmp_path / "trace.csv").write_text(text)
    cfg = WorkloadConfig.model_validate({"arrival": {"process": "trace", "trace_csv": "trace.csv"}, **extra})
    return generate_requests(cfg.spec(), np.random.default_rng(0), tmp_path)


def test_trace_replay_is_exact(tmp_path):
    table = replay(tmp_path, "arrival_s,prompt_tokens,output_tokens,note\n0.0,10,3,a\n0.125,20,1,b\n"
                             "1.5,7,9,c\n")
    assert table.arrival_s.tolist() == [0.0, 0.125, 1.5]
    assert table.prompt_tokens.tolist() == [10, 20, 7]
    assert table.output_tokens.tolist() == [3, 1, 9]


def test_unsorted_trace_is_stably_sorted(tmp_path):
    table = replay(tmp_path, "prompt_tokens,arrival_s,output_tokens\n1,2.0,1\n2,1.0,1\n3,2.0,1\n4,0.5,1\n")
    assert table.arrival_s.tolist() == [0.5, 1.0, 2.0, 2.0]
    assert table.prompt_tokens.tolist() == [4, 2, 1, 3]


def test_trace_truncation(tmp_path):
    text = "arrival_s,prompt_tokens,output_tokens\n3,1,1\n1,2,1\n2,3,1\n"
    assert replay(tmp_path, text, num_requests=2).prompt_tokens.tolist() == [2, 3]
    assert replay(tmp_path, text, duration_s=2.5).prompt_tokens.tolist() == [2, 3]
    with pytest.raises(ScenarioError) as err:
        replay(tmp_path, text, num_requests=4)
    assert err.value.field == "workload.num_requests"


def test_blank_lines_are_skipped_and_line_numbers_stay_exact(tmp_path):
    with pytest.raises(ScenarioError) as err:
        replay(tmp_path, "arrival_s,prompt_tokens,output_tokens\n0,1,1\n\n1,x,1\n")
    assert "line 4" in str(err.value)
    assert len(replay(tmp_path, "arrival_s,prompt_tokens,output_tokens\n0,1,1\n\n1,2,1\n\n")) == 2


@pytest.mark.parametrize("text, needle", [
    ("", "empty"),
    ("arrival_s,prompt_tokens,output_tokens\n", "no data rows"),
    ("arrival_s,prompt_tokens\n0,1\n", "'output_tokens'"),
    ("arrival_s,prompt_tokens,output_tokens\n0,12,abc\n", "column 'output_tokens', line 2: 'abc'"),
    ("arrival_s,prompt_tokens,output_tokens\n0,12,5\n-1,3,4\n", "column 'arrival_s', line 3: '-1'"),
    ("arrival_s,prompt_tokens,output_tokens\nnan,12,5\n", "column 'arrival_s', line 2: 'nan'"),
    ("arrival_s,prompt_tokens,output_tokens\n0,,5\n", "column 'prompt_tokens', line 2: ''"),
    ("arrival_s,prompt_tokens,output_tokens\n0,12.5,5\n", "column 'prompt_tokens', line 2: '12.5'"),
    ("arrival_s,prompt_tokens,output_tokens\n0,0,5\n", "column 'prompt_tokens', line 2: '0'"),
    ("arrival_s,prompt_tokens,output_tokens\ninf,1,5\n", "column 'arrival_s', line 2: 'inf'"),
    ("arrival_s,prompt_tokens,output_tokens\n0,1e30,5\n", "column 'prompt_tokens', line 2"),
])
def test_malformed_trace_names_file_column_and_line(tmp_path, text, needle):
    with pytest.raises(ScenarioError) as err:
        replay(tmp_path, text)
    assert err.value.field == FIELD
    assert "trace.csv" in str(err.value) and needle in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_trace_file(tmp_path):
    cfg = WorkloadConfig.model_validate({"arrival": {"process": "trace", "trace_csv": "nope.csv"}})
    with pytest.raises(ScenarioError, match="file not found"):
        generate_requests(cfg.spec(), np.random.default_rng(0), tmp_path)


def test_shipped_example_trace_replays():
    cfg = WorkloadConfig.model_validate({"arrival": {"process": "trace", "trace_csv": "example_trace.csv"}})
    table = generate_requests(cfg.spec(), np.random.default_rng(0), REPO / "scenarios" / "traces")
    assert len(table) == 24 and np.all(np.diff(table.arrival_s) >= 0)
    assert table.prompt_tokens.min() >= 1 and table.output_tokens.min() >= 1
