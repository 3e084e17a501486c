"""Which engine releases keep an MTP module's own LM head in GPU memory beside the target's.

An MTP module (models.mtp) predicts with the target's embedding and LM head. A checkpoint stores a copy of both
at the module's layer (DeepSeek-V3: model.layers.61.embed_tokens and shared_head.head); whether the engine loads
those copies or points the module at the target's decides what the module adds to each GPU. Read in the engines'
sources (PyPI wheels for vLLM and SGLang):

- vLLM, DeepSeek-V3's MTP class (`DeepSeekMTP`, vllm/model_executor/models/deepseek_mtp.py): each MTP layer builds
  `SharedHead.head`, a ParallelLMHead(vocab_size, hidden_size) loaded from the checkpoint's shared_head weights,
  and `compute_logits` runs it (`mtp_layer.shared_head.head`). `EagleProposer.load_model` shares the embedding with
  the target (0.9.0 on) and sets `self.model.lm_head = target.lm_head` (0.9.0 - 0.11.0; 0.11.1 on: "Detected MTP
  model. Sharing target model lm_head weights"), an attribute DeepSeekMTP's compute_logits does not read: the
  layer's own head stays loaded in 0.9.0 - 0.15.1 (read in 0.9.0, 0.10.1, 0.11.0, 0.12.0, 0.15.0 and 0.15.1).
  From 0.16.0 (read in 0.16.0 - 0.30.0 and 0.33.0) `_maybe_share_lm_head` also deletes each MTP layer's
  `shared_head.head` and binds the target's lm_head ("Shared target model lm_head with MTP shared_head.head").
  vLLM's weights memory is what is allocated after the target's and the drafter's load_model (gpu_model_runner
  DeviceMemoryProfiler; platforms/cuda.py get_current_memory_usage), so the kept head is in it. The head is
  vocab-parallel over tp and unquantized under an fp8 checkpoint (Fp8Config.get_quant_method gives
  VocabParallelEmbedding none: models.dtypes.vocab_weight_dtype).
  Qwen3-Next's MTP class (`Qwen3NextMTP`, qwen3_next_mtp.py, 0.10.2 on) computes its logits with `self.lm_head`,
  the attribute load_model replaces with the target's (the module's own then freed): shared in every release.
- SGLang (`DeepseekV3ForCausalLMNextN`, `Qwen3NextForCausalLMMTP`): the EAGLE worker's init_lm_head calls
  `set_embed_and_head` (models/deepseek_v2.py: deletes the module's embedding and LM head weights, binds the
  target's, empties the cache) before the pool is sized (0.5.14, 0.5.23): shared.
- TensorRT-LLM (`DeepseekV3MTPHead` holds a norm and takes the main model's lm_head in forward; modeling_
  deepseekv3.py at commit 00679c66): shared.

Where the scenario names no release, the rule of the release its pool runs (simulator.cluster.factory.
deployment_release, else the framework's newest modelled one), as the other engine memory rules.
"""
from __future__ import annotations

from typing import Callable

from profiles.engine_time.architectures import architecture
from profiles.measured.source import version_in_span

VLLM_OWN_HEAD = ("0.9.0", "0.16.0")           # DeepSeekMTP's shared_head.head loaded, not shared (from, before)
VLLM_SHARED_HEAD_ARCHITECTURES = ("DeepseekV3ForCausalLM",)   # MTP classes whose logits read shared_head.head


def _vllm(version: str, target) -> bool:
    return architecture(target) in VLLM_SHARED_HEAD_ARCHITECTURES and version_in_span(version, *VLLM_OWN_HEAD)


# framework -> ((version, target) -> whether each loaded MTP module keeps its own LM head); not here: shared
_KEEPS_OWN: dict[str, Callable[[str, object], bool]] = {"vllm": _vllm}


def keeps_own_lm_head(framework: str, version: str, target) -> bool:
    """Whether `framework` `version` keeps an LM head of its own (vocab_size x hidden_size) for each MTP module of
    `target` it loads (module docstring)."""
    rule = _KEEPS_OWN.get(framework)
    return rule(version, target) if rule is not None else False
