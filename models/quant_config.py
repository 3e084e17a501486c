"""The weights' format of a quantized checkpoint, from config.json's `quantization_config`, as a cluster.dtype
name (ModelSpec.checkpoint_dtype).

The engines detect a checkpoint's quantization from this block: vLLM's ModelConfig._verify_quantization
(vllm/config/model.py, read in 0.11.0) takes its `quant_method` (lower-cased, `compressed_tensors` read as
`compressed-tensors`, overrides such as modelopt / modelopt_fp4 / mxfp4 probed) when `--quantization` is not
given; SGLang's ModelConfig._verify_quantization (srt/configs/model_config.py, 0.5.23) does the same. What each
method holds, as draftsim prices it (models.dtypes):

| quant_method | reads | cluster.dtype |
|---|---|---|
| fp8 (vLLM Fp8Config) | `weight_block_size` | fp8_block with blocks, else fp8 |
| mxfp4 (gpt-oss; Mxfp4Config) | – | mxfp4 |
| modelopt (ModelOptFp8Config / ModelOptNvFp4Config) | `quant_algo` FP8 / NVFP4 | fp8 / nvfp4 |
| modelopt_fp4 | – | nvfp4 |
| awq, gptq (4-bit weight-only, Marlin kernels) | `bits` 4 | int4 |
| compressed-tensors | `config_groups` weights / input_activations | float 8-bit W8A8: fp8 (`strategy: block`: fp8_block); float 4-bit with 4-bit activations, group 16: nvfp4; int 4-bit weight-only: int4 |

Anything else (bitsandbytes, gguf, 8-bit awq/gptq, int8 W8A8, FP8 weight-only, mixed schemes...) is a
QuantConfigError naming the field and what draftsim prices: its kernels are not priced here.
"""
from __future__ import annotations

from models.errors import brief
from models.spec import MAX_WIDTH, integer_expected


class QuantConfigError(ValueError):
    """A quantization_config draftsim cannot price or read; the message names the field and what is allowed."""


PRICED = ("fp8", "fp8 with weight_block_size", "mxfp4", "modelopt FP8/NVFP4", "modelopt_fp4", "awq/gptq 4-bit",
          "compressed-tensors W8A8-FP8, NVFP4 or W4A16 int")


def _bits(cfg: dict, where: str) -> int:
    bits = cfg.get("bits", cfg.get("w_bit"))
    if bits != 4:
        raise QuantConfigError(f"{where}.bits is {brief(bits)}: only 4-bit weight-only checkpoints are priced (int4); "
                               f"allowed quant methods: {', '.join(PRICED)}")
    return bits


def _compressed_tensors(cfg: dict, where: str) -> str:
    groups = cfg.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise QuantConfigError(f"{where}.config_groups is {brief(groups)}; expected a mapping of quantization schemes")
    found = set()
    for name, group in groups.items():
        weights = group.get("weights") if isinstance(group, dict) else None
        inputs = group.get("input_activations") if isinstance(group, dict) else None
        if not isinstance(weights, dict):
            raise QuantConfigError(f"{where}.config_groups.{name}.weights is {brief(weights)}; expected a mapping")
        kind, bits = weights.get("type"), weights.get("num_bits")
        act = (inputs.get("type"), inputs.get("num_bits")) if isinstance(inputs, dict) else None
        if (kind, bits) == ("float", 8) and act == ("float", 8):
            found.add("fp8_block" if weights.get("strategy") == "block" else "fp8")
        elif (kind, bits) == ("float", 4) and act == ("float", 4) and weights.get("group_size") == 16:
            found.add("nvfp4")
        elif (kind, bits) == ("int", 4) and act is None:
            found.add("int4")
        else:
            raise QuantConfigError(f"{where}.config_groups.{name}: weights {kind} {bits}-bit with activations "
                                   f"{'16-bit' if act is None else f'{act[0]} {act[1]}-bit'} are not priced here; "
                                   "allowed: float 8-bit weights and activations (fp8, fp8_block), float 4-bit "
                                   "weights and activations in groups of 16 (nvfp4), int 4-bit weights only (int4)")
    if len(found) > 1:
        raise QuantConfigError(f"{where}.config_groups mixes {', '.join(sorted(found))}; one scheme per model is priced")
    return found.pop()


