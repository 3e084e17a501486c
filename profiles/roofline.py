"""Roofline latency model: seconds = launch floor + max(compute time, memory time), per op.

    compute time = FLOPs / (peak · efficiency)        memory time = bytes / (bandwidth · efficiency)

Efficiency factors (`RooflineEfficiency`) and where the defaults come from:

* `compute_fraction`: fraction of the dense datasheet peak that large cuBLAS/hipBLASLt GEMMs sustain.
  H100 SXM: large BF16 GEMMs run at roughly 700–750 of 989 TFLOP/s (power/clock limited; widely reported
  cuBLAS/PyTorch matmul benchmarks), hence 0.76 (→ 0.74 of peak at 8192³ after the shape factor).
  A100: ~260–280 of 312 TFLOP/s → 0.85. MI300X: AMD's own "max-achievable FLOPs" measurements and
  independent ones put sustained BF16 GEMM throughput near half of the 1307 TFLOP/s peak → 0.50.
  B200 and L40S have less published data; 0.75 and 0.70 are assumptions in line with Hopper/Ada.
* `memory_fraction`: achieved/peak DRAM bandwidth of streaming kernels; ~90 % on H100/H200
  (≈3.0 of 3.35 TB/s), ~88 % on A100 80GB, ~81 % reported for MI300X (≈4.3 of 5.3 TB/s).
* `launch_s`: a per-kernel floor (launch gap + ramp-up/tail of a tiny kernel). A CUDA kernel launch costs
  a few µs from the host; CUDA-graph replay (used by serving engines for decode) brings the gap down to
  about 1–2 µs, so 2.5 µs per op on NVIDIA, 4 µs on ROCm.
* GEMM shape factor: s(m)·s(n)·s(k) with s(x) = x / (x + x_half). It stands for tile padding, partial
  waves and pipeline fill of small problems; x_half = 64 (half a 128-wide tensor-core tile) for BF16.
  The row half-size m_half scales with (math rate × bytes per weight) relative to BF16, the ridge
  arithmetic intensity the kernel's row tiles must reach: fp8/int8 keep 64, weight-only int4 gets 16
  (Marlin-style small-batch kernels), fp32 on vector units ≈ 9.
  Consequences (tested): a GEMM with m = 1 is bandwidth-bound on every catalog device, and an
  8192³ BF16 GEMM on H100 reaches 74 % of peak.
* Attention: FlashAttention-2 reaches 50–70 % of peak on A100 and ~35–40 % on H100, FlashAttention-3
  60–75 % on H100 (FA2/FA3 papers) → `attention_compute_fraction` 0.55 on Hopper/Blackwell, 0.60 on
  A100; decode attention (paged KV reads) streams at ~80 % of the HBM bandwidth.
* Recurrent mixers (hybrid models, models.opgraph_hybrid): chunked prefill (gated DeltaNet, Mamba-2 SSD)
  like prefill attention with the chunk as the row count; recurrent decode updates, Mamba-1's scan and the
  causal conv1d are element-wise (CUDA-core math, usually bandwidth-bound on the state).
* Collectives: ring all-reduce 2(n−1)/n·bytes/bw + 2(n−1)·α, all-to-all/all-gather (n−1)/n·bytes/bw +
  (n−1)·α, p2p bytes/bw + α, with bw = link bandwidth × `collective_bandwidth_fraction` (NCCL bus
  bandwidth on NVLink reaches ~80 % of the per-direction link rate) and α the per-hop latency.
  Groups larger than a node use the scale-out (NIC) bandwidth and latency.

This is the fallback model; profile tables measured with real kernels replace it where available.
"""
from __future__ import annotations

from profiles.latency import UncountedUsage
import dataclasses
from dataclasses import dataclass

from models.ops import (ACTIVATION, ALLREDUCE, ALLTOALL, ATTN_DECODE, ATTN_PREFILL, ATTN_SHARED, CONV1D, EMBEDDING,
                        GDN_DECODE, GDN_PREFILL, GEMM, MOE_ROUTER, NORM, P2P, ROPE, SAMPLING, SSM_DECODE, SSM_PREFILL, Op)
from models.spec import activation_bytes, dense_weight_dtype, dtype_bytes, vocab_weight_dtype
from profiles.hardware import HardwareSpec, get_hardware

