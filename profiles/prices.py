"""GPU rental prices (US$ per GPU-hour, on demand) used by `draftsim plan` when a plan gives none, and by a
run's summary (`usd_per_mtok`, simulator.results.energy) when its scenario gives no `energy.usd_per_gpu_hour`.

Prices move quickly and differ by provider, region and commitment; these are single public quotes with
their source and date, meant as defaults. Give ``usd_per_gpu_hour`` per hardware entry in the plan to
use your own. Hardware without a quote here (b200, l40s, mi300x, cpu-local) must be priced in the plan.
"""
from __future__ import annotations

from dataclasses import dataclass


# The most a user's price may be (US$ per GPU-hour; per kWh): far above any quote (on-demand GPUs rent for
# about $0.3-10 per GPU-hour, electricity for $0.05-0.5 per kWh, spot peaks ~$10) while a typo or 1e308
# ($/h overflowed to inf over a plan's GPUs: a ValueError traceback drawing the plan's Pareto plot; a run's
# usd_per_mtok was null) is refused.
MAX_USD_PER_GPU_HOUR = 1000.0
# The least (a tenth of a cent per GPU-hour, far below any quote): a plan priced at 5e-324 $/h ranked its candidates
# by tok/s per $/h = inf, exit 0.
MIN_USD_PER_GPU_HOUR = 0.001
MAX_USD_PER_KWH = 100.0


@dataclass(frozen=True)
class GpuPrice:
    hardware: str
    usd_per_gpu_hour: float
    source: str
    as_of: str


PRICES: dict[str, GpuPrice] = {p.hardware: p for p in (
    GpuPrice("h100-sxm", 2.49, "Lambda on-demand H100 SXM 80GB as quoted by ozmarx.com/h100-vs-a100-training "
                               "(typical early-2026 range $2.49-3.99: pricegpu.pages.dev/blog/h100-vs-a100-cloud-price)",
             "2026-04"),
    GpuPrice("a100-80gb", 1.89, "Lambda on-demand A100 80GB as quoted by ozmarx.com/h100-vs-a100-training "
                                "(typical early-2026 range $1.49-2.49: pricegpu.pages.dev/blog/h100-vs-a100-cloud-price)",
             "2026-04"),
    GpuPrice("h200", 3.37, "E2E Networks on-demand H200 (INR 300/h = US$3.37/h), "
                           "e2enetworks.com/blog/nvidia-a100-vs-h100-vs-h200-gpu-comparison", "2026"),
)}


def price_per_gpu_hour(hardware: str) -> GpuPrice | None:
    return PRICES.get(hardware)
