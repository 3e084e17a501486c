"""A model's context limit as each serving engine derives it from config.json, and whether it accepts a longer
one given by hand (vLLM --max-model-len, SGLang --context-length, TensorRT-LLM max_seq_len):
`cluster.max_model_len`'s default and upper bound (simulator.core.context).

`derived_context(framework, version, model)` -> (tokens, rule); `check_given(framework, version, model, tokens)`
raises UnsupportedCombination (cluster.max_model_len) where the engine refuses or cuts a longer value; both raise
it naming cluster.model where the limit the engine would take is under 2 tokens (a length key of 1, a rope factor
far below 1: no request fits). `model`
is a ModelSpec: max_position_embeddings, the rope scaling block (rope_scaling_type, rope_scaling_factor,
rope_original_max_position_embeddings) and the other length keys (length_keys), read by models.context_config.
Each rule as read in the releases' sources (PyPI wheels; TensorRT-LLM from its repository):

- vLLM, `_get_and_verify_max_len` (vllm/config.py to 0.10.0, vllm/config/__init__.py 0.10.2, vllm/config/model.py
  from 0.11.0; the keys in model_arch_config_convertor.py `derive_max_model_len_and_key` from 0.14.0). The
  smallest of the length keys present: max_position_embeddings, n_positions, max_seq_len, max_sequence_length,
  max_seq_length, seq_len (0.2.0), seq_length (from 0.2.2, absent in 0.2.1.post1), model_max_length (from
  0.4.0, absent in 0.3.3), max_target_positions (from 0.7.0, absent in 0.6.6); from 0.8.3 (absent in 0.8.2) a
  model_max_length replaces that minimum ("For Command-R / Cohere"). Then rope scaling multiplies it by its
  factor, but for the types exempt in the release: "su", "longrope" and "llama3" in every release that runs them
  (exempt from 0.4.2, 0.5.1 and 0.5.3.post1, the releases whose get_rope first has them: a release before is
  refused by profiles.engine_time.architectures, vllm_rope_types.yaml), "extended" in 0.5.3 only; "yarn",
  "deepseek_yarn", "deepseek_llama_scaling" from 0.30.0, absent in 0.29.0: "YaRN variants leave
  max_position_embeddings already scaled". To 0.29.0 yarn's limit is its original_max_position_embeddings ×
  factor (from 0.2.2, the first release that runs yarn; 0.2.0 - 0.2.1.post1 took the keys' minimum, but could
  not build a yarn model: refused as above). Without --max-model-len the limit is that (int); from 0.11.1 (absent
  in 0.11.0) a longrope model's is its top-level original_max_position_embeddings where it has one. A value
  above it is refused ("User-specified
  max_model_len ... is greater than the derived max_model_len"), from 0.4.0 not where it is at most the config's
  model_max_length; VLLM_ALLOW_LONG_MAX_MODEL_LEN (from 0.5.4) lifts the refusal (`allow_long`, below).
- SGLang, `get_context_length` (srt/hf_transformers_utils.py to 0.5.1, srt/utils/hf_transformers_utils.py 0.5.3 -
  0.5.10, srt/utils/hf_transformers/common.py from 0.5.14; the same in every release 0.4.0 - 0.5.23 read): the first
  key present of max_sequence_length, seq_length, max_seq_len, model_max_length, max_position_embeddings, times the
  rope factor unless the rope block has original_max_position_embeddings or its rope_type is llama3 (so yarn with
  an original length is not scaled). The test is the key's presence (`"original_max_position_embeddings" in
  rope_scaling`, 0.4.0, 0.4.9, 0.5.2, 0.5.8, 0.5.23): a key given as null counts (ModelSpec.rope_original_null).
  A longer --context-length is refused (ModelConfig, srt/configs/model_config.py)
  unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN, whose default was "True" from 0.4.4 to 0.4.10.post2
  (`get_bool_env_var(..., default="True")`; "False" in 0.4.3.post3/.post4, no default before, unset from 0.5.1):
  accepted there.
- TensorRT-LLM before 1.0 (TensorRT engines): trtllm-build's `_init_max_seq_len` (tensorrt_llm/builder.py):
  max_position_embeddings (else 2048) × the rotary factor unless its type is su, longrope or llama3 (yarn is
  scaled: ceil(max_position_embeddings × factor)); a larger max_seq_len is built with a warning: accepted.
  From 1.0 (PyTorch backend): `_infer_max_seq_len_from_config` (tensorrt_llm/_torch/pyexecutor/model_engine.py;
  models/modeling_utils.py `infer_max_seq_len`): the same with yarn exempt too; `_init_max_seq_len` lowers a
  larger max_seq_len to it with a warning unless TLLM_ALLOW_LONG_MAX_MODEL_LEN: refused here, naming the value
  TensorRT-LLM would run. Read in the repository's main branch (the 1.x release that added the cut was not
  pinned: an earlier 1.x taking the value unchecked is not modelled).

`allow_long` (a scenario's cluster.engine.allow_long_context) is the engine's variable set to 1: the longer value
is served, with the engine's warning ("This may lead to incorrect model outputs or CUDA errors", SGLang
ModelConfig; vLLM and TensorRT-LLM warn alike). vLLM reads VLLM_ALLOW_LONG_MAX_MODEL_LEN from 0.5.4 (a release
before has no way past its refusal: refused, naming 0.5.4); SGLang reads SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN
in every release modelled (ModelConfig.__init__, srt/configs/model_config.py, read in the 0.4.0 - 0.4.9 wheels);
TensorRT-LLM 1.x reads TLLM_ALLOW_LONG_MAX_MODEL_LEN in the same `_init_max_seq_len` that cuts ("1", "true", "yes",
"y"), and before 1.0 never refuses.

Not modelled, named: vLLM's and TensorRT-LLM's sliding-window cap, which applies only with the window disabled by
hand (--disable-sliding-window); Gemma 3's exemption (not an architecture draftsim reads); a draft model's limit
(vLLM takes the target's, `spec_target_max_model_len`); tokenizer_config.json's model_max_length (vLLM reads it for
pooling models only).
"""
from __future__ import annotations

