"""NanoFlow's intra-device overlap of a decode pass (`cluster.latency.nano_batches: k`, k ≥ 2).

`NanoFlowForwardCost` prices a decode-only forward pass of B requests as k nano-batches (sizes differing by
at most one request, each with its share of the batch's context), each priced op by op with the scenario's
latency model — so every nano-batch re-reads the weights, which is why splitting a small batch loses —
and each op assigned to the resource that bounds it on the replica's GPU: `network` for collectives,
`compute` when its FLOPs at the datasheet peak take longer than its bytes at the HBM bandwidth, else
`memory`. The pass takes the makespan of the nano-batches through the three resources
(theory.nanoflow.flow_shop_makespan), instead of the serial sum; FLOPs and bytes are the nano-batches'
sums. With k = 1 it is ForwardCost exactly.

Approximations, named here: the ideal overlap of theory.nanoflow (no interference between co-running
kernels; NanoFlow's paper measures 59–72 % of its own optimum; the order of ops inside a layer is
relaxed to compute → memory → network), so the figures are an upper bound on the gain; only decode-only
passes overlap — a step with prompt chunks (and its decode attention) is priced serially, as is every
draft pass (drafters keep their own pricers); the host overhead of the latency model (0 on GPUs) is paid
once per pass; the serving engine's per-step time is the configured framework's (NanoFlow's own
asynchronous CPU scheduling is not modelled separately: pick an engine with async scheduling);
decode passes are interpolated on the context grid like every pass (exact at grid points; the makespan
is piecewise linear in context, so in between it is exact unless the bottleneck resource changes).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.opgraph import attention_ops, dense_ops
from models.ops import COLLECTIVE_KINDS
from models.step import StepShape
from simulator.cost.step_cost import ForwardCost
from theory.nanoflow import flow_shop_makespan

RESOURCES = ("compute", "memory", "network")


def nano_sizes(seqs: int, k: int) -> list[int]:
    """Requests per nano-batch: min(k, seqs) nano-batches whose sizes differ by at most one."""
    n = max(1, min(int(k), int(seqs)))
    base, extra = divmod(int(seqs), n)
    return [base + 1] * extra + [base] * (n - extra)


@dataclass
class NanoFlowForwardCost(ForwardCost):
    """A ForwardCost whose decode-only passes run as `nano_batches` overlapped nano-batches (module doc)."""

    nano_batches: int = 1
    peak_flops_per_s: float = 0.0
    hbm_bandwidth_bytes_per_s: float = 0.0
    _serial: ForwardCost | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._serial = ForwardCost(self.spec, self.parallelism, self.latency, self.dtype, self.kv_dtype)

    def resource(self, op) -> int:
        """Index in RESOURCES of the resource that bounds `op` on this GPU."""
        if op.kind in COLLECTIVE_KINDS:
            return 2
        return 0 if op.flops / self.peak_flops_per_s >= op.bytes / self.hbm_bandwidth_bytes_per_s else 1

    def nano_stage_costs(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        """(nano-batches, 3 resources, 3) seconds, FLOPs and bytes of each nano-batch's ops per resource."""
        sizes = nano_sizes(seqs, self.nano_batches)
        out = np.zeros((len(sizes), len(RESOURCES), 3))
        for i, n in enumerate(sizes):
            shape = StepShape(decode_seqs=n, query_tokens_per_seq=q,
                              decode_context_tokens=int(round(context_sum * n / seqs)), tree_attention=tree)
            ops = dense_ops(self.spec, n * q, n * q, self.parallelism, self.dtype) + \
                attention_ops(self.spec, shape, self.parallelism, self.dtype, self.kv_dtype)
            for op in ops:
                out[i, self.resource(op)] += op.count * np.array(
                    [self.latency.op_seconds(op), op.flops, op.bytes])
        return out

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False) -> np.ndarray:
        if self.nano_batches == 1 or seqs < 2:
            return super().exact_decode(seqs, q, context_sum, tree)
        stages = self.nano_stage_costs(seqs, q, context_sum, tree)
        seconds = flow_shop_makespan(stages[:, :, 0]) + self.latency.host_overhead_s(self.spec.num_layers, seqs * q)
        return np.array([seconds, stages[:, :, 1].sum(), stages[:, :, 2].sum()])

    def decode_attention(self, seqs: int, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        """Decode attention of a step with prompt chunks: serial (only decode-only passes overlap)."""
        return self._serial.decode_attention(seqs, q, context_sums, tree)
