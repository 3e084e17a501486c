"""Verification shapes: chain, static trees, EAGLE-2 dynamic trees and multi-draft, built from the
scenario with theory/'s builders, together with the acceptance model that samples τ for them.

What a step looks like for each shape (priced by StepCostModel, sampled by the acceptance model):
- chain: γ draft passes of 1 token per request; verify γ+1 causal query tokens per request.
- tree (kary / medusa / sequoia) and dynamic_tree: one draft pass per level over the level's expanded
  nodes (`Tree.expanded_level_widths`); verify `Tree.size` query tokens per request under the tree mask.
  Parallel heads (Medusa) make one pass for the whole tree.
- multidraft: n sequences of length γ from the same prefix = a tree whose root has n children, each the
  head of a chain; drafting samples the n first tokens from one pass, then n tokens per pass.

Acceptance inputs:
- `ranked` (Sequoia's positional model): accept_probs[k] for the child of rank k, at every node.
- `pair` (p, q): chains accept with β = Σ min(p, q); trees use theory.trees.positional_accept_probs with
  rrs_wor verification; multi-draft accepts at the branching position with
  theory.multidraft.acceptance(p, q, n, scheme) (`optimal`/`optimal_wor`: the best lossless verifier,
  theory.multidraft_optimal.optimal_acceptance with and without replacement) and below it with β.
  Approximation for multi-draft: below the branching position one surviving sequence is assumed (exact
  for rrs_wor and optimal_wor, whose drafts are distinct; for i.i.d. schemes duplicate first tokens would
  leave several survivors — more acceptance).
  The n first-level children split the acceptance equally (symmetric under i.i.d. drafts).
- `trace` (greedy): trees are walked on the measured drafter ranks (simulator.speculation.tree_acceptance). Their
  shapes (sequoia/medusa/dynamic) are built from the trace's empirical P(rank = k). A dynamic tree is then
  the EAGLE-2 tree of those average rank probabilities: per-context re-shaping from the draft's scores
  at every step is not modelled (the trace has the draft's scores only along the target's own path).
- `contexts` (per-node context classes, simulator.speculation.context_acceptance): every shape accepts as
  `ranked` with the classes' mean, except a `dynamic_tree` with `per_context`, re-shaped per step.
- `published` (a registry row): chains, and SGLang's EAGLE tree (`dynamic_tree`, builder eagle2) whose accepted
  path follows the row's chain at the tree's depth (simulator.speculation.published_tree: the rule and why
  a tree's published tokens per step suffice for its speed).
- `constant` / `positional` give no per-rank acceptance, so trees and multi-draft reject them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from simulator.speculation.acceptance import ChainAcceptance
from simulator.errors import ScenarioError
from simulator.speculation.trace_acceptance import load_trace_acceptance, load_trace_sampled_acceptance
from simulator.speculation.tree_acceptance import TreeAcceptance, trace_rank_probs, trace_tree_walks

if TYPE_CHECKING:   # (theory.trees pulls in scipy: imported where a tree is built)
    from theory.trees import Tree

MAX_RANKS = 8       # candidates per node considered by trace rank probabilities
MAX_PAIR_RANKS = 6  # ... and by pair rank probabilities (the exact rrs_wor sum grows as vocab^ranks)
MAX_WOR_TUPLES = 20_000  # draft tuples of the optimal_wor LP (12 tokens, n = 4: 11,880 tuples, ~1 s)


@dataclass(frozen=True)
class SpeculationBuild:
    acceptance: object              # an AcceptanceModel (simulator.speculation.acceptance)
    tree: Tree | None               # None: chain
    verify_q: int                   # query tokens per request in the verify pass
    widths: tuple[int, ...]         # draft tokens per request in each draft pass
    tree_attention: bool
    full_accept_prob: float         # P(τ = depth): the whole draft accepted


def pair_distributions(acc) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) of a `pair` acceptance section (explicit or the synthetic Zipf family)."""
    if acc.p is not None:
        p, q = np.asarray(acc.p, dtype=np.float64), np.asarray(acc.q, dtype=np.float64)
        return p / p.sum(), q / q.sum()
    p = np.arange(1, acc.vocab + 1, dtype=np.float64) ** -acc.zipf
    p /= p.sum()
    q = p ** acc.q_power
    return p, q / q.sum()