import math

from profiles.engine_time.support import UnsupportedCombination
from profiles.measured.source import version_key

FIELD = "cluster.max_model_len"
MODEL_FIELD = "cluster.model"
MIN_CONTEXT_TOKENS = 2   # a prompt token and an output token (cluster.max_model_len's own lower bound)
VLLM_KEYS = (("max_position_embeddings", "0"), ("n_positions", "0"), ("max_seq_len", "0"), ("seq_length", "0.2.2"),
             ("model_max_length", "0.4.0"), ("max_target_positions", "0.7.0"), ("max_sequence_length", "0"),
             ("max_seq_length", "0"), ("seq_len", "0"))   # (key, the first release that reads it)
VLLM_MODEL_MAX_LENGTH_WINS_FROM = "0.8.3"
VLLM_LONGROPE_DEFAULT_FROM = "0.11.1"
VLLM_LONGER_WITHIN_MODEL_MAX_LENGTH_FROM = "0.4.0"
# rope types vLLM does not multiply by their factor, from the release given (to the one after, where bounded);
# "0": every release that runs the type (an earlier one cannot build the model: profiles.engine_time.architectures)
VLLM_EXEMPT = (("su", "0", None), ("longrope", "0", None), ("extended", "0.5.3", "0.5.3.post1"),
               ("llama3", "0", None), ("yarn", "0.30.0", None), ("deepseek_yarn", "0.30.0", None),
               ("deepseek_llama_scaling", "0.30.0", None))
SGLANG_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")
SGLANG_LONGER_ALLOWED = ("0.4.4", "0.5.1")   # SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN default "True" (docstring)
TRTLLM_PYTORCH_FROM = "1.0.0"
VLLM_ALLOW_LONG_FROM = "0.5.4"   # VLLM_ALLOW_LONG_MAX_MODEL_LEN (module docstring)
ALLOW_LONG_VARIABLES = {"vllm": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "sglang": "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
                        "trtllm": "TLLM_ALLOW_LONG_MAX_MODEL_LEN"}
ALLOW_LONG_FIELD = "cluster.engine.allow_long_context"
TRTLLM_EXEMPT = {"engine": ("su", "longrope", "llama3"), "pytorch": ("su", "longrope", "llama3", "yarn")}


def _at_least(version: str, first: str) -> bool:
    return version_key(version) >= version_key(first)


def _keys(model) -> dict[str, int]:
    return {"max_position_embeddings": model.max_position_embeddings, **dict(model.length_keys)}


