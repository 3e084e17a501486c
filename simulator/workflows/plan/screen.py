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
- E2E ≈ TTFT + (L - 1) TPOT: the mean request's first token, then its L - 1 others at the mean TPOT (a
  plan's `slo.e2e_s` is screened with it, as TTFT and TPOT are with theirs).

Closed loop (`arrival: {process: closed_loop, concurrency: N}`: N clients, each sending its next request
when its previous one finishes) has no arrival rate of its own: the rate λ is the root of Little's law
over the whole deployment, λ · E2E(λ) = N, with E2E(λ) the open-loop screen's at rate λ (bisection; λ · E2E
grows with λ). Where the open-loop screen runs out of batch (B_max) first, the deployment saturates at the
largest rate it sustains and the N − λ E2E(λ) requests over it wait for admission, (N − λ E2E) / λ each
(Little's law on the queue), added to TTFT and E2E. Named approximation: the waits are the open-loop
screen's, for arrivals spread in time; clients of equal lengths synchronise (their requests finish in the
same step and come back together), so their prefills queue in bursts: fixed 512/200-token requests on 1
prefill + 1 decode replica at 16 clients, TTFT 0.18 s in the DES against 0.014 s screened (throughput 13 %
and E2E 10 % apart).

Approximations (what the DES confirmation measures): means only (no percentiles; the screen compares
means with the SLO thresholds, which the percentile SLO then tightens); arrivals are treated as Poisson
whatever the process; prefills are not batched together; every request is assumed to decode at the
mean context; preemption is ignored; every prompt is priced as the mean one (M/D/1). That last one
shows: llama8b_chat's (lognormal prompts, σ 0.7) 1-prefill-replica candidates screen TTFT 29-40 % below
the DES; an M/G/1 wait over the prompts' own prefill times (Pollaczek-Khinchine, tried 2026-11-28) brings
those to -4..+24 %, but its ρ = λ E[t_p] (above t_p of the mean prompt) moves the colocated TPOTs from
-9..+8 % to 0..+40 % of the DES, so the mean prompt stays. The screen-vs-DES error of the confirmed
candidates is reported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from simulator.errors import ScenarioError
from simulator.workflows.plan.config import Candidate

BISECTION_STEPS = 60


@dataclass(frozen=True)
class Workload:
    qps: float
    mean_prompt_tokens: float
    mean_output_tokens: float
    concurrency: int | None = None   # closed loop: the clients, and qps is found by the screen (module doc)


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
    e2e_s: float = math.nan     # mean end-to-end latency: ttft_s + (mean output - 1) tpot_s


CHAIN_ACCEPTANCE = ("constant", "positional")
_KINDS: dict = {}    # candidate shape -> (its scenario, its ReplicaKind)
_STARTS: dict = {}   # (candidate shape, pool named) -> the run's start-up refusal of it, or None


def replica_kind(c: Candidate, spec):
    """The candidate's ReplicaKind, from the one replica factory (simulator.cluster.factory) on the candidate's
    own scenario: any drafter/speculation shape the DES supports (trees, multi-draft, ranked or pair
    acceptance, expert parallelism under the plan's `moe` options) is priced exactly as the DES prices it.
    Raises ScenarioError if the replica cannot exist, or if the confirming run would refuse to start it
    (simulator.cluster.build.check_pool_starts: vLLM's KV cache must hold one request of max_model_len; the
    screen ranked DeepSeek-V3 on vLLM 0.7.3, 163840 tokens, feasible where its run refused it). Memoized per
    candidate shape, the refusal too. A disaggregated candidate's pools are this replica (the same hardware,
    parallelism and scheduler), so the check is theirs, named for the prefill pool, which the run checks first."""
    import json
    from pathlib import Path

    from simulator.cluster.build import DISAGG, Streams, check_pool_starts, pool_kind
    from simulator.config.scenario import parse_scenario

    data = Colocated().scenario(c, spec, 0)
    data["cluster"]["replicas"] = 1
    key = json.dumps(data, sort_keys=True, default=str)
    if key not in _KINDS:
        data["workload"] = {"arrival": {"process": "poisson", "qps": 1.0},
                            "prompt_tokens": {"kind": "fixed", "value": 16},
                            "output_tokens": {"kind": "fixed", "value": 4}, "num_requests": 1}
        scenario = parse_scenario(data)
        _KINDS[key] = scenario, pool_kind(scenario, None, "cluster", Streams.from_seed(0).acceptance_seed, Path.cwd())
    scenario, kind = _KINDS[key]
    where = f"{DISAGG}.prefill" if c.deployment == Disaggregated.name else "cluster"
    if (key, where) not in _STARTS:
        try:
            check_pool_starts(scenario, kind, where)
        except ScenarioError as exc:
            _STARTS[key, where] = exc
        else:
            _STARTS[key, where] = None
    refusal = _STARTS[key, where]
    if refusal is not None:
        raise refusal.with_traceback(None)
    return kind


