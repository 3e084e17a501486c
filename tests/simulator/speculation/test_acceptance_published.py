"""The published-acceptance registry: its contents, validation, the conversion rule (checked against the
chain sampler by Monte Carlo), selection, and `acceptance: {kind: published}` through the CLI."""
from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.speculation.acceptance import ChainAcceptance
from simulator.speculation.published import (REGISTRY_DIR, RegistryError, find_entry, load_registry,
                                             per_position_alphas, select)
from sim_helpers import scenario
from theory.chain import expected_tokens

L31 = "meta-llama/Llama-3.1-8B-Instruct"


def test_registry_covers_the_methods_and_cites_every_row():
    rows = load_registry()
    assert len(rows) >= 150
    methods = {r.method for r in rows}
    assert {"eagle", "eagle2", "eagle3", "mtp", "medusa", "draft_model", "ngram", "hydra"} <= methods
    assert {r.temperature for r in rows} >= {0.0, 1.0, None}
    for row in rows:
        assert row.source.url.startswith("https://") and row.locator, row.id
    # A few figures read back exactly as published (EAGLE-3 paper Table 1; vLLM #20780; DeepSeek-V3 §5.4.3).
    assert find_entry("eagle3-paper-t1-eagle3-llama-3.1-8b-mt-bench-temp0").tokens_per_step == 6.13
    assert find_entry("eagle3-paper-t1-eagle3-llama-3.3-70b-humaneval-temp1").tokens_per_step == 6.16
    assert find_entry("vllm-issue20780-eagle-llama-3.1-8b-mt-bench-k4").tokens_per_step == 2.39
    assert find_entry("deepseek-v3-report-mtp-second-token").survival == (0.875,)


@pytest.mark.parametrize("row", [r for r in load_registry() if r.depth is not None or r.survival], ids=lambda r: r.id)
def test_conversion_reproduces_the_published_tokens_per_step(row):
    alphas = per_position_alphas(row)
    if row.survival:
        assert np.allclose(np.cumprod(alphas), row.survival)
    else:
        assert len(alphas) == row.depth and len(set(alphas)) == 1
        assert expected_tokens(alphas[0], row.depth) == pytest.approx(row.tokens_per_step, abs=1e-9)


@pytest.mark.parametrize("entry_id", ["vllm-issue20780-eagle3-llama-3.1-8b-mt-bench-k3",
                                      "vllm-pr24344-ngram-llama-3.1-8b-blazedit-k5",
                                      "trtllm-blog7-ngram-scout-translation-k5-v23"])
def test_sampled_chain_emits_the_published_tokens_per_step(entry_id):
    """Monte Carlo of the simulator's own chain sampler at the published depth: its mean tokens per step
    is the published figure (the rule is consistent with how the DES draws accepted lengths)."""
    row = find_entry(entry_id)
    depth = row.depth
    model = ChainAcceptance.from_alphas(list(per_position_alphas(row)), depth, seed=3)
    n = 200_000
    tau = model.tau(np.arange(n), np.zeros(n, dtype=np.int64))
    se = tau.std() / np.sqrt(n)
    assert abs(1.0 + tau.mean() - row.mean_tokens) < 4.0 * se + 1e-9


def test_selection_prefers_per_position_data_then_the_nearest_chain():
    # The 8B EAGLE-3 head on MT-bench at T = 0 is published as chains K = 2..7 (vLLM) and trees: γ picks the chain.
    assert select(depth=3, method="eagle3", target=L31, dataset="mt-bench", temperature=0.0).depth == 3
    assert select(depth=12, method="eagle", target=L31, dataset="mt-bench", temperature=0.0).depth == 7
    with pytest.raises(RegistryError, match="give acceptance.entry"):
        select(depth=7, method="eagle3", target=L31, dataset="mt-bench", temperature=0.0)  # two K = 7 rows
    with pytest.raises(RegistryError, match="no published entry matches"):
        select(method="eagle3", target="meta-llama/Llama-2-7b-hf")
    with pytest.raises(RegistryError, match="acceptance.depth"):
        per_position_alphas(find_entry("spec-bench-medusa-vicuna-7b-a100-80gb"))
    medusa = per_position_alphas(find_entry("spec-bench-medusa-vicuna-7b-a100-80gb"), depth=4)
    assert expected_tokens(medusa[0], 4) == pytest.approx(2.32)


def _copy_registry(tmp_path, edit):
    target = tmp_path / "reg"
    shutil.copytree(REGISTRY_DIR, target)
    path = target / "acceptance.csv"
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    edit(rows)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return target


