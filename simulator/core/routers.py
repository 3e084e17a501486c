"""Routers: which replica receives an arriving request.

The engine calls ``router.choose(outstanding, queued)`` once per arrival, where for every replica
``outstanding[i]`` = requests admitted (scheduled at least once) but not finished and ``queued[i]`` =
requests waiting in its queue, not yet admitted.

Policies (registry `ROUTERS`, name -> class):

- ``round_robin``: replicas 0, 1, ..., n-1, 0, ... regardless of load.
- ``least_outstanding``: fewest outstanding requests.
- ``join_shortest_queue``: fewest queued requests; ties broken by fewest outstanding.
- ``prefix_aware``: the cache-aware policy of SGLang's router (SGLang Model Gateway docs, "Load
  Balancing" / "Cache-Aware Routing", defaults cache threshold 0.3, balance thresholds 64 and 1.5×):
  when the load is imbalanced (max − min outstanding > 64 and max > 1.5 × min) the least outstanding
  replica; otherwise the replica whose prefix cache holds the longest start of the prompt, if it covers
  at least 30 % of it, else the replica caching the fewest tokens. Needs prefix caching
  (`cluster.kv_cache.prefix_caching`). Approximation: the router sees each replica's cache exactly
  (SGLang's router keeps an approximate radix tree of what it sent where; vLLM's production stack and
  Dynamo use reported cache state).

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
    """Base class: subclasses implement `choose`. `rng` is used only for tie-breaking. A router with
    `uses_prefix_match` also gets, per replica, the cached tokens of the request's prompt (`PrefixView`)."""

    name = "base"
    uses_prefix_match = False
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

    def assign_one(self) -> int:
        """`assign(1)`'s replica, for a driver routing request by request."""
        return int(self.assign(1)[0])

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

    def assign_one(self) -> int:
        chosen = self._next   # (in Python: once per arrival of a driver that routes as requests come)
        self._next = (chosen + 1) % self.num_replicas
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


class PrefixAwareRouter(Router):
    name = "prefix_aware"
    uses_prefix_match = True
    CACHE_THRESHOLD, BALANCE_ABS, BALANCE_REL = 0.3, 64, 1.5   # SGLang Model Gateway defaults

    def choose(self, outstanding: Sequence[int], queued: Sequence[int], prefix=None) -> int:
        """`prefix`: (prompt tokens, per replica the prompt's cached tokens and the tokens its cache holds)."""
        self._check(outstanding, queued)
        low, high = min(outstanding), max(outstanding)
        if prefix is None or (high - low > self.BALANCE_ABS and high > self.BALANCE_REL * low):
            return self._pick_among(_argmin_all(outstanding))
        prompt, matched, cached = prefix
        best = max(matched)
        if best > 0 and best >= self.CACHE_THRESHOLD * prompt:
            return self._pick_among(_argmin_all([(-m, o) for m, o in zip(matched, outstanding)]))
        return self._pick_among(_argmin_all([(c, o) for c, o in zip(cached, outstanding)]))


ROUTERS: dict[str, type[Router]] = {
    cls.name: cls for cls in (RoundRobinRouter, LeastOutstandingRouter, JoinShortestQueueRouter, PrefixAwareRouter)
}


def reads_prefix_cache(name: str) -> bool:
    """Router `name` places requests by the prefix-cache hits it reads (its pool must keep a prefix cache)."""
    return name in ROUTERS and ROUTERS[name].uses_prefix_match


def make_router(name: str, num_replicas: int, rng: np.random.Generator, field: str = "cluster.router") -> Router:
    """Instantiate a registered router; an unknown name is a user error on `field` (a pool's router field)."""
    if name not in ROUTERS:
        raise ScenarioError(field, f"unknown router {name!r}; allowed: {', '.join(sorted(ROUTERS))}")
    return ROUTERS[name](num_replicas, rng)
