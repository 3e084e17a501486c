"""The hostile-input suite (issue 29): every bad or hostile input a new user tried, and more of each kind,
through the CLI as a user types it. Each must be refused cleanly: one line naming the field and what is
allowed, exit 2 (exit 1 for a failed check: a plan with no feasible candidate), no traceback, no hang,
nothing written — found before any work.

Outcomes are counted (`tried`, `clean`, `crashes` — an exception or traceback —, `silent` — exit 0, an
answer for an input that has none —, `hangs`, `wrong` — another exit code, several lines or a line that
does not name the field —) and printed at the end; the README's figures are that line::

    python3 -m pytest -q -s -n 0 tests/test_hostile_inputs.py -p no:cacheprovider

A case is `Hostile(name, make, says)`: `make(tmp)` writes what the case needs under `tmp` (the working
directory of the run) and returns the command line; `says` must appear in the error line.
"""
from __future__ import annotations

import collections
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import yaml

from contract import cli, errors_only, snapshot
from sim_helpers import merge, scenario

REPO = Path(__file__).resolve().parents[1]
OUTCOMES: collections.Counter = collections.Counter()
HANG_S = 120


@dataclass(frozen=True)
class Hostile:
    name: str
    make: Callable[[Path], list]
    says: str
    code: int = 2          # 2: bad input; 1: a failed check (its outputs may be written)
    patch: Callable | None = None   # patch(monkeypatch) before the run (e.g. this machine's memory)


TINY = scenario(workload={"num_requests": 4})
HF = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192}
HW = {"id": "my-gpu", "peak_flops": {"fp32": 6e13, "bf16": 8e14}, "hbm_bytes": 96e9,
      "hbm_bandwidth_bytes_per_s": 4e12, "scaleup_bandwidth_bytes_per_s": 4.5e11,
      "scaleout_bandwidth_bytes_per_s": 5e10}
SPEC = {"hidden_size": 4096, "num_layers": 32, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128,
        "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192}   # ModelSpec fields
BIG = int("9" * 400)   # a 400-digit integer: under Python's 4,300-digit limit, beyond any float
MOONCAKE = '{"timestamp": %d, "input_length": 1000, "output_length": 10, "hash_ids": [%s]}\n'


def _write(tmp: Path, name: str, content) -> Path:
    path = tmp / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path


def _unless_given(defaults: list, flags) -> list:
    """The (flag, value) pairs of `defaults` whose flag `flags` does not give: a case's own `--out` or
    `--executor` replaces the helper's (a flag given twice is refused)."""
    return [part for flag, value in zip(defaults[::2], defaults[1::2]) if flag not in flags for part in (flag, value)]


def run(content=None, *flags, **sections) -> Callable[[Path], list]:
    """`draftsim run s.yaml --out out --quiet FLAGS` on `content` (bytes/text as they are) or the tiny
    scenario with `sections` merged in."""
    def make(tmp: Path) -> list:
        data = content if content is not None else merge(TINY, sections)
        return ["run", _write(tmp, "s.yaml", data), *_unless_given(["--out", tmp / "out"], flags), "--quiet", *flags]
    return make


def _folder_with_a_file(tmp: Path) -> Path:
    (tmp / "mine").mkdir()
    _write(tmp, "mine/notes.txt", "the user's")
    return tmp / "mine"


def run_path(path_of: Callable[[Path], Path]) -> Callable[[Path], list]:
    return lambda tmp: ["run", path_of(tmp), "--out", tmp / "out", "--quiet"]


def fifo(tmp: Path, name: str = "fifo") -> Path:
    path = tmp / name
    os.mkfifo(path)
    return path


def sparse(tmp: Path, name: str, size: int, head: bytes = b"") -> Path:
    path = tmp / name
    path.write_bytes(head)
    os.truncate(path, size)
    return path


def trace(file_of: Callable[[Path], Path], fmt: str = "draftsim", **arrival) -> Callable[[Path], list]:
    """A run replaying the trace `file_of(tmp)`."""
    def make(tmp: Path) -> list:
        data = merge(TINY, {})
        data["workload"] = {"arrival": {"process": "trace", "trace_csv": str(file_of(tmp)),
                                        **({"format": fmt} if fmt != "draftsim" else {}), **arrival}}
        return ["run", _write(tmp, "s.yaml", data), "--out", tmp / "out", "--quiet"]
    return make


def text_file(name: str, text: str) -> Callable[[Path], Path]:
    return lambda tmp: _write(tmp, name, text)


def model_file(name: str, **fields) -> Callable[[Path], list]:
    """A run whose cluster.model is a Hugging Face config.json with `fields` changed."""
    def make(tmp: Path) -> list:
        path = _write(tmp, name, json.dumps({**HF, **fields}))
        return run(cluster={"model": str(path)})(tmp)
    return make


def model_yaml(entry: dict) -> Callable[[Path], list]:
    """A run whose cluster.model is a catalog-format YAML holding `mymodel: ENTRY`."""
    return lambda tmp: run(cluster={"model": str(_write(tmp, "m.yaml", {"mymodel": entry}))})(tmp)


def inline_model(**fields) -> Callable[[Path], list]:
    """A run whose cluster.model is an inline block of SPEC's fields with `fields` changed."""
    return run(cluster={"model": {**SPEC, **fields}})


def hardware_yaml(content: dict) -> Callable[[Path], list]:
    """A run whose cluster.hardware is a YAML file holding `content` as it is (keys of any kind)."""
    return lambda tmp: run(cluster={"hardware": str(_write(tmp, "gpu.yaml", content))})(tmp)


def hf_shipped(folder: str, **fields) -> Callable[[Path], list]:
    """`draftsim estimate` of tests/data/hf_configs/FOLDER/config.json with `fields` changed (None: removed)."""
    def make(tmp: Path) -> list:
        cfg = json.loads((REPO / "tests/data/hf_configs" / folder / "config.json").read_text())
        cfg = {k: v for k, v in {**cfg, **fields}.items() if v is not None}
        return ["estimate", "--model", str(_write(tmp, "config.json", json.dumps(cfg))), "--hardware", "h200"]
    return make


def estimate(*flags, model_fields: dict | None = None) -> Callable[[Path], list]:
    def make(tmp: Path) -> list:
        model = str(_write(tmp, "config.json", json.dumps({**HF, **model_fields}))) if model_fields else "llama-3-8b"
        return ["estimate", "--model", model, "--hardware", "h100-sxm", *flags]
    return make


EAGLE3_HEAD = {"hidden_size": 4096, "intermediate_size": 14336, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128,
               "draft_vocab_size": 32000, "target_hidden_size": 4096, "vocab_size": 128256}


def estimate_with(flag: str, value: str) -> Callable[[Path], list]:
    """`draftsim estimate` of llama-3-8b on h100-sxm with `flag` (--model or --hardware) set to `value`."""
    given = {"--model": "llama-3-8b", "--hardware": "h100-sxm", flag: value}
    return lambda tmp: ["estimate", *(x for pair in given.items() for x in pair)]


def hardware(**fields) -> Callable[[Path], list]:
    def make(tmp: Path) -> list:
        path = _write(tmp, "gpu.yaml", merge(HW, fields))
        return run(cluster={"hardware": str(path)})(tmp)
    return make


def sweep(scenario: dict = TINY, flags: tuple = (), **fields) -> Callable[[Path], list]:
    def make(tmp: Path) -> list:
        base = _write(tmp, "base.yaml", scenario)
        spec = {"name": "s", "scenario": str(base), "grid": {"workload.arrival.qps": [4, 8]}, **fields}
        return ["sweep", _write(tmp, "sweep.yaml", spec), *_unless_given(["--out", tmp / "store", "--executor", "serial"],
                                                                          flags), "--quiet", *flags]
    return make


def tampered_store(tamper: Callable[[Path], None], flag: str = "--resume") -> Callable[[Path], list]:
    """`sweep()`'s sweep run once into its store, `tamper(store)` applied to the store, then run again with `flag`."""
    def make(tmp: Path) -> list:
        argv = sweep()(tmp)
        code, _, err = cli(*argv)
        assert code == 0, err
        tamper(tmp / "store")
        return argv + [flag]
    return make


def _points(store: Path) -> list[Path]:
    return sorted((store / "points").glob("*.parquet"))


def _other_table(store: Path) -> None:
    import pandas as pd
    pd.DataFrame({"a": [1]}).to_parquet(_points(store)[0])


def _results_a_folder(store: Path) -> None:
    (store / "results.parquet").unlink()
    (store / "results.parquet").mkdir()
    _points(store)[0].unlink()


def _point_a_folder(store: Path) -> None:
    first = _points(store)[0]
    first.unlink()
    first.mkdir()


def _points_a_link(store: Path) -> None:
    """The store's points/ replaced by a link to a folder of the user's, which holds a .parquet file."""
    import shutil
    shutil.rmtree(store / "points")
    (store.parent / "mine").mkdir()
    _write(store.parent, "mine/table.parquet", "the user's")
    (store / "points").symlink_to(store.parent / "mine")


def _points_a_file(store: Path) -> None:
    import shutil
    shutil.rmtree(store / "points")
    _write(store, "points", "x")


def _ran_then(argv: list, path: Path, tamper: Callable[[Path], None]) -> list:
    """`argv` run once, its output file `path` removed and `tamper(path)` applied; returns `argv` (run again)."""
    code, _, err = cli(*argv)
    assert code == 0, err
    path.unlink()
    tamper(path)
    return argv


def _point_a_fifo(store: Path) -> None:
    first = _points(store)[0]
    first.unlink()
    fifo(first.parent, first.name)


def _profile_with(tmp: Path, name: str, content: str) -> Path:
    """A copy of the shipped CPU profile (profiles/data/cpu-local) in `pd` with its file `name` replaced."""
    import shutil
    shutil.copytree(REPO / "profiles/data/cpu-local", tmp / "pd")
    _write(tmp / "pd", name, content)
    return tmp / "pd"


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _link_to(link: Path, target: Path) -> Path:
    link.symlink_to(target)
    return link


def _link_to_a_folder(tmp: Path) -> Path:
    (tmp / "elsewhere").mkdir()
    (tmp / "link").symlink_to(tmp / "elsewhere")
    return tmp / "link"


def acceptance_trace(column: str, value, mode: str = "greedy") -> Callable[[Path], list]:
    """A run replaying the shipped acceptance trace with `column` set to `value` in every row."""
    def make(tmp: Path) -> list:
        from profiles.acceptance.parquet_meta import write_with_meta
        from profiles.acceptance.trace import META_KEY, load_trace
        shipped = load_trace(REPO / "profiles/data/acceptance/qwen2.5-coder-1.5b-0.5b.parquet")
        changed = shipped.assign(**{column: value}) if column else shipped.iloc[:0]
        write_with_meta(changed, tmp / "acc.parquet", META_KEY, shipped.attrs.get("meta", {}))
        return run(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                   acceptance={"kind": "trace", "trace": "acc.parquet", "mode": mode})(tmp)
    return make


def session_corpus(**columns) -> Callable[[Path], list]:
    """A suffix-decoding run on the shipped code-edit corpus with `columns` set (DataFrame.assign; none: no rows),
    written to c.parquet."""
    def make(tmp: Path) -> list:
        import pandas as pd
        frame = pd.read_parquet(REPO / "profiles/data/acceptance/sessions/sessions-qwen2.5-coder-0.5b.parquet")
        (frame.assign(**columns) if columns else frame.iloc[:0]).to_parquet(tmp / "c.parquet")
        return run(cluster={"model": "qwen2.5-coder-0.5b"}, drafter={"kind": "suffix"},
                   acceptance={"kind": "sessions", "corpus": "c.parquet"})(tmp)
    return make


PLAN = {"name": "p", "seed": 2, "models": ["llama-3-8b"], "hardware": [{"id": "l40s", "usd_per_gpu_hour": 0.9}],
        "workload": {"arrival": {"process": "poisson", "qps": 12}, "prompt_tokens": {"kind": "fixed", "value": 400},
                     "output_tokens": {"kind": "fixed", "value": 50}, "num_requests": 100},
        "acceptance": {"kind": "constant", "alpha": 0.7}, "slo": {"ttft_s": 0.4, "tpot_s": 0.03},
        "scheduler": {"max_batch_size": 64}, "search": {"tp": [1], "replicas": [1], "drafters": [{"kind": "none"}]},
        "confirm_top": 1}


def _plan_on_trace(rows: str) -> Callable[[Path], list]:
    """A plan replaying a draftsim trace of `rows` (arrival_s,prompt_tokens,output_tokens lines)."""
    def make(tmp: Path) -> list:
        data = merge(PLAN, {})
        data["workload"] = {"arrival": {"process": "trace", "trace_csv": str(
            _write(tmp, "t.csv", "arrival_s,prompt_tokens,output_tokens\n" + rows))}}
        return ["plan", _write(tmp, "plan.yaml", data), "--out", tmp / "plans", "--executor", "serial", "--quiet"]
    return make


def tampered_plan_cache(tamper: Callable[[Path], None]) -> Callable[[Path], list]:
    """A plan whose candidate the DES confirms run once into plans/ (its des_cache/ written), `tamper(cache)`
    applied to the cache folder, then run again."""
    def make(tmp: Path) -> list:
        argv = plan(slo={"ttft_s": 0.4, "tpot_s": 0.06})(tmp)
        code, _, err = cli(*argv)
        assert code == 0 and list((tmp / "plans" / "des_cache").glob("*.npz")), err
        tamper(tmp / "plans" / "des_cache")
        return argv
    return make


def _cache_file(cache: Path, suffix: str) -> Path:
    return next(cache.glob(f"*{suffix}"))


def _cache_a_link(cache: Path) -> None:
    import shutil
    shutil.rmtree(cache)
    (cache.parent.parent / "elsewhere").mkdir()
    cache.symlink_to(cache.parent.parent / "elsewhere")


def _plan_on_missing_trace(tmp: Path) -> list:
    """A plan replaying a trace file that does not exist."""
    data = merge(PLAN, {})
    data["workload"] = {"arrival": {"process": "trace", "trace_csv": str(tmp / "missing.csv")}}
    return ["plan", _write(tmp, "plan.yaml", data), "--out", tmp / "plans", "--executor", "serial", "--quiet"]


def plan(*flags, **fields) -> Callable[[Path], list]:
    def make(tmp: Path) -> list:
        return ["plan", _write(tmp, "plan.yaml", merge(PLAN, fields)),
                *_unless_given(["--out", tmp / "plans", "--executor", "serial"], flags), "--quiet", *flags]
    return make


def _shipped_data_here(monkeypatch) -> None:
    """The package's shipped data folder taken to be ./shipped (made here): a test of its refusal never writes
    into the real profiles/data, even run against code that lacks the refusal."""
    from simulator.results import output_folder
    (Path.cwd() / "shipped").mkdir()
    monkeypatch.setattr(output_folder, "shipped_data_dir", lambda: Path.cwd() / "shipped")


def _package_source_here(monkeypatch) -> None:
    """draftsim's package folders taken to be ./src (made here, holding a module): a test of their refusal never
    writes into the real simulator/ or scenarios/, even run against code that lacks the refusal (raising=False:
    such code has no `package_folders` to patch, and writes into ./src)."""
    from simulator.results import output_folder
    (Path.cwd() / "src").mkdir()
    (Path.cwd() / "src" / "__init__.py").write_text("")
    monkeypatch.setattr(output_folder, "package_folders", lambda: {"simulator": Path.cwd() / "src"}, raising=False)


def points(content) -> Callable[[Path], list]:
    def make(tmp: Path) -> list:
        path = content(tmp) if callable(content) else _write(tmp, "points.yaml", content)
        return ["validate", "--published", "--points", path, "--out", tmp / "pub"]
    return make


def profile(*flags) -> Callable[[Path], list]:
    return lambda tmp: ["profile", "--device", "cpu", "--quick", "--no-collectives", "--no-progress", *flags]


def moe_trace(file_of: Callable[[Path], Path]) -> Callable[[Path], list]:
    """A run of an MoE model with expert parallelism whose routing replays the file `file_of(tmp)`."""
    return lambda tmp: run(cluster={"model": "qwen3-30b-a3b", "parallelism": {"ep": 8}, "moe": {
        "routing": "trace", "routing_trace": str(file_of(tmp))}})(tmp)


def _npy(tmp: Path, array) -> Path:
    """`array` saved as int64 in tmp/r.npy."""
    import numpy as np
    np.save(tmp / "r.npy", np.asarray(array, dtype=np.int64))
    return tmp / "r.npy"


def _routing_repeat_at(row: int):
    """2,000 tokens of 8 distinct experts (of qwen3-30b-a3b's 128) but token `row`, which lists one twice."""
    import numpy as np
    choices = (np.arange(2000)[:, None] + np.arange(8)[None, :]) % 128
    choices[row, 1] = choices[row, 0]
    return choices


def _npy_header(shape: tuple) -> bytes:
    """The header of a .npy file of int64 `shape`, without its data."""
    import io

    from numpy.lib import format as npy
    out = io.BytesIO()
    npy.write_array_header_1_0(out, {"descr": "<i8", "fortran_order": False, "shape": shape})
    return out.getvalue()


def _engine_profile_dir(tmp: Path, content: str | None) -> Path:
    """A folder `ep` of one engine profile `m.json` holding `content` (None: a FIFO of that name)."""
    (tmp / "ep").mkdir()
    if content is None:
        fifo(tmp / "ep", "m.json")
    else:
        _write(tmp / "ep", "m.json", content)
    return tmp / "ep"


def little_memory(monkeypatch) -> None:
    import simulator.config.host_memory as host_memory
    monkeypatch.setattr(host_memory, "available_bytes", lambda: 24 * 1024**3)   # a 24 GiB machine


POINT = {"id": "x", "kind": "gemm", "statistic": "single", "value": 9.4, "unit": "us", "hardware": "h100-sxm",
         "gpus": 1, "engine": "cublas", "dtype": "bf16", "tp": 1, "pp": 1, "workload": {"m": 64, "n": 2112, "k": 7168},
         "source": {"title": "t", "url": "u", "date": "2025-01-01", "locator": "l"}}
STEP_POINT = {"id": "s", "kind": "decode_step", "statistic": "mean", "value": 0.0063, "unit": "s", "hardware": "h100-sxm",
              "gpus": 1, "engine": "sglang", "framework_version": "0.4.4", "model": "meta-llama/Llama-3.1-8B-Instruct",
              "dtype": "bf16", "tp": 1, "pp": 1, "workload": {"batch": 1, "context_tokens": 512},
              "source": {"title": "t", "url": "u", "date": "2025-01-01", "locator": "l"}}
BOMB = "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['x'] * 9)}]\n"
               for p, c in zip([None, *"abcdefg"], "abcdefgh")) + "workload: *h\n"
DEEP_BLOCK = "".join("  " * i + f"k{i}:\n" for i in range(100)) + "  " * 100 + "v: 1\n"
TRACE_HEAD = "arrival_s,prompt_tokens,output_tokens\n"

def shipped_run(scenario_path: str, *flags) -> Callable[[Path], list]:
    """`draftsim run` of the shipped scenario `scenario_path` with `flags` (e.g. `--set`)."""
    return lambda tmp: ["run", REPO / scenario_path, "--out", tmp / "o", "--quiet", *flags]


def parquet_meta(shipped: str, name: str, key: bytes, blob: bytes, scenario_path: str, *flags) -> Callable[[Path], list]:
    """A run of `scenario_path` with `flags` on a copy of the shipped parquet `shipped` whose schema metadata
    under `key` is `blob`, written to `name`."""
    def make(tmp: Path) -> list:
        import pyarrow.parquet as pq
        table = pq.read_table(REPO / shipped)
        pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), key: blob}), tmp / name)
        return shipped_run(scenario_path, *flags)(tmp)
    return make


def eight_mib_of_values(tmp: Path) -> Path:
    """The tiny scenario and `x: [1,1,…]` up to just under MAX_DOCUMENT_BYTES (~4.19 M values)."""
    head = yaml.safe_dump(TINY) + "x: ["
    count = (8 * 1024**2 - len(head) - 3) // 2
    return _write(tmp, "s.yaml", head + "1," * count + "1]\n")


