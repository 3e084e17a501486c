"""`ModelSpec`: the architecture numbers of one decoder-only LLM, and what follows from them.

Every field mirrors a field of the model's published Hugging Face `config.json` (the catalog files in
`models/catalog/` cite each source). Derived quantities:

* `param_count()` counts every weight matrix, bias and norm vector of the checkpoint's main model
  (DeepSeek-V3's multi-token-prediction module is excluded, as in the published 671B figure; the MTP
  modules a checkpoint ships are `num_mtp_modules`, priced by models.mtp).
* `active_param_count()` is the same count with only `experts_per_token` routed experts per MoE layer.
  It includes both embedding matrices (the convention behind Mixtral's "12.9B active").
* `kv_bytes_per_token()` is the KV cache of one token over all layers; MLA caches the compressed latent
  (`kv_lora_rank`) plus the shared RoPE key (`qk_rope_head_dim`) once per layer instead of K and V per head.
  Approximation: sliding-window layers are counted at the full context too. Under vLLM from 0.10 (vLLM V1's
  hybrid KV-cache manager frees blocks outside the window) the replica's KV manager does not use this figure:
  simulator.core.kv.sliding_window holds them as vLLM does. Elsewhere (SGLang's SWA pool, TensorRT-LLM's
  variable sliding-window attention, vLLM before 0.10 or with its hybrid manager off: CPU backend,
  disaggregated KV connectors; host memory, parallel sampling, and prefix caching of shared prefixes in units
  larger than a KV block or with shared-prefix attention here) it stands, and for
  contexts longer than the window over-states the KV of a model with `sliding_window_layers` by up to their
  share of layers.
* `flops_per_token(context_tokens)` counts matmul FLOPs only (2 per multiply-add): every weight GEMM the
  token goes through (routed experts: `experts_per_token` of them) plus attention over `context_tokens`
  earlier tokens. Element-wise work (norms, activations, softmax) is left out; it is < 1 % for these models.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from models.dtypes import (DTYPE_BYTES, EXPERT_ONLY_DTYPES, FP4_DTYPES, KV_DTYPES,  # noqa: F401  (re-exported)
                           WEIGHT_ONLY_DTYPES, activation_bytes, dense_weight_dtype, dtype_bytes, kv_cache_dtype,
                           vocab_weight_dtype)
from models.errors import brief, is_boolean
from models.step import Parallelism

# Upper bounds of ModelSpec's integer fields, far above every published model and low enough that what is built
# from them stays small and finite: per-layer lists (a hybrid layout, a pipeline split), int64 columns, float FLOP
# and byte counts. A larger figure is a typo or a hostile file, not a model (a 400-digit hidden_size overflowed a
# float; 10^9 Jamba layers built a per-layer list for minutes before the memory check).
MAX_LAYERS = 10_000   # decoder layers: the deepest published LLMs have < 200 (Llama-3.1-405B 126, DeepSeek-V3 61)
MAX_TOKENS = 2**30    # positions, sliding windows: the longest published context is 10M tokens (Llama-4 Scout, < 2^24)
MAX_VOCAB = 2**24     # vocabularies: the largest published is 262,144 = 2^18 (Gemma 3)
MAX_WIDTH = 2**20     # every other count (widths, heads, experts, ranks, kernels): the largest published are < 2^17
                      # (Llama-3.1-405B's intermediate 53,248; Qwen3-Next's 512 experts)
_MAX_OF = {"num_layers": MAX_LAYERS, "sliding_window_layers": MAX_LAYERS, "first_dense_layers": MAX_LAYERS,
           "num_mtp_modules": MAX_LAYERS, "max_position_embeddings": MAX_TOKENS, "sliding_window": MAX_TOKENS,
           "rope_original_max_position_embeddings": MAX_TOKENS, "vocab_size": MAX_VOCAB}
POSITIVE_FIELDS = ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size",
                   "vocab_size", "max_position_embeddings")


def max_of(field: str) -> int:
    """The largest value allowed for the integer ModelSpec field `field` (MAX_WIDTH unless _MAX_OF says)."""
    return _MAX_OF.get(field, MAX_WIDTH)


def integer_expected(value, low: int, high: int) -> str | None:
    """None when `value` is an integer (not a boolean) in low..high; else what is expected, for an error line."""
    if is_boolean(value) or not isinstance(value, int) or not low <= value <= high:
        return f"an integer >= {low} and <= {high:,}"
    return None


def positive_number_expected(value) -> str | None:
    """None when `value` is a finite number > 0 (not a boolean); else what is expected, for an error line."""
    try:
        if not is_boolean(value) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            return None
    except OverflowError:   # (math.isfinite of an integer beyond a float: a 400-digit rope_theta)
        pass
    return "a finite number > 0"


def _field_problem(spec: "ModelSpec", field: dataclasses.Field) -> str | None:
    """What field `field` of `spec` should be, when its value is not of its kind (None when it is). The
    layout tuples are models.mixers.check_layout's."""
    value = getattr(spec, field.name)
    if field.type == "int":
        return integer_expected(value, 1 if field.name in POSITIVE_FIELDS else 0, max_of(field.name))
    if field.type == "bool":
        return None if isinstance(value, bool) else "true or false"   # (bool("no") is True)
    if field.type == "float":
        return positive_number_expected(value)
    if field.type == "str":
        return None if isinstance(value, str) else "text"
    return None


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of one model. Zero in an MoE/MLA field means "this model does not use it"."""

    name: str
    family: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int                 # dense MLP width (dense layers of an MoE model too)
    vocab_size: int
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False                  # per-head RMSNorm on q and k (Qwen3)
    attention_output_bias: bool = False    # bias on the output projection too (gpt-oss; Llama attention_bias)
    attention_sinks: bool = False          # one learned sink logit per head and layer (gpt-oss)
    sliding_window: int = 0                # tokens a sliding-window layer attends to (0: no such layers)
    sliding_window_layers: int = 0         # how many of the layers use the window (the rest attend fully)
    rope_theta: float = 10000.0
    max_position_embeddings: int = 4096
    # Mixture of experts.
    num_experts: int = 0                   # routed experts per MoE layer
    experts_per_token: int = 0             # top-k
    moe_intermediate_size: int = 0         # width of one routed (and one shared) expert
    num_shared_experts: int = 0
    first_dense_layers: int = 0            # leading layers that keep a dense MLP (first_k_dense_replace)
    router_bias: bool = False              # per-expert router bias (DeepSeek-V3 "noaux_tc", gpt-oss router)
    expert_bias: bool = False              # biases on each expert's gate/up and down projections (gpt-oss)
    # Multi-head latent attention (DeepSeek).
    q_lora_rank: int = 0                   # 0: queries are projected directly from the hidden state
    kv_lora_rank: int = 0                  # > 0 marks MLA
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # Multi-token prediction (config.json `num_nextn_predict_layers`): MTP modules the checkpoint ships
    # beside the main model (not counted in param_count; simulator.cost.mtp drafts with them).
    num_mtp_modules: int = 0
    # Hybrid layouts (models.mixers). Empty tuples: every layer is softmax attention (sliding_window_layers of
    # them windowed) followed by an FFN (dense for the first first_dense_layers, else MoE for MoE models).
    layer_types: tuple[str, ...] = ()      # token mixer per layer index: models.mixers.MIXER_KINDS
    ffn_types: tuple[str, ...] = ()        # FFN per layer index: dense | moe | none
    attn_output_gate: bool = False         # gated attention (Qwen3-Next): q_proj also emits a sigmoid gate per output
    gated_mlp: bool = True                 # SwiGLU (gate, up, down); False: up and down only (Nemotron-H relu²)
    shared_expert_intermediate_size: int = 0  # width of one shared expert (0: moe_intermediate_size)
    shared_expert_gate: bool = False       # a sigmoid gate h → 1 on the shared expert's output (Qwen3-Next)
    linear_num_key_heads: int = 0          # gated DeltaNet layers
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel: int = 0
    mamba_version: int = 0                 # Mamba layers: 1 (selective scan) or 2 (SSD)
    mamba_inner_size: int = 0              # D = expand · hidden
    mamba_num_heads: int = 0               # Mamba-2 heads (head dim D / heads)
    mamba_groups: int = 0                  # Mamba-2 B/C groups
    ssm_state_size: int = 0                # N
    mamba_conv_kernel: int = 0
    mamba_conv_bias: bool = True
    mamba_dt_rank: int = 0                 # Mamba-1 Δ rank
    mamba_inner_norms: bool = False        # Mamba-1: RMSNorms on Δ, B and C (Jamba's dt/b/c_layernorm)
    mamba_chunk_size: int = 0              # Mamba-2 SSD chunk
    ssm_state_dtype: str = ""              # temporal state dtype ("": the activations'; config mamba_ssm_cache_dtype)
    # What the engines derive the context limit from beside max_position_embeddings (models.context_config reads
    # them; profiles.engine_time.context_length holds each engine's rule): config.json's RoPE scaling block and
    # its other length keys, as (key, tokens) pairs.
    rope_scaling_type: str = ""            # rope_type of rope_scaling / rope_parameters ("": no scaling)
    rope_scaling_factor: float = 1.0
    rope_original_max_position_embeddings: int = 0   # the rope block's (0: none)
    rope_original_null: bool = False       # the block gives original_max_position_embeddings as null (context_config)
    length_keys: tuple[tuple[str, int], ...] = ()
    # The weights' format as the checkpoint holds them (config.json quantization_config, models.quant_config):
    # a cluster.dtype name, "" for an unquantized checkpoint (or one no config says is quantized).
    checkpoint_dtype: str = ""
    # The KV-cache quantization the checkpoint's quantization_config declares (models.quant_config.checkpoint_kv):
    # its format (modelopt, compressed-tensors, fp8) and KV dtype (fp8, nvfp4); "" for none. Whether a deployment's
    # KV dtype default takes it is its engine release's rule (profiles.engine_time.kv_cache_auto).
    checkpoint_kv_format: str = ""
    checkpoint_kv_dtype: str = ""
    # config.json's sliding_window ("0" or "null") where its layer_types name sliding layers that it leaves without
    # a window (gpt-oss; models.hf_config): the engines read the two differently
    # (profiles.engine_time.sliding_window_unset)
    sliding_window_unset: str = ""
    # Qwen2 / Qwen3 dense with use_sliding_window: (config.json's window, its max_window_layers), which vLLM reads
    # otherwise than transformers (models.hf_config._qwen_window; profiles.engine_time.sliding_window_served)
    qwen_sliding_window: tuple[int, ...] = ()
    # gpt-oss whose config.json lists layer_types other than transformers' default (sliding from layer 0, then
    # alternating): (config.json's sliding_window, the layers its layer_types name sliding), which vLLM and
    # TensorRT-LLM read otherwise (they window the even-indexed layers: profiles.engine_time.sliding_window_served)
    gpt_oss_sliding_window: tuple[int, ...] = ()
    # config.json's architectures[0] where draftsim read a later entry (models.hf_config: vLLM and SGLang load the
    # first entry they register; TensorRT-LLM loads architectures[0] only); "" when the first entry was read
    hf_first_architecture: str = ""
    source: str = ""                       # where the numbers come from

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            expected = _field_problem(self, field)
            if expected:
                raise ValueError(f"model {self.name!r}: {field.name} is {brief(getattr(self, field.name))}; "
                                 f"expected {expected}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"model {self.name!r}: num_heads={self.num_heads} must be a multiple of "
                             f"num_kv_heads={self.num_kv_heads}")
        if (self.num_experts > 0) != (self.experts_per_token > 0) or self.experts_per_token > self.num_experts:
            raise ValueError(f"model {self.name!r}: experts_per_token={self.experts_per_token} must be in "
                             f"1..num_experts={self.num_experts} for MoE models and 0 otherwise")
        if self.num_experts and self.moe_intermediate_size <= 0:
            raise ValueError(f"model {self.name!r}: moe_intermediate_size must be > 0 for MoE models")
        if not 0 <= self.first_dense_layers <= self.num_layers:
            raise ValueError(f"model {self.name!r}: first_dense_layers must be in 0..num_layers")
        if (self.sliding_window > 0) != (self.sliding_window_layers > 0) or \
                not 0 <= self.sliding_window_layers <= self.num_layers:
            raise ValueError(f"model {self.name!r}: sliding_window={self.sliding_window} and sliding_window_layers="
                             f"{self.sliding_window_layers} must both be 0 or both > 0 (layers at most num_layers)")
        if not isinstance(self.num_mtp_modules, int) or self.num_mtp_modules < 0:
            raise ValueError(f"model {self.name!r}: num_mtp_modules must be an integer >= 0, got "
                             f"{self.num_mtp_modules!r}")
        if self.kv_lora_rank and min(self.qk_rope_head_dim, self.qk_nope_head_dim, self.v_head_dim) <= 0:
            raise ValueError(f"model {self.name!r}: MLA needs qk_rope_head_dim, qk_nope_head_dim and "
                             "v_head_dim > 0")
        self._check_layout()
        from models.context_config import check_length_keys, check_rope_scaling
        check_length_keys(self)
        check_rope_scaling(self)
        if self.checkpoint_dtype and self.checkpoint_dtype not in DTYPE_BYTES:
            raise ValueError(f"model {self.name!r}: checkpoint_dtype is {brief(self.checkpoint_dtype)}; expected one "
                             f"of {', '.join(DTYPE_BYTES)} or empty")
        self._check_checkpoint_kv()

    def _check_checkpoint_kv(self) -> None:
        from models.quant_config import KV_FORMATS
        pair = self.qwen_sliding_window
        if not isinstance(pair, (list, tuple)) or (pair and (len(pair) != 2 or integer_expected(pair[0], 1, MAX_TOKENS)
                                                             or integer_expected(pair[1], 0, MAX_LAYERS))):
            raise ValueError(f"model {self.name!r}: qwen_sliding_window is {brief(pair)}; expected [] or [window "
                             f"tokens 1..{MAX_TOKENS}, max_window_layers 0..{MAX_LAYERS}]")
        object.__setattr__(self, "qwen_sliding_window", tuple(pair))
        pair = self.gpt_oss_sliding_window
        if not isinstance(pair, (list, tuple)) or (pair and (len(pair) != 2 or integer_expected(pair[0], 1, MAX_TOKENS)
                                                             or integer_expected(pair[1], 0, self.num_layers))):
            raise ValueError(f"model {self.name!r}: gpt_oss_sliding_window is {brief(pair)}; expected [] or [window "
                             f"tokens 1..{MAX_TOKENS}, sliding layers 0..num_layers ({self.num_layers})]")
        object.__setattr__(self, "gpt_oss_sliding_window", tuple(pair))
        if self.sliding_window_unset not in ("", "0", "null") or (self.sliding_window_unset and self.sliding_window):
            raise ValueError(f"model {self.name!r}: sliding_window_unset is {brief(self.sliding_window_unset)}; "
                             "expected \"\", or \"0\" or \"null\" with sliding_window 0")
        if self.checkpoint_kv_format not in ("", *KV_FORMATS):
            raise ValueError(f"model {self.name!r}: checkpoint_kv_format is {brief(self.checkpoint_kv_format)}; "
                             f"expected one of {', '.join(KV_FORMATS)} or empty")
        if self.checkpoint_kv_dtype not in ("", "fp8", "nvfp4"):
            raise ValueError(f"model {self.name!r}: checkpoint_kv_dtype is {brief(self.checkpoint_kv_dtype)}; "
                             "expected fp8, nvfp4 or empty")
        if bool(self.checkpoint_kv_format) != bool(self.checkpoint_kv_dtype):
            raise ValueError(f"model {self.name!r}: checkpoint_kv_format and checkpoint_kv_dtype must both be given "
                             "or both be empty")

    def _check_layout(self) -> None:
        """Hybrid layout fields (ValueError naming the field; models.mixers.check_layout)."""
        from models.mixers import check_layout
        check_layout(self)

    # ---- structure -------------------------------------------------------------------------------

    def with_layers(self, n: int, label: str | None = None) -> "ModelSpec":
        """This model with `n` decoder layers (a layer-skipping draft, a draft head, a group of layers): the
        leading dense layers up to n and the model's share of sliding-window layers, rounded (0 drops the
        window); a hybrid layout keeps its first n layers. Named `<name>[<label>]` (default `n layers`).
        A gpt-oss config.json's own count of sliding layers (gpt_oss_sliding_window) becomes the prefix's share
        too, rounded: which of the first n layers its layer_types name sliding is not kept (approximation; a
        layer-skipping draft of a gpt-oss whose layer_types were all sliding raised a ValueError traceback, its
        24 sliding layers of 12)."""
        name = f"{self.name}[{label or f'{n} layers'}]"
        oss = self.gpt_oss_sliding_window
        if oss:
            oss = (oss[0], round(n * oss[1] / self.num_layers))
        if self.layer_types or self.ffn_types:
            from models.mixers import SLIDING_ATTENTION
            types, ffn = self.layer_types[:n], self.ffn_types[:n]
            window_layers = types.count(SLIDING_ATTENTION)
            # a prefix without MoE layers (Jamba's first layer is dense) is a dense model: no routed experts
            experts = {} if "moe" in ffn or not self.is_moe else dict(num_experts=0, experts_per_token=0)
            return dataclasses.replace(self, name=name, num_layers=n, layer_types=types, ffn_types=ffn,
                                       sliding_window_layers=window_layers, gpt_oss_sliding_window=oss,
                                       sliding_window=self.sliding_window if window_layers else 0, **experts)
        window_layers = round(n * self.sliding_window_layers / self.num_layers)
        return dataclasses.replace(self, name=name, num_layers=n,
                                   first_dense_layers=min(self.first_dense_layers, n),
                                   sliding_window_layers=window_layers, gpt_oss_sliding_window=oss,
                                   sliding_window=self.sliding_window if window_layers else 0)

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def is_hybrid(self) -> bool:
        """Some layers mix tokens without a KV cache (linear attention, Mamba) or not at all."""
        return bool(self.layer_types) and any(k not in ("full_attention", "sliding_attention")
                                              for k in self.layer_types)

    def mixer_layers(self, kind: str) -> int:
        """Layers whose token mixer is `kind` (models.mixers.MIXER_KINDS)."""
        if self.layer_types:
            return self.layer_types.count(kind)
        return {"full_attention": self.num_layers - self.sliding_window_layers,
                "sliding_attention": self.sliding_window_layers}.get(kind, 0)

    @property
    def num_attention_layers(self) -> int:
        """Layers with softmax attention and a KV cache (full and sliding-window)."""
        return self.mixer_layers("full_attention") + self.mixer_layers("sliding_attention")

    @property
    def num_state_layers(self) -> int:
        """Layers with a constant-size recurrent state per request (linear attention, Mamba)."""
        return self.mixer_layers("linear_attention") + self.mixer_layers("mamba")

    @property
    def num_moe_layers(self) -> int:
        if self.ffn_types:
            return self.ffn_types.count("moe")
        return self.num_layers - self.first_dense_layers if self.is_moe else 0

    @property
    def num_dense_layers(self) -> int:
        if self.ffn_types:
            return self.ffn_types.count("dense")
        return self.num_layers - self.num_moe_layers

    @property
    def num_sublayers(self) -> int:
        """Mixers and FFNs over all layers (each has its pre-norm and, under TP, its all-reduce)."""
        mixers = self.num_layers - self.mixer_layers("none")
        ffns = self.num_layers - (self.ffn_types.count("none") if self.ffn_types else 0)
        return mixers + ffns

    @property
    def num_full_attention_layers(self) -> int:
        """Layers attending to the whole context (all softmax-attention layers but the sliding-window ones)."""
        return self.mixer_layers("full_attention")

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP or expert: 3 (gate, up, down) or 2 (up, down)."""
        return 3 if self.gated_mlp else 2

    @property
    def shared_expert_width(self) -> int:
        return self.shared_expert_intermediate_size or self.moe_intermediate_size

    @property
    def qk_head_dim(self) -> int:
        """Query/key width per head (MLA: no-RoPE part + RoPE part)."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim if self.is_mla else self.head_dim

    @property
    def attn_v_head_dim(self) -> int:
        return self.v_head_dim if self.is_mla else self.head_dim

    # ---- parameter counts ------------------------------------------------------------------------
    def attention_params_per_layer(self) -> int:
        h, nh = self.hidden_size, self.num_heads
        if self.is_mla:
            q_out = nh * self.qk_head_dim
            q = (h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * q_out
                 if self.q_lora_rank else h * q_out)
            kv_a = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            kv_b = self.kv_lora_rank * nh * (self.qk_nope_head_dim + self.v_head_dim)
            o = nh * self.v_head_dim * h
            return q + kv_a + kv_b + o
        q_width = nh * self.head_dim
        kv_width = self.num_kv_heads * self.head_dim
        params = h * (q_width + 2 * kv_width) + q_width * h
        if self.attn_output_gate:  # q_proj emits the gate too (Qwen3-Next: 2 × heads × head_dim outputs)
            params += h * q_width
        if self.qkv_bias:
            params += q_width + 2 * kv_width
        if self.attention_output_bias:
            params += h
        if self.qk_norm:
            params += 2 * self.head_dim
        if self.attention_sinks:
            params += nh
        return params

    def mlp_params(self, width: int) -> int:
        """MLP of intermediate width `width`: gate, up and down projections (SwiGLU), or up and down."""
        return self.mlp_matrices * self.hidden_size * width

    def moe_params_per_layer(self, experts: int) -> int:
        """Router + `experts` routed experts + the shared experts (and their gate) of one MoE layer."""
        per_expert = self.mlp_params(self.moe_intermediate_size)
        if self.expert_bias:  # gate and up (2·width) and down (hidden) biases
            per_expert += 2 * self.moe_intermediate_size + self.hidden_size
        router = self.hidden_size * self.num_experts + (self.num_experts if self.router_bias else 0)
        shared = self.num_shared_experts * self.mlp_params(self.shared_expert_width)
        if self.expert_bias:
            shared += self.num_shared_experts * (2 * self.moe_intermediate_size + self.hidden_size)
        gate = self.hidden_size if self.shared_expert_gate and self.num_shared_experts else 0
        return router + experts * per_expert + shared + gate

    def mixer_params(self) -> tuple[int, int]:
        """(parameters of every layer's token mixer, of which outside matmuls: the state layers' conv, A, D,
        Δ bias and gated-norm weights, models.mixers.mixer_params)."""
        from models.mixers import LINEAR_ATTENTION, MAMBA, mixer_params
        total = self.num_attention_layers * self.attention_params_per_layer()
        other = 0
        for kind in (LINEAR_ATTENTION, MAMBA):
            layers = self.mixer_layers(kind)
            if layers:
                params, outside = mixer_params(self, kind)
                total, other = total + layers * params, other + layers * outside
        return total, other

    def _count(self, routed_experts: int) -> int:
        return self._decoder_params(routed_experts) + self._outer_params()

    def _decoder_params(self, routed_experts: int) -> int:
        """Parameters of the decoder layers (mixers, FFNs and their pre-norms)."""
        dense = self.num_dense_layers * self.mlp_params(self.intermediate_size)
        moe = self.num_moe_layers * self.moe_params_per_layer(routed_experts)
        norms = self.num_sublayers * self.hidden_size  # one pre-norm per mixer and FFN
        return self.mixer_params()[0] + dense + moe + norms

    def _outer_params(self) -> int:
        """Parameters outside the decoder layers: embeddings, LM head (unless tied) and the final norm."""
        h = self.hidden_size
        return self.vocab_size * h * (1 if self.tie_word_embeddings else 2) + h

    def decoder_param_count(self) -> int:
        """Parameters of the decoder layers alone (a draft head made of `with_layers(n)` owns these and
        shares the target's embeddings and LM head)."""
        return self._decoder_params(self.num_experts)

    def param_count(self) -> int:
        return self._count(self.num_experts)

    def active_param_count(self) -> int:
        """Parameters one token touches (routed experts: top-k of them), embeddings included."""
        return self._count(self.experts_per_token)

    def routed_expert_param_count(self) -> int:
        """Parameters of all routed experts' matrices of all MoE layers (what an EXPERT_ONLY_DTYPES format
        quantizes; their biases stay 16-bit)."""
        return self.num_moe_layers * self.num_experts * self.mlp_params(self.moe_intermediate_size)

    def decoder_weight_bytes(self, dtype: str = "bf16") -> float:
        """Bytes of the decoder layers' weights (`decoder_param_count`) served in `dtype` (see `weight_bytes`)."""
        return self._bytes_of(self.decoder_param_count(), dtype)

    def weight_bytes(self, dtype: str = "bf16") -> float:
        """Bytes of all weights served in `dtype` (an EXPERT_ONLY_DTYPES format: the routed experts in it, the
        rest in bf16); the embeddings and LM head in `vocab_weight_dtype` (16-bit under a quantized dtype)."""
        outer = self._outer_params()
        return self._bytes_of(self.param_count() - outer, dtype) + outer * dtype_bytes(vocab_weight_dtype(dtype))

    def _bytes_of(self, params: int, dtype: str) -> float:
        """Bytes of `params` parameters of this model, all its routed experts among them, served in `dtype`."""
        if dtype in EXPERT_ONLY_DTYPES:
            routed = self.routed_expert_param_count()
            return routed * dtype_bytes(dtype) + (params - routed) * dtype_bytes(dense_weight_dtype(dtype))
        return params * dtype_bytes(dtype)

    # ---- KV cache and recurrent state ------------------------------------------------------------
    def kv_elements_per_token_per_layer(self) -> int:
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim

    def kv_bytes_per_token(self, dtype: str = "bf16") -> float:
        """KV-cache bytes of one token over all softmax-attention layers (whole model, no parallelism)."""
        return self.num_attention_layers * self.kv_elements_per_token_per_layer() * dtype_bytes(dtype)

    def stage_layer_counts(self, pp: int, kinds: tuple[str, ...]) -> list[int]:
        """Per pipeline stage, the layers whose mixer is one of `kinds` (contiguous floor split of the layers,
        later stages taking the remainder, as simulator.cluster.network lays stages out)."""
        types = self.layer_types or tuple(["full_attention"] * (self.num_layers - self.sliding_window_layers)
                                          + ["sliding_attention"] * self.sliding_window_layers)
        bounds = [s * self.num_layers // pp for s in range(pp + 1)]
        return [sum(1 for t in types[bounds[s]:bounds[s + 1]] if t in kinds) for s in range(pp)]

    def kv_bytes_per_token_per_gpu(self, par: Parallelism, dtype: str = "bf16") -> float:
        """KV-cache bytes one token occupies on each GPU of a replica split by `par`.

        Layers are split over pp stages (the largest stage, ceil(L/pp), sets the per-GPU need; a hybrid model:
        the stage with the most attention layers). Under TP, KV heads are split over ranks; when tp >
        num_kv_heads each rank keeps one replicated KV head (as vLLM does), and MLA's latent cache is
        replicated on every TP rank.
        """
        validate_parallelism(self, par)
        if self.is_hybrid:
            layers = max(self.stage_layer_counts(par.pp, ("full_attention", "sliding_attention")))
        else:
            layers = math.ceil(self.num_layers / par.pp)
        if self.is_mla:
            per_layer = self.kv_elements_per_token_per_layer()
        else:
            per_layer = 2 * kv_heads_per_gpu(self, par.tp) * self.head_dim
        return layers * per_layer * dtype_bytes(dtype)

    def state_bytes_per_request_per_gpu(self, par: Parallelism, dtype: str = "bf16", spec_tokens: int = 0,
                                        copies: int = 1) -> float:
        """Recurrent-state bytes one request holds on each GPU (models.mixers.state_bytes_per_request_per_gpu);
        0 for a model without linear-attention or Mamba layers."""
        from models.mixers import state_bytes_per_request_per_gpu
        return state_bytes_per_request_per_gpu(self, par, dtype, spec_tokens, copies)

    # ---- FLOPs -----------------------------------------------------------------------------------
    def attention_flops_per_token_per_context(self) -> float:
        """Matmul FLOPs of one query token attending to one earlier token, over all softmax-attention layers.

        Standard attention: q·k (2·head_dim) and p·v (2·head_dim) per head. MLA is counted in its
        up-projected form (q·k over nope+rope dims, p·v over v_head_dim), the form used for prefill.
        """
        return 2.0 * self.num_attention_layers * self.num_heads * (self.qk_head_dim + self.attn_v_head_dim)

    def recurrent_flops_per_token(self) -> float:
        """FLOPs of one decoded token in the state layers (recurrent update and conv1d; models.mixers)."""
        from models.mixers import LINEAR_ATTENTION, MAMBA, mixer_shape
        total = 0.0
        for kind in (LINEAR_ATTENTION, MAMBA):
            layers = self.mixer_layers(kind)
            if layers:
                shape = mixer_shape(self, kind)
                total += layers * (shape.decode_flops_per_token() + shape.conv_flops_per_token())
        return total

    def flops_per_token(self, context_tokens: int = 0) -> float:
        """Matmul FLOPs of one token's forward pass with `context_tokens` tokens before it.

        Weight GEMMs: 2 × active parameters without the input embedding (a look-up, no matmul) and without
        norm vectors/biases; attention: `attention_flops_per_token_per_context() × context_tokens`, where
        sliding-window layers see at most `sliding_window` of the earlier tokens; state layers: their
        recurrent update, constant in the context (`recurrent_flops_per_token`).
        """
        if context_tokens < 0:
            raise ValueError(f"context_tokens must be >= 0, got {context_tokens}")
        attention_layers = self.num_attention_layers
        per_layer = self.attention_flops_per_token_per_context() / attention_layers if attention_layers else 0.0
        swa = self.sliding_window_layers
        attended = (attention_layers - swa) * context_tokens + swa * min(context_tokens, self.sliding_window)
        return 2.0 * self.active_matmul_params() + per_layer * attended + self.recurrent_flops_per_token()

    def active_matmul_params(self) -> int:
        """Weights that take part in a matmul for one token (LM head included, input embedding not)."""
        h = self.hidden_size
        attention = self.num_attention_layers
        norm_vectors = self.num_sublayers * h + h
        biases = self.num_moe_layers * self.num_experts if self.router_bias else 0
        if self.qkv_bias:
            biases += attention * (self.num_heads + 2 * self.num_kv_heads) * self.head_dim
        if self.attention_output_bias:
            biases += attention * h
        if self.attention_sinks:
            biases += attention * self.num_heads
        if self.expert_bias:
            experts = self.experts_per_token + self.num_shared_experts
            biases += self.num_moe_layers * experts * (2 * self.moe_intermediate_size + h)
        if self.qk_norm:
            norm_vectors += attention * 2 * self.head_dim
        if self.is_mla:
            norm_vectors += attention * (self.q_lora_rank + self.kv_lora_rank)
        # A tied embedding matrix is stored once and does take part in a matmul (as the LM head).
        input_embedding = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.active_param_count() - input_embedding - norm_vectors - biases - self.mixer_params()[1]


def kv_heads_per_gpu(spec: ModelSpec, tp: int) -> int:
    """KV heads held by one TP rank: split evenly, or one replicated head when tp > num_kv_heads."""
    return max(1, spec.num_kv_heads // tp)


def mlp_widths(spec: ModelSpec, par: Parallelism) -> list[tuple[str, str, int]]:
    """(what, config field, intermediate width) of every MLP kind `spec` uses whose weights vLLM splits over the
    `par.tp` ranks: dense MLPs (dense models, an MoE model's leading dense layers) and shared experts always (under
    expert parallelism they run in the attention groups of tp GPUs), routed experts only without EP (under EP each
    expert is whole on one rank)."""
    widths = []
    if spec.num_dense_layers:
        widths.append(("dense MLP", "intermediate_size", spec.intermediate_size))
    if spec.num_moe_layers and spec.num_shared_experts:
        field = "shared_expert_intermediate_size" if spec.shared_expert_intermediate_size else "moe_intermediate_size"
        widths.append(("shared experts", field, spec.shared_expert_width))
    if spec.num_moe_layers and par.ep == 1:
        widths.append(("routed experts", "moe_intermediate_size", spec.moe_intermediate_size))
    return widths


def listed(values: list[int]) -> str:
    """`1..8` for a run of three or more consecutive integers, else `1, 2, 4` (`none` for no value)."""
    if not values:
        return "none"
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    return ", ".join(map(str, values))


def allowed_tps(spec: ModelSpec, par: Parallelism, check=None, top: int = 64) -> list[int]:
    """The tp degrees in 1..`top` that split `spec` with `par`'s pp and ep: `check(spec, par)` raises ValueError
    for a degree it refuses (default: validate_parallelism's own checks)."""
    check = check or _split_checks
    allowed = []
    for tp in range(1, top + 1):
        try:
            check(spec, Parallelism(tp, par.pp, par.ep))
        except ValueError:
            continue
        allowed.append(tp)
    return allowed


def validate_parallelism(spec: ModelSpec, par: Parallelism) -> None:
    """ValueError naming the field when `par` cannot split `spec` (as vLLM would refuse it)."""
    _validate_parallelism(spec, par)
    what = _unsplit_mlp(spec, par)
    if what is not None:
        raise ValueError(f"{what}; allowed: tp {listed(allowed_tps(spec, par))}")


def _split_checks(spec: ModelSpec, par: Parallelism) -> None:
    """validate_parallelism without the allowed degrees in its messages (what allowed_tps tries)."""
    _validate_parallelism(spec, par)
    what = _unsplit_mlp(spec, par)
    if what is not None:
        raise ValueError(what)


def _unsplit_mlp(spec: ModelSpec, par: Parallelism) -> str | None:
    """Why tp cannot split an MLP of `spec` (None when it can). vLLM shards each MLP's gate/up projections with
    MergedColumnParallelLinear and its down projection with RowParallelLinear, whose `divide()` asserts exact
    division (vllm/model_executor/layers/linear.py; vllm/distributed/utils.py divide/ensure_divisibility);
    FusedMoE asserts `intermediate_size % self.tp_size == 0` for the experts it shards
    (vllm/model_executor/layers/fused_moe/layer.py FusedMoE.__init__, commit 0014ec6c; its tp_size is 1 under
    expert parallelism, each expert whole). SGLang's FusedMoE asserts the same (`intermediate_size %
    self.moe_tp_size == 0`)."""
    for what, field, width in mlp_widths(spec, par):
        if width % par.tp:
            return (f"parallelism.tp={par.tp} must divide {field}={width} of {spec.name} (vLLM splits the gate/up "
                    f"and down projections of the {what} over the tp ranks)")
    return None


def _validate_parallelism(spec: ModelSpec, par: Parallelism) -> None:
    """validate_parallelism's checks of the heads, layers and state layers."""
    if not isinstance(par.tp, int) or not isinstance(par.pp, int) or par.tp < 1 or par.pp < 1:
        raise ValueError(f"parallelism: tp and pp must be integers >= 1, got tp={par.tp!r}, pp={par.pp!r}")
    if spec.num_heads % par.tp:
        raise ValueError(f"parallelism.tp={par.tp} must divide num_heads={spec.num_heads} of {spec.name}")
    kv = spec.num_kv_heads
    if not spec.is_mla and kv % par.tp and par.tp % kv:
        raise ValueError(f"parallelism.tp={par.tp} must divide or be a multiple of "
                         f"num_kv_heads={kv} of {spec.name}")
    if par.pp > spec.num_layers:
        raise ValueError(f"parallelism.pp={par.pp} exceeds num_layers={spec.num_layers} of {spec.name}")
    if "linear_attention" in spec.layer_types and (spec.linear_num_key_heads % par.tp or
                                                   spec.linear_num_value_heads % par.tp):
        raise ValueError(f"parallelism.tp={par.tp} must divide the linear-attention heads "
                         f"({spec.linear_num_key_heads} key, {spec.linear_num_value_heads} value) of {spec.name}")
    if "mamba" in spec.layer_types:
        units = spec.mamba_num_heads if spec.mamba_version == 2 else spec.mamba_inner_size
        if units % par.tp:
            raise ValueError(f"parallelism.tp={par.tp} must divide the {units} Mamba "
                             f"{'heads' if spec.mamba_version == 2 else 'channels'} of {spec.name}")
        # (vLLM MambaMixer2: "If tensor parallel world size does not divide num_groups, then num_groups must
        # equal 1"; one group is replicated to every rank, models.mixers.mamba2_extra_groups)
        groups = spec.mamba_groups
        if spec.mamba_version == 2 and groups > 1 and groups % par.tp:
            raise ValueError(f"parallelism.tp={par.tp} must divide the {groups} Mamba-2 groups (n_groups) of "
                             f"{spec.name}; allowed: tp dividing {groups}")
