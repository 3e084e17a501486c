"""Byte-level BPE tokenizer: pre-tokenizer splits, BPE invariants, round trips, special tokens, and (when
the pinned Qwen2.5 GGUF is present locally) known ids of the real vocabulary."""
from pathlib import Path

import pytest

from models.torch_impl.tokenizer import BPETokenizer, byte_to_unicode, qwen2_pretokenizer, train_bpe
from paths import REPO

pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

CORPUS = [
    "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b\n",
    "The quick brown fox jumps over the lazy dog. It's 2024; we've 12 apples.\n",
    "for i in range(10):\n        print(i, i ** 2)\n\n\n",
    "class Foo(Bar):\n    pass\n",
]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


@pytest.fixture(scope="module")
def tok() -> BPETokenizer:
    return train_bpe(CORPUS, num_merges=120, special_tokens=SPECIALS)


def test_byte_table_is_a_bijection_onto_printables():
    table = byte_to_unicode()
    assert len(set(table.values())) == 256
    assert all(not c.isspace() and c.isprintable() for c in table.values())


def test_pretokenizer_splits_like_qwen2():
    pieces = qwen2_pretokenizer().findall("Hello world's 123  x\n\n  y!?\n")
    assert pieces == ["Hello", " world", "'s", " ", "1", "2", "3", " ", " x", "\n\n", " ", " y", "!?\n"]
    assert qwen2_pretokenizer().findall("I'LL go") == ["I", "'LL", " go"]
    assert qwen2_pretokenizer().findall("naïve café ²") == ["naïve", " café", " ", "²"]


@pytest.mark.parametrize("text", CORPUS + [
    "unseen wörds ünïcödé 漢字 🙂 and tabs\t\there\r\n", "", " ", "a" * 50, "'s'S'''\n\n"])
def test_round_trip(tok, text):
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert all(0 <= i < tok.vocab_size for i in ids)


def test_bpe_output_has_no_mergeable_pair_and_compresses(tok):
    for text in CORPUS:
        for piece in qwen2_pretokenizer().findall(text):
            ids = tok.encode(piece)
            symbols = [tok.tokens[i] for i in ids]
            assert all((a, b) not in tok.merge_ranks for a, b in zip(symbols, symbols[1:]))
    text = CORPUS[0]
    assert len(tok.encode(text)) < len(text.encode()) / 2


def test_merge_order_follows_rank():
    b2u = byte_to_unicode()
    tokens = [b2u[b] for b in range(256)] + ["bc", "ab", "abc"]
    # rank 0 merges "b c" first, so "abc" becomes a + bc, and "a bc" is not a rule → stays two tokens
    t1 = BPETokenizer(tokens=tokens, merges=["b c", "a b", "ab c"])
    assert [t1.tokens[i] for i in t1.encode("abc")] == ["a", "bc"]
    t2 = BPETokenizer(tokens=tokens, merges=["a b", "b c", "ab c"])
    assert [t2.tokens[i] for i in t2.encode("abc")] == ["abc"]


def test_special_tokens(tok):
    text = "<|im_start|>user\nhi<|im_end|>\n"
    ids = tok.encode(text)
    assert ids[0] == tok.special_ids["<|im_start|>"] and tok.special_ids["<|im_end|>"] in ids
    assert tok.decode(ids) == text
    plain = tok.encode(text, allow_special=False)
    assert tok.special_ids["<|im_start|>"] not in plain and tok.decode(plain) == text
    assert tok.stop_ids() == {tok.special_ids["<|endoftext|>"], tok.special_ids["<|im_end|>"]}


def test_bad_inputs(tok):
    with pytest.raises(ValueError, match="token id"):
        tok.decode([tok.vocab_size])
    with pytest.raises(ValueError, match="merges"):
        BPETokenizer(tokens=list(byte_to_unicode().values()), merges=["nospace"])
    with pytest.raises(ValueError, match="single-byte"):
        BPETokenizer(tokens=["a"], merges=[])


REAL = REPO / ".weights" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


@pytest.mark.skipif(not REAL.exists(), reason="pinned GGUF not downloaded (python3 -m profiles.acceptance.fetch)")
def test_real_qwen_vocabulary_ids():
    from gguf import GGUFReader
    from models.torch_impl.gguf_loader import read_fields
    from models.torch_impl.tokenizer import tokenizer_from_gguf_fields
    real = tokenizer_from_gguf_fields(read_fields(GGUFReader(str(REAL))))
    assert real.encode("Hello world") == [9707, 1879]
    assert real.encode("<|im_start|>system\n")[:2] == [151644, 8948]
    text = open(__file__, encoding="utf-8").read()
    assert real.decode(real.encode(text)) == text