def rank_probs(acc, base_dir: Path, shape: str = "tree") -> np.ndarray:
    """Per-rank child acceptance (Sequoia's positional model) from an `acceptance` section (`shape`: the
    speculation kind that needs it, for the error message)."""
    if acc.kind == "ranked":
        return np.asarray(acc.accept_probs, dtype=np.float64)
    if acc.kind == "contexts":  # every shape that does not look at the classes sees the mean
        from simulator.speculation.context_acceptance import class_rows
        weights, rows = class_rows(acc)
        return weights @ rows
    if acc.kind == "pair":
        from theory.trees import positional_accept_probs
        p, q = pair_distributions(acc)
        ranks = min(MAX_PAIR_RANKS, len(p))
        check_rrs_wor_work(q, ranks, "acceptance.vocab" if acc.p is None else "acceptance.q",
                           f"{shape} verification on a pair computes the exact rrs_wor acceptance of {ranks} "
                           "ranks per node", "a smaller acceptance.vocab" if acc.p is None else "fewer tokens in p and q")
        try:
            return positional_accept_probs(p, q, ranks, "rrs_wor")
        except ValueError as exc:
            raise ScenarioError("acceptance", str(exc)) from None
    if acc.kind == "trace":
        if acc.mode != "greedy" or acc.drafter == "ngram":
            raise ScenarioError("acceptance.mode", "trees and multi-draft on a trace need mode 'greedy' and a "
                                "model drafter ('draft' or 'skip'): the walk follows the drafter's ranks")
        return trace_rank_probs(acc.trace, acc.drafter, base_dir, MAX_RANKS)
    raise ScenarioError("acceptance.kind", rank_acceptance_error(shape, acc.kind))


# the speculation kinds verified as a tree (build_tree): they need an acceptance with per-rank figures
TREE_SHAPES = ("tree", "dynamic_tree", "multidraft")
RANKED_ACCEPTANCE = ("ranked", "contexts", "pair", "trace")   # the acceptance kinds rank_probs reads per rank


def rank_acceptance_error(shape: str, kind: str) -> str | None:
    """Why a `shape` speculation (one of TREE_SHAPES) cannot be verified under an acceptance of `kind`, or
    None (rank_probs' rule; a plan checks its drafters with it before any work)."""
    if kind in RANKED_ACCEPTANCE:
        return None
    return f"{shape} verification needs per-rank acceptance: 'ranked', 'pair' or 'trace' (got {kind!r})"


def check_rrs_wor_work(q: np.ndarray, rounds: int, field: str, what: str, instead: str) -> None:
    """ScenarioError naming `field` when the exact rrs_wor acceptance of `rounds` drafts from q exceeds the
    work theory.multidraft allows (it said 'use theory.multidraft_sampling.estimate_acceptance', a Python
    function no scenario can name, under the bare section name)."""
    from theory.multidraft import RRS_WOR_MAX_WORK, rrs_wor_work
    work = rrs_wor_work(q, rounds)
    if work > RRS_WOR_MAX_WORK:
        raise ScenarioError(field, f"{what}, a sum over the ordered draft prefixes of {int(np.count_nonzero(q))} "
                                   f"draftable tokens: ~{work:.2g} operations, at most {RRS_WOR_MAX_WORK:.2g} "
                                   f"are allowed (use {instead})")


def dynamic_tree_builder(sp):
    """child_probs -> Tree for a `dynamic_tree` section: EAGLE-2's expand-and-rerank, or OPT-Tree/DySpec's
    exact top-N by path product (theory.tree_builders)."""
    from theory import tree_builders as tb
    if sp.builder == "top_n":
        return lambda child_probs: tb.top_n_tree(child_probs, sp.budget, sp.depth)
    return lambda child_probs: tb.eagle2_tree(child_probs, sp.top_k, sp.depth, sp.budget)


