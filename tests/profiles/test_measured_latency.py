"""The measured GPU latency source (profiles.measured): exact at measured points, interpolation and
extrapolation rules, layout mapping, version resolution, errors and the fallback without the package —
on small synthetic tables in the package's schema, and on the real tables when the package is installed."""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from models.ops import ALLREDUCE, ATTN_DECODE, ATTN_PREFILL, GEMM, NORM, Op
from profiles import measured
from profiles.measured import source as src
from profiles.measured.ideal import Peaks, gemm as ideal_gemm
from profiles.hardware import get_hardware
from profiles.roofline import RooflineLatencyModel
from profiles.select import LatencySourceConfig, select_latency

MS = 1e-3


def _gemm_op(m, n, k, dtype="bf16", groups=1.0):
    w = 1.0 if dtype == "fp8" else 2.0
    dims = {"m": m, "n": n, "k": k}
    if groups != 1.0:
        dims["groups"] = groups
    return Op.make(GEMM, "gemm", 2 * groups * m * n * k, groups * (2 * m * (k + n) + w * k * n), 1, **dims)


def _synthetic_gemm_ms(m, n, k):
    return 0.005 + 2.0 * m * n * k / 700e12 * 1e3 + (2.0 * n * k) / 3.0e12 * 1e3


def _write_tables(root, system="h100_sxm", framework="vllm", versions=("1.0.0", "1.2.0")):
    """A fake package tree: GEMM (bf16 + fp8), attention and comm tables on small grids."""
    base = root / system
    rows = []
    for m in (1, 16, 256, 4096):
        for n in (64, 1024, 8192):
            for k in (64, 1024, 8192):
                for dt, scale in (("bfloat16", 1.0), ("fp8", 0.6)):
                    rows.append({"framework": "VLLM", "version": "x", "device": "H100", "op_name": "gemm",
                                 "kernel_source": "torch" if dt == "bfloat16" else "cutlass", "gemm_dtype": dt,
                                 "m": m, "n": n, "k": k, "latency": scale * _synthetic_gemm_ms(m, n, k)})
    ctx, gen = [], []
    for b in (1, 4, 16):
        for s in (16, 256, 2048):
            for h, kv in ((8, 8), (32, 8)):
                common = {"framework": "VLLM", "version": "x", "device": "H100", "kernel_source": "fa3",
                          "batch_size": b, "num_heads": h, "num_key_value_heads": kv, "head_dim": 128,
                          "beam_width": 1, "attn_dtype": "bfloat16", "kv_cache_dtype": "bfloat16", "window_size": 0}
                ctx.append({**common, "op_name": "context_attention", "isl": s, "step": 0,
                            "latency": 0.01 + 1e-6 * b * h * s * s / 64})
                gen.append({**common, "op_name": "generation_attention", "isl": 1, "step": s - 1,
                            "latency": 0.011 + 1e-6 * b * kv * s / 8})
    comm = [{"framework": "vLLM", "version": "x", "device": "H100", "op_name": "all_reduce", "kernel_source": "c",
             "allreduce_dtype": "bfloat16", "num_gpus": g, "message_size": size,
             "latency": 0.004 + size * 2 / 400e9 * 1e3, "backend": backend}
            for g in (2, 4, 8) for size in (128, 1 << 16, 1 << 24) for backend in ("vllm_graph", "vllm_eager")]
    moe = [{"framework": "VLLM", "version": "x", "device": "H100", "op_name": "moe", "kernel_source": "triton",
            "moe_dtype": "bfloat16", "num_tokens": t, "hidden_size": 1024, "inter_size": 512, "topk": 2,
            "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": 1, "distribution": dist,
            "latency": (0.02 + 1e-4 * t) * (1.0 if dist == "balanced" else 3.0)}
           for t in (1, 16, 256, 4096) for dist in ("balanced", "power_law_1.2")]
    # a second kernel measured on another configuration only (16 experts): test_a_kernel_of_the_release_...
    moe += [{"framework": "VLLM", "version": "x", "device": "H100", "op_name": "moe", "kernel_source": "marlin_x",
             "moe_dtype": "bfloat16", "num_tokens": t, "hidden_size": 1024, "inter_size": 512, "topk": 2,
             "num_experts": 16, "moe_tp_size": 1, "moe_ep_size": 1, "distribution": "balanced",
             "latency": 0.05 + 3e-4 * t} for t in (1, 16, 256, 4096)]
    for version in versions:
        for folder, name, data in (("moe", "moe_perf.parquet", moe), ("gemm", "gemm_perf.parquet", rows),
                                   ("attention", "context_attention_perf.parquet", ctx),
                                   ("attention", "generation_attention_perf.parquet", gen),
                                   ("comm", "custom_allreduce_perf.parquet", comm)):
            d = base / folder / framework / version
            d.mkdir(parents=True, exist_ok=True)
            pd.DataFrame(data).to_parquet(d / name)
    return rows


