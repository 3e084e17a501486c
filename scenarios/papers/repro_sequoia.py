"""Sequoia (Chen et al. 2024): expected tokens per step vs tree budget, optimal trees vs fixed shapes.

Acceptance model: Sequoia's positional model with its verification (recursive rejection sampling with
drafts sampled *without replacement*): ``accept_probs[r]`` = probability that the child of rank r is the
accepted one, derived exactly (theory.trees.positional_accept_probs, "rrs_wor") from a fixed stationary
pair over 12 tokens: p ∝ rank^-1.2, q ∝ p^0.6 (a flatter drafter). Budgets count nodes incl. the root.

Checks:

- Sequoia's dynamic program returns the best tree (§3.1): DP value = brute-force optimum over every tree
  for budgets 2..8 (largest |difference|; tolerance 1e-9).
- The tree value the DP maximises (Σ over nodes of the product of accept probabilities on its path) is
  the mean number of tokens a real step emits: Monte Carlo of the real token-level rrs_wor verification
  of the DP's trees at budgets 16 and 64 (tolerance 4 standard errors).
- Scalability (§3.1, Fig. 1): k independent sequences saturate — their value never exceeds
  ``1 + Σ_{r<k} P_r / (1 - P_0)`` (each sequence is a rank-r first token then a rank-0 chain) — while the
  optimal tree grows past that bound for k = 2, 4, 6 within the budget range.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from scenarios.papers.registry import Check, Outcome, Reproduction, new_figure

SOURCE = "Chen et al. 2024, Sequoia (arXiv:2402.12374), §3.1 and Fig. 1"
VOCAB, MAX_CHILDREN, MAX_BUDGET, SEED = 12, 6, 128, 5
BRUTE_BUDGETS = range(2, 9)
MC_BUDGETS, MC_STEPS = (16, 64), 20_000
INDEPENDENT_KS = (2, 4, 6)


def fixed_pair() -> tuple[np.ndarray, np.ndarray]:
    ranks = np.arange(1, VOCAB + 1)
    p = ranks ** -1.2
    p /= p.sum()
    q = p ** 0.6
    return p, q / q.sum()


def independent_sequences_parents(k: int, budget: int) -> list[int]:
    """Parents (BFS order) of the first `budget` nodes of k rank-0 chains hanging off the root's top-k."""
    parents = [-1]
    while len(parents) < budget:
        level_start = len(parents) - k if len(parents) > 1 else 0
        for j in range(k):
            if len(parents) == budget:
                break
            parents.append(0 if level_start == 0 else level_start + j)
    return parents


def kary_parents(k: int, budget: int) -> list[int]:
    return [-1] + [(i - 1) // k for i in range(1, budget)]


def run() -> Outcome:
    from theory.tree_search import brute_force_optimal_tree, tree_table
    from theory.trees import positional_accept_probs, positional_tree, simulate_tree_verification

    p, q = fixed_pair()
    probs = positional_accept_probs(p, q, MAX_CHILDREN, "rrs_wor")
    table = tree_table(probs, MAX_BUDGET)
    budgets = np.arange(1, MAX_BUDGET + 1)
    series = {"optimal (Sequoia DP)": [float(table.value[table.max_depth, b]) for b in budgets],
              "chain": [positional_tree(kary_parents(1, b), probs).expected_tokens for b in budgets],
              "binary tree": [positional_tree(kary_parents(2, b), probs).expected_tokens for b in budgets]}
    for k in INDEPENDENT_KS:
        series[f"{k} independent sequences"] = [
            positional_tree(independent_sequences_parents(k, b), probs).expected_tokens for b in budgets]
    data = pd.DataFrame({"budget": budgets, **series})

    checks = []
    gap = max(abs(brute_force_optimal_tree(probs, b).expected_tokens - table.value[table.max_depth, b])
              for b in BRUTE_BUDGETS)
    checks.append(Check("max |DP - brute force| over budgets 2..8", "published claim", SOURCE, 0.0, gap, 1e-9))
    rng = np.random.default_rng(SEED)
    for b in MC_BUDGETS:
        tree = table.tree(b, table.max_depth)
        tokens = simulate_tree_verification(tree, p, q, "rrs_wor", MC_STEPS, rng)
        se = tokens.std(ddof=1) / np.sqrt(len(tokens))
        checks.append(Check(f"tokens/step of the optimal tree, budget {b}: Monte Carlo", "published formula",
                            SOURCE, tree.expected_tokens, float(tokens.mean()), 4 * se))
    optimal_max = series["optimal (Sequoia DP)"][-1]
    for k in INDEPENDENT_KS:
        bound = 1.0 + float(probs[:k].sum()) / (1.0 - float(probs[0]))
        checks.append(Check(f"{k} independent sequences at budget {MAX_BUDGET} <= saturation bound",
                            "published claim", SOURCE, bound, series[f"{k} independent sequences"][-1], 1e-12, "≤"))
        checks.append(Check(f"optimal tree at budget {MAX_BUDGET} exceeds the {k}-sequence bound",
                            "published claim", SOURCE, bound, optimal_max, 0.0, "≥"))

    figure, ax = new_figure()
    for name, values in series.items():
        ax.plot(budgets, values, label=name, lw=2.2 if name.startswith("optimal") else 1.2)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="tree budget (nodes incl. root)", ylabel="expected tokens per step",
           title="Sequoia: optimal trees scale, independent sequences saturate")
    ax.legend(fontsize=7)
    return Outcome(data, checks, figure)


REPRODUCTION = Reproduction(
    name="sequoia-tree-budget", title="Expected tokens per step vs tree budget (optimal vs fixed shapes)",
    citation="Chen, May, Svirschevski, Huang, Ryabinin, Jia, Chen. Sequoia: Scalable, Robust, and "
             "Hardware-aware Speculative Decoding. arXiv:2402.12374 (2024): §3.1 DP, Fig. 1",
    run=run)
