"""A Hugging Face `config.json` → `ModelSpec`, for the decoder-only architectures draftsim can price.

Supported `architectures` (registry `ARCHITECTURES`, one converter per family):

| architecture | what is read beyond the common fields |
|---|---|
| LlamaForCausalLM, MistralForCausalLM | `attention_bias` (q/k/v and o biases), `sliding_window` (every layer; Mistral's defaults to 4096) |
| Qwen2ForCausalLM | q/k/v biases always; `use_sliding_window` + `max_window_layers` (Qwen3 too; Qwen3-MoE: every layer) |
| Qwen3ForCausalLM | per-head q/k RMSNorm, explicit `head_dim` |
| MixtralForCausalLM | `num_local_experts`, `num_experts_per_tok`, `intermediate_size` = expert width |
| Qwen3MoeForCausalLM | `num_experts`, `moe_intermediate_size`, `mlp_only_layers` (leading dense layers only) |
| DeepseekV2ForCausalLM, DeepseekV3ForCausalLM | MLA (`q_lora_rank`, `kv_lora_rank`, rope/nope/v head dims), shared experts, `first_k_dense_replace`, `topk_method: noaux_tc` (router bias) |
| GptOssForCausalLM | `layer_types` (sliding vs full attention), attention and expert biases, attention sinks |
| Qwen3NextForCausalLM | `layer_types` (else `full_attention_interval`): gated DeltaNet (`linear_*`) and gated full attention, MoE with a gated shared expert (`shared_expert_intermediate_size`), `mlp_only_layers` / `decoder_sparse_step` |
| NemotronHForCausalLM | `hybrid_override_pattern` (M Mamba-2, * attention, - MLP, E MoE block), Mamba-2 (`mamba_num_heads`, `mamba_head_dim`, `n_groups`, `ssm_state_size`, `conv_kernel`, `chunk_size`), relu² MLPs, `mamba_ssm_cache_dtype` |
| JambaForCausalLM | `attn_layer_period` / `attn_layer_offset` (attention layers; the rest Mamba-1), `expert_layer_period` / `expert_layer_offset` (MoE layers), `mamba_expand`, `mamba_d_state`, `mamba_d_conv`, `mamba_dt_rank` |

Common fields: `hidden_size`, `num_hidden_layers`, `num_attention_heads`, `num_key_value_heads` (default: the
attention heads, as in the Hugging Face classes), `head_dim` (default hidden/heads), `intermediate_size`,
`vocab_size`, `max_position_embeddings`, `rope_theta`, `tie_word_embeddings` (default false: every class
above defaults to untied), `num_nextn_predict_layers` (multi-token-prediction modules shipped, default 0); the
rope scaling block and the other length keys the engines derive the context limit from (models.context_config),
and `quantization_config`, the checkpoint's weight format (models.quant_config). Dropout does not change the
compute priced here and is ignored. A hybrid architecture (the last three rows) must say which layer is which: a
config without its layer-type list is an `UnsupportedModelError` naming the missing field. Anything else — another architecture, a vision-language wrapper
(`text_config`), a layer layout ModelSpec cannot express — is an `UnsupportedModelError` naming the field.

`architectures` is read as vLLM and SGLang read it: the first entry with a converter here is the model (vLLM's
`_get_model_architecture` loop, vllm/model_executor/model_loader.py 0.3.3; ModelRegistry.inspect_model_cls /
resolve_model_cls "for arch in architectures", registry.py 0.7.0 - 0.33.0; SGLang's ModelRegistry.resolve_model_cls,
srt/models/registry.py 0.4.0 - 0.5.23). TensorRT-LLM reads `architectures[0]` only (AutoModelForCausalLM,
tensorrt_llm/_torch/models/modeling_auto.py; AutoConfig.from_hugging_face, tensorrt_llm/models/automodel.py): an
entry read after another keeps that other in `ModelSpec.hf_first_architecture`, which
profiles.engine_time.architectures refuses for TensorRT-LLM. Approximation, named: an earlier entry draftsim has no
converter for is taken to be one the engine does not register either (vLLM and SGLang would load an earlier
registered one, e.g. a vision-language class, instead); and SGLang's per-model server settings that key on
`architectures[0]` (server_args.py model_specific_adjustments: attention backend, hybrid SWA memory) are not
modelled either way.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from models.errors import brief
from models.files import read_document
from models.spec import ModelSpec, integer_expected, max_of, positive_number_expected


class UnsupportedModelError(ValueError):
    """The config cannot be turned into a ModelSpec; the message names the field and what is allowed."""


# config.json keys whose ModelSpec field is named otherwise (models.spec.max_of bounds them by the field's name)
_SPEC_FIELD = {"num_hidden_layers": "num_layers", "max_window_layers": "num_layers",
               "first_k_dense_replace": "first_dense_layers", "num_nextn_predict_layers": "num_mtp_modules",
               "mtp_num_hidden_layers": "num_mtp_modules"}


def _int(cfg: dict, key: str, where: str, default=None, low: int = 1) -> int:
    """`cfg[key]` as an integer from `low` up to its ModelSpec field's bound (models.spec.max_of; an integral
    float such as 4096.0 is taken as its integer; a fraction, a text, true/false, a figure beyond the bound or a
    missing required value is an UnsupportedModelError naming the key). The bound is checked here, before a
    converter builds a per-layer list of num_hidden_layers entries."""
    value = cfg.get(key)
    if value is None:
        if default is None:
            raise UnsupportedModelError(f"{where}: config.json lacks {key!r}")
        return default
    number = int(value) if isinstance(value, float) and value.is_integer() else value
    expected = integer_expected(number, low, max_of(_SPEC_FIELD.get(key, key)))
    if expected:
        raise UnsupportedModelError(f"{where}: {key} is {brief(value)}; expected {expected}")
    return number


def _bool(cfg: dict, key: str, where: str, default: bool) -> bool:
    """`cfg[key]` as true/false (a missing or null value is `default`; anything but a JSON boolean is an
    UnsupportedModelError naming the key: bool("false") is True)."""
    value = cfg.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise UnsupportedModelError(f"{where}: {key} is {value!r}; expected true or false")
    return value


def _float(cfg: dict, key: str, where: str, default: float) -> float:
    """`cfg[key]` as a finite number > 0 (a missing or null value is `default`)."""
    value = cfg.get(key)
    if value is None:
        return default
    expected = positive_number_expected(value)
    if expected:
        raise UnsupportedModelError(f"{where}: {key} is {brief(value)}; expected {expected}")
    return float(value)


def _common(cfg: dict, where: str) -> dict:
    """The fields every architecture shares, checked to describe a transformer: at least one attention
    head, the query heads a multiple of the KV heads (each KV head serves a whole group), and without an
    explicit `head_dim` a hidden size that the heads split evenly (otherwise the per-head width, and so every
    attention GEMM, would be a guess)."""
    heads = _int(cfg, "num_attention_heads", where)
    hidden = _int(cfg, "hidden_size", where)
    kv_heads = _int(cfg, "num_key_value_heads", where, default=heads)
    if heads % kv_heads:
        raise UnsupportedModelError(f"{where}: num_attention_heads ({heads}) must be a multiple of "
                                    f"num_key_value_heads ({kv_heads})")
    if cfg.get("head_dim") is None and hidden % heads:
        raise UnsupportedModelError(f"{where}: hidden_size ({hidden}) is not a multiple of num_attention_heads "
                                    f"({heads}); give head_dim")
    return {
        "hidden_size": hidden,
        "num_layers": _int(cfg, "num_hidden_layers", where),
        "num_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": _int(cfg, "head_dim", where, default=hidden // heads),
        "intermediate_size": _int(cfg, "intermediate_size", where),
        "vocab_size": _int(cfg, "vocab_size", where),
        "max_position_embeddings": _int(cfg, "max_position_embeddings", where),
        "rope_theta": _float(cfg, "rope_theta", where, 10000.0),
        "tie_word_embeddings": _bool(cfg, "tie_word_embeddings", where, False),
        "num_mtp_modules": _int(cfg, "num_nextn_predict_layers", where, default=0, low=0),
        **_context_and_quantization(cfg, where),
    }


def _context_and_quantization(cfg: dict, where: str) -> dict:
    """What the engines derive the context limit from (models.context_config) and the checkpoint's weight
    format and declared KV-cache quantization (models.quant_config)."""
    from models.context_config import ContextConfigError, length_keys, rope_fields
    from models.quant_config import QuantConfigError, checkpoint_dtype, checkpoint_kv
    try:
        kv_format, kv_dtype = checkpoint_kv(cfg, where)
        return {**rope_fields(cfg, where), "length_keys": length_keys(cfg, where),
                "checkpoint_dtype": checkpoint_dtype(cfg, where),
                "checkpoint_kv_format": kv_format, "checkpoint_kv_dtype": kv_dtype}
    except (ContextConfigError, QuantConfigError) as exc:
        raise UnsupportedModelError(str(exc)) from None


def _window(layers: int, window) -> dict:
    return {"sliding_window": int(window), "sliding_window_layers": layers} if window else {}


# transformers' config defaults for a config.json without the key (configuration_mistral.py MistralConfig
# sliding_window=4096, 4.34 - 5.19; configuration_qwen2.py / configuration_qwen3.py / configuration_qwen3_moe.py
# sliding_window=4096 and max_window_layers=28, 4.40 - 5.19). The engines load config.json through AutoConfig, so
# the attribute exists: vLLM's ModelConfig.get_sliding_window reads it (getattr(hf_text_config, "sliding_window")).
MISTRAL_WINDOW = 4096
QWEN_WINDOW = 4096
QWEN_MAX_WINDOW_LAYERS = 28


def _every_layer_window(cfg: dict, out: dict, where: str, default: int = 0) -> dict:
    """A window on every layer (Llama, Mistral, Mixtral, Qwen3-MoE): `sliding_window` (absent: `default`, the
    transformers class's; null: none). A 0 is kept in ModelSpec.sliding_window_unset: vLLM before 0.19.0 takes it
    as a window of 0 tokens (profiles.engine_time.sliding_window_unset)."""
    window = _int(cfg, "sliding_window", where, default=0, low=0) if "sliding_window" in cfg else default
    if "sliding_window" in cfg and cfg["sliding_window"] is not None and not window:
        out["sliding_window_unset"] = "0"
    out.update(_window(out["num_layers"], window))
    return out


def _llama(cfg: dict, where: str, default_window: int = 0) -> dict:
    out = _common(cfg, where)
    if cfg.get("mlp_bias"):
        raise UnsupportedModelError(f"{where}: mlp_bias: true is not supported (MLP biases are not modelled)")
    bias = _bool(cfg, "attention_bias", where, False)
    out.update(qkv_bias=bias, attention_output_bias=bias)
    return _every_layer_window(cfg, out, where, default_window)


def _mistral(cfg: dict, where: str) -> dict:
    """Llama's layout; without a sliding_window key, transformers' MistralConfig default (MISTRAL_WINDOW)."""
    return _llama(cfg, where, MISTRAL_WINDOW)


def _qwen2(cfg: dict, where: str) -> dict:
    out = _common(cfg, where)
    out["qkv_bias"] = True  # Qwen2 attention has q/k/v biases (no o bias) whatever attention_bias says
    return _qwen_window(cfg, out, where)


def _qwen_window(cfg: dict, out: dict, where: str) -> dict:
    """Qwen2 / Qwen3 dense's optional sliding window, as transformers reads it: only when `use_sliding_window` (its
    config sets sliding_window to None otherwise, configuration_qwen2.py 4.43 - 5.19), on the layers from
    `max_window_layers` on (layer_types "sliding_attention" if i >= max_window_layers, 4.53 - 5.19); absent keys take
    the class defaults (QWEN_WINDOW, QWEN_MAX_WINDOW_LAYERS). vLLM reads the pair otherwise (every layer, or a
    refusal): ModelSpec.qwen_sliding_window keeps it for profiles.engine_time.sliding_window_served."""
    if _bool(cfg, "use_sliding_window", where, False):
        window = _int(cfg, "sliding_window", where, default=0, low=0) if "sliding_window" in cfg else QWEN_WINDOW
        first = _int(cfg, "max_window_layers", where, default=QWEN_MAX_WINDOW_LAYERS, low=0)
        if cfg.get("sliding_window") is not None and not window:
            out["sliding_window_unset"] = "0"
        if window:
            out["qwen_sliding_window"] = (window, first)
        layers = max(out["num_layers"] - first, 0)
        out.update(_window(layers, window if layers else 0))
    return out


def _qwen3(cfg: dict, where: str) -> dict:
    """Qwen3 dense and MoE attention: q/k RMSNorm, optional q/k/v bias, optional sliding window."""
    out = _common(cfg, where)
    out.update(qk_norm=True, qkv_bias=_bool(cfg, "attention_bias", where, False))
    return _qwen_window(cfg, out, where)


def _mixtral(cfg: dict, where: str) -> dict:
    out = _common(cfg, where)
    out.update(num_experts=_int(cfg, "num_local_experts", where),
               experts_per_token=_int(cfg, "num_experts_per_tok", where),
               moe_intermediate_size=out["intermediate_size"])
    return _every_layer_window(cfg, out, where)   # (MixtralConfig's default is None from 4.40: no window)


def _layer_indices(cfg: dict, key: str, layers: int, where: str) -> list[int]:
    """`cfg[key]` as a list of layer indices in 0..layers-1 (missing or null: none)."""
    value = cfg.get(key) or []
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers
                                              for i in value):
        raise UnsupportedModelError(f"{where}: {key} is {value!r}; expected a list of layer indices in "
                                    f"0..{layers - 1}")
    return value


def _period_offset(cfg: dict, period_key: str, offset_key: str, where: str, what: str) -> tuple[int, int]:
    """A layer pattern's (period, offset): layer i is of the kind when i % period == offset."""
    _hybrid_need(cfg, (period_key,), where, what)
    _hybrid_need(cfg, (offset_key,), where, what)
    period, offset = _int(cfg, period_key, where), _int(cfg, offset_key, where, low=0)
    if offset >= period:   # no layer would be of the kind
        raise UnsupportedModelError(f"{where}: {offset_key} ({offset}) must be below {period_key} ({period})")
    return period, offset


