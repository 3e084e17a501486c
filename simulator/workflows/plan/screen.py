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
  interpolated between integer batches). No solution below B_max = min(the running-request limit, KV tokens /
  (P + L/2)) means the replica cannot keep up.
- TPOT ≈ t_d(B) / ((1 - ρ_p) E). TTFT ≈ t_p + W + t_d(B)/2: own prefill, an M/D/1 wait for the
  prefills ahead W = ρ_p t_p / (2 (1 - ρ_p)), and half a decode step when one is in progress, which it
  is with probability min(1, B) (P(N ≥ 1) ≤ E[N] = B; it was taken as 1 at every load, so at vanishing
  load the screen added t_d/2 to a TTFT that is the prefill alone: +35 % at 0.05 QPS with γ = 3).

Approximations (what the DES confirmation measures): means only (no percentiles; the screen compares
means with the SLO thresholds, which the percentile SLO then tightens); arrivals are treated as Poisson
whatever the process; prefills are not batched together; every request is assumed to decode at the
mean context; preemption is ignored. The screen-vs-DES error of the confirmed candidates is reported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulator.errors import ScenarioError
from simulator.workflows.plan.config import Candidate

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


CHAIN_ACCEPTANCE = ("constant", "positional")
_KINDS: dict = {}


def replica_kind(c: Candidate, spec):
    """The candidate's ReplicaKind, from the one replica factory (simulator.cluster.factory) on the candidate's
    own scenario: any drafter/speculation shape the DES supports (trees, multi-draft, ranked or pair
    acceptance, expert parallelism under the plan's `moe` options) is priced exactly as the DES prices it.
    Raises ScenarioError if the replica cannot exist. Memoized per candidate shape."""
    import json
    from pathlib import Path

    from simulator.cluster.build import Streams, pool_kind
    from simulator.config.scenario import parse_scenario

    data = Colocated().scenario(c, spec, 0)
    data["cluster"]["replicas"] = 1
    key = json.dumps(data, sort_keys=True, default=str)
    if key not in _KINDS:
        data["workload"] = {"arrival": {"process": "poisson", "qps": 1.0},
                            "prompt_tokens": {"kind": "fixed", "value": 16},
                            "output_tokens": {"kind": "fixed", "value": 4}, "num_requests": 1}
        _KINDS[key] = pool_kind(parse_scenario(data), None, "cluster", Streams.from_seed(0).acceptance_seed,
                                Path.cwd())
    return _KINDS[key]


def _candidate_costs(c: Candidate, spec):
    """(StepCostModel, KV tokens per replica, tokens per step, running-request limit) of a candidate's replica."""
    kind = replica_kind(c, spec)
    acceptance = candidate_acceptance(c, spec)
    if c.speculation or acceptance.get("kind") not in CHAIN_ACCEPTANCE:
        tokens = 1.0 + kind.acceptance.expected_accepted() if kind.acceptance is not None else 1.0
    else:
        tokens = tokens_per_step(acceptance, c.gamma)
    return kind.cost, kind.kv_tokens, tokens, kind.max_batch_size


def candidate_acceptance(c: Candidate, spec) -> dict:
    """The acceptance section of a candidate: its drafter's own, else the plan's."""
    import json
    return json.loads(c.acceptance) if c.acceptance else dict(spec.acceptance)


