"""Step cost: seconds, FLOPs and bytes of one engine step, as a pure function of the step's aggregates.

A step of a replica is its drafter's passes (γ one-token passes for a chain; one pass per tree level over
the level's expanded nodes for trees; one pass for parallel heads) followed by one target forward pass
verifying q query tokens per request (γ+1 causal, or a tree's nodes under the tree mask). Each forward
pass is priced as Σ count·seconds over its op graph (models.opgraph) with the scenario's latency model.

- The dense part (GEMMs, norms, LM head, collectives) depends only on the number of tokens and of logits;
  it is memoized.
- Prefill attention is priced exactly, per step.
- Decode-only steps depend on the batch's Σ context, which changes every step. A whole step (γ draft
  passes + the verify pass) is priced op by op on a grid of mean context per sequence (multiples of
  CTX_GRID_TOKENS) and linearly interpolated between grid points, vectorized over many steps (the grid
  rows of all batch sizes live in one table, simulator.cost.step_table, so a bulk is one lookup).
  Approximation: exact at grid points; in between it is exact for FLOPs and bytes (affine in context)
  and for a latency model that is linear in context within a regime (the roofline, profile
  interpolation); the measured worst relative error against op-by-op pricing is below 1e-3
  (tests/simulator/cost/test_sim_step_cost.py). Step-by-step and bulk modes both use this same function. Mixed steps
  (prefill chunks + decodes) price their decode attention the same way, pass by pass.
- Host overhead: each pass also pays the latency model's `host_overhead_s` (work between kernels that no
  op prices; measured per layer by the CPU profiler, 0 for GPU latency models). It is part of `dense`.
- Pipeline parallelism: a forward pass costs the sum over its stages (no micro-batch interleaving — exact
  for the latency of one batch, pessimistic for PP throughput).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from models.opgraph import attention_ops, decode_attention_ops, dense_ops, logits_ops, prefill_attention_ops
from models.ops import ATTN_DECODE, ATTN_PREFILL, COLLECTIVE_KINDS
from models.spec import ModelSpec
from models.step import Parallelism, StepShape
from profiles.engine_time.model import EngineTime, PassLayout, one_step
from profiles.latency import LatencyModel
from simulator.cost.op_lists import SHARED_OP_LISTS
from simulator.cost.step_table import BatchContextTable, SecondsRows

CTX_GRID_TOKENS = 16


def _decode_pass(cost, seqs: int, q: int, context_sum: int, tree: bool, padded) -> np.ndarray:
    """A decode pass of `cost`, padded where the pricer is a plain ForwardCost. Approximation (named): pass
    pricers with their own pass structure (cascade and head drafters, early exit, NanoFlow, realigned,
    ShadowKV, sparse-KV and measured passes) are priced unpadded."""
    if padded is not None and type(cost).exact_decode is ForwardCost.exact_decode:
        return cost.exact_decode(seqs, q, context_sum, tree, padded)
    return cost.exact_decode(seqs, q, context_sum, tree)


def _launches(cost) -> tuple[int, int]:
    """(kernels, collectives) of one pass of a pass pricer that counts them (ForwardCost.launches), else
    (0, 0): a pricer without an op graph of its own is taken as launching nothing eagerly."""
    count = getattr(cost, "launches", None)
    return count() if count is not None else (0, 0)

# Kernel launches per op of the op graph when a pass runs eagerly: one per op instance, two for attention
# (the KV-cache write and the attention kernel: vLLM's unified attention calls reshape_and_cache_flash,
# then flash_attn_varlen_func, FlashAttentionImpl.forward; SGLang's and TensorRT-LLM's attention backends
# likewise write the cache, then attend). Elementwise ops the engines fuse are single ops of the op graph
# already (fused_add_rms_norm, silu_and_mul, rotary_embedding).
KERNELS_PER_OP = {ATTN_DECODE: 2, ATTN_PREFILL: 2}


@dataclass(frozen=True)
class Cost:
    """What one side of a step costs: seconds (FLOPs and bytes per GPU, as the op graph counts them)."""

    seconds: float
    flops: float
    bytes: float
    engine_s: float = 0.0   # the part of `seconds` that is the serving engine's per-step time (target only)
    kv_io_s: float = 0.0    # the part of `seconds` spent moving KV to or from host memory (target only)

    @staticmethod
    def of(row: np.ndarray) -> "Cost":
        """The cost in a priced row (seconds, flops, bytes[, engine seconds[, KV copy seconds]]), as Python floats:
        a step's end time is its start plus these seconds, and a NumPy scalar there would make the clock one, and
        every later sum on it a NumPy scalar operation (a bulk's scan of step boundaries: several times slower);
        the values are the same floats."""
        return Cost(*row.tolist())

    def with_kv_io(self, seconds: float) -> "Cost":
        """This cost plus `seconds` of KV copies to or from the host (simulator.core.kv.host_tier)."""
        return Cost(self.seconds + seconds, self.flops, self.bytes, self.engine_s, self.kv_io_s + seconds)


@dataclass(slots=True, init=False)
class StepCost:
    """One step's cost by phase: the drafter's passes (`draft`) and the target's pass with the serving
    engine's per-step time and the step's KV copies (`target`). The step lasts `seconds`; `verify_s` is the
    target pass alone (without engine time and KV copies). Both are fields computed at construction, not
    properties: the step loop reads `seconds` and the step log `verify_s` of every step, and a property cost
    a call each time (the prefill step of every arrival reuses one memoized StepCost)."""

    draft: Cost
    target: Cost
    seconds: float
    verify_s: float

    def __init__(self, draft: Cost, target: Cost):
        self.draft, self.target = draft, target
        self.seconds = draft.seconds + target.seconds
        self.verify_s = target.seconds - target.engine_s - target.kv_io_s

    def with_kv_io(self, seconds: float) -> "StepCost":
        return StepCost(self.draft, self.target.with_kv_io(seconds))


# A pass's cost is an array of (seconds, FLOPs, bytes): one row, or one row per step where many steps are
# priced at once (the interpolated tables of a bulk); these name its columns.
SECONDS, FLOPS, BYTES = 0, 1, 2


def zero_cost() -> np.ndarray:
    """The cost of a pass that does not run (a fresh row)."""
    return np.zeros(3)


def _price(latency: LatencyModel, ops, start: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """(seconds, flops, bytes) of a list of ops, summed in list order; `start`: the sums of ops before them
    (the running sums go on from there, so pricing a list in two parts gives the same floats)."""
    seconds, flops, nbytes = start
    for op in ops:
        seconds += op.count * latency.op_seconds(op)
        flops += op.count * op.flops
        nbytes += op.count * op.bytes
    return np.array([seconds, flops, nbytes])


def _price_limited(latency: LatencyModel, limit, ops) -> np.ndarray:
    """`_price` of a pass's dense ops with their seconds run back to back at the board's power limit `limit`
    (profiles.measured.power_limit.PowerLimit, the latency model's `power_limit`): what `_price` then
    `power_limited_seconds` gave (the same FLOPs and bytes sums in list order, the same limited seconds), with
    each op looked up once instead of twice (the second lookup only read the latency model's memo)."""
    flops = nbytes = 0.0
    priced = []
    for op in ops:
        priced.append((op, latency.op_seconds(op)))
        flops += op.count * op.flops
        nbytes += op.count * op.bytes
    return np.array([limit.seconds(priced)[0], flops, nbytes])


class LazyGrid:
    """Values f(i) at integer grid indices i, computed on demand and kept as one contiguous array
    (`table`, row 0 = index `base`; `upper` is the same rows shifted by one: upper[j] = table[j + 1]).

    Only the rows asked for are computed: the indices between two ranges asked for stay holes (`gaps`
    counts them) until asked for. Filling them when the table grew made what f priced (the distinct op
    shapes the summary's `latency_source` counts) depend on the order of lookups — with replicas sharing
    a grid, on whether they ran one after another in one process or side by side in worker processes
    (simulation.workers 1 against 2: `latency_source.op_kinds.attn_decode.ops` 386 against 372)."""

    def __init__(self, f, width: int):
        self.f, self.table, self.upper, self.base, self.top = f, np.zeros((0, width)), np.zeros((0, width)), 0, -1
        self.have = np.zeros(0, dtype=bool)   # row j computed
        self.gaps = 0                         # rows of base..top not computed

    def covers(self, first: int, last: int) -> bool:
        """Rows first..last (inclusive) are all computed."""
        if first < self.base or last > self.top:
            return False
        return self.gaps == 0 or bool(self.have[first - self.base:last - self.base + 1].all())

    def rows(self, first: int, last: int) -> tuple[np.ndarray, int]:
        """The table with rows first..last (inclusive) computed, and the index of its row 0."""
        if not self.covers(first, last):
            self._extend(first, last)
        return self.table, self.base

    def _extend(self, first: int, last: int) -> None:
        have_lo, have_hi = self.base, self.top
        if have_hi >= have_lo and (first < have_lo or last > have_hi):   # room for first..last, rows not computed
            lo, hi = min(first, have_lo), max(last, have_hi)
            table = np.zeros((hi - lo + 1, self.table.shape[1]))
            have = np.zeros(hi - lo + 1, dtype=bool)
            table[have_lo - lo:have_hi - lo + 1] = self.table
            have[have_lo - lo:have_hi - lo + 1] = self.have
            self.table, self.have, self.base, self.top = table, have, lo, hi
        elif have_hi < have_lo:
            self.table = np.zeros((last - first + 1, self.table.shape[1]))
            self.have = np.zeros(last - first + 1, dtype=bool)
            self.base, self.top = first, last
        for i in range(first, last + 1):
            j = i - self.base
            if not self.have[j]:
                self.table[j] = self.f(i)
                self.have[j] = True
        self.gaps = int((~self.have).sum())
        self.upper = self.table[1:]


def interpolate_on_grid(grids: dict, make_grid, seqs, context_sums: np.ndarray, monotone: bool = False) -> np.ndarray:
    """Linear interpolation in mean context per sequence (grid step CTX_GRID_TOKENS) of per-batch-size
    tables; `seqs` is an int or one value per row (piecewise constant); `make_grid(seqs)` builds the
    LazyGrid of a batch size the first time it is seen. `monotone`: the caller guarantees that `seqs`
    never increases and that the context grows within each run of equal `seqs` (a bulk of decode steps,
    which only loses requests), which lets the lookup skip searching for the rows it needs.

    Called once per simulated bulk, so it is written for few numpy calls; the arithmetic per element
    is the same whatever the path, so every caller gets bit-identical values for equal inputs."""
    context_sums = np.asarray(context_sums)
    if one_step(seqs) and context_sums.shape == (1,):   # one step (a mixed step's decode attention): scalars
        return _interpolate_one(grids, make_grid, int(seqs), context_sums.item(0))
    if one_step(seqs):
        x = context_sums / float(CTX_GRID_TOKENS * seqs)
        single = True
    else:
        seqs = np.asarray(seqs, dtype=np.int64)
        x = context_sums / (CTX_GRID_TOKENS * seqs)  # int / int: both as float64, as for a scalar
        single = seqs[0] == seqs[-1] if monotone else not (seqs != seqs[0]).any()
    lo = x.astype(np.int64)  # floor: contexts are >= 0
    w = (x - lo)[:, None]
    if single:
        edges = (0, len(x))
        batches = (int(seqs if one_step(seqs) else seqs[0]),)
    else:
        cuts = np.flatnonzero(seqs[1:] != seqs[:-1]) + 1
        edges = (0, *cuts.tolist(), len(x))
        batches = seqs[list(edges[:-1])].tolist()
    below, above = [], []
    for a, b, batch in zip(edges[:-1], edges[1:], batches):
        grid = grids.get(batch)
        if grid is None:
            grid = grids[batch] = make_grid(batch)
        seg = lo[a:b]
        first, last = (int(seg[0]), int(seg[-1])) if monotone else (int(seg.min()), int(seg.max()))
        if first < grid.base or last + 1 > grid.top or grid.gaps and not grid.covers(first, last + 1):
            grid.rows(first, last + 1)
        i = seg - grid.base
        below.append(grid.table[i])
        above.append(grid.upper[i])
    if len(below) == 1:
        return below[0] * (1.0 - w) + above[0] * w
    return np.concatenate(below) * (1.0 - w) + np.concatenate(above) * w


def _interpolate_one(grids: dict, make_grid, seqs: int, context_sum) -> np.ndarray:
    """`interpolate_on_grid` of one context sum and batch, in scalar arithmetic with the same operations
    (int → float64 division, truncation, the same two rows and weights): the same floats, as a (1, width) array."""
    x = context_sum / float(CTX_GRID_TOKENS * seqs)
    lo = int(x)   # floor: contexts are >= 0
    w = x - lo
    grid = grids.get(seqs)
    if grid is None:
        grid = grids[seqs] = make_grid(seqs)
    if lo < grid.base or lo + 1 > grid.top or grid.gaps and not grid.covers(lo, lo + 1):
        grid.rows(lo, lo + 1)
    i = lo - grid.base
    return grid.table[i:i + 1] * (1.0 - w) + grid.upper[i:i + 1] * w


@dataclass
class ForwardCost:
    """Prices forward passes of one model (target or draft) on one replica."""

    spec: ModelSpec
    parallelism: Parallelism
    latency: LatencyModel
    dtype: str
    kv_dtype: str | None = None   # the KV cache's dtype (None: the model's 16-bit dtype; the factory passes the deployment's)
    _dense: dict = field(default_factory=dict, repr=False)
    _token_sums: dict = field(default_factory=dict, repr=False)   # `_before_logits`
    _prefill_attn: dict = field(default_factory=dict, repr=False)
    _decode_grid: dict = field(default_factory=dict, repr=False)
    _launches: tuple | None = field(default=None, repr=False)

    def stage_gpus(self) -> float:
        """GPUs sharing one pipeline stage's work: the multiplier from the op graph's per-GPU FLOPs and
        bytes to the replica's (a pass pricer's protocol, with `gpu_layers`)."""
        return float(self.parallelism.gpus // self.parallelism.pp)

    def gpu_layers(self) -> int:
        """Layers one pass runs on the GPUs (for the engine's per-layer launch cost); 0 off the GPU."""
        return self.spec.num_layers

    def passes_per_call(self) -> int:
        """GPU passes one call prices (1; a composite drafter such as a cascade prices several)."""
        return 1

    def launches(self) -> tuple[int, int]:
        """(kernels, collective calls) one decode pass launches when run eagerly, counted on the op graph
        (KERNELS_PER_OP); the same for any batch (the op graph's op counts do not depend on it)."""
        if self._launches is None:
            ops = self._dense_ops(1, 1) + self._decode_ops(1, 1, 1, False)
            kernels = sum(op.count * KERNELS_PER_OP.get(op.kind, 1) for op in ops if op.kind not in COLLECTIVE_KINDS)
            collectives = sum(op.count for op in ops if op.kind in COLLECTIVE_KINDS)
            self._launches = (kernels, collectives)
        return self._launches

    @cached_property
    def _op_lists(self) -> dict:
        """This model's op lists, shared with the other runs of the process (simulator.cost.op_lists)."""
        return SHARED_OP_LISTS.table(self.spec, self.parallelism, self.dtype, self.kv_dtype)

    def _shared_ops(self, key: tuple, build) -> tuple:
        """The op list of pass `key`, built by `build()` the first time the process needs it."""
        ops = self._op_lists.get(key)
        if ops is None:
            ops = tuple(build())
            SHARED_OP_LISTS.add(self._op_lists, key, ops)
        return ops

    def _dense_ops(self, num_tokens: int, logits_tokens: int) -> tuple:
        return self._shared_ops(("dense", num_tokens, logits_tokens), lambda: dense_ops(
            self.spec, num_tokens, logits_tokens, self.parallelism, self.dtype))

    @cached_property
    def _logits_last(self) -> bool:
        """The LM head and sampling are the last ops of `dense_ops` (models.opgraph.logits_ops): one tensor-
        and one pipeline-parallel rank (else collectives over the step's tokens follow them)."""
        return self.parallelism.tp == 1 and self.parallelism.pp == 1

    def _logits_ops(self, logits_tokens: int) -> tuple:
        return self._shared_ops(("logits", logits_tokens), lambda: logits_ops(
            self.spec, logits_tokens, self.parallelism, self.dtype))

    def _before_logits(self, num_tokens: int) -> tuple[float, float, float]:
        """The running (seconds, flops, bytes) of `dense_ops(num_tokens, ·)` before its logits ops: the ops
        of `dense_ops(num_tokens, 0)` (with `_logits_last`), priced once per token count."""
        sums = self._token_sums.get(num_tokens)
        if sums is None:
            sums = self._token_sums[num_tokens] = tuple(_price(self.latency, self._dense_ops(num_tokens, 0)).tolist())
        return sums

    def _prefill_ops(self, tokens: int, seqs: int, attn_pairs: int) -> tuple:
        return self._shared_ops(("prefill", tokens, seqs, attn_pairs), lambda: prefill_attention_ops(
            self.spec, tokens, seqs, attn_pairs, self.parallelism, self.dtype, self.kv_dtype))

    def _decode_ops(self, seqs: int, q: int, context_sum: int, tree: bool) -> tuple:
        return self._shared_ops(("decode", seqs, q, context_sum, tree), lambda: decode_attention_ops(
            self.spec, seqs, q, context_sum, tree, self.parallelism, self.dtype, self.kv_dtype))

    def _attention_ops(self, shape: StepShape) -> list:
        return attention_ops(self.spec, shape, self.parallelism, self.dtype, self.kv_dtype)

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        """Non-attention ops of one pass, plus the pass's host overhead (the latency model's
        `host_overhead_s`: measured on CPU, 0 on GPUs; no FLOPs or bytes). A latency model with
        `sustained_seconds` (measured GPU kernels) prices the ops as run back to back at the board's power
        limit (profiles.measured.power_limit: the dense part's compute-bound share sets the slow-down)."""
        key = (num_tokens, logits_tokens)
        cost = self._dense.get(key)
        if cost is None:
            if 0 < logits_tokens <= num_tokens and self._logits_last and getattr(self.latency, "power_limit", None) is None:
                # the LM head and sampling come last: the sums go on from those of the token-only ops (priced
                # once per token count; mixed steps repeat token counts with other logits rows)
                cost = _price(self.latency, self._logits_ops(logits_tokens), self._before_logits(num_tokens))
            else:
                ops = self._dense_ops(num_tokens, logits_tokens)
                limit = getattr(self.latency, "power_limit", None)
                if limit is None:
                    cost = _price(self.latency, ops)
                else:  # run back to back at the board's power limit (measured GPUs): the ops priced once, for both
                    cost = _price_limited(self.latency, limit, ops)
            if num_tokens:
                cost[SECONDS] += self.latency.host_overhead_s(self.spec.num_layers, num_tokens)
            self._dense[key] = cost
        return cost

    def prefill_attention(self, tokens: int, seqs: int, attn_pairs: int) -> np.ndarray:
        """(seconds, flops, bytes) of a step's prefill attention (a new array each call: callers may add to
        it; priced op by op once per (tokens, sequences, pairs))."""
        key = (tokens, seqs, attn_pairs)
        cost = self._prefill_attn.get(key)
        if cost is None:
            cost = self._prefill_attn[key] = _price(self.latency, self._prefill_ops(tokens, seqs, attn_pairs))
        return cost.copy()

    def exact_decode(self, seqs: int, q: int, context_sum: int, tree: bool = False,
                     padded: tuple[int, int] | None = None) -> np.ndarray:
        """(seconds, flops, bytes) of a decode-only pass priced op by op (no interpolation); `tree`: the q
        query tokens of a request attend under a tree mask (models.opgraph prices the full q×q block);
        `padded`: (tokens, logits rows) the dense ops run over when the engine pads the batch to a CUDA-graph
        size (profiles.engine_time.graphs; padded slots attend to nothing)."""
        tokens, logits = padded if padded is not None else (seqs * q, seqs * q)
        return self.dense(tokens, logits) + _price(self.latency, self._decode_ops(seqs, q, context_sum, tree))

    def shared_prefix_delta(self, seqs: int, q: int, context_sum: int, shared: tuple[int, int, int],
                            tree: bool = False) -> np.ndarray:
        """(seconds, flops, bytes) that shared-prefix attention adds to (negative: saves from) one decode
        pass's attention: the op graph with the shared blocks read once (models.opgraph.attention_ops)
        minus the plain one, both priced op by op."""
        plain = StepShape(decode_seqs=seqs, query_tokens_per_seq=q, decode_context_tokens=context_sum,
                          tree_attention=tree)
        split = StepShape(decode_seqs=seqs, query_tokens_per_seq=q, decode_context_tokens=context_sum,
                          tree_attention=tree, shared_context_tokens=shared[0], shared_prefix_tokens=shared[1],
                          shared_prefix_seqs=shared[2])
        return _price(self.latency, self._attention_ops(split)) - _price(self.latency, self._attention_ops(plain))

    def decode_attention(self, seqs: int, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        """(n, 3) costs of the decode attention alone (interpolated pass minus its dense part)."""
        return self.decode_forward(seqs, q, context_sums, tree) - self.dense(seqs * q, seqs * q)

    def decode_forward(self, seqs, q: int, context_sums: np.ndarray, tree: bool = False) -> np.ndarray:
        """(n, 3) costs of decode-only forward passes of `seqs` sequences (an int, or one value per step,
        piecewise constant) with `q` query tokens each, at each Σ context (interpolated on the grid)."""
        grids = self._decode_grid.setdefault((q, tree), {})
        return interpolate_on_grid(grids, lambda batch: LazyGrid(
            lambda i: self.exact_decode(batch, q, i * CTX_GRID_TOKENS * batch, tree), 3), seqs, context_sums)


@dataclass
class StepCostModel:
    """Cost of one replica step: draft passes (if a drafter is configured) + the target pass.

    Chain speculation (default): γ draft passes of one token per request, a verify pass of γ+1 causal
    query tokens per request. Trees and multi-draft (simulator.speculation.shapes): `widths[j]` draft tokens per
    request in draft pass j (the tree's expanded level widths; a parallel-head drafter makes one pass) and
    `verify_q` query tokens per request (the tree's node count, root included) under a tree mask.
    `exposed_draft(draft, target)`, when set, maps the (n, 3) draft and target costs of n steps to the
    draft's contribution to the step time (seconds column; FLOPs and bytes are kept): used when the drafter
    runs concurrently with verification on its own GPUs (simulator.cost.drafters.overlap_exposure). The step
    time is always draft seconds + target seconds, so the engine and bulk mode need not know placement.

    `vllm_proposer` (a chain draft model, `drafter.passes: vllm`): the pass layout of vLLM V1's
    DraftModelProposer (vllm/v1/spec_decode/llm_base_proposer.py, `propose`): the first draft pass runs
    every token the step scheduled (prompt chunks and each decoding request's q verified tokens) plus one
    slot per request for the token sampled this step (`extra_slots_per_request` = 1 for a draft model that
    takes no hidden states; recorded passes of vLLM 0.32: 10 verified tokens of 2 requests → a 12-token
    draft pass, a 75-token prompt → 76) and computes one logits row per request;
    then γ−1 passes of one token for every request of the step, prompt chunks included. Approximations:
    a prompt chunk's extra token attends to the chunk only, and in the later passes a chunk's context is
    taken as the chunk's length (both exact for a prompt computed in one chunk).

    `proposer` (EAGLE-3 and MTP drafters): the draft passes of the engines' hidden-state proposers and
    the target's hidden-state capture (simulator.cost.proposer.HiddenStateProposer).
    """

    target: ForwardCost
    draft: ForwardCost | None  # None: plain decoding (a drafter with γ = 0 is built as None)
    depth: int                 # draft tokens a step can accept: the chain's γ, a tree's depth
    widths: tuple[int, ...] | None = None
    verify_q: int | None = None
    tree: bool = False
    exposed_draft: object | None = None
    engine: EngineTime | None = None
    vllm_proposer: bool = False
    proposer: object | None = None   # simulator.cost.proposer.HiddenStateProposer (EAGLE-3, MTP pass layout)
    _step_grid: dict = field(default_factory=dict, repr=False)
    _prefill_steps: dict = field(default_factory=dict, repr=False)

    @cached_property
    def flops_scales(self) -> tuple[float, float]:
        """(draft, target) multipliers from the op graph's per-GPU FLOPs and bytes to the replica's totals:
        the GPUs that share one pipeline stage's work (tp; ep under expert parallelism, where the MoE part
        is the straggler rank's, so the total slightly over-counts expert work under skewed routing)."""
        return (self.draft.stage_gpus() if self.draft is not None else 1.0, self.target.stage_gpus())

    @property
    def q(self) -> int:
        """Query tokens per decode request: `verify_q` when given, else γ+1 (1 without a drafter)."""
        if self.verify_q is not None:
            return self.verify_q
        return 1 if self.draft is None else self.depth + 1

    @property
    def draft_widths(self) -> tuple[int, ...]:
        if self.draft is None:
            return ()
        return self.widths if self.widths is not None else (1,) * self.depth

    def _expose(self, draft: np.ndarray, target: np.ndarray) -> np.ndarray:
        if self.exposed_draft is None:
            return draft
        return self.exposed_draft(draft, target)

    def step(self, prefill_tokens: int, prefill_seqs: int, prefill_attn_pairs: int,
             decode_seqs: int, decode_context_tokens: int,
             shared: tuple[int, int, int] | None = None, host: bool = True) -> StepCost:
        """(draft cost, target cost) of one step; `host` False: the engine's host work of the step was done
        ahead for its group (vLLM V0 multi-step scheduling, simulator.core.sched.multi_step).

        Decode requests each verify q query tokens (the last emitted token and the drafts) against
        their cached context. The drafter runs one pass per entry of `draft_widths` over the decode
        requests, its context growing by one per pass; its first pass also prefills the step's prompt
        chunks. Approximation: when all drafts were accepted in the previous step the draft must also
        ingest the last draft token; that one extra draft token per such request is not priced.
        `shared`: shared-prefix attention aggregates of the decode requests (`with_shared_prefix`).
        """
        if not host and self.engine is not None:
            return self._host_free.step(prefill_tokens, prefill_seqs, prefill_attn_pairs, decode_seqs,
                                        decode_context_tokens, shared)
        if shared is not None and shared[0] and decode_seqs:
            costs = self.step(prefill_tokens, prefill_seqs, prefill_attn_pairs, decode_seqs, decode_context_tokens)
            d, t = costs.draft, costs.target
            d, t = np.array([[d.seconds, d.flops, d.bytes]]), np.array([[t.seconds, t.flops, t.bytes, t.engine_s]])
            t = self.with_shared_prefix(d, t, decode_seqs, np.array([decode_context_tokens]), [shared],
                                        prefill_tokens, prefill_seqs)
            return StepCost(Cost.of(d[0]), Cost.of(t[0]))
        if prefill_tokens == 0:
            d, t = self.decode_steps(decode_seqs, np.array([decode_context_tokens]))
            return StepCost(Cost.of(d[0]), Cost.of(t[0]))
        if decode_seqs == 0:  # prefill-only steps repeat (one prompt of a given length): memoized
            key = (prefill_tokens, prefill_seqs, prefill_attn_pairs)
            costs = self._prefill_steps.get(key)
            if costs is None:
                costs = self._prefill_steps[key] = self._priced_step(prefill_tokens, prefill_seqs,
                                                                     prefill_attn_pairs, 0, 0)
            return costs
        return self._priced_step(prefill_tokens, prefill_seqs, prefill_attn_pairs, decode_seqs,
                                 decode_context_tokens)

    def _priced_step(self, prefill_tokens: int, prefill_seqs: int, prefill_attn_pairs: int,
                     decode_seqs: int, decode_context_tokens: int) -> StepCost:
        """`step` for a step with prompt tokens, op by op (decode attention interpolated)."""
        q = self.q
        logits = prefill_seqs + decode_seqs * q
        tokens = prefill_tokens + decode_seqs * q
        if self.engine is not None:  # a mixed step padded to a piecewise CUDA-graph size (vLLM V1; SGLang >= 0.5.10)
            padded = self.engine.launch(prefill_tokens, decode_seqs, q).tokens
            logits = padded - tokens + logits if self.engine.graphs.pad_mixed_logits else logits
            tokens = max(tokens, padded)
        target = self.target.dense(tokens, logits) + \
            self.target.prefill_attention(prefill_tokens, prefill_seqs, prefill_attn_pairs)
        if decode_seqs:
            target = target + self.target.decode_attention(decode_seqs, q, np.array([decode_context_tokens]),
                                                           self.tree)[0]
        draft = zero_cost()
        widths = self.draft_widths
        if self.draft is not None and self.proposer is not None:
            target = target + self.proposer.target_extra(prefill_tokens + decode_seqs * q)
            draft = self.proposer.draft(self.draft, q, prefill_tokens, prefill_seqs, prefill_attn_pairs, decode_seqs,
                                        decode_context_tokens)
            if decode_seqs:
                draft = self._expose(draft[None, :], target[None, :])[0]
        elif self.draft is not None and self.vllm_proposer:
            draft = self._vllm_draft(prefill_tokens, prefill_seqs, prefill_attn_pairs, decode_seqs,
                                     decode_context_tokens)
            if decode_seqs:
                draft = self._expose(draft[None, :], target[None, :])[0]
        elif self.draft is not None:
            w0 = widths[0] if widths and decode_seqs else 0
            draft = self.draft.dense(prefill_tokens + decode_seqs * w0, prefill_seqs + decode_seqs * w0) + \
                self.draft.prefill_attention(prefill_tokens, prefill_seqs, prefill_attn_pairs)
            if decode_seqs and widths:
                ctx = decode_context_tokens + decode_seqs * np.arange(len(widths))
                draft = draft + self.draft.decode_attention(decode_seqs, w0, ctx[:1])[0]
                for j in range(1, len(widths)):
                    draft = draft + self.draft.decode_forward(decode_seqs, widths[j], ctx[j:j + 1])[0]
            if decode_seqs:
                draft = self._expose(draft[None, :], target[None, :])[0]
        target = self.with_engine(draft[None, :], target[None, :], prefill_tokens, prefill_seqs, decode_seqs)[0]
        return StepCost(Cost.of(draft), Cost.of(target))

    def _vllm_draft(self, prefill_tokens: int, prefill_seqs: int, prefill_attn_pairs: int, decode_seqs: int,
                    decode_context_tokens: int) -> np.ndarray:
        """(seconds, flops, bytes) of the draft passes of one step under `vllm_proposer` (class docstring)."""
        q, d = self.q, self.draft
        requests = prefill_seqs + decode_seqs
        draft = d.dense(prefill_tokens + decode_seqs * q + requests, requests)
        if prefill_tokens:
            draft = draft + d.prefill_attention(prefill_tokens + prefill_seqs, prefill_seqs,
                                                prefill_attn_pairs + prefill_tokens)
        if decode_seqs:
            draft = draft + d.decode_attention(decode_seqs, q + 1, np.array([decode_context_tokens]))[0]
        context = decode_context_tokens + decode_seqs * (q + 1) + prefill_tokens + prefill_seqs
        for j in range(1, self.depth):
            draft = draft + d.decode_forward(requests, 1, np.array([context + (j - 1) * requests]))[0]
        return draft

    @cached_property
    def pass_layout(self) -> PassLayout:
        """The passes of a speculative (or plain) decode step, for the engine's per-step time: the
        proposer's iterations, and the GPU passes and layers (a drafter with no GPU layers, on the host or
        n-gram, adds none)."""
        passes = len(self.draft_widths)
        draft_layers = self.draft.gpu_layers() if self.draft is not None else 0
        on_gpu = passes if draft_layers else 0
        layers = self.target.gpu_layers() + on_gpu * draft_layers
        kernels, collectives = _launches(self.target)
        if on_gpu:
            dk, dc = _launches(self.draft)
            kernels, collectives = kernels + on_gpu * dk, collectives + on_gpu * dc
        return PassLayout(passes, 1 + on_gpu * (self.draft.passes_per_call() if on_gpu else 1), layers,
                          kernels, collectives)

    def decode_padding(self, decode_seqs: int) -> tuple[tuple[int, int] | None, int]:
        """How the engine pads a decode-only step of `decode_seqs` requests to a CUDA-graph size: (the
        target pass's (tokens, logits rows), or None when unpadded; the sequences its draft passes run
        over). profiles.engine_time.graphs: padded slots cost their dense ops, the LM head only where the
        engine's graph includes it."""
        if self.engine is None or decode_seqs == 0:
            return None, decode_seqs
        q = self.q
        tokens = self.engine.launch(0, decode_seqs, q).tokens
        if tokens <= decode_seqs * q:
            return None, decode_seqs
        logits = tokens if self.engine.graphs.pad_logits else decode_seqs * q
        return (tokens, logits), -(-tokens // q)

    def with_engine(self, draft: np.ndarray, target: np.ndarray, prefill_tokens, prefill_seqs,
                    decode_seqs) -> np.ndarray:
        """(n, 4) target costs (seconds, flops, bytes, engine seconds): the target pass plus the serving
        engine's per-step time (profiles.engine_time) of steps whose draft and target costs are given
        (zero engine time without an engine model). A step without decodes runs no draft pass."""
        if self.engine is None:
            return np.concatenate([target, np.zeros((len(target), 1))], axis=1)
        layout = self.pass_layout
        if one_step(decode_seqs) and decode_seqs == 0 and layout.draft_passes:
            layout = self._no_draft_layout
        if len(target) == 1 and one_step(decode_seqs):  # one step: scalar arithmetic
            t = target[0]
            device = float(draft[0, 0] + t[0])
            e = self.engine.wall_seconds(device, prefill_tokens, prefill_seqs, decode_seqs, self.q, layout) - device
            return np.array([[t[0] + e, t[1], t[2], e]])
        device = draft[:, SECONDS] + target[:, SECONDS]
        engine_s = self.engine.wall_seconds(device, prefill_tokens, prefill_seqs, decode_seqs, self.q, layout) - device
        return np.concatenate([target[:, :1] + engine_s[:, None], target[:, 1:], engine_s[:, None]], axis=1)

    def with_shared_prefix(self, draft: np.ndarray, target: np.ndarray, decode_seqs, context_sums: np.ndarray,
                           shared: list, prefill_tokens: int = 0, prefill_seqs: int = 0) -> np.ndarray:
        """(n, 4) target costs of steps whose decode requests share cached prefix blocks (`shared[i]` =
        (shared context tokens, distinct shared tokens, sharers) of step i; models.step.StepShape): the
        target pass's attention reads the shared blocks once for the batch (Hydragen/BatchLLM,
        `ForwardCost.shared_prefix_delta`), and the engine time is recomputed on the new device time.
        Approximation: only the target's attention is re-priced; a draft model reads its own KV as before."""
        seqs = np.broadcast_to(np.asarray(decode_seqs), (len(target),))
        out = target.copy()
        for i, agg in enumerate(shared):
            if agg is None or not agg[0]:
                continue   # rows without sharing keep their cost exactly
            device = target[i:i + 1, :3].copy()
            device[0, 0] -= target[i, 3]
            device[0] += self.target.shared_prefix_delta(int(seqs[i]), self.q, int(context_sums[i]), agg, self.tree)
            out[i] = self.with_engine(draft[i:i + 1], device, prefill_tokens, prefill_seqs, int(seqs[i]))[0]
        return out

    @cached_property
    def _host_free(self) -> "StepCostModel":
        """This model with an engine whose host work is already done (`step(host=False)`)."""
        import dataclasses
        return dataclasses.replace(self, engine=self.engine.without_host(), _step_grid={}, _prefill_steps={})

    @cached_property
    def _no_draft_layout(self) -> PassLayout:
        return PassLayout(0, 1, self.target.gpu_layers(), *_launches(self.target))

    def _make_step_grid(self, batch: int) -> LazyGrid:
        return LazyGrid(lambda i: self.exact_decode_step(batch, i * CTX_GRID_TOKENS * batch), 7)

    def exact_decode_step(self, decode_seqs: int, context_sum: int) -> np.ndarray:
        """(draft seconds, flops, bytes, target seconds, flops, bytes, engine seconds) of a decode-only
        step, op by op; target seconds include the engine's (see `with_engine`)."""
        padded, draft_seqs = self.decode_padding(decode_seqs)
        target = _decode_pass(self.target, decode_seqs, self.q, context_sum, self.tree, padded)
        draft = zero_cost()
        if self.proposer is not None and self.draft is not None:
            target = target + self.proposer.target_extra(decode_seqs * self.q)
            draft = self.proposer.draft(self.draft, self.q, 0, 0, 0, decode_seqs, context_sum)
        elif self.vllm_proposer:
            draft = self._vllm_draft(0, 0, 0, decode_seqs, context_sum)
        else:
            for j, w in enumerate(self.draft_widths):
                pad = (draft_seqs * w, draft_seqs * w) if draft_seqs != decode_seqs else None
                draft = draft + _decode_pass(self.draft, decode_seqs, w, context_sum + j * decode_seqs, False, pad)
        if self.draft is not None:
            draft = self._expose(draft[None, :], target[None, :])[0]
        target = self.with_engine(draft[None, :], target[None, :], 0, 0, decode_seqs)[0]
        return np.concatenate([draft, target])

    def decode_steps(self, decode_seqs, context_sums: np.ndarray, monotone: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Costs of decode-only steps at each Σ context, with `decode_seqs` requests (an int or one value
        per step): (n, 3) draft and (n, 4) target arrays of (seconds, flops, bytes[, engine seconds];
        target seconds include the engine's). Whole steps (γ draft
        passes + verify) are priced exactly on the grid of mean context and interpolated in between.
        Rows come from one (batch × grid index) table (simulator.cost.step_table); `monotone` (the steps are
        a bulk's, see `interpolate_on_grid`) only matters when that table is full."""
        context_sums = np.asarray(context_sums, dtype=np.int64)
        if one_step(decode_seqs):
            x = context_sums / float(CTX_GRID_TOKENS * decode_seqs)
            seqs = np.full(len(context_sums), decode_seqs, dtype=np.int64)
        else:
            seqs = np.asarray(decode_seqs, dtype=np.int64)
            x = context_sums / (CTX_GRID_TOKENS * seqs)  # as in interpolate_on_grid: bit-identical
        lo = x.astype(np.int64)
        rows = self._step_table.lookup(seqs, lo)
        if rows is None:  # the table would outgrow its memory cap: per-batch tables, same values
            both = interpolate_on_grid(self._step_grid, self._make_step_grid, seqs, context_sums, monotone)
        else:   # column by column ((7, n) arrays): the arithmetic runs along n contiguous values, not n rows
            # of 7 (half the instructions in a flush); the same formula elementwise, so the same values: below·(1 −
            # w) + above·w, in place in the looked-up arrays (fresh copies: no temporaries of (7, n))
            below, above = (r.T.copy() for r in rows)
            w = x - lo
            below *= 1.0 - w
            above *= w
            below += above
            both = below.T   # (n, 7) again, each column contiguous
        return both[:, :3], both[:, 3:]

    @cached_property
    def decode_seconds_rows(self) -> SecondsRows:
        """(decode_seqs, grid index) -> draft and target seconds of the two grid rows around it: what
        `decode_steps` interpolates, for callers that price one step at a time in scalar arithmetic."""
        def pair(batch: int, i: int):
            found = self._step_table.pair(batch, i)
            if found is None:  # the table is full: the same rows, computed directly
                return (self.exact_decode_step(batch, i * CTX_GRID_TOKENS * batch),
                        self.exact_decode_step(batch, (i + 1) * CTX_GRID_TOKENS * batch))
            return found
        return SecondsRows(pair)

    @cached_property
    def _step_table(self) -> BatchContextTable:
        return BatchContextTable(lambda batch, i: self.exact_decode_step(batch, i * CTX_GRID_TOKENS * batch), 7)
