"""The network: GPUs in nodes, links as shared resources, transfers with contention, collective costs.

Topology (`Topology`): `num_nodes` nodes of `gpus_per_node` GPUs. Scale-up (NVLink/NVSwitch, Infinity
Fabric, PCIe) is modelled as a non-blocking switch with one egress and one ingress port per GPU
(`intra_node="switch"`), or, for Infinity-Fabric meshes, one direct link per ordered GPU pair carrying
scale-up / (g − 1) (`"mesh"`). Scale-out: one NIC per GPU (egress and ingress port) into a non-blocking,
rail-optimized fabric. A transfer between GPUs of one node uses its sender's scale-up egress and its
receiver's ingress; between nodes, the two NICs. Bandwidths are per direction and already multiplied
by an achievable fraction (`from_hardware`: the roofline's `collective_bandwidth_fraction`).

Contention (`max_min_rates`, `FairShareFluid`): a fluid model. Concurrent transfers share every link
max-min fairly (progressive filling: all rates grow together until a link saturates; transfers through
it freeze at its fair share). Rates are recomputed whenever a transfer starts or ends, so finish times
are exact for that model. A transfer finishes when its last byte has passed, plus its path's latency
(a pure delay that uses no bandwidth). Approximations: no packet-level effects, no congestion control,
no NIC/PCIe limit below the NIC rate, every fabric is non-blocking.

APIs: `Network.transfer` (idle network), `Network.transfers` (a known set of transfers, contending),
`SimNetwork.transfer` (SimPy event, contending with whatever is in flight), `kv_transfer_flows` (who
sends which KV bytes to whom between two replicas), `ep_alltoall_s` (an MoE dispatch from its send
matrix), `port_limited_s`, and the collective cost models below.

Collectives (α–β models; S bytes as nccl-tests count them, n ranks, B bandwidth, α per-hop latency of the
group's slowest link — scale-out once the group spans nodes):
  ring all-reduce 2(n−1)α + 2(n−1)/n·S/B;  tree all-reduce 2⌈log2 n⌉α + 2S/B (pipelined double binary
  tree, each rank sends and receives 2S);  all-gather / reduce-scatter (n−1)α + (n−1)/n·S/B;
  all-to-all max over a GPU's ports of (α + bytes/bandwidth) (direct: every pair at once);
  hierarchical all-to-all across nodes: S(N−1)/N leaves each GPU through its NIC to the same-index GPU
  of each other node, which forwards over scale-up (S(g−1)/g per GPU), pipelined (max of the two) or not
  (sum), latency α_out + α_up. nccl-tests report bus bandwidth = S/t × `BUS_BANDWIDTH_FACTOR`.
A `latency_model` passed to `collective_s` (a profile-backed `ProfiledLatencyModel`) replaces the formula.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from models.ops import ALLREDUCE, ALLTOALL, Op
from models.spec import ModelSpec, dtype_bytes, kv_heads_per_gpu, validate_parallelism
from models.step import Parallelism
from profiles.hardware import HardwareSpec, get_hardware
from profiles.roofline import default_efficiency

_DONE_BYTES = 1e-6         # a flow with fewer bytes left than this (or 1e-12 of its size) has finished
_TIME_RESOLUTION = 1e-12   # relative: a flow needing less time than this × now has finished


@dataclass(frozen=True)
class Topology:
    num_nodes: int
    gpus_per_node: int
    scaleup_bandwidth_bytes_per_s: float
    scaleout_bandwidth_bytes_per_s: float
    scaleup_latency_s: float
    scaleout_latency_s: float
    intra_node: str = "switch"

    def __post_init__(self) -> None:
        for name in ("num_nodes", "gpus_per_node"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"topology.{name} must be an integer >= 1, got {v!r}")
        for name in ("scaleup_bandwidth_bytes_per_s", "scaleout_bandwidth_bytes_per_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"topology.{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("scaleup_latency_s", "scaleout_latency_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"topology.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.intra_node not in ("switch", "mesh"):
            raise ValueError(f"topology.intra_node must be 'switch' or 'mesh', got {self.intra_node!r}")

    @classmethod
    def from_hardware(cls, hardware: str | HardwareSpec, num_nodes: int = 1,
                      bandwidth_fraction: float | None = None) -> "Topology":
        """Nodes of the catalog device; bandwidths × `bandwidth_fraction` (default: the roofline's
        collective_bandwidth_fraction for the device). MI300X is an Infinity-Fabric mesh."""
        hw = hardware if isinstance(hardware, HardwareSpec) else get_hardware(hardware)
        frac = default_efficiency(hw.id).collective_bandwidth_fraction if bandwidth_fraction is None \
            else bandwidth_fraction
        if not 0 < frac <= 1:
            raise ValueError(f"bandwidth_fraction must be in (0, 1], got {frac!r}")
        return cls(num_nodes, hw.gpus_per_node, hw.scaleup_bandwidth_bytes_per_s * frac,
                   hw.scaleout_bandwidth_bytes_per_s * frac, hw.scaleup_latency_s, hw.scaleout_latency_s,
                   "mesh" if hw.id.startswith("mi3") else "switch")

    @property
    def num_gpus(self) -> int:
        return self.num_nodes * self.gpus_per_node

    def node_of(self, gpu: int) -> int:
        return self._gpu(gpu, "gpu") // self.gpus_per_node

    def _gpu(self, gpu, name: str) -> int:
        if not isinstance(gpu, (int, np.integer)) or not 0 <= gpu < self.num_gpus:
            raise ValueError(f"{name} must be a GPU index in 0..{self.num_gpus - 1}, got {gpu!r}")
        return int(gpu)

    def link_capacities(self) -> np.ndarray:
        """Bytes/s of every link: [scale-up egress, scale-up ingress, NIC egress, NIC ingress] per GPU,
        then (mesh only) one link per ordered pair of GPUs in a node."""
        n, g = self.num_gpus, self.gpus_per_node
        caps = [np.full(2 * n, self.scaleup_bandwidth_bytes_per_s), np.full(2 * n, self.scaleout_bandwidth_bytes_per_s)]
        if self.intra_node == "mesh" and g > 1:
            caps.append(np.full(self.num_nodes * g * g, self.scaleup_bandwidth_bytes_per_s / (g - 1)))
        return np.concatenate(caps)

    def path(self, src: int, dst: int) -> tuple[int, ...]:
        """Link indices a transfer src → dst crosses (empty for a GPU to itself)."""
        src, dst = self._gpu(src, "src_gpu"), self._gpu(dst, "dst_gpu")
        n, g = self.num_gpus, self.gpus_per_node
        if src == dst:
            return ()
        if src // g != dst // g:
            return (2 * n + src, 3 * n + dst)
        if self.intra_node == "mesh":
            return (4 * n + (src // g) * g * g + (src % g) * g + dst % g,)
        return (src, n + dst)

    def latency_s(self, src: int, dst: int) -> float:
        if src == dst:
            return 0.0
        return self.scaleup_latency_s if self.node_of(src) == self.node_of(dst) else self.scaleout_latency_s

    def path_bandwidth(self, src: int, dst: int) -> float:
        """Bandwidth of the path's slowest link (inf for a GPU to itself)."""
        caps = self.link_capacities()
        return min((caps[i] for i in self.path(src, dst)), default=math.inf)


