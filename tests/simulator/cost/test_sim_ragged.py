"""Ragged acceptance within a batch: theory.ragged's E[max τ] against Monte Carlo, and EQSPEC's per-step
re-alignment in the DES against its byte count."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import simulator
from models import get_model
from models.step import Parallelism
from profiles.hardware import get_hardware
from sim_helpers import replica_kind, scenario
from theory.ragged import expected_max_accepted, expected_padding, simulate_batch_tau

SURV = np.cumprod([0.7] * 5)
DATA = dict(drafter={"kind": "draft_model", "model": "llama-68m", "gamma": 5},
            acceptance={"kind": "constant", "alpha": 0.7}, speculation={"kind": "chain", "alignment": "realign"})


@pytest.mark.parametrize("batch", [1, 2, 8, 64])
def test_expected_max_is_the_monte_carlo_max(batch):
    tau = simulate_batch_tau(SURV, batch, 20_000, np.random.default_rng(batch))
    m = tau.max(axis=1)
    assert m.mean() == pytest.approx(expected_max_accepted(SURV, batch), abs=4 * m.std() / np.sqrt(len(m)) + 1e-3)
    pad = (m[:, None] - tau).mean()
    assert pad == pytest.approx(expected_padding(SURV, batch), abs=0.02)


def test_padding_grows_with_the_batch_to_its_limit():
    pads = [expected_padding(SURV, b) for b in (1, 2, 4, 8, 16, 1024)]
    assert pads[0] == 0.0 and all(b > a for a, b in zip(pads, pads[1:]))
    assert pads[-1] == pytest.approx(5 - SURV.sum(), rel=1e-6)


@pytest.mark.parametrize("s", [1e-17, 1e-12, 1e-6, 0.5, 1 - 1e-12, 1.0])
@pytest.mark.parametrize("batch", [1, 2, 1000])
def test_max_and_padding_keep_their_precision_at_survivals_near_0_and_1(s, batch):
    """E[max] = 1 − (1 − s)^B and padding E[max] − s for one position, in exact rational arithmetic: the
    plain formula gave 0 (not 1e-14) and padding −1e-17 for s = 1e-17, B = 1000."""
    from fractions import Fraction
    exact_max = 1 - (1 - Fraction(s)) ** batch
    assert expected_max_accepted([s], batch) == pytest.approx(float(exact_max), rel=1e-12, abs=0.0)
    pad = expected_padding([s], batch)
    assert pad >= 0.0
    assert pad == pytest.approx(float(exact_max - Fraction(s)), rel=1e-9, abs=1e-300 if batch > 1 else 0.0)


def test_realignment_adds_the_kv_rewrite_to_each_verify_step():
    paged = simulator.run(scenario(**{**DATA, "speculation": {"kind": "chain"}}))
    realigned = simulator.run(scenario(**DATA))
    pd.testing.assert_series_equal(paged.requests.accepted_tokens, realigned.requests.accepted_tokens)
    hw, tgt, drf = get_hardware("h100-sxm"), get_model("llama-3-8b"), get_model("llama-68m")
    k = tgt.kv_bytes_per_token_per_gpu(Parallelism(1, 1), "bf16") + drf.kv_bytes_per_token_per_gpu(Parallelism(1, 1), "bf16")
    st = realigned.steps
    dec = st[(st.decode_seqs > 0) & (st.prefill_tokens == 0)].head(200)
    kinds = []
    for d in (DATA, {**DATA, "speculation": {"kind": "chain"}}):
        kinds.append(replica_kind(scenario(**d)))
    for b, ctx in ((1, 700), (8, 8 * 900), (32, 32 * 2000)):
        extra = kinds[0].cost.target.exact_decode(b, 6, ctx) - kinds[1].cost.target.exact_decode(b, 6, ctx)
        assert extra[0] == pytest.approx(2.0 * ctx * k / hw.hbm_bandwidth_bytes_per_s, rel=1e-12)
        assert (kinds[0].cost.target.exact_decode(b, 1, ctx) == kinds[1].cost.target.exact_decode(b, 1, ctx)).all()
    assert realigned.summary["tpot_mean_s"] > paged.summary["tpot_mean_s"]
    assert len(dec) > 0
