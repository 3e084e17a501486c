"""Trace helpers against brute-force simulation of the speculative decoder on synthetic traces."""
import numpy as np
import pandas as pd
import pytest

from profiles.acceptance import trace as tr


def synthetic_trace(rng: np.random.Generator, lengths=(30, 1, 12, 25), stop_ended=(False, True, True, False),
                    k=4) -> pd.DataFrame:
    frames = []
    for seq, (n, stop) in enumerate(zip(lengths, stop_ended)):
        left = n - np.arange(n)
        cols = {"seq": np.full(n, seq, np.int32), "prompt_id": [f"p{seq}"] * n, "kind": ["code"] * n,
                "pos": np.arange(n, dtype=np.int32), "context_tokens": 10 + np.arange(n, dtype=np.int32),
                "target_token": rng.integers(0, 50, n).astype(np.int32),
                "target_top1_prob": rng.random(n).astype(np.float32),
                "target_entropy_nats": rng.random(n).astype(np.float32),
                "max_accept": (left if stop else left - 1).astype(np.int32)}
        for d in tr.MODEL_DRAFTERS:
            rank = np.where(rng.random(n) < 0.7, 0, rng.integers(1, 6, n)).astype(np.int32)
            cols.update({f"{d}_top_tokens": [rng.integers(0, 50, k).astype(np.int32) for _ in range(n)],
                         f"{d}_top_probs": [rng.random(k).astype(np.float32) for _ in range(n)],
                         f"{d}_target_probs": [rng.random(k).astype(np.float32) for _ in range(n)],
                         f"{d}_rank": rank, f"{d}_q_target": rng.random(n).astype(np.float32)})
            for t in tr.TEMPERATURES:
                cols[tr.beta_column(d, t)] = rng.random(n).astype(np.float32)
        proposal = rng.integers(0, 6, n).astype(np.int32)
        cols["ngram_proposal_len"] = proposal
        cols["ngram_match_len"] = np.minimum(proposal, rng.integers(0, 6, n)).astype(np.int32)
        frames.append(pd.DataFrame(cols))
    return pd.concat(frames, ignore_index=True)


def brute_accepted(rows: pd.DataFrame, i: int, gamma: int, drafter: str) -> int:
    """Play one chain from row i of one sequence, token by token."""
    n = len(rows)
    limit = min(gamma, int(rows["max_accept"].iloc[i]))
    if drafter == "ngram":
        return min(limit, int(rows["ngram_match_len"].iloc[i]))
    tau = 0
    while tau < limit and i + tau < n and rows[f"{drafter}_rank"].iloc[i + tau] == 0:
        tau += 1
    return tau


@pytest.fixture(scope="module")
def trace():
    return synthetic_trace(np.random.default_rng(0))


@pytest.mark.parametrize("drafter", tr.DRAFTERS)
@pytest.mark.parametrize("gamma", [0, 1, 3, 8])
def test_accepted_lengths_and_walk_match_brute_force(trace, drafter, gamma):
    got = tr.accepted_lengths(trace, gamma, drafter)
    steps = []
    for seq, rows in trace.groupby("seq", sort=True):
        rows = rows.reset_index(drop=True)
        expect = [brute_accepted(rows, i, gamma, drafter) for i in range(len(rows))]
        assert got[(trace["seq"] == seq).to_numpy()].tolist() == expect
        i = 0
        while i < len(rows):      # the decoder: accept τ, emit τ + 1 tokens
            steps.append(expect[i])
            i += expect[i] + 1
    assert tr.walk_accepted(trace, gamma, drafter).tolist() == steps
    assert tr.empirical_mean_accepted(trace, gamma, drafter) == pytest.approx(np.mean(steps))
    assert (got <= gamma).all() and (got <= trace["max_accept"]).all()


def test_tree_with_width_one_is_the_chain_and_wider_trees_accept_more(trace):
    for gamma in (1, 4, 7):
        chain = tr.accepted_lengths(trace, gamma, "draft")
        assert np.array_equal(tr.tree_accepted_lengths(trace, [1] * gamma, "draft"), chain)
    wide = tr.tree_accepted_lengths(trace, [3, 2, 1], "draft")
    assert (wide >= tr.accepted_lengths(trace, 3, "draft")).all()
    # brute force for one row: consecutive positions with rank < width at that depth
    rank = trace["draft_rank"].to_numpy()
    for i in range(len(trace)):
        depth, seq = 0, trace["seq"].iloc[i]
        while (depth < 3 and depth < trace["max_accept"].iloc[i] and i + depth < len(trace)
               and trace["seq"].iloc[i + depth] == seq and rank[i + depth] < [3, 2, 1][depth]):
            depth += 1
        assert wide[i] == depth


def test_parquet_round_trip_keeps_rows_and_meta(tmp_path, trace):
    path = tmp_path / "t.parquet"
    tr.write_trace(trace, path, {"hello": [1, 2], "name": "x"})
    back = tr.load_trace(path)
    assert back.attrs["meta"] == {"hello": [1, 2], "name": "x"}
    assert back["draft_rank"].tolist() == trace["draft_rank"].tolist()
    assert np.array_equal(np.stack(back["skip_top_tokens"]), np.stack(trace["skip_top_tokens"]))
    assert tr.summary(back) == tr.summary(trace)


def test_summary_and_simple_figures(trace):
    s = tr.summary(trace, gammas=(1, 2))
    assert s["rows"] == len(trace) and s["sequences"] == 4
    assert s["draft"]["agreement"] == pytest.approx((trace["draft_rank"] == 0).mean())
    assert s["skip"]["mean_beta_t1"] == pytest.approx(trace["skip_beta_t100"].mean())
    assert set(s["ngram"]) == {"mean_accepted", "proposal_rate"}
    assert np.array_equal(tr.branch_ranks(trace, "skip"), trace["skip_rank"].to_numpy())
    assert np.array_equal(tr.beta(trace, "draft", 0.5), trace["draft_beta_t050"].to_numpy())


def test_errors(trace, tmp_path):
    with pytest.raises(ValueError, match="drafter"):
        tr.accepted_lengths(trace, 2, "eagle")
    with pytest.raises(ValueError, match="gamma"):
        tr.accepted_lengths(trace, -1)
    with pytest.raises(ValueError, match="temperature"):
        tr.beta(trace, "draft", 0.3)
    with pytest.raises(ValueError, match="ranks"):
        tr.branch_ranks(trace, "ngram")
    with pytest.raises(ValueError, match="widths"):
        tr.tree_accepted_lengths(trace, [])
    shuffled = trace.iloc[::-1].reset_index(drop=True)
    with pytest.raises(ValueError, match="grouped by seq"):
        tr.write_trace(shuffled, tmp_path / "bad.parquet", {})
    with pytest.raises(ValueError, match="lacks columns"):
        tr.validate(trace.drop(columns=["max_accept"]))
    with pytest.raises(ValueError, match="not a file"):
        tr.load_trace(tmp_path / "missing.parquet")
    assert not (tmp_path / "bad.parquet").exists()
