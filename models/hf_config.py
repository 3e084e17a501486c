"""A Hugging Face `config.json` → `ModelSpec`, for the decoder-only architectures draftsim can price.

Supported `architectures` (registry `ARCHITECTURES`, one converter per family):

| architecture | what is read beyond the common fields |
|---|---|
| LlamaForCausalLM, MistralForCausalLM | `attention_bias` (q/k/v and o biases), `sliding_window` (every layer, Mistral) |
| Qwen2ForCausalLM | q/k/v biases always; `use_sliding_window` + `max_window_layers` |
| Qwen3ForCausalLM | per-head q/k RMSNorm, explicit `head_dim` |
| MixtralForCausalLM | `num_local_experts`, `num_experts_per_tok`, `intermediate_size` = expert width |
| Qwen3MoeForCausalLM | `num_experts`, `moe_intermediate_size`, `mlp_only_layers` (leading dense layers only) |
| DeepseekV2ForCausalLM, DeepseekV3ForCausalLM | MLA (`q_lora_rank`, `kv_lora_rank`, rope/nope/v head dims), shared experts, `first_k_dense_replace`, `topk_method: noaux_tc` (router bias) |
| GptOssForCausalLM | `layer_types` (sliding vs full attention), attention and expert biases, attention sinks |

Common fields: `hidden_size`, `num_hidden_layers`, `num_attention_heads`, `num_key_value_heads` (default: the
attention heads, as in the Hugging Face classes), `head_dim` (default hidden/heads), `intermediate_size`,
`vocab_size`, `max_position_embeddings`, `rope_theta`, `tie_word_embeddings` (default false: every class
above defaults to untied), `num_nextn_predict_layers` (multi-token-prediction modules shipped, default 0). Rope scaling, quantization blocks and dropout do not change the compute
priced here and are ignored. Anything else — another architecture, a vision-language wrapper
(`text_config`), a layer layout ModelSpec cannot express — is an `UnsupportedModelError` naming the field.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from models.files import read_document
from models.spec import ModelSpec


class UnsupportedModelError(ValueError):
    """The config cannot be turned into a ModelSpec; the message names the field and what is allowed."""


def _need(cfg: dict, key: str, where: str):
    value = cfg.get(key)
    if value is None:
        raise UnsupportedModelError(f"{where}: config.json lacks {key!r}")
    return value


def _common(cfg: dict, where: str) -> dict:
    heads = int(_need(cfg, "num_attention_heads", where))
    hidden = int(_need(cfg, "hidden_size", where))
    return {
        "hidden_size": hidden,
        "num_layers": int(_need(cfg, "num_hidden_layers", where)),
        "num_heads": heads,
        "num_kv_heads": int(cfg.get("num_key_value_heads") or heads),
        "head_dim": int(cfg.get("head_dim") or hidden // heads),
        "intermediate_size": int(_need(cfg, "intermediate_size", where)),
        "vocab_size": int(_need(cfg, "vocab_size", where)),
        "max_position_embeddings": int(_need(cfg, "max_position_embeddings", where)),
        "rope_theta": float(cfg.get("rope_theta") or 10000.0),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "num_mtp_modules": int(cfg.get("num_nextn_predict_layers") or 0),
    }


def _window(layers: int, window) -> dict:
    return {"sliding_window": int(window), "sliding_window_layers": layers} if window else {}


def _llama(cfg: dict, where: str) -> dict:
    out = _common(cfg, where)
    if cfg.get("mlp_bias"):
        raise UnsupportedModelError(f"{where}: mlp_bias: true is not supported (MLP biases are not modelled)")
    bias = bool(cfg.get("attention_bias", False))
    out.update(qkv_bias=bias, attention_output_bias=bias)
    out.update(_window(out["num_layers"], cfg.get("sliding_window")))
    return out


def _qwen2(cfg: dict, where: str) -> dict:
    out = _common(cfg, where)
    out["qkv_bias"] = True  # Qwen2 attention has q/k/v biases (no o bias) whatever attention_bias says
    return _qwen_window(cfg, out)


def _qwen_window(cfg: dict, out: dict) -> dict:
    """Qwen's optional sliding window: layers from `max_window_layers` on use it when `use_sliding_window`."""
    if cfg.get("use_sliding_window"):
        layers = max(out["num_layers"] - int(cfg.get("max_window_layers", out["num_layers"])), 0)
        out.update(_window(layers, cfg.get("sliding_window") if layers else 0))
    return out


def _qwen3(cfg: dict, where: str) -> dict:
    """Qwen3 dense and MoE attention: q/k RMSNorm, optional q/k/v bias, optional sliding window."""
    out = _common(cfg, where)
    out.update(qk_norm=True, qkv_bias=bool(cfg.get("attention_bias", False)))
    return _qwen_window(cfg, out)


def _mixtral(cfg: dict, where: str) -> dict:
    out = _common(cfg, where)
    out.update(num_experts=int(_need(cfg, "num_local_experts", where)),
               experts_per_token=int(_need(cfg, "num_experts_per_tok", where)),
               moe_intermediate_size=out["intermediate_size"])
    out.update(_window(out["num_layers"], cfg.get("sliding_window")))
    return out


