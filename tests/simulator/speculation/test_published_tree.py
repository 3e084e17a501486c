"""SGLang's EAGLE tree under a published acceptance row (simulator.speculation.published_tree): the proxy tree
has the verified tree's size and depth and the row's path acceptance, the DES emits the row's tokens per step,
and rows measured with another tree are refused."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.config.speculation import DynamicTreeConfig, PublishedAcceptanceConfig
from simulator.speculation.published import find_entry, per_position_alphas
from simulator.speculation.published_tree import proxy_tree, published_tree
from simulator.speculation.tree_acceptance import TreeAcceptance
from sim_helpers import scenario
from theory.chain import expected_tokens

ROW_8B = "sglang-pr4247-eagle3-llama-3.1-8b-mt-bench"      # depth 8, 5.39 tokens per step, nodes not stated
ROW_70B = "sglang-pr4716-eagle3-llama-3.3-70b-mt-bench"    # depth 8, 64 nodes, 5.88 tokens per step


@pytest.mark.parametrize("depth, top_k, budget", [(8, 8, 64), (3, 4, 22), (5, 2, 6), (3, 1, 4), (1, 4, 5)])
def test_proxy_tree_has_the_verified_shape_and_the_chains_expected_tokens(depth, top_k, budget):
    alphas = tuple(0.9 - 0.1 * i for i in range(depth))
    tree = proxy_tree(alphas, top_k, budget)
    assert tree.size == budget and tree.depth == depth
    for parent in set(tree.parents[1:]):   # at most top_k children, distinct ranks below top_k
        ranks = [r for p, r in zip(tree.parents, tree.ranks) if p == parent]
        assert len(ranks) == len(set(ranks)) <= top_k and max(ranks) < top_k
    chain_tokens = 1.0 + float(np.cumprod(alphas).sum())
    assert tree.expected_tokens == pytest.approx(chain_tokens, abs=1e-12)
    # Monte Carlo of the simulator's tree walk on the proxy: the same mean as the chain.
    model = TreeAcceptance.from_tree(tree, seed=5)
    n = 100_000
    tau = model.tau(np.arange(n), np.zeros(n, dtype=np.int64))
    assert abs(1.0 + tau.mean() - chain_tokens) < 4.0 * tau.std() / np.sqrt(n) + 1e-9


def test_proxy_tree_refuses_budgets_the_shape_cannot_hold():
    with pytest.raises(ValueError, match="at least 4 nodes"):
        proxy_tree((0.8, 0.7, 0.6), 4, 3)
    with pytest.raises(ValueError, match="hold at most"):
        proxy_tree((0.8, 0.7), 2, 10)   # 1 + 2 + 4 nodes at most


def test_published_tree_prices_the_tree_and_draws_the_rows_path():
    sp = DynamicTreeConfig(kind="dynamic_tree", builder="eagle2", top_k=8, depth=8, budget=64)
    acc = PublishedAcceptanceConfig(kind="published", entry=ROW_70B)
    build = published_tree(sp, acc, seed=1, parallel_passes=False)
    assert build.verify_q == 64 and build.tree_attention and build.tree.size == 64
    assert build.widths == (1,) + (8,) * 7                  # SGLang: steps passes, topk tokens after the first
    alphas = per_position_alphas(find_entry(ROW_70B))
    assert build.acceptance.depth == 8
    assert 1.0 + build.acceptance.expected_accepted() == pytest.approx(expected_tokens(alphas[0], 8), abs=1e-9)
    assert 1.0 + build.acceptance.expected_accepted() == pytest.approx(5.88, abs=1e-9)


def _run(tmp_path: Path, speculation: dict, acceptance: dict, drafter: dict | None = None) -> int:
    data = scenario(drafter=drafter or {"kind": "eagle3", "gamma": 8}, acceptance=acceptance, speculation=speculation,
                    cluster={"model": "llama-3.1-8b", "latency": {"framework": "sglang", "engine_version": "0.4.4"}})
    data["workload"]["num_requests"] = 120
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"])


def test_the_des_emits_the_published_tokens_per_step_of_the_tree(tmp_path):
    code = _run(tmp_path, {"kind": "dynamic_tree", "builder": "eagle2", "top_k": 8, "depth": 8, "budget": 64},
                {"kind": "published", "entry": ROW_8B})
    assert code == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    # Published 5.39 tokens per step; ~1,500 steps sampled (s.e. of the mean ≈ 0.07).
    assert summary["tokens_per_step"] == pytest.approx(5.39, abs=0.25)


@pytest.mark.parametrize("speculation, field", [
    ({"kind": "dynamic_tree", "builder": "eagle2", "top_k": 8, "depth": 6, "budget": 64}, "speculation.depth"),
    ({"kind": "dynamic_tree", "builder": "eagle2", "top_k": 8, "depth": 8, "budget": 32}, "speculation.budget"),
    ({"kind": "dynamic_tree", "builder": "top_n", "top_k": 8, "depth": 8, "budget": 64}, "speculation.builder"),
    ({"kind": "dynamic_tree", "builder": "eagle2", "top_k": 2, "depth": 8, "budget": 64}, "speculation.budget"),
])
def test_a_row_of_another_tree_is_refused_in_one_line(tmp_path, capsys, speculation, field):
    code = _run(tmp_path, speculation, {"kind": "published", "entry": ROW_70B},
                drafter={"kind": "head", "style": "autoregressive", "gamma": 8})
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
