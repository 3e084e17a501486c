"""The analytical screen of `draftsim plan`: latency model + speculation theory + a queueing estimate,
no DES. Fast enough for thousands of candidates; the best ones are then confirmed with the DES.

Model of one replica of a colocated deployment (vLLM-style prefill-first continuous batching), with
λ_r = QPS / replicas, mean prompt P and mean output L tokens (empirical means of the plan's workload):

- tokens per decode step per request: E = (1 - α^(γ+1)) / (1 - α) (Leviathan's Eq. 1; positional α:
  1 + Σ_i Π_{j≤i} α_j), 1 without a drafter. Decode steps per request n = (L - 1) / E.
- prefill: t_p = cost of one P-token prompt (target + draft) from the step-cost model; prefill share of
  the replica ρ_p = λ_r t_p; ρ_p ≥ 1 is unstable.
- decode: t_d(B) = draft + verify cost of a step of B requests at mean context P + L/2. Decode steps
  are interleaved with prefill steps, so one decode step costs t_d(B) / (1 - ρ_p) of wall time. The mean
  running batch B solves Little's law B = λ_r n t_d(B) / (1 - ρ_p) (bisection; t_d is linearly
  interpolated between integer batches). No solution below B_max = min(max_batch_size, KV tokens /
  (P + L/2)) means the replica cannot keep up.
- TPOT ≈ t_d(B) / ((1 - ρ_p) E). TTFT ≈ t_p + W + t_d(B)/2: own prefill, an M/D/1 wait for the
  prefills ahead W = ρ_p t_p / (2 (1 - ρ_p)), and on average half a decode step in progress.

Approximations (what the DES confirmation measures): means only (no percentiles; the screen compares
means with the SLO thresholds, which the percentile SLO then tightens); arrivals are treated as Poisson
whatever the process; prefills are not batched together; every request is assumed to decode at the
mean context; preemption is ignored. The screen-vs-DES error of the confirmed candidates is reported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from simulator.errors import ScenarioError
from simulator.plan_spec import Candidate

BISECTION_STEPS = 60


@dataclass(frozen=True)
class Workload:
    qps: float
    mean_prompt_tokens: float
    mean_output_tokens: float


@dataclass(frozen=True)
class ScreenEstimate:
    feasible: bool
    reason: str                 # why not feasible ("" when feasible)
    batch: float = math.nan     # mean running requests per replica
    prefill_share: float = math.nan
    ttft_s: float = math.nan
    tpot_s: float = math.nan
    output_tokens_per_s: float = math.nan
    tokens_per_step: float = math.nan


@lru_cache(maxsize=256)
def _step_costs(model: str, hardware: str, dtype: str, tp: int, pp: int, draft: str, draft_tp: int, gamma: int,
                util: float, ep: int = 1, moe_json: str = "{}"):
    """(StepCostModel, KV tokens per replica) for one replica shape; raises ScenarioError if it can't exist.
    With ep > 1 the target pass is the DES's expert-parallel cost (simulator.moe_cost: straggler rank,
    all-to-all on the topology) under the plan's `moe` options (JSON, for the cache key)."""
    import json

    from models import get_model
    from models.opgraph import validate_expert_parallelism
    from models.spec import validate_parallelism
    from models.step import Parallelism
    from pathlib import Path

    from profiles.hardware import get_hardware
    from simulator.build import kv_capacity_tokens, make_engine_time, make_latency_model
    from simulator.schema import LatencyConfig
    from simulator.step_cost import ForwardCost, StepCostModel

    target, hw = get_model(model), get_hardware(hardware)
    try:
        par = Parallelism(tp, pp, ep)
        validate_expert_parallelism(target, par)
        validate_parallelism(target, par)
    except ValueError as exc:
        raise ScenarioError("parallelism", str(exc)) from None
    # The confirming DES scenarios use the default latency block: price the screen the same way.
    latency = make_latency_model(LatencyConfig(), hardware, dtype, Path.cwd())
    engine = make_engine_time(LatencyConfig(), hardware, latency, "draft_model" if gamma else None)
    draft_spec = draft_par = draft_cost = None
    if gamma:
        draft_spec, draft_par = get_model(draft), Parallelism(draft_tp, 1)
        if draft_tp > par.gpus:
            raise ScenarioError("drafter.tp", f"{draft_tp} exceeds the replica's {par.gpus} GPUs")
        draft_cost = ForwardCost(draft_spec, draft_par, latency, dtype)
    kv = kv_capacity_tokens(hw, target, par, dtype, util, draft_spec, draft_par)
    if ep > 1:
        from simulator.moe_cost import make_ep_forward_cost
        from simulator.schema import MoeConfig
        target_cost = make_ep_forward_cost(target, par, latency, dtype, hw, MoeConfig(**json.loads(moe_json)),
                                           Path.cwd())
    else:
        target_cost = ForwardCost(target, par, latency, dtype)
    return StepCostModel(target_cost, draft_cost, gamma, engine=engine), kv


