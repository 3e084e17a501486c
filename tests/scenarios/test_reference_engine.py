"""Reference engine: the fused decoder equals the project's Qwen2 decoder; the serving loop runs the
simulator's step sequence with the simulator's accepted lengths, conserves tokens, keeps its KV caches
consistent through chunked prefill, preemption and draft lag, and writes well-formed records."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from models import get_model  # noqa: E402
from models.torch_impl.qwen2 import ModelConfig, random_model  # noqa: E402
from profiles.hardware import get_hardware  # noqa: E402
from scenarios.validation.reference.compare import STEP_KEYS, combine_repeats  # noqa: E402
from scenarios.validation.reference.diagnose import kernel_context_excess, op_breakdown, predicted_by_kind  # noqa: E402
from scenarios.validation.reference.engine import ReferenceConfig, run_reference  # noqa: E402
from models.torch_impl.fused import DecodeGroup, FusedDecoder, PrefillChunk  # noqa: E402
from scenarios.validation.reference.workload import offline_trace, write_offline_trace  # noqa: E402
from simulator.speculation.acceptance import ChainAcceptance  # noqa: E402
from simulator.api import run as simulate  # noqa: E402
from simulator.cluster.build import Streams  # noqa: E402
from simulator.config.scenario import parse_scenario  # noqa: E402


# ---- the decoder ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tied,bias", [(False, True), (True, False)])
def test_fused_decoder_logits_equal_qwen2_model(tied, bias):
    cfg = ModelConfig(vocab_size=97, hidden_size=64, intermediate_size=96, num_layers=2, num_heads=4,
                      num_kv_heads=2, head_dim=16, qkv_bias=bias, tie_word_embeddings=tied, max_context=64)
    model = random_model(cfg, seed=3)
    fused = FusedDecoder.from_qwen2(model)
    fused.allocate_cache(3, 64)
    cache = model.new_cache(3, 64)
    gen = torch.Generator().manual_seed(0)
    a, b, a2 = (torch.randint(0, 97, (n,), generator=gen) for n in (7, 5, 4))
    ref = [model.prefill(a, cache, 0)[-1], model.prefill(b, cache, 1)[-1]]
    got = fused.logits([PrefillChunk(a, 0, 0), PrefillChunk(b, 1, 0)], None)
    torch.testing.assert_close(got, torch.stack(ref), rtol=1e-4, atol=1e-5)
    # A second chunk after a cached prefix, batched with a ragged 3-token verification of sequence 1.
    d = torch.randint(0, 97, (1, 3), generator=gen)
    ref_chunk = model.prefill(a2, cache, 0)[-1]
    ref_dec = model.decode(d, cache, [1])[0]
    got = fused.logits([PrefillChunk(a2, 0, 7)], DecodeGroup(d, [1], [5]))
    torch.testing.assert_close(got, torch.cat([ref_chunk[None], ref_dec]), rtol=1e-4, atol=1e-5)
    # Ragged decode over both sequences (contexts 11 and 8), greedy ids = argmax of the same logits.
    d = torch.randint(0, 97, (2, 2), generator=gen)
    ref = model.decode(d, cache, [0, 1]).reshape(4, -1)
    got = fused.forward([], DecodeGroup(d, [0, 1], [11, 8]))
    assert got.tolist() == ref.argmax(-1).tolist()


# ---- the serving loop ----------------------------------------------------------------------------------
def _scenario(tmp_path, *, n=5, prompt=(8, 40), output=(4, 14), gamma=2, alpha=0.8, scheduler=None,
              util=0.9, seed=5, max_model_len=None):
    write_offline_trace(tmp_path / "requests.csv", n, prompt, output, seed=seed)
    drafter = {"kind": "draft_model", "model": "llama-68m", "gamma": gamma} if gamma else {"kind": "none"}
    return parse_scenario({
        "name": "ref-test", "seed": seed,
        "workload": {"arrival": {"process": "trace", "trace_csv": "requests.csv"}},
        "cluster": {"hardware": "cpu-local", "model": "llama-68m", "dtype": "fp32",
                    "gpu_memory_utilization": util, "latency": {"source": "roofline"},   # (what auto chose)
                    **({"max_model_len": max_model_len} if max_model_len else {})},
        "drafter": drafter, "acceptance": {"kind": "constant", "alpha": alpha},
        "scheduler": scheduler or {"kind": "vllm", "max_batch_size": 3, "max_batched_tokens": 256},
    })


def _run_both(tmp_path, op_breakdown=False, **kw):
    scenario = _scenario(tmp_path, **kw)
    ref = run_reference(scenario, tmp_path, ReferenceConfig(threads=1, warmup=False, op_breakdown=op_breakdown))
    sim = simulate(scenario, base_dir=tmp_path, step_mode="step")
    return scenario, ref, sim


def _check_same_steps_and_tokens(ref, sim):
    keys = list(STEP_KEYS)
    assert len(ref.steps) == len(sim.steps)
    np.testing.assert_array_equal(ref.steps[keys].to_numpy(), sim.steps[keys].to_numpy())
    for col in ("accepted_tokens", "decode_steps", "emitted_tokens", "preemptions", "drafted_tokens"):
        np.testing.assert_array_equal(ref.requests[col].to_numpy(), sim.requests[col].to_numpy())
    req = ref.requests
    # Token conservation: every request emitted exactly its output; the steps account for all of them.
    np.testing.assert_array_equal(req["emitted_tokens"], req["output_tokens"])
    assert ref.steps["emitted_tokens"].sum() == req["output_tokens"].sum()
    for r, toks in enumerate(ref.tokens):
        assert len(toks) == req["prompt_tokens"][r] + req["output_tokens"][r]


def _check_well_formed(ref):
    steps, req = ref.steps, ref.requests
    dur = steps["duration_s"].to_numpy()
    assert (dur > 0).all() and np.isfinite(dur).all()
    # The timeline tiles: each step starts where the previous ended.
    np.testing.assert_allclose(steps["start_s"].to_numpy()[1:], steps["end_s"].to_numpy()[:-1])
    parts = steps["draft_s"] + steps["verify_s"] + steps["plan_s"] + steps["accept_s"]
    assert (parts.to_numpy() <= dur + 1e-9).all()
    assert (req["ttft_s"] > 0).all() and (req["ttft_s"] <= req["e2e_s"]).all()
    ends = set(np.round(steps["end_s"].to_numpy(), 12))
    assert all(round(t, 12) in ends for t in req["first_token_s"]) and all(round(t, 12) in ends for t in req["finish_s"])
    assert ref.meta["threads"] == 1 and ref.meta["steps"] == len(steps)


def _expected_lag_tokens(scenario, requests) -> int:
    """Decode steps that follow a step in which all γ drafts were accepted (the draft then ingests 2)."""
    acc = ChainAcceptance.from_alphas([scenario.acceptance.alpha], scenario.drafter.gamma,
                                      Streams.from_seed(scenario.seed).acceptance_seed)
    lag = 0
    for r, k in zip(requests["request_id"], requests["decode_steps"]):
        if k > 1:
            tau = acc.tau(np.full(k - 1, r), np.arange(k - 1))
            lag += int((tau == scenario.drafter.gamma).sum())
    return lag


def test_vllm_engine_matches_simulator_steps_acceptance_and_lag(tmp_path):
    scenario, ref, sim = _run_both(tmp_path, alpha=0.85)
    _check_same_steps_and_tokens(ref, sim)
    _check_well_formed(ref)
    assert (ref.steps["prefill_seqs"] > 0).sum() >= 2          # later admissions: continuous batching
    assert ref.steps["accepted_tokens"].sum() > 0
    lag = int(ref.steps["draft_lag_tokens"].sum())
    assert lag > 0 and lag == _expected_lag_tokens(scenario, ref.requests)
    # The diagnosis prices each step per op kind exactly as the simulator composes the step.
    built = sim.built
    for row, simulated_s in zip(ref.steps.itertuples(index=False), sim.steps["duration_s"]):
        priced = predicted_by_kind(built.replicas[0].cost.target.latency, built.target, built.draft, 2, "fp32",
                                   row.prefill_tokens, row.prefill_seqs, row.prefill_attn_pairs, row.decode_seqs,
                                   row.decode_context_tokens)
        total = sum(sum(kinds.values()) for kinds in priced.values())
        assert total == pytest.approx(simulated_s, rel=1e-3)
    # Median of repeats: a run twice as slow everywhere and the run itself give the 1.5x timeline.
    slow_steps, slow_req = ref.steps.copy(), ref.requests.copy()
    for col in ("duration_s", "draft_s", "verify_s", "start_s", "end_s"):
        slow_steps[col] *= 2
    for col in ("admit_s", "first_token_s", "finish_s", "ttft_s", "tpot_s", "e2e_s"):
        slow_req[col] *= 2
    steps, req, noise = combine_repeats([(ref.steps, ref.requests), (slow_steps, slow_req)])
    np.testing.assert_allclose(steps["duration_s"], 1.5 * ref.steps["duration_s"])
    for col in ("ttft_s", "tpot_s", "e2e_s", "admit_s"):
        np.testing.assert_allclose(req[col], 1.5 * ref.requests[col], rtol=1e-9, atol=1e-12)
    assert noise["step_spread_median_pct"] == pytest.approx(100 / 1.5)


def test_sarathi_chunked_prefill_and_no_drafter(tmp_path):
    sched = {"kind": "sarathi", "max_batch_size": 3, "max_batched_tokens": 256, "chunk_tokens": 16}
    _, ref, sim = _run_both(tmp_path, scheduler=sched, prompt=(20, 40), op_breakdown=True)
    _check_same_steps_and_tokens(ref, sim)
    _check_well_formed(ref)
    kinds = set(zip(ref.steps["prefill_seqs"] > 0, ref.steps["decode_seqs"] > 0))
    assert (True, True) in kinds                                # mixed steps with prompt chunks
    # Kernel-level timing: per model, timed kernels + glue = the passes' wall time; priced = simulated.
    built = sim.built
    ops = op_breakdown(ref.steps, built.replicas[0].cost.target.latency, built.target, built.draft, 2, "fp32")
    assert {"attn_prefill", "attn_decode", "gemm", "lm_head", "glue"} <= set(ops["kind"])
    for model, wall, simulated in (("target", "target_wall_s", "verify_s"), ("draft", "draft_wall_s", "draft_s")):
        rows = ops[ops["model"] == model]
        assert rows["measured_s"].sum() == pytest.approx(ref.steps[wall].sum())
        assert rows.set_index("kind").loc["glue", "measured_s"] > 0
        assert rows["predicted_s"].sum() == pytest.approx(sim.steps[simulated].sum(), rel=1e-3)
    _, ref, sim = _run_both(tmp_path, gamma=0, n=3)
    _check_same_steps_and_tokens(ref, sim)
    assert ref.steps["accepted_tokens"].sum() == 0 and ref.meta["draft_model"] is None


def test_preemption_by_recompute_keeps_caches_consistent(tmp_path):
    spec = get_model("llama-68m")
    kv_tokens = 96
    need = 2 * spec.weight_bytes("fp32") + kv_tokens * 2 * spec.kv_bytes_per_token("fp32")
    util = need / get_hardware("cpu-local").hbm_bytes
    # (max_model_len: a KV cache of 96 tokens holds no 2,048-token request, and vLLM's start-up check would
    # refuse the model's default; prompts + outputs here are at most 60 tokens)
    _, ref, sim = _run_both(tmp_path, util=util, n=5, prompt=(16, 30), output=(20, 30), max_model_len=64,
                            scheduler={"kind": "vllm", "max_batch_size": 4, "max_batched_tokens": 256})
    assert sim.requests["preemptions"].sum() > 0
    _check_same_steps_and_tokens(ref, sim)
    _check_well_formed(ref)


def test_offline_trace_is_seeded_and_in_range():
    a = offline_trace(50, (8, 512), (4, 64), seed=3)
    b = offline_trace(50, (8, 512), (4, 64), seed=3)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert (a["arrival_s"] == 0).all()
    assert a["prompt_tokens"].min() >= 8 and a["prompt_tokens"].max() <= 512
    assert a["output_tokens"].min() >= 4 and a["output_tokens"].max() <= 64
    with pytest.raises(ValueError, match="prompt_range"):
        offline_trace(3, (0, 5), (1, 2), seed=0)


def test_kernel_context_excess_counts_every_call_and_adds_up():
    cfg = ModelConfig(vocab_size=97, hidden_size=64, intermediate_size=96, num_layers=3, num_heads=4,
                      num_kv_heads=2, head_dim=16, qkv_bias=True, max_context=64)
    fused = FusedDecoder.from_qwen2(random_model(cfg, seed=1))
    fused.allocate_cache(2, 64)
    table = kernel_context_excess(fused, DecodeGroup(torch.zeros(2, 3, dtype=torch.long), [0, 1], [10, 20]),
                                  passes=3, reps=3).set_index("kind")
    layers = cfg.num_layers
    expected = {"embedding": 1, "norm": 2 * layers + 1, "gemm": 4 * layers, "rope": layers, "attn_decode": layers,
                "activation": layers, "lm_head": 1, "sampling": 1}
    assert {k: int(table.loc[k, "calls"]) for k in expected} == expected
    kernels = table.drop(["glue", "pass"])
    assert kernels["in_context_s"].sum() + table.loc["glue", "in_context_s"] == pytest.approx(
        table.loc["pass", "in_context_s"])
    assert np.isnan(kernels.loc["gemm", "isolated_s"]) and (kernels.drop(["gemm", "lm_head"])["isolated_s"] > 0).all()
    assert "_op" not in vars(fused)                     # the timing hook is removed afterwards
