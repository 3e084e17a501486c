"""Which engine releases give an EAGLE-3 head of another vocabulary size or width an embedding to draft from
(profiles.engine_time.eagle3_embedding), each case worked from the release's source as the module docstring cites
it, and the rule as a run applies it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from models import get_model
from models.eagle3 import get_eagle3_head
from profiles.engine_time.eagle3_embedding import head_embedding_refusal, keeps_own_embedding, padded_vocab

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


OWN = replace(HEAD, shares_embedding=False)                     # the checkpoint stores embed_tokens of its own
OWN_WIDER = replace(WIDER_VOCAB, shares_embedding=False)


@pytest.mark.parametrize("version,own,own_wider,shared", [
    ("0.8.5", True, True, False),             # loaded_weights holds model.embed_tokens.weight: kept
    ("0.9.0", False, False, False), ("0.9.0.1", False, False, False),   # deleted always (one pipeline stage)
    ("0.9.1", False, True, False), ("0.11.0", False, True, False),      # deleted where the shapes are equal
    ("0.11.1", True, True, False), ("0.24.0", True, True, False), ("0.33.0", True, True, False),  # has_own_embed_tokens
])
def test_vllm_keeps_the_heads_own_embedding_by_release(version, own, own_wider, shared):
    assert keeps_own_embedding("vllm", version, TARGET, OWN) is own
    assert keeps_own_embedding("vllm", version, TARGET, OWN_WIDER) is own_wider
    assert keeps_own_embedding("vllm", version, TARGET, HEAD) is shared
    # another pipeline stage: the embedding the head builds stays, loaded separately, whatever the checkpoint holds
    assert keeps_own_embedding("vllm", version, TARGET, HEAD, pp=2) is True


@pytest.mark.parametrize("framework,version", [("sglang", "0.4.5"), ("sglang", "0.5.14"), ("sglang", "0.5.23"),
                                               ("trtllm", "1.0.0")])
def test_sglang_and_trtllm_keep_an_own_embedding_only_at_another_width(framework, version):
    for head in (HEAD, OWN, OWN_WIDER):
        assert keeps_own_embedding(framework, version, TARGET, head) is False
    assert keeps_own_embedding(framework, version, TARGET, NARROW) is True


def test_the_head_counts_its_own_embedding_where_the_engine_keeps_it():
    per_gpu = lambda own: OWN.weight_bytes_per_gpu(2, "bf16", own)   # noqa: E731
    assert per_gpu(True) - per_gpu(False) == 128_256 * 4096 * 2 / 2
    assert OWN.weight_bytes_per_gpu(2, "bf16") == per_gpu(True)        # no release: the checkpoint's
    assert HEAD.weight_bytes_per_gpu(2, "bf16") == per_gpu(False)


def test_a_run_holds_the_heads_own_embedding_only_where_its_engine_keeps_it():
    """KV capacity of Llama-3.1-8B with a head that stores embed_tokens: the shared head's where the release hands
    it the target's (SGLang 0.5.23 sizes its pool after set_embed; vLLM 0.9.0 and 0.11.0 delete it), one
    embedding less (128,256 x 4096 bf16 over the per-token KV) where it keeps it (vLLM 0.24.0, the implied release
    of the H100 tables; a second pipeline stage)."""
    from sim_helpers import replica_kind, scenario
    fields = ("hidden_size", "intermediate_size", "num_heads", "num_kv_heads", "head_dim", "draft_vocab_size",
              "target_hidden_size", "vocab_size", "shares_embedding")

    def kind(head, engine, pp=1):
        return replica_kind(scenario(cluster={"model": "llama-3.1-8b", "engine": engine,
                                              "parallelism": {"tp": 1, "pp": pp}},
                                     drafter={"kind": "eagle3", "head": {f: getattr(head, f) for f in fields}}))
    embedding = 128_256 * 4096 * 2
    for engine in ({"framework": "sglang", "version": "0.5.23"}, {"framework": "trtllm", "version": "1.0.0"},
                   {"version": "0.9.0"}, {"version": "0.11.0"}):
        own, shared = kind(OWN, engine), kind(HEAD, engine)
        assert own.drafter.weight_bytes_per_gpu == shared.drafter.weight_bytes_per_gpu
        assert own.kv_tokens == shared.kv_tokens
    for engine, pp in (({}, 1), ({"version": "0.24.0"}, 1), ({"version": "0.24.0"}, 2)):
        own, shared = kind(OWN, engine, pp), kind(HEAD, engine, 1)
        assert own.drafter.weight_bytes_per_gpu - shared.drafter.weight_bytes_per_gpu == embedding
        if pp == 1:
            per_token = TARGET.kv_bytes_per_token("bf16") + own.drafter.kv_bytes_per_token_per_gpu
            assert shared.kv_tokens - own.kv_tokens == pytest.approx(embedding / per_token, abs=1)
    assert kind(HEAD, {"version": "0.24.0"}, 2).drafter.weight_bytes_per_gpu == \
        kind(OWN, {"version": "0.24.0"}, 2).drafter.weight_bytes_per_gpu