def _modelopt(cfg: dict, where: str) -> str:
    algo = str(cfg.get("quant_algo", "")).upper()
    if algo in ("FP8", "NVFP4"):
        return algo.lower()
    raise QuantConfigError(f"{where}.quant_algo is {brief(cfg.get('quant_algo'))}; allowed: FP8, NVFP4")


def _fp8(cfg: dict, where: str) -> str:
    """fp8, or fp8_block where `weight_block_size` is given: vLLM's Fp8Config refuses one that is not two
    dimensions ("The quantization block size of weight must have 2 dimensions"), an empty list included."""
    block = cfg.get("weight_block_size")
    if block is None:
        return "fp8"
    if not (isinstance(block, list) and len(block) == 2 and all(integer_expected(b, 1, MAX_WIDTH) is None
                                                                for b in block)):
        raise QuantConfigError(f"{where}.weight_block_size is {brief(block)}; expected two positive integers (the "
                               "block's rows and columns, e.g. [128, 128]: vLLM's Fp8Config), or null")
    return "fp8_block"


# quant_method -> the cluster.dtype its checkpoint holds (module docstring)
METHODS = {"fp8": _fp8, "mxfp4": lambda cfg, where: "mxfp4", "modelopt": _modelopt,
           "modelopt_fp4": lambda cfg, where: "nvfp4",
           "awq": lambda cfg, where: _bits(cfg, where) and "int4", "gptq": lambda cfg, where: _bits(cfg, where) and "int4",
           "compressed-tensors": _compressed_tensors}


def checkpoint_dtype(cfg: dict, where: str) -> str:
    """The cluster.dtype the checkpoint's weights are in ("" without a quantization_config)."""
    block = cfg.get("quantization_config")
    if block is None:
        return ""
    here = f"{where}: quantization_config"
    if not isinstance(block, dict):
        raise QuantConfigError(f"{here} is {brief(block)}; expected a mapping with quant_method")
    method = block.get("quant_method")
    name = method.lower().replace("compressed_tensors", "compressed-tensors") if isinstance(method, str) else None
    if name not in METHODS:   # (None for a method that is not text: a list is no key)
        raise QuantConfigError(f"{here}.quant_method {brief(method)} is not priced here; allowed: {', '.join(METHODS)} "
                               f"({', '.join(PRICED)})")
    return METHODS[name](block, here)


def served_dtype(given: str | None, model) -> str:
    """The weights' dtype a deployment of `model` (a ModelSpec) runs: `given` (cluster.dtype, None where the
    scenario leaves it out), else the checkpoint's format (checkpoint_dtype), else bf16. As vLLM and SGLang
    take the checkpoint's quantization where --quantization is not given and refuse one that differs
    (ModelConfig._verify_quantization: "Quantization method specified in the model config (...) does not match
    the quantization method specified in the `quantization` argument"), a `given` dtype other than a quantized
    checkpoint's is a QuantConfigError (its text names config.json's field; the caller names its own). A 16-bit
    checkpoint may be served in any dtype (the engines' online quantization: vLLM --quantization fp8)."""
    held = model.checkpoint_dtype
    if not held:
        return given or "bf16"
    if given is None or given == held:
        return held
    raise QuantConfigError(f"{given} contradicts {model.name}'s checkpoint, whose config.json quantization_config "
                           f"holds {held} weights (vLLM and SGLang refuse a quantization other than the "
                           f"checkpoint's: ModelConfig._verify_quantization); allowed: {held}, or leave it out")


