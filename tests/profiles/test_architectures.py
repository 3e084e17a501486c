"""profiles.engine_time.architectures: the first release of each engine that can load each architecture, on both
sides of every boundary, as read in the sources the data files name (SGLang: EntryClass in the wheels'
sglang/srt/models; TensorRT-LLM: its release notes; vLLM: its model registry)."""
from __future__ import annotations

import pytest

from models import get_model
from models.hf_config import ARCHITECTURES
from profiles.engine_time.architectures import FRAMEWORKS, NEVER, check, first_releases, registry
from profiles.engine_time.support import UnsupportedCombination


def _refusal(framework, version, model) -> UnsupportedCombination | None:
    try:
        check(framework, version, get_model(model) if isinstance(model, str) else model)
    except UnsupportedCombination as exc:
        assert "\n" not in str(exc)
        return exc
    return None


# (framework, the last release without the architecture, the first with it, a catalog model of it); each pair
# hand-checked in the wheels (`unzip -p sglang-X.whl sglang/srt/models/<module>.py | grep EntryClass`)
SGLANG_BOUNDARIES = [
    ("0.4.0.post2", "0.4.1", "deepseek-v3"),             # deepseek_v2.py EntryClass gains DeepseekV3ForCausalLM
    ("0.4.5.post1", "0.4.5.post2", "qwen3-8b"),          # qwen3.py first shipped
    ("0.4.5.post1", "0.4.5.post2", "qwen3-30b-a3b"),     # qwen3_moe.py first shipped
    ("0.4.10.post2", "0.5.0rc0", "gpt-oss-20b"),         # gpt_oss.py first shipped
    ("0.5.2rc2", "0.5.2", "qwen3-next-80b-a3b"),         # qwen3_next.py first shipped
    ("0.5.3", "0.5.3.post1", "nemotron-h-56b"),          # nemotron_h.py first shipped (not in 0.5.3rc0/rc2/0.5.3)
]


@pytest.mark.parametrize("before, first, model", SGLANG_BOUNDARIES)
def test_sglang_refuses_the_release_before_the_first_entry_class(before, first, model):
    said = _refusal("sglang", before, model)
    assert said is not None and said.field == "cluster.engine.version"
    assert said.message.startswith(f"sglang {before} has no ")
    assert f"lists it from v{first}; allowed: a version >= {first}" in said.message
    assert _refusal("sglang", first, model) is None


@pytest.mark.parametrize("version", ["0.4.0", "0.5.3.post1", "0.5.23"])
def test_sglang_has_llama_mistral_mixtral_qwen2_and_deepseek_v2_from_the_oldest_release_read(version):
    for model in ("llama-3.1-8b", "mixtral-8x7b", "qwen2.5-7b"):
        assert _refusal("sglang", version, model) is None
    for arch in ("LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
                 "DeepseekV2ForCausalLM"):
        assert arch not in first_releases("sglang")


@pytest.mark.parametrize("framework, version", [("sglang", "0.4.0"), ("sglang", "0.5.23"), ("trtllm", "1.4.0rc4"),
                                                ("trtllm", "1.0.0rc3")])
def test_jamba_is_in_no_release_read_of_sglang_or_trtllm(framework, version):
    said = _refusal(framework, version, "jamba-1.5-mini")
    assert said is not None and said.field == "cluster.model"
    assert "has it in no release read" in said.message and "the engine vllm (from 0.5.1)" in said.message
    assert _refusal("vllm", "0.5.1", "jamba-1.5-mini") is None


def test_a_draft_model_that_no_release_has_names_the_drafter():
    with pytest.raises(UnsupportedCombination) as err:
        check("sglang", "0.5.9", get_model("jamba-1.5-mini"), model_field="drafter.model")
    assert err.value.field == "drafter.model"


# TensorRT-LLM: the final release the notes add it in, and the final release before it (docs/source/release-notes.md)
TRTLLM_BOUNDARIES = [
    ("0.6.1", "0.7.1", "mixtral-8x7b"),        # 0.7.1: Mixtral-8x7B model
    ("0.18.2", "0.19.0", "deepseek-v3"),       # 0.19.0 PyTorch workflow: DeepSeek V3/R1; 0.18.x builds on 0.17.0
    ("0.19.0", "0.20.0", "qwen3-8b"),          # 0.20.0: Added Qwen3 support
    ("0.19.0", "0.20.0", "qwen3-30b-a3b"),     # 0.20.0: Qwen3 (its fixed issues name Qwen3 MoE)
    ("0.18.2", "0.20.0", "nemotron-h-56b"),    # 0.20.0: Nemotron-H; 0.19.0's 'Mamba-Hybrid' not pinned
    ("1.0.0", "1.1.0", "gpt-oss-20b"),         # 1.1: Add GPT-OSS model support
    ("1.1.0", "1.2.0", "qwen3-next-80b-a3b"),  # 1.2: Added support for ... Qwen3-Next
]


