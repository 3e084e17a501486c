"""The network in the DES: links as shared resources, transfers with contention, KV transfer flows.

The GPUs and links are a `simulator.cost.collectives.Topology` (nodes, scale-up and scale-out ports); the
collective cost models are there too.

Contention (`max_min_rates`, `FairShareFluid`): a fluid model. Concurrent transfers share every link
max-min fairly (progressive filling: all rates grow together until a link saturates; transfers through
it freeze at its fair share). Rates are recomputed whenever a transfer starts or ends, so finish times
are exact for that model. A transfer finishes when its last byte has passed, plus its path's latency
(a pure delay that uses no bandwidth). Approximations: no packet-level effects, no congestion control,
no NIC/PCIe limit below the NIC rate, every fabric is non-blocking.

APIs: `Network.transfer` (idle network), `Network.transfers` (a known set of transfers, contending),
`SimNetwork.transfer` (SimPy event, contending with whatever is in flight), `kv_transfer_flows` (who
sends which KV bytes to whom between two replicas).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from models.spec import ModelSpec, dtype_bytes, kv_heads_per_gpu, validate_parallelism
from models.step import Parallelism
from simulator.cost.collectives import Topology

_DONE_BYTES = 1e-6         # a flow with fewer bytes left than this (or 1e-12 of its size) has finished
_TIME_RESOLUTION = 1e-12   # relative: a flow needing less time than this × now has finished


@dataclass(frozen=True)
class Flow:
    src_gpu: int
    dst_gpu: int
    bytes: float
    start_s: float = 0.0


def max_min_rates(paths: Sequence[Sequence[int]], capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates (bytes/s) of flows with the given link paths (progressive filling). A flow
    with an empty path gets rate inf."""
    return np.array(fair_rates(paths, capacity), dtype=float)


SMALL_FLOW_SET = 32   # flows up to which progressive filling runs on Python floats (numpy's per-call cost dominates)


def fair_rates(paths: Sequence[Sequence[int]], capacity: np.ndarray) -> list[float]:
    """`max_min_rates` as a list. Both ways of computing it do the same IEEE operations in the same order
    (a link's share cap / count, the least share s, bottlenecks within s·(1 + 1e-12), caps reduced by
    s · frozen flows through them and clipped at 0), so they agree to the last bit (tests)."""
    if len(paths) <= SMALL_FLOW_SET:
        return _filling_python(paths, capacity)
    return _filling_numpy(paths, capacity).tolist()


def _filling_python(paths: Sequence[Sequence[int]], capacity: np.ndarray) -> list[float]:
    if len(paths) == 1 and len(set(paths[0])) == len(paths[0]):
        # one flow crossing each link once (half the calls of a disaggregated run): its path's narrowest
        # link, the rate the filling below gives it (cap / 1 is cap exactly)
        return [float(min(capacity[link] for link in paths[0]))] if paths[0] else [math.inf]
    rates = [math.inf] * len(paths)
    cap = {link: float(capacity[link]) for path in paths for link in path}
    active = [i for i, path in enumerate(paths) if path]
    while active:
        counts: dict[int, int] = {}
        for i in active:
            for link in paths[i]:
                counts[link] = counts.get(link, 0) + 1
        share = {link: cap[link] / n for link, n in counts.items()}
        s = min(share.values())
        limit = s * (1.0 + 1e-12)
        bottleneck = {link for link, v in share.items() if v <= limit}
        frozen = [i for i in active if not bottleneck.isdisjoint(paths[i])]
        through: dict[int, int] = {}
        for i in frozen:
            rates[i] = s
            for link in paths[i]:
                through[link] = through.get(link, 0) + 1
        for link, n in through.items():
            cap[link] = max(cap[link] - s * n, 0.0)
        done = set(frozen)
        active = [i for i in active if i not in done]
    return rates


