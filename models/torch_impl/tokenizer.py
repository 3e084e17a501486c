"""Byte-level BPE tokenizer built from GGUF metadata (Qwen2 / GPT-2 style, `tokenizer.ggml.model = gpt2`;
pre-tokenizers `qwen2` and `smollm`, see `PRETOKENIZERS`).

Encoding: (1) split the text on the vocabulary's added tokens (GGUF token types CONTROL and USER_DEFINED,
e.g. `<|im_start|>`), which map to their ids directly; (2) split the rest with the pre-tokenizer that the
GGUF's `tokenizer.ggml.pre` names (`PRETOKENIZERS`); (3) map each piece's UTF-8 bytes to printable characters with the GPT-2 byte↔unicode table and
apply the merges in rank order; (4) look the resulting symbols up in the vocabulary.
Decoding concatenates token strings, maps the characters back to bytes and decodes UTF-8.

Approximations (named): the Hugging Face Qwen2 tokenizer NFC-normalizes input first; this one does not
(as llama.cpp does not), so text that is not already in NFC may tokenize differently — for ASCII/NFC text
(all of the measurement's prompts) the result is identical. `\\p{L}` / `\\p{N}` are expanded into exact
code-point classes from Python's `unicodedata` (no third-party regex engine), so letters and numbers follow
the Unicode version of the running Python.
"""
from __future__ import annotations

import re
import sys
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

# GGUF token types (gguf.TokenType): 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
_SPECIAL_TOKEN_TYPES = (3, 4)


@lru_cache(maxsize=1)
def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte → printable character table: printable Latin-1 bytes map to themselves,
    the other 68 bytes to code points 256, 257, … in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _ranges_class(predicate) -> str:
    """A regex character-class body covering every code point c with predicate(c), as ranges."""
    parts, start, prev = [], None, None
    for cp in range(sys.maxunicode + 1):
        if predicate(chr(cp)):
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            parts.append((start, prev))
            start = None
    if start is not None:
        parts.append((start, prev))
    esc = lambda cp: f"\\U{cp:08x}"  # noqa: E731
    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in parts)


@lru_cache(maxsize=1)
def qwen2_pretokenizer() -> re.Pattern:
    """The Qwen2 pre-tokenizer (tokenizer.json's Split regex), with \\p{L}, \\p{N} as exact classes:
    (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|
    \\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"""
    letters = _ranges_class(lambda c: unicodedata.category(c).startswith("L"))
    numbers = _ranges_class(lambda c: unicodedata.category(c).startswith("N"))
    pattern = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
               rf"|[^\r\n{letters}{numbers}]?[{letters}]+"
               rf"|[{numbers}]"
               rf"| ?[^\s{letters}{numbers}]+[\r\n]*"
               r"|\s*[\r\n]+"
               r"|\s+(?!\S)"
               r"|\s+")
    return re.compile(pattern)


@lru_cache(maxsize=1)
def gpt2_pretokenizer() -> re.Pattern:
    """GPT-2's byte-level pre-tokenizer (Hugging Face `ByteLevel(use_regex=True)`), with \\p{L}, \\p{N}
    as exact classes: 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"""
    letters, numbers = _category_class("L"), _category_class("N")
    return re.compile(r"'s|'t|'re|'ve|'m|'ll|'d"
                      rf"| ?[{letters}]+| ?[{numbers}]+| ?[^\s{letters}{numbers}]+"
                      r"|\s+(?!\S)|\s+")


@lru_cache(maxsize=None)
def _category_class(major: str) -> str:
    """Character-class body of every code point whose Unicode category starts with `major` ("L", "N")."""
    return _ranges_class(lambda c: unicodedata.category(c).startswith(major))


@lru_cache(maxsize=1)
def _number_re() -> re.Pattern:
    return re.compile(f"[{_category_class('N')}]")


def qwen2_pieces(text: str) -> list[str]:
    return [m.group(0) for m in qwen2_pretokenizer().finditer(text)]


def smollm_pieces(text: str) -> list[str]:
    """SmolLM/StarCoder pre-tokenization (GGUF `tokenizer.ggml.pre` = "smollm"; llama.cpp's
    LLAMA_VOCAB_PRE_TYPE_SMOLLM, Hugging Face `Digits(individual_digits=True)` then `ByteLevel`): every
    number code point becomes its own piece, then GPT-2's regex splits the text between them."""
    out, pos = [], 0
    for match in _number_re().finditer(text):
        out += [m.group(0) for m in gpt2_pretokenizer().finditer(text[pos:match.start()])]
        out.append(match.group(0))
        pos = match.end()
    out += [m.group(0) for m in gpt2_pretokenizer().finditer(text[pos:])]
    return out