def requests_that_fit(kind, context_tokens: float) -> float:
    """How many requests of `context_tokens` tokens a replica's KV cache holds: its KV tokens over the context,
    or for a sliding-window layout (vLLM's hybrid manager, simulator.core.kv.sliding_window) its blocks over
    the blocks one decoding request holds (full-attention groups at the whole context, window groups at the
    window)."""
    layout = kind.window_layout
    if layout is None:
        return kind.kv_tokens / context_tokens
    return layout.total_blocks / float(layout.peak(max(1, math.ceil(context_tokens)), 1))


def _candidate_costs(c: Candidate, spec):
    """(StepCostModel, replica kind, tokens per step, running-request limit) of a candidate's replica."""
    kind = replica_kind(c, spec)
    acceptance = candidate_acceptance(c, spec)
    if c.speculation or acceptance.get("kind") not in CHAIN_ACCEPTANCE:
        tokens = 1.0 + kind.acceptance.expected_accepted() if kind.acceptance is not None else 1.0
    else:
        tokens = tokens_per_step(acceptance, c.gamma)
    return kind.cost, kind, tokens, kind.max_batch_size


def candidate_acceptance(c: Candidate, spec) -> dict:
    """The acceptance section of a candidate: its drafter's own, else the plan's."""
    import json
    return json.loads(c.acceptance) if c.acceptance else dict(spec.acceptance)


@dataclass(frozen=True)
class ReplicaModel:
    """What the screens need of a candidate's replica kind whatever the load: step cost, tokens per step,
    prefill seconds of a mean prompt, largest batch, decode steps per request, decode step seconds as a
    function of the batch (its prices cached: a closed loop's search asks for the same batches often)."""

    cost: object
    tokens: float
    t_prefill: float
    b_max: float
    steps: float
    step_s: object


