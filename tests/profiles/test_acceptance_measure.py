"""The acceptance measurement end to end on tiny random-weight Qwen2 models loaded from GGUF files, checked
against a real draft-then-verify loop (identical tokens and accepted counts), plus its parts."""
import numpy as np
import pytest
import torch

from models.torch_impl.gguf_loader import load_gguf, write_gguf
from models.torch_impl.qwen2 import ModelConfig, random_model
from models.torch_impl.tokenizer import train_bpe
from profiles.acceptance import trace as tr
from profiles.acceptance.drafters import NgramSettings, ngram_columns, ngram_propose
from profiles.acceptance.measure import MeasureSettings, greedy_generate, measure
from profiles.acceptance.prompts import build_prompt_set, stdlib_dir
from profiles.acceptance.verify import compare

torch.set_num_threads(2)
pytestmark = pytest.mark.slow  # torch end to end: skipped by the fast inner loop (-m 'not slow')

SETTINGS = MeasureSettings(max_new_tokens=20, batch_size=3, skip_counts=(1, 2), calibration_tokens=48,
                           max_prompt_tokens=160)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Target: random 4-layer model; draft: the target with 5 % weight noise (partial agreement)."""
    folder = tmp_path_factory.mktemp("tiny")
    tok = train_bpe([(stdlib_dir() / "json" / "decoder.py").read_text()], 150,
                    ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    cfg = ModelConfig(vocab_size=tok.vocab_size, hidden_size=48, intermediate_size=96, num_layers=4, num_heads=4,
                      num_kv_heads=2, head_dim=12, qkv_bias=True, max_context=512, rms_norm_eps=2.0 ** -20)
    target, draft = random_model(cfg, seed=1, scale=1.0), random_model(cfg, seed=1, scale=1.0)
    gen = torch.Generator().manual_seed(9)
    with torch.no_grad():
        for p in draft.parameters():
            p.add_(0.05 * p.abs().mean() * torch.randn(p.shape, generator=gen))
    write_gguf(target, tok, folder / "target.gguf")
    write_gguf(draft, tok, folder / "draft.gguf")
    return load_gguf(folder / "target.gguf"), load_gguf(folder / "draft.gguf")


@pytest.fixture(scope="module")
def measured(pair):
    target, draft = pair
    prompts = build_prompt_set(n_code=3, n_text=2, n_calibration=1, seed=3)
    trace, meta = measure(target, draft, prompts, SETTINGS)
    trace.attrs["meta"] = meta
    return trace


def test_prompt_set_is_held_out_by_file_and_seeded():
    a = build_prompt_set(6, 2, 3, seed=5)
    b = build_prompt_set(6, 2, 3, seed=5)
    assert a == b and a != build_prompt_set(6, 2, 3, seed=6)
    calib = {p.source for p in a if p.split == "calibration"}
    code = [p.source for p in a if p.split == "measure" and p.kind == "code"]
    assert len(calib) == 3 and len(code) == 6 and len(set(code)) == 6 and not calib & set(code)
    for p in a:
        if p.kind == "code":
            assert p.text.startswith(("def ", "async def ")) and p.text.rstrip().endswith(('"', "'"))
            assert p.reference_completion.strip()
        else:
            assert p.text.startswith("<|im_start|>system") and p.text.endswith("<|im_start|>assistant\n")


def test_shortcut_equals_real_draft_then_verify_loop(pair, measured):
    target, draft = pair
    report = compare(measured, target, draft, seqs=range(measured["seq"].nunique()), gammas=(1, 3, 6))
    assert len(report) == 5 * 3 * 3
    assert all(r["match"] for r in report), [r for r in report if not r["match"]]
    # the drafters differ: noisy copy agrees often, the n-gram drafter proposes somewhere
    s = tr.summary(measured)
    assert 0.2 < s["draft"]["agreement"] <= 1.0 and s["ngram"]["proposal_rate"] > 0


def test_prefix_comparison_matches_real_loop(pair, measured):
    target, draft = pair
    report = compare(measured, target, draft, seqs=[0, 3], gammas=(2, 4), max_new_tokens=9)
    assert all(r["match"] for r in report) and all(r["accepted_total"] <= 8 for r in report)
    with pytest.raises(ValueError, match="max_new_tokens"):
        compare(measured, target, draft, seqs=[0], gammas=(2,), max_new_tokens=500)


def test_stop_token_ending_matches_real_loop(pair):
    target, draft = pair
    prompts = build_prompt_set(n_code=2, n_text=0, n_calibration=0, seed=4)
    first, _ = measure(target, draft, prompts, SETTINGS, skip_layers=[2])
    stop = int(first["target_token"].iloc[6])       # a token the target emits: make it a stop token
    old = target.tokenizer.eos_id
    target.tokenizer.eos_id = stop
    try:
        trace, meta = measure(target, draft, prompts, SETTINGS, skip_layers=[2])
        trace.attrs["meta"] = meta
        assert trace.groupby("seq")["target_token"].last().eq(stop).any()
        ends = trace.groupby("seq").tail(1)
        stopped = ends["target_token"].to_numpy() == stop
        assert (ends["max_accept"].to_numpy() == np.where(stopped, 1, 0)).all()
        report = compare(trace, target, draft, seqs=range(2), gammas=(2, 5))
        assert all(r["match"] for r in report), [r for r in report if not r["match"]]
    finally:
        target.tokenizer.eos_id = old


def test_columns_against_direct_computation(pair, measured):
    target, draft = pair
    meta = measured.attrs["meta"]
    rows = measured[measured["seq"] == 1].reset_index(drop=True)
    prompt, gen = meta["sequences"][1]["prompt_tokens"], rows["target_token"].tolist()
    with torch.inference_mode():
        t_logits = target.model.forward_full(torch.tensor(prompt + gen))[len(prompt) - 1:-1]
        d_logits = draft.model.forward_full(torch.tensor(prompt + gen))[len(prompt) - 1:-1]
    assert torch.equal(torch.argmax(t_logits, -1), torch.tensor(gen))
    for i in (0, 5, len(gen) - 1):
        rank = int((d_logits[i] > d_logits[i, gen[i]]).sum())
        assert rows["draft_rank"][i] == rank
        for temp in (0.5, 1.0):
            p, q = torch.softmax(t_logits[i].double() / temp, -1), torch.softmax(d_logits[i].double() / temp, -1)
            assert rows[tr.beta_column("draft", temp)][i] == pytest.approx(float(torch.minimum(p, q).sum()), abs=1e-4)
        top = torch.topk(torch.softmax(d_logits[i], -1), SETTINGS.top_k)
        assert rows["draft_top_tokens"][i].tolist() == top.indices.tolist()
        assert np.allclose(rows["draft_top_probs"][i], top.values.numpy(), atol=1e-5)
        p1 = torch.softmax(t_logits[i], -1)
        assert np.allclose(rows["draft_target_probs"][i], p1[top.indices].numpy(), atol=1e-5)


def test_batched_generation_equals_one_at_a_time(pair):
    target, _ = pair
    prompts = [[5, 6, 7, 8, 9], [100, 3], [42] * 9]
    with torch.inference_mode():
        batched = greedy_generate(target.model, prompts, 12, frozenset(), batch_size=3)
        single = [greedy_generate(target.model, [p], 12, frozenset(), batch_size=1)[0] for p in prompts]
    for (tb, lb), (ts, ls) in zip(batched, single):
        assert tb == ts and torch.allclose(lb, ls, atol=1e-5)


def test_ngram_proposals_brute_force():
    s = NgramSettings(max_n=3, min_n=1, max_proposal=4)
    assert ngram_propose([1, 2, 3, 9, 1, 2, 3], s) == [9, 1, 2, 3]        # 3-gram 1 2 3 seen at 0
    assert ngram_propose([7, 1, 2, 5, 5, 1, 2], s) == [5, 5, 1, 2]        # 2-gram 1 2, earliest occurrence
    assert ngram_propose([4, 8, 6, 8], s) == [6, 8]                       # only the 1-gram 8 matches
    assert ngram_propose([1, 2, 3], s) == [] and ngram_propose([5], s) == []
    rng = np.random.default_rng(0)
    prompt, gen = rng.integers(0, 4, 15).tolist(), rng.integers(0, 4, 30).tolist()
    plen, mlen = ngram_columns(prompt, gen, s)
    for i in range(len(gen)):
        proposal = ngram_propose(prompt + gen[:i], s)
        m = 0
        while m < len(proposal) and i + m < len(gen) and proposal[m] == gen[i + m]:
            m += 1
        assert (plen[i], mlen[i]) == (len(proposal), m)
    with pytest.raises(ValueError):
        NgramSettings(max_n=1, min_n=2)
