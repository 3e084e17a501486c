"""Which engine releases serve FP8 checkpoints on GPUs without FP8 tensor cores (Ampere: the catalog's A100s), and
how: as weight-only FP8 (W8A16) with the FP8 Marlin kernel — FP8 weights (1 byte each in memory) dequantized to
16 bits inside the GEMM, 16-bit activations and math (no FP8 tensor cores needed). Elsewhere a GPU without FP8
tensor cores cannot run `cluster.dtype: fp8` or `fp8_block` (profiles.hardware.HardwareSpec.weight_dtype_error).

`refusal(framework, version, dtype, experts, gpu)` is None where the release runs `dtype` weights that way, else the
reason (one line naming the release and the releases that do). Read in each release's source (PyPI wheels):

- vLLM before 0.5.1: `Fp8Config.get_min_capability` is 89 (vllm/model_executor/layers/quantization/fp8.py,
  0.5.0.post1): "The quantization method fp8 is not supported for the current GPU" on an A100.
- vLLM 0.5.1 - 0.8.5.post1: FP8 Marlin (PR #5975, "Expand FP8 support to Ampere GPUs using FP8 Marlin", merged
  2024-07-03): `Fp8Config.get_min_capability` 80 and `Fp8LinearMethod.__init__` sets `use_marlin` below
  compute capability 8.9 (`capability < 89` in 0.5.1, `not current_platform.has_device_capability(89)` later).
  Not for block-scaled (fp8_block) checkpoints — "Marlin doesn't support block-wise fp8" turns it off (0.7.0 -
  0.8.5.post1), and their Triton/CUTLASS block kernels need FP8 — nor for MoE experts: `Fp8MoEMethod` runs Triton
  `fused_moe(use_fp8_w8a8=True)`, which Triton refuses below SM89 ("type fp8e4nv not supported in this
  architecture", vLLM issue #18182: Llama-4 Maverick FP8 on 4 × A100).
- vLLM from 0.9.0: `Fp8MoEMethod.use_marlin` below 8.9 (`torch.ops.vllm.fused_marlin_moe`), and block scales are
  turned into Marlin group scales (`marlin_utils_fp8.prepare_fp8_layer_for_marlin` / `prepare_moe_fp8_layer_
  for_marlin`: "block-wise quantization -> group-wise quantization"), dense and MoE; 0.12.0 `get_fp8_moe_backend`
  → MARLIN ("weight-only path for older GPUs without native FP8"); 0.14.0 - 0.33.0 the FP8 MoE oracle
  (layers/fused_moe/oracle/fp8.py) reaches MARLIN because TritonExperts offers FP8 only where
  `current_platform.supports_fp8()` (SM89+), and the linear kernels (model_executor/kernels/linear) pick
  `MarlinFP8ScaledMMLinearKernel` for per-tensor and 128×128-block FP8 where CUTLASS/FlashInfer/DeepGEMM/torch
  `_scaled_mm` need SM89+.
- SGLang 0.4.0: `fp8_get_quant_method` (srt/layers/quantization/__init__.py) gives linear layers vLLM's
  `Fp8LinearMethod` (vllm >= 0.6.3.post1: FP8 Marlin below SM89); its MoE layers run SGLang's Triton
  `fused_experts(use_fp8_w8a8=True)`. From 0.4.0.post1 SGLang's own `Fp8LinearMethod` uses Marlin only with
  SGLANG_FORCE_FP8_MARLIN (to 0.4.10.post2), and in 0.5.1 - 0.5.5.post3 only where vLLM is installed beside it
  (`MARLIN_FP8_AVAILABLE` imports vllm's marlin_utils_fp8; SGLang no longer requires vLLM): not by default.
- SGLang from 0.5.6: `Fp8LinearMethod.use_marlin = can_auto_enable_marlin_fp8()` (80 <= SM < 89,
  srt/layers/quantization/fp8_utils.py) with SGLang's own `marlin_utils_fp8` (sgl_kernel `gptq_marlin_gemm`),
  block scales as group scales — read through 0.5.23. FP8 experts never: `Fp8MoEMethod.create_moe_runner` picks
  the Triton runner (auto), whose FP8 kernels need SM89 (SGLang issues #5871, #12887: Qwen3-30B-A3B-FP8 on A10/A100).
- TensorRT-LLM: no FP8 on Ampere in any release ("Ampere (SM80, SM86) - FP32, FP16, BF16, INT8, INT4", support
  matrix, nvidia.github.io/TensorRT-LLM/0.18.2/reference/support-matrix.html; the 1.x PyTorch backend "supports FP4
  and FP8 quantization on the latest Blackwell and Hopper GPUs", features/quantization.html).

Approximations, named: every FP8 checkpoint format draftsim prices as `fp8` / `fp8_block` (models.quant_config:
quant_method fp8, modelopt FP8, compressed-tensors W8A8-FP8) follows vLLM's and SGLang's `Fp8Config` rule above
(vLLM 0.33.0's ModelOptFp8Config has minimum capability 80 and compressed-tensors falls back to its W8A16 FP8
scheme below SM89; earlier releases' other formats were not read). A GPU without FP8 tensor cores is taken to be a
CUDA GPU of compute capability 8.x (Ampere and Ada without FP8 are not in the catalog; a user hardware file without
an fp8 rate is read as such: ROCm GPUs have no Marlin in vLLM, "Disable marlin for rocm").
"""
from __future__ import annotations

