"""The profiling harness on a tiny grid: a well-formed table and fingerprint, plan ↔ op graph consistency."""
from __future__ import annotations

import json
import time

import pytest

pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

torch = pytest.importorskip("torch")

from models.catalog import get_model  # noqa: E402
from models.opgraph import attention_ops, dense_ops  # noqa: E402
from models.step import Parallelism, StepShape, chunk_attention_pairs  # noqa: E402
from profiles.profiler.benches import build_bench, prefill_prefix, tree_ancestor_mask  # noqa: E402
from profiles.profiler.plan import GridSpec, plan_points  # noqa: E402
from profiles.profiler.run import main, run_profile  # noqa: E402
from profiles.profiler.host_overhead import QUICK_SHAPES  # noqa: E402
from profiles.profiler.table import COLUMNS, HOST_OVERHEAD, read_fingerprint, read_table, row_dims  # noqa: E402
from profiles.profiler.timing import TimingConfig, rotation_copies, time_kernel  # noqa: E402

TINY = GridSpec(tokens=(1, 8), logits_tokens_max=8, prefill_chunks=(8,), prefill_prefixes=(0, 8),
                decode_seqs=(1, 2), decode_q_per_seq=(1, 3), decode_contexts=(0, 16), tree_q_per_seq=(3,),
                sampling_greedy=(1, 0), collective_ranks=(2,), collective_bytes=(4096,))
TINY_TIMING = TimingConfig(warmup=1, min_reps=3, max_reps=3, target_s=1e-3)


@pytest.fixture(scope="module")
def tiny_profile(tmp_path_factory):
    out = tmp_path_factory.mktemp("profile")
    run_profile("cpu", ["llama-68m"], out, quick=True, threads=1, grid=TINY, timing=TINY_TIMING,
                progress=False)
    return out


def test_table_is_well_formed(tiny_profile):
    table = read_table(tiny_profile)
    assert list(table.columns) == list(COLUMNS)
    expected = plan_points([get_model("llama-68m")], TINY, "fp32")
    compute = table[~table["kind"].isin(["allreduce", "alltoall", "p2p", HOST_OVERHEAD])]
    assert len(compute) == len(expected)
    assert set(table["kind"]) == {p.kind for p in expected} | {"allreduce", "alltoall", "p2p", HOST_OVERHEAD}
    assert (table["median_s"] > 0).all() and (table["reps"] >= 3).all()
    assert (table["p10_s"] <= table["median_s"]).all() and (table["median_s"] <= table["p90_s"]).all()
    # every compute row carries the op graph's dims, FLOPs and bytes for its point
    by_key = {(p.kind, tuple(sorted(p.all_dims().items()))): p for p in expected}
    for row in compute.to_dict("records"):
        point = by_key[(row["kind"], tuple(sorted(row_dims(row).items())))]
        assert row["flops"] == pytest.approx(point.flops, rel=1e-5)
        assert row["bytes"] == pytest.approx(point.bytes, rel=1e-5)
    collectives = table[table["kind"].isin(["allreduce", "alltoall"])]
    assert set(collectives["ranks"]) == {2} and set(collectives["bytes_msg"]) == {4096}


def test_host_overhead_rows_are_whole_passes_minus_their_kernels(tiny_profile):
    rows = read_table(tiny_profile).query("kind == @HOST_OVERHEAD")
    assert sorted(rows["tokens"]) == sorted(float(s.tokens) for s in QUICK_SHAPES)
    assert set(rows["layers"]) == {get_model("llama-68m").num_layers}
    assert (rows["flops"] == 0).all() and (rows["bytes"] == 0).all()
    # glue of a 2-layer pass: microseconds to milliseconds, never a whole second
    assert ((rows["median_s"] > 0) & (rows["median_s"] < 0.1)).all()
    assert read_fingerprint(tiny_profile)["host_overhead_models"] == ["llama-68m"]


def test_flush_runs_before_every_call_outside_the_timed_region():
    events = []
    result = time_kernel(lambda i: events.append("call"), torch.device("cpu"),
                         TimingConfig(warmup=2, min_reps=4, max_reps=4, target_s=1e-6),
                         flush=lambda: events.append("flush"))
    assert result.reps == 4
    assert events == ["flush", "call"] * 6


def test_a_profile_written_over_a_checked_one_drops_its_check(tmp_path):
    """`draftsim profile --check` then `draftsim profile` into the same --out kept the first profile's
    check.json ('passed': false) beside the new table, which it never checked."""
    out = tmp_path / "profile"
    run_profile("cpu", ["llama-68m"], out, quick=True, threads=1, grid=TINY, timing=TINY_TIMING,
                progress=False, collectives=False)
    (out / "check.json").write_text(json.dumps({"passed": False, "max_abs_error": 0.6}))   # as --check wrote it
    run_profile("cpu", ["llama-68m"], out, quick=True, threads=1, grid=TINY, timing=TINY_TIMING,
                progress=False, collectives=False)
    assert sorted(p.name for p in out.iterdir()) == ["fingerprint.json", "ops.csv"]


