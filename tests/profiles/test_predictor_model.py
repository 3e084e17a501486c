"""ProfiledLatencyModel on synthetic profiles whose truth is known, and on the shipped CPU profile."""
from __future__ import annotations

import dataclasses
import math
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from models.catalog import get_model
from models.ops import OP_KINDS, Op
from models.opgraph import step_ops
from models.step import Parallelism, StepShape, chunk_attention_pairs
from profiles.hardware import get_hardware
from profiles.predictor import ProfiledLatencyModel, load_latency_model, profile_dir_for
from profiles.profiler.plan import GridSpec, Point, plan_points
from profiles.profiler.table import make_row
from profiles.roofline import RooflineEfficiency, RooflineLatencyModel

TRUE_EFF = RooflineEfficiency(compute_fraction=0.4, memory_fraction=0.6, launch_s=2e-5, gemm_m_half=6.0,
                              gemm_nk_half=20.0, attention_compute_fraction=0.2, attention_memory_fraction=0.5)
SMALL_GRID = GridSpec(tokens=(1, 4, 16, 64, 256), logits_tokens_max=64, prefill_chunks=(4, 32, 256),
                      prefill_prefixes=(0, 64, 512), decode_seqs=(1, 4, 16), decode_q_per_seq=(1, 4),
                      decode_contexts=(0, 128, 1024), tree_q_per_seq=(4,), sampling_greedy=(1,))


def _point_op(p: Point) -> Op:
    return Op.make(p.kind, p.kind, p.flops, p.bytes, 1, **p.all_dims())


def _synthetic_table(truth, models=("llama-68m", "qwen2.5-coder-0.5b"), collectives=True) -> pd.DataFrame:
    points = plan_points([get_model(m) for m in models], SMALL_GRID, "fp32")
    rows = []
    for p in points:
        t = truth(_point_op(p))
        rows.append(make_row(p.kind, p.all_dims(), p.flops, p.bytes, t, 0.9 * t, 1.1 * t, 5))
    if collectives:
        # ring formulas of the roofline for 2 ranks: launch + hops·α + volume/bw, α = 1e-5, bw = 2 GB/s
        launch, alpha, bw = TRUE_EFF.launch_s, 1e-5, 2e9
        for size in (1024, 65536, 4 * 2 ** 20):
            for kind, hops, volume in (("allreduce", 2, size), ("alltoall", 1, size / 2), ("p2p", 1, size)):
                t = launch + hops * alpha + volume / bw
                dims = {"bytes": size} if kind == "p2p" else {"bytes": size, "ranks": 2}
                rows.append(make_row(kind, dims, 0.0, size, t, t, t, 5))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def roofline_truth():
    return RooflineLatencyModel("cpu-local", TRUE_EFF, dtype="fp32")


@pytest.fixture(scope="module")
def wiggly_model(roofline_truth):
    """Truth = roofline × a deterministic shape-dependent factor, so interpolation is not trivially exact."""
    def truth(op: Op) -> float:
        wiggle = 1.0 + 0.3 * math.sin(0.7 * math.log1p(op.flops + op.bytes))
        return roofline_truth.op_seconds(op) * wiggle
    table = _synthetic_table(truth)
    return ProfiledLatencyModel(table, hardware_id="cpu-local", dtype="fp32"), table


def test_exact_at_every_profiled_point(wiggly_model):
    model, table = wiggly_model
    for row in table.to_dict("records"):
        from profiles.profiler.table import row_dims
        op = Op.make(row["kind"], "x", row["flops"], row["bytes"], 1, **row_dims(row))
        assert model.op_seconds(op) == pytest.approx(row["median_s"], rel=1e-9)


def test_fit_recovers_the_efficiency_that_generated_the_profile(roofline_truth):
    table = _synthetic_table(roofline_truth.op_seconds, collectives=False)
    model = ProfiledLatencyModel(table, hardware_id="cpu-local", dtype="fp32")
    assert model.fit_rms_log < 1e-3
    for name in ("compute_fraction", "memory_fraction", "launch_s", "attention_compute_fraction",
                 "attention_memory_fraction"):
        assert getattr(model.efficiency, name) == pytest.approx(getattr(TRUE_EFF, name), rel=0.02), name