from dataclasses import dataclass

from profiles.measured.source import version_within

FP8_WEIGHT_DTYPES = ("fp8", "fp8_block")


@dataclass(frozen=True)
class Fp8Marlin:
    """The releases `first` to `last` of `framework` (both included; `last` None: every later one) whose FP8
    Marlin kernels run `dtypes` weights weight-only on GPUs without FP8 tensor cores; `experts`: MoE experts too
    (else dense layers only: an MoE model's FP8 experts are refused)."""
    framework: str
    first: str
    last: str | None
    dtypes: tuple[str, ...]
    experts: bool

    def covers(self, framework: str, version: str) -> bool:
        return framework == self.framework and version_within(version, self.first, self.last)

    def runs(self, dtype: str, experts: bool) -> bool:
        return dtype in self.dtypes and (self.experts or not experts)

    def span(self) -> str:
        if self.last is None:
            return f"{self.framework} >= {self.first}"
        return f"{self.framework} {self.first}" + (f" - {self.last}" if self.last != self.first else "")


# The releases that have it (module docstring); none of TensorRT-LLM's.
RELEASES = (
    Fp8Marlin("vllm", "0.5.1", "0.8.5.post1", ("fp8",), experts=False),
    Fp8Marlin("vllm", "0.9.0", None, ("fp8", "fp8_block"), experts=True),
    Fp8Marlin("sglang", "0.4.0", "0.4.0", ("fp8",), experts=False),
    Fp8Marlin("sglang", "0.5.6", None, ("fp8", "fp8_block"), experts=False),
)


def runs(framework: str, version: str, dtype: str, experts: bool) -> bool:
    """Whether `framework` `version` runs `dtype` weights (of a model with routed experts where `experts`) as
    weight-only FP8 on a GPU without FP8 tensor cores."""
    return any(r.covers(framework, version) and r.runs(dtype, experts) for r in RELEASES)


def _merged(ranges) -> list[Fp8Marlin]:
    """`ranges` with each one that follows the one before it without a gap (the next release of the same
    framework, profiles.engine_time.releases) joined to it."""
    from packaging.version import Version

    from profiles.engine_time.releases import releases
    out: list[Fp8Marlin] = []
    for r in ranges:
        prev = out[-1] if out else None
        if prev is not None and prev.framework == r.framework and prev.last is not None:
            known = releases(r.framework)
            after = [v for v in known if v > Version(prev.last)]
            if after and after[0] == Version(r.first):
                out[-1] = Fp8Marlin(r.framework, prev.first, r.last, r.dtypes, r.experts)
                continue
        out.append(r)
    return out


def _what(dtype: str, experts: bool) -> str:
    return ("block-scaled fp8_block weights" if dtype == "fp8_block" else "fp8 weights") + \
        (" with MoE experts" if experts else "")


def refusal(framework: str, version: str, dtype: str, experts: bool, gpu: str) -> str | None:
    """None where `framework` `version` runs `dtype` weights weight-only (FP8 Marlin) on `gpu`, a GPU without FP8
    tensor cores; else why not, naming the releases that do (module docstring)."""
    if dtype not in FP8_WEIGHT_DTYPES or runs(framework, version, dtype, experts):
        return None
    where = [r.span() for r in _merged(r for r in RELEASES if r.runs(dtype, experts))]
    return (f"{dtype} weights need FP8 tensor cores, which {gpu} lacks, and {framework} {version} has no weight-only "
            f"FP8 (FP8 Marlin) kernel for {_what(dtype, experts)}; releases that run them as W8A16: "
            f"{', '.join(where)}")
