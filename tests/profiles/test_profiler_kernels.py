"""Kernels in models/torch_impl/kernels.py against brute-force reference computations."""
from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

torch = pytest.importorskip("torch")

from models.torch_impl import kernels as K  # noqa: E402

torch.set_num_threads(1)


def _reference_attention(q, keys, values, allowed):
    """q [Lq, H, D], keys/values [Lk, Hkv, D], allowed [Lq, Lk] bool → [Lq, H*D] by explicit softmax."""
    heads, kv_heads = q.shape[1], keys.shape[1]
    group = heads // kv_heads
    out = torch.empty(q.shape[0], heads, q.shape[2], dtype=torch.float64)
    for h in range(heads):
        kh = h // group
        scores = q[:, h].double() @ keys[:, kh].double().T / math.sqrt(q.shape[2])
        scores = scores.masked_fill(~allowed, float("-inf"))
        out[:, h] = torch.softmax(scores, dim=-1) @ values[:, kh].double()
    return out.reshape(q.shape[0], -1)


def test_linear_rms_norm_swiglu_embedding_match_definitions():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 8, generator=g)
    w, b = torch.randn(3, 8, generator=g), torch.randn(3, generator=g)
    assert torch.allclose(K.linear(x, w, b), x @ w.T + b, atol=1e-5)
    nw = torch.randn(8, generator=g)
    ref = x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + 1e-6) * nw
    assert torch.allclose(K.rms_norm(x, nw), ref, atol=1e-5)
    gate, up = torch.randn(4, 6, generator=g), torch.randn(4, 6, generator=g)
    assert torch.allclose(K.swiglu(gate, up), gate / (1 + torch.exp(-gate)) * up, atol=1e-5)
    table = torch.randn(10, 4, generator=g)
    ids = torch.tensor([3, 0, 9])
    assert torch.equal(K.embedding(ids, table), table[ids])


def test_rope_rotates_pairs_by_position_angle_and_preserves_norm():
    head_dim, theta = 8, 10000.0
    pos = torch.tensor([0, 1, 7])
    cos, sin = K.rope_tables(pos, head_dim, theta)
    x = torch.randn(3, 2, head_dim, generator=torch.Generator().manual_seed(1))
    y = K.apply_rope(x, cos, sin)
    half = head_dim // 2
    for t, p in enumerate(pos.tolist()):
        for i in range(half):
            ang = p * theta ** (-2 * i / head_dim)
            a, b = x[t, :, i], x[t, :, i + half]
            assert torch.allclose(y[t, :, i], a * math.cos(ang) - b * math.sin(ang), atol=1e-5)
            assert torch.allclose(y[t, :, i + half], b * math.cos(ang) + a * math.sin(ang), atol=1e-5)
    assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    with pytest.raises(ValueError, match="head_dim"):
        K.rope_tables(pos, 7)


@pytest.mark.parametrize("prefix", [0, 5])
def test_attention_prefill_is_causal_over_cached_prefix(prefix):
    g = torch.Generator().manual_seed(2)
    chunk, heads, kv_heads, d = 4, 4, 2, 8
    k_cache = torch.zeros(2, kv_heads, 16, d)
    v_cache = torch.zeros(2, kv_heads, 16, d)
    old_k, old_v = torch.randn(prefix, kv_heads, d, generator=g), torch.randn(prefix, kv_heads, d, generator=g)
    k_cache[1, :, :prefix] = old_k.transpose(0, 1)
    v_cache[1, :, :prefix] = old_v.transpose(0, 1)
    q = torch.randn(chunk, heads, d, generator=g)
    kn, vn = torch.randn(chunk, kv_heads, d, generator=g), torch.randn(chunk, kv_heads, d, generator=g)
    out = K.attention_prefill(q, kn, vn, k_cache, v_cache, slot=1, prefix=prefix)
    keys, values = torch.cat([old_k, kn]), torch.cat([old_v, vn])
    allowed = torch.arange(prefix + chunk)[None, :] <= torch.arange(chunk)[:, None] + prefix
    assert torch.allclose(out.double(), _reference_attention(q, keys, values, allowed), atol=1e-5)
    assert torch.equal(k_cache[1, :, prefix:prefix + chunk], kn.transpose(0, 1))
    assert k_cache[0].abs().sum() == 0