def test_fitted_efficiencies_positive_finite_and_collective_link_recovered(wiggly_model):
    model, _ = wiggly_model
    for field in dataclasses.fields(model.efficiency):
        value = getattr(model.efficiency, field.name)
        if isinstance(value, float):
            assert math.isfinite(value) and value > 0, field.name
    assert model.hardware.scaleup_bandwidth_bytes_per_s == pytest.approx(2e9, rel=0.05)


def test_gemm_monotone_between_grid_points(wiggly_model):
    model, _ = wiggly_model
    spec = get_model("qwen2.5-coder-0.5b")
    for name in ("qkv_proj", "gate_up_proj", "down_proj"):
        prices = []
        for m in range(1, 257):
            op = next(o for o in step_ops(spec, StepShape(decode_seqs=m), Parallelism(), "fp32") if o.name == name)
            prices.append(model.op_seconds(op))
        grid = [1, 4, 16, 64, 256]
        for lo, hi in zip(grid, grid[1:]):
            segment = np.array(prices[lo - 1:hi])
            diffs = np.diff(segment)
            assert np.all(diffs >= -1e-15) or np.all(diffs <= 1e-15), (name, lo, hi)


def test_outside_grid_falls_back_to_fitted_roofline_and_warns_once(wiggly_model):
    _, table = wiggly_model
    model = ProfiledLatencyModel(table, hardware_id="cpu-local", dtype="fp32")
    spec = get_model("llama-68m")
    edge = next(o for o in step_ops(spec, StepShape(prefill_tokens=256, prefill_seqs=256,
                                                    prefill_attn_pairs=256), Parallelism(), "fp32")
                if o.name == "down_proj")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        near = model.op_seconds(edge._replace(dims=(("k", 3072.0), ("m", 300.0), ("n", 768.0))))
        far = [model.op_seconds(edge._replace(flops=edge.flops * f, dims=(("k", 3072.0), ("m", 256.0 * f),
                                                                               ("n", 768.0))))
               for f in (8, 16, 32)]
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "gemm" in messages[0]
    edge_price = model.op_seconds(edge)
    assert near >= edge_price * 0.999
    assert far == sorted(far) and all(math.isfinite(f) and f > near for f in far)
    # beyond the edge the price is roofline × (measured/roofline at the edge)
    ratio = edge_price / model.roofline.op_seconds(edge)
    op = edge._replace(flops=edge.flops * 16, dims=(("k", 3072.0), ("m", 4096.0), ("n", 768.0)))
    assert model.op_seconds(op) == pytest.approx(model.roofline.op_seconds(op) * ratio, rel=1e-9)


def test_never_raises_on_any_op_kind_or_model(wiggly_model):
    model, _ = wiggly_model
    shape = StepShape(prefill_tokens=300, prefill_seqs=2, prefill_attn_pairs=chunk_attention_pairs(150, 40) * 2,
                      decode_seqs=5, query_tokens_per_seq=6, decode_context_tokens=5 * 700, tree_attention=True,
                      shared_context_tokens=3 * 256, shared_prefix_tokens=256, shared_prefix_seqs=3)
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("llama-68m", "qwen2.5-coder-1.5b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "gpt-oss-20b",
                     "qwen3-next-80b-a3b", "nemotron-h-56b"):   # hybrids: gated DeltaNet, Mamba-2 + conv1d
            spec = get_model(name)
            for par in (Parallelism(), Parallelism(tp=2, pp=2)):
                for op in step_ops(spec, shape, par, "fp32"):
                    seconds = model.op_seconds(op)
                    assert math.isfinite(seconds) and seconds > 0, op
                    seen.add(op.kind)
    assert seen == set(OP_KINDS)
    with pytest.raises(ValueError, match="kind"):
        model.op_seconds(Op.make("warp_drive", "x", 1.0, 1.0))


