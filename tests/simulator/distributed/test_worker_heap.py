"""A local pool worker moves the heap it inherited at the fork to the collector's permanent generation
(simulator.distributed.executors._init_worker): its collections skip the parent's objects, and the
objects it creates itself are collected as before."""
from __future__ import annotations

import gc

from simulator.distributed.executors import ProcessExecutor


def _heap(_task) -> tuple[int, int]:
    """(objects frozen, collectable objects the worker made that the collector found)."""
    frozen = gc.get_freeze_count()
    for _ in range(100):   # cyclic garbage of the worker's own
        cycle = []
        cycle.append(cycle)
    del cycle
    return frozen, gc.collect()


def test_a_pool_worker_freezes_what_it_inherited_and_collects_its_own_garbage():
    inherited = [{"a": [i]} for i in range(10_000)]   # container objects alive in this process at the fork
    with ProcessExecutor(1) as pool:
        frozen, collected = next(iter(pool.imap_unordered(_heap, [0])))
    assert frozen >= len(inherited)
    assert collected >= 100
