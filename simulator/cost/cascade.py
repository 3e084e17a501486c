"""The cascade drafter (CS Drafting, `drafter: {kind: cascade}`): its pass pricer and its build.

A step's drafting is every stage in order: stage s proposes `tokens` positions, either autoregressively
(`tokens` one-token passes of its model) or as a vertical cascade (E[passes] = theory.cascade
.expected_passes(tokens, inner_alpha, inner_gamma) passes of its model, each verifying inner_gamma + 1
tokens per request; the statistical inner drafter costs nothing); a stage without a model (max-gram)
costs nothing. `CascadeCost` prices all of it as *one* call of the pass-pricer protocol (the step cost
sees a one-pass drafter, as for parallel heads), and tells the engine-time model its real pass count
(`passes_per_call`) and layers (`gpu_layers`).

Approximations, named here: expected passes are priced (fractional), not sampled per step — the step time
is the mean drafting time (exact in expectation; a step's real drafting time varies with the inner
acceptance); all of a step's stage passes are priced at the step's starting context (context grows by at
most γ tokens per request within a step); prompt chunks are ingested by every stage model in the step's
first pass. Every stage model keeps its own KV cache and weights on the target's GPUs (colocated).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.spec import ModelSpec
from models.step import Parallelism
from simulator.cost.step_cost import ForwardCost


@dataclass(frozen=True)
class CascadeStage:
    cost: ForwardCost
    passes: float   # expected passes per step
    q: int          # tokens per request per pass (inner_gamma + 1, or 1)


@dataclass
class CascadeCost:
    """All of a cascade's stage passes of one step, as one call of the pass-pricer protocol."""

    stages: tuple[CascadeStage, ...]

    def stage_gpus(self) -> float:
        return self.stages[0].cost.stage_gpus() if self.stages else 1.0

    def gpu_layers(self) -> int:
        """Layers of all the stage passes of a step (the engine's per-layer launch cost)."""
        return int(math.ceil(sum(s.passes * s.cost.gpu_layers() for s in self.stages) - 1e-9))

    def passes_per_call(self) -> int:
        return max(1, int(math.ceil(sum(s.passes for s in self.stages) - 1e-9)))

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        return sum((s.cost.dense(num_tokens, logits_tokens) for s in self.stages), np.zeros(3))

    def prefill_attention(self, tokens: int, seqs: int, attn_pairs: int) -> np.ndarray:
        return sum((s.cost.prefill_attention(tokens, seqs, attn_pairs) for s in self.stages), np.zeros(3))

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        return sum((s.passes * s.cost.exact_decode(seqs, s.q * q, context_sum) for s in self.stages), np.zeros(3))

    def decode_forward(self, seqs, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        out = np.zeros((len(np.atleast_1d(context_sums)), 3))
        for s in self.stages:
            out = out + s.passes * s.cost.decode_forward(seqs, s.q * q, context_sums)
        return out

    def decode_attention(self, seqs, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        """Everything of the decode passes beyond `dense(seqs·q, seqs·q)` (what a mixed step's first-pass
        dense call already priced)."""
        rest = self.decode_forward(seqs, q, context_sums)
        b = int(np.atleast_1d(seqs)[0]) * q
        return rest - self.dense(b, b)


def build_cascade(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str):
    """The DrafterBuild of a `cascade` drafter section."""
    from models import get_model
    from models.spec import validate_parallelism
    from simulator.cost.drafters import DrafterBuild
    from simulator.errors import ScenarioError
    from theory.cascade import expected_passes

    stages, weights, kv, biggest = [], 0.0, 0.0, None
    for i, st in enumerate(d.stages):
        if st.model is None:
            continue
        try:
            spec = get_model(st.model)
        except ValueError as exc:
            raise ScenarioError(f"drafter.stages[{i}].model", str(exc)) from None
        draft_par = Parallelism(st.tp, 1)
        if st.tp > par.gpus:
            raise ScenarioError(f"drafter.stages[{i}].tp", f"{st.tp} exceeds the replica's {par.gpus} GPUs")
        try:
            validate_parallelism(spec, draft_par)
        except ValueError as exc:
            raise ScenarioError(f"drafter.stages[{i}].tp", str(exc)) from None
        passes = float(st.tokens) if not st.inner_gamma else expected_passes(st.tokens, st.inner_alpha, st.inner_gamma)
        stages.append(CascadeStage(ForwardCost(spec, draft_par, latency, dtype), passes, st.inner_gamma + 1))
        weights += spec.weight_bytes(dtype) / draft_par.gpus
        kv += spec.kv_bytes_per_token_per_gpu(draft_par, dtype)
        if biggest is None or spec.param_count() > biggest.param_count():
            biggest = spec
    return DrafterBuild(CascadeCost(tuple(stages)), 1, weights, kv, spec=biggest, colocated_model=biggest is not None)
