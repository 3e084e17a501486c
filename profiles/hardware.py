"""Hardware catalog: peak rates, memory and links of the accelerators draftsim can price steps on.

All figures are vendor datasheet values (dense, i.e. without 2:4 sparsity), in SI units:
FLOP/s, bytes (decimal GB as printed on the datasheet), bytes/s. Link bandwidths are per GPU and per
direction: NVLink "900 GB/s" on H100 is 450 GB/s each way. Link latencies are per hop of a ring step.
`cpu-local` is a nominal entry for the 2-core development machine; the profiling harness measures the
real numbers and replaces them.

FP4 (`peak_flops["fp4"]`, dense): the Blackwell tensor-core rate for NVFP4 and MXFP4 operands (NVIDIA HGX/DGX
B200, B300 and GB200/GB300 NVL72 datasheets, sparse figures halved; the same figures in aiconfigurator-core's
systems/*.yaml `fp4_tc_flops`). GPUs without it (Hopper, Ampere, Ada, MI300X) cannot run NVFP4 (W4A4) weights or
an NVFP4 KV cache (`weight_dtype_error`, `kv_dtype_error`). MXFP4 (gpt-oss's experts) is weight-only in the
engines (models.dtypes.EXPERT_ONLY_DTYPES): 16-bit math on every GPU, never this rate.

Power (`tdp_w`, `idle_w`, used by profiles.power): `tdp_w` is the board power limit of the datasheet (also
aiconfigurator-core systems/*.yaml `power`); `idle_w` is the power of a GPU that holds a loaded model and runs
no kernel: IDLE_FRACTION_OF_TDP × TDP for every GPU, from a published H200 measurement (80.3 W idle vs 592.8 W
at load for a vLLM engine holding Phi-3-mini on a 700 W H200 SXM: Serial Alice GPU energy benchmark,
api.serialalice.pt/alice-benchmark, 2026; a RunPod H200 fleet idles at 73.65 W per nvidia-smi, conservemode.com
case study). Approximation: idle power scales with the power limit across GPUs; a GPU whose clocks are still
high right after work idles higher (the context's DVFS state, "The Model Parking Tax", arXiv 2605.23918: +26-50
W on HBM GPUs with a CUDA context).

Host and network (`host_w_per_gpu`): the rest of an 8-GPU DGX node (CPUs, memory, NVSwitches, NICs, fans,
storage) per GPU, its datasheet maximum system power minus 8 × the GPU's TDP: DGX H100 and DGX H200 10.2 kW →
(10.2 − 5.6) / 8 = 575 W; DGX A100 6.5 kW → 412.5 W; DGX B200 14.3 kW → 787.5 W. Approximation: a rated maximum,
an upper bound (an 8 × H100 HGX node measured at most 8.4 kW while training, 18 % below its 10.2 kW rating:
Latif et al., IEEE Access 13, 2025); 0 (not counted) where no system rating is published here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from models.dtypes import FP4_DTYPES, WEIGHT_DTYPES, WEIGHT_ONLY_DTYPES
from models.errors import UnknownNameError, catalog_key

GB = 1e9
GIB = 1024 ** 3
TB = 1e12
TFLOP = 1e12
IDLE_FRACTION_OF_TDP = 80.3 / 700.0   # H200 SXM with a loaded model, idle (module docstring)


@dataclass(frozen=True)
class HardwareSpec:
    id: str
    name: str
    peak_flops: dict[str, float]          # dtype -> dense FLOP/s ("fp32" = the non-tensor vector rate)
    hbm_bytes: float
    hbm_bandwidth_bytes_per_s: float
    scaleup_bandwidth_bytes_per_s: float  # per GPU, one direction (NVLink / Infinity Fabric / PCIe)
    scaleout_bandwidth_bytes_per_s: float  # per GPU NIC, one direction
    gpus_per_node: int
    scaleup_latency_s: float
    scaleout_latency_s: float
    source: str
    compute_units: int = 0                # SMs / CUs, informational
    # Host <-> device link per GPU, one direction (PCIe Gen5 x16 ≈ 64 GB/s unless stated per entry;
    # NVLink-C2C on Grace superchips); prices a host-CPU drafter's token transfers (simulator.cost.drafters)
    # and KV moved to and from host memory (swap, the host tier of the prefix cache: simulator.core.kv.host_tier).
    host_link_bandwidth_bytes_per_s: float = 64e9
    host_link_latency_s: float = 3.0e-6
    tdp_w: float = 0.0                    # board power limit (0: unknown, no energy figures)
    idle_w: float = 0.0                   # idle with a model loaded (0 with tdp_w > 0: IDLE_FRACTION_OF_TDP of it)
    host_w_per_gpu: float = 0.0           # the node beside its GPUs, per GPU (module docstring; 0: not counted)
    # The device memory CUDA reports (cudaMemGetInfo's total, bytes), below the datasheet's figure by what the
    # driver reserves; vLLM's gpu_memory_utilization is a fraction of it (simulator.cluster.vllm_memory).
    # 0: not recorded (the datasheet's hbm_bytes stands in).
    cuda_total_bytes: float = 0.0
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for name in ("hbm_bytes", "hbm_bandwidth_bytes_per_s", "scaleup_bandwidth_bytes_per_s",
                     "scaleout_bandwidth_bytes_per_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"hardware {self.id!r}: {name} must be > 0")
        if self.gpus_per_node < 1:
            raise ValueError(f"hardware {self.id!r}: gpus_per_node must be >= 1")
        if "bf16" not in self.peak_flops or "fp32" not in self.peak_flops:
            raise ValueError(f"hardware {self.id!r}: peak_flops needs at least 'bf16' and 'fp32'")
        if self.tdp_w < 0 or self.idle_w < 0 or (self.idle_w and self.idle_w > self.tdp_w):
            raise ValueError(f"hardware {self.id!r}: tdp_w and idle_w must be >= 0 with idle_w <= tdp_w")
        if self.tdp_w and not self.idle_w:
            object.__setattr__(self, "idle_w", IDLE_FRACTION_OF_TDP * self.tdp_w)

    def __hash__(self) -> int:  # peak_flops is a dict; the id identifies an entry
        return hash((self.id, self.name))

    def allowed_weight_dtypes(self) -> list[str]:
        """The weight dtypes this GPU runs: those `weight_dtype_error` lets through (fp16 without a rate of its
        own among them, at the bf16 rate: `matmul_flops`; the list left it out while fp16 ran)."""
        return [d for d in WEIGHT_DTYPES if self._missing_tensor_cores(d) is None]

    def _missing_tensor_cores(self, dtype: str) -> str | None:
        """The peak-rate key (fp8, fp4) weights in `dtype` need and this GPU lacks, or None."""
        for need, dtypes in (("fp8", ("fp8", "fp8_block")), ("fp4", tuple(sorted(FP4_DTYPES)))):
            if dtype in dtypes and need not in self.peak_flops:
                return need
        return None

    def runs_weight_only(self, dtype: str) -> bool:
        """Whether weights in `dtype` run here as weight-only quantization (narrow weights in memory, 16-bit
        activations and math): int4 and mxfp4 everywhere (models.dtypes.WEIGHT_ONLY_DTYPES), fp8 and fp8_block on
        a GPU without FP8 tensor cores, as the engine releases with FP8 Marlin serve them (W8A16; which releases:
        profiles.engine_time.fp8_marlin, checked by simulator.cluster.factory)."""
        return dtype in WEIGHT_ONLY_DTYPES or (dtype in ("fp8", "fp8_block") and "fp8" not in self.peak_flops)

    def matmul_rate(self, dtype: str) -> float | None:
        """This GPU's own tensor-core rate for `dtype` weights, or None (fp8_block: the fp8 rate; nvfp4: the fp4
        rate; weight-only here, `runs_weight_only`: None, their math is 16-bit)."""
        if self.runs_weight_only(dtype):
            return None
        key = "fp8" if dtype == "fp8_block" else "fp4" if dtype in FP4_DTYPES else dtype
        return self.peak_flops.get(key)

    def weight_dtype_error(self, dtype: str) -> str | None:
        """Why weights in `dtype` cannot run here, or None. W8A8 fp8 needs FP8 tensor cores (an `fp8` peak
        rate), nvfp4 (W4A4) FP4 tensor cores (an `fp4` rate: Blackwell); int4 and mxfp4 are weight-only
        (dequantized to 16-bit math: Marlin/AWQ-style kernels, gpt-oss's MXFP4 experts, models.dtypes), so they
        run wherever bf16 does. The tensor cores' answer only: a deployment runs fp8 weights on a GPU without FP8
        tensor cores weight-only where its engine release has FP8 Marlin (simulator.cluster.fp8_marlin)."""
        need = self._missing_tensor_cores(dtype)
        if need is None:
            return None
        return (f"{dtype} weights need {need.upper()} tensor cores, which {self.id} lacks (peak rates for "
                f"{', '.join(sorted(self.peak_flops))}); allowed here: {', '.join(self.allowed_weight_dtypes())}")

    def kv_dtype_error(self, kv_dtype: str) -> str | None:
        """Why a KV cache in `kv_dtype` cannot be used here, or None: an NVFP4 KV cache needs FP4 tensor cores
        (vLLM's NVFP4 KV attention kernels are Blackwell-only)."""
        if kv_dtype == "nvfp4" and "fp4" not in self.peak_flops:
            return f"an nvfp4 KV cache needs FP4 tensor cores, which {self.id} lacks; allowed here: fp32, bf16, fp16, fp8"
        return None

    def matmul_flops(self, dtype: str) -> float:
        """Dense matrix FLOP/s for `dtype`. Dtypes without their own tensor-core rate here (fp8 on A100: FP8
        Marlin, `runs_weight_only`; int4 everywhere) run as weight-only quantization with 16-bit math, so they get
        the bf16 rate."""
        rate = self.matmul_rate(dtype)
        return rate if rate is not None else self.peak_flops["bf16"]


_NVIDIA_NVLINK_LATENCY_S = 1.0e-6    # per ring step over NVLink/NVSwitch, incl. NCCL sync
_IB_LATENCY_S = 5.0e-6               # per ring step across nodes (InfiniBand/RoCE), incl. NCCL proxy
_PCIE_LATENCY_S = 3.0e-6

_ENTRIES = (
    HardwareSpec(
        id="h100-sxm", name="NVIDIA H100 SXM5 80GB",
        peak_flops={"fp32": 66.9 * TFLOP, "tf32": 494.7 * TFLOP, "bf16": 989.4 * TFLOP,
                    "fp16": 989.4 * TFLOP, "fp8": 1978.9 * TFLOP, "int8": 1978.9 * TFLOP},
        hbm_bytes=80 * GB, hbm_bandwidth_bytes_per_s=3.35 * TB,
        scaleup_bandwidth_bytes_per_s=450 * GB, scaleout_bandwidth_bytes_per_s=50 * GB,
        gpus_per_node=8, scaleup_latency_s=_NVIDIA_NVLINK_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=132,
        cuda_total_bytes=79.19 * GIB,   # vLLM 0.19.0 "worker init memory snapshot: ... total_memory=79.19GiB"
        # (llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs/meta-llama-llama-3-1-8b--h100-80gb--*.log)
        host_w_per_gpu=575, tdp_w=700, source="NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989 TFLOPS BF16 dense, 3.35 TB/s HBM3, NVLink "
               "900 GB/s bidirectional); DGX H100: 8 GPUs, 8x ConnectX-7 400 Gb/s"),
    HardwareSpec(
        id="h200", name="NVIDIA H200 SXM 141GB",
        peak_flops={"fp32": 66.9 * TFLOP, "tf32": 494.7 * TFLOP, "bf16": 989.4 * TFLOP,
                    "fp16": 989.4 * TFLOP, "fp8": 1978.9 * TFLOP, "int8": 1978.9 * TFLOP},
        hbm_bytes=141 * GB, hbm_bandwidth_bytes_per_s=4.8 * TB,
        scaleup_bandwidth_bytes_per_s=450 * GB, scaleout_bandwidth_bytes_per_s=50 * GB,
        gpus_per_node=8, scaleup_latency_s=_NVIDIA_NVLINK_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=132,
        cuda_total_bytes=139.72 * GIB,   # vLLM "Free memory on device (7.34/139.72 GiB) on startup" (vllm issue #23192)
        host_w_per_gpu=575, tdp_w=700, source="NVIDIA H200 Tensor Core GPU datasheet (SXM: 141 GB HBM3e, 4.8 TB/s, same Hopper compute as "
               "H100 SXM, NVLink 900 GB/s bidirectional); HGX H200: 8 GPUs, 400 Gb/s NIC per GPU"),
    HardwareSpec(
        id="a100-80gb", name="NVIDIA A100 SXM4 80GB",
        peak_flops={"fp32": 19.5 * TFLOP, "tf32": 156 * TFLOP, "bf16": 312 * TFLOP, "fp16": 312 * TFLOP,
                    "int8": 624 * TFLOP},
        hbm_bytes=80 * GB, hbm_bandwidth_bytes_per_s=2.039 * TB,
        scaleup_bandwidth_bytes_per_s=300 * GB, scaleout_bandwidth_bytes_per_s=25 * GB,
        gpus_per_node=8, scaleup_latency_s=_NVIDIA_NVLINK_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=108,
        cuda_total_bytes=79.25 * GIB,   # torch on A100 80GB: "GPU 0 has a total capacity of 79.25 GiB" (HiDream-ai/VAREdit
        # issue #6; levihsu/OOTDiffusion issue #235 the same)
        host_link_bandwidth_bytes_per_s=32 * GB,  # PCIe Gen4 x16
        host_w_per_gpu=412.5, tdp_w=400, source="NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB: 312 TFLOPS BF16 dense, 2,039 GB/s HBM2e, "
               "NVLink 600 GB/s bidirectional); DGX A100: 8 GPUs, 8x 200 Gb/s HDR InfiniBand"),
    HardwareSpec(
        id="b200", name="NVIDIA B200 180GB (HGX B200)",
        peak_flops={"fp32": 80 * TFLOP, "tf32": 1100 * TFLOP, "bf16": 2250 * TFLOP, "fp16": 2250 * TFLOP,
                    "fp8": 4500 * TFLOP, "int8": 4500 * TFLOP, "fp4": 9000 * TFLOP},
        hbm_bytes=180 * GB, hbm_bandwidth_bytes_per_s=8.0 * TB,
        scaleup_bandwidth_bytes_per_s=900 * GB, scaleout_bandwidth_bytes_per_s=50 * GB,
        gpus_per_node=8, scaleup_latency_s=_NVIDIA_NVLINK_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=148,
        cuda_total_bytes=178.36 * GIB,   # torch on B200: "Total VRAM: 178.35 GB" (unslothai/unsloth
        # issue #3411); vLLM "Free memory on device (177.66/178.36 GiB)" (vllm PR #21489)
        host_w_per_gpu=787.5, tdp_w=1000, source="NVIDIA HGX B200 / DGX B200 datasheets (per GPU: 2.25 PFLOPS BF16 dense, 4.5 PFLOPS FP8 dense, "
               "180 GB HBM3e at 8 TB/s; NVLink 5 1.8 TB/s bidirectional; 8x ConnectX-7 400 Gb/s)"),
    HardwareSpec(
        id="l40s", name="NVIDIA L40S 48GB (PCIe)",
        peak_flops={"fp32": 91.6 * TFLOP, "tf32": 183 * TFLOP, "bf16": 362.05 * TFLOP,
                    "fp16": 362.05 * TFLOP, "fp8": 733 * TFLOP, "int8": 733 * TFLOP},
        hbm_bytes=48 * GB, hbm_bandwidth_bytes_per_s=864 * GB,
        scaleup_bandwidth_bytes_per_s=32 * GB, scaleout_bandwidth_bytes_per_s=25 * GB,
        gpus_per_node=8, scaleup_latency_s=_PCIE_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=142,
        cuda_total_bytes=47_576_711_168,   # 44.31 GiB: deviceQuery on "NVIDIA L40S", "Total amount of global memory:
        # 45373 MBytes (47576711168 bytes)" (the cuda-device-query crate's README, a Rust port of deviceQuery.cpp)
        host_link_bandwidth_bytes_per_s=32 * GB,  # PCIe Gen4 x16
        tdp_w=350, source="NVIDIA L40S datasheet (362 TFLOPS BF16 dense, 733 TFLOPS FP8 dense, 48 GB GDDR6 at 864 GB/s, "
               "no NVLink: PCIe Gen4 x16 = 32 GB/s per direction); 8 GPUs and one 200 Gb/s NIC per GPU is "
               "a typical server layout (assumption)",
        notes="GDDR6, not HBM; hbm_* fields hold the device memory"),
    HardwareSpec(
        id="mi300x", name="AMD Instinct MI300X 192GB",
        peak_flops={"fp32": 163.4 * TFLOP, "tf32": 653.7 * TFLOP, "bf16": 1307.4 * TFLOP,
                    "fp16": 1307.4 * TFLOP, "fp8": 2614.9 * TFLOP, "int8": 2614.9 * TFLOP},
        hbm_bytes=192 * GB, hbm_bandwidth_bytes_per_s=5.3 * TB,
        scaleup_bandwidth_bytes_per_s=448 * GB, scaleout_bandwidth_bytes_per_s=50 * GB,
        gpus_per_node=8, scaleup_latency_s=1.5e-6, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=304,
        cuda_total_bytes=191.98 * GIB,   # torch (HIP) on 8 x MI300X: "GPU 0 has a total capacity of 191.98 GiB" (vllm
        # issue #7951); the 192 "GB" of the datasheet is GiB here, so this is above hbm_bytes
        tdp_w=750, source="AMD Instinct MI300X datasheet (1307.4 TFLOPS BF16 dense, 192 GB HBM3 at 5.3 TB/s, 7 Infinity "
               "Fabric links x 64 GB/s per direction = 448 GB/s to the 7 peers of an 8-GPU platform; "
               "400 Gb/s NIC per GPU)"),
    HardwareSpec(
        id="h100-pcie", name="NVIDIA H100 PCIe 80GB",
        peak_flops={"fp32": 51.2 * TFLOP, "tf32": 378 * TFLOP, "bf16": 756 * TFLOP, "fp16": 756 * TFLOP,
                    "fp8": 1513 * TFLOP, "int8": 1513 * TFLOP},
        hbm_bytes=80 * GB, hbm_bandwidth_bytes_per_s=2.0 * TB,
        scaleup_bandwidth_bytes_per_s=64 * GB, scaleout_bandwidth_bytes_per_s=50 * GB,
        gpus_per_node=8, scaleup_latency_s=_PCIE_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=114,
        tdp_w=350, source="NVIDIA H100 Tensor Core GPU datasheet (PCIe: 756 TFLOPS BF16 dense, 1,513 TFLOPS FP8 dense, 80 GB "
               "HBM2e at 2.0 TB/s, PCIe Gen5 x16 = 64 GB/s per direction; NVLink bridges pair two GPUs only, "
               "not modelled)"),
    HardwareSpec(
        id="h800", name="NVIDIA H800 SXM5 80GB",
        peak_flops={"fp32": 66.9 * TFLOP, "tf32": 494.7 * TFLOP, "bf16": 989.4 * TFLOP,
                    "fp16": 989.4 * TFLOP, "fp8": 1978.9 * TFLOP, "int8": 1978.9 * TFLOP},
        hbm_bytes=80 * GB, hbm_bandwidth_bytes_per_s=3.35 * TB,
        scaleup_bandwidth_bytes_per_s=200 * GB, scaleout_bandwidth_bytes_per_s=50 * GB,
        gpus_per_node=8, scaleup_latency_s=_NVIDIA_NVLINK_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=132,
        host_w_per_gpu=575, tdp_w=700, source="NVIDIA H800 SXM5: the H100 SXM5 die, clocks and HBM3 (989 TFLOPS BF16 dense, 3.35 TB/s) with NVLink "
               "cut to 400 GB/s bidirectional (DeepSeek-V3 technical report, section 3.1, and NVIDIA's H800 listing)"),
    HardwareSpec(
        id="a100-40gb", name="NVIDIA A100 SXM4 40GB",
        peak_flops={"fp32": 19.5 * TFLOP, "tf32": 156 * TFLOP, "bf16": 312 * TFLOP, "fp16": 312 * TFLOP,
                    "int8": 624 * TFLOP},
        hbm_bytes=40 * GB, hbm_bandwidth_bytes_per_s=1.555 * TB,
        scaleup_bandwidth_bytes_per_s=300 * GB, scaleout_bandwidth_bytes_per_s=25 * GB,
        gpus_per_node=8, scaleup_latency_s=_NVIDIA_NVLINK_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=108, host_link_bandwidth_bytes_per_s=32 * GB,
        cuda_total_bytes=42_298_834_944,   # 39.39 GiB: deviceQuery on "NVIDIA A100-SXM4-40GB", "Total amount of global
        # memory: 40339 MBytes (42298834944 bytes)" (bottlerocket-os/bottlerocket PR #3873); A100-PCIE-40GB the same
        host_w_per_gpu=412.5, tdp_w=400, source="NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB: 312 TFLOPS BF16 dense, 1,555 GB/s HBM2, NVLink "
               "600 GB/s bidirectional)"),
    HardwareSpec(
        id="b300", name="NVIDIA B300 288GB (HGX B300)",
        peak_flops={"fp32": 75 * TFLOP, "tf32": 1100 * TFLOP, "bf16": 2250 * TFLOP, "fp16": 2250 * TFLOP,
                    "fp8": 4500 * TFLOP, "int8": 153.5 * TFLOP, "fp4": 14000 * TFLOP},
        hbm_bytes=288 * GB, hbm_bandwidth_bytes_per_s=8.0 * TB,
        scaleup_bandwidth_bytes_per_s=900 * GB, scaleout_bandwidth_bytes_per_s=100 * GB,
        gpus_per_node=8, scaleup_latency_s=_NVIDIA_NVLINK_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=148, host_link_bandwidth_bytes_per_s=128 * GB,
        tdp_w=1100, source="NVIDIA HGX B300 datasheet, per GPU (8-GPU totals / 8): FP8 4.5 PFLOPS and BF16 2.25 PFLOPS dense, INT8 "
               "cut to ~0.15 POPS dense (Blackwell Ultra), 288 GB HBM3e at ~8 TB/s, NVLink 5 1.8 TB/s bidirectional, "
               "ConnectX-8 800 Gb/s per GPU; the same figures in aiconfigurator-core systems/b300_sxm.yaml"),
    HardwareSpec(
        id="gb200", name="NVIDIA GB200 (NVL72, per Blackwell GPU)",
        peak_flops={"fp32": 80 * TFLOP, "tf32": 1250 * TFLOP, "bf16": 2500 * TFLOP, "fp16": 2500 * TFLOP,
                    "fp8": 5000 * TFLOP, "int8": 5000 * TFLOP, "fp4": 10000 * TFLOP},
        hbm_bytes=186 * GB, hbm_bandwidth_bytes_per_s=8.0 * TB,
        scaleup_bandwidth_bytes_per_s=900 * GB, scaleout_bandwidth_bytes_per_s=100 * GB,
        gpus_per_node=72, scaleup_latency_s=_NVIDIA_NVLINK_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=148, host_link_bandwidth_bytes_per_s=225 * GB,
        tdp_w=1200, source="NVIDIA GB200 NVL72 datasheet, per GPU (72-GPU totals / 72): 2.5 PFLOPS BF16 and 5 PFLOPS FP8 dense, "
               "186 GB HBM3e at 8 TB/s, NVLink 5 1.8 TB/s bidirectional across the 72-GPU NVLink domain; host link: "
               "NVLink-C2C, 900 GB/s bidirectional between the Grace CPU and the superchip's two GPUs, taken as "
               "225 GB/s per GPU and direction (an even split; NVIDIA does not state a per-GPU figure)"),
    HardwareSpec(
        id="gb300", name="NVIDIA GB300 (NVL72, per Blackwell Ultra GPU)",
        peak_flops={"fp32": 80 * TFLOP, "tf32": 1250 * TFLOP, "bf16": 2500 * TFLOP, "fp16": 2500 * TFLOP,
                    "fp8": 5000 * TFLOP, "int8": 165 * TFLOP, "fp4": 15000 * TFLOP},
        hbm_bytes=288 * GB, hbm_bandwidth_bytes_per_s=8.0 * TB,
        scaleup_bandwidth_bytes_per_s=900 * GB, scaleout_bandwidth_bytes_per_s=100 * GB,
        gpus_per_node=72, scaleup_latency_s=_NVIDIA_NVLINK_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=160, host_link_bandwidth_bytes_per_s=225 * GB,
        tdp_w=1400, source="NVIDIA GB300 NVL72 datasheet, per GPU (72-GPU totals / 72): 2.5 PFLOPS BF16 and 5 PFLOPS FP8 dense, "
               "INT8 cut on Blackwell Ultra, 288 GB HBM3e at 8 TB/s, NVLink 5 1.8 TB/s bidirectional; host link: "
               "NVLink-C2C as on GB200 (225 GB/s per GPU and direction, an even split of 900 GB/s)"),
    HardwareSpec(
        id="rtx-pro-6000", name="NVIDIA RTX PRO 6000 Blackwell Server Edition 96GB",
        peak_flops={"fp32": 117 * TFLOP, "tf32": 234 * TFLOP, "bf16": 467.8 * TFLOP, "fp16": 467.8 * TFLOP,
                    "fp8": 935.6 * TFLOP, "int8": 935.6 * TFLOP, "fp4": 1871.2 * TFLOP},
        hbm_bytes=96 * GB, hbm_bandwidth_bytes_per_s=1.792 * TB,
        scaleup_bandwidth_bytes_per_s=64 * GB, scaleout_bandwidth_bytes_per_s=50 * GB,
        gpus_per_node=8, scaleup_latency_s=_PCIE_LATENCY_S, scaleout_latency_s=_IB_LATENCY_S,
        compute_units=188,
        tdp_w=600, source="NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet (96 GB GDDR7 at 1.792 TB/s, PCIe Gen5 x16, no "
               "NVLink); dense tensor rates at the 2,430 MHz boost clock as in aiconfigurator-core "
               "systems/rtx_pro_6000_server.yaml (467.8 TFLOPS BF16, 935.6 FP8)",
        notes="GDDR7, not HBM; hbm_* fields hold the device memory"),
    HardwareSpec(
        id="cpu-local", name="Local 2-core x86 CPU (nominal)",
        peak_flops={"fp32": 256e9, "bf16": 4.1 * TFLOP, "fp16": 256e9, "int8": 4.1 * TFLOP},
        hbm_bytes=24 * GB, hbm_bandwidth_bytes_per_s=20 * GB,
        scaleup_bandwidth_bytes_per_s=10 * GB, scaleout_bandwidth_bytes_per_s=1.25 * GB,
        gpus_per_node=1, scaleup_latency_s=5e-6, scaleout_latency_s=50e-6,
        compute_units=2,
        source="nominal: 2 Xeon cores at 2.0 GHz; fp32 = 2 cores x 2 AVX-512 FMA x 16 lanes x 2 FLOP; bf16/int8 "
               "= AMX tile rate 1024 FLOP/cycle/core; 24 GB RAM; ~20 GB/s memory bandwidth assumed for a "
               "2-vCPU VM. To be replaced by measured numbers from the profiling harness",
        notes="peak rates are nominal upper bounds, not measurements"),
)

HARDWARE: dict[str, HardwareSpec] = {hw.id: hw for hw in _ENTRIES}


def get_hardware(hardware_id: str) -> HardwareSpec:
    key = catalog_key(hardware_id)
    if key not in HARDWARE:
        raise UnknownNameError("hardware", str(hardware_id), HARDWARE)
    return HARDWARE[key]


def list_hardware() -> list[str]:
    return sorted(HARDWARE)


# GPU names (torch.cuda.get_device_name, nvidia-smi) → hardware catalog ids.
CUDA_IDS = (("H200", "h200"), ("H100", "h100-sxm"), ("A100", "a100-80gb"), ("B200", "b200"), ("L40S", "l40s"))


def hardware_id_for_gpu(name: str) -> str | None:
    """The catalog id of a GPU by its device name, or None when the catalog has no such GPU."""
    for needle, hw_id in CUDA_IDS:
        if needle in name:
            return hw_id
    return None