def build_tree(sp, acc, gamma: int, base_dir: Path) -> Tree:
    """The tree of a `speculation` section (tree, dynamic_tree or multidraft) under an `acceptance` one."""
    from theory import tree_builders as tb
    from theory.tree_search import optimal_tree

    # multi-draft on a (p, q) pair needs no per-rank probabilities (its levels come from the verifier)
    pair_multidraft = sp.kind == "multidraft" and acc.kind == "pair"
    probs = None if pair_multidraft else rank_probs(acc, base_dir, sp.kind)
    try:
        if sp.kind == "multidraft":
            return _multidraft_tree(sp, acc, probs, gamma)
        if sp.kind == "dynamic_tree":
            return dynamic_tree_builder(sp)(tb.positional_child_probs(probs))
        if sp.builder == "kary":
            return tb.kary_tree(sp.k, sp.depth, probs)
        if sp.builder == "medusa":
            return tb.medusa_tree([probs] * sp.depth, sp.budget)
        return optimal_tree(probs, sp.budget, sp.depth)
    except ScenarioError:   # (already names its field)
        raise
    except ValueError as exc:
        raise ScenarioError("speculation", str(exc)) from None


def _multidraft_tree(sp, acc, probs: np.ndarray, gamma: int) -> Tree:
    if gamma < 1:
        raise ScenarioError("drafter.gamma", "multidraft needs sequences of length >= 1")
    n = sp.n
    parents, ranks = [-1], [0]
    for r in range(n):
        parents.append(0), ranks.append(r)
        for _ in range(gamma - 1):
            parents.append(len(parents) - 1), ranks.append(0)
    if acc.kind == "pair":
        from theory.multidraft import single_draft_acceptance
        p, q = pair_distributions(acc)
        first, below = multidraft_first_acceptance(p, q, n, sp.scheme), single_draft_acceptance(p, q)
        first_level = [first / n] * n
    else:  # ranked or trace: the n first tokens are the drafter's top-n candidates
        first_level = [float(probs[r]) if r < len(probs) else 0.0 for r in range(n)]
        below = float(probs[0])
    accept = [1.0] + [first_level[ranks[i]] if parents[i] == 0 else below for i in range(1, len(parents))]
    from theory.trees import Tree
    return Tree(tuple(parents), tuple(ranks), tuple(accept))


def multidraft_first_acceptance(p: np.ndarray, q: np.ndarray, n: int, scheme: str) -> float:
    """P(the verifier of `scheme` outputs one of the n drafted first tokens) for the pair (p, q)."""
    if scheme in ("optimal", "optimal_wor"):
        from theory.multidraft_optimal import optimal_acceptance
        support = int(np.count_nonzero(q))
        if scheme == "optimal_wor" and math.perm(support, min(n, support)) > MAX_WOR_TUPLES:
            raise ScenarioError("speculation.scheme", f"optimal_wor solves a coupling LP over the "
                                f"{math.perm(support, min(n, support)):,} ordered draft tuples of n={n} "
                                f"from {support} tokens; at most {MAX_WOR_TUPLES:,} are allowed (use "
                                f"'optimal' for i.i.d. drafts or a smaller acceptance.vocab)")
        try:
            return optimal_acceptance(p, q, n, replacement=scheme == "optimal")
        except ValueError as exc:
            raise ScenarioError("speculation.scheme", str(exc)) from None
    if scheme == "rrs_wor":
        check_rrs_wor_work(q, n, "speculation.n", f"multidraft with scheme rrs_wor computes the exact "
                           f"acceptance of n={n} drafts", "a smaller n or acceptance.vocab, or scheme 'rrs'")
    from theory.multidraft import acceptance
    return acceptance(p, q, n, scheme)


def _trace_chain(acc, gamma: int, seed: int, base_dir: Path):
    if acc.mode == "sample":
        return load_trace_sampled_acceptance(acc.trace, acc.drafter, acc.temperature, gamma, seed, base_dir)
    return load_trace_acceptance(acc.trace, acc.drafter, gamma, seed, base_dir)


def _pair_chain(acc, gamma: int, seed: int, base_dir: Path):
    from theory.multidraft import single_draft_acceptance
    return ChainAcceptance.from_alphas([single_draft_acceptance(*pair_distributions(acc))], gamma, seed)