def _leading_dense(cfg: dict, layers: int, where: str) -> int:
    """Leading dense layers of a Qwen-MoE layout; other layouts cannot be expressed."""
    dense = sorted(int(i) for i in cfg.get("mlp_only_layers") or [])
    if dense != list(range(len(dense))) or int(cfg.get("decoder_sparse_step", 1)) != 1:
        raise UnsupportedModelError(f"{where}: mlp_only_layers={dense} with decoder_sparse_step="
                                    f"{cfg.get('decoder_sparse_step', 1)} is not supported; allowed: dense layers "
                                    "only before the MoE layers, decoder_sparse_step 1")
    return len(dense)


def _qwen3_moe(cfg: dict, where: str) -> dict:
    out = _qwen3(cfg, where)
    out.update(num_experts=int(_need(cfg, "num_experts", where)),
               experts_per_token=int(_need(cfg, "num_experts_per_tok", where)),
               moe_intermediate_size=int(_need(cfg, "moe_intermediate_size", where)),
               first_dense_layers=_leading_dense(cfg, out["num_layers"], where))
    return out


def _deepseek(cfg: dict, where: str) -> dict:
    out = _common(cfg, where)
    if int(cfg.get("moe_layer_freq", 1)) != 1:
        raise UnsupportedModelError(f"{where}: moe_layer_freq={cfg['moe_layer_freq']} is not supported; allowed: 1")
    nope, rope = int(_need(cfg, "qk_nope_head_dim", where)), int(_need(cfg, "qk_rope_head_dim", where))
    out.update(num_kv_heads=out["num_heads"], head_dim=nope + rope,
               q_lora_rank=int(cfg.get("q_lora_rank") or 0), kv_lora_rank=int(_need(cfg, "kv_lora_rank", where)),
               qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=int(_need(cfg, "v_head_dim", where)))
    if cfg.get("n_routed_experts"):
        out.update(num_experts=int(cfg["n_routed_experts"]), experts_per_token=int(_need(cfg, "num_experts_per_tok", where)),
                   moe_intermediate_size=int(_need(cfg, "moe_intermediate_size", where)),
                   num_shared_experts=int(cfg.get("n_shared_experts") or 0),
                   first_dense_layers=int(cfg.get("first_k_dense_replace") or 0),
                   router_bias=cfg.get("topk_method") == "noaux_tc")
    return out


def _gpt_oss(cfg: dict, where: str) -> dict:
    out = _common(cfg, where)
    types = cfg.get("layer_types") or ["full_attention"] * out["num_layers"]
    unknown = sorted(set(types) - {"sliding_attention", "full_attention"})
    if unknown or len(types) != out["num_layers"]:
        raise UnsupportedModelError(f"{where}: layer_types must list num_hidden_layers entries of "
                                    f"'sliding_attention' or 'full_attention'; got {unknown or len(types)}")
    sliding = types.count("sliding_attention")
    bias = bool(cfg.get("attention_bias", True))
    out.update(qkv_bias=bias, attention_output_bias=bias, attention_sinks=True,
               num_experts=int(_need(cfg, "num_local_experts", where)),
               experts_per_token=int(cfg.get("num_experts_per_tok") or _need(cfg, "experts_per_token", where)),
               moe_intermediate_size=out["intermediate_size"], router_bias=True, expert_bias=True)
    out.update(_window(sliding, cfg.get("sliding_window") if sliding else 0))
    return out


# architecture class name -> (family, converter); a new family is one function and one line here
ARCHITECTURES: dict[str, tuple[str, Callable[[dict, str], dict]]] = {
    "LlamaForCausalLM": ("llama", _llama),
    "MistralForCausalLM": ("mistral", _llama),
    "Qwen2ForCausalLM": ("qwen2", _qwen2),
    "Qwen3ForCausalLM": ("qwen3", _qwen3),
    "MixtralForCausalLM": ("mixtral", _mixtral),
    "Qwen3MoeForCausalLM": ("qwen3-moe", _qwen3_moe),
    "DeepseekV2ForCausalLM": ("deepseek-v2", _deepseek),
    "DeepseekV3ForCausalLM": ("deepseek-v3", _deepseek),
    "GptOssForCausalLM": ("gpt-oss", _gpt_oss),
}


def spec_from_hf_config(cfg: dict, name: str, source: str = "", where: str = "config.json") -> ModelSpec:
    """The ModelSpec of a parsed Hugging Face config (UnsupportedModelError naming the field otherwise)."""
    if not isinstance(cfg, dict):
        raise UnsupportedModelError(f"{where}: expected a JSON object")
    archs = cfg.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs else None
    if arch not in ARCHITECTURES:
        hint = " (a vision-language wrapper: its text_config is not read)" if "text_config" in cfg else ""
        raise UnsupportedModelError(f"{where}: architectures {archs!r} is not supported{hint}; allowed: "
                                    f"{', '.join(ARCHITECTURES)}")
    family, convert = ARCHITECTURES[arch]
    try:
        fields = convert(cfg, where)
        return ModelSpec(name=name, family=family, source=source, **fields)
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
