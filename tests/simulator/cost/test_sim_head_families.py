"""Draft-head cost families (Hydra, Clover, KOALA, Falcon): each step's draft time is the family's passes
priced op by op from the GEMM shapes its docstring states, and each gets an engine family."""
from __future__ import annotations


import pytest

import simulator
from models import get_model
from models.ops import GEMM, Op
from models.step import Parallelism
from sim_helpers import assert_bulk_equals_step, replica_kind, scenario
from simulator.cluster.factory import drafter_family
from simulator.config.scenario import parse_scenario
from simulator.cost.step_cost import ForwardCost
from simulator.errors import ScenarioError

CHAIN = {"kind": "constant", "alpha": 0.7}
TARGET = get_model("llama-3-8b")
H, V = TARGET.hidden_size, TARGET.vocab_size


def _kind(drafter: dict, tp: int = 1, **extra):
    return replica_kind(scenario(drafter=drafter, acceptance=CHAIN, cluster={"parallelism": {"tp": tp}},
                                 **extra))


def _gemms_seconds(latency, tokens: int, shapes, tp: int = 1) -> float:
    """Σ seconds of GEMMs (n_out, k_in) on `tokens` rows, n sharded over tp, priced one by one."""
    return sum(latency.op_seconds(Op.make(GEMM, "x", 2.0 * tokens * n / tp * k,
                                          2.0 * tokens * (k + n / tp) + 2.0 * k * n / tp, m=tokens, n=n / tp, k=k))
               for n, k in shapes)


@pytest.mark.parametrize("tp", [1, 2])
def test_hydra_heads_are_gamma_passes_of_an_mlp_and_own_lm_head(tp):
    kind = _kind({"kind": "head", "style": "sequential", "gamma": 4, "layers": 2}, tp)
    draft = kind.cost.exact_decode_step(8, 8 * 700)[0]
    per_pass = _gemms_seconds(kind.latency, 8, [(H, 2 * H), (H, H), (V, H)], tp)
    assert draft == pytest.approx(4 * per_pass, rel=1e-9)
    assert kind.drafter.weight_bytes_per_gpu == pytest.approx(4 * (2 * H * H + H * H + V * H) * 2 / tp)
    assert kind.drafter.kv_bytes_per_token_per_gpu == 0


def test_clover_cell_is_four_projections_per_layer_and_the_lm_head():
    kind = _kind({"kind": "head", "style": "rnn", "gamma": 3, "layers": 1})
    draft = kind.cost.exact_decode_step(4, 4 * 300)[0]
    assert draft == pytest.approx(3 * _gemms_seconds(kind.latency, 4, [(H, H)] * 4 + [(V, H)]), rel=1e-9)


def test_koala_multi_layer_head_is_a_two_layer_forward_per_depth():
    one = _kind({"kind": "head", "gamma": 4})
    two = _kind({"kind": "head", "gamma": 4, "layers": 2})
    import dataclasses
    spec2 = dataclasses.replace(TARGET, name="x", num_layers=2)
    fc = ForwardCost(spec2, Parallelism(1, 1), two.latency, "bf16")
    d2 = two.cost.exact_decode_step(8, 8 * 512)[0]
    want = sum(fc.exact_decode(8, 1, 8 * 512 + j * 8)[0] for j in range(4))
    assert d2 == pytest.approx(want, rel=1e-12)
    assert d2 > one.cost.exact_decode_step(8, 8 * 512)[0]
    assert two.drafter.kv_bytes_per_token_per_gpu == 2 * one.drafter.kv_bytes_per_token_per_gpu


@pytest.mark.parametrize("gamma,k,widths", [(5, 2, (2, 2, 1)), (6, 3, (3, 3)), (4, 1, (1, 1, 1, 1))])
def test_falcon_semi_autoregressive_head_drafts_k_tokens_per_pass(gamma, k, widths):
    kind = _kind({"kind": "head", "gamma": gamma, "tokens_per_pass": k})
    assert kind.speculation.widths == widths and kind.cost.pass_layout.draft_passes == len(widths)
    fc = kind.cost.draft
    want = sum(fc.exact_decode(8, w, 8 * 400 + j * 8)[0] for j, w in enumerate(widths))
    assert kind.cost.exact_decode_step(8, 8 * 400)[0] == pytest.approx(want, rel=1e-12)


def test_fewer_passes_make_falcon_drafting_cheaper_than_eagle_at_batch_one():
    eagle, falcon = _kind({"kind": "head", "gamma": 4}), _kind({"kind": "head", "gamma": 4, "tokens_per_pass": 2})
    assert falcon.cost.exact_decode_step(1, 500)[0] < eagle.cost.exact_decode_step(1, 500)[0]


@pytest.mark.parametrize("style,family", [("autoregressive", "eagle"), ("parallel", "medusa"),
                                          ("sequential", "medusa"), ("rnn", "medusa")])
def test_every_head_style_has_an_engine_family(style, family):
    assert drafter_family(parse_scenario(scenario(drafter={"kind": "head", "style": style})).drafter) == family


@pytest.mark.parametrize("drafter", [{"kind": "head", "style": "sequential", "gamma": 3},
                                     {"kind": "head", "style": "rnn", "gamma": 3, "layers": 2},
                                     {"kind": "head", "gamma": 5, "tokens_per_pass": 2}])
def test_bulk_equals_step_mode(drafter):
    data = scenario(drafter=drafter, acceptance=CHAIN)
    assert_bulk_equals_step(data)


def test_hydra_heads_draw_trees_level_by_level():
    data = scenario(drafter={"kind": "head", "style": "sequential", "gamma": 4},
                    acceptance={"kind": "ranked", "accept_probs": [0.6, 0.15, 0.05]},
                    speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 3})
    result = simulator.run(data)
    assert (result.steps.query_tokens_per_seq[result.steps.decode_seqs > 0] == 15).all()


def test_bad_family_combinations_are_one_line_errors():
    with pytest.raises(ScenarioError, match="speculation.kind"):
        simulator.run(scenario(drafter={"kind": "head", "gamma": 4, "tokens_per_pass": 2},
                               acceptance={"kind": "ranked", "accept_probs": [0.6, 0.2]},
                               speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 3}))
    with pytest.raises(ScenarioError, match="policy.kind"):
        simulator.run(scenario(drafter={"kind": "head", "gamma": 4, "tokens_per_pass": 2}, acceptance=CHAIN,
                               policy={"kind": "smartspec"}))
    with pytest.raises(ScenarioError, match="drafter"):
        simulator.run(scenario(drafter={"kind": "head", "style": "parallel", "layers": 2}, acceptance=CHAIN))
