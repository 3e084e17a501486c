"""Models from Hugging Face config.json files, catalog-format YAML files and inline blocks; context limits.

The configs in tests/data/hf_configs/ are the published ones (its README says where each comes from)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

import simulator
from models import get_model
from models.hf_config import ARCHITECTURES, UnsupportedModelError, load_hf_config, spec_from_hf_config
from models.load import load_model
from sim_helpers import scenario
from simulator.cli import main
from paths import DATA

CONFIGS = DATA / "hf_configs"

# Published totals: model cards (Llama 3.1: the Hub's safetensors sizes 8.03B / 405.9B; Qwen2.5 "Number of
# Parameters" 7.61B / 72.7B; Qwen3 8.2B, 32.8B, 30.5B, 235B), Mistral 7B 7.24B (the Hub's safetensors size),
# Mixtral 46.7B (Mistral AI's announcement), DeepSeek-V2-Lite 15.7B (its model card), DeepSeek-V3 671B
# (technical report), gpt-oss 20.91B / 116.83B (OpenAI's model card, Table 1). Hybrids: Qwen3-Next-80B-A3B "80B in
# total and 3B activated" (model card; the Hub's 81.3B safetensors size includes the MTP module), Nemotron-H-56B (arXiv
# 2504.03624, "Nemotron-H-56B"), Nemotron-3-Nano-30B-A3B 31.6B total (model card), Jamba-1.5-Mini 52B total / 12B
# active (AI21's model card).
PUBLISHED = {
    "Llama-3.1-8B": ("LlamaForCausalLM", 8.03e9),
    "Llama-3.1-405B": ("LlamaForCausalLM", 405.9e9),
    "Mistral-7B-v0.1": ("MistralForCausalLM", 7.24e9),
    "Qwen2.5-7B": ("Qwen2ForCausalLM", 7.61e9),
    "Qwen2.5-72B": ("Qwen2ForCausalLM", 72.7e9),
    "Qwen3-8B": ("Qwen3ForCausalLM", 8.2e9),
    "Qwen3-32B": ("Qwen3ForCausalLM", 32.8e9),
    "Mixtral-8x7B-v0.1": ("MixtralForCausalLM", 46.7e9),
    "Qwen3-30B-A3B": ("Qwen3MoeForCausalLM", 30.5e9),
    "Qwen3-235B-A22B": ("Qwen3MoeForCausalLM", 235e9),
    "DeepSeek-V2-Lite": ("DeepseekV2ForCausalLM", 15.7e9),
    "DeepSeek-V3": ("DeepseekV3ForCausalLM", 671e9),
    "gpt-oss-20b": ("GptOssForCausalLM", 20.91e9),
    "gpt-oss-120b": ("GptOssForCausalLM", 116.83e9),
    "Qwen3-Next-80B-A3B-Instruct": ("Qwen3NextForCausalLM", 80e9),
    "Nemotron-H-56B-Base-8K": ("NemotronHForCausalLM", 56e9),
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("NemotronHForCausalLM", 31.6e9),
    "Jamba-1.5-Mini": ("JambaForCausalLM", 52e9),
}


@pytest.mark.parametrize("folder", sorted(PUBLISHED))
def test_published_configs_give_the_published_sizes_within_one_percent(folder):
    arch, total = PUBLISHED[folder]
    raw = json.loads((CONFIGS / folder / "config.json").read_text())
    assert raw["architectures"] == [arch]
    spec = load_hf_config(CONFIGS / folder / "config.json")
    assert spec.param_count() == pytest.approx(total, rel=0.01)
    assert spec.name == folder.lower() and spec.max_position_embeddings == raw["max_position_embeddings"]


def test_every_supported_architecture_is_covered_by_a_published_config():
    assert {arch for arch, _ in PUBLISHED.values()} == set(ARCHITECTURES)
    assert len(ARCHITECTURES) >= 6


@pytest.mark.parametrize("name,folder", [("llama-3.1-8b", "Llama-3.1-8B"), ("llama-3.1-405b", "Llama-3.1-405B"),
                                         ("qwen2.5-7b", "Qwen2.5-7B"), ("qwen2.5-72b", "Qwen2.5-72B"),
                                         ("qwen3-8b", "Qwen3-8B"), ("qwen3-32b", "Qwen3-32B"),
                                         ("qwen3-30b-a3b", "Qwen3-30B-A3B"), ("qwen3-235b-a22b", "Qwen3-235B-A22B"),
                                         ("mixtral-8x7b", "Mixtral-8x7B-v0.1"), ("deepseek-v3", "DeepSeek-V3"),
                                         ("gpt-oss-20b", "gpt-oss-20b"), ("gpt-oss-120b", "gpt-oss-120b"),
                                         ("qwen3-next-80b-a3b", "Qwen3-Next-80B-A3B-Instruct"),
                                         ("nemotron-h-56b", "Nemotron-H-56B-Base-8K"),
                                         ("nemotron-3-nano-30b-a3b", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"),
                                         ("jamba-1.5-mini", "Jamba-1.5-Mini")])
def test_catalog_entries_equal_the_import_of_their_config(name, folder):
    catalog, imported = get_model(name), load_hf_config(CONFIGS / folder / "config.json")
    # (a catalog name is an architecture, served in whatever cluster.dtype says; the checkpoint's own format,
    # checkpoint_dtype, binds a config.json only: models.quant_config)
    skip = {"name", "family", "source", "checkpoint_dtype"}
    assert {f.name: getattr(catalog, f.name) for f in dataclasses.fields(catalog) if f.name not in skip} == \
        {f.name: getattr(imported, f.name) for f in dataclasses.fields(imported) if f.name not in skip}


def test_architecture_features_are_read():
    mistral = load_hf_config(CONFIGS / "Mistral-7B-v0.1" / "config.json")
    assert (mistral.sliding_window, mistral.sliding_window_layers, mistral.num_kv_heads) == (4096, 32, 8)
    oss = load_hf_config(CONFIGS / "gpt-oss-20b" / "config.json")
    assert (oss.sliding_window, oss.sliding_window_layers) == (128, 12)     # even layers of layer_types
    assert oss.attention_sinks and oss.expert_bias and oss.router_bias and oss.attention_output_bias
    lite = load_hf_config(CONFIGS / "DeepSeek-V2-Lite" / "config.json")
    assert lite.is_mla and lite.q_lora_rank == 0 and lite.first_dense_layers == 1 and lite.num_shared_experts == 2
    assert not lite.router_bias and load_hf_config(CONFIGS / "DeepSeek-V3" / "config.json").router_bias
    qwen = load_hf_config(CONFIGS / "Qwen2.5-7B" / "config.json")
    assert qwen.qkv_bias and not qwen.qk_norm and qwen.sliding_window == 0   # use_sliding_window: false
    assert load_hf_config(CONFIGS / "Qwen3-8B" / "config.json").qk_norm


def _config(**changes) -> dict:
    cfg = json.loads((CONFIGS / "Llama-3.1-8B" / "config.json").read_text())
    cfg.update(changes)
    return {k: v for k, v in cfg.items() if v is not None}


def test_unsupported_configs_name_the_field_and_what_is_allowed():
    cases = [(_config(architectures=["Gemma2ForCausalLM"]), "architectures.*Gemma2ForCausalLM.*allowed: LlamaForCausalLM"),
             ({**_config(architectures=["Qwen3VLForConditionalGeneration"]), "text_config": {}}, "vision-language"),
             (_config(hidden_size=None), "lacks 'hidden_size'"),
             (_config(mlp_bias=True), "mlp_bias"),
             ({**json.loads((CONFIGS / "Qwen3-30B-A3B" / "config.json").read_text()), "mlp_only_layers": [3, 7]},
              "mlp_only_layers"),
             (_config(num_attention_heads=32, num_key_value_heads=5), "multiple of")]
    for cfg, message in cases:
        with pytest.raises(UnsupportedModelError, match=message):
            spec_from_hf_config(cfg, "x")


def test_model_references_catalog_file_yaml_and_inline(tmp_path):
    assert load_model("Llama-3.1-8B") is get_model("llama-3.1-8b")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text((CONFIGS / "Qwen2.5-7B" / "config.json").read_text())
    assert load_model("m/config.json", tmp_path).param_count() == get_model("qwen2.5-7b").param_count()
    fields = {k: getattr(get_model("llama-3-8b"), k) for k in ("hidden_size", "num_layers", "num_heads", "num_kv_heads",
                                                              "head_dim", "intermediate_size", "vocab_size")}
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({"my-llama": fields}))
    assert load_model("mine.yaml", tmp_path).param_count() == get_model("llama-3-8b").param_count()
    assert load_model({**fields, "name": "inline"}).param_count() == get_model("llama-3-8b").param_count()
    with pytest.raises(ValueError, match="unknown model field.*hidden"):
        load_model({**fields, "hiden": 3})
    with pytest.raises(ValueError, match="unknown model 'llama-9'.*config.json"):
        load_model("llama-9")


def _as_tuples(value):
    """`value` with every list as a tuple, as a Python user may write a config."""
    if isinstance(value, list):
        return tuple(map(_as_tuples, value))
    return {k: _as_tuples(v) for k, v in value.items()} if isinstance(value, dict) else value


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "gpt-oss-20b"])
def test_an_inline_config_takes_tuples_for_its_lists(name):
    """Through the Python API an inline config's architectures=("LlamaForCausalLM",) was refused, "architectures is
    ('LlamaForCausalLM',); expected a list of strings" (gpt-oss's layer_types too), where the scenario's own list
    fields take a tuple (simulator.config.base): a tuple is read as the list JSON writes for it."""
    cfg = json.loads((CONFIGS / name / "config.json").read_text())
    assert load_model(_as_tuples(cfg)) == load_model(cfg)
    tiny = scenario(workload={"num_requests": 3})
    cluster = {k: v for k, v in tiny["cluster"].items() if k != "dtype"}   # (gpt-oss: its checkpoint's mxfp4)
    assert simulator.prepare({**tiny, "cluster": {**cluster, "model": _as_tuples(cfg)}}).num_requests == 3
    with pytest.raises(ValueError, match=r"architectures is \[1\]; expected a list of strings"):
        load_model({**cfg, "architectures": (1,)})


def _write_scenario(tmp_path: Path, cluster: dict, workload: dict | None = None) -> Path:
    data = scenario(cluster=cluster, workload={"num_requests": 30, **(workload or {})})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_scenario_runs_a_config_json_relative_to_its_file(tmp_path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text((CONFIGS / "Llama-3.1-8B" / "config.json").read_text())
    by_file = simulator.run(_write_scenario(tmp_path, {"model": "hf/config.json"}))
    by_name = simulator.run(scenario(cluster={"model": "llama-3.1-8b"}, workload={"num_requests": 30}))
    assert by_file.summary["ttft_p50_s"] == by_name.summary["ttft_p50_s"]
    inline = {k: v for k, v in dataclasses.asdict(get_model("llama-3.1-8b")).items()}
    by_block = simulator.run(scenario(cluster={"model": inline}, workload={"num_requests": 30}))
    assert by_block.summary["ttft_p50_s"] == by_name.summary["ttft_p50_s"]


def test_bad_model_files_are_one_line_errors_and_nothing_is_written(tmp_path, capsys):
    bad = tmp_path / "gemma"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps(_config(architectures=["Gemma3ForCausalLM"])))
    out = tmp_path / "out"
    for model, message in (("gemma/config.json", "cluster.model: .*Gemma3ForCausalLM.*allowed"),
                           ("missing/config.json", "cluster.model: .*file not found")):
        path = _write_scenario(tmp_path, {"model": model})
        assert main(["run", str(path), "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and __import__("re").search(message, err), err
        assert not out.exists()


def test_context_length_is_enforced_error_drop_or_truncate(tmp_path, capsys):
    long = {"prompt_tokens": {"kind": "fixed", "value": 7000}, "output_tokens": {"kind": "fixed", "value": 2000}}
    path = _write_scenario(tmp_path, {"model": "llama-3-8b"}, long)   # 8,192-token context
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "workload: request 0 needs 9000 tokens" in err and "8192" in err and "context_overflow" in err
    assert not out.exists()
    dropped = simulator.run(path, ["workload.context_overflow=drop"])
    assert dropped.requests.dropped.all() and set(dropped.requests.drop_reason) == {"exceeds_context"}
    cut = simulator.run(path, ["workload.context_overflow=truncate"])
    assert (cut.requests.prompt_tokens == 8192 - 2000).all() and cut.requests.finish_s.notna().all()
    shorter = simulator.run(path, ["workload.context_overflow=truncate", "cluster.max_model_len=4096"])
    assert (shorter.requests.prompt_tokens == 2096).all()
    assert main(["run", str(path), "--set", "cluster.max_model_len=10000", "--quiet"]) == 2
    err = capsys.readouterr().err   # (vLLM's derived limit: profiles.engine_time.context_length)
    assert "cluster.max_model_len: 10000 exceeds the 8192 tokens vllm" in err and "allowed: 2..8192" in err


FP8_CT = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
    "weights": {"type": "float", "num_bits": 8, "strategy": "channel"},
    "input_activations": {"type": "float", "num_bits": 8, "dynamic": True}}}}
KV_FP8 = {"type": "float", "num_bits": 8, "strategy": "tensor", "dynamic": False, "symmetric": True}


def test_a_declared_kv_cache_quantization_is_read():
    """config.json's KV-cache declarations (models.quant_config.checkpoint_kv): llm-compressor's kv_cache_scheme,
    ModelOpt's kv_cache_quant_algo (<= 0.29, also hf_quant_config.json) or kv_cache_scheme (>= 0.31), an fp8
    checkpoint's kv_cache_quant_algo (SGLang's Fp8Config); none: ("", "")."""
    qwen = json.loads((CONFIGS / "Qwen3-8B" / "config.json").read_text())
    for block, declared in (({**FP8_CT, "kv_cache_scheme": KV_FP8}, ("compressed-tensors", "fp8")),
                            ({**FP8_CT, "kv_cache_scheme": None}, ("", "")),
                            ({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
                             ("modelopt", "fp8")),
                            ({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_scheme":
                              {"type": "float", "num_bits": 4}}, ("modelopt", "nvfp4")),
                            ({"quant_method": "fp8", "weight_block_size": [128, 128], "kv_cache_quant_algo": "fp8"},
                             ("fp8", "fp8")),
                            ({"quant_method": "fp8", "weight_block_size": [128, 128]}, ("", ""))):
        spec = spec_from_hf_config({**qwen, "quantization_config": block}, "q")
        assert (spec.checkpoint_kv_format, spec.checkpoint_kv_dtype) == declared, block
    assert load_hf_config(CONFIGS / "DeepSeek-V3" / "config.json").checkpoint_kv_dtype == ""


def test_rope_scaling_length_keys_and_quantization_are_read():
    qwen = json.loads((CONFIGS / "Qwen3-8B" / "config.json").read_text())
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    spec = spec_from_hf_config({**qwen, "rope_scaling": yarn, "seq_length": 16384.0}, "q")
    assert (spec.rope_scaling_type, spec.rope_scaling_factor, spec.rope_original_max_position_embeddings,
            spec.length_keys) == ("yarn", 4.0, 32768, (("seq_length", 16384),))
    # transformers v5 writes rope_parameters (with rope_theta and "default" where nothing scales), nested by
    # layer type where layers differ; vLLM patches rope_scaling into it
    nested = {"full_attention": {**yarn, "rope_theta": 1e6}, "sliding_attention": {**yarn, "rope_theta": 1e4}}
    assert spec_from_hf_config({**qwen, "rope_parameters": nested}, "q").rope_scaling_factor == 4.0
    plain = spec_from_hf_config({**qwen, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}, "q")
    assert plain.rope_scaling_type == "" and load_hf_config(CONFIGS / "Llama-3.1-8B" / "config.json") \
        .rope_scaling_type == "llama3"
    assert load_hf_config(CONFIGS / "DeepSeek-V3" / "config.json").checkpoint_dtype == "fp8_block"
    assert load_hf_config(CONFIGS / "gpt-oss-20b" / "config.json").checkpoint_dtype == "mxfp4"
    fp8 = FP8_CT
    w4a16 = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"type": "int", "num_bits": 4}}}}
    for block, dtype in ((fp8, "fp8"), (w4a16, "int4"), ({"quant_method": "awq", "bits": 4}, "int4"),
                         ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
                         ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "fp8")):
        assert spec_from_hf_config({**qwen, "quantization_config": block}, "q").checkpoint_dtype == dtype


@pytest.mark.parametrize("change,message", [
    ({"rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 32768}},
     "rope_scaling: rope_type yarn needs a factor"),
    ({"rope_scaling": {"type": "linear", "rope_type": "dynamic", "factor": 2}}, "rope_type 'dynamic' and type 'linear' differ"),
    ({"rope_scaling": {"rope_type": "linear", "factor": -2}}, r"rope_scaling.factor is -2; expected a finite number > 0"),
    ({"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 4.0},
                          "sliding_attention": {"rope_type": "default"}}}, "layer types different scaling"),
    ({"seq_length": "4k"}, "seq_length is '4k'; expected an integer >= 1"),
    # session 24: a type no engine's get_rope builds ran with its factor; a factor whose product overflowed a float
    # was an OverflowError traceback; a nested block's non-mapping entry was skipped (vLLM reads rp["rope_type"])
    ({"rope_scaling": {"rope_type": "weird", "factor": 2}}, "rope_type 'weird' is no rope scaling type an engine"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 1e308, "original_max_position_embeddings": 32768}},
     r"rope_scaling_factor .* is 1e\+308, which scales max_position_embeddings \(40,960\) past 1,073,741,824"),
    ({"rope_scaling": {"rope_type": "linear", "factor": 4.0}, "seq_length": 2**29},
     r"scales seq_length \(536,870,912\) past"),
    ({"rope_parameters": {"full_attention": 5}}, r"rope_parameters.full_attention is 5; expected a mapping"),
    ({"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
                          "sliding_attention": "yarn"}}, r"rope_parameters.sliding_attention is 'yarn'"),
    ({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}},
     "quant_method 'bitsandbytes' is not priced here; allowed: fp8, mxfp4"),
    ({"quantization_config": {"quant_method": "gptq", "bits": 8}}, "bits is 8: only 4-bit"),
    ({"quantization_config": {**FP8_CT, "kv_cache_scheme": {"type": "int", "num_bits": 8}}},
     "kv_cache_scheme is int 8-bit; the engines read float 8-bit KV caches"),
    ({"quantization_config": {**FP8_CT, "kv_cache_scheme": "fp8"}}, "kv_cache_scheme is 'fp8'; expected a mapping"),
    # session 24: a list or mapping where the engines read a name was a bare "unhashable type: 'list'"; a block size
    # vLLM's Fp8Config refuses (not two dimensions) was priced as fp8_block, or as fp8 when empty
    ({"quantization_config": {**FP8_CT, "kv_cache_scheme": {"type": ["float"], "num_bits": 8}}},
     r"kv_cache_scheme is \['float'\] 8-bit; the engines read float 8-bit"),
    ({"quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8",
                              "kv_cache_scheme": {"type": "float", "num_bits": {"a": 1}}}}, "kv_cache_scheme is float"),
    ({"quantization_config": {"quant_method": ["fp8"]}}, r"quant_method \['fp8'\] is not priced here"),
    ({"quantization_config": {"quant_method": "fp8", "weight_block_size": []}}, "weight_block_size is \\[\\]; expected two"),
    ({"quantization_config": {"quant_method": "fp8", "weight_block_size": "x"}}, "weight_block_size is 'x'; expected two"),
    ({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 0]}}, "weight_block_size is"),
    ({"quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "INT8"}},
     "kv_cache_quant_algo is 'INT8'; allowed: FP8, NVFP4"),
])
def test_context_and_quantization_fields_are_checked(change, message):
    qwen = json.loads((CONFIGS / "Qwen3-8B" / "config.json").read_text())
    with pytest.raises(UnsupportedModelError, match=message):
        spec_from_hf_config({**qwen, **change}, "q")


def _qwen3_dir(tmp_path: Path, folder: str = "hf", **changes) -> str:
    cfg = {**json.loads((CONFIGS / "Qwen3-8B" / "config.json").read_text()), **changes}
    (tmp_path / folder).mkdir(exist_ok=True)
    (tmp_path / folder / "config.json").write_text(json.dumps(cfg))
    return f"{folder}/config.json"


def test_a_yarn_config_gets_the_context_its_engine_release_derives(tmp_path, capsys):
    """Qwen3-8B with Qwen's YaRN block: vLLM 0.11.0 serves 131,072 tokens (32,768 × 4) where draftsim refused any
    request beyond max_position_embeddings' 40,960; vLLM 0.30+ and SGLang keep 40,960."""
    model = _qwen3_dir(tmp_path, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                              "original_max_position_embeddings": 32768})
    long = {"prompt_tokens": {"kind": "fixed", "value": 100000}, "output_tokens": {"kind": "fixed", "value": 100},
            "num_requests": 2}
    path = _write_scenario(tmp_path, {"model": model, "hardware": "h200", "engine": {"version": "0.11.0"}}, long)
    result = simulator.run(path)
    assert result.requests.finish_s.notna().all()
    # summary.json names the context the engine derived, and from what (not max_position_embeddings' 40,960)
    assert result.summary["context_limit_tokens"] == 131072
    assert result.summary["context_rule"].startswith("rope_scaling.original_max_position_embeddings × "
                                                     "rope_scaling.factor 4 (yarn): vLLM _get_and_verify_max_len")
    given = simulator.run(path, ["cluster.max_model_len=131072"])
    assert given.requests.finish_s.notna().all()
    assert "context_limit_tokens" not in given.summary   # (given, not derived)
    for override, expected in ((["cluster.max_model_len=131073"], "131073 exceeds the 131072 tokens vllm 0.11.0"),
                               (["cluster.engine.version=0.30.0"], "the context of hf is 40960"),
                               (["cluster.engine.framework=sglang", "cluster.engine.version=0.5.23"],
                                "the context of hf is 40960")):
        out = tmp_path / "out"
        assert main(["run", str(path), "--out", str(out), "--quiet"] + [a for o in override for a in ("--set", o)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expected in err, err
        assert not out.exists()


def test_a_quantized_checkpoint_is_served_in_its_format_and_a_contradiction_refused(tmp_path, capsys):
    """vLLM takes the checkpoint's quantization where none is given and refuses another
    (ModelConfig._verify_quantization): cluster.dtype left out prices the fp8 block checkpoint as fp8_block; given
    as bf16 it is one error line naming both fields."""
    fp8 = _qwen3_dir(tmp_path, "fp8", quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128],
                                                           "activation_scheme": "dynamic"})
    data = scenario(cluster={"model": fp8}, workload={"num_requests": 30})
    del data["cluster"]["dtype"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    served = simulator.run(path)
    assert served.scenario.cluster.dtype == "fp8_block" and served.summary["served_dtype"] == "fp8_block"
    assert served.summary["ttft_p50_s"] == simulator.run(path, ["cluster.dtype=fp8_block"]).summary["ttft_p50_s"]
    plain = simulator.run(path, [f"cluster.model={_qwen3_dir(tmp_path, 'bf16')}"])   # a 16-bit checkpoint: bf16
    assert plain.scenario.cluster.dtype == "bf16" and plain.summary["ttft_p50_s"] != served.summary["ttft_p50_s"]
    assert "served_dtype" not in plain.summary and "context_limit_tokens" not in plain.summary
    assert simulator.run(path, [f"cluster.model={_qwen3_dir(tmp_path, 'bf16')}", "cluster.dtype=fp8"]) \
        .scenario.cluster.dtype == "fp8"   # (online quantization of a 16-bit checkpoint, vLLM --quantization fp8)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet", "--set", "cluster.dtype=bf16"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("draftsim: error: cluster.dtype: bf16 contradicts") \
        and "quantization_config holds fp8_block" in err and not out.exists()


def test_a_checkpoint_declaring_an_fp8_kv_cache_gets_it_where_its_engine_release_reads_it(tmp_path, capsys):
    """An llm-compressor FP8 checkpoint with kv_cache_scheme: vLLM sets an fp8 KV cache from 0.15.0 (Attention.
    __init__), whatever --kv-cache-dtype says through 0.20.2 (so a bf16 kv_dtype there is refused in one line) and
    only for "auto" from 0.22.0 (an explicit bf16 wins); vLLM 0.14.0 and SGLang (which does not read
    kv_cache_scheme) keep bf16. The same weights without the declaration keep bf16 everywhere but TensorRT-LLM,
    which reads it too."""
    declared = _qwen3_dir(tmp_path, "kv", quantization_config={**FP8_CT, "kv_cache_scheme": KV_FP8})
    plain = _qwen3_dir(tmp_path, "nokv", quantization_config=FP8_CT)
    path = _write_scenario(tmp_path, {"model": declared, "hardware": "h100-sxm", "dtype": "fp8",
                                      "latency": {"source": "roofline"}})

    def kv(*sets):
        result = simulator.run(path, list(sets))
        return result.summary["kv_tokens_per_replica"]

    fp8 = kv("cluster.engine.version=0.22.0")
    assert kv("cluster.engine.version=0.15.0") == fp8
    assert kv("cluster.engine.version=0.14.0") == fp8 // 2
    sglang = ("cluster.engine.framework=sglang", "cluster.engine.version=0.5.23")
    assert kv(*sglang) == kv(*sglang, "cluster.kv_dtype=fp8") // 2
    assert kv("cluster.engine.version=0.22.0", "cluster.kv_dtype=bf16") == fp8 // 2   # an explicit dtype wins
    assert kv("cluster.engine.version=0.22.0", f"cluster.model={plain}") == fp8 // 2
    assert kv("cluster.engine.framework=trtllm", f"cluster.model={plain}") < \
        kv("cluster.engine.framework=trtllm")   # (TensorRT-LLM reads the scheme too)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet", "--set", "cluster.engine.version=0.20.0",
                 "--set", "cluster.kv_dtype=bf16"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("draftsim: error: cluster.kv_dtype: bf16, but vllm 0.20.0 "
                                                         "runs an fp8 KV cache") and not out.exists()


def test_architectures_entries_are_tried_in_turn_as_vllm_and_sglang_do():
    """vLLM's and SGLang's registries load the first entry they have; TensorRT-LLM's reads architectures[0] only,
    so the skipped entry is kept for its refusal (profiles.engine_time.architectures)."""
    later = spec_from_hf_config(_config(architectures=["Unknown", "LlamaForCausalLM"]), "x")
    assert later.family == "llama" and later.hf_first_architecture == "Unknown"
    first = spec_from_hf_config(_config(architectures=["LlamaForCausalLM", "Unknown"]), "x")
    assert first.hf_first_architecture == ""
    with pytest.raises(UnsupportedModelError, match=r"architectures \['A', 'B'\] is not supported"):
        spec_from_hf_config(_config(architectures=["A", "B"]), "x")


def _gpt_oss(**changes) -> dict:
    cfg = json.loads((CONFIGS / "gpt-oss-20b" / "config.json").read_text())
    cfg.update(changes)
    return cfg


def test_gpt_oss_defaults_are_transformers_and_an_unset_window_is_kept():
    """Without layer_types / sliding_window, GptOssConfig alternates sliding layers from layer 0 with a 128-token
    window; a sliding_window of 0 or null leaves the sliding layers unwindowed and says which it was."""
    shipped = spec_from_hf_config(_gpt_oss(), "x")
    bare = spec_from_hf_config({k: v for k, v in _gpt_oss().items() if k not in ("layer_types", "sliding_window")},
                               "x")
    assert (bare.sliding_window, bare.sliding_window_layers) == (128, shipped.sliding_window_layers) == (128, 12)
    for value, unset in ((0, "0"), (None, "null")):
        spec = spec_from_hf_config(_gpt_oss(sliding_window=value), "x")
        assert (spec.sliding_window, spec.sliding_window_layers, spec.sliding_window_unset) == (0, 0, unset)
    assert shipped.sliding_window_unset == ""


def test_a_null_original_length_is_refused_where_get_rope_reads_it_and_kept_elsewhere():
    for kind in ("yarn", "llama3", "longrope"):
        block = {"rope_type": kind, "factor": 4.0, "original_max_position_embeddings": None}
        with pytest.raises(UnsupportedModelError, match="original_max_position_embeddings is null"):
            spec_from_hf_config(_config(rope_scaling=block), "x")
    linear = spec_from_hf_config(_config(rope_scaling={"rope_type": "linear", "factor": 2.0,
                                                       "original_max_position_embeddings": None}), "x")
    assert linear.rope_original_null and linear.rope_original_max_position_embeddings == 0
    assert not spec_from_hf_config(_config(rope_scaling={"rope_type": "linear", "factor": 2.0}), "x").rope_original_null


def _published(folder: str, **changes) -> dict:
    cfg = json.loads((CONFIGS / folder / "config.json").read_text())
    cfg.update(changes)
    return {k: v for k, v in cfg.items() if k not in changes or changes[k] != "absent"}


def test_absent_window_keys_take_the_transformers_class_defaults():
    """MistralConfig's sliding_window defaults to 4096, MixtralConfig's to None; Qwen2/Qwen3 with use_sliding_window
    take 4096 and max_window_layers 28 (sliding from layer 28 on); Qwen3-MoE windows every layer."""
    mistral = spec_from_hf_config(_published("Mistral-7B-v0.1", sliding_window="absent"), "x")
    assert (mistral.sliding_window, mistral.sliding_window_layers) == (4096, 32)
    assert spec_from_hf_config(_published("Mistral-7B-v0.1", sliding_window=None), "x").sliding_window == 0
    assert spec_from_hf_config(_published("Mixtral-8x7B-v0.1", sliding_window="absent"), "x").sliding_window == 0
    qwen = spec_from_hf_config(_published("Qwen3-8B", use_sliding_window=True, sliding_window="absent",
                                          max_window_layers="absent"), "x")
    assert (qwen.sliding_window, qwen.sliding_window_layers, qwen.qwen_sliding_window) == (4096, 36 - 28, (4096, 28))
    shipped = spec_from_hf_config(_published("Qwen2.5-7B"), "x")   # use_sliding_window false: no window at all
    assert (shipped.sliding_window, shipped.qwen_sliding_window, shipped.sliding_window_unset) == (0, (), "")
    moe = spec_from_hf_config(_published("Qwen3-30B-A3B", use_sliding_window=True, sliding_window=2048), "x")
    assert (moe.sliding_window, moe.sliding_window_layers) == (2048, 48)


def test_a_zero_window_on_every_layer_is_kept_as_unset():
    for folder, extra in (("Mistral-7B-v0.1", {}), ("Mixtral-8x7B-v0.1", {}), ("Llama-3.1-8B", {}),
                          ("Qwen2.5-7B", {"use_sliding_window": True})):
        spec = spec_from_hf_config(_published(folder, sliding_window=0, **extra), "x")
        assert (spec.sliding_window, spec.sliding_window_unset) == (0, "0"), folder
    assert spec_from_hf_config(_published("Qwen2.5-7B", sliding_window=0), "x").sliding_window_unset == ""


def test_gpt_oss_layer_types_other_than_the_default_keep_the_window_for_the_engines():
    """vLLM and TensorRT-LLM window gpt-oss's even-indexed layers whatever layer_types say
    (profiles.engine_time.sliding_window_served): the window is kept where layer_types name no sliding layer."""
    full = spec_from_hf_config(_published("gpt-oss-20b", layer_types=["full_attention"] * 24), "x")
    assert (full.sliding_window, full.sliding_window_layers, full.gpt_oss_sliding_window) == (0, 0, (128, 0))
    few = spec_from_hf_config(_published("gpt-oss-20b", layer_types=["sliding_attention"] * 6
                                         + ["full_attention"] * 18), "x")
    assert (few.sliding_window, few.sliding_window_layers, few.gpt_oss_sliding_window) == (128, 6, (128, 6))
    assert spec_from_hf_config(_published("gpt-oss-20b"), "x").gpt_oss_sliding_window == ()
    assert spec_from_hf_config(_published("gpt-oss-20b", layer_types="absent"), "x").gpt_oss_sliding_window == ()


@pytest.mark.parametrize("types, listed", [(["sliding_attention"] * 24, 24), (["full_attention"] * 24, 0),
                                           (["full_attention", "sliding_attention"] * 12, 12)])
def test_a_layer_prefix_of_a_gpt_oss_keeps_its_share_of_the_listed_sliding_layers(types, listed):
    """ModelSpec.with_layers (a layer-skipping draft, a draft head) of a gpt-oss whose layer_types are not the default:
    the count its config.json lists sliding becomes the prefix's share, rounded, as its sliding layers do. Before,
    the prefix kept the whole model's count and failed its own check with a traceback (`draftsim run`, drafter
    layer_skip on a gpt-oss-20b config.json with 24 sliding layers: 'gpt_oss_sliding_window is (128, 24)')."""
    spec = spec_from_hf_config(_gpt_oss(layer_types=types), "x")
    assert spec.gpt_oss_sliding_window == (128, listed)
    for n in (1, 5, 12, 24):
        prefix = spec.with_layers(n)
        assert prefix.gpt_oss_sliding_window == (128, round(n * listed / 24)), n
    data = scenario(workload={"num_requests": 4}, cluster={"hardware": "h200", "model": _gpt_oss(layer_types=types),
                                                         "dtype": "mxfp4", "parallelism": {"tp": 2}},
                    drafter={"kind": "layer_skip", "gamma": 2, "layers_fraction": 0.5})
    assert simulator.run(data).summary["requests_finished"] == 4