@pytest.fixture
def synthetic(tmp_path, monkeypatch):
    root = tmp_path / "systems" / "data"
    rows = _write_tables(root)
    monkeypatch.setattr(src, "data_root", lambda: root)
    src.framework_versions.cache_clear()
    yield rows
    src.framework_versions.cache_clear()


def test_exact_at_every_measured_gemm_point(synthetic):
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    for r in synthetic:
        if r["gemm_dtype"] != "bfloat16":
            continue
        got = model.op_seconds(_gemm_op(r["m"], r["n"], r["k"]))
        assert got == pytest.approx(r["latency"] * MS, rel=1e-12)


def test_interpolation_is_a_power_law_between_neighbours_and_monotone(synthetic):
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    lo, hi = model.op_seconds(_gemm_op(16, 1024, 1024)), model.op_seconds(_gemm_op(256, 1024, 1024))
    prev = lo
    for m in (20, 40, 64, 100, 200):
        t = model.op_seconds(_gemm_op(m, 1024, 1024))
        assert lo <= prev <= t <= hi
        w = (math.log1p(m) - math.log1p(16)) / (math.log1p(256) - math.log1p(16))
        assert t == pytest.approx(math.exp((1 - w) * math.log(lo) + w * math.log(hi)), rel=1e-12)
        prev = t


def test_extrapolation_scales_with_the_ideal_time_from_the_edge(synthetic):
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    edge = model.op_seconds(_gemm_op(4096, 8192, 8192))
    far = model.op_seconds(_gemm_op(32768, 8192, 8192))
    peaks = Peaks.of(get_hardware("h100-sxm"), "bf16")
    ratio = ideal_gemm(peaks, 2.0, 2.0, 32768, 8192, 8192) / ideal_gemm(peaks, 2.0, 2.0, 4096, 8192, 8192)
    assert far == pytest.approx(edge * ratio, rel=1e-12)
    assert model.coverage()["gemm"]["approximate"] == 1
    # Continuous at the edge.
    assert model.op_seconds(_gemm_op(4096 * 1.0001, 8192, 8192)) == pytest.approx(edge, rel=1e-3)


def test_grouped_gemm_is_one_gemm_with_the_groups_in_k(synthetic):
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    assert model.op_seconds(_gemm_op(16, 1024, 1024, groups=8)) == model.op_seconds(_gemm_op(16, 1024, 8192))


def test_fp8_uses_its_own_table(synthetic):
    bf16 = measured.load_measured("h100-sxm", "bf16", "vllm").op_seconds(_gemm_op(256, 1024, 1024))
    fp8 = measured.load_measured("h100-sxm", "fp8", "vllm").op_seconds(_gemm_op(256, 1024, 1024, "fp8"))
    assert fp8 == pytest.approx(0.6 * bf16, rel=1e-12)


