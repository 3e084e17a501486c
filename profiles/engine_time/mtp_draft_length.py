"""How many draft tokens a vLLM release lets a model's MTP modules propose per step: `num_speculative_tokens`
(drafter.gamma) against the checkpoint's `n_predict` (config.json num_nextn_predict_layers, which vLLM's
SpeculativeConfig.hf_config_override copies to n_predict: ModelSpec.num_mtp_modules). Read in vLLM's PyPI sources:

- v0.7.3, DeepSeek MTP's first release (V0; vllm/config.py SpeculativeConfig.maybe_create_spec_config): more than
  n_predict raises "This speculative model supports a maximum of num_speculative_tokens={n_predict}";
- v0.8.0 on (read in 0.8.0, 0.8.5, 0.9.0, 0.9.2, 0.10.0, 0.11.0, 0.12.0, 0.15.0, 0.20.0, 0.28.0 and 0.33.0; MTP runs
  in V1 from 0.9.0): more than n_predict must be a multiple of it ("num_speculative_tokens:{k} must be divisible
  by n_predict", SpeculativeConfig.__post_init__, "Ensure divisibility for MTP module reuse"): the modules are
  cycled, module step mod n_predict (models.mtp).

SGLang's NextN runs the first module as an EAGLE draft model for any speculative_num_steps (models.mtp), so no
rule there; TensorRT-LLM's MTPDecodingConfig was not read for one (none applied).
"""
from __future__ import annotations

from profiles.measured.source import version_in_span

VLLM_AT_MOST_N_PREDICT = ("0.7.3", "0.8.0")    # releases (from, before) refusing more than n_predict tokens


def _up_to(n: int) -> str:
    return "1" if n == 1 else f"1 to {n}"


def vllm_mtp_gamma_refusal(version: str, gamma: int, n_predict: int) -> str | None:
    """None when vLLM `version` runs `gamma` MTP draft tokens from a checkpoint of `n_predict` modules, else why
    not and what is allowed (the text of a one-line error naming drafter.gamma)."""
    if n_predict < 1 or gamma <= n_predict:
        return None
    if version_in_span(version, *VLLM_AT_MOST_N_PREDICT):
        return (f"vllm {version} drafts at most n_predict = {n_predict} MTP token(s) a step (the checkpoint's "
                f"num_nextn_predict_layers; vllm/config.py: 'This speculative model supports a maximum of "
                f"num_speculative_tokens={n_predict}'); allowed: {_up_to(n_predict)}, or a version >= 0.8.0, which "
                f"cycles the modules")
    if gamma % n_predict:
        return (f"vllm {version} cycles {n_predict} MTP modules and refuses {gamma} draft tokens ('must be divisible "
                f"by n_predict', vllm/config SpeculativeConfig.__post_init__); allowed: {_up_to(n_predict)} or a "
                f"multiple of {n_predict}")
    return None


def release_mtp_gamma_refusal(release: tuple[str, str | None] | None, gamma: int, n_predict: int) -> str | None:
    """`vllm_mtp_gamma_refusal` for an engine `release` (framework, version; version None: the framework's newest
    modelled release; None: no engine named): None off vLLM, where no rule of this module applies."""
    if release is None or release[0] != "vllm":
        return None
    from profiles.engine_time.frameworks import release_or_modelled
    return vllm_mtp_gamma_refusal(release_or_modelled("vllm", release[1]), gamma, n_predict)
