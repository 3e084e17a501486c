"""Which `cluster.engine` flags a framework version has, and which combinations each engine version refuses.

`check(settings, context)` raises `UnsupportedCombination(field, message)` — one line naming the field,
the engine and its version, and what is allowed (the versions that have the flag, or the combination the
engine runs instead) — before any work starts. Every rule cites where the engine says so.

Flags (`FLAGS`): a field → the frameworks and version ranges that have it. Refused combinations (`RULES`):
speculation with pipeline parallelism, with DP attention, with mixed chunked prefill, with multi-step
scheduling, async scheduling with the speculation methods an engine runs synchronously, a speculation
method before the release that added it (vLLM: draft models from 0.4.1, n-gram 0.4.2, Medusa 0.5.2, EAGLE 0.5.5,
MTP 0.7.3, EAGLE-3 0.8.5, and in V1 EAGLE from 0.8.3, Medusa and MTP from 0.9.0; SGLang likewise; TensorRT-LLM's
final releases by its release notes), draft models
where an engine version has none, Medusa where a vLLM release no longer has it (0.33.0), suffix decoding
where an engine (version) has none, policy proposed (vLLM's ragged verification) on SGLang and
TensorRT-LLM, and vLLM's Dynamic
SD (policy vllm_dynamic) before its release, on other engines, and with data parallelism (where vLLM
turns it off and runs num_speculative_tokens every step: refused rather than silently run as policy fixed).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from profiles.measured.source import is_prerelease, version_key

INF = "999"


class UnsupportedCombination(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


@dataclass(frozen=True)
class Context:
    """What of the scenario the rules read. `drafter`: the engine family of the drafter (eagle, medusa,
    draft_model, ngram, layer_skip; None without speculation); `tree`: the verification is a tree;
    `mixed_chunks`: the batching scheduler puts prompt chunks into decode steps (sarathi, vllm_v1);
    `attention_dp`: data-parallel attention groups (ep / tp), vLLM's --data-parallel-size ranks;
    `policy`: the scenario's control policy kind; `gate`: which acceptance gate a trtllm_schedule policy gives, `schedule`: whether it gives a draft_len_schedule."""

    drafter: str | None = None
    tree: bool = False
    pp: int = 1
    attention_dp: int = 1
    mixed_chunks: bool = False
    num_scheduler_steps: int = 1
    chunked_prefill: bool | None = None
    prefix_caching: bool | None = None
    policy: str | None = None            # the control policy's kind (policy.kind), None: fixed
    tp: int = 1                          # the target's tensor parallelism
    draft_tp: int | None = None          # a draft model's tensor parallelism (drafter.tp; None: no draft model)
    method: str | None = None            # eagle3 and mtp apart from their family `eagle`; else the family
    gate: str | None = None              # policy trtllm_schedule's acceptance gate: "length", "rate" or None
    schedule: bool = False               # policy trtllm_schedule gives a draft_len_schedule
    passes: str | None = None            # a draft model's pass layout (drafter.passes: chain | vllm; None: no draft model)


@dataclass(frozen=True)
class Span:
    """`framework` releases lo to hi (excl.); `finals`: final releases (and their .postN) only, for a rule cited
    from release notes, which describe final releases (a pre-release, rc or dev, is never refused by it)."""

    framework: str
    lo: str = "0"
    hi: str = INF              # exclusive
    finals: bool = False

    def holds(self, framework: str, version: str) -> bool:
        return (framework == self.framework and not (self.finals and is_prerelease(version))
                and version_key(self.lo) <= version_key(version) < version_key(self.hi))

    def text(self) -> str:
        if self.hi == INF:
            return f"{self.framework} >= {self.lo}" if self.lo != "0" else f"{self.framework} (all versions)"
        return f"{self.framework} {self.lo} to {self.hi} (excl.)" if self.lo != "0" else f"{self.framework} < {self.hi}"


