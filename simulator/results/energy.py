"""Energy, power and cost of a run: the summary's `energy_j`, `energy_per_output_token_j`, `avg_power_w` and
`usd_per_mtok`, from the steps' device time, FLOPs and bytes (profiles.power) and stated constants.

Accounting over the measured window W (simulator.results.metrics); g is a replica's GPUs (ReplicaKind.gpus: the
target's plus a separate draft model's own, which are taken to be busy for the whole device time of a step):
* GPU energy = Σ over replicas of g·P_idle·W (every GPU idles all window long) plus, for every step, g·(P_busy −
  P_idle)·(draft + verify seconds), the step's device time (its host-only engine time and KV I/O idle), with
  P_busy from the step's per-GPU FLOP/s and bytes/s (profiles.power.GpuPower) — accumulated step by step as the
  steps are logged (`RunPower.above_idle_j`, simulator.results.step_totals), the part of a step outside the
  window cut off in proportion;
* host and network energy = g·host_power_w_per_gpu·W (a stated constant: `energy.host_power_w_per_gpu`, else the
  hardware's `host_w_per_gpu`, profiles.hardware);
* cost: GPU-hours g·W/3600 at `energy.usd_per_gpu_hour` (else the plan price table,
  profiles.prices) plus, when `energy.usd_per_kwh` is given, the energy billed; per million
  output tokens of the window.
Hardware without a stated board power (`tdp_w` 0) gives no energy figures (null in summary.json), and the
`energy` settings that need them are refused for it (`check_power_known`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from profiles.power import GpuPower, gpu_power
from simulator.errors import ScenarioError

JOULES_PER_KWH = 3.6e6


@dataclass(frozen=True)
class RunPower:
    """Per replica of a run (in replica order): its GPUs, their power model (None: unknown) and host power."""

    gpus: np.ndarray
    models: tuple[GpuPower | None, ...]
    host_w_per_gpu: np.ndarray

    @property
    def known(self) -> bool:
        return all(m is not None for m in self.models)

    def above_idle_j(self, replica: np.ndarray, device_s: np.ndarray, flops: np.ndarray, nbytes: np.ndarray,
                     inside: np.ndarray) -> np.ndarray:
        """Per step: energy above idle of its device time (J), times `inside` (its share in the window)."""
        out = np.zeros(len(replica))
        if not self.known:
            return out
        if self._one_model:   # (the common case: every step's own arrays, no gathers by model)
            return self._above_idle_j(self.models[0], self._gpus_of(replica), device_s, flops, nbytes, inside)
        for model in set(self.models):   # (by equality: two pools of one GPU and dtype hold equal models, not one)
            rows = np.flatnonzero(np.isin(replica, [r for r, m in enumerate(self.models) if m == model]))
            if not len(rows):
                continue
            out[rows] = self._above_idle_j(model, self.gpus[replica[rows]], device_s[rows], flops[rows], nbytes[rows],
                                           inside[rows])
        return out

    @staticmethod
    def _above_idle_j(model: GpuPower, gpus, device_s: np.ndarray, flops: np.ndarray, nbytes: np.ndarray,
                      inside: np.ndarray) -> np.ndarray:
        """`above_idle_j` of steps that all run `model`, on `gpus` GPUs each (per step, or one number for all)."""
        busy = model.step_energy_j(gpus, device_s, 0.0, flops, nbytes)
        return (busy - gpus * model.idle_w * device_s) * inside

    @cached_property
    def _one_model(self) -> bool:
        """Every replica runs one power model (by equality, as `above_idle_j` groups them)."""
        return len(set(self.models)) == 1

    def _gpus_of(self, replica: np.ndarray):
        """Per step, its replica's GPUs; one number when every replica has as many (the same float in every
        product, so the same values as the per-step array's, without gathering it)."""
        if (self.gpus == self.gpus[0]).all():
            return self.gpus[0]
        return self.gpus[replica]


