"""Timings of the theory hot paths against the targets of issue 3 (medians over repeated runs).

Run: ``python3 -m scenarios.benchmarks.theory_speed [--repeats N] [--out DIR]``. Measures
``optimal_acceptance`` (fast method) for n = 1, 2, 4, 8 i.i.d. drafts over a 152k-token vocabulary
(target <= 50 ms), the coupling LP for vocabulary 8 and n = 3 with and without replacement (<= 1 s),
and ``optimal_tree`` with budget 128 and depth 10 (<= 1 s). Prints one line per case; with --out also
writes ``theory_speed.csv``. Exit status 1 if a median misses its target.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from models.errors import bounded, doc_description, run_script, script_args
from simulator.results.named_files import NamedFiles, first_line
from theory.multidraft_optimal import optimal_acceptance
from theory.tree_search import optimal_tree

CSV = "theory_speed.csv"
# (a user's own file of this name in --out is never replaced: simulator.results.named_files)
OUTPUT = NamedFiles("theory_speed", "python3 -m scenarios.benchmarks.theory_speed",
                    first_line(CSV, "case,median_s,target_s,passed"))


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up (imports, caches)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--repeats", type=bounded(), default=7, help="timed runs per case (default 7)")
    parser.add_argument("--out", type=OUTPUT.flag((CSV,)), default=None,
                        help="directory for theory_speed.csv (optional)")
    args = script_args(parser, argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    rng = np.random.default_rng(0)
    big_p = rng.dirichlet(np.full(152_000, 0.05))
    big_q = rng.dirichlet(np.full(152_000, 0.05))
    small_p = rng.dirichlet(np.ones(8))
    small_q = rng.dirichlet(np.ones(8))
    accept_probs = [0.6, 0.15, 0.08, 0.05, 0.03, 0.02, 0.01]

    cases = [(f"optimal_acceptance fast, V=152000, n={n}", 0.050,
              lambda n=n: optimal_acceptance(big_p, big_q, n, method="fast")) for n in (1, 2, 4, 8)]
    cases += [(f"optimal_acceptance LP, V=8, n=3, replacement={rep}", 1.0,
               lambda rep=rep: optimal_acceptance(small_p, small_q, 3, replacement=rep, method="lp"))
              for rep in (True, False)]
    cases += [("optimal_tree budget=128 depth=10", 1.0, lambda: optimal_tree(accept_probs, 128, 10)),
              ("optimal_tree budget=128 depth=10 ranks=any", 1.0,
               lambda: optimal_tree(accept_probs, 128, 10, ranks="any"))]

    rows, ok = [], True
    print(f"{'case':<52} {'median':>10} {'target':>8}  status   (median of {args.repeats})")
    for name, target_s, fn in cases:
        seconds = median_seconds(fn, args.repeats)
        passed = seconds <= target_s
        ok &= passed
        rows.append(dict(case=name, median_s=seconds, target_s=target_s, passed=passed))
        print(f"{name:<52} {seconds * 1e3:8.2f}ms {target_s * 1e3:6.0f}ms  {'ok' if passed else 'SLOW'}")
    if args.out:
        out = args.out
        OUTPUT.write_table(out, CSV, rows)
        print(f"wrote {out / CSV}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(run_script(main))
