"""Expected tokens per step vs. tree budget for chain, k-ary, EAGLE-2-style and optimal (Sequoia) trees.

Run: ``python3 -m scenarios.papers.tree_budget [--out DIR]``. The acceptance model is derived exactly
from a fixed stationary (p, q) pair: p is Zipf(1.1) over 1000 tokens, q a perturbed, flattened copy
(seeded); the children of a node are the drafter's top-ranked tokens and the verifier samples from p
(``top_k_match``), so ``accept_probs[k] = p(k-th token of q)``. Budgets count nodes including the root.
Writes ``tree_budget.csv`` and ``tree_budget.png`` into DIR (default ``out/papers``).
"""
from __future__ import annotations

import argparse
import csv

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from models.errors import doc_description, run_script, script_args
from simulator.results.named_files import NamedFiles, first_line
from theory.tree_builders import chain_tree, eagle2_tree, positional_child_probs  # noqa: E402
from theory.tree_search import tree_table  # noqa: E402
from theory.trees import positional_accept_probs, positional_tree  # noqa: E402

VOCAB, MAX_BUDGET, MAX_CHILDREN, SEED = 1000, 128, 16, 7
CSV, PNG = "tree_budget.csv", "tree_budget.png"
# (a user's own file of these names in --out is never replaced: simulator.results.named_files)
OUTPUT = NamedFiles("tree_budget", "python3 -m scenarios.papers.tree_budget",
                    first_line(CSV, "budget,chain,binary,4-ary"))


def fixed_pair() -> tuple[np.ndarray, np.ndarray]:
    ranks = np.arange(1, VOCAB + 1)
    p = ranks**-1.1
    p /= p.sum()
    rng = np.random.default_rng(SEED)
    logits = 0.8 * np.log(p) + rng.normal(0.0, 0.6, VOCAB)  # flatter and noisier than the target
    q = np.exp(logits - logits.max())
    return p, q / q.sum()


def complete_kary(k: int, budget: int, accept_probs) -> object:
    """The first ``budget`` nodes of the infinite k-ary tree in breadth-first order."""
    return positional_tree([-1] + [(i - 1) // k for i in range(1, budget)], accept_probs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--out", type=OUTPUT.flag((CSV, PNG)), default="out/papers",
                        help="output directory (default out/papers)")
    args = script_args(parser, argv)
    out = args.out

    p, q = fixed_pair()
    probs = positional_accept_probs(p, q, MAX_CHILDREN, "top_k_match")
    print("accept_probs (top-k match):", np.round(probs[:8], 4), "... sum", round(float(probs.sum()), 4))
    # top_k_match may keep any subset of the drafter's candidates, so the DP may too (ranks="any")
    unlimited = tree_table(probs, MAX_BUDGET, ranks="any")
    depth6 = tree_table(probs, MAX_BUDGET, 6, ranks="any")
    budgets = list(range(1, MAX_BUDGET + 1))
    series = {
        "chain": [chain_tree(b - 1, probs).expected_tokens for b in budgets],
        "binary": [complete_kary(2, b, probs).expected_tokens for b in budgets],
        "4-ary": [complete_kary(4, b, probs).expected_tokens for b in budgets],
        "eagle2 (top_k=8, depth 6)": [eagle2_tree(positional_child_probs(probs), 8, 6, b).expected_tokens
                                      for b in budgets],
        "optimal, depth<=6": [float(depth6.value[6, b]) for b in budgets],
        "optimal": [float(unlimited.value[unlimited.max_depth, b]) for b in budgets],
    }
    header = f"{'budget':>6} " + " ".join(f"{name[:17]:>17}" for name in series)
    print(header)
    for b in (2, 4, 8, 16, 32, 64, 128):
        print(f"{b:6d} " + " ".join(f"{series[name][b - 1]:17.3f}" for name in series))
    best = unlimited.tree(MAX_BUDGET, unlimited.max_depth)
    print(f"optimal tree at budget {MAX_BUDGET}: depth {best.depth}, level widths {best.level_widths().tolist()}")

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name, values in series.items():
        ax.plot(budgets, values, label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tree budget (nodes incl. root)")
    ax.set_ylabel("expected tokens per step")
    ax.set_title("Tree shapes under the positional acceptance model")
    ax.legend(fontsize=7)
    fig.tight_layout()
    with OUTPUT.staged(out, (CSV, PNG)) as staged:   # both or neither
        with open(staged / CSV, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["budget"] + list(series))
            for i, b in enumerate(budgets):
                writer.writerow([b] + [f"{series[name][i]:.6f}" for name in series])
        fig.savefig(staged / PNG, dpi=120)
    plt.close(fig)
    print(f"wrote {out / CSV} and {out / PNG}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
