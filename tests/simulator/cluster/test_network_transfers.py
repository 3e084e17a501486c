"""Transfers on the link topology: idle-link time, max-min fair sharing under contention (checked against
the definition of max-min fairness), the online SimPy network against the offline schedule."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import simpy

from profiles.hardware import get_hardware
from simulator.cluster.network import (SMALL_FLOW_SET, FairShareFluid, Flow, Network, SimNetwork, _filling_numpy,
                                       _filling_python, fair_rates, max_min_rates)
from simulator.cost.collectives import Topology

GB = 1e9


def _topo(nodes=2, g=4, up=100 * GB, out=10 * GB, a_up=1e-6, a_out=5e-6, intra="switch"):
    return Topology(nodes, g, up, out, a_up, a_out, intra)


def test_topology_from_catalog_uses_per_direction_bandwidth_times_collective_fraction():
    hw = get_hardware("h100-sxm")
    topo = Topology.from_hardware("h100-sxm", num_nodes=2)
    assert topo.num_gpus == 16 and topo.gpus_per_node == 8 and topo.intra_node == "switch"
    assert topo.scaleup_bandwidth_bytes_per_s == pytest.approx(0.8 * hw.scaleup_bandwidth_bytes_per_s)
    assert topo.scaleout_bandwidth_bytes_per_s == pytest.approx(0.8 * hw.scaleout_bandwidth_bytes_per_s)
    full = Topology.from_hardware("a100-80gb", bandwidth_fraction=1.0)
    assert full.scaleup_bandwidth_bytes_per_s == get_hardware("a100-80gb").scaleup_bandwidth_bytes_per_s
    assert Topology.from_hardware("mi300x").intra_node == "mesh"


@pytest.mark.parametrize("src,dst,bw,lat", [(0, 1, 100 * GB, 1e-6), (0, 5, 10 * GB, 5e-6), (7, 2, 10 * GB, 5e-6)])
def test_idle_transfer_takes_bytes_over_bandwidth_plus_latency(src, dst, bw, lat):
    net = Network(_topo())
    assert net.transfer(src, dst, 3e9, start_s=2.0) == pytest.approx(2.0 + lat + 3e9 / bw, rel=1e-12)
    # The contention-aware schedule of a single flow agrees with the idle formula.
    assert net.transfers([Flow(src, dst, 3e9, 2.0)])[0] == pytest.approx(2.0 + lat + 3e9 / bw, rel=1e-12)
    assert net.transfer(src, src, 3e9, start_s=1.0) == 1.0


def test_two_concurrent_transfers_on_one_link_each_take_twice_as_long():
    net = Network(_topo())
    alone = net.transfer(0, 5, 1e9) - 5e-6
    both = net.transfers([Flow(0, 5, 1e9), Flow(1, 5, 1e9)]) - 5e-6   # share GPU 5's NIC ingress
    assert both == pytest.approx([2 * alone, 2 * alone], rel=1e-9)
    # Disjoint paths do not contend.
    apart = net.transfers([Flow(0, 5, 1e9), Flow(1, 6, 1e9)]) - 5e-6
    assert apart == pytest.approx([alone, alone], rel=1e-9)


def test_staggered_transfers_share_only_while_they_overlap():
    """A starts at 0, B at 0.05 s on the same 10 GB/s NIC; 1 GB each. A alone for 0.05 s (0.5 GB), then
    both at 5 GB/s: A finishes its 0.5 GB at 0.15 s; B has 0.5 GB left, alone again: 0.2 s."""
    net = Network(_topo(a_out=0.0))
    finish = net.transfers([Flow(0, 5, 1e9, 0.0), Flow(1, 5, 1e9, 0.05)])
    assert finish == pytest.approx([0.15, 0.2], rel=1e-9)


def _is_max_min_fair(paths, capacity, rates, tol=1e-9):
    """Definition: feasible, and every flow crosses a saturated link on which no flow has a higher rate."""
    load = np.zeros(len(capacity))
    for p, r in zip(paths, rates):
        load[list(p)] += r
    if np.any(load > capacity * (1 + tol)):
        return False
    for p, r in zip(paths, rates):
        ok = False
        for link in p:
            saturated = load[link] >= capacity[link] * (1 - tol)
            top = max(rr for pp, rr in zip(paths, rates) if link in pp)
            ok |= saturated and r >= top * (1 - tol)
        if not ok:
            return False
    return True


def test_max_min_rates_satisfy_the_definition_on_random_flow_sets():
    rng = np.random.default_rng(3)
    topo = _topo(nodes=3, g=3, up=7.0, out=2.0)
    capacity = topo.link_capacities()
    for _ in range(40):
        pairs = [tuple(rng.choice(topo.num_gpus, 2, replace=False)) for _ in range(rng.integers(1, 12))]
        paths = [topo.path(int(s), int(d)) for s, d in pairs]
        rates = max_min_rates(paths, capacity)
        assert _is_max_min_fair(paths, capacity, rates)


def test_both_ways_of_filling_agree_to_the_last_bit():
    """`fair_rates` fills small flow sets on Python floats and large ones with numpy: the same arithmetic,
    so the same rates exactly, on random topologies, flow sets up to 60 flows (both sides of the
    threshold), repeated links and flows without a path."""
    rng = np.random.default_rng(11)
    small = 0
    for trial in range(60):
        topo = _topo(nodes=int(rng.integers(1, 4)), g=int(rng.integers(2, 5)), up=float(rng.uniform(1, 9)),
                     out=float(rng.uniform(0.5, 3)))
        capacity = topo.link_capacities()
        n = int(rng.integers(1, 61))
        paths = [topo.path(int(a), int(b)) for a, b in rng.integers(0, topo.num_gpus, size=(n, 2))]
        if trial % 5 == 0:
            paths.append(paths[0] + paths[0][:1])   # a link crossed twice
        python, vectorised = _filling_python(paths, capacity), _filling_numpy(paths, capacity).tolist()
        assert python == vectorised
        assert fair_rates(paths, capacity) == python == max_min_rates(paths, capacity).tolist()
        small += len(paths) <= SMALL_FLOW_SET
    assert 0 < small < 60   # both ways were exercised
    # one flow (the Python filling's shortcut): every path of a topology, alone, and one crossing a link twice
    topo = _topo(nodes=2, g=3, up=4.0, out=1.5)
    capacity = topo.link_capacities()
    for a in range(topo.num_gpus):
        for b in range(topo.num_gpus):
            for path in (topo.path(a, b), topo.path(a, b) + topo.path(a, b)[:1]):
                assert _filling_python([path], capacity) == _filling_numpy([path], capacity).tolist()


def test_max_min_rates_against_brute_force_on_a_small_case():
    """Links a (cap 1) and b (cap 3); flows: x on a, y on a+b, z on b. Max-min: x = y = 0.5, z = 2.5.
    Brute force over a rate grid: the lexicographically largest sorted rate vector is that one."""
    capacity = np.array([1.0, 3.0])
    paths = [(0,), (0, 1), (1,)]
    rates = max_min_rates(paths, capacity)
    grid = np.round(np.arange(0, 3.01, 0.05), 2)
    best = None
    for x, y, z in itertools.product(grid, repeat=3):
        if x + y <= 1 + 1e-9 and y + z <= 3 + 1e-9:
            key = tuple(sorted((x, y, z)))
            best = max(best, (key, (x, y, z))) if best else (key, (x, y, z))
    assert rates == pytest.approx(best[1], abs=1e-9)
    assert max_min_rates([(), (0,)], capacity)[0] == math.inf


def test_mesh_pairs_get_a_seventh_of_the_aggregate_each():
    topo = Topology.from_hardware("mi300x", bandwidth_fraction=1.0)
    agg = get_hardware("mi300x").scaleup_bandwidth_bytes_per_s
    net = Network(topo)
    assert net.transfer(0, 1, 64e9) == pytest.approx(topo.scaleup_latency_s + 64e9 / (agg / 7))
    # Sending to all 7 peers at once uses all links in parallel: the aggregate bandwidth.
    finish = net.transfers([Flow(0, d, 64e9 / 7) for d in range(1, 8)])
    assert finish.max() == pytest.approx(topo.scaleup_latency_s + 64e9 / agg)


def test_simpy_network_matches_the_offline_schedule():
    topo = _topo()
    flows = [Flow(0, 5, 2e9, 0.0), Flow(1, 5, 1e9, 0.01), Flow(4, 5, 3e8, 0.02), Flow(2, 3, 5e9, 0.0),
             Flow(3, 2, 1e9, 0.03), Flow(6, 1, 4e9, 0.05)]
    offline = Network(topo).transfers(flows)
    env = simpy.Environment()
    net = SimNetwork(env, topo)
    got = np.full(len(flows), np.nan)

    def run(i, fl):
        yield env.timeout(fl.start_s)
        value = yield net.transfer(fl.src_gpu, fl.dst_gpu, fl.bytes)
        assert value == pytest.approx(env.now)
        got[i] = env.now

    for i, fl in enumerate(flows):
        env.process(run(i, fl))
    env.run()
    assert got == pytest.approx(offline, rel=1e-9)


def test_simpy_transfer_all_waits_for_every_flow():
    env = simpy.Environment()
    net = SimNetwork(env, _topo())
    done = []

    def run():
        yield net.transfer_all([Flow(0, 4, 1e9), Flow(1, 5, 2e9)])
        done.append(env.now)

    env.process(run())
    env.run()
    assert done == [pytest.approx(5e-6 + 2e9 / (10 * GB))]


def test_fluid_refuses_time_travel_and_bad_input():
    fluid = FairShareFluid(_topo())
    fluid.advance_to(1.0)
    with pytest.raises(ValueError, match="before the network's current time"):
        fluid.add(0, 1, 1e6, at_s=0.5)
    with pytest.raises(ValueError, match="bytes"):
        fluid.add(0, 1, -1.0)
    with pytest.raises(ValueError, match="dst_gpu must be a GPU index in 0..7"):
        _topo().path(0, 8)
    with pytest.raises(ValueError, match="num_nodes"):
        Topology(0, 8, 1.0, 1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="intra_node"):
        Topology(1, 8, 1.0, 1.0, 0.0, 0.0, "ring")
