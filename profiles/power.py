"""GPU power while serving: idle power plus a part that grows with what a step makes the GPU do.

Two models (`POWER_MODELS`, `energy.power_model`), both from the linear utilization model of server power
(Fan, Weber & Barroso, "Power provisioning for a warehouse-sized computer", ISCA 2007: P(u) = P_idle +
(P_busy − P_idle)·u, within a few percent at machine level), with P_busy = the board power limit `tdp_w`
(datasheet) and P_idle = `idle_w` (profiles.hardware: a loaded, idle GPU):

* `utilization` (default): during a step's device time the activity u is the sum of the fractions of the
  GPU's *achievable* compute and memory throughput the step uses,

      u = min(1, (FLOP/s / peak FLOP/s) / compute_fraction + (bytes/s / peak bytes/s) / memory_fraction),

  with the roofline's achievable fractions (profiles.roofline.DEFAULT_EFFICIENCY: large GEMMs on H100 sustain
  ~0.76 of the dense peak because they run into the power limit, streaming kernels ~0.90 of the HBM peak), so
  a step that drives the tensor cores as hard as a power-capped large GEMM, or the memory as hard as a streaming
  copy, reaches the limit; the two add (the additive activity of the vLLM semantic router's fleet-sim power
  model, vllm-semantic-router.com/docs/fleet-sim/power-model: activity = min(1, kv_frac + compute_frac)).
* `busy`: the load-scaled TDP baseline (WattGPU, arXiv 2607.02391, calls it the standard physically grounded
  baseline): the board limit whenever a kernel runs, idle otherwise.

Both: a step's host-only time (the serving engine's per-step CPU work, `engine_s`) and the gaps between steps
are idle. Approximations: power follows utilization instantly (no clock ramp: a GPU right after work idles
higher, "The Model Parking Tax", arXiv 2605.23918); the step's FLOPs and bytes are spread evenly over its device
time and its GPUs (a pipeline stage's GPUs are averaged over the step); DVFS below the limit is not modelled.
Held-out check (profiles/data/gpu-forwards/h100-sxm-2026-11-26/power.csv, an H100 SXM measured by the lead, not
used to set any constant): scenarios/benchmarks/power_check.py prints both models' errors against it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiles.hardware import HardwareSpec


@dataclass(frozen=True)
class GpuPower:
    """Power of one GPU of a replica (W), as a function of what its steps do."""

    model: str                     # a POWER_MODELS name
    idle_w: float
    tdp_w: float
    peak_flops_per_s: float        # dense matmul peak of the replica's weight dtype
    peak_bytes_per_s: float
    compute_fraction: float        # achievable fractions (profiles.roofline efficiency)
    memory_fraction: float

    def busy_w(self, flops_per_s, bytes_per_s):
        """Power while kernels run at the given per-GPU FLOP/s and bytes/s (arrays or scalars)."""
        if self.model == "busy":
            return np.full(np.shape(flops_per_s), self.tdp_w) if np.ndim(flops_per_s) else self.tdp_w
        activity = (np.asarray(flops_per_s, dtype=float) / (self.peak_flops_per_s * self.compute_fraction)
                    + np.asarray(bytes_per_s, dtype=float) / (self.peak_bytes_per_s * self.memory_fraction))
        return self.idle_w + (self.tdp_w - self.idle_w) * np.minimum(activity, 1.0)

    def step_energy_j(self, gpus, device_s, host_s, flops, nbytes):
        """Energy (J) of steps on `gpus` GPUs each: `device_s` of kernels moving the step's `flops` and `nbytes`
        (totals over the GPUs), `host_s` of host-only time at idle power. Arrays or scalars."""
        device_s = np.asarray(device_s, dtype=float)
        gpus = np.asarray(gpus, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_gpu_s = np.where(device_s > 0, gpus * device_s, 1.0)
            power = self.busy_w(np.asarray(flops, dtype=float) / per_gpu_s, np.asarray(nbytes, dtype=float) / per_gpu_s)
        return gpus * (power * device_s + self.idle_w * np.asarray(host_s, dtype=float))


POWER_MODELS = ("utilization", "busy")


def gpu_power(hardware: HardwareSpec, dtype: str = "bf16", model: str = "utilization") -> GpuPower | None:
    """The power model of one GPU of `hardware` running weights in `dtype`, or None when the hardware states
    no board power (`tdp_w` 0: user hardware without it, the nominal CPU entry)."""
    if model not in POWER_MODELS:
        raise ValueError(f"energy.power_model: {model!r}; allowed: {', '.join(POWER_MODELS)}")
    if not hardware.tdp_w:
        return None
    from profiles.roofline import default_efficiency
    eff = default_efficiency(hardware.id)
    return GpuPower(model, hardware.idle_w, hardware.tdp_w, hardware.matmul_flops(dtype),
                    hardware.hbm_bandwidth_bytes_per_s, eff.compute_fraction, eff.memory_fraction)
