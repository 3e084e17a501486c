"""What of a Hugging Face `config.json` the serving engines read to derive a model's context limit: the RoPE
scaling block and the length keys beside `max_position_embeddings`. The engines' rules themselves (which key
wins, which rope types multiply the limit by their factor, per engine and release) are in
profiles.engine_time.context_length; this module only reads and checks the fields, as ModelSpec keeps them:

- `rope_scaling_type`, `rope_scaling_factor`, `rope_original_max_position_embeddings`: config.json's
  `rope_scaling` (transformers v4) or `rope_parameters` (v5), its `rope_type` (or the legacy `type`; none, or
  `default`, is no scaling), `factor` (transformers' rope validation requires it for linear, dynamic, yarn and
  llama3: transformers/modeling_rope_utils.py `_validate_*_rope_parameters`; else 1) and
  `original_max_position_embeddings` (0: absent; `rope_original_null`: the block gives the key as null, which
  SGLang's get_context_length reads as present: `"original_max_position_embeddings" in rope_scaling`, no factor).
  A null one is refused for the types whose rotary embedding reads it (READS_ORIGINAL).
  A v5 block nested by layer type (`full_attention`,
  `sliding_attention`) is read when its entries agree (vLLM's rule "assumes all layer types have the same
  scaling factor", vllm/config/model.py `_get_and_verify_max_len`, 0.12.0); entries that differ are refused.
  The type must be one some engine builds (ROPE_TYPES); a block nested by layer type holds a mapping per type.
- `length_keys`: the other length keys the engines read (LENGTH_KEYS, union of vLLM's `possible_keys`,
  SGLang's `CONTEXT_LENGTH_KEYS` and the top-level `original_max_position_embeddings` vLLM 0.11.1+ takes as a
  LongRoPE model's default), as (key, tokens) pairs in LENGTH_KEYS order.

Approximations, named: vLLM before 0.5.3.post1 read only the legacy `type` key (a block with only `rope_type`
failed there); draftsim reads either for every release. vLLM before 0.6.6 asserted a `factor` in every scaling
block it multiplied; draftsim takes 1 where the block's type needs none.
"""
from __future__ import annotations

from models.errors import brief
from models.spec import MAX_TOKENS, integer_expected, positive_number_expected

# Length keys beside max_position_embeddings that some engine reads (profiles.engine_time.context_length cites
# which), in this order in ModelSpec.length_keys.
LENGTH_KEYS = ("n_positions", "max_seq_len", "seq_length", "model_max_length", "max_target_positions",
               "max_sequence_length", "max_seq_length", "seq_len", "original_max_position_embeddings")
# rope types the engines' get_rope builds; any other raises 'Unknown RoPE scaling type' at start-up in each of them.
# The union of: vLLM's get_rope (vllm/model_executor/layers/rotary_embedding/__init__.py, main branch 2026: default,
# linear, dynamic, ntk, yarn, deepseek_yarn, deepseek_llama_scaling, llama3, mllama4, xdrope, longrope, openpangu),
# the legacy names vLLM rewrites before it (su -> longrope, mrope -> default: transformers_utils/config.py
# patch_rope_parameters_dict) and vLLM 0.5.3's extended; SGLang's get_rope (srt/layers/rotary_embedding/factory.py:
# also proportional); TensorRT-LLM's RotaryScalingType (tensorrt_llm/functional.py: none, linear, dynamic, longrope,
# llama3, yarn, mrope).
ROPE_TYPES = ("default", "linear", "dynamic", "ntk", "yarn", "deepseek_yarn", "deepseek_llama_scaling", "llama3",
              "mllama4", "xdrope", "longrope", "su", "extended", "mrope", "openpangu", "proportional")
