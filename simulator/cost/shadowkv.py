"""ShadowKV (Sun et al. 2024, arXiv 2410.21465): the target's pre-RoPE keys kept on the GPU as a rank-r factor,
values offloaded to host memory, and each decode step attending to a sparse budget of tokens chosen by
chunk landmarks (`kv_cache: {kind: shadowkv, rank, sparse_budget, chunk_tokens}`).

Memory: what the GPU keeps per token is the layout's (simulator.core.kv.shadowkv, which sizes the KV pool).

Decode pass (`ShadowKVForwardCost.exact_decode`), per layer, on top of the dense ops:
- landmark scoring: priced as decode attention over Σ context / chunk keys (the kernel reads no values
  for landmarks, and the queries' own q(q+1)/2 causal pairs are counted again: an over-estimate of at
  most the landmark bytes);
- sparse attention over min(Σ context, requests × budget) tokens (as simulator.cost.sparse_kv: exact when
  every context exceeds the budget or none does);
- key reconstruction (a GEMM of the selected tokens' r-dim factors by the r × D/tp right factor) overlapped
  with the value fetch of the selected tokens over the host link (ShadowKV's two CUDA streams): the pass
  pays max(reconstruction, fetch). ShadowKV's cache of recently fetched chunks (the paper reports ~60 %
  less fetching and reconstruction) is not modelled: fetch and reconstruction are upper bounds.
Prefill: the values are written to the host over the same link (serial with the pass: a bound); the SVD of
the keys is not priced. Draft models, expert parallelism and the other target pricers are not combined
with it, nor are MLA models (their latent cache is not split into keys and values): refused in the factory.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.ops import GEMM, Op
from models.spec import ModelSpec, dtype_bytes, kv_cache_dtype, kv_heads_per_gpu
from models.step import Parallelism
from simulator.cost.step_cost import SECONDS, ForwardCost, _price, zero_cost


def kv_dim_per_gpu(spec: ModelSpec, par: Parallelism) -> int:
    """Key (or value) elements of one token in one layer on one GPU: kv heads per GPU × head dim."""
    return kv_heads_per_gpu(spec, par.tp) * spec.head_dim


@dataclass
class ShadowKVForwardCost(ForwardCost):
    """Target passes under ShadowKV's KV layout (module docstring)."""

    rank: int = 160
    sparse_budget: int = 2048
    chunk_tokens: int = 8
    link_bandwidth_bytes_per_s: float = 0.0
    link_latency_s: float = 0.0

    def _layers(self) -> int:
        return -(-self.spec.num_layers // self.parallelism.pp)

    def selected_tokens(self, seqs: int, context_sum: int) -> int:
        return min(int(context_sum), int(seqs) * self.sparse_budget)

    def landmark_scoring(self, seqs: int, q: int, context_sum: int) -> np.ndarray:
        landmarks = int(context_sum) // self.chunk_tokens
        return super().exact_decode(seqs, q, landmarks) - self.dense(seqs * q, seqs * q)

    def rebuild_and_fetch(self, seqs: int, context_sum: int) -> tuple[np.ndarray, float]:
        """(seconds, FLOPs, bytes) of the key reconstruction and the seconds of the value fetch."""
        m, d, b = self.selected_tokens(seqs, context_sum), kv_dim_per_gpu(self.spec, self.parallelism), \
            dtype_bytes(kv_cache_dtype(self.dtype, self.kv_dtype))
        layers = self._layers()
        if m == 0:
            return zero_cost(), 0.0
        rebuild = Op.make(GEMM, "shadowkv_key_rebuild", 2.0 * m * d * self.rank,
                          b * (m * self.rank + m * d + seqs * self.rank * d), layers, m=m, n=d, k=self.rank)
        fetch_s = layers * (self.link_latency_s + m * d * b / self.link_bandwidth_bytes_per_s)
        return _price(self.latency, [rebuild]), fetch_s

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        sparse = super().exact_decode(seqs, q, self.selected_tokens(seqs, context_sum), tree)
        rebuild, fetch_s = self.rebuild_and_fetch(seqs, context_sum)
        out = sparse + self.landmark_scoring(seqs, q, context_sum) + rebuild
        out[SECONDS] += max(fetch_s - rebuild[SECONDS], 0.0)   # the fetch overlaps the reconstruction
        return out

    def prefill_attention(self, tokens: int, seqs: int, attn_pairs: int) -> np.ndarray:
        out = super().prefill_attention(tokens, seqs, attn_pairs)
        if tokens:
            nbytes = tokens * kv_dim_per_gpu(self.spec, self.parallelism) * dtype_bytes(kv_cache_dtype(self.dtype, self.kv_dtype))
            out[SECONDS] += self._layers() * (self.link_latency_s + nbytes / self.link_bandwidth_bytes_per_s)
        return out
