"""Forward passes priced by a real engine's own measured passes (`cluster.latency.source: engine_profile`).

`MeasuredPassCost` is a pass pricer (the ForwardCost interface) whose seconds come from a
profiles.engine_time.engine_profile.PassModel — F(tokens) + a·attention pairs for the forward pass and
G(rows) for the logits — and whose FLOPs and bytes come from the op graph as usual (`inner`, a plain
ForwardCost; its seconds are not used). Decode passes are linear in Σ context, so they are priced exactly
(no context grid). Shared-prefix attention is not priced from a pass profile (the factory refuses it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiles.engine_time.engine_profile import PassModel
from simulator.cost.step_cost import SECONDS, ForwardCost


@dataclass
class MeasuredPassCost:
    inner: ForwardCost
    passes: PassModel

    def stage_gpus(self) -> float:
        return self.inner.stage_gpus()

    def gpu_layers(self) -> int:
        return self.inner.gpu_layers()

    def passes_per_call(self) -> int:
        return 1

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        out = self.inner.dense(num_tokens, logits_tokens).copy()
        out[0] = 0.0
        if num_tokens:
            out[0] = float(self.passes.forward_s(num_tokens, 0, 0)[0])
        if logits_tokens:
            out[SECONDS] += float(self.passes.logits(logits_tokens)[0])
        return out

    def prefill_attention(self, tokens: int, seqs: int, attn_pairs: int) -> np.ndarray:
        out = self.inner.prefill_attention(tokens, seqs, attn_pairs).copy()
        out[0] = self.passes.prefill_pair_s * attn_pairs
        return out

    @staticmethod
    def _decode_pairs(seqs, q: int, context_sums):
        """Causal (query, key) pairs of q query tokens per sequence after its cached context."""
        return q * np.asarray(context_sums, dtype=np.float64) + np.asarray(seqs) * (q * (q + 1) // 2)

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        out = self.inner.exact_decode(seqs, q, context_sum, tree).copy()
        out[0] = self.dense(seqs * q, seqs * q)[0] + self.passes.decode_pair_s * float(
            self._decode_pairs(seqs, q, context_sum))
        return out

    def decode_forward(self, seqs, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        out = self.inner.decode_forward(seqs, q, context_sums, tree).copy()
        context_sums = np.asarray(context_sums)
        seqs_arr = np.broadcast_to(np.asarray(seqs), context_sums.shape)
        tokens = seqs_arr * q
        out[:, SECONDS] = self.passes.forward_s(tokens, 0, self._decode_pairs(seqs_arr, q, context_sums)) \
            + self.passes.logits(tokens)
        return out

    def decode_attention(self, seqs, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        out = self.inner.decode_attention(seqs, q, context_sums, tree).copy()
        seqs_arr = np.broadcast_to(np.asarray(seqs), np.asarray(context_sums).shape)
        out[:, SECONDS] = self.passes.decode_pair_s * self._decode_pairs(seqs_arr, q, context_sums)
        return out