def _leading_dense(cfg: dict, layers: int, where: str) -> int:
    """Leading dense layers of a Qwen-MoE layout; other layouts cannot be expressed."""
    dense = sorted(_layer_indices(cfg, "mlp_only_layers", layers, where))
    if dense != list(range(len(dense))) or _int(cfg, "decoder_sparse_step", where, default=1) != 1:
        raise UnsupportedModelError(f"{where}: mlp_only_layers={dense} with decoder_sparse_step="
                                    f"{cfg.get('decoder_sparse_step', 1)} is not supported; allowed: dense layers "
                                    "only before the MoE layers, decoder_sparse_step 1")
    return len(dense)


def _qwen3_moe(cfg: dict, where: str) -> dict:
    """Qwen3-MoE: its attention takes the window on every layer when `use_sliding_window` (transformers
    Qwen3MoeAttention `getattr(config, "sliding_window", None)`, 4.51 - 5.19, its config having no max_window_layers;
    vLLM's qwen3_moe.py passes none, so Attention takes cache_config.sliding_window on every layer)."""
    out = _common(cfg, where)
    out.update(qk_norm=True, qkv_bias=_bool(cfg, "attention_bias", where, False))
    if _bool(cfg, "use_sliding_window", where, False):
        _every_layer_window(cfg, out, where, QWEN_WINDOW)
    out.update(num_experts=_int(cfg, "num_experts", where),
               experts_per_token=_int(cfg, "num_experts_per_tok", where),
               moe_intermediate_size=_int(cfg, "moe_intermediate_size", where),
               first_dense_layers=_leading_dense(cfg, out["num_layers"], where))
    return out


