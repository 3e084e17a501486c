"""Engine profiles (`cluster.latency.source: engine_profile`): the pass fit recovers a known cost function
from driver-format steps, and the simulator prices steps with exactly that function."""
from __future__ import annotations

import json

import numpy as np
import pytest

import simulator
from profiles.engine_time.engine_profile import (attention_pairs, fit_host_model, fit_pass_model, hat_basis,
                                                 knots_for, load_engine_profile, pass_rows)
from sim_helpers import merge, replica_kind

KNOTS = np.array([1.0, 4.0, 16.0, 64.0, 256.0])
F_AT_KNOTS = np.array([0.05, 0.06, 0.11, 0.35, 1.30])      # seconds: a memory-bound start, then compute-bound
PREFILL_PAIR_S, DECODE_PAIR_S = 2e-7, 4e-6
LOGITS = {1: 0.018, 2: 0.019, 4: 0.021, 8: 0.026, 16: 0.035}
HOST = (0.002, 3e-5, 1e-6)


def true_logits(rows):
    return float(np.interp(rows, list(LOGITS), list(LOGITS.values())))


def true_forward(tokens, prefill_pairs, decode_pairs):
    return float(np.interp(tokens, KNOTS, F_AT_KNOTS)) + PREFILL_PAIR_S * prefill_pairs + DECODE_PAIR_S * decode_pairs


def synthetic_profile(model_path: str = "m") -> dict:
    """Steps in profiles/engine_time/vllm_driver.py's format, timed by the true functions above."""
    steps = []

    def add(seqs):
        tokens = sum(n for n, _, _, _ in seqs)
        pre = sum(attention_pairs(n, c) for n, c, p, _ in seqs if p)
        dec = sum(attention_pairs(n, c) for n, c, p, _ in seqs if not p)
        rows = len(seqs)
        fwd, lg = true_forward(tokens, pre, dec), true_logits(rows)
        host = HOST[0] + HOST[1] * len(seqs) + HOST[2] * tokens
        steps.append({"seqs": [list(s) for s in seqs], "wall_s": fwd + lg + host,
                      "passes": [["target", "forward", tokens, fwd], ["target", "logits", rows, lg]]})

    for batch in (1, 2, 4, 8, 16):
        for ctx in (32, 320, 333):
            add([(1, ctx + i, False, 0) for i in range(batch)])
    for length in (1, 4, 16, 40, 64, 100, 256):
        add([(length, 0, True, 0)])
        add([(length, 50, True, 0)])
    add([(64, 0, True, 0), (1, 70, False, 0), (1, 90, False, 0)])
    return {"steps": steps, "fingerprint": {"models": {"target": {"path": model_path}}, "date_utc": "synthetic"}}


def test_knots_are_every_small_measured_value_then_25_percent_apart():
    assert knots_for(np.array([1, 2, 3, 4, 5, 16, 17, 40, 45, 60, 100, 110])).tolist() == [1, 2, 3, 4, 5, 16, 17, 40,
                                                                                           60, 110]
    assert knots_for(np.array([7, 7, 7])).tolist() == [7]


def test_hat_basis_interpolates_like_np_interp_and_continues_end_segments():
    knots = np.array([1.0, 4.0, 16.0])
    values = np.array([2.0, 3.0, 7.0])
    x = np.array([1.0, 2.5, 4.0, 10.0, 16.0])
    np.testing.assert_allclose(hat_basis(x, knots) @ values, np.interp(x, knots, values))
    assert (hat_basis(np.array([28.0]), knots) @ values)[0] == pytest.approx(11.0)   # slope 1/3 continued


