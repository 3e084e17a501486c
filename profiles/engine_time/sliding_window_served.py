"""The sliding window an engine release applies to a model, where it is not the one ModelSpec holds (transformers'
reading of config.json, models.hf_config): `served` returns the model as the engine runs it, or refuses the release
where it does not start. Read in the releases' sources:

- SGLang (every release read: 0.4.0, 0.4.3 - 0.4.9, 0.5.2, 0.5.3, 0.5.6, 0.5.9, 0.5.10, 0.5.18, 0.5.23): llama.py
  (Llama, and Mistral: mistral.py's MistralForCausalLM subclasses LlamaForCausalLM), mixtral.py, qwen2.py, qwen3.py
  and qwen3_moe.py build RadixAttention without a sliding_window_size (its default -1: full attention,
  layers/radix_attention.py); the model runner's window (0.5.23 load_model_utils.resolve_sliding_window_size) is
  for models with get_attention_sliding_window_size or a hybrid-SWA architecture, none of these. So a window in
  their config.json is not applied: every layer attends to the whole context (SGLANG_WITHOUT_WINDOW). gpt-oss keeps
  its window (gpt_oss.py get_attention_sliding_window_size).
- vLLM, Qwen2 / Qwen3 dense with `use_sliding_window` (ModelSpec.qwen_sliding_window): qwen2.py and qwen3.py pass
  no per-layer window, so Attention takes cache_config.sliding_window (ModelConfig.get_sliding_window) on every
  layer (attention layer.py: per_layer_sliding_window, else cache_config.sliding_window; 0.5.0 - 0.33.0), where
  transformers windows only the layers from max_window_layers on. Qwen2Model reads max_window_layers:
  before 0.5.0 the layers below it take the window (qwen2.py `layer_idx < config.max_window_layers`, 0.3.0 -
  0.4.1); 0.5.0 - 0.8.x raise "Sliding window for some but all layers is not supported" whenever a window is set;
  0.9.0 - 0.10.0 assert max_window_layers == num_hidden_layers; from 0.10.1 the assertion holds where the
  config's layer_types mix full and sliding layers (is_interleaved; 0.33.0 `len(set(layer_types)) > 1`).
  Qwen3-MoE has no such check (every layer, as transformers: models.hf_config).

- gpt-oss whose layer_types are not transformers' default (ModelSpec.gpt_oss_sliding_window): vLLM's gpt_oss.py
  passes config.sliding_window as the per-layer window of the even-indexed layers and None to the others
  (`layer_idx % 2 == 0`, 0.10.1 - 0.33.0), which then take cache_config.sliding_window (attention layer.py:
  per_layer_sliding_window, else cache_config.sliding_window); V1's KV-cache groups follow the layers' specs
  (Attention.get_kv_cache_spec: SlidingWindowSpec where the layer has a window), so its memory does too. EngineArgs
  sets cache_config.sliding_window to config.sliding_window where the layers are not interleaved: 0.10.1 - 0.26.x
  `not is_interleaved(hf_text_config)` (layer_types lacking full or sliding entries: all full or all sliding,
  vllm/transformers_utils/config.py), from 0.27.0 `layer_types is None or all(lt == "sliding_attention" ...)`
  (vllm/engine/arg_utils.py create_engine_config). So vLLM windows every layer where layer_types are all sliding,
  or all full before 0.27.0; otherwise the ceil(num_layers / 2) even-indexed ones. TensorRT-LLM's
  modeling_gpt_oss.py (AttentionBlock: `pretrained_config.sliding_window if layer_idx % 2 == 0 else None`, read
  at one commit of main, applied to every release: named) windows the even-indexed layers only. SGLang follows
  layer_types (gpt_oss.py `config.layer_types[layer_id]`; its hybrid SWA pool configs/model_config.py
  get_hybrid_layer_ids, 0.5.0rc0 - 0.5.23), as ModelSpec holds it.

Not read, named: TensorRT-LLM (its newest modeling_mistral.py takes config.sliding_window on every layer, as
ModelSpec does; other releases and architectures are served as ModelSpec holds them). A draft model is served as
ModelSpec holds it: drafter.model names catalog models only (simulator.cost.drafters._draft_model, get_model), and
the only ones with a window, gpt-oss-20b and gpt-oss-120b, have transformers' default layer_types, which every
engine above windows as ModelSpec does (the even-indexed layers); a Mistral- or Qwen-style draft with a window of
its own cannot be given.
"""
from __future__ import annotations

import dataclasses

from profiles.engine_time.support import UnsupportedCombination
from profiles.measured.source import version_in_span, version_key

