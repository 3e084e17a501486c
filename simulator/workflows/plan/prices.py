"""GPU rental prices of `draftsim plan` (the table lives in profiles.prices, beside the hardware catalog, so
that a run's summary prices its GPU-hours with the same quotes: simulator.results.energy)."""
from __future__ import annotations

from profiles.prices import MAX_USD_PER_GPU_HOUR, MIN_USD_PER_GPU_HOUR, PRICES, GpuPrice, price_per_gpu_hour

__all__ = ["MAX_USD_PER_GPU_HOUR", "MIN_USD_PER_GPU_HOUR", "PRICES", "GpuPrice", "price_per_gpu_hour"]
