"""The pass layout of the engines' hidden-state proposers (EAGLE-3, MTP): which draft passes one step runs,
over how many tokens, and what the target pays for them. StepCostModel calls it when `proposer` is set.

vLLM's EagleProposer (`vllm/v1/spec_decode/eagle.py`, `propose`; EAGLE, EAGLE-3 and MTP share it) and
SGLang's EAGLEWorker (`speculative/eagle_worker.py`) lay a step out the same way:

1. the target verifies q query tokens per decoding request (γ+1 for a chain; the tree's nodes, SGLang's
   `speculative_num_draft_tokens`) and captures the hidden states the drafter reads;
2. the first draft pass ("draft extend") runs over every token the target just processed — each decoding
   request's q verified tokens and the step's prompt chunks — because the drafter's own KV and hidden
   states must follow the target's accepted tokens (vLLM: the pass's `num_tokens` are the target's
   scheduled tokens, `combine_hidden_states` first applies EAGLE-3's fc to all of them; SGLang:
   `forward_draft_extend_after_decode`, padded under CUDA graphs to a fixed width per request). It computes
   logits for one row per request (vLLM: `last_token_indices`);
3. then one pass per further draft position: vLLM chains run γ − 1 passes of one token per request
   (`for token_index in range(num_speculative_tokens - 1)`), every request of the batch (prompt chunks
   that just finished included); SGLang trees run `speculative_num_steps` − 1 passes of
   `speculative_eagle_topk` tokens per request (`draft_forward`: "we get 1 token from draft prefill and
   (#spec steps - 1) tokens here"); vLLM's static trees (EAGLE-3 with `speculation: tree`, builder kary) run
   one pass per level over every node drafted so far under a tree mask, with logits for the newest level only
   (simulator.cost.static_tree: `later_logits`, `later_tree`).

Approximations: the first pass is priced at q tokens per decoding request whatever was accepted (vLLM
pads the drafter batch with the rejected tokens, `prepare_inputs_padded`; SGLang spec v1 pads to
`speculative_num_steps` + 1, which equals q for chains and is below q for trees); later passes attend to
each request's context plus its q verified tokens and the earlier draft positions (the rejected
positions are counted: at most q − 1 keys per request, < 1 % of a long context). A prompt chunk's later
passes take the chunk as its context (exact for a prompt computed in one chunk).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from simulator.cost.step_cost import zero_cost


@dataclass(frozen=True)
class HiddenStateHooks:
    """What a hidden-state drafter adds to the layout: `fuse(tokens)` on its first pass and `capture(tokens)`
    on the target (either may be None); each returns (seconds, flops, bytes)."""

    fuse: object | None = None
    capture: object | None = None


@dataclass(frozen=True)
class HiddenStateProposer:
    """`later_widths[j]`: draft tokens per request of draft pass j + 2; `fuse(tokens)`: the drafter's
    once-per-step cost on the first pass's tokens (EAGLE-3's fc; None for MTP); `capture(tokens)`: what
    the target pays per step to keep the hidden states for the drafter (EAGLE-3's aux layers; None).
    `later_logits[j]`: logits rows per request of pass j + 2 (None: every token's, as chains and SGLang's
    trees); `later_tree`: those passes' tokens attend under a tree mask to the context alone (vLLM's static
    tree, simulator.cost.static_tree) rather than to the context and the earlier passes' tokens."""

    later_widths: tuple[int, ...]
    fuse: object | None = None
    capture: object | None = None
    later_logits: tuple[int, ...] | None = None
    later_tree: bool = False

    @property
    def passes(self) -> int:
        return 1 + len(self.later_widths)

    def with_depth(self, depth: int) -> "HiddenStateProposer":
        """This layout drafting `depth` chain positions (a control policy's shorter chain)."""
        return replace(self, later_widths=(1,) * max(depth - 1, 0))

    def target_extra(self, tokens: int) -> np.ndarray:
        """(seconds, flops, bytes) the target pays for `tokens` processed tokens (0 without capture)."""
        if self.capture is None or tokens <= 0:
            return zero_cost()
        return self.capture(tokens)

    def draft(self, d, q: int, prefill_tokens: int, prefill_seqs: int, prefill_attn_pairs: int, decode_seqs: int,
              decode_context_tokens: int) -> np.ndarray:
        """(seconds, flops, bytes) of one step's draft passes with pass pricer `d` (ForwardCost interface)."""
        requests = prefill_seqs + decode_seqs
        first = prefill_tokens + decode_seqs * q
        cost = d.dense(first, requests)
        if self.fuse is not None and first:
            cost = cost + self.fuse(first)
        if prefill_tokens:
            cost = cost + d.prefill_attention(prefill_tokens, prefill_seqs, prefill_attn_pairs)
        if decode_seqs:
            cost = cost + d.decode_attention(decode_seqs, q, np.array([decode_context_tokens]))[0]
        context = decode_context_tokens + decode_seqs * q + prefill_tokens
        for j, width in enumerate(self.later_widths):
            if self.later_logits is None:
                cost = cost + d.decode_forward(requests, width, np.array([context + j * requests]))[0]
            else:   # a static tree level (simulator.cost.static_tree): all nodes so far, the newest level's logits
                cost = cost + d.dense(requests * width, requests * self.later_logits[j]) + \
                    d.decode_attention(requests, width, np.array([context]), self.later_tree)[0]
        return cost

    def draft_counts(self, d, counts: np.ndarray, contexts: np.ndarray, prefill_tokens: int, prefill_seqs: int,
                     prefill_attn_pairs: int) -> np.ndarray:
        """Draft passes of a step whose decoding requests draft `counts[i]` chain positions (a control
        policy's per-request lengths): the first pass over every request's counts[i] + 1 verified tokens and
        the prompt chunks, then pass j over the requests with counts > j (prompt chunks draft the longest).
        Approximation: the first pass's decode attention is priced at the rounded mean query length."""
        decode = len(counts)
        tokens = int((counts + 1).sum())
        first = prefill_tokens + tokens
        requests = prefill_seqs + decode
        cost = d.dense(first, requests)
        if self.fuse is not None and first:
            cost = cost + self.fuse(first)
        if prefill_tokens:
            cost = cost + d.prefill_attention(prefill_tokens, prefill_seqs, prefill_attn_pairs)
        if decode:
            q_mean = max(1, int(round(tokens / decode)))
            cost = cost + d.decode_attention(decode, q_mean, np.array([int(contexts.sum())]))[0]
        longest = int(counts.max()) if decode else len(self.later_widths) + 1
        base = contexts + counts + 1
        for j in range(1, longest):
            live = counts > j
            b = int(live.sum()) + prefill_seqs
            if b:
                cost = cost + d.decode_forward(b, 1, np.array([int(base[live].sum()) + prefill_tokens + (j - 1) * b]))[0]
        return cost


