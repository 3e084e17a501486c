"""Trace importers on the shipped samples (scenarios/traces/*_sample.*), column mapping, clocks, windows,
rate scaling, and one-line errors for bad trace input."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from simulator.cli import main
from simulator.config.scenario import parse_scenario
from simulator.core.workload import generate_requests
from paths import REPO

TRACES = REPO / "scenarios" / "traces"


def load(arrival: dict, base: Path = TRACES, **workload):
    sc = parse_scenario({"workload": {"arrival": {"process": "trace", **arrival}, **workload},
                         "cluster": {"model": "llama-3.1-8b"}})
    return generate_requests(sc.workload.spec(), np.random.default_rng(0), base)


def test_azure_sample_dates_become_seconds_from_the_first_request():
    raw = pd.read_csv(TRACES / "azure_sample.csv")
    assert list(raw.columns) == ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]
    table = load({"trace_csv": "azure_sample.csv", "format": "azure"})
    stamps = pd.to_datetime(raw["TIMESTAMP"]).to_numpy(dtype="datetime64[ns]").astype(np.int64)
    assert np.allclose(table.arrival_s, (np.sort(stamps) - stamps.min()) * 1e-9)
    assert table.arrival_s[0] == 0.0 and (np.diff(table.arrival_s) >= 0).all()
    assert table.prompt_tokens.sum() == raw["ContextTokens"].sum() and table.prefixes is None


def test_burstgpt_sample_skips_failed_requests():
    raw = pd.read_csv(TRACES / "burstgpt_sample.csv")
    failed = int((raw["Response tokens"] == 0).sum())
    assert failed > 0
    table = load({"trace_csv": "burstgpt_sample.csv", "format": "burstgpt"})
    assert len(table) == len(raw) - failed
    ok = raw[raw["Response tokens"] > 0]
    assert table.output_tokens.sum() == ok["Response tokens"].sum()
    assert np.array_equal(table.arrival_s, np.sort(ok["Timestamp"].to_numpy(float)))


def test_mooncake_sample_keeps_the_ids_of_full_blocks():
    rows = [json.loads(line) for line in (TRACES / "mooncake_sample.jsonl").read_text().splitlines()]
    table = load({"trace_csv": "mooncake_sample.jsonl", "format": "mooncake"})
    assert len(table) == len(rows) and table.prefixes.unit_tokens == 512
    order = np.argsort([r["timestamp"] for r in rows], kind="stable")
    assert np.allclose(table.arrival_s, np.array([rows[i]["timestamp"] for i in order]) / 1000.0)
    # equal trace ids map to equal keys, and only the prompt's full 512-token blocks are kept
    mapping: dict = {}
    for j, i in enumerate(order):
        ids = rows[i]["hash_ids"][: rows[i]["input_length"] // 512]
        keys = table.prefixes.of(j)
        assert len(keys) == len(ids)
        for a, b in zip(ids, keys.tolist()):
            assert mapping.setdefault(a, b) == b
    assert len(set(mapping.values())) == len(mapping)


def test_column_mapping_for_other_csv_and_jsonl_layouts(tmp_path):
    (tmp_path / "mine.csv").write_text("when_ms,in,out\n1500,100,10\n500,200,20\n")
    table = load({"trace_csv": "mine.csv", "columns": {"arrival": "when_ms", "prompt_tokens": "in",
                                                       "output_tokens": "out"}, "time_unit": "ms"}, tmp_path)
    assert table.arrival_s.tolist() == [0.5, 1.5] and table.prompt_tokens.tolist() == [200, 100]
    lines = [{"t": 0.0, "p": 600, "o": 5, "blocks": [7, 8, 9]}, {"t": 2.0, "p": 400, "o": 6, "blocks": [7, 3]}]
    (tmp_path / "mine.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    table = load({"trace_csv": "mine.jsonl", "columns": {"arrival": "t", "prompt_tokens": "p", "output_tokens": "o",
                                                        "hash_ids": "blocks"}, "hash_block_tokens": 256}, tmp_path)
    assert table.prefixes.unit_tokens == 256
    assert table.prefixes.of(0).tolist() == [0, 1] and table.prefixes.of(1).tolist() == [0]   # 600 // 256, 400 // 256


def test_window_speedup_and_cuts():
    full = load({"trace_csv": "mooncake_sample.jsonl", "format": "mooncake"})
    window = load({"trace_csv": "mooncake_sample.jsonl", "format": "mooncake", "start_s": 30.0, "end_s": 90.0})
    inside = full.arrival_s[(full.arrival_s >= 30.0) & (full.arrival_s < 90.0)]
    assert np.allclose(window.arrival_s, inside - 30.0)
    fast = load({"trace_csv": "mooncake_sample.jsonl", "format": "mooncake", "speedup": 4.0})
    assert np.allclose(fast.arrival_s, full.arrival_s / 4.0)
    assert np.array_equal(fast.prompt_tokens, full.prompt_tokens)
    assert len(load({"trace_csv": "azure_sample.csv", "format": "azure"}, num_requests=25)) == 25
    assert len(load({"trace_csv": "azure_sample.csv", "format": "azure", "speedup": 2.0}, duration_s=10.0)) == \
        len(load({"trace_csv": "azure_sample.csv", "format": "azure"}, duration_s=20.0))


def test_plain_draftsim_traces_keep_the_original_reader():
    table = load({"trace_csv": "example_trace.csv"})
    raw = pd.read_csv(TRACES / "example_trace.csv")
    assert np.array_equal(table.arrival_s, np.sort(raw["arrival_s"].to_numpy())) and table.prefixes is None


def test_a_wide_trace_is_read_by_the_importer_as_by_the_plain_reader(tmp_path):
    """The importer (any trace option) read every column of a CSV trace as text: 200,000 columns held it 75 s and
    2 GB (two million: over ten minutes and 12 GB) where the plain reader took 2 s. It reads the format's
    columns only, and skips the rows blank in all of them as the plain reader does (it refused them when
    another column had text)."""
    import time
    other = ",".join(f"c{i}" for i in range(200_000))
    ones = ",".join("1" for _ in range(200_000))
    (tmp_path / "wide.csv").write_text(f"arrival_s,prompt_tokens,output_tokens,{other}\n"
                                       f"1.5,10,3,{ones}\n,,,{ones}\n0.5,7,9,{ones}\n")
    t0 = time.perf_counter()
    imported = load({"trace_csv": "wide.csv", "time_unit": "s"}, tmp_path)
    assert time.perf_counter() - t0 < 30
    plain = load({"trace_csv": "wide.csv"}, tmp_path)
    for table in (imported, plain):
        assert table.arrival_s.tolist() == [0.5, 1.5] and table.prompt_tokens.tolist() == [7, 10]
        assert table.output_tokens.tolist() == [9, 3]


def _run(tmp_path: Path, arrival: dict, capsys, **workload) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"arrival": {"process": "trace", **arrival}, **workload},
                                    "cluster": {"model": "llama-3.1-8b"}, "outputs": {"plots": False}}))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 2
    assert not out.exists()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_bad_trace_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys):
    for name in ("azure_sample.csv", "mooncake_sample.jsonl"):
        (tmp_path / name).write_text((TRACES / name).read_text())
    (tmp_path / "bad_dates.csv").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,10,2\n"
                                            "yesterday,10,3\n")
    (tmp_path / "bad.jsonl").write_text('{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [1]}\n'
                                        "not json\n")
    line = '{"timestamp": %s, "input_length": %s, "output_length": 2, "hash_ids": [1]}\n'
    (tmp_path / "huge.jsonl").write_text(line % (0, 5) + line % (1, "9" * 5000))   # was int()'s ValueError traceback
    (tmp_path / "negative.jsonl").write_text(line % (-5, 5) + line % (1, 5))
    (tmp_path / "fraction.jsonl").write_text(line % (0, 10.5))
    cases = [({"trace_csv": "azure_sample.csv", "format": "alibaba"}, r"workload.arrival.format: Input should be "
                                                                       r"'draftsim', 'azure', 'burstgpt' or 'mooncake'"),
             ({"trace_csv": "azure_sample.csv"}, r"lacks column\(s\) 'arrival_s', 'prompt_tokens', 'output_tokens'; "
                                                 r"found 'TIMESTAMP'"),
             ({"trace_csv": "azure_sample.csv", "format": "azure", "columns": {"prompt_tokens": "Context"}},
              r"lacks column\(s\) 'Context'"),
             ({"trace_csv": "bad_dates.csv", "format": "azure"}, r"column 'TIMESTAMP', line 3: 'yesterday' is not a date"),
             ({"trace_csv": "bad.jsonl", "format": "mooncake"}, r"bad.jsonl, line 2: not a JSON object"),
             ({"trace_csv": "huge.jsonl", "format": "mooncake"},
              r"huge.jsonl, line 2: holds an integer of more than 4,300 digits$"),
             # the number as written, not as NumPy holds it (np.int64(-5), np.float64(10.5) before)
             ({"trace_csv": "negative.jsonl", "format": "mooncake"}, r"column 'timestamp', line 1: -5 is not a finite"),
             ({"trace_csv": "fraction.jsonl", "format": "mooncake"}, r"column 'input_length', line 1: 10.5 is not an int"),
             ({"trace_csv": "mooncake_sample.jsonl", "format": "mooncake", "start_s": 5000.0},
              r"workload.arrival.start_s: no request .* arrives in the window"),
             ({"trace_csv": "azure_sample.csv", "format": "azure", "speedup": 0}, r"workload.arrival.speedup"),
             ({"trace_csv": "azure_sample.csv", "format": "azure", "start_s": 9.0, "end_s": 3.0}, r"end_s .* must be > start_s")]
    for arrival, message in cases:
        err = _run(tmp_path, arrival, capsys)
        assert re.search(message, err), err


def test_trace_options_are_refused_for_other_processes():
    with pytest.raises(Exception, match="format is only allowed for process 'trace'"):
        parse_scenario({"workload": {"arrival": {"process": "poisson", "qps": 1, "format": "azure"},
                                     "prompt_tokens": {"kind": "fixed", "value": 5},
                                     "output_tokens": {"kind": "fixed", "value": 5}, "num_requests": 3},
                        "cluster": {"model": "llama-3-8b"}})


def test_a_byte_order_mark_before_a_jsonl_trace_is_read_as_the_csv_reader_reads_it(tmp_path):
    """A UTF-8 byte-order mark (as Windows tools save text) said 'line 1: not a JSON object' (helper3)."""
    text = (TRACES / "mooncake_sample.jsonl").read_text()
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + text.encode())
    with_mark = load({"trace_csv": "bom.jsonl", "format": "mooncake"}, tmp_path)
    plain = load({"trace_csv": "mooncake_sample.jsonl", "format": "mooncake"})
    assert np.array_equal(with_mark.arrival_s, plain.arrival_s)
    assert np.array_equal(with_mark.prefixes.keys, plain.prefixes.keys)


def test_a_jsonl_trace_of_the_draftsim_columns_is_read_as_json_lines_with_or_without_options(tmp_path):
    """The file kind follows the extension (simulator.core.traces: `.jsonl`/`.json` are JSON lines). A plain
    draftsim trace (no format or option) went to the original CSV reader whatever its extension: a JSON-lines
    file of arrival_s, prompt_tokens and output_tokens was refused ('lacks column(s) ... found
    '{"arrival_s": 0'') but read once a no-op option was added (time_unit: s, the default); a CSV named
    .jsonl was read as CSV, and refused with the option."""
    rows = [{"arrival_s": 2.0, "prompt_tokens": 30, "output_tokens": 3}, {"arrival_s": 0.5, "prompt_tokens": 10,
                                                                           "output_tokens": 1}]
    for name in ("t.jsonl", "t.json"):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        for options in ({}, {"time_unit": "s"}):
            table = load({"trace_csv": name, **options}, tmp_path)
            assert table.arrival_s.tolist() == [0.5, 2.0] and table.prompt_tokens.tolist() == [10, 30]
            assert table.output_tokens.tolist() == [1, 3]
    (tmp_path / "csv.jsonl").write_text("arrival_s,prompt_tokens,output_tokens\n0,10,1\n")
    for options in ({}, {"time_unit": "s"}):
        with pytest.raises(ValueError, match=r"csv\.jsonl, line 1: not a JSON object"):
            load({"trace_csv": "csv.jsonl", **options}, tmp_path)
