"""Where the pools of a disaggregated cluster sit on the network, and the KV-cache flows of one request.

Placement (`place_pools`): GPUs are numbered stage-major inside a replica (gpu = stage·tp + tp rank, the
convention of `simulator.cluster.network.kv_transfer_flows`), replicas one after the other, the prefill pool
first.
- `link: scaleup`: both pools share one scale-up domain: the topology is a single node holding all of
  their GPUs (an NVSwitch node, or an NVL-rack for more than a node's worth). Approximation: beyond
  `gpus_per_node` GPUs this assumes a larger NVLink domain than the catalog node.
- `link: scaleout`: the decode pool starts on the first node after the prefill pool's last node, so
  every KV byte crosses the sender's and the receiver's NICs (catalog scale-out bandwidth per GPU).
- pools on different hardware share no scale-up domain, so they need `link: scaleout`; the topology then
  has the prefill device's node size and the slower device's scale-out figures (the lower bandwidth, the
  higher latency: a transfer runs at the pace of its slower NIC).
Bandwidths are the catalog's per-direction figures × the roofline's achievable collective fraction
(`Topology.from_hardware`).

One request's KV (`request_flows`): the target's cache for its prompt tokens (MLA-aware, each destination
GPU receives exactly what it holds, `kv_transfer_flows`), plus the drafter's own cache when it has one (a
draft model or an EAGLE-style head: the prefill pool prefills the drafter too; it lives on the first
draft_tp GPUs).
Expert parallelism (ep > 1): a request's KV lives in one data-parallel attention group (tp GPUs per
stage); approximation: request r uses group r mod attention_dp on both sides (the groups are taken as
balanced, as the rest of the EP model assumes).

Layer-wise overlap (`overlap_tail_s`): when enabled, layer l's KV is sent as soon as the prefill has
computed it. Approximation, so that a transfer stays one fluid flow per GPU pair rather than one per
layer: the prefill's step time is spread evenly over the layers; the transfer starts when the first
layer is done (step start + step duration / layers) with all its bytes, and it cannot complete before
the prefill ends plus the last layer's share alone on an idle path (`overlap_tail_s`). While the real
transfer would be starved of data the fluid flow may run ahead and take more than its share of a
contended link, so contention on the link is slightly over-stated for other transfers in that window.
For chunked prefill the overlap covers the step that completes the prompt only.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from models.spec import ModelSpec
from models.step import Parallelism
from profiles.hardware import HardwareSpec
from simulator.cluster.network import Flow, Network, flow_layout, flows_of_terms
from simulator.cost.collectives import Topology


@dataclass(frozen=True)
class PoolPlacement:
    topology: Topology
    prefill_gpus: tuple[tuple[int, ...], ...]   # per prefill replica, stage-major
    decode_gpus: tuple[tuple[int, ...], ...]


def place_pools(hw: HardwareSpec, prefill_replicas: int, prefill_par: Parallelism, decode_replicas: int,
                decode_par: Parallelism, link: str, decode_hw: HardwareSpec | None = None) -> PoolPlacement:
    pg, dg = prefill_par.gpus, decode_par.gpus
    prefill = [tuple(range(i * pg, (i + 1) * pg)) for i in range(prefill_replicas)]
    base = Topology.from_hardware(hw)
    if decode_hw is not None and decode_hw.id != hw.id:
        if link != "scaleout":
            raise ValueError(f"the pools run on {hw.id} and {decode_hw.id}, which share no scale-up domain: "
                             "use link: scaleout")
        other = Topology.from_hardware(decode_hw)
        base = dataclasses.replace(
            base, scaleout_bandwidth_bytes_per_s=min(base.scaleout_bandwidth_bytes_per_s,
                                                     other.scaleout_bandwidth_bytes_per_s),
            scaleout_latency_s=max(base.scaleout_latency_s, other.scaleout_latency_s))
    if link == "scaleup":
        total = prefill_replicas * pg + decode_replicas * dg
        topology = dataclasses.replace(base, num_nodes=1, gpus_per_node=total)
        first_decode = prefill_replicas * pg
    elif link == "scaleout":
        g = hw.gpus_per_node
        prefill_nodes = math.ceil(prefill_replicas * pg / g)
        first_decode = prefill_nodes * g
        topology = dataclasses.replace(base, num_nodes=prefill_nodes + math.ceil(decode_replicas * dg / g))
    else:
        raise ValueError(f"kv_transfer.link must be 'scaleup' or 'scaleout', got {link!r}")
    decode = [tuple(range(first_decode + i * dg, first_decode + (i + 1) * dg)) for i in range(decode_replicas)]
    return PoolPlacement(topology, tuple(prefill), tuple(decode))


@dataclass(frozen=True)
class KVMover:
    """The KV flows of requests between given replicas of the pools."""

    placement: PoolPlacement
    target: ModelSpec
    prefill_par: Parallelism
    decode_par: Parallelism
    dtype: str
    draft: ModelSpec | None = None
    draft_tp_prefill: int = 1   # GPUs holding the draft's KV in a prefill replica
    draft_tp_decode: int = 1    # ... and in a decode replica (pools may differ in TP)

    _layouts: dict = field(default_factory=dict, compare=False, repr=False)   # (src, dst GPUs) -> layouts

    def request_flows(self, tokens: int, prefill_replica: int, decode_replica: int, request: int = 0) -> list[Flow]:
        src = _attention_group(self.placement.prefill_gpus[prefill_replica], self.prefill_par, request)
        dst = _attention_group(self.placement.decode_gpus[decode_replica], self.decode_par, request)
        layouts = self._layouts.get((src, dst))
        if layouts is None:   # (once per pair of attention groups: every request between them moves alike)
            layouts = self._layouts[(src, dst)] = self._layout(src, dst)
        target, draft = layouts
        flows = flows_of_terms(self.target, target, tokens, self.dtype)
        if draft is not None:
            flows += flows_of_terms(self.draft, draft, tokens, self.dtype)
        return flows

    def _layout(self, src: tuple, dst: tuple) -> tuple:
        """The flow layouts (simulator.cluster.network.flow_layout) of the target's and the draft's KV
        (None without a draft model) between two attention groups."""
        target = flow_layout(self.target, src, _tp_pp(self.prefill_par), dst, _tp_pp(self.decode_par))
        if self.draft is None:
            return target, None
        tp_src, tp_dst = min(self.draft_tp_prefill, len(src)), min(self.draft_tp_decode, len(dst))
        return target, flow_layout(self.draft, src[:tp_src], Parallelism(tp_src, 1), dst[:tp_dst],
                                   Parallelism(tp_dst, 1))

    def request_bytes(self, tokens: int, prefill_replica: int = 0, decode_replica: int = 0) -> float:
        return float(sum(f.bytes for f in self.request_flows(tokens, prefill_replica, decode_replica)))

    def idle_seconds(self, tokens: int, prefill_replica: int = 0, decode_replica: int = 0) -> float:
        """Transfer time of one request's KV alone on the network (its own flows contending)."""
        flows = self.request_flows(tokens, prefill_replica, decode_replica)
        return float(Network(self.placement.topology).transfers(flows).max()) if flows else 0.0

    def overlap_tail_s(self, tokens: int, prefill_replica: int, decode_replica: int, request: int = 0) -> float:
        """Idle-path time of the last layer's share (plus latency): the least a layer-wise overlapped
        transfer still needs after the prefill ends (module docstring)."""
        flows = self.request_flows(tokens, prefill_replica, decode_replica, request)
        if not flows:
            return 0.0
        topo = self.placement.topology
        per_flow_layers = self.target.num_layers / max(self.prefill_par.pp, self.decode_par.pp)
        return max(topo.latency_s(f.src_gpu, f.dst_gpu) + f.bytes / per_flow_layers / topo.path_bandwidth(
            f.src_gpu, f.dst_gpu) for f in flows)


def _attention_group(gpus: tuple[int, ...], par: Parallelism, request: int) -> tuple[int, ...]:
    """The GPUs (stage-major, tp per stage) of the attention group holding `request`'s KV (module
    docstring); all of the replica's GPUs without expert parallelism."""
    if par.attention_dp == 1:
        return gpus
    group, per_stage = request % par.attention_dp, par.tp * par.attention_dp
    return tuple(gpus[st * per_stage + group * par.tp + i] for st in range(par.pp) for i in range(par.tp))


def _tp_pp(par: Parallelism) -> Parallelism:
    return Parallelism(par.tp, par.pp)
