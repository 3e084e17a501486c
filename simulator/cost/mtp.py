"""MTP drafter (`drafter: {kind: mtp, gamma, modules}`): the model's own multi-token-prediction modules.

One draft pass is one MTP module over the pass's tokens (models.mtp): its decoder layer priced as the
target's layers are — ForwardCost over models.mtp.module_spec, or, under expert parallelism, the EP
pricer of simulator.cost.moe on the same routing, link topology and pre-scheduling as the target's MoE
layers (`cluster.moe`; the module's experts are split over the replica's ep ranks, its tokens are
dispatched and combined by all-to-alls on the links) — plus models.mtp.extra_ops (enorm, hnorm, eh_proj)
and the target's embedding and LM head. The pass layout (draft extend over the verified tokens, then one
pass per further position) is simulator.cost.proposer's.

Memory on each GPU: `modules` MTP modules' own weights (models.mtp.weight_bytes_per_gpu; the embedding is
shared, the LM head too except where the pool's engine release keeps the module's own, `own_lm_head`) and, per
token, one layer of KV per module (`modules` × the module spec's per-GPU KV: MLA's latent, or K/V heads split over
tp). A draft pass j uses module j mod `modules` (vLLM); `modules`
defaults to every module the checkpoint ships (vLLM loads them all); SGLang's NextN loads one (set
modules: 1). Refused: a model that ships no MTP module, more modules than it ships; a draft length the release
does not run from the shipped modules (check_draft_length, after the release's architecture gate).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

import numpy as np

from models.mtp import extra_ops, module_spec, weight_bytes_per_gpu
from models.spec import ModelSpec
from models.step import Parallelism
from simulator.cost.moe import EpForwardCost
from simulator.cost.step_cost import ForwardCost, _price
from simulator.errors import ScenarioError


class _MtpDense:
    """Adds models.mtp.extra_ops to a pricer's dense part (per attention group: tokens / attention_dp)."""

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        memo = self.__dict__.setdefault("_mtp_dense", {})
        key = (num_tokens, logits_tokens)
        cost = memo.get(key)
        if cost is None:
            tokens = num_tokens / self.parallelism.attention_dp
            cost = memo[key] = super().dense(num_tokens, logits_tokens) + \
                _price(self.latency, extra_ops(self.spec, tokens, self.dtype))
        return cost

    def gpu_layers(self) -> int:
        return 1


@dataclass
class MtpPassCost(_MtpDense, ForwardCost):
    """An MTP module's pass on a tensor-parallel (or single-GPU) replica."""


@dataclass
class MtpEpPassCost(_MtpDense, EpForwardCost):
    """An MTP module's pass on an expert-parallel replica (DP attention), MoE priced by simulator.cost.moe."""


def build_mtp(d, target: ModelSpec, par: Parallelism, latency, hw, dtype: str, kv_dtype: str, context):
    """The DrafterBuild of an `mtp` drafter section (`context`: simulator.cost.drafters.DraftContext)."""
    from simulator.cost.drafters import DrafterBuild
    from simulator.cost.proposer import HiddenStateHooks
    if target.num_mtp_modules < 1:
        from models import list_models, get_model
        shipping = [m for m in list_models() if get_model(m).num_mtp_modules]
        raise ScenarioError("drafter.kind", f"mtp drafts with the model's multi-token-prediction modules; "
                            f"{target.name} ships none (config.json num_nextn_predict_layers); models that do: "
                            f"{', '.join(shipping) or 'none'}")
    modules = target.num_mtp_modules if d.modules is None else d.modules
    if modules > target.num_mtp_modules:
        raise ScenarioError("drafter.modules", f"{modules} exceeds the {target.num_mtp_modules} MTP module(s) "
                            f"{target.name} ships")
    spec = module_spec(target)
    draft_par = Parallelism(par.tp, 1, par.ep)
    if par.ep > 1:
        from simulator.cost.moe import make_ep_forward_cost
        base = make_ep_forward_cost(spec, draft_par, latency, dtype, hw, context.moe, context.base_dir, kv_dtype)
        cost = MtpEpPassCost(**{f.name: getattr(base, f.name) for f in fields(base) if f.init})
    else:
        cost = MtpPassCost(spec, draft_par, latency, dtype, kv_dtype)
    kv = modules * spec.kv_bytes_per_token_per_gpu(Parallelism(par.tp, 1), kv_dtype)
    # `spec` of the build: the loaded modules' layers (one KV layer each), what a disaggregated hand-off ships
    held = spec if modules == 1 else dataclasses.replace(spec, name=f"{target.name}[mtp x{modules}]", num_layers=modules)
    weights = weight_bytes_per_gpu(target, modules, draft_par, dtype, own_lm_head(context.release, target))
    return DrafterBuild(cost, None, weights, kv, spec=held, hidden_state=HiddenStateHooks())


def check_draft_length(release: tuple[str, str | None] | None, gamma: int, n_predict: int) -> None:
    """Refuse (drafter.gamma) a draft length the vLLM release the pool runs does not run from `n_predict` shipped
    modules (profiles.engine_time.mtp_draft_length; `release` as own_lm_head reads it). Called by the replica
    factory after the release's architecture gate for MTP (simulator.cluster.factory.check_architectures), not by
    build_mtp: vLLM reads n_predict only from a checkpoint whose architecture it runs MTP on, so a target without
    MTP layers there is refused for its architecture whatever the draft length (vllm/config.py
    SpeculativeConfig.__post_init__: num_speculative_tokens without a draft model is taken as MTP only for an
    MTP model type, else 'num_speculative_tokens was provided without speculative model'; hf_config_override
    sets n_predict for those types only; the n_predict rule comes after both. Read 2026-11-29 in a 0.8-series
    tree, the one with the divisibility rule and the Llama-only EAGLE-3 check, and in a later one with MiMo and
    GLM-4.5 MTP; 0.7.3's maybe_create_spec_config was not read again for the order)."""
    from profiles.engine_time.mtp_draft_length import release_mtp_gamma_refusal
    why = release_mtp_gamma_refusal(release, gamma, n_predict)
    if why is not None:
        raise ScenarioError("drafter.gamma", why)


def own_lm_head(release: tuple[str, str | None] | None, target: ModelSpec) -> bool:
    """Whether the engine release the pool runs (`release`: simulator.cluster.factory.deployment_release; version
    None: the framework's newest modelled release) keeps each MTP module's own LM head
    (profiles.engine_time.mtp_lm_head); no release: shared, as the module's op graph takes it."""
    if release is None:
        return False
    from profiles.engine_time.frameworks import release_or_modelled
    from profiles.engine_time.mtp_lm_head import keeps_own_lm_head
    framework, version = release
    return keeps_own_lm_head(framework, release_or_modelled(framework, version), target)
