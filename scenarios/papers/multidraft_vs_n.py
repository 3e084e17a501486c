"""Multi-draft acceptance vs. number of drafts n for rrs / rrs_wor / kseq / naive and the optimum.

Run: ``python3 -m scenarios.papers.multidraft_vs_n [--out DIR]``. Uses one fixed (p, q) over 6 tokens
where the drafter is badly calibrated (it favours the tokens the target finds unlikely), so the schemes
separate. "optimum" is the best lossless verifier for i.i.d. drafts (sort-based closed form, cross-checked
against the coupling LP for every n); "optimum w/o repl." is the LP for drafts sampled without
replacement, the class rrs_wor belongs to. A Monte-Carlo column runs each real sampler as a check.
Writes ``multidraft_vs_n.csv`` and ``multidraft_vs_n.png`` into DIR (default ``out/papers``).
"""
from __future__ import annotations

import argparse

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from models.errors import doc_description, run_script, script_args
from simulator.results.named_files import NamedFiles, first_line
from theory.multidraft import SCHEMES, acceptance  # noqa: E402
from theory.multidraft_optimal import optimal_acceptance  # noqa: E402
from theory.multidraft_sampling import estimate_acceptance  # noqa: E402

P = np.array([0.35, 0.25, 0.15, 0.12, 0.08, 0.05])
Q = np.array([0.05, 0.10, 0.15, 0.20, 0.20, 0.30])
MAX_N, MC_RUNS, SEED = 6, 40_000, 3
CSV, PNG = "multidraft_vs_n.csv", "multidraft_vs_n.png"
# (a user's own file of these names in --out is never replaced: simulator.results.named_files)
OUTPUT = NamedFiles("multidraft_vs_n", "python3 -m scenarios.papers.multidraft_vs_n",
                    first_line(CSV, "n," + ",".join(SCHEMES) + ",optimum"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--out", type=OUTPUT.flag((CSV, PNG)), default="out/papers",
                        help="output directory (default out/papers)")
    args = script_args(parser, argv)
    out = args.out
    rng = np.random.default_rng(SEED)

    print("p =", P.tolist())
    print("q =", Q.tolist())
    columns = list(SCHEMES) + ["optimum", "optimum w/o repl."]
    rows, worst_lp_gap, worst_mc_z = [], 0.0, 0.0
    print(f"{'n':>2} " + " ".join(f"{c:>17}" for c in columns))
    for n in range(1, MAX_N + 1):
        row = {name: acceptance(P, Q, n, name) for name in SCHEMES}
        row["optimum"] = optimal_acceptance(P, Q, n, method="fast")
        worst_lp_gap = max(worst_lp_gap, abs(row["optimum"] - optimal_acceptance(P, Q, n, method="lp")))
        row["optimum w/o repl."] = optimal_acceptance(P, Q, n, replacement=False, method="lp")
        for name in SCHEMES:
            est, err = estimate_acceptance(P, Q, n, name, MC_RUNS, rng)
            row[f"mc {name}"] = est
            worst_mc_z = max(worst_mc_z, abs(est - row[name]) / max(err, 1e-12))
        rows.append(dict(n=n, **row))
        print(f"{n:2d} " + " ".join(f"{row[c]:17.4f}" for c in columns))
    print(f"fast optimum vs LP: max |difference| = {worst_lp_gap:.2e}")
    print(f"Monte Carlo of the real samplers ({MC_RUNS} runs each): max |z| = {worst_mc_z:.2f}")

    fig, ax = plt.subplots(figsize=(6, 4))
    ns = [r["n"] for r in rows]
    for name in columns:
        ax.plot(ns, [r[name] for r in rows], marker="o", linestyle="--" if "optimum" in name else "-", label=name)
    ax.set_xlabel("number of drafts n")
    ax.set_ylabel("acceptance (output is a draft)")
    ax.set_title("Lossless multi-draft verification on a fixed (p, q)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    OUTPUT.write_table(out, CSV, rows, {PNG: fig})
    plt.close(fig)
    print(f"wrote {out / CSV} and {out / PNG}")
    return 0 if worst_lp_gap < 1e-6 and worst_mc_z < 5.0 else 1


if __name__ == "__main__":
    raise SystemExit(run_script(main))