def replica_model(c: Candidate, spec, work: Workload) -> ReplicaModel | ScreenEstimate:
    """The candidate's ReplicaModel for the workload's mean lengths, or why it cannot run (a ScreenEstimate)."""
    try:
        cost, kind, tokens, max_seqs = _candidate_costs(c, spec)
    except ScenarioError as exc:
        return ScreenEstimate(False, str(exc).splitlines()[0])
    prompt, output = work.mean_prompt_tokens, work.mean_output_tokens
    p_int = max(1, round(prompt))
    prefill = cost.step(p_int, 1, p_int * (p_int + 1) // 2, 0, 0)
    context = prompt + output / 2.0
    b_max = min(float(max_seqs), requests_that_fit(kind, context))
    steps = max(output - 1.0, 0.0) / tokens
    return ReplicaModel(cost, tokens, prefill.seconds, b_max, steps,
                        _interpolated_step_s(cost, context))


def _pool_model(c: Candidate, spec, work: Workload, prefill_replicas: int, overloaded: str,
                model: ReplicaModel | ScreenEstimate | None):
    """What both deployments' screens need at the workload's rate: (step cost, tokens per step, prefill
    seconds of a mean prompt, prefill share ρ of the replicas that prefill, largest batch, decode steps per
    request, decode step seconds as a function of the batch), or an infeasible ScreenEstimate (`overloaded`
    formats ρ ≥ 1). `model`: the candidate's replica_model, if already built."""
    model = replica_model(c, spec, work) if model is None else model
    if isinstance(model, ScreenEstimate):
        return model
    rho = work.qps / prefill_replicas * model.t_prefill
    if rho >= 1.0:
        return ScreenEstimate(False, overloaded.format(rho=rho), prefill_share=rho)
    if model.b_max < 1.0:
        return ScreenEstimate(False, "KV cache holds less than one mean request")
    return model.cost, model.tokens, model.t_prefill, rho, model.b_max, model.steps, model.step_s


def _e2e_s(ttft_s: float, tpot_s: float, mean_output_tokens: float) -> float:
    """Mean end-to-end latency: the first token, then the mean request's other tokens at the mean TPOT."""
    return ttft_s + (mean_output_tokens - 1.0) * tpot_s if mean_output_tokens > 1.0 else ttft_s


def _tpot_s(seconds: float, mean_output_tokens: float) -> float:
    """`seconds` per output token after the first, or NaN where every request emits one token: it has no
    TPOT (simulator.results.metrics: NaN, an SLO it cannot miss), so no TPOT SLO applies. (The screen
    estimated one, and a plan of 1-token outputs with tpot_s 2 ms found no candidate: 'estimated at 3.5 ms'.)"""
    return seconds if mean_output_tokens > 1.0 else math.nan


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
                "slo": spec.slo.model_dump(), "outputs": {"plots": False},
                # the plan's price of the GPU (its hardware entry's usd_per_gpu_hour, else the catalog's), so the
                # confirming run's summary prices $/Mtok as ranked.csv does
                "energy": {"usd_per_gpu_hour": float(c.usd_per_gpu_hour)}}

    def screen(self, c: Candidate, spec, work: Workload, model=None) -> ScreenEstimate:
        pool = _pool_model(c, spec, work, c.replicas, "prefill alone needs {rho:.2f} of a replica", model)
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
        tpot = _tpot_s(t_step / ((1.0 - rho) * tokens), output)
        ttft = t_prefill + rho * t_prefill / (2.0 * (1.0 - rho)) + min(1.0, batch) * t_step / 2.0
        return ScreenEstimate(True, "", batch, rho, ttft, tpot, work.qps * output, tokens, _e2e_s(ttft, tpot, output))


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

    def screen(self, c: Candidate, spec, work: Workload, model=None) -> ScreenEstimate:
        from models import get_model
        from models.step import Parallelism
        from profiles.hardware import get_hardware

        if c.prefill_replicas < 1 or c.decode_replicas < 1:
            return ScreenEstimate(False, "a disaggregated deployment needs >= 1 prefill and >= 1 decode replica")
        pool = _pool_model(c, spec, work, c.prefill_replicas, "prefill needs {rho:.2f} of each prefill replica",
                           model)
        if isinstance(pool, ScreenEstimate):
            return pool
        cost, tokens, t_prefill, rho, b_max, steps, step_s = pool
        prompt, output = work.mean_prompt_tokens, work.mean_output_tokens
        hw, target = get_hardware(c.hardware), get_model(c.model)
        # (the KV dtype its replica runs: the plan's kv_dtype, else the release's default for the checkpoint)
        kv_bytes = prompt * target.kv_bytes_per_token_per_gpu(Parallelism(c.tp, c.pp), replica_kind(c, spec).kv_dtype)
        t_kv = kv_bytes / hw.scaleup_bandwidth_bytes_per_s + hw.scaleup_latency_s
        lam_d = work.qps / c.decode_replicas
        batch = _little_batch(lambda b: lam_d * steps * step_s(b) - b, b_max)
        if batch is None:
            return ScreenEstimate(False, f"decode cannot keep up within a batch of {b_max:.0f}", prefill_share=rho)
        t_step = step_s(batch)
        tpot = _tpot_s(t_step / tokens + t_kv / max(output - 1.0, 1.0), output)
        ttft = t_prefill + rho * t_prefill / (2.0 * (1.0 - rho))
        return ScreenEstimate(True, "", batch, rho, ttft, tpot, work.qps * output, tokens, _e2e_s(ttft, tpot, output))


