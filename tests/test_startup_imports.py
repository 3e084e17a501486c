"""Start-up stays light: `draftsim estimate` and `draftsim catalog` answer without importing pandas, scipy,
the LP stack (pulp, highspy) or the scenario schema, which cost most of a cold start (issue 30: estimate
≤ 0.5 s cold).

Each command runs for real in a fresh interpreter (a subprocess), which then lists the heavy modules it
imported: a new module-level import of pandas anywhere on those paths makes this fail, naming the command.
The measured-kernel tables are read with pyarrow alone (profiles.measured.tables), so the H100 estimate
below, which prices from them, is covered too; once they are in the per-user cache
(profiles.measured.table_cache), a second estimate does not import pyarrow at all. `draftsim run` without
plots writes its records without pandas (simulator.results.columns) and draws lognormal lengths without scipy
(simulator.core.normal).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import pytest

from paths import REPO as ROOT

HEAVY = ("pandas", "scipy", "pulp", "highspy", "matplotlib", "torch", "simpy",
         # the whole scenario schema (~70 pydantic models): estimate reads its serving sections only
         # (simulator.config.serving); numpy.ma, which numpy 2's `unique` imports unless asked for positions
         "simulator.config.scenario", "simulator.config.speculation", "simulator.config.workload", "numpy.ma")

_PROBE = """
import contextlib, io, json, sys
from simulator.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(json.loads(sys.argv[1]))
loader = sys.modules.get("pydantic.plugin._loader")
print(json.dumps({"code": code, "printed": len(out.getvalue()),
                  "heavy": sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules),
                  "plugins_scanned": loader is not None and loader._plugins is not None}))
"""

COMMANDS = {
    "estimate (measured H100 tables)": ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch",
                                        "64", "--context", "4096"],
    "estimate (MoE, prefill)": ["estimate", "--model", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--batch", "4",
                                "--prefill-tokens", "512", "--json"],
    "estimate (roofline)": ["estimate", "--model", "llama-3.1-8b", "--hardware", "l40s", "--batch", "8",
                            "--source", "roofline", "--query-tokens", "5"],
    "catalog models": ["catalog", "models"],
    "catalog hardware": ["catalog", "hardware"],
    "catalog engines": ["catalog", "engines"],
    "catalog acceptance": ["catalog", "acceptance"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_estimate_and_catalog_do_not_import_heavy_modules(name):
    env = {**{k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(COMMANDS[name]), json.dumps(HEAVY)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0 and report["printed"] > 0, (name, report, done.stderr)
    assert report["heavy"] == [], f"`draftsim {' '.join(COMMANDS[name])}` imported {report['heavy']}"
    # the entry points of every installed distribution are not read for pydantic plugins (cli.main)
    assert not report["plugins_scanned"], name


def _probe(argv: list[str], modules: tuple[str, ...], cache) -> dict:
    env = {**{k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}, "PYTHONPATH": str(ROOT),
           "DRAFTSIM_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argv), json.dumps(modules)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_warm_estimate_does_not_import_pyarrow(tmp_path):
    cold = _probe(COMMANDS["estimate (measured H100 tables)"], ("pyarrow",), tmp_path)
    warm = _probe(COMMANDS["estimate (measured H100 tables)"], ("pyarrow",), tmp_path)
    assert cold["code"] == warm["code"] == 0 and cold["printed"] == warm["printed"] > 0
    assert cold["heavy"] == ["pyarrow"]    # (the probe itself: the cache was empty)
    assert warm["heavy"] == [], "a warm `draftsim estimate` imported pyarrow: the measured-table cache was not read"


@pytest.mark.parametrize("scenario", ["scenarios/benchmarks/sim_speed.yaml", "scenarios/quickstart.yaml"])
def test_a_run_without_plots_imports_no_heavy_module(tmp_path, scenario):
    """fleet_speed's 100-request run (uniform lengths) and the quickstart (lognormal lengths: drawn with
    simulator.core.normal, not scipy.special)."""
    argv = ["run", scenario, "--set", "workload.num_requests=100", "--no-plots", "--quiet", "--out", str(tmp_path / "out")]
    report = _probe(argv, ("pandas", "scipy", "pulp", "highspy", "matplotlib", "torch"), tmp_path / "cache")
    assert report["code"] == 0
    assert report["heavy"] == [], f"`draftsim run {scenario}` without plots imported {report['heavy']}"
    assert {"requests.parquet", "steps.parquet", "summary.json"} <= {p.name for p in (tmp_path / "out").iterdir()}
