"""The engine-grade kernel set and the GPU harness, everything torch lets us test on a CPU: batched decode
attention against the per-sequence reference, the engine sampler's distribution, the timing harness's
division by N, the up-front memory check, the check's pricing, and the prefix rounding of old tables."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from models.catalog import get_model  # noqa: E402
from models.opgraph import step_ops  # noqa: E402
from models.step import Parallelism  # noqa: E402
from models.torch_impl import kernels as K  # noqa: E402
from models.torch_impl.batched_attention import attention_decode_batched, clear_layouts, decode_layout  # noqa: E402
from models.torch_impl.kernel_sets import REFERENCE, engine_sample_tokens, kernel_set_for  # noqa: E402
from profiles.profiler.benches import tree_ancestor_mask  # noqa: E402
from profiles.profiler.check import QUICK_SHAPES, SHAPES, CheckShape, check_models, predicted_breakdown  # noqa: E402
from profiles.profiler.resources import check_peak_bytes, profile_peak_bytes, require_memory  # noqa: E402
from profiles.profiler.timing import TimingConfig, graph_calls, time_kernel  # noqa: E402

torch.set_num_threads(1)


def _case(seqs, q, heads, kv, d, cached, slots, tree, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    cache = torch.randn(2, 9, kv, 80, d, generator=g, dtype=dtype)
    query = torch.randn(seqs, q, heads, d, generator=g, dtype=dtype)
    new = torch.randn(2, seqs, q, kv, d, generator=g, dtype=dtype)
    mask = tree_ancestor_mask(q, torch.device("cpu")) if tree else None
    return cache, query, new, mask


@pytest.mark.parametrize("seqs,q,heads,kv,ragged,tree,contiguous", [
    c for c in itertools.product((1, 3), (1, 2, 5), (8,), (1, 2, 8), (False, True), (False, True), (True, False))
    if not (c[5] and c[1] == 1)])
def test_batched_decode_attention_equals_per_sequence_reference(seqs, q, heads, kv, ragged, tree, contiguous):
    """One batched call (GQA SDPA, or pack-GQA under a mask) computes exactly what the validated
    per-sequence loop computes, for ragged contexts, chains and trees, contiguous or scattered slots, and
    writes the same cache entries."""
    d = 16
    cached = [10 + 13 * i for i in range(seqs)] if ragged else [21] * seqs
    slots = list(range(2, 2 + seqs)) if contiguous else [7, 1, 4][:seqs]
    cache, query, new, mask = _case(seqs, q, heads, kv, d, cached, slots, tree)
    ref_cache = cache.clone()
    got = attention_decode_batched(query, new[0], new[1], cache[0], cache[1], slots, cached, mask)
    want = K.attention_decode(query, new[0], new[1], ref_cache[0], ref_cache[1], slots, cached, mask)
    assert got.shape == want.shape == (seqs * q, heads * d)
    assert torch.allclose(got, want, atol=1e-12, rtol=1e-10)
    assert torch.equal(cache, ref_cache)


def test_batched_decode_attention_in_bf16_within_rounding():
    cache, query, new, mask = _case(3, 4, 8, 2, 64, [5, 17, 30], [1, 2, 3], True, dtype=torch.bfloat16, seed=3)
    ref_cache = cache.clone()
    got = attention_decode_batched(query, new[0], new[1], cache[0], cache[1], [1, 2, 3], [5, 17, 30], mask)
    want = K.attention_decode(query, new[0], new[1], ref_cache[0], ref_cache[1], [1, 2, 3], [5, 17, 30], mask)
    rel = (got.float() - want.float()).norm() / want.float().norm()
    assert rel < 1e-2


def test_decode_layout_masks_only_what_the_reference_hides():
    """Row g·q + t of sequence b sees its context, then the new tokens its tree row allows; padding and
    other sequences' positions are -inf. Equal contexts at q = 1 need no mask (the flash/GQA path)."""
    clear_layouts()
    plain = decode_layout([0, 1], [7, 7], 1, 4, None, 64, torch.device("cpu"), torch.float32)
    assert plain.mask is None and plain.write_slots is None and plain.keys_len == 8
    tree = tree_ancestor_mask(3, torch.device("cpu"))
    lay = decode_layout([0, 1], [4, 9], 3, 2, tree, 64, torch.device("cpu"), torch.float32)
    assert lay.keys_len == 16 and lay.mask.shape == (2, 1, 6, 16)
    allowed = torch.isfinite(lay.mask[:, 0])
    for b, ctx in enumerate((4, 9)):
        for g, t in itertools.product(range(2), range(3)):
            row = allowed[b, g * 3 + t]
            expected = [j < ctx or (0 <= j - ctx < 3 and bool(tree[t, j - ctx])) for j in range(16)]
            assert row.tolist() == expected
    again = decode_layout([0, 1], [4, 9], 3, 2, tree, 64, torch.device("cpu"), torch.float32)
    assert again is lay        # memoised: built once per step shape, shared by every layer
    with pytest.raises(ValueError, match="overflow"):
        decode_layout([0], [62], 4, 1, None, 64, torch.device("cpu"), torch.float32)


