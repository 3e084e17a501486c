"""The token mixers of hybrid models: what one gated-DeltaNet or Mamba layer weighs, holds and computes.

A decoder layer of a hybrid model mixes tokens with one of (`ModelSpec.layer_types`):

* `full_attention`, `sliding_attention`: softmax attention with a KV cache (models.opgraph);
* `linear_attention`: gated DeltaNet (Yang, Kautz, Hatamizadeh, "Gated Delta Networks", ICLR 2025), as
  Qwen3-Next ships it (Hugging Face `Qwen3NextGatedDeltaNet`, vLLM `qwen3_next.py` /
  `gdn_linear_attn.py`): projections `in_proj_qkvz` (h → 2·nk·dk + 2·nv·dv) and `in_proj_ba` (h → 2·nv), a
  depthwise causal conv1d of width K over the q, k, v channels (2·nk·dk + nv·dv, no bias), per-value-head
  `A_log` and `dt_bias`, a gated RMSNorm of width dv and `out_proj` (nv·dv → h). Each value head keeps a
  dk × dv recurrent state;
* `mamba`: a selective state-space layer, Mamba-1 (Gu & Dao 2023; Jamba, HF `JambaMambaMixer`) or Mamba-2
  (Dao & Gu 2024, SSD; Nemotron-H, HF `NemotronHMamba2Mixer`), inner width D = expand·h, state size N.
  Mamba-2: `in_proj` h → 2·D + 2·G·N + H (H heads of D/H channels, G groups of B/C), conv1d over
  D + 2·G·N channels (with bias), per-head `A_log`, `D`, `dt_bias`, a gated RMSNorm of width D, `out_proj`
  D → h; state H × (D/H) × N. Mamba-1: `in_proj` h → 2·D, conv1d over D (with bias), `x_proj`
  D → R + 2N (R = dt rank), `dt_proj` R → D (with bias), `A_log` D × N, `D` (D), `out_proj` D → h (Jamba adds
  RMSNorms of widths R, N, N on Δ, B and C: `mamba_inner_norms`); state D × N;
* `none`: no mixer (Nemotron-H's MLP-only and MoE-only blocks).

Recurrent state per request and layer (vLLM `MambaStateShapeCalculator`,
vllm/model_executor/layers/mamba/mamba_utils.py): a conv state of (channels/tp) × (K − 1 + s) and a
temporal (SSM) state — GDN (nv/tp) × dv × dk, Mamba-2 (H/tp) × (D/H) × N, Mamba-1 (D/tp) × N — where s is the
number of speculative tokens (the conv window keeps the draft positions). Dtypes (`MambaStateDtypeCalculator`):
the conv state in the model's activation dtype, the temporal state in `mamba_ssm_cache_dtype` (default the
same; `ModelSpec.ssm_state_dtype`, e.g. float32 for Nemotron-3, whose config says so).

Work per token (2 FLOPs per multiply-add), per layer, in the two forms engines run:

* prefill, chunked (GDN: chunk C = 64, FLA's `chunk_gated_delta_rule`; Mamba-2: SSD with the config's
  `chunk_size`): per value head and token, GDN computes K·Kᵀ, the WY factors W = T·(βK) and U = T·(βV), the
  intra-chunk Q·Kᵀ and its product with U − W·S, and the state terms W·S, Q·S and Kᵀ·(U − W·S):
  2·(3·C·dk + 2·C·dv + 3·dk·dv) FLOPs. Mamba-2 per head: C·Bᵀ (C·N), its product with x (C·P), the chunk
  state B·xᵀ (N·P) and the state read-out C·h (N·P): 2·(C·(N + P) + 2·N·P). Mamba-1's selective scan is
  element-wise: ≈ 9 FLOPs per (channel, state) pair (discretize exp(Δ·A), Δ·B·x, the recurrence and C·h).
  Bytes: the layer's activations in and out once, the state read and written once per sequence, and the
  chunk states written and re-read by the inter-chunk pass (one dk × dv, P × N, per head per chunk, fp32).
* decode, recurrent (`fused_recurrent_gated_delta_rule`, `selective_state_update`): per token and head,
  GDN reads S, forms Sᵀk, the delta update and Sᵀq: 2·3·dk·dv FLOPs; Mamba-2 decays and updates h and reads
  it out: 2·2·N·P (+N·P element-wise); Mamba-1 as in prefill. Bytes: the state is read once per sequence
  and written once per query token (speculative verification keeps every position's state, see below),
  plus the token's activations.

Approximations (named here, where they are made): element-wise gating inside the kernels (softplus, sigmoid,
the exp of the decay) is folded into the FLOP counts above only where stated; the chunk size of GDN is
FLA's default 64; the per-sequence state traffic of a prefill chunk is counted once per chunk.

Speculative decoding: verification computes the q = γ + 1 query tokens of a request sequentially through
the recurrence, and engines keep the state after each draft position so that a rejection rolls back by
selecting one (no recomputation): vLLM's MambaSpec gives a hybrid request 1 + num_speculative_tokens state
blocks (vllm/v1/kv_cache_interface.py `MambaSpec.max_memory_usage_bytes`: page × (1 +
num_speculative_blocks)) and copies the accepted position's state forward (`get_temporal_copy_spec`:
block `cur + num_accepted_tokens − 1`); SGLang keeps a persistent state slot per request plus an
`intermediate_ssm_state_cache` of (speculative_num_draft_tokens) states per running request
(python/sglang/srt/mem_cache/memory_pool.py) and copies the accepted one back after verification.
`state_copies` counts these.
"""
from __future__ import annotations