# Kernels behind one MOE_ROUTER op: gate GEMM, softmax/top-k, token permutation.
ROUTER_KERNELS = 3
# FP8 weights on a GPU without FP8 tensor cores run as W8A16 with the engines' FP8 Marlin kernels (which releases:
# profiles.engine_time.fp8_marlin). Priced here, under every latency source, as the roofline prices any weight-only
# format: 1-byte weights read once, 16-bit math at the bf16 rate, row tiles at half BF16's (m_half 32). No FP8
# Marlin table was measured. Approximation, named (summary `latency_source.weight_only`): TensorRT-LLM 1.0.0's
# int8_wo rows, the one measured W8A16 GEMM table on A100 (aiconfigurator-core, the TensorRT plugin
# WeightOnlyQuantMatmul), are not a fair proxy: another engine's kernel, timed at 1.04-1.41x the same table's bf16
# GEMM at 4096x4096 for m = 8-256 where FP8 Marlin is up to 2x faster than FP16 in memory-bound shapes (vLLM PR
# #5975). Its error is not known; as a gauge, the roofline's own bf16 GEMMs take 0.59-1.15x (median 0.79) of vLLM
# 0.14.0's measured A100 bf16 GEMMs at m <= 256 (7 Llama/Mixtral weight shapes), optimistic where memory-bound.
WEIGHT_ONLY_FP8 = ("{dtype} weights on {gpu} (no FP8 tensor cores) run weight-only, W8A16 as FP8 Marlin runs them: "
                   "1-byte weights, 16-bit math; their GEMMs and experts priced on the roofline (no measured FP8 "
                   "Marlin table; TensorRT-LLM's int8_wo kernel is not taken as its proxy)")


@dataclass(frozen=True)
class RooflineEfficiency:
    compute_fraction: float = 0.75            # of dense peak, large GEMMs
    memory_fraction: float = 0.88             # of DRAM bandwidth, streaming kernels
    launch_s: float = 2.5e-6                  # per-op floor
    gemm_m_half: float = 64.0                 # GEMM rows at which the row factor is 1/2 (BF16)
    gemm_nk_half: float = 64.0                # same for n and k
    attention_compute_fraction: float = 0.55
    attention_memory_fraction: float = 0.80
    collective_bandwidth_fraction: float = 0.80
    source: str = "generic defaults"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name.endswith("fraction"):
                value = getattr(self, f.name)
                if not 0.0 < value <= 1.0:
                    raise ValueError(f"efficiency.{f.name} must be in (0, 1], got {value!r}")
        for name in ("launch_s", "gemm_m_half", "gemm_nk_half"):
            if not getattr(self, name) >= 0.0:
                raise ValueError(f"efficiency.{name} must be >= 0, got {getattr(self, name)!r}")


