"""Routers: choices on crafted loads, tie-breaking, registry errors."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from simulator.errors import ScenarioError
from simulator.core.routers import ROUTERS, make_router


def router(name: str, n: int = 4, seed: int = 0):
    return make_router(name, n, np.random.default_rng(seed))


def test_registry_names():
    assert set(ROUTERS) == {"round_robin", "least_outstanding", "join_shortest_queue", "prefix_aware"}


def test_round_robin_cycles_regardless_of_load():
    rr = router("round_robin", 3)
    picks = [rr.choose([0, 100, 0], [0, 50, 0]) for _ in range(7)]
    assert picks == [0, 1, 2, 0, 1, 2, 0]


@pytest.mark.parametrize("name", [name for name, cls in ROUTERS.items() if cls.stateless])
@pytest.mark.parametrize("replicas", [1, 3, 7])
def test_routing_one_by_one_gives_the_replicas_of_routing_ahead(name, replicas):
    """`assign_one` (the coupled driver, per arrival) continues the sequence `assign(k)` gives, in any mix."""
    ahead, one = make_router(name, replicas, np.random.default_rng(0)), make_router(name, replicas,
                                                                                    np.random.default_rng(0))
    expected = ahead.assign(40).tolist()
    got = [one.assign_one() for _ in range(15)] + one.assign(10).tolist() + [one.assign_one() for _ in range(15)]
    assert got == expected


def test_least_outstanding_picks_the_minimum():
    lo = router("least_outstanding")
    assert lo.choose([5, 2, 7, 3], [0, 9, 0, 0]) == 1  # queued does not matter


def test_join_shortest_queue_uses_queue_then_outstanding():
    jsq = router("join_shortest_queue")
    assert jsq.choose([1, 9, 2, 3], [4, 0, 2, 1]) == 1
    assert jsq.choose([6, 3, 5, 3], [0, 0, 1, 0]) in (1, 3)
    assert jsq.choose([6, 2, 5, 3], [0, 0, 1, 0]) == 1  # queue tie broken by fewest outstanding


@pytest.mark.parametrize("name", ["least_outstanding", "join_shortest_queue"])
def test_ties_are_shared_uniformly_and_reproducibly(name):
    r = router(name, 4, seed=11)
    picks = [r.choose([1, 0, 0, 0], [0, 0, 0, 0]) for _ in range(30_000)]
    counts = Counter(picks)
    assert set(counts) == {1, 2, 3}
    for replica in (1, 2, 3):
        assert abs(counts[replica] / 30_000 - 1 / 3) < 0.015
    r2 = router(name, 4, seed=11)
    assert picks == [r2.choose([1, 0, 0, 0], [0, 0, 0, 0]) for _ in range(30_000)]


def test_unique_minimum_draws_nothing_from_the_rng():
    rng = np.random.default_rng(5)
    lo = make_router("least_outstanding", 3, rng)
    before = rng.bit_generator.state
    for _ in range(10):
        assert lo.choose([3, 1, 2], [0, 0, 0]) == 1
    assert rng.bit_generator.state == before


def test_wrong_number_of_loads_is_rejected():
    with pytest.raises(ValueError, match="expected 4"):
        router("least_outstanding").choose([0, 0], [0, 0])


def test_unknown_router_names_the_field():
    with pytest.raises(ScenarioError) as err:
        make_router("random_walk", 2, np.random.default_rng(0))
    assert err.value.field == "cluster.router"
    assert "join_shortest_queue" in str(err.value)


def test_bad_replica_count():
    with pytest.raises(ValueError, match="num_replicas"):
        make_router("round_robin", 0, np.random.default_rng(0))
