"""The context limit each engine and release derives from a config.json (profiles.engine_time.context_length),
on hand-worked configs: every expected figure below is worked out from the rule as read in the release's source
(the module docstring cites each)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from models.hf_config import spec_from_hf_config
from profiles.engine_time.context_length import check_given, derived_context
from profiles.engine_time.support import UnsupportedCombination

CONFIGS = Path(__file__).resolve().parent.parent / "data" / "hf_configs"


def _spec(folder: str, **changes):
    cfg = json.loads((CONFIGS / folder / "config.json").read_text())
    cfg.update(changes)
    return spec_from_hf_config({k: v for k, v in cfg.items() if v is not None}, folder.lower())


# Qwen3-8B with the YaRN block Qwen's model card adds for 128k (max_position_embeddings 40,960)
QWEN3_YARN = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}


@pytest.mark.parametrize("framework,version,tokens", [
    ("vllm", "0.2.2", 131072),         # yarn: original 32,768 × 4 (the first release that runs yarn)
    ("vllm", "0.11.0", 131072),
    ("vllm", "0.29.0", 131072),
    ("vllm", "0.30.0", 40960),         # yarn exempt: max_position_embeddings is taken as already scaled
    ("vllm", "0.33.0", 40960),
    ("sglang", "0.4.0", 40960),        # the block has original_max_position_embeddings: factor 1
    ("sglang", "0.5.23", 40960),
    ("trtllm", "0.21.0", 163840),      # trtllm-build scales yarn: ceil(40,960 × 4)
    ("trtllm", "1.0.0", 40960),        # the PyTorch backend exempts yarn
])
def test_qwen3_yarn_context_per_engine_and_release(framework, version, tokens):
    assert derived_context(framework, version, _spec("Qwen3-8B", **QWEN3_YARN))[0] == tokens


@pytest.mark.parametrize("framework,version,tokens", [
    ("vllm", "0.5.3.post1", 131072),   # llama3 exempt (the first release that runs llama3)
    ("vllm", "0.33.0", 131072),
    ("sglang", "0.5.23", 131072),      # rope_type llama3: factor 1
    ("trtllm", "0.21.0", 131072),
    ("trtllm", "1.2.0", 131072),
])
def test_llama31_llama3_rope_is_not_scaled_where_exempt(framework, version, tokens):
    assert derived_context(framework, version, _spec("Llama-3.1-8B"))[0] == tokens


def test_two_length_keys_smallest_in_vllm_first_listed_in_sglang():
    # max_position_embeddings 40,960 and seq_length 16,384 (ChatGLM's key)
    spec = _spec("Qwen3-8B", seq_length=16384)
    assert derived_context("vllm", "0.2.1.post1", spec)[0] == 40960   # seq_length read from 0.2.2
    assert derived_context("vllm", "0.2.2", spec)[0] == 16384
    assert derived_context("sglang", "0.5.23", spec)[0] == 16384      # seq_length before max_position_embeddings
    assert derived_context("trtllm", "1.0.0", spec)[0] == 40960       # max_position_embeddings only
    # model_max_length 65,536 beside max_position_embeddings 40,960 (Command-R's key)
    wide = _spec("Qwen3-8B", model_max_length=65536)
    assert derived_context("vllm", "0.3.3", wide)[0] == 40960          # not a key before 0.4.0
    assert derived_context("vllm", "0.8.2", wide)[0] == 40960          # the minimum of the keys
    assert derived_context("vllm", "0.8.3", wide)[0] == 65536          # from 0.8.3 model_max_length wins
    assert derived_context("sglang", "0.5.23", wide)[0] == 65536       # listed before max_position_embeddings
    check_given("vllm", "0.4.0", wide, 65536)                          # within model_max_length: accepted
    with pytest.raises(UnsupportedCombination, match="allowed: 2..40960"):
        check_given("vllm", "0.3.3", wide, 65536)


def test_linear_and_dynamic_scaling_multiply_everywhere():
    spec = _spec("Llama-3.1-8B", max_position_embeddings=8192,
                 rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    assert {derived_context(f, v, spec)[0] for f, v in
            (("vllm", "0.11.0"), ("vllm", "0.33.0"), ("sglang", "0.5.23"), ("trtllm", "1.0.0"))} == {16384}


def test_longrope_default_is_the_top_level_original_from_vllm_0_11_1():
    spec = _spec("Llama-3.1-8B", rope_scaling={"rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0]},
                 original_max_position_embeddings=4096)
    assert derived_context("vllm", "0.11.0", spec)[0] == 131072
    assert derived_context("vllm", "0.11.1", spec)[0] == 4096
    check_given("vllm", "0.11.1", spec, 131072)   # the bound stays the derived 131,072


def test_a_longer_context_than_derived_per_engine():
    spec = _spec("Qwen3-8B", **QWEN3_YARN)
    check_given("vllm", "0.11.0", spec, 131072)
    with pytest.raises(UnsupportedCombination, match=r"131073 exceeds the 131072 tokens vllm 0.11.0.*allowed: 2..131072"):
        check_given("vllm", "0.11.0", spec, 131073)
    with pytest.raises(UnsupportedCombination, match="SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN; allowed: 2..40960"):
        check_given("sglang", "0.4.3", spec, 131072)
    check_given("sglang", "0.4.4", spec, 131072)          # the env var defaulted to "True" 0.4.4 - 0.4.10.post2
    check_given("sglang", "0.4.10.post2", spec, 131072)
    with pytest.raises(UnsupportedCombination):
        check_given("sglang", "0.5.1", spec, 131072)
    check_given("trtllm", "0.21.0", spec, 200000)         # trtllm-build warns only
    with pytest.raises(UnsupportedCombination, match="lowers max_seq_len to 40960"):
        check_given("trtllm", "1.0.0", spec, 131072)


def test_the_engines_variable_serves_a_longer_context_where_the_release_reads_it():
    """cluster.engine.allow_long_context: VLLM_ALLOW_LONG_MAX_MODEL_LEN from vLLM 0.5.4, SGLang's
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN (read in ModelConfig in every release), TensorRT-LLM 1.x's
    TLLM_ALLOW_LONG_MAX_MODEL_LEN; every refusal without it names the way out where the release has one."""
    spec = _spec("Qwen3-8B", **QWEN3_YARN)
    for framework, version in (("vllm", "0.5.4"), ("vllm", "0.11.0"), ("sglang", "0.4.3"), ("sglang", "0.5.1"),
                               ("trtllm", "1.0.0")):
        check_given(framework, version, spec, 262144, allow_long=True)
        with pytest.raises(UnsupportedCombination, match=r"or cluster.engine.allow_long_context: true \([A-Z_]+=1\)$") as exc:
            check_given(framework, version, spec, 262144)
        assert exc.value.field == "cluster.max_model_len"
    # vLLM 0.5.3 has no such variable: refused naming the flag, and its refusal offers no such way out
    with pytest.raises(UnsupportedCombination, match=r"vllm 0.5.3 has no VLLM_ALLOW_LONG_MAX_MODEL_LEN \(read from "
                                                     r"0.5.4\) and 262144 exceeds .* allowed: 2..131072$") as exc:
        check_given("vllm", "0.5.3", spec, 262144, allow_long=True)
    assert exc.value.field == "cluster.engine.allow_long_context"
    with pytest.raises(UnsupportedCombination, match=r"allowed: 2..131072$"):
        check_given("vllm", "0.5.3", spec, 262144)
    check_given("vllm", "0.5.3", spec, 131072, allow_long=True)   # a value the release derives needs no variable
    # the variable lifts the length check only: a config the release cannot derive a length from still fails
    no_original = _spec("Qwen3-8B", rope_scaling={"rope_type": "yarn", "factor": 4.0})
    with pytest.raises(UnsupportedCombination, match="original_max_position_embeddings"):
        check_given("vllm", "0.11.0", no_original, 262144, allow_long=True)


def test_yarn_without_its_original_length_fails_vllm_before_0_30():
    spec = _spec("Qwen3-8B", rope_scaling={"rope_type": "yarn", "factor": 4.0})
    with pytest.raises(UnsupportedCombination, match="original_max_position_embeddings"):
        derived_context("vllm", "0.11.0", spec)
    assert derived_context("vllm", "0.30.0", spec)[0] == 40960
    assert derived_context("sglang", "0.5.23", spec)[0] == 163840   # no original: SGLang multiplies


def test_catalog_models_keep_their_context_under_every_current_engine():
    """The published configs' rope blocks (yarn with original × factor = max_position_embeddings; llama3) leave
    the catalog's contexts as they were under the releases scenarios name by default."""
    from models import get_model
    for name in ("llama-3.1-8b", "llama-3.1-405b", "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b", "qwen3-8b"):
        spec = get_model(name)
        for framework, version in (("vllm", "0.11.0"), ("vllm", "0.33.0"), ("sglang", "0.5.23"), ("trtllm", "1.2.0")):
            assert derived_context(framework, version, spec)[0] == spec.max_position_embeddings, (name, version)