from dataclasses import dataclass

FULL_ATTENTION = "full_attention"
SLIDING_ATTENTION = "sliding_attention"
LINEAR_ATTENTION = "linear_attention"
MAMBA = "mamba"
NO_MIXER = "none"
MIXER_KINDS = (FULL_ATTENTION, SLIDING_ATTENTION, LINEAR_ATTENTION, MAMBA, NO_MIXER)
ATTENTION_KINDS = (FULL_ATTENTION, SLIDING_ATTENTION)
STATE_KINDS = (LINEAR_ATTENTION, MAMBA)

DENSE_FFN, MOE_FFN, NO_FFN = "dense", "moe", "none"
FFN_KINDS = (DENSE_FFN, MOE_FFN, NO_FFN)

GDN_CHUNK_TOKENS = 64        # FLA chunk_gated_delta_rule's chunk size (BT = 64)
STATE_ACCUMULATOR_BYTES = 4.0  # chunk states between the intra- and inter-chunk passes are fp32
MAMBA1_SCAN_FLOPS_PER_PAIR = 9.0


@dataclass(frozen=True)
class MixerShape:
    """One state layer's dimensions on one GPU (heads split by tensor parallelism)."""

    kind: str                 # LINEAR_ATTENTION or MAMBA
    version: int              # 0 for GDN; 1 or 2 for Mamba
    heads: float              # GDN value heads; Mamba-2 heads; Mamba-1: inner channels
    key_dim: float            # GDN dk; Mamba-2 and Mamba-1: state size N
    value_dim: float          # GDN dv; Mamba-2 head dim P; Mamba-1: 1 (one channel per "head")
    conv_channels: float      # channels of the causal conv1d
    conv_kernel: int
    chunk: float              # prefill chunk (GDN 64; Mamba-2 chunk_size; Mamba-1: 1, a scan)

    @property
    def state_elements(self) -> float:
        """Temporal-state elements of one request (this GPU's heads)."""
        return self.heads * self.key_dim * self.value_dim

    def conv_state_elements(self, spec_tokens: int = 0) -> float:
        return self.conv_channels * (self.conv_kernel - 1 + spec_tokens)

    # ---- FLOPs per token ----------------------------------------------------------------------------
    def prefill_flops_per_token(self) -> float:
        h, k, v, c = self.heads, self.key_dim, self.value_dim, self.chunk
        if self.kind == LINEAR_ATTENTION:
            return 2.0 * h * (3.0 * c * k + 2.0 * c * v + 3.0 * k * v)
        if self.version == 2:
            return 2.0 * h * (c * (k + v) + 2.0 * k * v)
        return MAMBA1_SCAN_FLOPS_PER_PAIR * h * k

    def decode_flops_per_token(self) -> float:
        h, k, v = self.heads, self.key_dim, self.value_dim
        if self.kind == LINEAR_ATTENTION:
            return 2.0 * 3.0 * h * k * v
        if self.version == 2:
            return 2.0 * 2.0 * h * k * v + h * k * v
        return MAMBA1_SCAN_FLOPS_PER_PAIR * h * k

    def conv_flops_per_token(self) -> float:
        return 2.0 * self.conv_kernel * self.conv_channels

    # ---- activations in and out of the core kernel, per token --------------------------------------
    def core_io_elements_per_token(self) -> float:
        """Elements the core kernel reads and writes per token: GDN q, k, v, g, β in and o out; Mamba-2
        x, B, C, dt in and y out; Mamba-1 x, Δ, B, C in and y out."""
        h, k, v = self.heads, self.key_dim, self.value_dim
        if self.kind == LINEAR_ATTENTION:
            return h * (2.0 * k + 2.0 * v + 2.0)     # q, k (repeated to the value heads), v, o; g, β
        if self.version == 2:
            return 2.0 * h * v + 2.0 * self.conv_channels_bc() + h
        return 3.0 * h + 2.0 * k                      # x, Δ, y per channel; B, C shared

    def conv_channels_bc(self) -> float:
        """Mamba-2: the B and C channels of the conv (conv channels minus the x channels)."""
        return max(self.conv_channels - self.heads * self.value_dim, 0.0) / 2.0