DEFAULT_EFFICIENCY: dict[str, RooflineEfficiency] = {
    "h100-sxm": RooflineEfficiency(0.76, 0.90, 2.5e-6, source="H100 SXM: ~700-750 TFLOP/s large BF16 GEMM, "
                                   "~3.0 TB/s achieved HBM3, FA2/FA3 attention"),
    "h200": RooflineEfficiency(0.76, 0.90, 2.5e-6, source="same Hopper compute as H100 SXM; HBM3e at ~90 %"),
    "a100-80gb": RooflineEfficiency(0.85, 0.88, 2.5e-6, attention_compute_fraction=0.60,
                                    source="A100: ~260-280 TFLOP/s large BF16 GEMM, ~1.8 TB/s achieved, FA2 "
                                    "50-70 % of peak"),
    "h800": RooflineEfficiency(0.76, 0.90, 2.5e-6, source="the H100 SXM die and HBM3: H100 SXM's fractions"),
    "h100-pcie": RooflineEfficiency(0.76, 0.90, 2.5e-6, source="Hopper: H100 SXM's fractions (lower clocks are in "
                                    "the datasheet peak)"),
    "a100-40gb": RooflineEfficiency(0.85, 0.88, 2.5e-6, attention_compute_fraction=0.60,
                                    source="the A100 80GB's fractions (same die, HBM2)"),
    "b200": RooflineEfficiency(0.75, 0.88, 2.5e-6, source="assumed Hopper-like fractions (little public data)"),
    "b300": RooflineEfficiency(0.75, 0.88, 2.5e-6, source="assumed B200's fractions (Blackwell Ultra, little public data)"),
    "gb200": RooflineEfficiency(0.75, 0.88, 2.5e-6, source="assumed B200's fractions (same Blackwell GPU)"),
    "gb300": RooflineEfficiency(0.75, 0.88, 2.5e-6, source="assumed B200's fractions (Blackwell Ultra, little public data)"),
    "rtx-pro-6000": RooflineEfficiency(0.70, 0.85, 2.5e-6, attention_compute_fraction=0.50,
                                       source="assumed L40S's fractions (workstation-class Blackwell, GDDR7)"),
    "l40s": RooflineEfficiency(0.70, 0.85, 2.5e-6, attention_compute_fraction=0.50,
                               source="assumed Ada fractions (power-limited GEMMs, GDDR6)"),
    "mi300x": RooflineEfficiency(0.50, 0.81, 4.0e-6, attention_compute_fraction=0.35,
                                 collective_bandwidth_fraction=0.65,
                                 source="MI300X: ~45-50 % of peak sustained in GEMMs, ~81 % of 5.3 TB/s, "
                                 "RCCL below NCCL's link efficiency"),
    "cpu-local": RooflineEfficiency(0.50, 0.70, 1.0e-5, gemm_m_half=8.0, gemm_nk_half=16.0,
                                    attention_compute_fraction=0.30, attention_memory_fraction=0.60,
                                    source="nominal until the profiling harness measures this machine; "
                                    "torch CPU ops cost ~10 µs of dispatch each"),
}


def default_efficiency(hardware_id: str) -> RooflineEfficiency:
    return DEFAULT_EFFICIENCY.get(hardware_id, RooflineEfficiency())


