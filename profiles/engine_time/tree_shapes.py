"""Which draft token trees an engine release drafts with which speculation method: a scenario's `speculation`
block of kind `tree` (static: builder kary, medusa or sequoia) or `dynamic_tree` (builder eagle2 or top_n) against
the release the deployment runs. `tree_refusal` returns the field and one line (what the release drafts
instead, and what is allowed) or None; `simulator.cluster.factory.check_tree_shape` (a run) and
`simulator.workflows.plan.config._check_tree_shapes` (a plan) both call `release_tree_refusal`. Read 2026-11-29 in
the engines' wheels from PyPI:

vLLM (`speculative_token_tree`, a list of paths such as [(0,), (1,), (0, 0)], sorted breadth-first by
vllm/config SpeculativeConfig.__post_init__):
- v0.10.0 has the field (vllm/config.py SpeculativeConfig) but nothing reads it: it drafts a chain of
  num_speculative_tokens. Releases before it have no field.
- v0.10.1 to v0.20.2 (read in 0.10.1, 0.10.2, 0.11.0, 0.12.0, 0.15.0, 0.20.0 and 0.20.2) draft the tree in
  EagleProposer.propose_tree (vllm/v1/spec_decode/eagle.py; llm_base_proposer.py SpecDecodeBaseProposer in 0.20)
  when the TREE_ATTN attention backend is selected, and verify it with tree attention
  (vllm/v1/attention/backends/tree_attn.py). The tree is static (the same paths every step), and every node of
  a level gets the same number of children: the proposer takes the top-c tokens under each node, c = the level's
  drafts // the previous level's (EagleProposer.__init__, child_drafts_per_level) -- the shape of draftsim's `tree`
  builder kary. propose_tree unpacks the draft model's (last hidden states, hidden states) pair at every level
  after the first, which EAGLE and EAGLE-3 heads return and MTP modules and draft models do not
  (SpecDecodeBaseProposer.model_returns_tuple is false for mtp and draft_model in 0.20.0); the other proposers
  (n-gram, Medusa, suffix) never read the field.
- v0.21.0 on (read in 0.21.0, 0.22.0, 0.23.0, 0.24.0, 0.28.0 and 0.33.0) have no speculative_token_tree and no
  tree_attn backend.
So on vLLM: no dynamic tree in any release; a static kary tree from an EAGLE-style head (drafter head, style
autoregressive) or an EAGLE-3 head (drafter eagle3: its passes per level in simulator.cost.static_tree) on 0.10.1 to
0.20.2 only. Not checked (named): that the scenario selects TREE_ATTN, and whether
TREE_ATTN serves an MLA target (its platform's backend choice was not read).

SGLang (EAGLE worker: EAGLE, EAGLE3, NEXTN -- which SGLang aliases to EAGLE -- and STANDALONE draft models, whose
StandaloneWorker extends EAGLEWorker; read in 0.4.1.post4, 0.4.4.post2-post4, 0.4.5-post3, 0.4.6, 0.4.9, 0.5.1,
0.5.2, 0.5.3, 0.5.13 and 0.5.23): one tree builder, EAGLE-2's (speculative_eagle_topk = top_k,
speculative_num_steps = depth, speculative_num_draft_tokens = budget, root included). Each draft step keeps the
top_k best of top_k x top_k expansions (speculative/spec_utils.py select_top_k_tokens; eagle_utils.py in 0.4.1), and
the verified tree is the budget - 1 best of the top_k + (depth - 1) * top_k^2 drafted candidates (torch.topk in
build_eagle_tree.py build_tree_kernel_efficient_preprocess; EAGLEDraftInput.prepare_for_verify in eagle_utils.py of
0.4.1.post4), which raises for more. From v0.4.5.post3, speculative_eagle_topk 1 sets speculative_num_draft_tokens
to speculative_num_steps + 1 whatever was asked ('speculative_num_draft_tokens is adjusted ...': server_args.py
ServerArgs.__post_init__, later arg_groups/speculative_hook.py _handle_eagle_family): refused here rather than run
as another shape.

SGLang's NGRAM worker (drafter ngram; read in 0.5.3, 0.5.9, 0.5.10, 0.5.13, 0.5.14, 0.5.16 and 0.5.23: srt/speculative/
ngram_worker.py, the trie's buildRecency / buildFrequency and fillResult) drafts neither shape: each step it grows a
tree from its trie of recent windows (BFS or PROB over the matched suffixes, whatever shape the trie holds) and pads
it to speculative_num_draft_tokens rows, all verified. draftsim runs that tree where it walks the drafter on a session
corpus (simulator.speculation.suffix.sglang_ngram) under speculation kind chain with drafter.gamma =
speculative_num_draft_tokens - 1 (the verified rows past the root); a kary, medusa, sequoia, EAGLE-2 or top_n tree, n
sequences (multidraft) or a retrieved branch (retrieval_merge) is not what it drafts, and is refused.

TensorRT-LLM: its EAGLE-3 dynamic tree and MTP sources were not read (no wheels on PyPI; the search corpus held
none), so no rule is applied there.
"""
from __future__ import annotations

