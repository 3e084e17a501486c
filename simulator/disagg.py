"""Disaggregated prefill/decode (DistServe, Splitwise): build the two pools and run them in SimPy.

Life of a request (`cluster.disaggregation` set):
1. arrival → prefill router → a prefill replica (`PrefillReplica`, vllm or sarathi batching, prefill
   only). Its first token is emitted when its prompt is computed: TTFT ends there.
2. hand-off: at the prefill's end (or, with `kv_transfer.layerwise_overlap`, when its first layer is
   done) the decode router picks a decode replica; the request queues there until that replica's
   scheduler reserves its KV blocks (decode-side reservation, see `simulator.disagg_replicas`).
3. KV transfer: starts at reservation, its flows (`simulator.kv_transfer`) contend with every other
   transfer in flight on the links (`SimNetwork`, max-min fair fluid). The prefill replica keeps the
   request's blocks until the transfer completes.
4. decode: the request joins its decode replica's running batch at the first step boundary at or after
   its KV arrived; drafting/verification (speculative decoding) happen there.

Events: as in `simulator.engine`, one per prefill step, one per decode step or bulk of decode steps, plus
the network's. A decode bulk in flight is cut short (re-planned from its start, which reproduces the
same steps) when a KV arrival or a routed request must become visible at a step boundary inside it,
so step and bulk modes give identical results. Ties at exactly equal float times between a transfer's
completion and a step boundary are broken by event order (both modes see them the same way unless the
boundary also ends a bulk; with continuous-valued times this has probability zero).

Per-request extras (columns of `Result.requests`): decode_replica (global replica index), kv_start_s,
kv_ready_s, kv_transfer_s = ready − start, kv_wait_s = start − first token (waiting for a decode
reservation; negative with layer-wise overlap), kv_exposed_s = ready − first token (what the request
waits for its KV after its prefill), kv_bytes, decode_start_s. Summary extras: gpus, prefill/decode replicas and GPUs, KV transfer time
mean/p50/p99 and bytes, and GPU-weighted MFU/MBU. The step log's queued/running counts do not include
requests between the pools (in transfer or awaiting a reservation), so `little_L_steps` undercounts by
that time; `little_L_requests` (from the request records) is exact.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import simpy

from models import get_model
from models.spec import ModelSpec, validate_parallelism
from models.step import Parallelism
from profiles.hardware import HardwareSpec, get_hardware
from simulator.build import (Streams, _lookup, drafter_family, kv_capacity_tokens, make_acceptance,
                             make_engine_time, make_latency_model)
from simulator.bulk import apply_bulk, plan_bulk
from simulator.disagg_replicas import DecodeReplica, PrefillReplica
from simulator.engine import _UrgentTimeout
from simulator.errors import ScenarioError
from simulator.kv_transfer import KVMover, place_pools
from simulator.network import SimNetwork
from simulator.routers import make_router
from simulator.schema import PoolConfig, Scenario
from simulator.state import DROP_EXCEEDS_KV, RequestState, StepLog
from simulator.step_cost import ForwardCost, StepCostModel
from simulator.workload import generate_requests

GIB = 1024 ** 3
FIELD = "cluster.disaggregation"


@dataclass
class DisaggBuilt:
    scenario: Scenario
    hardware: HardwareSpec
    target: ModelSpec
    draft: ModelSpec | None
    prefill_par: Parallelism
    decode_par: Parallelism
    state: RequestState
    prefill: list[PrefillReplica]
    decode: list[DecodeReplica]
    prefill_router: object
    decode_router: object
    mover: KVMover
    log: StepLog
    kv_tokens_prefill: int
    kv_tokens_decode: int
    latency: object = None
    engine: object = None

    @property
    def gpus(self) -> int:
        return len(self.prefill) * self.prefill_par.gpus + len(self.decode) * self.decode_par.gpus


def _pool_parallelism(target: ModelSpec, pool: PoolConfig, name: str) -> Parallelism:
    p = pool.parallelism
    if p.ep != 1:
        raise ScenarioError(f"{FIELD}.{name}.parallelism.ep", "expert parallelism is not supported inside "
                            "disaggregated pools yet; use ep: 1 (TP/PP)")
    par = Parallelism(p.tp, p.pp)
    try:
        validate_parallelism(target, par)
    except ValueError as exc:
        raise ScenarioError(f"{FIELD}.{name}.parallelism", str(exc)) from None
    return par


def _pool_kv_tokens(name: str, hw, target, par, cl, draft, draft_par) -> int:
    try:
        return kv_capacity_tokens(hw, target, par, cl.dtype, cl.gpu_memory_utilization, draft, draft_par)
    except ScenarioError as exc:
        need = target.weight_bytes(cl.dtype) / par.gpus
        raise ScenarioError(f"{FIELD}.{name}.parallelism",
                            f"{target.name} needs {need / GIB:.1f} GiB of weights per GPU at tp={par.tp}, "
                            f"pp={par.pp} but {hw.id} offers {hw.hbm_bytes * cl.gpu_memory_utilization / GIB:.1f} "
                            f"GiB at gpu_memory_utilization={cl.gpu_memory_utilization}; raise tp/pp") from exc


def build_disaggregated(scenario: Scenario, base_dir: Path) -> DisaggBuilt:
    cl, dis = scenario.cluster, scenario.cluster.disaggregation
    if scenario.workload.arrival.process == "closed_loop":
        raise ScenarioError("workload.arrival.process", "closed_loop is not supported with "
                            "cluster.disaggregation yet; use poisson, gamma or trace arrivals")
    hw = _lookup("cluster.hardware", get_hardware, cl.hardware)
    target = _lookup("cluster.model", get_model, cl.model)
    ppar = _pool_parallelism(target, dis.prefill, "prefill")
    dpar = _pool_parallelism(target, dis.decode, "decode")
    draft = draft_par = None
    gamma = 0
    d = scenario.drafter
    if d.kind not in ("none", "draft_model") or getattr(d, "placement", "colocated") != "colocated":
        raise ScenarioError("drafter", "disaggregated pools support no drafter or a co-located draft_model "
                            f"(got kind {d.kind!r}{', placement ' + repr(d.placement) if d.kind == 'draft_model' else ''})")
    if scenario.speculation.kind != "chain" or scenario.policy.kind != "fixed":
        raise ScenarioError("speculation" if scenario.speculation.kind != "chain" else "policy",
                            "disaggregated pools support chain speculation with a fixed γ only")
    if d.kind == "draft_model" and d.gamma > 0:
        draft = _lookup("drafter.model", get_model, d.model)
        draft_par = Parallelism(d.tp, 1)
        if d.tp > min(ppar.gpus, dpar.gpus):
            raise ScenarioError("drafter.tp", f"{d.tp} exceeds the {min(ppar.gpus, dpar.gpus)} GPUs of a pool replica")
        try:
            validate_parallelism(draft, draft_par)
        except ValueError as exc:
            raise ScenarioError("drafter.tp", str(exc)) from None
        gamma = d.gamma
    kv_p = _pool_kv_tokens("prefill", hw, target, ppar, cl, draft, draft_par)
    kv_d = _pool_kv_tokens("decode", hw, target, dpar, cl, draft, draft_par)
    block = scenario.scheduler.block_size
    if kv_p // block < 1 or kv_d // block < 1:
        raise ScenarioError(f"{FIELD}.{'prefill' if kv_p // block < 1 else 'decode'}.parallelism",
                            f"no room for a single KV block of {block} tokens on {hw.id}")

    streams = Streams.from_seed(scenario.seed)
    decode_rng = np.random.default_rng(np.random.SeedSequence(scenario.seed).spawn(4)[3])
    table = generate_requests(scenario.workload, streams.workload, base_dir)
    state = RequestState(table)
    latency = make_latency_model(cl.latency, cl.hardware, cl.dtype, base_dir)
    engine = make_engine_time(cl.latency, cl.hardware, latency, drafter_family(d) if gamma else None)
    draft_cost = lambda: ForwardCost(draft, draft_par, latency, cl.dtype) if draft is not None else None  # noqa: E731
    acceptance = make_acceptance(scenario, gamma, streams.acceptance_seed, base_dir) if draft is not None else None
    log = StepLog()
    prefill_cost = StepCostModel(ForwardCost(target, ppar, latency, cl.dtype), draft_cost(), gamma, engine=engine)
    decode_cost = StepCostModel(ForwardCost(target, dpar, latency, cl.dtype), draft_cost(), gamma, engine=engine)
    np_, nd = dis.prefill.replicas, dis.decode.replicas
    prefill = [PrefillReplica(i, state, scenario.scheduler, prefill_cost, None, kv_p // block, log)
               for i in range(np_)]
    decode = [DecodeReplica(np_ + i, state, scenario.scheduler, decode_cost, acceptance, kv_d // block, log)
              for i in range(nd)]
    try:
        prouter = make_router(dis.prefill.router, np_, streams.router)
    except ValueError as exc:
        raise ScenarioError(f"{FIELD}.prefill.router", str(exc)) from None
    try:
        drouter = make_router(dis.decode.router, nd, decode_rng)
    except ValueError as exc:
        raise ScenarioError(f"{FIELD}.decode.router", str(exc)) from None
    placement = place_pools(hw, np_, ppar, nd, dpar, dis.kv_transfer.link)
    mover = KVMover(placement, target, ppar, dpar, cl.dtype, draft, d.tp if draft is not None else 1)
    return DisaggBuilt(scenario, hw, target, draft, ppar, dpar, state, prefill, decode, prouter, drouter, mover,
                       log, kv_p, kv_d, latency, engine)


class DisaggEngine:
    def __init__(self, built: DisaggBuilt, step_mode: str = "bulk", progress=None):
        self.b = built
        self.env = simpy.Environment()
        self.state = built.state
        self.bulk = step_mode == "bulk"
        self.progress = progress
        self.network = SimNetwork(self.env, built.mover.placement.topology)
        self.overlap = built.scenario.cluster.disaggregation.kv_transfer.layerwise_overlap
        n = self.state.n
        self.decode_replica = np.full(n, -1, dtype=np.int64)
        self.kv_start_s = np.full(n, np.nan)
        self.kv_ready_s = np.full(n, np.nan)
        self.kv_bytes = np.zeros(n)
        self.prefill_end_s = np.full(n, np.nan)
        self._wake: dict[int, simpy.Event] = {}
        self._interrupt: dict[int, simpy.Event] = {}
        self.next_arrival_s = math.inf
        self.finished = 0
        self.transfers: list[tuple[int, int, int, float, float]] = []   # (request, src, dst, start, ready)

    def run(self) -> float:
        env = self.env
        env.process(self._arrivals())
        for rep in self.b.prefill:
            env.process(self._prefill_loop(rep))
        for rep in self.b.decode:
            env.process(self._decode_loop(rep))
        env.run()
        return max([env.now] + [rep.clock_s for rep in self.b.prefill + self.b.decode])

    # ---- plumbing -----------------------------------------------------------------------------------
    def _poke(self, rep) -> None:
        """Make `rep` look at its queues: wake it when idle, cut its bulk in flight short."""
        for events in (self._wake, self._interrupt):
            ev = events.get(rep.index)
            if ev is not None and not ev.triggered:
                ev.succeed()

    def _idle(self, rep):
        self._wake[rep.index] = ev = self.env.event()
        yield ev
        del self._wake[rep.index]
        rep.clock_s = self.env.now

    def _count(self, finished: list[int]) -> None:
        if finished:
            self.finished += len(finished)
            if self.progress is not None:
                self.progress(len(finished))
            finished.clear()

    # ---- arrivals and the prefill pool --------------------------------------------------------------
    def _arrivals(self):
        s, env = self.state, self.env
        first_p, first_d = self.b.prefill[0], self.b.decode[0]
        for r in range(s.n):
            self.next_arrival_s = float(s.arrival_s[r])
            yield _UrgentTimeout(env, float(s.arrival_s[r]) - env.now)
            if first_p.blocks_for(int(s.prompt[r])) > first_p.total_blocks or (
                    s.output[r] > 1 and first_d.blocks_for(first_d.reservation_tokens(r)) > first_d.total_blocks):
                s.dropped[r], s.drop_reason[r] = True, DROP_EXCEEDS_KV
                self._count([r])
                continue
            reps = self.b.prefill
            idx = self.b.prefill_router.choose([p.outstanding_at(env.now) for p in reps], [len(p.waiting) for p in reps])
            s.replica[r] = idx
            reps[idx].waiting.append(r)
            self._poke(reps[idx])

    def _prefill_loop(self, rep: PrefillReplica):
        env, finished = self.env, []
        layers = self.b.target.num_layers
        while True:
            if not rep.has_work():
                yield from self._idle(rep)
                continue
            start_s = rep.clock_s
            step = rep.plan_step(start_s)
            if step.empty:
                continue
            costs = rep.step_costs(step)
            end_s = start_s + costs[0].seconds + costs[1].seconds
            for r in rep.completing(step):
                self.prefill_end_s[r] = end_s
                if self.overlap:
                    env.process(self._hand_off_at(r, start_s + (end_s - start_s) / layers))
            yield env.timeout(end_s - env.now)
            rep.clock_s = end_s
            rep.apply_step(step, start_s, end_s, costs, finished)
            if not self.overlap:
                for r in rep.handoff:
                    self._hand_off(r)
            self._count(finished)

    def _hand_off_at(self, r: int, at_s: float):
        yield self.env.timeout(at_s - self.env.now)
        self._hand_off(r)

    def _hand_off(self, r: int) -> None:
        reps, now = self.b.decode, self.env.now
        idx = self.b.decode_router.choose([d.outstanding_at(now) for d in reps],
                                          [len(d.waiting) + len(d.routed) for d in reps])
        self.decode_replica[r] = reps[idx].index
        reps[idx].routed.append((now, r))
        self._poke(reps[idx])

    # ---- KV transfer ---------------------------------------------------------------------------------
    def _transfer(self, r: int, dec: DecodeReplica):
        env, s, mover = self.env, self.state, self.b.mover
        src, dst = int(s.replica[r]), dec.index - len(self.b.prefill)
        flows = mover.request_flows(int(s.prompt[r]), src, dst)
        self.kv_start_s[r] = env.now
        self.kv_bytes[r] = sum(f.bytes for f in flows)
        if flows:
            yield self.network.transfer_all(flows)
        if self.overlap:
            ready = self.prefill_end_s[r] + mover.overlap_tail_s(int(s.prompt[r]), src, dst)
            if ready > env.now:
                yield env.timeout(ready - env.now)
        self.kv_ready_s[r] = env.now
        self.transfers.append((r, src, dec.index, float(self.kv_start_s[r]), env.now))
        prefill = self.b.prefill[src]
        prefill.release(r)
        self._poke(prefill)
        dec.kv_arrived(r, env.now)
        self._poke(dec)

    def _collect(self, dec: DecodeReplica) -> None:
        for r in dec.collect(dec.clock_s):
            self.env.process(self._transfer(r, dec))

    # ---- the decode pool ----------------------------------------------------------------------------
    def _decode_loop(self, rep: DecodeReplica):
        env, finished = self.env, []
        while True:
            self._collect(rep)
            if not rep.running:
                nxt = rep.next_event_s()
                if nxt <= env.now:      # catching up after a cut bulk: the next visible event is past
                    rep.clock_s = max(rep.clock_s, nxt)
                else:
                    yield from self._idle(rep)
                continue
            start_s = rep.clock_s
            plan = plan_bulk(rep, start_s, rep.next_event_s(), stop_at_arrival=True) if self.bulk else None
            if plan is not None:
                end_s = float(plan.ends_s[-1])
                if end_s > env.now:
                    rep.pending_finish_s = np.sort(plan.ends_s[plan.finish_step[plan.finish_step < plan.steps]])
                    self._interrupt[rep.index] = cut = env.event()
                    yield env.any_of([env.timeout(end_s - env.now), cut])
                    del self._interrupt[rep.index]
                    rep.pending_finish_s = rep.pending_finish_s[:0]
                    if env.now < end_s:
                        continue   # something became visible inside the bulk: re-plan from its start
                rep.clock_s = end_s
                apply_bulk(rep, plan, finished)
            else:
                step = rep.plan_step(start_s)
                costs = rep.step_costs(step)
                end_s = start_s + costs[0].seconds + costs[1].seconds
                if end_s > env.now:
                    yield env.timeout(end_s - env.now)
                rep.clock_s = end_s
                rep.apply_step(step, start_s, end_s, costs, finished)
            self._count(finished)


# ---- results ----------------------------------------------------------------------------------------
def request_extras(engine: DisaggEngine, built: DisaggBuilt) -> dict[str, np.ndarray]:
    """Per-request columns a disaggregated run adds to the request records (module docstring)."""
    s = built.state
    decode_start = np.full(s.n, np.nan)
    for rep in built.decode:
        for r, t in rep.decode_start_s.items():
            decode_start[r] = t
    return {"decode_replica": engine.decode_replica, "kv_start_s": engine.kv_start_s,
            "kv_ready_s": engine.kv_ready_s, "kv_transfer_s": engine.kv_ready_s - engine.kv_start_s,
            "kv_wait_s": engine.kv_start_s - s.first_token_s, "kv_exposed_s": engine.kv_ready_s - s.first_token_s,
            "kv_bytes": engine.kv_bytes,
            "decode_start_s": decode_start}


def summary_extras(summary: dict, requests, steps, built: DisaggBuilt) -> dict:
    """GPU-dependent summary fields recomputed for two pools of different replica sizes, and the KV
    transfer statistics. `summary` came from `metrics.summarize` called with gpus_per_replica = 1."""
    hw, dtype = built.hardware, built.scenario.cluster.dtype
    gpus = built.gpus
    np_ = len(built.prefill)
    gpr = np.array([built.prefill_par.gpus] * np_ + [built.decode_par.gpus] * len(built.decode), dtype=float)
    window = summary["window_s"]
    start, dur = steps["start_s"].to_numpy(float), steps["duration_s"].to_numpy(float)
    busy = np.clip(np.minimum(start + dur, summary["window_end_s"]) - np.maximum(start, summary["window_start_s"]),
                   0.0, None)
    busy_gpu_s = float((busy * gpr[steps["replica"].to_numpy(np.int64)]).sum())
    flops, moved = float(steps["flops"].sum()), float(steps["bytes"].sum())
    peak_f, peak_b = hw.peak_flops[dtype], hw.hbm_bandwidth_bytes_per_s
    ratio = lambda a, b: a / b if b > 0 else math.nan  # noqa: E731
    kv = requests["kv_transfer_s"].to_numpy(float)
    kv = kv[np.isfinite(kv)]
    return {
        "gpus": gpus, "gpus_per_replica": 0,   # 0: pools differ, see prefill_/decode_gpus_per_replica
        "prefill_replicas": np_, "decode_replicas": len(built.decode),
        "prefill_gpus_per_replica": built.prefill_par.gpus, "decode_gpus_per_replica": built.decode_par.gpus,
        "goodput_per_gpu_rps": summary["goodput_rps"] / gpus,
        "mfu": ratio(flops, window * peak_f * gpus), "mbu": ratio(moved, window * peak_b * gpus),
        "mfu_busy": ratio(flops, busy_gpu_s * peak_f), "mbu_busy": ratio(moved, busy_gpu_s * peak_b),
        "kv_transfers": int(len(kv)),
        "kv_transfer_mean_s": float(kv.mean()) if len(kv) else math.nan,
        "kv_transfer_p50_s": float(np.percentile(kv, 50)) if len(kv) else math.nan,
        "kv_transfer_p99_s": float(np.percentile(kv, 99)) if len(kv) else math.nan,
        "kv_bytes_total": float(requests["kv_bytes"].sum()),
        "kv_tokens_per_replica_prefill": built.kv_tokens_prefill,
        "kv_tokens_per_replica_decode": built.kv_tokens_decode,
        "kv_tokens_per_replica": built.kv_tokens_decode,
    }
