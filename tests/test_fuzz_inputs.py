"""Fuzzing beyond the schema (issue 29; tests/test_fuzz_scenarios.py fuzzes the scenario's fields): the
scenario *file* — its encoding, random bytes, nesting depth, duplicate keys, its name — and the command
lines of `run`, `estimate`, `catalog`, `compare` and `sweep --dry-run` with random flags and values.

Every example must either succeed (exit 0, nothing on stderr but warning lines) or be refused in one line
`draftsim[ COMMAND]: error: ...` with exit 2 — never a traceback, another exit code or a hang — and a
refused run writes nothing. CI runs a fixed, derandomized set (`DRAFTSIM_FUZZ_EXAMPLES`, default 60 per
test); the counts are printed at the end (pytest -s -n 0).
"""
from __future__ import annotations

import collections
import os
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract import cli, errors_only, snapshot, write_scenario
from sim_helpers import scenario

EXAMPLES = int(os.environ.get("DRAFTSIM_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
OUTCOMES: collections.Counter = collections.Counter()
TINY = scenario(workload={"num_requests": 3}, name="fuzz")
TEXT = yaml.safe_dump(TINY, sort_keys=False)


def _check(code: int, err: str, label: str, written: dict | None = None) -> None:
    """The contract for one fuzzed input; counts the outcome under `label`."""
    OUTCOMES[f"{label}: tried"] += 1
    lines = errors_only(err).splitlines()
    assert "Traceback" not in err, err
    if code == 0:
        assert not lines, lines
        OUTCOMES[f"{label}: ran"] += 1
        return
    assert code == 2, (code, err)
    assert len(lines) == 1 and lines[0].startswith("draftsim") and ": error: " in lines[0], err
    assert not written, f"a refused input wrote {sorted(written)[:5]}"
    OUTCOMES[f"{label}: refused"] += 1


def _run_file(content: bytes | str, label: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = write_scenario(root / "s.yaml", content)
        before = snapshot(root)
        code, _, err = cli("run", path, "--out", root / "out", "--quiet")
        _check(code, err, label, {k: v for k, v in snapshot(root).items() if before.get(k) != v})


# ---- the file -----------------------------------------------------------------------------------------
CODECS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "cp1252", "shift_jis",
          "koi8-r"]
NAMES = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)


@FUZZ
@given(codec=st.sampled_from(CODECS), name=NAMES)
def test_any_encoding_of_a_scenario_runs_or_is_refused_in_one_line(codec, name):
    text = yaml.safe_dump(dict(TINY, name=name), sort_keys=False, allow_unicode=True)
    try:
        data = text.encode(codec)
    except UnicodeEncodeError:
        data = text.encode(codec, errors="replace")
    _run_file(data, "encodings")


@FUZZ
@given(data=st.binary(max_size=400), at=st.integers(0, len(TEXT)))
def test_random_bytes_in_a_scenario_run_or_are_refused_in_one_line(data, at):
    raw = TEXT.encode()
    _run_file(raw[:at] + data + raw[at:], "bytes")


def _nested(depth: int, flow: bool, leaf) -> str:
    if flow:
        return "[" * depth + str(leaf) + "]" * depth
    return "".join(f"\n{'  ' * (i + 1)}k{i}:" for i in range(depth)) + f" {leaf}"


@FUZZ
@given(depth=st.integers(1, 400), flow=st.booleans(), key=st.sampled_from(["seed", "workload", "name", "extra"]))
def test_any_nesting_depth_runs_or_is_refused_in_one_line(depth, flow, key):
    lines = [line for line in TEXT.splitlines() if not line.startswith(f"{key}:")]
    _run_file("\n".join(lines) + f"\n{key}: " + _nested(depth, flow, 1) + "\n", "depth")


def _paths(node, prefix=()) -> list[tuple]:
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append(prefix + (key,))
            out += _paths(value, prefix + (key,))
    return out


def _dump_with_duplicate(node, target: tuple, value, indent: int = 0, prefix: tuple = ()) -> str:
    """Block YAML of `node` where the key at path `target` appears a second time, with `value`."""
    out = ""
    for key, child in node.items():
        here = prefix + (key,)
        pad = "  " * indent
        if isinstance(child, dict) and child:
            out += f"{pad}{key}:\n" + _dump_with_duplicate(child, target, value, indent + 1, here)
        else:
            out += f"{pad}{key}: {yaml.safe_dump(child, default_flow_style=True).strip().removesuffix('...').strip()}\n"
        if here == target:
            out += f"{pad}{key}: {yaml.safe_dump(value, default_flow_style=True).strip().removesuffix('...').strip()}\n"
    return out


@FUZZ
@given(index=st.integers(0, 10_000), value=st.one_of(st.integers(0, 9), st.just("x"), st.just({"a": 1})))
def test_a_duplicate_key_anywhere_is_refused_naming_it(index, value):
    paths = _paths(TINY)
    target = paths[index % len(paths)]
    text = _dump_with_duplicate(TINY, target, value)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        code, _, err = cli("run", write_scenario(root / "s.yaml", text), "--out", root / "out", "--quiet")
        _check(code, err, "duplicate keys")
        assert code == 2 and f"key {target[-1]!r} appears twice" in err, err


# ---- command lines ---------------------------------------------------------------------------------------
JUNK = ["", "-1", "0", "x", "1e400", "nan", "/proc/x", "\x00", "9" * 30, "é", "--", "true"]
SET_KEYS = ["workload.num_requests", "workload.arrival.qps", "cluster.model", "cluster.hardware", "drafter.gamma",
            "drafter", "scheduler.kind", "scheduler.max_batched_tokens", "seed", "name", "policy", "speculation",
            "cluster.latency.source", "cluster.latency.version", "outputs.plots", "cluster.parallelism.tp",
            "workload.prompt_tokens", "cluster.kv_cache.preemption", "slo.ttft_s", "nope.deeper"]
SET_VALUES = ["1", "3", "40", "-1", "1e9", "1e-300", "x", "null", "[1, 2]", "{kind: fixed}", "llama-68m",
              "h100-sxm", "cpu-local", "vllm_v1", "fixed", "pearl", "profile", '"99.0"', "true", "..", "a/b",
              "{kind: draft_model, model: llama-68m, gamma: 2}", "{kind: fixed, value: 4}", "&a [*a]"]
RUN_FLAGS = st.lists(st.one_of(
    st.tuples(st.just("--set"), st.builds(lambda k, v: f"{k}={v}", st.sampled_from(SET_KEYS),
                                          st.sampled_from(SET_VALUES))),
    st.tuples(st.just("--set"), st.sampled_from(JUNK)),
    st.tuples(st.just("--step-mode"), st.sampled_from(["bulk", "step", *JUNK])),
    st.tuples(st.just("--trace-requests"), st.sampled_from(["0", "1", "5", *JUNK])),
    st.tuples(st.sampled_from(["--no-plots", "--trace", "--quiet", "--bogus", "-x"])),
    st.tuples(st.just("--out"), st.sampled_from(["out", "out/deeper", "", "/proc/x", "s.yaml", "."]))),
    max_size=5)


@FUZZ
@given(flags=RUN_FLAGS)
def test_run_with_any_flags_succeeds_or_is_refused_in_one_line(flags):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_scenario(root / "s.yaml", TINY)
        cwd = os.getcwd()
        os.chdir(root)
        try:
            before = snapshot(root)
            code, _, err = cli("run", "s.yaml", *[part for flag in flags for part in flag])
            written = {k: v for k, v in snapshot(root).items() if before.get(k) != v}
        finally:
            os.chdir(cwd)
        _check(code, err, "run flags", written if code else None)


ESTIMATE_FLAGS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["--tp", "--batch", "--context", "--query-tokens", "--prefill-tokens"]),
              st.sampled_from(["1", "2", "3", "8", "64", "100000", *JUNK])),
    st.tuples(st.sampled_from(["--dtype", "--kv-dtype"]), st.sampled_from(["bf16", "fp8", "int4", "fp32", *JUNK])),
    st.tuples(st.just("--source"), st.sampled_from(["auto", "measured", "profile", "roofline", *JUNK])),
    st.tuples(st.just("--framework"), st.sampled_from(["vllm", "sglang", "trtllm", *JUNK])),
    st.tuples(st.just("--version"), st.sampled_from(["0.24.0", "99", *JUNK])),
    st.tuples(st.sampled_from(["--json", "--no-engine-time", "--bogus"]))), max_size=5)


