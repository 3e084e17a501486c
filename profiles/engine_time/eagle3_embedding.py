"""Which engine releases give an EAGLE-3 head an embedding to draft from where its vocabulary size (config.json
`vocab_size`) or width is not the target's, and what they run with it.

An EAGLE-3 head (models.eagle3) embeds the target's token ids, runs one decoder layer and an LM head over its own
`draft_vocab_size` tokens (32,000 for the published heads), then maps draft ids to target ids with its `d2t` table.
Its config.json `vocab_size` sizes two things: its token embedding (when it has one) and, in vLLM, the row of
target-vocabulary logits the d2t map scatters into. Read in the releases' sources (PyPI wheels):

- No engine compares the head's vocab_size with the target's at start-up. vLLM: SpeculativeConfig compares
  vocabularies for method 'draft_model' only (`verify_equal_vocab_size_if_draft_model`, vllm/config/speculative.py,
  0.15.0 - 0.33.0); `Eagle3LlamaForCausalLM` (vllm/model_executor/models/llama_eagle3.py, read in 0.8.5 - 0.33.0)
  builds its LM head over `draft_vocab_size` and its `compute_logits` scatters the draft logits through
  `draft_id_to_target_id` into a row of the head's own `vocab_size`. SGLang (`LlamaForCausalLMEagle3`,
  srt/models/llama_eagle3.py, 0.4.5 - 0.5.23): LM head over `draft_vocab_size`, `hot_token_id` = d2t + arange
  gathers the top-k ids into the target's; the EAGLE worker (`init_lm_head` / `set_embed`, speculative/
  eagle_worker*.py) swaps in the target's embedding whatever its vocabulary size (models/llama.py `set_embed`
  keeps the head's own only where `target_hidden_size` != `hidden_size`). TensorRT-LLM (`Eagle3ForCausalLM`,
  tensorrt_llm/_torch/models/modeling_speculative.py, read in NVIDIA/TensorRT-LLM at commit 00679c66, release not
  pinned): LM head over `draft_vocab_size`, `d2t` where it differs from `vocab_size`, and the target's embedding
  (`load_weights_from_target_model`) where `target_hidden_size` == `hidden_size`. So a head of another vocabulary
  size is served, at the acceptance the scenario gives (as profiles.engine_time.draft_vocabulary serves
  TensorRT-LLM's draft models: draftsim reads no tokenizer, so a head padded differently for one tokenizer and a
  head of another tokenizer look alike).
- vLLM 0.9.1 - 0.11.0 (`EagleProposer.load_model`, vllm/v1/spec_decode/eagle.py, read in 0.9.1, 0.9.2, 0.10.0,
  0.10.1, 0.10.2 and 0.11.0) hand the head the target's embedding only where `embed_tokens.weight.shape` is the
  target's: rows of vocab_size padded to a multiple of 64 (`pad_vocab_size`, DEFAULT_VOCAB_PADDING_SIZE,
  vllm/model_executor/layers/vocab_parallel_embedding.py). A head without an embedding of its own
  (`shares_embedding: true`) of another padded size keeps the one it was built with, which its load_weights skips
  ("The EAGLE head's vocab embedding will be loaded separately", then nothing loads it): it would draft from
  uninitialized memory, so draftsim refuses it. 0.8.5 (the target's embedding where the checkpoint has none),
  0.9.0 and 0.9.0.1 (the target's always, with one pipeline stage) and 0.11.1 on (`has_own_embed_tokens`, read in
  0.11.1, 0.11.2, 0.12.0, 0.15.0 and 0.33.0: the target's where the checkpoint has none) share it whatever its size.
- vLLM 0.9.0 and 0.9.0.1 (`EagleProposer.load_model`, read in both) hand the head the target's embedding whatever
  the checkpoint holds, with one pipeline stage; `LlamaModel.forward` of llama_eagle3.py then asserts
  `hidden_states.shape[-1] == input_embeds.shape[-1]`: a head whose hidden_size is not the target's fails its first
  draft pass, so draftsim refuses it there.

Whether the head's own embedding (vocab_size x hidden_size, split over tp) stays in GPU memory beside the target's
(`keeps_own_embedding`, the head's weight bytes of simulator.cost.eagle3): an engine that hands the head the
target's embedding frees or never builds its own, so the engine's memory accounting does not hold it (vLLM:
gpu_model_runner.load_model takes the weights as DeviceMemoryProfiler's consumed_memory around the target's and the
drafter's load_model, platforms/cuda.py get_current_memory_usage = torch.cuda.max_memory_allocated after
empty_cache and reset_peak_memory_stats, so an embedding deleted in EagleProposer.load_model is not in it; SGLang
from 0.5.14 sizes its pool after the draft worker's init_lm_head, whose set_embed deletes the head's embedding and
empties the cache, speculative/eagle_worker_v2.py EagleDraftWorker.__init__ in 0.5.14 and 0.5.23; TensorRT-LLM's
KV budget is what the weights leave). Read in the same sources:

- vLLM, one pipeline stage: 0.8.5 keeps the checkpoint's own (`loaded_weights` holds model.embed_tokens.weight)
  and replaces the one it built where the checkpoint has none; 0.9.0 - 0.9.0.1 delete its own always; 0.9.1 -
  0.11.0 where the embedding shapes are equal (rows padded to 64, and the same width); 0.11.1 on
  (`has_own_embed_tokens`; read in 0.11.1, 0.12.0, 0.15.0, 0.24.0, 0.33.0) where the checkpoint has none, or has a
  copy `torch.equal` to the target's. Approximation, named: `shares_embedding: false` is read as an embedding
  trained apart from the target's; a checkpoint that stores a frozen copy of the target's (shared by torch.equal
  from 0.11.1) is described by `shares_embedding: true` there.
- vLLM, pipeline parallelism (pp > 1, which it composes with speculation after 0.15.0): the head keeps the
  embedding it builds (VocabParallelEmbedding over its vocab_size, llama_eagle3.py), "loaded separately" (read in
  0.24.0 and 0.33.0: the sharing runs only where get_pp_group().world_size == 1), whether or not the checkpoint
  has one.
- SGLang 0.4.5 - 0.5.23 and TensorRT-LLM: the head keeps an embedding of its own only where its hidden_size is
  not the target's (set_embed returns early; Eagle3DraftModel builds embed_tokens only where target_hidden_size
  != hidden_size), which an Eagle3Head allows only with `shares_embedding: false`.
- Another framework: the checkpoint's (`shares_embedding`).

Where the scenario names no release, the rule of the release its pool runs (simulator.cluster.factory.
deployment_release: the measured tables' release, else the framework's newest modelled one, frameworks.
release_or_modelled) applies, as the other engine memory rules.

The refusals (`head_embedding_refusal`) are applied where the scenario names the release, as
profiles.engine_time.draft_vocabulary's rule (simulator.cluster.
factory.check_eagle3_embedding; a plan's drafter that no planned model's release serves is refused before the
screen, simulator.workflows.plan.config._check_eagle3_embedding). A head without an embedding of its own whose
hidden_size is not the target's is refused for every engine (models.eagle3.Eagle3Head). What draftsim prices: the
LM head over draft_vocab_size and vLLM's map into a row of the head's vocab_size (models.eagle3.pass_ops; SGLang's
and TensorRT-LLM's gather of the draft ids is the approximation named there).
"""
from __future__ import annotations

