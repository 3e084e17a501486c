"""Regenerate Leviathan et al. (2023), Table 1: expected speedup (c = 0) and ops factor (c_hat = 0).

Run: ``python3 -m scenarios.papers.leviathan_table1 [--out DIR]``. Prints the table next to the
published values, and writes ``leviathan_table1.csv`` and ``leviathan_table1.png`` (speedup vs gamma
for the table's alphas, at c = 0 and c = 0.05) into DIR (default ``out/papers``).
"""
from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from models.errors import doc_description, run_script, script_args
from simulator.results.named_files import NamedFiles, first_line
from theory.chain import ops_factor, optimal_gamma, speedup  # noqa: E402

# (alpha, gamma, published speed, published ops) from Leviathan et al., Table 1 (c = 0, c_hat = 0)
PUBLISHED = [(0.6, 2, 1.96, 1.53), (0.8, 5, 3.69, 1.63), (0.9, 10, 6.86, 1.60)]
CSV, PNG = "leviathan_table1.csv", "leviathan_table1.png"
# (a user's own file of these names in --out is never replaced: simulator.results.named_files)
OUTPUT = NamedFiles("leviathan_table1", "python3 -m scenarios.papers.leviathan_table1",
                    first_line(CSV, "alpha,gamma,speedup,paper_speedup,ops_factor,paper_ops_factor,match"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--out", type=OUTPUT.flag((CSV, PNG)), default="out/papers",
                        help="output directory (default out/papers)")
    args = script_args(parser, argv)
    out = args.out

    rows = []
    print(f"{'alpha':>5} {'gamma':>5} {'speed':>7} {'paper':>6} {'ops':>6} {'paper':>6}  match")
    for alpha, gamma, paper_speed, paper_ops in PUBLISHED:
        s, o = speedup(alpha, gamma, 0.0), ops_factor(alpha, gamma, 0.0)
        ok = round(s, 2) == paper_speed and round(o, 2) == paper_ops
        rows.append(dict(alpha=alpha, gamma=gamma, speedup=s, paper_speedup=paper_speed, ops_factor=o,
                         paper_ops_factor=paper_ops, match=ok))
        print(f"{alpha:5.1f} {gamma:5d} {s:7.3f} {paper_speed:6.2f} {o:6.3f} {paper_ops:6.2f}  {'yes' if ok else 'NO'}")
    print("\noptimal gamma when a draft forward costs c of a target forward:")
    for alpha, *_ in PUBLISHED:
        picks = ", ".join(f"c={c}: gamma={g} ({s:.2f}x)" for c in (0.01, 0.05, 0.2)
                          for g, s in [optimal_gamma(alpha, c)])
        print(f"  alpha={alpha}: {picks}")

    fig, ax = plt.subplots(figsize=(6, 4))
    gammas = list(range(0, 21))
    for alpha, *_ in PUBLISHED:
        for c, style in ((0.0, "-"), (0.05, "--")):
            ax.plot(gammas, [speedup(alpha, g, c) for g in gammas], style, label=f"alpha={alpha}, c={c}")
    ax.set_xlabel("gamma (draft tokens per step)")
    ax.set_ylabel("expected walltime speedup")
    ax.set_title("Chain speculative decoding (Leviathan et al. Thm 3.8)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    OUTPUT.write_table(out, CSV, rows, {PNG: fig})
    plt.close(fig)
    print(f"\nwrote {out / CSV} and {out / PNG}")
    return 0 if all(r["match"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(run_script(main))