def test_the_fit_recovers_the_true_pass_costs():
    rows = pass_rows(synthetic_profile())
    model = fit_pass_model(rows)
    assert model.prefill_pair_s == pytest.approx(PREFILL_PAIR_S, rel=1e-6)
    assert model.decode_pair_s == pytest.approx(DECODE_PAIR_S, rel=1e-6)
    for tokens in (1, 3, 8, 40, 100, 256):
        assert model.forward_s(tokens, 0, 0)[0] == pytest.approx(np.interp(tokens, KNOTS, F_AT_KNOTS), rel=1e-6)
    assert model.logits(np.array([3]))[0] == pytest.approx(true_logits(3), rel=1e-6)
    assert model.residuals["forward"]["max_rel"] < 1e-6
    host = fit_host_model(rows)
    assert (host.step_s, host.per_seq_s, host.per_token_s) == pytest.approx(HOST, rel=1e-5)


def _profile_dir(tmp_path, names=("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")):
    for name in names:
        (tmp_path / f"{name}.json").write_text(json.dumps(synthetic_profile(name)))
    load_engine_profile.cache_clear()
    return tmp_path


def _scenario(profile_dir, **overrides):
    base = {"name": "ep", "seed": 3,
            "workload": {"arrival": {"process": "poisson", "qps": 2.0}, "num_requests": 40,
                         "prompt_tokens": {"kind": "uniform", "low": 16, "high": 200},
                         "output_tokens": {"kind": "uniform", "low": 4, "high": 40}},
            "cluster": {"hardware": "cpu-local", "model": "qwen2.5-coder-1.5b", "dtype": "fp32",
                        "latency": {"source": "engine_profile", "profile_dir": str(profile_dir)}},
            "scheduler": {"kind": "vllm_v1", "max_batch_size": 16, "max_batched_tokens": 256, "block_size": 16},
            "drafter": {"kind": "none"}, "outputs": {"plots": False}}
    return merge(base, overrides)


def test_steps_are_priced_with_the_profiled_passes_and_host_time(tmp_path):
    kind = replica_kind(_scenario(_profile_dir(tmp_path)))
    costs = kind.cost.step(0, 0, 0, 3, 300)
    draft, target = costs.draft, costs.target
    pairs = 300 + 3   # one query token per sequence after its context, itself included
    expected = true_forward(3, 0, pairs) + true_logits(3) + HOST[0] + 3 * HOST[1] + 3 * HOST[2]
    assert target.seconds == pytest.approx(expected, rel=1e-6)
    assert draft.seconds == 0.0
    prefill = kind.cost.step(100, 1, attention_pairs(100, 0), 0, 0).target
    assert prefill.seconds == pytest.approx(true_forward(100, attention_pairs(100, 0), 0) + LOGITS[1]
                                            + HOST[0] + HOST[1] + 100 * HOST[2], rel=1e-6)


