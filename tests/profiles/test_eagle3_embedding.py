"""Which engine releases give an EAGLE-3 head of another vocabulary size or width an embedding to draft from
(profiles.engine_time.eagle3_embedding), each case worked from the release's source as the module docstring cites
it, and the rule as a run applies it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from models import get_model
from models.eagle3 import get_eagle3_head
from profiles.engine_time.eagle3_embedding import head_embedding_refusal, padded_vocab

TARGET = get_model("llama-3.1-8b")
HEAD = get_eagle3_head("llama-3.1-8b-eagle3")                # shares the target's embedding, vocab_size 128,256
WIDER_VOCAB = replace(HEAD, vocab_size=128_320)                # one more 64-row block than the target's
PADDED_ALIKE = replace(HEAD, vocab_size=128_300)               # pads to 128,320 too: another shape still
NARROW = replace(HEAD, hidden_size=2048, intermediate_size=8192, num_heads=16, shares_embedding=False)


def test_vllm_pads_the_embedding_rows_to_64():
    assert padded_vocab(128_256) == 128_256 and padded_vocab(128_257) == padded_vocab(128_320) == 128_320


@pytest.mark.parametrize("version,refused", [
    ("0.8.5", False),                        # the target's embedding where the checkpoint has none, any shape
    ("0.9.0", False), ("0.9.0.1", False),    # the target's always (one pipeline stage)
    ("0.9.1", True), ("0.10.0", True), ("0.11.0", True),   # only an equal embedding shape is shared
    ("0.11.1", False), ("0.24.0", False), ("0.33.0", False),   # has_own_embed_tokens: shared where none is loaded
])
def test_vllm_shares_the_target_embedding_with_a_head_of_another_vocabulary_except_0_9_1_to_0_11_0(version, refused):
    found = head_embedding_refusal("vllm", version, TARGET, WIDER_VOCAB)
    assert (found is not None) == refused
    if refused:
        field, why = found
        assert field == "drafter.head" and "128,320-token vocabulary, llama-3.1-8b 128,256" in why
        assert "EagleProposer.load_model" in why and "before 0.9.1 or from 0.11.1" in why
        assert head_embedding_refusal("vllm", version, TARGET, PADDED_ALIKE) is not None   # 128,320 rows vs 128,256
    assert head_embedding_refusal("vllm", version, TARGET, HEAD) is None          # the target's vocabulary
    # its own embedding (the checkpoint's embed_tokens) is loaded where the shapes differ
    assert head_embedding_refusal("vllm", version, TARGET, replace(WIDER_VOCAB, shares_embedding=False)) is None


def test_vllm_0_9_0_hands_a_narrower_head_the_targets_embedding_and_fails():
    for version in ("0.9.0", "0.9.0.1"):
        field, why = head_embedding_refusal("vllm", version, TARGET, NARROW)
        assert field == "drafter.head" and "is 2048 wide and llama-3.1-8b 4096" in why
        assert "input_embeds.shape[-1]" in why and "allowed: hidden_size 4096" in why
    for version in ("0.8.5", "0.9.1", "0.11.0", "0.24.0"):
        assert head_embedding_refusal("vllm", version, TARGET, NARROW) is None


@pytest.mark.parametrize("framework,version", [("sglang", "0.4.5"), ("sglang", "0.5.23"), ("trtllm", "1.0.0"),
                                               ("trtllm", "1.4.0rc4")])
def test_sglang_and_trtllm_serve_a_head_of_another_vocabulary_size(framework, version):
    """SGLang's set_embed and TensorRT-LLM's load_weights_from_target_model hand over the target's embedding
    whatever its vocabulary size (module docstring)."""
    for head in (WIDER_VOCAB, NARROW, replace(HEAD, vocab_size=32_000)):
        assert head_embedding_refusal(framework, version, TARGET, head) is None


def test_a_run_serves_a_head_of_another_vocabulary_and_refuses_it_on_a_named_vllm_0_10():
    import simulator
    from simulator.errors import ScenarioError
    from sim_helpers import scenario
    inline = {f: getattr(WIDER_VOCAB, f) for f in ("hidden_size", "intermediate_size", "num_heads", "num_kv_heads",
                                                  "head_dim", "draft_vocab_size", "target_hidden_size", "vocab_size")}
    small = {"workload": {"num_requests": 12}, "acceptance": {"kind": "constant", "alpha": 0.7}}
    drafter = {"kind": "eagle3", "head": inline, "gamma": 3}
    for engine in ({}, {"framework": "sglang", "version": "0.5.23"}, {"framework": "trtllm", "version": "1.0.0"},
                   {"version": "0.11.1"}):
        result = simulator.run(scenario(cluster={"model": "llama-3.1-8b", "engine": engine}, drafter=drafter,
                                        **small))
        assert result.summary["requests_finished"] == 12
    with pytest.raises(ScenarioError, match=r"^drafter.head: EAGLE-3 head 'drafter.head' has no embedding of its "
                                            r"own .*vllm 0.10.0 gives"):
        simulator.run(scenario(cluster={"model": "llama-3.1-8b", "engine": {"version": "0.10.0"}}, drafter=drafter,
                               **small))