@pytest.mark.parametrize("without, first, model", TRTLLM_BOUNDARIES)
def test_trtllm_refuses_the_final_releases_its_notes_cite_to_lack_the_architecture(without, first, model):
    said = _refusal("trtllm", without, model)
    assert said is not None and said.field == "cluster.engine.version"
    assert f"has it from v{first}, not in v{without} or earlier; allowed: a version after {without}" in said.message
    assert _refusal("trtllm", f"{without}.post1", model) is not None     # a post release rebuilds the same release
    assert _refusal("trtllm", "0.5.0", model) is not None
    assert _refusal("trtllm", first, model) is None


@pytest.mark.parametrize("version, model", [
    ("1.1.0rc0", "gpt-oss-20b"),               # between 1.0.0 and 1.1.0: not read, not refused
    ("0.18.0.dev2025021800", "deepseek-v3"),   # the 0.18.0.dev builds had features 0.18.0 dropped
    ("0.19.0", "nemotron-h-56b"),              # 'Added Mamba-Hybrid support': architecture not named
    ("1.2.0rc1", "qwen3-next-80b-a3b"),
])
def test_trtllm_releases_the_notes_do_not_cover_are_not_refused(version, model):
    assert _refusal("trtllm", version, model) is None


def test_vllm_refusals_are_unchanged():
    said = _refusal("vllm", "0.8.3", "qwen3-8b")
    assert said.message == ("vllm 0.8.3 has no Qwen3ForCausalLM (qwen3-8b): vLLM's model registry lists it from "
                            "v0.8.4; allowed: a version >= 0.8.4")
    assert _refusal("vllm", "0.8.4", "qwen3-8b") is None


def test_no_version_no_model_or_an_unlisted_engine_is_not_checked():
    assert _refusal("sglang", None, "qwen3-8b") is None
    check("sglang", "0.4.0", None)
    assert _refusal("reference", "0.1", "jamba-1.5-mini") is None


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_data_file_names_known_architectures_and_releases(framework):
    from packaging.version import Version
    from profiles.engine_time.releases import releases
    table = registry(framework)
    known = set(releases(framework))
    for arch, first in table.firsts.items():
        assert arch in ARCHITECTURES, arch
        assert first == NEVER or Version(first) in known, (framework, arch, first)
    for arch, bound in table.last_without.items():
        assert table.firsts[arch] != NEVER and Version(bound) in known and Version(bound) < Version(table.firsts[arch])


# rope scaling types: (the last vLLM release whose get_rope lacks the type, the first that has it, the type); each
# pair hand-checked in the distributions (get_rope / PagedAttentionWithRoPE, vllm_rope_types.yaml)
VLLM_ROPE_BOUNDARIES = [("0.2.1.post1", "0.2.2", "yarn"), ("0.4.1", "0.4.2", "su"), ("0.5.0.post1", "0.5.1", "longrope"),
                        ("0.5.3", "0.5.3.post1", "llama3")]


def _with_rope(kind: str):
    from dataclasses import replace
    return replace(get_model("llama-3-8b"), name=f"llama-3-8b-{kind}", rope_scaling_type=kind, rope_scaling_factor=4.0,
                   rope_original_max_position_embeddings=8192)


@pytest.mark.parametrize("before, first, kind", VLLM_ROPE_BOUNDARIES)
def test_vllm_refuses_the_release_before_its_get_rope_runs_the_rope_type(before, first, kind):
    said = _refusal("vllm", before, _with_rope(kind))
    assert said is not None and said.field == "cluster.engine.version"
    assert said.message == (f"vllm {before} cannot run llama-3-8b-{kind}'s rope scaling type {kind}: vLLM's get_rope "
                            f"(vllm/model_executor/layers/rotary_embedding.py) lists it from v{first}; allowed: a "
                            f"version >= {first}")
    assert _refusal("vllm", first, _with_rope(kind)) is None


def test_llama31_needs_vllm_0_5_3_post1_and_trtllm_0_12_while_sglang_runs_it_in_every_release():
    assert _refusal("vllm", "0.2.0", "llama-3.1-8b").message.startswith(
        "vllm 0.2.0 cannot run llama-3.1-8b's rope scaling type llama3")
    assert _refusal("vllm", "0.5.3.post1", "llama-3.1-8b") is None
    assert "not in v0.11.0 or earlier" in _refusal("trtllm", "0.11.0", "llama-3.1-8b").message
    assert _refusal("trtllm", "0.12.0", "llama-3.1-8b") is None
    assert _refusal("trtllm", "0.12.0rc0", "llama-3.1-8b") is None      # pre-releases: not in the notes
    assert _refusal("sglang", "0.4.0", "llama-3.1-8b") is None
    assert _refusal("vllm", "0.2.0", "llama-3-8b") is None                # no rope scaling: unchanged
    assert _refusal("vllm", "0.2.0", _with_rope("linear")) is None        # in 0.2.0's PagedAttentionWithRoPE


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_rope_data_file_names_known_releases(framework):
    from packaging.version import Version
    from profiles.engine_time.architectures import ROPE_TYPES
    from profiles.engine_time.releases import releases
    table = registry(framework, ROPE_TYPES)
    known = set(releases(framework))
    for kind, first in table.firsts.items():
        assert first == NEVER or Version(first) in known, (framework, kind, first)
    for kind, bound in table.last_without.items():
        assert Version(bound) in known and Version(bound) < Version(table.firsts[kind])
    for kind, last in table.lasts.items():
        assert Version(last) in known and Version(last) >= Version(table.firsts[kind])