@dataclass(frozen=True)
class Flow:
    src_gpu: int
    dst_gpu: int
    bytes: float
    start_s: float = 0.0


def max_min_rates(paths: Sequence[Sequence[int]], capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates (bytes/s) of flows with the given link paths (progressive filling). A flow
    with an empty path gets rate inf."""
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
            rates = max_min_rates([self._active[i][1] for i in ids], self.capacity)
            self._rates = dict(zip(ids, rates.tolist()))
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
        event = self.env.event()
        self._events[self.fluid.add(src_gpu, dst_gpu, nbytes, self.env.now)] = event
        self._wake(self._generation)
        return event

    def transfer_all(self, flows: Sequence[Flow]):
        """One event for a group of transfers started now (e.g. the flows of one KV transfer)."""
        return self.env.all_of([self.transfer(f.src_gpu, f.dst_gpu, f.bytes) for f in flows])

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
    for name, gpus, par in (("src", src_gpus, src_par), ("dst", dst_gpus, dst_par)):
        validate_parallelism(spec, par)
        if len(gpus) != par.tp * par.pp or len(set(gpus)) != len(gpus):
            raise ValueError(f"{name}_gpus must list {par.tp * par.pp} distinct GPUs (tp·pp), got {len(gpus)}")
    if not isinstance(tokens, (int, np.integer)) or tokens < 0:
        raise ValueError(f"tokens must be an integer >= 0, got {tokens!r}")
    unit = tokens * dtype_bytes(dtype) * (spec.kv_elements_per_token_per_layer() if spec.is_mla
                                          else 2 * spec.head_dim)  # bytes per (layer, KV head)
    src_stages = _stage_layers(spec.num_layers, src_par.pp)
    holders: dict[tuple[int, int], list[int]] = {}   # (src stage, head) -> source GPUs
    for s in range(src_par.pp):
        for r in range(src_par.tp):
            for h in _heads_of_rank(spec, src_par.tp, r):
                holders.setdefault((s, h), []).append(src_gpus[s * src_par.tp + r])
    volume: dict[tuple[int, int], float] = {}
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
                        volume[(src, dst)] = volume.get((src, dst), 0.0) + layers * unit / len(sources)
    return [Flow(s, d, b, start_s) for (s, d), b in sorted(volume.items()) if b > 0]


# ---- collectives ----------------------------------------------------------------------------------
BUS_BANDWIDTH_FACTOR: dict[str, Callable[[int], float]] = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}


def bus_bandwidth(collective: str, ranks: int, nbytes: float, seconds: float) -> float:
    """nccl-tests bus bandwidth: algorithm bandwidth S/t times the collective's factor."""
    if collective not in BUS_BANDWIDTH_FACTOR:
        raise ValueError(f"collective {collective!r} unknown; allowed: {', '.join(BUS_BANDWIDTH_FACTOR)}")
    return nbytes / seconds * BUS_BANDWIDTH_FACTOR[collective](ranks)


def _group(topology: Topology, ranks: int) -> tuple[float, float]:
    """(bandwidth, latency) of the slowest link of a group of `ranks` consecutive GPUs."""
    if not isinstance(ranks, int) or not 1 <= ranks <= topology.num_gpus:
        raise ValueError(f"ranks must be an integer in 1..{topology.num_gpus}, got {ranks!r}")
    if ranks <= topology.gpus_per_node:
        g = topology.gpus_per_node
        bw = topology.scaleup_bandwidth_bytes_per_s / (g - 1) if topology.intra_node == "mesh" and g > 1 \
            else topology.scaleup_bandwidth_bytes_per_s
        return bw, topology.scaleup_latency_s
    return topology.scaleout_bandwidth_bytes_per_s, topology.scaleout_latency_s


def ring_allreduce_s(topology: Topology, nbytes: float, ranks: int) -> float:
    bw, a = _group(topology, ranks)
    return 0.0 if ranks == 1 else 2 * (ranks - 1) * a + 2 * (ranks - 1) / ranks * nbytes / bw


def tree_allreduce_s(topology: Topology, nbytes: float, ranks: int) -> float:
    bw, a = _group(topology, ranks)
    return 0.0 if ranks == 1 else 2 * math.ceil(math.log2(ranks)) * a + 2 * nbytes / bw


def allgather_s(topology: Topology, nbytes: float, ranks: int) -> float:
    """Ring all-gather of an `nbytes` output (each rank contributes nbytes / ranks)."""
    bw, a = _group(topology, ranks)
    return 0.0 if ranks == 1 else (ranks - 1) * a + (ranks - 1) / ranks * nbytes / bw


reducescatter_s = allgather_s  # ring reduce-scatter of an `nbytes` input: same steps and traffic


def alltoall_s(topology: Topology, nbytes: float, ranks: int) -> float:
    """Direct all-to-all of an `nbytes` buffer per rank (nbytes / ranks to each peer) over GPUs 0..ranks−1:
    every pair at once; each GPU's scale-up port carries its same-node share, its NIC the rest."""
    _group(topology, ranks)
    if ranks == 1:
        return 0.0
    g = min(ranks, topology.gpus_per_node)
    up = nbytes * (g - 1) / ranks / topology.scaleup_bandwidth_bytes_per_s
    out = nbytes * (ranks - g) / ranks / topology.scaleout_bandwidth_bytes_per_s
    inter = topology.scaleout_latency_s + out if ranks > g else 0.0
    return max(topology.scaleup_latency_s + up if g > 1 else 0.0, inter)


def hierarchical_alltoall_s(topology: Topology, nbytes: float, ranks: int, pipelined: bool = True) -> float:
    """Two-level all-to-all over ranks = N nodes × g GPUs (see the module docstring); bounded below by
    the scale-out term S(N−1)/N / B_out."""
    g = topology.gpus_per_node
    _group(topology, ranks)
    if ranks <= g:
        return alltoall_s(topology, nbytes, ranks)
    if ranks % g:
        raise ValueError(f"hierarchical all-to-all needs whole nodes: ranks={ranks}, gpus_per_node={g}")
    nodes = ranks // g
    out = nbytes * (nodes - 1) / nodes / topology.scaleout_bandwidth_bytes_per_s
    up = nbytes * (g - 1) / g / topology.scaleup_bandwidth_bytes_per_s
    lat = topology.scaleout_latency_s + (topology.scaleup_latency_s if g > 1 else 0.0)
    return lat + (max(out, up) if pipelined else out + up)


def port_limited_s(topology: Topology, scaleup_bytes: np.ndarray, scaleout_bytes: np.ndarray,
                   pipelined: bool = True, direct: bool = False) -> float:
    """Time of an exchange given each GPU's scale-up and scale-out port bytes (arrays over GPUs, max of
    send and receive): the busiest port of each kind sets the pace. direct=True: every byte crosses one
    level only (direct sends), so the levels run side by side, max(α_up + up, α_out + out). Otherwise the
    traffic is forwarded from one level to the other (two-level all-to-all): α_up + α_out + max(up, out)
    when pipelined, + (up + out) when not. Scale-up bytes are spread over a mesh's links, so a GPU's
    aggregate scale-up bandwidth applies."""
    up = float(np.max(scaleup_bytes, initial=0.0)) / topology.scaleup_bandwidth_bytes_per_s
    out = float(np.max(scaleout_bytes, initial=0.0)) / topology.scaleout_bandwidth_bytes_per_s
    lat_up = topology.scaleup_latency_s if up > 0 else 0.0
    lat_out = topology.scaleout_latency_s if out > 0 else 0.0
    if direct:
        return max(lat_up + up, lat_out + out)
    return lat_up + lat_out + (max(up, out) if pipelined else up + out)


def ep_alltoall_s(topology: Topology, send_tokens: np.ndarray, bytes_per_token: float, first_gpu: int = 0) -> float:
    """One MoE dispatch (or combine) of an EP group on GPUs first_gpu … first_gpu + R − 1, given its send
    matrix (send_tokens[i, j] tokens from rank i to rank j, e.g. `models.moe_routing.EpLoad.send_tokens`):
    each GPU's same-node traffic uses its scale-up port, other-node traffic its NIC, each port loaded
    with the larger of its send and receive bytes; the busiest ports set the time (`port_limited_s`
    with direct sends, no node-level de-duplication). A lower bound of the fair-share makespan, equal to it
    for balanced traffic (tested)."""
    m = np.asarray(send_tokens, dtype=float) * bytes_per_token
    r = len(m)
    if m.shape != (r, r) or first_gpu < 0 or first_gpu + r > topology.num_gpus:
        raise ValueError(f"send_tokens must be a square matrix whose ranks fit on GPUs {first_gpu}.. of "
                         f"{topology.num_gpus}, got shape {m.shape}")
    node = (first_gpu + np.arange(r)) // topology.gpus_per_node
    same = (node[:, None] == node[None, :]) & ~np.eye(r, dtype=bool)
    other = node[:, None] != node[None, :]
    up = np.maximum((m * same).sum(axis=1), (m * same).sum(axis=0))
    out = np.maximum((m * other).sum(axis=1), (m * other).sum(axis=0))
    return port_limited_s(topology, up, out, direct=True)


_FORMULAS = {"ring_allreduce": ring_allreduce_s, "tree_allreduce": tree_allreduce_s, "allgather": allgather_s,
             "reducescatter": reducescatter_s, "alltoall": alltoall_s,
             "hierarchical_alltoall": hierarchical_alltoall_s}


def collective_s(kind: str, topology: Topology, nbytes: float, ranks: int, latency_model=None) -> float:
    """Seconds of a collective by name; with a `latency_model` (e.g. profile-backed), all-reduce and
    all-to-all are priced by it instead (its measured collectives replace the formula)."""
    if kind not in _FORMULAS:
        raise ValueError(f"collective kind {kind!r} unknown; allowed: {', '.join(_FORMULAS)}")
    if not nbytes >= 0:
        raise ValueError(f"collective bytes must be >= 0, got {nbytes!r}")
    if latency_model is not None and ranks > 1 and kind in ("ring_allreduce", "tree_allreduce", "alltoall"):
        op_kind = ALLREDUCE if kind.endswith("allreduce") else ALLTOALL
        return latency_model.op_seconds(Op.make(op_kind, kind, 0.0, nbytes, 1, bytes=nbytes, ranks=ranks))
    return _FORMULAS[kind](topology, nbytes, ranks)
