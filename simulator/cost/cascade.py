"""The cascade drafter (CS Drafting, `drafter: {kind: cascade}`): its pass pricer and its build.

A step's drafting is every stage in order: stage s proposes `tokens` positions, either autoregressively
(`tokens` one-token passes of its model) or as a vertical cascade (E[passes] = theory.cascade
.expected_passes(tokens, inner_alpha, inner_gamma) passes of its model, each verifying inner_gamma + 1
tokens per request, with Ouroboros' reused verification candidates mixed in at `reuse_hit_rate`; a
statistical inner drafter costs nothing, an `inner_model` inner_gamma one-token
passes per stage pass); a stage without a model (max-gram) costs nothing; a stage with `kv_budget`
attends to at most that many cached tokens per request (simulator.cost.sparse_kv), and `self` is the
target on its own GPUs (TriForce: a small model drafts for the sparse-KV target). `CascadeCost` prices all of it as *one* call of the pass-pricer protocol (the step cost
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

from models.spec import ModelSpec, kv_cache_dtype
from models.step import Parallelism
from simulator.cost.step_cost import ForwardCost, zero_cost


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
        return sum((s.cost.dense(num_tokens, logits_tokens) for s in self.stages), zero_cost())

    def prefill_attention(self, tokens: int, seqs: int, attn_pairs: int) -> np.ndarray:
        return sum((s.cost.prefill_attention(tokens, seqs, attn_pairs) for s in self.stages), zero_cost())

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        return sum((s.passes * s.cost.exact_decode(seqs, s.q * q, context_sum) for s in self.stages), zero_cost())

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


def _stage_model(name: str, field: str, target: ModelSpec, par: Parallelism, tp: int):
    """(spec, parallelism, on the target's own weights) of a stage's model name (`self`: the target)."""
    from models import get_model
    from models.spec import validate_parallelism
    from simulator.errors import ScenarioError
    if name == "self":
        return target, par, True
    try:
        spec = get_model(name)
    except ValueError as exc:
        raise ScenarioError(field, str(exc)) from None
    draft_par = Parallelism(tp, 1)
    if tp > par.gpus:
        raise ScenarioError(field.rsplit(".", 1)[0] + ".tp", f"{tp} exceeds the replica's {par.gpus} GPUs")
    try:
        validate_parallelism(spec, draft_par)
    except ValueError as exc:
        raise ScenarioError(field.rsplit(".", 1)[0] + ".tp", str(exc)) from None
    return spec, draft_par, False


def build_cascade(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str | None = None):
    """The DrafterBuild of a `cascade` drafter section: per stage, its model's passes (E[passes] for a
    vertical cascade) and, with an `inner_model`, that model's inner_gamma one-token passes per stage pass."""
    from simulator.cost.drafters import DrafterBuild
    from simulator.cost.sparse_kv import SparseKVForwardCost
    from theory.cascade import expected_passes

    stages, weights, kv, biggest = [], 0.0, 0.0, None
    for i, st in enumerate(d.stages):
        if st.model is None:
            continue
        spec, spar, own = _stage_model(st.model, f"drafter.stages[{i}].model", target, par, st.tp)
        cost = (SparseKVForwardCost(spec, spar, latency, dtype, kv_dtype, kv_budget_tokens=st.kv_budget)
                if st.kv_budget is not None else ForwardCost(spec, spar, latency, dtype, kv_dtype))
        passes = float(st.tokens) if not st.inner_gamma else \
            expected_passes(st.tokens, st.inner_alpha, st.inner_gamma, st.reuse_hit_rate, st.reuse_alpha or 0.0)
        stages.append(CascadeStage(cost, passes, st.inner_gamma + 1))
        models = [(spec, spar, own)]
        if st.inner_model is not None:
            ispec, ipar, iown = _stage_model(st.inner_model, f"drafter.stages[{i}].inner_model", target, par, 1)
            inner_passes = passes * (1.0 - st.reuse_hit_rate) * st.inner_gamma   # a reused candidate needs none
            stages.append(CascadeStage(ForwardCost(ispec, ipar, latency, dtype, kv_dtype), inner_passes, 1))
            models.append((ispec, ipar, iown))
        for m, mpar, on_target in models:
            if on_target:
                continue  # the target's own weights and KV (a sparse-KV self-draft reads the target's cache)
            weights += m.weight_bytes(dtype) / mpar.gpus
            kv += m.kv_bytes_per_token_per_gpu(mpar, kv_cache_dtype(dtype, kv_dtype))
            if biggest is None or m.param_count() > biggest.param_count():
                biggest = m
    return DrafterBuild(CascadeCost(tuple(stages)), 1, weights, kv, spec=biggest, colocated_model=biggest is not None,
                        fixed_chain="a cascade drafter runs its configured stages as one chain every step")