@pytest.mark.parametrize("framework, stood_in", [("vllm", True), ("sglang", False)])
def test_eager_timed_fp8_block_rows_are_priced_from_the_graph_timed_fp8_rows(tmp_path, monkeypatch, framework,
                                                                               stood_in):
    """A vLLM table's fp8_block rows (eager: each carries a ~50 µs launch gap here) price as its fp8 rows do;
    another framework's fp8_block rows as measured (EAGER_GEMM_STAND_INS)."""
    root = tmp_path / "systems" / "data"
    _write_tables(root, framework=framework)
    path = root / f"h100_sxm/gemm/{framework}/1.2.0/gemm_perf.parquet"
    frame = pd.read_parquet(path)
    block = frame[frame.gemm_dtype == "fp8"].assign(gemm_dtype="fp8_block", kernel_source="deepgemm",
                                                    latency=lambda f: f.latency + 0.05)
    pd.concat([frame, block]).to_parquet(path)
    monkeypatch.setattr(src, "data_root", lambda: root)
    src.framework_versions.cache_clear()
    try:
        op = _gemm_op(16, 1024, 1024, "fp8")
        fp8 = measured.load_measured("h100-sxm", "fp8", framework).op_seconds(op)
        block_s = measured.load_measured("h100-sxm", "fp8_block", framework).op_seconds(op)
    finally:
        src.framework_versions.cache_clear()
    assert block_s == (fp8 if stood_in else pytest.approx(fp8 + 0.05 * MS, rel=1e-12))


def test_a_table_of_toy_shapes_counts_as_unmeasured(synthetic, tmp_path):
    """A dtype measured only at launch-bound toy shapes (n, k <= 128, as aiconfigurator-core 0.12.0's
    rtx_pro_6000_server vllm fp8_block table) would extrapolate its launch time by the FLOP ratio to a real
    weight (146 s for one llama-3-8b decode step): it is no measured table, named as such."""
    from profiles.measured.tables import MIN_GEMM_WEIGHT_EXTENT
    path = tmp_path / "systems/data/h100_sxm/gemm/vllm/1.2.0/gemm_perf.parquet"
    toy = [{**synthetic[0], "gemm_dtype": "fp8_block", "kernel_source": "cutlass_block", "m": m, "n": n, "k": k,
            "latency": 0.18} for m in (1, 16, 256) for n in (32, 64, 128) for k in (32, 64, 128)]
    pd.concat([pd.read_parquet(path), pd.DataFrame(toy)]).to_parquet(path)
    assert 128 < MIN_GEMM_WEIGHT_EXTENT <= 8192
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    assert "fp8_block" not in model.gemm.dtypes and "fp8" in model.gemm.dtypes
    with pytest.raises(measured.MeasuredDataError) as err:
        measured.load_measured("h100-sxm", "fp8_block", "vllm")
    assert err.value.field == "cluster.dtype" and "measured: bf16, fp16, fp8 " in str(err.value)


def _decode_op(seqs, ctx, q=1, heads=32, kv=8):
    return Op.make(ATTN_DECODE, "attn_decode", 1.0, 1.0, 1, ctx_per_seq=ctx, heads=heads, kv_heads=kv,
                   head_dim=128, q_per_seq=q, seqs=seqs, tree=0.0)


def test_attention_mapping_rules(synthetic):
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    # Generation: KV length = cached context + query tokens; exact at measured points.
    assert model.op_seconds(_decode_op(4, 255)) == pytest.approx((0.011 + 1e-6 * 4 * 8 * 256 / 8) * MS, rel=1e-12)
    # q query tokens per sequence = q× the query heads (GQA packing): 8 heads × 4 tokens = the 32-head layout.
    assert model.op_seconds(_decode_op(4, 252, q=4, heads=8)) == pytest.approx(
        model.op_seconds(_decode_op(4, 252 + 3, q=1, heads=32)), rel=1e-12)
    # An unmeasured layout with a measured heads/kv ratio: same work items, batch rescaled (16/16 at b=1
    # is the measured 8/8 layout at b=2).
    assert model.op_seconds(_decode_op(1, 255, heads=16, kv=16)) == pytest.approx(
        model.op_seconds(_decode_op(2, 255, heads=8, kv=8)), rel=1e-12)
    # Prefill of a chunk after a cached prefix: the full prompt's time × the chunk's share of the pairs.
    c, o = 256, 1792
    pairs = c * o + c * (c + 1) // 2
    op = Op.make(ATTN_PREFILL, "attn_prefill", 1.0, 1.0, 1, attn_pairs=pairs, heads=32, kv_heads=8, head_dim=128,
                 q_tokens=c, seqs=1)
    full = (0.01 + 1e-6 * 1 * 32 * 2048 * 2048 / 64) * MS
    assert model.op_seconds(op) == pytest.approx(full * pairs / (2048 * 2049 / 2), rel=1e-12)