# rope types whose block must give `factor` (transformers modeling_rope_utils validation)
_NEEDS_FACTOR = ("linear", "dynamic", "yarn", "llama3")
# rope types whose rotary embedding reads the block's original_max_position_embeddings as a number: vLLM's get_rope
# (rope_scaling["original_max_position_embeddings"] for llama3, yarn, deepseek_yarn, longrope: 0.11.0, 0.33.0, which
# adds deepseek_llama_scaling; su is rewritten to longrope) and SGLang's (the same four, 0.5.2 rotary_embedding.py;
# 0.5.23 factory.py _get_rope_param returns the key's value when present): a null there is None in arithmetic
READS_ORIGINAL = ("llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling", "longrope", "su")
_LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")


class ContextConfigError(ValueError):
    """A rope-scaling block or length key that is not what the engines read; the message names the field."""


def _rope_entry(block: dict, where: str) -> tuple[str, float, int, bool]:
    """(type, factor, original_max_position_embeddings, whether the block gives that key as null) of one flat
    rope block."""
    kind = block.get("rope_type", block.get("type"))
    legacy = block.get("type")
    if kind is not None and legacy is not None and kind != legacy and (legacy, kind) not in (
            ("su", "longrope"), ("mrope", "default")):   # (vllm/transformers_utils/config.py patch_rope_parameters_dict)
        raise ContextConfigError(f"{where}: rope_type {kind!r} and type {legacy!r} differ; give one")
    if kind is None:
        raise ContextConfigError(f"{where}: has no rope_type (or type); expected e.g. yarn, llama3, linear, dynamic")
    if not isinstance(kind, str) or not kind:
        raise ContextConfigError(f"{where}.rope_type is {brief(kind)}; expected a text such as yarn or llama3")
    if kind not in ROPE_TYPES:
        raise ContextConfigError(f"{where}: rope_type {brief(kind)} is no rope scaling type an engine builds (their "
                                 f"get_rope raises 'Unknown RoPE scaling type'); allowed: {', '.join(ROPE_TYPES)}")
    factor = block.get("factor")
    if factor is None:
        if kind in _NEEDS_FACTOR:
            raise ContextConfigError(f"{where}: rope_type {kind} needs a factor (transformers rope validation); "
                                     "expected a finite number > 0")
        factor = 1.0
    expected = positive_number_expected(factor)
    if expected:
        raise ContextConfigError(f"{where}.factor is {brief(factor)}; expected {expected}")
    original = block.get("original_max_position_embeddings")
    if original is None and "original_max_position_embeddings" in block and kind in READS_ORIGINAL:
        raise ContextConfigError(f"{where}.original_max_position_embeddings is null; rope_type {kind}'s rotary "
                                 "embedding takes it as a length (vLLM's and SGLang's get_rope: a null fails at "
                                 "start-up); expected an integer >= 1")
    if original is None:
        original = 0
    elif isinstance(original, float) and original.is_integer():
        original = int(original)
    expected = integer_expected(original, 1, MAX_TOKENS) if original != 0 else None
    if expected:
        raise ContextConfigError(f"{where}.original_max_position_embeddings is {brief(original)}; expected {expected}")
    null = original == 0 and "original_max_position_embeddings" in block
    return ("" if kind == "default" and factor == 1.0 else str(kind)), float(factor), original, null


def rope_fields(cfg: dict, where: str) -> dict:
    """ModelSpec's rope-scaling fields from config.json (`rope_parameters` before `rope_scaling`, as vLLM
    patches the latter into the former); {} without a scaling block."""
    key = "rope_parameters" if cfg.get("rope_parameters") is not None else "rope_scaling"
    block = cfg.get(key)
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise ContextConfigError(f"{where}: {key} is {brief(block)}; expected a mapping with rope_type and factor")
    if block and all(k in _LAYER_TYPES for k in block):   # nested by layer type (transformers v5)
        for k, v in block.items():   # (vLLM reads rp["rope_type"] of each: a non-mapping fails its start-up)
            if not isinstance(v, dict):
                raise ContextConfigError(f"{where}: {key}.{k} is {brief(v)}; expected a mapping with rope_type (and "
                                         "factor), as each layer type's entry of a nested block")
        entries = {k: _rope_entry(v, f"{where}: {key}.{k}") for k, v in block.items()}
        found = set(entries.values())
        if len(found) > 1:
            raise ContextConfigError(f"{where}: {key} gives layer types different scaling ({', '.join(sorted(entries))}); "
                                     "expected one rope_type, factor and original_max_position_embeddings for all")
        if not found:
            return {}
        kind, factor, original, null = found.pop()
    else:
        kind, factor, original, null = _rope_entry(block, f"{where}: {key}")
    if not kind:
        return {}
    return {"rope_scaling_type": kind, "rope_scaling_factor": factor,
            "rope_original_max_position_embeddings": original, "rope_original_null": null}


