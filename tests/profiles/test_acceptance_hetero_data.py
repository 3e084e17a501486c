"""The shipped cross-vocabulary (TLI) traces: internal consistency of every row, the figures in their
summary files, their provenance against the same-vocabulary Qwen trace, the real-loop check they shipped
with, and the simulator replaying them."""
import json
from pathlib import Path

import numpy as np
import pytest

import simulator
from profiles.acceptance import trace as tr
from profiles.acceptance.measure_hetero import hetero_summary
from paths import REPO

DATA = REPO / "profiles" / "data" / "acceptance"
PAIRS = ["qwen2.5-coder-1.5b-smollm2-135m", "qwen2.5-coder-0.5b-smollm2-135m"]


@pytest.fixture(scope="module", params=PAIRS)
def shipped(request):
    return request.param, tr.load_trace(DATA / f"{request.param}.parquet")


def test_rows_are_consistent(shipped):
    _, t = shipped
    shared = t.attrs["meta"]["vocab"]["shared_tokens"]
    rank = t["draft_rank"].to_numpy()
    top1 = np.array([int(v[0]) for v in t["draft_top_tokens"]])
    assert np.array_equal(rank == 0, top1 == t["target_token"].to_numpy())
    assert rank.max() <= shared
    q = t["draft_q_target"].to_numpy()
    assert (q[rank == shared] == 0).all() and (q[rank < shared] > 0).all()
    for temp in tr.TEMPERATURES:
        b = tr.beta(t, "draft", temp)
        assert ((b >= -1e-6) & (b <= 1 + 1e-5)).all()
    # β = Σ min(p, q′) is at least min(p, q′) of the target's own token (T = 1)
    assert (t["draft_beta_t100"].to_numpy() >= np.minimum(t["target_top1_prob"].to_numpy(), q) - 1e-5).all()
    probs = np.stack(t["draft_top_probs"].to_numpy())
    assert (np.diff(probs, axis=1) <= 1e-7).all() and (probs.sum(1) <= 1 + 1e-5).all()


def test_summary_file_is_the_trace_summary(shipped):
    name, t = shipped
    stored = json.loads((DATA / f"{name}.summary.json").read_text())
    again = json.loads(json.dumps(hetero_summary(t, t.attrs["meta"])))
    assert stored["summary"] == again["summary"] and stored["by_kind"] == again["by_kind"]
    assert stored["target_tokens_in_shared_vocab"] == again["target_tokens_in_shared_vocab"]


def test_same_prompts_as_the_qwen_trace_and_same_texts_for_the_same_target():
    qwen = tr.load_trace(DATA / "qwen2.5-coder-1.5b-0.5b.parquet").attrs["meta"]
    big = tr.load_trace(DATA / f"{PAIRS[0]}.parquet")
    small = tr.load_trace(DATA / f"{PAIRS[1]}.parquet").attrs["meta"]
    assert [p["text"] for p in big.attrs["meta"]["prompts"]] == [p["text"] for p in qwen["prompts"]]
    assert [p["text"] for p in small["prompts"]] == [p["text"] for p in qwen["prompts"]]
    assert big["target_token"].tolist() == [t for s in qwen["sequences"] for t in s["generated_tokens"]]
    assert big.attrs["meta"]["target"]["sha256"] == qwen["target"]["sha256"]
    assert small["target"]["sha256"] == qwen["draft"]["sha256"]      # the 0.5B drafter of that pair is this target


@pytest.mark.parametrize("name", PAIRS)
def test_real_loop_report_shipped_with_the_trace(name):
    """The real TLI draft-then-verify runs (verify_hetero) produced the trace's tokens, and every step's
    first draft agreed with the trace; γ = 1 steps agreed exactly."""
    report = json.loads((DATA / f"{name}.verify.json").read_text())
    assert report and all(r["tokens_match"] and r["first_draft_match"] for r in report)
    assert all(r["steps_same_tau"] == r["steps"] for r in report if r["gamma"] == 1)


@pytest.mark.parametrize("yaml,name,gamma", [("smollm2_tli_trace.yaml", PAIRS[0], 3)])
def test_scenario_replays_the_trace(yaml, name, gamma):
    result = simulator.run(REPO / "scenarios" / "acceptance" / yaml,
                           ["workload.num_requests=600", "workload.output_tokens.low=150",
                            "workload.output_tokens.high=250"])
    st = result.steps[result.steps.decode_seqs > 0]
    trace = tr.load_trace(DATA / f"{name}.parquet")
    # a simulated request walks its assigned text, so steps pool like the trace's own walks
    assert st.accepted_tokens.sum() / st.decode_seqs.sum() == pytest.approx(
        tr.empirical_mean_accepted(trace, gamma, "draft"), rel=0.03)
