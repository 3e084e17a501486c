"""GGUF loader end to end on tiny random models written with the `gguf` package's writer."""
import numpy as np
import pytest
import torch

from models.torch_impl.gguf_loader import config_from_fields, load_gguf, parameter_name, write_gguf
from models.torch_impl.qwen2 import ModelConfig, random_model
from models.torch_impl.tokenizer import train_bpe

torch.set_num_threads(2)

pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

TEXTS = ["def f(x):\n    return x * 2\n", "Hello there, general. How are you today?\n"]


@pytest.fixture(scope="module")
def tok():
    return train_bpe(TEXTS, num_merges=40, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])


def tiny_cfg(vocab, **over):
    base = dict(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_layers=2, num_heads=4,
                num_kv_heads=2, head_dim=16, rope_theta=10000.0, rms_norm_eps=2.0 ** -20, qkv_bias=True,  # exact in float32
                tie_word_embeddings=False, max_context=128)
    base.update(over)
    return ModelConfig(**base)


@pytest.mark.parametrize("tied", [False, True])
def test_f32_round_trip_is_exact(tmp_path, tok, tied):
    model = random_model(tiny_cfg(tok.vocab_size, tie_word_embeddings=tied), seed=4)
    path = tmp_path / "tiny.gguf"
    write_gguf(model, tok, path, quant="F32")
    loaded = load_gguf(path)
    assert loaded.config == model.cfg
    for name, p in model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], p), name
    assert list(loaded.tokenizer.tokens) == list(tok.tokens)
    assert loaded.tokenizer.encode(TEXTS[0]) == tok.encode(TEXTS[0])
    ids = torch.tensor(tok.encode(TEXTS[1]))
    with torch.inference_mode():
        assert torch.equal(loaded.model.forward_full(ids), model.forward_full(ids))


@pytest.mark.parametrize("quant", ["Q8_0", "Q5_0", "Q4_0"])
def test_quantized_weights_dequantize_to_the_codec_values(tmp_path, tok, quant):
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize, quantize
    model = random_model(tiny_cfg(tok.vocab_size), seed=5)
    path = tmp_path / f"tiny-{quant}.gguf"
    write_gguf(model, tok, path, quant=quant)
    loaded = load_gguf(path)
    qtype = GGMLQuantizationType[quant]
    assert dict(loaded.tensor_types)[quant] > 0
    for name, p in model.state_dict().items():
        got = loaded.model.state_dict()[name]
        if p.dim() == 2:
            expect = dequantize(quantize(p.numpy(), qtype), qtype).reshape(p.shape)
            assert np.array_equal(got.numpy(), expect), name
            assert not torch.equal(got, p)
        else:
            assert torch.equal(got, p)


def test_moe_model_round_trip(tmp_path, tok):
    cfg = tiny_cfg(tok.vocab_size, intermediate_size=0, num_experts=4, experts_per_token=2,
                   moe_intermediate_size=32, moe_renormalize=False)
    model = random_model(cfg, seed=6)
    write_gguf(model, tok, tmp_path / "moe.gguf")
    loaded = load_gguf(tmp_path / "moe.gguf")
    assert loaded.config == cfg
    ids = torch.tensor(tok.encode(TEXTS[0]))
    with torch.inference_mode():
        assert torch.equal(loaded.model.forward_full(ids), model.forward_full(ids))


def test_names_and_errors():
    assert parameter_name("blk.3.attn_q.weight") == "layers.3.q_proj"
    assert parameter_name("output.weight") == "lm_head"
    with pytest.raises(ValueError, match="no counterpart"):
        parameter_name("blk.0.attn_qkv.weight")
    with pytest.raises(ValueError, match="general.architecture"):
        config_from_fields({"general.architecture": "gemma3"}, set())
    with pytest.raises(ValueError, match="lacks qwen2.block_count"):
        config_from_fields({"general.architecture": "qwen2", "qwen2.embedding_length": 8,
                            "qwen2.attention.head_count": 2, "tokenizer.ggml.tokens": ["a"]}, set())
    with pytest.raises(ValueError, match="not a file"):
        load_gguf("/nonexistent/x.gguf")
    with pytest.raises(ValueError, match="quant"):
        write_gguf(random_model(tiny_cfg(300), seed=0), None, "/tmp/never.gguf", quant="Q9_9")
