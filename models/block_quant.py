"""Block-quantized weights under tensor parallelism: which tp degrees an engine loads a `fp8_block` model at.

`fp8_block` checkpoints (DeepSeek-V3, Qwen3-*-FP8, ...) keep one scale per 128×128 weight block
(models.dtypes). vLLM refuses at load a tp whose per-GPU shard of such a weight is not a whole number of blocks:

* linear layers, `validate_fp8_block_shape` (vllm/model_executor/layers/quantization/utils/fp8_utils.py, called
  by Fp8LinearMethod.create_weights in quantization/fp8.py; read at commit 007d50058a06): every output
  partition of a merged layer (QKVParallelLinear's q/k/v, MergedColumnParallelLinear's gate/up: checked at any
  tp) or of a column-parallel layer split over tp > 1 must be a multiple of block_n = 128, and the input
  partition of a row-parallel layer split over tp > 1 (o_proj, down_proj) a multiple of block_k = 128;
* experts, Fp8MoEMethod.create_weights (quantization/fp8.py): "The output_size of gate's and up's weight = 192
  is not divisible by weight quantization block_n = 128" — the experts' intermediate_size_per_partition
  (moe_intermediate_size / tp without expert parallelism, the whole width under EP) must be a multiple of 128
  (vllm-project/vllm issue #17569: Qwen3-235B-A22B-FP8 at tp 8, 1536 / 8 = 192). SGLang's Fp8MoEMethod raises
  the same error.

What is checked here: the MLP and expert shards (models.spec.mlp_widths, and the whole routed experts under EP),
the softmax-attention projections (q/k/v per GPU, whose o_proj input equals the q width; MLA's q_b/kv_b/o_proj
when split over tp > 1). Not checked: linear-attention and Mamba projections (their fp8_block checkpoints were
not examined), layers vLLM lets mismatch (`allow_fp8_block_shape_mismatch`, MiMo-V2-Flash), a drafter's own
weights.
"""
from __future__ import annotations

from models.spec import ModelSpec, allowed_tps, kv_heads_per_gpu, listed, mlp_widths, validate_parallelism
from models.step import Parallelism

# Weight dtypes quantized in square blocks, and the block's width (models.dtypes: fp8_block 128×128).
BLOCK_WIDTH = {"fp8_block": 128}


def block_shards(spec: ModelSpec, par: Parallelism) -> list[tuple[str, int]]:
    """(what, per-GPU width) of every block-quantized weight width vLLM checks against the block under `par`
    (`par` must already split `spec`: models.spec.validate_parallelism)."""
    tp = par.tp
    shards = [(f"{what} ({field} {width} / tp {tp})", width // tp) for what, field, width in mlp_widths(spec, par)]
    if spec.num_moe_layers and par.ep > 1:   # (whole experts on each EP rank)
        shards.append((f"routed experts (moe_intermediate_size {spec.moe_intermediate_size}, whole under ep "
                       f"{par.ep})", spec.moe_intermediate_size))
    if spec.num_attention_layers and not spec.is_mla:   # (QKV is a merged layer: checked at tp 1 too)
        heads = spec.num_heads // tp
        shards.append((f"q_proj ({heads} heads × head_dim {spec.head_dim})", heads * spec.head_dim))
        kv = kv_heads_per_gpu(spec, tp)
        shards.append((f"k_proj/v_proj ({kv} KV heads × head_dim {spec.head_dim})", kv * spec.head_dim))
    elif spec.num_attention_layers and tp > 1:      # (MLA's column/row-parallel projections, split only at tp > 1)
        heads = spec.num_heads // tp
        shards.append((f"q_b_proj ({heads} heads × {spec.qk_head_dim})", heads * spec.qk_head_dim))
        shards.append((f"kv_b_proj ({heads} heads × {spec.qk_nope_head_dim + spec.v_head_dim})",
                       heads * (spec.qk_nope_head_dim + spec.v_head_dim)))
        shards.append((f"o_proj input ({heads} heads × v_head_dim {spec.v_head_dim})", heads * spec.v_head_dim))
    return shards


def _block_problem(spec: ModelSpec, par: Parallelism, dtype: str) -> str | None:
    block = BLOCK_WIDTH.get(dtype)
    if block is None:
        return None
    for what, width in block_shards(spec, par):
        if width % block:
            return (f"parallelism.tp={par.tp} with dtype {dtype} leaves {width} columns of the {what} per GPU, not a "
                    f"multiple of its {block}-wide weight blocks (vLLM refuses to load it: validate_fp8_block_shape, "
                    f"Fp8MoEMethod)")
    return None


def validate_block_quantization(spec: ModelSpec, par: Parallelism, dtype: str) -> None:
    """Nothing when `spec` in `dtype` loads at `par` (or `dtype` is not block-quantized); else a
    BlockQuantizationError whose message ends with the allowed tp degrees (`allowed: tp 1, 2`; `allowed` empty
    when no tp loads it, only another dtype). `par` must split `spec` (models.spec.validate_parallelism)."""
    problem = _block_problem(spec, par, dtype)
    if problem is None:
        return

    def loads(s: ModelSpec, p: Parallelism) -> None:
        validate_parallelism(s, p)
        if _block_problem(s, p, dtype) is not None:
            raise ValueError(dtype)

    allowed = allowed_tps(spec, par, loads)
    if not allowed:
        raise BlockQuantizationError(f"{dtype} cannot load {spec.name} at any tp: {problem}; choose another dtype", [])
    raise BlockQuantizationError(f"{problem}; allowed: tp {listed(allowed)}", allowed)


class BlockQuantizationError(ValueError):
    """validate_block_quantization's refusal; `allowed`: the tp degrees that load (empty: none does)."""

    def __init__(self, message: str, allowed: list[int]):
        super().__init__(message)
        self.allowed = allowed