def check_power_known(energy, hardware, where: str) -> None:
    """ScenarioError naming the first `energy` setting given that needs the GPUs' power (`power_model`,
    `usd_per_kwh`, `host_power_w_per_gpu`) when the `hardware` of pool `where` states no board power (`tdp_w`
    0): its energy figures are null, so usd_per_kwh turned usd_per_mtok null too and the others were ignored
    without a word (exit 0). usd_per_gpu_hour needs no power: the GPU-hour cost stays."""
    given = [name for name in ("power_model", "usd_per_kwh", "host_power_w_per_gpu") if name in energy.model_fields_set]
    if given and not hardware.tdp_w:
        raise ScenarioError(f"energy.{given[0]}", f"needs the GPUs' power, but the hardware {hardware.id!r} of {where} "
                            "states no tdp_w (its board power limit, W); give the hardware its tdp_w, or leave out "
                            f"energy.{', energy.'.join(given)} (usd_per_mtok then counts GPU-hours only)")


def run_power(kinds: list[tuple[object, int]], energy) -> RunPower:
    """The RunPower of pools given as (ReplicaKind, replica count) in replica order, under the scenario's
    `energy` section (simulator.config.scenario.EnergyConfig)."""
    gpus, models, host = [], [], []
    for kind, count in kinds:
        model = gpu_power(kind.hardware, kind.dtype, energy.power_model)
        h = energy.host_power_w_per_gpu if energy.host_power_w_per_gpu is not None else kind.hardware.host_w_per_gpu
        gpus += [kind.gpus] * count
        models += [model] * count
        host += [h] * count
    return RunPower(np.array(gpus, dtype=float), tuple(models), np.array(host, dtype=float))


def _price(cluster, energy) -> float:
    """US$ per GPU-hour: the scenario's, else the plan table's GPU-weighted over the pools (NaN: no quote)."""
    if energy.usd_per_gpu_hour is not None:
        return float(energy.usd_per_gpu_hour)
    from profiles.prices import price_per_gpu_hour
    total = weight = 0.0
    for pool in cluster.pools:
        quote = price_per_gpu_hour(pool.kind.hardware.id)
        if quote is None:
            return math.nan
        total += quote.usd_per_gpu_hour * pool.gpus
        weight += pool.gpus
    return total / weight if weight else math.nan


def energy_summary(cluster, totals, summary: dict) -> dict:
    """The summary's energy and cost fields (module docstring)."""
    energy = cluster.scenario.energy
    power = totals.power
    window = summary["window_s"]
    tokens = summary["output_tokens_per_s"] * window
    gpus = float(cluster.gpus)
    price = _price(cluster, energy)
    out = {"power_model": energy.power_model}
    if power is None or not power.known or not window > 0:
        gpu_j = host_j = math.nan
    else:
        idle = float(sum(g * m.idle_w for g, m in zip(power.gpus, power.models)))
        gpu_j = idle * window + totals.sum("energy_above_idle_j")
        host_j = float((power.gpus * power.host_w_per_gpu).sum()) * window
    energy_j = gpu_j + host_j
    ratio = lambda a, b: a / b if b > 0 else math.nan  # noqa: E731
    out.update({
        "energy_j": energy_j, "gpu_energy_j": gpu_j, "host_energy_j": host_j,
        "energy_per_output_token_j": ratio(energy_j, tokens), "gpu_energy_per_output_token_j": ratio(gpu_j, tokens),
        "avg_power_w": ratio(energy_j, window),
        "avg_power_per_gpu_w": ratio(gpu_j, window * gpus),
        "usd_per_gpu_hour": price, "usd_per_kwh": energy.usd_per_kwh,
    })
    cost = gpus * window / 3600.0 * price
    if energy.usd_per_kwh is not None:
        cost += energy_j / JOULES_PER_KWH * energy.usd_per_kwh
    out["usd_per_mtok"] = ratio(cost, tokens) * 1e6
    return out
