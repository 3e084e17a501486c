"""The torch Qwen2 decoder against an independent textbook implementation, and its cache modes against
pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

each other (incremental = parallel, batched ragged decode = per-sequence, tree verify = path replay)."""
import math

import pytest
import torch

from models.torch_impl.qwen2 import ModelConfig, random_model

torch.set_num_threads(2)

CFG = ModelConfig(vocab_size=97, hidden_size=32, intermediate_size=48, num_layers=3, num_heads=4,
                  num_kv_heads=2, head_dim=8, rope_theta=500.0, rms_norm_eps=1e-5, qkv_bias=True,
                  tie_word_embeddings=False, max_context=64)


def reference_logits(model, ids: list[int], skip=()) -> torch.Tensor:
    """Plain per-head loops: explicit pairwise rotation, explicit softmax, explicit KV-head sharing."""
    cfg = model.cfg
    sd = {k: v.double() for k, v in model.state_dict().items()}
    n, half = len(ids), cfg.head_dim // 2
    group = cfg.num_heads // cfg.num_kv_heads

    def norm(x, w):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + cfg.rms_norm_eps) * w

    def rotate(x, pos):  # x [heads, head_dim]; pairs (i, i+half) rotate by pos * theta^(-2i/d)
        out = x.clone()
        for i in range(half):
            ang = pos * cfg.rope_theta ** (-2 * i / cfg.head_dim)
            c, s = math.cos(ang), math.sin(ang)
            out[:, i] = x[:, i] * c - x[:, i + half] * s
            out[:, i + half] = x[:, i + half] * c + x[:, i] * s
        return out

    h = sd["embed_tokens"][torch.tensor(ids)]
    for li in range(cfg.num_layers):
        if li in skip:
            continue
        p = lambda name: sd[f"layers.{li}.{name}"]  # noqa: E731
        x = norm(h, p("attn_norm"))
        q = (x @ p("q_proj").T + p("q_bias")).view(n, cfg.num_heads, cfg.head_dim)
        k = (x @ p("k_proj").T + p("k_bias")).view(n, cfg.num_kv_heads, cfg.head_dim)
        v = (x @ p("v_proj").T + p("v_bias")).view(n, cfg.num_kv_heads, cfg.head_dim)
        q = torch.stack([rotate(q[t], t) for t in range(n)])
        k = torch.stack([rotate(k[t], t) for t in range(n)])
        att = torch.zeros(n, cfg.num_heads, cfg.head_dim, dtype=torch.float64)
        for t in range(n):
            for hd in range(cfg.num_heads):
                kv = hd // group
                scores = torch.tensor([float(q[t, hd] @ k[s, kv]) / math.sqrt(cfg.head_dim) for s in range(t + 1)])
                w = torch.softmax(scores.double(), 0)
                att[t, hd] = (w[:, None] * v[: t + 1, kv]).sum(0)
        h = h + att.reshape(n, -1) @ p("o_proj").T
        x = norm(h, p("ffn_norm"))
        g, u = x @ p("gate_proj").T, x @ p("up_proj").T
        h = h + (g * torch.sigmoid(g) * u) @ p("down_proj").T
    return norm(h, sd["final_norm"]) @ sd["lm_head"].T


@pytest.fixture(scope="module")
def model():
    return random_model(CFG, seed=1)


IDS = [5, 17, 3, 88, 42, 42, 7, 0, 96, 11]


def test_parallel_pass_matches_reference(model):
    with torch.inference_mode():
        got = model.forward_full(torch.tensor(IDS)).double()
    assert torch.allclose(got, reference_logits(model, IDS), atol=1e-4, rtol=1e-4)