def _deepseek(cfg: dict, where: str) -> dict:
    out = _common(cfg, where)
    if _int(cfg, "moe_layer_freq", where, default=1) != 1:
        raise UnsupportedModelError(f"{where}: moe_layer_freq={cfg['moe_layer_freq']} is not supported; allowed: 1")
    nope, rope = _int(cfg, "qk_nope_head_dim", where), _int(cfg, "qk_rope_head_dim", where)
    out.update(num_kv_heads=out["num_heads"], head_dim=nope + rope,
               q_lora_rank=_int(cfg, "q_lora_rank", where, default=0, low=0), kv_lora_rank=_int(cfg, "kv_lora_rank", where),
               qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=_int(cfg, "v_head_dim", where))
    experts = _int(cfg, "n_routed_experts", where, default=0, low=0)
    if experts:
        out.update(num_experts=experts, experts_per_token=_int(cfg, "num_experts_per_tok", where),
                   moe_intermediate_size=_int(cfg, "moe_intermediate_size", where),
                   num_shared_experts=_int(cfg, "n_shared_experts", where, default=0, low=0),
                   first_dense_layers=_int(cfg, "first_k_dense_replace", where, default=0, low=0),
                   router_bias=cfg.get("topk_method") == "noaux_tc")
    return out


GPT_OSS_WINDOW = 128   # transformers GptOssConfig's sliding_window default (configuration_gpt_oss.py)