DEPLOYMENTS = {"colocated": Colocated(), "disaggregated": Disaggregated()}


CLOSED_LOOP_RTOL = 1e-4   # the closed loop's rate to 0.01 % (14 bisection steps: a screen, not a DES)


def screen(c: Candidate, spec, work: Workload) -> ScreenEstimate:
    deployment = DEPLOYMENTS[c.deployment]
    if work.concurrency is None:
        return deployment.screen(c, spec, work)
    return _closed_loop(deployment, c, spec, work)


def _closed_loop(deployment, c: Candidate, spec, work: Workload) -> ScreenEstimate:
    """The open-loop screen at the rate λ solving λ · E2E(λ) = N (module docstring), plus the admission
    wait of the requests a saturated deployment cannot hold."""
    clients = float(work.concurrency)
    model = replica_model(c, spec, work)   # (once: only the rate changes below)

    def at(rate: float) -> ScreenEstimate:
        return deployment.screen(c, spec, replace(work, qps=rate, concurrency=None), model)

    lo_rate = clients * 1e-9   # one request now and then: the unloaded latencies
    best = at(lo_rate)
    if not best.feasible:   # memory, KV capacity, a replica that cannot exist: at any load
        return best
    lo, hi = lo_rate, clients / best.e2e_s   # no request ends sooner than the unloaded E2E: λ <= N / E2E(0)
    while hi - lo > CLOSED_LOOP_RTOL * hi:
        mid = 0.5 * (lo + hi)
        est = at(mid)
        if est.feasible and mid * est.e2e_s < clients:
            lo, best = mid, est
        else:
            hi = mid
    queued = max(clients - lo * best.e2e_s, 0.0)
    wait = queued / lo if queued > 1e-6 * clients else 0.0   # saturated: the rest wait for admission
    return replace(best, ttft_s=best.ttft_s + wait, e2e_s=best.e2e_s + wait)


def workload_means(spec, base_dir, seed: int) -> Workload:
    """QPS and mean lengths of the plan's workload: the requests the DES confirmations run (generated once)."""
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
    from simulator.cluster.build import Streams
    from simulator.config.serving import SchedulerConfig
    block_size = SchedulerConfig.model_validate(spec.scheduler).block_size
    # the requests every DES confirmation runs (its scenario's seed, workload stream; before, the screen drew
    # its own sample from default_rng(seed): other lengths than the runs it screens for)
    table = generate_requests(config.spec(), Streams.from_seed(seed).workload, base_dir, block_size=block_size)
    means = float(np.mean(table.prompt_tokens)), float(np.mean(table.output_tokens))
    if config.arrival.process == "closed_loop":
        # (no arrival times before the run: the screen took 1 request/s, whatever the concurrency, and found
        # every candidate feasible with TTFT and TPOT 50-85 % below the DES's at 64 clients)
        return Workload(math.nan, *means, concurrency=config.arrival.concurrency)
    span = float(table.arrival_s.max() - table.arrival_s.min()) if len(table) > 1 else 0.0
    if len(table) > 1 and span <= 0.0:
        # (an offline batch: the screen took 1 request/s, and its TTFTs were 99 % below the DES's)
        raise ScenarioError("plan.workload.arrival", f"all {len(table)} requests arrive at the same instant (an "
                                                     "offline batch); the screen prices a steady arrival rate: "
                                                     "give arrival times spread over time, or process closed_loop "
                                                     "with a concurrency")
    qps = (len(table) - 1) / span if span > 0 else float(config.arrival.qps or 1.0)
    return Workload(qps, *means)
