"""Load a GGUF file (llama.cpp format) into `Qwen2Model` and `BPETokenizer`.

Reads metadata and tensors with the `gguf` package's `GGUFReader`, dequantizes every tensor to fp32 with
`gguf.quants.dequantize` (Q4_K, Q5_0, Q6_K, Q8_0, … — whatever the package implements), builds a
`ModelConfig` from the `<arch>.*` metadata, and maps GGUF tensor names onto the model's parameters.
Architectures: `qwen2` (dense), `qwen2moe` files without shared experts, and dense `llama` (e.g. SmolLM2:
Qwen2's decoder without Q/K/V bias, here with tied embeddings). The Qwen2 GGUF conversion keeps Q/K rows in
Hugging Face order (NeoX / rotate-half rotary), which is the convention of `kernels.apply_rope`. llama.cpp's
converter permutes the Q/K rows of `llama` files for its interleaved-pair rotary (`permute` in
convert_hf_to_gguf.py: per head, rows (2, d/2) → (d/2, 2)); `unpermute_rotary_rows` undoes it exactly.

Dequantized weights are exact copies of what the quantized file encodes (the quantization error of
Q4_K_M relative to the original bf16 model is part of the model being measured, not of the loader).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from models.torch_impl.qwen2 import ModelConfig, Qwen2Model
from models.torch_impl.tokenizer import BPETokenizer, tokenizer_from_gguf_fields

SUPPORTED_ARCHITECTURES = ("qwen2", "qwen2moe", "llama")
_PERMUTED_ROTARY_ARCHITECTURES = ("llama",)   # Q/K rows stored in llama.cpp's interleaved-pair order

_LAYER_TENSORS = {
    "attn_norm.weight": "attn_norm", "attn_q.weight": "q_proj", "attn_k.weight": "k_proj",
    "attn_v.weight": "v_proj", "attn_q.bias": "q_bias", "attn_k.bias": "k_bias", "attn_v.bias": "v_bias",
    "attn_output.weight": "o_proj", "ffn_norm.weight": "ffn_norm", "ffn_gate.weight": "gate_proj",
    "ffn_up.weight": "up_proj", "ffn_down.weight": "down_proj", "ffn_gate_inp.weight": "moe.router",
    "ffn_gate_exps.weight": "moe.gate", "ffn_up_exps.weight": "moe.up", "ffn_down_exps.weight": "moe.down",
}
_GLOBAL_TENSORS = {"token_embd.weight": "embed_tokens", "output_norm.weight": "final_norm",
                   "output.weight": "lm_head"}


@dataclass(frozen=True)
class LoadedModel:
    model: Qwen2Model
    tokenizer: BPETokenizer
    config: ModelConfig
    name: str
    path: str
    tensor_types: tuple[tuple[str, int], ...]   # quantization type name → tensor count


def read_fields(reader) -> dict[str, Any]:
    """GGUF key/value metadata as plain Python values (strings, numbers, lists), minus the GGUF.* header."""
    return {key: fld.contents() for key, fld in reader.fields.items() if not key.startswith("GGUF.")}


def gguf_tensor_to_torch(tensor) -> torch.Tensor:
    """Dequantize one `ReaderTensor` to a contiguous fp32 torch tensor in torch's (row-major) shape."""
    from gguf.quants import dequantize
    array = dequantize(tensor.data, tensor.tensor_type)
    shape = tuple(int(d) for d in reversed(tensor.shape.tolist()))
    array = np.ascontiguousarray(array, dtype=np.float32).reshape(shape)
    if not array.flags.writeable:   # F32/F16 tensors come back as views of the read-only memory map
        array = array.copy()
    return torch.from_numpy(array)


def unpermute_rotary_rows(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """Hugging Face (rotate-half) row order of a Q or K projection [heads*head_dim, …] stored by llama.cpp's
    converter in interleaved-pair order: per head, rows (head_dim/2, 2) → (2, head_dim/2)."""
    rows = weight.shape[0]
    return (weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:]).transpose(1, 2)
            .reshape(weight.shape).contiguous())


def permute_rotary_rows(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """Inverse of `unpermute_rotary_rows` (what llama.cpp's converter writes)."""
    rows = weight.shape[0]
    return (weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:]).transpose(1, 2)
            .reshape(weight.shape).contiguous())


