"""Scenario schema of speculation breadth: drafter families, verification shapes, acceptance inputs for
trees and multi-draft, and control policies. Pydantic at the YAML boundary only (see simulator.config.scenario).

YAML reference (each section is a discriminated union on `kind`):

  drafter:      draft_model {model, gamma, tp, placement: colocated|separate|cpu}
                head        {style: autoregressive|parallel|sequential|rnn, gamma, layers, tokens_per_pass}
                            # EAGLE (KOALA: layers > 1; Falcon: tokens_per_pass > 1) / Medusa / Hydra / Clover
                eagle3      {head, gamma}                         # EAGLE-3 head on captured hidden states
                mtp         {gamma, modules}                      # the model's multi-token-prediction modules
                layer_skip  {gamma, layers_fraction}                  # self-speculation, shared KV
                ngram       {gamma, prompt_lookup_max, prompt_lookup_min}  # prompt lookup, ~zero cost
                            # on SGLang: {gamma, max_trie_depth, min_bfs_breadth, max_bfs_breadth,
                            #             match_type: BFS|PROB, capacity_nodes}  # its NGRAM trie
                suffix      {gamma, max_tree_depth, max_cached_requests, max_spec_factor, max_spec_offset,
                             min_token_prob}                  # suffix decoding (vLLM method: suffix)
                sparse_kv   {gamma, kv_budget}                        # MagicDec: self-speculation, windowed KV
                cascade     {stages: [{model|self, tokens, tp, kv_budget, inner_gamma, inner_alpha, inner_model,
                                          reuse_hit_rate, reuse_alpha}]}   # + Ouroboros' candidate reuse
                            # CS Drafting; TriForce (a small model drafting for the sparse-KV target)
  speculation:  chain {alignment: paged|realign}   (γ = drafter.gamma; realign: EQSPEC's padded batches)
                tree         {builder: kary|medusa|sequoia, k, depth, budget}
                dynamic_tree {builder: eagle2|top_n, top_k, depth, budget, per_context}  # EAGLE-2 / OPT-Tree
                multidraft   {n, scheme: rrs|rrs_wor|kseq|naive|optimal|optimal_wor}  # n sequences of length γ
                retrieval_merge {tokens, alpha, hit_rate}   # RASD: a retrieved branch beside the chain
  acceptance:   ranked {accept_probs}    # Sequoia's positional model: P(child of rank k is accepted)
                contexts {contexts: [{weight, accept_probs}]}   # per-context classes of the ranked model
                drifting {points: [[request index, alpha], ...]}  # OSD / traffic drift over the run
                step_level {accept}                 # a whole reasoning step accepted or not (SpecReason)
                published {entry} or {method, target, draft, dataset, temperature, depth}  # the published registry
                pair   {p, q} or {vocab, zipf, q_power}   # stationary target/draft distributions
                sessions {corpus, workloads}        # suffix / ngram drafters run on real multi-turn sessions
  policy:       fixed | smartspec {max_gamma} | specdecpp {threshold} | tetris {budget_tokens}
                | load_switch {max_batch, max_queue} | specreason (with acceptance step_level)
                | thompson {max_gamma, seed}          # online α: Beta posterior, Thompson draws
                | pearl                               # PEARL pre-/post-verify (drafter.placement separate)
                | vllm_dynamic {schedule: [[lo, hi, K], ...]}          # vLLM Dynamic SD (v0.24+)
                | trtllm_schedule {draft_len_schedule, acceptance_window, acceptance_length_threshold}
                                  # or, TensorRT-LLM >= 1.3.0rc27: acceptance_rate_window_size, acceptance_rate_threshold
                | sglang_adaptive {slots, initial_steps, ema_alpha, update_interval, warmup_batches}
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

from pydantic import Field, field_validator, model_validator

from simulator.config.base import FROM_YAML, PATH_TEXT, Strict, field_error
from simulator.core.workload import MAX_NUM_REQUESTS


class HeadDrafterConfig(Strict):
    """Draft heads on the target's last hidden state. `autoregressive` (EAGLE): `layers` decoder layers of
    the target's width (KOALA: > 1) + the target's LM head, run once per draft depth, drafting
    `tokens_per_pass` tokens per pass (Falcon's semi-autoregressive head: > 1, chains only). `parallel`
    (Medusa): `gamma` heads (residual MLP + own LM head each) predicting positions 1..gamma at once, run
    once per step. `sequential` (Hydra, IBM's MLP speculator): one MLP head per depth (`layers` GEMMs, own
    LM head) conditioned on the previous draft token. `rnn` (Clover): a recurrent attention-decoder cell
    (`layers` blocks) + the shared LM head per depth. Costs: simulator.cost.drafters and .heads."""

    kind: Literal["head"]
    style: Literal["autoregressive", "parallel", "sequential", "rnn"] = "autoregressive"
    gamma: int = Field(4, ge=0, le=64)
    layers: int = Field(1, ge=1, le=16)
    tokens_per_pass: int = Field(1, ge=1, le=16)

    @model_validator(mode="after")
    def _families(self) -> "HeadDrafterConfig":
        if self.tokens_per_pass > 1 and self.style != "autoregressive":
            raise ValueError("tokens_per_pass > 1 is a semi-autoregressive (Falcon) head: style 'autoregressive'")
        if self.layers > 1 and self.style == "parallel":
            raise ValueError("layers applies to autoregressive, sequential and rnn heads (Medusa heads are one block)")
        return self


class Eagle3DrafterConfig(Strict):
    """An EAGLE-3 head drafting from the target's captured hidden states (simulator.cost.eagle3). `head`: a
    head of models/heads/eagle3.yaml, an inline block of its config fields (hidden_size, intermediate_size,
    num_heads, num_kv_heads, head_dim, draft_vocab_size, target_hidden_size, vocab_size), or omitted: the
    catalog head published for the target. `gamma`: draft tokens per step of a chain (vLLM's
    num_speculative_tokens). A tree is `speculation: {kind: dynamic_tree, builder: eagle2, top_k, depth,
    budget}` = SGLang's speculative_eagle_topk, speculative_num_steps, speculative_num_draft_tokens, or vLLM's
    static speculative_token_tree `speculation: {kind: tree, builder: kary, k, depth}` (0.10.1 to 0.20.2; passes:
    simulator.cost.static_tree; a chain's constant/positional acceptance: simulator.speculation.spine_tree)."""

    kind: Literal["eagle3"]
    head: Annotated[str | dict[str, Any] | None, PATH_TEXT] = None
    gamma: int = Field(3, ge=0, le=64)


class MtpDrafterConfig(Strict):
    """The model's own multi-token-prediction modules (DeepSeek-V3/R1, GLM-4.5, …; simulator.cost.mtp).
    `gamma`: draft tokens per step (vLLM's num_speculative_tokens; draft pass j uses module j mod `modules`,
    so one shipped module is reused for every position); `modules`: MTP modules loaded (default: all the
    model ships, as vLLM; SGLang's NextN loads 1). Trees: as for eagle3 (SGLang's EAGLE worker runs MTP)."""

    kind: Literal["mtp"]
    gamma: int = Field(1, ge=0, le=64)
    modules: int | None = Field(None, ge=1, le=16)


class LayerSkipDrafterConfig(Strict):
    """Self-speculation: the target with only `layers_fraction` of its layers (rounded, at least one)."""

    kind: Literal["layer_skip"]
    gamma: int = Field(4, ge=0, le=64)
    layers_fraction: float = Field(0.5, gt=0.0, lt=1.0)


class NgramDrafterConfig(Strict):
    """Prompt lookup / n-gram drafting on the host: no GPU passes. `prompt_lookup_max`/`_min` (vLLM's names):
    the longest and shortest n-gram matched (used where the drafter runs on texts: acceptance `sessions`).
    Left out, they are what vLLM makes of them (vllm/config/speculative.py SpeculativeConfig.__post_init__, read
    in v0.8.2 through v0.33.0): neither given, 5 and 5; one given, the other equals it. Named approximation: vLLM
    before 0.8.2 required ngram_prompt_lookup_max and defaulted the minimum to 1 (vllm/config.py, v0.8.1); that
    rule is not applied (give both for those releases)."""

    kind: Literal["ngram"]
    gamma: int = Field(4, ge=0, le=64)
    prompt_lookup_max: int = Field(5, ge=1, le=64)
    prompt_lookup_min: int = Field(5, ge=1, le=64)
    # SGLang's NGRAM trie (--speculative-ngram-*, 0.5.10 on; on another engine or release they are refused where
    # the deployment is known: simulator.speculation.suffix.acceptance.bind_engine). Defaults and limits: SGLang's
    # (srt/server_args.py ServerArgs, arg_groups/fields/spec.py in 0.5.23; the checks of Ngram::Ngram, ngram.cpp).
    max_trie_depth: int = Field(18, ge=2, le=2**31 - 1)     # Ngram::Ngram: > 1; buildRecency casts to int32
    min_bfs_breadth: int = Field(1, ge=1, le=2**31 - 1)     # Ngram::Ngram: > 0
    max_bfs_breadth: int = Field(10, ge=1, le=2**31 - 1)
    match_type: Literal["BFS", "PROB"] = "BFS"
    capacity_nodes: int = Field(10_000_000, ge=3)           # --speculative-ngram-capacity: trie nodes, root included

    @model_validator(mode="after")
    def _vllm_window_defaults(self) -> "NgramDrafterConfig":
        """vLLM's defaults (class docstring): draftsim's own 3 and 1 were no vLLM release's, and a vLLM user's
        `{method: ngram, num_speculative_tokens: 4}` walked other lookups than vLLM runs (2026-11-29). The bound
        left out is filled after validation, so that `model_fields_set` keeps only the bounds the user wrote (a
        refusal names those: filled before validation, a `prompt_lookup_min` alone read as both given) and a bad
        value is refused by its own field's check. The fill writes the validated instance's field directly:
        the section is frozen, and `model_copy(update=...)` would mark the filled bound as given."""
        given = self.model_fields_set & {"prompt_lookup_max", "prompt_lookup_min"}
        if given == {"prompt_lookup_min"}:
            self.__dict__["prompt_lookup_max"] = self.prompt_lookup_min
        elif given == {"prompt_lookup_max"}:
            self.__dict__["prompt_lookup_min"] = self.prompt_lookup_max
        if self.prompt_lookup_min > self.prompt_lookup_max:
            raise ValueError("prompt_lookup_min must be <= prompt_lookup_max")
        if self.min_bfs_breadth > self.max_bfs_breadth:   # (SGLang's Ngram::Ngram raises at start)
            raise field_error("min_bfs_breadth", f"{self.min_bfs_breadth} is above max_bfs_breadth "
                              f"{self.max_bfs_breadth}, which SGLang's Ngram::Ngram refuses; allowed: 1 to "
                              f"{self.max_bfs_breadth}")
        if self.capacity_nodes <= self.max_trie_depth:
            raise field_error("capacity_nodes", f"{self.capacity_nodes} holds no window of max_trie_depth "
                              f"{self.max_trie_depth} past the root (SGLang's Trie::squeeze raises); allowed: >= "
                              f"{self.max_trie_depth + 1}")
        return self


class SuffixDrafterConfig(Strict):
    """Suffix decoding (vLLM `method: suffix`, ArcticInference's SuffixDecodingCache): suffix trees over each
    request's prompt and output and over the outputs of up to `max_cached_requests` earlier requests
    (0: no global tree; -1: no limit); each step it drafts the most frequent continuation of the longest
    useful match, at most min(gamma, max_spec_factor·match + max_spec_offset) tokens of estimated
    probability ≥ min_token_prob (simulator.speculation.suffix). `gamma` is vLLM's num_speculative_tokens;
    defaults are vLLM's (max_tree_depth 24, gamma = max_tree_depth, 10000 cached requests, factor 1.0,
    min_token_prob 0.1; max_spec_offset 0 as vLLM passes none). Host work only; its acceptance comes from
    running it on a session corpus (acceptance kind `sessions`)."""

    kind: Literal["suffix"]
    gamma: int = Field(24, ge=1, le=64)
    max_tree_depth: int = Field(24, ge=2, le=256)
    max_cached_requests: int = Field(10000, ge=-1)
    max_spec_factor: float = Field(1.0, ge=0.0, le=64.0)
    max_spec_offset: float = Field(0.0, ge=-64.0, le=64.0)
    min_token_prob: float = Field(0.1, ge=0.0, le=1.0)


class SessionsAcceptanceConfig(Strict):
    """Acceptance of a model-free drafter (drafter suffix or ngram) from running it on a corpus of real
    multi-turn sessions (profiles/data/acceptance/sessions: a shipped name or a parquet path relative to the
    scenario): per step, the tokens it proposes and the target accepts along the real text
    (simulator.speculation.suffix.acceptance). `workloads`: serve only these workloads' requests, named
    as in the corpus's `workload` column (code_edit, agentic in the generated corpus; sharegpt; default all)."""

    kind: Literal["sessions"]
    corpus: Annotated[str, PATH_TEXT] = "sessions-qwen2.5-coder-0.5b"
    workloads: list[str] | None = Field(None, min_length=1)


class SparseKVDrafterConfig(Strict):
    """Self-speculation with a sparse KV cache (MagicDec): the target drafts for itself attending to at
    most `kv_budget` cached tokens per request (StreamingLLM: attention sinks + a recent window), so its
    draft passes cost the weights plus a bounded KV read however long the context is
    (simulator.cost.sparse_kv)."""

    kind: Literal["sparse_kv"]
    gamma: int = Field(4, ge=0, le=64)
    kv_budget: int = Field(512, ge=1)


class CascadeStageConfig(Strict):
    """One stage of a cascade drafter: `model` (a catalog model on the target's first `tp` GPUs, or `self`:
    the target itself on all its GPUs; omit it for a statistical drafter such as CS Drafting's max-gram,
    which costs no GPU time) proposes the next `tokens` draft positions, attending to at most `kv_budget`
    cached tokens per request if set (TriForce's retrieval cache). `inner_gamma` ≥ 1 makes the stage a
    vertical cascade: the model verifies `inner_gamma` proposals of an inner drafter, each accepted with
    `inner_alpha`, instead of generating autoregressively (theory.cascade.expected_passes); the inner
    drafter is statistical (free) or `inner_model` (a catalog model, one-token passes: TriForce).
    `reuse_hit_rate` (Ouroboros' candidate reuse): the share of the stage's passes whose inner proposals
    are phrases kept from the target's earlier verifications, accepted with `reuse_alpha` instead of
    `inner_alpha` (theory.cascade.expected_passes)."""

    model: Annotated[str | None, PATH_TEXT] = None
    tokens: int = Field(ge=1, le=64)
    tp: int = Field(1, ge=1, le=64)
    kv_budget: int | None = Field(None, ge=1)
    inner_gamma: int = Field(0, ge=0, le=16)
    inner_alpha: float = Field(0.0, ge=0.0, le=1.0)
    inner_model: Annotated[str | None, PATH_TEXT] = None
    reuse_hit_rate: float = Field(0.0, ge=0.0, le=1.0)
    reuse_alpha: float | None = Field(None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _inner_needs_a_model(self) -> "CascadeStageConfig":
        if self.reuse_hit_rate > 0 and (not self.inner_gamma or self.reuse_alpha is None):
            raise ValueError("reuse_hit_rate replaces some inner proposals: it needs inner_gamma >= 1 and reuse_alpha")
        if self.reuse_alpha is not None and self.reuse_hit_rate == 0:
            raise ValueError("reuse_alpha is the acceptance of reused candidates: give reuse_hit_rate > 0")
        if self.inner_gamma and self.model is None:
            raise ValueError("inner_gamma needs a stage model (a statistical stage has no passes to save)")
        if self.inner_model is not None and not self.inner_gamma:
            raise ValueError("inner_model drafts for the stage model: give inner_gamma >= 1")
        if self.kv_budget is not None and self.model is None:
            raise ValueError("kv_budget applies to a stage model")
        return self


class CascadeDrafterConfig(Strict):
    """Cascade Speculative Drafting (CS Drafting, Chen et al. 2024): a horizontal cascade of `stages`,
    the first proposing the first draft positions, each later (cheaper) stage the next ones; a stage may
    itself be a vertical cascade (`inner_gamma`). γ = the stages' tokens summed. Give the per-position
    acceptance of the stages' positions with `acceptance: {kind: positional, alphas}`."""

    kind: Literal["cascade"]
    stages: list[CascadeStageConfig] = Field(min_length=1, max_length=4)

    @property
    def gamma(self) -> int:
        return sum(s.tokens for s in self.stages)


class ChainConfig(Strict):
    """A chain of drafter.gamma tokens. `alignment`: how the engine stores a batch whose requests accepted
    different numbers of tokens — `paged` (vLLM's paged KV: ragged natively, free) or `realign` (EQSPEC:
    padded tensors re-aligned after every verification, a rewrite of the batch's KV; simulator.cost.ragged)."""

    kind: Literal["chain"] = "chain"
    alignment: Literal["paged", "realign"] = "paged"


MAX_TREE_NODES = 1024   # the most nodes a tree verifies (TreeConfig/DynamicTreeConfig.budget)


class TreeConfig(Strict):
    """A static tree. `kary`: every node up to `depth`−1 has its top-`k` candidates; `medusa`: Medusa's
    greedy tree of `budget` nodes over `depth` heads; `sequoia`: Sequoia's DP-optimal tree of `budget`
    nodes and at most `depth` levels. `budget` counts nodes including the root."""

    kind: Literal["tree"]
    builder: Literal["kary", "medusa", "sequoia"]
    k: int = Field(2, ge=1, le=64)
    depth: int = Field(4, ge=1, le=64)
    budget: int = Field(16, ge=1, le=MAX_TREE_NODES)

    @model_validator(mode="after")
    def _kary_size(self) -> "TreeConfig":
        """A kary tree is full (budget unused): its 1 + k + … + k^depth nodes within the node budget's bound
        (k 64, depth 64 built nodes until the run was killed)."""
        if self.builder == "kary":
            nodes, level = 1, 1
            for _ in range(self.depth):
                level *= self.k
                nodes += level
                if nodes > MAX_TREE_NODES:
                    raise field_error("depth", f"a kary tree of k={self.k} and depth={self.depth} has more than "
                                               f"{MAX_TREE_NODES} nodes (1 + k + ... + k^depth); at most "
                                               f"{MAX_TREE_NODES}: lower k or depth")
        return self


class DynamicTreeConfig(Strict):
    """EAGLE-2 (`builder: eagle2`): expand the `top_k` best nodes per level for `depth` levels, keep the
    `budget` best nodes; OPT-Tree / DySpec (`builder: top_n`): the `budget` nodes of largest path product
    among all nodes of depth ≤ `depth` (best-first search, the maximum-expected-tokens tree; top_k unused).
    `per_context` (with `acceptance: {kind: contexts}`): re-shape the tree every step for the contexts the
    drafter sees at its nodes (EAGLE-2's confidence reranking / DySpec / OPT-Tree), instead of one tree
    for the mean (simulator.speculation.context_acceptance)."""

    kind: Literal["dynamic_tree"]
    builder: Literal["eagle2", "top_n"] = "eagle2"
    top_k: int = Field(4, ge=1, le=64)
    depth: int = Field(5, ge=1, le=64)
    budget: int = Field(32, ge=1, le=MAX_TREE_NODES)
    per_context: bool = False


class MultiDraftConfig(Strict):
    """n draft sequences of length drafter.gamma from the same prefix, verified with `scheme`: recursive
    rejection sampling (`rrs`, `rrs_wor` without replacement), K-SEQ (`kseq`), `naive`, or the optimal
    lossless verifier of Hu et al. / Khisti et al. (`optimal`: i.i.d. drafts, the sort-based closed form
    of theory.multidraft_optimal; `optimal_wor`: drafts without replacement, its coupling LP, small
    vocabularies only)."""

    kind: Literal["multidraft"]
    n: int = Field(2, ge=1, le=64)
    scheme: Literal["rrs", "rrs_wor", "kseq", "naive", "optimal", "optimal_wor"] = "rrs"


class RetrievalMergeConfig(Strict):
    """RASD (retrieval-augmented speculative decoding): the drafter's chain of drafter.gamma tokens and a
    retrieved continuation of `tokens` tokens (found for a step with probability `hit_rate`, each of its
    tokens accepted with `alpha` along the chain) verified together as one tree of two branches; a step
    accepts the longer accepted branch (simulator.speculation.retrieval_acceptance)."""

    kind: Literal["retrieval_merge"]
    tokens: int = Field(ge=1, le=64)
    alpha: float = Field(ge=0.0, le=1.0)
    hit_rate: float = Field(ge=0.0, le=1.0)


SpeculationConfig = Annotated[Union[ChainConfig, TreeConfig, DynamicTreeConfig, MultiDraftConfig,
                                    RetrievalMergeConfig],
                              Field(discriminator="kind")]


class RankedAcceptanceConfig(Strict):
    """Sequoia's positional model: accept_probs[k] = P(the child of rank k is the accepted one), the same
    at every node; siblings are exclusive so the list sums to at most 1. A chain uses accept_probs[0]."""

    kind: Literal["ranked"]
    accept_probs: list[Annotated[float, Field(ge=0.0, le=1.0)]] = Field(min_length=1)

    @model_validator(mode="after")
    def _exclusive(self) -> "RankedAcceptanceConfig":
        if sum(self.accept_probs) > 1.0 + 1e-9:
            raise ValueError(f"accept_probs must sum to at most 1 (siblings are exclusive), "
                             f"got {sum(self.accept_probs):.4g}")
        return self


class ContextClassConfig(Strict):
    weight: float = Field(gt=0.0, allow_inf_nan=False)
    accept_probs: list[Annotated[float, Field(ge=0.0, le=1.0)]] = Field(min_length=1)

    @model_validator(mode="after")
    def _exclusive(self) -> "ContextClassConfig":
        if sum(self.accept_probs) > 1.0 + 1e-9:
            raise ValueError(f"accept_probs must sum to at most 1 (siblings are exclusive), "
                             f"got {sum(self.accept_probs):.4g}")
        return self


class ContextsAcceptanceConfig(Strict):
    """Acceptance that depends on the context: every draft-tree node falls in one of `contexts` classes
    (probability ∝ `weight`, independently per node), each with Sequoia's per-rank accept_probs (e.g.
    positions where the draft is confident and right vs. hard identifiers; derive them from a measured
    trace with profiles.acceptance.trace.confidence_classes). Shapes that do not look at the classes
    accept as `ranked` with the mean; `dynamic_tree` with `per_context` is re-shaped per step
    (theory.context_trees)."""

    kind: Literal["contexts"]
    contexts: list[ContextClassConfig] = Field(min_length=1, max_length=16)

    @model_validator(mode="after")
    def _finite_weights(self) -> "ContextsAcceptanceConfig":
        total = sum(c.weight for c in self.contexts)   # (normalised by it: 1e308 + 1e308 is inf)
        if not math.isfinite(total):
            raise field_error("contexts", f"the weights sum to {total}; expected a finite sum (the classes' "
                                          "probabilities are the weights over it)")
        return self


class DriftingAcceptanceConfig(Strict):
    """Per-token acceptance that changes over the run (Online Speculative Decoding's draft distilled on
    served traffic; a drifting traffic mix): α of the request numbered r in arrival order is piecewise
    linear through `points` [[request index, α], …] (ascending indices, below MAX_NUM_REQUESTS: a run has
    no more requests, and a 400-digit index overflowed the float conversion), constant outside them
    (simulator.speculation.drifting_acceptance). Chains only."""

    kind: Literal["drifting"]
    points: list[Annotated[tuple[Annotated[int, Field(ge=0, lt=MAX_NUM_REQUESTS)], Annotated[float, Field(ge=0.0, le=1.0)]],
                          FROM_YAML]] = Field(min_length=1)

    @model_validator(mode="after")
    def _ascending(self) -> "DriftingAcceptanceConfig":
        idx = [p[0] for p in self.points]
        if any(b <= a for a, b in zip(idx, idx[1:])):
            raise ValueError(f"points' request indices must be strictly ascending, got {idx}")
        return self


class PairAcceptanceConfig(Strict):
    """A stationary target/draft pair (p, q) over a small vocabulary: explicit `p` and `q`, or the
    synthetic family p ∝ rank^−zipf, q ∝ p^q_power over `vocab` tokens (q_power < 1: a flatter drafter).
    Chains accept with β = Σ min(p, q); trees use theory.trees.positional_accept_probs (rrs_wor);
    multi-draft uses theory.multidraft.acceptance(p, q, n, scheme) at the branching position."""

    kind: Literal["pair"]
    p: list[Annotated[float, Field(ge=0.0, allow_inf_nan=False)]] | None = None
    q: list[Annotated[float, Field(ge=0.0, allow_inf_nan=False)]] | None = None
    vocab: int = Field(12, ge=2, le=4096)
    zipf: float = Field(1.2, gt=0.0, le=10.0)
    q_power: float = Field(0.6, gt=0.0, le=10.0)

    @model_validator(mode="after")
    def _both_or_neither(self) -> "PairAcceptanceConfig":
        if (self.p is None) != (self.q is None):
            raise ValueError("give both p and q, or neither (then vocab/zipf/q_power define them)")
        if self.p is not None and (len(self.p) != len(self.q) or sum(self.p) <= 0 or sum(self.q) <= 0):
            raise ValueError("p and q must have the same length and positive sums")
        for name, weights in (("p", self.p), ("q", self.q)):   # (normalised by their sums: 1e308 + 1e308 is inf)
            if weights is not None and not math.isfinite(sum(weights)):
                raise field_error(name, f"sums to {sum(weights)}; expected a finite sum (the weights are "
                                        "normalised by it)")
        return self


class PublishedAcceptanceConfig(Strict):
    """Acceptance from the registry of published figures (profiles/data/acceptance_published/,
    simulator.speculation.published): one row, named by `entry` or selected by the keys given (method,
    target, draft, dataset, temperature; rows with per-position figures first, then the chain whose depth
    is closest to drafter.gamma). Converted to per-position rates by the registry's stated rule; `depth`
    states the depth assumed for a row that publishes none; `first_alpha_entry` takes the first position's
    acceptance from another row and decays geometrically to `entry`'s acceptance length. Chains, and
    SGLang's EAGLE tree (`speculation: dynamic_tree`, builder eagle2) measured with the same steps, top-k
    and draft tokens as the row (simulator.speculation.published_tree); other trees need per-rank
    acceptance."""

    kind: Literal["published"]
    entry: str | None = None
    first_alpha_entry: str | None = None  # α1 from this row, the decay from `entry`'s length (decayed_alphas)
    method: str | None = None
    target: str | None = None
    draft: str | None = None
    dataset: str | None = None
    temperature: float | None = Field(None, ge=0.0, allow_inf_nan=False)
    depth: int | None = Field(None, ge=1, le=64)

    @field_validator("entry", "first_alpha_entry")
    @classmethod
    def _a_registry_row(cls, entry: str | None) -> str | None:
        """A row of the registry: an unknown one was found only when the replica was built, so beside drafter
        `none` (the section then unread) `entry: nope` ran, exit 0."""
        if entry is not None:
            from simulator.speculation.published import RegistryError, find_entry
            try:
                find_entry(entry)
            except RegistryError as exc:
                raise ValueError(exc.message) from None
        return entry

    @model_validator(mode="after")
    def _one_way(self) -> "PublishedAcceptanceConfig":
        keys = (self.method, self.target, self.draft, self.dataset, self.temperature)
        if self.entry is not None and any(k is not None for k in keys):
            raise ValueError("give either entry or the selection keys (method, target, ...), not both")
        if self.entry is None and (self.method is None or self.target is None):
            raise ValueError("give entry, or at least method and target to select a published row")
        if self.first_alpha_entry is not None and self.entry is None:
            raise ValueError("first_alpha_entry combines with entry (the row giving the acceptance length)")
        return self


class FixedPolicyConfig(Strict):
    kind: Literal["fixed"] = "fixed"


class SmartSpecPolicyConfig(Strict):
    """Per step, the γ in 0..max_gamma maximising expected tokens / step time for the current batch."""

    kind: Literal["smartspec"]
    max_gamma: int = Field(8, ge=1, le=64)


class SpecDecPPPolicyConfig(Strict):
    """Per request and step, stop drafting once P(some draft rejected) exceeds `threshold`."""

    kind: Literal["specdecpp"]
    threshold: float = Field(0.7, ge=0.0, le=1.0)


class TetrisPolicyConfig(Strict):
    """Per step, choose each request's draft count (≤ drafter.gamma) under `budget_tokens` draft tokens."""

    kind: Literal["tetris"]
    budget_tokens: int = Field(64, ge=1)


class ThompsonPolicyConfig(Strict):
    """Per step, the γ in 0..max_gamma SmartSpec would choose for an α drawn from the Beta posterior of the
    acceptances seen so far (online estimation, Thompson sampling; simulator.speculation.control.thompson)."""

    kind: Literal["thompson"]
    max_gamma: int = Field(8, ge=1, le=64)
    seed: int = Field(0, ge=0)


class SpecReasonPolicyConfig(Strict):
    """Reasoning-step speculation (SpecReason): after the large model rejects a drafted step (acceptance
    `step_level`), it regenerates the step itself (drafter.gamma − 1 plain decode steps), then the small
    model drafts the next step (simulator.speculation.control.specreason)."""

    kind: Literal["specreason"]


class StepLevelAcceptanceConfig(Strict):
    """Reasoning-step acceptance: a drafted step of drafter.gamma tokens is accepted whole with probability
    `accept`, else not at all (simulator.speculation.step_level)."""

    kind: Literal["step_level"]
    accept: float = Field(ge=0.0, le=1.0)


class LoadSwitchPolicyConfig(Strict):
    """Speculate as configured, but decode plainly in steps whose batch exceeds `max_batch` or while the
    waiting queue exceeds `max_queue` (either may be omitted)."""

    kind: Literal["load_switch"]
    max_batch: int | None = Field(None, ge=0)
    max_queue: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _some_threshold(self) -> "LoadSwitchPolicyConfig":
        if self.max_batch is None and self.max_queue is None:
            raise ValueError("give max_batch and/or max_queue")
        return self


class ProposedPolicyConfig(Strict):
    """Each request verifies the draft tokens its drafter actually proposed this step (at most γ): an
    n-gram lookup proposes nothing when the context has no match, and then the request decodes one token,
    as vLLM's n-gram proposer does. Needs measured proposal lengths: acceptance kind trace with drafter ngram, or
    sessions (suffix decoding always verifies what it proposed: `fixed` means this for drafter suffix)."""

    kind: Literal["proposed"]


class PearlPolicyConfig(Strict):
    """PEARL's pre-verify and post-verify (simulator.speculation.control.pearl): with the draft on its own
    GPUs (drafter.placement: separate), each request alternates between verifying its window's first token
    while the rest is drafted and verifying the window while the next one is drafted; a step lasts
    max(draft, verify). drafter.gamma is the window."""

    kind: Literal["pearl"]


class VllmDynamicPolicyConfig(Strict):
    """vLLM's Dynamic Speculative Decoding (v0.24+): `schedule` is num_speculative_tokens_per_batch_size, a list
    of inclusive [start_batch, end_batch, K] (the first starting at 1, ranges ascending and disjoint);
    drafter.gamma is num_speculative_tokens (simulator.speculation.control.vllm_dynamic)."""

    kind: Literal["vllm_dynamic"]
    schedule: list[Annotated[tuple[Annotated[int, Field(ge=1)], Annotated[int, Field(ge=1)], Annotated[int, Field(ge=0)]],
                            FROM_YAML]] = Field(min_length=1)

    @model_validator(mode="after")
    def _ranges(self) -> "VllmDynamicPolicyConfig":
        ranges = sorted((a, b) for a, b, _ in self.schedule)
        if any(a > b for a, b in ranges):
            raise ValueError("each schedule entry is [start_batch, end_batch, K] with start_batch <= end_batch")
        if ranges[0][0] != 1:
            raise ValueError("the first schedule range must start at batch size 1 (as vLLM requires)")
        if any(b2 <= e1 for (_, e1), (b2, _) in zip(ranges, ranges[1:])):
            raise ValueError("schedule ranges must not overlap")
        return self


class TrtllmSchedulePolicyConfig(Strict):
    """TensorRT-LLM's draft_len_schedule {max batch size: draft length} (a batch above every key drafts 0)
    and its acceptance gate, speculation off for good once it trips (simulator.speculation.control.
    trtllm_schedule), in the release's form: before PR #12905 `acceptance_window` completed requests whose mean
    accepted length falls below `acceptance_length_threshold`; from it (TensorRT-LLM >= 1.3.0rc27 here)
    `acceptance_rate_window_size` speculating iterations whose mean acceptance rate (accepted / drafted
    tokens of the iteration) falls below `acceptance_rate_threshold` (0 to 1). drafter.gamma is max_draft_len."""

    kind: Literal["trtllm_schedule"]
    draft_len_schedule: dict[Annotated[int, Field(ge=1)], Annotated[int, Field(ge=0)]] | None = None
    acceptance_window: int | None = Field(None, ge=0)
    acceptance_length_threshold: float | None = Field(None, ge=0.0, allow_inf_nan=False)
    acceptance_rate_window_size: int | None = Field(None, ge=0)
    acceptance_rate_threshold: float | None = Field(None, ge=0.0, le=1.0, allow_inf_nan=False)

    @property
    def gate(self) -> str | None:
        """Which acceptance gate the policy gives: "length" (acceptance_window ...), "rate"
        (acceptance_rate_window_size ...) or None."""
        if self.acceptance_rate_window_size is not None or self.acceptance_rate_threshold is not None:
            return "rate"
        if self.acceptance_window is not None or self.acceptance_length_threshold is not None:
            return "length"
        return None

    @model_validator(mode="after")
    def _something(self) -> "TrtllmSchedulePolicyConfig":
        length = self.acceptance_window is not None or self.acceptance_length_threshold is not None
        rate = self.acceptance_rate_window_size is not None or self.acceptance_rate_threshold is not None
        if length and rate:
            raise ValueError("give one acceptance gate: acceptance_window with acceptance_length_threshold "
                             "(TensorRT-LLM before PR #12905) or acceptance_rate_window_size with "
                             "acceptance_rate_threshold (from it), not both")
        gate_on = (self.acceptance_window and self.acceptance_length_threshold is not None) or \
            (self.acceptance_rate_window_size and self.acceptance_rate_threshold is not None)
        if not self.draft_len_schedule and not gate_on:
            raise ValueError("give draft_len_schedule and/or acceptance_window with acceptance_length_threshold "
                             "(or acceptance_rate_window_size with acceptance_rate_threshold)")
        return self


class SglangSlotConfig(Strict):
    candidate_steps: list[Annotated[int, Field(ge=0, le=64)]] = Field(min_length=1)
    up_hysteresis: float = Field(0.0, allow_inf_nan=False)
    down_hysteresis: float = Field(-0.25, allow_inf_nan=False)
    ceiling_coeff: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    ema_alpha: float | None = Field(None, gt=0.0, le=1.0)
    update_interval: int | None = Field(None, ge=1)
    warmup_batches: int | None = Field(None, ge=0)


class SglangAdaptivePolicyConfig(Strict):
    """SGLang's --speculative-adaptive (EAGLE, topk 1): per batch-size slot, draft steps chosen from
    `candidate_steps` by an EMA of accepted lengths with hysteresis (simulator.speculation.control.
    sglang_adaptive). `slots` {batch-size key: slot} defaults to SGLang's DEFAULT_ADAPTIVE_CONFIG;
    `initial_steps` is speculative_num_steps (default drafter.gamma); drafter.gamma must cover the deepest
    candidate; `cuda_graph_max_bs` bounds the CUDA-graph batch sizes a batch is padded to before routing."""

    kind: Literal["sglang_adaptive"]
    slots: dict[Annotated[int, Field(ge=1)], SglangSlotConfig] | None = None
    initial_steps: int | None = Field(None, ge=0, le=64)
    ema_alpha: float = Field(0.2, gt=0.0, le=1.0)
    update_interval: int = Field(5, ge=1)
    warmup_batches: int = Field(10, ge=0)
    cuda_graph_max_bs: int = Field(256, ge=1)


PolicyConfig = Annotated[Union[FixedPolicyConfig, SmartSpecPolicyConfig, SpecDecPPPolicyConfig, TetrisPolicyConfig,
                               LoadSwitchPolicyConfig, SpecReasonPolicyConfig, ThompsonPolicyConfig,
                               ProposedPolicyConfig, PearlPolicyConfig, VllmDynamicPolicyConfig,
                               TrtllmSchedulePolicyConfig, SglangAdaptivePolicyConfig],
                         Field(discriminator="kind")]