def test_collectives_use_the_graph_mode_custom_allreduce(synthetic):
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    op = Op.make(ALLREDUCE, "ar", 0.0, 2.0 * (1 << 16), 1, bytes=2.0 * (1 << 16), ranks=4)
    assert model.op_seconds(op) == pytest.approx((0.004 + (1 << 16) * 2 / 400e9 * 1e3) * MS, rel=1e-12)
    across = Op.make(ALLREDUCE, "ar", 0.0, 1e6, 1, bytes=1e6, ranks=16)  # across nodes: roofline
    assert model.op_seconds(across) == RooflineLatencyModel("h100-sxm").op_seconds(across)


def test_kinds_without_tables_are_the_roofline_and_say_so(synthetic):
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    norm = Op.make(NORM, "norm", 4e6, 8e6, 1, tokens=1000, hidden=1000)
    assert model.op_seconds(norm) == RooflineLatencyModel("h100-sxm").op_seconds(norm)
    model.op_seconds(_gemm_op(16, 1024, 1024))
    kinds = model.describe()["op_kinds"]
    assert kinds["norm"]["source"] == "roofline"
    assert kinds["gemm"]["source"].endswith("h100_sxm/vllm 1.2.0")


def test_version_resolution_and_errors_name_the_field(synthetic):
    assert measured.available("h100-sxm") == {"vllm": ("1.0.0", "1.2.0")}
    assert measured.load_measured("h100-sxm", "bf16", "vllm").version == "1.2.0"
    assert measured.load_measured("h100-sxm", "bf16", "vllm", "1.0.0").version == "1.0.0"
    cases = [(("h100-sxm", "bf16", "sglang"), "cluster.latency.framework", "vllm: 1.0.0, 1.2.0"),
             (("h100-sxm", "bf16", "vllm", "0.9.0"), "cluster.latency.version", "1.0.0, 1.2.0"),
             (("h200", "bf16", "vllm"), "cluster.hardware", "h100-sxm"),
             (("h100-sxm", "fp32", "vllm"), "cluster.dtype", "bf16, fp16, fp8")]
    for args, field, listed in cases:
        with pytest.raises(measured.MeasuredDataError) as err:
            measured.load_measured(*args)
        assert err.value.field == field and listed in str(err.value)


def test_without_the_package_auto_falls_back_to_the_roofline_with_one_warning(monkeypatch):
    monkeypatch.setattr(src, "data_root", lambda: None)
    with pytest.warns(RuntimeWarning, match="roofline.*aiconfigurator-core"):
        model = select_latency("h100-sxm", "bf16")
    assert isinstance(model, RooflineLatencyModel)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(select_latency("cpu-local", "fp32"), RooflineLatencyModel)  # never covered: silent
    with pytest.raises(measured.MeasuredDataError, match="pip install"):
        select_latency("h100-sxm", "bf16", LatencySourceConfig(source="measured"))


# ---- the real tables (the package is part of the test install: extra gpu-data) --------------------------
real = pytest.mark.skipif(src.data_root() is None, reason="aiconfigurator-core not installed (extra gpu-data)")


@real
def test_real_tables_are_exact_at_measured_gemm_points():
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    path = model.source.path(src.GEMM)
    table = pd.read_parquet(path)
    table = table[(table["gemm_dtype"] == "bfloat16") & (table["kernel_source"] == model.gemm.kernel("bf16"))]
    sample = table.sample(200, random_state=0)
    medians = table.groupby(["m", "n", "k"])["latency"].median()
    for r in sample.itertuples():
        assert model.op_seconds(_gemm_op(r.m, r.n, r.k)) == pytest.approx(medians[(r.m, r.n, r.k)] * MS, rel=1e-9)