# The KV cache's quantization a checkpoint declares (ModelSpec.checkpoint_kv_format / checkpoint_kv_dtype), as each
# format writes it in config.json's quantization_config; whether an engine release's KV dtype "auto" takes it is
# the release's rule (profiles.engine_time.kv_cache_auto). Read where:
# - modelopt / modelopt_fp4: `kv_cache_quant_algo` "FP8" / "NVFP4" (the ModelOpt <= 0.29 hf_quant_config.json
#   field, also in config.json), or `kv_cache_scheme` {type float, num_bits 8 | 4} (ModelOpt >= 0.31 config.json):
#   vLLM's get_kv_cache_quant_algo_string (vllm/utils/torch_utils.py, 0.33.0), SGLang's ModelOptFp8Config /
#   ModelOptFp4Config.from_config (srt/layers/quantization/modelopt_quant.py, 0.5.23), TensorRT-LLM's
#   ModelLoader._apply_modelopt_quant_config (llmapi/llm_utils.py);
# - compressed-tensors: `kv_cache_scheme` {type float, num_bits 8} (llm-compressor): vLLM's
#   CompressedTensorsConfig (anything else is its NotImplementedError "Currently supported kv cache quantization
#   is num_bits=8, type=float"), TensorRT-LLM's update_quant_config_from_compressed_tensors
#   (models/quant_config_utils.py: "Unsupported kv_cache_scheme");
# - fp8: `kv_cache_quant_algo` "FP8" (SGLang's Fp8Config.from_config reads it from 0.5.18).
KV_FORMATS = ("modelopt", "compressed-tensors", "fp8")
_KV_ALGOS = {"FP8": "fp8", "NVFP4": "nvfp4"}


def _kv_scheme(scheme, here: str, allowed: dict) -> str:
    """The KV dtype of a `kv_cache_scheme` mapping: `allowed` maps (type, num_bits) to it."""
    if not isinstance(scheme, dict):
        raise QuantConfigError(f"{here}.kv_cache_scheme is {brief(scheme)}; expected a mapping with type and num_bits "
                               "(or null)")
    given = (scheme.get("type"), scheme.get("num_bits"))
    found = next((dtype for key, dtype in allowed.items() if key == given), None)   # (a list or mapping is no key)
    if found is None:
        listed = ", ".join(f"{t} {b}-bit" for t, b in allowed)
        raise QuantConfigError(f"{here}.kv_cache_scheme is {scheme.get('type')} {scheme.get('num_bits')}-bit; the "
                               f"engines read {listed} KV caches")
    return found


def _kv_algo(algo, here: str) -> str:
    if not isinstance(algo, str) or algo.upper() not in _KV_ALGOS:
        raise QuantConfigError(f"{here}.kv_cache_quant_algo is {brief(algo)}; allowed: {', '.join(_KV_ALGOS)} (or "
                               "leave it out)")
    return _KV_ALGOS[algo.upper()]


def checkpoint_kv(cfg: dict, where: str) -> tuple[str, str]:
    """(format, KV dtype) of the KV-cache quantization config.json's quantization_config declares (KV_FORMATS;
    the dtype fp8 or nvfp4), ("", "") where it declares none (or there is no quantization_config). A declaration
    the engines do not read (a compressed-tensors scheme other than float 8-bit, an unknown algorithm) is a
    QuantConfigError naming the field."""
    block = cfg.get("quantization_config")
    if not isinstance(block, dict):
        return "", ""
    method = block.get("quant_method")
    name = method.lower().replace("compressed_tensors", "compressed-tensors") if isinstance(method, str) else ""
    here = f"{where}: quantization_config"
    if name.startswith("modelopt"):
        if block.get("kv_cache_scheme") is not None:
            return "modelopt", _kv_scheme(block["kv_cache_scheme"], here, {("float", 8): "fp8", ("float", 4): "nvfp4"})
        if block.get("kv_cache_quant_algo") is not None:
            return "modelopt", _kv_algo(block["kv_cache_quant_algo"], here)
    elif name == "compressed-tensors" and block.get("kv_cache_scheme") is not None:
        return name, _kv_scheme(block["kv_cache_scheme"], here, {("float", 8): "fp8"})
    elif name == "fp8" and block.get("kv_cache_quant_algo") is not None:
        kv = _kv_algo(block["kv_cache_quant_algo"], here)
        if kv != "fp8":
            raise QuantConfigError(f"{here}.kv_cache_quant_algo is {brief(block['kv_cache_quant_algo'])}; an fp8 "
                                   "checkpoint declares FP8 (or leave it out)")
        return name, kv
    return "", ""
