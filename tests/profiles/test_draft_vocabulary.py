"""Which engine releases serve a draft model of another vocabulary size (profiles.engine_time.draft_vocabulary),
each case worked from the release's source as the module docstring cites it, and the rule as a run applies it."""
from __future__ import annotations

import pytest

from models import get_model
from profiles.engine_time.draft_vocabulary import vocab_refusal
from profiles.measured.source import version_before

TARGET, SMALL, SAME = get_model("llama-3-8b"), get_model("llama-68m"), get_model("llama-3.2-1b")


@pytest.mark.parametrize("version,refused", [
    ("0.4.1", True), ("0.7.3", True),     # V0: SpecDecodeWorker._vocab_size asserts equal sizes
    ("0.8.0", False), ("0.14.0", False),  # no draft model at all (profiles.engine_time.support refuses the drafter)
    ("0.15.0", True), ("0.24.0", True),   # V1: verify_equal_vocab_size_if_draft_model
    ("0.25.0", True), ("0.33.0", True),   # still, unless use_heterogeneous_vocab
])
def test_vllm_refuses_another_vocabulary_size_where_it_runs_draft_models(version, refused):
    found = vocab_refusal("vllm", version, TARGET, SMALL)
    assert (found is not None) == refused
    if refused:
        field, why = found
        assert field == "drafter.model" and "32,000-token vocabulary and llama-3-8b 128,256" in why
        assert ("drafter.heterogeneous_vocab: true (use_heterogeneous_vocab" in why) == \
            (not version_before(version, "0.25.0"))
    assert vocab_refusal("vllm", version, TARGET, SAME) is None   # one vocabulary: served


def test_heterogeneous_drafting_from_vllm_0_25_and_nowhere_else():
    assert vocab_refusal("vllm", "0.25.0", TARGET, SMALL, heterogeneous=True) is None
    field, why = vocab_refusal("vllm", "0.24.0", TARGET, SMALL, heterogeneous=True)
    assert field == "drafter.heterogeneous_vocab" and "no use_heterogeneous_vocab (from 0.25.0" in why
    field, why = vocab_refusal("sglang", "0.5.6", TARGET, SMALL, heterogeneous=True)
    assert field == "drafter.heterogeneous_vocab" and "PR #16290" in why


@pytest.mark.parametrize("version,refused", [
    ("0.5.2", False), ("0.5.6", False), ("0.5.14", False),   # STANDALONE without a check (0.5.2 - 0.5.14 wheels)
    ("0.5.15", True), ("0.5.15.post1", True), ("0.5.23", True),   # StandaloneWorkerV2._validate_vocab_compatibility
])
def test_sglang_refuses_another_vocabulary_size_from_0_5_15(version, refused):
    found = vocab_refusal("sglang", version, TARGET, SMALL)
    assert (found is not None) == refused
    if refused:
        field, why = found
        assert field == "drafter.model" and why.startswith("llama-68m has a 32,000-token vocabulary and llama-3-8b "
                                                           f"128,256: sglang {version} refuses such a draft model")
        assert "_validate_vocab_compatibility" in why and "allowed: a draft model of 128,256 tokens" in why
    # one size, two tokenizers (Llama 3.1's renamed reserved special tokens): served, as the released SGLang serves
    # it, whose get_vocab() comparison never runs: a draft worker loads no tokenizer (module docstring)
    assert vocab_refusal("sglang", version, TARGET, SAME) is None


def test_trtllm_serves_another_vocabulary_size():
    """TensorRT-LLM's draft/target path compares no vocabularies at start-up (module docstring)."""
    assert vocab_refusal("trtllm", "1.0.0", TARGET, SMALL) is None
    assert vocab_refusal("trtllm", "1.4.0rc4", TARGET, SMALL) is None


def test_a_run_applies_it_where_the_release_is_named_or_heterogeneous_drafting_is_asked_for():
    import simulator
    from simulator.errors import ScenarioError
    from sim_helpers import scenario
    draft = {"kind": "draft_model", "model": "llama-68m", "gamma": 3}
    small = {"workload": {"num_requests": 20}}
    simulator.run(scenario(drafter=draft, **small))   # no release named: the pairing is simulated as the algorithm
    with pytest.raises(ScenarioError, match=r"^drafter.model: .*vllm 0.24.0 refuses such a draft model"):
        simulator.run(scenario(drafter=draft, cluster={"engine": {"version": "0.24.0"}}, **small))
    with pytest.raises(ScenarioError, match=r"^drafter.heterogeneous_vocab: vllm 0.24.0 has no"):   # implied 0.24.0
        simulator.run(scenario(drafter={**draft, "heterogeneous_vocab": True}, **small))
    result = simulator.run(scenario(drafter={**draft, "heterogeneous_vocab": True},
                                    cluster={"engine": {"version": "0.25.0"}}, **small))
    assert result.summary["requests_finished"] == 20
    with pytest.raises(ScenarioError, match=r"^drafter.model: .*sglang 0.5.15 refuses such a draft model"):
        simulator.run(scenario(drafter=draft, cluster={"engine": {"framework": "sglang", "version": "0.5.15"}},
                               **small))
    result = simulator.run(scenario(drafter=draft, cluster={"engine": {"framework": "sglang", "version": "0.5.14"}},
                                    **small))
    assert result.summary["requests_finished"] == 20


def test_a_cascade_stage_model_is_checked_as_a_draft_model():
    """A cascade runs as a draft model under the engine family rules (simulator.cost.drafters.ENGINE_FAMILIES): where
    the release is named, a stage's model of another vocabulary size is refused as drafter.model is, naming the
    stage (no heterogeneous_vocab offered: a cascade has none); a stage of the target's vocabulary, `self` and a
    statistical stage are served, and a scenario that names no release simulates the pairing as the algorithm."""
    import simulator
    from simulator.errors import ScenarioError
    from sim_helpers import scenario
    small = {"workload": {"num_requests": 10}}
    vllm = {"engine": {"framework": "vllm", "version": "0.20.0"}}
    foreign = {"kind": "cascade", "stages": [{"tokens": 1}, {"tokens": 2, "model": "llama-68m"}]}
    with pytest.raises(ScenarioError, match=r"^drafter.stages\[1\].model: llama-68m .*vllm 0.20.0 refuses such a draft "
                                            r"model.*allowed: a draft model of 128,256 tokens$"):
        simulator.run(scenario(drafter=foreign, cluster=vllm, **small))
    with pytest.raises(ScenarioError, match=r"^drafter.stages\[1\].model: .*sglang 0.5.15 refuses"):
        simulator.run(scenario(drafter=foreign, cluster={"engine": {"framework": "sglang", "version": "0.5.15"}},
                               **small))
    assert simulator.run(scenario(drafter=foreign, **small)).summary["requests_finished"] == 10
    own = {"kind": "cascade", "stages": [{"tokens": 1, "model": "self", "kv_budget": 64},
                                         {"tokens": 2, "model": "llama-3.2-1b"}]}
    assert simulator.run(scenario(drafter=own, cluster=vllm, **small)).summary["requests_finished"] == 10
