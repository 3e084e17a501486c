"""Which engine releases serve a draft model whose vocabulary size is not the target's.

A draft model proposes token ids of its own vocabulary; the target verifies them as ids of its own. Read in the
releases' sources (PyPI wheels):

- vLLM 0.4.1 - 0.7.3 (V0, `SpecDecodeWorker._vocab_size`, vllm/spec_decode/spec_decode_worker.py, read in 0.4.1 and
  0.7.3): `assert all(vocab_sizes[0] == vocab_size ...)` over the draft and target workers — the first
  speculative step fails. (0.8.0 - 0.14.x run no draft model at all: profiles.engine_time.support.)
- vLLM from 0.15.0 (V1, `SpeculativeConfig.verify_equal_vocab_size_if_draft_model`, vllm/config/speculative.py,
  read in 0.15.0, 0.24.0 and 0.25.0): "Target and draft model should have the same vocabulary size" at start-up.
- vLLM from 0.25.0: `use_heterogeneous_vocab` (PR #38174, Token-Level Intersection after Timor et al., ICML 2025)
  skips that check, builds the intersection of the two vocabularies at start and masks the draft's logits to it;
  it "currently only supports greedy draft sampling" (`draft_sample_method` 'greedy', the default). A scenario
  says so with `drafter.heterogeneous_vocab: true`.
- SGLang from 0.5.15 (STANDALONE, `StandaloneWorkerV2._validate_vocab_compatibility`,
  sglang/srt/speculative/standalone_worker_v2.py, read in the 0.5.15 and 0.5.23 wheels; absent from 0.5.13 and
  0.5.14): "STANDALONE speculative decoding requires the draft model to share the same vocabulary as the target
  model" at start-up, comparing the two ModelConfig.vocab_size (config.json `vocab_size`, hf_text_config). SGLang
  has no heterogeneous-vocabulary drafting (its message points to "a speculative algorithm that supports
  heterogeneous vocabularies"; none in 0.5.23's speculative/).

The comparison is of config.json `vocab_size`, as vLLM's `get_vocab_size` and SGLang's ModelConfig read it: two
models of one tokenizer padded to different sizes (Qwen2-1.5B's 151,936 against Qwen2-72B's 152,064, vllm issue
#7252) are refused too.

Not checked, named: SGLang 0.5.2 - 0.5.14's STANDALONE drafter has no such check (speculative/standalone_worker.py,
read in 0.5.2 and 0.5.6; standalone_worker_v2.py in 0.5.13 and 0.5.14) and reads the target's token ids as the
draft's own: it serves a pair of one tokenizer padded differently, and fails at run time on a pair of two
tokenizers, which draftsim cannot tell apart from config.json. TensorRT-LLM's
draft/target path compares no vocabularies at start-up (create_py_executor, tensorrt_llm/_torch/pyexecutor/
py_executor_creator.py, read in NVIDIA/TensorRT-LLM at commit 000429d5, a source snapshot whose release was not
pinned): its docs (features/speculative-decoding.md, Draft/Target, 1.4.0rc1) ask only "that the draft and target
models were trained with the same tokenizer, else the acceptance rate is extremely low and performance is
regressed", so it is served, at the acceptance the scenario gives.

SGLang compares nothing but the size, in every release read. Its `_validate_vocab_compatibility` goes on to compare
the two tokenizers' get_vocab() (token-to-id maps, special tokens included) "even though their vocab sizes match",
but only where both tokenizers are loaded, and a draft worker loads none: `TpModelWorker.__init__`
(srt/managers/tp_worker.py) sets `self.tokenizer = None` "if skip_tokenizer_init or self.is_draft_worker" ("A draft
worker's tokenizer would only duplicate the target's: tokenizer_path always points at the target model"), and
StandaloneDraftWorker builds its worker with is_draft_worker=True — read in the 0.5.15, 0.5.16 and 0.5.23 wheels.
So a pair of one size and two tokenizers (Llama-3.2-1B for Llama-3-8B, whose reserved special tokens 3.1 renamed;
Qwen2.5 for Qwen3, which adds <think>) is served there as by vLLM, as draftsim serves it: its low acceptance is the
scenario's to give. Nor does SGLang compare eos or other special-token ids of the two (speculative/, 0.5.15).
"""
from __future__ import annotations

from typing import Callable

from profiles.measured.source import version_before, version_in_span

