"""The published trend, without tuning: n-gram and suffix decoding win big on repetitive turns (multi-turn
code edits) and nothing elsewhere (open-ended chat), from the real proposers' walks through the shipped
session corpora and from the simulator (scenarios/speculation/suffix_trend.py)."""
from __future__ import annotations

import json
import pytest

from paths import REPO

SESSIONS = REPO / "profiles" / "data" / "acceptance" / "sessions"


def _summary(corpus: str) -> dict:
    return json.loads((SESSIONS / f"{corpus}.summary.json").read_text())["drafters"]


def test_walks_accept_far_more_on_repetitive_turns():
    code, chat = _summary("sessions-qwen2.5-coder-0.5b"), _summary("sessions-sharegpt")
    for drafter in ("suffix", "ngram_g4"):
        repetitive = code[drafter]["code_edit"]["mean_accepted"]
        open_ended = chat[drafter]["sharegpt"]["mean_accepted"]
        assert repetitive > 2.0 * open_ended, drafter
    # suffix decoding's long accepts (τ ≥ 8) exist only where turns repeat text
    assert code["suffix"]["code_edit"]["p_tau_ge_8"] > 5 * chat["suffix"]["sharegpt"]["p_tau_ge_8"]


def test_shipped_walks_are_those_of_the_proposer():
    """The first requests the engine serves (turn 0) depend on no other request: recomputed walks equal the
    shipped ones."""
    from profiles.acceptance.sessions import load_sessions
    from simulator.speculation.suffix.acceptance import drafter_key, read_shipped_walks
    from simulator.config.speculation import SuffixDrafterConfig
    from simulator.speculation.suffix.cache import SuffixParams
    from simulator.speculation.suffix.walk import serving_order, suffix_walks
    path = SESSIONS / "sessions-sharegpt.parquet"
    frame = load_sessions(path)
    key = drafter_key(SuffixDrafterConfig(kind="suffix"))
    shipped = read_shipped_walks(path, key, frame.attrs["meta"]["fingerprint"])
    first = serving_order(frame)[:3]
    head = frame.iloc[first].reset_index(drop=True)
    fresh = suffix_walks(head, SuffixParams(*key[1:]))
    for j, i in enumerate(first):
        assert fresh.accepted[j].tolist() == shipped.accepted[i].tolist()
        assert fresh.proposed[j].tolist() == shipped.proposed[i].tolist()


@pytest.mark.slow
def test_simulated_speedup_is_big_on_code_edits_and_none_on_chat():
    from scenarios.speculation.suffix_trend import trend
    table = trend(60).set_index(["workload", "drafter"])["speedup"]
    assert table[("code_edit", "suffix")] > 1.2
    assert table[("chat (ShareGPT)", "suffix")] < 1.1
    assert table[("code_edit", "suffix")] > table[("chat (ShareGPT)", "suffix")] + 0.2


@pytest.mark.parametrize("corpus, fingerprint", [
    ("sessions-qwen2.5-coder-0.5b", "d96da967dc420c174260228d6f51f0cf3f299ec920fc83870e53a36aa4ec5f07"),
    ("sessions-sharegpt", "aaf3a457a4a90701e5afee9f02f579506302ae365c4ad1c6fbaedc8d6386d02b"),
])
def test_shipped_corpora_match_their_fingerprints(corpus, fingerprint):
    """The token content of each shipped corpus is the one its README, metadata and walks name."""
    import pandas as pd
    from profiles.acceptance.sessions import fingerprint as of, load_sessions
    frame = load_sessions(SESSIONS / f"{corpus}.parquet")
    assert of(frame) == frame.attrs["meta"]["fingerprint"] == fingerprint
    walks = pd.read_parquet(SESSIONS / f"{corpus}.walks.parquet")
    assert set(walks["corpus_fingerprint"]) == {fingerprint}
    assert json.loads((SESSIONS / f"{corpus}.summary.json").read_text())["fingerprint"] == fingerprint


def test_a_rerun_rewrites_the_shipped_summary_as_it_was():
    """`python3 -m scenarios.acceptance.suffix_acceptance` (a README command) rewrites the shipped walk files:
    what it computes for a corpus is the shipped summary, byte for byte as written (it stored each walk's
    seconds, so every run left the checkout modified)."""
    from scenarios.acceptance.suffix_acceptance import compute
    corpus = "sessions-qwen2.5-coder-0.5b"
    _, summary = compute(SESSIONS / f"{corpus}.parquet")
    assert json.dumps(summary, indent=1) + "\n" == (SESSIONS / f"{corpus}.summary.json").read_text()
