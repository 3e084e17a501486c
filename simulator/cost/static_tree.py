"""The draft passes of vLLM's static token tree (`speculative_token_tree`) drafted by an EAGLE or EAGLE-3 head:
`drafter: {kind: eagle3}` with `speculation: {kind: tree, builder: kary, k, depth}` (the tree vLLM 0.10.1 to 0.20.2
draft; which releases and methods do: profiles.engine_time.tree_shapes).

Read 2026-11-29 in the vLLM wheels from PyPI, EagleProposer.propose and EagleProposer.propose_tree
(vllm/v1/spec_decode/eagle.py in 0.10.1, 0.10.2, 0.11.0, 0.12.0, 0.15.0; SpecDecodeBaseProposer.propose_tree in
vllm/v1/spec_decode/llm_base_proposer.py in 0.20.0 and 0.20.2 -- the same loop). With n_l the tree's nodes at
depth l (l = 1..D; a kary tree: n_l = k^l), one step runs D head passes per request:

1. the draft extend pass of `propose` (the chain's first pass, simulator.cost.proposer: the fc over the target's
   tokens, logits one row per request); propose_tree takes the top n_1 tokens of those logits
   (child_drafts_per_level[0]);
2. for each level l = 1..D-1 one head pass (the loop `for level in range(tree_depth - 1)`): its input is every
   tree node drafted so far -- tree_input_ids grows by concatenation, `query_len = total_num_drafts` =
   cu_drafts_per_level[l - 1] = n_1 + ... + n_l tokens per request -- each node carrying its parent's hidden state
   (repeat_interleave by num_children), attending to the request's context and its ancestors in the tree
   (tree_attn: TreeAttentionMetadataBuilder.build_for_drafting, draft_index = l); logits are computed for the
   newest level's n_l rows only (`[:, -level_num_drafts:]`), whose top-c tokens (c = n_{l+1} / n_l) are level
   l + 1. The last level's nodes are never run through the head.

So pass l + 1 processes Q_l = n_1 + ... + n_l query tokens per request with n_l logits rows and a Q_l x Q_l tree
block: the earlier levels are recomputed at every level (their KV slots rewritten), which a chain's layout
(one new token per pass) does not do. Approximations, named: the CUDA-graph padding of each level pass
(cudagraph_dispatcher / pad_for_cudagraph) is not priced; the tree passes' keys are each request's context plus
its q verified tokens (as the chain layout's, simulator.cost.proposer), the requests whose positions exceed
max_model_len (their seq_lens set to 1) are not told apart.
"""
from __future__ import annotations


def propose_tree_passes(level_nodes: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(query tokens, logits rows) per request of each head pass after the draft extend, for a static tree
    with `level_nodes[l - 1]` = n_l nodes at depth l (module docstring): ((n_1, n_1), (n_1 + n_2, n_2), ...,
    (n_1 + ... + n_{D-1}, n_{D-1})); empty for a tree of depth 0 or 1."""
    passes, drafted = [], 0
    for nodes in level_nodes[:-1]:
        drafted += int(nodes)
        passes.append((drafted, int(nodes)))
    return tuple(passes)