from dataclasses import dataclass

from profiles.measured.source import version_in_span

VLLM_TREES = ("0.10.1", "0.21.0")              # releases (from, before) drafting speculative_token_tree
VLLM_TREE_METHODS = ("eagle", "eagle3")        # methods whose proposer drafts it (module docstring)
SGLANG_TREE_METHODS = ("eagle", "eagle3", "mtp", "draft_model")   # run by SGLang's EAGLE worker
SGLANG_TOPK1_CHAIN = "0.4.5.post3"             # from it: topk 1 drafts num_steps + 1 tokens


@dataclass(frozen=True)
class TreeAsk:
    """The tree a scenario asks for: `kind` tree | dynamic_tree, its `builder`, `depth`, `top_k` (a static
    tree's k, a dynamic tree's top_k) and `budget` (nodes, the root included)."""

    kind: str
    builder: str
    depth: int
    top_k: int
    budget: int


def tree_ask(speculation) -> TreeAsk | None:
    """The TreeAsk of a validated `speculation` section (simulator.config.speculation), None for other kinds."""
    kind = speculation.kind
    if kind == "tree":
        return TreeAsk(kind, speculation.builder, speculation.depth, speculation.k, speculation.budget)
    if kind == "dynamic_tree":
        return TreeAsk(kind, speculation.builder, speculation.depth, speculation.top_k, speculation.budget)
    return None


def sglang_candidates(top_k: int, depth: int) -> int:
    """Draft tokens SGLang's EAGLE worker ranks for the verified tree: top_k at the first step, top_k^2 at each
    further one."""
    return top_k + (depth - 1) * top_k * top_k


def _vllm(version: str, method: str | None, tree: TreeAsk) -> tuple[str, str] | None:
    has_trees = version_in_span(version, *VLLM_TREES)
    where = ("has no draft token trees (speculative_token_tree is drafted by EagleProposer.propose_tree with the "
             "tree_attn backend in 0.10.1 to 0.20.2 only: 0.10.0 has the field unread, 0.21.0 on neither)")
    allowed = "allowed: speculation kind chain, or version 0.10.1 to 0.20.2 with an EAGLE head (drafter head, " \
              "style autoregressive) or an EAGLE-3 head (drafter eagle3) and speculation kind tree, builder kary"
    if tree.kind == "dynamic_tree":
        return "speculation.kind", (
            f"vllm {version} " + ("drafts only a static tree (speculative_token_tree: the same paths every step, "
                                  "vllm/v1/spec_decode/eagle.py EagleProposer.propose_tree), never EAGLE-2's "
                                  "per-step dynamic tree" if has_trees else where) + f"; {allowed}")
    if not has_trees:
        return "cluster.engine.version", f"vllm {version} {where}; {allowed}"
    if method not in VLLM_TREE_METHODS:
        return "drafter.kind", (
            f"vllm {version} drafts a speculative_token_tree with EAGLE and EAGLE-3 heads only (EagleProposer."
            f"propose_tree unpacks the head's pair of hidden states at every level; MTP modules and draft models return "
            f"one, and the n-gram, Medusa and suffix proposers never read the tree); got {method}; {allowed}")
    if tree.builder != "kary":
        return "speculation.builder", (
            f"vllm {version} gives every node of a tree level the same number of children (the top-c tokens under "
            f"each, c = the level's drafts // the previous level's: EagleProposer.__init__ child_drafts_per_level), "
            f"which a {tree.builder} tree is not built to have (named: refused even where one happens to be); "
            f"allowed: builder kary")
    return None