def test_an_interrupt_while_the_fingerprint_is_made_keeps_the_old_profile(tmp_path, monkeypatch):
    """The new ops.csv was written before the fingerprint was made (git and CPU-identity subprocesses): a
    Ctrl-C then left it beside the old profile's fingerprint.json (another run's threads and models)."""
    import profiles.profiler.run as run

    out = tmp_path / "profile"
    run_profile("cpu", ["llama-68m"], out, quick=True, threads=1, grid=TINY, timing=TINY_TIMING,
                progress=False, collectives=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "fingerprint", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_profile("cpu", ["smollm2-135m"], out, quick=True, threads=1, grid=TINY, timing=TINY_TIMING,
                    progress=False, collectives=False)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_fingerprint_records_device_threads_dtype_and_versions(tiny_profile):
    fp = read_fingerprint(tiny_profile)
    for key in ("device_id", "device_name", "cpu_model", "torch_version", "threads", "dtype", "date", "git_commit"):
        assert fp[key] not in (None, ""), key
    assert fp["device_id"] == "cpu-local" and fp["threads"] == 1 and fp["dtype"] == "fp32"
    assert fp["torch_version"] == torch.__version__ and fp["quick"] is True
    json.dumps(fp)


def test_fingerprint_records_the_command_as_typed(tmp_path):
    """`draftsim profile ...` was recorded as `python3 -m profiles.profiler profile ...`, which that module
    refuses ('unrecognized arguments: profile'), and --models as typed (LLAMA-68M): now the command that reruns
    the profile, quoted for a shell, and the catalog's names."""
    import shlex

    from profiles.profiler.run import MODULE_COMMAND, build_parser, command_line
    from simulator.workflows.profile import main as draftsim_profile

    argv = ["--device", "cpu", "--quick", "--models", "LLAMA-68M", "--no-collectives", "--threads", "1", "--quiet",
            "--out", str(tmp_path / "a profile")]
    assert draftsim_profile(argv) == 0
    fp = read_fingerprint(tmp_path / "a profile")
    assert fp["command"] == "draftsim profile " + shlex.join(argv) and fp["models"] == ["llama-68m"]
    assert build_parser().parse_args(shlex.split(fp["command"])[2:]).out == str(tmp_path / "a profile")
    assert command_line(MODULE_COMMAND, ["--out", "a b"]) == "python3 -m profiles.profiler --out 'a b'"


def test_plan_follows_the_op_graph():
    spec = get_model("qwen2.5-coder-0.5b")
    points = plan_points([spec], TINY, "fp32")
    keys = {(p.kind, p.dims) for p in points}
    for op in dense_ops(spec, 8, 8, Parallelism(), "fp32"):
        assert (op.kind, op.dims) in keys, op.name
    shape = StepShape(prefill_tokens=8, prefill_seqs=1, prefill_attn_pairs=chunk_attention_pairs(8, 8))
    assert {(op.kind, op.dims) for op in attention_ops(spec, shape, Parallelism(), "fp32")} <= keys
    qkv = [p for p in points if p.kind == "gemm" and dict(p.dims)["n"] == (14 + 2 * 2) * 64]
    assert len(qkv) == len(TINY.tokens) and all(p.extras == (("bias", 1.0),) for p in qkv)   # Qwen2 QKV bias


def test_prefill_prefix_inverts_attention_pairs():
    for chunk in (1, 7, 64):
        for prefix in (0, 5, 300):
            assert prefill_prefix(chunk, chunk_attention_pairs(chunk, prefix)) == prefix
    with pytest.raises(ValueError, match="attn_pairs"):
        prefill_prefix(4, 3)


def test_tree_mask_is_an_ancestor_relation():
    mask = tree_ancestor_mask(5, torch.device("cpu"))
    assert mask.diagonal().all() and mask[:, 0].all()
    assert mask[3].tolist() == [True, True, False, True, False]      # 3 → 1 → 0
    assert not mask[1, 2] and not mask[2, 1]                          # siblings


def test_rotation_and_timing_statistics():
    assert rotation_copies(10e6, 100e6) == 20
    assert rotation_copies(1e9, 100e6) == 1
    assert rotation_copies(1.0, 100e6, max_copies=8) == 8
    result = time_kernel(lambda i: time.sleep(0.002), torch.device("cpu"), TINY_TIMING)
    assert result.reps == 3 and 0.002 <= result.p10_s <= result.median_s <= result.p90_s
    with pytest.raises(ValueError, match="min_reps"):
        TimingConfig(min_reps=5, max_reps=2)


def test_bench_rejects_unknown_kind_and_bad_dims():
    with pytest.raises(ValueError, match="op kind"):
        build_bench("warp", {}, torch.float32, torch.device("cpu"), 0)
    with pytest.raises(ValueError, match="integer"):
        build_bench("norm", {"tokens": 1.5, "hidden": 8}, torch.float32, torch.device("cpu"), 0)


def test_quiet_prints_nothing_but_a_failed_check(capsys, tmp_path):
    """`draftsim profile` had no --quiet ('unrecognized arguments'), as every other long command has: now no
    progress and no report; a failed --check is one line on stderr and exit 1."""
    from simulator.workflows.profile import main as draftsim_profile

    code = draftsim_profile(["--device", "cpu", "--quick", "--models", "llama-68m", "--no-collectives", "--check",
                             "--threads", "1", "--quiet", "--out", str(tmp_path / "p")])
    captured = capsys.readouterr()
    assert captured.out == "" and (tmp_path / "p" / "check.json").is_file()
    passed = json.loads((tmp_path / "p" / "check.json").read_text())["passed"]
    assert code == (0 if passed else 1)
    assert captured.err.splitlines() == ([] if passed else [captured.err.strip()])
    assert passed or captured.err.startswith("draftsim profile: check FAILED: largest |error|")


def test_cli_reports_bad_input_with_exit_code_2(capsys, tmp_path):
    assert main(["--models", "no-such-model", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "no-such-model" in capsys.readouterr().err
    assert main(["--threads", "0", "--out", str(tmp_path), "--no-progress"]) == 2
    assert main(["--tp", "two", "--out", str(tmp_path), "--no-progress"]) == 2
    assert main(["--tp", "5", "--models", "llama-68m", "--out", str(tmp_path), "--no-progress"]) == 2
    assert not (tmp_path / "ops.csv").exists()


def test_gemms_are_planned_at_every_small_m_other_kinds_on_the_sparse_grid():
    """Small-m GEMM time is jagged in m (BLAS row blocking), so GEMMs — the LM head included — get a point
    at every m up to gemm_dense_tokens_max; smooth kinds (norms, activations…) keep the sparse grid."""
    spec = get_model("qwen2.5-coder-0.5b")
    grid = GridSpec(tokens=(1, 8), logits_tokens_max=8, prefill_chunks=(8,), prefill_prefixes=(0,),
                    decode_seqs=(1,), decode_q_per_seq=(1,), decode_contexts=(0,), tree_q_per_seq=(3,),
                    gemm_dense_tokens_max=5)
    points = plan_points([spec], grid, "fp32")
    gemm_m = {}
    for p in points:
        if p.kind == "gemm":
            d = dict(p.dims)
            gemm_m.setdefault((d["n"], d["k"]), set()).add(int(d["m"]))
    assert gemm_m[(spec.vocab_size, spec.hidden_size)] == {1, 2, 3, 4, 5, 8}   # LM head
    assert all(ms == {1, 2, 3, 4, 5, 8} for ms in gemm_m.values())
    norm_tokens = {int(dict(p.dims)["tokens"]) for p in points if p.kind == "norm"}
    assert norm_tokens == {1, 8}
    sparse = plan_points([spec], GridSpec(tokens=(1, 8), logits_tokens_max=8, prefill_chunks=(8,),
                                          prefill_prefixes=(0,), decode_seqs=(1,), decode_q_per_seq=(1,),
                                          decode_contexts=(0,), tree_q_per_seq=(3,)), "fp32")
    assert len(points) - len(sparse) == 4 * len(gemm_m)   # m = 2, 3, 4, 5 for each GEMM shape


def test_the_host_overhead_and_collectives_phases_report_progress(tmp_path, monkeypatch):
    """After the op grid, the host overhead's whole passes and the collectives ran with one line
    ("host overhead: ...") or none at all (the collectives: spawning ranks and timing up to 64 MiB): minutes that
    looked hung under `draftsim profile`. Each is now a step of the caller's reporter. Here both are made slow
    and the reporter prints every 0.02 s, to a buffer."""
    import io

    import profiles.profiler.run as run
    from simulator.console.progress import Progress

    buffer = io.StringIO()
    overhead, collectives = run.time_host_overhead, run.time_collectives
    monkeypatch.setattr(run, "time_host_overhead", lambda *a, **k: (time.sleep(0.2), overhead(*a, **k))[1])
    monkeypatch.setattr(run, "time_collectives", lambda *a, **k: (time.sleep(0.2), [])[1])   # (spawned: a minute)
    def reporter(desc, total, unit):
        return Progress(desc, total=total, unit=unit, stream=buffer, tty=False, interval_s=0.02)

    run_profile("cpu", ["llama-68m"], tmp_path / "p", quick=True, threads=1, grid=TINY, timing=TINY_TIMING,
                progress=reporter)
    lines = buffer.getvalue().splitlines()
    for desc in ("host overhead: whole passes of llama-68m", "collectives: 2 ranks"):
        assert any(line.startswith(f"draftsim: {desc}: ") and line.endswith(", done") for line in lines), lines
