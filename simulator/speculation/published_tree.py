"""SGLang's EAGLE tree (`speculation: {kind: dynamic_tree, builder: eagle2}`) under a published acceptance row
(`acceptance: {kind: published}`): the tree's cost from its shape, its acceptance from the row's tokens per
step, with no per-rank acceptance.

Why the tokens per step suffice (SGLang's tree construction, `python/sglang/srt/speculative/eagle_worker.py`
and `eagle_utils.py`): every step drafts the same shape whatever was accepted before —
`speculative_num_steps` draft passes, the first (`draft extend`) giving the top `speculative_eagle_topk`
children of the root, each later pass expanding the `topk` best frontier nodes by `topk` children
(`select_top_k_tokens`), then `speculative_num_draft_tokens` − 1 candidates kept by cumulative draft score
(`organize_draft_results`, out of the topk + (steps − 1)·topk² candidates drafted) and verified with the root under the tree mask (`verify_tree_greedy` /
`tree_speculative_sampling_target_only` accept the longest root-to-leaf path the target agrees with). So
the step's draft and verify costs depend on (steps, topk, draft tokens) only, and what a step emits is one
accepted path: its length is a chain-like random variable of at most `steps` tokens plus the bonus token.
Throughput is E[tokens per step] / E[step time] with a step time independent of the draw, so a published
mean tokens per step of the *same tree configuration* determines the speedup; per-rank probabilities would
only be needed to derive that mean, which the registry already holds.

The rule (`published_tree`): the accepted path length follows the row's chain at the tree's depth
(`simulator.speculation.published.per_position_alphas`: the row's own depth, or the geometric α that gives
its tokens per step — the registry's "path-equivalent" α); the tree verified is `budget` nodes deep `depth`
(a proxy shape: the accepted spine plus the other candidates, `proxy_tree`), drafted in `depth` passes of
`top_k` tokens per request after the first.
Approximations: (1) the row must have been measured with the same (steps, topk, draft tokens) — a different
tree changes the mean, which this rule cannot extrapolate (`PublishedTreeMismatch` refuses a row of another
depth or node count); (2) the spread of the accepted length is the chain's (geometric within depth), not the
tree's; with the step cost independent of the draw this moves the speedup only through KV growth and
request completion (< 1 % in the tests); (3) per-step reshaping by the draft's confidence is inside the
published mean, not modelled per step.
"""
from __future__ import annotations

from simulator.errors import ScenarioError


def proxy_tree(alphas: tuple[float, ...], top_k: int, budget: int):
    """A tree of `budget` nodes (root included) and depth len(alphas) whose spine (rank-0 path) carries the
    path acceptance `alphas` and whose other nodes (ranks 1..top_k−1, breadth first) accept nothing: its
    expected tokens per step equal the chain's, and its size and depth are the verified tree's. Only the
    shape is used to price the step (`simulator.speculation.shapes.SpeculationBuild.tree`)."""
    from theory.trees import Tree
    depth = len(alphas)
    if budget < depth + 1:
        raise ValueError(f"a tree of depth {depth} needs at least {depth + 1} nodes, got budget {budget}")
    parents, ranks, accept = [-1], [0], [1.0]
    for d in range(depth):                       # the spine: node d + 1 is the rank-0 child of node d
        parents.append(d), ranks.append(0), accept.append(float(alphas[d]))
    frontier = list(range(depth + 1))             # breadth first over the spine and then the new nodes
    used_ranks = {i: {0} if i < depth else set() for i in range(depth + 1)}
    level = {i: i for i in range(depth + 1)}
    head = 0
    while len(parents) < budget and head < len(frontier):
        node = frontier[head]
        head += 1
        if level[node] >= depth:
            continue
        for rank in range(top_k):
            if len(parents) >= budget:
                break
            if rank in used_ranks[node]:
                continue
            used_ranks[node].add(rank)
            parents.append(node), ranks.append(rank), accept.append(0.0)
            child = len(parents) - 1
            level[child], used_ranks[child] = level[node] + 1, set()
            frontier.append(child)
    if len(parents) < budget:
        raise ValueError(f"top_k {top_k} and depth {depth} hold at most {len(parents)} nodes, budget is {budget}")
    return Tree(tuple(parents), tuple(ranks), tuple(accept))


def published_tree(sp, acc, seed: int, parallel_passes: bool):
    """SpeculationBuild of SGLang's EAGLE tree `sp` under the published row of `acc` (module docstring)."""
    from simulator.speculation.published import RegistryError, find_entry
    from simulator.speculation.shapes import SpeculationBuild, _published_chain
    if sp.builder != "eagle2" or sp.per_context:
        raise ScenarioError("speculation.builder", "a published acceptance row prices SGLang's EAGLE tree only "
                            "(dynamic_tree with builder eagle2, per_context false)")
    if acc.entry is not None:
        try:
            row = find_entry(acc.entry)
        except RegistryError as exc:
            raise ScenarioError(exc.field, exc.message) from None
        if row.shape == "tree" and row.depth != sp.depth:
            raise ScenarioError("speculation.depth", f"the published row {row.id!r} was measured with a tree of "
                                f"depth {row.depth}; its tokens per step do not carry to depth {sp.depth}")
        if row.shape == "tree" and row.nodes is not None and row.nodes != sp.budget:
            raise ScenarioError("speculation.budget", f"the published row {row.id!r} verified {row.nodes} "
                                f"tokens per step; its tokens per step do not carry to budget {sp.budget}")
    candidates = sp.top_k + (sp.depth - 1) * sp.top_k ** 2   # SGLang's scores list: topk, then topk² per step
    if sp.budget - 1 > candidates:
        raise ScenarioError("speculation.budget", f"SGLang keeps budget − 1 = {sp.budget - 1} draft tokens out of the "
                            f"{candidates} candidates of top_k {sp.top_k} over depth {sp.depth} (topk + (depth − 1)·topk²); "
                            f"use a budget of at most {candidates + 1}")
    chain = _published_chain(acc, sp.depth, seed)
    survival = [1.0, *(float(s) for s in chain.survival)]
    alphas = tuple(b / a if a > 0 else 0.0 for a, b in zip(survival, survival[1:]))
    try:
        tree = proxy_tree(alphas, sp.top_k, sp.budget)
    except ValueError as exc:
        raise ScenarioError("speculation.budget", str(exc)) from None
    widths = (1,) if parallel_passes else (1,) + (sp.top_k,) * (sp.depth - 1)
    return SpeculationBuild(chain, tree, sp.budget, widths, sp.budget - 1 != sp.depth,
                            chain.full_accept_probability())