from typing import Callable

from profiles.measured.source import version_in_span

FIELD = "drafter.head"
VLLM_ALWAYS_SHARED = ("0.9.0", "0.9.1")  # EagleProposer.load_model shares the target's embedding always (from, before)
VLLM_SHAPE_MATCH = ("0.9.1", "0.11.1")   # ... only where the embedding shapes are equal (from, before)
VLLM_VOCAB_PADDING = 64                  # vocab_parallel_embedding.DEFAULT_VOCAB_PADDING_SIZE


def padded_vocab(vocab_size: int) -> int:
    """Rows of vLLM's VocabParallelEmbedding for `vocab_size` tokens (`pad_vocab_size`)."""
    return -(-vocab_size // VLLM_VOCAB_PADDING) * VLLM_VOCAB_PADDING


def _vllm_rule(version: str, target, head) -> str | None:
    """Why vLLM `version` cannot give EAGLE-3 head `head` an embedding it drafts from for `target`, or None."""
    if version_in_span(version, *VLLM_ALWAYS_SHARED) and head.hidden_size != target.hidden_size:
        return (f"EAGLE-3 head {head.name!r} is {head.hidden_size} wide and {target.name} {target.hidden_size}: vllm "
                f"{version} gives an EAGLE head the target's embedding whatever its width (EagleProposer.load_model, "
                f"vllm/v1/spec_decode/eagle.py, 0.9.0 - 0.9.0.1), and the head's first draft pass fails "
                f"(llama_eagle3.py: assert hidden_states.shape[-1] == input_embeds.shape[-1]); allowed: hidden_size "
                f"{target.hidden_size}, or a vLLM release before {VLLM_ALWAYS_SHARED[0]} or from "
                f"{VLLM_ALWAYS_SHARED[1]}")
    if not version_in_span(version, *VLLM_SHAPE_MATCH) or not head.shares_embedding \
            or padded_vocab(head.vocab_size) == padded_vocab(target.vocab_size):
        return None
    return (f"EAGLE-3 head {head.name!r} has no embedding of its own (shares_embedding: true) and a "
            f"{head.vocab_size:,}-token vocabulary, {target.name} {target.vocab_size:,}: vllm {version} gives an EAGLE "
            f"head the target's embedding only where the two embeddings' shapes are equal (EagleProposer.load_model, "
            f"vllm/v1/spec_decode/eagle.py, {VLLM_SHAPE_MATCH[0]} - 0.11.0), so the head would draft from an "
            f"embedding nothing loads; allowed: vocab_size {target.vocab_size:,} (rows padded to a multiple of "
            f"{VLLM_VOCAB_PADDING}), shares_embedding: false (a checkpoint with its own embed_tokens), or a vLLM "
            f"release before {VLLM_SHAPE_MATCH[0]} or from {VLLM_SHAPE_MATCH[1]}")


# framework -> ((version, target, head) -> why the release cannot serve the head, or None); not here: served
_REFUSING: dict[str, Callable[[str, object, object], str | None]] = {"vllm": _vllm_rule}


def _vllm_keeps_own(version: str, target, head, pp: int) -> bool:
    """Whether vLLM `version` keeps EAGLE-3 head `head`'s own embedding beside `target`'s (module docstring)."""
    if pp > 1:
        return True
    if version_in_span(version, *VLLM_ALWAYS_SHARED):
        return False
    if version_in_span(version, *VLLM_SHAPE_MATCH):
        return padded_vocab(head.vocab_size) != padded_vocab(target.vocab_size) \
            or head.hidden_size != target.hidden_size
    return not head.shares_embedding


def _own_where_other_width(version: str, target, head, pp: int) -> bool:
    """SGLang's set_embed and TensorRT-LLM's Eagle3DraftModel: an own embedding only at another width."""
    return head.hidden_size != head.target_hidden_size


# framework -> ((version, target, head, pp) -> whether the head's own embedding stays in GPU memory); not here:
# the checkpoint's (Eagle3Head.shares_embedding)
_KEEPS_OWN: dict[str, Callable[[str, object, object, int], bool]] = {
    "vllm": _vllm_keeps_own, "sglang": _own_where_other_width, "trtllm": _own_where_other_width}


def keeps_own_embedding(framework: str, version: str, target, head, pp: int = 1) -> bool:
    """Whether `framework` `version` keeps EAGLE-3 head `head`'s own embedding (vocab_size x hidden_size) in GPU
    memory beside `target`'s, at `pp` pipeline stages (module docstring)."""
    rule = _KEEPS_OWN.get(framework)
    return rule(version, target, head, pp) if rule is not None else not head.shares_embedding


def head_embedding_refusal(framework: str, version: str, target, head) -> tuple[str, str] | None:
    """(field, why) where `framework` `version` cannot give EAGLE-3 head `head` (models.eagle3.Eagle3Head) an
    embedding to draft from for `target` (a ModelSpec): the head's vocabulary size or width; None where it serves it
    (module docstring)."""
    rule = _REFUSING.get(framework)
    why = rule(version, target, head) if rule is not None else None
    return (FIELD, why) if why is not None else None
