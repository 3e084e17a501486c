"""The target's pass pricers (simulator.cost.step_cost.ForwardCost and its variants) and what each needs.

A scenario asks for a variant through one field (a KV layout, early exits, NanoFlow's nano-batches,
realigned speculation, expert parallelism; or, for constraints only, a hybrid model and the measured passes
of a real engine). Each variant declares the facts it needs of the rest of the replica kind (`NEEDS`), and
`check` writes the compatibility errors for all of them: the first variant asked for whose needs do not all
hold raises "<field>: <what it models>: it needs <its needs>". The needs make the variants exclusive, so
at most one pricer is asked for once `check` passes; `build` makes it (the plain ForwardCost otherwise). A
new variant is its pricer in simulator/cost/ plus one entry in `TARGET_COSTS`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from simulator.cost.step_cost import ForwardCost
from simulator.errors import ScenarioError


@dataclass(frozen=True)
class Facts:
    """What the variants' needs (and whether a variant is asked for) read of the replica kind being built."""

    drafter: bool           # a drafter speculates
    ep: int
    pp: int
    gpus: int
    nano_batches: int       # cluster.latency.nano_batches
    layout: str             # cluster.kv_cache.layout.kind
    early_exit: bool        # an early_exit section
    realign: bool           # speculation.alignment realign with a drafter
    moe: bool               # the target has routed experts
    hybrid: bool            # the target has linear-attention or Mamba layers
    measured_passes: bool   # cluster.latency.source engine_profile


# need -> (how errors say it, whether it holds)
NEEDS: dict[str, tuple[str, Callable[[Facts], bool]]] = {
    "no_drafter": ("drafter none", lambda f: not f.drafter),
    "one_gpu": ("tp = pp = ep = 1", lambda f: f.gpus == 1),
    "ep1": ("ep 1", lambda f: f.ep == 1),
    "pp1": ("pp 1", lambda f: f.pp == 1),
    "dense": ("a dense (not MoE) target", lambda f: not f.moe),
    "paged": ("kv_cache layout paged", lambda f: f.layout == "paged"),
    "no_early_exit": ("no early_exit", lambda f: not f.early_exit),
    "one_nano_batch": ("cluster.latency.nano_batches 1", lambda f: f.nano_batches == 1),
    "paged_alignment": ("speculation.alignment paged", lambda f: not f.realign),
}


@dataclass(frozen=True)
class BuildContext:
    """What a variant's pricer is made of: the resolved model, parallelism, latency model and hardware, and
    the scenario sections that parametrise the variants."""

    target: object
    par: object
    latency: object
    dtype: str
    kv_dtype: str
    hardware: object
    moe: object               # the cluster.moe section
    base_dir: object
    drafter: object           # the built drafter (simulator.cost.drafters.DrafterBuild), or None
    kv_layout: object         # cluster.kv_cache.layout
    early_exit: object        # the early_exit section, or None
    nano_batches: int


def _expert_parallel(c: BuildContext) -> ForwardCost:
    from simulator.cost.moe import make_ep_forward_cost
    return make_ep_forward_cost(c.target, c.par, c.latency, c.dtype, c.hardware, c.moe, c.base_dir, c.kv_dtype)


def _realigned(c: BuildContext) -> ForwardCost:
    from simulator.cost.ragged import RealignedForwardCost
    kv_bytes = c.target.kv_bytes_per_token_per_gpu(c.par, c.kv_dtype) + c.drafter.kv_bytes_per_token_per_gpu
    return RealignedForwardCost(c.target, c.par, c.latency, c.dtype, c.kv_dtype, kv_bytes_per_token=kv_bytes,
                                hbm_bandwidth_bytes_per_s=c.hardware.hbm_bandwidth_bytes_per_s)


def _early_exit(c: BuildContext) -> ForwardCost:
    from simulator.cost.early_exit import EarlyExitForwardCost
    return EarlyExitForwardCost(c.target, c.par, c.latency, c.dtype, c.kv_dtype,
                                exit_layers=tuple(c.early_exit.exit_layers), exit_probs=tuple(c.early_exit.exit_probs))


