"""EasySpec's layer-parallel drafting (Wu et al., NeurIPS 2025): `drafter: {kind: draft_model,
layer_parallel: k}`.

A draft model that is best run at tp = 1 leaves the other GPUs of a tensor-parallel replica idle while it
drafts. EasySpec breaks the dependency between consecutive layers: k consecutive layers take the same
("fuzzy") input and run at once on k GPUs, so a draft pass takes ceil(L / k) layer times; after each
verification, one ordinary (sequential) pass of the draft over the step's γ + 1 tokens calibrates its KV
cache. Priced as one composite drafter (simulator.cost.cascade.CascadeCost): γ passes of a
ceil(L/k)-layer copy of the draft at tp = 1, plus one calibration pass of the whole draft over γ + 1
tokens per request. The draft's weights and KV are spread over the k GPUs (1/k per GPU).

Approximations, named here: the exchange of hidden states between the k GPUs after each layer group
(an all-gather of h values per token over NVLink, microseconds) is not priced; the acceptance drop of
fuzzy drafting (EasySpec reports at most 7 %) is the acceptance section's to state; chains only.
"""
from __future__ import annotations

import math

from models.spec import ModelSpec
from models.step import Parallelism
from simulator.cost.cascade import CascadeCost, CascadeStage
from simulator.cost.step_cost import ForwardCost


def layer_parallel_cost(spec: ModelSpec, k: int, gamma: int, latency, dtype: str, kv_dtype: str | None = None
                        ) -> CascadeCost:
    groups = math.ceil(spec.num_layers / k)
    fuzzy = spec.with_layers(groups, f"{groups} layer groups")
    one = Parallelism(1, 1)
    return CascadeCost((CascadeStage(ForwardCost(fuzzy, one, latency, dtype, kv_dtype), float(gamma), 1),
                        CascadeStage(ForwardCost(spec, one, latency, dtype, kv_dtype), 1.0, gamma + 1)))