def _filling_numpy(paths: Sequence[Sequence[int]], capacity: np.ndarray) -> np.ndarray:
    f = len(paths)
    rates = np.full(f, math.inf)
    if not f:
        return rates
    flow_of = np.repeat(np.arange(f), [len(p) for p in paths])
    link_of = np.fromiter((l for p in paths for l in p), dtype=np.int64, count=len(flow_of))
    cap = np.asarray(capacity, dtype=float).copy()
    active = np.bincount(flow_of, minlength=f) > 0
    while active.any():
        entry = active[flow_of]
        counts = np.bincount(link_of[entry], minlength=len(cap))
        share = np.where(counts > 0, cap / np.maximum(counts, 1), math.inf)
        s = float(share.min())
        bottleneck = share <= s * (1.0 + 1e-12)
        frozen = np.zeros(f, dtype=bool)
        frozen[flow_of[entry & bottleneck[link_of]]] = True
        rates[frozen] = s
        active &= ~frozen
        cap = np.maximum(cap - s * np.bincount(link_of[frozen[flow_of]], minlength=len(cap)), 0.0)
    return rates


class FairShareFluid:
    """Transfers sharing the topology's links max-min fairly, advanced in time (online: transfers may be
    added at the current time while others are in flight)."""

    def __init__(self, topology: Topology):
        self.topology = topology
        self.capacity = topology.link_capacities()
        self.now_s = 0.0
        self._next_id = 0
        self._active: dict[int, list] = {}    # id -> [remaining bytes, path, latency, size]
        self._rates: dict[int, float] | None = None
        self._done: list[tuple[int, float]] = []

    def add(self, src: int, dst: int, nbytes: float, at_s: float | None = None) -> int:
        """Start a transfer at `at_s` (default now; not earlier than now). Returns its id."""
        if not nbytes >= 0 or not math.isfinite(nbytes):
            raise ValueError(f"transfer bytes must be a finite number >= 0, got {nbytes!r}")
        at = self.now_s if at_s is None else at_s
        if at < self.now_s - 1e-12:
            raise ValueError(f"transfer start_s={at} is before the network's current time {self.now_s}")
        finished = self.advance_to(at)  # (evaluated before self._done is read: advance_to resets it)
        self._done.extend(finished)
        path = self.topology.path(src, dst)
        fid, self._next_id = self._next_id, self._next_id + 1
        if not path or nbytes == 0:
            self._done.append((fid, self.now_s + (self.topology.latency_s(src, dst) if path else 0.0)))
        else:
            self._active[fid] = [float(nbytes), path, self.topology.latency_s(src, dst), float(nbytes)]
            self._rates = None
        return fid

    def _current_rates(self) -> dict[int, float]:
        if self._rates is None:
            ids = list(self._active)
            self._rates = dict(zip(ids, fair_rates([self._active[i][1] for i in ids], self.capacity)))
        return self._rates

    def rate(self, fid: int) -> float:
        return self._current_rates().get(fid, 0.0)

    def next_completion_s(self) -> float:
        """When the next in-flight transfer passes its last byte (inf when none is in flight)."""
        if self._done:
            return self.now_s
        if not self._active:
            return math.inf
        rates = self._current_rates()
        return self.now_s + min(v[0] / rates[i] for i, v in self._active.items())

    def advance_to(self, t_s: float) -> list[tuple[int, float]]:
        """Move time to t_s; returns (id, finish_s) of transfers that completed (finish includes latency)."""
        done, self._done = self._done, []
        while self._active:
            rates = self._current_rates()
            dt = min(v[0] / rates[i] for i, v in self._active.items())
            step = min(dt, t_s - self.now_s)
            if step < 0:
                break
            for i, v in self._active.items():
                v[0] -= rates[i] * step
            self.now_s += step
            # Done: (almost) no bytes left, or less time left than the clock can resolve.
            tick = _TIME_RESOLUTION * max(1.0, abs(self.now_s))
            finished = [i for i, v in self._active.items()
                        if v[0] <= max(_DONE_BYTES, 1e-12 * v[3]) or v[0] <= rates[i] * tick]
            for i in finished:
                done.append((i, self.now_s + self._active.pop(i)[2]))
            if finished:
                self._rates = None
            elif step < dt:
                break
        self.now_s = max(self.now_s, t_s) if math.isfinite(t_s) else self.now_s
        return done