def test_prefill_chunks_priced_as_equal_single_chunks(wiggly_model):
    model, _ = wiggly_model
    spec = get_model("llama-68m")
    one = step_ops(spec, StepShape(prefill_tokens=32, prefill_seqs=1, prefill_attn_pairs=chunk_attention_pairs(32, 64)),
                   Parallelism(), "fp32")[-1]
    three = step_ops(spec, StepShape(prefill_tokens=96, prefill_seqs=3,
                                     prefill_attn_pairs=3 * chunk_attention_pairs(32, 64)), Parallelism(), "fp32")[-1]
    assert three.kind == one.kind == "attn_prefill"
    assert model.op_seconds(three) == pytest.approx(3 * model.op_seconds(one), rel=1e-9)


def test_bad_inputs_raise_value_error(wiggly_model):
    _, table = wiggly_model
    with pytest.raises(ValueError, match="hardware_id"):
        ProfiledLatencyModel(table)
    with pytest.raises(ValueError, match="far_factor"):
        ProfiledLatencyModel(table, hardware_id="cpu-local", far_factor=1.0)
    with pytest.raises(ValueError, match="profile_dir"):
        load_latency_model("cpu-local", profile_dir="/nonexistent/profile")
    with pytest.raises(ValueError, match="hardware"):
        load_latency_model("tpu-v9")


def test_load_latency_model_picks_profile_or_roofline():
    assert isinstance(load_latency_model("a100-80gb"), RooflineLatencyModel)    # no shipped profile
    assert isinstance(load_latency_model("h100-sxm", dtype="bf16"), ProfiledLatencyModel)   # profiles/data/h100-sxm
    assert isinstance(load_latency_model("h100-sxm", dtype="fp8"), RooflineLatencyModel)    # measured in bf16
    if profile_dir_for("cpu-local") is None:
        pytest.skip("no shipped cpu-local profile")
    started = time.perf_counter()
    model = load_latency_model("cpu-local", dtype="fp32")
    assert time.perf_counter() - started < 2.0
    assert isinstance(model, ProfiledLatencyModel)
    assert isinstance(load_latency_model("cpu-local", dtype="bf16"), RooflineLatencyModel)
    spec = get_model("qwen2.5-coder-1.5b")
    ops = step_ops(spec, StepShape(decode_seqs=4, query_tokens_per_seq=5, decode_context_tokens=2000),
                   Parallelism(), "fp32")
    assert all(math.isfinite(model.op_seconds(op)) and model.op_seconds(op) > 0 for op in ops)
    assert get_hardware("cpu-local").id == model.hardware_id


def test_host_overhead_interpolates_per_layer_in_log_tokens_and_steps_pay_it():
    from profiles.profiler.table import HOST_OVERHEAD
    truth = RooflineLatencyModel(get_hardware("cpu-local"), TRUE_EFF, "fp32").op_seconds
    table = _synthetic_table(truth, collectives=False)
    # 2-layer model: 1 ms per layer at 1 token, 3 ms per layer at 100 tokens; 24 layers: 0.5 ms flat
    host = [make_row(HOST_OVERHEAD, {"layers": 2, "tokens": 1}, 0, 0, 2e-3, 2e-3, 2e-3, 5),
            make_row(HOST_OVERHEAD, {"layers": 2, "tokens": 100}, 0, 0, 6e-3, 6e-3, 6e-3, 5),
            make_row(HOST_OVERHEAD, {"layers": 24, "tokens": 8}, 0, 0, 12e-3, 12e-3, 12e-3, 5)]
    model = ProfiledLatencyModel(pd.concat([table, pd.DataFrame(host)], ignore_index=True), "cpu-local")
    assert model.host_overhead_s(2, 1) == pytest.approx(2e-3)
    assert model.host_overhead_s(2, 10) == pytest.approx(2 * 2e-3)          # halfway in log(tokens)
    assert model.host_overhead_s(2, 1000) == pytest.approx(6e-3)             # constant beyond the grid
    assert model.host_overhead_s(4, 1) == pytest.approx(4e-3)                # nearest layer count (2), per layer
    assert model.host_overhead_s(24, 500) == pytest.approx(12e-3)
    assert model.host_overhead_s(2, 0) == 0.0
    assert ProfiledLatencyModel(table, "cpu-local").host_overhead_s(2, 10) == 0.0   # no rows: nothing added
    assert RooflineLatencyModel("h100-sxm").host_overhead_s(32, 10) == 0.0

    from simulator.cost.step_cost import ForwardCost
    spec = get_model("llama-68m")
    with_host = ForwardCost(spec, Parallelism(), model, "fp32")
    without = ForwardCost(spec, Parallelism(), ProfiledLatencyModel(table, "cpu-local"), "fp32")
    extra = with_host.exact_decode(4, 1, 400) - without.exact_decode(4, 1, 400)
    assert extra[0] == pytest.approx(model.host_overhead_s(spec.num_layers, 4)) and extra[1] == extra[2] == 0