def _vllm_derived(version: str, model) -> tuple[float, str]:
    """(vLLM's derived_max_model_len, as a float as vLLM computes it; the key or rule it came from)."""
    keys = _keys(model)
    present = [(keys[k], k) for k, first in VLLM_KEYS if k in keys and _at_least(version, first)]
    derived, key = min(present, key=lambda p: p[0])
    if "model_max_length" in keys and _at_least(version, VLLM_MODEL_MAX_LENGTH_WINS_FROM):
        derived, key = keys["model_max_length"], "model_max_length"
    kind, factor = model.rope_scaling_type, model.rope_scaling_factor
    exempt = {t for t, lo, hi in VLLM_EXEMPT if _at_least(version, lo) and (hi is None or not _at_least(version, hi))}
    if kind and kind not in exempt:
        if kind == "yarn":
            original = model.rope_original_max_position_embeddings
            if not original:
                raise UnsupportedCombination(FIELD, f"vllm {version} reads a yarn rope block's "
                                             f"original_max_position_embeddings, which {model.name}'s config lacks "
                                             "(vLLM fails at start-up); allowed: a config that gives it")
            derived, key = original, "rope_scaling.original_max_position_embeddings"
        derived, key = derived * factor, f"{key} × rope_scaling.factor {factor:g} ({kind})"
    return derived, key


def _vllm_default(version: str, model, derived: float) -> int:
    top = dict(model.length_keys).get("original_max_position_embeddings")
    if model.rope_scaling_type == "longrope" and top and _at_least(version, VLLM_LONGROPE_DEFAULT_FROM):
        return int(top)
    return int(derived)


def _sglang_derived(model) -> tuple[int, str]:
    keys = _keys(model)
    key = next(k for k in SGLANG_KEYS if k in keys)
    factor = model.rope_scaling_factor if model.rope_scaling_type else 1.0
    if model.rope_original_max_position_embeddings or model.rope_original_null or model.rope_scaling_type == "llama3":
        factor = 1.0
    return int(factor * keys[key]), key + (f" × rope_scaling.factor {factor:g}" if factor != 1.0 else "")


def _trtllm_derived(version: str, model) -> tuple[int, str]:
    backend = "pytorch" if _at_least(version, TRTLLM_PYTORCH_FROM) else "engine"
    kind = model.rope_scaling_type
    factor = model.rope_scaling_factor if kind and kind not in TRTLLM_EXEMPT[backend] else 1.0
    tokens = model.max_position_embeddings
    if factor != 1.0:
        return int(math.ceil(tokens * factor)), f"max_position_embeddings × rope_scaling.factor {factor:g} ({kind})"
    return tokens, "max_position_embeddings"


_RULES = {
    "vllm": "vLLM _get_and_verify_max_len (vllm/config/model.py)",
    "sglang": "SGLang get_context_length (srt/utils/hf_transformers/common.py)",
    "trtllm": "TensorRT-LLM _init_max_seq_len (builder.py; _torch/pyexecutor/model_engine.py from 1.0)",
}


def _servable(framework: str, version: str, model, tokens: int, key: str) -> None:
    """UnsupportedCombination (cluster.model) where the context `framework` `version` derives for `model` is shorter
    than one prompt token and one output token: a length key of 1 or a rope factor below 1 (transformers' rope
    validation warns below 1; no engine refuses it) leave no request servable, whatever max_model_len says."""
    if tokens < MIN_CONTEXT_TOKENS:
        unit = "token" if tokens == 1 else "tokens"
        raise UnsupportedCombination(MODEL_FIELD, f"{framework} {version} derives a context of {tokens} {unit} for "
                                     f"{model.name} ({key}), too short for one prompt and one output token; allowed: "
                                     f"a config whose length keys and rope factor give at least {MIN_CONTEXT_TOKENS}")


def derived_context(framework: str, version: str, model) -> tuple[int, str]:
    """(the context limit `framework` `version` serves `model` with when none is given; the keys it came from and
    the rule, one line). An engine without a rule here: max_position_embeddings. UnsupportedCombination
    (cluster.model) where it is below MIN_CONTEXT_TOKENS."""
    if framework == "vllm":
        derived, key = _vllm_derived(version, model)
        tokens, key = _vllm_default(version, model, derived), f"{key}: {_RULES['vllm']}, {version}"
    elif framework == "sglang":
        tokens, key = _sglang_derived(model)
        key = f"{key}: {_RULES['sglang']}, {version}"
    elif framework == "trtllm":
        tokens, key = _trtllm_derived(version, model)
        key = f"{key}: {_RULES['trtllm']}, {version}"
    else:
        return model.max_position_embeddings, "max_position_embeddings"
    _servable(framework, version, model, tokens, key)
    return tokens, key


