"""Which fused-MoE kernel a vLLM release runs MXFP4 routed experts with (gpt-oss's checkpoint, `cluster.dtype:
mxfp4`: MXFP4 weights, bf16 activations) on a GPU, where it differs from the kernel the measured tables timed.

`vllm_mxfp4_moe_kernel(version, hardware_id)` returns "marlin" where the release runs Marlin experts, or None
where draftsim keeps the tables' own kernel for the configuration (profiles.measured.moe: vLLM 0.24's OpenAI
Triton experts on H100/H200). Read in each release's source (PyPI sdists and wheels):

- vLLM 0.10.1: `Mxfp4MoEMethod._should_use_marlin` (model_executor/layers/quantization/mxfp4.py): Marlin on every
  CUDA GPU but SM100 "if not current_platform.has_device_capability(90)" ("marlin kernel has better performance on
  ampere") and, on Hopper, "if not has_triton_kernels()" (or torch older than 2.8).
- vLLM 0.10.2 - 0.11.2: `get_mxfp4_backend`: on SM90 FlashInfer's MXFP4 x BF16 kernel only with
  VLLM_USE_FLASHINFER_MOE_MXFP4_BF16 (envs.py default "0"); then Marlin where "get_device_capability()[0] < 9 or
  not has_triton_kernels() or not is_torch_equal_or_newer('2.8.0')", else Triton. `has_triton_kernels()` is
  `_has_module("triton_kernels")` (vllm/utils/__init__.py, 0.11.0), and `triton_kernels` is neither a dependency
  of these wheels (Requires-Dist of vllm-0.11.0: no triton_kernels; requirements/cuda.txt of the 0.10.2 sdist) nor
  installed by their Docker image (docker/Dockerfile of the 0.10.2 sdist installs FlashInfer, not it): a default
  install runs Marlin experts on Hopper.
- vLLM 0.12.0 on: the wheel ships OpenAI's triton_kernels (CMakeLists.txt includes
  cmake/external_projects/triton_kernels.cmake, setup.py copies vllm/third_party/triton_kernels into the wheel;
  present in the 0.15.0 wheel), and `has_triton_kernels()` also finds "vllm.third_party.triton_kernels"
  (vllm/utils/import_utils.py): Triton experts on Hopper, Marlin below SM90 as before.

Approximations, named: the GPU's compute capability is read from the catalog id (`HOPPER`, `BELOW_HOPPER`); a
user-defined GPU and the Blackwell GPUs (whose kernel depends on whether FlashInfer, an optional extra of
0.10.2 - 0.11.x, is installed) keep the tables' kernel. A deployment that installs triton_kernels beside vLLM
0.10.x - 0.11.x runs Triton experts on Hopper: not modelled (the default install is).
"""
from __future__ import annotations

from profiles.measured.source import version_key

MARLIN = "marlin"
FIRST_MXFP4 = "0.10.1"            # the first vLLM release on PyPI with the MXFP4 MoE method (gpt-oss)
VENDORED_TRITON_KERNELS = "0.12.0"   # the first release whose wheel ships triton_kernels (module docstring)
HOPPER = frozenset({"h100-sxm", "h100-pcie", "h800", "h200"})            # compute capability 9.0
BELOW_HOPPER = frozenset({"a100-40gb", "a100-80gb", "l40s"})             # 8.0 (A100), 8.9 (L40S)


def vllm_mxfp4_moe_kernel(version: str | None, hardware_id: str) -> str | None:
    """"marlin" where vLLM `version` (None: the newest) runs MXFP4 experts with Marlin on `hardware_id`, else None
    (the measured tables' kernel) (module docstring)."""
    if version is None or version_key(version) < version_key(FIRST_MXFP4):
        return None
    if hardware_id in BELOW_HOPPER:
        return MARLIN
    if hardware_id in HOPPER and version_key(version) < version_key(VENDORED_TRITON_KERNELS):
        return MARLIN
    return None


def moe_kernel(release: tuple[str, str | None], hardware_id: str, dtype: str) -> str | None:
    """The fused-MoE kernel a deployment of engine `release` (framework, version) runs its `dtype` experts with on
    `hardware_id` where a rule of this module says it differs from the tables' own; None elsewhere."""
    framework, version = release
    if dtype != "mxfp4" or framework != "vllm":
        return None
    return vllm_mxfp4_moe_kernel(version, hardware_id)
