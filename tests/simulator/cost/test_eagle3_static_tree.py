"""EAGLE-3 heads drafting vLLM's static token tree (`drafter: eagle3` + `speculation: {kind: tree, builder: kary}`):
the head passes per level are propose_tree's (hand-worked against vLLM 0.10.1-0.20.2's EagleProposer.propose_tree,
read 2026-11-29: simulator.cost.static_tree), the verify pass is the tree's, the accepted lengths are those of a
Monte-Carlo run of greedy tree verification, and the shapes no engine drafts stay refused."""
from __future__ import annotations

import numpy as np
import pytest

from contract import assert_one_line, run_cli
from sim_helpers import assert_bulk_equals_step, replica_kind, scenario
from simulator.cost.proposer import HiddenStateHooks, hidden_state_shape_error, make_proposer
from simulator.cost.static_tree import propose_tree_passes
from simulator.speculation.spine_tree import spine_kary_tree
from simulator.speculation.tree_acceptance import TreeAcceptance
from theory.tree_builders import kary_tree

EAGLE3 = {"kind": "eagle3", "head": "llama-3.1-8b-eagle3", "gamma": 3}
LLAMA = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "dtype": "bf16",
         "latency": {"source": "roofline", "engine_time": False}}
TREE = {"kind": "tree", "builder": "kary", "k": 2, "depth": 3}


def eagle3_tree(**over) -> dict:
    sections = {"cluster": LLAMA, "drafter": EAGLE3, "speculation": TREE,
                "acceptance": {"kind": "constant", "alpha": 0.7435}}
    return scenario(**{**sections, **over})


# ---- draft passes: propose_tree's --------------------------------------------------------------------------
def test_level_passes_are_propose_trees_by_hand():
    """propose_tree's loop `for level in range(tree_depth - 1)` runs the head over query_len = total_num_drafts
    = cu_drafts_per_level[level] tokens per request and takes logits of the last level_num_drafts rows. A kary
    tree k=2, depth 3 has 2, 4, 8 nodes per level: after the draft extend, a pass of 2 tokens (logits 2) and one
    of 2 + 4 = 6 tokens (logits 4); the 8 leaves are never run through the head."""
    assert propose_tree_passes((2, 4, 8)) == ((2, 2), (6, 4))
    assert propose_tree_passes((3, 9)) == ((3, 3),)
    assert propose_tree_passes((1, 1, 1, 1)) == ((1, 1), (2, 1), (3, 1))   # a one-child tree: the chain re-run
    assert propose_tree_passes((4,)) == ()


class Recorder:
    """A pass pricer that records what it is asked to price (each call costs 1 second)."""

    def __init__(self):
        self.calls = []

    def dense(self, tokens, logits):
        self.calls.append(("dense", tokens, logits))
        return np.array([1.0, 0.0, 0.0])

    def decode_attention(self, seqs, q, contexts, tree=False):
        self.calls.append(("attention", seqs, q, int(contexts[0]), tree))
        return np.array([[1.0, 0.0, 0.0]])

    def decode_forward(self, seqs, q, contexts, tree=False):   # (the chain and SGLang layouts' later passes)
        self.calls.append(("forward", seqs, q, int(contexts[0]), tree))
        return np.array([[1.0, 0.0, 0.0]])


class Build:
    def __init__(self, tree):
        self.tree = tree


def test_step_runs_the_passes_propose_tree_runs():
    """4 decoding requests of Σ context 4000 verifying the 15-node tree: the draft extend over their 60 verified
    tokens (logits 4 rows) with its attention, then the head over 4 x 2 tokens (logits 8) and 4 x 6 (logits 16),
    each attending under the tree mask to the context and the verified tokens (4060 keys before the tree);
    the fc once over the 60 captured tokens."""
    fused = []
    hooks = HiddenStateHooks(fuse=lambda t: fused.append(t) or np.zeros(3), capture=None)
    layout = make_proposer(hooks, type("S", (), {"kind": "tree", "builder": "kary"})(),
                           Build(kary_tree(2, 3, [0.5])), "eagle3")
    d = Recorder()
    cost = layout.draft(d, 15, 0, 0, 0, 4, 4000)
    assert d.calls == [("dense", 60, 4), ("attention", 4, 15, 4000, False),
                       ("dense", 8, 8), ("attention", 4, 2, 4060, True),
                       ("dense", 24, 16), ("attention", 4, 6, 4060, True)]
    assert fused == [60] and cost[0] == 6.0


def test_replica_prices_the_tree_verify_and_the_level_passes():
    """The replica factory builds the layout: widths (1, 2, 6) of head passes, 15 verified tokens per request
    under the tree mask; the decode step's draft time is the level passes priced by the head's own pricer."""
    kind = replica_kind(eagle3_tree())
    cost = kind.cost
    assert cost.proposer.later_widths == (2, 6) and cost.proposer.later_logits == (2, 4)
    assert cost.q == 15 and cost.tree
    d = cost.draft
    ctx = 8 * 1024
    by_hand = d.dense(8 * 15, 8) + d.decode_attention(8, 15, np.array([ctx]))[0] + cost.proposer.fuse(120) \
        + d.dense(16, 16) + d.decode_attention(8, 2, np.array([ctx + 120]), True)[0] \
        + d.dense(48, 32) + d.decode_attention(8, 6, np.array([ctx + 120]), True)[0]
    draft, _ = cost.decode_steps(8, np.array([ctx]))
    assert draft[0, 0] == pytest.approx(by_hand[0], rel=1e-12)
    chain = replica_kind(eagle3_tree(speculation={"kind": "chain"}))
    assert chain.cost.decode_steps(8, np.array([ctx]))[0][0, 0] < draft[0, 0]   # the tree re-runs its levels


