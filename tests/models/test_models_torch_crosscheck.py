"""ModelSpec and the op graph against the project's real torch decoder (models.torch_impl):
parameter counts of full-size models built on the meta device, and GEMM FLOPs counted by torch's
FlopCounterMode on small random models (prefill and multi-token decode, dense and MoE)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from models import get_model  # noqa: E402
from models.opgraph import dense_ops  # noqa: E402
from models.ops import GEMM, MOE_ROUTER  # noqa: E402
from models.spec import ModelSpec  # noqa: E402
from models.step import Parallelism  # noqa: E402
from models.torch_impl.qwen2 import ModelConfig, Qwen2Model, random_model  # noqa: E402


def torch_config(spec: ModelSpec) -> ModelConfig:
    return ModelConfig(vocab_size=spec.vocab_size, hidden_size=spec.hidden_size,
                       intermediate_size=spec.intermediate_size, num_layers=spec.num_layers,
                       num_heads=spec.num_heads, num_kv_heads=spec.num_kv_heads, head_dim=spec.head_dim,
                       rope_theta=spec.rope_theta, qkv_bias=spec.qkv_bias,
                       tie_word_embeddings=spec.tie_word_embeddings, num_experts=spec.num_experts,
                       experts_per_token=spec.experts_per_token, moe_intermediate_size=spec.moe_intermediate_size)


@pytest.mark.parametrize("name", ["llama-2-7b", "llama-3-8b", "vicuna-33b", "qwen2.5-coder-0.5b",
                                  "qwen2.5-coder-1.5b", "llama-68m", "mixtral-8x7b"])
def test_param_count_equals_torch_model_on_meta_device(name):
    spec = get_model(name)
    with torch.device("meta"):
        model = Qwen2Model(torch_config(spec))
    assert sum(p.numel() for p in model.parameters()) == spec.param_count()


SMALL = dict(family="test", hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16,
             intermediate_size=96, vocab_size=101, qkv_bias=True)
SMALL_SPECS = [
    ModelSpec(name="small-dense", **SMALL),
    ModelSpec(name="small-tied", **{**SMALL, "tie_word_embeddings": True, "qkv_bias": False}),
    ModelSpec(name="small-moe", **{**SMALL, "num_experts": 4, "experts_per_token": 2, "moe_intermediate_size": 48}),
]


def counted_matmul_flops(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return sum(counter.get_flop_counts()["Global"].values())


def graph_gemm_flops(spec: ModelSpec, tokens: int, logits: int) -> float:
    return sum(op.count * op.flops for op in dense_ops(spec, tokens, logits, Parallelism())
               if op.kind in (GEMM, MOE_ROUTER))


@pytest.mark.parametrize("spec", SMALL_SPECS, ids=lambda s: s.name)
def test_gemm_flops_equal_torch_flop_counter(spec):
    model = random_model(torch_config(spec), seed=3)
    ids = torch.arange(11) % spec.vocab_size
    # Prefill of 11 tokens, logits for every position.
    assert counted_matmul_flops(lambda: model.forward_full(ids)) == graph_gemm_flops(spec, 11, 11)
    # Chain verification: 3 sequences × 4 query tokens over ragged caches, logits for all 12 tokens.
    cache = model.new_cache(3, 64)
    for slot, length in enumerate((5, 9, 2)):
        model.prefill(ids[:length], cache, slot)
    decode_ids = torch.arange(12).view(3, 4) % spec.vocab_size
    assert counted_matmul_flops(lambda: model.decode(decode_ids, cache, [0, 1, 2])) == graph_gemm_flops(spec, 12, 12)
    # A prefill returning only the last position's logits.
    assert counted_matmul_flops(lambda: model.prefill(ids[:7], cache, 0, last_only=True)) == \
        graph_gemm_flops(spec, 7, 1)