def test_a_points_layouts_survive_a_full_memo(monkeypatch):
    """A profiled point warms its CUDA graph up over its slot sets, then captures the same calls; a layout
    built during capture copies host lists to the GPU, which capture forbids. So a memo that fills up in the
    middle of a warm-up must evict other points' layouts, not this point's (the H100 run of 2026-11-27 timed
    one drafter tree point eagerly when the old memo emptied itself there)."""
    from models.torch_impl import batched_attention as BA
    clear_layouts()
    monkeypatch.setattr(BA, "_MAX_LAYOUTS", 8)
    cpu, tree = torch.device("cpu"), tree_ancestor_mask(3, torch.device("cpu"))

    def warm(point: int, copies: int) -> list:
        return [decode_layout(list(range(c * 2, c * 2 + 2)), [point, point], 3, 2, tree, 64, cpu, torch.float32)
                for c in range(copies)]

    warm(5, 6)                           # an earlier point fills 6 of the 8 entries
    warmed = warm(9, 4)                  # the memo fills up in the middle of this warm-up
    built = []
    monkeypatch.setattr(BA, "_build_layout", lambda *a: built.append(a) or pytest.fail("rebuilt during capture"))
    captured = warm(9, 4)                # the capture's lookups find every layout the warm-up built
    assert built == [] and all(a is b for a, b in zip(captured, warmed))
    assert len(BA._LAYOUTS) == 8
    clear_layouts()


def test_batched_attention_rejects_bad_arguments():
    cache, query, new, _ = _case(2, 1, 8, 2, 16, [3, 3], [0, 1], False)
    with pytest.raises(ValueError, match="entries"):
        attention_decode_batched(query, new[0], new[1], cache[0], cache[1], [0], [3, 3])
    with pytest.raises(ValueError, match="tree_mask"):
        attention_decode_batched(query, new[0], new[1], cache[0], cache[1], [0, 1], [3, 3], torch.ones(2, 2).bool())


def test_engine_sampler_greedy_is_argmax_and_random_draws_follow_softmax():
    """vLLM V1's exponential race: argmax(p / E), E ~ Exp(1), picks index i with probability p_i."""
    logits = torch.tensor([[0.0, 1.0, 2.0, -1.0]])
    assert engine_sample_tokens(logits, 0.0).tolist() == [2]
    draws = 20000
    gen = torch.Generator().manual_seed(7)
    many = logits.expand(draws, 4).contiguous()
    picks = engine_sample_tokens(many, 0.7, gen).numpy()
    freq = np.bincount(picks, minlength=4) / draws
    p = torch.softmax(logits[0] / 0.7, dim=-1).numpy()
    sigma = np.sqrt(p * (1 - p) / draws)
    assert np.all(np.abs(freq - p) < 5 * sigma + 1e-4), (freq, p)
    with pytest.raises(ValueError, match="temperature"):
        engine_sample_tokens(logits, -1.0)


def test_reference_set_is_the_validated_cpu_path():
    """The CPU keeps its validated kernels: the default set there is the plain kernels module."""
    ref = kernel_set_for("cpu")
    assert ref is REFERENCE
    assert ref.attention_decode is K.attention_decode and ref.add_rms_norm is K.add_rms_norm
    assert ref.sample_tokens is K.sample_tokens


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_timing_divides_a_sample_of_n_back_to_back_calls_by_n():
    clock = FakeClock()
    per_call = 3.5e-6
    seen = []

    def call(i):
        seen.append(i)
        clock.now += per_call

    config = TimingConfig(warmup=2, min_reps=4, max_reps=4, target_s=1e-9)
    result = time_kernel(call, torch.device("cpu"), config, calls=16, clock=clock)
    assert result.reps == 4
    assert math.isclose(result.median_s, per_call, rel_tol=1e-9)
    assert math.isclose(result.p10_s, per_call, rel_tol=1e-9) and math.isclose(result.p90_s, per_call, rel_tol=1e-9)
    assert seen == list(range(2 + 4 * 16))        # every repetition index once: operands rotate through all
    with pytest.raises(ValueError, match="calls"):
        time_kernel(call, torch.device("cpu"), config, calls=0)


def test_timing_with_a_real_sleep_reports_per_call_time():
    config = TimingConfig(warmup=1, min_reps=3, max_reps=3, target_s=1e-9)
    result = time_kernel(lambda i: __import__("time").sleep(0.002), torch.device("cpu"), config, calls=5)
    assert 0.002 <= result.median_s < 0.004      # one sleep per call, not five


def test_graph_calls_fill_the_replay_target():
    config = TimingConfig(graph_target_s=2e-3, max_graph_calls=64)
    assert graph_calls(1e-6, config) == 64
    assert graph_calls(1e-4, config) == 20
    assert graph_calls(5e-3, config) == 1
    with pytest.raises(ValueError, match="graph_target_s"):
        TimingConfig(graph_target_s=0.0)