# acceptance.kind -> the chain acceptance model of that section for drafts of `gamma` tokens
# (a new kind: its config class in simulator.config, its model, one line here and in rank_probs for trees)
CHAIN_ACCEPTANCE = {
    "constant": lambda acc, gamma, seed, base_dir: ChainAcceptance.from_alphas([acc.alpha], gamma, seed),
    "positional": lambda acc, gamma, seed, base_dir: ChainAcceptance.from_alphas(list(acc.alphas), gamma, seed),
    "ranked": lambda acc, gamma, seed, base_dir: ChainAcceptance.from_alphas([acc.accept_probs[0]], gamma, seed),
    "pair": _pair_chain,
    "trace": _trace_chain,
    "contexts": lambda acc, gamma, seed, base_dir: ChainAcceptance.from_alphas(
        [float(rank_probs(acc, base_dir)[0])], gamma, seed),
    "drifting": lambda acc, gamma, seed, base_dir: _drifting_chain(acc, gamma, seed),
    "step_level": lambda acc, gamma, seed, base_dir: _step_level(acc, gamma, seed),
    "sessions": lambda acc, gamma, seed, base_dir: _sessions_chain(acc, gamma, seed, base_dir),
    "published": lambda acc, gamma, seed, base_dir: _published_chain(acc, gamma, seed),
}


def _published_chain(acc, gamma: int, seed: int):
    """The chain of a registry row (simulator.speculation.published: selection and conversion rule)."""
    from simulator.speculation.published import (RegistryError, decayed_alphas, find_entry, per_position_alphas,
                                                 select)
    try:
        if acc.entry is not None:
            entry = find_entry(acc.entry)
        else:
            entry = select(depth=gamma, method=acc.method, target=acc.target, draft=acc.draft, dataset=acc.dataset,
                           temperature=acc.temperature)
        if acc.first_alpha_entry is not None:
            alphas = decayed_alphas(find_entry(acc.first_alpha_entry), entry)
        else:
            alphas = per_position_alphas(entry, acc.depth)
    except RegistryError as exc:   # (a malformed registry file names its own field: reported under acceptance)
        raise ScenarioError(exc.field if exc.field.startswith("acceptance") else "acceptance",
                            exc.message if exc.field.startswith("acceptance") else str(exc)) from None
    return ChainAcceptance.from_alphas(list(alphas), gamma, seed)


def _sessions_chain(acc, gamma: int, seed: int, base_dir: Path):
    from simulator.speculation.suffix.acceptance import sessions_chain
    return sessions_chain(acc, gamma, seed, base_dir)


def _step_level(acc, gamma: int, seed: int):
    from simulator.speculation.step_level import StepLevelAcceptance
    return StepLevelAcceptance(gamma, acc.accept, seed)


def _drifting_chain(acc, gamma: int, seed: int):
    from simulator.speculation.drifting_acceptance import drifting_chain
    return drifting_chain(acc, gamma, seed)


def chain_acceptance(acc, gamma: int, seed: int, base_dir: Path):
    """The chain acceptance model of an `acceptance` section for drafts of `gamma` tokens."""
    return CHAIN_ACCEPTANCE[acc.kind](acc, gamma, seed, base_dir)