# GGUF `tokenizer.ggml.pre` value → function splitting text into the pieces BPE merges within.
PRETOKENIZERS = {"qwen2": qwen2_pieces, "smollm": smollm_pieces}


QWEN_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def chatml_prompt(user_message: str, system_message: str | None = None) -> str:
    """ChatML text for one user turn, ending where the assistant's reply starts: what the Qwen2 instruct
    chat template renders for [system, user] with add_generation_prompt (written out, no template engine)."""
    system = QWEN_DEFAULT_SYSTEM if system_message is None else system_message
    return (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user_message}<|im_end|>\n"
            "<|im_start|>assistant\n")


@dataclass
class BPETokenizer:
    """Byte-level BPE over `tokens` (id → string in byte-to-unicode form) and `merges` ("a b" strings,
    rank = position). `special_ids` are matched literally in text before pre-tokenization."""
    tokens: Sequence[str]
    merges: Sequence[str]
    token_types: Sequence[int] = ()
    bos_id: int | None = None
    eos_id: int | None = None
    pad_id: int | None = None
    chat_template: str | None = None
    pre: str = "qwen2"
    unk_id: int | None = None
    _cache: dict[str, list[int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.tokens:
            raise ValueError("tokens must be a non-empty list of token strings")
        if self.pre not in PRETOKENIZERS:
            raise ValueError(f"pre must be one of {sorted(PRETOKENIZERS)}, got {self.pre!r}")
        self.token_to_id = {tok: i for i, tok in enumerate(self.tokens)}
        self.merge_ranks: dict[tuple[str, str], int] = {}
        for rank, merge in enumerate(self.merges):
            left, sep, right = merge.partition(" ")
            if not sep:
                raise ValueError(f"merges[{rank}] must be two symbols separated by one space, got {merge!r}")
            self.merge_ranks.setdefault((left, right), rank)
        types = list(self.token_types) or [1] * len(self.tokens)
        if len(types) != len(self.tokens):
            raise ValueError(f"token_types has {len(types)} entries, tokens has {len(self.tokens)}")
        self.special_ids = {self.tokens[i]: i for i, t in enumerate(types) if t in _SPECIAL_TOKEN_TYPES}
        self._special_re = (re.compile("|".join(re.escape(s) for s in sorted(self.special_ids, key=len,
                                                                               reverse=True)))
                            if self.special_ids else None)
        self._b2u = byte_to_unicode()
        self._u2b = {c: b for b, c in self._b2u.items()}
        missing = [c for c in self._b2u.values() if c not in self.token_to_id]
        if missing and self.unk_id is None:
            raise ValueError(f"vocabulary lacks {len(missing)} single-byte symbols (e.g. {missing[0]!r}) and "
                             "has no unknown token; byte-level BPE needs all 256 or an unk_id")
        # SmolLM2 lacks 21 control bytes (e.g. 0x00–0x08): like Hugging Face's BPE without byte fallback,
        # a symbol missing from the vocabulary encodes as the unknown token.

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def _bpe(self, piece: str) -> list[int]:
        cached = self._cache.get(piece)
        if cached is not None:
            return cached
        symbols = [self._b2u[b] for b in piece.encode("utf-8")]
        while len(symbols) > 1:
            best_rank, best_i = None, -1
            for i in range(len(symbols) - 1):
                rank = self.merge_ranks.get((symbols[i], symbols[i + 1]))
                if rank is not None and (best_rank is None or rank < best_rank):
                    best_rank, best_i = rank, i
            if best_rank is None:
                break
            pair = (symbols[best_i], symbols[best_i + 1])
            merged, i = [], 0
            while i < len(symbols):  # merge every occurrence of the best pair, left to right
                if i < len(symbols) - 1 and (symbols[i], symbols[i + 1]) == pair:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        ids = [self.token_to_id.get(s, self.unk_id) for s in symbols]
        if None in ids:
            raise ValueError(f"text piece {piece!r} has a byte missing from the vocabulary (no unknown token)")
        if len(self._cache) < 100_000:
            self._cache[piece] = ids
        return ids

    def _encode_plain(self, text: str) -> list[int]:
        out: list[int] = []
        for piece in PRETOKENIZERS[self.pre](text):
            out.extend(self._bpe(piece))
        return out

    def encode(self, text: str, allow_special: bool = True) -> list[int]:
        """Token ids of `text`. With allow_special, literal added tokens (e.g. `<|im_end|>`) become their
        ids; otherwise they are encoded as ordinary text."""
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        if not allow_special or self._special_re is None:
            return self._encode_plain(text)
        out, pos = [], 0
        for match in self._special_re.finditer(text):
            out.extend(self._encode_plain(text[pos:match.start()]))
            out.append(self.special_ids[match.group(0)])
            pos = match.end()
        out.extend(self._encode_plain(text[pos:]))
        return out

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes one token stands for (an added token: its literal text in UTF-8)."""
        if not 0 <= int(token_id) < len(self.tokens):
            raise ValueError(f"token id {token_id} outside the vocabulary 0…{len(self.tokens) - 1}")
        tok = self.tokens[int(token_id)]
        if tok in self.special_ids:
            return tok.encode("utf-8")
        return bytes(self._u2b[c] for c in tok)

    def byte_id(self, value: int) -> int:
        """The token of one raw byte (the unknown token when the vocabulary lacks it)."""
        token_id = self.token_to_id.get(self._b2u[value], self.unk_id)
        if token_id is None:
            raise ValueError(f"vocabulary lacks byte {value:#04x} and has no unknown token")
        return token_id

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return b"".join(self.token_bytes(i) for i in ids)

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """Text of token ids (added tokens as their literal text); invalid UTF-8 → U+FFFD by default."""
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def chat_prompt(self, user_message: str, system_message: str | None = None) -> str:
        return chatml_prompt(user_message, system_message)

    def stop_ids(self) -> frozenset[int]:
        """Ids that end a generation: eos plus ChatML's `<|im_end|>` / `<|endoftext|>` when present."""
        ids = {self.eos_id} if self.eos_id is not None else set()
        ids |= {self.special_ids[s] for s in ("<|im_end|>", "<|endoftext|>") if s in self.special_ids}
        return frozenset(ids)


def tokenizer_from_gguf_fields(fields: dict) -> BPETokenizer:
    """Build the tokenizer from GGUF key/value metadata (a dict of plain Python values)."""
    model = fields.get("tokenizer.ggml.model")
    if model != "gpt2":
        raise ValueError(f"tokenizer.ggml.model must be 'gpt2' (byte-level BPE), got {model!r}")
    pre = fields.get("tokenizer.ggml.pre", "qwen2")
    if pre not in PRETOKENIZERS:
        raise ValueError(f"tokenizer.ggml.pre must be one of {sorted(PRETOKENIZERS)} (the pre-tokenizers "
                         f"implemented), got {pre!r}")
    return BPETokenizer(tokens=fields["tokenizer.ggml.tokens"], merges=fields.get("tokenizer.ggml.merges", ()),
                        token_types=fields.get("tokenizer.ggml.token_type", ()),
                        bos_id=fields.get("tokenizer.ggml.bos_token_id"),
                        eos_id=fields.get("tokenizer.ggml.eos_token_id"),
                        pad_id=fields.get("tokenizer.ggml.padding_token_id"),
                        chat_template=fields.get("tokenizer.chat_template"), pre=pre,
                        unk_id=fields.get("tokenizer.ggml.unknown_token_id"))


def train_bpe(texts: Sequence[str], num_merges: int, special_tokens: Sequence[str] = ()) -> BPETokenizer:
    """A small byte-level BPE vocabulary learned from `texts` (greedy most-frequent-pair merges over the
    Qwen2 pre-tokenized pieces; ties broken by the pair's string order, so the result is deterministic).
    Vocabulary = 256 byte symbols, then one token per merge, then `special_tokens` (type CONTROL).
    For tests and tiny models; real vocabularies come from GGUF files."""
    if num_merges < 0:
        raise ValueError(f"num_merges must be >= 0, got {num_merges}")
    b2u = byte_to_unicode()
    counts: dict[tuple[str, ...], int] = {}
    for text in texts:
        for match in qwen2_pretokenizer().finditer(text):
            word = tuple(b2u[b] for b in match.group(0).encode("utf-8"))
            counts[word] = counts.get(word, 0) + 1
    tokens = [b2u[b] for b in range(256)]
    merges: list[str] = []
    for _ in range(num_merges):
        pairs: dict[tuple[str, str], int] = {}
        for word, n in counts.items():
            for pair in zip(word, word[1:]):
                pairs[pair] = pairs.get(pair, 0) + n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(f"{best[0]} {best[1]}")
        if best[0] + best[1] not in tokens:   # two merge paths can spell the same symbol
            tokens.append(best[0] + best[1])
        new_counts: dict[tuple[str, ...], int] = {}
        for word, n in counts.items():
            out, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            new_counts[tuple(out)] = new_counts.get(tuple(out), 0) + n
        counts = new_counts
    types = [1] * len(tokens) + [3] * len(special_tokens)
    tokens += list(special_tokens)
    eos = tokens.index("<|endoftext|>") if "<|endoftext|>" in special_tokens else None
    return BPETokenizer(tokens=tokens, merges=merges, token_types=types, bos_id=eos, eos_id=eos, pad_id=eos)