class Network:
    """Transfer times on a topology: on an idle network, or for a known set of contending transfers."""

    def __init__(self, topology: Topology):
        self.topology = topology

    def transfer(self, src_gpu: int, dst_gpu: int, nbytes: float, start_s: float = 0.0) -> float:
        """Finish time of one transfer alone on the network: start + latency + bytes / path bandwidth."""
        if not nbytes >= 0:
            raise ValueError(f"transfer bytes must be >= 0, got {nbytes!r}")
        if src_gpu == dst_gpu or nbytes == 0:
            return start_s + (0.0 if src_gpu == dst_gpu else self.topology.latency_s(src_gpu, dst_gpu))
        return start_s + self.topology.latency_s(src_gpu, dst_gpu) + nbytes / self.topology.path_bandwidth(src_gpu, dst_gpu)

    def transfers(self, flows: Sequence[Flow]) -> np.ndarray:
        """Finish time of each flow when all of them share the links max-min fairly."""
        fluid = FairShareFluid(self.topology)
        finish = np.full(len(flows), math.nan)
        order = sorted(range(len(flows)), key=lambda i: flows[i].start_s)
        ids: dict[int, int] = {}
        if order:
            fluid.now_s = min(0.0, flows[order[0]].start_s)
        for i in order:
            fl = flows[i]
            ids[fluid.add(fl.src_gpu, fl.dst_gpu, fl.bytes, fl.start_s)] = i
        for fid, t in fluid.advance_to(math.inf):
            finish[ids[fid]] = t
        return finish

    def kv_transfer(self, spec: ModelSpec, tokens: int, src_gpus: Sequence[int], src_par: Parallelism,
                    dst_gpus: Sequence[int], dst_par: Parallelism, start_s: float = 0.0,
                    dtype: str = "bf16") -> float:
        """Finish time of moving one request's KV cache between two replicas, the flows of this transfer
        contending only with each other (see `kv_transfer_flows`)."""
        flows = kv_transfer_flows(spec, tokens, src_gpus, src_par, dst_gpus, dst_par, dtype, start_s)
        return float(self.transfers(flows).max()) if flows else start_s


class SimNetwork:
    """The fluid network inside a SimPy environment: `transfer(...)` returns an event that fires (value:
    finish time) when the transfer completes, contending with every transfer in flight."""

    def __init__(self, env, topology: Topology):
        self.env, self.fluid = env, FairShareFluid(topology)
        self.fluid.now_s = env.now
        self._events: dict[int, object] = {}
        self._generation = 0

    def transfer(self, src_gpu: int, dst_gpu: int, nbytes: float):
        event = self._add(src_gpu, dst_gpu, nbytes)
        self._wake(self._generation)
        return event

    def transfer_all(self, flows: Sequence[Flow]):
        """One event for a group of transfers started now (e.g. the flows of one KV transfer). They join
        the network together and the rates are recomputed once, not once per flow: nothing moves between
        additions at the same instant, so the rates and every finish time are those of adding them one by
        one (whose intermediate wake-ups were superseded before they fired)."""
        events = [self._add(f.src_gpu, f.dst_gpu, f.bytes) for f in flows]
        if events:
            self._wake(self._generation)
        return self.env.all_of(events)

    def _add(self, src_gpu: int, dst_gpu: int, nbytes: float):
        event = self.env.event()
        self._events[self.fluid.add(src_gpu, dst_gpu, nbytes, self.env.now)] = event
        return event

    def _wake(self, generation: int) -> None:
        if generation != self._generation:
            return  # a later change rescheduled the wake-up
        for fid, finish in self.fluid.advance_to(self.env.now):
            event = self._events.pop(fid)
            self.env.timeout(finish - self.env.now).callbacks.append(lambda _e, ev=event, t=finish: ev.succeed(t))
        self._generation += 1
        nxt = self.fluid.next_completion_s()
        if math.isfinite(nxt):
            gen = self._generation
            self.env.timeout(max(0.0, nxt - self.env.now)).callbacks.append(lambda _e: self._wake(gen))


