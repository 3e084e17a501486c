"""Multi-token-prediction (MTP) modules: what one MTP draft pass computes, and what the modules weigh.

An MTP module (DeepSeek-V3 technical report, arXiv:2412.19437 §2.2; vLLM `deepseek_mtp.py`
`DeepSeekMultiTokenPredictorLayer`, SGLang `deepseek_nextn.py`) predicts the token after next from the
target's last hidden state and the embedding of the next token:

    h' = eh_proj([enorm(embed(token)) ; hnorm(hidden)])       # 2h → h, one GEMM (vLLM: nn.Linear, replicated)
    h'' = decoder_layer(h')                                   # the model's own layer type, own KV cache
    logits = shared_head(norm(h''))                           # the target's LM head (vocab V)

The decoder layer is the model's: MLA or GQA attention, and the model's FFN at the module's position —
DeepSeek-V3's MTP layer (index 61, after `first_k_dense_replace` = 3 dense layers) is a MoE layer with the
model's routing, so under expert parallelism its experts are split over the EP ranks and its tokens are
dispatched and combined by all-to-alls exactly like the target's MoE layers (simulator.cost.mtp prices it
with simulator.cost.moe). The embedding and the LM head are the target's (compute, not weights) where the
engine shares them: the embedding in every engine (vLLM's EagleProposer.load_model: "Detected MTP model.
Sharing target model embedding weights"), the LM head in SGLang, TensorRT-LLM and vLLM from 0.16.0; vLLM
0.9.0 - 0.15.1 keep DeepSeek-V3's module's own (`shared_head.head`): profiles.engine_time.mtp_lm_head,
`weight_bytes_per_gpu`'s own_lm_head.

How many modules a checkpoint ships is `ModelSpec.num_mtp_modules` (config.json `num_nextn_predict_layers`):
DeepSeek-V3/R1: 1 (https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json); GLM-4.5: 1 ("MTP
with 1 layer", https://docs.nvidia.com/nemo/megatron-bridge/latest/models/llm/glm45.html; GLM-4.x configs
carry num_nextn_predict_layers: 1). Engines draft k tokens with them by cycling: vLLM uses module
(step mod num_nextn_predict_layers) (`DeepSeekMultiTokenPredictor.forward`: `current_step_idx = spec_step_idx
% self.num_mtp_layers`), so one shipped module is reused for every draft position; SGLang's NextN loads only
the first module and runs it as an EAGLE draft model (sgl-project/sglang PR #3582: "we only use the 1 MTP
module (NextN layer)").
"""
from __future__ import annotations

import dataclasses

from models.opgraph import NORM_FLOPS_PER_ELEMENT, gemm_op
from models.ops import NORM, Op
from models.spec import EXPERT_ONLY_DTYPES, ModelSpec, activation_bytes, dense_weight_dtype, dtype_bytes, \
    vocab_weight_dtype
from models.step import Parallelism


def module_spec(target: ModelSpec) -> ModelSpec:
    """One MTP module's decoder layer as a one-layer ModelSpec (with the target's embedding and LM head, so
    that models.opgraph.dense_ops prices their compute). Its FFN is the model's last-layer kind: MoE for a
    MoE model (no leading dense layer), dense otherwise; full attention (no sliding window).
    ValueError when the model ships no MTP module."""
    if target.num_mtp_modules < 1:
        raise ValueError(f"{target.name} ships no multi-token-prediction modules (config.json "
                         "num_nextn_predict_layers is 0 or absent)")
    return dataclasses.replace(target, name=f"{target.name}[mtp]", num_layers=1, first_dense_layers=0,
                               sliding_window=0, sliding_window_layers=0, num_mtp_modules=0,
                               layer_types=(), ffn_types=())   # a hybrid's MTP layer is full attention (Qwen3-Next)


def extra_ops(target: ModelSpec, num_tokens: float, dtype: str = "bf16") -> list[Op]:
    """What an MTP pass adds to its decoder layer's op graph, per GPU of one attention group, for
    `num_tokens` tokens: enorm and hnorm (plain RMSNorms: read and write h per token) and eh_proj (2h → h,
    replicated on every rank)."""
    if num_tokens <= 0:
        return []
    w, a = dtype_bytes(dense_weight_dtype(dtype)), activation_bytes(dtype)
    h, t = target.hidden_size, float(num_tokens)
    norms = Op.make(NORM, "mtp_enorm_hnorm", NORM_FLOPS_PER_ELEMENT * t * h, a * (2.0 * t * h + h), 2,
                    tokens=t, hidden=h)
    return [norms, gemm_op("mtp_eh_proj", t, h, 2 * h, 1, w, a)]


def own_params(target: ModelSpec) -> tuple[int, int]:
    """(parameters of one module besides the shared embedding and LM head, of which routed experts): the
    decoder layer, eh_proj (2h·h), enorm and hnorm (h each) and the shared head's norm (h)."""
    spec = module_spec(target)
    h = target.hidden_size
    embeddings = spec.vocab_size * h * (1 if spec.tie_word_embeddings else 2)
    layer = spec.param_count() - embeddings - h   # param_count adds the final norm once
    routed = spec.num_experts * spec.mlp_params(spec.moe_intermediate_size) if spec.is_moe else 0
    if spec.is_moe and spec.expert_bias:
        routed += spec.num_experts * (2 * spec.moe_intermediate_size + h)
    return layer + 2 * h * h + 3 * h, routed


def weight_bytes_per_gpu(target: ModelSpec, modules: int, par: Parallelism, dtype: str,
                         own_lm_head: bool = False) -> float:
    """HBM of `modules` MTP modules on each GPU of a replica split by `par`: routed experts over the ep ranks
    (ep > 1) or the tp ranks, eh_proj whole on every rank, everything else over tp; with `own_lm_head` (the
    engine release keeps each module's LM head: profiles.engine_time.mtp_lm_head) also a vocab_size x hidden_size
    head per module, vocab-parallel over tp, in `vocab_weight_dtype` (16-bit under a quantized dtype)."""
    total, routed = own_params(target)
    eh = 2 * target.hidden_size ** 2
    expert_ranks = par.ep if par.ep > 1 else par.tp
    head = target.vocab_size * target.hidden_size * dtype_bytes(vocab_weight_dtype(dtype)) / par.tp \
        if own_lm_head else 0.0
    if dtype in EXPERT_ONLY_DTYPES:   # the routed experts in `dtype`, the rest in bf16
        dense = dtype_bytes(dense_weight_dtype(dtype))
        return modules * (((total - routed - eh) / par.tp + eh) * dense + routed / expert_ranks * dtype_bytes(dtype)
                          + head)
    return modules * (((total - routed - eh) / par.tp + routed / expert_ranks + eh) * dtype_bytes(dtype) + head)