# architectures whose SGLang model builds no sliding-window attention (module docstring)
SGLANG_WITHOUT_WINDOW = ("LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
                         "Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
VLLM_QWEN_DENSE = ("Qwen2ForCausalLM", "Qwen3ForCausalLM")   # vLLM's Qwen2Model and its max_window_layers check
VLLM_QWEN_REFUSES = ("0.5.0", "0.9.0")      # [from, to): a window on Qwen2Model is a ValueError
VLLM_QWEN_EQUAL_ONLY = ("0.9.0", "0.10.1")  # [from, to): max_window_layers must equal num_hidden_layers
VLLM_GPT_OSS_ALL_FULL_WHOLE_UNTIL = "0.27.0"   # before it, all-full layer_types window every layer (docstring)
GPT_OSS = "GptOssForCausalLM"


def _within(version: str | None, span: tuple[str, str]) -> bool:
    return version is not None and version_in_span(version, *span)


def _vllm_qwen_layers(version: str | None, model, field: str) -> int:
    """How many of `model`'s layers vLLM `version` (None: the newest) windows (module docstring), or an
    UnsupportedCombination naming `field` where it does not start."""
    window, first = model.qwen_sliding_window
    layers = model.num_layers
    said = (f"{model.name}: its config.json sets use_sliding_window with sliding_window {window} and "
            f"max_window_layers {first} of {layers} layers")
    if version is not None and version_key(version) < version_key(VLLM_QWEN_REFUSES[0]):
        return min(first, layers)
    if _within(version, VLLM_QWEN_REFUSES):
        raise UnsupportedCombination(field, f"vllm {version} cannot serve {said}: its qwen2.py raises 'Sliding "
                                            f"window for some but all layers is not supported' whenever a window "
                                            f"is set ({VLLM_QWEN_REFUSES[0]} - 0.8.x); allowed: vllm before "
                                            f"{VLLM_QWEN_REFUSES[0]} or from {VLLM_QWEN_REFUSES[1]}, or "
                                            "use_sliding_window false")
    if _within(version, VLLM_QWEN_EQUAL_ONLY):
        mixed = first != layers
    else:
        mixed = 0 < layers - first < layers
    if mixed:
        shown = version if version is not None else "(newest)"
        raise UnsupportedCombination(field, f"vllm {shown} cannot serve {said}: its qwen2.py asserts "
                                            "max_window_layers == num_hidden_layers where the layers mix windowed "
                                            "and full attention; allowed: max_window_layers equal to "
                                            f"num_hidden_layers ({layers}), use_sliding_window false, or vllm "
                                            f"before {VLLM_QWEN_REFUSES[0]}")
    return layers


def _gpt_oss_layers(framework: str, version: str | None, model) -> int:
    """How many of gpt-oss `model`'s layers `framework` `version` (None: the newest) windows (module docstring)."""
    listed, layers = model.gpt_oss_sliding_window[1], model.num_layers
    even = (layers + 1) // 2   # layer_idx % 2 == 0
    if framework == "trtllm":
        return even
    if listed == layers or (listed == 0 and version is not None
                            and version_key(version) < version_key(VLLM_GPT_OSS_ALL_FULL_WHOLE_UNTIL)):
        return layers
    return even


def served(framework: str, version: str | None, model, field: str = "cluster.model"):
    """`model` with the sliding window `framework` `version` (None: its newest release) applies (module docstring);
    UnsupportedCombination naming `field` where that release does not start with it."""
    from profiles.engine_time.architectures import architecture
    arch = architecture(model)
    if framework == "sglang" and model.sliding_window_layers and arch in SGLANG_WITHOUT_WINDOW:
        return dataclasses.replace(model, sliding_window=0, sliding_window_layers=0)
    if framework == "vllm" and model.qwen_sliding_window and arch in VLLM_QWEN_DENSE:
        layers = _vllm_qwen_layers(version, model, field)
        if layers == model.sliding_window_layers:
            return model
        return dataclasses.replace(model, sliding_window=model.qwen_sliding_window[0] if layers else 0,
                                   sliding_window_layers=layers)
    if framework in ("vllm", "trtllm") and model.gpt_oss_sliding_window and arch == GPT_OSS:
        layers = _gpt_oss_layers(framework, version, model)
        if (model.sliding_window_layers, model.sliding_window) == (layers, model.gpt_oss_sliding_window[0]):
            return model
        return dataclasses.replace(model, sliding_window=model.gpt_oss_sliding_window[0], sliding_window_layers=layers)
    return model