class RooflineLatencyModel(UncountedUsage):
    """`LatencyModel` pricing every op kind with the roofline above.

    `dtype` is the weight dtype the op graph was built with (it selects the GEMM peak rate, see
    `HardwareSpec.matmul_flops`); attention and element-wise math run at the activation precision.
    """

    framework = version = None  # no serving framework measured these prices (see profiles.latency)

    def __init__(self, hardware: str | HardwareSpec, efficiency: RooflineEfficiency | None = None,
                 dtype: str = "bf16"):
        self.hardware = hardware if isinstance(hardware, HardwareSpec) else get_hardware(hardware)
        self.hardware_id = self.hardware.id
        self.efficiency = efficiency if efficiency is not None else default_efficiency(self.hardware_id)
        self.dtype = dtype
        eff, hw = self.efficiency, self.hardware
        dtype_bytes(dtype)  # validates
        act_dtype = "fp32" if activation_bytes(dtype) == 4.0 else "bf16"
        bf16_rate = hw.matmul_flops("bf16")
        gemm_rate = hw.matmul_flops(dtype)
        self._gemm_flops_per_s = gemm_rate * eff.compute_fraction
        # Row tiles scale with the ridge intensity the kernel must reach: math rate × weight bytes,
        # relative to BF16 (fp8/int8: 2×·½ = 1; weight-only int4: ¼, Marlin-style 16-row tiles;
        # fp32 on vector units: ≈0.14). A dtype that quantizes only the routed experts (mxfp4): theirs for
        # the expert GEMMs (ops with a `moe_part`), bf16's for every other GEMM and the router.
        def m_half(weights: str) -> float:
            return eff.gemm_m_half * ((hw.matmul_flops(weights) * dtype_bytes(weights)) / (bf16_rate * 2.0))
        self._m_half = m_half(dtype)
        dense = dense_weight_dtype(dtype)
        self._dense_m_half = self._m_half if dense == dtype else m_half(dense)
        self._nk_half = eff.gemm_nk_half
        # A quantized model's LM head is 16-bit (models.dtypes.vocab_weight_dtype; its op carries vocab_16bit).
        vocab = vocab_weight_dtype(dtype)
        self._vocab_flops_per_s = hw.matmul_flops(vocab) * eff.compute_fraction
        self._vocab_m_half = m_half(vocab)
        self._attn_m_half = eff.gemm_m_half  # attention math runs on 16-bit activations whatever the weights
        self._attn_flops_per_s = hw.matmul_flops(act_dtype) * eff.attention_compute_fraction
        self._vector_flops_per_s = hw.peak_flops["fp32"] * eff.compute_fraction
        self._mem_bytes_per_s = hw.hbm_bandwidth_bytes_per_s * eff.memory_fraction
        self._attn_mem_bytes_per_s = hw.hbm_bandwidth_bytes_per_s * eff.attention_memory_fraction
        self._launch_s = eff.launch_s
        self._pricers = {
            GEMM: self._gemm, MOE_ROUTER: self._router, ATTN_PREFILL: self._attn_prefill,
            ATTN_SHARED: self._attn_prefill,  # Hydragen: the sharers' queries × one prefix, a dense matmul
            ATTN_DECODE: self._attn_decode, NORM: self._elementwise, ACTIVATION: self._elementwise,
            EMBEDDING: self._elementwise, ROPE: self._elementwise, SAMPLING: self._elementwise,
            ALLREDUCE: self._allreduce, ALLTOALL: self._alltoall, P2P: self._p2p,
            GDN_PREFILL: self._chunked_scan, SSM_PREFILL: self._chunked_scan, GDN_DECODE: self._elementwise,
            SSM_DECODE: self._elementwise, CONV1D: self._elementwise,
        }

    def __repr__(self) -> str:
        return f"RooflineLatencyModel({self.hardware_id!r}, dtype={self.dtype!r})"

    def describe(self) -> dict:
        """`latency_source` entry: every op kind priced by this roofline."""
        return self.with_weight_only_note({"source": "roofline", "hardware": self.hardware_id,
                                           "efficiency": self.efficiency.source})

    def with_weight_only_note(self, described: dict) -> dict:
        """`described` (a `latency_source` entry) with the approximation FP8 weights are priced by on a GPU without
        FP8 tensor cores (`weight_only`, WEIGHT_ONLY_FP8), when that is this model's case; as given otherwise."""
        if self.dtype in ("fp8", "fp8_block") and self.hardware.runs_weight_only(self.dtype):
            return {**described, "weight_only": WEIGHT_ONLY_FP8.format(dtype=self.dtype, gpu=self.hardware_id)}
        return described

    def host_overhead_s(self, layers: int, tokens: float) -> float:
        """0: the roofline prices device work. On a GPU the host enqueues kernels asynchronously, so its
        work overlaps the device's and is off a pass's critical path at serving batch sizes (CUDA graphs
        remove most of it); CPU host overhead comes from a measured profile (ProfiledLatencyModel)."""
        return 0.0

    def op_seconds(self, op: Op) -> float:
        try:
            pricer = self._pricers[op.kind]
        except KeyError:
            raise ValueError(f"op {op.name!r}: unknown kind {op.kind!r}; allowed: {', '.join(self._pricers)}") \
                from None
        return pricer(op)

    # ---- compute ops -----------------------------------------------------------------------------
    def gemm_shape_factor(self, m: float, n: float, k: float, m_half: float | None = None) -> float:
        """s(m)·s(n)·s(k), s(x) = x/(x + half): the fraction of the large-GEMM rate a shape reaches (`m_half`:
        the row half-point, default the weights' dtype's)."""
        mh, nkh = self._m_half if m_half is None else m_half, self._nk_half
        return (m / (m + mh)) * (n / (n + nkh)) * (k / (k + nkh))

    def _gemm_time(self, flops: float, moved: float, m: float, n: float, k: float, m_half: float,
                   flops_per_s: float | None = None) -> float:
        if flops <= 0.0:
            return moved / self._mem_bytes_per_s
        rate = self._gemm_flops_per_s if flops_per_s is None else flops_per_s
        compute = flops / (rate * self.gemm_shape_factor(m, n, k, m_half))
        memory = moved / self._mem_bytes_per_s
        return compute if compute > memory else memory

    def _gemm(self, op: Op) -> float:
        if op.dim("vocab_16bit", 0.0):   # a quantized model's 16-bit LM head
            return self._launch_s + self._gemm_time(op.flops, op.bytes, op.dim("m"), op.dim("n"), op.dim("k"),
                                                    self._vocab_m_half, self._vocab_flops_per_s)
        m_half = self._m_half if op.dim("moe_part", -1.0) >= 0.0 else self._dense_m_half
        return self._launch_s + self._gemm_time(op.flops, op.bytes, op.dim("m"), op.dim("n"), op.dim("k"), m_half)

    def _router(self, op: Op) -> float:
        return ROUTER_KERNELS * self._launch_s + self._gemm_time(
            op.flops, op.bytes, op.dim("tokens"), op.dim("experts"), op.dim("hidden"), self._dense_m_half)

    def _attn_prefill(self, op: Op) -> float:
        # Short query chunks use tensor-core tiles poorly: same row factor as GEMMs on the mean chunk.
        chunk = op.dim("q_tokens") / op.dim("seqs")
        compute = op.flops / (self._attn_flops_per_s * (chunk / (chunk + self._attn_m_half)))
        memory = op.bytes / self._attn_mem_bytes_per_s
        return self._launch_s + (compute if compute > memory else memory)

    def _chunked_scan(self, op: Op) -> float:
        """Chunked recurrent prefill (gated DeltaNet, Mamba-2 SSD): matmuls inside chunks on the tensor cores at
        attention efficiency, with the GEMM row factor of the chunk length (short chunks fill tiles poorly);
        Mamba-1's selective scan (chunk 1) is element-wise, at the vector rate."""
        chunk = op.dim("chunk")
        if chunk <= 1.0:
            return self._elementwise(op)
        compute = op.flops / (self._attn_flops_per_s * (chunk / (chunk + self._attn_m_half)))
        memory = op.bytes / self._mem_bytes_per_s
        return self._launch_s + (compute if compute > memory else memory)

    def _attn_decode(self, op: Op) -> float:
        compute = op.flops / self._attn_flops_per_s
        memory = op.bytes / self._attn_mem_bytes_per_s
        return self._launch_s + (compute if compute > memory else memory)

    def _elementwise(self, op: Op) -> float:
        compute = op.flops / self._vector_flops_per_s
        memory = op.bytes / self._mem_bytes_per_s
        return self._launch_s + (compute if compute > memory else memory)

    # ---- communication ---------------------------------------------------------------------------
    def _link(self, span: float) -> tuple[float, float]:
        """(bandwidth bytes/s, per-hop latency s) of a group spanning `span` GPUs."""
        hw, frac = self.hardware, self.efficiency.collective_bandwidth_fraction
        if span <= hw.gpus_per_node:
            return hw.scaleup_bandwidth_bytes_per_s * frac, hw.scaleup_latency_s
        return hw.scaleout_bandwidth_bytes_per_s * frac, hw.scaleout_latency_s

    def _allreduce(self, op: Op) -> float:
        n = op.dim("ranks")
        if n <= 1:
            return 0.0
        bw, hop = self._link(n)
        return self._launch_s + 2.0 * (n - 1.0) * hop + 2.0 * (n - 1.0) / n * op.bytes / bw

    def _alltoall(self, op: Op) -> float:
        n = op.dim("ranks")
        if n <= 1:
            return 0.0
        bw, hop = self._link(n)
        return self._launch_s + (n - 1.0) * hop + (n - 1.0) / n * op.bytes / bw

    def _p2p(self, op: Op) -> float:
        """Pipeline send. Approximation: when the replica spans nodes, every stage boundary is priced at
        the scale-out rate (stages are usually laid out so that only some boundaries cross nodes)."""
        bw, hop = self._link(op.dim("span", 2.0))
        return self._launch_s + hop + op.bytes / bw


_MODELS: dict[tuple[str, str], RooflineLatencyModel] = {}


def gemm_seconds(hardware: str, m: int, n: int, k: int, dtype: str = "bf16") -> float:
    """Roofline seconds of one (m×k)·(k×n) GEMM on `hardware` with default efficiencies; weights in
    `dtype`, activations 16-bit (fp32 for fp32)."""
    for name, value in (("m", m), ("n", n), ("k", k)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise ValueError(f"gemm_seconds: {name} must be a positive number, got {value!r}")
    key = (hardware, dtype)
    model = _MODELS.get(key)
    if model is None:
        model = _MODELS[key] = RooflineLatencyModel(hardware, dtype=dtype)
    w, a = dtype_bytes(dtype), activation_bytes(dtype)
    flops = 2.0 * m * n * k
    moved = a * m * (k + n) + w * k * n
    return model._launch_s + model._gemm_time(flops, moved, m, n, k, model._m_half)
