"""EAGLE-2 (Li et al., EMNLP 2024): context-aware dynamic draft trees, on the measured Qwen2.5-Coder pair.

EAGLE-2's premise is that the draft's confidence approximates acceptance, so the tree can be re-shaped per
context. The measured trace (profiles/data/acceptance/qwen2.5-coder-1.5b-0.5b.parquet) gives both: the
draft's top-1 probability and the rank of the target's token at every position. Positions binned by
confidence (edges 0.5, 0.8, 0.95) are the context classes of theory.context_trees; a static tree is shaped
for their mean, a dynamic one per realisation of the node classes (EAGLE-2's beam and rerank).

Checks:
- published claim (EAGLE-2 §3, confidence ≈ acceptance): on the measured trace the share of positions
  whose target token is the draft's argmax rises with every confidence bin (smallest step ≥ 0);
- model vs Monte Carlo: a static tree's expected tokens (closed form under the mean) against an explicit
  walk with per-node classes drawn, tolerance 4 standard errors;
- published claim (dynamic trees accept more than static ones at the same node budget): per-context
  tokens per step − static, at budgets 16, 32 and 48 (smallest margin ≥ 0);
- model vs DES: the DES's tokens per step with `per_context: true` equal its library's mean (1 %).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import simulator
from scenarios.papers.registry import Check, Outcome, Reproduction, new_figure

SOURCE = "Li et al. 2024 (EMNLP), EAGLE-2: Faster Inference of Language Models with Dynamic Draft Trees (arXiv:2406.16858)"
TRACE = Path(__file__).resolve().parents[2] / "profiles" / "data" / "acceptance" / "qwen2.5-coder-1.5b-0.5b.parquet"
SCENARIO = Path(__file__).resolve().parents[1] / "speculation" / "context_dynamic_tree.yaml"
EDGES, RANKS = [0.5, 0.8, 0.95], 6
SHAPES = ((4, 5, 16), (4, 6, 32), (8, 6, 48))  # (top_k, depth, budget)
SEED = 37


def run() -> Outcome:
    from profiles.acceptance.trace import confidence_classes, load_trace
    from theory.context_trees import mean_accept_probs, sample_dynamic_trees, simulate_context_walk
    from theory.tree_builders import eagle2_tree, positional_child_probs

    weights, rows = confidence_classes(load_trace(TRACE), "draft", EDGES, RANKS)
    top1 = [r[0] for r in rows]
    checks = [Check("smallest rise of P(target = draft argmax) between confidence bins", "published claim",
                    SOURCE + ", §3", 0.0, float(np.min(np.diff(top1))), 0.0, "≥")]
    rng = np.random.default_rng(SEED)
    data_rows = []
    for top_k, depth, budget in SHAPES:
        static = eagle2_tree(positional_child_probs(mean_accept_probs(weights, rows)), top_k, depth, budget)
        lib = sample_dynamic_trees(weights, rows, lambda cp: eagle2_tree(cp, top_k, depth, budget), 512, rng)
        dyn = np.array([t.expected_tokens for t in lib])
        data_rows.append({"top_k": top_k, "depth": depth, "budget": budget, "static_tokens": static.expected_tokens,
                          "dynamic_tokens": float(dyn.mean()), "dynamic_se": float(dyn.std() / np.sqrt(len(dyn)))})
        if budget == 16:
            walk = simulate_context_walk(static, weights, rows, 20_000, rng)
            checks.append(Check("static 16-node tree: tokens/step closed form vs walk", "model vs Monte Carlo",
                                SOURCE, static.expected_tokens, float(walk.mean()), 4 * float(walk.std()) / np.sqrt(len(walk))))
    data = pd.DataFrame(data_rows)
    checks.append(Check("smallest dynamic − static tokens/step over budgets 16/32/48", "published claim", SOURCE,
                        0.0, float((data.dynamic_tokens - data.static_tokens).min()), 0.0, "≥"))
    result = simulator.run(SCENARIO, ["outputs.plots=false", "workload.num_requests=200"])
    st = result.steps[result.steps.decode_seqs > 0]
    from simulator.config.scenario import parse_scenario, read_scenario_dict
    from simulator.speculation.context_acceptance import LIBRARY_TREES, class_rows
    sc = parse_scenario(read_scenario_dict(SCENARIO))  # the DES's own (rounded) classes and seed
    lib = sample_dynamic_trees(*class_rows(sc.acceptance), lambda cp: eagle2_tree(cp, sc.speculation.top_k, sc.speculation.depth,
                                                                     sc.speculation.budget),
                               LIBRARY_TREES, np.random.default_rng(sc.seed))
    checks.append(Check("DES tokens/step (per_context) vs its library's mean", "model vs DES", SOURCE,
                        float(np.mean([t.expected_tokens for t in lib])),
                        float(st.accepted_tokens.sum() / st.decode_seqs.sum() + 1), 0.01 * float(np.mean([t.expected_tokens for t in lib]))))
    figure, (ax1, ax2) = new_figure(9.0, 3.8, ncols=2)
    ax1.bar([f"<{EDGES[0]}"] + [f"{a}–{b}" for a, b in zip(EDGES, EDGES[1:])] + [f"≥{EDGES[-1]}"], top1)
    ax1.set(xlabel="draft top-1 probability", ylabel="P(target token = draft argmax)", title="measured Qwen2.5-Coder pair")
    ax2.plot(data.budget, data.static_tokens, "o-", label="static tree (mean)")
    ax2.errorbar(data.budget, data.dynamic_tokens, yerr=2 * data.dynamic_se, fmt="s-", label="per-context (EAGLE-2)")
    ax2.set(xlabel="node budget", ylabel="tokens per step", title="dynamic vs static trees")
    ax2.legend(fontsize=7)
    return Outcome(data, checks, figure)


REPRODUCTION = Reproduction(
    name="eagle2-dynamic-tree", title="Context-aware dynamic draft trees on a measured pair (EAGLE-2)",
    citation="Li et al. EAGLE-2: Faster Inference of Language Models with Dynamic Draft Trees. EMNLP 2024 "
             "(arXiv:2406.16858)",
    run=run)