def _shadowkv(c: BuildContext) -> ForwardCost:
    from simulator.cost.shadowkv import ShadowKVForwardCost
    hw, layout = c.hardware, c.kv_layout
    return ShadowKVForwardCost(c.target, c.par, c.latency, c.dtype, c.kv_dtype, rank=layout.rank,
                               sparse_budget=layout.sparse_budget, chunk_tokens=layout.chunk_tokens,
                               link_bandwidth_bytes_per_s=hw.host_link_bandwidth_bytes_per_s,
                               link_latency_s=hw.host_link_latency_s)


def _nanoflow(c: BuildContext) -> ForwardCost:
    from simulator.cost.nanoflow import NanoFlowForwardCost
    hw = c.hardware
    return NanoFlowForwardCost(c.target, c.par, c.latency, c.dtype, c.kv_dtype, nano_batches=c.nano_batches,
                               peak_flops_per_s=hw.matmul_flops(c.dtype),
                               hbm_bandwidth_bytes_per_s=hw.hbm_bandwidth_bytes_per_s)


@dataclass(frozen=True)
class TargetCost:
    """A variant: the field that asks for it, what it models (the error's first words), whether a scenario
    asks for it, what it needs (keys of NEEDS) and its pricer (None: constraints only, priced by another)."""

    field: str
    what: str
    asked: Callable[[Facts], bool]
    needs: tuple[str, ...]
    build: Callable[[BuildContext], ForwardCost] | None = None


# name -> variant, in the order their errors are checked
TARGET_COSTS: dict[str, TargetCost] = {
    "shadowkv": TargetCost("cluster.kv_cache.layout.kind", "shadowkv prices the target's own passes",
                           lambda f: f.layout == "shadowkv", ("no_drafter", "ep1", "one_nano_batch"), _shadowkv),
    "hybrid": TargetCost("cluster.model", "linear-attention/Mamba layers are priced for the plain target pass",
                         lambda f: f.hybrid, ("paged", "no_early_exit", "paged_alignment")),
    "early_exit": TargetCost("early_exit", "early exit is modelled for plain decoding of a dense target",
                             lambda f: f.early_exit,
                             ("no_drafter", "paged", "one_nano_batch", "ep1", "pp1", "dense"), _early_exit),
    "nanoflow": TargetCost("cluster.latency.nano_batches", "NanoFlow's overlap is modelled for dense target "
                           "passes with paged KV", lambda f: f.nano_batches > 1, ("ep1", "paged_alignment"), _nanoflow),
    "realign": TargetCost("speculation.alignment", "'realign' models a padded single-group batch",
                          lambda f: f.realign, ("ep1",), _realigned),
    "expert_parallel": TargetCost("cluster.parallelism.ep", "expert parallelism", lambda f: f.ep > 1, (),
                                  _expert_parallel),
    "measured_passes": TargetCost("cluster.latency.source", "engine_profile prices whole measured passes of one "
                                  "device", lambda f: f.measured_passes,
                                  ("one_gpu", "no_early_exit", "paged", "paged_alignment", "one_nano_batch")),
}


def _listed(texts: list[str]) -> str:
    return texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} and {texts[-1]}"


def check(facts: Facts) -> None:
    """The compatibility errors of every variant (module docstring)."""
    for variant in TARGET_COSTS.values():
        if variant.asked(facts) and not all(NEEDS[need][1](facts) for need in variant.needs):
            raise ScenarioError(variant.field, f"{variant.what}: it needs "
                                               f"{_listed([NEEDS[need][0] for need in variant.needs])}")


def build(facts: Facts, context: BuildContext) -> ForwardCost:
    """The target's pass pricer: the variant asked for (after `check`, at most one has a pricer), else the
    plain ForwardCost."""
    for variant in TARGET_COSTS.values():
        if variant.build is not None and variant.asked(facts):
            return variant.build(context)
    c = context
    return ForwardCost(c.target, c.par, c.latency, c.dtype, c.kv_dtype)