@real
@pytest.mark.parametrize("hardware", ["h100-sxm", "h200", "a100-80gb", "b200", "l40s"])
def test_real_tables_load_for_every_catalog_gpu_they_cover(hardware):
    for framework, versions in measured.available(hardware).items():
        model = measured.load_measured(hardware, "bf16", framework, versions[-1])
        t1 = model.op_seconds(_gemm_op(1, 4096, 4096))
        t2 = model.op_seconds(_gemm_op(4096, 4096, 4096))
        assert 1e-6 < t1 < t2 < 1e-2
        assert np.isfinite(model.op_seconds(_decode_op(8, 1000)))


@real
def test_real_fp8_block_steps_on_every_gpu_are_below_the_bf16_ones():
    """Every measured GPU's fp8_block decode step (batch 8: weight-bound) costs less than its bf16 one, whose
    weights are twice the bytes (the rtx-pro-6000 vllm fp8_block table of toy shapes priced a llama-3-8b step
    at 146 s against 12 ms in bf16; the vLLM tables' eager-timed fp8_block rows, up to ~13x a bf16 step on
    gb300, are priced from their graph-timed fp8 rows: profiles.measured.tables.EAGER_GEMM_STAND_INS)."""
    from simulator.workflows.estimate import estimate_step
    for hardware in sorted(h for h in measured.SYSTEMS if get_hardware(h).weight_dtype_error("fp8_block") is None):
        bf16 = estimate_step("llama-3-8b", hardware, batch=8, context_tokens=1024)["kernel_seconds"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # (the roofline where no fp8_block table is usable)
            fp8_block = estimate_step("llama-3-8b", hardware, dtype="fp8_block", batch=8,
                                      context_tokens=1024)["kernel_seconds"]
        assert 0.4 * bf16 < fp8_block < bf16, (hardware, bf16, fp8_block)


@real
def test_real_vllm_fp8_block_gemms_are_priced_from_its_graph_timed_fp8_rows():
    """aiconfigurator's vLLM collector times fp8_block GEMMs eagerly (collector/vllm/collect_gemm.py,
    `use_cuda_graph=gemm_type != "fp8_block"`): vLLM 0.24.0's H100 rows for a 4096×4096 GEMM at m = 16 take
    ~59 µs, where SGLang's graph-timed fp8_block rows of the same GPU take ~11 µs. Priced from vLLM's
    graph-timed per-tensor fp8 rows, a decode-sized GEMM lands with SGLang's; SGLang's own fp8_block rows
    stay as measured."""
    vllm = measured.load_measured("h100-sxm", "fp8_block", "vllm", "0.24.0")
    table = pd.read_parquet(vllm.source.path(src.GEMM))
    eager = table[(table.gemm_dtype == "fp8_block") & (table.m == 16) & (table.n == 4096) & (table.k == 4096)]
    assert eager.latency.min() * MS > 50e-6                                        # the eager rows
    op = _gemm_op(16, 4096, 4096, "fp8")
    priced = vllm.op_seconds(op)
    assert priced == measured.load_measured("h100-sxm", "fp8", "vllm", "0.24.0").op_seconds(op)
    assert 8e-6 < priced < 16e-6
    assert "eager-timed" in vllm.gemm.kernel("fp8_block")
    sglang = measured.load_measured("h100-sxm", "fp8_block", "sglang", "0.5.14")
    sglang_rows = pd.read_parquet(sglang.source.path(src.GEMM))
    graph = sglang_rows[(sglang_rows.gemm_dtype == "fp8_block") & (sglang_rows.m == 16) & (sglang_rows.n == 4096)
                        & (sglang_rows.k == 4096)]
    assert sglang.op_seconds(op) == pytest.approx(graph.latency.median() * MS, rel=1e-9)
    assert "eager" not in sglang.gemm.kernel("fp8_block")
    assert priced == pytest.approx(sglang.op_seconds(op), rel=0.3)


def test_fused_moe_layers_are_priced_from_the_moe_table(synthetic):
    from models.opgraph import dense_ops
    from models.spec import ModelSpec
    from models.step import Parallelism
    spec = ModelSpec(name="tiny-moe", family="t", hidden_size=1024, num_layers=2, num_heads=8, num_kv_heads=8,
                     head_dim=128, intermediate_size=512, vocab_size=1000, num_experts=8, experts_per_token=2,
                     moe_intermediate_size=512)
    model = measured.load_measured("h100-sxm", "bf16", "vllm")
    ops = {op.name: op for op in dense_ops(spec, 16, 16, Parallelism(1, 1), "bf16")}
    # The layer's balanced-routing time at 16 tokens, on the gate_up op; the activation and down ops are
    # inside the same fused kernel.
    assert model.op_seconds(ops["moe_gate_up"]) == pytest.approx((0.02 + 1e-4 * 16) * MS, rel=1e-12)
    assert model.op_seconds(ops["moe_act"]) == 0.0 and model.op_seconds(ops["moe_down"]) == 0.0
    # A configuration the table lacks (tp 2): the GEMM rule prices the three ops.
    tp2 = {op.name: op for op in dense_ops(spec, 16, 16, Parallelism(2, 1), "bf16")}
    assert model.op_seconds(tp2["moe_down"]) > 0.0
    assert model.op_seconds(tp2["moe_act"]) == RooflineLatencyModel("h100-sxm").op_seconds(tp2["moe_act"])


def test_a_kernel_of_the_release_prices_other_configurations_at_its_efficiency_per_rows_per_expert(synthetic):
    """profiles.measured.moe `_kernel_seconds`: a configuration the kernel timed is its own rows; another one is its
    ideal time times the kernel's measured over ideal time at the same rows per expert on the configuration it
    timed, reported as approximate; without the kernel, the tables' own rows as before."""
    from profiles.measured.moe import WEIGHT_BYTES, _ideal
    table = measured.load_measured("h100-sxm", "bf16", "vllm").moe
    own = (1024, 512, 2, 16, 1, 1)
    assert table.seconds("bf16", *own, 2 * 256, kernel="marlin")[0] == pytest.approx((0.05 + 3e-4 * 256) * MS)
    other = (1024, 512, 2, 8, 1, 1)   # timed with the triton kernel only
    assert table.seconds("bf16", *other, 2 * 256)[0] == pytest.approx((0.02 + 1e-4 * 256) * MS)
    seconds, approximate = table.seconds("bf16", *other, 2 * 256, kernel="marlin")
    # 256 tokens × 2 / 8 experts = 64 rows per expert = 512 tokens on the 16-expert configuration
    there, _ = table.seconds("bf16", *own, 2 * 512, kernel="marlin")
    peaks = table._peaks
    expected = _ideal(peaks, WEIGHT_BYTES["bf16"], other, (256,)) * there / _ideal(peaks, WEIGHT_BYTES["bf16"], own, (512,))
    assert approximate and seconds == pytest.approx(expected, rel=1e-12)
    assert table.seconds("bf16", *other, 2 * 256, kernel="cutlass") is None   # a kernel never timed: the caller's


@real
def test_every_moe_configuration_is_priced_with_the_kernel_measured_for_it():
    """The tables measure each MoE configuration with the kernel the framework picks for it (vLLM 0.24's
    fp8_block on H100: Triton experts at EP 1, FlashInfer CUTLASS at EP > 1): a configuration measured with
    the less common kernel is still priced from the table, at its own measured points."""
    from models.opgraph import dense_ops
    from models import get_model
    from models.step import Parallelism
    model = measured.load_measured("h100-sxm", "fp8_block", "vllm", "0.24.0")
    table = pd.read_parquet(model.source.path(src.MOE))
    spec = get_model("qwen3-30b-a3b")
    rows = table[(table["moe_dtype"] == "fp8_block") & (table["hidden_size"] == spec.hidden_size)
                 & (table["inter_size"] == spec.moe_intermediate_size) & (table["topk"] == spec.experts_per_token)
                 & (table["num_experts"] == spec.num_experts) & (table["moe_tp_size"] == 1)
                 & (table["moe_ep_size"] == 1) & (table["distribution"] == "balanced")]
    assert rows["kernel_source"].nunique() == 1 and rows["kernel_source"].iloc[0] != model.moe.kernel("fp8_block").split("+")[0]
    ops = {op.name: op for op in dense_ops(spec, 32, 32, Parallelism(1, 1), "fp8_block")}
    measured_32 = rows[rows["num_tokens"] == 32]["latency"].median() * MS
    assert model.op_seconds(ops["moe_gate_up"]) == pytest.approx(measured_32, rel=1e-9)
    assert model.op_seconds(ops["moe_down"]) == 0.0


@real
def test_sliding_window_prefill_is_priced_from_the_measured_window_kernel():
    """gpt-oss's sliding-window layers (window 128): a fresh prompt's window op is the table's measured
    window-128 FA3 kernel at that prompt, not the full causal prompt (before: prefix_per_seq came out
    negative from the window's pairs, was clipped to 0, and the op cost the full 8192-token causal prompt,
    5.8x the window kernel); a chunk after a cached prefix pays its share of the window prompt's pairs; a
    window the table did not measure is priced by its pairs' share of the full causal prompt."""
    from models import get_model
    from models.opgraph import attention_ops, window_pairs
    from models.step import Parallelism, StepShape
    model = measured.load_measured("h100-sxm", "mxfp4", "vllm", "0.24.0")
    spec = get_model("gpt-oss-120b")
    table = pd.read_parquet(model.source.path(src.CONTEXT_ATTENTION))
    rows = table[(table["kv_cache_dtype"] == "bfloat16") & (table["num_heads"] == 64)
                 & (table["num_key_value_heads"] == 8) & (table["head_dim"] == 64) & (table["batch_size"] == 1)]

    def measured_ms(isl, window):
        return rows[(rows["isl"] == isl) & (rows["window_size"] == window)]["latency"].median()
    window_ms, full_ms = measured_ms(8192, 128), measured_ms(8192, 0)

    def ops(tokens, prefix=0, window_spec=spec):
        shape = StepShape(prefill_tokens=tokens, prefill_seqs=1,
                          prefill_attn_pairs=tokens * prefix + tokens * (tokens + 1) // 2)
        return {op.name: op for op in attention_ops(window_spec, shape, Parallelism(1, 1), "mxfp4")}

    fresh = ops(8192)
    assert model.op_seconds(fresh["attn_prefill"]) == pytest.approx(full_ms * MS, rel=1e-9)
    assert model.op_seconds(fresh["attn_prefill_window"]) == pytest.approx(window_ms * MS, rel=1e-9)
    assert window_ms < full_ms / 4
    # 2048 tokens after 6144 cached: the window kernel's 8192-token prompt times the chunk's share of its
    # pairs, never below a fresh 2048-token prompt (which binds here: the kernel is not yet linear at 2048)
    chunk = ops(2048, 6144)["attn_prefill_window"]
    share = window_pairs(6144, 2048, 128) / window_pairs(0, 8192, 128)
    expected = max(window_ms * share, measured_ms(2048, 128))
    assert model.op_seconds(chunk) == pytest.approx(expected * MS, rel=1e-9)
    assert model.op_seconds(chunk) < model.op_seconds(ops(2048, 6144)["attn_prefill"]) / 4
    # window 2000 (not measured): the full causal prompt's time times the window's share of its pairs
    wide = ops(8192, window_spec=dataclasses.replace(spec, sliding_window=2000))["attn_prefill_window"]
    causal = 8192 * 8193 / 2
    assert model.op_seconds(wide) == pytest.approx(full_ms * MS * window_pairs(0, 8192, 2000) / causal, rel=1e-9)
