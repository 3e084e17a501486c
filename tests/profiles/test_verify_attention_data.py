"""The FlashInfer verify-attention data (an H100, 2026-11-27), the script that measured it and the held-out check
that reads it (scenarios.validation.published.verify_attention).

The script needs a CUDA GPU and FlashInfer; here its index arithmetic, its masks and its refusals are checked,
the shipped runs for completeness, and the figures the data README states are recomputed from the CSVs.
"""
from __future__ import annotations

import csv
import json

import pytest
from paths import REPO

from scenarios.validation.gpu import measure_verify_attention as script
from scenarios.validation.published import verify_attention as check

DATA = REPO / "profiles" / "data" / "gpu-forwards" / "h100-sxm-2026-11-27-flashinfer"
RUNS = ("llama-3-8b-chain", "llama-3-8b-tree", "qwen2.5-0.5b-chain")
SCRIPT_VERSIONS = {"llama-3-8b-chain": "b520e3cc", "llama-3-8b-tree": "9e068412", "qwen2.5-0.5b-chain": "9e068412"}


def test_paged_batch_hand_worked():
    # 2 requests of 20 cached + 4 new tokens in 16-token pages: 24 tokens = 2 pages each, 8 in the last
    paged = script.paged_batch(2, 20, 4, 16)
    assert paged.qo_indptr == [0, 4, 8]
    assert paged.kv_indptr == [0, 2, 4]
    assert paged.kv_indices == [0, 1, 2, 3]
    assert paged.last_page_len == [8, 8] and paged.pages == 4
    exact = script.paged_batch(1, 28, 4, 16)   # 32 tokens: two full pages
    assert exact.last_page_len == [16] and exact.pages == 2
    with pytest.raises(ValueError, match="need batch, q, page"):
        script.paged_batch(0, 10, 1, 16)


def test_custom_mask_is_context_then_each_node_and_its_ancestors_per_request():
    pytest.importorskip("torch")
    mask = script.custom_mask(2, 3, 5)
    assert mask.shape == (2 * 5 * 8,)
    per_request = mask.view(2, 5, 8)
    assert bool((per_request[0] == per_request[1]).all()) and bool(per_request[:, :, :3].all())
    ancestors = {0: {0}, 1: {0, 1}, 2: {0, 2}, 3: {0, 1, 3}, 4: {0, 1, 4}}   # BFS binary tree
    for node, seen in ancestors.items():
        assert {j for j in range(5) if per_request[0, node, 3 + j]} == seen
    assert script.custom_mask(3, 2, 1).tolist() == [True] * 9   # q = 1: everything visible


def test_points_cover_the_grid_in_cache_order():
    full = script.points(quick=False)
    assert len(full) == len(script.BATCHES) * len(script.CONTEXTS) * len(script.QUERIES) == 120
    assert full[:len(script.QUERIES)] == [(1, 512, q) for q in script.QUERIES]   # every q on one cache first
    assert script.points(quick=True) == [(1, 512, 1), (1, 512, 4), (1, 512, 16), (8, 512, 1), (8, 512, 4),
                                         (8, 512, 16)]


def test_ratio_table_divides_by_the_q1_time():
    rows = [{"backend": "fa2", "batch": "8", "ctx": "512", "q": q, "median_s": s}
            for q, s in (("1", "2e-05"), ("4", "3e-05"), ("16", ""))]
    table = script.ratio_table(rows, "fa2").splitlines()
    assert table[2].split() == ["8", "512", "20.0", "1.00", "1.50"]


@pytest.mark.parametrize("argv, says", [(["--backends", "fa4"], "--backends: fa4; allowed: fa3, fa2"),
                                        (["--backends", ","], "--backends: none; allowed"),
                                        ([], "needs a CUDA GPU")])