CHAIN_ACCEPTANCE = ("constant", "positional")
_BUILT: dict = {}


def _built_costs(c: Candidate, spec):
    """(StepCostModel, KV tokens, tokens per step) from the DES's own construction of the candidate's
    replica (simulator.build on a one-request copy of its scenario): any drafter/speculation shape the DES
    supports (trees, multi-draft, ranked or pair acceptance) is priced exactly as the DES prices it."""
    import json
    from pathlib import Path

    from simulator.build import build
    from simulator.schema import parse_scenario

    key = (json.dumps(Colocated().scenario(c, spec, 0), sort_keys=True, default=str),)
    if key not in _BUILT:
        data = Colocated().scenario(c, spec, 0)
        data["cluster"]["replicas"] = 1
        data["workload"] = {"arrival": {"process": "poisson", "qps": 1.0},
                            "prompt_tokens": {"kind": "fixed", "value": 16},
                            "output_tokens": {"kind": "fixed", "value": 4}, "num_requests": 1}
        built = build(parse_scenario(data), Path.cwd())
        rep = built.replicas[0]
        tokens = 1.0 + rep.acceptance.expected_accepted() if rep.acceptance is not None else 1.0
        _BUILT[key] = (rep.cost, built.kv_tokens_per_replica, tokens)
    return _BUILT[key]


def _candidate_costs(c: Candidate, spec):
    """(StepCostModel, KV tokens per replica, tokens per step) of a candidate's replica."""
    import json

    if c.speculation or spec.acceptance.get("kind") not in CHAIN_ACCEPTANCE:
        return _built_costs(c, spec)
    util = float(spec.scheduler.get("gpu_memory_utilization", 0.9))
    cost, kv = _step_costs(c.model, c.hardware, spec.dtype, c.tp, c.pp, c.drafter, c.drafter_tp, c.gamma, util,
                           c.ep, json.dumps(spec.moe, sort_keys=True))
    return cost, kv, tokens_per_step(spec.acceptance, c.gamma)


def _little_batch(excess, b_max: float) -> float | None:
    """The running batch solving Little's law (`excess(B)` = needed − B crosses 0), None if above b_max."""
    if excess(b_max) > 0:
        return None
    lo, hi = 0.0, b_max
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return hi


def _interpolated_step_s(cost, context: float):
    """Decode step seconds (draft + verify) as a function of a fractional batch at mean `context`."""
    def step_s(batch: float) -> float:
        lo = max(1, int(math.floor(batch)))
        hi = max(lo, int(math.ceil(batch)))
        d, t = cost.decode_steps(np.array([lo, hi]), np.array([round(lo * context), round(hi * context)]))
        both = d[:, 0] + t[:, 0]
        w = min(max(batch - lo, 0.0), 1.0)
        return float(both[0] * (1 - w) + both[1] * w)
    return step_s


def tokens_per_step(acceptance: dict, gamma: int) -> float:
    from theory.chain import expected_tokens, expected_tokens_positional

    if gamma == 0:
        return 1.0
    if acceptance.get("kind", "constant") == "constant":
        return float(expected_tokens(float(acceptance.get("alpha", 0.8)), gamma))
    alphas = list(acceptance["alphas"])
    return expected_tokens_positional((alphas + [alphas[-1]] * gamma)[:gamma])


