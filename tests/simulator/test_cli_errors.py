"""Bad input through the CLI: one clear line naming the field, exit code 2, nothing written."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from contract import run_cli
from sim_helpers import scenario


def _write(tmp_path: Path, data) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


BAD = {
    "unknown_model": (scenario(cluster={"model": "llama-9000"}), "cluster.model"),
    "unknown_hardware": (scenario(cluster={"hardware": "tpu-v9"}), "cluster.hardware"),
    "negative_qps": (scenario(workload={"arrival": {"qps": -1.0}}), "qps"),
    "does_not_fit": (scenario(cluster={"model": "llama-2-70b", "hardware": "l40s"}), "cluster.model"),
    "unknown_field": (scenario(cluster={"gpus": 4}), "cluster.gpus"),
    "bad_alpha": (scenario(acceptance={"kind": "constant", "alpha": 1.5}), "acceptance"),
    "bad_router": (scenario(cluster={"router": "random_walk"}), "cluster.router"),
    "bad_tp": (scenario(cluster={"parallelism": {"tp": 3}}), "cluster.parallelism"),
    "missing_kind": (scenario(acceptance={"alpha": 0.5}), "acceptance.kind"),
    "unknown_kind": (scenario(drafter={"kind": "oracle"}), "drafter.kind"),
    "unknown_drafter_model": (scenario(drafter={"kind": "draft_model", "model": "nope", "gamma": 2}),
                              "drafter.model"),
    "negative_kb_latency": (scenario(retrieval={"mode": "ralmspec", "interval_tokens": 8, "kb_fixed_s": -0.1}),
                            "retrieval.kb_fixed_s"),
    "retrieval_with_drafter": (scenario(retrieval={"mode": "ralmspec", "interval_tokens": 8, "kb_fixed_s": 0.1},
                                        drafter={"kind": "ngram", "gamma": 3}), "drafter.kind"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_scenario_exits_2_with_one_line_naming_the_field(tmp_path, capsys, name):
    data, field = BAD[name]
    code, err, out = run_cli(tmp_path, data)
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert field in err, err
    assert "Traceback" not in err
    assert not out.exists()


def test_malformed_yaml(tmp_path, capsys):
    code, err, out = run_cli(tmp_path, "seed: [1, 2\nworkload: {")
    assert code == 2 and "malformed YAML" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_malformed_trace_csv(tmp_path, capsys):
    (tmp_path / "trace.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0.0,12,x\n")
    data = scenario(workload={"arrival": {"process": "trace", "trace_csv": "trace.csv"},
                              "prompt_tokens": None, "output_tokens": None, "num_requests": None})
    data["workload"] = {"arrival": {"process": "trace", "trace_csv": "trace.csv"}}
    code, err, out = run_cli(tmp_path, data)
    assert code == 2 and "output_tokens" in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_bad_set_override(tmp_path, capsys):
    code, err, out = run_cli(tmp_path, scenario(), "--set", "workload.arrival.qps=-3")
    assert code == 2 and "qps" in err
    code, err, out = run_cli(tmp_path, scenario(), "--set", "noequals")
    assert code == 2 and "--set" in err


def test_missing_file(tmp_path, capsys):
    code = main(["run", str(tmp_path / "nope.yaml"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "not found" in err


def test_run_writes_outputs_and_is_byte_identical(tmp_path, capsys):
    path = _write(tmp_path, scenario(workload={"num_requests": 80}))
    for out in ("a", "b"):
        assert main(["run", str(path), "--out", str(tmp_path / out), "--quiet", "--no-plots"]) == 0
    for name in ("requests.parquet", "steps.parquet", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_set_override_changes_the_run(tmp_path, capsys):
    path = _write(tmp_path, scenario(workload={"num_requests": 50}))
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--no-plots",
                 "--set", "workload.num_requests=20"]) == 0
    printed = capsys.readouterr().out
    assert "20 requests" in printed


# every command with flags (catalog takes none) and the variants that parse their own flags
COMMANDS = [("run",), ("estimate",), ("profile",), ("sweep",), ("plan",), ("compare",), ("reproduce",),
            ("validate",), ("profile", "--engine", "vllm"), ("validate", "--engine", "vllm"), ("validate", "--published")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_single_valued_flag_given_twice_is_refused_naming_it(command, tmp_path, monkeypatch):
    """`--out a --out b`, `--step-mode bulk --step-mode step`, `--batch 2 --batch 4`: argparse kept the last
    value without a word; every single-valued flag of every command is now a usage error naming it, before any
    work (models.errors.one_line_usage_errors)."""
    import argparse
    import importlib.util

    from contract import cli, parser_of, single_valued_twice, snapshot

    if command == ("profile",) and importlib.util.find_spec("torch") is None:
        pytest.skip("draftsim profile's parser is profiles.profiler.run's (extra `torch`)")
    monkeypatch.chdir(tmp_path)
    parser = parser_of(lambda: main(list(command)))
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    parser = subs[0].choices[command[0]] if subs else parser
    cases = [(option, argv) for option, argv in single_valued_twice(parser) if option not in command]
    assert cases
    for option, argv in cases:
        code, out, err = cli(*command, *argv)
        assert code == 2 and out == "", (option, err)
        assert len(err.splitlines()) == 1 and option in err and "given twice; give it once" in err, err
    assert snapshot(tmp_path) == {}


def test_flags_meant_to_repeat_still_do(tmp_path):
    """An append flag (`run --set`) given twice still takes both."""
    from contract import cli
    import json

    scenario_path = _write(tmp_path, scenario(workload={"num_requests": 3}))
    code, _, err = cli("run", scenario_path, "--out", tmp_path / "o", "--quiet", "--no-plots",
                       "--set", "slo.tpot_s=0.5", "--set", "workload.num_requests=2")
    assert code == 0, err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert (summary["requests_arrived"], summary["slo_tpot_s"]) == (2, 0.5)


def test_a_trailing_end_of_options_marker_is_taken(tmp_path):
    """`--` ends the options (POSIX) even where no operand follows: `draftsim run s.yaml --out o --` runs, and
    `draftsim estimate ... --` prices its step (Python 3.11's argparse reported the `--` as an unrecognized
    argument, exit 2); a word after it is still an operand the command does not take, named alone."""
    from contract import cli
    import json

    scenario_path = _write(tmp_path, scenario(workload={"num_requests": 2}))
    code, _, err = cli("run", scenario_path, "--out", tmp_path / "o", "--quiet", "--no-plots", "--")
    assert code == 0, err
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["requests_arrived"] == 2
    code, out, err = cli("estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--json", "--")
    assert code == 0 and json.loads(out), err
    code, _, err = cli("run", scenario_path, "--out", tmp_path / "p", "--quiet", "--", "extra")
    assert code == 2 and err == "draftsim run: error: unrecognized arguments: extra (see draftsim run --help)", err
    code, _, err = cli("run", "--out", tmp_path / "p", "--quiet", "--", scenario_path, "--")
    assert code == 2 and "unrecognized arguments: -- " in err, err   # (the second `--` is an operand)
    assert not (tmp_path / "p").exists()