CASES = [
    # ---- the scenario file itself: encoding, size, kind of file, YAML structure -----------------------
    Hostile("scenario_utf16", run("name: x\n".encode("utf-16")), "UTF-16"),
    Hostile("scenario_utf32", run("name: x\n".encode("utf-32")), "UTF-32"),
    Hostile("scenario_latin1", run("name: caf\xe9\n".encode("latin-1")), "not UTF-8 text: byte 0xe9 at line 1"),
    Hostile("scenario_binary", run(bytes(range(256)) * 4), "binary"),
    Hostile("scenario_deep_flow", run("a: " + "[" * 5000 + "]" * 5000 + "\n"), "nests deeper than 64 levels"),
    Hostile("scenario_deep_block", run(DEEP_BLOCK), "nests deeper than 64 levels"),
    Hostile("scenario_duplicate_key", run(yaml.safe_dump(TINY) + "seed: 9\n"), "key 'seed' appears twice"),
    Hostile("scenario_duplicate_nested_key", run(yaml.safe_dump(TINY).replace("qps: 4.0", "qps: 4.0\n    qps: 8.0")),
            "key 'qps' appears twice"),
    Hostile("scenario_alias_bomb", run(BOMB), "anchors and aliases expand to more than 100,000 values"),
    Hostile("scenario_recursive_alias", run("a: &a [*a]\n"), "refers to its own anchor"),
    Hostile("scenario_dev_null", lambda tmp: ["run", "/dev/null", "--quiet"], "/dev/null is a character device"),
    Hostile("scenario_dev_zero", lambda tmp: ["run", "/dev/zero", "--quiet"], "/dev/zero is a character device"),
    Hostile("scenario_fifo", run_path(fifo), "is a FIFO (named pipe)"),
    Hostile("scenario_too_big", run_path(lambda tmp: sparse(tmp, "big.yaml", 9 * 1024**2, b"name: x\n# ")),
            "larger than 8 MiB"),
    Hostile("scenario_empty", run(""), "must contain a mapping at top level"),
    Hostile("section_null", run(None, "--set", "cluster.moe=null"), "cluster.moe: null is not allowed; expected a mapping"),
    Hostile("section_a_number", run(None, "--set", "workload=3"), "workload: 3 is not allowed; expected a mapping"),
    Hostile("scenario_a_list", run("- 1\n- 2\n"), "must contain a mapping at top level"),
    Hostile("scenario_missing", run_path(lambda tmp: tmp / "nope.yaml"), "file not found"),
    Hostile("scenario_malformed", run("seed: [1, 2\nworkload: {"), "malformed YAML"),
    Hostile("set_value_recursive", run(None, "--set", "name=&a [*a]"), "--set"),
    Hostile("scenario_integer_of_5000_digits", run(yaml.safe_dump(TINY).replace("seed: 7", "seed: " + "9" * 5000)),
            "holds an integer of 5,000 digits at line"),
    Hostile("set_integer_of_5000_digits", run(None, "--set", "seed=" + "9" * 5000), "--set: seed: the value holds"),
    # ---- names that would leave the output folder, and --out ---------------------------------------------
    *[Hostile(f"name_{label}", lambda tmp, n=name: ["run", _write(tmp, "s.yaml", dict(TINY, name=n)), "--quiet"],
              "name:")
      for label, name in [("dotdot_escape", "../ESCAPED"), ("absolute", "/tmp/ESCAPED"), ("newline", "a\nb"),
                          ("dot", "."), ("empty", ""), ("separator", "a/b"), ("backslash", "a\\b"),
                          ("hidden", ".hidden"), ("too_long", "x" * 300), ("control", "bell\x07")]],
    Hostile("out_empty", run(None, "--out", ""), "--out: an empty path"),
    Hostile("out_is_a_file", lambda tmp: run()(tmp)[:3] + [_write(tmp, "file", "x"), "--quiet"], "--out"),
    Hostile("out_unrelated_folder", lambda tmp: run()(tmp)[:3] + [_folder_with_a_file(tmp), "--quiet"], "--out"),
    # a home folder of a user this machine lacks: pathlib's RuntimeError traceback before
    Hostile("out_home_of_no_user", run(None, "--out", "~no-such-user/out"), "--out: ~no-such-user/out: cannot expand"),
    Hostile("sweep_out_home_of_no_user", lambda tmp: sweep()(tmp)[:2] + ["--out", "~no-such-user/s", "--quiet"],
            "--out: ~no-such-user/s: cannot expand '~no-such-user'"),
    Hostile("model_home_of_no_user", run(cluster={"model": "~no-such-user/config.json"}), "cluster.model: ~no-such-user"),
    Hostile("hardware_home_of_no_user", run(cluster={"hardware": "~no-such-user/gpu.yaml"}),
            "cluster.hardware: ~no-such-user/gpu.yaml: cannot expand"),
    Hostile("trace_home_of_no_user", trace(lambda tmp: Path("~no-such-user/t.csv")),
            "workload.arrival.trace_csv: ~no-such-user/t.csv: cannot expand"),
    Hostile("empirical_lengths_home_of_no_user", run(workload={"prompt_tokens": {
        "kind": "empirical", "csv": "~no-such-user/n.csv", "column": "n"}}), "workload.prompt_tokens.csv: ~no-such-user"),
    Hostile("trace_requests_negative", run(None, "--trace", "--trace-requests", "-1"), "--trace-requests"),
    # ---- traces ----------------------------------------------------------------------------------------
    Hostile("trace_dev_zero", trace(lambda tmp: Path("/dev/zero")), "/dev/zero is a character device"),
    Hostile("trace_dev_null", trace(lambda tmp: Path("/dev/null")), "/dev/null is a character device"),
    Hostile("trace_fifo", trace(fifo), "is a FIFO (named pipe)"),
    Hostile("trace_fifo_jsonl", trace(lambda tmp: fifo(tmp, "t.jsonl"), "mooncake"), "is a FIFO (named pipe)"),
    Hostile("trace_directory", trace(lambda tmp: tmp), "is a directory"),
    Hostile("trace_too_big", trace(lambda tmp: sparse(tmp, "huge.csv", 17 * 1024**3, TRACE_HEAD.encode())),
            "at most 16 GiB are read"),
    Hostile("trace_latin1", trace(lambda tmp: _write(tmp, "t.csv", (TRACE_HEAD + "0,1\xe9,3\n").encode("latin-1"))),
            "workload.arrival.trace_csv"),
    Hostile("trace_utf16", trace(lambda tmp: _write(tmp, "t.csv", (TRACE_HEAD + "0,10,5\n").encode("utf-16"))),
            "t.csv is UTF-16 text; save it as UTF-8"),
    Hostile("trace_utf16_jsonl", trace(lambda tmp: _write(tmp, "m.jsonl", (MOONCAKE % (0, "1")).encode("utf-16")),
                                       "mooncake"), "m.jsonl is UTF-16 text; save it as UTF-8"),
    Hostile("trace_binary", trace(lambda tmp: _write(tmp, "t.csv", TRACE_HEAD.encode() + bytes(range(256)))),
            "t.csv is binary (a NUL byte at offset"),
    Hostile("trace_duplicated_header", trace(text_file("t.csv", TRACE_HEAD + "0,10,5\n" + TRACE_HEAD + "1,10,5\n")),
            "the header row again"),
    Hostile("burstgpt_duplicated_header",
            trace(text_file("b.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                                     "5,ChatGPT,472,18,490,Conversation log\n" * 2
                                     + "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"),
                  "burstgpt"), "the header row again"),
    Hostile("azure_mixed_time_zones",
            trace(text_file("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
                                     "2023-11-16 18:15:50.9951690+00:00,396,109\n"), "azure"), "UTC offset"),
    Hostile("mooncake_hash_id_beyond_64_bits",
            trace(text_file("m.jsonl", MOONCAKE % (0, "1, 2") + MOONCAKE % (5, "123456789012345678901234567890")),
                  "mooncake"), "does not fit in 64 bits"),
    Hostile("mooncake_missing_field",
            trace(text_file("m.jsonl", MOONCAKE % (0, "1") + '{"timestamp": 5, "input_length": 1000, "hash_ids": [3]}\n'),
                  "mooncake"), "column 'output_length', line 2: the value is missing"),
    Hostile("mooncake_integer_of_5000_digits",
            trace(text_file("m.jsonl", MOONCAKE % (0, "1") + MOONCAKE.replace("1000", "9" * 5000) % (5, "2")),
                  "mooncake"), "line 2: holds an integer of more than 4,300 digits"),
    Hostile("mooncake_not_json", trace(text_file("m.jsonl", MOONCAKE % (0, "1") + "{oops\n"), "mooncake"),
            "line 2: not a JSON object"),
    Hostile("trace_speedup_astronomical", trace(text_file("t.csv", TRACE_HEAD + "0,10,5\n1,10,5\n"), speedup=1e-300),
            "workload.arrival.speedup"),
    Hostile("trace_window_of_one_microsecond",
            trace(text_file("t.csv", TRACE_HEAD + "".join(f"{i},10,5\n" for i in range(20))), end_s=1e-6),
            "workload.arrival.end_s"),
    Hostile("trace_times_beyond_the_span", trace(text_file("t.csv", TRACE_HEAD + "0,10,5\n1e20,10,5\n")),
            "workload.arrival.trace_csv"),
    Hostile("empirical_lengths_fifo", lambda tmp: run(workload={"prompt_tokens": {
        "kind": "empirical", "csv": str(fifo(tmp)), "column": "n"}})(tmp), "is a FIFO (named pipe)"),
    # ---- model files (Hugging Face config.json) ----------------------------------------------------------
    Hostile("hf_zero_heads", model_file("config.json", num_attention_heads=0), "num_attention_heads is 0"),
    Hostile("hf_fractional_hidden_size", model_file("config.json", hidden_size=4096.5), "hidden_size is 4096.5"),
    Hostile("hf_heads_not_a_multiple_of_kv_heads", model_file("config.json", num_key_value_heads=5),
            "must be a multiple of num_key_value_heads (5)"),
    Hostile("hf_zero_kv_heads", model_file("config.json", num_key_value_heads=0), "num_key_value_heads is 0"),
    Hostile("hf_hidden_not_split_by_heads", model_file("config.json", num_attention_heads=48),
            "not a multiple of num_attention_heads (48)"),
    Hostile("hf_heads_true", model_file("config.json", num_attention_heads=True), "num_attention_heads is True"),
    Hostile("hf_vocab_text", model_file("config.json", vocab_size="big"), "vocab_size is 'big'"),
    # bool("false") is True and int(4096.5) is 4096: read as such, these priced another model without a word
    Hostile("hf_tied_embeddings_text", model_file("config.json", tie_word_embeddings="false"),
            "tie_word_embeddings is 'false'; expected true or false"),
    Hostile("hf_sliding_window_fraction", model_file("config.json", sliding_window=4096.5),
            "sliding_window is 4096.5; expected an integer"),
    Hostile("hf_rope_theta_text", model_file("config.json", rope_theta="abc"), "rope_theta is 'abc'"),
    Hostile("hf_estimate_zero_heads", estimate(model_fields={"num_attention_heads": 0}), "num_attention_heads is 0"),
    Hostile("hf_utf16", lambda tmp: run(cluster={"model": str(_write(tmp, "config.json", json.dumps(HF).encode(
        "utf-16")))})(tmp), "UTF-16"),
    Hostile("hf_duplicate_key", lambda tmp: run(cluster={"model": str(_write(tmp, "config.json", json.dumps(HF)[:-1]
                                                                            + ', "vocab_size": 5}'))})(tmp),
            "key 'vocab_size' appears twice"),
    Hostile("hf_integer_of_5000_digits", lambda tmp: run(cluster={"model": str(_write(tmp, "config.json", json.dumps(
        HF).replace("128256", "9" * 5000)))})(tmp), "holds an integer of 5,000 digits"),
    Hostile("hf_fifo", lambda tmp: run(cluster={"model": str(fifo(tmp, "config.json"))})(tmp), "is a FIFO"),
    Hostile("hf_deep", lambda tmp: run(cluster={"model": str(_write(tmp, "config.json", "[" * 100000 + "]" * 100000))})(
        tmp), "cluster.model"),
    # ---- hardware files -------------------------------------------------------------------------------------
    Hostile("hardware_absurd_bandwidth", hardware(hbm_bandwidth_bytes_per_s=1e20), "physically plausible"),
    Hostile("hardware_absurd_flops", hardware(peak_flops={"fp32": 6e13, "bf16": 1e25}), "physically plausible"),
    Hostile("hardware_memory_in_gb_not_bytes", hardware(hbm_bytes=80), "cluster.hardware.hbm_bytes"),
    Hostile("hardware_latency_in_ms", hardware(scaleup_latency_s=1.0), "cluster.hardware.scaleup_latency_s"),
    Hostile("hardware_gpus_per_node", hardware(gpus_per_node=100000), "cluster.hardware.gpus_per_node"),
    Hostile("hardware_gpus_per_node_true", hardware(gpus_per_node=True),
            "cluster.hardware.gpus_per_node: true is a boolean"),
    # power in kW, or absurd: energy and cost figures off by 1e3 to 1e9 before (2026-11-28)
    Hostile("hardware_tdp_absurd", hardware(tdp_w=1e12), "cluster.hardware.tdp_w: 1e+12 is outside the physically"),
    Hostile("hardware_tdp_in_kw", hardware(tdp_w=0.7), "cluster.hardware.tdp_w: 0.7 is outside"),
    Hostile("hardware_host_power_absurd", hardware(host_w_per_gpu=5e9), "cluster.hardware.host_w_per_gpu"),
    Hostile("hardware_duplicate_key", lambda tmp: run(cluster={"hardware": str(_write(
        tmp, "gpu.yaml", yaml.safe_dump(HW) + "hbm_bytes: 1\n"))})(tmp), "key 'hbm_bytes' appears twice"),
    Hostile("hardware_binary", lambda tmp: run(cluster={"hardware": str(_write(tmp, "gpu.yaml", b"\x00\x01"))})(tmp),
            "binary"),
    # ---- fields that are valid alone but meaningless together -------------------------------------------
    Hostile("lognormal_median_above_max", run(workload={"prompt_tokens": {"kind": "lognormal", "median": 5000,
                                                                        "sigma": 1, "max": 2048}}),
            "workload.prompt_tokens.max"),
    Hostile("uniform_low_above_high", run(workload={"output_tokens": {"kind": "uniform", "low": 90, "high": 10}}),
            "workload.output_tokens.high"),
    Hostile("qps_astronomically_low", run(workload={"arrival": {"qps": 1e-300}}), "arrival.qps"),
    Hostile("duration_astronomical", run(workload={"num_requests": None, "duration_s": 1e12}), "duration_s"),
    Hostile("budget_of_one_token", run(scheduler={"max_batched_tokens": 1}), "scheduler: max_batched_tokens (1)"),
    Hostile("budget_below_a_speculative_step",
            run(scheduler={"kind": "vllm_v1", "max_batched_tokens": 3, "max_batch_size": 1},
                drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4}), "scheduler.max_batched_tokens"),
    Hostile("gpu_scenario_on_the_cpu", run(cluster={"hardware": "cpu-local"}), "cluster.latency.source"),
    Hostile("profile_source_without_a_profile", run(cluster={"hardware": "a100-80gb", "latency": {"source": "profile"}}),
            "cluster.latency.source: profile"),
    Hostile("unknown_framework_version", run(cluster={"latency": {"version": "99.0"}}), "cluster.latency.version"),
    Hostile("unknown_policy_word", run(policy="nope"), "policy.kind: unknown kind 'nope'"),
    # each pool of a disaggregated cluster routes its own requests: cluster.router was read by nothing (2026-11-28)
    Hostile("router_beside_disaggregated_pools", run(cluster={"router": "least_outstanding", "disaggregation": {
        "prefill": {"replicas": 2}, "decode": {"replicas": 1}}}), "cluster.router: with cluster.disaggregation set"),
    # cluster.moe prices expert parallelism's all-to-alls: on a dense model or with ep 1 it ran, ignored (2026-11-28)
    Hostile("moe_routing_on_a_dense_model", run(cluster={"moe": {"routing": "zipf"}}),
            "cluster.moe: routing and pre-scheduling price the all-to-alls of expert parallelism"),
    Hostile("moe_prescheduling_on_a_dense_model", run(cluster={"moe": {"prescheduling_hit_rate": 0.5}}),
            "cluster.moe: routing and pre-scheduling"),
    Hostile("moe_routing_without_expert_parallelism", run(cluster={"model": "qwen3-30b-a3b", "moe": {"routing": "zipf"}}),
            "every pool has ep 1"),
    Hostile("moe_routing_disaggregated_pools_of_ep_1", run(cluster={
        "model": "qwen3-30b-a3b", "moe": {"prescheduling_hit_rate": 0.7},
        "disaggregation": {"prefill": {"replicas": 1}, "decode": {"replicas": 1}}}), "cluster.moe: "),
    # ---- estimate ---------------------------------------------------------------------------------------------
    Hostile("estimate_unknown_version", estimate("--version", "99"), "version"),
    Hostile("estimate_batch_1e12", estimate("--batch", "1000000000000"), "batch"),
    Hostile("estimate_context_beyond_the_model", estimate("--context", "100000000"), "context"),
    Hostile("estimate_405b_on_one_h100", lambda tmp: ["estimate", "--model", "llama-3.1-405b", "--hardware", "h100-sxm"],
            "error: --model: llama-3.1-405b needs"),
    Hostile("estimate_negative_batch", estimate("--batch", "-3"), "batch"),
    # read as 'error: 1 validation error for ParallelismConfig' and 'error: scheduler.: Value error, ...' before
    Hostile("estimate_tp_beyond_64", estimate("--tp", "1024"), "error: --tp: Input should be less than or equal to 64"),
    # named the scenario's scheduler block (`scheduler: max_batched_tokens (8192) must be >= max_batch_size`),
    # which the command line has none of, and the budget could not be raised from it (2026-11-28)
    Hostile("estimate_max_num_seqs_beyond_the_budget", estimate("--max-num-seqs", "1000000000"),
            "error: --max-num-batched-tokens (8192, not given: draftsim's default) must be >= --max-num-seqs "
            "(1000000000)"),
    Hostile("estimate_max_num_seqs_zero", estimate("--max-num-seqs", "0"),
            "error: --max-num-seqs: Input should be greater than or equal to 1"),
    # (without --max-num-seqs the limit is the engine's: vLLM 0.11.1 on lowers its default to the budget and runs;
    # 0.11.0 keeps 1024 and refuses, profiles.engine_time.batch_defaults)
    Hostile("estimate_budget_below_max_num_seqs",
            estimate("--engine-version", "0.11.0", "--max-num-batched-tokens", "100"),
            "error: --max-num-batched-tokens: 100 is below the engine's default running-request limit 1024"),
    Hostile("estimate_profile_without_profile", lambda tmp: ["estimate", "--model", "llama-3-8b", "--hardware",
                                                              "a100-80gb", "--source", "profile"], "source"),
    # ---- plan, sweep, profile, validate ----------------------------------------------------------------------
    Hostile("plan_no_feasible_candidate", plan(slo={"ttft_s": 0.0001, "tpot_s": 0.00001}), "no feasible candidate",
            code=1),
    Hostile("plan_workers_zero", plan("--workers", "0"), "--workers"),
    Hostile("plan_workers_beyond_the_cores", plan("--executor", "local", "--workers", "100000"),
            "--workers: must be an integer in 1.."),
    Hostile("plan_bogus_executor", plan("--executor", "bogus"), "--executor"),
    Hostile("plan_deep_file", lambda tmp: ["plan", _write(tmp, "plan.yaml", DEEP_BLOCK), "--quiet"], "nests deeper"),
    Hostile("sweep_plot_unknown_metric", lambda tmp: sweep(plot={"metrics": ["goodput_rsp"]})(tmp) + ["--plot"],
            "sweep.plot.metrics"),
    Hostile("sweep_workers_zero", lambda tmp: sweep()(tmp) + ["--workers", "0"], "--workers"),
    # --dry-run listed the points and exited 0 whatever --workers or --executor said (2026-11-29)
    Hostile("sweep_dry_run_workers_zero", lambda tmp: sweep()(tmp) + ["--dry-run", "--workers", "0"],
            "draftsim sweep: error: --workers: must be an integer >= 1, got 0"),
    Hostile("sweep_dry_run_bogus_executor", lambda tmp: sweep()(tmp)[:-3] + ["--dry-run", "--executor", "bogus"],
            "draftsim sweep: error: --executor: unknown executor 'bogus'"),
    Hostile("sweep_workers_beyond_the_cores",   # (a process pool forks all its workers at its first task)
            sweep(flags=("--executor", "local", "--workers", "100000")),
            "--workers: must be an integer in 1.."),
    # a scheduler port that is no number reached Dask's parser: a ValueError traceback (exit 1) from run and sweep;
    # no host or port 99999 waited 10 s for a connection (2026-11-28)
    Hostile("run_executor_port_not_a_number", run(None, "--executor", "dask://h:port"),
            "draftsim: error: --executor: expected dask://HOST:PORT or tcp://HOST:PORT with a port in 1..65535"),
    Hostile("run_executor_port_beyond_65535", run(simulation={"executor": "tcp://127.0.0.1:99999"}),
            "with a port in 1..65535 (an IPv6 host in brackets: tcp://[::1]:8786); got 'tcp://127.0.0.1:99999'"),
    Hostile("sweep_executor_port_not_a_number", lambda tmp: sweep()(tmp)[:-3] + ["--executor", "tcp://h:abc", "--quiet"],
            "--executor: expected dask://HOST:PORT or tcp://HOST:PORT"),
    Hostile("plan_executor_without_a_host", plan("--executor", "dask://:8786"), "--executor: expected dask://HOST:PORT"),
    # load_sync_s applies to routers that read loads under a Dask executor: elsewhere it ran, ignored (2026-11-28)
    Hostile("load_sync_on_the_local_executor", run(simulation={"load_sync_s": 5}),
            "simulation.load_sync_s: synchronises the loads routers read across a Dask executor's workers"),
    Hostile("load_sync_with_round_robin", run(cluster={"replicas": 2},
                                              simulation={"load_sync_s": 5, "executor": "tcp://127.0.0.1:1"}),
            "simulation.load_sync_s: cluster.router 'round_robin' does not read replica loads"),
    Hostile("run_dask_workers_beyond_the_cores", run(None, "--executor", "local-dask", "--workers", "100000"),
            "draftsim: error: --workers: an integer in 1.."),
    Hostile("sweep_duplicate_key", lambda tmp: ["sweep", _write(tmp, "sweep.yaml", "name: a\nname: b\n"), "--quiet"],
            "key 'name' appears twice"),
    Hostile("sweep_name_dotdot", sweep(name=".."), "name"),
    # a seed beyond int64: pyarrow's OverflowError traceback with the store half made (2026-11-28)
    Hostile("sweep_seed_beyond_int64", sweep(seeds=[2**70]), "sweep.seeds: seed 1180591620717411303424 is beyond"),
    Hostile("sweep_replications_beyond_int64", sweep(dict(TINY, seed=2**63 - 1), replications=2),
            "sweep.replications: seed 9223372036854775808 is beyond"),
    Hostile("profile_out_in_proc", profile("--models", "llama-68m", "--out", "/proc/x"), "--out"),
    Hostile("profile_405b_on_24_gib", profile("--models", "llama-3.1-405b"), "--models: llama-3.1-405b needs",
            patch=little_memory),
    Hostile("profile_package_data_and_out", profile("--models", "llama-68m", "--package-data", "--out", "x"),
            "--package-data"),
    # found by a hand-run sweep of the commands' flags (2026-11-27): each ran for minutes or crashed before
    Hostile("profile_check_out_in_proc", profile("--models", "llama-68m", "--check", "--check-out", "/proc/x/c.json"),
            "--check-out: cannot create"),
    Hostile("profile_a_billion_passes", profile("--models", "llama-68m", "--passes", "1000000000", "--out", "p"),
            "--passes must be an integer in 1..100, got 1000000000"),   # killed for memory (24 GB) before
    Hostile("profile_device_id_a_path", profile("--models", "llama-68m", "--device-id", "../x"), "--device-id"),
    Hostile("profile_threads_beyond_the_cores", profile("--models", "llama-68m", "--threads", "100000"),
            "draftsim profile: error: --threads must be an integer in 1.."),
    Hostile("profile_vllm_threads_beyond_the_cores",
            lambda tmp: ["profile", "--engine", "vllm", "--models", "qwen2.5-coder-0.5b", "--threads", "100000",
                         "--out", tmp / "e"], "argument --threads: must be <="),
    Hostile("profile_vllm_no_kv_cache", lambda tmp: ["profile", "--engine", "vllm", "--models", "qwen2.5-coder-0.5b",
                                                     "--kv-cache-gib", "0", "--out", tmp / "e"],
            "argument --kv-cache-gib: must be > 0"),
    Hostile("validate_threads_beyond_the_cores", lambda tmp: ["validate", "--threads", "100000", "--out", tmp / "v"],
            "--threads must be an integer in 1.."),
    Hostile("validate_a_billion_repeats", lambda tmp: ["validate", "--quick", "--repeats", "1000000000", "--out",
                                                       tmp / "v", "--quiet"], "--repeats must be in 1..100"),
    Hostile("plan_scheduler_out_of_range", plan(scheduler={"max_batch_size": 0}), "plan.scheduler.max_batch_size"),
    Hostile("plan_acceptance_out_of_range", plan(acceptance={"kind": "constant", "alpha": 2}), "plan.acceptance.alpha"),
    Hostile("plan_drafter_acceptance_out_of_range", plan(search={**PLAN["search"], "drafters": [
        {"kind": "draft_model", "model": "llama-68m", "gamma": 2, "acceptance": {"kind": "constant", "alpha": -1}}]}),
            "plan.search.drafters.0.acceptance.alpha"),
    Hostile("plan_replicas_beyond_a_cluster", plan(search={**PLAN["search"], "replicas": [10**6]}),
            "replicas must list counts in 1..4096"),
    # search spaces that are empty, enormous, repeated or beyond a scenario's bounds (2026-11-28): a KeyError
    # traceback, a screen that never finished, duplicate candidates, every candidate failing alone (exit 1)
    Hostile("plan_no_replica_within_max_gpus", plan(search={"tp": [8], "replicas": None, "max_gpus": 4}),
            "plan.search: the search space holds no candidate: max_gpus 4 is below the 8 GPUs"),
    Hostile("plan_disaggregated_one_replica", plan(search={**PLAN["search"], "deployments": ["disaggregated"]}),
            "a disaggregated deployment needs 2 or more replicas"),
    Hostile("plan_eight_million_candidates", plan(search={"tp": [1], "replicas": None, "max_gpus": 4096,
                                                          "deployments": ["colocated", "disaggregated"]}),
            "plan.search: the search space holds 8,390,656 candidates; at most 100,000"),
    Hostile("plan_tp_listed_twice", plan(search={**PLAN["search"], "tp": [1, 1]}), "plan.search: tp lists 1 twice"),
    Hostile("plan_hardware_listed_twice", plan(hardware=[{"id": "l40s", "usd_per_gpu_hour": 0.9},
                                                         {"id": "l40s", "usd_per_gpu_hour": 0.5}]),
            "plan.hardware: 'l40s' is listed twice"),
    Hostile("plan_tp_beyond_a_scenario", plan(search={**PLAN["search"], "tp": [1024]}),
            "plan.search: tp must list values in 1..64"),
    Hostile("plan_tp_splits_no_model", plan(search={**PLAN["search"], "tp": [1, 3]}),
            "plan.search.tp: 3 splits none of the planned models (parallelism.tp=3 must divide num_heads=32 of "
            "llama-3-8b); allowed: 1, 2, 4, 8, 16, 32"),
    Hostile("plan_pp_beyond_the_layers", plan(search={**PLAN["search"], "pp": [40]}),
            "plan.search.pp: 40 splits none of the planned models (parallelism.pp=40 exceeds num_layers=32 of "
            "llama-3-8b); allowed: 1..32"),
    Hostile("plan_ep_on_a_dense_model", plan(search={**PLAN["search"], "ep": [1, 4]}),
            "plan.search.ep: 4 splits none of the planned models (parallelism.ep=4 needs an MoE model; llama-3-8b "
            "has no experts); allowed: 1"),
    # a sweep value holding a newline cut the error line before its reason; a grid key with a trailing space set
    # the same field as another, whose value was dropped without a word (exit 0, results mislabelled)
    Hostile("sweep_value_with_a_newline", sweep(grid={"name": ["x\ny"]}),
            'sweep point (name="x\\ny", seed=7): name: \'x\\ny\' holds a control character'),
    Hostile("sweep_key_given_twice_with_a_space", sweep(grid={"workload.arrival.qps": [4],
                                                              "workload.arrival.qps ": [16]}),
            "sweep.grid: workload.arrival.qps is given twice ('workload.arrival.qps' and 'workload.arrival.qps ')"),
    Hostile("closed_loop_concurrency_400_digits", run(workload={
        "arrival": {"process": "closed_loop", "qps": None, "concurrency": int("9" * 400)}, "num_requests": 4}),
            "workload.arrival.concurrency: Input should be less than or equal to 1000000000000"),
    Hostile("hardware_compute_units_1e300", hardware(compute_units=1e300),
            "cluster.hardware.compute_units: 1e+300 is outside the physically plausible 1 – 3040"),
    # a number key in an inline model or GPU was named 'cluster.model.str: Input should be a valid string'
    Hostile("inline_model_number_key", run(cluster={"model": {1: 2, "hidden_size": 4096}}),
            "cluster.model: unknown model field(s) 1; allowed: "),
    Hostile("inline_hardware_number_key", run(cluster={"hardware": {1: 2, "id": "x"}}),
            "cluster.hardware.1: unknown field; allowed: id, "),
    # an inline EAGLE-3 head: a width past a model's bounds passed the head's check and failed as its layer was
    # built (a traceback); shares_embedding "false" ran as true
    *[Hostile(f"eagle3_head_{name}", lambda tmp, head=head: run_path(lambda t: REPO / "scenarios" / "speculation" /
                                                                    "eagle3_llama31_8b_h100.yaml")(tmp)
              + ["--set", "workload.num_requests=4", "--set", "drafter.head=" + json.dumps(head)], says)
      for name, head, says in (
          ("intermediate_size_2e6", {**EAGLE3_HEAD, "intermediate_size": 2_000_000},
           "drafter.head: EAGLE-3 head 'drafter.head': intermediate_size is 2000000; expected an integer >= 1 and "
           "<= 1,048,576"),
          ("shares_embedding_text", {**EAGLE3_HEAD, "shares_embedding": "false"},
           "shares_embedding is 'false'; expected true or false"))],
    # an IPv6 scheduler without brackets reached Dask's parser (a traceback); a pool's hardware '' or {} took
    # cluster.hardware without a word; a node's power of 1e308 W made the energy figures null (exit 0)
    *[Hostile(f"run_executor_{name}", run(None, "--executor", address),
              f"--executor: expected dask://HOST:PORT or tcp://HOST:PORT with a port in 1..65535 (an IPv6 host in "
              f"brackets: tcp://[::1]:8786); got {address!r} (overrides simulation.executor)")
      for name, address in (("ipv6_without_brackets", "tcp://::1:8786"), ("ipv6_unclosed", "tcp://[::1"))],
    *[Hostile(f"disagg_{pool}_hardware_{name}", lambda tmp, pool=pool, value=value: run_path(
        lambda t: REPO / "scenarios" / "disagg" / "disaggregated.yaml")(tmp) + [
        "--set", "workload.num_requests=4", "--set", f"cluster.disaggregation.{pool}.hardware={value}"],
              f"cluster.disaggregation.{pool}.hardware: an empty hardware; give a catalog id")
      for pool, name, value in (("prefill", "empty_mapping", "{}"), ("decode", "empty_text", "''"))],
    Hostile("energy_host_power_1e308", run(energy={"host_power_w_per_gpu": 1e308}),
            "energy.host_power_w_per_gpu: Input should be less than or equal to 100000"),
    # a plan-level dtype or drafter no planned model and GPU can run: every candidate was screened out with one
    # reason, 'no feasible candidate' (exit 1, outputs written); a subnormal price ranked by tok/s per $/h = inf
    Hostile("plan_mxfp4_on_a_dense_model", plan(dtype="mxfp4"),
            "plan.dtype: no planned model and GPU can run it: mxfp4 quantizes only routed experts"),
    Hostile("plan_nvfp4_without_fp4_tensor_cores", plan(dtype="nvfp4"),
            "plan.dtype: no planned model and GPU can run it: nvfp4 weights need FP4 tensor cores, which l40s lacks"),
    Hostile("plan_mtp_without_modules", plan(search={**PLAN["search"], "drafters": [{"kind": "mtp", "gamma": [2]}]}),
            "plan.search.drafters.0.kind: mtp drafts with the model's multi-token-prediction modules; the planned "
            "models ship too few (modules per model: llama-3-8b 0)"),
    Hostile("plan_price_subnormal", plan(hardware=[{"id": "l40s", "usd_per_gpu_hour": 5e-324}]),
            "plan.hardware.0.usd_per_gpu_hour: Input should be greater than or equal to 0.001"),
    Hostile("run_price_below_a_tenth_of_a_cent", run(energy={"usd_per_gpu_hour": 1e-9}),
            "energy.usd_per_gpu_hour: Input should be greater than or equal to 0.001"),
    Hostile("plan_drafter_speculation_unknown", plan(search={**PLAN["search"], "drafters": [
        {"kind": "draft_model", "model": "llama-68m", "speculation": {"kind": "bogus"}}]}),
            "plan.search.drafters.0.speculation.kind: unknown kind 'bogus'"),
    Hostile("sweep_four_million_points", sweep(grid={"workload.arrival.qps": [1 + i / 100 for i in range(2000)],
                                                     "scheduler.max_batch_size": list(range(1, 2001))}),
            "4,000,000 points"),
    Hostile("reproduce_unknown_flag", lambda tmp: ["reproduce", "--bogus"], "unrecognized arguments: --bogus"),
    Hostile("reproduce_list_and_a_name", lambda tmp: ["reproduce", "--list", "extra"], "--list takes no NAME"),
    # --list with --out listed the reproductions and ignored the folder, exit 0
    Hostile("reproduce_list_with_out", lambda tmp: ["reproduce", "--list", "--out", tmp / "o"],
            "draftsim reproduce: error: --out: --list writes nothing"),
    Hostile("reproduce_all_and_a_name", lambda tmp: ["reproduce", "all", "tetris", "--quiet"], "give it alone"),
    Hostile("reproduce_out_is_a_file", lambda tmp: ["reproduce", "tetris", "--out", _write(tmp, "file", "x"),
                                                    "--quiet"], "--out"),
    Hostile("compare_vary_one_key_twice", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary", "seed=1",
                                                       "seed=2", "--out", tmp / "cmp", "--quiet"],
            "--vary: seed is given twice in one variant"),
    Hostile("validate_published_out_is_a_file",   # refused only after pricing every point, without naming --out
            lambda tmp: ["validate", "--published", "--id", "deepgemm", "--out", _write(tmp, "file", "x")],
            "--out: "),
    Hostile("points_malformed_yaml", points("- id: x\n  kind: ["), "--points: malformed YAML"),
    Hostile("points_latin1", points(lambda tmp: _write(tmp, "p.yaml", b"- id: caf\xe9\n")), "not UTF-8"),
    Hostile("points_dev_zero", points(lambda tmp: Path("/dev/zero")), "character device"),
    Hostile("points_a_mapping", points({"a": 1}), "expected a YAML list of points"),
    Hostile("points_workload_list", points([merge(POINT, {"workload": {"m": [1, 2]}})]), "workload: m"),
    Hostile("points_workload_text", points([merge(POINT, {"workload": {"batch": "many"}})]), "workload: batch"),
    Hostile("points_entry_not_a_mapping", points([3]), "point #0"),
    # ---- helper2: sweep stores, compare, plan and the other commands (2026-11-27) ---------------------------
    # a sweep store edited outside draftsim: a manifest that is not JSON or no object was a JSONDecodeError or
    # AttributeError traceback; a point file of another table was read as no row (exit 0, the point missing from
    # the results); a folder where results.parquet goes failed after the points ran, naming no field
    Hostile("sweep_store_manifest_not_json", tampered_store(lambda store: _write(store, "manifest.json", "{bad")),
            "manifest.json is not a sweep store's manifest (Expecting"),
    Hostile("sweep_store_manifest_a_list", tampered_store(lambda store: _write(store, "manifest.json", "[1]\n")),
            "manifest.json is not a sweep store's manifest (no name)"),
    Hostile("sweep_store_point_of_another_table", tampered_store(_other_table), "(no point_id, status column)"),
    Hostile("sweep_store_point_of_another_point", tampered_store(
        lambda store: _points(store)[0].write_bytes(_points(store)[1].read_bytes())), "(it holds point "),
    Hostile("sweep_store_results_a_folder", tampered_store(_results_a_folder),
            "results.parquet is not a file a sweep wrote"),
    Hostile("sweep_store_overwrite_a_point_folder", tampered_store(_point_a_folder, "--overwrite"),
            "is not a file a sweep wrote"),
    # `--vary seed` or `--vary =1` was named '--set' (the reader of overrides); the same file twice, or a --vary
    # that sets what the scenario has, ran both and printed a table of zeros
    Hostile("compare_vary_without_equals", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary", "seed",
                                                        "--out", tmp / "cmp", "--quiet"],
            "--vary: expected KEY=VALUE with a dotted scenario key (drafter.gamma=2), got 'seed'"),
    Hostile("compare_vary_an_empty_key", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary", "=1",
                                                      "--out", tmp / "cmp", "--quiet"], "--vary: expected KEY=VALUE"),
    Hostile("compare_the_same_file_twice", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), tmp / "s.yaml",
                                                        "--out", tmp / "cmp", "--quiet"],
            "scenarios: 's' and 's (2)' are the same simulation"),
    Hostile("compare_vary_the_scenarios_own_value", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary",
                                                                 f"seed={TINY['seed']}", "--out", tmp / "cmp", "--quiet"],
            "--vary: 's' and 'seed=7' are the same simulation"),
    # a gamma on {kind: none} was ignored, and beside a plain {kind: none} made every candidate twice (exit 0/1)
    Hostile("plan_gamma_on_no_drafter", plan(search={**PLAN["search"], "drafters": [{"kind": "none"},
                                                                                     {"kind": "none", "gamma": [2]}]}),
            "plan.search.drafters.1: gamma goes with a drafter; kind none drafts no tokens"),
    # a plot metric listed twice drew one plot over the same file (exit 0)
    Hostile("sweep_plot_metric_listed_twice", sweep(plot={"metrics": ["goodput_rps", "goodput_rps"]}),
            "sweep.plot.metrics: 'goodput_rps' is listed twice"),
    # an --out that is a symbolic link to a folder: sweep and reproduce wrote into where it points, while run,
    # compare and plan refused it as 'exists and is not a directory'; each now names the link
    Hostile("sweep_out_a_link_to_a_folder", lambda tmp: sweep()(tmp)[:3] + [_link_to_a_folder(tmp), "--executor",
                                                                            "serial", "--quiet"],
            "is a symbolic link (to "),
    Hostile("reproduce_out_a_link_to_a_folder", lambda tmp: ["reproduce", "tetris", "--out", _link_to_a_folder(tmp),
                                                             "--quiet"], "is a symbolic link (to "),
    Hostile("run_out_a_link_to_a_folder", lambda tmp: run()(tmp)[:2] + ["--out", _link_to_a_folder(tmp), "--quiet"],
            "is a symbolic link (to "),
    # a newline or tab pasted into --out made a folder of that name (exit 0), while a scenario name of one is refused
    Hostile("run_out_with_a_newline", lambda tmp: run()(tmp)[:2] + ["--out", tmp / "a\nb", "--quiet"],
            "a\\nb' holds a control character"),
    Hostile("sweep_out_with_a_tab", lambda tmp: sweep()(tmp)[:3] + [tmp / "x\ty", "--executor", "serial", "--quiet"],
            "holds a control character"),
    # --confirm-top had no upper bound while the plan file's confirm_top stops at 1000: 10^8 confirmed every feasible
    # candidate with the DES (up to 100,000 full simulations)
    Hostile("plan_confirm_top_a_hundred_million", plan("--confirm-top", "100000000"),
            "argument --confirm-top: must be <= 1000, got 100000000"),
    # an argument run or catalog does not take was the top parser's error, pointing at `draftsim --help`,
    # which lists no command's flags
    Hostile("catalog_extra_argument", lambda tmp: ["catalog", "models", "extra"],
            "draftsim catalog: error: unrecognized arguments: extra (see draftsim catalog --help)"),
    Hostile("run_unknown_flag", run(None, "--bogus"),
            "draftsim run: error: unrecognized arguments: --bogus (see draftsim run --help)"),
    # ---- input files and the remaining flags (helper3, 2026-11-27) ----------------------------------------
    # a JSON line with a key twice was read with its last value, silently
    Hostile("mooncake_duplicate_key",
            trace(text_file("m.jsonl", MOONCAKE % (0, "1") + MOONCAKE.replace('{"timestamp": %d', '{"timestamp": 1, '
                                                                              '"timestamp": %d') % (5, "2")),
                  "mooncake"), "m.jsonl, line 2: key 'timestamp' appears twice in one object"),
    # int() reads any Unicode digits: --batch ٣ (Arabic-Indic three) was a batch of 3
    Hostile("estimate_batch_arabic_indic_digit", estimate("--batch", "\u0663"), "argument --batch: invalid int value"),
    Hostile("estimate_tp_fullwidth_digit", estimate("--tp", "\uff12"), "argument --tp: invalid int value"),
    Hostile("run_trace_requests_arabic_indic_digit", run(None, "--trace", "--trace-requests", "\u0663"),
            "argument --trace-requests: a whole number in ASCII digits is required"),
    Hostile("profile_tp_arabic_indic_digit", profile("--models", "llama-68m", "--tp", "\u0663"),
            "--tp must be comma-separated integers"),
    Hostile("profile_tp_empty_entry", profile("--models", "llama-68m", "--tp", "1,,2"),
            "--tp must be comma-separated integers without empty entries, got '1,,2'"),
    # a model folder said only 'unknown model', listing the catalog
    Hostile("model_a_folder_with_config_json", lambda tmp: run(cluster={"model": str(
        _write(tmp, "config.json", json.dumps(HF)).parent)})(tmp), "is a folder; give the path of its config.json"),
    Hostile("estimate_model_a_folder_without_config_json",
            lambda tmp: ["estimate", "--model", str(_folder_with_a_file(tmp)), "--hardware", "h100-sxm"],
            "is a folder without a config.json"),
    # a hardware id names its profile folder (profiles/data/<id>/): '../x' was taken as it was
    Hostile("hardware_id_a_path", hardware(id="../x"), "cluster.hardware.id: '../x' is not allowed; expected a plain"),
    Hostile("hardware_id_with_a_slash", hardware(id="a/b"), "cluster.hardware.id: 'a/b' is not allowed"),
    Hostile("hardware_id_null", hardware(id=None), "cluster.hardware.id: null is not allowed"),
    # a hardware figure as text went through float(), which reads any Unicode digits ('٣e14' was 3e14 FLOP/s) and
    # underscores; a name that is a list became "['a']", a name with a newline broke one-line outputs
    Hostile("hardware_flops_arabic_indic_digit", hardware(peak_flops={"fp32": 6e13, "bf16": "\u0663e14"}),
            "cluster.hardware.peak_flops.bf16: '\u0663e14' is not a number"),
    Hostile("hardware_name_a_list", hardware(name=["a", "b"]), "cluster.hardware.name: ['a', 'b'] is not allowed"),
    Hostile("hardware_name_two_lines", hardware(name="my\ngpu"), "cluster.hardware.name: expected text of at most 200"),
    # estimate's latency and engine blocks printed pydantic's 'Value error, ' for a rule of the block; an empty
    # --model, which pathlib reads as the current folder, was called a folder without a config.json
    Hostile("estimate_profile_dir_without_a_profile_source", estimate("--profile-dir", "x"),
            "error: --profile-dir is only used with --source profile"),
    Hostile("estimate_model_empty", lambda tmp: ["estimate", "--model", "", "--hardware", "h100-sxm"],
            "error: --model: unknown model ''"),
    # profile: an empty --check-out was named '--out'; --tp 1,1 and --models a,a profiled as given, silently
    Hostile("profile_check_out_empty", profile("--models", "llama-68m", "--check", "--check-out", ""),
            "--check-out: an empty path; give a file path"),
    Hostile("profile_tp_listed_twice", lambda tmp: profile("--models", "llama-68m", "--tp", "1,1", "--out",
                                                           tmp / "p")(tmp), "--tp lists 1 twice"),
    Hostile("profile_model_listed_twice", lambda tmp: profile("--models", "llama-68m,LLAMA-68m", "--out",
                                                              tmp / "p")(tmp), "--models lists llama-68m twice"),
    # validate read an empty --scenario or --profile-dir as the default (a whole validation ran, exit 1) and an
    # empty --out as the current folder (Path('') is '.': it wrote there)
    Hostile("validate_scenario_empty", lambda tmp: ["validate", "--quick", "--quiet", "--scenario", "", "--out",
                                                    tmp / "v"], "--scenario: an empty path"),
    Hostile("validate_out_empty", lambda tmp: ["validate", "--quick", "--quiet", "--out", ""], "--out: an empty path"),
    Hostile("validate_profile_dir_blank", lambda tmp: ["validate", "--quick", "--quiet", "--profile-dir", " ",
                                                       "--out", tmp / "v"], "--profile-dir: an empty path"),
    # CSV traces read by the format importer: every row one field longer than the header made pandas take the
    # first column as the index and shift the others (arrival 10, prompt 5, output 7), silently; a column named
    # twice was read from its first; a bad value after blank lines was named at the wrong line
    Hostile("trace_importer_rows_longer_than_the_header",
            trace(text_file("t.csv", TRACE_HEAD + "0,10,5,7\n1,10,5,7\n"), time_unit="s"),
            "t.csv, line 2: 4 fields; the header has 3"),
    Hostile("burstgpt_column_named_twice",
            trace(text_file("b.csv", "Timestamp,Model,Request tokens,Response tokens,Request tokens\n"
                                     "5,ChatGPT,472,18,9\n6,ChatGPT,472,18,9\n"), "burstgpt"),
            "column 'Request tokens' appears 2 times in the header (fields 3, 5)"),
    Hostile("trace_importer_bad_value_after_blank_lines",
            trace(text_file("t.csv", TRACE_HEAD + "0,10,5\n\n\n1,x,5\n"), time_unit="s"),
            "column 'prompt_tokens', line 5: 'x' is not"),
    # JSON lines: NaN (which json.loads reads, JSON has not) was 'the value is missing'; a line nested 100,000
    # deep was a RecursionError traceback; hash ids of another block size (hash_block_tokens: 16 on a Mooncake
    # trace: 10 ids for 293 blocks) priced the prefix cache from ids that do not describe the prompt, silently
    Hostile("mooncake_nan_timestamp", trace(text_file("m.jsonl", MOONCAKE % (0, "1") + MOONCAKE.replace(
        '"timestamp": %d', '"timestamp": NaN%s') % ("", "2")), "mooncake"), "line 2: NaN is not a JSON number"),
    Hostile("mooncake_line_nested_too_deep", trace(text_file("m.jsonl", MOONCAKE % (0, "1") + MOONCAKE % (
        5, "[" * 100000 + "]" * 100000)), "mooncake"), "m.jsonl, line 2: nests too deeply to be read"),
    Hostile("mooncake_block_ids_of_another_block_size",
            trace(text_file("m.jsonl", MOONCAKE % (0, "1, 2") + MOONCAKE % (5, "3, 4")), "mooncake",
                  hash_block_tokens=16), "column 'hash_ids', line 1: 2 block ids for 1000 prompt tokens; expected 62 or 63"),
    # a hash_ids column mapped on a format without a block size divided by zero (a traceback); a block size
    # without hash ids was ignored
    Hostile("trace_hash_ids_without_a_block_size",
            trace(text_file("t.csv", "arrival_s,prompt_tokens,output_tokens,h\n0,10,5,[1]\n1,10,5,[2]\n"),
                  columns={"hash_ids": "h"}), "workload.arrival: columns.hash_ids needs hash_block_tokens"),
    Hostile("trace_block_size_without_hash_ids", trace(text_file("t.csv", TRACE_HEAD + "0,10,5\n1,10,5\n"),
                                                       hash_block_tokens=16),
            "workload.arrival: hash_block_tokens is the prompt tokens each prefix hash id covers"),
    # one column mapped to two roles read the prompt lengths as arrival times, silently
    Hostile("trace_one_column_for_two_roles", trace(text_file("t.csv", TRACE_HEAD + "0,10,5\n1,10,5\n"),
                                                    columns={"arrival": "prompt_tokens"}),
            "workload.arrival: columns: arrival and prompt_tokens both read column 'prompt_tokens'"),
    # acceptance traces a user supplies (parquet): a negative max_accept walked a sequence backwards (an
    # IndexError traceback; -1 never ends), a negative rank accepted every draft and a β of 2 was an acceptance
    # probability, silently; an empty trace in sample mode was a NumPy traceback
    Hostile("acceptance_trace_negative_max_accept", acceptance_trace("max_accept", -5),
            "acc.parquet: column 'max_accept', row 0: -5 is not allowed; expected a finite number >= 0"),
    Hostile("acceptance_trace_negative_rank", acceptance_trace("draft_rank", -1), "column 'draft_rank', row 0: -1"),
    Hostile("acceptance_trace_beta_above_one", acceptance_trace("draft_beta_t100", 2.0, "sample"),
            "column 'draft_beta_t100', row 0: 2 is not allowed; expected a finite number in [0, 1]"),
    Hostile("acceptance_trace_empty_sampled", acceptance_trace("", None, "sample"), "acc.parquet: the trace has no rows"),
    # config.json fields the converters read with a bare int(): a layer period of 0 was a ZeroDivisionError
    # traceback; 8.7 experts were 8, -1 shared experts priced, an attention offset beyond its period left no
    # attention layer, silently; a text was "invalid literal for int() with base 10"
    Hostile("hf_jamba_attention_period_zero", hf_shipped("Jamba-1.5-Mini", attn_layer_period=0),
            "attn_layer_period is 0; expected an integer >= 1"),
    Hostile("hf_qwen3_next_full_attention_interval_zero",
            hf_shipped("Qwen3-Next-80B-A3B-Instruct", layer_types=None, full_attention_interval=0),
            "full_attention_interval is 0; expected an integer >= 1"),
    Hostile("hf_deepseek_fractional_experts", hf_shipped("DeepSeek-V3", n_routed_experts=8.7),
            "n_routed_experts is 8.7; expected an integer >= 0"),
    Hostile("hf_deepseek_negative_shared_experts", hf_shipped("DeepSeek-V3", n_shared_experts=-1),
            "n_shared_experts is -1; expected an integer >= 0"),
    Hostile("hf_jamba_attention_offset_beyond_period", hf_shipped("Jamba-1.5-Mini", attn_layer_offset=99),
            "attn_layer_offset (99) must be below attn_layer_period (8)"),
    Hostile("hf_nemotron_experts_text", hf_shipped("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", n_routed_experts="x"),
            "n_routed_experts is 'x'; expected an integer >= 1"),
    # ---- the lead's (2026-11-27) ----------------------------------------------------------------------------
    # --dry-run lists every point; --resume beside it listed them all (not the missing ones), without a word
    Hostile("sweep_dry_run_with_resume", lambda tmp: sweep()(tmp) + ["--dry-run", "--resume"],
            "--resume: is for a run; --dry-run lists every point"),
    Hostile("sweep_dry_run_with_plot", lambda tmp: sweep()(tmp) + ["--dry-run", "--plot"], "--plot: is for a run"),
    # an empty --points was read as the current folder ('. is a directory')
    # 31 variants of 1M requests each: every one fits alone, but compare builds all of them before the first
    # simulates and keeps every run's requests (27 GiB together on a 24 GiB machine)
    # a BurstGPT token count of -1 said 'an integer from 1 to 10^12' though rows of 0 (failed requests) are read
    # a plan or sweep file given to run or compare said 'cluster: required field is missing'
    Hostile("run_a_plan_file", lambda tmp: ["run", REPO / "scenarios/plans/llama8b_chat.yaml", "--out", tmp / "o"],
            "scenario: this is a plan file (it has search, not cluster); run it with draftsim plan"),
    Hostile("compare_a_sweep_file", lambda tmp: ["compare", REPO / "scenarios/sweeps/quickstart_qps_gamma.yaml",
                                                 REPO / "scenarios/quickstart.yaml", "--out", tmp / "o"],
            "this is a sweep file (it has scenario and grid, not cluster); run it with draftsim sweep"),
    # estimate's engine flags were named as the scenario's fields (cluster.engine.host_cpu: ...), which the
    # command line has none of
    Hostile("estimate_unknown_host_cpu", estimate("--host-cpu", "bogus"), "error: --host-cpu: unknown host 'bogus'"),
    # ... and its way out named the scenario's form, "{calibration_us: N}", which the flag refuses (2026-11-29)
    Hostile("estimate_unknown_host_cpu_names_the_flags_number", estimate("--host-cpu", "{calibration_us: 9000}"),
            "(or give --host-cpu N, the host's calibration_us in µs, measured with profiles/engine_time/"),
    Hostile("estimate_engine_version_0_0_1", estimate("--engine-version", "0.0.1"),
            "error: --engine-version: no engine model for vllm 0.0.1"),
    # a version after the newest release (vllm 99, a 0.34 pre-release, sglang 0.5.24) was modelled as the newest
    # range, exit 0 (profiles/data/engine_time/frameworks.yaml newest_release: PyPI on 2026-11-28)
    Hostile("estimate_engine_version_99", estimate("--engine-version", "99"),
            "error: --engine-version: vllm 99 is newer than the newest release known here (0.33.0, 2026-11-28); allowed: 0.2.0 to 0.33.0"),
    Hostile("engine_version_vllm_0_34_rc", run(cluster={"engine": {"version": "0.34.0rc1"}}),
            "draftsim: error: cluster.engine.version: vllm 0.34.0rc1 is newer than the newest release known here (0.33.0"),
    # a draft model at tensor parallelism 2 beside a tp-4 target ran under vLLM, which refuses it at start
    # (SpeculativeConfig._verify_and_get_draft_tp: 1 or the target's tp)
    # Medusa-style heads under SGLang ran, exit 0; no SGLang release has them
    # `draftsim` with no COMMAND printed the whole help to stdout, nothing on stderr, exit 2
    Hostile("no_command", lambda tmp: [], "draftsim: error: give a COMMAND: run, catalog, estimate"),
    Hostile("sglang_medusa_heads",
            run(cluster={"engine": {"framework": "sglang"}}, drafter={"kind": "head", "style": "parallel", "gamma": 4}),
            "draftsim: error: drafter.kind: sglang"),
    Hostile("vllm_draft_tp_2_of_target_tp_4",
            run(cluster={"model": "llama-3.1-70b", "parallelism": {"tp": 4}, "engine": {"version": "0.32.0"}},
                drafter={"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3, "tp": 2}),
            "draftsim: error: drafter.tp: vllm 0.32.0 runs a draft model at tensor parallelism 1 or the target's only"),
    Hostile("engine_version_sglang_0_5_24", run(cluster={"engine": {"framework": "sglang", "version": "0.5.24"}}),
            "draftsim: error: cluster.engine.version: sglang 0.5.24 is newer than the newest release known here (0.5.23"),
    Hostile("burstgpt_negative_tokens",
            trace(text_file("b.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                                     "5,ChatGPT,472,0,472,Conversation log\n6,ChatGPT,-1,18,17,Conversation log\n"),
                  "burstgpt"), "an integer from 0 to 10^12 (tokens; rows of 0 are failed requests, skipped)"),
    Hostile("compare_runs_that_fit_only_alone",
            lambda tmp: ["compare", _write(tmp, "s.yaml", merge(TINY, {"workload": {"num_requests": 1_000_000}})),
                         *[arg for s in range(100, 130) for arg in ("--vary", f"seed={s}")]],
            "--vary: 31 runs held at once need at least", patch=little_memory),
    Hostile("validate_published_points_empty", lambda tmp: ["validate", "--published", "--points", ""],
            "--points: an empty path"),
    # ---- helper1: what a scenario's sections mean (outputs, scheduler, drafter, acceptance, cluster) ------------
    # an aggregate interval of 1e-300 s overflowed the interval numbers ('invalid value encountered in cast'),
    # then a KeyError traceback after the whole run (2026-11-28)
    Hostile("aggregate_interval_1e_300", run(outputs={"steps": "aggregate", "step_interval_s": 1e-300}),
            "outputs.step_interval_s: Input should be greater than or equal to 0.000001"),
    # trace.json of per-interval sums: a ValueError traceback ('steps: missing column(s) start_s, ...') after the run
    Hostile("trace_of_aggregated_steps", run(None, "--trace", outputs={"steps": "aggregate", "plots": False}),
            "--trace: draws every step as a slice, but outputs.steps aggregate keeps per-interval sums"),
    # infinite or NaN numbers where a finite one is meant: a ValueError traceback from the pair's normalisation
    # (p [.inf, 1]; p [1e308, 1e308] sums to inf), from the contexts' weights (weight .inf), an OverflowError
    # from SGLang's ceiling_coeff .inf, a run that never switched (up_hysteresis .nan, exit 0) (2026-11-28)
    Hostile("pair_p_infinite", run(acceptance={"kind": "pair", "p": [float("inf"), 1.0], "q": [1.0, 1.0]}),
            "acceptance.p.0: Input should be a finite number"),
    Hostile("pair_p_sums_to_inf", run(acceptance={"kind": "pair", "p": [1e308, 1e308], "q": [1.0, 1.0]}),
            "acceptance.p: sums to inf; expected a finite sum"),
    # (also named the field as 'acceptance.contexts: [...] is not allowed; expected contexts': the kind's tag and
    # the field share the name `contexts`)
    Hostile("contexts_weight_infinite", run(acceptance={"kind": "contexts", "contexts": [
        {"weight": float("inf"), "accept_probs": [0.5]}, {"weight": 1.0, "accept_probs": [0.2]}]}),
            "acceptance.contexts.0.weight: Input should be a finite number"),
    Hostile("contexts_weights_sum_to_inf", run(acceptance={"kind": "contexts", "contexts": [
        {"weight": 1e308, "accept_probs": [0.5]}, {"weight": 1e308, "accept_probs": [0.2]}]}),
            "acceptance.contexts: the weights sum to inf"),
    Hostile("sglang_hysteresis_nan", run(policy={"kind": "sglang_adaptive", "slots": {
        1: {"candidate_steps": [1, 2], "up_hysteresis": float("nan")}}}), "policy.slots.1.up_hysteresis: Input should be a finite"),
    Hostile("sglang_ceiling_infinite", run(policy={"kind": "sglang_adaptive", "slots": {
        1: {"candidate_steps": [1, 2], "ceiling_coeff": float("inf")}}}), "policy.slots.1.ceiling_coeff: Input should be a finite"),
    Hostile("trtllm_threshold_infinite", run(policy={"kind": "trtllm_schedule", "acceptance_window": 1,
                                                     "acceptance_length_threshold": float("inf")}),
            "policy.acceptance_length_threshold: Input should be a finite number"),
    # a host of .inf µs hung the run; 1e300 priced steps of 1e293 s (exit 0)
    Hostile("host_cpu_infinite", run(cluster={"engine": {"host_cpu": float("inf")}}),
            "cluster.engine.host_cpu: calibration_us: inf is not allowed; expected a number of µs in 100..1,000,000"),
    Hostile("host_cpu_1e300", run(cluster={"engine": {"host_cpu": {"calibration_us": 1e300}}}),
            "cluster.engine.host_cpu: calibration_us: 1e+300 is not allowed"),
    # TensorRT-LLM's scheduler with a token budget that nothing fits in: the run never ended (2026-11-28)
    Hostile("trtllm_budget_below_a_prompt", run(scheduler={"kind": "trtllm", "max_batched_tokens": 100}),
            "scheduler.max_batched_tokens: 100 is below request"),
    Hostile("trtllm_budget_below_a_block", run(scheduler={"kind": "trtllm", "max_batched_tokens": 8},
                                               cluster={"engine": {"chunked_prefill": True}}),
            "scheduler.max_batched_tokens: 8 is below one KV block (scheduler.block_size 16)"),
    Hostile("trtllm_budget_below_a_speculative_step", run(
        scheduler={"kind": "trtllm", "max_batched_tokens": 4, "block_size": 1}, cluster={"engine": {"chunked_prefill": True}},
        drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4}),
            "scheduler.max_batched_tokens: 4 is below one speculative step of a request (5 tokens"),
    # a vllm_v1 tree of 31 nodes under a budget of 8: bulk mode decoded 31-token steps (exit 0), step mode never ended
    Hostile("vllm_v1_budget_below_a_tree", run(
        scheduler={"kind": "vllm_v1", "max_batched_tokens": 8, "max_batch_size": 1},
        drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
        speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 4, "budget": 16},
        acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]}),
            "scheduler.max_batched_tokens: 8 is below one speculative step of a request (31 tokens"),
    # a kary tree is full whatever its budget: k 64 and depth 64 built nodes until it was killed (2026-11-28)
    Hostile("kary_tree_of_64_levels", run(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
                                          speculation={"kind": "tree", "builder": "kary", "k": 64, "depth": 64},
                                          acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]}),
            "speculation.depth: a kary tree of k=64 and depth=64 has more than 1024 nodes"),
    # request lengths beyond int64: OverflowError/ValueError tracebacks; a prompt and an output of 2**62 tokens each
    # summed to a negative total that passed the context check, and the run never ended (2026-11-28)
    Hostile("fixed_length_1e30", run(workload={"prompt_tokens": {"kind": "fixed", "value": 10**30}}),
            "workload.prompt_tokens.value: Input should be less than or equal to 1000000000000"),
    Hostile("lengths_summing_beyond_int64", run(workload={"prompt_tokens": {"kind": "fixed", "value": 2**62},
                                                          "output_tokens": {"kind": "fixed", "value": 2**62}}),
            "workload.prompt_tokens.value: Input should be less than or equal to 1000000000000"),
    Hostile("lognormal_median_1e300", run(workload={"prompt_tokens": {"kind": "lognormal", "median": 1e300, "sigma": 1}}),
            "workload.prompt_tokens.median: Input should be less than or equal to 1000000000000"),
    Hostile("lognormal_sigma_50", run(workload={"prompt_tokens": {"kind": "lognormal", "median": 600, "sigma": 50}}),
            "workload: request"),   # (its draws beyond 10**12 tokens exceed the model's context)
    Hostile("gamma_cv_1e_300", run(workload={"arrival": {"process": "gamma", "qps": 4, "cv": 1e-300}}),
            "workload.arrival.cv: Input should be greater than or equal to 0.001"),
    # every turn of every session is drawn before the earliest num_requests are kept: 'out of memory', exit 1
    Hostile("sessions_a_billion_turns", run(workload={"sessions": {"turns": {"kind": "fixed", "value": 10**9},
                                                                   "think_time_s": 1}}),
            "workload.sessions.turns: the sessions' prompts re-send their earlier turns"),
    # a draft model larger than its target ran (exit 0): a 'speed-up' of a 1B model by an 8B draft (2026-11-28)
    Hostile("draft_model_larger_than_the_target", run(cluster={"model": "llama-3.2-1b"},
                                                      drafter={"kind": "draft_model", "model": "llama-3.1-8b"}),
            "drafter.model: llama-3.1-8b (8.03 B parameters) is larger than the target llama-3.2-1b"),
    # -- impossible deployments and the plan file (helper5, 2026-11-28) --
    # a plan without any SLO 'met the SLOs' with every runnable candidate: it answered its cheapest (exit 0)
    Hostile("plan_without_any_slo", plan(slo={"ttft_s": None, "tpot_s": None}),
            "plan.slo: a plan looks for the cheapest candidate that meets the SLOs: give at least one of"),
    # plan.moe with search.ep [1] was read by no candidate (a scenario's cluster.moe is refused so): exit 0
    Hostile("plan_moe_without_expert_parallelism", plan(moe={"routing": "zipf"}),
            "plan.moe: routing and pre-scheduling price the all-to-alls of expert parallelism"),
    # a tree's shape ignores gamma: gamma [2, 4] made each tree candidate twice, identical (exit 0)
    Hostile("plan_tree_listing_several_gammas", plan(acceptance={"kind": "ranked", "accept_probs": [0.5, 0.2]},
                                                     search={**PLAN["search"], "drafters": [
                                                         {"kind": "draft_model", "model": "llama-68m", "gamma": [2, 4],
                                                          "speculation": {"kind": "tree", "builder": "sequoia",
                                                                          "budget": 16}}]}),
            "plan.search.drafters.0.gamma: a tree speculation's shape is set by its own fields"),
    # EAGLE-3 with a static tree (which the engines never run with it): every such candidate failed alone and
    # the plan answered with the others (exit 0)
    Hostile("plan_eagle3_on_a_static_tree", plan(models=["llama-3.1-8b"], search={**PLAN["search"], "drafters": [
        {"kind": "none"}, {"kind": "eagle3", "speculation": {"kind": "tree", "builder": "sequoia", "budget": 16}}]}),
            "plan.search.drafters.1.speculation.kind: EAGLE-3 drafters run the engines' chain"),
    # a pool's unknown router named two fields ('...decode.router: cluster.router: unknown router')
    Hostile("disaggregated_decode_router_unknown", run(cluster={"disaggregation": {"decode": {"router": "nope"}}}),
            "error: cluster.disaggregation.decode.router: unknown router 'nope'; allowed: join_shortest_queue"),
    # swap preemption and host memory without a prefix cache, disaggregated: read by neither pool (the outputs
    # were those of recompute without host memory, byte for byte, under KV pressure), exit 0
    Hostile("swap_between_disaggregated_pools", run(cluster={"disaggregation": {}, "kv_cache": {
        "preemption": "swap", "host_memory_gib": 16}}), "cluster.kv_cache.preemption: 'swap' keeps a preempted"),
    Hostile("host_memory_between_disaggregated_pools", run(cluster={"disaggregation": {}, "kv_cache": {
        "host_memory_gib": 16}}), "cluster.kv_cache.host_memory_gib: with cluster.disaggregation host memory"),
    # a price of 1e308 $/GPU-hour overflowed to inf over two GPUs: a ValueError traceback drawing pareto.png
    Hostile("plan_price_1e308", plan(slo={"tpot_s": 0.06}, hardware=[{"id": "l40s", "usd_per_gpu_hour": 1e308}],
                                     search={**PLAN["search"], "tp": [1, 2]}),
            "plan.hardware.0.usd_per_gpu_hour: Input should be less than or equal to 1000"),
    Hostile("energy_price_1e308", run(energy={"usd_per_kwh": 1e308}),   # (usd_per_mtok: null, exit 0)
            "energy.usd_per_kwh: Input should be less than or equal to 100"),
    # a plan's workload was drawn by its screen with no memory check: num_requests 1e9 ran until the kernel
    # killed it (48 s, SIGKILL); a billion turns per session was 'out of memory', exit 1
    Hostile("plan_a_billion_requests", plan(workload={"num_requests": 10**9}),
            "plan.workload.num_requests: 1,000,000,000 requests need at least", patch=little_memory),
    Hostile("plan_sessions_a_billion_turns", plan(workload={"sessions": {"turns": {"kind": "fixed", "value": 10**9},
                                                                         "think_time_s": 1}}),
            "plan.workload.sessions.turns: the sessions' prompts re-send their earlier turns"),
    # estimate --kv-dtype nvfp4 on a GPU without FP4 named a scenario field the command has none of
    Hostile("estimate_kv_dtype_the_gpu_cannot_run", estimate("--kv-dtype", "nvfp4"),
            "draftsim estimate: error: --kv-dtype: an nvfp4 KV cache needs FP4 tensor cores, which h100-sxm lacks"),
    # cluster.moe.routing_trace: a text file was 'pickled (object) data. If you trust the file you can load it
    # unsafely...', a FIFO 'file not found', and a header announcing 2e9 tokens was read (MemoryError, exit 1)
    Hostile("routing_trace_a_text_file", moe_trace(lambda tmp: _write(tmp, "r.npy", "0 1 2 3\n")),
            "r.npy: not a NumPy .npy file (save the expert ids with numpy.save)"),
    Hostile("routing_trace_a_fifo", moe_trace(lambda tmp: fifo(tmp, "r.npy")),
            "r.npy: is a FIFO (named pipe), not a regular file"),
    Hostile("routing_trace_of_two_billion_tokens", moe_trace(lambda tmp: _write(tmp, "r.npy", _npy_header((2 * 10**9, 8)))),
            "r.npy: its 2,000,000,000 × 8 ids take 119.2 GiB; at most 1 GiB"),
    # two pools' hardware blocks of one id and other figures: the decode pool was priced with the prefill's
    # latency model (TPOT 5.3 ms where its own GPU takes 18.9 ms) and the two shared a scale-up link (exit 0)
    Hostile("disaggregated_pools_two_gpus_of_one_id", run(cluster={"disaggregation": {
        "prefill": {"hardware": HW}, "decode": {"hardware": dict(HW, hbm_bandwidth_bytes_per_s=1e12)}}}),
            "cluster.disaggregation.decode.hardware.id: 'my-gpu' names other figures than the prefill pool's"),
    # ---- helper6: every catalog combination (2026-11-28) ----------------------------------------------------
    # a step beyond the engine limits given was priced (exit 0): 300 requests under --max-num-seqs 256, a
    # prefill of 4 x 4096 tokens under a budget of 1024
    Hostile("estimate_batch_beyond_max_num_seqs", estimate("--batch", "300", "--max-num-seqs", "256"),
            "error: --batch: 300 requests in one step exceed the engine's max running requests, 256 (--max-num-seqs"),
    Hostile("estimate_prefill_beyond_the_token_budget",
            estimate("--prefill-tokens", "4096", "--batch", "4", "--max-num-batched-tokens", "1024",
                     "--max-num-seqs", "4"),
            "error: --batch: 4 x 4,096 new tokens in one step exceed the engine's token budget, 1,024"),
    # the estimate's dtype error listed fp32 ... int4 as allowed, not nvfp4 and mxfp4 (which it prices)
    # Mamba-2 groups a tp does not divide (8 groups, tp 16): priced with replicated groups (exit 0); vLLM
    # refuses any group count but 1 that tp does not divide
    Hostile("mamba2_groups_not_divided_by_tp", run(cluster={"model": "nemotron-3-nano-30b-a3b",
                                                           "parallelism": {"tp": 16}}),
            "parallelism.tp=16 must divide the 8 Mamba-2 groups (n_groups) of nemotron-3-nano-30b-a3b"),
    # a draft model on the host CPU with tp 2 ran as one CPU process (tp ignored), exit 0
    Hostile("cpu_draft_with_tp_2", run(drafter={"kind": "draft_model", "model": "llama-68m", "placement": "cpu",
                                                "tp": 2}),
            "drafter.tp: 2 is not allowed with placement 'cpu'"),
    # vLLM's draft-model pass layout (passes vllm) priced for a draft on the host CPU or on separate GPUs, exit 0
    Hostile("vllm_passes_of_a_cpu_draft", run(drafter={"kind": "draft_model", "model": "llama-68m",
                                                       "placement": "cpu", "passes": "vllm"}),
            "drafter.passes: 'vllm' is the pass layout of vLLM V1's DraftModelProposer"),
    Hostile("vllm_passes_of_a_separate_draft", run(drafter={"kind": "draft_model", "model": "llama-68m",
                                                            "placement": "separate", "passes": "vllm"}),
            "it needs placement 'colocated' and layer_parallel 1"),
    Hostile("estimate_dtype_int8", estimate("--dtype", "int8"), "allowed: fp32, bf16, fp16, fp8, fp8_block, int4, nvfp4, mxfp4"),
    # ---- helper4: exit codes, checks and outputs (2026-11-27) ------------------------------------------------
    # --out of a folder of the user's own (--out .) had its summary.csv replaced by the published-points
    # summary without a word; it is refused as `run` refuses it
    Hostile("validate_published_out_a_users_folder",
            lambda tmp: ["validate", "--published", "--kind", "gemm", "--quiet",
                         "--out", _write(tmp, "summary.csv", "the user's").parent],
            "--out: ", code=2),
    # a sweep point that cannot be built (70B on one GPU) was stored as 'invalid' and the sweep exited 0
    Hostile("sweep_point_that_cannot_be_built", sweep(grid={"cluster.model": ["llama-3-8b", "llama-3-70b"]}),
            "1 of 2 points could not run", code=1),
    # reproduce replaced a file of the user's that bore a reproduction's name (--out . beside tetris.csv)
    Hostile("reproduce_out_beside_a_users_file_of_its_name",
            lambda tmp: ["reproduce", "tetris", "--quiet", "--out", _write(tmp, "tetris.csv", "the user's").parent],
            "tetris.csv exists and was not written by draftsim reproduce"),
    # ---- lead (2026-11-28) ---------------------------------------------------------------------------------
    # compare named the field but not which of its runs was wrong ('cluster.model: unknown model ...')
    Hostile("compare_names_the_file_that_is_wrong",
            lambda tmp: ["compare", _write(tmp, "a.yaml", TINY),
                         _write(tmp, "b.yaml", merge(TINY, {"cluster": {"model": "bogus-model"}})), "--out", tmp / "o"],
            "b.yaml: cluster.model: unknown model 'bogus-model'"),
    Hostile("compare_names_the_variant_that_is_wrong",
            lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary", "seed=2", "--vary", "bogus=1",
                         "--out", tmp / "o"],
            "--vary bogus=1: bogus: unknown field"),
    # mxfp4 of a dense model: the format quantizes routed experts only (a3a553a), so it would serve it all in bf16
    Hostile("mxfp4_of_a_dense_model", run(cluster={"dtype": "mxfp4"}),
            "cluster.dtype: mxfp4 quantizes only routed experts"),
    # ---- helper2: are the engine rules current? (vLLM, SGLang, TensorRT-LLM) (2026-11-28) -------------------
    # suffix decoding with async_scheduling: true ran overlapped (exit 0); no vLLM release runs it asynchronously
    Hostile("vllm_suffix_decoding_with_async_scheduling",
            run(cluster={"model": "qwen2.5-coder-0.5b", "engine": {"version": "0.24.0", "async_scheduling": True}},
                drafter={"kind": "suffix"},
                acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "cluster.engine.async_scheduling: vllm 0.24.0 runs suffix decoding synchronously"),
    # Medusa heads on vLLM 0.33.0 ran (exit 0); v0.33.0 has no Medusa method
    Hostile("vllm_0_33_medusa_heads", run(cluster={"engine": {"version": "0.33.0"}},
                                          drafter={"kind": "head", "style": "parallel", "gamma": 3}),
            "drafter.kind: vllm 0.33.0 has no Medusa speculation"),
    # ---- helper5: the README's promises, walked as a new user (2026-11-28) ---------------------------------
    # --trace-requests without --trace was ignored: exit 0 and no trace.json
    Hostile("run_trace_requests_without_trace", run(None, "--trace-requests", "5"),
            "--trace-requests: sets how many request slices trace.json draws, which only --trace writes"),
    # ---- helper6: published gpt-oss points, the vLLM entrypoint (2026-11-28) --------------------------------
    # a point's workload.entrypoint other than llm / api_server (a typo of `vllm serve`'s) is refused at load
    Hostile("points_unknown_entrypoint", points([merge(POINT, {"workload": {"entrypoint": "serve"}})]),
            "workload: entrypoint: 'serve' is not one of llm, api_server"),
    # ---- helper4: theory against Monte-Carlo of the real algorithm, at the edges (2026-11-28) --------------
    # RASD with drafter.gamma 0 did not speculate at all: plain decoding, the retrieved branch dropped, exit 0
    Hostile("retrieval_merge_with_gamma_0",
            run(drafter={"kind": "head", "gamma": 0},
                speculation={"kind": "retrieval_merge", "tokens": 8, "alpha": 0.8, "hit_rate": 0.6}),
            "drafter.gamma: retrieval_merge verifies the drafter's chain beside the retrieved branch"),
    # a tree or rrs_wor multi-draft on a pair too large for the exact rrs_wor sum said 'acceptance: n=4 with 100
    # drafted tokens is too large ...; use theory.multidraft_sampling.estimate_acceptance' (a Python function);
    # optimal_wor's own message came out prefixed twice ('speculation: speculation.scheme: ...')
    Hostile("tree_on_a_pair_of_100_tokens",
            run(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 2},
                acceptance={"kind": "pair", "vocab": 100}),
            "draftsim: error: acceptance.vocab: tree verification on a pair computes the exact rrs_wor acceptance"),
    Hostile("multidraft_rrs_wor_on_a_pair_of_200_tokens",
            run(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                speculation={"kind": "multidraft", "n": 4, "scheme": "rrs_wor"},
                acceptance={"kind": "pair", "vocab": 200}),
            "draftsim: error: speculation.n: multidraft with scheme rrs_wor computes the exact acceptance of n=4"),
    Hostile("multidraft_optimal_wor_on_a_pair_of_200_tokens",
            run(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                speculation={"kind": "multidraft", "n": 4, "scheme": "optimal_wor"},
                acceptance={"kind": "pair", "vocab": 200}),
            "draftsim: error: speculation.scheme: optimal_wor solves a coupling LP"),
    # a sampling temperature between the measured ones was read as its neighbour when it rounded to one (the
    # β column's name: 0.995 ran at 1.0, 0.2549 at 0.25, exit 0) and refused otherwise (0.7)
    Hostile("trace_sample_temperature_0_995",
            run(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                acceptance={"kind": "trace", "trace": "qwen2.5-coder-0.5b-smollm2-135m", "drafter": "draft",
                            "mode": "sample", "temperature": 0.995}),
            "draftsim: error: acceptance.temperature: must be one of 0.25, 0.5, 0.75, 1.0, 1.5"),
    # ---- KV capacity at start-up (helper1: sliding-window KV, vLLM's check_enough_kv_cache_memory) ------
    # a deployment whose KV cannot hold one request of max_model_len (llama-3.1-8b's default 131,072 tokens
    # need 16 GiB; about 7.5 GiB are left at gpu_memory_utilization 0.3) ran, exit 0, where vLLM refuses to start
    Hostile("vllm_kv_below_one_max_model_len_request",
            run(cluster={"model": "llama-3.1-8b", "gpu_memory_utilization": 0.3}),
            "draftsim: error: cluster.max_model_len (not given: 131072 tokens, derived from llama-3.1-8b's "
            "max_position_embeddings: vLLM _get_and_verify_max_len (vllm/config/model.py), 0.24.0): 131072 tokens: one "
            "request of that length needs 8192 KV blocks"),
    # ---- theory vs Monte Carlo / plan, sweep, estimate (helper4) ------------------------------------------------
    # a plan whose trace sends every request at one instant was screened at 1 request/s (TTFT 99 % below the
    # DES's), exit 1 after confirming the wrong candidates
    Hostile("plan_trace_all_at_one_instant", _plan_on_trace("0.0,400,50\n" * 20),
            "draftsim plan: error: plan.workload.arrival: all 20 requests arrive at the same instant"),
    # ---- helper5 (hostile inputs and the CLI contract) -------------------------------------------------
    # a path holding a NUL byte (YAML's "\0" escape): os.stat raised a ValueError, a traceback out of the
    # trace reader and the sweep's scenario reader (the model and hardware readers said "embedded null byte")
    Hostile("trace_path_with_a_nul_byte", trace(lambda tmp: Path("a\x00b.csv")),
            "a\\x00b.csv cannot be read (its path holds a NUL byte); expected a CSV file"),
    Hostile("sweep_scenario_path_with_a_nul_byte", lambda tmp: ["sweep", _write(tmp, "sweep.yaml", {
        "name": "s", "scenario": "a\x00b.yaml", "grid": {"workload.arrival.qps": [4, 8]}}), "--out", tmp / "store",
        "--executor", "serial", "--quiet"], "a\\x00b.yaml cannot be read (its path holds a NUL byte)"),
    # --check-out without --check or --check-only was ignored: a profile written, no check, exit 0
    Hostile("profile_check_out_without_a_check", profile("--models", "llama-68m", "--check-out", "c.json", "--out", "p"),
            "draftsim profile: error: --check-out: writes the check's JSON; give it with --check or --check-only"),
    # one key set twice by --set (or a sweep's set:) ran the last value without a word, as a YAML file's
    # duplicate key no longer does; a mapping set after a key inside it dropped that key
    Hostile("set_one_key_twice", run(None, "--set", "seed=1", "--set", "seed=2"),
            "draftsim: error: --set: seed is set twice (seed=1, then seed=2); set each key once"),
    Hostile("set_a_mapping_after_its_key", run(None, "--set", "workload.arrival.qps=8", "--set",
                                               "workload.arrival={process: poisson, qps: 4}"),
            "--set: workload.arrival, set after workload.arrival.qps, replaces it"),
    Hostile("compare_set_one_key_twice", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--set", "seed=3", "--set",
                                                      "seed=4", "--vary", "seed=1", "--out", tmp / "cmp", "--quiet"],
            "draftsim compare: error: --set: seed is set twice (seed=3, then seed=4)"),
    Hostile("sweep_set_one_key_twice", sweep(set=["seed=1", "seed=2"]),
            "draftsim sweep: error: sweep.set: seed is set twice (seed=1, then seed=2)"),
    # a hardware path without the .yaml suffix (a folder, `gpu`) was called an unknown catalog id, without
    # a word of what a hardware file's name must end in
    Hostile("hardware_a_folder", lambda tmp: run(cluster={"hardware": str(_folder_with_a_file(tmp))})(tmp),
            "rtx-pro-6000, or a hardware YAML file (a path ending in .yaml or .yml)"),
    # an MoE model's expert ops carry moe_* dims the profile table has no column for: every kernel was timed,
    # then the rows failed ("unknown profile dim 'moe_ep'", naming no flag)
    Hostile("profile_an_moe_model", profile("--models", "qwen3-30b-a3b", "--out", "p"),
            "draftsim profile: error: --models: qwen3-30b-a3b: the profiler cannot time or table its activation ops"),
    # a name with a lone surrogate (YAML "\ud800") was a UnicodeEncodeError traceback at the default out/<name>;
    # one with a right-to-left override or a zero-width space made a folder whose name reads otherwise
    Hostile("name_with_a_lone_surrogate", lambda tmp: ["run", _write(tmp, "s.yaml", yaml.safe_dump(TINY).replace(
        "name: t", 'name: "a\\ud800b"')), "--quiet"], "name: 'a\\ud800b' holds a lone surrogate U+D800"),
    Hostile("name_with_a_right_to_left_override", lambda tmp: ["run", _write(tmp, "s.yaml", yaml.safe_dump(TINY).replace(
        "name: t", 'name: "txt.\\u202eexe"')), "--quiet"], "holds the invisible format character U+202E"),
    Hostile("trace_path_with_a_lone_surrogate", trace(lambda tmp: Path("a\ud800b.csv")),
            "cannot be read (its path holds a lone surrogate, which is not Unicode text)"),
    # profile --engine vllm did not check --out before its model folders and vLLM (a user's folder got files)
    Hostile("profile_vllm_out_a_users_folder", lambda tmp: ["profile", "--engine", "vllm", "--models",
                                                            "qwen2.5-coder-0.5b", "--out", _folder_with_a_file(tmp)],
            "is a non-empty directory that is not a draftsim output (no fingerprint.json or draftsim manifest)"),
    # validate --engine vllm met --out only when writing its results: a user's folder got them among its files
    Hostile("validate_vllm_out_a_users_folder", lambda tmp: ["validate", "--engine", "vllm", "--quiet", "--out",
                                                             _folder_with_a_file(tmp)],
            "is a non-empty directory that is not a draftsim output (no vllm_validation.json or draftsim manifest)"),
    Hostile("run_executor_and_set_executor", run(None, "--executor", "local-dask", "--set", "simulation.executor=local"),
            "--executor: sets simulation.executor, and --set simulation.executor=local sets it too; give it once"),
    # run's --workers and --executor were refused naming the field they set ("simulation.workers: ... got 0"), which
    # the user never typed (2026-11-29)
    Hostile("run_workers_zero", run(None, "--workers", "0"),
            "draftsim: error: --workers: an integer in 1.."),
    Hostile("run_workers_zero_names_the_field_it_overrides", run(None, "--workers", "0"),
            "or 'auto', got 0 (overrides simulation.workers)"),
    Hostile("run_bogus_executor", run(None, "--executor", "bogus"),
            "draftsim: error: --executor: local, local-dask, dask://HOST:PORT or tcp://HOST:PORT; got 'bogus' "
            "(overrides simulation.executor)"),
    Hostile("run_workers_and_set_the_simulation_mapping", run(None, "--workers", "1", "--set", "simulation={seed: 1}"),
            "--workers: sets simulation.workers, and --set simulation={seed: 1} replaces simulation, which holds it"),
    Hostile("run_executor_and_set_executor_spelled_apart", run(None, "--executor", "local", "--set",
                                                               " simulation . executor =local"),
            "--executor: sets simulation.executor, and --set"),
    # ---- vLLM's GPU memory accounting (helper8): the memory CUDA reports, in a hardware file ------------------
    # a field the KV budget reads (simulator.cluster.vllm_memory): text or a figure above the device's memory
    # would have been multiplied into the budget unchecked
    Hostile("hardware_cuda_total_bytes_text", hardware(cuda_total_bytes="lots"),
            "draftsim: error: cluster.hardware.cuda_total_bytes: 'lots' is not a number; expected a number >= 0"),
    Hostile("hardware_cuda_total_bytes_negative", hardware(cuda_total_bytes=-1),
            "draftsim: error: cluster.hardware.cuda_total_bytes: -1 is not a number >= 0"),
    Hostile("hardware_cuda_total_bytes_in_gib_not_bytes", hardware(cuda_total_bytes=79.19),
            "draftsim: error: cluster.hardware.cuda_total_bytes: 79.19 is outside the physically plausible"),
    Hostile("hardware_cuda_total_bytes_above_the_device", hardware(cuda_total_bytes=200e9),
            "draftsim: error: cluster.hardware.cuda_total_bytes: 2e+11 exceeds 1.1 x hbm_bytes (9.6e+10)"),
    # ---- helper2: engine rules left open (2026-11-28) ------------------------------------------------------
    # a draft model on vLLM 0.11-0.14 ran (exit 0); those releases raise at start-up (vllm/config/speculative.py)
    Hostile("vllm_0_14_draft_model", run(cluster={"engine": {"version": "0.14.0"}},
                                         drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
            "draftsim: error: cluster.engine.version: vllm 0.14.0 raises at start-up for a draft model"),
    Hostile("a100_tables_release_draft_model", run(cluster={"hardware": "a100-80gb"},
                                                   drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
            "draftsim: error: cluster.engine.version (not given: vllm 0.14.0, the release of a100-80gb's measured "
            "tables, cluster.latency): vllm 0.14.0 raises at start-up for a draft model"),
    # no max_batch_size on vLLM 0.11.0/H100 (max_num_seqs defaults to 1024) with a 512-token budget: vLLM's
    # SchedulerConfig._verify_args raises; before, draftsim ran it at its own 256 (exit 0)
    Hostile("vllm_0_11_0_default_seqs_above_token_budget",
            run(cluster={"engine": {"version": "0.11.0"}}, scheduler={"kind": "vllm", "max_batched_tokens": 512}),
            "draftsim: error: scheduler.max_batched_tokens: 512 is below the engine's default running-request limit 1024"),
    # SGLang 0.5.1 ran a draft model (exit 0); --speculative-algorithm STANDALONE came in v0.5.2
    Hostile("sglang_0_5_1_draft_model",
            run(cluster={"engine": {"framework": "sglang", "version": "0.5.1"}},
                drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
            "draftsim: error: cluster.engine.version: sglang 0.5.1 has no draft-model speculation"),
    # the case estimate_budget_below_max_num_seqs tested before the engine's own default applied (a given limit)
    Hostile("estimate_budget_below_given_max_num_seqs",
            estimate("--max-num-seqs", "256", "--max-num-batched-tokens", "100"),
            "error: --max-num-batched-tokens (100) must be >= --max-num-seqs (256)"),
    # ---- helper3: determinism and invariant fuzzing (2026-11-28) -------------------------------------------
    # parallel sampling with speculation said "... is not supported with a drafter; allowed: 1, or no a drafter"
    Hostile("parallel_samples_with_a_drafter",
            run(workload={"parallel_samples": 2}, drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
            "draftsim: error: workload.parallel_samples: 2 sequences per request is not supported with drafter kind "
            "'draft_model'; allowed: 1, or drafter kind 'none'"),
    # ---- helper3: TensorRT-LLM 1.3 / 1.4 rules (2026-11-28) ---------------------------------------------------
    # draft_len_schedule on TensorRT-LLM 1.2.0 ran with PR #10860's upper-bound keys, which came after v1.3.0rc7 (exit 0)
    Hostile("trtllm_1_2_draft_len_schedule",
            run(cluster={"model": "llama-3.1-8b", "engine": {"framework": "trtllm", "version": "1.2.0"}},
                drafter={"kind": "eagle3", "gamma": 3}, policy={"kind": "trtllm_schedule", "draft_len_schedule": {4: 3}}),
            "draftsim: error: policy.draft_len_schedule: trtllm 1.2.0 does not read draft_len_schedule keys as "
            "batch-size upper bounds"),
    # the per-request acceptance gate ran on TensorRT-LLM 1.4.0rc4, which renamed it and gates per iteration (exit 0)
    Hostile("trtllm_1_4_acceptance_window",
            run(cluster={"model": "llama-3.1-8b", "engine": {"framework": "trtllm", "version": "1.4.0rc4"}},
                drafter={"kind": "eagle3", "gamma": 3},
                policy={"kind": "trtllm_schedule", "acceptance_window": 8, "acceptance_length_threshold": 0.5}),
            "draftsim: error: policy.acceptance_window: trtllm 1.4.0rc4 has no acceptance_window"),
    Hostile("trtllm_acceptance_rate_above_one",
            run(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                policy={"kind": "trtllm_schedule", "acceptance_rate_window_size": 8, "acceptance_rate_threshold": 1.5}),
            "draftsim: error: policy.acceptance_rate_threshold: Input should be less than or equal to 1"),
    Hostile("trtllm_two_acceptance_gates",
            run(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3},
                policy={"kind": "trtllm_schedule", "acceptance_rate_window_size": 8, "acceptance_rate_threshold": 0.5,
                        "acceptance_window": 3}),
            "draftsim: error: policy: give one acceptance gate"),
    # helper2 2026-11-28 hunt
    # a plan whose requests exceed a model's context (context_overflow: error, the default) was screened, every
    # DES confirmation failed ('invalid'), and the plan said none met the SLOs (exit 1, outputs written)
    Hostile("plan_trace_beyond_the_models_context", _plan_on_trace("0.1,10000,10\n0.2,100,10\n"),
            "draftsim plan: error: plan.workload: request 0 needs 10010 tokens (prompt 10000 + output 10) but the "
            "context of llama-3-8b (plan.models.0) is 8192; set plan.workload.context_overflow: drop or truncate"),
    Hostile("plan_prompts_beyond_the_models_context",
            plan(workload=merge(PLAN["workload"], {"prompt_tokens": {"kind": "fixed", "value": 8190}})),
            "plan.workload: request 0 needs 8240 tokens (prompt 8190 + output 50) but the context of llama-3-8b"),
    # estimate named the scheduler's field as 'set scheduler.--max-num-seqs' (its flag spliced into the field)
    Hostile("estimate_default_seqs_above_budget_names_the_flag",
            estimate("--engine-version", "0.11.0", "--max-num-batched-tokens", "512"),
            "allowed: --max-num-batched-tokens >= 1024, or set --max-num-seqs"),
    # gpt-oss under scheduler kind vllm (whole prompts in one step) passed vLLM's start-up check at a
    # max_model_len its sliding-window pool cannot serve: every request that long was dropped, exit 0
    Hostile("sliding_window_max_model_len_beyond_whole_prompt_pool",
            run(cluster={"model": "gpt-oss-20b", "dtype": "mxfp4", "gpu_memory_utilization": 0.2,
                         "max_model_len": 50000}),
            "draftsim: error: cluster.max_model_len: 50000 tokens: under scheduler kind 'vllm' the sliding-window "
            "pool takes a whole prompt in one step"),
    # plan.engine of a release without an engine model: every candidate screened out with that reason, exit 1,
    # outputs written
    Hostile("plan_engine_version_unknown", plan(engine={"version": "9.9"}),
            "draftsim plan: error: plan.engine.version: vllm 9.9 is newer than the newest release known here"),
    # ---- lead 2026-11-28 (from helper2's list) -------------------------------------------------------------
    # a plan's missing trace was named as the scenario's field (workload.arrival.trace_csv), without `plan.`
    Hostile("plan_trace_missing", _plan_on_missing_trace,
            "draftsim plan: error: plan.workload.arrival.trace_csv: file not found"),
    # an engine version that is no release number ran as typed ("0.15.x" matched no rule, and "v0.24.0" matched
    # the engine rules but not the measured tables)
    Hostile("engine_version_not_a_release_number", run(cluster={"engine": {"version": "0.15.x"}}),
            "draftsim: error: cluster.engine.version: '0.15.x' is not a release number"),
    # ---- helper1 2026-11-28: SGLang's KV memory rule -------------------------------------------------------
    # Llama-3.1-70B bf16 over two H100s under SGLang (0.5.23's default mem_fraction_static 0.827 of the free
    # memory after start-up: 63.5 GiB for 65.7 GiB of weights) ran with draftsim's plain rule (80 GB x 0.9 -
    # weights: 8,827 KV tokens), exit 0, where SGLang refuses to start ("increase --mem-fraction-static")
    Hostile("sglang_weights_beyond_mem_fraction_static",
            run(cluster={"model": "llama-3.1-70b", "parallelism": {"tp": 2}, "engine": {"framework": "sglang"}}),
            "draftsim: error: cluster.model: llama-3.1-70b needs 65.7 GiB of weights per GPU at tp=2, pp=1 but "
            "h100-sxm offers 63.5 GiB at SGLang's mem_fraction_static=0.827 of the 76.8 GiB free after start-up; "
            "raise cluster.gpu_memory_utilization (SGLang's --mem-fraction-static) above 0.857"),
    # ---- helper1 2026-11-28: the commands other than run (compare, sweep, plan, estimate, validate, profile) ----
    # an empty --out is Path('') = '.': compare, sweep and plan wrote their files into the current folder (exit 0;
    # here a shipped scenario, so that the folder is empty), where run refuses it
    Hostile("compare_out_empty", lambda tmp: ["compare", REPO / "scenarios/quickstart.yaml", "--set",
                                              "workload.num_requests=4", "--set", "outputs.plots=false", "--vary",
                                              "seed=1", "--out", "", "--quiet"],
            "draftsim compare: error: --out: an empty path; give the output folder"),
    Hostile("sweep_out_empty", lambda tmp: sweep()(tmp)[:2] + ["--out", "", "--executor", "serial", "--quiet"],
            "draftsim sweep: error: --out: an empty path; give the output folder"),
    Hostile("plan_out_empty", lambda tmp: plan()(tmp)[:2] + ["--out", "", "--executor", "serial", "--quiet"],
            "draftsim plan: error: --out: an empty path; give the output folder"),
    # an engine profile folder (--source engine_profile) of files that are no driver JSON: a FIFO named
    # <model>.json hung the read; a JSON list or a number for `steps` was a TypeError traceback
    Hostile("estimate_engine_profile_a_fifo",
            lambda tmp: estimate("--source", "engine_profile", "--profile-dir", _engine_profile_dir(tmp, None))(tmp),
            "draftsim estimate: error: --profile-dir: "),
    Hostile("estimate_engine_profile_a_json_list",
            lambda tmp: estimate("--source", "engine_profile", "--profile-dir", _engine_profile_dir(tmp, "[1]\n"))(tmp),
            "m.json is not an engine profile written by `draftsim profile --engine vllm` (TypeError: "),
    Hostile("engine_profile_steps_a_number", lambda tmp: run(cluster={"latency": {
        "source": "engine_profile", "profile_dir": str(_engine_profile_dir(tmp, '{"steps": 1}'))}})(tmp),
            "draftsim: error: cluster.latency.profile_dir: "),
    # estimate named its latency flags by the scenario's fields: latency.framework, cluster.latency.profile_dir
    Hostile("estimate_framework_unknown", estimate("--framework", "tgi"),
            "draftsim estimate: error: --framework: Input should be 'vllm', 'sglang' or 'trtllm'"),
    Hostile("estimate_profile_dir_a_device", estimate("--source", "profile", "--profile-dir", "/dev/null"),
            "draftsim estimate: error: --profile-dir: /dev/null is not a directory"),
    # --id '' is a part of every point's id: every published point was priced (30 s), exit 1
    Hostile("validate_published_id_empty", lambda tmp: ["validate", "--published", "--id", "", "--out", tmp / "pub"],
            "draftsim validate: error: --id: an empty text matches every point"),
    # a sweep file's `set:` entries were named '--set' (which a sweep file has none of) or 'sweep.scenario'
    Hostile("sweep_set_without_equals", sweep(set=["workload.arrival.qps"]),
            "draftsim sweep: error: sweep.set: expected key.path=value, got 'workload.arrival.qps'"),
    Hostile("sweep_set_below_a_number", sweep(set=["seed.x=1"]),
            "draftsim sweep: error: sweep.set: seed: is not a mapping; cannot set a sub-key"),
    # --workers beside an executor that does not read it ran without a word: serial one point at a time, a
    # running Dask scheduler on the workers it has
    Hostile("sweep_serial_with_workers", lambda tmp: sweep()(tmp) + ["--workers", "2"],
            "draftsim sweep: error: --workers: --executor serial runs every task in this process, one at a time"),
    Hostile("plan_serial_with_workers", plan("--workers", "1"),
            "draftsim plan: error: --workers: --executor serial runs every task in this process"),
    Hostile("sweep_dask_scheduler_with_workers",
            lambda tmp: sweep()(tmp)[:4] + ["--executor", "tcp://127.0.0.1:1", "--workers", "2", "--quiet"],
            "--workers: a running Dask scheduler (tcp://127.0.0.1:1) runs the tasks on the workers it has"),
    # profile's --models named no flag: 'unknown model ...', 'models must name at least one catalog model'
    Hostile("profile_models_unknown", profile("--models", "llama-68m,/etc/passwd", "--out", "p"),
            "draftsim profile: error: --models: unknown model '/etc/passwd'"),
    Hostile("profile_models_only_commas", profile("--models", ",,", "--out", "p"),
            "draftsim profile: error: --models: names no model (',,')"),
    # a swept key inside another swept key of one point: a value was dropped without a word, exit 0 — the
    # mapping's own qps 4 (qps 8 ran), or the grid's qps 8 (a point's mapping, applied after it, replaced it)
    Hostile("sweep_grid_key_inside_another", sweep(grid={"workload.arrival": [{"process": "poisson", "qps": 4}],
                                                         "workload.arrival.qps": [8]}),
            "draftsim sweep: error: sweep.grid: workload.arrival gives qps in its values and workload.arrival.qps replaces it"),
    Hostile("sweep_point_key_before_its_mapping",
            sweep(grid={"workload.arrival.qps": [8]}, points=[{"workload.arrival": {"process": "poisson", "qps": 4}}]),
            "draftsim sweep: error: sweep.points: workload.arrival, applied after workload.arrival.qps (the grid's "
            "keys first, then a point's, each in the order written), replaces it"),
    # a sweep store whose points/ is a link: the points were written where it leads, and --overwrite deleted the
    # .parquet files found there (a user's table.parquet), exit 0
    Hostile("sweep_store_points_a_link_overwrite", tampered_store(_points_a_link, "--overwrite"),
            "draftsim sweep: error: --out: "),
    Hostile("sweep_store_points_a_link_resume", tampered_store(_points_a_link),
            "points is a symbolic link (to "),
    Hostile("sweep_store_points_a_file", tampered_store(_points_a_file),
            "points is not a folder; a sweep keeps its points in a folder of its own there"),
    # a plan's des_cache/ edited outside draftsim: a row that is no JSON object was a JSONDecodeError or
    # AttributeError traceback, a FIFO of a row's name hung the plan; a link there took the cached runs where it led
    Hostile("plan_cache_row_not_json", tampered_plan_cache(lambda cache: _cache_file(cache, ".json").write_text("{bad")),
            "draftsim plan: error: --out: "),
    Hostile("plan_cache_row_a_list", tampered_plan_cache(lambda cache: _cache_file(cache, ".json").write_text("[1]")),
            ".json is not a JSON object); delete the two files to run it again, or pass --no-cache"),
    Hostile("plan_cache_requests_not_npz", tampered_plan_cache(lambda cache: _cache_file(cache, ".npz").write_text("x")),
            ".npz is not a NumPy .npz archive)"),
    Hostile("plan_cache_row_a_fifo", tampered_plan_cache(lambda cache: (_cache_file(cache, ".json").unlink(), fifo(
        cache, next(cache.glob("*.npz")).stem + ".json"))), ".json is a FIFO (named pipe), not a regular file)"),
    Hostile("plan_cache_a_link", tampered_plan_cache(_cache_a_link),
            "des_cache is a symbolic link (to "),
    # reproduce's own file replaced by a link (to a file of the user's) or a folder: a ValueError ('resolves
    # outside') or IsADirectoryError traceback after the reproduction ran
    Hostile("reproduce_own_file_a_link", lambda tmp: _ran_then(
        ["reproduce", "tetris", "--out", tmp / "o", "--quiet"], tmp / "o" / "tetris.csv",
        lambda path: path.symlink_to(_write(tmp, "victim", "the user's"))),
            "draftsim reproduce: error: --out: "),
    Hostile("reproduce_own_file_a_folder", lambda tmp: _ran_then(
        ["reproduce", "tetris", "--out", tmp / "o", "--quiet"], tmp / "o" / "tetris.csv", lambda path: path.mkdir()),
            "tetris.csv is not a file; draftsim reproduce writes a file there"),
    # a run's or compare's own file (in its manifest) since replaced by a link to a user's file, or a folder: a
    # ValueError traceback ('resolves outside') or 'Is a directory' naming no field, after the simulation
    Hostile("compare_own_file_a_link", lambda tmp: _ran_then(
        ["compare", _write(tmp, "s.yaml", TINY), "--vary", "seed=1", "--out", tmp / "o", "--quiet"],
        tmp / "o" / "compare.csv", lambda path: path.symlink_to(_write(tmp, "victim", "the user's"))),
            "draftsim compare: error: --out: "),
    Hostile("run_own_file_a_folder", lambda tmp: _ran_then(run()(tmp), tmp / "out" / "summary.json",
                                                           lambda path: path.mkdir()),
            "summary.json is not a file; draftsim run writes a file there"),
    # a stored point replaced by a FIFO of its name hung a resumed sweep (pyarrow waited for a writer)
    Hostile("sweep_store_point_a_fifo", tampered_store(_point_a_fifo),
            ".parquet is not a readable stored point (is a FIFO (named pipe), not a regular file)"),
    # a published point's workload counts: a GEMM of m 0 or 64.5 was priced (exit 0), m .inf failed only after
    # every other point was predicted (exit 1)
    Hostile("points_gemm_m_zero", points([merge(POINT, {"workload": {"m": 0}})]),
            "points.yaml: point x: workload: m: 0 is not a whole number >= 1"),
    Hostile("points_gemm_m_fractional", points([merge(POINT, {"workload": {"m": 64.5}})]),
            "workload: m: 64.5 is not a whole number >= 1"),
    Hostile("points_gemm_m_infinite", points([merge(POINT, {"workload": {"m": float("inf")}})]),
            "workload: m: inf is not a finite number"),
    # validate --profile-first claimed --out (its manifest written) before it read --scenario: a bad scenario left
    # OUT/.draftsim-validate.json behind
    Hostile("validate_profile_first_bad_scenario",
            lambda tmp: ["validate", "--quick", "--quiet", "--profile-first", "--out", tmp / "v", "--scenario",
                         _write(tmp, "bad.yaml", {"name": "x", "seed": 1, "workload": {"num_requests": 0}})],
            "draftsim validate: error: workload.arrival: required field is missing"),
    # a plan file with --set cluster.model=... (which makes a cluster) said 'confirm_top: unknown field'
    Hostile("run_a_plan_file_with_a_cluster_set", lambda tmp: [
        "run", REPO / "scenarios/plans/llama8b_chat.yaml", "--set", "cluster.model=llama-3-8b", "--out", tmp / "o"],
            "draftsim: error: scenario: this is a plan file (it has search, not cluster); run it with draftsim plan"),
    # profile --engine vllm: --models named no flag ('unknown model ...'); ',' left no model (its fingerprint
    # was None at the end: an AttributeError once vLLM had run); a model listed twice was profiled twice into
    # one NAME.json; --kv-cache-gib inf or 1e9 reached vLLM's CPU backend
    Hostile("profile_vllm_models_unknown", lambda tmp: ["profile", "--engine", "vllm", "--models", "bogus", "--out",
                                                        tmp / "e"], "draftsim profile: error: --models: unknown model"),
    Hostile("profile_vllm_models_only_a_comma", lambda tmp: ["profile", "--engine", "vllm", "--models", ",", "--out",
                                                             tmp / "e"], "draftsim profile: error: --models: names no"),
    Hostile("profile_vllm_model_listed_twice", lambda tmp: [
        "profile", "--engine", "vllm", "--models", "qwen2.5-coder-0.5b,QWEN2.5-coder-0.5b", "--out", tmp / "e"],
            "draftsim profile: error: --models: lists QWEN2.5-coder-0.5b twice"),
    Hostile("profile_vllm_kv_cache_infinite", lambda tmp: [
        "profile", "--engine", "vllm", "--models", "qwen2.5-coder-0.5b", "--kv-cache-gib", "inf", "--out", tmp / "e"],
            "argument --kv-cache-gib: must be <= "),
    # a valid date beyond what 64-bit nanoseconds hold was said to be 'not a date and time'
    Hostile("azure_date_beyond_2262",
            trace(text_file("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
                                     "9999-12-31 23:59:59,396,109\n"), "azure"),
            "line 3: '9999-12-31 23:59:59' is not a date and time from 1677-09-21 00:12:44 to 2262-04-11 23:47:16 UTC"),
    # profile --tp that cannot split a model named a scenario's field ('parallelism.tp=5 must divide ...')
    Hostile("profile_tp_not_dividing_the_heads", profile("--models", "llama-68m", "--tp", "1,5", "--out", "p"),
            "draftsim profile: error: --tp: tp=5 must divide num_heads=12 of llama-68m"),
    # a profile folder (source: profile) whose files are damaged: a fingerprint.json of '{bad' said only
    # 'Expecting property name enclosed in double quotes', and an ops.csv of other text 'profile table ... lacks
    # columns', naming neither the field nor (the first) the file
    Hostile("estimate_profile_fingerprint_not_json", lambda tmp: [
        "estimate", "--model", "qwen2.5-coder-0.5b", "--hardware", "cpu-local", "--dtype", "fp32", "--source",
        "profile", "--profile-dir", _profile_with(tmp, "fingerprint.json", "{bad")],
            "draftsim estimate: error: --profile-dir: malformed JSON in "),
    Hostile("profile_table_not_a_table", lambda tmp: run(cluster={
        "model": "qwen2.5-coder-0.5b", "hardware": "cpu-local", "dtype": "fp32",
        "latency": {"source": "profile", "profile_dir": str(_profile_with(tmp, "ops.csv", "garbage\n"))}})(tmp),
            "draftsim: error: cluster.latency.profile_dir: profile table "),
    # workload.dataset (request lengths as a benchmark client draws them, simulator.core.bench_clients):
    # exclusive with prompt/output_tokens, traces and sessions; each client's own refusals; SGLang's
    # ShareGPT sampler, which never oversamples, keeping fewer requests than asked for
    *[Hostile(f"bench_client_{name}",
              run({**TINY, "workload": {"arrival": {"process": "poisson", "qps": 4.0}, "num_requests": n, **workload}}),
              f"draftsim: error: {says}") for name, n, workload, says in [
        ("with_prompt_tokens", 4, {"dataset": {"client": "vllm", "name": "sharegpt"},
                                   "prompt_tokens": {"kind": "fixed", "value": 4}},
         "workload.prompt_tokens: not allowed with workload.dataset"),
        ("unknown_client", 4, {"dataset": {"client": "tgi", "name": "sharegpt"}}, "workload.dataset.client: "),
        ("random_without_input_len", 4, {"dataset": {"client": "sglang", "name": "random", "output_len": 10}},
         "workload.dataset.input_len: required for dataset 'random'"),
        ("vllm_range_ratio_1", 4, {"dataset": {"client": "vllm", "name": "random", "input_len": 100,
                                               "output_len": 10, "range_ratio": 1.0}},
         "workload.dataset.range_ratio: must be in [0, 1) for vLLM >= 0.8.4"),
        ("sglang_range_ratio_2", 4, {"dataset": {"client": "sglang", "name": "random", "input_len": 100,
                                                 "output_len": 8, "range_ratio": 2}},
         "workload.dataset.range_ratio: must be in [0, 1] for SGLang"),
        ("sharegpt_range_ratio", 4, {"dataset": {"client": "vllm", "name": "sharegpt", "range_ratio": 0.5}},
         "workload.dataset.range_ratio: only for dataset 'random'"),
        ("vllm_context_len", 4, {"dataset": {"client": "vllm", "name": "sharegpt", "context_len": 2048}},
         "workload.dataset.context_len: only for client 'sglang'"),
        ("with_sessions", 4, {"dataset": {"client": "vllm", "name": "sharegpt"},
                              "sessions": {"turns": {"kind": "fixed", "value": 2}, "think_time_s": 1.0}},
         "workload.dataset: a benchmark client's requests are single prompts"),
        ("sglang_keeps_too_few", 50, {"dataset": {"client": "sglang", "name": "sharegpt", "context_len": 8}},
         "workload.dataset: SGLang's ShareGPT sampler keeps 7 of the 17400"),
        ("vllm_empty_prompt", 4, {"dataset": {"client": "vllm", "name": "random", "input_len": 1, "output_len": 8,
                                              "special_tokens": 1}},
         "workload.dataset.input_len: 1 is too small"),
        ("release_a_number", 4, {"dataset": {"client": "vllm", "name": "random", "input_len": 100,
                                             "output_len": 8, "release": 0.8}},
         "workload.dataset.release: give the version as a quoted string"),
        ("vllm_output_beyond_filter", 4, {"dataset": {"client": "vllm", "name": "sharegpt", "output_len": 3000}},
         "workload.dataset.output_len: 3000 leaves no ShareGPT request")]],
    Hostile("bench_client_with_a_trace", lambda tmp: run({**TINY, "workload": {
        "arrival": {"process": "trace", "trace_csv": str(_write(tmp, "t.csv", "arrival_s,prompt_tokens,output_tokens\n"
                                                                             "0,4,4\n"))},
        "dataset": {"client": "vllm", "name": "sharegpt"}}})(tmp),
            "draftsim: error: workload.dataset: not allowed with a trace"),
    # --- a named engine's own prefix-caching default (simulator.cluster.engine_cache) ---
    # prefix_aware routing is checked once the named engine's default is in: vLLM V0's is off, so it is refused as
    # without a named engine (one line, nothing written), while vLLM V1's (on) lets it run
    Hostile("prefix_aware_router_under_vllm_v0_default",
            run(cluster={"replicas": 2, "router": "prefix_aware", "engine": {"framework": "vllm", "version": "0.7.3"}}),
            "draftsim: error: cluster.router: 'prefix_aware' routes by cached prefixes; it needs "
            "cluster.kv_cache.prefix_caching: true"),
    # ---- helper1: bad input left by the last hunt, then run / compare edges (2026-11-28) ------------------------
    # estimate: a token or request limit beyond any engine was priced (exit 0: --max-num-batched-tokens 1e30
    # gave the default's numbers); a trtllm run with such a budget ran (vLLM's start-up memory refused it)
    Hostile("estimate_budget_of_1e30_tokens", estimate("--max-num-batched-tokens", "1" + "0" * 30),
            "error: --max-num-batched-tokens: 1,000,000,000,000,000,000,000,000,000,000 is beyond what an engine "
            "takes; allowed: 1 to 2,147,483,647"),
    Hostile("estimate_four_billion_running_requests",
            estimate("--max-num-seqs", "4000000000", "--max-num-batched-tokens", "4000000000"),
            "error: --max-num-seqs: 4,000,000,000 is beyond what an engine takes; allowed: 1 to 2,147,483,647"),
    Hostile("run_trtllm_budget_of_1e30_tokens",
            run(scheduler={"max_batched_tokens": 10**30}, cluster={"engine": {"framework": "trtllm"}}),
            "scheduler.max_batched_tokens: 1,000,000,000,000,000,000,000,000,000,000 is beyond what an engine takes"),
    # estimate named its Python arguments (batch, context, tp, model) for what the user typed as flags
    *[Hostile(f"estimate_{name}_names_the_flag", estimate(flag, value), f"draftsim estimate: error: {flag}: {says}")
      for name, flag, value, says in [
          ("context", "--context", "100000000", "100000000 cached + 1 new tokens exceed the context of llama-3-8b"),
          ("prefill_beyond_the_context", "--prefill-tokens", "100000000",
           "0 cached + 100000000 new tokens exceed the context"),
          ("query_tokens_beyond_the_context", "--query-tokens", "100000000",
           "0 cached + 100000000 new tokens exceed the context"),
          ("batch_beyond_memory", "--batch", "1000000000000", "1,000,000,000,000 requests of 1 token(s) need"),
          ("negative_batch", "--batch", "-3", "must be an integer >= 1, got -3"),
          ("dtype", "--dtype", "fp6", "'fp6' is not supported")]],
    # validate --published --points: a row naming hardware, an engine or a model that does not exist was listed
    # 'not expressible' (exit 0), and a step point of engine 'vlmm' was priced as the default framework's
    Hostile("points_unknown_hardware", points([merge(POINT, {"hardware": "h100"})]),
            "points.yaml: point x: hardware: unknown hardware 'h100'; allowed: "
            "a100-40gb, "),
    Hostile("points_step_of_an_unknown_engine", points([merge(STEP_POINT, {"engine": "vlmm"})]),
            "point s: engine: unknown serving engine 'vlmm' for a decode_step point; allowed: nvidia-nim (trtllm "
            "backend), sglang, trtllm, vllm"),
    Hostile("points_gemm_of_an_unknown_library", points([merge(POINT, {"engine": "vllm"})]),
            "point x: engine: unknown kernel library 'vllm' for a gemm point; allowed: cublas, "),
    Hostile("points_unknown_model", points([merge(STEP_POINT, {"model": "meta-llama/Llama-9-8B"})]),
            "point s: model: unknown published model 'meta-llama/Llama-9-8B'; allowed: "),
    Hostile("points_step_without_a_model", points([{k: v for k, v in STEP_POINT.items() if k != "model"}]),
            "point s: model: a decode_step point needs the published model"),
    # run under a running Dask scheduler ran on the scheduler's own workers, simulation.workers (--workers) unread,
    # where sweep and plan refuse --workers with it (simulator.distributed.executors._scheduler)
    Hostile("run_dask_scheduler_with_workers", run(None, "--executor", "tcp://127.0.0.1:1", "--workers", "2"),
            "draftsim: error: --workers: a running Dask scheduler (tcp://127.0.0.1:1) runs the replicas on "
            "the workers it has"),
    Hostile("run_dask_scheduler_with_workers_in_the_scenario",
            run(simulation={"executor": "dask://127.0.0.1:1", "workers": 1}),
            "simulation.workers: a running Dask scheduler (dask://127.0.0.1:1) runs the replicas on the workers it has"),
    # a rule of estimate's latency flags named the scenario's block and fields ('latency: version selects measured
    # tables; it needs source: ...'), which the command line has none of
    Hostile("estimate_version_without_measured_tables", estimate("--source", "roofline", "--version", "0.24.0"),
            "draftsim estimate: error: --version selects measured tables; it needs --source measured or auto"),
    Hostile("estimate_engine_profile_without_a_folder", estimate("--source", "engine_profile"),
            "draftsim estimate: error: --source engine_profile needs --profile-dir: a folder of"),
    Hostile("estimate_measured_source_on_hardware_without_tables", lambda tmp: [
        "estimate", "--model", "llama-68m", "--hardware", "cpu-local", "--source", "measured"],
            "draftsim estimate: error: --hardware: no measured kernel tables for 'cpu-local'; measured hardware: "),
    Hostile("estimate_measured_fp32_names_the_flags", estimate("--source", "measured", "--dtype", "fp32"),
            "(or use --source roofline)"),
    # ---- helper4: plan / sweep / reproduce / catalog / validate, the API and this session's features (2026-11-28) ----
    # cluster.engine fills cluster.latency.framework and cluster.kv_cache.prefix_caching: an engine framework 'tgi'
    # was reported as cluster.latency.framework, a prefix_caching of [true] as cluster.kv_cache.prefix_caching,
    # and a cluster.kv_cache or cluster.latency that is no mapping was replaced by the engine's setting and ran
    Hostile("engine_framework_unknown_names_the_engine", run(cluster={"engine": {"framework": "tgi"}}),
            "draftsim: error: cluster.engine.framework: Input should be 'vllm', 'sglang' or 'trtllm'"),
    Hostile("engine_prefix_caching_a_list_names_the_engine",
            run(cluster={"engine": {"framework": "vllm", "prefix_caching": [True]}}),
            "draftsim: error: cluster.engine.prefix_caching: Input should be a valid boolean"),
    Hostile("engine_prefix_caching_beside_a_kv_cache_of_text",
            run(cluster={"engine": {"framework": "vllm", "prefix_caching": True}, "kv_cache": "big"}),
            "draftsim: error: cluster.kv_cache: 'big' is not allowed; expected a mapping of its fields"),
    Hostile("engine_framework_beside_a_latency_of_text",
            run(cluster={"engine": {"framework": "vllm"}, "latency": "measured"}),
            "draftsim: error: cluster.latency: 'measured' is not allowed; expected a mapping of its fields"),
    # plan: a drafter's `gamma: true` was planned as gamma 1 (exit 0); a draft model's tp wider than every replica
    # searched, or one that cannot split the draft model, screened every candidate out (exit 1, outputs written)
    Hostile("plan_drafter_gamma_a_boolean",
            plan(search={"drafters": [{"kind": "draft_model", "model": "llama-68m", "gamma": True}]}),
            "draftsim plan: error: plan.search.drafters.0.gamma: Input should be a number or a list of numbers, not "
            "the boolean true"),
    Hostile("plan_draft_model_wider_than_every_replica",
            plan(search={"drafters": [{"kind": "draft_model", "model": "llama-68m", "tp": 2}]}),
            "draftsim plan: error: plan.search.drafters.0.tp: 2 exceeds the GPUs of every replica searched (at most 1"),
    Hostile("plan_draft_model_tp_not_splitting_it",
            plan(search={"tp": [8], "drafters": [{"kind": "draft_model", "model": "llama-68m", "tp": 5}]}),
            "draftsim plan: error: plan.search.drafters.0.tp: 5 must divide num_heads=12 of llama-68m"),
    # --out inside the package's shipped data (profiles/data/, which the predictor and the catalogs read): plan
    # wrote its ranked.csv, launch scripts and DES cache there (exit 0), as did run, sweep and reproduce
    *[Hostile(f"{command}_out_in_the_shipped_data", lambda tmp, argv=argv: [*argv(tmp), "--out", tmp / "shipped" / "x"],
              f"is inside the package's shipped data (profiles/data/), which draftsim {command} does not write",
              patch=_shipped_data_here) for command, argv in [
        ("run", lambda tmp: [*run()(tmp)[:2], "--quiet"]),
        ("plan", lambda tmp: [*plan()(tmp)[:2], "--executor", "serial", "--quiet"]),
        ("sweep", lambda tmp: [*sweep()(tmp)[:2], "--executor", "serial", "--quiet"]),
        ("reproduce", lambda tmp: ["reproduce", "tetris", "--quiet"])]],
    # a sweep's `set:` of a key its grid or points vary (or of a key inside one) was replaced by each point's value
    # without a word (exit 0), as was a set seed beside `seeds:`
    Hostile("sweep_set_a_grid_key", sweep(set=["workload.arrival.qps=3"]),
            "draftsim sweep: error: sweep.set: workload.arrival.qps is also swept (workload.arrival.qps): each "
            "point's workload.arrival.qps replaces it; set it in one place"),
    Hostile("sweep_set_a_key_inside_a_point_key", sweep(set=["workload.arrival.qps=3"], grid={}, points=[
        {"workload.arrival": {"process": "poisson", "qps": 4}}]),
            "draftsim sweep: error: sweep.set: workload.arrival.qps is also swept (workload.arrival)"),
    Hostile("sweep_set_the_seed_beside_seeds", sweep(set=["seed=3"], seeds=[1, 2]),
            "draftsim sweep: error: sweep.set: seed is also swept (seeds)"),
    # a plan's or sweep's own file (missing, a folder, no mapping) was named 'scenario' ('give a scenario YAML
    # file'), and validate's --scenario file the field 'scenario'
    Hostile("plan_file_a_list", lambda tmp: ["plan", _write(tmp, "plan.yaml", "- 1\n"), "--quiet"],
            "draftsim plan: error: plan: "),
    Hostile("sweep_file_a_folder", lambda tmp: ["sweep", _folder_with_a_file(tmp), "--quiet"],
            "draftsim sweep: error: sweep: "),
    Hostile("validate_scenario_missing_names_the_flag",
            lambda tmp: ["validate", "--quick", "--scenario", tmp / "missing.yaml", "--out", tmp / "v"],
            "draftsim validate: error: --scenario: file not found: "),
    # workload.dataset.release newer than any known (sglang 99.0) was drawn by the newest client's rules (exit 0),
    # where cluster.engine.version refuses such a release
    Hostile("bench_client_release_from_the_future", run({**TINY, "workload": {
        "arrival": {"process": "poisson", "qps": 4.0}, "num_requests": 4,
        "dataset": {"client": "sglang", "name": "sharegpt", "release": "99.0"}}}),
            "draftsim: error: workload.dataset.release: sglang 99.0 is newer than the newest release known here ("),
    # a release older than the client's dataset (vLLM's random dataset came in 0.5.2; PyPI's vllm 0.0.1 is a
    # placeholder) was drawn by the oldest rules, exit 0
    Hostile("bench_client_release_before_its_dataset", run({**TINY, "workload": {
        "arrival": {"process": "poisson", "qps": 4.0}, "num_requests": 4,
        "dataset": {"client": "vllm", "name": "random", "release": "0.0.1", "input_len": 64, "output_len": 8}}}),
            "draftsim: error: workload.dataset.release: vllm 0.0.1 predates its benchmark client's 'random' dataset "
            "(first in 0.5.2): allowed from 0.5.2 up to 0.33.0"),
    Hostile("bench_client_sglang_release_before_bench_serving", run({**TINY, "workload": {
        "arrival": {"process": "poisson", "qps": 4.0}, "num_requests": 4,
        "dataset": {"client": "sglang", "name": "sharegpt", "release": "0.1.21"}}}),
            "workload.dataset.release: sglang 0.1.21 predates its benchmark client's 'sharegpt' dataset (first in "
            "0.1.22)"),
    # a scenario or plan file whose name is too long: the error named the path, not the field (the Python API
    # raised an OSError)
    Hostile("scenario_name_too_long", lambda tmp: ["run", "a" * 300 + ".yaml", "--out", tmp / "o", "--quiet"],
            "draftsim: error: scenario: aaaaaaaa"),
    Hostile("plan_file_name_too_long", lambda tmp: ["plan", "a" * 300 + ".yaml", "--quiet"],
            "draftsim plan: error: plan: aaaaaaaa"),
    # a name or folder longer than a file name may be (255 bytes): pathlib's is_dir raised, and the line named
    # the path, not the flag ("File name too long"); the profiler timed its kernels for 14 s first
    Hostile("estimate_model_name_too_long", estimate_with("--model", "m" * 256), "--model: unknown model 'mmm"),
    Hostile("estimate_hardware_name_too_long", estimate_with("--hardware", "h" * 256), "--hardware: unknown hardware"),
    Hostile("run_model_name_too_long", run(cluster={"model": "m" * 256}), "cluster.model: unknown model 'mmm"),
    Hostile("estimate_profile_dir_too_long", estimate("--source", "profile", "--profile-dir", "d" * 300),
            "--profile-dir: "),
    Hostile("run_profile_dir_too_long", run(cluster={"latency": {"source": "profile", "profile_dir": "d" * 300}}),
            "cluster.latency.profile_dir: "),
    Hostile("profile_device_id_too_long", profile("--models", "llama-68m", "--device-id", "d" * 300),
            "--device-id: names the profile's folder"),
    # TensorRT-LLM's capacity policy: only its scheduler has one; without context chunking a paused request's
    # prompt + generated tokens must fit the budget (the run never ended before the check)
    Hostile("capacity_policy_without_trtllm", run(cluster={"engine": {"capacity_scheduler_policy": "max_utilization"}}),
            "cluster.engine.capacity_scheduler_policy is TensorRT-LLM's capacity scheduler"),
    Hostile("capacity_policy_unknown", run(scheduler={"kind": "trtllm"},
                                           cluster={"engine": {"capacity_scheduler_policy": "static_batch"}}),
            "cluster.engine.capacity_scheduler_policy: "),
    Hostile("capacity_policy_budget_below_a_paused_context", run(
        scheduler={"kind": "trtllm", "max_batched_tokens": 600},
        workload={"prompt_tokens": {"kind": "fixed", "value": 500}, "output_tokens": {"kind": "fixed", "value": 200}},
        cluster={"engine": {"capacity_scheduler_policy": "max_utilization"}}),
            "cluster.engine.capacity_scheduler_policy: max_utilization pauses requests"),
    # hardware figures of 400 digits: float()'s OverflowError (a traceback, exit 1)
    *[Hostile(f"hardware_{name.replace('.', '_')}_400_digits", hardware(**fields),
              f"cluster.hardware.{name}: an integer of 400 digits is beyond any finite number; expected")
      for name, fields in [("hbm_bytes", {"hbm_bytes": BIG}), ("peak_flops.bf16", {"peak_flops": {"bf16": BIG}}),
                           ("gpus_per_node", {"gpus_per_node": BIG}), ("compute_units", {"compute_units": BIG}),
                           ("tdp_w", {"tdp_w": BIG})]],
    Hostile("hardware_inline_hbm_bytes_400_digits", run(cluster={"hardware": {**HW, "hbm_bytes": BIG}}),
            "cluster.hardware.hbm_bytes: an integer of 400 digits is beyond any finite number; expected a number > 0"),
    # hardware keys of two kinds (YAML's `1: 2` is a number key beside text keys): sorted()'s TypeError
    Hostile("hardware_number_key_beside_text_keys", hardware_yaml({**HW, 1: 2, "zz": 3}),
            "cluster.hardware.1: unknown field; allowed: id, name"),
    Hostile("hardware_peak_flops_number_key_beside_text_keys",
            hardware_yaml({**HW, "peak_flops": {**HW["peak_flops"], 1: 5, "xx": 3}}),
            "cluster.hardware.peak_flops.1: unknown dtype; allowed: fp32"),
    # config.json architectures holding no names: 'unhashable type' TypeError
    Hostile("hf_architectures_a_mapping", model_file("cfg.json", architectures=[{}]),
            "architectures is [{}]; expected a list of strings, the first one of: LlamaForCausalLM"),
    Hostile("hf_architectures_a_nested_list", model_file("cfg.json", architectures=[["LlamaForCausalLM"]]),
            "architectures is [['LlamaForCausalLM']]; expected a list of strings"),
    # config.json figures beyond any model: OverflowError in the cost model (a float, a C long)
    Hostile("hf_hidden_size_400_digits", model_file("cfg.json", hidden_size=BIG),
            "hidden_size is an integer of 400 digits; expected an integer >= 1 and <= 1,048,576"),
    Hostile("hf_vocab_size_400_digits", model_file("cfg.json", vocab_size=BIG),
            "vocab_size is an integer of 400 digits; expected an integer >= 1 and <= 16,777,216"),
    Hostile("hf_rope_theta_400_digits", model_file("cfg.json", rope_theta=BIG),
            "rope_theta is an integer of 400 digits; expected a finite number > 0"),
    Hostile("hf_layers_1e300", model_file("cfg.json", num_hidden_layers=1e300),
            "num_hidden_layers is 1e+300; expected an integer >= 1 and <= 10,000"),
    Hostile("hf_sliding_window_400_digits", model_file("cfg.json", sliding_window=BIG),
            "sliding_window is an integer of 400 digits; expected an integer >= 0 and <= 1,073,741,824"),
    # a billion layers of a hybrid or gpt-oss model: a per-layer list was built for minutes before the memory check
    Hostile("hf_jamba_a_billion_layers", model_file("cfg.json", num_hidden_layers=10**9, **dict(architectures=["JambaForCausalLM"], attn_layer_period=8, attn_layer_offset=4, mamba_d_state=16, mamba_d_conv=4)),
            "num_hidden_layers is 1000000000; expected an integer >= 1 and <= 10,000"),
    Hostile("hf_gpt_oss_a_billion_layers", model_file("cfg.json", architectures=["GptOssForCausalLM"],
                                                     num_hidden_layers=10**9, num_local_experts=8, num_experts_per_tok=2),
            "num_hidden_layers is 1000000000; expected an integer >= 1 and <= 10,000"),
    # catalog-format model YAML: a number key (TypeError in join, in sorted beside a text key), a 400-digit width
    Hostile("model_yaml_number_key", model_yaml({**SPEC, 1: 2}), "cluster.model: unknown model field(s) 1; allowed:"),
    Hostile("model_yaml_number_key_beside_text_key", model_yaml({**SPEC, 1: 2, "zz": 3}),
            "cluster.model: unknown model field(s) 1, zz; allowed:"),
    Hostile("model_yaml_hidden_size_400_digits", model_yaml({**SPEC, "hidden_size": BIG}),
            "hidden_size is an integer of 400 digits; expected an integer >= 1 and <= 1,048,576"),
    # inline and catalog-format model fields the config.json reader refuses ran to exit 0
    Hostile("model_yaml_num_layers_true", model_yaml({**SPEC, "num_layers": True}),
            "num_layers is True; expected an integer >= 1 and <= 10,000"),
    *[Hostile(f"inline_model_{name}", inline_model(**fields), says) for name, fields, says in [
        ("hidden_size_true", {"hidden_size": True}, "hidden_size is True; expected an integer >= 1"),
        ("num_experts_fraction", {"num_experts": 8.5, "experts_per_token": 2, "moe_intermediate_size": 1024},
         "num_experts is 8.5; expected an integer >= 0"),
        ("num_shared_experts_negative", {"num_shared_experts": -3}, "num_shared_experts is -3; expected an integer >= 0"),
        ("sliding_window_negative", {"sliding_window": -5}, "sliding_window is -5; expected an integer >= 0"),
        ("q_lora_rank_negative", {"q_lora_rank": -100}, "q_lora_rank is -100; expected an integer >= 0"),
        ("shared_expert_width_negative", {"shared_expert_intermediate_size": -4096},
         "shared_expert_intermediate_size is -4096; expected an integer >= 0"),
        ("first_dense_layers_fraction", {"first_dense_layers": 1.5}, "first_dense_layers is 1.5; expected an integer"),
        ("rope_theta_text", {"rope_theta": "abc"}, "rope_theta is 'abc'; expected a finite number > 0"),
        ("rope_theta_negative", {"rope_theta": -1.0}, "rope_theta is -1.0; expected a finite number > 0"),
        ("qkv_bias_text", {"qkv_bias": "no"}, "qkv_bias is 'no'; expected true or false"),
        ("family_a_list", {"family": [1]}, "family is [1]; expected text"),
        ("source_a_mapping", {"source": {"a": 1}}, "source is {'a': 1}; expected text")]],
    # MoE routing traces: no expert per token (numpy's 'zero-size array to reduction' text), a repeated expert
    # past the first 1,000 tokens (exit 0)
    Hostile("routing_trace_no_expert_per_token", moe_trace(lambda tmp: _npy(tmp, [[]] * 10)),
            "at least one expert per token"),
    Hostile("routing_trace_repeat_at_token_1500", moe_trace(lambda tmp: _npy(tmp, _routing_repeat_at(1500))),
            "token 1,500 lists the same expert twice"),
    # integers past float or int64 range slipped past the bounds checked after a conversion: num_requests of
    # 400 digits overflowed the float division of the span check (2**63 and 10**300 were refused)
    Hostile("num_requests_400_digits", run(None, "--set", "workload.num_requests=" + "9" * 400),
            "workload.num_requests: Input should be less than or equal to 1000000000000"),
    Hostile("num_requests_hex_4000_digits", run(yaml.safe_dump(TINY).replace("num_requests: 4", "num_requests: 0x"
                                                                             + "f" * 4000)),
            "workload.num_requests: Input should be a valid integer"),   # (hex is text since YAML numbers are decimal)
    Hostile("num_requests_400_digits_closed_loop", run(None, "--set", "workload.arrival.process=closed_loop",
                                                       "--set", "workload.arrival.qps=null", "--set",
                                                       "workload.arrival.concurrency=4", "--set",
                                                       "workload.num_requests=" + "9" * 400), "workload.num_requests"),
    Hostile("num_requests_400_digits_gamma", run(None, "--set", "workload.arrival.process=gamma", "--set",
                                                 "workload.arrival.cv=2", "--set", "workload.num_requests=" + "9" * 400),
            "workload.num_requests"),
    # parallel_samples 2**63 overflowed the int64 column before the scheduler's limit was checked
    Hostile("parallel_samples_2e63", run(None, "--set", f"workload.parallel_samples={2**63}"),
            "workload.parallel_samples: more sequences per request than an engine runs at once; allowed: 1 to "
            "2,147,483,647"),
    # step sampling of one in 2**63 steps overflowed the sampler mid-run
    Hostile("step_sample_every_2e63", run(None, "--set", "outputs.steps=sampled", "--set",
                                          f"outputs.step_sample_every={2**63}"),
            "outputs.step_sample_every: Input should be less than or equal to 1000000000"),
    # a Mooncake block of 2**63 tokens overflowed the int64 block counts while the trace was read
    Hostile("mooncake_hash_block_2e63", trace(lambda tmp: _write(tmp, "m.jsonl", MOONCAKE % (0, "1, 2") + MOONCAKE % (
        100, "1, 3")), "mooncake", hash_block_tokens=2**63), "workload.arrival.hash_block_tokens"),
    Hostile("mooncake_hash_block_400_digits", trace(lambda tmp: _write(tmp, "m.jsonl", MOONCAKE % (0, "1, 2")),
                                                    "mooncake", hash_block_tokens=int("9" * 400)),
            "workload.arrival.hash_block_tokens"),
    # a drifting acceptance point at a 400-digit request index overflowed its float array
    Hostile("drift_index_400_digits", shipped_run("scenarios/speculation/online_drift.yaml", "--set",
                                                  "workload.num_requests=4", "--set",
                                                  f"acceptance.points=[[0, 0.5], [{'9' * 400}, 0.7]]"),
            "acceptance.points.1.0: Input should be less than 1000000000000"),
    # retrieval times past the longest simulated span ran to NaN percentiles, exit 0
    *[Hostile(f"retrieval_{name}_{value}", shipped_run("scenarios/speculation/ralmspec.yaml", "--set",
                                                       "workload.num_requests=4", "--set", f"retrieval.{name}={value}"),
              f"retrieval.{name}: Input should be less than or equal to 100000000")
      for name, value in (("kb_fixed_s", "1e308"), ("kb_fixed_s", "1e9"), ("kb_per_query_s", "1e308"),
                          ("lookup_s", "1e308"))],
    # acceptance metadata that is not a JSON object: 100,000-deep brackets raised RecursionError, a list an
    # AttributeError in the corpus walks
    Hostile("acceptance_trace_meta_deep", parquet_meta(
        "profiles/data/acceptance/qwen2.5-coder-1.5b-0.5b.parquet", "a.parquet", b"draftsim_trace",
        b"[" * 100_000 + b"]" * 100_000, "scenarios/speculation/layer_skip.yaml", "--set", "workload.num_requests=4",
        "--set", "acceptance.trace=a.parquet"), "schema metadata 'draftsim_trace' nests too deeply"),
    Hostile("acceptance_trace_meta_list", parquet_meta(
        "profiles/data/acceptance/qwen2.5-coder-1.5b-0.5b.parquet", "a.parquet", b"draftsim_trace", b"[1]",
        "scenarios/speculation/layer_skip.yaml", "--set", "workload.num_requests=4", "--set",
        "acceptance.trace=a.parquet"), "schema metadata 'draftsim_trace' must be a JSON object, not a JSON list"),
    Hostile("sessions_corpus_meta_deep", parquet_meta(
        "profiles/data/acceptance/sessions/sessions-qwen2.5-coder-0.5b.parquet", "c.parquet", b"draftsim_sessions",
        b"[" * 100_000 + b"]" * 100_000, "scenarios/speculation/suffix_code.yaml", "--set", "workload.num_requests=4",
        "--set", "acceptance.corpus=c.parquet", "--set", "drafter={kind: ngram, gamma: 4}"),
            "schema metadata 'draftsim_sessions' nests too deeply"),
    Hostile("sessions_corpus_meta_list", parquet_meta(
        "profiles/data/acceptance/sessions/sessions-qwen2.5-coder-0.5b.parquet", "c.parquet", b"draftsim_sessions",
        b"[1]", "scenarios/speculation/suffix_code.yaml", "--set", "workload.num_requests=4", "--set",
        "acceptance.corpus=c.parquet", "--set", "drafter={kind: ngram, gamma: 4}"),
            "schema metadata 'draftsim_sessions' must be a JSON object"),
    # an 8 MiB scenario of 4.19 M values took 222 s and 3.2 GB before 'x: unknown field'
    Hostile("scenario_millions_of_values", run_path(eight_mib_of_values), "holds more than 1,000,000 values"),
    # a Latin-1 byte past the first 64 KiB, in a column the fast CSV path skips, ran with exit 0
    *[Hostile(f"trace_latin1_in_an_extra_column{suffix}", trace(lambda tmp: _write(
        tmp, "t.csv", ("arrival_s,prompt_tokens,output_tokens,note\n" + "0,10,5,ok\n" * 8000
                       + "1,10,5,caf\xe9\n").encode("latin-1")), **options),
              "t.csv is not UTF-8 text: byte 0xe9 at line 8002")
      for suffix, options in (("", {}), ("_time_unit_s", {"time_unit": "s"}))],
    # ---- plan drafters no candidate needs or can run, and cpu-local in a plan (fix-plan, 2026-11-29) ----
    # a draft model listed again in another case (LLAMA-68M) was screened and confirmed twice (exit 0)
    Hostile("plan_drafter_twice_in_another_case", plan(search={"drafters": [
        {"kind": "draft_model", "model": "llama-68m", "gamma": [2]},
        {"kind": "draft_model", "model": "LLAMA-68M", "gamma": [2]}]}),
            "draftsim plan: error: plan.search.drafters.1: repeats drafters.0 (llama-68m γ2); allowed: each drafter "
            "and γ once"),
    # overlapping gamma lists of one drafter made the γ 4 candidates twice (exit 0)
    Hostile("plan_drafter_gammas_overlapping", plan(search={"drafters": [
        {"kind": "draft_model", "model": "llama-68m", "gamma": [2, 4]},
        {"kind": "draft_model", "model": "llama-68m", "gamma": [4]}]}),
            "plan.search.drafters.1: repeats drafters.0 (llama-68m γ4)"),
    # speculation {kind: chain} (the default) beside none made the same candidates twice (exit 0)
    Hostile("plan_drafter_chain_given_and_omitted", plan(search={"drafters": [
        {"kind": "draft_model", "model": "llama-68m", "gamma": [2]},
        {"kind": "draft_model", "model": "llama-68m", "gamma": [2], "speculation": {"kind": "chain"}}]}),
            "plan.search.drafters.1: repeats drafters.0 (llama-68m γ2)"),
    # a drafter's acceptance equal to the plan's beside none made the same candidates twice (exit 0)
    Hostile("plan_drafter_acceptance_the_plans", plan(search={"drafters": [
        {"kind": "draft_model", "model": "llama-68m", "gamma": [2]},
        {"kind": "draft_model", "model": "llama-68m", "gamma": [2],
         "acceptance": {"kind": "constant", "alpha": 0.7}}]}),
            "plan.search.drafters.1: repeats drafters.0 (llama-68m γ2)"),
    # eagle3 beside eagle3 with the head published for the model made the same candidates twice (exit 0)
    Hostile("plan_eagle3_published_head_named_and_omitted", plan(models=["llama-3.1-8b"], search={"drafters": [
        {"kind": "eagle3", "gamma": [2]}, {"kind": "eagle3", "head": "llama-3.1-8b-eagle3", "gamma": [2]}]}),
            "plan.search.drafters.1: repeats drafters.0 (eagle3:llama-3.1-8b-eagle3 γ2)"),
    # a tree under the plan's constant acceptance was screened out, silently beside another drafter (exit 0)
    Hostile("plan_tree_without_per_rank_acceptance", plan(search={"drafters": [
        {"kind": "none"}, {"kind": "draft_model", "model": "llama-68m", "gamma": 5,
                           "speculation": {"kind": "tree", "builder": "sequoia", "budget": 32}}]}),
            "plan.search.drafters.1.speculation: tree verification needs per-rank acceptance"),
    # multidraft under constant acceptance: 'no feasible candidate', exit 1 with outputs written
    Hostile("plan_multidraft_without_per_rank_acceptance", plan(search={"drafters": [
        {"kind": "draft_model", "model": "llama-68m", "gamma": 3, "speculation": {"kind": "multidraft", "n": 2}}]}),
            "plan.search.drafters.0.speculation: multidraft verification needs per-rank acceptance"),
    # SGLang's EAGLE tree under constant acceptance: 'no feasible candidate', exit 1 with outputs written
    Hostile("plan_dynamic_tree_without_per_rank_acceptance", plan(models=["llama-3.1-8b"], search={"drafters": [
        {"kind": "eagle3", "gamma": 3, "speculation": {"kind": "dynamic_tree", "top_k": 4, "depth": 3, "budget": 16}}]}),
            "plan.search.drafters.0.speculation: dynamic_tree verification needs per-rank acceptance"),
    # a vllm_v1 budget of 4 tokens below γ 4's step of 5: its candidates screened out, silently (exit 0 or 1)
    Hostile("plan_gamma_above_the_vllm_v1_budget", plan(
        scheduler={"kind": "vllm_v1", "max_batch_size": 4, "max_batched_tokens": 4},
        search={"drafters": [{"kind": "draft_model", "model": "llama-68m", "gamma": [2, 4]}]}),
            "plan.search.drafters.0.gamma: 4: plan.scheduler.max_batched_tokens (4) is below one speculative step"),
    # eagle3 without a head for a model with none published: screened out, silently beside another drafter (exit 0)
    Hostile("plan_eagle3_no_published_head", plan(search={"drafters": [{"kind": "none"}, {"kind": "eagle3"}]}),
            "plan.search.drafters.1.head: no EAGLE-3 head in the catalog drafts for the planned models (llama-3-8b)"),
    # cpu-local, which latency source auto refuses and a plan sets no other: exit 1 with outputs written
    Hostile("plan_cpu_local", plan(models=["llama-68m"], hardware=[{"id": "cpu-local", "usd_per_gpu_hour": 1}]),
            "plan.hardware.0.id: cpu-local: a plan prices its candidates with latency source auto"),
    # ---- fix-sweep: sweeps, validate --published, output folders, flags (2026-11-29) --------------------------
    # a plot metric of text (status, scenario; latency_source is a mapping stored as JSON text) was taken as a summary
    # key: the store was written, then the plot raised pandas' TypeError (exit 1, a traceback)
    *[Hostile(f"sweep_plot_metric_{metric}", lambda tmp, metric=metric: sweep(plot={"metrics": [metric]})(tmp) + ["--plot"],
              f"sweep.plot.metrics: '{metric}' is not a numeric metric; allowed: ")
      for metric in ("status", "scenario", "latency_source")],
    # a swept key that changes nothing simulated ran the same simulation twice (exit 0), where compare refused it
    Hostile("sweep_grid_of_outputs_only", sweep(grid={"outputs.plots": [True, False]}),
            "sweep: points (outputs.plots=true, seed=7) and (outputs.plots=false, seed=7) differ only in outputs.plots"),
    Hostile("sweep_grid_of_names_only", sweep(grid={"name": ["x", "y"]}),
            "sweep: points (name=x, seed=7) and (name=y, seed=7) are the same simulation"),
    # a misspelt key inside a point's workload or engine_flags was read as absent (`bacth: 64` priced at batch 1,
    # exit 0), where one at the point's top level was refused
    Hostile("points_workload_misspelt_key", points([merge(STEP_POINT, {"workload": {"bacth": 64}})]),
            "point s: workload.bacth: not a field of a point's workload; allowed: m, n, k, batch, "),
    Hostile("points_engine_flags_misspelt_key", points([merge(STEP_POINT, {"engine_flags": {"cuda_graph": False}})]),
            "point s: engine_flags.cuda_graph: not a field of a point's engine_flags; allowed: "),
    # a user's own file of the name validate --published, compare or plan writes first (no draftsim manifest
    # beside it) was taken for an output written before manifests existed and replaced (exit 0)
    Hostile("validate_published_out_beside_a_users_points_csv",
            lambda tmp: ["validate", "--published", "--points", _write(tmp, "p.yaml", [POINT]), "--quiet", "--out",
                         _write(tmp, "points.csv", "the user's").parent],
            "points.csv exists and was not written by draftsim validate-published"),
    Hostile("compare_out_beside_a_users_compare_csv",
            lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary", "seed=1", "--quiet", "--out",
                         _write(tmp, "compare.csv", "the user's").parent],
            "compare.csv exists and was not written by draftsim compare"),
    Hostile("plan_out_beside_a_users_ranked_csv",
            lambda tmp: plan("--out", _write(tmp, "ranked.csv", "rank,name\n1,mine\n").parent)(tmp),
            "ranked.csv exists and was not written by draftsim plan"),
    # a key holding a newline in a sweep's set: or compare's --vary was cut at it ('...: drafter.gam'), where a grid
    # key was named with what is allowed
    Hostile("sweep_set_key_with_a_newline", sweep(set=["drafter.gam\nma=2"]),
            "sweep.set: bad key path 'drafter.gam\\nma' (expected dotted scenario keys like drafter.gamma)"),
    Hostile("compare_vary_key_with_a_newline", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary",
                                                            "drafter.gam\nma=2", "--out", tmp / "cmp", "--quiet"],
            "--vary: expected KEY=VALUE: bad key path 'drafter.gam\\nma'"),
    # a sweep's scenario path with a newline was named cut at it ('file not found: .../base'; a NUL byte, raw, in
    # sweep_scenario_path_with_a_nul_byte)
    Hostile("sweep_scenario_path_with_a_newline", lambda tmp: ["sweep", _write(tmp, "sweep.yaml", {
        "name": "s", "scenario": "base\n.yaml", "grid": {"workload.arrival.qps": [4, 8]}}), "--out", tmp / "store",
        "--executor", "serial", "--quiet"], "/base\\n.yaml"),
    # integer flags took Python's int() spellings beyond ASCII digits: '1_0' (10), '+3', ' 5'
    *[Hostile(f"plan_confirm_top_{name}", plan(f"--confirm-top={text}"),
              f"argument --confirm-top: a whole number in ASCII digits is required, got {text!r}")
      for name, text in (("underscore", "1_0"), ("plus", "+3"), ("space", " 5"))],
    Hostile("sweep_workers_underscore", lambda tmp: sweep()(tmp) + ["--workers=1_0"],
            "argument --workers: invalid int value: '1_0'"),
    # a points file of no point said '--kind/--id: no point matches', though neither flag was given
    Hostile("points_an_empty_list", points([]), "--points: no points in "),
    # ---- engine versions no release carries (lead, 2026-11-29) -------------------------------------------------
    # vLLM 0.7.9 (0.7.3 was followed by 0.8.0) and TensorRT-LLM 0.99.0 ran as their modelled ranges, exit 0
    Hostile("estimate_engine_version_never_released", estimate("--engine-version", "0.7.9"),
            "error: --engine-version: vllm 0.7.9 is not a release (vllm had 100 on 2026-11-29"),
    Hostile("trtllm_engine_version_never_released",
            run(cluster={"engine": {"framework": "trtllm", "version": "0.99.0"}}),
            "draftsim: error: cluster.engine.version: trtllm 0.99.0 is not a release"),
    # hash ids that break the chain (an id stands for its block and every block before it), each read as it was
    # (exit 0): with prefix caching on, an id twice in one Mooncake request was a KeyError traceback as the cache
    # released it and an id at another place in another request a cache hit on a prefix not shared; a CSV's
    # mapped hash_ids column the same
    Hostile("mooncake_block_id_twice_in_one_request",
            trace(text_file("m.jsonl", MOONCAKE.replace("1000", "1024") % (0, "7, 7")), "mooncake"),
            "column 'hash_ids', line 1: block id 7 is block 2 (after id 7) here and block 1 on line 1"),
    Hostile("mooncake_block_id_at_another_position",
            trace(text_file("m.jsonl", MOONCAKE.replace("1000", "1024") % (0, "10, 11")
                            + MOONCAKE.replace("1000", "1024") % (1000, "11, 10")), "mooncake"),
            "column 'hash_ids', line 2: block id 11 is block 1 here and block 2 (after id 10) on line 1"),
    Hostile("trace_csv_block_id_after_another_id",
            trace(text_file("t.csv", "arrival_s,prompt_tokens,output_tokens,h\n0,32,5,1 3\n1,32,5,2 3\n"),
                  columns={"hash_ids": "h"}, hash_block_tokens=16),
            "column 'h', line 3: block id 3 is block 2 (after id 2) here and block 2 (after id 1) on line 2"),
    # acceptance-trace columns of numbers stored as text: '3' was checked as a number, then used as text (a
    # TypeError traceback in hits or accepted_lengths, or '3' > '10' compared as text); a rank of booleans ran
    Hostile("acceptance_trace_rank_as_text", acceptance_trace("draft_rank", "3"),
            "acc.parquet: column 'draft_rank' holds str values; it must be a column of integers"),
    Hostile("acceptance_trace_max_accept_as_text", acceptance_trace("max_accept", "3"),
            "acc.parquet: column 'max_accept' holds str values; it must be a column of integers"),
    Hostile("acceptance_trace_ngram_match_as_text", acceptance_trace("ngram_match_len", "3"),
            "acc.parquet: column 'ngram_match_len' holds str values; it must be a column of integers"),
    Hostile("acceptance_trace_rank_as_booleans", acceptance_trace("draft_rank", True),
            "acc.parquet: column 'draft_rank' holds bool values; it must be a column of integers"),
    # session corpora whose columns are not what the generator writes: a plain integer for a list of token ids
    # was a TypeError traceback ('numpy.int64' object is not iterable), 'no' for ended_by_stop or text for the
    # ids an int() error naming no column, negative or fractional ids were walked as tokens (exit 0), and an
    # empty corpus or one of empty outputs was 'acceptance.workloads: no request of []', a field not given
    Hostile("sessions_corpus_output_an_integer", session_corpus(output_tokens=5),
            "c.parquet: column 'output_tokens', row 0: 5 is not a list of token ids; expected "
            "lists of integers from 0 to 2,147,483,647"),
    Hostile("sessions_corpus_prompt_an_integer", session_corpus(prompt_tokens=5),
            "column 'prompt_tokens', row 0: 5 is not a list of token ids"),
    Hostile("sessions_corpus_output_as_text", session_corpus(output_tokens="[1, 2]"),
            "column 'output_tokens', row 0: '[1, 2]' is not a list of token ids"),
    Hostile("sessions_corpus_negative_ids", session_corpus(output_tokens=[[5, -1]] * 30),
            "column 'output_tokens', row 0: [5, -1] is not a list of token ids"),
    Hostile("sessions_corpus_fractional_ids", session_corpus(prompt_tokens=[[1.5, 2.0]] * 30),
            "column 'prompt_tokens', row 0: [1.5, 2.0] is not a list of token ids"),
    Hostile("sessions_corpus_ended_by_stop_as_text", session_corpus(ended_by_stop="no"),
            "c.parquet: column 'ended_by_stop' holds str values; it must be a column of booleans"),
    Hostile("sessions_corpus_empty", session_corpus(), "c.parquet: the corpus holds no request"),
    Hostile("sessions_corpus_outputs_empty", session_corpus(output_tokens=[[]] * 30),
            "c.parquet: no request has a decode step"),
    # Azure times more than 292 years apart (both within 1677-2262): their difference in int64 nanoseconds
    # wrapped to negative arrival times, run with exit 0
    Hostile("azure_times_500_years_apart",
            trace(text_file("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n1700-01-01 00:00:00,374,44\n"
                                     "2200-01-01 00:00:00,396,109\n"), "azure"),
            "workload.arrival.trace_csv: arrivals reach 1.58e+10 s of simulated time; at most 1e+08 s"),
    # -- workloads drawn before they were checked (fix-workload, 2026-11-29) --
    # every turn of every session was drawn before the context check: sessions of turns the context cannot hold
    # ran (3,000 turns × 2 sessions: 26 s, exit 0) or were refused after the drawing (500 × 80: 17-28 s)
    Hostile("sessions_longer_than_the_context", run(workload={"sessions": {"turns": {"kind": "fixed", "value": 200},
                                                                           "think_time_s": 0.001}, "num_requests": 2}),
            "workload.sessions.turns: every session has at least 200 turns"),
    # turns from an empirical CSV had no mean: no memory check, 'out of memory' after 28 s (20,000 turns: a hang)
    Hostile("sessions_empirical_turns_beyond_memory", lambda tmp: run(workload={
        "sessions": {"turns": {"kind": "empirical", "csv": str(_write(tmp, "turns.csv", "len\n3000\n")),
                               "column": "len"}, "think_time_s": 0.001},
        "num_requests": 80, "context_overflow": "truncate"})(tmp),
            "workload.sessions.turns: the sessions' prompts re-send their earlier turns", patch=little_memory),
    # a system prompt of 10^7 tokens, beyond every context, built every request's keys first: exit 2 after 65 s
    Hostile("shared_prefix_longer_than_the_context", run(workload={"shared_prefix": {"prompts": 4, "tokens": 10**7},
                                                                   "num_requests": 200}),
            "workload.shared_prefix.tokens: 10000000 tokens of system prompt before every prompt"),
    Hostile("shared_prefix_with_its_prompts_beyond_the_context", run(workload={
        "shared_prefix": {"prompts": 4, "tokens": 8150}}),
            "workload.shared_prefix.tokens: every request needs at least 8230 tokens"),
    # 10^7 requests of a legal 8,000-token system prompt: 5·10^9 prefix keys and no check of their memory
    Hostile("shared_prefix_keys_beyond_memory", run(workload={"shared_prefix": {"prompts": 4, "tokens": 8000},
                                                              "num_requests": 10**7}),
            "workload.shared_prefix.tokens: every prompt starts with a system prompt", patch=little_memory),
    Hostile("plan_sessions_longer_than_the_context", plan(workload={
        **PLAN["workload"], "sessions": {"turns": {"kind": "fixed", "value": 100}, "think_time_s": 1}}),
            "plan.workload.sessions.turns: every session has at least 100 turns"),
    # energy settings for hardware without tdp_w: usd_per_kwh made usd_per_mtok null (5.67 without it), the host
    # power and power model were ignored (exit 0)
    *[Hostile(f"energy_{name}_without_tdp_w", run(cluster={"hardware": HW}, energy={name: value}),
              f"energy.{name}: needs the GPUs' power, but the hardware 'my-gpu' of cluster states no tdp_w")
      for name, value in (("usd_per_kwh", 0.1), ("host_power_w_per_gpu", 500), ("power_model", "busy"))],
    # a step option for another outputs.steps mode was ignored without a word (exit 0)
    Hostile("outputs_sample_every_without_sampled", run(outputs={"step_sample_every": 5}),
            "outputs.step_sample_every: only allowed for steps 'sampled'"),
    Hostile("outputs_interval_with_sampled", run(outputs={"steps": "sampled", "step_interval_s": 0.5}),
            "outputs.step_interval_s: only allowed for steps 'aggregate'"),
    # YAML 1.1 numbers read as other values (README: numbers are plain decimals): 0x10 ran 16 requests, 1:30 a
    # TTFT SLO of 90 s (sexagesimal), in a scenario file and in --set alike (exit 0)
    Hostile("yaml_hex_number_in_a_scenario", run(yaml.safe_dump(merge(TINY, {"workload": {"num_requests": "@"}}))
                                                 .replace("'@'", "0x10")),
            "workload.num_requests: Input should be a valid integer"),
    Hostile("set_sexagesimal_number", run(None, "--set", "slo.ttft_s=1:30"), "slo.ttft_s: Input should be a valid number"),
    # -- leftovers of the workload and trace hunts (fix-left) --
    # a session corpus with a null session name ran (exit 0)
    Hostile("sessions_corpus_session_null", session_corpus(session=None),
            "c.parquet: column 'session', row 0: None is not a session name; expected non-empty text"),
    # run's --workers went on as the text of a simulation.workers override, which YAML read: 1_0 ran 10 workers
    Hostile("run_workers_underscored", run(None, "--workers=1_0"),
            "draftsim run: error: argument --workers: 'auto' or a whole number in ASCII digits is required, got '1_0'"),
    # a trace path with a newline was printed raw: the error line was cut at 'file not found: .../a' (exit 2)
    Hostile("trace_path_with_a_newline", trace(lambda tmp: Path("a\nb.csv")), "/a\\nb.csv"),
    # Azure dates 10 years apart ended '(times in seconds?)', a hint for numbers, not for datetimes
    Hostile("azure_dates_beyond_the_span",
            trace(text_file("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2000-01-01 00:00:00,374,44\n"
                                     "2010-01-01 00:00:00,396,109\n"), "azure"),
            "are simulated (the first and last TIMESTAMP are 10 years apart)"),
    # ---- vLLM speculation methods before the release that added them (fix-specver, 2026-11-29) ----------------
    # each ran with exit 0, simulating speculation under a vLLM release that had no such method (read in the PyPI
    # sources of each release: profiles/engine_time/support.py); EAGLE-3 on vLLM 0.2.0, a release with no
    # speculative decoding at all
    # (target llama-3-8b: the head's pairing rule is the target's hidden size and vocabulary, which Llama 3 8B
    # shares with Llama 3.1 8B, and vLLM 0.2.0 runs its unscaled RoPE; its llama3 rope block it could not build)
    Hostile("vllm_0_2_0_eagle3", run(cluster={"model": "llama-3-8b", "engine": {"version": "0.2.0"}},
                                     drafter={"kind": "eagle3", "head": "llama-3.1-8b-eagle3", "gamma": 3}),
            "draftsim: error: cluster.engine.version: vllm 0.2.0 has no speculative decoding"),
    # EAGLE-3 on vLLM 0.4.0-0.8.4 (method eagle3 came with PR #16937 in v0.8.5)
    Hostile("vllm_0_8_4_eagle3", run(cluster={"model": "llama-3.1-8b", "engine": {"version": "0.8.4"}},
                                     drafter={"kind": "eagle3", "head": "llama-3.1-8b-eagle3", "gamma": 3}),
            "draftsim: error: cluster.engine.version: vllm 0.8.4 has no EAGLE-3 speculation"),
    # a draft model and n-gram on vLLM 0.2.0 / 0.3.0 (--speculative-model from v0.4.1, [ngram] from v0.4.2)
    Hostile("vllm_0_3_0_draft_model", run(cluster={"engine": {"version": "0.3.0"}},
                                          drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
            "draftsim: error: cluster.engine.version: vllm 0.3.0 has no speculative decoding"),
    Hostile("vllm_0_2_0_ngram", run(cluster={"engine": {"version": "0.2.0"}}, drafter={"kind": "ngram", "gamma": 3}),
            "draftsim: error: cluster.engine.version: vllm 0.2.0 has no speculative decoding"),
    Hostile("vllm_0_4_1_ngram", run(cluster={"engine": {"version": "0.4.1"}}, drafter={"kind": "ngram", "gamma": 3}),
            "draftsim: error: cluster.engine.version: vllm 0.4.1 has no n-gram speculation"),
    # an EAGLE head before V0's EAGLE (v0.5.5) and in V1 before its EAGLE proposer (v0.8.3)
    Hostile("vllm_0_5_4_eagle", run(cluster={"engine": {"version": "0.5.4"}},
                                    drafter={"kind": "head", "style": "autoregressive", "gamma": 3}),
            "draftsim: error: cluster.engine.version: vllm 0.5.4 has no EAGLE speculation"),
    Hostile("vllm_0_8_2_eagle", run(cluster={"engine": {"version": "0.8.2"}},
                                    drafter={"kind": "head", "style": "autoregressive", "gamma": 3}),
            "draftsim: error: cluster.engine.version: vllm 0.8.2 has no EAGLE speculation in its V1 engine"),
    # Medusa heads before V0's Medusa (v0.5.2) and in V1 before v0.9.0
    Hostile("vllm_0_5_1_medusa", run(cluster={"engine": {"version": "0.5.1"}},
                                     drafter={"kind": "head", "style": "parallel", "gamma": 4}),
            "draftsim: error: cluster.engine.version: vllm 0.5.1 has no Medusa speculation"),
    Hostile("vllm_0_8_5_medusa", run(cluster={"engine": {"version": "0.8.5"}},
                                     drafter={"kind": "head", "style": "parallel", "gamma": 4}),
            "draftsim: error: cluster.engine.version: vllm 0.8.5 has no Medusa speculation in its V1 engine"),
    # DeepSeek MTP before V0's (v0.7.3) and in V1 before v0.9.0
    *[Hostile(f"vllm_{version.replace('.', '_')}_mtp",
              run(cluster={"hardware": "h200", "model": "deepseek-v3", "dtype": "fp8", "parallelism": {"tp": 8},
                           "max_model_len": 8192, "engine": {"version": version}}, drafter={"kind": "mtp", "gamma": 1}),
              f"draftsim: error: cluster.engine.version: vllm {version} has no MTP speculation{v1}")
      for version, v1 in (("0.7.2", " (DeepSeek MTP"), ("0.8.5", " in its V1 engine"))],
    # -- deployments the engine refuses (fix-deploy, 2026-11-29) --
    # a tp that does not divide the MLP's intermediate_size (8960 / 6): vLLM's MergedColumnParallelLinear asserts exact
    # division; the run, the estimate and the plan took it (exit 0; the plan wrote `vllm serve ... -tp 6`)
    Hostile("run_tp_not_dividing_the_mlp", run(cluster={"model": "qwen2.5-coder-1.5b", "parallelism": {"tp": 6}}),
            "cluster.parallelism: parallelism.tp=6 must divide intermediate_size=8960 of qwen2.5-coder-1.5b"),
    Hostile("estimate_tp_not_dividing_the_mlp", lambda tmp: ["estimate", "--model", "qwen2.5-coder-1.5b", "--hardware",
                                                             "h100-sxm", "--tp", "6", "--batch", "8", "--context", "512"],
            "--tp: parallelism.tp=6 must divide intermediate_size=8960"),
    Hostile("plan_tp_not_dividing_the_mlp", plan(models=["qwen2.5-coder-1.5b"], search={**PLAN["search"], "tp": [6]}),
            "plan.search.tp: 6 splits none of the planned models (parallelism.tp=6 must divide intermediate_size=8960"),
    Hostile("compare_tp_not_dividing_the_mlp", lambda tmp: [
        "compare", _write(tmp, "s.yaml", merge(TINY, {"cluster": {"model": "qwen2.5-coder-1.5b"}})), "--vary",
        "cluster.parallelism.tp=6", "--out", tmp / "cmp", "--quiet"],
            "parallelism.tp=6 must divide intermediate_size=8960"),
    # fp8_block (128x128 weight blocks) at a tp whose shard of a weight is no whole number of blocks: vLLM refuses it
    # at load ("The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n =
    # 128", vllm issue #17569); each ran (exit 0)
    Hostile("run_fp8_block_experts_cut_by_tp", run(cluster={"model": "qwen3-30b-a3b", "dtype": "fp8_block",
                                                            "parallelism": {"tp": 4}}),
            "cluster.parallelism.tp: parallelism.tp=4 with dtype fp8_block leaves 192 columns of the routed experts"),
    Hostile("estimate_fp8_block_experts_cut_by_tp", lambda tmp: [
        "estimate", "--model", "qwen3-235b-a22b", "--hardware", "h200", "--tp", "8", "--dtype", "fp8_block", "--batch",
        "8", "--context", "512"], "--tp: parallelism.tp=8 with dtype fp8_block leaves 192 columns"),
    Hostile("plan_fp8_block_experts_cut_by_tp", plan(models=["qwen3-30b-a3b"], dtype="fp8_block",
                                                     hardware=[{"id": "h100-sxm", "usd_per_gpu_hour": 2.5}],
                                                     search={**PLAN["search"], "tp": [4, 8]}),
            "plan.search.tp: 4 splits none of the planned models (parallelism.tp=4 with dtype fp8_block"),
    Hostile("estimate_fp8_block_at_no_tp", lambda tmp: ["estimate", "--model", "gpt-oss-20b", "--hardware", "h200",
                                                        "--dtype", "fp8_block"],
            "--dtype: fp8_block cannot load gpt-oss-20b at any tp"),
    # disaggregated pools whose TP sizes do not divide each other: vLLM's NixlConnector maps decode ranks to prefill
    # ranks by their ratio and asserts divisibility (TpKVTopology.tp_ratio); each ran (exit 0)
    *[Hostile(f"disaggregated_tp_{p}_and_{d}", run(cluster={"model": "llama-68m", "disaggregation": {
        "prefill": {"parallelism": {"tp": p}}, "decode": {"parallelism": {"tp": d}}}}),
              f"cluster.disaggregation.decode.parallelism.tp: {d} and the prefill pool's tp {p} do not divide each other")
      for p, d in ((4, 6), (2, 3))],
    # a vLLM release that predates the model's architecture (its model registry has no class for it: the engine would
    # not load the model); each ran (exit 0)
    Hostile("run_vllm_before_gpt_oss", run(cluster={"model": "gpt-oss-20b", "hardware": "h200", "parallelism": {"tp": 2},
                                                    "max_model_len": 8192,
                                                    "engine": {"framework": "vllm", "version": "0.6.0"}},
                                           drafter={"kind": "none"}),
            "cluster.engine.version: vllm 0.6.0 has no GptOssForCausalLM (gpt-oss-20b): vLLM's model registry lists it "
            "from v0.10.1; allowed: a version >= 0.10.1"),
    Hostile("run_vllm_before_qwen3", run(cluster={"model": "qwen3-8b", "engine": {"framework": "vllm", "version": "0.8.3"}},
                                         drafter={"kind": "none"}),
            "cluster.engine.version: vllm 0.8.3 has no Qwen3ForCausalLM (qwen3-8b): vLLM's model registry lists it from "
            "v0.8.4; allowed: a version >= 0.8.4"),
    Hostile("run_vllm_before_the_draft_models_architecture", run(
        cluster={"model": "qwen2.5-72b", "parallelism": {"tp": 4}, "engine": {"framework": "vllm", "version": "0.7.3"}},
        drafter={"kind": "draft_model", "model": "qwen3-8b", "gamma": 4}),
            "cluster.engine.version: vllm 0.7.3 has no Qwen3ForCausalLM (qwen3-8b): vLLM's model registry lists it from "
            "v0.8.4; allowed: a version >= 0.8.4"),
    # session 22, repro: validate --engine vllm took --live's flags without --live (ignored: exit 0, the report said
    # 2 vLLM runs for --repeats 7) and compared a speculative case without its plain baseline (no target: exit 0);
    # validate --quick beside --scenario ran the whole other scenario
    Hostile("validate_vllm_repeats_without_live", lambda tmp: ["validate", "--engine", "vllm", "--repeats", "7", "--out",
                                                               tmp / "v"],
            "draftsim validate: error: --repeats: only --live runs vLLM (this run compares the recorded runs of --data)"),
    Hostile("validate_vllm_device_without_live", lambda tmp: ["validate", "--engine", "vllm", "--device", "cuda",
                                                              "--out", tmp / "v"], "--device: only --live runs vLLM"),
    Hostile("validate_vllm_speculative_case_alone", lambda tmp: ["validate", "--engine", "vllm", "--cases",
                                                                 "qwen-1.5b+ngram", "--out", tmp / "v"],
            "--cases: qwen-1.5b+ngram is checked by its speedup over qwen-1.5b, which is not among the cases"),
    Hostile("validate_vllm_case_twice", lambda tmp: ["validate", "--engine", "vllm", "--cases", "qwen-0.5b, qwen-0.5b",
                                                     "--out", tmp / "v"], "--cases: qwen-0.5b is given twice"),
    Hostile("validate_quick_beside_a_scenario", lambda tmp: ["validate", "--quick", "--scenario",
                                                             REPO / "scenarios" / "validation" / "cpu.yaml", "--out",
                                                             tmp / "v"],
            "draftsim validate: error: --quick: runs scenarios/validation/cpu_quick.yaml, and --scenario gives"),
    # session 22, lead: compare of variants differing only in how a run is carried out (bulk or step-by-step, replica
    # worker processes), whose outputs are the same byte for byte, printed a table of zeros, exit 0
    Hostile("compare_vary_only_the_step_mode", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary",
                                                            "simulation.step_mode=step", "--out", tmp / "c"],
            "differ only in simulation.step_mode (how a run is carried out: the outputs are the same byte for byte"),
    Hostile("compare_vary_only_the_workers", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary",
                                                          "simulation.workers=2", "--vary", "simulation.workers=1",
                                                          "--out", tmp / "c"], "differ only in simulation.workers"),
    # session 22, profout: `draftsim profile --check-only` of a damaged profile was a traceback, and of a profile measured
    # in another dtype, thread count or of other models a check that compared two different things (exit 1, 'FAILED');
    # --check-out onto the profile's own table replaced it with the check's JSON; the default folder
    # (out/profiles/<device-id>/) was never checked (a user's ops.csv there replaced, exit 0); an engine and a kernel
    # profile each took the other's folder for their own and replaced its fingerprint.json
    Hostile("profile_check_only_damaged_table", lambda tmp: profile(
        "--models", "llama-68m", "--check-only", "--out", _profile_with(tmp, "ops.csv", "garbage\n"))(tmp),
            "holds no profile that can be checked (profile table"),
    Hostile("profile_check_only_damaged_fingerprint", lambda tmp: profile(
        "--models", "llama-68m", "--check-only", "--out", _profile_with(tmp, "fingerprint.json", ""))(tmp),
            "holds no profile that can be checked"),
    Hostile("profile_check_only_other_dtype", lambda tmp: profile(
        "--models", "llama-68m", "--check-only", "--dtype", "bf16", "--out",
        _profile_with(tmp, "ops.csv", (REPO / "profiles/data/cpu-local/ops.csv").read_text()))(tmp),
            "--dtype: bf16, but the profile at"),
    Hostile("profile_check_only_other_threads", lambda tmp: profile(
        "--models", "llama-68m", "--check-only", "--threads", "1", "--out",
        _profile_with(tmp, "ops.csv", (REPO / "profiles/data/cpu-local/ops.csv").read_text()))(tmp),
            "--threads: 1, but the profile at"),
    Hostile("profile_check_only_model_not_profiled", lambda tmp: profile(
        "--models", "smollm2-135m", "--check-only", "--out",
        _profile_with(tmp, "ops.csv", (REPO / "profiles/data/cpu-local/ops.csv").read_text()))(tmp),
            "--models: smollm2-135m not in the profile at"),
    Hostile("profile_check_out_onto_the_checked_table", lambda tmp: profile(
        "--models", "llama-68m", "--check-only", "--out", _profile_with(tmp, "ops.csv", (
            REPO / "profiles/data/cpu-local/ops.csv").read_text()), "--check-out", tmp / "pd" / "ops.csv")(tmp),
            "is the profile's own ops.csv"),
    Hostile("profile_check_out_onto_the_new_fingerprint", lambda tmp: profile(
        "--models", "llama-68m", "--check", "--out", tmp / "p", "--check-out", tmp / "p" / "fingerprint.json")(tmp),
            "is the profile's own fingerprint.json"),
    Hostile("profile_check_out_in_the_shipped_profiles", lambda tmp: profile(
        "--models", "llama-68m", "--check-only", "--out", _profile_with(tmp, "ops.csv", (
            REPO / "profiles/data/cpu-local/ops.csv").read_text()), "--check-out", tmp / "shipped" / "c.json")(tmp),
            "is inside the shipped profiles' folder",
            patch=lambda mp: (Path("shipped").mkdir(), mp.setattr("profiles.predictor.DATA_DIR", Path.cwd() / "shipped"))),
    Hostile("profile_default_folder_holds_a_users_file", lambda tmp: (
        (tmp / "out/profiles/cpu-local").mkdir(parents=True), _write(tmp, "out/profiles/cpu-local/ops.csv", "mine"),
        profile("--models", "llama-68m")(tmp))[-1], "is a non-empty directory that is not a draftsim output"),
    Hostile("profile_default_folder_is_a_file", lambda tmp: (
        (tmp / "out/profiles").mkdir(parents=True), _write(tmp, "out/profiles/cpu-local", "mine"),
        profile("--models", "llama-68m")(tmp))[-1], "cpu-local exists and is not a directory"),
    Hostile("profile_engine_into_a_kernel_profile", lambda tmp: [
        "profile", "--engine", "vllm", "--models", "qwen2.5-coder-0.5b", "--quiet", "--out",
        _profile_with(tmp, "ops.csv", (REPO / "profiles/data/cpu-local/ops.csv").read_text())],
            "holds a kernel profile (ops.csv, written by draftsim profile)"),
    Hostile("profile_kernel_into_an_engine_profile", lambda tmp: profile("--models", "llama-68m", "--out", (
        _engine_profile_dir(tmp, "{}"), _write(tmp, "ep/fingerprint.json", '{"tool": "profiles/engine_time/vllm_driver.py"}'),
        tmp / "ep")[-1])(tmp), "holds a vLLM engine profile"),
    # an engine profile into a run's folder: its loader then read .draftsim-run.json as a model's passes (exit 0)
    Hostile("profile_engine_into_a_runs_output", lambda tmp: [
        "profile", "--engine", "vllm", "--models", "qwen2.5-coder-0.5b", "--quiet", "--out", (
            (tmp / "o").mkdir(), _write(tmp, "o/summary.json", "{}"),
            _write(tmp, "o/.draftsim-run.json", '{"command": "run", "files": ["summary.json"], "format": 1}'),
            tmp / "o")[-1]], "holds the output of draftsim run (.draftsim-run.json)"),
    # an empty --vllm-python was read as not given: this Python was probed (and run, where it has vLLM)
    Hostile("profile_vllm_python_empty", lambda tmp: [
        "profile", "--engine", "vllm", "--models", "qwen2.5-coder-0.5b", "--quiet", "--out", tmp / "ep",
        "--models-dir", ((tmp / "hf/qwen2.5-coder-0.5b").mkdir(parents=True),
                         _write(tmp, "hf/qwen2.5-coder-0.5b/config.json", "{}"), tmp / "hf")[-1],
        "--vllm-python", ""], "--vllm-python: an empty path"),
    # session 22, hwmodel: a measured-table version on hardware no table covers (user hardware, a GPU never measured)
    # was dropped and the step priced on the roofline; an engine release that does not exist ran when the engine time
    # was off; estimate's engine flags beside --no-engine-time were taken and dropped; each ran (exit 0)
    Hostile("estimate_table_version_on_user_hardware", lambda tmp: [
        "estimate", "--model", "llama-3-8b", "--hardware", str(_write(tmp, "gpu.yaml", HW)), "--version", "0.24.0"],
            "--version: '0.24.0' selects measured kernel tables, but my-gpu has none"),
    Hostile("estimate_table_version_on_an_unmeasured_gpu", lambda tmp: [
        "estimate", "--model", "llama-3-8b", "--hardware", "h100-pcie", "--version", "99.9.9"],
            "--version: '99.9.9' selects measured kernel tables, but h100-pcie has none"),
    Hostile("run_table_version_on_user_hardware", run(cluster={"hardware": HW, "latency": {"version": "0.24.0"}}),
            "cluster.latency.version: '0.24.0' selects measured kernel tables, but my-gpu has none"),
    Hostile("run_unknown_engine_release_without_engine_time", run(cluster={"latency": {"engine_time": False},
                                                                           "engine": {"version": "99.0"}}),
            "cluster.engine.version: vllm 99.0 is newer than the newest release known here"),
    Hostile("run_not_a_release_without_engine_time", run(cluster={"latency": {"engine_time": False,
                                                                              "engine_version": "0.10.7"}}),
            "cluster.engine.version: vllm 0.10.7 is not a release"),
    *[Hostile(f"estimate_no_engine_time_with_{flag[2:].replace('-', '_')}", estimate("--no-engine-time", flag, value),
              f"{flag} models the engine's time and CUDA-graph padding, which --no-engine-time leaves out")
      for flag, value in (("--engine-version", "0.10.0"), ("--cuda-graphs", "none"), ("--host-cpu", "20000"),
                          ("--async-scheduling", "off"))],
    # a field of estimate's hardware file was named `estimate.hardware.peak_flops.FP8`, a block the command line has none of
    Hostile("estimate_hardware_file_field_by_its_flag", lambda tmp: [
        "estimate", "--model", "llama-3-8b", "--hardware",
        str(_write(tmp, "gpu.yaml", {**HW, "peak_flops": {"fp32": 6e13, "bf16": 8e14, "FP8": 1e15}}))],
            "--hardware: peak_flops.FP8: unknown dtype; allowed: fp32"),
    # session 22, flags: a single-valued flag given twice kept the last value without a word (reproduce wrote into b,
    # run simulated step by step, estimate priced 4 requests, exit 0); now refused naming it, in any spelling argparse
    # takes (--flag=value, an abbreviation, --x then --no-x), before any work; append flags (--set, --vary) still repeat
    Hostile("flags_run_step_mode_twice", run(None, "--step-mode", "bulk", "--step-mode", "step"),
            "draftsim run: error: argument --step-mode: given twice; give it once"),
    Hostile("flags_run_out_twice_as_equals", run(None, "--out=a", "--out=b"), "draftsim run: error: argument --out: given twice"),
    Hostile("flags_estimate_batch_twice_abbreviated", estimate("--batch=2", "--bat", "4"),
            "draftsim estimate: error: argument --batch: given twice"),
    Hostile("flags_reproduce_out_twice", lambda tmp: ["reproduce", "tetris", "--out", tmp / "a", "--out", tmp / "b"],
            "draftsim reproduce: error: argument --out: given twice"),
    Hostile("flags_compare_step_mode_twice", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary", "seed=1",
                                                          "--vary", "seed=2", "--step-mode", "bulk", "--step-mode",
                                                          "step", "--out", tmp / "cmp", "--quiet"],
            "draftsim compare: error: argument --step-mode: given twice"),
    Hostile("flags_sweep_workers_twice", sweep(flags=("--workers", "1", "--workers", "2")),
            "draftsim sweep: error: argument --workers: given twice"),
    Hostile("flags_plan_quiet_twice", plan("--quiet"), "draftsim plan: error: argument --quiet: given twice"),
    Hostile("flags_validate_published_twice", lambda tmp: ["validate", "--published", "--published", "--out", tmp / "p"],
            "draftsim validate --published: error: argument --published: given twice"),
    Hostile("flags_validate_vllm_out_twice", lambda tmp: ["validate", "--engine", "vllm", "--out", tmp / "a", "--out",
                                                          tmp / "b"],
            "draftsim validate --engine vllm: error: argument --out: given twice"),
    Hostile("flags_profile_engine_twice", lambda tmp: ["profile", "--engine", "vllm", "--engine=vllm", "--out", tmp / "p"],
            "draftsim profile --engine vllm: error: argument --engine: given twice"),
    # session 22, dask: a scheduler address where something else listens (a web server: it waited for ever in Dask's
    # handshake; a peer whose bytes read as an exabyte frame: 'out of memory', exit 1); a suffix drafter under a Dask
    # executor (refused only after the cluster was built, with a line naming no field); a sweep whose points start a
    # local-dask cluster on Dask workers (a 114-line traceback, exit 1: a Dask worker cannot fork)
    Hostile("run_executor_at_a_service_that_is_not_dask",
            lambda tmp: run(None, "--executor", f"dask://127.0.0.1:{_not_dask_listener()}")(tmp),
            "--executor: cannot reach the Dask scheduler at tcp://127.0.0.1:"),
    Hostile("run_dask_suffix_drafter",
            run(None, "--executor", "tcp://127.0.0.1:1", cluster={"model": "qwen2.5-coder-0.5b", "replicas": 2},
                drafter={"kind": "suffix"},
                acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "--executor: tcp://127.0.0.1:1 cannot run this scenario (drafter.kind: the suffix drafter"),
    Hostile("sweep_local_dask_points_on_dask_workers",
            lambda tmp: sweep(merge(TINY, {"simulation": {"executor": "local-dask"}}))(tmp)[:4]
            + ["--executor", "local-dask", "--quiet"],
            "--executor: runs the points on Dask workers, which cannot start the LocalCluster of a point's "
            "simulation.executor local-dask"),
    # session 23, ctxlen: config.json's quantization_config and rope scaling were ignored: a bitsandbytes checkpoint
    # was priced as bf16, an fp8 checkpoint under cluster.dtype bf16 ran as bf16 weights vLLM would refuse
    # (ModelConfig._verify_quantization), a yarn block without its factor (vLLM fails at start-up) was accepted
    Hostile("ctxlen_quant_method_bitsandbytes",
            model_file("config.json", quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True}),
            "quantization_config.quant_method 'bitsandbytes' is not priced here; allowed: fp8, mxfp4"),
    Hostile("ctxlen_dtype_contradicts_fp8_checkpoint",
            model_file("config.json", quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic"}),
            "checkpoint, whose config.json quantization_config holds fp8 weights (vLLM and SGLang refuse"),
    Hostile("ctxlen_estimate_dtype_contradicts_mxfp4_checkpoint",
            lambda tmp: hf_shipped("gpt-oss-20b")(tmp) + ["--dtype", "bf16"],
            "checkpoint, whose config.json quantization_config holds mxfp4 weights (vLLM and SGLang refuse"),
    Hostile("ctxlen_rope_scaling_yarn_without_factor",
            model_file("config.json", rope_scaling={"rope_type": "yarn", "original_max_position_embeddings": 4096}),
            "rope_scaling: rope_type yarn needs a factor"),
    Hostile("ctxlen_rope_scaling_not_a_mapping", model_file("config.json", rope_scaling="yarn"),
            "rope_scaling is 'yarn'; expected a mapping with rope_type and factor"),
    # session 23, archgates: speculation an engine release refuses at start-up on the target's architecture
    # (profiles/data/engine_time/spec_architectures.yaml, read in the engines' sources); each ran (exit 0)
    Hostile("run_vllm_eagle3_on_mixtral", run(
        cluster={"model": "mixtral-8x7b", "hardware": "h200", "parallelism": {"tp": 2},
                 "engine": {"framework": "vllm", "version": "0.11.0"}},
        drafter={"kind": "eagle3", "gamma": 3, "head": {
            "hidden_size": 4096, "intermediate_size": 14336, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128,
            "draft_vocab_size": 32000, "target_hidden_size": 4096, "vocab_size": 32000}}),
            "drafter.kind: vllm 0.11.0 does not run EAGLE-3 speculation on MixtralForCausalLM (mixtral-8x7b): vLLM "
            "runs it on that architecture in no release read"),
    Hostile("run_vllm_eagle3_on_qwen3_moe_before_0_12", run(
        cluster={"model": "qwen3-30b-a3b", "hardware": "h200", "engine": {"framework": "vllm", "version": "0.11.0"}},
        drafter={"kind": "eagle3", "gamma": 3, "head": {
            "hidden_size": 2048, "intermediate_size": 6144, "num_heads": 32, "num_kv_heads": 4, "head_dim": 128,
            "draft_vocab_size": 32000, "target_hidden_size": 2048, "vocab_size": 151936}}),
            "drafter.kind: vllm 0.11.0 does not run EAGLE-3 speculation on Qwen3MoeForCausalLM (qwen3-30b-a3b): vLLM "
            "runs it on that architecture from 0.12.0"),
    Hostile("run_sglang_mtp_on_qwen3_next_before_0_5_2", run(
        cluster={"model": "qwen3-next-80b-a3b", "hardware": "h200", "parallelism": {"tp": 2},
                 "engine": {"framework": "sglang", "version": "0.5.1"}},
        drafter={"kind": "mtp", "gamma": 1}),
            # (SGLang's model registry has no Qwen3-Next before 0.5.2 either: the architecture gate, which runs first,
            # refuses the release for the model itself; MTP on it came with the model)
            "cluster.engine.version: sglang 0.5.1 has no Qwen3NextForCausalLM (qwen3-next-80b-a3b): SGLang's model "
            "registry (sglang/srt/models EntryClass) lists it from v0.5.2"),
    Hostile("run_trtllm_mtp_on_a_llama_config", lambda tmp: run(
        cluster={"model": str(_write(tmp, "config.json", json.dumps({**HF, "num_nextn_predict_layers": 1}))),
                 "engine": {"framework": "trtllm", "version": "1.2.0"}},
        drafter={"kind": "mtp", "gamma": 1})(tmp),
            "drafter.kind: trtllm 1.2.0 does not run MTP speculation on LlamaForCausalLM"),
    Hostile("run_vllm_ngram_on_nemotron_h_before_0_17", run(
        cluster={"model": "nemotron-h-56b", "hardware": "h200", "parallelism": {"tp": 4},
                 "engine": {"framework": "vllm", "version": "0.16.0"}},
        drafter={"kind": "ngram", "gamma": 3}),
            "drafter.kind: vllm 0.16.0 does not run speculative decoding on NemotronHForCausalLM (nemotron-h-56b): "
            "vLLM runs it on that architecture from 0.17.0"),
    # session 23, sglpm: cluster.engine.schedule_policy (SGLang's --schedule-policy) refused where the release lacks
    # the policy, where draftsim does not model it, on another engine, and with a scheduler it is not modelled for
    Hostile("sglpm_lof_before_sglang_0_5_1",
            run(cluster={"engine": {"framework": "sglang", "version": "0.4.2", "schedule_policy": "lof"}}),
            "draftsim: error: cluster.engine.schedule_policy: sglang 0.4.2 has no schedule policy 'lof' (from 0.5.1); "
            "it has lpm, random, fcfs, dfs-weight"),
    Hostile("sglpm_random_not_modelled",
            run(cluster={"engine": {"framework": "sglang", "version": "0.4.5", "schedule_policy": "random"}}),
            "draftsim: error: cluster.engine.schedule_policy: 'random' (sglang 0.4.5) is not modelled"),
    Hostile("sglpm_policy_on_vllm",
            run(cluster={"engine": {"framework": "vllm", "version": "0.11.0", "schedule_policy": "lpm"}}),
            "draftsim: error: cluster.engine.schedule_policy: 'lpm': this is SGLang's --schedule-policy"),
    Hostile("sglpm_lpm_with_sarathi",
            run(cluster={"engine": {"framework": "sglang", "schedule_policy": "lpm"}}, scheduler={"kind": "sarathi"}),
            "draftsim: error: cluster.engine.schedule_policy: 'lpm' is modelled with SGLang's prefill-first scheduler"),
    Hostile("sglpm_unknown_policy", run(cluster={"engine": {"framework": "sglang", "schedule_policy": "sjf"}}),
            "cluster.engine.schedule_policy: Input should be 'lpm', 'random', 'fcfs'"),
    # session 23, fp8marlin: fp8 weights on an A100 now run weight-only (W8A16) under the releases with FP8 Marlin
    # (vLLM >= 0.5.1 dense, >= 0.9.0 fp8_block and MoE; SGLang 0.4.0 and >= 0.5.6 dense); the others still refuse,
    # one line naming the release and the releases that run them, before any work
    Hostile("fp8marlin_trtllm_fp8_on_a100", run(cluster={"hardware": "a100-80gb", "dtype": "fp8",
                                                         "engine": {"framework": "trtllm"}}),
            "draftsim: error: cluster.dtype: fp8 weights need FP8 tensor cores, which a100-80gb lacks, and trtllm "
            "1.0.0 has no weight-only FP8 (FP8 Marlin) kernel for fp8 weights; releases that run them as W8A16: "
            "vllm >= 0.5.1, sglang 0.4.0, sglang >= 0.5.6; allowed here: fp32, bf16, fp16, int4"),
    Hostile("fp8marlin_vllm_0_8_fp8_moe_on_a100", run(cluster={"hardware": "a100-80gb", "dtype": "fp8",
                                                               "model": "mixtral-8x7b", "parallelism": {"tp": 2},
                                                               "engine": {"version": "0.8.0"}}),
            "draftsim: error: cluster.dtype: fp8 weights need FP8 tensor cores, which a100-80gb lacks, and vllm 0.8.0 "
            "has no weight-only FP8 (FP8 Marlin) kernel for fp8 weights with MoE experts; releases that run them as "
            "W8A16: vllm >= 0.9.0"),
    Hostile("fp8marlin_estimate_fp8_block_sglang_0_5_5_on_a100",
            lambda tmp: ["estimate", "--model", "llama-3-8b", "--hardware", "a100-80gb", "--dtype", "fp8_block",
                         "--engine-version", "0.5.5", "--framework", "sglang"],
            "draftsim estimate: error: --dtype: fp8_block weights need FP8 tensor cores, which a100-80gb lacks, and "
            "sglang 0.5.5 has no weight-only FP8"),
    Hostile("fp8marlin_plan_trtllm_fp8_on_a100", plan(hardware=[{"id": "a100-80gb"}], dtype="fp8",
                                                      engine={"framework": "trtllm"}),
            "draftsim plan: error: plan.dtype: no planned model and GPU can run it: fp8 weights need FP8 tensor cores, "
            "which a100-80gb lacks, and trtllm"),
    # session 23, sgmodels: an SGLang or TensorRT-LLM release that cannot load the model's architecture (no
    # EntryClass in SGLang's sglang/srt/models, TensorRT-LLM's release notes add it later, or no release has it:
    # profiles/data/engine_time/{sglang,trtllm}_architectures.yaml); each ran (exit 0)
    Hostile("run_sglang_before_qwen3", run(cluster={"model": "qwen3-8b", "engine": {"framework": "sglang",
                                                                                     "version": "0.4.5.post1"}},
                                           drafter={"kind": "none"}),
            "cluster.engine.version: sglang 0.4.5.post1 has no Qwen3ForCausalLM (qwen3-8b): SGLang's model registry "
            "(sglang/srt/models EntryClass) lists it from v0.4.5.post2; allowed: a version >= 0.4.5.post2"),
    Hostile("run_sglang_before_nemotron_h", run(cluster={"model": "nemotron-h-56b", "hardware": "h200",
                                                         "parallelism": {"tp": 4}, "max_model_len": 8192,
                                                         "engine": {"framework": "sglang", "version": "0.5.3"}},
                                                drafter={"kind": "none"}),
            "cluster.engine.version: sglang 0.5.3 has no NemotronHForCausalLM (nemotron-h-56b): SGLang's model "
            "registry (sglang/srt/models EntryClass) lists it from v0.5.3.post1"),
    Hostile("run_sglang_jamba", run(cluster={"model": "jamba-1.5-mini", "hardware": "h200", "parallelism": {"tp": 2},
                                             "max_model_len": 8192,
                                             "engine": {"framework": "sglang", "version": "0.5.23"}},
                                    drafter={"kind": "none"}),
            "cluster.model: sglang 0.5.23 has no JambaForCausalLM (jamba-1.5-mini): SGLang's model registry "
            "(sglang/srt/models EntryClass) has it in no release read; allowed: a model of another architecture, or "
            "the engine vllm (from 0.5.1)"),
    Hostile("run_trtllm_1_0_gpt_oss", run(cluster={"model": "gpt-oss-20b", "hardware": "h200", "max_model_len": 8192,
                                                   "engine": {"framework": "trtllm", "version": "1.0.0"}},
                                          drafter={"kind": "none"}),
            "cluster.engine.version: trtllm 1.0.0 has no GptOssForCausalLM (gpt-oss-20b): TensorRT-LLM (its release "
            "notes and model registries) has it from v1.1.0, not in v1.0.0 or earlier; allowed: a version after 1.0.0"),
    Hostile("run_trtllm_0_5_qwen3", run(cluster={"model": "qwen3-8b", "engine": {"framework": "trtllm",
                                                                                 "version": "0.5.0"}},
                                        drafter={"kind": "none"}),
            "cluster.engine.version: trtllm 0.5.0 has no Qwen3ForCausalLM (qwen3-8b)"),
    Hostile("plan_sglang_release_before_a_planned_model", plan(engine={"framework": "sglang", "version": "0.4.5"},
                                                               models=["qwen3-8b"]),
            "plan.engine.version: sglang 0.4.5 has no Qwen3ForCausalLM (qwen3-8b)"),
    Hostile("plan_trtllm_jamba", plan(engine={"framework": "trtllm", "version": "1.2.0"}, models=["jamba-1.5-mini"]),
            "plan.models.0: trtllm 1.2.0 has no JambaForCausalLM (jamba-1.5-mini)"),
    # session 23, ropegate: a rope scaling type the engine release cannot run (its get_rope raises 'Unknown RoPE
    # scaling type'): refused naming cluster.engine.version before any memory or context work (llama3 came with
    # vLLM 0.5.3.post1, whose 0.5.3 named Llama 3.1's block "extended"; with TensorRT-LLM 0.12.0's Llama 3.1)
    Hostile("run_vllm_0_5_3_llama3_rope", run(cluster={"model": "llama-3.1-8b", "engine": {"version": "0.5.3"}},
                                              drafter={"kind": "none"}),
            "draftsim: error: cluster.engine.version: vllm 0.5.3 cannot run llama-3.1-8b's rope scaling type llama3: "
            "vLLM's get_rope (vllm/model_executor/layers/rotary_embedding.py) lists it from v0.5.3.post1; allowed: a "
            "version >= 0.5.3.post1"),
    Hostile("run_trtllm_0_11_llama3_rope", run(cluster={"model": "llama-3.1-8b",
                                                        "engine": {"framework": "trtllm", "version": "0.11.0"}},
                                               drafter={"kind": "none"}),
            "cluster.engine.version: trtllm 0.11.0 cannot run llama-3.1-8b's rope scaling type llama3: TensorRT-LLM "
            "(its release notes) has it from v0.12.0, not in v0.11.0 or earlier; allowed: a version after 0.11.0"),
    Hostile("plan_vllm_0_4_0_llama3_rope", plan(engine={"version": "0.4.0"}, models=["llama-3.1-8b"]),
            "plan.engine.version: vllm 0.4.0 cannot run llama-3.1-8b's rope scaling type llama3"),
    # session 23, kvdefault: config.json's KV-cache declaration was ignored: a kv_cache_scheme no engine reads (vLLM
    # raises NotImplementedError for anything but float 8-bit) or an unknown kv_cache_quant_algo ran as a bf16 cache,
    # and a bf16 kv_dtype under vLLM 0.15.0 - 0.20.2, which sets the declared fp8 cache whatever it is asked, ran
    Hostile("kvdefault_kv_cache_scheme_int8", model_file("config.json", quantization_config={
        "quant_method": "compressed-tensors", "config_groups": {"g": {
            "weights": {"type": "float", "num_bits": 8}, "input_activations": {"type": "float", "num_bits": 8}}},
        "kv_cache_scheme": {"type": "int", "num_bits": 8}}),
            "quantization_config.kv_cache_scheme is int 8-bit; the engines read float 8-bit KV caches"),
    Hostile("kvdefault_kv_cache_quant_algo_unknown", model_file("config.json", quantization_config={
        "quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "INT8"}),
            "quantization_config.kv_cache_quant_algo is 'INT8'; allowed: FP8, NVFP4"),
    Hostile("kvdefault_bf16_kv_where_vllm_forces_the_declared_fp8", lambda tmp: run(cluster={
        "model": str(_write(tmp, "config.json", json.dumps({**HF, "quantization_config": {
            "quant_method": "compressed-tensors", "config_groups": {"g": {
                "weights": {"type": "float", "num_bits": 8}, "input_activations": {"type": "float", "num_bits": 8}}},
            "kv_cache_scheme": {"type": "float", "num_bits": 8}}}))),
        "dtype": "fp8", "kv_dtype": "bf16", "engine": {"framework": "vllm", "version": "0.20.0"}})(tmp),
            "draftsim: error: cluster.kv_dtype: bf16, but vllm 0.20.0 runs an fp8 KV cache for"),
    # session 23, planfix: plan.engine naming no version skipped the up-front architecture check: every candidate of a
    # model the release its measured tables (or the newest modelled one) give cannot load was screened out alone
    # (exit 1, outputs written)
    Hostile("planfix_model_the_unversioned_engine_cannot_load",
            plan(models=["jamba-1.5-mini"], engine={"framework": "sglang"},
                 search={"tp": [2], "replicas": [1], "drafters": [{"kind": "none"}]}),
            "draftsim plan: error: plan.models.0: sglang 0.5.14 has no JambaForCausalLM (jamba-1.5-mini)"),
    # session 23, fielderr: a refusal of a value the scenario never wrote (the engine release from the measured
    # tables or cluster.latency, the dtype from a quantized config.json) named the field as if it had been given
    # ("cluster.engine.version: vllm 0.14.0 ..." with no engine block); it now says the value was implied and by what
    Hostile("fielderr_release_from_latency_version", run(
        cluster={"hardware": "a100-80gb", "latency": {"version": "0.14.0"}},
        drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
            "draftsim: error: cluster.engine.version (not given: vllm 0.14.0, the measured tables' release "
            "cluster.latency.version names): vllm 0.14.0 raises at start-up for a draft model"),
    Hostile("fielderr_release_from_trtllm_tables", run(cluster={"hardware": "a100-80gb", "model": "gpt-oss-20b",
                                                                "latency": {"framework": "trtllm"}}),
            "draftsim: error: cluster.engine.version (not given: trtllm 1.0.0, the release of a100-80gb's measured "
            "tables, cluster.latency): trtllm 1.0.0 has no GptOssForCausalLM (gpt-oss-20b)"),
    Hostile("fielderr_release_of_the_decode_pools_tables", run(
        cluster={"disaggregation": {"prefill": {"replicas": 1}, "decode": {"replicas": 1, "hardware": "a100-80gb"},
                                    "kv_transfer": {"link": "scaleout"}}},
        drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
            "draftsim: error: cluster.engine.version (not given: vllm 0.14.0, the release of a100-80gb's measured "
            "tables, cluster.latency): vllm 0.14.0 raises at start-up for a draft model"),
    Hostile("fielderr_estimate_release_from_tables", lambda tmp: [
        "estimate", "--model", "gpt-oss-20b", "--hardware", "a100-80gb", "--framework", "trtllm", "--batch", "8"],
            "draftsim estimate: error: --engine-version (not given: trtllm 1.0.0, the release of a100-80gb's measured "
            "tables): trtllm 1.0.0 has no GptOssForCausalLM"),
    Hostile("fielderr_estimate_release_from_version_flag", lambda tmp: [
        "estimate", "--model", "gpt-oss-20b", "--hardware", "a100-80gb", "--framework", "trtllm", "--version",
        "1.0.0", "--batch", "8"],
            "draftsim estimate: error: --engine-version (not given: trtllm 1.0.0, the measured tables' release "
            "--version names): trtllm 1.0.0 has no GptOssForCausalLM"),
    Hostile("fielderr_dtype_from_the_checkpoint", lambda tmp: run({**TINY, "cluster": {
        "hardware": "a100-80gb", "engine": {"framework": "trtllm"},
        "model": str(_write(tmp, "myfp8.json", json.dumps({**HF, "quantization_config": {
            "quant_method": "fp8", "activation_scheme": "dynamic"}})))}})(tmp),
            "draftsim: error: cluster.dtype (not given: fp8, myfp8's config.json quantization_config): fp8 weights "
            "need FP8 tensor cores, which a100-80gb lacks"),
    Hostile("fielderr_context_derived_from_the_model", run(cluster={"model": "llama-3.1-8b", "hardware": "a100-40gb",
                                                                    "gpu_memory_utilization": 0.6}),
            "draftsim: error: cluster.max_model_len (not given: 131072 tokens, derived from llama-3.1-8b's "
            "max_position_embeddings: vLLM _get_and_verify_max_len"),
    # a refusal of a field the user gave whose message names the implied release ends by saying where it came from
    Hostile("fielderr_given_field_under_the_tables_release", run(
        cluster={"hardware": "a100-80gb", "engine": {"async_scheduling": True}},
        drafter={"kind": "ngram", "gamma": 3}, acceptance={"kind": "constant", "alpha": 0.6}),
            "draftsim: error: cluster.engine.async_scheduling: vllm 0.14.0 runs async scheduling with EAGLE/MTP "
            "speculation only (v0.14.0 release notes; PR #31998; vllm/config/vllm.py, VllmConfig.__post_init__ through "
            "v0.15.1: 'only supported with EAGLE/MTP') (cluster.engine.version not given: vllm 0.14.0, the release of "
            "a100-80gb's measured tables, cluster.latency)"),
    Hostile("fielderr_context_given_beyond_the_tables_release", run(
        cluster={"hardware": "a100-80gb", "model": "llama-3.1-8b", "max_model_len": 200000}),
            "allowed: 2..131072, or cluster.engine.allow_long_context: true (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1) "
            "(cluster.engine.version not given: vllm 0.14.0, the release of a100-80gb's measured tables, "
            "cluster.latency)"),
    Hostile("fielderr_estimate_given_flag_under_the_tables_release", lambda tmp: [
        "estimate", "--model", "llama-3-8b", "--hardware", "a100-80gb", "--framework", "trtllm", "--cuda-graphs",
        "piecewise", "--batch", "8"],
            "vllm 0.28.0.. (--engine-version not given: trtllm 1.0.0, the release of a100-80gb's measured tables)"),
    # a scheduler limit the scenario left out was quoted as if written: "max_batched_tokens (8192) must be >= ..."
    Hostile("fielderr_default_budget_below_the_running_limit", run(scheduler={"kind": "vllm", "max_batch_size": 9000}),
            "draftsim: error: scheduler: max_batched_tokens (8192, not given: draftsim's default) must be >= "
            "max_batch_size (9000)"),
    Hostile("fielderr_default_chunk_above_the_budget", run(scheduler={"kind": "sarathi", "max_batched_tokens": 256}),
            "draftsim: error: scheduler: chunk_tokens (512, not given: draftsim's default) must be <= "
            "max_batched_tokens (256)"),
    # session 24, gates: engine releases that cannot serve the scenario ran it (exit 0): TensorRT-LLM speculation
    # methods before the final release whose notes add them, EAGLE-3 on a target before its notes' release, a
    # SupportsV0Only architecture on vLLM's V1 releases, and vLLM 0.5.3's 'extended' rope block elsewhere
    Hostile("gates_trtllm_eagle3_before_0_19", run(
        cluster={"model": "llama-3.1-8b", "engine": {"framework": "trtllm", "version": "0.18.2"}},
        drafter={"kind": "eagle3", "head": "llama-3.1-8b-eagle3", "gamma": 3}),
            "draftsim: error: cluster.engine.version: trtllm 0.18.2 has no EAGLE-3 speculation ('Added initial EAGLE-3 "
            "implementation', PyTorch workflow, TensorRT-LLM release notes 0.19.0); allowed: a version >= 0.19.0"),
    Hostile("gates_trtllm_eagle_before_0_15", run(
        cluster={"engine": {"framework": "trtllm", "version": "0.12.0"}},
        drafter={"kind": "head", "style": "autoregressive", "gamma": 3}),
            "draftsim: error: cluster.engine.version: trtllm 0.12.0 has no EAGLE speculation"),
    Hostile("gates_trtllm_eagle3_qwen3_before_0_21", run(
        cluster={"model": "qwen3-8b", "engine": {"framework": "trtllm", "version": "0.20.0"}},
        drafter={"kind": "eagle3", "head": "qwen3-8b-eagle3", "gamma": 3}),
            "draftsim: error: drafter.kind: trtllm 0.20.0 does not run EAGLE-3 speculation on Qwen3ForCausalLM "
            "(qwen3-8b): TensorRT-LLM runs it on that architecture from 0.21.0"),
    Hostile("gates_vllm_v1_jamba_v0_only", run(
        cluster={"model": "jamba-1.5-mini", "hardware": "h200", "parallelism": {"tp": 2},
                 "engine": {"version": "0.9.0"}}, drafter={"kind": "none"}),
            "draftsim: error: cluster.engine.version: vllm 0.9.0 runs JambaForCausalLM (jamba-1.5-mini) on its V0 "
            "engine only"),
    Hostile("gates_vllm_extended_rope_after_0_5_3", lambda tmp: run(cluster={
        "model": str(_write(tmp, "config.json", json.dumps({**HF, "rope_scaling": {"type": "extended", "factor": 8.0}}))),
        "engine": {"version": "0.10.0"}, "max_model_len": 8192}, drafter={"kind": "none"})(tmp),
            "'s rope scaling type extended: vLLM's get_rope (vllm/model_executor/layers/rotary_embedding.py) has it in v0.5.3 only; allowed: version "
            "0.5.3"),
    # session 24, hunt23: config.json rope blocks, quantization_config fields and plan.engine.schedule_policy that the
    # readers took: a rope factor whose product overflowed (OverflowError traceback), a rope type no engine builds
    # (ran with its factor), a nested block's non-mapping entry (skipped), a derived context under 2 tokens (truncate:
    # a ValueError traceback; drop: exit 0 with every request dropped), a list where a name goes ("unhashable type:
    # 'list'", no field), a block size vLLM's Fp8Config refuses, and a plan policy every candidate was screened out
    # for (exit 1, outputs written)
    Hostile("hunt23_rope_factor_beyond_a_float", model_file("huge.json", rope_scaling={"rope_type": "linear",
                                                                                        "factor": 1e308}),
            "rope_scaling_factor (config.json's rope factor) is 1e+308, which scales max_position_embeddings (8,192) "
            "past 1,073,741,824 positions"),
    Hostile("hunt23_rope_type_no_engine_builds", model_file("weird.json", rope_scaling={"rope_type": "weird",
                                                                                         "factor": 2.0}),
            "rope_scaling: rope_type 'weird' is no rope scaling type an engine builds"),
    Hostile("hunt23_inline_rope_type_no_engine_builds", inline_model(rope_scaling_type="weird", rope_scaling_factor=2.0),
            "rope_scaling_type is 'weird', no rope scaling type an engine builds"),
    Hostile("hunt23_nested_rope_entry_not_a_mapping", model_file("nested.json", rope_parameters={"full_attention": 5}),
            "rope_parameters.full_attention is 5; expected a mapping with rope_type"),
    Hostile("hunt23_context_of_zero_tokens_truncated", lambda tmp: run(
        workload={"context_overflow": "truncate"},
        cluster={"model": str(_write(tmp, "tiny.json", json.dumps(
            {**HF, "rope_scaling": {"rope_type": "linear", "factor": 1e-300}})))})(tmp),
            "draftsim: error: cluster.model: vllm 0.24.0 derives a context of 0 tokens for tiny"),
    Hostile("hunt23_context_of_one_token_dropped", lambda tmp: run(
        workload={"context_overflow": "drop"},
        cluster={"model": str(_write(tmp, "one.json", json.dumps({**HF, "seq_length": 1})))})(tmp),
            "draftsim: error: cluster.model: vllm 0.24.0 derives a context of 1 token for one (seq_length"),
    Hostile("hunt23_kv_cache_scheme_type_a_list", model_file("kvlist.json", quantization_config={
        "quant_method": "compressed-tensors", "config_groups": {"g": {
            "weights": {"type": "float", "num_bits": 8}, "input_activations": {"type": "float", "num_bits": 8}}},
        "kv_cache_scheme": {"type": ["float"], "num_bits": 8}}),
            "quantization_config.kv_cache_scheme is ['float'] 8-bit; the engines read float 8-bit KV caches"),
    Hostile("hunt23_quant_method_a_list", model_file("qlist.json", quantization_config={"quant_method": ["fp8"]}),
            "quantization_config.quant_method ['fp8'] is not priced here"),
    Hostile("hunt23_fp8_weight_block_size_empty", model_file("noblock.json", quantization_config={
        "quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": []}),
            "quantization_config.weight_block_size is []; expected two positive integers"),
    Hostile("hunt23_plan_schedule_policy_not_modelled", plan(engine={"framework": "sglang", "schedule_policy": "random"}),
            "draftsim plan: error: plan.engine.schedule_policy: 'random' (sglang"),
    Hostile("hunt23_plan_schedule_policy_on_vllm", plan(engine={"schedule_policy": "lpm"}),
            "draftsim plan: error: plan.engine.schedule_policy: 'lpm': this is SGLang's --schedule-policy"),
    # session 24, lead: a draft model of another vocabulary size ran on a named vLLM release that refuses it at
    # start-up ('Target and draft model should have the same vocabulary size'); the engine's long-context variable
    Hostile("lead_draft_vocabulary_on_a_named_vllm_release", run(
        cluster={"engine": {"version": "0.24.0"}}, drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
            "draftsim: error: drafter.model: llama-68m has a 32,000-token vocabulary and llama-3-8b 128,256: vllm "
            "0.24.0 refuses such a draft model"),
    Hostile("lead_heterogeneous_vocab_on_sglang", run(
        cluster={"engine": {"framework": "sglang", "version": "0.5.6"}},
        drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3, "heterogeneous_vocab": True}),
            "draftsim: error: drafter.heterogeneous_vocab: sglang has no heterogeneous-vocabulary drafting"),
    Hostile("lead_allow_long_context_before_vllm_0_5_4", run(
        cluster={"max_model_len": 16384, "engine": {"version": "0.5.3", "allow_long_context": True}}),
            "draftsim: error: cluster.engine.allow_long_context: vllm 0.5.3 has no VLLM_ALLOW_LONG_MAX_MODEL_LEN"),
    # session 24, ctxedge: config.json entries the engines read otherwise than draftsim did
    Hostile("ctxedge_trtllm_reads_architectures_first_entry_only",
            estimate("--framework", "trtllm", model_fields={"architectures": ["Unknown", "LlamaForCausalLM"]}),
            "--model: trtllm 1.3.0rc20 loads config.json's architectures[0] only ('Unknown', not LlamaForCausalLM"),
    Hostile("ctxedge_yarn_original_length_null", estimate(model_fields={"rope_scaling": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": None}}),
            "rope_scaling.original_max_position_embeddings is null; rope_type yarn's rotary embedding takes it as a "
            "length"),
    Hostile("ctxedge_gpt_oss_window_null_on_sglang", lambda tmp: [
        "estimate", "--model", str(_write(tmp, "config.json", json.dumps({**json.loads(
            (REPO / "tests/data/hf_configs/gpt-oss-20b/config.json").read_text()), "sliding_window": None}))),
        "--hardware", "h100-sxm", "--framework", "sglang"],
            "its config.json's sliding_window is null on its sliding-window attention; SGLang's gpt_oss.py takes "
            "config.sliding_window - 1"),
    Hostile("ctxedge_gpt_oss_window_zero_on_vllm_before_0_19", lambda tmp: [
        "estimate", "--model", str(_write(tmp, "config.json", json.dumps({**json.loads(
            (REPO / "tests/data/hf_configs/gpt-oss-20b/config.json").read_text()), "sliding_window": 0}))),
        "--hardware", "h100-sxm", "--framework", "vllm", "--engine-version", "0.18.1"],
            "its config.json's sliding_window is 0 on its sliding-window attention; vLLM before 0.19.0 hands the 0"),
    # session 24, window2: sliding windows as each engine release reads config.json
    Hostile("window2_mistral_window_zero_on_vllm_before_0_19", lambda tmp: [
        "estimate", "--model", str(_write(tmp, "config.json", json.dumps({**json.loads(
            (REPO / "tests/data/hf_configs/Mistral-7B-v0.1/config.json").read_text()), "sliding_window": 0}))),
        "--hardware", "h100-sxm", "--framework", "vllm", "--engine-version", "0.18.1"],
            "its config.json's sliding_window is 0 on its sliding-window attention; vLLM before 0.19.0 hands the 0"),
    Hostile("window2_qwen_partial_window_on_vllm", lambda tmp: [
        "estimate", "--model", str(_write(tmp, "config.json", json.dumps({**json.loads(
            (REPO / "tests/data/hf_configs/Qwen2.5-7B/config.json").read_text()), "use_sliding_window": True,
            "sliding_window": 4096, "max_window_layers": 20}))),
        "--hardware", "h100-sxm", "--framework", "vllm"],
            "asserts max_window_layers == num_hidden_layers where the layers mix windowed and full attention"),
    Hostile("window2_qwen_window_on_vllm_0_8", lambda tmp: [
        "estimate", "--model", str(_write(tmp, "config.json", json.dumps({**json.loads(
            (REPO / "tests/data/hf_configs/Qwen2.5-7B/config.json").read_text()), "use_sliding_window": True,
            "sliding_window": 4096}))),
        "--hardware", "h100-sxm", "--framework", "vllm", "--engine-version", "0.8.5"],
            "raises 'Sliding window for some but all layers is not supported' whenever a window is set"),
    Hostile("window2_qwen_window_pair_in_inline_model", run(cluster={"model": {**SPEC, "qwen_sliding_window": [4096]}}),
            "qwen_sliding_window"),
    # session 24, hunt24: plan drafters across vocabularies (a field the screen's reason named but the plan refused;
    # every candidate of a draft model its named release refuses screened out, the plan silent) and estimate's
    # refusal of a step past the derived context that the engine's long-context variable serves
    Hostile("hunt24_plan_draft_vocabulary_on_a_named_release", plan(engine={"version": "0.24.0"}, search={
        "tp": [1], "replicas": [1], "drafters": [{"kind": "none"}, {"kind": "draft_model", "model": "llama-68m",
                                                                    "gamma": [2]}]}),
            "draftsim plan: error: plan.search.drafters.1.model: llama-68m has a 32,000-token vocabulary and "
            "llama-3-8b 128,256: vllm 0.24.0 refuses such a draft model"),
    Hostile("hunt24_plan_heterogeneous_vocab_before_vllm_0_25", plan(engine={"version": "0.24.0"}, search={
        "tp": [1], "replicas": [1], "drafters": [{"kind": "draft_model", "model": "llama-68m", "gamma": [2],
                                                  "heterogeneous_vocab": True}]}),
            "draftsim plan: error: plan.search.drafters.0.heterogeneous_vocab: vllm 0.24.0 has no "
            "use_heterogeneous_vocab"),
    Hostile("hunt24_plan_heterogeneous_vocab_on_eagle3", plan(search={
        "tp": [1], "replicas": [1], "drafters": [{"kind": "eagle3", "gamma": [2], "heterogeneous_vocab": True}]}),
            "heterogeneous_vocab goes with a draft_model drafter"),
    Hostile("hunt24_estimate_allow_long_context_before_vllm_0_5_4",
            estimate("--context", "16000", "--allow-long-context", "--engine-version", "0.5.3"),
            "draftsim estimate: error: --allow-long-context: vllm 0.5.3 has no VLLM_ALLOW_LONG_MAX_MODEL_LEN"),
    # session 24, gptoss: gpt-oss's served window pair (ModelSpec.gpt_oss_sliding_window) in an inline model
    Hostile("gptoss_window_pair_in_inline_model",
            run(cluster={"model": {**SPEC, "gpt_oss_sliding_window": [128, 999]}}), "gpt_oss_sliding_window"),
    Hostile("gptoss_window_pair_not_a_list", run(cluster={"model": {**SPEC, "gpt_oss_sliding_window": "128"}}),
            "gpt_oss_sliding_window"),
    # session 24, hunt25: an output file of another kind (a FIFO nobody reads) hung after the whole check
    Hostile("hunt25_profile_check_out_a_fifo", lambda tmp: profile(
        "--models", "llama-68m", "--check", "--out", "p", "--check-out", str(fifo(tmp)))(tmp),
            "/fifo is a FIFO (named pipe), not a regular file"),
    Hostile("hunt25_profile_check_out_a_link_to_a_fifo", lambda tmp: profile(
        "--models", "llama-68m", "--check-only", "--check-out", str(_link_to(tmp / "out.json", fifo(tmp))))(tmp),
            "out.json is a FIFO (named pipe), not a regular file"),
    # a scenario or a plan given to sweep, a scenario or a sweep given to plan: named a missing field
    # ('sweep.scenario: required field is missing'), not the other command's file, as run names them
    Hostile("hunt25_sweep_given_a_scenario", lambda tmp: ["sweep", _write(tmp, "s.yaml", TINY), "--out", tmp / "o",
                                                          "--quiet"],
            "draftsim sweep: error: sweep: this is a scenario file (it has cluster, not grid or points or "
            "scenario); run it with draftsim run"),
    Hostile("hunt25_sweep_given_a_plan", lambda tmp: ["sweep", _write(tmp, "p.yaml", PLAN), "--out", tmp / "o",
                                                      "--quiet"],
            "draftsim sweep: error: sweep: this is a plan file (it has search, not grid or points or scenario)"),
    Hostile("hunt25_plan_given_a_scenario", lambda tmp: ["plan", _write(tmp, "s.yaml", TINY), "--out", tmp / "o",
                                                         "--quiet"],
            "draftsim plan: error: plan: this is a scenario file (it has cluster, not search); run it with "
            "draftsim run"),
    Hostile("hunt25_plan_given_a_sweep", lambda tmp: ["plan", _write(tmp, "w.yaml", {
        "scenario": str(_write(tmp, "s.yaml", TINY)), "grid": {"drafter.gamma": [1, 2]}}), "--out", tmp / "o",
        "--quiet"],
            "draftsim plan: error: plan: this is a sweep file (it has scenario and grid, not search); run it with "
            "draftsim sweep"),
    # validate --profile-dir naming a profile without its fingerprint said 'profile_dir ...', no flag
    Hostile("hunt25_validate_profile_dir_without_a_fingerprint", lambda tmp: [
        "validate", "--quick", "--quiet", "--profile-dir", _write(_folder(tmp / "p"), "ops.csv", (
            REPO / "profiles" / "data" / "cpu-local" / "ops.csv").read_text()).parent, "--out", tmp / "v"],
            "draftsim validate: error: --profile-dir: profile_dir "),
    # session 25, vocab2: a draft model of another vocabulary size ran on a named SGLang release that refuses it at
    # start-up from 0.5.15 (StandaloneWorkerV2._validate_vocab_compatibility), in a run and in a plan
    Hostile("vocab2_draft_vocabulary_on_a_named_sglang_release", run(
        cluster={"engine": {"framework": "sglang", "version": "0.5.15"}},
        drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 3}),
            "draftsim: error: drafter.model: llama-68m has a 32,000-token vocabulary and llama-3-8b 128,256: sglang "
            "0.5.15 refuses such a draft model"),
    Hostile("vocab2_plan_draft_vocabulary_on_a_named_sglang_release", plan(
        engine={"framework": "sglang", "version": "0.5.23"}, search={"tp": [1], "replicas": [1], "drafters": [
            {"kind": "none"}, {"kind": "draft_model", "model": "llama-68m", "gamma": [2]}]}),
            "draftsim plan: error: plan.search.drafters.1.model: llama-68m has a 32,000-token vocabulary and "
            "llama-3-8b 128,256: sglang 0.5.23 refuses such a draft model"),
    # session 25, coerce: pydantic's lax mode read a value of another type as the field's own, and ran it: a
    # quoted "2" or 2.0 as 2 replicas, "off" or 0 as plots false, "0.7" as α 0.7, a sweep's grid of texts, a plan's
    # search of texts, a published point's tp true as tp 1 (simulator.config.base.Strict: strict mode)
    Hostile("coerce_replicas_quoted", run(cluster={"replicas": "2"}),
            "draftsim: error: cluster.replicas: Input should be a valid integer, not the text '2'"),
    Hostile("coerce_replicas_float", run(cluster={"replicas": 2.0}),
            "draftsim: error: cluster.replicas: Input should be a valid integer, not 2.0"),
    Hostile("coerce_plots_text_off", run(outputs={"plots": "off"}),
            "draftsim: error: outputs.plots: Input should be a valid boolean (true or false), not the text 'off'"),
    Hostile("coerce_prefix_caching_one", run(cluster={"engine": {"prefix_caching": 1}}),
            "draftsim: error: cluster.engine.prefix_caching: Input should be a valid boolean (true or false), not 1"),
    Hostile("coerce_alpha_quoted", run(acceptance={"kind": "constant", "alpha": "0.7"}),
            "draftsim: error: acceptance.alpha: Input should be a valid number, not the text '0.7'"),
    Hostile("coerce_set_qps_quoted", run(None, "--set", 'workload.arrival.qps="8"'),
            "draftsim: error: workload.arrival.qps: Input should be a valid number, not the text '8'"),
    Hostile("coerce_drifting_alpha_quoted", run(acceptance={"kind": "drifting", "points": [[0, 0.9], [2, "0.5"]]}),
            "draftsim: error: acceptance.points.1.1: Input should be a valid number, not the text '0.5'"),
    Hostile("coerce_sweep_grid_of_texts", sweep(grid={"cluster.replicas": ["1", "2"]}),
            "cluster.replicas: Input should be a valid integer, not the text '1'"),
    Hostile("coerce_sweep_replications_float", sweep(replications=2.0),
            "draftsim sweep: error: sweep.replications: Input should be a valid integer, not 2.0"),
    Hostile("coerce_plan_search_tp_texts", plan(search={"tp": ["1"]}),
            "draftsim plan: error: plan.search.tp.0: Input should be a valid integer, not the text '1'"),
    Hostile("coerce_plan_confirm_top_float", plan(confirm_top=1.0),
            "draftsim plan: error: plan.confirm_top: Input should be a valid integer, not 1.0"),
    Hostile("coerce_point_tp_true", points([merge(POINT, {"tp": True})]),
            "point x: tp: Input should be a valid integer, not the boolean true"),
    Hostile("coerce_point_value_quoted", points([merge(POINT, {"value": "9.4"})]),
            "point x: value: Input should be a valid number, not the text '9.4'"),
    # session 25, eagle3v: EAGLE-3 heads no engine can give an embedding to draft from ran (exit 0): one "sharing"
    # the target's embedding at another width (every engine keeps or needs the head's own), one narrower than the
    # target on vLLM 0.9.0 (the target's embedding always, the first draft pass asserts equal widths); one of another
    # vocabulary size was refused on every engine, which all serve it, and is now only on vLLM 0.9.1 - 0.11.0 (the
    # target's embedding only for an equal shape: it would draft from an embedding nothing loads)
    Hostile("eagle3v_head_sharing_the_embedding_at_another_width", run(
        drafter={"kind": "eagle3", "gamma": 3, "head": {**EAGLE3_HEAD, "hidden_size": 2048, "intermediate_size": 8192,
                                                       "num_heads": 16}}),
            "draftsim: error: drafter.head: EAGLE-3 head 'drafter.head': shares_embedding true needs hidden_size = "
            "target_hidden_size"),
    Hostile("eagle3v_narrow_head_on_vllm_0_9_0", run(
        cluster={"engine": {"framework": "vllm", "version": "0.9.0"}},
        drafter={"kind": "eagle3", "gamma": 3, "head": {**EAGLE3_HEAD, "hidden_size": 2048, "intermediate_size": 8192,
                                                       "num_heads": 16, "shares_embedding": False}}),
            "draftsim: error: drafter.head: EAGLE-3 head 'drafter.head' is 2048 wide and llama-3-8b 4096: vllm 0.9.0 "
            "gives an EAGLE head the target's embedding whatever its width"),
    Hostile("eagle3v_head_of_another_vocabulary_on_vllm_0_10_0", run(
        cluster={"engine": {"framework": "vllm", "version": "0.10.0"}},
        drafter={"kind": "eagle3", "gamma": 3, "head": {**EAGLE3_HEAD, "vocab_size": 128320}}),
            "draftsim: error: drafter.head: EAGLE-3 head 'drafter.head' has no embedding of its own (shares_embedding: "
            "true) and a 128,320-token vocabulary, llama-3-8b 128,256: vllm 0.10.0 gives an EAGLE head the target's "
            "embedding only where the two embeddings' shapes are equal"),
    Hostile("eagle3v_plan_head_of_another_vocabulary_on_vllm_0_10_0", plan(
        engine={"framework": "vllm", "version": "0.10.0"}, search={"tp": [1], "replicas": [1], "drafters": [
            {"kind": "none"}, {"kind": "eagle3", "head": "qwen3-8b-eagle3", "gamma": [2]}]}),
            "draftsim plan: error: plan.search.drafters.1.head: EAGLE-3 head 'qwen3-8b-eagle3' has no embedding of "
            "its own (shares_embedding: true) and a 151,936-token vocabulary, llama-3-8b 128,256: vllm 0.10.0"),
    # session 25, fuzz25: a cascade stage's draft model of another vocabulary size ran on a named vLLM release that
    # refuses the same model as drafter.model (the engine family rules run a cascade as a draft model), exit 0
    Hostile("fuzz25_cascade_stage_of_another_vocabulary_on_a_named_vllm_release", run(
        cluster={"engine": {"framework": "vllm", "version": "0.20.0"}},
        drafter={"kind": "cascade", "stages": [{"tokens": 2, "model": "llama-68m"}]}),
            "draftsim: error: drafter.stages[0].model: llama-68m has a 32,000-token vocabulary and llama-3-8b "
            "128,256: vllm 0.20.0 refuses such a draft model"),
    # with cluster.latency.engine_time: false a named release's rules were skipped: a draft model ran on vLLM 0.11.0
    # and suffix decoding on SGLang 0.5.23, exit 0 (refused with engine time on)
    Hostile("fuzz25_draft_model_on_vllm_0_11_without_engine_time", run(
        cluster={"latency": {"engine_time": False}, "engine": {"framework": "vllm", "version": "0.11.0"}},
        drafter={"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 2}),
            "draftsim: error: cluster.engine.version: vllm 0.11.0 raises at start-up for a draft model"),
    Hostile("fuzz25_suffix_on_sglang_without_engine_time", run(
        cluster={"model": "qwen2.5-coder-0.5b", "latency": {"engine_time": False},
                 "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "suffix"}, acceptance={"kind": "sessions"}),
            "draftsim: error: drafter.kind: sglang 0.5.23 has no suffix decoding"),
    # drafter.passes 'vllm' (vLLM V1's DraftModelProposer layout, from 0.15.0) was priced on a named SGLang, exit 0
    Hostile("fuzz25_vllm_draft_passes_on_sglang", run(
        cluster={"engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 2, "passes": "vllm"}),
            "draftsim: error: drafter.passes: sglang 0.5.23 has no vLLM V1 DraftModelProposer"),
    # session 25, refuzz: a mapping's key of another type than its field's (draft_len_schedule: {x: 2}) was named
    # 'policy.draft_len_schedule.x: 2 is not allowed; expected [key]' (the key error read as a union's); a key given
    # both as text and as a number ('4': 2 and 4: 3, now that JSON's text keys "4" are read as 4) must not merge
    Hostile("refuzz_draft_len_schedule_key_of_text", run(
        drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
        policy={"kind": "trtllm_schedule", "draft_len_schedule": {"x": 2}}),
            "draftsim: error: policy.draft_len_schedule: key 'x': Input should be a valid integer, not the text 'x'"),
    Hostile("refuzz_draft_len_schedule_key_as_text_and_number", run(
        drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 4},
        policy={"kind": "trtllm_schedule", "draft_len_schedule": {"4": 2, 4: 3}}),
            "draftsim: error: policy.draft_len_schedule: key 4 is given twice (as text and as a number)"),
    Hostile("refuzz_sglang_slots_key_a_float", run(
        cluster={"engine": {"framework": "sglang"}}, drafter={"kind": "eagle3", "gamma": 7},
        policy={"kind": "sglang_adaptive", "slots": {1.5: {"candidate_steps": [1, 3]}}}),
            "draftsim: error: policy.slots: key '1.5': Input should be a valid integer, not 1.5"),
    # a trace acceptance's bad field was named as its trace ('acceptance.trace: 'qwen2.5-coder-1.5b-0.5b' is not
    # allowed; expected drafter'), a missing trace as the section ('acceptance: required field is missing'): the
    # kind's tag and the field share the name `trace`
    Hostile("refuzz_trace_acceptance_bad_drafter", run(
        drafter={"kind": "draft_model", "model": "qwen2.5-coder-0.5b", "gamma": 2},
        acceptance={"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "bogus"}),
            "draftsim: error: acceptance.drafter: Input should be 'draft', 'skip' or 'ngram'"),
    Hostile("refuzz_trace_acceptance_without_trace", run(
        drafter={"kind": "draft_model", "model": "qwen2.5-coder-0.5b", "gamma": 2}, acceptance={"kind": "trace"}),
            "draftsim: error: acceptance.trace: required field is missing"),
    # session 26, current: policy proposed (vLLM's ragged n-gram verification) was priced on SGLang and TensorRT-LLM,
    # which verify a fixed width per request whatever the n-gram matched (exit 0)
    Hostile("current26_proposed_on_sglang", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4}, policy={"kind": "proposed"},
        acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "draftsim: error: policy.kind: sglang 0.5.23 has no ragged verification"),
    Hostile("current26_proposed_on_trtllm", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "trtllm", "version": "1.2.1"}},
        drafter={"kind": "ngram", "gamma": 4}, policy={"kind": "proposed"},
        acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "draftsim: error: policy.kind: trtllm 1.2.1 has no ragged verification"),
    # vLLM 0.7.3 drafts at most n_predict MTP tokens (DeepSeek-V3: 1) and raises for more: it ran two (exit 0)
    Hostile("current26_mtp_beyond_n_predict_on_vllm_0_7_3", run(
        cluster={"hardware": "h200", "model": "deepseek-v3", "dtype": "fp8", "kv_dtype": "fp8",
                 "parallelism": {"tp": 8}, "engine": {"framework": "vllm", "version": "0.7.3"}},
        drafter={"kind": "mtp", "gamma": 2}),
            "draftsim: error: drafter.gamma: vllm 0.7.3 drafts at most n_predict = 1 MTP token(s) a step"),
    # session 26, ngram: n-gram acceptance under SGLang / TensorRT-LLM walked vLLM's prompt lookup under their name
    # (exit 0); SGLang 0.5.10+ now runs its own NGRAM trie, the rest is refused
    Hostile("ngram26_sessions_on_trtllm", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "trtllm", "version": "1.2.1"}},
        drafter={"kind": "ngram", "gamma": 4},
        acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "draftsim: error: acceptance.kind: 'sessions' runs vLLM's or SGLang's n-gram proposer; TensorRT-LLM's"),
    Hostile("ngram26_vllm_trace_walks_on_sglang", run(
        cluster={"model": "qwen2.5-coder-1.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4},
        acceptance={"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "ngram"}),
            "draftsim: error: acceptance.drafter: the trace's n-gram walks are vLLM's prompt lookup, not SGLang's"),
    Hostile("ngram26_vllm_trace_walks_on_trtllm", run(
        cluster={"model": "qwen2.5-coder-1.5b", "engine": {"framework": "trtllm", "version": "1.2.1"}},
        drafter={"kind": "ngram", "gamma": 4},
        acceptance={"kind": "trace", "trace": "qwen2.5-coder-1.5b-0.5b", "drafter": "ngram"}),
            "draftsim: error: acceptance.drafter: the trace's n-gram walks are vLLM's prompt lookup, not TensorRT"),
    Hostile("ngram26_sglang_window_ngram_release", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.5"}},
        drafter={"kind": "ngram", "gamma": 4},
        acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "draftsim: error: cluster.engine.version: sglang 0.5.5's NGRAM (0.5.3 to 0.5.9, cpp_ngram/ngram.cpp) inserts"),
    Hostile("ngram26_vllm_lookup_window_on_sglang", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "prompt_lookup_min": 2},
        acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "draftsim: error: drafter.prompt_lookup_min: is vLLM's lookup window"),
    # session 27, refusals: the refusal named drafter.prompt_lookup_max where only prompt_lookup_min was written
    # (the window's default copied one bound into the other before the fields given were recorded); each of
    # min only, max only and both is named as written
    Hostile("refusals27_sglang_lookup_min_only_named_as_written", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "prompt_lookup_min": 9},
        acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "draftsim: error: drafter.prompt_lookup_min: is vLLM's lookup window; SGLang's NGRAM matches"),
    Hostile("refusals27_sglang_lookup_max_only_named_as_written", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "prompt_lookup_max": 3},
        acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "draftsim: error: drafter.prompt_lookup_max: is vLLM's lookup window; SGLang's NGRAM matches"),
    Hostile("refusals27_sglang_lookup_both_named_as_written", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2},
        acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "draftsim: error: drafter.prompt_lookup_max: is vLLM's lookup window (as is drafter.prompt_lookup_min); "
            "SGLang's NGRAM matches"),
    # session 27, refusals: a target whose architecture the vLLM release runs no MTP on (a Llama config.json that
    # carries num_nextn_predict_layers), with a draft length the release refuses from those modules, was refused
    # for drafter.gamma; vLLM takes num_speculative_tokens as MTP and reads n_predict only for an MTP architecture,
    # so the architecture is refused first (simulator.cost.mtp.check_draft_length)
    *[Hostile(f"refusals27_mtp_gamma_{gamma}_of_{modules}_on_a_llama_config_vllm_{version.replace('.', '_')}",
              lambda tmp, modules=modules, version=version, gamma=gamma: run(
                  cluster={"model": str(_write(tmp, "config.json", json.dumps(
                      {**HF, "num_nextn_predict_layers": modules}))), "hardware": "h200",
                      "engine": {"framework": "vllm", "version": version}},
                  drafter={"kind": "mtp", "gamma": gamma})(tmp),
              f"draftsim: error: drafter.kind: vllm {version} does not run MTP speculation on LlamaForCausalLM")
      for modules, version, gamma in ((1, "0.7.3", 2), (2, "0.11.0", 3))],
    # session 27, refusals: sglang_adaptive's deepest candidate against a drafter.gamma the scenario never wrote, from
    # slots it never wrote either (SGLang's defaults), was refused as "drafter.gamma: ... must be >= 7", as if both
    # had been given; each now says which value was not given and where it came from
    Hostile("refusals27_sglang_adaptive_default_slots_beyond_default_gamma", run(
        cluster={"engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram"}, policy={"kind": "sglang_adaptive"}),
            "draftsim: error: drafter.gamma (not given: 4, the ngram drafter's default): policy sglang_adaptive's "
            "slots (not given: sglang 0.5.23's DEFAULT_ADAPTIVE_CONFIG) reach 7 draft steps; allowed: drafter.gamma >= "
            "7, or policy.slots whose candidate_steps are at most 4"),
    Hostile("refusals27_sglang_adaptive_given_slots_beyond_given_gamma", run(
        cluster={"engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 2},
        policy={"kind": "sglang_adaptive", "slots": {1: {"candidate_steps": [1, 3]}}}),
            "draftsim: error: drafter.gamma: policy sglang_adaptive's slots (policy.slots) reach 3 draft steps; "
            "allowed: drafter.gamma >= 3, or policy.slots whose candidate_steps are at most 2"),
    # session 27, refusals: cluster.engine.prefix_caching fills cluster.kv_cache.prefix_caching; a kv_cache section
    # that refuses the filled value was named "cluster.kv_cache: ... prefix_caching ...", a field the user never
    # wrote there; the refusal now names the engine's field, as given
    Hostile("refusals27_engine_prefix_caching_with_a_shadowkv_layout", run(
        cluster={"engine": {"prefix_caching": True}, "kv_cache": {"layout": {"kind": "shadowkv"}}}),
            "draftsim: error: cluster.engine.prefix_caching: true (it sets cluster.kv_cache.prefix_caching): layout "
            "'shadowkv' keeps its values in host memory already"),
    # session 26, hunt26: traces the csv module or pandas could not take: a column name beyond the csv module's
    # 131,072-character field limit (a _csv.Error traceback), two hundred thousand columns (an error line of
    # every name; the importer held pandas 75 s and 2 GB building a column of each), a row shorter than the
    # header (the importer read it, exit 0; the plain reader refused it)
    Hostile("hunt26_trace_column_name_beyond_the_csv_field_limit",
            trace(text_file("t.csv", "arrival_s,prompt,output_tokens," + "x" * 200_000 + "\n0,10,5,1\n")),
            "/t.csv lacks column(s) 'prompt_tokens'; found 'arrival_s', 'prompt'"),
    Hostile("hunt26_trace_importer_column_name_beyond_the_csv_field_limit",
            trace(text_file("t.csv", "arrival_s,prompt_tokens,output_tokens," + "x" * 200_000 + "\n0,10,-5,1\n"),
                  time_unit="s"),
            "/t.csv, column 'output_tokens', line 2: '-5' is not an integer from 1 to 10^12 (tokens)"),
    Hostile("hunt26_trace_of_200k_columns_lacking_one",
            trace(text_file("t.csv", "arrival_s,prompt,output_tokens," + ",".join(f"c{i}" for i in range(200_000))
                            + "\n")),
            "t.csv lacks column(s) 'prompt_tokens'; found 'arrival_s', 'prompt', 'output_tokens', 'c0', 'c1', 'c2', "
            "'c3', 'c4', 'c5', 'c6', 'c7', 'c8', ... (200,003 in all)"),
    Hostile("hunt26_trace_importer_of_200k_columns_lacking_one",
            trace(text_file("t.csv", "arrival_s,prompt,output_tokens," + ",".join(f"c{i}" for i in range(200_000))
                            + "\n"), time_unit="s"),
            "of format 'draftsim'; found 'arrival_s', 'prompt', 'output_tokens', 'c0', 'c1', 'c2', 'c3', 'c4', 'c5', "
            "'c6', 'c7', 'c8', ... (200,003 in all)"),
    Hostile("hunt26_trace_importer_row_shorter_than_the_header",
            trace(text_file("t.csv", "arrival_s,prompt_tokens,output_tokens,note\n0,10,5\n1,10,5,x\n"), time_unit="s"),
            "/t.csv, line 2: 3 fields; the header has 4"),
    # a value its explicit YAML tag cannot read (PyYAML raises ValueError, KeyError or IndexError): a traceback
    Hostile("hunt26_scenario_int_tag_of_a_fraction", run(b"name: t\nseed: !!int 3.5\n"),
            "/s.yaml: !!int '3.5' at line 2 is not an integer"),
    Hostile("hunt26_scenario_bool_tag_of_maybe", run(b"name: t\nseed: 1\noutputs: {plots: !!bool maybe}\n"),
            "/s.yaml: !!bool 'maybe' at line 3 is not true or false"),
    Hostile("hunt26_set_timestamp_tag_of_month_13", run(None, "--set", "name=!!timestamp 2024-13-45"),
            "draftsim: error: --set: name: the value !!timestamp '2024-13-45' at line 1 is not a date"),
    Hostile("hunt26_sweep_float_tag_of_nothing", lambda tmp: [
        "sweep", _write(tmp, "sweep.yaml", f"name: s\nscenario: {_write(tmp, 'base.yaml', TINY)}\n"
                                           "grid: {workload.arrival.qps: [4, !!float ]}\n"),
        "--out", tmp / "store", "--executor", "serial", "--quiet"],
            "sweep.yaml: !!float '' at line 3 is not a number"),
    # compare of variants differing only in the executor where a Dask run is byte for byte one process's (a router
    # that routes ahead; load_sync_s 0) printed a table of zeros, exit 0, as workers and step_mode did before
    Hostile("hunt26_compare_vary_only_the_executor", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary",
                                                                 "simulation.executor=local-dask", "--out", tmp / "c"],
            "differ only in simulation.executor (how a run is carried out: the outputs are the same byte for byte"),
    # a key path of 3,000 parts nested the override as deep, where a scenario file nests at most 64 levels: a
    # RecursionError traceback
    Hostile("hunt26_set_key_path_of_3000_parts", run(None, "--set", "workload." + ".".join(["x"] * 3000) + "=1"),
            "draftsim: error: --set: a key path of 3,001 parts (workload.x.x...); at most 64"),
    Hostile("hunt26_compare_vary_key_path_of_3000_parts", lambda tmp: [
        "compare", _write(tmp, "s.yaml", TINY), "--vary", "workload." + ".".join(["x"] * 3000) + "=1", "--out",
        tmp / "c"], "draftsim compare: error: --vary: expected KEY=VALUE: a key path of 3,001 parts"),
    Hostile("hunt26_sweep_grid_key_path_of_3000_parts", sweep(grid={"workload." + ".".join(["x"] * 3000): [1]}),
            "draftsim sweep: error: sweep.grid: a key path of 3,001 parts (workload.x.x...); at most 64"),
    # a sweep's scenario path was not home-expanded as every path a scenario file holds: `~/a.yaml` was read as
    # <sweep's folder>/~/a.yaml ('file not found'), `~no-such-user/a.yaml` likewise
    Hostile("hunt26_sweep_scenario_home_of_no_user", lambda tmp: [
        "sweep", _write(tmp, "sweep.yaml", {"name": "s", "scenario": "~no-such-user/base.yaml"}), "--out",
        tmp / "store", "--quiet"],
            "draftsim sweep: error: sweep.scenario: ~no-such-user/base.yaml: cannot expand '~no-such-user'"),
    # session 26, fuzz26: a plan's mtp gamma that the candidates' vLLM release refuses (0.7.3: at most n_predict)
    # was screened out candidate by candidate while the entry's other gammas were ranked, silent about it (exit 0)
    Hostile("fuzz26_plan_mtp_gamma_beyond_n_predict_on_vllm_0_7_3", plan(
        models=["deepseek-v3"], hardware=[{"id": "h200"}], dtype="fp8_block",
        engine={"framework": "vllm", "version": "0.7.3"}, search={"tp": [8], "ep": [8], "replicas": [1], "drafters": [
            {"kind": "none"}, {"kind": "mtp", "gamma": [1, 2, 3]}]}),
            "draftsim plan: error: plan.search.drafters.1.gamma: gamma 2: vllm 0.7.3 drafts at most n_predict = 1 MTP "
            "token(s) a step"),
    # -- draft token trees a named engine release does not draft (fix-trees, 2026-11-29; profiles.engine_time.
    # tree_shapes: vLLM static kary trees from EAGLE heads in 0.10.1-0.20.2 only, SGLang EAGLE-2 trees within its rules) --
    Hostile("run_vllm_0_24_tree", run(cluster={"engine": {"version": "0.24.0"}},
                                      drafter={"kind": "head", "style": "autoregressive", "gamma": 3},
                                      speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 3, "budget": 16},
                                      acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]}),
            "draftsim: error: cluster.engine.version: vllm 0.24.0 has no draft token trees"),
    Hostile("run_vllm_0_15_eagle_dynamic_tree", run(cluster={"engine": {"version": "0.15.0"}},
                                                    drafter={"kind": "head", "style": "autoregressive", "gamma": 3},
                                                    speculation={"kind": "dynamic_tree", "top_k": 2, "depth": 3,
                                                                 "budget": 8},
                                                    acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]}),
            "draftsim: error: speculation.kind: vllm 0.15.0 drafts only a static tree"),
    Hostile("run_vllm_0_15_sequoia_tree", run(cluster={"engine": {"version": "0.15.0"}},
                                              drafter={"kind": "head", "style": "autoregressive", "gamma": 3},
                                              speculation={"kind": "tree", "builder": "sequoia", "depth": 4,
                                                           "budget": 16},
                                              acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]}),
            "draftsim: error: speculation.builder: vllm 0.15.0 gives every node of a tree level the same number"),
    Hostile("run_sglang_topk_1_budget", run(cluster={"engine": {"framework": "sglang", "version": "0.5.3"}},
                                            drafter={"kind": "head", "style": "autoregressive", "gamma": 3},
                                            speculation={"kind": "dynamic_tree", "top_k": 1, "depth": 4, "budget": 3},
                                            acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]}),
            "draftsim: error: speculation.budget: sglang 0.5.3 sets speculative_num_draft_tokens to "
            "speculative_num_steps + 1 = 5"),
    Hostile("plan_sglang_tree_budget_beyond_candidates",
            plan(models=["llama-3.1-8b"], engine={"framework": "sglang", "version": "0.5.3"},
                 search={**PLAN["search"], "drafters": [
                     {"kind": "none"}, {"kind": "eagle3", "gamma": [3],
                                        "speculation": {"kind": "dynamic_tree", "top_k": 2, "depth": 3, "budget": 12},
                                        "acceptance": {"kind": "ranked", "accept_probs": [0.6, 0.2]}}]}),
            "draftsim plan: error: plan.search.drafters.1.speculation.budget: sglang 0.5.3 verifies the budget - 1 best"),
    Hostile("plan_vllm_eagle3_dynamic_tree",
            plan(models=["llama-3.1-8b"], engine={"framework": "vllm", "version": "0.15.0"},
                 search={**PLAN["search"], "drafters": [
                     {"kind": "none"}, {"kind": "eagle3", "gamma": [3],
                                        "speculation": {"kind": "dynamic_tree", "top_k": 2, "depth": 3, "budget": 8},
                                        "acceptance": {"kind": "ranked", "accept_probs": [0.6, 0.2]}}]}),
            "draftsim plan: error: plan.search.drafters.1.speculation.kind: vllm 0.15.0 drafts only a static tree"),
    # -- EAGLE-3 static trees (fix-eagletree, 2026-11-29): vLLM 0.10.1-0.20.2 draft a kary speculative_token_tree from
    # an EAGLE-3 head (simulator.cost.static_tree); the shapes still refused, each refused before any work --
    Hostile("run_vllm_0_24_eagle3_kary_tree", run(cluster={"model": "llama-3.1-8b", "engine": {"version": "0.24.0"}},
                                                  drafter={"kind": "eagle3", "gamma": 3},
                                                  speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 3},
                                                  acceptance={"kind": "constant", "alpha": 0.7}),
            "draftsim: error: cluster.engine.version: vllm 0.24.0 has no draft token trees"),
    Hostile("run_eagle3_medusa_tree", run(cluster={"model": "llama-3.1-8b"}, drafter={"kind": "eagle3", "gamma": 3},
                                          speculation={"kind": "tree", "builder": "medusa", "depth": 3, "budget": 16},
                                          acceptance={"kind": "constant", "alpha": 0.7}),
            "draftsim: error: speculation.builder: EAGLE-3 drafters run the engines' chain"),
    Hostile("run_vllm_0_20_2_eagle3_sequoia_tree", run(
        cluster={"model": "llama-3.1-8b", "engine": {"version": "0.20.2"}}, drafter={"kind": "eagle3", "gamma": 3},
        speculation={"kind": "tree", "builder": "sequoia", "depth": 4, "budget": 16},
        acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]}),
            "draftsim: error: speculation.builder: vllm 0.20.2 gives every node of a tree level the same number"),
    Hostile("run_mtp_kary_tree", run(cluster={"model": "deepseek-v3", "hardware": "h200", "dtype": "fp8_block",
                                              "parallelism": {"tp": 8}},
                                     drafter={"kind": "mtp", "gamma": 2},
                                     speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 2},
                                     acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]}),
            "draftsim: error: speculation.kind: MTP drafters run the engines' chain"),
    Hostile("run_eagle3_kary_tree_load_switch", run(cluster={"model": "llama-3.1-8b"}, drafter={"kind": "eagle3", "gamma": 3},
                                                    speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 3},
                                                    acceptance={"kind": "constant", "alpha": 0.7},
                                                    policy={"kind": "load_switch", "max_batch": 2}),
            "draftsim: error: policy.kind: 'load_switch' changes draft counts per step"),
    Hostile("plan_mtp_kary_tree", plan(models=["llama-3.1-8b"], search={**PLAN["search"], "drafters": [
        {"kind": "none"}, {"kind": "mtp", "speculation": {"kind": "tree", "builder": "kary", "k": 2, "depth": 2}}]}),
            "plan.search.drafters.1.speculation.kind: MTP drafters run the engines' chain"),
    # ---- fix-hunt, session 27: outputs inside draftsim's own package folders (2026-11-29) -------------------------
    # `--out simulator/x` (or scenarios/x, models/x, ...) wrote the run's parquet files, a plan's launch scripts or a
    # sweep store among the package's modules, exit 0: only profiles/data/ was refused
    *[Hostile(f"{command}_out_in_the_package_source", lambda tmp, argv=argv: [*argv(tmp), "--out", tmp / "src" / "x"],
              "is inside draftsim's own package folder simulator/", patch=_package_source_here) for command, argv in [
        ("run", lambda tmp: [*run()(tmp)[:2], "--quiet"]),
        ("compare", lambda tmp: ["compare", _write(tmp, "s.yaml", TINY), "--vary", "seed=1", "--vary", "seed=2", "--quiet"]),
        ("plan", lambda tmp: [*plan()(tmp)[:2], "--executor", "serial", "--quiet"]),
        ("sweep", lambda tmp: [*sweep()(tmp)[:2], "--executor", "serial", "--quiet"]),
        ("reproduce", lambda tmp: ["reproduce", "tetris", "--quiet"])]],
    # the same through a link: --out link/x where link points into the package folder
    Hostile("run_out_through_a_link_into_the_package_source",
            lambda tmp: [*run()(tmp)[:2], "--out", _link_to(tmp / "link", tmp / "src") / "x", "--quiet"],
            "is inside draftsim's own package folder simulator/", patch=_package_source_here),

    # a scenario's, plan's or sweep's name that Windows cannot hold as a folder ran (exit 0), making out/<name>/:
    # 'CON' or 'nul.x' opens the device there, 'a:b' is an NTFS stream of 'a', 'run.' is the folder 'run'
    *[Hostile(f"name_{label}", lambda tmp, name=name: ["run", _write(tmp, "s.yaml", merge(TINY, {"name": name})),
                                                       "--quiet"], says)
      for label, name, says in [
          ("a_windows_device", "CON", "name: 'CON' is the Windows device name CON"),
          ("a_windows_device_lower_case_with_an_extension", "nul.run", "name: 'nul.run' is the Windows device name NUL"),
          ("a_windows_port", "com7", "is the Windows device name COM7"),
          ("with_a_colon", "llama:8b", "name: 'llama:8b' holds ':', which Windows file systems do not allow"),
          ("with_a_question_mark", "why?", "holds '?', which Windows file systems do not allow"),
          ("with_a_pipe", "a|b", "holds '|'"),
          ("ending_with_a_dot", "run.", "name: 'run.' ends with '.'")]],
    Hostile("plan_name_a_windows_device", plan(name="aux"), "plan.name: 'aux' is the Windows device name AUX"),
    Hostile("sweep_name_a_windows_device", sweep(name="LPT1"), "sweep.name: 'LPT1' is the Windows device name LPT1"),
    Hostile("sweep_name_ending_with_a_dot", sweep(name="s."), "sweep.name: 's.' ends with '.'"),

    # a word after `--` that no command takes was named with the `--` ('unrecognized arguments: -- extra'), as if
    # the marker itself were refused (models.errors._end_of_options_taken)
    Hostile("run_a_word_after_the_end_of_options", run(None, "--", "extra"),
            "draftsim run: error: unrecognized arguments: extra (see draftsim run --help)"),
    Hostile("estimate_a_word_after_the_end_of_options", estimate("--", "x"),
            "draftsim estimate: error: unrecognized arguments: x (see draftsim estimate --help)"),

    # profile's --device-id names out/profiles/<id>/ as a scenario's name does out/<name>/: 'CON' and 'gpu.' passed
    # its letters-digits rule and made that folder (exit 0)
    Hostile("profile_device_id_a_windows_device", profile("--models", "llama-68m", "--device-id", "CON"),
            "draftsim profile: error: --device-id: names the profile's folder: 'CON' is the Windows device name CON"),
    Hostile("profile_device_id_ending_with_a_dot", profile("--models", "llama-68m", "--device-id", "gpu."),
            "--device-id: names the profile's folder: 'gpu.' ends with '.'"),

    # validate --published --points: a point's dtype outside DTYPES ('fp7', 'BF16') was listed 'not expressible',
    # an empty id or one with surrounding blanks listed as it was (exit 0); an unknown kv_dtype, a framework_version
    # that is no release ('abc') or newer than the newest known, and engine_flags of a bad value failed only when
    # the point was predicted, after every other point (exit 1, points.csv written)
    Hostile("points_dtype_unknown", points([merge(STEP_POINT, {"dtype": "fp7"})]),
            "points.yaml: point s: dtype: unknown dtype 'fp7'; allowed: bf16, fp16, fp8"),
    Hostile("points_dtype_in_capitals", points([merge(STEP_POINT, {"dtype": "BF16"})]), "point s: dtype: unknown dtype"),
    Hostile("points_id_empty", points([merge(STEP_POINT, {"id": ""})]), "point #0: id: '' is empty"),
    Hostile("points_id_with_blanks_around", points([merge(STEP_POINT, {"id": " s "})]),
            "id: ' s ' has leading or trailing white space"),
    Hostile("points_id_a_windows_device", points([merge(STEP_POINT, {"id": "nul"})]),
            "id: 'nul' is the Windows device name NUL"),
    Hostile("points_kv_dtype_unknown", points([merge(STEP_POINT, {"kv_dtype": "fp7"})]),
            "point s: kv_dtype: unknown KV cache dtype 'fp7'; allowed: fp32, bf16, fp16, fp8, nvfp4"),
    Hostile("points_framework_version_not_a_release", points([merge(STEP_POINT, {"framework_version": "abc"})]),
            "point s: framework_version: 'abc' is not a release number"),
    Hostile("points_framework_version_newer_than_known", points([merge(STEP_POINT, {"framework_version": "99.0"})]),
            "point s: framework_version: sglang 99.0 is newer than the newest release known here"),
    Hostile("points_engine_flag_of_a_bad_value", points([merge(STEP_POINT, {"engine_flags": {"cuda_graphs": "sometimes"}})]),
            "point s: engine_flags.cuda_graphs: Input should be 'full', 'piecewise' or 'none'"),

    # profile --models 'llama-68m,,' or 'a,,b' was read without its empty entries (exit 0), where --tp '1,,2' is refused
    Hostile("profile_models_empty_entry", profile("--models", "llama-68m,,qwama-0.5b"),
            "draftsim profile: error: --models: 'llama-68m,,qwama-0.5b' has an empty entry"),
    Hostile("profile_models_trailing_comma", profile("--models", "llama-68m,"), "--models: 'llama-68m,' has an empty entry"),

    # a scenario or sweep file without `name:` is named after its file: 'nul.yaml' was refused as "name: 'nul' is
    # ...", a field the file does not hold; the line now says where the name came from
    Hostile("name_from_a_file_named_like_a_windows_device", lambda tmp: [
        "run", _write(tmp, "nul.yaml", {k: v for k, v in TINY.items() if k != "name"}), "--out", tmp / "o", "--quiet"],
            "draftsim: error: name (not given: the file's name, 'nul.yaml'): 'nul' is the Windows device name NUL"),
    Hostile("sweep_name_from_a_file_with_a_colon", lambda tmp: [
        "sweep", _write(tmp, "a:b.yaml", {"scenario": str(_write(tmp, "base.yaml", TINY)),
                                          "grid": {"workload.arrival.qps": [4, 8]}}), "--out", tmp / "st", "--quiet"],
            "draftsim sweep: error: sweep.name (not given: the file's name, 'a:b.yaml'): 'a:b' holds ':'"),

    # an output file (profile's --check-out) inside draftsim's own package folders was written there, exit 0
    Hostile("profile_check_out_in_the_package_source",
            lambda tmp: profile("--models", "llama-68m", "--check", "--out", tmp / "p", "--check-out",
                                tmp / "src" / "check.json")(tmp),
            "is inside draftsim's own package folder simulator/", patch=_package_source_here),

    # acceptance {kind: published} naming no registry row was found only when the replica was built: beside drafter
    # none (the section then unread, as in shipped MoE scenarios) it ran, exit 0
    Hostile("acceptance_published_entry_unknown_beside_no_drafter",
            run(acceptance={"kind": "published", "entry": "no-such-row"}),
            "draftsim: error: acceptance.entry: no published entry 'no-such-row'"),
    Hostile("acceptance_published_first_alpha_entry_unknown", run(acceptance={
        "kind": "published", "entry": "eagle3-paper-t1-sps-vicuna-13b-mt-bench-temp0", "first_alpha_entry": "zz"}),
            "acceptance.first_alpha_entry: no published entry 'zz'"),

    # session 27, sglngram: SGLang's --speculative-ngram-* settings are expressible (drafter ngram); each is refused
    # where SGLang refuses it at start, and where the deployment's engine or release has no such flag
    Hostile("sglngram27_trie_depth_on_vllm", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "vllm", "version": "0.20.0"}},
        drafter={"kind": "ngram", "gamma": 4, "max_trie_depth": 8},
        acceptance={"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}),
            "draftsim: error: drafter.max_trie_depth: is SGLang's --speculative-ngram-max-trie-depth"),
    Hostile("sglngram27_match_type_on_trtllm", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "trtllm", "version": "1.2.1"}},
        drafter={"kind": "ngram", "gamma": 4, "match_type": "PROB"}),
            "draftsim: error: drafter.match_type: is SGLang's --speculative-ngram-match-type"),
    Hostile("sglngram27_trie_depth_before_0_5_10", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.9"}},
        drafter={"kind": "ngram", "gamma": 4, "max_trie_depth": 8}),
            "draftsim: error: drafter.max_trie_depth: sglang 0.5.9 has no --speculative-ngram-max-trie-depth"),
    Hostile("sglngram27_breadth_before_ngram_existed", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.2"}},
        drafter={"kind": "ngram", "gamma": 4, "max_bfs_breadth": 4}),
            "draftsim: error: drafter.max_bfs_breadth: sglang 0.5.2 has no --speculative-ngram-max-bfs-breadth (from 0.5.3)"),
    Hostile("sglngram27_branch_length_is_0_5_9_s_flag", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "branch_length": 12}),
            "draftsim: error: drafter.branch_length: unknown field"),
    Hostile("sglngram27_trie_depth_one", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "max_trie_depth": 1}),
            "draftsim: error: drafter.max_trie_depth: Input should be greater than or equal to 2"),
    Hostile("sglngram27_min_breadth_zero", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "min_bfs_breadth": 0}),
            "draftsim: error: drafter.min_bfs_breadth: Input should be greater than or equal to 1"),
    Hostile("sglngram27_min_breadth_above_max", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "min_bfs_breadth": 6, "max_bfs_breadth": 5}),
            "draftsim: error: drafter.min_bfs_breadth: 6 is above max_bfs_breadth 5, which SGLang's Ngram::Ngram refuses"),
    Hostile("sglngram27_capacity_below_a_window", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "capacity_nodes": 18}),
            "draftsim: error: drafter.capacity_nodes: 18 holds no window of max_trie_depth 18"),
    Hostile("sglngram27_match_type_unknown", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4, "match_type": "DFS"}),
            "draftsim: error: drafter.match_type: Input should be 'BFS' or 'PROB'"),
    # a tree written with drafter ngram on SGLang ran as that tree (exit 0); its NGRAM worker drafts its own
    Hostile("sglngram27_dynamic_tree_is_not_what_ngram_drafts", run(
        cluster={"model": "qwen2.5-coder-0.5b", "engine": {"framework": "sglang", "version": "0.5.23"}},
        drafter={"kind": "ngram", "gamma": 4},
        speculation={"kind": "dynamic_tree", "builder": "eagle2", "top_k": 2, "depth": 3, "budget": 5},
        acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]}),
            "draftsim: error: speculation.kind: sglang 0.5.23's NGRAM worker drafts its own tree from its trie"),

]


