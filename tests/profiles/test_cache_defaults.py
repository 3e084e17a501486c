"""The prefix caching a serving engine runs by default (profiles.engine_time.cache_defaults), hand-worked per engine
and release from the sources cited there."""
from __future__ import annotations

import pytest

from profiles.engine_time.cache_defaults import engine_prefix_caching


@pytest.mark.parametrize("framework, version, drafter, hybrid, expected", [
    # vLLM V0 (before 0.8.0): EngineArgs.__post_init__ (0.7) sets bool(VLLM_USE_V1) = False
    ("vllm", "0.7.3", None, False, False),
    ("vllm", "0.5.4", "draft_model", False, False),
    # vLLM V1 from 0.8.0: _set_default_args_v1 "V1 enables prefix caching by default"; with speculation too
    ("vllm", "0.8.0", None, False, True),
    ("vllm", "0.15.0", "draft_model", False, True),
    ("vllm", "0.32.0", "eagle", False, True),
    # ... but off for hybrid models (MambaModelConfig 0.10.2-0.11.0; 'and not is_hybrid' 0.27.1)
    ("vllm", "0.11.0", None, True, False),
    ("vllm", "0.27.1", "eagle", True, False),
    # SGLang: EAGLE sets disable_radix_cache in ServerArgs.__post_init__ of 0.4.3 - 0.4.3.post2 (PyPI wheels), not
    # in 0.4.3.post3's (its EAGLE block sets max_running_requests = 32 instead) nor 0.4.4's
    ("sglang", "0.4.3", "eagle", False, False),
    ("sglang", "0.4.3.post2", "eagle", False, False),
    ("sglang", "0.4.3.post3", "eagle", False, True),
    ("sglang", "0.4.0", "eagle", False, False),
    ("sglang", "0.4.4", "eagle", False, True),
    ("sglang", "0.4.3", None, False, True),          # without EAGLE the radix cache stays on
    ("sglang", "0.5.23", "draft_model", False, True),
    ("sglang", "0.5.23", "ngram", True, True),       # MambaRadixCache (model_hook.handle_mamba_radix_cache)
    # TensorRT-LLM: KvCacheConfig.enable_block_reuse True from the 1.0 LLM API; before 1.0 not read (None)
    ("trtllm", "1.0.0", None, False, True),
    ("trtllm", "1.4.0rc4", "eagle", False, True),
    ("trtllm", "0.21.0", None, False, None),
])
def test_each_engine_default_as_read_in_its_release(framework, version, drafter, hybrid, expected):
    on, rule = engine_prefix_caching(framework, version, drafter, hybrid)
    assert on is expected
    assert rule   # (the rule cites its source: summary.json's engine_prefix_caching.rule)


def test_rules_name_their_source():
    assert "_set_default_args_v1" in engine_prefix_caching("vllm", "0.9.0", None, False)[1]
    assert "ServerArgs.__post_init__, 0.4.3" in engine_prefix_caching("sglang", "0.4.2", "eagle", False)[1]
    assert "enable_block_reuse" in engine_prefix_caching("trtllm", "1.2.0", None, False)[1]


def test_an_unknown_framework_is_refused():
    with pytest.raises(ValueError, match="no prefix-caching default for framework 'tgi'"):
        engine_prefix_caching("tgi", "1.0.0", None, False)


def test_frameworks_yaml_states_no_second_default():
    """cache_defaults and batch_defaults are the one rules: frameworks.yaml's `defaults` (read by no code) held
    `prefix_caching: true` for the TensorRT-LLM 0.5 - 1.0 entry without a source while the rule keeps it unread
    (None), and `chunked_prefill: true` for SGLang 0.4, whose EAGLE block turns chunking off in 0.4.1.post4 -
    0.4.3.post2. No entry has the field, and the loader refuses a field no code reads."""
    import yaml
    from profiles.engine_time import frameworks
    for entry in yaml.safe_load(frameworks.DATA_FILE.read_text())["frameworks"]:
        assert set(entry) <= set(frameworks.ENTRY_FIELDS), (entry["framework"], entry["versions"])


def test_a_field_no_code_reads_is_refused(monkeypatch):
    from profiles.engine_time import frameworks
    entry = {"framework": "vllm", "versions": {"min": "0.8.0"}, "defaults": {"chunked_prefill": True}}
    monkeypatch.setattr(frameworks, "load_shipped_yaml", lambda path: {"frameworks": [entry]})
    frameworks._entries.cache_clear()
    try:
        with pytest.raises(ValueError, match="fields no code reads: defaults"):
            frameworks._entries()
    finally:
        monkeypatch.undo()
        frameworks._entries.cache_clear()


def test_trtllm_before_1_0_cites_the_executors_block_reuse_default():
    """cpp/include/tensorrt_llm/executor/executor.h (0.10.0.dev2024043000): `explicit KvCacheConfig(bool
    enableBlockReuse = false, ...)`; not pinned for every 0.x release, so no value is claimed (None)."""
    on, rule = engine_prefix_caching("trtllm", "0.10.0", None, False)
    assert on is None and "enableBlockReuse = false" in rule


@pytest.mark.parametrize("version, method, drops", [
    # vLLM's KVCacheManager.get_computed_blocks pops the last matched block where SpeculativeConfig.use_eagle():
    # first in v0.8.5 (wheel, kv_cache_manager.py lines 140-145; use_eagle() = eagle, eagle3); v0.8.3 / v0.8.4
    # have no use_eagle in v1/core
    ("0.8.4", "eagle", False),
    ("0.8.5", "eagle", True),
    ("0.8.5", "eagle3", True),
    ("0.9.0", "mtp", True),          # use_eagle() holds deepseek_mtp from 0.9.0 (V1's MTP)
    ("0.33.0", "eagle3", True),      # single_type_kv_cache_manager.py: "Need to drop the last matched block"
    ("0.33.0", "draft_model", False),  # uses_draft_model(), not use_eagle()
    ("0.33.0", "ngram", False),
    ("0.33.0", "medusa", False),
    ("0.33.0", None, False),
])
def test_vllm_drops_the_last_hit_block_for_eagle_style_drafters(version, method, drops):
    from profiles.engine_time.cache_defaults import vllm_eagle_drops_hit_block
    assert vllm_eagle_drops_hit_block(version, method) is drops