FIELD = "drafter.model"
HETEROGENEOUS_FIELD = "drafter.heterogeneous_vocab"
VLLM_V0_DRAFT = ("0.4.1", "0.8.0")     # the V0 releases that run a draft model (from the first, before the second)
VLLM_V1_DRAFT_FROM = "0.15.0"
VLLM_HETEROGENEOUS_FROM = "0.25.0"
SGLANG_CHECK_FROM = "0.5.15"       # StandaloneWorkerV2._validate_vocab_compatibility


def _vllm_rule(version: str) -> tuple[str, str] | None:
    """(the check vLLM `version` refuses a draft model of another vocabulary size with, what else it allows), or
    None where it runs no draft model at all (0.8.0 - 0.14.x: profiles.engine_time.support refuses the drafter)."""
    if version_in_span(version, *VLLM_V0_DRAFT):
        rule = "SpecDecodeWorker._vocab_size asserts equal sizes (vllm/spec_decode/spec_decode_worker.py)"
    elif not version_before(version, VLLM_V1_DRAFT_FROM):
        rule = ("'Target and draft model should have the same vocabulary size' "
                "(SpeculativeConfig.verify_equal_vocab_size_if_draft_model, vllm/config/speculative.py)")
    else:
        return None
    way = (f"; or {HETEROGENEOUS_FIELD}: true (use_heterogeneous_vocab, TLI with greedy draft sampling)"
           if not version_before(version, VLLM_HETEROGENEOUS_FROM) else
           f"; vLLM >= {VLLM_HETEROGENEOUS_FROM} serves it with {HETEROGENEOUS_FIELD}: true")
    return rule, way


def _sglang_rule(version: str) -> tuple[str, str] | None:
    """As _vllm_rule, for SGLang: from 0.5.15 (STANDALONE's start-up check); None before (no check)."""
    if version_before(version, SGLANG_CHECK_FROM):
        return None
    return (f"'STANDALONE speculative decoding requires the draft model to share the same vocabulary as the target "
            f"model' (StandaloneWorkerV2._validate_vocab_compatibility, speculative/standalone_worker_v2.py, from "
            f"v{SGLANG_CHECK_FROM})",
            f"; SGLang has no heterogeneous-vocabulary drafting (vLLM >= {VLLM_HETEROGENEOUS_FROM} serves it with "
            f"{HETEROGENEOUS_FIELD}: true)")


# framework -> (version -> (the refusing check, what else is allowed) or None); an engine not here serves the pair
_REFUSING: dict[str, Callable[[str], tuple[str, str] | None]] = {"vllm": _vllm_rule, "sglang": _sglang_rule}


def vocab_refusal(framework: str, version: str, target, draft, heterogeneous: bool = False,
                  field: str = FIELD) -> tuple[str, str] | None:
    """(field, why) where `framework` `version` refuses draft model `draft` for `target` (ModelSpecs) because of
    their vocabulary sizes, given whether the scenario asks for vLLM's heterogeneous-vocabulary drafting; None where
    it serves the pair (or draftsim does not check that engine: module docstring). `field`: where the draft model
    is named, drafter.model or a cascade stage's model (`drafter.stages[i].model`: no heterogeneous_vocab there, so
    the refusal offers none)."""
    if heterogeneous:
        if framework != "vllm":
            return HETEROGENEOUS_FIELD, (f"{framework} has no heterogeneous-vocabulary drafting (vLLM's "
                                         "use_heterogeneous_vocab; SGLang's, PR #16290, was closed unmerged); allowed: "
                                         "cluster.engine.framework vllm >= 0.25.0, or false")
        if version_before(version, VLLM_HETEROGENEOUS_FROM):
            return HETEROGENEOUS_FIELD, (f"vllm {version} has no use_heterogeneous_vocab (from "
                                         f"{VLLM_HETEROGENEOUS_FROM}, PR #38174); allowed: a version >= "
                                         f"{VLLM_HETEROGENEOUS_FROM}, or a draft model of {target.name}'s "
                                         f"vocabulary size ({target.vocab_size:,})")
        return None
    if target.vocab_size == draft.vocab_size or framework not in _REFUSING:
        return None
    found = _REFUSING[framework](version)
    if found is None:
        return None
    rule, way = found
    if field != FIELD:   # (a cascade stage: heterogeneous_vocab is drafter kind draft_model's)
        way = ""
    return field, (f"{draft.name} has a {draft.vocab_size:,}-token vocabulary and {target.name} {target.vocab_size:,}: "
                   f"{framework} {version} refuses such a draft model, {rule}; allowed: a draft model of "
                   f"{target.vocab_size:,} tokens{way}")
