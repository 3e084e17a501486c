"""The walk both clients make over ShareGPT: shuffle the conversations with Python's `random` seeded by the
client's `--seed`, go through them in that order, keep each whose lengths pass the client's filter, stop at
the number of requests asked for."""
from __future__ import annotations

import random

import numpy as np


def shuffled_order(size: int, seed: int) -> np.ndarray:
    """The permutation `random.seed(seed); random.shuffle(rows)` applies to a list of `size` rows: row k of the
    shuffled list is original row order[k] (random.Random(seed).shuffle draws exactly as the seeded module-level
    functions do: one Mersenne Twister, the same `_randbelow` calls)."""
    order = list(range(size))
    random.Random(seed).shuffle(order)
    return np.asarray(order, dtype=np.int64)


def first_valid(order: np.ndarray, valid: np.ndarray, n: int) -> np.ndarray:
    """The rows a client keeps: the first `n` rows of `order` whose `valid` (indexed by original row) holds
    (fewer when fewer pass)."""
    kept = order[valid[order]]
    return kept[:n]