def test_validation_picks_the_shipped_profile_of_this_machine(tmp_path, monkeypatch):
    """profiles/data/<id>--<machine>/ variants: the one measured on this device wins, else the default
    with a mismatch flag (validate then warns that it compares two machines)."""
    import json

    from profiles import predictor

    def shipped(name: str, device_name: str) -> None:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "ops.csv").write_text("kind\n")
        (folder / "fingerprint.json").write_text(json.dumps({"device_name": device_name}))

    monkeypatch.setattr(predictor, "DATA_DIR", tmp_path)
    shipped("cpu-local", "Intel(R) Xeon(R) Processor")
    shipped("cpu-local--amd-epyc", "AMD EPYC")
    shipped("cpu-localhost", "AMD EPYC")  # another id that merely starts alike: never a variant
    assert predictor.profile_dir_for_device("cpu-local", "AMD EPYC") == (tmp_path / "cpu-local--amd-epyc", True)
    assert predictor.profile_dir_for_device("cpu-local", "Intel(R) Xeon(R) Processor") == (tmp_path / "cpu-local", True)
    assert predictor.profile_dir_for_device("cpu-local", "Some ARM") == (tmp_path / "cpu-local", False)
    assert predictor.profile_dir_for_device("h100-sxm", "NVIDIA H100") == (None, False)
    # `draftsim profile` files a new machine's profile as the variant validate will pick, never over another
    from profiles.profiler.run import default_out_dir
    assert default_out_dir("cpu-local", "AMD EPYC") == tmp_path / "cpu-local--amd-epyc"
    assert default_out_dir("cpu-local", "Intel(R) Xeon(R) Processor") == tmp_path / "cpu-local"
    assert default_out_dir("cpu-local", "Some ARM v9") == tmp_path / "cpu-local--some-arm-v9"
    assert default_out_dir("h100-sxm", "NVIDIA H100 80GB HBM3") == tmp_path / "h100-sxm"


def test_a_hidden_cpu_model_name_does_not_make_two_cpus_one_machine(tmp_path, monkeypatch):
    """Issue 29: VMs show "Intel(R) Xeon(R) Processor" for different Xeons; the identity (family/model/stepping
    and L3) tells them apart, and fingerprints from before identities fall back to the L3 size."""
    import json

    from profiles import predictor
    from profiles.profiler.machine import same_machine
    from profiles.profiler.run import default_out_dir

    name = "Intel(R) Xeon(R) Processor"
    emr, other = "6/207/2, L3 314572800 bytes", "6/143/8, L3 110100480 bytes"
    old = {"device_name": name, "llc_bytes": 110100480}              # written before identities
    assert same_machine(old, name, other) and not same_machine(old, name, emr)
    assert same_machine({"device_name": name, "cpu_identity": emr}, name, emr)
    assert not same_machine({"device_name": name, "cpu_identity": other}, name, emr)
    assert same_machine({"device_name": "NVIDIA H100"}, "NVIDIA H100", None)   # GPUs: the name settles it

    monkeypatch.setattr(predictor, "DATA_DIR", tmp_path)
    folder = tmp_path / "cpu-local"
    folder.mkdir()
    (folder / "ops.csv").write_text("kind\n")
    (folder / "fingerprint.json").write_text(json.dumps(old))
    assert predictor.profile_dir_for_device("cpu-local", name, other) == (folder, True)
    assert predictor.profile_dir_for_device("cpu-local", name, emr) == (folder, False)
    assert default_out_dir("cpu-local", name, emr) == tmp_path / "cpu-local--intel-r-xeon-r-processor-6-207-2"
    assert default_out_dir("cpu-local", name, other) == folder