# ---- KV cache transfer between replicas -------------------------------------------------------------
def _stage_layers(num_layers: int, pp: int) -> list[tuple[int, int]]:
    """Contiguous layer ranges per pipeline stage (floor split; later stages take the remainder)."""
    return [(s * num_layers // pp, (s + 1) * num_layers // pp) for s in range(pp)]


def _heads_of_rank(spec: ModelSpec, tp: int, rank: int) -> list[int]:
    """KV 'heads' a TP rank holds: its share of KV heads (one replicated head when tp > kv heads); MLA's
    latent cache is one unit replicated on every rank."""
    if spec.is_mla:
        return [0]
    per = kv_heads_per_gpu(spec, tp)
    if tp <= spec.num_kv_heads:
        return list(range(rank * per, (rank + 1) * per))
    return [rank * spec.num_kv_heads // tp]


def kv_transfer_flows(spec: ModelSpec, tokens: int, src_gpus: Sequence[int], src_par: Parallelism,
                      dst_gpus: Sequence[int], dst_par: Parallelism, dtype: str = "bf16",
                      start_s: float = 0.0) -> list[Flow]:
    """Flows that move `tokens` tokens of KV cache from a replica on `src_gpus` to one on `dst_gpus`.

    GPU lists are stage-major (gpu index = stage·tp + tp rank); give the GPUs of one attention group
    with Parallelism(tp, pp) for ep > 1 replicas. Every destination GPU receives exactly the KV it
    holds (its stage's layers × its ranks' KV heads; MLA: the whole latent of its layers, as every rank
    keeps a copy), each piece split evenly over the source GPUs that hold it."""
    return flows_of_terms(spec, flow_layout(spec, src_gpus, src_par, dst_gpus, dst_par), tokens, dtype, start_s)


def flows_of_terms(spec: ModelSpec, terms: tuple, tokens: int, dtype: str = "bf16", start_s: float = 0.0
                   ) -> list[Flow]:
    """`kv_transfer_flows` from the replica pair's layout (`flow_layout`), which a caller moving the KV of
    many requests between the same replicas keeps."""
    if not isinstance(tokens, (int, np.integer)) or tokens < 0:
        raise ValueError(f"tokens must be an integer >= 0, got {tokens!r}")
    unit = tokens * dtype_bytes(dtype) * (spec.kv_elements_per_token_per_layer() if spec.is_mla
                                          else 2 * spec.head_dim)  # bytes per (layer, KV head)
    flows = []
    for src, dst, parts in terms:
        nbytes = 0.0
        for layers, sources in parts:
            nbytes = nbytes + layers * unit / sources
        if nbytes > 0:
            flows.append(Flow(src, dst, nbytes, start_s))
    return flows


def flow_layout(spec: ModelSpec, src_gpus: tuple, src_par: Parallelism, dst_gpus: tuple, dst_par: Parallelism
                ) -> tuple:
    """The layout `flows_of_terms` reads: who sends what to whom between two replicas, whatever the tokens."""
    return _flow_terms(spec, tuple(src_gpus), src_par, tuple(dst_gpus), dst_par)


@lru_cache(maxsize=4096)
def _flow_terms(spec: ModelSpec, src_gpus: tuple, src_par: Parallelism, dst_gpus: tuple,
                dst_par: Parallelism) -> tuple[tuple[int, int, tuple[tuple[int, int], ...]], ...]:
    """Who sends what to whom, independent of the token count: per (source GPU, destination GPU) in
    sorted order, the (layers, holders) pieces whose bytes sum to the flow's size, each piece
    layers · (bytes per layer and KV head) / holders, summed in this order. A run moves the KV of
    every request between the same few replica pairs, so this is worked out once per pair."""
    for name, gpus, par in (("src", src_gpus, src_par), ("dst", dst_gpus, dst_par)):
        validate_parallelism(spec, par)
        if len(gpus) != par.tp * par.pp or len(set(gpus)) != len(gpus):
            raise ValueError(f"{name}_gpus must list {par.tp * par.pp} distinct GPUs (tp·pp), got {len(gpus)}")
    src_stages = _stage_layers(spec.num_layers, src_par.pp)
    holders: dict[tuple[int, int], list[int]] = {}   # (src stage, head) -> source GPUs
    for s in range(src_par.pp):
        for r in range(src_par.tp):
            for h in _heads_of_rank(spec, src_par.tp, r):
                holders.setdefault((s, h), []).append(src_gpus[s * src_par.tp + r])
    pieces: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for ds, (lo, hi) in enumerate(_stage_layers(spec.num_layers, dst_par.pp)):
        for r in range(dst_par.tp):
            dst = dst_gpus[ds * dst_par.tp + r]
            for ss, (slo, shi) in enumerate(src_stages):
                layers = min(hi, shi) - max(lo, slo)
                if layers <= 0:
                    continue
                for h in _heads_of_rank(spec, dst_par.tp, r):
                    sources = holders[(ss, h)]
                    for src in sources:
                        pieces.setdefault((src, dst), []).append((layers, len(sources)))
    return tuple((src, dst, tuple(parts)) for (src, dst), parts in sorted(pieces.items()))
