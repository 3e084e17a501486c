"""Step cost of an expert-parallel (EP) MoE replica: routed-expert GEMMs of the straggler rank and the
dispatch/combine all-to-all priced on the link topology, with routing skew and pre-scheduling.

`EpForwardCost` is a `ForwardCost` whose dense part (`dense`) replaces the op graph's MoE-EP ops (which
assume uniform routing and price the all-to-all with the latency model's generic collective) by:

- Routing (`cluster.moe.routing`): `uniform`, `zipf` (hot experts, popularity ∝ rank^−s, experts placed
  contiguously so the hottest share rank 0: the worst case for a contiguous placement), or `trace`
  (recorded top-k choices, `.npy`). π_e = P(expert e among a token's top-k) (models.moe_routing).
- Per MoE layer, the expected EP load of the step's T tokens (models.moe_routing.expected_ep_load
  formulas, T/ep tokens on every rank; attention DP groups assumed balanced as in models.opgraph):
  rows_j = T·Σ_{e on j} π_e, distinct experts touched_j = Σ_{e on j} 1 − (1 − π_e)^T, send matrix
  M[i, j] = (T/ep)·h_j with h_j = P(token has an expert on rank j) (DeepEP-style dedup). T is the step's
  token count, so verifying γ+1 tokens per request (T = seqs·(γ+1)) touches more distinct experts and
  dispatches more tokens than decoding one: the verification cost grows with the experts touched.
- Straggler: the expert GEMMs are those of the rank with the most rows (models.opgraph.moe_ep_ops),
  priced by the scenario's latency model.
- All-to-all: dispatch and combine each take `simulator.cost.collectives.ep_alltoall_s` of M's off-diagonal
  part (busiest port; NVLink inside a node, NICs across nodes; the topology holds ceil(ep / GPUs per
  node) catalog nodes), in activation precision, × `theory.moe_prescheduling.volume_ratio(h, ep)` when
  pre-scheduling predicts a fraction h of activations (`cluster.moe.prescheduling_hit_rate`; the token
  move rides on the preceding collective). Approximation: pre-scheduling scales every rank's remote
  traffic by the same ratio (exact for the non-deduplicated volume; the dedup'd volume falls somewhat
  less, see theory.moe_prescheduling.remote_ranks_per_token).
`alltoall_seconds(num_tokens)` exposes the all-to-all part of a forward pass (step log column
`alltoall_s`, timeline spans).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from models.moe_routing import (ExpertPlacement, TraceRouting, UniformRouting, ZipfRouting, load_routing_choices,
                                rank_hit_probabilities)
from models.opgraph import dense_ops, moe_ep_ops
from models.ops import ALLTOALL
from models.spec import activation_bytes
from simulator.errors import ScenarioError
from simulator.cost.collectives import Topology, ep_alltoall_s
from simulator.cost.step_cost import ForwardCost, _price
from theory.moe_prescheduling import volume_ratio

EP_OP_NAMES = frozenset({"moe_gate_up", "moe_act", "moe_down", "moe_dispatch", "moe_combine"})


def make_routing(moe, num_experts: int, top_k: int, base_dir: Path):
    """The routing distribution of `cluster.moe` (ScenarioError naming the field on bad input)."""
    if moe.routing == "uniform":
        return UniformRouting(num_experts)
    if moe.routing == "zipf":
        return ZipfRouting(num_experts, float(moe.zipf_exponent))
    path = Path(moe.routing_trace)
    path = path if path.is_absolute() else base_dir / path
    try:
        routing = TraceRouting(load_routing_choices(path), num_experts)
        routing._check_k(top_k)
    except ValueError as exc:
        raise ScenarioError("cluster.moe.routing_trace", str(exc)) from None
    return routing


@dataclass(frozen=True)
class EpLoadModel:
    """Per-rank routing constants of one EP group (see the module docstring)."""

    inclusion: np.ndarray      # π_e
    ranks_of: np.ndarray       # expert -> rank
    rank_pi: np.ndarray        # Σ_{e on j} π_e
    rank_hit: np.ndarray       # h_j
    ep: int

    @staticmethod
    def build(routing, num_experts: int, top_k: int, ep: int) -> "EpLoadModel":
        placement = ExpertPlacement.contiguous(num_experts, ep)
        pi = routing.inclusion_probabilities(top_k)
        ranks = placement.ranks()
        return EpLoadModel(pi, ranks, np.bincount(ranks, weights=pi, minlength=ep),
                           rank_hit_probabilities(routing, placement, top_k), ep)

    def straggler(self, tokens: float) -> tuple[float, float]:
        """(rows, distinct experts touched) of the rank with the most rows for `tokens` step tokens."""
        rows = tokens * self.rank_pi
        touched = np.bincount(self.ranks_of, weights=1.0 - (1.0 - self.inclusion) ** tokens, minlength=self.ep)
        s = int(np.argmax(rows))
        return float(rows[s]), float(touched[s])

    def send_matrix(self, tokens: float) -> np.ndarray:
        m = np.outer(np.full(self.ep, tokens / self.ep), self.rank_hit)
        np.fill_diagonal(m, 0.0)
        return m


@dataclass
class EpForwardCost(ForwardCost):
    """ForwardCost of an EP MoE target (module docstring). `topology` spans the replica's EP group."""

    load: EpLoadModel | None = None
    topology: Topology | None = None
    prescheduling_hit_rate: float = 0.0
    _a2a: dict = field(default_factory=dict, repr=False)

    def alltoall_seconds(self, num_tokens: int) -> float:
        """Dispatch + combine seconds over all MoE layers of one forward pass over `num_tokens` tokens."""
        if num_tokens <= 0:
            return 0.0
        cached = self._a2a.get(num_tokens)
        if cached is None:
            spec = self.spec
            scale = volume_ratio(self.prescheduling_hit_rate, self.load.ep)
            one = ep_alltoall_s(self.topology, self.load.send_matrix(float(num_tokens)) * scale,
                                spec.hidden_size * activation_bytes(self.dtype))
            cached = self._a2a[num_tokens] = 2.0 * spec.num_moe_layers * one
        return cached

    def ep_ops(self, num_tokens: int):
        """The op graph's MoE-EP ops (models.opgraph.moe_ep_ops) at this routing's straggler load and the
        busiest rank's send volume (× the pre-scheduling ratio): routed-expert GEMMs + dispatch/combine."""
        rows, touched = self.load.straggler(float(num_tokens))
        sent = float(self.load.send_matrix(float(num_tokens)).sum(axis=1).max())
        sent *= volume_ratio(self.prescheduling_hit_rate, self.load.ep)
        return moe_ep_ops(self.spec, self.parallelism, rows, touched, sent, self.dtype)

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        """(seconds, flops, bytes): the op graph with its MoE-EP ops replaced by `ep_ops`, every op priced
        by the latency model except the all-to-alls, whose seconds come from the topology
        (`alltoall_seconds`); their bytes (NCCL buffer convention) stay in `bytes` as for other collectives."""
        key = (num_tokens, logits_tokens)
        cost = self._dense.get(key)
        if cost is None:
            ops = [op for op in dense_ops(self.spec, num_tokens, logits_tokens, self.parallelism, self.dtype)
                   if op.name not in EP_OP_NAMES]
            a2a_bytes = 0.0
            if num_tokens > 0:
                for op in self.ep_ops(num_tokens):
                    if op.kind == ALLTOALL:
                        a2a_bytes += op.count * op.bytes
                    else:
                        ops.append(op)
            cost = _price(self.latency, ops) + np.array([self.alltoall_seconds(num_tokens), 0.0, a2a_bytes])
            self._dense[key] = cost
        return cost


def make_ep_forward_cost(spec, par, latency, dtype: str, hardware, moe, base_dir: Path,
                         kv_dtype: str | None = None) -> EpForwardCost:
    routing = make_routing(moe, spec.num_experts, spec.experts_per_token, base_dir)
    load = EpLoadModel.build(routing, spec.num_experts, spec.experts_per_token, par.ep)
    topology = Topology.from_hardware(hardware, num_nodes=max(1, math.ceil(par.ep / hardware.gpus_per_node)))
    return EpForwardCost(spec, par, latency, dtype, kv_dtype, load=load, topology=topology,
                         prescheduling_hit_rate=moe.prescheduling_hit_rate)