def test_refusals_are_one_line_exit_2(tmp_path, capsys, argv, says):
    if not argv:   # (the GPU check imports torch; this machine has no CUDA GPU)
        torch = pytest.importorskip("torch")
        if torch.cuda.is_available():
            pytest.skip("a CUDA GPU is present")
    assert script.main(["--out", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_shipped_runs_are_complete():
    for run in RUNS:
        fingerprint = json.loads((DATA / run / "fingerprint.json").read_text())
        assert fingerprint["gpu"] == "NVIDIA H100 80GB HBM3" and fingerprint["flashinfer"] == "0.5.3"
        assert fingerprint["script_sha256"].startswith(SCRIPT_VERSIONS[run])
        with open(DATA / run / "attention.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert len(rows) == 240
        assert {(r["backend"], int(r["batch"]), int(r["ctx"]), int(r["q"])) for r in rows} == {
            (backend, b, c, q) for backend in ("fa3", "fa2") for b, c, q in script.points(quick=False)}
        for r in rows:
            refused = run == "llama-3-8b-tree" and r["backend"] == "fa3"
            assert (r["median_s"] == "") == refused
            assert ("operation not supported" in r["error"]) == refused


@pytest.fixture(scope="module")
def summary():
    found = check.points(check.read_runs(DATA))
    return found, {(layout, mask, backend, band): rest
                   for layout, mask, backend, band, *rest in check.summary(found)}


def test_every_timed_point_is_priced(summary):
    found, _ = summary
    assert len(found) == 600   # 3 runs x 2 backends x 120 points, less the 120 refused fa3 tree points
    assert all(p.predicted_s > 0 and p.measured_s > 0 for p in found)


def test_readme_growth_table_matches_the_data(summary):
    """The data README's table: median growth over q = 1 by packed rows, measured and predicted."""
    _, by = summary
    table = {("llama-3-8b", "fa3"): ((1.00, 1.03, 1.03), (1.00, 1.25, 1.75)),
             ("llama-3-8b", "fa2"): ((1.04, 1.27, 2.23), (1.00, 1.25, 1.75)),
             ("qwen2.5-0.5b", "fa3"): ((1.00, 1.01, 1.01), (1.00, 1.00, 1.25)),
             ("qwen2.5-0.5b", "fa2"): ((1.02, 1.39, 2.73), (1.00, 1.00, 1.25))}
    for (layout, backend), (measured, predicted) in table.items():
        for (_, _, band), want_measured, want_predicted in zip(check.ROW_BANDS, measured, predicted):
            n, level, got_measured, got_predicted, *_ = by[(layout, "causal", backend, band)]
            assert round(got_measured, 2) == want_measured and round(got_predicted, 2) == want_predicted
    tree = [round(by[("llama-3-8b", "tree", "fa2", band)][2], 2) for _, _, band in check.ROW_BANDS]
    assert tree == [1.57, 2.95, 5.56]


def test_readme_decode_level_matches_the_data(summary):
    """README: draftsim's one-query price is within a few per cent of FlashInfer's fa2 decode (median +3.1 %
    Llama, +5.4 % Qwen)."""
    _, by = summary
    assert round(100 * by[("llama-3-8b", "causal", "fa2", "q = 1")][1], 1) == 3.1
    assert round(100 * by[("qwen2.5-0.5b", "causal", "fa2", "q = 1")][1], 1) == 5.4


def test_readme_sglang_tree_growth_matches_the_data():
    """README: SGLang's tables price a tree as its FA3 cascade, median growth 1.59 / 2.33 / 3.85 by band."""
    by = {(layout, mask, backend, band): rest
          for layout, mask, backend, band, *rest in check.summary(check.points(check.read_runs(DATA), "sglang"))}
    growth = [round(by[("llama-3-8b", "tree", "fa2", band)][3], 2) for _, _, band in check.ROW_BANDS]
    assert growth == [1.59, 2.33, 3.85]


def test_cli_prints_the_summary_and_refuses_an_empty_folder(tmp_path, capsys):
    assert check.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("600 points priced with measured vllm kernels")
    assert check.main(["--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("verify_attention: error: --data:") and len(err.splitlines()) == 1