# field -> (spans that have it, what the flag is called there)
FLAGS: dict[str, tuple[tuple[Span, ...], str]] = {
    "num_scheduler_steps": ((Span("vllm", "0.6.0", "0.8.0"),),
                            "vLLM V0 --num-scheduler-steps (PR #7000, v0.6.0; V1 from 0.8.0 has none: 'Multi-step "
                            "scheduling is not supported (and not needed) on VLLM V1')"),
    "async_scheduling": ((Span("vllm", "0.10.0"), Span("sglang", "0.4.0"), Span("trtllm", "1.0.0")),
                         "vLLM --async-scheduling (PR #19970, v0.10.0; default from v0.14.0), SGLang's overlap "
                         "scheduler (v0.4; --disable-overlap-schedule), TensorRT-LLM's overlap scheduler "
                         "(disable_overlap_scheduler)"),
    "graph_padding": ((Span("sglang", "0.4.0"), Span("trtllm", "1.0.0")),
                      "SGLang --disable-cuda-graph-padding, TensorRT-LLM cuda_graph_config.enable_padding (vLLM always "
                      "pads to its capture sizes)"),
    "capture_sizes": ((Span("vllm", "0.8.0"), Span("sglang", "0.4.0"), Span("trtllm", "1.0.0")),
                      "vLLM compilation_config.cudagraph_capture_sizes (V1), SGLang --cuda-graph-bs, TensorRT-LLM "
                      "cuda_graph_config.batch_sizes (vLLM V0 captures a fixed list)"),
}


@dataclass(frozen=True)
class Rule:
    span: Span
    when: Callable[[object, Context], bool]
    field: str
    says: str                  # what the engine does instead / why, with the citation


def _spec(s, c: Context) -> bool:
    return c.drafter is not None


def _method(c: Context) -> str | None:
    """The speculation method as vLLM names it apart (eagle3, mtp), else the drafter's family."""
    return c.method or c.drafter


def _dynamic_sd(s, c: Context) -> bool:
    return c.policy == "vllm_dynamic"


_DRAFT_MODEL_ALLOWED = ("allowed: a version >= 0.15.0 (or a V0 release 0.4.1 to 0.8.0 (excl.)), or a method this "
                        "release has: ngram, eagle (from 0.8.3), medusa (from 0.9.0)")
# vLLM: a speculation method (Context.method) -> the releases that have it (the RULES' comment on vLLM's methods)
_VLLM_FIRST = {
    "draft_model": "a version 0.4.1 to 0.8.0 (excl.) or >= 0.15.0",
    "layer_skip": "a version >= 0.4.1 (vLLM has no layer skipping; it runs as a draft model)",
    "ngram": "a version >= 0.4.2",
    "medusa": "a version 0.5.2 to 0.8.0 (excl.) or 0.9.0 to 0.33.0 (excl.)",
    "eagle": "a version 0.5.5 to 0.8.0 (excl.) or >= 0.8.3",
    "mtp": "a version 0.7.3 to 0.8.0 (excl.) or >= 0.9.0",
    "eagle3": "a version >= 0.8.5",
}
_DSD = "Dynamic SD (num_speculative_tokens_per_batch_size, PR #32374, first released in v0.24.0)"
_SUFFIX = ("suffix decoding (vLLM method: suffix, PR #25784: not in v0.11.0, whose release it postdates; documented "
           "from v0.12.0)")


def _vllm_lacks(lo: str, hi: str, method: str, why: str) -> Rule:
    """vLLM releases lo..hi (excl.) refuse speculation `method` (Context.method, else the drafter's family):
    `why`, then the releases that have it (_VLLM_FIRST)."""
    return Rule(Span("vllm", lo, hi), lambda s, c: _method(c) == method, "cluster.engine.version",
                f"{why}; allowed: {_VLLM_FIRST[method]}")


