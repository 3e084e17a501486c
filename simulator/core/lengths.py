"""Request-length distributions (prompt and output tokens), as the scenario's `kind` says
(simulator.config.workload validates them):

- ``fixed``     {value}                      every request has `value` tokens.
- ``uniform``   {low, high}                  integers drawn uniformly from low..high, both inclusive.
- ``lognormal`` {median, sigma, min=1, max}  a continuous lognormal (log-median ``ln median``, log-std
  `sigma`) *truncated* to [min, max] (not clipped: no point mass piles up at the bounds), then rounded to
  the nearest integer. `max` may be omitted (no upper bound); a `max` below the median is refused (a context
  cap typed below the typical length; a `min` above the median samples an upper tail on purpose). Truncation is sampled exactly by inverting
  the normal CDF between the bounds; rounding moves the mean by well under one token.
- ``empirical`` {csv, column}                bootstrap: draws with replacement from the integer values of
  `column` in the CSV file (a relative path is resolved against the scenario file's folder).

Every `sample` call returns an int64 array with all values >= 1; `least_and_mean` gives the smallest value a
distribution can draw and its mean without drawing (the checks before a run: simulator.core.context,
simulator.config.host_memory).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.files import DocumentError, expand_home
from simulator.core.csv_columns import read_csv_columns
from simulator.errors import ScenarioError
from simulator.core.normal import normal_cdf, normal_quantile

#: Truncation ranges holding less probability than this are rejected (sampling there is meaningless).
MIN_TRUNCATED_MASS = 1e-9
#: The most tokens a length may take (fixed value, uniform bounds, lognormal bounds; an unbounded lognormal's
#: draws are clipped to it): far beyond any model's context, which then refuses the request in one line,
#: while a prompt plus an output stays far inside int64 (2**62 + 2**62 wrapped to a negative total, which
#: passed the context check, and the run never ended; 1e300 or a lognormal sigma of 50 overflowed the cast).
MAX_LENGTH_TOKENS = 10**12


@dataclass(frozen=True)
class FixedLength:
    value: int

    def sample(self, n: int, rng: np.random.Generator, base_dir: Path, field: str) -> np.ndarray:
        return np.full(n, self.value, dtype=np.int64)

    def mean(self) -> float:
        return float(self.value)

    def least_and_mean(self, base_dir: Path, field: str) -> tuple[int, float]:
        return self.value, self.mean()


@dataclass(frozen=True)
class UniformLength:
    low: int
    high: int

    def sample(self, n: int, rng: np.random.Generator, base_dir: Path, field: str) -> np.ndarray:
        return rng.integers(self.low, self.high, size=n, endpoint=True, dtype=np.int64)

    def mean(self) -> float:
        return 0.5 * (self.low + self.high)

    def least_and_mean(self, base_dir: Path, field: str) -> tuple[int, float]:
        return self.low, self.mean()


def standard_bounds(median: float, sigma: float, low: float, high: float | None) -> tuple[float, float]:
    """Truncation bounds in standard-normal units: z = (ln x - ln median) / sigma."""
    mu = np.log(median)
    z_low = (np.log(low) - mu) / sigma
    z_high = np.inf if high is None else (np.log(high) - mu) / sigma
    return float(z_low), float(z_high)


def normal_mass(z_low: float, z_high: float) -> float:
    """P(z_low < Z < z_high) for standard normal Z, computed on the tail side that keeps precision."""
    if z_low > 0:  # both bounds in the upper tail: use survival functions Phi(-z)
        return float(normal_cdf(-z_low) - normal_cdf(-z_high))
    return float(normal_cdf(z_high) - normal_cdf(z_low))


@dataclass(frozen=True)
class LognormalLength:
    median: float
    sigma: float
    min: int = 1
    max: int | None = None

    def _bounds(self) -> tuple[float, float]:
        return standard_bounds(self.median, self.sigma, self.min, self.max)

    def sample(self, n: int, rng: np.random.Generator, base_dir: Path, field: str) -> np.ndarray:
        z_low, z_high = self._bounds()
        u = rng.random(n)
        if z_low > 0:  # sample the mirrored variable -Z from its lower tail (full relative precision)
            lo, hi = normal_cdf(-z_high), normal_cdf(-z_low)
            z = -normal_quantile(lo + u * (hi - lo))
        else:
            lo, hi = normal_cdf(z_low), normal_cdf(z_high)
            z = normal_quantile(lo + u * (hi - lo))
        with np.errstate(over="ignore"):   # (inf: clipped to MAX_LENGTH_TOKENS below)
            x = np.exp(np.log(self.median) + self.sigma * z)
        upper = MAX_LENGTH_TOKENS if self.max is None else self.max
        # rint keeps values inside [min, max] (integer bounds); clip only guards floating-point edge cases.
        return np.clip(np.rint(x), self.min, upper).astype(np.int64)

    def mean(self) -> float:
        """Mean of the continuous truncated lognormal (before rounding to integers)."""
        z_low, z_high = self._bounds()
        s = self.sigma
        scale = np.exp(np.log(self.median) + 0.5 * s * s)
        return float(scale * normal_mass(z_low - s, z_high - s) / normal_mass(z_low, z_high))

    def least_and_mean(self, base_dir: Path, field: str) -> tuple[int, float]:
        return self.min, self.mean()


@dataclass(frozen=True)
class EmpiricalLength:
    csv: Path
    column: str

    def sample(self, n: int, rng: np.random.Generator, base_dir: Path, field: str) -> np.ndarray:
        values = self.values(base_dir, field)
        return values[rng.integers(0, len(values), size=n)]

    def values(self, base_dir: Path, field: str) -> np.ndarray:
        """The column's values (ScenarioError on `field`.csv for a file or column that cannot be read)."""
        path = resolve_path(self.csv, base_dir, f"{field}.csv")
        return read_csv_columns(path, {self.column: "count"}, f"{field}.csv")[self.column]

    def least_and_mean(self, base_dir: Path, field: str) -> tuple[int, float]:
        """(both from one read of the column; the draw reads it again)"""
        values = self.values(base_dir, field)
        return int(values.min()), float(values.mean())


def resolve_path(path: Path, base_dir: Path, field: str) -> Path:
    """A relative path is taken relative to the scenario file's folder (ScenarioError on `field` for a `~user`
    without a home folder)."""
    try:
        path = expand_home(path)
    except DocumentError as exc:
        raise ScenarioError(field, str(exc)) from None
    return path if path.is_absolute() else Path(base_dir) / path