def _pool_model(c: Candidate, spec, work: Workload, prefill_replicas: int, overloaded: str):
    """What both deployments' screens need of the candidate's replica kind: (step cost, tokens per step,
    prefill seconds of a mean prompt, prefill share ρ of the replicas that prefill, largest batch, decode
    steps per request, decode step seconds as a function of the batch), or an infeasible ScreenEstimate
    (`overloaded` formats ρ ≥ 1)."""
    try:
        cost, kv_tokens, tokens, max_seqs = _candidate_costs(c, spec)
    except ScenarioError as exc:
        return ScreenEstimate(False, str(exc).splitlines()[0])
    prompt, output = work.mean_prompt_tokens, work.mean_output_tokens
    p_int = max(1, round(prompt))
    draft_p, target_p = cost.step(p_int, 1, p_int * (p_int + 1) // 2, 0, 0)
    t_prefill = draft_p.seconds + target_p.seconds
    rho = work.qps / prefill_replicas * t_prefill
    if rho >= 1.0:
        return ScreenEstimate(False, overloaded.format(rho=rho), prefill_share=rho)
    context = prompt + output / 2.0
    b_max = min(float(max_seqs), kv_tokens / context)
    if b_max < 1.0:
        return ScreenEstimate(False, "KV cache holds less than one mean request")
    steps = max(output - 1.0, 0.0) / tokens
    return cost, tokens, t_prefill, rho, b_max, steps, _interpolated_step_s(cost, context)


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
    priced: dict[tuple[int, int], np.ndarray] = {}   # (lo, hi) -> both; a bisection asks for few pairs often

    def step_s(batch: float) -> float:
        lo = max(1, int(math.floor(batch)))
        hi = max(lo, int(math.ceil(batch)))
        both = priced.get((lo, hi))
        if both is None:
            d, t = cost.decode_steps(np.array([lo, hi]), np.array([round(lo * context), round(hi * context)]))
            both = priced[(lo, hi)] = d[:, 0] + t[:, 0]
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
    """One pool: target and drafter share each replica's GPUs."""

    name = "colocated"

    def scenario(self, c: Candidate, spec, seed: int) -> dict:
        import json

        if not c.gamma:
            drafter = {"kind": "none"}
        elif c.drafter_block:
            drafter = {**json.loads(c.drafter_block), "gamma": c.gamma}
        else:
            drafter = {"kind": "draft_model", "model": c.drafter, "gamma": c.gamma, "tp": c.drafter_tp}
        extra = {"speculation": json.loads(c.speculation)} if c.speculation and c.gamma else {}
        return {"name": f"{spec.name}", "seed": seed, "workload": dict(spec.workload), **extra,
                "cluster": {"hardware": c.hardware, "model": c.model, "dtype": spec.dtype, "replicas": c.replicas,
                            **({"kv_dtype": spec.kv_dtype} if spec.kv_dtype else {}),
                            "parallelism": {"tp": c.tp, "pp": c.pp, "ep": c.ep},
                            **({"moe": dict(spec.moe)} if c.ep > 1 and spec.moe else {}),
                            **({"engine": dict(spec.engine)} if spec.engine else {})},
                "drafter": drafter, "acceptance": candidate_acceptance(c, spec), "scheduler": dict(spec.scheduler),
                "slo": spec.slo.model_dump(), "outputs": {"plots": False}}

    def screen(self, c: Candidate, spec, work: Workload) -> ScreenEstimate:
        pool = _pool_model(c, spec, work, c.replicas, "prefill alone needs {rho:.2f} of a replica")
        if isinstance(pool, ScreenEstimate):
            return pool
        lam, output = work.qps / c.replicas, work.mean_output_tokens
        cost, tokens, t_prefill, rho, b_max, steps, step_s = pool

        def excess(batch: float) -> float:  # > 0: the batch must grow to keep up
            return lam * steps * step_s(batch) / (1.0 - rho) - batch

        batch = _little_batch(excess, b_max)
        if batch is None:
            return ScreenEstimate(False, f"decode cannot keep up within a batch of {b_max:.0f}", prefill_share=rho)
        t_step = step_s(batch)
        tpot = t_step / ((1.0 - rho) * tokens)
        ttft = t_prefill + rho * t_prefill / (2.0 * (1.0 - rho)) + min(1.0, batch) * t_step / 2.0
        return ScreenEstimate(True, "", batch, rho, ttft, tpot, work.qps * output, tokens)


class Disaggregated(Colocated):
    """A prefill pool of `c.prefill_replicas` replicas and a decode pool of the rest, each replica with the
    candidate's TP/PP/EP, drafter and speculation shape, the KV cache sent over the scale-up link
    (simulator.cluster.handoff in the DES).

    Screen: the prefill pool is the colocated model's prefill alone (λ_p = QPS / prefill replicas,
    ρ_p = λ_p t_p < 1, TTFT ≈ t_p + ρ_p t_p / (2 (1 − ρ_p))); the KV transfer takes
    t_kv = prompt KV bytes per GPU / scale-up bandwidth + latency (idle link: no contention); the decode
    pool solves Little's law with no prefill interference, B = λ_d n t_d(B), and TPOT ≈ t_d(B) / E +
    t_kv / (L − 1) (the transfer sits between the first and the second token). Same approximations as
    the colocated screen otherwise."""

    name = "disaggregated"

    def scenario(self, c: Candidate, spec, seed: int) -> dict:
        data = super().scenario(c, spec, seed)
        par = {"tp": c.tp, "pp": c.pp, "ep": c.ep}
        data["cluster"].pop("replicas")
        data["cluster"].pop("parallelism")
        data["cluster"]["disaggregation"] = {"prefill": {"replicas": c.prefill_replicas, "parallelism": par},
                                             "decode": {"replicas": c.decode_replicas, "parallelism": par},
                                             "kv_transfer": {"link": "scaleup"}}
        return data

    def screen(self, c: Candidate, spec, work: Workload) -> ScreenEstimate:
        from models import get_model
        from models.spec import kv_cache_dtype
        from models.step import Parallelism
        from profiles.hardware import get_hardware

        if c.prefill_replicas < 1 or c.decode_replicas < 1:
            return ScreenEstimate(False, "a disaggregated deployment needs >= 1 prefill and >= 1 decode replica")
        pool = _pool_model(c, spec, work, c.prefill_replicas, "prefill needs {rho:.2f} of each prefill replica")
        if isinstance(pool, ScreenEstimate):
            return pool
        cost, tokens, t_prefill, rho, b_max, steps, step_s = pool
        prompt, output = work.mean_prompt_tokens, work.mean_output_tokens
        hw, target = get_hardware(c.hardware), get_model(c.model)
        kv_bytes = prompt * target.kv_bytes_per_token_per_gpu(Parallelism(c.tp, c.pp),
                                                              kv_cache_dtype(spec.dtype, spec.kv_dtype))
        t_kv = kv_bytes / hw.scaleup_bandwidth_bytes_per_s + hw.scaleup_latency_s
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
    from simulator.config.workload import WorkloadConfig
    from simulator.core.workload import generate_requests

    try:
        config = WorkloadConfig.model_validate(spec.workload)
    except Exception as exc:  # pydantic ValidationError: name the field
        first = exc.errors()[0] if hasattr(exc, "errors") else {"loc": (), "msg": str(exc)}
        where = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(f"plan.workload.{where}".rstrip("."), first["msg"]) from None
    if config.parallel_samples != 1:
        raise ScenarioError("plan.workload.parallel_samples", f"{config.parallel_samples}: the screen prices one "
                                                             "sequence per request; allowed: 1")
    table = generate_requests(config.spec(), np.random.default_rng(seed), base_dir)
    span = float(table.arrival_s.max() - table.arrival_s.min()) if len(table) > 1 else 0.0
    qps = (len(table) - 1) / span if span > 0 else float(config.arrival.qps or 1.0)
    return Workload(qps, float(np.mean(table.prompt_tokens)), float(np.mean(table.output_tokens)))
