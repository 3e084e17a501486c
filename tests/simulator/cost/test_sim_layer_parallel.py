"""EasySpec's layer-parallel drafting: a step's drafting is γ passes of ceil(L/k) layers plus one
calibration pass of the whole draft over γ + 1 tokens, priced directly; weights and KV spread over k GPUs."""
from __future__ import annotations

import dataclasses
import math

import pytest

import simulator
from models import get_model
from models.step import Parallelism
from sim_helpers import replica_kind, scenario
from simulator.cost.step_cost import ForwardCost
from simulator.errors import ScenarioError

BASE = dict(cluster={"model": "llama-3-70b", "parallelism": {"tp": 4}},
            drafter={"kind": "draft_model", "model": "llama-3-8b", "gamma": 4, "layer_parallel": 4},
            acceptance={"kind": "constant", "alpha": 0.75})


def _kind(data):
    return replica_kind(data)


@pytest.mark.parametrize("k", [2, 4])
def test_drafting_is_fuzzy_passes_plus_one_calibration_pass(k):
    kind = _kind(scenario(**{**BASE, "drafter": {**BASE["drafter"], "layer_parallel": k}}))
    draft = get_model("llama-3-8b")
    groups = math.ceil(draft.num_layers / k)
    fuzzy = ForwardCost(dataclasses.replace(draft, name="g", num_layers=groups), Parallelism(1, 1), kind.latency, "bf16")
    full = ForwardCost(draft, Parallelism(1, 1), kind.latency, "bf16")
    ctx = 8 * 600
    want = 4 * fuzzy.exact_decode(8, 1, ctx)[0] + full.exact_decode(8, 5, ctx)[0]
    assert kind.cost.exact_decode_step(8, ctx)[0] == pytest.approx(want, rel=1e-12)
    assert kind.drafter.weight_bytes_per_gpu == pytest.approx(draft.weight_bytes("bf16") / k)


def test_layer_parallel_drafts_faster_and_frees_memory():
    lp, seq = _kind(scenario(**BASE)), _kind(scenario(**{**BASE, "drafter": {**BASE["drafter"], "layer_parallel": 1}}))
    assert lp.cost.exact_decode_step(4, 4 * 500)[0] < seq.cost.exact_decode_step(4, 4 * 500)[0]
    assert lp.kv_tokens > seq.kv_tokens


def test_layer_parallel_is_one_fixed_chain():
    with pytest.raises(ScenarioError, match="speculation.kind"):
        simulator.run(scenario(**{**BASE, "speculation": {"kind": "tree", "builder": "kary", "k": 2, "depth": 3},
                                  "acceptance": {"kind": "ranked", "accept_probs": [0.7, 0.1]}}))
    with pytest.raises(ScenarioError, match="policy.kind"):
        simulator.run(scenario(**BASE, policy={"kind": "smartspec"}))
    with pytest.raises(ScenarioError, match="drafter"):
        simulator.run(scenario(**{**BASE, "drafter": {**BASE["drafter"], "placement": "separate"}}))
    with pytest.raises(ScenarioError, match="drafter.layer_parallel"):
        simulator.run(scenario(**{**BASE, "cluster": {"model": "llama-3-8b"},
                                  "drafter": {**BASE["drafter"], "model": "llama-68m"}}))
