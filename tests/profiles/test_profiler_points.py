"""`draftsim profile --models M` checks, before any kernel is timed, that every (op kind, dims) point of M has a
bench and fits the profile table's columns (profiles.profiler.run.check_points). An MoE model's expert ops carry
moe_* dims and a hybrid model has conv1d/SSM ops: the run timed every point and then failed building the rows
("unknown profile dim 'moe_ep'", a line that named no flag), or failed at its first conv1d point with "no bench
for op kind 'conv1d'; allowed: ..., conv1d"."""
from __future__ import annotations

import pytest

from models.catalog import get_model
from profiles.profiler.benches import BENCH_KINDS, bench_problem
from profiles.profiler.plan import FULL_GRID, GPU_GRID, QUICK_GRID
from profiles.profiler.run import check_points


@pytest.mark.parametrize("name, says", [
    ("qwen3-30b-a3b", "--models: qwen3-30b-a3b: the profiler cannot time or table its activation ops (dims moe_ep"),
    ("nemotron-h-56b", "--models: nemotron-h-56b: the profiler cannot time or table its conv1d ops (dims channels"),
])
def test_a_model_with_ops_the_profiler_cannot_time_is_named(name, says):
    with pytest.raises(ValueError) as info:
        check_points([get_model(name)], QUICK_GRID, "fp32")
    assert str(info.value).startswith(says), str(info.value)


@pytest.mark.parametrize("grid", [QUICK_GRID, FULL_GRID, GPU_GRID], ids=["quick", "cpu", "gpu"])
def test_the_profiled_models_pass(grid):
    """The models of the shipped profiles (fingerprints: llama-68m, qwen2.5-coder-0.5b/1.5b, qwama-0.5b,
    llama-3-8b) and a 70B dense model are profiled as before."""
    check_points([get_model(n) for n in ("llama-68m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "qwama-0.5b",
                                         "llama-3-8b", "llama-3.1-70b")], grid, "bf16")


def test_bench_problem_names_the_benches_not_every_op_kind():
    """The error listed every op kind as allowed, the refused one included ("...; allowed: ..., conv1d")."""
    said = bench_problem("conv1d", {})
    assert said == f"no bench for op kind 'conv1d'; benches: {', '.join(BENCH_KINDS)}" and "conv1d" not in BENCH_KINDS
    assert bench_problem("attn_prefill", {"seqs": 1, "q_tokens": 16, "attn_pairs": 2048}) == \
        "attn_pairs=2048 is not c*o + c(c+1)/2 for chunk c=16"
    assert bench_problem("gemm", {"m": 1, "n": 2, "k": 3}) is None
