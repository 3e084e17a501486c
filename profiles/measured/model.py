"""`MeasuredLatencyModel`: op seconds from real per-kernel GPU measurements (aiconfigurator-core tables).

Which table prices which op kind (everything else is the roofline's, and the run's `latency_source`
says so, with the number of distinct shapes priced and how many were extrapolated or mapped):

| op kind | table | how |
|---|---|---|
| gemm | gemm_perf (framework's GEMM, per dtype) | (m, n, k) grid; a grouped (MoE expert) GEMM of g equal problems is priced as one GEMM with g·k inner dimension (same FLOPs and weight bytes, one kernel) |
| MoE experts (the gemm and activation ops tagged `moe_part`) | moe_perf (fused MoE kernel) | the layer's measured time on its `moe_part` 0 op, 0 on the activation and down ops of the same fused kernel (`profiles.measured.moe`); configurations not measured fall back to the GEMM rule |
| attn_prefill | context_attention_perf | see `profiles.measured.attention` |
| attn_decode | generation_attention_perf | see `profiles.measured.attention`; q > 1 (verify): `profiles.measured.verify` |
| allreduce | the framework's custom all-reduce (CUDA-graph mode), else NCCL all-reduce | ranks measured (2, 4, 8) |
| alltoall | NCCL all-to-all | ranks measured |
| gdn_prefill, gdn_decode, conv1d (gated DeltaNet layers) | gdn_perf (linear_attention family) | per kernel and head layout, `profiles.measured.linear_attention` |

Kernel times in the tables are device times (the package times kernels in isolation); the serving
engine's own per-step time (launches, scheduling, sampling glue) is `profiles.engine_time`, not here,
so `host_overhead_s` is 0. The tables time kernels in short bursts on an idle GPU; a pass run back to back
at the board's power limit is slowed where the GPU's limit was measured (`sustained_seconds`,
`profiles.measured.power_limit`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from models import ops as K
from models.opgraph import window_pairs
from models.ops import Op
from models.spec import FP4_DTYPES, dense_weight_dtype, dtype_bytes, kv_cache_dtype
from profiles.hardware import HardwareSpec, get_hardware
from profiles.measured.attention import CONTEXT, GENERATION, AttentionTable
from profiles.measured import linear_attention as gdn
from profiles.measured.ideal import Peaks
from profiles.measured.moe import MoeTable
from profiles.measured.power_limit import power_limit
from profiles.measured.source import (CONTEXT_ATTENTION, CUSTOM_ALLREDUCE, DISTRIBUTION, GEMM, GENERATION_ATTENTION,
                                      KERNELS_ONLY, LINEAR_ATTENTION, MOE, MeasuredDataError, ResolvedSource,
                                      package_version, table_framework)
from profiles.measured.tables import CollectiveTables, GemmTables
from profiles.measured.verify import verify_seconds
from profiles.roofline import RooflineLatencyModel
from profiles.shared_tables import BoundedTables

ROOFLINE = "roofline"


@dataclass(frozen=True)
class _Tables:
    gemm: GemmTables
    attention: dict
    moe: MoeTable | None
    collectives: CollectiveTables
    gdn: object = None      # profiles.measured.linear_attention.GdnTable, or None


@lru_cache(maxsize=32)
def _tables(source: ResolvedSource, hardware: HardwareSpec) -> _Tables:
    """The tables of one source and GPU, read once per process: runs of a sweep, a plan or a validation
    share them, and with them every grid and interpolation curve already built."""
    peaks = Peaks.of(hardware, "bf16")
    attention = {}
    for family, phase in ((CONTEXT_ATTENTION, CONTEXT), (GENERATION_ATTENTION, GENERATION)):
        if source.path(family) is not None:
            attention[phase] = AttentionTable(source.path(family), phase, peaks)
    moe = MoeTable(source.path(MOE), peaks) if source.path(MOE) is not None else None
    if source.hardware_id in KERNELS_ONLY:
        collectives = CollectiveTables(None, None, peaks)
    else:
        collectives = CollectiveTables(source.path(CUSTOM_ALLREDUCE), source.nccl_path, peaks)
    gdn_table = gdn.GdnTable(source.path(LINEAR_ATTENTION), peaks) if source.path(LINEAR_ATTENTION) is not None else None
    return _Tables(GemmTables(source.path(GEMM), lambda dt: Peaks.of(hardware, dt), table_framework(source.path(GEMM))),
                   attention, moe, collectives,
                   gdn_table)


MAX_SHARED_PRICES = 500_000   # op prices kept in all (every tables, GPU and dtypes) for the runs of one process


class SharedPrices(BoundedTables):
    """op -> (seconds, source label, approximate) per (tables, GPU, dtype, KV dtype): what every model of
    those prices an op at (a pure function of the op), shared by the runs of one process (a plan's DES
    confirmations, a sweep's points), which price the same shapes again. Each model still counts the
    distinct ops it priced itself (`coverage`), so a run's `latency_source` does not depend on what ran
    before it in the process. At most `limit` prices are kept in all (profiles.shared_tables; ~200 bytes
    a price)."""

    def __init__(self, limit: int = MAX_SHARED_PRICES):
        super().__init__(limit)

    def table(self, source: ResolvedSource, hardware: HardwareSpec, dtype: str, kv_dtype: str,
              moe_kernel: str | None = None) -> dict:
        return self._table((source, hardware, dtype, kv_dtype, moe_kernel))


SHARED_PRICES = SharedPrices()


class MeasuredLatencyModel:
    """LatencyModel pricing GEMMs, attention and collectives from measured tables, the rest by roofline."""

    def __init__(self, source: ResolvedSource, dtype: str = "bf16", hardware: HardwareSpec | None = None,
                 kv_dtype: str | None = None, moe_kernel: str | None = None):
        dtype_bytes(dtype)  # validates
        self.source = source
        self.hardware = hardware if hardware is not None else get_hardware(source.hardware_id)
        self.hardware_id = self.hardware.id
        self.dtype = dtype
        self.kv_dtype = kv_cache_dtype(dtype, kv_dtype)
        self.framework, self.version = source.framework, source.version
        self.roofline = RooflineLatencyModel(self.hardware, dtype=dtype)
        tables = _tables(source, self.hardware)
        self.gemm = tables.gemm
        # The GEMMs outside the routed experts run in `gemm_dtype`: bf16 under a format that quantizes only the
        # experts (mxfp4, models.dtypes.EXPERT_ONLY_DTYPES), whose expert GEMMs are the fused-MoE table's or,
        # where it lacks the configuration, the roofline's (no MXFP4 GEMM table). Weight-only dtypes on this GPU
        # (int4; fp8 and fp8_block without FP8 tensor cores: FP8 Marlin, HardwareSpec.runs_weight_only) and FP4
        # formats the package did not measure on this system (nvfp4 off Blackwell tables) have no GEMM table:
        # their GEMMs are the roofline's (and `latency_source` says so); any other dtype without a table is an
        # error naming the field.
        self.gemm_dtype = dense_weight_dtype(dtype)
        self._gemm_measured = self.gemm_dtype in self.gemm.dtypes
        if not self.hardware.runs_weight_only(self.gemm_dtype) and self.gemm_dtype not in FP4_DTYPES:
            self._check_dtype("GEMM", self.gemm_dtype, self.gemm.dtypes)
        # Attention kernels read the KV cache in its own dtype (`kv_dtype`, e.g. fp8 KV under bf16 weights).
        self._attention = tables.attention
        self.moe, self.collectives, self.gdn = tables.moe, tables.collectives, tables.gdn
        self._labels = {family: source.label(family) for family in (GEMM, CONTEXT_ATTENTION, GENERATION_ATTENTION,
                                                                     CUSTOM_ALLREDUCE, MOE, LINEAR_ATTENTION)}
        self._labels["nccl"] = f"NCCL {source.nccl_version} {source.system}"
        # the board's power limit under sustained load (profiles.measured.power_limit; None: not measured)
        self.power_limit = power_limit(self.hardware.id, self.gemm_dtype, self.hardware.matmul_flops("bf16")) \
            if self._gemm_measured and self.hardware.id == source.hardware_id else None
        self._memo: dict[Op, float] = {}
        # The fused-MoE kernel the engine release runs where it is not the one the tables timed (None: theirs;
        # profiles.engine_time.mxfp4_moe, e.g. vLLM 0.10.1 - 0.11.x's Marlin MXFP4 experts on Hopper).
        self.moe_kernel = moe_kernel
        self._shared = SHARED_PRICES.table(source, self.hardware, dtype, self.kv_dtype, moe_kernel)
        self._priced: Counter = Counter()  # (kind, source label, approximate) -> distinct shapes priced
        self._keys: dict[Op, tuple] = {}   # op -> its key in `_priced`
        self._pricers = {K.GEMM: self._gemm, K.ATTN_PREFILL: self._prefill, K.ATTN_DECODE: self._decode,
                         K.ALLREDUCE: self._allreduce, K.ALLTOALL: self._alltoall, K.ACTIVATION: self._fused_moe,
                         K.GDN_PREFILL: self._gdn, K.GDN_DECODE: self._gdn, K.CONV1D: self._gdn}

    def _check_dtype(self, what: str, dtype: str, have: list[str]) -> None:
        if dtype not in have:
            raise MeasuredDataError("cluster.dtype", f"no measured {what} table for dtype {dtype!r} on "
                                    f"{self.source.hardware_id} ({self.source.framework} {self.source.version});"
                                    f" measured: {', '.join(have) or 'none'} (or use cluster.latency.source: "
                                    "roofline)")

    def __repr__(self) -> str:
        return (f"MeasuredLatencyModel({self.hardware_id!r}, {self.framework} {self.version}, dtype={self.dtype!r}, "
                f"kv_dtype={self.kv_dtype!r})")

    @property
    def attention(self) -> dict:
        """phase -> its table, for the phases measured with this run's KV dtype."""
        return {phase: table for phase, table in self._attention.items() if self.kv_dtype in table.dtypes}

    def _phase(self, phase: str) -> AttentionTable | None:
        """The phase's table when it measured this run's KV dtype, for pricing (which reads it whole)."""
        table = self._attention.get(phase)
        return table if table is not None and table.measures(self.kv_dtype) else None

    def host_overhead_s(self, layers: int, tokens: float) -> float:
        """0: measured kernel times are device times; engine work is profiles.engine_time's."""
        return 0.0

    def op_seconds(self, op: Op) -> float:
        memo = self._memo
        found = memo.get(op)
        if found is None:
            priced = self._shared.get(op)
            if priced is None:
                pricer = self._pricers.get(op.kind)
                result = pricer(op) if pricer is not None else None
                priced = (self.roofline.op_seconds(op), ROOFLINE, False) if result is None else result
                SHARED_PRICES.add(self._shared, op, priced)
            found, label, approximate = priced
            key = (op.kind, label, approximate)
            self._priced[key] += 1
            self._keys[op] = key
            memo[op] = found
        return found

    def sustained_seconds(self, ops) -> tuple[float, float]:
        """(seconds, compute-bound share) of a pass's dense ops run back to back at the board's power limit
        (`profiles.measured.power_limit`); Σ count·seconds and 0 where no limit was measured."""
        priced = [(op, self.op_seconds(op)) for op in ops]
        if self.power_limit is None:
            return sum(op.count * seconds for op, seconds in priced), 0.0
        return self.power_limit.seconds(priced)

    def usage_mark(self) -> int:
        return len(self._memo)

    def usage_since(self, mark: int) -> list[tuple]:
        """The distinct ops priced after `mark` (the memo keeps insertion order), with their seconds and
        coverage keys."""
        return [(op, self._memo[op], self._keys[op]) for op in list(self._memo)[mark:]]

    def merge_usage(self, usage: list[tuple]) -> None:
        """Ops another copy priced: those new here are counted in `coverage` (distinct shapes)."""
        for op, seconds, key in usage:
            if op not in self._memo:
                self._memo[op] = seconds
                self._keys[op] = key
                self._priced[key] += 1

    def coverage(self) -> dict[str, dict]:
        """op kind -> {source, ops (distinct shapes priced), approximate (extrapolated or mapped)}."""
        out: dict[str, dict] = {}
        for (kind, label, approximate), n in sorted(self._priced.items()):
            used = out.setdefault(kind, {"source": label, "ops": 0, "approximate": 0})
            if label not in used["source"].split(" + "):
                used["source"] = f"{used['source']} + {label}"
            used["ops"] += n
            used["approximate"] += n if approximate else 0
        return out

    def describe(self) -> dict:
        """What priced this run, for `latency_source` in the summary."""
        kernels = {"gemm": self.gemm.kernel(self.gemm_dtype) if self._gemm_measured else ROOFLINE}
        if self.moe is not None and self.moe.kernel(self.dtype):
            kernels["moe"] = self.moe.kernel(self.dtype) if self.moe_kernel is None else \
                f"{self.moe_kernel} (the engine release's kernel: profiles.engine_time.mxfp4_moe)"
        for phase, table in self.attention.items():
            kernels[f"{phase}_attention"] = table.kernel(self.kv_dtype)
        if self.gdn is not None and any(kind in self._used_kinds() for kind in (K.GDN_PREFILL, K.GDN_DECODE)):
            kernels["gdn"] = "+".join(self.gdn.kernel(role) for role in (gdn.CORE_PREFILL, gdn.CORE_DECODE,
                                                                        gdn.CONV_PREFILL, gdn.CONV_DECODE))
        described = {"source": "measured", "package": f"{DISTRIBUTION} {package_version()}",
                     "system": self.source.system, "framework": self.framework, "version": self.version,
                     "power_limit": self.power_limit.describe() if self.power_limit is not None else None,
                     "family_versions": {family: version for family, version in self.source.family_versions
                                         if family != LINEAR_ATTENTION or "gdn" in kernels},
                     "nccl_version": self.source.nccl_version,
                     "kernels": kernels, "op_kinds": self.coverage()}
        return self.roofline.with_weight_only_note(described)

    def _used_kinds(self) -> set[str]:
        return {kind for kind, _, _ in self._priced}

    # ---- pricers: (seconds, label, approximate) or None for the roofline ----------------------------
    def _gdn(self, op: Op):
        """Gated-DeltaNet conv1d and core kernels from the measured gdn table (None: a Mamba conv, a layout or
        framework the table lacks)."""
        d = dict(op.dims)
        if self.gdn is None or "key_heads" not in d:
            return None
        layout = (d["key_heads"], d["heads"], d["key_dim"], d["value_dim"])
        if op.kind == K.CONV1D:
            decode = d["decode"] > 0.5
            role = gdn.CONV_DECODE if decode else gdn.CONV_PREFILL
            found = (self.gdn.seconds(role, *layout, d["tokens"]) if decode
                     else self.gdn.seconds(role, *layout, d["seqs"], d["tokens"] / d["seqs"]))
            approx_q = False
        elif op.kind == K.GDN_PREFILL:
            found = self.gdn.seconds(gdn.CORE_PREFILL, *layout, d["seqs"], d["tokens"] / d["seqs"])
            approx_q = False
        else:
            found = self.gdn.seconds(gdn.CORE_DECODE, *layout, d["seqs"] * d["q_per_seq"])
            approx_q = d["q_per_seq"] != 1.0
        if found is None:
            return None
        seconds, outside = found
        return seconds, self._labels[LINEAR_ATTENTION], outside or approx_q

    def _fused_moe(self, op: Op, dims: dict | None = None):
        """The layer's measured fused-MoE time on its `moe_part` 0 op and 0 on the other two (None: not an
        MoE expert op, or a configuration the table lacks)."""
        d = dims if dims is not None else dict(op.dims)
        part = d.get("moe_part", -1.0)
        if part < 0 or self.moe is None:
            return None
        found = self.moe.seconds(self.dtype, *(int(d[k]) for k in ("moe_hidden", "moe_inter", "moe_top_k",
                                                                   "moe_experts", "moe_tp", "moe_ep")),
                                 d["moe_rows"], kernel=self.moe_kernel)
        if found is None:
            return None
        seconds, outside = found
        return (seconds if part == 0 else 0.0), self._labels[MOE], outside

    def _gemm(self, op: Op):
        d = dict(op.dims)
        if "moe_part" in d:
            fused = self._fused_moe(op, d)
            if fused is not None:
                return fused
            if self.gemm_dtype != self.dtype:   # expert weights in a dtype no GEMM table measured
                return None
        if not self._gemm_measured:
            return None
        dtype = self.gemm_dtype
        if d.get("vocab_16bit"):   # a quantized model's 16-bit LM head (models.dtypes.vocab_weight_dtype)
            if "bf16" not in self.gemm.dtypes:
                return None
            dtype = "bf16"
        groups = d.get("groups", 1.0)
        seconds, outside = self.gemm.seconds(dtype, d["m"], d["n"], d["k"] * groups)
        return seconds, self._labels[GEMM], outside or groups != 1.0

    def _prefill(self, op: Op):
        table = self._phase(CONTEXT)
        if table is None:
            return None
        if op.dim("window", 0.0) > 0.0:
            return self._prefill_window(table, op)
        seqs = op.dim("seqs")
        chunk = op.dim("q_tokens") / seqs
        pairs = op.dim("attn_pairs") / seqs
        prefix = max(0.0, (pairs - chunk * (chunk + 1.0) / 2.0) / chunk)
        layout = (op.dim("heads"), op.dim("kv_heads"), op.dim("head_dim"))
        if prefix < 0.5:
            seconds, approx = table.seconds(self.kv_dtype, *layout, seqs, chunk)
        else:
            full = chunk + prefix
            whole, approx = table.seconds(self.kv_dtype, *layout, seqs, full)
            floor, approx2 = table.seconds(self.kv_dtype, *layout, seqs, chunk)
            seconds = max(floor, whole * pairs / (full * (full + 1.0) / 2.0))
            approx = approx or approx2
        return seconds, self._labels[CONTEXT_ATTENTION], approx

    def _prefill_window(self, table, op: Op):
        """A sliding-window layer's prefill chunk (c tokens after o cached ones, window w): from the table's
        measured sliding-window kernel of window w, the prompt of o + c tokens times the share of its
        (query, key) pairs the chunk computes, never below a c-token prompt. Where the table did not measure
        w (other windows, tables before the window_size column), the full-attention prompt of o + c tokens
        times the chunk's window pairs over that prompt's causal pairs, never below a min(c, w)-token prompt
        (approximate: FlashAttention skips the KV tiles outside the window, so its time follows the pairs
        up to the tile granularity)."""
        seqs, window = op.dim("seqs"), op.dim("window")
        chunk = op.dim("q_tokens") / seqs
        pairs, full = op.dim("attn_pairs") / seqs, chunk + op.dim("prefix_per_seq")
        layout = (op.dim("heads"), op.dim("kv_heads"), op.dim("head_dim"))
        if table.measures_window(self.kv_dtype, window):
            whole, approx = table.seconds(self.kv_dtype, *layout, seqs, full, window)
            floor, approx2 = table.seconds(self.kv_dtype, *layout, seqs, chunk, window)
            share = pairs / window_pairs(0.0, full, window)
        else:
            whole, approx = table.seconds(self.kv_dtype, *layout, seqs, full)
            floor, approx2 = table.seconds(self.kv_dtype, *layout, seqs, min(chunk, window))
            share, approx = pairs / (full * (full + 1.0) / 2.0), True
        return max(floor, whole * share), self._labels[CONTEXT_ATTENTION], approx or approx2

    def _decode(self, op: Op):
        table = self._phase(GENERATION)
        if table is None:
            return None
        q = op.dim("q_per_seq")
        context = self._phase(CONTEXT) if q != 1.0 else None
        if context is None:
            seconds, approx = table.seconds(self.kv_dtype, op.dim("heads") * q, op.dim("kv_heads"), op.dim("head_dim"),
                                            op.dim("seqs"), op.dim("ctx_per_seq") + q)
            return seconds, self._labels[GENERATION_ATTENTION], approx or q != 1.0
        seconds, approx = verify_seconds(table, context, self.framework, self.kv_dtype, op.dim("heads"),
                                         op.dim("kv_heads"), op.dim("head_dim"), op.dim("seqs"), op.dim("ctx_per_seq"),
                                         q, op.dim("tree") > 0.0)
        return seconds, self._labels[GENERATION_ATTENTION], True

    def _collective(self, op: Op, names: tuple[str, ...]):
        ranks = int(op.dim("ranks"))
        if ranks <= 1:
            return 0.0, ROOFLINE, False
        if ranks > self.hardware.gpus_per_node:
            return None  # across nodes: the measured tables are single-node
        for name in names:
            if self.collectives.has(name, ranks):
                seconds, outside = self.collectives.seconds(name, ranks, op.dim("bytes"))
                return seconds, self._labels[CUSTOM_ALLREDUCE if name == "allreduce" else "nccl"], outside
        return None

    def _allreduce(self, op: Op):
        return self._collective(op, ("allreduce", "nccl_all_reduce"))

    def _alltoall(self, op: Op):
        return self._collective(op, ("nccl_alltoall",))