def _gpt_oss(cfg: dict, where: str) -> dict:
    """gpt-oss as transformers' GptOssConfig reads it: without layer_types, sliding and full attention alternate
    from a sliding layer 0; without a sliding_window key, GPT_OSS_WINDOW. A sliding_window of 0 or null leaves the
    sliding layers without a window, which the engines read differently: ModelSpec.sliding_window_unset keeps it
    for profiles.engine_time.sliding_window_unset. layer_types other than the default: vLLM and TensorRT-LLM window
    the even-indexed layers whatever they say, so ModelSpec.gpt_oss_sliding_window keeps the window and the count
    for profiles.engine_time.sliding_window_served."""
    out = _common(cfg, where)
    default = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(out["num_layers"])]
    types = cfg.get("layer_types") or default
    unknown = sorted(set(types) - {"sliding_attention", "full_attention"})
    if unknown or len(types) != out["num_layers"]:
        raise UnsupportedModelError(f"{where}: layer_types must list num_hidden_layers entries of "
                                    f"'sliding_attention' or 'full_attention'; got {unknown or len(types)}")
    sliding = types.count("sliding_attention")
    bias = _bool(cfg, "attention_bias", where, True)
    out.update(qkv_bias=bias, attention_output_bias=bias, attention_sinks=True,
               num_experts=_int(cfg, "num_local_experts", where),
               experts_per_token=_int(cfg, "experts_per_token" if cfg.get("num_experts_per_tok") is None
                                      else "num_experts_per_tok", where),
               moe_intermediate_size=out["intermediate_size"], router_bias=True, expert_bias=True)
    given = "sliding_window" in cfg
    window = (_int(cfg, "sliding_window", where, default=0, low=0) if given else GPT_OSS_WINDOW)
    if sliding and not window:
        out["sliding_window_unset"] = "null" if cfg["sliding_window"] is None else "0"
    out.update(_window(sliding, window if sliding else 0))
    if window and types != default:
        out["gpt_oss_sliding_window"] = (window, sliding)
    return out


