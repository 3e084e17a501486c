"""Early exit in a batch (SpecEE, CALM, LayerSkip's early-exit inference): each token leaves the model after
a random number of layers X (a discrete law over exit layers, the rest run all L), but a batched pass runs
until its *deepest* token has exited, so the layers a step pays are max(X_1..X_B).

E[max] = Σ_j x_j [F(x_j)^B − F(x_{j−1})^B] over the support x_1 < … < x_k = L (F the CDF): it rises from
E[X] at batch 1 towards L as the batch grows, which is why early exit's gain fades under load.
:func:`simulate_max_layers` draws the same maxima (for the tests).
"""
from __future__ import annotations

import numpy as np

from theory import _checks


#: Tolerance on ``sum(exit_probs) <= 1``: the scenario schema's (simulator.config.scenario.EarlyExitConfig), so
#: that a law the schema accepts is never refused here (it was 1e-12: a traceback for sums in (1 + 1e-12, 1 + 1e-9]).
EXIT_PROBS_ATOL = 1e-9


def exit_law(exit_layers, exit_probs, num_layers: int) -> tuple[np.ndarray, np.ndarray]:
    """(support, probabilities): exit at exit_layers[i] with exit_probs[i], else at num_layers."""
    layers = np.asarray(exit_layers, dtype=np.int64)
    probs = np.asarray(exit_probs, dtype=np.float64)
    num_layers = _checks.positive_int(num_layers, "num_layers")
    if layers.shape != probs.shape or (np.diff(layers) <= 0).any() or (layers < 1).any() or \
            (layers >= num_layers).any():
        raise ValueError("exit_layers must be strictly ascending in 1..num_layers-1, one probability each")
    if not np.all(np.isfinite(probs)) or (probs < 0).any() or probs.sum() > 1.0 + EXIT_PROBS_ATOL:
        raise ValueError(f"exit_probs must be finite, >= 0 and sum to at most 1, got {probs.sum():.4g}")
    if probs.sum() > 1.0:   # within the tolerance: renormalised, so the law sums to 1
        probs = probs / probs.sum()
    return np.append(layers, num_layers), np.append(probs, max(0.0, 1.0 - probs.sum()))


def expected_max_layers(exit_layers, exit_probs, num_layers: int, batch: int) -> float:
    """E[max of `batch` i.i.d. exit layers] (module docstring)."""
    batch = _checks.positive_int(batch, "batch")
    support, probs = exit_law(exit_layers, exit_probs, num_layers)
    cdf = np.minimum(np.cumsum(probs), 1.0)
    cdf[-1] = 1.0
    powered = cdf ** batch
    return float(np.sum(support * np.diff(np.concatenate([[0.0], powered]))))


def simulate_max_layers(exit_layers, exit_probs, num_layers: int, batch: int, samples: int,
                        rng: np.random.Generator) -> np.ndarray:
    """`samples` draws of max(X_1..X_batch)."""
    batch = _checks.positive_int(batch, "batch")   # (unchecked: numpy's 'zero-size array ...' at 0, a TypeError at 2.5)
    support, probs = exit_law(exit_layers, exit_probs, num_layers)
    rng = _checks.generator(rng)
    draws = rng.choice(support, size=(_checks.positive_int(samples, "samples"), batch), p=probs / probs.sum())
    return draws.max(axis=1)