def length_keys(cfg: dict, where: str) -> tuple[tuple[str, int], ...]:
    """config.json's LENGTH_KEYS present (not null), each an integer 1..2^30 (an integral float is taken)."""
    out = []
    for key in LENGTH_KEYS:
        value = cfg.get(key)
        if value is None:
            continue
        number = int(value) if isinstance(value, float) and value.is_integer() else value
        expected = integer_expected(number, 1, MAX_TOKENS)
        if expected:
            raise ContextConfigError(f"{where}: {key} is {brief(value)}; expected {expected}")
        out.append((key, number))
    return tuple(out)


def check_rope_scaling(spec) -> None:
    """ModelSpec's rope-scaling fields as the catalog, a model file or an inline block gives them (a config.json's are
    read by rope_fields): the type one of ROPE_TYPES (or "" for none), and the factor small enough that every length
    it may multiply (max_position_embeddings, the block's original length, the length keys; which one an engine
    takes is profiles.engine_time.context_length's) stays within MAX_TOKENS positions. ValueError naming the field.
    Runs after check_length_keys."""
    kind, factor = spec.rope_scaling_type, spec.rope_scaling_factor
    if not kind:
        return
    if kind not in ROPE_TYPES:
        raise ValueError(f"model {spec.name!r}: rope_scaling_type is {brief(kind)}, no rope scaling type an engine "
                         f"builds; expected one of {', '.join(ROPE_TYPES)} or empty")
    lengths = [("max_position_embeddings", spec.max_position_embeddings),
               ("rope_original_max_position_embeddings", spec.rope_original_max_position_embeddings),
               *spec.length_keys]
    key, longest = max(lengths, key=lambda pair: pair[1])
    if factor * longest > MAX_TOKENS:
        raise ValueError(f"model {spec.name!r}: rope_scaling_factor (config.json's rope factor) is {factor:g}, which "
                         f"scales {key} ({longest:,}) past {MAX_TOKENS:,} positions; expected a factor of at most "
                         f"{MAX_TOKENS / longest:g}")


def check_length_keys(spec) -> None:
    """ModelSpec.length_keys as the catalog or a model file gives it: a list of [key, tokens] pairs becomes a
    tuple of tuples; ValueError naming the field otherwise."""
    value = spec.length_keys
    if isinstance(value, dict):
        value = tuple(value.items())
    if isinstance(value, list):
        value = tuple(value)
    pairs = []
    for pair in value if isinstance(value, tuple) else (None,):
        if isinstance(pair, list):
            pair = tuple(pair)
        if not (isinstance(pair, tuple) and len(pair) == 2 and pair[0] in LENGTH_KEYS
                and integer_expected(pair[1], 1, MAX_TOKENS) is None):
            raise ValueError(f"model {spec.name!r}: length_keys must map some of {', '.join(LENGTH_KEYS)} to an "
                             f"integer >= 1 and <= {MAX_TOKENS:,}; got {brief(spec.length_keys)}")
        pairs.append(pair)
    object.__setattr__(spec, "length_keys", tuple(sorted(pairs, key=lambda p: LENGTH_KEYS.index(p[0]))))
