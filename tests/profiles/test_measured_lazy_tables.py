"""The measured tables are read when first priced (issue 30: `draftsim estimate` ≤ 0.5 s): a dense decode step
reads the GEMM and generation-attention tables whole, only three columns of the context-attention and MoE
tables (what `latency_source` names: their dtypes and kernels), and neither the collectives nor the GDN
table. What the short reads name must be what the whole tables give: checked on every measured table the
installed package holds, against the rule applied to the whole table (dominant kernel per KV dtype for
attention, kernels most measured first per dtype for MoE)."""
from __future__ import annotations

import pytest

from profiles.hardware import get_hardware
from profiles.measured import attention, moe, source, tables
from profiles.measured import model as measured_model
from profiles.measured.attention import CONTEXT, GENERATION, AttentionTable
from profiles.measured.ideal import Peaks
from profiles.measured.moe import MOE_DTYPES, MoeTable
from profiles.measured.tables import KV_DTYPES, dominant_source, most_measured_first, read

pytestmark = pytest.mark.skipif(source.data_root() is None, reason="aiconfigurator-core is not installed")


def _sources():
    found = []
    for hardware_id in sorted(source.SYSTEMS):
        for framework, versions in source.available(hardware_id).items():
            for version in versions:
                found.append(source.resolve(hardware_id, framework, version))
    return found


def test_short_reads_name_what_the_whole_tables_give():
    checked = {"attention": 0, "moe": 0}
    seen = set()
    for src in _sources():
        peaks = Peaks.of(get_hardware(src.hardware_id), "bf16")
        for family, phase in ((source.CONTEXT_ATTENTION, CONTEXT), (source.GENERATION_ATTENTION, GENERATION)):
            path = src.path(family)
            if path is None or path in seen:
                continue
            seen.add(path)
            table = AttentionTable(path, phase, peaks)
            whole = read(path, attention._COLUMNS)
            if "window_size" in whole.columns:
                whole = whole.where(whole["window_size"] == 0)
            expected = {dt: str(dominant_source(part)["kernel_source"][0])
                        for dt, part in whole.groupby("kv_cache_dtype")}
            assert table.dtypes == [d for d, label in KV_DTYPES.items() if label in expected], path
            assert {d: table.kernel(d) for d in table.dtypes} == {d: expected[KV_DTYPES[d]] for d in table.dtypes}, path
            checked["attention"] += 1
        path = src.path(source.MOE)
        if path is not None and path not in seen:
            seen.add(path)
            table = MoeTable(path, peaks)
            whole = read(path, moe._COLUMNS)
            if "distribution" in whole.columns:
                whole = whole.where(whole["distribution"] == "balanced")
            by_dtype = {dt: part for dt, part in whole.groupby("moe_dtype")}
            for dtype, label in MOE_DTYPES.items():
                part = by_dtype.get(label)
                expected = None if part is None or part.empty else "+".join(most_measured_first(part, "kernel_source"))
                assert table.kernel(dtype) == expected, (path, dtype)
            checked["moe"] += 1
    assert checked["attention"] >= 4 and checked["moe"] >= 2, checked   # the package holds several systems


def test_a_dense_decode_step_reads_only_what_it_prices(monkeypatch):
    from simulator.workflows.estimate import estimate_step

    reads = []
    real = tables.read

    def recording(path, columns):
        reads.append((path.name, tuple(columns)))
        return real(path, columns)

    for module in (tables, attention, moe, measured_model.gdn):
        monkeypatch.setattr(module, "read", recording)
    measured_model._tables.cache_clear()
    measured_model.SHARED_PRICES.clear()
    try:
        result = estimate_step("llama-3.1-8b", "h100-sxm", batch=64, context_tokens=4096)
    finally:
        measured_model._tables.cache_clear()
        measured_model.SHARED_PRICES.clear()
    read_columns = {}
    for name, columns in reads:
        read_columns.setdefault(name, []).append(columns)
    assert set(read_columns) == {"gemm_perf.parquet", "generation_attention_perf.parquet",
                                 "context_attention_perf.parquet", "moe_perf.parquet"}, read_columns
    assert read_columns["context_attention_perf.parquet"] == [tuple(attention._INDEX)]
    assert read_columns["moe_perf.parquet"] == [tuple(moe._INDEX)]
    assert read_columns["generation_attention_perf.parquet"] == [tuple(attention._COLUMNS)]   # (its dtypes from it)
    kernels = result["latency_source"]["kernels"]   # named all the same
    assert set(kernels) == {"gemm", "moe", "context_attention", "generation_attention"}
    assert result["breakdown"]["attn_decode"] > 0 and result["breakdown"]["gemm"] > 0