@pytest.mark.parametrize("change,tokens", [
    ({"rope_scaling": {"rope_type": "linear", "factor": 1e-300}}, 0),   # (40,960 × 1e-300)
    ({"rope_scaling": {"rope_type": "linear", "factor": 3e-5}}, 1),     # (int(1.2288))
    ({"seq_length": 1}, 1),                                               # vLLM and SGLang take seq_length
])
def test_a_context_under_two_tokens_is_refused_naming_the_model(change, tokens):
    """A derived limit of 0 or 1 left no request servable: truncate made outputs of -1 tokens (a ValueError
    traceback), drop ran every request dropped with exit 0 (session 24)."""
    spec = _spec("Qwen3-8B", **change)
    for framework, version in (("vllm", "0.24.0"), ("sglang", "0.5.23")):
        with pytest.raises(UnsupportedCombination, match=rf"derives a context of {tokens} tokens? for qwen3-8b") as exc:
            derived_context(framework, version, spec)
        assert exc.value.field == "cluster.model"
        with pytest.raises(UnsupportedCombination, match="at least 2") as exc:   # (not 'allowed: 2..1')
            check_given(framework, version, spec, 4096)
        assert exc.value.field == "cluster.model"
    check_given("trtllm", "0.21.0", spec, 4096)   # trtllm-build takes a given max_seq_len, warning only


def test_a_factor_below_one_shortens_the_context_as_the_engines_compute_it():
    spec = _spec("Qwen3-8B", rope_scaling={"rope_type": "linear", "factor": 0.5})
    assert derived_context("vllm", "0.24.0", spec)[0] == 20480   # 40,960 × 0.5 (transformers warns only)


def test_sglang_takes_a_null_original_length_as_present():
    """SGLang's get_context_length tests `"original_max_position_embeddings" in rope_scaling`: a null counts and the
    factor is not applied; vLLM and TensorRT-LLM multiply a linear block whatever it says."""
    cfg = json.loads((CONFIGS / "Qwen3-8B" / "config.json").read_text())
    cfg["rope_scaling"] = {"rope_type": "linear", "factor": 2.0, "original_max_position_embeddings": None}
    spec = spec_from_hf_config(cfg, "q")
    assert derived_context("sglang", "0.5.2", spec)[0] == 40960
    assert derived_context("vllm", "0.11.0", spec)[0] == derived_context("trtllm", "1.0.0", spec)[0] == 81920
    del cfg["rope_scaling"]["original_max_position_embeddings"]
    assert derived_context("sglang", "0.5.2", spec_from_hf_config(cfg, "q"))[0] == 81920
