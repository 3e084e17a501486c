"""Early exit in a batch: theory.early_exit's E[max exit layer] against Monte Carlo, and the DES's decode pass
(simulator.cost.early_exit) against passes of truncated models priced directly."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import simulator
from sim_helpers import replica_kind, scenario
from simulator.cost.step_cost import ForwardCost
from simulator.errors import ScenarioError
from theory.early_exit import expected_max_layers, simulate_max_layers

LAW = {"exit_layers": [16, 20, 24], "exit_probs": [0.3, 0.2, 0.2]}
DATA = dict(cluster={"hardware": "a100-80gb", "model": "llama-2-7b"}, early_exit=LAW)


@pytest.mark.parametrize("batch", [1, 2, 5, 16])
def test_expected_max_is_the_monte_carlo_max(batch):
    m = simulate_max_layers(LAW["exit_layers"], LAW["exit_probs"], 32, batch, 50_000, np.random.default_rng(batch))
    assert expected_max_layers(LAW["exit_layers"], LAW["exit_probs"], 32, batch) == pytest.approx(
        m.mean(), abs=4 * m.std() / np.sqrt(len(m)) + 1e-9)


def test_batch_one_is_the_mean_exit_and_large_batches_run_every_layer():
    mean = 16 * 0.3 + 20 * 0.2 + 24 * 0.2 + 32 * 0.3
    e = [expected_max_layers(LAW["exit_layers"], LAW["exit_probs"], 32, b) for b in (1, 2, 4, 8, 64, 4096)]
    assert e[0] == pytest.approx(mean) and all(b > a for a, b in zip(e, e[1:-1])) and e[-1] == pytest.approx(32)


def _target(early_exit):
    return replica_kind(scenario(**{**DATA, "early_exit": early_exit})).cost.target


@pytest.mark.parametrize("exit_layer", [8, 16, 31])
@pytest.mark.parametrize("seqs,ctx_per_seq", [(1, 500), (12, 1500)])
def test_a_certain_exit_prices_the_truncated_model(exit_layer, seqs, ctx_per_seq):
    t = _target({"exit_layers": [exit_layer], "exit_probs": [1.0]})
    short = ForwardCost(dataclasses.replace(t.spec, num_layers=exit_layer), t.parallelism, t.latency, t.dtype)
    got, want = t.exact_decode(seqs, 1, seqs * ctx_per_seq), short.exact_decode(seqs, 1, seqs * ctx_per_seq)
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_the_gain_fades_with_the_batch_and_mixed_steps_run_every_layer():
    t, plain = _target(LAW), _target(None)
    ratio = [t.exact_decode(b, 1, b * 800)[0] / plain.exact_decode(b, 1, b * 800)[0] for b in (1, 4, 64)]
    assert ratio[0] < ratio[1] < ratio[2] and ratio[2] == pytest.approx(1.0, abs=1e-6)
    ctx = np.array([8 * 800])
    assert (t.decode_attention(8, 1, ctx) == plain.decode_attention(8, 1, ctx)).all()


def test_a_law_summing_to_1_within_the_schemas_tolerance_is_priced():
    """exit_probs [0.5, 0.5 + 5e-10]: the schema allows sums up to 1 + 1e-9 but theory.early_exit refused any
    above 1 + 1e-12, so `draftsim run` died with a ValueError traceback; it is priced as the law it rounds to."""
    near = _target({"exit_layers": [8, 16], "exit_probs": [0.5, 0.5 + 5e-10]})
    exact = _target({"exit_layers": [8, 16], "exit_probs": [0.5, 0.5]})
    np.testing.assert_allclose(near.exact_decode(6, 1, 6 * 900), exact.exact_decode(6, 1, 6 * 900), rtol=1e-8)
    with pytest.raises(ValueError, match="exit_probs"):
        expected_max_layers([8], [float("nan")], 32, 2)   # NaN passed every comparison: E[max] was nan


@pytest.mark.parametrize("override,field", [
    ({"drafter": {"kind": "draft_model", "model": "llama-68m", "gamma": 3}}, "early_exit"),
    ({"early_exit": {"exit_layers": [16, 32], "exit_probs": [0.2, 0.2]}}, "early_exit.exit_layers"),
    ({"early_exit": {"exit_layers": [20, 16], "exit_probs": [0.2, 0.2]}}, "early_exit"),
    ({"early_exit": {"exit_layers": [16], "exit_probs": [0.2, 0.3]}}, "early_exit"),
])
def test_bad_early_exit_is_refused(override, field):
    with pytest.raises(ScenarioError, match=field):
        simulator.run(scenario(**{**DATA, **override}))


@pytest.mark.parametrize("batch", [0, -1, 2.5, True])
def test_simulate_max_layers_names_a_bad_batch(batch):
    """The Monte Carlo took any batch: 0 raised numpy's 'zero-size array to reduction operation maximum', 2.5
    and True a TypeError; like expected_max_layers it now names the argument."""
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        simulate_max_layers(LAW["exit_layers"], LAW["exit_probs"], 32, batch, 10, np.random.default_rng(0))
