"""FP8 weights on a GPU without FP8 tensor cores (the A100s): served weight-only (W8A16) by the engine releases with
FP8 Marlin kernels, refused under the others (the releases: profiles.engine_time.fp8_marlin; the pricing:
profiles.roofline.WEIGHT_ONLY_FP8).

`weight_only_fp8(hw, dtype)` says whether a deployment's weights are such: simulator.cluster.factory.check_dtypes
lets them through before the engine release is known, and `check_fp8_marlin` refuses them once it is, before any
work, with one line naming cluster.dtype, the release and what is allowed.
"""
from __future__ import annotations

from models.dtypes import WEIGHT_DTYPES
from models.spec import ModelSpec
from profiles.engine_time import fp8_marlin
from profiles.hardware import HardwareSpec
from simulator.errors import ScenarioError


def weight_only_fp8(hw: HardwareSpec, dtype: str) -> bool:
    """fp8 or fp8_block weights on a GPU that lacks FP8 tensor cores (HardwareSpec.runs_weight_only), which only
    FP8 Marlin runs (not the local CPU's torch ops)."""
    from simulator.cluster.factory import CPU_ID
    return dtype in fp8_marlin.FP8_WEIGHT_DTYPES and hw.id != CPU_ID and hw.runs_weight_only(dtype)


def allowed_weight_dtypes(hw: HardwareSpec, framework: str, version: str, target: ModelSpec) -> list[str]:
    """The weight dtypes `framework` `version` runs `target` in on `hw`: those of its tensor cores and the weight-only
    formats (HardwareSpec.allowed_weight_dtypes; mxfp4 only for a model with routed experts), with fp8 / fp8_block
    where the release's FP8 Marlin runs them."""
    from models.spec import EXPERT_ONLY_DTYPES
    allowed = set(hw.allowed_weight_dtypes())
    if not target.routed_expert_param_count():   # (simulator.cluster.factory.check_expert_dtype)
        allowed -= EXPERT_ONLY_DTYPES
    return [d for d in WEIGHT_DTYPES if d in allowed or (
        weight_only_fp8(hw, d) and fp8_marlin.runs(framework, version, d, target.is_moe))]


def check_fp8_marlin(release: tuple[str, str | None], hw: HardwareSpec, target: ModelSpec, dtype: str,
                     where: str = "cluster") -> None:
    """ScenarioError (cluster.dtype) where `dtype` weights are weight-only FP8 on `hw` (`weight_only_fp8`) and the
    deployment's engine release (`release`: simulator.cluster.factory.deployment_release; version None: the
    release the framework's newest engine-time entry stands for) has no FP8 Marlin kernel for them, or for the
    experts of an MoE `target`. What is allowed: the other weight dtypes of this GPU, or, for a checkpoint whose
    config.json holds these FP8 weights (which the engines serve in no other dtype: models.quant_config), a release
    that runs it or a GPU with FP8 tensor cores."""
    if not weight_only_fp8(hw, dtype):
        return
    from profiles.engine_time.frameworks import release_or_modelled
    framework = release[0]
    version = release_or_modelled(framework, release[1])
    problem = fp8_marlin.refusal(framework, version, dtype, target.is_moe, hw.id)
    if problem is None:
        return
    if target.checkpoint_dtype == dtype:
        allowed = (f"allowed: one of those releases (cluster.engine), or a GPU with FP8 tensor cores ({target.name}'s "
                   f"config.json quantization_config holds {dtype} weights)")
    else:
        allowed = f"allowed here: {', '.join(allowed_weight_dtypes(hw, framework, version, target))}"
    pool = f" ({where}.hardware)" if where.startswith("cluster.") else ""
    raise ScenarioError("cluster.dtype", f"{problem}; {allowed}{pool}")
