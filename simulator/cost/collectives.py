"""GPUs in nodes and what collectives over their links cost (α–β models): below the step cost
(simulator.cost.moe prices expert-parallel all-to-alls with them) and the DES network
(simulator.cluster.network runs transfers over the same topology).

Topology (`Topology`): `num_nodes` nodes of `gpus_per_node` GPUs. Scale-up (NVLink/NVSwitch, Infinity
Fabric, PCIe) is modelled as a non-blocking switch with one egress and one ingress port per GPU
(`intra_node="switch"`), or, for Infinity-Fabric meshes, one direct link per ordered GPU pair carrying
scale-up / (g − 1) (`"mesh"`). Scale-out: one NIC per GPU (egress and ingress port) into a non-blocking,
rail-optimized fabric. A transfer between GPUs of one node uses its sender's scale-up egress and its
receiver's ingress; between nodes, the two NICs. Bandwidths are per direction and already multiplied
by an achievable fraction (`from_hardware`: the roofline's `collective_bandwidth_fraction`).

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
from typing import Callable

import numpy as np

from models.ops import ALLREDUCE, ALLTOALL, Op
from profiles.hardware import HardwareSpec, get_hardware
from profiles.roofline import default_efficiency


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