RULES: tuple[Rule, ...] = (
    # vLLM's speculation methods by release (read in the PyPI sources: the v0.3.3, v0.4.1-v0.4.2, v0.5.0-v0.5.5,
    # v0.6.0, v0.7.0-v0.7.3, v0.8.0-v0.8.5, v0.9.0-v0.9.2 and v0.10.0 sdists, the v0.4.0 and v0.4.0.post1 wheels).
    # V0 (draftsim's releases before 0.8.0): vllm/spec_decode/ and --speculative-model (draft models) from v0.4.1
    # (absent from v0.4.0 and v0.4.0.post1); ngram_worker.py ([ngram] prompt lookup, PR #4237) from v0.4.2;
    # mlp_speculator_worker.py from v0.5.1; medusa_worker.py (Medusa) from v0.5.2; model_executor/models/eagle.py
    # (EAGLE, PR #6830) from v0.5.5; models/deepseek_mtp.py (DeepSeek MTP, PR #12755) from v0.7.3; no EAGLE-3 in
    # any V0 spec_decode/. V1 (draftsim's releases from 0.8.0; EngineArgs._is_v1_supported_oracle sends any other
    # method back to V0, 'Falling back to V0', which draftsim does not model from 0.8.0; V0's spec_decode/ is gone
    # from v0.10.0): [ngram] from v0.8.0, method eagle from v0.8.3 (v1/spec_decode/eagle.py), eagle3 from v0.8.5
    # (PR #16937), medusa (v1/spec_decode/medusa.py) and deepseek_mtp from v0.9.0; draft models, suffix decoding and
    # Medusa's removal: the rules below
    *(_vllm_lacks("0", "0.4.1", method, "has no speculative decoding (no --speculative-model or vllm/spec_decode/ "
                  "before v0.4.1, which brought draft models; read in the v0.3.3 sdist and the v0.4.0 and v0.4.0.post1 "
                  "wheels)")
      for method in _VLLM_FIRST),
    _vllm_lacks("0.4.1", "0.4.2", "ngram", "has no n-gram speculation ([ngram] prompt lookup, PR #4237, "
                "vllm/spec_decode/ngram_worker.py from v0.4.2)"),
    _vllm_lacks("0.4.1", "0.5.2", "medusa", "has no Medusa speculation (vllm/spec_decode/medusa_worker.py from v0.5.2; "
                "MLPSpeculator from v0.5.1)"),
    _vllm_lacks("0.8.0", "0.9.0", "medusa", "has no Medusa speculation in its V1 engine "
                "(EngineArgs._is_v1_supported_oracle falls back to V0, which draftsim does not model from 0.8.0; method "
                "medusa, vllm/v1/spec_decode/medusa.py, from v0.9.0)"),
    _vllm_lacks("0.4.1", "0.5.5", "eagle", "has no EAGLE speculation (PR #6830, vllm/model_executor/models/eagle.py "
                "from v0.5.5)"),
    _vllm_lacks("0.8.0", "0.8.3", "eagle", "has no EAGLE speculation in its V1 engine "
                "(EngineArgs._is_v1_supported_oracle takes [ngram] only and falls back to V0, which draftsim does not "
                "model from 0.8.0; method eagle, vllm/v1/spec_decode/eagle.py, from v0.8.3)"),
    _vllm_lacks("0.4.1", "0.7.3", "mtp", "has no MTP speculation (DeepSeek MTP, PR #12755, "
                "vllm/model_executor/models/deepseek_mtp.py from v0.7.3)"),
    _vllm_lacks("0.8.0", "0.9.0", "mtp", "has no MTP speculation in its V1 engine (EngineArgs._is_v1_supported_oracle "
                "falls back to V0, which draftsim does not model from 0.8.0; method deepseek_mtp in V1 from v0.9.0)"),
    _vllm_lacks("0.4.1", "0.8.5", "eagle3", "has no EAGLE-3 speculation (method eagle3, PR #16937, first in v0.8.5's "
                "V1 engine; no V0 release has it)"),
    Rule(Span("vllm", "0.6.0", "0.8.0"), lambda s, c: c.num_scheduler_steps > 1 and _spec(s, c), "drafter.kind",
         "refuses speculative decoding with multi-step scheduling (--num-scheduler-steps > 1; "
         "vllm/engine/arg_utils.py create_engine_config)"),
    Rule(Span("vllm", "0.6.0", "0.6.3"), lambda s, c: c.num_scheduler_steps > 1 and c.mixed_chunks, "scheduler.kind",
         "refuses chunked prefill with multi-step scheduling ('Chunked prefill is not supported with multi-step', "
         "vLLM issue #8274; supported from v0.6.3, PR #8645): use scheduler kind vllm"),
    Rule(Span("vllm", "0.8.0", "0.16.0"), lambda s, c: _spec(s, c) and c.pp > 1, "cluster.parallelism.pp",
         "does not compose speculative decoding with pipeline parallelism (docs, speculative decoding, 'Known "
         "Feature Incompatibility': not composable as of vllm<=0.15.0)"),
    Rule(Span("vllm", "0.15.0"), lambda s, c: c.drafter == "draft_model" and c.draft_tp not in (None, 1, c.tp),
         "drafter.tp", "runs a draft model at tensor parallelism 1 or the target's only "
         "(vllm/config/speculative.py SpeculativeConfig._verify_and_get_draft_tp, read in v0.11.0 and v0.32.0: "
         "'cannot be other value than 1 or target model tensor_parallel_size')"),
    Rule(Span("vllm", "0.8.0", "0.11.0"), lambda s, c: c.drafter == "draft_model", "cluster.engine.version",
         f"has no draft-model speculation in its V1 engine (docs, 'Known Feature Incompatibility': not supported in "
         f"vllm<=0.10.0); {_DRAFT_MODEL_ALLOWED}"),
    Rule(Span("vllm", "0.11.0", "0.15.0"), lambda s, c: c.drafter == "draft_model", "cluster.engine.version",
         "raises at start-up for a draft model ('Speculative decoding with draft model is not supported yet', "
         "vllm/config/speculative.py SpeculativeConfig.__post_init__ in v0.11.0 through v0.14.x; v0.15.0 runs "
         f"method draft_model, vllm/v1/spec_decode/draft_model.py); {_DRAFT_MODEL_ALLOWED}"),
    # drafter.passes 'vllm' prices vLLM V1's DraftModelProposer (vllm/v1/spec_decode/draft_model.py, first in v0.15.0:
    # the rule above); another engine, or a vLLM release without it, runs its draft model otherwise
    *(Rule(span, lambda s, c: c.passes == "vllm", "drafter.passes",
           "has no vLLM V1 DraftModelProposer (vllm/v1/spec_decode/draft_model.py, from vLLM v0.15.0), the pass layout "
           "'vllm' prices; expected 'chain' here")
      for span in (Span("vllm", "0", "0.15.0"), Span("sglang"), Span("trtllm"))),
    Rule(Span("vllm", "0.10.0", "0.14.0"), lambda s, c: s.async_scheduling is True and _spec(s, c),
         "cluster.engine.async_scheduling",
         "runs async scheduling without speculative decoding only (PR #19970; EAGLE/MTP with async scheduling "
         "from v0.14.0, PR #31998)"),
    Rule(Span("vllm", "0.14.0", "0.16.0"), lambda s, c: s.async_scheduling is True and c.drafter in (
            "ngram", "draft_model", "medusa", "layer_skip", "suffix"),
         "cluster.engine.async_scheduling",
         "runs async scheduling with EAGLE/MTP speculation only (v0.14.0 release notes; PR #31998; "
         "vllm/config/vllm.py, VllmConfig.__post_init__ through v0.15.1: 'only supported with EAGLE/MTP')"),
    Rule(Span("vllm", "0.16.0", "0.33.0"), lambda s, c: s.async_scheduling is True and c.drafter in ("ngram", "medusa"),
         "cluster.engine.async_scheduling",
         "runs async scheduling with EAGLE/MTP and draft-model speculation only (vllm/config/vllm.py, "
         "VllmConfig.__post_init__: 'only supported with EAGLE/MTP/Draft Model' from v0.16.0; layer skipping is "
         "treated as a draft model; its GPU n-gram is method ngram_gpu, which draftsim does not model)"),
    Rule(Span("vllm", "0.16.0"), lambda s, c: s.async_scheduling is True and c.drafter == "suffix",
         "cluster.engine.async_scheduling",
         "runs suffix decoding synchronously (vllm/config/vllm.py, VllmConfig.__post_init__: method suffix is not "
         "among the async-scheduling methods in any release, and Model Runner V2 does not run it)"),
    Rule(Span("vllm", "0.33.0"), lambda s, c: c.drafter == "medusa", "drafter.kind",
         "has no Medusa speculation (vllm/config/speculative.py SpeculativeMethod lists no 'medusa' and "
         "vllm/v1/spec_decode/medusa.py is gone from v0.33.0; v0.32 was the last release with it): use version "
         "0.32.0, or an EAGLE-style head (style autoregressive)"),
    Rule(Span("vllm", "0.33.0"), lambda s, c: s.async_scheduling is True and c.drafter == "ngram",
         "cluster.engine.async_scheduling",
         "runs method ngram on the GPU with async scheduling (Model Runner V2's NgramGPUSpeculator, "
         "vllm/v1/worker/gpu/spec_decode/__init__.py init_speculator), which draftsim does not model: its ngram "
         "drafter is the CPU proposer of v0.32 and earlier (use version 0.32.0)"),
    Rule(Span("vllm", "0", "0.12.0"), lambda s, c: c.drafter == "suffix", "drafter.kind",
         f"has no {_SUFFIX}; older releases ran it only through the ArcticInference plugin, which is not modelled"),
    Rule(Span("sglang"), lambda s, c: c.drafter == "suffix", "drafter.kind",
         "has no suffix decoding (the PRs that would add it, #13553 and #27582, were closed unmerged); its "
         "model-free drafter is drafter kind ngram"),
    # TensorRT-LLM's speculation methods by final release, from its release notes (docs/source/release-notes.md;
    # its wheels are not on PyPI, so no release's sources were read): Medusa from 0.8.0 ('Medusa decoding
    # support'; 0.7.1's notes have only 'Speculative decoding (preview)'), EAGLE and prompt lookup (n-gram) from
    # 0.15.0 ('Added support for EAGLE', 'Added support for prompt-lookup speculative decoding'), EAGLE-3 and MTP
    # from 0.19.0 (its PyTorch workflow: 'Added initial EAGLE-3 implementation', 'Added Multi-Token Prediction
    # (MTP) support'; 0.18.x 'builds upon the 0.17.0 release'). Pre-releases are not checked (Span.finals). Draft
    # models are not checked (the first release is not pinned from the notes)
    *(Rule(Span("trtllm", "0", first, finals=True), (lambda m: lambda s, c: _method(c) == m)(method),
           "cluster.engine.version", f"has no {name} ({why}, TensorRT-LLM release notes {first}); allowed: a "
                                     f"version >= {first}")
      for method, first, name, why in (
          ("medusa", "0.8.0", "Medusa speculation", "'Medusa decoding support'"),
          ("eagle", "0.15.0", "EAGLE speculation", "'Added support for EAGLE'"),
          ("ngram", "0.15.0", "n-gram speculation", "'Added support for prompt-lookup speculative decoding'"),
          ("eagle3", "0.19.0", "EAGLE-3 speculation", "'Added initial EAGLE-3 implementation', PyTorch workflow"),
          ("mtp", "0.19.0", "MTP speculation", "'Added Multi-Token Prediction (MTP) support', PyTorch workflow"))),
    Rule(Span("trtllm"), lambda s, c: c.drafter == "suffix", "drafter.kind",
         "has no suffix decoding (PRs #9706 and #9912, which would add ArcticInference's SuffixDecodingCache, were "
         "closed unmerged); its model-free drafter is drafter kind ngram; its suffix-automaton drafter "
         "(SADecodingConfig, decoding_type SA, PR #11434: a longest-match automaton per request unless enable_global_pool, in the API reference "
         "of 1.3.0rc27 and 1.4.0rc4, first release not pinned) is another proposer, not modelled"),
    # policy 'proposed' (each request verifies only the tokens its drafter proposed, none without a match) is vLLM's
    # n-gram and suffix rule (its V1 proposers return an empty draft and the request schedules one token). SGLang and
    # TensorRT-LLM verify a fixed width whatever was matched, which is policy fixed: SGLang's NGRAM worker
    # (speculative/ngram_worker.py _prepare_draft_tokens, read in v0.5.3 and v0.5.23: 'here we always enforce it',
    # assert total_draft_token_num == bs * draft_token_num, every request speculative_num_draft_tokens rows; its EAGLE
    # and STANDALONE workers verify num_draft_tokens too); TensorRT-LLM's PyTorch executor pads every generation
    # request's drafts to the static maximum (_torch/speculative/drafter.py pad_draft_tokens_for_cuda_graph, called
    # after prepare_draft_tokens in _torch/pyexecutor/py_executor.py; the earlier NGramDrafter, _torch/speculative/
    # ngram.py, padded any match to max_draft_len: stored sources, release not known). TensorRT-LLM 0.x's C++
    # runtime was not read: refused there too, as no source shows it verifying ragged drafts
    *(Rule(Span(fw), lambda s, c: c.policy == "proposed", "policy.kind",
           f"has no ragged verification (policy proposed is vLLM's n-gram rule): {why}; use policy fixed")
      for fw, why in (
          ("sglang", "every request verifies speculative_num_draft_tokens each step, matched or not "
                     "(speculative/ngram_worker.py _prepare_draft_tokens: 'here we always enforce it', v0.5.3 to "
                     "v0.5.23)"),
          ("trtllm", "every generation request's drafts are padded to max_draft_len (_torch/speculative/drafter.py "
                     "pad_draft_tokens_for_cuda_graph, called after prepare_draft_tokens in "
                     "_torch/pyexecutor/py_executor.py)"))),
    Rule(Span("vllm", "0", "0.24.0"), _dynamic_sd, "policy.kind", f"has no {_DSD}"),
    Rule(Span("vllm", "0.24.0"), lambda s, c: _dynamic_sd(s, c) and c.attention_dp > 1, "policy.kind",
         "turns Dynamic SD off with data parallelism (--data-parallel-size > 1, here ep/tp > 1 attention groups) and "
         "runs num_speculative_tokens every step (docs, dynamic_speculative_decoding.md, Limitations): use policy "
         "fixed"),
    Rule(Span("sglang"), _dynamic_sd, "policy.kind",
         f"has no vLLM {_DSD}; its own rule is policy sglang_adaptive"),
    Rule(Span("trtllm"), _dynamic_sd, "policy.kind",
         f"has no vLLM {_DSD}; its own rule is policy trtllm_schedule"),
    # TensorRT-LLM's draft_len_schedule and acceptance gate by release (simulator.speculation.control.trtllm_schedule).
    # Keys as batch-size upper bounds came with PR #10860 (merged 2026-03-13, after v1.3.0rc7's release of 2026-03-10;
    # PR #8194 of 2025-10, in the 1.2 line, read them as lower bounds). PR #12905 ("BREAKING: Acceptance rate based
    # speculation off", opened 2026-04-09) renamed acceptance_window / acceptance_length_threshold to
    # acceptance_rate_window_size / acceptance_rate_threshold, gating on each speculating iteration's accepted /
    # drafted tokens; the Eagle3DecodingConfig API reference of 1.3.0rc27, 1.4.0rc1 and 1.4.0rc4 has the new fields.
    # Which of 1.3.0rc8-rc26 first has PR #12905 was not read: both gates are refused there. Approximation (named):
    # 1.3.0rc8 on are taken to read the keys as upper bounds
    Rule(Span("trtllm", "0", "1.3.0rc8"), lambda s, c: c.policy == "trtllm_schedule" and c.schedule,
         "policy.draft_len_schedule",
         "does not read draft_len_schedule keys as batch-size upper bounds (PR #10860, merged 2026-03-13 after "
         "v1.3.0rc7; the 1.2 line has PR #8194's lower-bound keys, not modelled, and 1.0 no schedule): use version "
         ">= 1.3.0rc8, or only the acceptance gate"),
    Rule(Span("trtllm", "0", "1.3.0rc8"), lambda s, c: c.policy == "trtllm_schedule" and c.gate == "rate",
         "policy.acceptance_rate_window_size",
         "has no acceptance_rate_window_size / acceptance_rate_threshold (PR #12905, opened 2026-04-09): give "
         "acceptance_window with acceptance_length_threshold, or version >= 1.3.0rc27"),
    *(Rule(Span("trtllm", "1.3.0rc8", "1.3.0rc27"), (lambda g: lambda s, c: c.policy == "trtllm_schedule" and
                                                     c.gate == g)(gate), field,
           "was not read for which acceptance gate it ships (PR #12905 replaced acceptance_window / "
           "acceptance_length_threshold by acceptance_rate_window_size / acceptance_rate_threshold after 1.3.0rc7; "
           "1.3.0rc27 has the new fields): use version 1.3.0rc7 or earlier with acceptance_window, version >= "
           "1.3.0rc27 with acceptance_rate_window_size, or no gate")
      for gate, field in (("length", "policy.acceptance_window"), ("rate", "policy.acceptance_rate_window_size"))),
    Rule(Span("trtllm", "1.3.0rc27"), lambda s, c: c.policy == "trtllm_schedule" and c.gate == "length",
         "policy.acceptance_window",
         "has no acceptance_window / acceptance_length_threshold (renamed by PR #12905 to acceptance_rate_window_size "
         "/ acceptance_rate_threshold, which gate on the accepted / drafted tokens of each speculating iteration; "
         "Eagle3DecodingConfig API reference 1.3.0rc27, 1.4.0rc4): give those (a rate 0 to 1), or version 1.3.0rc7"),
    Rule(Span("sglang", "0", "0.5.13"), lambda s, c: c.policy == "sglang_adaptive", "policy.kind",
         "has no batch-size-aware adaptive speculation (policy sglang_adaptive: DEFAULT_ADAPTIVE_CONFIG slots from "
         "v0.5.13, speculative/adaptive_spec_params.py); v0.5.11-v0.5.12's --speculative-adaptive tunes one candidate "
         "list for every batch size and only with the overlap scheduler off (adaptive_unsupported_reason), which is "
         "not modelled: use version 0.5.13 or later, or policy fixed"),
    # SGLang's --speculative-algorithm choices by release (server_args.py add_cli_args; read in the wheels of
    # v0.4.1 to v0.4.1.post7, v0.4.2, v0.4.3 and .post1-.post4, v0.4.4 and .post1-.post3, v0.4.5, v0.5.1, v0.5.2rc2,
    # v0.5.2, v0.5.3): none before v0.4.1.post4; EAGLE from v0.4.1.post4; NEXTN (MTP) from v0.4.3.post1; EAGLE3
    # from v0.4.4.post2 (taken as v0.4.4: the EAGLE-3 paper, Sec. 4.3, names the release it ran EAGLE3 on
    # "v0.4.4"); STANDALONE (a draft model) from v0.5.2; NGRAM from v0.5.3
    Rule(Span("sglang"), lambda s, c: c.drafter in ("medusa", "layer_skip"), "drafter.kind",
         "has no Medusa-style parallel heads or layer-skipping self-speculation (nor has any SGLang release: "
         "speculative/spec_info.py SpeculativeAlgorithm, read in v0.5.8, v0.5.11 and v0.5.21: EAGLE, EAGLE3, "
         "STANDALONE, NGRAM and, in later releases, DFlash-style and MTP variants); allowed: an eagle/eagle3/mtp "
         "head, a draft model or n-gram"),
    Rule(Span("sglang", "0", "0.4.1.post4"), _spec, "cluster.engine.version",
         "has no speculative decoding (no --speculative-algorithm before v0.4.1.post4, which brought EAGLE); "
         "allowed: a version >= 0.4.1.post4"),
    Rule(Span("sglang", "0.4.1.post4", "0.4.3.post1"), lambda s, c: c.method == "mtp", "cluster.engine.version",
         "has no MTP speculation (--speculative-algorithm choices ['EAGLE']; NEXTN from v0.4.3.post1); allowed: a "
         "version >= 0.4.3.post1"),
    Rule(Span("sglang", "0.4.1.post4", "0.4.4"), lambda s, c: c.method == "eagle3", "cluster.engine.version",
         "has no EAGLE-3 speculation (--speculative-algorithm EAGLE3 from v0.4.4.post2); allowed: a version >= "
         "0.4.4"),
    Rule(Span("sglang", "0.4.1.post4", "0.5.2"), lambda s, c: c.drafter == "draft_model", "cluster.engine.version",
         "has no draft-model speculation (--speculative-algorithm STANDALONE from v0.5.2); allowed: a version "
         ">= 0.5.2"),
    Rule(Span("sglang", "0.4.1.post4", "0.5.3"), lambda s, c: c.drafter == "ngram", "cluster.engine.version",
         "has no n-gram speculation (--speculative-algorithm NGRAM from v0.5.3); allowed: a version >= 0.5.3"),
    Rule(Span("sglang", "0.4.0"), lambda s, c: _spec(s, c) and c.pp > 1, "cluster.parallelism.pp",
         "asserts 'Pipeline parallelism is not compatible with overlap schedule, speculative decoding' "
         "(server_args.py check_server_args)"),
    Rule(Span("sglang", "0.4.0", "0.5.19"), lambda s, c: _spec(s, c) and c.mixed_chunks, "scheduler.kind",
         "turns mixed chunked prefill off with speculative decoding ('Mixed chunked prefill is disabled because of "
         "using eagle speculative decoding', server_args.py; arg_groups/speculative_hook.py _handle_eagle_family "
         "through v0.5.18): use scheduler kind vllm (prefill batches apart)"),
    Rule(Span("sglang", "0.5.19"), lambda s, c: _spec(s, c) and c.mixed_chunks and c.drafter != "eagle",
         "scheduler.kind",
         "turns mixed chunked prefill off with speculation other than EAGLE/EAGLE-3 (arg_groups/speculative_hook.py "
         "_handle_eagle_family and _handle_ngram; speculative/spec_info.py supports_mixed_chunk): use scheduler kind "
         "vllm (prefill batches apart)"),
    Rule(Span("sglang", "0.5.19"), lambda s, c: _spec(s, c) and c.mixed_chunks and c.drafter == "eagle",
         "scheduler.kind",
         "keeps mixed chunked prefill with EAGLE/EAGLE-3 from v0.5.19, but its mixed steps decode the running "
         "requests one token each without drafts ('Mixed steps degrade running requests to a plain 1-token decode', "
         "arg_groups/speculative_hook.py _handle_eagle_family), which draftsim does not model: use scheduler kind "
         "vllm (prefill batches apart), or version 0.5.18"),
    Rule(Span("sglang", "0.4.0"), lambda s, c: c.drafter in ("draft_model", "ngram") and c.attention_dp > 1,
         "cluster.parallelism.ep",
         "supports DP attention with EAGLE/MTP speculation only ('Currently standalone speculative decoding does not "
         "support dp attention', and likewise ngram; server_args.py)"),
    Rule(Span("sglang", "0.4.0", "0.5.4"), lambda s, c: s.async_scheduling is True and _spec(s, c),
         "cluster.engine.async_scheduling",
         "disables the overlap scheduler with speculative decoding ('Overlap scheduler is disabled because of using "
         "eagle speculative decoding', server_args.py); overlapped speculation (spec v2, SGLANG_ENABLE_SPEC_V2) "
         "came with PR #11398 (merged 2025-10, first in v0.5.4)"),
    Rule(Span("sglang", "0.5.4", "0.5.13"), lambda s, c: s.async_scheduling is True and (c.drafter == "ngram" or c.tree),
         "cluster.engine.async_scheduling",
         "overlaps speculation (spec v2) for EAGLE, EAGLE-3 and standalone draft models with topk 1 (chains) only "
         "(docs attention_backend.md, 'Speculative Decoding V2'; PR #11398; server_args.py through v0.5.12: 'spec v2 "
         "currently only supports topk = 1'; trees from v0.5.13)"),
    Rule(Span("sglang", "0.5.13", "0.5.14"), lambda s, c: s.async_scheduling is True and c.drafter == "ngram",
         "cluster.engine.async_scheduling",
         "runs NGRAM speculation with the overlap scheduler off (arg_groups/speculative_hook.py _handle_ngram, v0.5.13; "
         "NGRAM overlaps from v0.5.14); spec v2 overlaps EAGLE, EAGLE-3 and standalone draft models, chains and trees"),
)