def _reads_allow_long(framework: str, version: str) -> bool:
    """Whether `framework` `version` has a variable that lifts its refusal of a longer context (module docstring)."""
    return framework in ALLOW_LONG_VARIABLES and (framework != "vllm" or _at_least(version, VLLM_ALLOW_LONG_FROM))


def _or_allow_long(framework: str, version: str) -> str:
    """The refusal's other way out, where the release has one."""
    if not _reads_allow_long(framework, version):
        return ""
    return f", or {ALLOW_LONG_FIELD}: true ({ALLOW_LONG_VARIABLES[framework]}=1)"


def check_given(framework: str, version: str, model, tokens: int, allow_long: bool = False) -> None:
    """UnsupportedCombination (cluster.max_model_len) where `framework` `version` refuses, or cuts, a context of
    `tokens` for `model` (module docstring); None where it serves it. `allow_long`: the engine's variable that
    lifts the refusal is set (cluster.engine.allow_long_context; refused, naming that field, on a release without
    it where the value needs it)."""
    why = _refusal(framework, version, model, tokens)
    if why is None or (allow_long and _reads_allow_long(framework, version)):
        return
    if allow_long and framework == "vllm":
        raise UnsupportedCombination(ALLOW_LONG_FIELD, f"vllm {version} has no {ALLOW_LONG_VARIABLES['vllm']} (read "
                                     f"from {VLLM_ALLOW_LONG_FROM}) and {why}")
    raise UnsupportedCombination(FIELD, why)


def _refusal(framework: str, version: str, model, tokens: int) -> str | None:
    """Why `framework` `version` refuses, or cuts, a context of `tokens` for `model`, or None where it serves it."""
    if framework == "vllm":
        derived, key = _vllm_derived(version, model)
        if tokens <= derived:
            return None
        within = dict(model.length_keys).get("model_max_length")
        if within is not None and tokens <= within and _at_least(version, VLLM_LONGER_WITHIN_MODEL_MAX_LENGTH_FROM):
            return None
        allowed = max(int(derived), within or 0) if _at_least(version, VLLM_LONGER_WITHIN_MODEL_MAX_LENGTH_FROM) \
            else int(derived)
        _servable("vllm", version, model, allowed, key)
        return (f"{tokens} exceeds the {int(derived)} tokens vllm {version} derives for "
                f"{model.name} ({key}; {_RULES['vllm']}), which refuses a longer "
                f"--max-model-len without {ALLOW_LONG_VARIABLES['vllm']}; allowed: 2..{allowed}"
                f"{_or_allow_long(framework, version)}")
    if framework == "sglang":
        derived, key = _sglang_derived(model)
        lo, hi = SGLANG_LONGER_ALLOWED
        if tokens <= derived or (_at_least(version, lo) and not _at_least(version, hi)):
            return None
        _servable("sglang", version, model, derived, key)
        return (f"{tokens} exceeds the {derived} tokens sglang {version} derives for "
                f"{model.name} ({key}; {_RULES['sglang']}), which refuses a longer "
                f"--context-length without {ALLOW_LONG_VARIABLES['sglang']}; allowed: "
                f"2..{derived}{_or_allow_long(framework, version)}")
    if framework == "trtllm":
        derived, key = _trtllm_derived(version, model)
        if tokens <= derived or not _at_least(version, TRTLLM_PYTORCH_FROM):
            return None
        _servable("trtllm", version, model, derived, key)
        return (f"{tokens} exceeds the {derived} tokens trtllm {version} infers for "
                f"{model.name} ({key}; {_RULES['trtllm']}), which lowers max_seq_len to "
                f"{derived} without {ALLOW_LONG_VARIABLES['trtllm']}; allowed: 2..{derived}"
                f"{_or_allow_long(framework, version)}")
    if tokens > model.max_position_embeddings:
        return (f"{tokens} exceeds max_position_embeddings={model.max_position_embeddings} of {model.name}; allowed: "
                f"2..{model.max_position_embeddings}")
    return None