class Colocated:
    """Target and drafter share each replica's GPUs (the only deployment the DES has today)."""

    name = "colocated"

    def scenario(self, c: Candidate, spec, seed: int) -> dict:
        import json

        drafter = ({"kind": "draft_model", "model": c.drafter, "gamma": c.gamma, "tp": c.drafter_tp}
                   if c.gamma else {"kind": "none"})
        extra = {"speculation": json.loads(c.speculation)} if c.speculation and c.gamma else {}
        return {"name": f"{spec.name}", "seed": seed, "workload": dict(spec.workload), **extra,
                "cluster": {"hardware": c.hardware, "model": c.model, "dtype": spec.dtype, "replicas": c.replicas,
                            "parallelism": {"tp": c.tp, "pp": c.pp, "ep": c.ep},
                            **({"moe": dict(spec.moe)} if c.ep > 1 and spec.moe else {})},
                "drafter": drafter, "acceptance": dict(spec.acceptance), "scheduler": dict(spec.scheduler),
                "slo": spec.slo.model_dump(), "outputs": {"plots": False}}

    def screen(self, c: Candidate, spec, work: Workload) -> ScreenEstimate:
        try:
            cost, kv_tokens, tokens = _candidate_costs(c, spec)
        except ScenarioError as exc:
            return ScreenEstimate(False, str(exc).splitlines()[0])
        prompt, output = work.mean_prompt_tokens, work.mean_output_tokens
        lam = work.qps / c.replicas
        p_int = max(1, round(prompt))
        draft_p, target_p = cost.step(p_int, 1, p_int * (p_int + 1) // 2, 0, 0)
        t_prefill = draft_p.seconds + target_p.seconds
        rho = lam * t_prefill
        if rho >= 1.0:
            return ScreenEstimate(False, f"prefill alone needs {rho:.2f} of a replica", prefill_share=rho)
        context = prompt + output / 2.0
        b_max = min(float(spec.scheduler.get("max_batch_size", 256)), kv_tokens / context)
        if b_max < 1.0:
            return ScreenEstimate(False, "KV cache holds less than one mean request")
        steps = max(output - 1.0, 0.0) / tokens
        step_s = _interpolated_step_s(cost, context)

        def excess(batch: float) -> float:  # > 0: the batch must grow to keep up
            return lam * steps * step_s(batch) / (1.0 - rho) - batch

        batch = _little_batch(excess, b_max)
        if batch is None:
            return ScreenEstimate(False, f"decode cannot keep up within a batch of {b_max:.0f}", prefill_share=rho)
        t_step = step_s(batch)
        tpot = t_step / ((1.0 - rho) * tokens)
        ttft = t_prefill + rho * t_prefill / (2.0 * (1.0 - rho)) + (t_step / 2.0 if batch > 0 else 0.0)
        return ScreenEstimate(True, "", batch, rho, ttft, tpot, work.qps * output, tokens)


class Disaggregated(Colocated):
    """A prefill pool of `c.prefill_replicas` replicas and a decode pool of the rest, each replica with the
    candidate's TP/PP, the KV cache sent over the scale-up link (simulator.disagg in the DES).

    Screen: the prefill pool is the colocated model's prefill alone (λ_p = QPS / prefill replicas,
    ρ_p = λ_p t_p < 1, TTFT ≈ t_p + ρ_p t_p / (2 (1 − ρ_p))); the KV transfer takes
    t_kv = prompt KV bytes per GPU / scale-up bandwidth + latency (idle link: no contention); the decode
    pool solves Little's law with no prefill interference, B = λ_d n t_d(B), and TPOT ≈ t_d(B) / E +
    t_kv / (L − 1) (the transfer sits between the first and the second token). Same approximations as
    the colocated screen otherwise."""

    name = "disaggregated"

    def scenario(self, c: Candidate, spec, seed: int) -> dict:
        data = super().scenario(c, spec, seed)
        par = {"tp": c.tp, "pp": c.pp}
        data["cluster"].pop("replicas")
        data["cluster"].pop("parallelism")
        data["cluster"]["disaggregation"] = {"prefill": {"replicas": c.prefill_replicas, "parallelism": par},
                                             "decode": {"replicas": c.decode_replicas, "parallelism": par},
                                             "kv_transfer": {"link": "scaleup"}}
        return data

    def screen(self, c: Candidate, spec, work: Workload) -> ScreenEstimate:
        from models import get_model
        from models.step import Parallelism
        from profiles.hardware import get_hardware

        if c.ep > 1:
            return ScreenEstimate(False, "expert parallelism inside disaggregated pools is not modelled")
        if c.speculation or spec.acceptance.get("kind") not in CHAIN_ACCEPTANCE:
            return ScreenEstimate(False, "disaggregated pools run chain speculation with constant or positional "
                                  "acceptance only")
        try:
            cost, kv_tokens, tokens = _candidate_costs(c, spec)
        except ScenarioError as exc:
            return ScreenEstimate(False, str(exc).splitlines()[0])
        if c.prefill_replicas < 1 or c.decode_replicas < 1:
            return ScreenEstimate(False, "a disaggregated deployment needs >= 1 prefill and >= 1 decode replica")
        prompt, output = work.mean_prompt_tokens, work.mean_output_tokens
        p_int = max(1, round(prompt))
        draft_p, target_p = cost.step(p_int, 1, p_int * (p_int + 1) // 2, 0, 0)
        t_prefill = draft_p.seconds + target_p.seconds
        rho = work.qps / c.prefill_replicas * t_prefill
        if rho >= 1.0:
            return ScreenEstimate(False, f"prefill needs {rho:.2f} of each prefill replica", prefill_share=rho)
        hw, target = get_hardware(c.hardware), get_model(c.model)
        kv_bytes = prompt * target.kv_bytes_per_token_per_gpu(Parallelism(c.tp, c.pp), spec.dtype)
        t_kv = kv_bytes / hw.scaleup_bandwidth_bytes_per_s + hw.scaleup_latency_s
        context = prompt + output / 2.0
        b_max = min(float(spec.scheduler.get("max_batch_size", 256)), kv_tokens / context)
        if b_max < 1.0:
            return ScreenEstimate(False, "KV cache holds less than one mean request")
        steps = max(output - 1.0, 0.0) / tokens
        step_s = _interpolated_step_s(cost, context)
        lam_d = work.qps / c.decode_replicas
        batch = _little_batch(lambda b: lam_d * steps * step_s(b) - b, b_max)
        if batch is None:
            return ScreenEstimate(False, f"decode cannot keep up within a batch of {b_max:.0f}", prefill_share=rho)
        t_step = step_s(batch)
        tpot = t_step / tokens + t_kv / max(output - 1.0, 1.0)
        ttft = t_prefill + rho * t_prefill / (2.0 * (1.0 - rho))
        return ScreenEstimate(True, "", batch, rho, ttft, tpot, work.qps * output, tokens)


DEPLOYMENTS = {"colocated": Colocated(), "disaggregated": Disaggregated()}


def screen(c: Candidate, spec, work: Workload) -> ScreenEstimate:
    return DEPLOYMENTS[c.deployment].screen(c, spec, work)


def workload_means(spec, base_dir, seed: int) -> Workload:
    """QPS and mean lengths of the plan's workload (generated once, as the DES would)."""
    from simulator.workload import WorkloadConfig, generate_requests

    try:
        config = WorkloadConfig.model_validate(spec.workload)
    except Exception as exc:  # pydantic ValidationError: name the field
        first = exc.errors()[0] if hasattr(exc, "errors") else {"loc": (), "msg": str(exc)}
        where = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(f"plan.workload.{where}".rstrip("."), first["msg"]) from None
    table = generate_requests(config, np.random.default_rng(seed), base_dir)
    span = float(table.arrival_s.max() - table.arrival_s.min()) if len(table) > 1 else 0.0
    qps = (len(table) - 1) / span if span > 0 else float(config.arrival.qps or 1.0)
    return Workload(qps, float(np.mean(table.prompt_tokens)), float(np.mean(table.output_tokens)))