BAD_ROWS = {
    "shape": (lambda r: r[0].update(shape="bush"), "shape"),
    "source": (lambda r: r[0].update(source="nowhere"), "source"),
    "duplicate": (lambda r: r.append(dict(r[0])), "id appears twice"),
    "too_many_tokens": (lambda r: r[-1].update(tokens_per_step="9.5"), "tokens_per_step"),
    "increasing_survival": (lambda r: next(x for x in r if x["survival"]).update(survival="0.5;0.6;0.4;0.3;0.2"),
                            "survival"),
    "inconsistent": (lambda r: next(x for x in r if x["survival"]).update(tokens_per_step="3.0"), "tokens_per_step"),
    "no_depth": (lambda r: next(x for x in r if x["shape"] == "chain").update(depth=""), "depth"),
    "not_a_number": (lambda r: r[0].update(temperature="warm"), "temperature"),
}


@pytest.mark.parametrize("name", sorted(BAD_ROWS))
def test_malformed_registry_names_the_row_and_field(tmp_path, name):
    edit, field = BAD_ROWS[name]
    directory = _copy_registry(tmp_path, edit)
    load_registry.cache_clear()
    try:
        with pytest.raises(RegistryError, match=field):
            load_registry(directory)
    finally:
        load_registry.cache_clear()


def _run(tmp_path, acceptance, **extra):
    path = tmp_path / "s.yaml"
    data = scenario(drafter={"kind": "head", "style": "autoregressive", "gamma": 3}, acceptance=acceptance,
                    cluster={"hardware": "h100-sxm", "model": "llama-3.1-8b", "dtype": "bf16"}, **extra)
    data["workload"]["num_requests"] = 150
    path.write_text(yaml.safe_dump(data))
    return main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"])


def test_published_acceptance_runs_and_emits_its_tokens_per_step(tmp_path):
    assert _run(tmp_path, {"kind": "published", "entry": "vllm-issue20780-eagle3-llama-3.1-8b-mt-bench-k3"}) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    # Published 2.79 tokens per step; the run samples a few thousand steps (s.e. ≈ 0.02).
    assert summary["mean_accepted_length"] + 1.0 == pytest.approx(2.79, abs=0.08)


@pytest.mark.parametrize("acceptance, field", [
    ({"kind": "published", "entry": "no-such-row"}, "acceptance.entry"),
    ({"kind": "published", "method": "eagle3"}, "acceptance"),
    ({"kind": "published", "entry": "spec-bench-eagle-vicuna-7b-a100-80gb"}, "acceptance.depth"),
    ({"kind": "published", "method": "eagle3", "target": "nobody/none"}, "acceptance"),
])
def test_bad_published_acceptance_exits_2_with_one_line(tmp_path, capsys, acceptance, field):
    code = _run(tmp_path, acceptance)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_published_acceptance_refuses_trees_other_than_sglangs(tmp_path, capsys):
    """Static trees need per-rank acceptance; only SGLang's EAGLE tree takes a row's tokens per step
    (tests/simulator/speculation/test_published_tree.py)."""
    code = _run(tmp_path, {"kind": "published", "entry": "vllm-issue20780-eagle3-llama-3.1-8b-mt-bench-k3"},
                speculation={"kind": "tree", "builder": "kary", "k": 2, "depth": 3})
    err = capsys.readouterr().err.strip()
    assert code == 2 and "acceptance.kind" in err


def test_two_row_rule_keeps_the_first_position_and_the_length():
    """α₁ from DeepSeek-V3's report (0.875) decaying to the 3.20 tokens per step the reused MTP module
    reaches at 7 positions in vLLM: both published figures are reproduced exactly."""
    from simulator.speculation.published import decayed_alphas
    first = find_entry("deepseek-v3-report-mtp-second-token")
    length = find_entry("nebius-card-mtp-original-deepseek-v3-0324-k7-temp0")
    alphas = decayed_alphas(first, length)
    assert len(alphas) == 7 and alphas[0] == 0.875
    assert all(b < a for a, b in zip(alphas, alphas[1:]))
    assert 1.0 + float(np.cumprod(alphas).sum()) == pytest.approx(3.20, abs=1e-9)
    with pytest.raises(RegistryError, match="first_alpha_entry"):  # α1 = 0.875 cannot reach 7.54 at depth 7
        decayed_alphas(first, find_entry("eagle3-paper-t1-eagle3-vicuna-13b-humaneval-temp0"))