def _not_dask_listener() -> int:
    """The port of a server on this machine that answers every connection as an HTTP server answers a request it
    cannot read (a daemon thread; it lives as long as the test process)."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            peer, _ = server.accept()
            with peer:
                peer.sendall(b"HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def classify(case: Hostile, tmp: Path) -> tuple[str, str]:
    """(outcome, detail) of running `case` in `tmp`."""
    argv = case.make(tmp)
    before = snapshot(tmp)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        code, _, err = cli(*argv)
    except _Hang:
        return "hangs", f"no answer in {HANG_S} s"
    except BaseException as exc:   # noqa: BLE001 — any exception out of main is a crash
        return "crashes", f"{type(exc).__name__}: {exc}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    err = errors_only(err)
    if "Traceback" in err:
        return "crashes", err
    if code == 0:
        return "silent", "exit 0"
    lines = err.splitlines()
    if code != case.code or not lines or case.says not in err:
        return "wrong", f"exit {code}: {err!r}"
    if case.code == 2:
        if len(lines) != 1 or not lines[0].startswith("draftsim") or "error:" not in lines[0]:
            return "wrong", f"not one error line: {err!r}"
        written = {k: v for k, v in snapshot(tmp).items() if before.get(k) != v}
        if written:
            return "wrong", f"wrote {sorted(written)[:5]}"
    return "clean", ""


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_is_refused_cleanly(tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    if case.patch is not None:
        case.patch(monkeypatch)
    outcome, detail = classify(case, tmp_path)
    OUTCOMES["tried"] += 1
    OUTCOMES[outcome] += 1
    assert outcome == "clean", f"{case.name}: {outcome}: {detail}"


def test_the_suite_names_each_case_once():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if OUTCOMES:
        counts = ", ".join(f"{key} {OUTCOMES[key]}" for key in ("tried", "clean", "crashes", "silent", "hangs", "wrong"))
        print(f"\nhostile inputs: {counts}")


def test_the_readme_states_this_suites_count():
    """The README's figures are this suite's (tried = clean = the number of cases): kept in step."""
    import re
    text = (REPO / "README.md").read_text()
    found = re.search(r"tried (\d+) / clean (\d+) / crashes 0 / silent 0", text)
    assert found and int(found.group(1)) == int(found.group(2)) == len(CASES), found and found.group(0)