def _hybrid_need(cfg: dict, keys: tuple[str, ...], where: str, what: str):
    """The first of `keys` the config has; a hybrid model without its layer layout is refused, naming it."""
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    raise UnsupportedModelError(f"{where}: config.json lacks {' or '.join(repr(k) for k in keys)}: a hybrid model must "
                                f"list {what}")


_STATE_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _state_dtype(cfg: dict, where: str) -> str:
    value = cfg.get("mamba_ssm_cache_dtype") or cfg.get("mamba_ssm_dtype")
    if value in (None, "auto"):
        return ""
    if value not in _STATE_DTYPES:
        raise UnsupportedModelError(f"{where}: mamba_ssm_cache_dtype {value!r} is not supported; allowed: "
                                    f"{', '.join(_STATE_DTYPES)}, auto")
    return _STATE_DTYPES[value]


def _qwen3_next(cfg: dict, where: str) -> dict:
    """Qwen3-Next: gated DeltaNet and gated attention (HF `Qwen3NextConfig`: layer_types default to a full
    layer every `full_attention_interval`), MoE with a sigmoid-gated shared expert, one MTP module (the
    checkpoint's `mtp.*` weights, drafted by vLLM's `qwen3_next_mtp`)."""
    out = _common(cfg, where)
    layers = out["num_layers"]
    types = cfg.get("layer_types")
    if types is None:
        _hybrid_need(cfg, ("layer_types", "full_attention_interval"), where, "its linear_attention and full_attention "
                                                                             "layers")
        interval = _int(cfg, "full_attention_interval", where)
        types = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(layers)]
    unknown = sorted(set(types) - {"linear_attention", "full_attention"})
    if unknown or len(types) != layers:
        raise UnsupportedModelError(f"{where}: layer_types must list num_hidden_layers={layers} entries of "
                                    f"'linear_attention' or 'full_attention'; got {unknown or len(types)}")
    experts = _int(cfg, "num_experts", where, default=0, low=0)
    dense = set(_layer_indices(cfg, "mlp_only_layers", layers, where))
    step = _int(cfg, "decoder_sparse_step", where, default=1)
    ffn = ["moe" if experts and i not in dense and (i + 1) % step == 0 else "dense" for i in range(layers)]
    shared = _int(cfg, "shared_expert_intermediate_size", where, default=0, low=0)
    out.update(qk_norm=True, qkv_bias=_bool(cfg, "attention_bias", where, False), attn_output_gate=True,
               layer_types=tuple(types), ffn_types=tuple(ffn),
               linear_num_key_heads=_int(cfg, "linear_num_key_heads", where),
               linear_num_value_heads=_int(cfg, "linear_num_value_heads", where),
               linear_key_head_dim=_int(cfg, "linear_key_head_dim", where),
               linear_value_head_dim=_int(cfg, "linear_value_head_dim", where),
               linear_conv_kernel=_int(cfg, "linear_conv_kernel_dim", where),
               num_mtp_modules=_int(cfg, "num_nextn_predict_layers", where, default=0, low=0)
               or _int(cfg, "mtp_num_hidden_layers", where, default=0, low=0) or 1,
               ssm_state_dtype=_state_dtype(cfg, where))
    if experts:
        out.update(num_experts=experts, experts_per_token=_int(cfg, "num_experts_per_tok", where),
                   moe_intermediate_size=_int(cfg, "moe_intermediate_size", where),
                   num_shared_experts=1 if shared else 0, shared_expert_intermediate_size=shared,
                   shared_expert_gate=bool(shared))
    return out


