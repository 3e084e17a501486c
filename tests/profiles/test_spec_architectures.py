"""profiles.engine_time.spec_architectures: which target architectures each engine release runs EAGLE-3, MTP and
(on hybrid models) any speculation on, as read in the engines' sources (the data file names each check)."""
from __future__ import annotations

import pytest
from packaging.version import Version

from models import get_model, list_models
from profiles.engine_time.architectures import architecture
from profiles.engine_time.spec_architectures import ANY, check, table
from profiles.engine_time.support import UnsupportedCombination
from profiles.engine_time.releases import releases


def _refuses(framework, version, method, model) -> str | None:
    try:
        check(framework, version, method, get_model(model))
    except UnsupportedCombination as exc:
        assert exc.field == "drafter.kind" and "\n" not in str(exc)
        return exc.message
    return None


@pytest.mark.parametrize("framework, version, method, model, refused", [
    # vLLM EAGLE-3: SupportsEagle3 and eagle3_target_supported by release
    ("vllm", "0.8.5", "eagle3", "llama-3.1-8b", False),
    ("vllm", "0.10.0", "eagle3", "qwen3-8b", True),        # model_type 'llama' only before 0.10.1
    ("vllm", "0.10.1", "eagle3", "qwen3-8b", False),
    ("vllm", "0.10.1", "eagle3", "qwen2.5-7b", True),      # Qwen2ForCausalLM implements SupportsEagle3 from 0.10.2
    ("vllm", "0.10.2", "eagle3", "qwen2.5-7b", False),
    ("vllm", "0.10.2", "eagle3", "gpt-oss-120b", True),
    ("vllm", "0.11.0", "eagle3", "gpt-oss-120b", False),
    ("vllm", "0.11.0", "eagle3", "qwen3-30b-a3b", True),   # passes the list, lacks SupportsEagle3 until 0.12.0
    ("vllm", "0.12.0", "eagle3", "qwen3-30b-a3b", False),
    ("vllm", "0.17.0", "eagle3", "deepseek-v3", True),
    ("vllm", "0.18.0", "eagle3", "deepseek-v3", False),
    ("vllm", "0.23.0", "eagle3", "qwen3-next-80b-a3b", True),
    ("vllm", "0.24.0", "eagle3", "qwen3-next-80b-a3b", False),
    ("vllm", "0.33.0", "eagle3", "mixtral-8x7b", True),    # no release read has SupportsEagle3 on Mixtral
    # SGLang EAGLE-3: set_eagle3_layers_to_capture by release
    ("sglang", "0.4.8", "eagle3", "qwen3-8b", True),
    ("sglang", "0.4.9", "eagle3", "qwen3-8b", False),
    ("sglang", "0.5.4", "eagle3", "deepseek-v3", True),
    ("sglang", "0.5.5", "eagle3", "deepseek-v3", False),
    ("sglang", "0.5.23", "eagle3", "nemotron-h-56b", True),
    # MTP: an MTP class for the target's architecture
    ("vllm", "0.11.0", "mtp", "deepseek-v3", False),
    ("sglang", "0.5.1", "mtp", "qwen3-next-80b-a3b", True),
    ("sglang", "0.5.2", "mtp", "qwen3-next-80b-a3b", False),
    ("trtllm", "1.2.0", "mtp", "deepseek-v3", False),
    ("trtllm", "1.2.0", "mtp", "llama-3.1-8b", True),
    # TensorRT-LLM EAGLE-3: the release notes' targets (0.21.0: 'Added EAGLE3 support for Qwen-3'), final releases only
    ("trtllm", "0.20.0", "eagle3", "qwen3-8b", True),
    ("trtllm", "0.20.0", "eagle3", "qwen3-30b-a3b", True),
    ("trtllm", "0.21.0rc0", "eagle3", "qwen3-8b", False),  # a pre-release: not in the notes
    ("trtllm", "0.21.0", "eagle3", "qwen3-8b", False),
    ("trtllm", "1.0.0", "eagle3", "qwen3-30b-a3b", False),
    ("trtllm", "0.20.0", "eagle3", "llama-3.1-8b", False),  # (from 0.19.0 with the method itself: support.RULES)
    ("trtllm", "1.2.0", "eagle3", "mixtral-8x7b", False),  # a target the notes do not name: not checked
    # vLLM 0.9.2-0.16.x: no speculation at all on Mamba models but Qwen3-Next
    ("vllm", "0.11.0", "ngram", "nemotron-h-56b", True),
    ("vllm", "0.16.0", "eagle", "jamba-1.5-mini", True),
    ("vllm", "0.17.0", "ngram", "nemotron-h-56b", False),
    ("vllm", "0.9.1", "ngram", "nemotron-h-56b", False),   # before the check (V1 ran no Mamba model): not checked
    ("vllm", "0.11.0", "mtp", "qwen3-next-80b-a3b", False),
    ("sglang", "0.5.8", "ngram", "nemotron-h-56b", False),  # the hybrid rule is vLLM's
])
def test_gates_follow_the_engines_sources(framework, version, method, model, refused):
    said = _refuses(framework, version, method, model)
    assert (said is not None) == refused, said


def test_a_refusal_names_the_release_the_architecture_and_what_is_allowed():
    said = _refuses("vllm", "0.11.0", "eagle3", "qwen3-30b-a3b")
    assert said.startswith("vllm 0.11.0 does not run EAGLE-3 speculation on Qwen3MoeForCausalLM (qwen3-30b-a3b): "
                           "vLLM runs it on that architecture from 0.12.0")
    assert "Qwen3MoeForCausalLM (from 0.12.0)" in said and "SupportsEagle3" in said
    said = _refuses("vllm", "0.33.0", "eagle3", "mixtral-8x7b")
    assert "in no release read" in said


def test_a_trtllm_eagle3_refusal_names_the_release_that_runs_it():
    said = _refuses("trtllm", "0.20.0", "eagle3", "qwen3-8b")
    assert said.startswith("trtllm 0.20.0 does not run EAGLE-3 speculation on Qwen3ForCausalLM (qwen3-8b): "
                           "TensorRT-LLM runs it on that architecture from 0.21.0 (TensorRT-LLM's release notes")
    assert said.endswith("allowed: a version >= 0.21.0; or another drafter"), said


def test_no_method_no_version_or_an_unknown_architecture_is_not_checked():
    assert _refuses("vllm", None, "eagle3", "mixtral-8x7b") is None
    check("vllm", "0.11.0", None, get_model("mixtral-8x7b"))
    check("vllm", "0.11.0", "eagle3", None)


def test_every_catalog_model_has_an_architecture():
    """A catalog family missing from architectures.CATALOG_FAMILIES would escape every architecture gate."""
    assert [m for m in list_models() if architecture(get_model(m)) is None] == []


def test_the_table_names_known_architectures_and_releases():
    from models.hf_config import ARCHITECTURES
    for method, engines in table().items():
        for framework, gate in engines.items():
            known = set(releases(framework))
            for arch, first in gate.archs.items():
                assert arch in ARCHITECTURES, (method, framework, arch)
                assert first == ANY or Version(first) in known, (method, framework, arch, first)
            assert gate.since == "0" or Version(gate.since) in known