@FUZZ
@given(model=st.sampled_from(["llama-3-8b", "llama-68m", "qwen3-30b-a3b", "deepseek-v3", "llama-3.1-405b", *JUNK]),
       hardware=st.sampled_from(["h100-sxm", "a100-80gb", "l40s", "b200", "cpu-local", *JUNK]),
       flags=ESTIMATE_FLAGS)
def test_estimate_with_any_flags_succeeds_or_is_refused_in_one_line(model, hardware, flags):
    code, _, err = cli("estimate", "--model", model, "--hardware", hardware, *[part for flag in flags for part in flag])
    _check(code, err, "estimate flags")


@FUZZ
@given(argv=st.one_of(
    st.lists(st.sampled_from(["catalog", "models", "hardware", "gpus", "--bogus", *JUNK]), min_size=1, max_size=3)
    .map(lambda a: ["catalog", *a[1:]]),
    st.lists(st.sampled_from(["--dry-run", "--resume", "--overwrite", "--workers", "0", "--executor", "bogus",
                              "--plot", *JUNK]), max_size=4).map(lambda a: ["sweep", "SWEEP", "--dry-run", *a]),
    st.lists(st.sampled_from(["--vary", "seed=2", "drafter.gamma=x", "--set", "seed=-1", "--step-mode", "bogus",
                              *JUNK]), max_size=4).map(lambda a: ["compare", "S", "--quiet", "--out", "cmp", *a])))
def test_other_commands_with_any_flags_succeed_or_are_refused_in_one_line(argv):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        scen = write_scenario(root / "s.yaml", TINY)
        sweep = write_scenario(root / "sweep.yaml", {"name": "f", "scenario": str(scen),
                                                     "grid": {"workload.arrival.qps": [4, 8]}})
        argv = [str(sweep) if a == "SWEEP" else str(scen) if a == "S" else a for a in argv]
        cwd = os.getcwd()
        os.chdir(root)
        try:
            code, _, err = cli(*argv)
        finally:
            os.chdir(cwd)
        _check(code, err, "other commands")


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if OUTCOMES:
        labels = sorted({key.split(":")[0] for key in OUTCOMES})
        print("\nfuzzed inputs: " + "; ".join(
            f"{label}: tried {OUTCOMES[label + ': tried']}, ran {OUTCOMES[label + ': ran']}, refused "
            f"{OUTCOMES[label + ': refused']}" for label in labels) + "; crashes 0")