class _FakeEvent:
    def __init__(self, log, name, times):
        self.log, self.name, self.times = log, name, times

    def record(self):
        self.log.append(self.name)
        self.times[self.name] = len(self.log)

    def synchronize(self):
        self.log.append(f"{self.name}.synchronize")

    def elapsed_time(self, other):
        return 1e3 * (other.times[other.name] - self.times[self.name])   # ms: 1 s per log entry between them


def _fake_cuda(monkeypatch):
    """torch.cuda's events and spin kernel replaced by fakes that log the order of what is queued."""
    import profiles.profiler.timing as T
    log, times, names = [], {}, iter(["start", "end"] * 100)
    monkeypatch.setattr(T.torch.cuda, "Event", lambda enable_timing: _FakeEvent(log, next(names), times))
    monkeypatch.setattr(T.torch.cuda, "_sleep", lambda cycles: log.append(f"spin {cycles}"))
    graph = type("G", (), {"replay": lambda self: log.append("replay")})()
    return T, log, graph


def test_replay_is_queued_behind_a_spin_outside_the_timed_region(monkeypatch):
    T, log, graph = _fake_cuda(monkeypatch)
    seconds = T.replay_seconds(graph)
    assert log == [f"spin {T.BUSY_CYCLES_BEFORE_REPLAY}", "start", "replay", "end", "end.synchronize"]
    assert seconds == 2.0   # start → end: the replay alone, the spin before the start event
    log.clear()
    T.replay_seconds(graph, busy_cycles=0)
    assert log == ["start", "replay", "end", "end.synchronize"]


def test_memory_check_refuses_what_cannot_fit(monkeypatch):
    import profiles.profiler.resources as R
    monkeypatch.setattr(R, "available_bytes", lambda device: 24 * 2 ** 30)
    big = get_model("llama-3.1-405b")
    with pytest.raises(ValueError, match="--models: .*GiB"):
        require_memory(check_peak_bytes([big], "fp32", 4096), torch.device("cpu"), "--check of llama-3.1-405b")
    require_memory(check_peak_bytes([get_model("llama-68m")], "fp32", 4096), torch.device("cpu"), "tiny")
    # the profile's peak: pool at twice the largest point, plus the fp32 draw on CPU
    assert profile_peak_bytes([1e9, 3e9], 0, torch.device("cpu"), 4.0) == pytest.approx(2 * 3e9 * 2)
    assert profile_peak_bytes([1e9, 3e9], 0, torch.device("cuda"), 2.0) == pytest.approx(2 * 3e9)


def test_profile_command_refuses_405b_up_front(capsys, tmp_path, monkeypatch):
    import profiles.profiler.resources as R
    from profiles.profiler.run import main
    monkeypatch.setattr(R, "available_bytes", lambda device: 24 * 2 ** 30)
    assert main(["--models", "llama-3.1-405b", "--out", str(tmp_path), "--no-progress", "--no-collectives"]) == 2
    err = capsys.readouterr().err
    assert "--models" in err and "GiB" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())


def test_check_prices_the_op_graph_of_each_shape():
    target, drafter = check_models(["llama-3-8b", "qwama-0.5b", "qwen2.5-coder-1.5b"])
    assert target.name == "llama-3-8b" and drafter.name == "qwama-0.5b"
    names = {s.name for s in SHAPES}
    assert {"decode b1 x 2k", "decode b32 x 2k", "decode b128 x 2k", "prefill 2k"} <= names
    assert any(s.q > 1 for s in SHAPES) and any(s.tree for s in SHAPES) and any(s.model == "drafter" for s in SHAPES)

    class Constant:
        def op_seconds(self, op):
            return 1e-6

        def host_overhead_s(self, layers, tokens):
            return 5e-3

    shape = CheckShape("v", seqs=4, q=3, ctx=100, tree=True)
    total, by_kind = predicted_breakdown(Constant(), target, shape, "bf16")
    ops = step_ops(target, shape.step_shape(), Parallelism(), "bf16")
    assert total == pytest.approx(sum(op.count for op in ops) * 1e-6 + 5e-3)
    assert by_kind["host"] == 5e-3 and set(by_kind) - {"host"} == {op.kind for op in ops}
    assert all(s.kv_tokens > 0 for s in QUICK_SHAPES)


def test_old_tables_rounded_attn_pairs_still_give_whole_prefixes():
    """Tables written with 6 significant digits round attn_pairs (2,048-token chunk: 2098176 -> 2.09818e6);
    the predictor rounds the derived prefix of a row to whole tokens."""
    from profiles.predictor import _table_grid_value
    dims = {"q_tokens": 2048.0, "seqs": 1.0, "attn_pairs": float(f"{2048 * 2049 // 2:.6g}")}
    assert _table_grid_value("attn_prefill", dims, "prefix") == 0.0
