"""Sparse-KV self-speculation (MagicDec) and TriForce's hierarchy: the draft pass's cost stops growing at
the KV budget, the closed form's batch trend (theory.sparse_kv) against finite differences and the DES's
own step prices, and the TriForce cascade's stages priced directly."""
from __future__ import annotations


import numpy as np
import pytest

from sim_helpers import assert_bulk_equals_step, replica_kind, scenario
from theory.chain import expected_tokens
from theory.sparse_kv import large_batch_limit, self_spec_speedup, speedup_batch_slope_sign

MAGICDEC = {"kind": "sparse_kv", "gamma": 3, "kv_budget": 512}
LONG = {"cluster": {"model": "llama-3.1-8b"}, "acceptance": {"kind": "constant", "alpha": 0.8}}


def _kind(data: dict):
    return replica_kind(data)


@pytest.mark.parametrize("context,budget", [(32768, 512), (4096, 512), (300, 512), (512, 512)])
def test_batch_slope_sign_is_the_closed_forms(context, budget):
    w, k, g = 16e9, 131072.0, 3
    f = [self_spec_speedup(0.8, g, w, k, b, context, budget) for b in (4, 5)]
    sign = speedup_batch_slope_sign(g, w, k, context, budget)
    assert sign == (1 if context > budget else 0)
    assert np.sign(round(f[1] - f[0], 12)) == sign
    assert self_spec_speedup(0.8, g, w, k, 10 ** 9, context, budget) == pytest.approx(
        large_batch_limit(0.8, g, context, budget), rel=1e-3)


def test_closed_forms_refuse_a_pass_of_no_bytes_and_a_zero_context():
    """Both raised ZeroDivisionError (0/0: no weights and no context; the limit divides by the context)."""
    with pytest.raises(ValueError, match="reads nothing"):
        self_spec_speedup(0.8, 3, 0.0, 131072.0, 4, 0.0, 512)
    with pytest.raises(ValueError, match="context must be > 0"):
        large_batch_limit(0.8, 3, 0.0, 512)
    assert self_spec_speedup(0.8, 3, 0.0, 131072.0, 4, 4096.0, 512) == pytest.approx(
        large_batch_limit(0.8, 3, 4096.0, 512))   # no weights: the limit at every batch


def test_draft_pass_cost_stops_growing_at_the_budget():
    kind = _kind(scenario(drafter=MAGICDEC, **LONG))
    draft = [kind.cost.exact_decode_step(4, 4 * ctx)[0] for ctx in (256, 512, 4096, 32768)]
    assert draft[0] < draft[1] and draft[1] == pytest.approx(draft[2], rel=1e-12) == draft[3]
    target = [kind.cost.exact_decode_step(4, 4 * ctx)[3] for ctx in (4096, 32768)]
    assert target[1] > target[0]
    # bulk interpolation (decode_steps) agrees with op-by-op pricing above the budget too
    d, _ = kind.cost.decode_steps(4, np.array([4 * 32768]))
    assert d[0, 0] == pytest.approx(draft[3], rel=1e-9)


def test_des_prices_show_magicdecs_trend_speedup_grows_with_batch_at_long_context():
    """Tokens per second of self-speculation over plain decoding from the DES's own step prices (measured
    H100 kernels and engine time), at 32k context: grows with the batch, as the closed form says."""
    spec, plain = _kind(scenario(drafter=MAGICDEC, **LONG)), _kind(scenario(**LONG))
    tokens = expected_tokens(0.8, 3)
    ratios = []
    for b in (1, 4, 8, 12):
        t_spec = spec.cost.exact_decode_step(b, b * 32768)
        t_plain = plain.cost.exact_decode_step(b, b * 32768)
        ratios.append(tokens * t_plain[3] / (t_spec[0] + t_spec[3]))
    assert all(b > a for a, b in zip(ratios, ratios[1:])), ratios
    short = []
    for b in (1, 12):  # context below the budget: the draft is the whole target, no gain with batch
        t_spec, t_plain = spec.cost.exact_decode_step(b, b * 400), plain.cost.exact_decode_step(b, b * 400)
        short.append(tokens * t_plain[3] / (t_spec[0] + t_spec[3]))
    assert short[1] <= short[0] * 1.05 and short[0] < 1.0


def test_triforce_stages_are_the_sparse_target_and_the_small_model():
    from models import get_model
    from models.step import Parallelism
    from simulator.cost.sparse_kv import SparseKVForwardCost
    from simulator.cost.step_cost import ForwardCost
    from theory.cascade import expected_passes
    data = scenario(cluster={"model": "llama-2-7b", "hardware": "a100-80gb", "engine": {"version": "0.15.0"}},
                    acceptance={"kind": "constant", "alpha": 0.9},
                    drafter={"kind": "cascade", "stages": [{"model": "self", "tokens": 6, "kv_budget": 4096,
                                                            "inner_model": "llama-68m", "inner_gamma": 2,
                                                            "inner_alpha": 0.6}]})
    kind = _kind(data)
    n = expected_passes(6, 0.6, 2)
    sparse = SparseKVForwardCost(get_model("llama-2-7b"), Parallelism(1, 1), kind.latency, "bf16", kv_budget_tokens=4096)
    small = ForwardCost(get_model("llama-68m"), Parallelism(1, 1), kind.latency, "bf16")
    ctx = 2 * 32768
    want = n * sparse.exact_decode(2, 3, ctx)[0] + 2 * n * small.exact_decode(2, 1, ctx)[0]
    assert kind.cost.exact_decode_step(2, ctx)[0] == pytest.approx(want, rel=1e-12)
    assert kind.drafter.weight_bytes_per_gpu == pytest.approx(get_model("llama-68m").weight_bytes("bf16"))


@pytest.mark.parametrize("drafter", [MAGICDEC, {"kind": "cascade", "stages": [
    {"model": "self", "tokens": 4, "kv_budget": 256, "inner_model": "llama-68m", "inner_gamma": 2, "inner_alpha": 0.5}]}])
def test_bulk_equals_step_mode(drafter):
    data = scenario(drafter=drafter, acceptance={"kind": "constant", "alpha": 0.8})
    assert_bulk_equals_step(data)