def test_vllm_runs_the_extended_rope_type_in_0_5_3_only_and_sglang_in_no_release():
    """Llama 3.1's block as first published (type extended) ran only in vLLM 0.5.3, whose 0.5.3.post1 renamed it
    llama3 ('Unknown RoPE scaling type extended' after); SGLang's get_rope never had it. Before, vLLM 0.10.0 and
    SGLang 0.5.0rc0 ran such a model (exit 0 with cluster.max_model_len set)."""
    for version in ("0.5.2", "0.5.3.post1", "0.10.0"):
        said = _refusal("vllm", version, _with_rope("extended"))
        assert said is not None and said.field == "cluster.engine.version", version
        assert said.message.endswith("has it in v0.5.3 only; allowed: version 0.5.3"), said.message
    assert _refusal("vllm", "0.5.3", _with_rope("extended")) is None
    said = _refusal("sglang", "0.5.23", _with_rope("extended"))
    assert said is not None and said.field == "cluster.model"
    assert said.message.endswith("has it in no release read; allowed: a model of another rope scaling type, or the "
                                 "engine vllm (version 0.5.3 only)"), said.message


@pytest.mark.parametrize("model, refused, first", [
    ("jamba-1.5-mini", ("0.8.0", "0.9.0", "0.9.2", "0.10.0"), "0.10.1"),   # SupportsV0Only through the 0.10.0 sdist
    ("nemotron-h-56b", ("0.9.1",), "0.9.2"),                                # SupportsV0Only in 0.9.1, its first release
])
def test_vllm_refuses_an_architecture_its_v1_engine_cannot_load(model, refused, first):
    """vLLM 0.8.0 - 0.10.0 ran Jamba, and 0.9.1 Nemotron-H, with draftsim's V1 rules (exit 0), though vLLM's
    _is_v1_supported_oracle sends a SupportsV0Only class back to the V0 engine, which draftsim does not model from
    0.8.0. Refused naming the version that loads it on V1 (and the V0 releases before 0.8.0 where there are)."""
    for version in refused:
        said = _refusal("vllm", version, model)
        assert said is not None and said.field == "cluster.engine.version", version
        assert said.message.startswith(f"vllm {version} runs ") and "on its V0 engine only" in said.message
        assert said.message.endswith(f"a version >= {first}"), said.message
    assert _refusal("vllm", first, model) is None
    assert "a version 0.5.1 to 0.8.0 (excl.), or" in _refusal("vllm", "0.8.0", "jamba-1.5-mini").message
    assert _refusal("vllm", "0.7.3", "jamba-1.5-mini") is None      # V0, which draftsim models before 0.8.0
    assert _refusal("sglang", "0.5.23", "nemotron-h-56b") is None   # the rule is vLLM's


def test_the_v1_table_names_known_architectures_and_releases():
    from packaging.version import Version
    from profiles.engine_time.architectures import V1_ARCHITECTURES
    from profiles.engine_time.releases import releases
    table = registry("vllm", V1_ARCHITECTURES)
    assert set(table.firsts) <= set(ARCHITECTURES)
    assert all(Version(first) in set(releases("vllm")) for first in table.firsts.values())


def _hf(folder: str, **changes):
    import json
    from pathlib import Path
    from models.hf_config import spec_from_hf_config
    cfg = json.loads((Path(__file__).resolve().parent.parent / "data" / "hf_configs" / folder / "config.json")
                     .read_text())
    return spec_from_hf_config({**cfg, **changes}, folder.lower())


def test_trtllm_refuses_a_model_read_from_a_later_architectures_entry():
    model = _hf("Qwen3-8B", architectures=["Unknown", "Qwen3ForCausalLM"])
    assert _refusal("vllm", "0.11.0", model) is None and _refusal("sglang", "0.5.2", model) is None
    refusal = _refusal("trtllm", "1.0.0", model)
    assert refusal.field == "cluster.model" and "architectures[0] only ('Unknown'" in str(refusal)
    assert _refusal("trtllm", "1.0.0", _hf("Qwen3-8B")) is None


@pytest.mark.parametrize("framework,version,window,refused", [
    ("vllm", "0.18.1", 0, True), ("vllm", "0.19.0", 0, False), ("vllm", "0.18.1", None, False),
    ("sglang", "0.5.7", 0, False), ("sglang", "0.5.8", 0, True), ("sglang", "0.5.23", 0, True),
    ("sglang", "0.5.2", None, True), ("trtllm", "1.1.0", 0, False), ("trtllm", "1.1.0", None, False),
])
def test_a_gpt_oss_window_of_0_or_null_is_served_where_the_release_serves_it(framework, version, window, refused):
    refusal = _refusal(framework, version, _hf("gpt-oss-20b", sliding_window=window))
    assert (refusal is not None) == refused
    assert refusal is None or (refusal.field == "cluster.model" and "sliding_window is" in str(refusal))