@pytest.mark.parametrize("tree", [False, True])
def test_attention_decode_ragged_contexts_and_tree_mask(tree):
    g = torch.Generator().manual_seed(3)
    seqs, qps, heads, kv_heads, d = 3, 3, 4, 1, 8
    cached = [2, 6, 0]
    slots = [2, 0, 1]
    k_cache = torch.randn(3, kv_heads, 12, d, generator=g)
    v_cache = torch.randn(3, kv_heads, 12, d, generator=g)
    k_before, v_before = k_cache.clone(), v_cache.clone()
    q = torch.randn(seqs, qps, heads, d, generator=g)
    kn, vn = torch.randn(seqs, qps, kv_heads, d, generator=g), torch.randn(seqs, qps, kv_heads, d, generator=g)
    # tree: root 0 with two children 1 and 2 (siblings must not see each other)
    mask = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool) if tree else None
    out = K.attention_decode(q, kn, vn, k_cache, v_cache, slots, cached, tree_mask=mask)
    block = mask if tree else torch.ones(qps, qps, dtype=torch.bool).tril()
    for b in range(seqs):
        s, c = slots[b], cached[b]
        keys = torch.cat([k_before[s, :, :c].transpose(0, 1), kn[b]])
        values = torch.cat([v_before[s, :, :c].transpose(0, 1), vn[b]])
        allowed = torch.cat([torch.ones(qps, c, dtype=torch.bool), block], dim=1)
        ref = _reference_attention(q[b], keys, values, allowed)
        assert torch.allclose(out[b * qps:(b + 1) * qps].double(), ref, atol=1e-5)


def test_attention_decode_rejects_bad_arguments():
    q = torch.zeros(2, 1, 2, 4)
    kv = torch.zeros(2, 1, 1, 4)
    cache = torch.zeros(2, 1, 4, 4)
    with pytest.raises(ValueError, match="cached_lens"):
        K.attention_decode(q, kv, kv, cache, cache.clone(), [0, 1], [0])
    with pytest.raises(ValueError, match="overflow"):
        K.attention_decode(q, kv, kv, cache, cache.clone(), [0, 1], [0, 4])


def test_sampling_greedy_and_seeded_temperature_draws_follow_softmax():
    logits = torch.tensor([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]])
    assert K.sample_tokens(logits).tolist() == [1, 0]
    rows = logits[0].repeat(20000, 1)
    draws = K.sample_tokens(rows, temperature=2.0, generator=torch.Generator().manual_seed(4))
    freq = torch.bincount(draws, minlength=3).double() / draws.numel()
    expected = torch.softmax(logits[0].double() / 2.0, dim=-1)
    assert torch.allclose(freq, expected, atol=0.015)
    again = K.sample_tokens(rows, temperature=2.0, generator=torch.Generator().manual_seed(4))
    assert torch.equal(draws, again)
    with pytest.raises(ValueError, match="temperature"):
        K.sample_tokens(logits, temperature=-1.0)


def test_router_topk_picks_largest_probabilities():
    g = torch.Generator().manual_seed(5)
    hidden, router = torch.randn(6, 8, generator=g), torch.randn(4, 8, generator=g)
    weights, ids = K.router_topk(hidden, router, top_k=2)
    probs = torch.softmax(hidden @ router.T, dim=-1)
    top = probs.topk(2, dim=-1)
    assert torch.equal(ids, top.indices)
    assert torch.allclose(weights, top.values / top.values.sum(-1, keepdim=True), atol=1e-6)
    raw, _ = K.router_topk(hidden, router, top_k=2, renormalize=False)
    assert torch.allclose(raw, top.values, atol=1e-6)
    with pytest.raises(ValueError, match="top_k"):
        K.router_topk(hidden, router, top_k=5)


def test_add_rms_norm_returns_normed_sum_and_new_residual():
    g = torch.Generator().manual_seed(6)
    x, res, w = torch.randn(3, 8, generator=g), torch.randn(3, 8, generator=g), torch.randn(8, generator=g)
    normed, summed = K.add_rms_norm(x, res, w)
    assert torch.allclose(summed, x + res)
    assert torch.allclose(normed, K.rms_norm(x + res, w))
    normed0, summed0 = K.add_rms_norm(x, None, w)
    assert summed0 is x and torch.allclose(normed0, K.rms_norm(x, w))
