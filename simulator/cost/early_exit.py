"""Early exit of the target (SpecEE, CALM): `early_exit: {exit_layers, exit_probs}` — a decoded token leaves
the model after exit_layers[i] layers with probability exit_probs[i] (else after all L), and a batched pass
runs until its deepest token has exited (theory.early_exit.expected_max_layers over the pass's tokens).

`EarlyExitForwardCost.exact_decode` prices a decode-only pass as the one-layer pass plus E[max layers] − 1
times one layer's cost (the difference of the full and one-layer passes over L − 1: exact for a dense model
whose layers are identical — MoE and pipeline-parallel targets are refused). The expectation is priced, not
a draw per step. Approximations, named here: the exit predictor (SpecEE's small MLP on the draft tokens'
logits; CALM's confidence) is not priced; the K/V of the layers a token skipped, which later tokens attend
to, is not computed (CALM copies the exit state into them; their projections would add cost); a step with
prompt chunks runs every layer (its prefill needs them), so early exit only shortens decode-only steps; the
exit law is an input, constant over the run (SpecEE's online predictor placement is not modelled), and the
output's quality is not modelled (early exit is lossy). Not combined with drafters.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.cost.step_cost import ForwardCost
from theory.early_exit import expected_max_layers


@dataclass
class EarlyExitForwardCost(ForwardCost):
    """Target passes whose decode-only steps stop at the batch's deepest exit (module docstring)."""

    exit_layers: tuple[int, ...] = ()
    exit_probs: tuple[float, ...] = ()
    _one_layer: ForwardCost | None = field(default=None, repr=False)
    _serial: ForwardCost | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        one = self.spec.with_layers(1, "1 layer")
        self._one_layer = ForwardCost(one, self.parallelism, self.latency, self.dtype, self.kv_dtype)
        self._serial = ForwardCost(self.spec, self.parallelism, self.latency, self.dtype, self.kv_dtype)

    def expected_layers(self, tokens: int) -> float:
        return expected_max_layers(self.exit_layers, self.exit_probs, self.spec.num_layers, max(1, int(tokens)))

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        full = super().exact_decode(seqs, q, context_sum, tree)
        if seqs == 0:
            return full
        one = self._one_layer.exact_decode(seqs, q, context_sum, tree)
        per_layer = (full - one) / (self.spec.num_layers - 1)
        return one + per_layer * (self.expected_layers(seqs * q) - 1.0)

    def decode_attention(self, seqs: int, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        """Decode attention of a step with prompt chunks: every layer runs (the prefill needs them)."""
        return self._serial.decode_attention(seqs, q, context_sums, tree)
