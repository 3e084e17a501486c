"""The drafters measured, shared by the trace measurement and the real draft-then-verify loop.

- model drafter: a separate decoder with its own KV cache — the small draft model, or the target run with
  a set of layers skipped (self-speculation). The layer-skip drafter here keeps its *own* cache, computed
  with the same skipped layers; Draft & Verify / SWIFT instead reuse the target's cache rows for the
  verified prefix. With its own cache the drafter's prediction at a position depends only on the tokens
  before it, which is what makes the one-pass shortcut exact; the shared-cache variant is not measured.
- prompt lookup (n-gram): the last n tokens of the context (n = max_n … min_n, longest first) are
  searched for earlier in the context; at the earliest occurrence (as in Hugging Face's prompt-lookup
  decoding and vLLM's n-gram proposer), the tokens that followed it are proposed (at most
  `max_proposal`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from models.torch_impl.qwen2 import Qwen2Model


@dataclass(frozen=True)
class NgramSettings:
    max_n: int = 3
    min_n: int = 1
    max_proposal: int = 10

    def __post_init__(self) -> None:
        if not 1 <= self.min_n <= self.max_n or self.max_proposal < 1:
            raise ValueError(f"NgramSettings needs 1 <= min_n <= max_n and max_proposal >= 1, got {self}")


def ngram_propose(context: Sequence[int], settings: NgramSettings) -> list[int]:
    """Prompt-lookup proposal for the token after `context` (see the module docstring)."""
    ctx = np.asarray(context, dtype=np.int64)
    n_ctx = len(ctx)
    for n in range(min(settings.max_n, n_ctx - 1), settings.min_n - 1, -1):
        suffix = ctx[n_ctx - n:]
        # windows ending strictly before the suffix's own occurrence: starts 0 … n_ctx - n - 1
        windows = np.lib.stride_tricks.sliding_window_view(ctx[:n_ctx - 1], n)
        matches = np.flatnonzero((windows == suffix).all(axis=1))
        if len(matches):
            follow = int(matches[0]) + n
            return ctx[follow:follow + settings.max_proposal].tolist()
    return []


def ngram_columns(prompt: Sequence[int], generated: Sequence[int], settings: NgramSettings) -> tuple[np.ndarray, np.ndarray]:
    """(proposal_len, match_len) at each generated position i (context = prompt + generated[:i])."""
    text = list(prompt) + list(generated)
    n_prompt = len(prompt)
    proposal_len = np.zeros(len(generated), dtype=np.int32)
    match_len = np.zeros(len(generated), dtype=np.int32)
    for i in range(len(generated)):
        proposal = ngram_propose(text[:n_prompt + i], settings)
        proposal_len[i] = len(proposal)
        m = 0
        while m < len(proposal) and i + m < len(generated) and proposal[m] == generated[i + m]:
            m += 1
        match_len[i] = m
    return proposal_len, match_len


class ModelDrafter:
    """Greedy drafting with a decoder (optionally skipping layers) that keeps its own 1-slot KV cache and
    catches up on context tokens it has not seen yet before each proposal."""

    def __init__(self, model: Qwen2Model, max_context: int, skip_layers: Sequence[int] = ()):
        self.model, self.skip = model, tuple(skip_layers)
        self.cache = model.new_cache(1, max_context)
        self.seen: list[int] = []

    def read(self, context: Sequence[int]) -> torch.Tensor:
        """Logits [vocab] for the token after `context`, computing only what the cache lacks (rows after
        the longest common prefix with what was read before are recomputed)."""
        common = 0
        for a, b in zip(self.seen, context):
            if a != b:
                break
            common += 1
        common = min(common, len(context) - 1)          # always feed at least the last context token
        self.cache.lengths[0] = common
        fresh = torch.tensor(list(context[common:]))
        logits = self.model.prefill(fresh, self.cache, 0, skip_layers=self.skip, last_only=True)[-1]
        self.seen = list(context)
        return logits

    def extend(self, token: int) -> torch.Tensor:
        """Logits after appending `token` to what was read."""
        logits = self.model.decode(torch.tensor([[token]]), self.cache, [0], skip_layers=self.skip)[0, -1]
        self.seen.append(token)
        return logits

    def propose(self, context: Sequence[int], count: int) -> list[int]:
        if count <= 0:
            return []
        proposal = [int(torch.argmax(self.read(context)))]
        while len(proposal) < count:
            proposal.append(int(torch.argmax(self.extend(proposal[-1]))))
        return proposal