def make_proposer(hooks, speculation, spec_build, method: str = "eagle3") -> HiddenStateProposer:
    """The layout of a hidden-state drafter (`hooks`: its DrafterBuild.hidden_state; `method`: eagle3 or mtp)
    under a `speculation` section: a chain of depth γ (vLLM), SGLang's EAGLE tree (`dynamic_tree`, builder
    eagle2: top_k = speculative_eagle_topk, depth = speculative_num_steps, budget = speculative_num_draft_tokens),
    or, for EAGLE-3, vLLM's static tree (`tree`, builder kary: simulator.cost.static_tree).
    ScenarioError for the shapes the engines do not run with these drafters."""
    check_hidden_state_shape(speculation, method)
    if speculation.kind == "tree":
        from simulator.cost.static_tree import propose_tree_passes
        passes = propose_tree_passes(tuple(int(n) for n in spec_build.tree.level_widths()[1:]))
        return HiddenStateProposer(tuple(q for q, _ in passes), hooks.fuse, hooks.capture,
                                   tuple(rows for _, rows in passes), later_tree=True)
    if speculation.kind == "chain":
        later = (1,) * max(spec_build.acceptance.depth - 1, 0)
    else:
        later = (speculation.top_k,) * max(speculation.depth - 1, 0)
    return HiddenStateProposer(later, hooks.fuse, hooks.capture)


def check_hidden_state_shape(speculation, method: str) -> None:
    """ScenarioError (speculation.builder for an EAGLE-3 tree of another builder, else speculation.kind) where
    `hidden_state_shape_error` refuses the validated `speculation` section; the replica factory calls it before
    the shape's acceptance is built, so that the shape is what the error names."""
    from simulator.errors import ScenarioError
    refusal = hidden_state_shape_error(speculation, method)
    if refusal is not None:
        raise ScenarioError("speculation.builder" if speculation.kind == "tree" and method == "eagle3"
                            else "speculation.kind", refusal)


def hidden_state_shape_error(speculation, method: str = "eagle3") -> str | None:
    """Why an EAGLE-3 (`method` eagle3) or MTP (mtp) drafter cannot run a `speculation` section (a validated
    section or its mapping, as a plan lists it), or None: the engines run them as a chain or as SGLang's EAGLE
    tree, and EAGLE-3 also as vLLM's static kary tree (simulator.cost.static_tree; MTP not: vLLM's propose_tree
    needs the head's pair of hidden states, profiles.engine_time.tree_shapes)."""
    get = speculation.get if isinstance(speculation, dict) else lambda name, default=None: getattr(
        speculation, name, default)
    kind, builder = get("kind", "chain"), get("builder", "eagle2")
    if kind == "chain" or (kind == "dynamic_tree" and builder == "eagle2" and not get("per_context", False)):
        return None
    if method == "eagle3" and kind == "tree" and builder == "kary":
        return None
    static = " or vLLM's static tree (tree with builder kary)" if method == "eagle3" else ""
    return (f"{'EAGLE-3' if method == 'eagle3' else 'MTP'} drafters run the engines' chain (chain), SGLang's EAGLE "
            f"tree (dynamic_tree with builder eagle2, per_context false){static}; got {kind!r}"
            + (f" with builder {builder!r}" if kind in ("dynamic_tree", "tree") else ""))
