"""Disaggregated prefill/decode (DistServe, Splitwise): the KV hand-off between the prefill pool and the
decode pool of one engine (simulator.core.engine; the pools are built by simulator.cluster.build).

Life of a request (`cluster.disaggregation` set):
1. arrival → prefill router → a prefill replica (`PrefillReplica`, vllm or sarathi batching, prefill
   only). Its first token is emitted when its prompt is computed: TTFT ends there.
2. hand-off: at the prefill's end (or, with `kv_transfer.layerwise_overlap`, when its first layer is
   done) the decode router picks a decode replica; the request queues there until that replica's
   scheduler reserves its KV blocks (decode-side reservation, see `simulator.cluster.pool_replicas`).
3. KV transfer: starts at reservation, its flows (`simulator.cluster.kv_transfer`) contend with every other
   transfer in flight on the links (`SimNetwork`, max-min fair fluid). The prefill replica keeps the
   request's blocks until the transfer completes.
4. decode: the request joins its decode replica's running batch at the first step boundary at or after
   its KV arrived; drafting/verification (speculative decoding) happen there.

Pools may differ in hardware, parallelism (TP/PP/EP) and so in step cost and KV capacity; every
drafter, speculation shape and control policy runs in the decode pool (the prefill pool prefills the
target and the drafter). Events: as in `simulator.core.engine`, plus the network's. Ties at exactly equal
float times between a transfer's completion and a step boundary are broken by event order (both modes see
them the same way unless the boundary also ends a bulk; with continuous-valued times this has probability
zero).

Per-request extras (columns of `Result.requests`): decode_replica (global replica index), kv_start_s,
kv_ready_s, kv_transfer_s = ready − start, kv_wait_s = start − first token (waiting for a decode
reservation; negative with layer-wise overlap), kv_exposed_s = ready − first token (what the request
waits for its KV after its prefill), kv_bytes, decode_start_s. Summary extras (simulator.results.summary):
gpus, prefill/decode replicas and GPUs, KV transfer time
mean/p50/p99 and bytes, and GPU-weighted MFU/MBU. The step log's queued/running counts do not include
requests between the pools (in transfer or awaiting a reservation), so `little_L_steps` undercounts by
that time; `little_L_requests` (from the request records) is exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.spec import validate_parallelism
from models.step import Parallelism
from simulator.errors import ScenarioError
from simulator.cluster.kv_transfer import KVMover, place_pools
from simulator.cluster.network import SimNetwork
from simulator.core.timeline import PoolSide

DISAGG = "cluster.disaggregation"


@dataclass
class KVHandOff:
    """Hands requests from the prefill pool to the decode pool: decode routing, decode-side reservation
    and the KV transfer on the network (module docstring). Called by `simulator.core.engine.Engine`."""

    prefill: list
    decode: list
    router: object
    mover: KVMover
    overlap: bool
    layers: int
    network: SimNetwork | None = None

    @staticmethod
    def build(pools, kv, drafter) -> "KVHandOff":
        """The hand-off between `pools` (prefill, decode) under `kv_transfer` settings `kv` and the
        scenario's `drafter` section."""
        prefill, decode = pools
        try:
            placement = place_pools(prefill.kind.hardware, len(prefill.replicas), prefill.kind.parallelism,
                                    len(decode.replicas), decode.kind.parallelism, kv.link, decode.kind.hardware)
        except ValueError as exc:
            raise ScenarioError("cluster.disaggregation.kv_transfer.link", str(exc)) from None
        built = decode.kind.drafter   # a drafter with its own KV (draft model, EAGLE head) ships it too
        draft = built.spec if built is not None and built.kv_bytes_per_token_per_gpu > 0 else None
        if drafter.kind == "draft_model":   # its own TP in both pools
            draft_tp = (drafter.tp, drafter.tp)
        else:                               # heads are sharded like the target of each pool
            draft_tp = (prefill.kind.parallelism.tp, decode.kind.parallelism.tp)
        if draft is not None:   # the drafter's KV must split over the GPUs it is shipped from and to
            for tp, pool in zip(draft_tp, (prefill, decode)):
                shards = min(tp, pool.kind.parallelism.tp * pool.kind.parallelism.pp)   # (KVMover.request_flows)
                try:
                    validate_parallelism(draft, Parallelism(shards, 1))
                except ValueError as exc:
                    field = "drafter.tp" if drafter.kind == "draft_model" else f"{DISAGG}.{pool.name}.parallelism.tp"
                    raise ScenarioError(field, f"the drafter's KV is handed off split like the target's: {exc}") from None
        mover = KVMover(placement, decode.kind.target, prefill.kind.parallelism, decode.kind.parallelism,
                        decode.kind.kv_dtype, draft, *draft_tp)
        return KVHandOff(prefill.replicas, decode.replicas, decode.router, mover, kv.layerwise_overlap,
                         decode.kind.target.num_layers)

    def side(self, pool: str, engine) -> PoolSide:
        """What the hand-off adds to the step loop of the replicas of `pool` (prefill or decode)."""
        return (_PrefillSide if pool == "prefill" else _DecodeSide)(self, engine)

    def start(self, engine) -> None:
        self.network = SimNetwork(engine.env, self.mover.placement.topology)
        n = engine.state.n
        self.decode_replica = np.full(n, -1, dtype=np.int64)
        self.kv_start_s = np.full(n, np.nan)
        self.kv_ready_s = np.full(n, np.nan)
        self.kv_bytes = np.zeros(n)
        self.prefill_end_s = np.full(n, np.nan)

    # ---- the prefill side -----------------------------------------------------------------------------
    def prefill_step(self, engine, rep, step, start_s: float, end_s: float) -> None:
        """A prefill step was formed: note when its completing prompts end (and, with layer-wise
        overlap, hand them off once their first layer is done)."""
        for r in rep.completing(step):
            self.prefill_end_s[r] = end_s
            if self.overlap:
                engine.env.process(self._hand_off_at(engine, r, start_s + (end_s - start_s) / self.layers))

    def prefill_done(self, engine, rep) -> None:
        if not self.overlap:
            for r in rep.handoff:
                self._hand_off(engine, r)

    def _hand_off_at(self, engine, r: int, at_s: float):
        yield engine.env.timeout(at_s - engine.env.now)
        self._hand_off(engine, r)

    def _hand_off(self, engine, r: int) -> None:
        reps, now = self.decode, engine.env.now
        idx = self.router.choose([d.outstanding_at(now) for d in reps], [len(d.waiting) + len(d.routed) for d in reps])
        self.decode_replica[r] = reps[idx].index
        reps[idx].routed.append((now, r))
        engine.poke(reps[idx])

    # ---- the decode side and the KV transfer ---------------------------------------------------------
    def collect(self, engine, dec) -> None:
        """At a decode replica's step boundary: start the transfers of the requests it reserved now."""
        for r in dec.collect(dec.clock_s):
            engine.env.process(self._transfer(engine, r, dec))

    def _transfer(self, engine, r: int, dec):
        env, s, mover = engine.env, engine.state, self.mover
        src, dst = int(s.replica[r]), dec.index - len(self.prefill)
        flows = mover.request_flows(int(s.prompt[r]), src, dst, r)
        self.kv_start_s[r] = env.now
        self.kv_bytes[r] = sum(f.bytes for f in flows)
        if flows:
            yield self.network.transfer_all(flows)
        if self.overlap:
            ready = self.prefill_end_s[r] + mover.overlap_tail_s(int(s.prompt[r]), src, dst, r)
            if ready > env.now:
                yield env.timeout(ready - env.now)
        self.kv_ready_s[r] = env.now
        prefill = self.prefill[src]
        prefill.release(r)
        engine.poke(prefill)
        dec.kv_arrived(r, env.now)
        engine.poke(dec)

    # ---- results --------------------------------------------------------------------------------------
    def request_columns(self, state) -> dict[str, np.ndarray]:
        """Per-request columns a disaggregated run adds to the request records (module docstring)."""
        decode_start = np.full(state.n, np.nan)
        for rep in self.decode:
            for r, t in rep.decode_start_s.items():
                decode_start[r] = t
        return {"decode_replica": self.decode_replica, "kv_start_s": self.kv_start_s,
                "kv_ready_s": self.kv_ready_s, "kv_transfer_s": self.kv_ready_s - self.kv_start_s,
                "kv_wait_s": self.kv_start_s - state.first_token_s,
                "kv_exposed_s": self.kv_ready_s - state.first_token_s,
                "kv_bytes": self.kv_bytes, "decode_start_s": decode_start}


class _PrefillSide(PoolSide):
    """A prefill replica's loop: completed prompts are handed off (at their step's end, or once their first
    layer is done with layer-wise overlap)."""

    def __init__(self, handoff: KVHandOff, engine):
        self.handoff, self.engine = handoff, engine

    def stepped(self, rep, step, start_s: float, end_s: float) -> None:
        self.handoff.prefill_step(self.engine, rep, step, start_s, end_s)

    def applied(self, rep) -> None:
        self.handoff.prefill_done(self.engine, rep)


class _DecodeSide(PoolSide):
    """A decode replica's loop: at each step boundary it takes what was handed off and whose KV arrived
    by then and reserves blocks for waiting requests (their transfers start); its bulks end at the next
    such event already known."""

    stop_at_arrival = True

    def __init__(self, handoff: KVHandOff, engine):
        self.handoff, self.engine = handoff, engine

    def boundary(self, rep) -> None:
        self.handoff.collect(self.engine, rep)

    def pending_s(self, rep) -> float:
        return rep.next_event_s()