def test_estimate_prices_the_profiled_pass_and_breaks_it_down_as_one(tmp_path, capsys):
    """`draftsim estimate --source engine_profile` crashed (AttributeError: no drafter section); its op-kind
    breakdown would have listed roofline op prices that do not add up to the measured pass."""
    folder = _profile_dir(tmp_path)
    latency = {"source": "engine_profile", "profile_dir": str(folder)}
    est = simulator.estimate_step("qwen2.5-coder-1.5b", "cpu-local", dtype="fp32", batch=3, context_tokens=100,
                                  latency=latency)
    forward = true_forward(3, 0, 300 + 3) + true_logits(3)   # as test_steps_are_priced_with_the_profiled_passes
    assert est["kernel_seconds"] == pytest.approx(forward, rel=1e-6)
    assert est["engine_seconds"] == pytest.approx(HOST[0] + 3 * HOST[1] + 3 * HOST[2], rel=1e-6)
    assert est["breakdown"] == {"pass": est["kernel_seconds"]} and est["power_limit"] is None
    pre = simulator.estimate_step("qwen2.5-coder-1.5b", "cpu-local", dtype="fp32", prefill_tokens=100,
                                  latency=latency)
    assert pre["kernel_seconds"] == pytest.approx(true_forward(100, attention_pairs(100, 0), 0) + LOGITS[1], rel=1e-6)
    assert sum(pre["breakdown"].values()) == pre["kernel_seconds"]
    from simulator.cli import main as cli
    assert cli(["estimate", "--model", "qwen2.5-coder-1.5b", "--hardware", "cpu-local", "--dtype", "fp32",
                "--batch", "3", "--context", "100", "--source", "engine_profile", "--profile-dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "  pass " in out and "100.0 %   engine_profile" in out


def test_vllm_draft_proposer_layout(tmp_path):
    data = _scenario(_profile_dir(tmp_path), drafter={"kind": "draft_model", "model": "qwen2.5-coder-0.5b",
                                                      "gamma": 4, "passes": "vllm"},
                     acceptance={"kind": "constant", "alpha": 0.6})
    kind = replica_kind(data)
    draft = kind.cost.step(0, 0, 0, 2, 200).draft
    # first pass: the 2·5 verified tokens and each request's sampled token, one logits row per request;
    # then 3 one-token passes over both requests, contexts past those tokens and growing by one per pass
    expected = true_forward(12, 0, 6 * 200 + 2 * 21) + true_logits(2)
    expected += sum(true_forward(2, 0, 212 + 2 * j + 2) + true_logits(2) for j in range(3))
    assert draft.seconds == pytest.approx(expected, rel=1e-6)
    # a prompt chunk: ingested by the first pass (with its sampled token), then drafted for like the others
    draft = kind.cost.step(64, 1, attention_pairs(64, 0), 0, 0).draft
    expected = true_forward(65, attention_pairs(64, 0) + 64, 0) + true_logits(1)
    expected += sum(true_forward(1, 0, 65 + j + 1) + true_logits(1) for j in range(3))
    assert draft.seconds == pytest.approx(expected, rel=1e-6)
    chain = replica_kind(merge(data, {"drafter": {"passes": "chain"}}))
    assert chain.cost.step(0, 0, 0, 2, 200).draft.seconds < kind.cost.step(0, 0, 0, 2, 200).draft.seconds


def test_a_run_is_byte_identical_in_bulk_and_step_mode(tmp_path):
    from sim_helpers import assert_bulk_equals_step
    data = _scenario(_profile_dir(tmp_path))
    assert_bulk_equals_step(data)
    assert_bulk_equals_step(merge(data, {"drafter": {"kind": "draft_model", "model": "qwen2.5-coder-0.5b",
                                                     "gamma": 3, "passes": "vllm"},
                                         "acceptance": {"kind": "constant", "alpha": 0.6}}))
    result = simulator.run(data)
    assert result.summary["latency_source"]["source"] == "engine_profile"


@pytest.mark.parametrize("overrides, field", [
    ({"cluster": {"latency": {"source": "engine_profile", "profile_dir": "/nonexistent/dir"}}},
     "cluster.latency.profile_dir"),
    ({"cluster": {"model": "llama-68m"}}, "cluster.latency.profile_dir"),
    ({"cluster": {"parallelism": {"tp": 2}}}, "cluster.latency.source"),
    ({"drafter": {"kind": "layer_skip", "layers_fraction": 0.5}}, "drafter.kind"),
    ({"cluster": {"kv_cache": {"prefix_caching": True, "shared_prefix_attention": True}}}, "cluster"),
    ({"drafter": {"kind": "draft_model", "model": "qwen2.5-coder-0.5b", "gamma": 3, "passes": "vllm"},
      "policy": {"kind": "smartspec", "max_gamma": 4}}, "drafter.passes"),
])
def test_what_an_engine_profile_cannot_price_is_refused(tmp_path, overrides, field):
    from simulator.errors import ScenarioError
    data = _scenario(_profile_dir(tmp_path), **overrides)
    with pytest.raises(ScenarioError) as info:
        simulator.run(data)
    assert str(info.value).startswith(field)
