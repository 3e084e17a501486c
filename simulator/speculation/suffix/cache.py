"""The suffix-decoding cache and proposer as vLLM runs them: a suffix tree per active request over its
prompt and output, one global tree over the outputs of cached requests, and the per-step proposal.

Sources (read 2026-11-26; behaviour restated, no code copied):
- ArcticInference `arctic_inference/suffix_decoding/cache.py` (`SuffixDecodingCache`): `start_request`
  builds the request's local tree from its prompt and, unless `max_cached_requests` is 0, gives the request
  a sequence in the global tree, evicting the oldest cached responses first (FIFO) while more than
  `max_cached_requests` are cached (never the one just added; −1 = no limit); `add_active_response`
  appends tokens to the local tree and to the request's global sequence (so a request's own output so far
  is in the global tree too); `speculate` truncates the context to the last `max_tree_depth` tokens,
  speculates in both trees and returns the local draft when its score is ≥ the global one's.
- vLLM `vllm/v1/spec_decode/suffix_decoding.py` (`SuffixDecodingProposer.propose`): on a request's first
  decode step it starts the request with its prompt, then every step adds the newly sampled tokens and
  speculates on the last `suffix_decoding_max_tree_depth` tokens with
  max_spec_tokens = min(num_speculative_tokens, max_model_len − num_tokens − 1), the configured
  max_spec_factor and min_token_prob, and ArcticInference's default max_spec_offset = 0 (vLLM passes no
  offset); requests that left the batch are stopped.
- vLLM `vllm/config/speculative.py` defaults: suffix_decoding_max_tree_depth = 24,
  suffix_decoding_max_cached_requests = 10000, suffix_decoding_max_spec_factor = 1.0,
  suffix_decoding_min_token_prob = 0.1, and num_speculative_tokens defaults to max_tree_depth for suffix.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from simulator.speculation.suffix.tree import Draft, SuffixTree


@dataclass(frozen=True)
class SuffixParams:
    """The proposer's settings (vLLM's speculative_config names in the comments)."""

    num_speculative_tokens: int = 24    # num_speculative_tokens (suffix default: max_tree_depth)
    max_tree_depth: int = 24            # suffix_decoding_max_tree_depth
    max_cached_requests: int = 10000    # suffix_decoding_max_cached_requests (0: no global tree, -1: no limit)
    max_spec_factor: float = 1.0        # suffix_decoding_max_spec_factor
    max_spec_offset: float = 0.0        # ArcticInference's max_spec_offset (vLLM leaves it at 0)
    min_token_prob: float = 0.1         # suffix_decoding_min_token_prob


class SuffixCache:
    """Local trees of active requests and the global tree of cached responses (module docstring)."""

    def __init__(self, max_tree_depth: int = 24, max_cached_requests: int = 10000):
        self.max_tree_depth, self.max_cached_requests = max_tree_depth, max_cached_requests
        self.global_tree = SuffixTree(max_tree_depth)
        self.local: dict = {}
        self.cached: OrderedDict = OrderedDict()   # request id -> global sequence id, oldest first
        self._next_seq = 0

    def start_request(self, req, prompt) -> None:
        if req in self.local:
            raise ValueError(f"request {req!r} is already active")
        tree = SuffixTree(self.max_tree_depth)
        tree.extend(0, prompt)
        self.local[req] = tree
        if self.max_cached_requests == 0:
            return
        if req in self.cached:
            self.evict(req)
        seq = self._next_seq
        self._next_seq += 1
        self.cached[req] = seq
        if self.max_cached_requests > 0:
            while len(self.cached) > self.max_cached_requests:
                oldest = next(r for r in self.cached if r != req)
                self.evict(oldest)

    def evict(self, req) -> None:
        seq = self.cached.pop(req)
        if seq in self.global_tree.seqs:
            self.global_tree.remove(seq)

    def stop_request(self, req) -> None:
        del self.local[req]

    def add_active_response(self, req, tokens) -> None:
        self.local[req].extend(0, tokens)
        if req in self.cached:
            self.global_tree.extend(self.cached[req], tokens)

    def speculate(self, req, context, max_spec_tokens: int, max_spec_factor: float = 1.0,
                  max_spec_offset: float = 0.0, min_token_prob: float = 0.1) -> Draft:
        context = list(context)[-self.max_tree_depth:]
        args = (max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob)
        local = self.local[req].speculate(context, *args)
        other = self.global_tree.speculate(context, *args)
        return local if local.score >= other.score else other


class SuffixProposer:
    """vLLM's per-step use of the cache for one engine (module docstring): `start` on a request's first
    step, `propose` after each step's sampled tokens."""

    def __init__(self, params: SuffixParams):
        self.params = params
        self.cache = SuffixCache(params.max_tree_depth, params.max_cached_requests)
        self.context: dict = {}

    def start(self, req, prompt, first_tokens) -> Draft:
        """Start `req` (its prompt) with the token(s) its prefill sampled; the first draft."""
        self.cache.start_request(req, prompt)
        self.context[req] = list(prompt)
        return self.propose(req, first_tokens)

    def propose(self, req, sampled) -> Draft:
        """Add this step's sampled tokens of `req` and draft the next ones."""
        sampled = [int(t) for t in sampled]
        self.cache.add_active_response(req, sampled)
        ctx = self.context[req]
        ctx.extend(sampled)
        p = self.params
        return self.cache.speculate(req, ctx[-p.max_tree_depth:], p.num_speculative_tokens, p.max_spec_factor,
                                    p.max_spec_offset, p.min_token_prob)

    def stop(self, req) -> None:
        self.cache.stop_request(req)
        del self.context[req]