def _sglang(version: str, method: str | None, tree: TreeAsk) -> tuple[str, str] | None:
    if method not in SGLANG_TREE_METHODS:
        return None
    if tree.kind != "dynamic_tree" or tree.builder != "eagle2":
        field = "speculation.kind" if tree.kind != "dynamic_tree" else "speculation.builder"
        got = tree.kind if tree.kind != "dynamic_tree" else f"builder {tree.builder}"
        return field, (f"sglang {version} drafts EAGLE-2's tree only (speculative_eagle_topk, speculative_num_steps, "
                       f"speculative_num_draft_tokens: speculative/spec_utils.py select_top_k_tokens and "
                       f"build_eagle_tree.py); got {got}; allowed: speculation kind dynamic_tree, builder eagle2")
    most = 1 + sglang_candidates(tree.top_k, tree.depth)
    if tree.top_k == 1 and tree.budget != tree.depth + 1 and version_in_span(version, SGLANG_TOPK1_CHAIN, None):
        return "speculation.budget", (
            f"sglang {version} sets speculative_num_draft_tokens to speculative_num_steps + 1 = {tree.depth + 1} "
            f"when speculative_eagle_topk is 1 (server_args.py from v0.4.5.post3; arg_groups/speculative_hook.py "
            f"_handle_eagle_family in v0.5.13 and v0.5.23), so budget {tree.budget} is not what it runs; allowed: "
            f"budget {tree.depth + 1} (depth + 1) with top_k 1")
    if tree.budget > most:
        return "speculation.budget", (
            f"sglang {version} verifies the budget - 1 best of the top_k + (depth - 1) * top_k^2 = {most - 1} tokens "
            f"it drafts (torch.topk in build_eagle_tree.py build_tree_kernel_efficient_preprocess), which raises for "
            f"more; allowed: 1 to {most} with top_k {tree.top_k} and depth {tree.depth}")
    return None


def tree_refusal(framework: str, version: str, method: str | None, tree: TreeAsk) -> tuple[str, str] | None:
    """(field, one line: what release `version` of `framework` drafts instead and what is allowed) where it does
    not draft `tree` with speculation `method` (simulator.cluster.factory.speculation_method: eagle, eagle3, mtp,
    medusa, draft_model, ngram, ...), else None. TensorRT-LLM: None (module docstring)."""
    rule = {"vllm": _vllm, "sglang": _sglang}.get(framework)
    return None if rule is None else rule(version, method, tree)


def sglang_ngram_refusal(version: str, speculation) -> tuple[str, str] | None:
    """(field, one line) where `speculation` is not the shape SGLang's NGRAM worker drafts (module docstring)."""
    if speculation.kind == "chain":
        return None
    return "speculation.kind", (
        f"sglang {version}'s NGRAM worker drafts its own tree from its trie (ngram_worker.py; trie buildRecency / "
        f"buildFrequency, padded to speculative_num_draft_tokens rows), not a {speculation.kind} shape; allowed: "
        f"speculation kind chain with drafter.gamma = speculative_num_draft_tokens - 1 (acceptance kind sessions "
        f"walks its tree)")


def release_tree_refusal(release: tuple[str, str | None] | None, method: str | None, speculation
                         ) -> tuple[str, str] | None:
    """`tree_refusal` for an engine `release` (framework, version; None or version None: no release named, no
    rule) and a validated `speculation` section; None for shapes other than trees, except SGLang's NGRAM worker,
    which drafts chain-priced trees only (`sglang_ngram_refusal`)."""
    if release is not None and release[1] is not None and release[0] == "sglang" and method == "ngram" \
            and speculation is not None:
        return sglang_ngram_refusal(release[1], speculation)
    tree = tree_ask(speculation) if speculation is not None else None
    if tree is None or release is None or release[1] is None:
        return None
    return tree_refusal(release[0], release[1], method, tree)
