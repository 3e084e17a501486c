"""Routers: which replica receives an arriving request.

The engine calls ``router.choose(outstanding, queued)`` once per arrival, where for every replica
``outstanding[i]`` = requests admitted (scheduled at least once) but not finished and ``queued[i]`` =
requests waiting in its queue, not yet admitted.

Policies (registry `ROUTERS`, name -> class):

- ``round_robin``: replicas 0, 1, ..., n-1, 0, ... regardless of load.
- ``least_outstanding``: fewest outstanding requests.
- ``join_shortest_queue``: fewest queued requests; ties broken by fewest outstanding.

Ties left after a policy's criteria are broken uniformly at random with the router's own Generator, so
idle replicas share the load evenly (lowest-index tie-breaking would send every request of a light load to
replica 0). Runs stay reproducible: the Generator is seeded from the scenario, and it is drawn from only
when a tie actually occurs.

What a router reads decides how the engine can run (simulator.core.engine): a router with
`stateless = True` chooses without looking at the loads, so `assign(k)` gives the replicas of the next k
requests ahead of time and every replica of a colocated open-loop cluster is simulated on its own; a
router that reads loads is asked at each arrival, with `needs_queued` saying whether it reads the queues
(the engine keeps outstanding counts as arrays; queue lengths cost a pass over the replicas).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from simulator.errors import ScenarioError


class Router:
    """Base class: subclasses implement `choose`. `rng` is used only for tie-breaking."""

    name = "base"
    stateless = False     # True: `choose` ignores the loads and `assign` routes ahead (see the module docstring)
    needs_queued = False  # True: `choose` reads `queued`

    def __init__(self, num_replicas: int, rng: np.random.Generator):
        if int(num_replicas) != num_replicas or num_replicas < 1:
            raise ValueError(f"num_replicas: must be an integer >= 1; got {num_replicas!r}")
        self.num_replicas = int(num_replicas)
        self.rng = rng

    def choose(self, outstanding: Sequence[int], queued: Sequence[int]) -> int:
        raise NotImplementedError

    def assign(self, count: int) -> np.ndarray:
        """Replicas of the next `count` requests, chosen ahead of time (stateless routers only)."""
        raise TypeError(f"router {self.name!r} reads replica loads and cannot route ahead of time")

    def _check(self, outstanding: Sequence[int], queued: Sequence[int]) -> None:
        if len(outstanding) != self.num_replicas or len(queued) != self.num_replicas:
            raise ValueError(f"{self.name}.choose: expected {self.num_replicas} loads per argument; got "
                             f"outstanding={len(outstanding)}, queued={len(queued)}")

    def _pick_among(self, candidates: list[int]) -> int:
        if len(candidates) == 1:
            return candidates[0]
        return candidates[int(self.rng.integers(len(candidates)))]


def _argmin_all(keys: Sequence) -> list[int]:
    """Indices of all minimal entries, ascending (plain Python for a short list, numpy for an array)."""
    if isinstance(keys, np.ndarray):
        return np.flatnonzero(keys == keys.min()).tolist()
    best = min(keys)
    return [i for i, key in enumerate(keys) if key == best]


class RoundRobinRouter(Router):
    name = "round_robin"
    stateless = True

    def __init__(self, num_replicas: int, rng: np.random.Generator):
        super().__init__(num_replicas, rng)
        self._next = 0

    def choose(self, outstanding: Sequence[int], queued: Sequence[int]) -> int:
        self._check(outstanding, queued)
        chosen = self._next
        self._next = (chosen + 1) % self.num_replicas
        return chosen

    def assign(self, count: int) -> np.ndarray:
        chosen = (self._next + np.arange(count, dtype=np.int64)) % self.num_replicas
        self._next = (self._next + count) % self.num_replicas
        return chosen


class LeastOutstandingRouter(Router):
    name = "least_outstanding"

    def choose(self, outstanding: Sequence[int], queued: Sequence[int]) -> int:
        self._check(outstanding, queued)
        return self._pick_among(_argmin_all(outstanding))


class JoinShortestQueueRouter(Router):
    name = "join_shortest_queue"
    needs_queued = True

    def choose(self, outstanding: Sequence[int], queued: Sequence[int]) -> int:
        self._check(outstanding, queued)
        if isinstance(queued, np.ndarray) or isinstance(outstanding, np.ndarray):
            queued, outstanding = np.asarray(queued), np.asarray(outstanding)
            shortest = np.flatnonzero(queued == queued.min())
            return self._pick_among(shortest[_argmin_all(outstanding[shortest])].tolist())
        return self._pick_among(_argmin_all(list(zip(queued, outstanding))))


ROUTERS: dict[str, type[Router]] = {
    cls.name: cls for cls in (RoundRobinRouter, LeastOutstandingRouter, JoinShortestQueueRouter)
}


def make_router(name: str, num_replicas: int, rng: np.random.Generator) -> Router:
    """Instantiate a registered router; an unknown name is a user error on `cluster.router`."""
    if name not in ROUTERS:
        raise ScenarioError("cluster.router", f"unknown router {name!r}; allowed: {', '.join(sorted(ROUTERS))}")
    return ROUTERS[name](num_replicas, rng)
