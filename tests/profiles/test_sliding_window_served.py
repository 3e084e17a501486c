"""profiles.engine_time.sliding_window_served: the window each engine release applies, on both sides of every
boundary read in the wheels (SGLang's model files build none for Llama/Mistral/Mixtral/Qwen; vLLM's qwen2.py)."""
from __future__ import annotations

import json

import pytest

from models.hf_config import spec_from_hf_config
from paths import DATA
from profiles.engine_time.sliding_window_served import served
from profiles.engine_time.support import UnsupportedCombination
from simulator.cluster.factory import served_window

CONFIGS = DATA / "hf_configs"


def _spec(folder: str, **changes):
    return spec_from_hf_config({**json.loads((CONFIGS / folder / "config.json").read_text()), **changes}, "m")


def test_sglang_runs_mistral_and_qwen_without_their_window_and_keeps_gpt_oss_window():
    mistral = _spec("Mistral-7B-v0.1")
    assert served("sglang", "0.5.14", mistral).sliding_window_layers == 0
    assert served("vllm", "0.24.0", mistral) is mistral and served("trtllm", None, mistral) is mistral
    qwen = _spec("Qwen3-30B-A3B", use_sliding_window=True, sliding_window=2048)
    assert served("sglang", None, qwen).sliding_window == 0
    oss = _spec("gpt-oss-20b")
    assert served("sglang", "0.5.14", oss) is oss


@pytest.mark.parametrize("version, first, layers", [
    ("0.4.1", 20, 20),            # layers below max_window_layers take the window
    ("0.9.0", 28, 28), ("0.10.0", 28, 28), ("0.10.1", 28, 28), ("0.24.0", 28, 28), (None, 28, 28),
    ("0.10.1", 0, 28), (None, 40, 28),   # all sliding, or none by layer_types: vLLM windows every layer
])
def test_vllm_windows_every_qwen_layer(version, first, layers):
    spec = _spec("Qwen2.5-7B", use_sliding_window=True, sliding_window=4096, max_window_layers=first)
    out = served("vllm", version, spec)
    assert (out.sliding_window, out.sliding_window_layers) == (4096, layers)


@pytest.mark.parametrize("version, first, text", [
    ("0.5.0", 28, "whenever a window is set"), ("0.8.5", 28, "whenever a window is set"),
    ("0.9.0", 0, "asserts max_window_layers"), ("0.10.0", 20, "asserts max_window_layers"),
    ("0.10.1", 20, "asserts max_window_layers"), (None, 20, "asserts max_window_layers"),
])
def test_vllm_refuses_the_qwen_windows_it_does_not_start_with(version, first, text):
    spec = _spec("Qwen2.5-7B", use_sliding_window=True, sliding_window=4096, max_window_layers=first)
    with pytest.raises(UnsupportedCombination, match=text) as exc:
        served("vllm", version, spec)
    assert exc.value.field == "cluster.model" and "\n" not in str(exc.value)


def test_the_factory_serves_the_window_of_its_release():
    assert served_window(("sglang", "0.5.14"), _spec("Mistral-7B-v0.1")).sliding_window == 0


FULL, SLIDING = "full_attention", "sliding_attention"


@pytest.mark.parametrize("types, framework, version, layers", [
    ([FULL] * 24, "vllm", "0.11.0", 24),   # not interleaved: cache_config.sliding_window reaches the odd layers
    ([FULL] * 24, "vllm", "0.26.0", 24),
    ([FULL] * 24, "vllm", "0.27.0", 12),   # only all-sliding layer_types set cache_config's window from 0.27.0
    ([FULL] * 24, "vllm", None, 12),
    ([FULL] * 24, "trtllm", None, 12),
    ([FULL] * 24, "sglang", "0.5.14", 0),  # SGLang reads layer_types
    ([SLIDING] * 6 + [FULL] * 18, "vllm", "0.11.0", 12),   # interleaved: the even-indexed layers only
    ([SLIDING] * 6 + [FULL] * 18, "vllm", None, 12),
    ([SLIDING] * 6 + [FULL] * 18, "sglang", None, 6),
    ([SLIDING] * 24, "vllm", "0.11.0", 24), ([SLIDING] * 24, "vllm", None, 24),
    ([SLIDING] * 24, "trtllm", None, 12),
])
def test_vllm_and_trtllm_window_gpt_oss_even_layers_whatever_layer_types_say(types, framework, version, layers):
    spec = _spec("gpt-oss-20b", layer_types=types)
    out = served(framework, version, spec)
    assert out.sliding_window_layers == layers and out.sliding_window == (128 if layers else 0)


def test_published_gpt_oss_layer_types_are_served_as_transformers_reads_them():
    for folder in ("gpt-oss-20b", "gpt-oss-120b"):
        oss = _spec(folder)
        assert oss.gpt_oss_sliding_window == ()
        assert all(served(f, v, oss) is oss for f, v in (("vllm", "0.11.0"), ("vllm", None), ("trtllm", None)))
    flipped = _spec("gpt-oss-20b", layer_types=[FULL if i % 2 == 0 else SLIDING for i in range(24)])
    assert served("vllm", "0.11.0", flipped) is flipped   # the same count of windowed layers


@pytest.mark.parametrize("framework,version", [("vllm", "0.10.1"), ("vllm", "0.33.0"), ("sglang", "0.5.2"),
                                               ("sglang", "0.5.23"), ("trtllm", "1.0.0"), ("trtllm", None)])
def test_every_catalog_model_a_draft_can_be_is_windowed_as_modelspec_holds_it(framework, version):
    """A draft model is priced as ModelSpec holds it (module docstring): drafter.model names catalog models only,
    so that holds while every windowed catalog model is served unchanged by every engine (a Mistral- or Qwen-style
    entry would need the draft's window served as the target's is)."""
    from models import get_model
    from models.catalog import catalog
    windowed = [get_model(name) for name in sorted(catalog()) if get_model(name).sliding_window_layers]
    assert windowed   # (gpt-oss-20b, gpt-oss-120b)
    for model in windowed:
        assert served(framework, version, model) is model, model.name