def mixer_shape(spec, kind: str, tp: int = 1) -> MixerShape:
    """The per-GPU shape of `spec`'s state layers of `kind` (LINEAR_ATTENTION or MAMBA) under TP `tp`."""
    if kind == LINEAR_ATTENTION:
        nk, nv, dk, dv = (spec.linear_num_key_heads, spec.linear_num_value_heads, spec.linear_key_head_dim,
                          spec.linear_value_head_dim)
        conv = (2 * nk * dk + nv * dv) / tp
        return MixerShape(kind, 0, nv / tp, float(dk), float(dv), conv, spec.linear_conv_kernel,
                          float(GDN_CHUNK_TOKENS))
    if kind != MAMBA:
        raise ValueError(f"mixer_shape: {kind!r} keeps no recurrent state; allowed: {', '.join(STATE_KINDS)}")
    inner, n = spec.mamba_inner_size, spec.ssm_state_size
    if spec.mamba_version == 2:
        groups = spec.mamba_groups + mamba2_extra_groups(spec.mamba_groups, tp)
        conv = (inner + 2 * groups * n) / tp
        return MixerShape(kind, 2, spec.mamba_num_heads / tp, float(n), inner / spec.mamba_num_heads, conv,
                          spec.mamba_conv_kernel, float(spec.mamba_chunk_size))
    return MixerShape(kind, 1, inner / tp, float(n), 1.0, inner / tp, spec.mamba_conv_kernel, 1.0)


def mamba2_extra_groups(groups: int, tp: int) -> int:
    """B/C groups replicated so that every TP rank holds the groups its heads need (vLLM
    `MambaStateShapeCalculator.extra_groups_for_head_shards`): 0 when tp divides the groups, else tp − groups
    (one group, the only other case vLLM runs: models.spec.validate_parallelism)."""
    return 0 if groups % tp == 0 else tp - groups


def mixer_params(spec, kind: str) -> tuple[int, int]:
    """(parameters of one `kind` state layer, of which outside any matmul: conv weights and biases,
    A_log, D, dt_bias, the gated norm's weight, Mamba-1's dt_proj bias)."""
    h = spec.hidden_size
    if kind == LINEAR_ATTENTION:
        nk, nv, dk, dv, k = (spec.linear_num_key_heads, spec.linear_num_value_heads, spec.linear_key_head_dim,
                             spec.linear_value_head_dim, spec.linear_conv_kernel)
        matmul = h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv + nv * dv * h
        other = (2 * nk * dk + nv * dv) * k + 2 * nv + dv
        return matmul + other, other
    inner, n, k = spec.mamba_inner_size, spec.ssm_state_size, spec.mamba_conv_kernel
    bias = inner if spec.mamba_conv_bias else 0
    if spec.mamba_version == 2:
        heads, groups = spec.mamba_num_heads, spec.mamba_groups
        conv = inner + 2 * groups * n
        matmul = h * (2 * inner + 2 * groups * n + heads) + inner * h
        other = conv * k + (conv if spec.mamba_conv_bias else 0) + 3 * heads + inner
        return matmul + other, other
    r = spec.mamba_dt_rank
    matmul = h * 2 * inner + inner * (r + 2 * n) + r * inner + inner * h
    other = inner * k + bias + inner + inner * n + inner   # conv (+bias), dt_proj bias, A_log, D
    if spec.mamba_inner_norms:
        other += r + 2 * n
    return matmul + other, other


def state_bytes(spec, kind: str, tp: int, activation_bytes: float, spec_tokens: int = 0) -> float:
    """Bytes of one request's recurrent state for one `kind` layer on one GPU (conv + temporal), with
    `spec_tokens` draft positions in the conv window; one temporal copy (see `state_copies`)."""
    shape = mixer_shape(spec, kind, tp)
    temporal = _dtype_bytes(spec.ssm_state_dtype) if spec.ssm_state_dtype else activation_bytes
    return shape.conv_state_elements(spec_tokens) * activation_bytes + shape.state_elements * temporal


def state_copies(framework: str, draft_tokens: int) -> int:
    """Temporal-state copies one request holds while speculating with `draft_tokens` drafts per step (the
    module docstring): vLLM 1 + draft tokens (its spec blocks); SGLang 1 + draft tokens + 1 (its persistent
    slot plus one intermediate state per verified token, the bonus position included); 1 without drafts."""
    if draft_tokens <= 0:
        return 1
    return 1 + draft_tokens + (1 if framework == "sglang" else 0)