# ---- acceptance: greedy tree verification by Monte Carlo -----------------------------------------------------
def greedy_tree_walk(k: int, depth: int, rank_probs, rng, steps: int) -> np.ndarray:
    """Accepted draft tokens of `steps` verifications of vLLM's kary tree: at each accepted node of depth j the
    target's next token is the head's rank-r candidate with rank_probs[j][r] (independently), and the walk
    moves to that child if r < k (greedy tree verification), else stops."""
    out = np.zeros(steps, dtype=np.int64)
    for s in range(steps):
        for j in range(depth):
            probs = np.asarray(rank_probs[j], dtype=float)
            r = rng.choice(len(probs) + 1, p=np.append(probs, 1.0 - probs.sum()))
            if r >= min(k, len(probs)):
                break
            out[s] += 1
    return out


@pytest.mark.parametrize("alphas", [(0.7435, 0.7435, 0.7435), (0.8, 0.6, 0.4)])
def test_per_position_tree_accepts_as_the_walk_and_the_chain(alphas):
    """A tree on the chain's per-position figures (top-1 child α_j, siblings 0): its expected accepted tokens
    equal a Monte-Carlo walk of greedy verification (4 σ) and the chain's Σ_i Π_{j<=i} α_j; the DES's draws
    (TreeAcceptance.tau) have the same mean."""
    tree = spine_kary_tree(2, 3, alphas)
    model = TreeAcceptance.from_tree(tree, seed=3)
    walk = greedy_tree_walk(2, 3, [(a, 0.0) for a in alphas], np.random.default_rng(5), 40_000)
    sigma = walk.std() / np.sqrt(len(walk))
    assert abs(walk.mean() - model.expected_accepted()) < 4 * sigma
    assert model.expected_accepted() == pytest.approx(float(np.cumprod(alphas).sum()), rel=1e-12)
    drawn = model.tau(np.arange(40_000), np.zeros(40_000, dtype=np.int64))
    assert abs(drawn.mean() - model.expected_accepted()) < 4 * drawn.std() / np.sqrt(len(drawn))


def test_ranked_tree_accepts_as_the_walk():
    """With per-rank acceptance the siblings are credited: the kary tree's expectation equals the walk's."""
    probs = (0.7435, 0.1, 0.05)
    kind = replica_kind(eagle3_tree(acceptance={"kind": "ranked", "accept_probs": list(probs)}))
    walk = greedy_tree_walk(2, 3, [probs] * 3, np.random.default_rng(11), 40_000)
    sigma = walk.std() / np.sqrt(len(walk))
    assert abs(walk.mean() - kind.acceptance.expected_accepted()) < 4 * sigma
    assert kind.acceptance.expected_accepted() > float(np.cumprod([probs[0]] * 3).sum())


# ---- the run: deterministic, bulk = step; refusals --------------------------------------------------------
def test_eagle3_tree_run_is_bulk_equal_step():
    assert_bulk_equals_step(eagle3_tree(workload={"num_requests": 60}))


def test_mtp_static_tree_stays_refused():
    """vLLM's propose_tree unpacks a pair of hidden states that MTP modules do not return: refused for mtp, allowed
    for eagle3 (the message names what each runs)."""
    assert hidden_state_shape_error(TREE, "eagle3") is None
    assert "MTP drafters run" in hidden_state_shape_error(TREE, "mtp")
    assert "builder 'sequoia'" in hidden_state_shape_error({**TREE, "builder": "sequoia"}, "eagle3")


@pytest.mark.parametrize("over,field", [
    ({"cluster": {**LLAMA, "engine": {"version": "0.24.0"}}}, "cluster.engine.version"),
    ({"speculation": {**TREE, "builder": "medusa"}}, "speculation.builder"),
    ({"policy": {"kind": "load_switch", "max_batch": 4}}, "policy.kind"),
    ({"acceptance": {"kind": "published", "entry": "eagle3-paper-t1-eagle3-llama-3.1-8b-mt-bench-temp0"}},
     "acceptance.kind"),
])
def test_shapes_no_engine_drafts_are_one_line(tmp_path, over, field):
    code, err, out = run_cli(tmp_path, eagle3_tree(**over))
    assert code == 2 and not out.exists()
    assert_one_line(err, field)


def test_plan_launch_writes_the_tree_vllm_parses_into_these_levels():
    """The launch script's speculative_token_tree for k=2, depth 3 is already breadth-first sorted (vLLM's
    SpeculativeConfig sorts by (len, path)); counted per level as EagleProposer.__init__ counts it (nodes per
    path length; children = a level's count // the previous one's) it is 2, 4, 8 nodes with 2 children each,
    the levels propose_tree_passes prices; num_speculative_tokens is the 14 tree tokens."""
    import ast
    import json

    from simulator.workflows.plan.launch import _eagle_family
    flags, notes = _eagle_family({"drafter": EAGLE3, "speculation": TREE, "cluster": {"model": "llama-3.1-8b"}}, "vllm")
    cfg = json.loads(flags[1])
    paths = ast.literal_eval(cfg["speculative_token_tree"])
    assert paths == sorted(paths, key=lambda t: (len(t), t))
    per_level = [sum(len(p) == level for p in paths) for level in (1, 2, 3)]
    assert per_level == [2, 4, 8] and [per_level[0]] + [b // a for a, b in zip(per_level, per_level[1:])] == [2, 2, 2]
    assert cfg["num_speculative_tokens"] == 14 and cfg["method"] == "eagle3"
    assert propose_tree_passes(tuple(per_level)) == ((2, 2), (6, 4))
    assert any("TREE_ATTN" in n for n in notes)
