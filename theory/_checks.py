"""Input validation shared by the theory modules.

Every public function in ``theory`` validates its arguments with these helpers so that bad input fails
with one ``ValueError`` line that names the argument and says what is allowed.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

#: Absolute tolerance on ``sum(p) == 1`` for probability vectors given by callers.
DISTRIBUTION_ATOL = 1e-6


def distribution(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    """Return ``values`` as a float64 probability vector, or raise ValueError naming ``name``.

    Allowed: a non-empty 1-D array of finite, non-negative numbers summing to 1 within
    ``DISTRIBUTION_ATOL``. The returned vector is renormalised to sum to exactly 1 (up to rounding)
    so that tolerance-level drift in the input does not leak into later arithmetic.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D probability vector, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers")
    if np.any(arr < 0.0):
        raise ValueError(f"{name} must be non-negative (a probability vector); min is {arr.min():.3g}")
    total = float(arr.sum())
    if abs(total - 1.0) > DISTRIBUTION_ATOL:
        raise ValueError(f"{name} must sum to 1 (a probability vector); it sums to {total:.9g}")
    return arr / total


def same_support(p: np.ndarray, q: np.ndarray, p_name: str = "p", q_name: str = "q") -> None:
    """Raise ValueError unless ``p`` and ``q`` are over the same vocabulary (same length)."""
    if p.shape != q.shape:
        raise ValueError(f"{p_name} and {q_name} must have the same length, got {p.size} and {q.size}")


def probability(value: float, name: str) -> float:
    """Return ``value`` as a float in [0, 1], or raise ValueError naming ``name``."""
    v = _finite_float(value, name)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return v


def probabilities(values: Sequence[float] | np.ndarray, name: str, ndim: int = 1) -> np.ndarray:
    """Return ``values`` as a float64 array of entries in [0, 1] with ``ndim`` dimensions."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array of probabilities, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
        raise ValueError(f"{name} entries must be probabilities in [0, 1]")
    return arr


def non_negative_int(value: int, name: str) -> int:
    """Return ``value`` as an int >= 0, or raise ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value}")
    return int(value)


def positive_int(value: int, name: str) -> int:
    """Return ``value`` as an int >= 1, or raise ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return int(value)


def non_negative_float(value: float, name: str) -> float:
    """Return ``value`` as a finite float >= 0, or raise ValueError naming ``name``."""
    v = _finite_float(value, name)
    if v < 0.0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return v


def positive_float(value: float, name: str) -> float:
    """Return ``value`` as a finite float > 0, or raise ValueError naming ``name``."""
    v = _finite_float(value, name)
    if v <= 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return v


def _finite_float(value: float, name: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def generator(rng: np.random.Generator | None, name: str = "rng") -> np.random.Generator:
    """Require an explicit ``numpy.random.Generator`` (determinism: no hidden global seed)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{name} must be a numpy.random.Generator (e.g. np.random.default_rng(seed))")
    return rng