def build_speculation(sp, acc, gamma: int, seed: int, base_dir: Path, parallel_passes: bool,
                      tokens_per_pass: int = 1, per_position_tree: bool = False) -> SpeculationBuild:
    """Shape + acceptance of a `speculation` section under an `acceptance` one; `parallel_passes`: the
    drafter makes one pass per step (parallel heads); `tokens_per_pass`: draft tokens per request one
    pass proposes (a semi-autoregressive head: a chain of γ takes ceil(γ/k) passes); `per_position_tree`: a
    kary tree may take a chain's per-position acceptance (an EAGLE-3 head in vLLM's static tree:
    simulator.speculation.spine_tree, its rule and its lower bound)."""
    if sp.kind == "chain":
        model = chain_acceptance(acc, gamma, seed, base_dir)
        widths = _chain_widths(gamma, parallel_passes, tokens_per_pass)
        return SpeculationBuild(model, None, gamma + 1, widths, False, model.full_accept_probability())
    if sp.kind == "retrieval_merge":
        return _retrieval_merge(sp, acc, gamma, seed, base_dir, parallel_passes, tokens_per_pass)
    if sp.kind == "dynamic_tree" and sp.per_context:
        return _per_context_tree(sp, acc, gamma, seed, parallel_passes)
    if sp.kind == "dynamic_tree" and acc.kind == "published":  # SGLang's tree from a row's tokens per step
        from simulator.speculation.published_tree import published_tree
        return published_tree(sp, acc, seed, parallel_passes)
    from simulator.speculation.spine_tree import PER_POSITION_ACCEPTANCE, position_alphas, spine_kary_tree
    if per_position_tree and sp.kind == "tree" and sp.builder == "kary" and acc.kind in PER_POSITION_ACCEPTANCE:
        tree = spine_kary_tree(sp.k, sp.depth, position_alphas(acc, sp.depth))
    else:
        tree = build_tree(sp, acc, gamma, base_dir)
    if parallel_passes and tree.depth > gamma:
        raise ScenarioError("speculation.depth", f"the tree is {tree.depth} deep but the parallel heads "
                            f"predict only drafter.gamma={gamma} positions")
    if acc.kind == "trace":
        model = trace_tree_walks(acc.trace, acc.drafter, tree, seed, base_dir)
    else:
        model = TreeAcceptance.from_tree(tree, seed)
    widths = (1,) if parallel_passes else tuple(int(w) for w in tree.expanded_level_widths())
    # A tree that is a single path is verified with the causal mask, exactly as the chain it is.
    branching = tree.size - 1 != tree.depth
    return SpeculationBuild(model, tree, tree.size, widths, branching, model.full_accept_probability())



def _retrieval_merge(sp, acc, gamma: int, seed: int, base_dir: Path, parallel_passes: bool,
                     tokens_per_pass: int) -> SpeculationBuild:
    """RASD: the drafter's chain plus a retrieved branch of `sp.tokens` at the root, verified as one tree of
    1 + γ + tokens nodes (simulator.speculation.retrieval_acceptance); drafting is the chain's."""
    from simulator.speculation.retrieval_acceptance import retrieval_merged
    chain = chain_acceptance(acc, gamma, seed, base_dir)
    if not isinstance(chain, ChainAcceptance):
        raise ScenarioError("acceptance.kind", f"retrieval_merge needs a chain acceptance of known survival "
                                               f"(constant, positional, ranked, pair, contexts), got {acc.kind!r}")
    model = retrieval_merged(chain, sp.tokens, sp.alpha, sp.hit_rate, seed)
    return SpeculationBuild(model, None, gamma + 1 + sp.tokens, _chain_widths(gamma, parallel_passes, tokens_per_pass),
                            True, model.full_accept_probability())


def _chain_widths(gamma: int, parallel_passes: bool, tokens_per_pass: int) -> tuple[int, ...]:
    """Draft tokens per request of each draft pass of a γ-token chain."""
    k = tokens_per_pass
    return (1,) if parallel_passes and gamma else tuple(min(k, gamma - j) for j in range(0, gamma, k))


def _per_context_tree(sp, acc, gamma: int, seed: int, parallel_passes: bool) -> SpeculationBuild:
    """A dynamic tree re-shaped per step for the realised contexts (simulator.speculation.context_acceptance)."""
    from simulator.speculation.context_acceptance import dynamic_tree_library, widest_shape
    if acc.kind != "contexts":
        raise ScenarioError("speculation.per_context", f"a per-context tree needs acceptance kind 'contexts' "
                            f"(per-class acceptance), got {acc.kind!r}")
    try:
        model = dynamic_tree_library(sp, acc, seed)
    except ValueError as exc:
        raise ScenarioError("acceptance.contexts", str(exc)) from None
    if parallel_passes and model.depth > gamma:
        raise ScenarioError("speculation.depth", f"the tree is {model.depth} deep but the parallel heads "
                            f"predict only drafter.gamma={gamma} positions")
    verify_q, widths = widest_shape(model.trees)
    return SpeculationBuild(model, model.trees[0], verify_q, (1,) if parallel_passes else widths,
                            model.depth != verify_q - 1, model.full_accept_probability())