def _field_path(name: str) -> str:
    return f"cluster.engine.{name}"


def _flag_spans(name: str) -> tuple[tuple[Span, ...], str] | None:
    return FLAGS.get(name)


def check(settings, version: str, context: Context, graph_modes: tuple[str, ...], modes_elsewhere: dict[str, list[str]]
          ) -> None:
    """Raise UnsupportedCombination for the first flag `settings.framework` at `version` lacks or the first
    refused combination (module docstring). `graph_modes`: the CUDA-graph modes of this version;
    `modes_elsewhere`: mode -> the version ranges (text) that offer it."""
    fw = settings.framework
    given = {"async_scheduling": settings.async_scheduling is True, "graph_padding": settings.graph_padding is not None,
             "capture_sizes": settings.capture_sizes is not None, "num_scheduler_steps": context.num_scheduler_steps > 1}
    for name, asked in given.items():
        spans, flag = FLAGS[name]
        if asked and not any(span.holds(fw, version) for span in spans):
            have = ", ".join(span.text() for span in spans)
            raise UnsupportedCombination(_field_path(name), f"{fw} {version} has no such flag; versions that have it: "
                                                            f"{have} ({flag})")
    if settings.cuda_graphs is not None and settings.cuda_graphs not in graph_modes:
        have = ", ".join(modes_elsewhere.get(settings.cuda_graphs, [])) or "none"
        raise UnsupportedCombination(_field_path("cuda_graphs"),
                                     f"{fw} {version} has no {settings.cuda_graphs!r} CUDA-graph mode (it has "
                                     f"{', '.join(graph_modes)}); versions that have it: {have}")
    for rule in RULES:
        if rule.span.holds(fw, version) and rule.when(settings, context):
            raise UnsupportedCombination(rule.field, f"{fw} {version} {rule.says}")