def check_layout(spec) -> None:
    """The hybrid layout fields of a ModelSpec: lists become tuples; ValueError naming the field otherwise."""
    for name, allowed in (("layer_types", MIXER_KINDS), ("ffn_types", FFN_KINDS)):
        value = getattr(spec, name)
        if isinstance(value, list):
            value = tuple(value)
            object.__setattr__(spec, name, value)
        if not isinstance(value, tuple):
            raise ValueError(f"model {spec.name!r}: {name} must be a list of {', '.join(allowed)}")
        bad = sorted({str(v) for v in value} - set(allowed))
        if value and (len(value) != spec.num_layers or bad):
            raise ValueError(f"model {spec.name!r}: {name} must list num_layers={spec.num_layers} entries of "
                             f"{', '.join(allowed)}; got {bad or len(value)}")
    if spec.layer_types and spec.layer_types.count(SLIDING_ATTENTION) != spec.sliding_window_layers:
        raise ValueError(f"model {spec.name!r}: sliding_window_layers={spec.sliding_window_layers} must equal the "
                         f"{spec.layer_types.count(SLIDING_ATTENTION)} sliding_attention entries of layer_types")
    if spec.ffn_types and ("moe" in spec.ffn_types) != spec.is_moe:
        raise ValueError(f"model {spec.name!r}: ffn_types lists moe layers exactly when num_experts > 0")
    if spec.ffn_types and spec.first_dense_layers:
        raise ValueError(f"model {spec.name!r}: give dense layers in ffn_types or first_dense_layers, not both")
    need = {LINEAR_ATTENTION: ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                               "linear_value_head_dim", "linear_conv_kernel"),
            MAMBA: ("mamba_inner_size", "ssm_state_size", "mamba_conv_kernel")}
    for kind, fields in need.items():
        if kind in spec.layer_types:
            missing = [f for f in fields if not getattr(spec, f) > 0]
            if missing:
                raise ValueError(f"model {spec.name!r}: {kind} layers need {', '.join(missing)} > 0")
    if LINEAR_ATTENTION in spec.layer_types and spec.linear_num_value_heads % spec.linear_num_key_heads:
        raise ValueError(f"model {spec.name!r}: linear_num_value_heads must be a multiple of linear_num_key_heads")
    if MAMBA in spec.layer_types:
        if spec.mamba_version not in (1, 2):
            raise ValueError(f"model {spec.name!r}: mamba_version must be 1 or 2, got {spec.mamba_version!r}")
        if spec.mamba_version == 2 and (spec.mamba_num_heads <= 0 or spec.mamba_inner_size % spec.mamba_num_heads
                                        or spec.mamba_groups <= 0 or spec.mamba_chunk_size <= 0):
            raise ValueError(f"model {spec.name!r}: Mamba-2 layers need mamba_num_heads dividing mamba_inner_size, "
                             "mamba_groups > 0 and mamba_chunk_size > 0")
        if spec.mamba_version == 1 and spec.mamba_dt_rank <= 0:
            raise ValueError(f"model {spec.name!r}: Mamba-1 layers need mamba_dt_rank > 0")
    if spec.ssm_state_dtype:
        _dtype_bytes(spec.ssm_state_dtype)


def state_bytes_per_request_per_gpu(spec, par, dtype: str = "bf16", spec_tokens: int = 0, copies: int = 1) -> float:
    """Recurrent-state bytes one request holds on each GPU (linear-attention and Mamba layers of the
    stage with the most state, heads split over TP; models.mixers.state_bytes): one conv state with
    `spec_tokens` draft positions and `copies` temporal states per layer (models.mixers.state_copies).
    0 for a model without state layers."""
    from models.spec import activation_bytes, validate_parallelism
    if not spec.num_state_layers:
        return 0.0
    validate_parallelism(spec, par)
    a = activation_bytes(dtype)
    best = 0.0
    counts = {kind: spec.stage_layer_counts(par.pp, (kind,)) for kind in (LINEAR_ATTENTION, MAMBA)}
    for stage in range(par.pp):
        total = 0.0
        for kind, per_stage in counts.items():
            if per_stage[stage]:
                temporal = mixer_shape(spec, kind, par.tp).state_elements * (
                    _dtype_bytes(spec.ssm_state_dtype) if spec.ssm_state_dtype else a)
                total += per_stage[stage] * (state_bytes(spec, kind, par.tp, a, spec_tokens)
                                             + (copies - 1) * temporal)
        best = max(best, total)
    return best


def _dtype_bytes(dtype: str) -> float:
    from models.spec import dtype_bytes
    return dtype_bytes(dtype)
