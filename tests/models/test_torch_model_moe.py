"""MoE block against a per-token dense loop over every expert, and a MoE decoder's cache consistency."""
import pytest
import torch

from models.torch_impl.moe import MoEBlock
from models.torch_impl.qwen2 import ModelConfig, random_model

torch.set_num_threads(2)


pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

def dense_loop(block: MoEBlock, x: torch.Tensor) -> torch.Tensor:
    """Each token: softmax over all experts, keep its top-k, (renormalize), sum weighted expert MLPs."""
    out = torch.zeros_like(x, dtype=torch.float64)
    for t in range(x.shape[0]):
        xt = x[t].double()
        probs = torch.softmax(block.router.double() @ xt, dim=0)
        top = torch.argsort(probs, descending=True)[: block.top_k]
        w = probs[top] / probs[top].sum() if block.renormalize else probs[top]
        for weight, e in zip(w, top):
            g, u = block.gate[e].double() @ xt, block.up[e].double() @ xt
            out[t] += weight * (block.down[e].double() @ (torch.nn.functional.silu(g) * u))
    return out


@pytest.mark.parametrize("renormalize", [True, False])
@pytest.mark.parametrize("top_k", [1, 2, 3])
def test_moe_block_matches_dense_loop(top_k, renormalize):
    gen = torch.Generator().manual_seed(top_k)
    block = MoEBlock(hidden_size=12, intermediate_size=20, num_experts=5, top_k=top_k, renormalize=renormalize)
    with torch.no_grad():
        for p in block.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.4)
    x = torch.randn(17, 12, generator=gen)
    with torch.inference_mode():
        got = block(x)
    assert torch.allclose(got.double(), dense_loop(block, x), atol=1e-5)


def test_moe_block_rejects_bad_top_k():
    with pytest.raises(ValueError, match="top_k"):
        MoEBlock(8, 8, num_experts=4, top_k=5)


def test_moe_decoder_incremental_matches_parallel():
    cfg = ModelConfig(vocab_size=50, hidden_size=16, intermediate_size=0, num_layers=2, num_heads=2,
                      num_kv_heads=1, head_dim=8, num_experts=4, experts_per_token=2, moe_intermediate_size=24,
                      max_context=32)
    model = random_model(cfg, seed=3)
    ids = torch.tensor([4, 8, 15, 16, 23, 42 % 50, 7])
    with torch.inference_mode():
        full = model.forward_full(ids)
        cache = model.new_cache(1, 16)
        a = model.prefill(ids[:3], cache, 0)
        b = torch.cat([model.decode(ids[t:t + 1].view(1, 1), cache, [0])[0] for t in range(3, len(ids))])
    assert torch.allclose(torch.cat([a, b]), full, atol=1e-5)
