"""Drafting with a model whose vocabulary differs from the target's: token-level intersection (TLI).

Timor et al., "Accelerating LLM Inference with Lossless Speculative Decoding Algorithms for Heterogeneous
Vocabularies", ICML 2025 (PMLR 267:59598-59620; arXiv:2502.05202). TLI keeps the drafter's distribution
only on the tokens that exist in both vocabularies, renormalizes it there, and maps those tokens to the
target's ids; standard speculative sampling (Leviathan et al.) then verifies them, so the method is
lossless and the per-token acceptance at a context is β = Σ_v min(p(v), q′(v)) with q′ the restricted,
renormalized drafter distribution. Greedy TLI proposes argmax q′.

Here two tokens are "the same" when they stand for the same bytes and are both added tokens or both
ordinary tokens (`build_vocab_map`); `<|im_start|>` and `<|im_end|>` therefore map between Qwen2.5 and
SmolLM2. When the target's token has no drafter counterpart, no draft can be accepted there.

How the drafter reads the target's text (an implementation choice, named): at each step the target's
tokens so far are decoded to bytes and re-tokenized by the drafter's tokenizer (`drafter_ids`); the drafter
reuses its KV cache for the longest common prefix with what it read before. Within one step it drafts
autoregressively in its own ids. The one-pass measurement (`tli_logits`) instead gives every target
position the drafter's view of the re-tokenized text up to there. The two agree on the first draft token
of every step (exactly), but the k-th draft token (k ≥ 2) is conditioned on the drafter's own tokens of
the k − 1 drafts, which can differ from the re-tokenization of the same bytes (a different segmentation of
the same text): that is the approximation of the one-pass view for γ ≥ 2, measured against a real loop in
`verify_hetero`. Also ignored: context positions where the target's text ends inside a UTF-8 character
are fed to the drafter as raw single-byte tokens (or its unknown token when it lacks the byte).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from models.torch_impl.qwen2 import Qwen2Model
from models.torch_impl.tokenizer import BPETokenizer
from profiles.acceptance.drafters import ModelDrafter


@dataclass(frozen=True)
class VocabMap:
    """drafter_to_target[d] = the target id with the same bytes as drafter token d, or −1."""
    drafter_to_target: np.ndarray
    target_vocab_size: int

    def __post_init__(self) -> None:
        mapped = self.drafter_to_target[self.drafter_to_target >= 0]
        if len(np.unique(mapped)) != len(mapped):
            raise ValueError("VocabMap must be one-to-one on the shared tokens")
        if mapped.size and mapped.max() >= self.target_vocab_size:
            raise ValueError("VocabMap maps outside the target vocabulary")

    @property
    def shared(self) -> int:
        return int((self.drafter_to_target >= 0).sum())

    def target_has(self) -> np.ndarray:
        """Boolean [target vocab]: the target tokens a TLI drafter can propose."""
        out = np.zeros(self.target_vocab_size, dtype=bool)
        out[self.drafter_to_target[self.drafter_to_target >= 0]] = True
        return out


def _key(tok: BPETokenizer, token_id: int) -> tuple[bool, bytes]:
    return tok.tokens[token_id] in tok.special_ids, tok.token_bytes(token_id)


def build_vocab_map(drafter: BPETokenizer, target: BPETokenizer) -> VocabMap:
    """Map each drafter token to the target token with the same (added-token flag, bytes); when several
    target tokens share a key, the lowest id is used."""
    index: dict[tuple[bool, bytes], int] = {}
    for i in range(target.vocab_size):
        index.setdefault(_key(target, i), i)
    table = np.array([index.get(_key(drafter, i), -1) for i in range(drafter.vocab_size)], dtype=np.int64)
    return VocabMap(table, target.vocab_size)


def drafter_ids(drafter: BPETokenizer, data: bytes) -> list[int]:
    """The drafter's tokens for the target's text `data` (bytes): runs of valid UTF-8 are encoded as text
    (added tokens matched literally), each byte outside them becomes that byte's token (or unknown)."""
    text = data.decode("utf-8", errors="surrogateescape")
    out: list[int] = []
    start = 0
    for i, ch in enumerate(text):
        if "\udc80" <= ch <= "\udcff":
            out += drafter.encode(text[start:i]) if i > start else []
            out.append(drafter.byte_id(ord(ch) - 0xDC00))
            start = i + 1
    if start < len(text):
        out += drafter.encode(text[start:])
    return out


def restrict(drafter_logits: torch.Tensor, vmap: VocabMap) -> torch.Tensor:
    """Drafter logits [n, drafter vocab] → logits in the target's id space [n, target vocab], −inf on
    target tokens the drafter lacks: softmax of the result (at any temperature) is TLI's q′."""
    table = torch.from_numpy(vmap.drafter_to_target)
    keep = table >= 0
    out = torch.full((drafter_logits.shape[0], vmap.target_vocab_size), float("-inf"), dtype=drafter_logits.dtype)
    out[:, table[keep]] = drafter_logits[:, keep]
    return out


class TLIDrafter:
    """A drafter model behind TLI for a real draft-then-verify loop: `propose(target context, count)`
    re-tokenizes the target's text, then drafts `count` tokens greedily over the shared tokens in its own
    ids and returns their target ids."""

    def __init__(self, model: Qwen2Model, drafter_tok: BPETokenizer, target_tok: BPETokenizer, vmap: VocabMap,
                 max_context: int):
        self.reader = ModelDrafter(model, max_context)
        self.drafter_tok, self.target_tok, self.vmap = drafter_tok, target_tok, vmap
        self.allowed = torch.from_numpy(vmap.drafter_to_target >= 0)

    def _best(self, logits: torch.Tensor) -> int:
        return int(torch.argmax(logits.masked_fill(~self.allowed, float("-inf"))))

    def propose(self, context: Sequence[int], count: int) -> list[int]:
        if count <= 0:
            return []
        ids = drafter_ids(self.drafter_tok, self.target_tok.decode_bytes(context))
        drafted = [self._best(self.reader.read(ids))]
        while len(drafted) < count:
            drafted.append(self._best(self.reader.extend(drafted[-1])))
        return [int(self.vmap.drafter_to_target[d]) for d in drafted]


def tli_logits(model: Qwen2Model, drafter_tok: BPETokenizer, target_tok: BPETokenizer, vmap: VocabMap,
               prompt_ids: Sequence[int], generated: Sequence[int]) -> torch.Tensor:
    """The one-pass view: for each generated position i, the drafter's logits (target id space,
    `restrict`) after reading the re-tokenized target text prompt + generated[:i]; [n, target vocab]."""
    full = list(prompt_ids) + list(generated)
    contexts = [drafter_ids(drafter_tok, target_tok.decode_bytes(full[:len(prompt_ids) + i]))
                for i in range(len(generated))]
    reader = ModelDrafter(model, max(len(c) for c in contexts) + 1)
    rows = [reader.read(c) for c in contexts]
    return restrict(torch.stack(rows), vmap)
