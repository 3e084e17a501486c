"""scenarios.benchmarks.predictor_speed reports the predictor's cold start against its budget (load +
precompute <= 2 s): it printed "(budget 2 s)" and exited 0 whatever the load took. A load over the budget is a
failed check now: a line on stderr, exit 1. The cold start is the one figure set here (a fresh interpreter's
timing cannot be made slow on demand); the rest of the benchmark runs as it is."""
from __future__ import annotations

from scenarios.benchmarks import predictor_speed


def test_a_cold_start_over_the_budget_fails_the_benchmark(monkeypatch, capsys):
    budget = predictor_speed.COLD_START_BUDGET_S
    for load_s, code in ((budget * 1.25, 1), (budget * 0.25, 0)):
        monkeypatch.setattr(predictor_speed, "cold_start", lambda profile, load_s=load_s: {"import_s": 0.5,
                                                                                           "load_s": load_s})
        assert predictor_speed.main(["--calls", "50"]) == code
        captured = capsys.readouterr()
        assert ("OVER" in captured.out) == (code == 1)
        assert ("over its budget" in captured.err) == (code == 1), captured.err