def config_from_fields(fields: dict[str, Any], tensor_names: set[str]) -> ModelConfig:
    arch = fields.get("general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ValueError(f"general.architecture must be one of {SUPPORTED_ARCHITECTURES}, got {arch!r}")

    def get(key: str, default: Any = None) -> Any:
        value = fields.get(f"{arch}.{key}", default)
        if value is None:
            raise ValueError(f"GGUF metadata lacks {arch}.{key}")
        return value

    hidden, heads = int(get("embedding_length")), int(get("attention.head_count"))
    experts = int(fields.get(f"{arch}.expert_count", 0) or 0)
    if any("shexp" in name for name in tensor_names):
        raise ValueError("GGUF has shared-expert tensors (ffn_*_shexp), which MoEBlock does not implement")
    vocab = len(fields["tokenizer.ggml.tokens"]) if "tokenizer.ggml.tokens" in fields else None
    return ModelConfig(
        vocab_size=int(vocab if vocab is not None else get("vocab_size")),
        hidden_size=hidden,
        intermediate_size=int(fields.get(f"{arch}.feed_forward_length", 0) or 0),
        num_layers=int(get("block_count")),
        num_heads=heads,
        num_kv_heads=int(get("attention.head_count_kv", heads)),
        head_dim=int(fields.get(f"{arch}.attention.key_length", hidden // heads)),
        rope_theta=float(get("rope.freq_base", 10000.0)),
        rms_norm_eps=float(get("attention.layer_norm_rms_epsilon")),
        qkv_bias="blk.0.attn_q.bias" in tensor_names,
        tie_word_embeddings="output.weight" not in tensor_names,
        max_context=int(get("context_length")),
        num_experts=experts,
        experts_per_token=int(fields.get(f"{arch}.expert_used_count", 0) or 0),
        moe_intermediate_size=int(fields.get(f"{arch}.expert_feed_forward_length", 0) or 0),
        # Qwen2-MoE checkpoints use norm_topk_prob = False (raw softmax weights).
        moe_renormalize=bool(fields.get(f"{arch}.expert_weights_norm", arch != "qwen2moe")),
    )


def parameter_name(gguf_name: str) -> str:
    """Model parameter name for a GGUF tensor name (`blk.3.attn_q.weight` → `layers.3.q_proj`)."""
    if gguf_name in _GLOBAL_TENSORS:
        return _GLOBAL_TENSORS[gguf_name]
    parts = gguf_name.split(".", 2)
    if len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in _LAYER_TENSORS:
        return f"layers.{parts[1]}.{_LAYER_TENSORS[parts[2]]}"
    raise ValueError(f"GGUF tensor {gguf_name!r} has no counterpart in Qwen2Model")


def _set_parameter(model: nn.Module, dotted: str, value: torch.Tensor) -> None:
    *path, leaf = dotted.split(".")
    module = model
    for part in path:
        module = getattr(module, part)
    current = module._parameters.get(leaf)
    if current is None:
        raise ValueError(f"GGUF tensor maps to {dotted}, which this model configuration does not have")
    if tuple(current.shape) != tuple(value.shape):
        raise ValueError(f"GGUF tensor for {dotted} has shape {list(value.shape)}, "
                         f"the model expects {list(current.shape)}")
    module._parameters[leaf] = nn.Parameter(value, requires_grad=False)


def load_gguf(path: str | Path, name: str | None = None) -> LoadedModel:
    """Model (fp32, eval mode), tokenizer and config from a GGUF file."""
    from gguf import GGUFReader
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"GGUF path {str(path)!r} is not a file")
    reader = GGUFReader(str(path))
    fields = read_fields(reader)
    names = {t.name for t in reader.tensors}
    cfg = config_from_fields(fields, names)
    with torch.device("meta"):
        model = Qwen2Model(cfg)
    type_counts: dict[str, int] = {}
    permuted = fields.get("general.architecture") in _PERMUTED_ROTARY_ARCHITECTURES
    for tensor in reader.tensors:
        value = gguf_tensor_to_torch(tensor)
        if permuted and tensor.name.endswith(("attn_q.weight", "attn_k.weight")):
            heads = cfg.num_heads if tensor.name.endswith("attn_q.weight") else cfg.num_kv_heads
            value = unpermute_rotary_rows(value, heads)
        _set_parameter(model, parameter_name(tensor.name), value)
        type_counts[tensor.tensor_type.name] = type_counts.get(tensor.tensor_type.name, 0) + 1
    missing = [n for n, p in model.named_parameters() if p.is_meta]
    if missing:
        raise ValueError(f"GGUF file lacks tensors for {len(missing)} parameters, e.g. {missing[:3]}")
    tokenizer = tokenizer_from_gguf_fields(fields)
    if tokenizer.vocab_size != cfg.vocab_size:
        raise ValueError(f"tokenizer has {tokenizer.vocab_size} tokens, model vocab is {cfg.vocab_size}")
    return LoadedModel(model.eval(), tokenizer, cfg, name or str(fields.get("general.name", path.stem)),
                       str(path), tuple(sorted(type_counts.items())))


def write_gguf(model: Qwen2Model, tokenizer: BPETokenizer, path: str | Path, quant: str = "F32",
               name: str = "draftsim test model", arch: str | None = None) -> None:
    """Write `model` and `tokenizer` as a GGUF file that `load_gguf` reads back (architecture `qwen2`, or
    `qwen2moe` for MoE configs, or `arch="llama"`: Q/K rows permuted as llama.cpp's converter does). Matrices are stored as `quant` (a `gguf.GGMLQuantizationType` name the
    `gguf` package can quantize, e.g. F32, F16, Q8_0, Q5_0, Q4_0) when their rows fit its block size, else
    F32; vectors stay F32. Used to test the loader end to end on tiny random models."""
    from gguf import GGMLQuantizationType, GGUFWriter
    from gguf.constants import GGML_QUANT_SIZES
    from gguf.quants import quantize
    try:
        qtype = GGMLQuantizationType[quant]
    except KeyError:
        raise ValueError(f"quant must be a GGMLQuantizationType name (e.g. F32, Q8_0), got {quant!r}") from None
    cfg = model.cfg
    arch = arch or ("qwen2moe" if cfg.num_experts else "qwen2")
    if arch not in SUPPORTED_ARCHITECTURES or (arch == "llama" and (cfg.num_experts or cfg.qkv_bias)):
        raise ValueError(f"arch must be one of {SUPPORTED_ARCHITECTURES} (llama: dense, no Q/K/V bias), got {arch!r}")
    writer = GGUFWriter(str(path), arch)
    writer.add_name(name)
    writer.add_context_length(cfg.max_context)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_layers)
    if cfg.intermediate_size:
        writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_heads)
    writer.add_head_count_kv(cfg.num_kv_heads)
    writer.add_uint32(f"{arch}.attention.key_length", cfg.head_dim)
    writer.add_uint32(f"{arch}.attention.value_length", cfg.head_dim)
    writer.add_rope_freq_base(cfg.rope_theta)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    if cfg.num_experts:
        writer.add_expert_count(cfg.num_experts)
        writer.add_expert_used_count(cfg.experts_per_token)
        writer.add_expert_feed_forward_length(cfg.moe_intermediate_size)
        writer.add_bool(f"{arch}.expert_weights_norm", cfg.moe_renormalize)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(tokenizer.pre)
    writer.add_token_list(list(tokenizer.tokens))
    writer.add_token_types(list(tokenizer.token_types) or [1] * tokenizer.vocab_size)
    writer.add_token_merges(list(tokenizer.merges))
    for key, value in (("bos", tokenizer.bos_id), ("eos", tokenizer.eos_id), ("pad", tokenizer.pad_id)):
        if value is not None:
            getattr(writer, f"add_{key}_token_id")(int(value))
    inverse = {v: k for k, v in _GLOBAL_TENSORS.items()}
    inverse.update({f"layers.{i}.{v}": f"blk.{i}.{k}" for i in range(cfg.num_layers)
                    for k, v in _LAYER_TENSORS.items()})
    block = GGML_QUANT_SIZES[qtype][0]
    for param_name, param in model.named_parameters():
        value = param.detach().to(torch.float32).cpu()
        if arch in _PERMUTED_ROTARY_ARCHITECTURES and param_name.endswith(("q_proj", "k_proj")):
            value = permute_rotary_rows(value, cfg.num_heads if param_name.endswith("q_proj") else cfg.num_kv_heads)
        data = value.numpy()
        if data.ndim >= 2 and qtype != GGMLQuantizationType.F32 and data.shape[-1] % block == 0:
            writer.add_tensor(inverse[param_name], quantize(data, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(inverse[param_name], np.ascontiguousarray(data))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