def test_layer_skip_matches_reference_without_those_layers(model):
    with torch.inference_mode():
        got = model.forward_full(torch.tensor(IDS), skip_layers={1}).double()
        full = model.forward_full(torch.tensor(IDS)).double()
    assert torch.allclose(got, reference_logits(model, IDS, skip={1}), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(got, full, atol=1e-3)


def test_tied_head_uses_embedding():
    cfg = ModelConfig(**{**CFG.__dict__, "tie_word_embeddings": True, "qkv_bias": False})
    m = random_model(cfg, seed=2)
    assert m.lm_head is None and not any("bias" in k for k in m.state_dict())
    with torch.inference_mode():
        h = torch.randn(3, cfg.hidden_size)
        assert torch.allclose(m.logits(h), h @ m.embed_tokens.T, atol=1e-6)


def test_incremental_prefill_and_decode_match_parallel(model):
    ids = torch.tensor(IDS)
    with torch.inference_mode():
        full = model.forward_full(ids)
        cache = model.new_cache(2, 32)
        parts = [model.prefill(ids[:4], cache, 1), model.prefill(ids[4:7], cache, 1)]
        for t in range(7, len(IDS)):
            parts.append(model.decode(ids[t:t + 1].view(1, 1), cache, [1])[0])
    assert cache.lengths == [0, len(IDS)]
    assert torch.allclose(torch.cat(parts), full, atol=1e-5)


def test_batched_ragged_decode_matches_single_sequences(model):
    seqs = [[1, 2, 3], [9, 8, 7, 6, 5, 4], [50]]
    nxt = torch.tensor([[10, 11], [12, 13], [14, 15]])
    with torch.inference_mode():
        cache = model.new_cache(3, 16)
        for slot, s in enumerate(seqs):
            model.prefill(torch.tensor(s), cache, slot)
        got = model.decode(nxt, cache, [0, 1, 2])      # chain verify of 2 tokens, ragged contexts
        for b, s in enumerate(seqs):
            ref = model.forward_full(torch.tensor(s + nxt[b].tolist()))[-2:]
            assert torch.allclose(got[b], ref, atol=1e-5)


def test_tree_decode_matches_each_path(model):
    prefix = [3, 1, 4, 1, 5]
    # tree: node0 (root child), node1 child of 0, node2 child of 0, node3 child of 2
    parents = [-1, 0, 0, 2]
    nodes = [20, 21, 22, 23]
    mask = torch.zeros(4, 4, dtype=torch.bool)
    for i in range(4):
        j = i
        while j >= 0:
            mask[i, j] = True
            j = parents[j]
    with torch.inference_mode():
        cache = model.new_cache(1, 16)
        model.prefill(torch.tensor(prefix), cache, 0)
        got = model.decode(torch.tensor([nodes]), cache, [0], tree_mask=mask)[0]
        for i in range(4):
            path, j = [], i
            while j >= 0:
                path.insert(0, nodes[j])
                j = parents[j]
            ref = model.forward_full(torch.tensor(prefix + path))[-1]
            assert torch.allclose(got[i], ref, atol=1e-5)


def test_skip_layers_with_cache_match_parallel_skip(model):
    ids = torch.tensor(IDS)
    with torch.inference_mode():
        full = model.forward_full(ids, skip_layers=[0, 2])
        cache = model.new_cache(1, 16)
        a = model.prefill(ids[:6], cache, 0, skip_layers=[0, 2])
        b = model.decode(ids[6:].view(1, -1), cache, [0], skip_layers=[0, 2])[0]
    assert torch.allclose(torch.cat([a, b]), full, atol=1e-5)


def test_rollback_then_rewrite_gives_fresh_result(model):
    ids = torch.tensor(IDS)
    with torch.inference_mode():
        cache = model.new_cache(1, 16)
        model.prefill(ids[:5], cache, 0)
        model.decode(torch.tensor([[60, 61, 62]]), cache, [0])   # a rejected draft
        cache.lengths[0] = 5
        got = model.decode(ids[5:8].view(1, -1), cache, [0])[0]
        ref = model.forward_full(ids[:8])[5:8]
    assert torch.allclose(got, ref, atol=1e-5)


def test_bad_inputs_raise_value_error(model):
    cache = model.new_cache(1, 8)
    with pytest.raises(ValueError, match="skip_layers"):
        model.forward_full(torch.tensor([1, 2]), skip_layers=[7])
    with pytest.raises(ValueError, match="token ids"):
        model.forward_full(torch.tensor([1, 200]))
    with pytest.raises(ValueError, match="slot"):
        model.prefill(torch.tensor([1]), cache, 3)
    with pytest.raises(ValueError, match="num_heads"):
        ModelConfig(**{**CFG.__dict__, "num_kv_heads": 3})
    with pytest.raises(ValueError, match="overflow"):
        model.prefill(torch.arange(9), cache, 0)