_NEMOTRON_BLOCKS = {"M": ("mamba", "none"), "*": ("full_attention", "none"), "-": ("none", "dense"),
                    "E": ("none", "moe")}


def _nemotron_h(cfg: dict, where: str) -> dict:
    """Nemotron-H (HF `NemotronHForCausalLM`): one block per character of `hybrid_override_pattern`, each a
    pre-norm and one of Mamba-2, attention, a relu² MLP (up, down) or an MoE layer (Nemotron-3)."""
    if cfg.get("use_bias") or cfg.get("mlp_bias") or cfg.get("moe_latent_size"):
        raise UnsupportedModelError(f"{where}: use_bias, mlp_bias and moe_latent_size are not supported (only their "
                                    "absence is modelled)")
    hidden, heads = _int(cfg, "hidden_size", where), _int(cfg, "num_attention_heads", where)
    cfg = {**cfg, "head_dim": cfg.get("head_dim") or cfg.get("attention_head_dim") or hidden // heads}
    out = _common(cfg, where)
    pattern = str(_hybrid_need(cfg, ("hybrid_override_pattern",), where, "its Mamba (M), attention (*), MLP (-) "
                                                                            "and MoE (E) blocks"))
    bad = sorted(set(pattern) - set(_NEMOTRON_BLOCKS))
    if bad or len(pattern) != out["num_layers"]:
        raise UnsupportedModelError(f"{where}: hybrid_override_pattern must have num_hidden_layers={out['num_layers']} "
                                    f"characters of {''.join(_NEMOTRON_BLOCKS)}; got {bad or len(pattern)}")
    mamba_heads, mamba_head_dim = _int(cfg, "mamba_num_heads", where), _int(cfg, "mamba_head_dim", where)
    out.update(layer_types=tuple(_NEMOTRON_BLOCKS[c][0] for c in pattern),
               ffn_types=tuple(_NEMOTRON_BLOCKS[c][1] for c in pattern), gated_mlp=False,
               mamba_version=2, mamba_inner_size=mamba_heads * mamba_head_dim, mamba_num_heads=mamba_heads,
               mamba_groups=_int(cfg, "n_groups", where), ssm_state_size=_int(cfg, "ssm_state_size", where),
               mamba_conv_kernel=_int(cfg, "conv_kernel", where),
               mamba_conv_bias=_bool(cfg, "use_conv_bias", where, True),
               mamba_chunk_size=_int(cfg, "chunk_size", where), ssm_state_dtype=_state_dtype(cfg, where))
    if "E" in pattern:
        shared = _int(cfg, "moe_shared_expert_intermediate_size", where, default=0, low=0)
        out.update(num_experts=_int(cfg, "n_routed_experts", where),
                   experts_per_token=_int(cfg, "num_experts_per_tok", where),
                   moe_intermediate_size=_int(cfg, "moe_intermediate_size", where),
                   num_shared_experts=_int(cfg, "n_shared_experts", where, default=0, low=0),
                   shared_expert_intermediate_size=shared,
                   router_bias=True)   # NemotronHTopkRouter's e_score_correction_bias
    return out


def _jamba(cfg: dict, where: str) -> dict:
    """Jamba (HF `JambaConfig`): layer i is attention when i % attn_layer_period == attn_layer_offset, else
    Mamba-1; its FFN is MoE when i % expert_layer_period == expert_layer_offset (and num_experts > 1)."""
    if cfg.get("mamba_proj_bias"):
        raise UnsupportedModelError(f"{where}: mamba_proj_bias: true is not supported (projection biases are not modelled)")
    out = _common(cfg, where)
    period, offset = _period_offset(cfg, "attn_layer_period", "attn_layer_offset", where, "which layers are attention")
    layers, experts = out["num_layers"], _int(cfg, "num_experts", where, default=1)
    types = tuple("full_attention" if i % period == offset else "mamba" for i in range(layers))
    hidden = out["hidden_size"]
    rank = cfg.get("mamba_dt_rank", "auto")
    out.update(layer_types=types, mamba_version=1, mamba_inner_size=_int(cfg, "mamba_expand", where, default=2) * hidden,
               ssm_state_size=_int(cfg, "mamba_d_state", where), mamba_conv_kernel=_int(cfg, "mamba_d_conv", where),
               mamba_conv_bias=_bool(cfg, "mamba_conv_bias", where, True), mamba_inner_norms=True,
               mamba_dt_rank=-(-hidden // 16) if rank == "auto" else _int(cfg, "mamba_dt_rank", where))
    if experts > 1:
        e_period, e_offset = _period_offset(cfg, "expert_layer_period", "expert_layer_offset", where,
                                            "which layers are MoE")
        out.update(ffn_types=tuple("moe" if i % e_period == e_offset else "dense" for i in range(layers)),
                   num_experts=experts, experts_per_token=_int(cfg, "num_experts_per_tok", where),
                   moe_intermediate_size=out["intermediate_size"])
    return out


# architecture class name -> (family, converter); a new family is one function and one line here
ARCHITECTURES: dict[str, tuple[str, Callable[[dict, str], dict]]] = {
    "LlamaForCausalLM": ("llama", _llama),
    "MistralForCausalLM": ("mistral", _mistral),
    "Qwen2ForCausalLM": ("qwen2", _qwen2),
    "Qwen3ForCausalLM": ("qwen3", _qwen3),
    "MixtralForCausalLM": ("mixtral", _mixtral),
    "Qwen3MoeForCausalLM": ("qwen3-moe", _qwen3_moe),
    "DeepseekV2ForCausalLM": ("deepseek-v2", _deepseek),
    "DeepseekV3ForCausalLM": ("deepseek-v3", _deepseek),
    "GptOssForCausalLM": ("gpt-oss", _gpt_oss),
    "Qwen3NextForCausalLM": ("qwen3-next", _qwen3_next),
    "NemotronHForCausalLM": ("nemotron-h", _nemotron_h),
    "JambaForCausalLM": ("jamba", _jamba),
}


def spec_from_hf_config(cfg: dict, name: str, source: str = "", where: str = "config.json") -> ModelSpec:
    """The ModelSpec of a parsed Hugging Face config (UnsupportedModelError naming the field otherwise)."""
    if not isinstance(cfg, dict):
        raise UnsupportedModelError(f"{where}: expected a JSON object")
    archs = cfg.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):   # ([{}] is no name: unhashable)
        raise UnsupportedModelError(f"{where}: architectures is {brief(archs)}; expected a list of strings, the "
                                    f"first one of: {', '.join(ARCHITECTURES)} (or one after names draftsim does "
                                    "not read)")
    arch = next((a for a in archs if a in ARCHITECTURES), None)
    if arch is None:
        hint = " (a vision-language wrapper: its text_config is not read)" if "text_config" in cfg else ""
        raise UnsupportedModelError(f"{where}: architectures {archs!r} is not supported{hint}; allowed: "
                                    f"{', '.join(ARCHITECTURES)}")
    family, convert = ARCHITECTURES[arch]
    try:
        fields = convert(cfg, where)
        first = {"hf_first_architecture": archs[0]} if archs[0] != arch else {}
        return ModelSpec(name=name, family=family, source=source, **fields, **first)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, UnsupportedModelError):
            raise
        raise UnsupportedModelError(f"{where}: {exc}") from None


def load_hf_config(path: Path, name: str | None = None) -> ModelSpec:
    """Read `path` (a Hugging Face config.json). The model is named after its folder unless `name` is given."""
    path = Path(path)
    cfg = read_document(path, "JSON", UnsupportedModelError)
    default = path.parent.name.lower() if path.name == "config.json" and path.parent.name else path.stem.lower()
    return spec_from_hf_config(cfg, name or default, source=str(path), where=str(path))
