"""One operation of an engine step: what is computed, with its shape, FLOPs and bytes moved.

An `Op` is the unit that latency models price (`profiles.latency.LatencyModel.op_seconds`). Ops are per
GPU (already divided by tensor parallelism) and carry `count`, the number of identical instances in the
step (usually the number of layers on one pipeline stage), so that the step cost is Σ count·seconds(op).
"""
from __future__ import annotations

from typing import NamedTuple

# Op kinds. The profiler times each kind over a grid of its `dims`; the roofline prices any of them.
GEMM = "gemm"                      # dims: m, n, k
ATTN_PREFILL = "attn_prefill"      # dims: seqs, q_tokens, attn_pairs, heads, kv_heads, head_dim
ATTN_DECODE = "attn_decode"        # dims: seqs, q_per_seq, ctx_per_seq (mean), heads, kv_heads, head_dim, tree
ATTN_SHARED = "attn_shared"        # dims: seqs (distinct shared prefixes), q_tokens (their queries), keys, heads…
NORM = "norm"                      # dims: tokens, hidden
ACTIVATION = "activation"          # dims: tokens, width  (SwiGLU: silu(gate) * up)
EMBEDDING = "embedding"            # dims: tokens, hidden
ROPE = "rope"                      # dims: tokens, heads, head_dim
SAMPLING = "sampling"              # dims: tokens, vocab
MOE_ROUTER = "moe_router"          # dims: tokens, experts, top_k
ALLREDUCE = "allreduce"            # dims: bytes, ranks
ALLTOALL = "alltoall"              # dims: bytes, ranks
P2P = "p2p"                        # dims: bytes  (pipeline-parallel activation send)
# Recurrent token mixers of hybrid models (models.mixers, models.opgraph_hybrid).
GDN_PREFILL = "gdn_prefill"        # dims: tokens, seqs, heads (value), key_dim, value_dim, chunk  (chunked gated delta rule)
GDN_DECODE = "gdn_decode"          # dims: seqs, q_per_seq, heads, key_dim, value_dim  (recurrent update per token)
SSM_PREFILL = "ssm_prefill"        # dims: version, tokens, seqs, heads, state, head_dim, chunk  (Mamba scan / SSD)
SSM_DECODE = "ssm_decode"          # dims: version, seqs, q_per_seq, heads, state, head_dim  (selective state update)
CONV1D = "conv1d"                  # dims: decode (0/1), tokens, seqs, channels, kernel  (short causal conv)

OP_KINDS = (GEMM, ATTN_PREFILL, ATTN_DECODE, ATTN_SHARED, NORM, ACTIVATION, EMBEDDING, ROPE, SAMPLING, MOE_ROUTER,
            ALLREDUCE, ALLTOALL, P2P, GDN_PREFILL, GDN_DECODE, SSM_PREFILL, SSM_DECODE, CONV1D)
RECURRENT_KINDS = (GDN_PREFILL, GDN_DECODE, SSM_PREFILL, SSM_DECODE, CONV1D)
COLLECTIVE_KINDS = (ALLREDUCE, ALLTOALL, P2P)


class Op(NamedTuple):
    """A named tuple (not a dataclass): ops are built and hashed by the thousand per simulated second (every
    step shape is priced op by op), and a tuple's construction, hash and equality run in C. Its hash is
    the one a frozen dataclass of these fields had (that of the tuple of its fields), so sets and dicts of
    ops keep their order."""

    kind: str
    name: str
    flops: float
    bytes: float
    count: int = 1
    dims: tuple[tuple[str, float], ...] = ()

    def dim(self, key: str, default: float | None = None) -> float:
        for k, v in self.dims:
            if k == key:
                return v
        if default is None:
            raise KeyError(f"op {self.name} has no dim {key!r}")
        return default

    @staticmethod
    def make(kind: str, name: str, flops: float, bytes_: float, count: int = 1, **dims: float) -> "Op":
        return _tuple_new(Op, (kind, name, float(flops), float(bytes_), int(count), tuple(sorted(dims.items()))))


_tuple_new = tuple.__new__


def op_of(kind: str, name: str, flops: float, bytes_: float, count: int, dims: tuple[tuple[str, float], ...]) -> Op:
    """`Op(kind, name, flops, bytes_, count, dims)`, the same tuple, built without the named tuple's generated
    `__new__` (a Python function that only passes its arguments on to `tuple.__new__`: about a third of
    building an op, and the op graph builds one per op of every new step shape). All six fields given, in
    order; `dims` sorted by name (as `make` sorts them)."""
    return _tuple_new(Op, (kind, name, flops, bytes_, count, dims))
