"""Collective cost models against brute force: each formula equals the explicit schedule of the algorithm
(rounds of transfers) run on the fair-share network, and the bus-bandwidth factors are nccl-tests'."""
from __future__ import annotations

import math

import numpy as np
import pytest

from models.ops import ALLREDUCE, ALLTOALL, Op
from profiles.roofline import RooflineLatencyModel
from simulator.cluster.network import Flow, Network
from simulator.cost.collectives import (BUS_BANDWIDTH_FACTOR, Topology, allgather_s, alltoall_s, bus_bandwidth,
                                        collective_s, ep_alltoall_s, hierarchical_alltoall_s, port_limited_s,
                                        reducescatter_s, ring_allreduce_s, tree_allreduce_s)

GB = 1e9
TOPO = Topology(num_nodes=2, gpus_per_node=4, scaleup_bandwidth_bytes_per_s=100 * GB,
                scaleout_bandwidth_bytes_per_s=10 * GB, scaleup_latency_s=2e-6, scaleout_latency_s=7e-6)


def _rounds(net: Network, rounds: list[list[tuple[int, int, float]]]) -> float:
    """Run rounds back to back: a round starts when every transfer of the previous one has finished."""
    t = 0.0
    for flows in rounds:
        t = float(net.transfers([Flow(s, d, b, t) for s, d, b in flows]).max())
    return t


@pytest.mark.parametrize("ranks", [2, 3, 4, 8])
def test_ring_allreduce_and_allgather_equal_their_ring_schedules(ranks):
    net, size = Network(TOPO), 6e8
    ring = [(i, (i + 1) % ranks, size / ranks) for i in range(ranks)]
    assert ring_allreduce_s(TOPO, size, ranks) == pytest.approx(_rounds(net, [ring] * (2 * (ranks - 1))), rel=1e-9)
    assert allgather_s(TOPO, size, ranks) == pytest.approx(_rounds(net, [ring] * (ranks - 1)), rel=1e-9)
    assert reducescatter_s(TOPO, size, ranks) == allgather_s(TOPO, size, ranks)
    assert ring_allreduce_s(TOPO, size, 1) == 0.0


@pytest.mark.parametrize("ranks", [2, 4, 8])
def test_direct_alltoall_equals_all_pairs_at_once(ranks):
    size = 8e8
    flows = [Flow(s, d, size / ranks) for s in range(ranks) for d in range(ranks) if s != d]
    assert alltoall_s(TOPO, size, ranks) == pytest.approx(Network(TOPO).transfers(flows).max(), rel=1e-9)


def _hierarchical_phases(topo: Topology, size: float):
    """Phase 1: each GPU sends the data for every other node (size/N per node) to the GPU with its own
    local index there. Phase 2: every GPU forwards, over scale-up, what it holds for the other GPUs of its
    node (its own node's data and what phase 1 brought): size/g to each."""
    g, nodes, n = topo.gpus_per_node, topo.num_nodes, topo.num_gpus
    rdma = [(a * g + l, b * g + l, size / nodes) for a in range(nodes) for b in range(nodes) if a != b
            for l in range(g)]
    nvl = [(b * g + l, b * g + m, size / g) for b in range(nodes) for l in range(g) for m in range(g) if l != m]
    return rdma, nvl


def test_hierarchical_alltoall_unpipelined_equals_its_two_phase_schedule():
    size = 8e8
    rdma, nvl = _hierarchical_phases(TOPO, size)
    brute = _rounds(Network(TOPO), [rdma, nvl])
    assert hierarchical_alltoall_s(TOPO, size, 8, pipelined=False) == pytest.approx(brute, rel=1e-9)


def test_hierarchical_alltoall_pipelined_matches_a_chunked_schedule():
    topo = Topology(3, 4, 30 * GB, 10 * GB, 0.0, 0.0)   # zero latency: chunking would repeat it
    size, chunks = 9e8, 32
    rdma, nvl = _hierarchical_phases(topo, size / chunks)
    # Chunk i's forwarding overlaps chunk i+1's scale-out phase (disjoint ports).
    rounds = [rdma] + [rdma + nvl] * (chunks - 1) + [nvl]
    brute = _rounds(Network(topo), rounds)
    model = hierarchical_alltoall_s(topo, size, 12, pipelined=True)
    assert model <= brute <= model * (1 + 1.0 / chunks) + 1e-12


def test_hierarchical_alltoall_is_bounded_by_scale_out_bandwidth():
    size = 1e9
    for nodes in (2, 4, 8):
        topo = Topology(nodes, 8, 450 * GB, 50 * GB, 1e-6, 5e-6)
        bound = size * (nodes - 1) / nodes / topo.scaleout_bandwidth_bytes_per_s
        t = hierarchical_alltoall_s(topo, size, 8 * nodes)
        assert t >= bound
        fast = Topology(nodes, 8, 1e18, 50 * GB, 0.0, 0.0)   # scale-up free: only the NICs remain
        assert hierarchical_alltoall_s(fast, size, 8 * nodes) == pytest.approx(bound, rel=1e-9)
        # Within one node it is the plain all-to-all over scale-up.
    assert hierarchical_alltoall_s(TOPO, size, 4) == alltoall_s(TOPO, size, 4)
    with pytest.raises(ValueError, match="whole nodes"):
        hierarchical_alltoall_s(TOPO, size, 6)


def test_tree_allreduce_bandwidth_term_is_the_double_binary_tree_traffic():
    """Two heap-ordered binary trees, the second mirrored (rank r ↔ n−1−r), each carrying half the data:
    reduce sends S/2 up every edge, broadcast S/2 down every edge. The busiest rank sends 2S, which is the
    model's 2S/B (for n >= 8; small trees have no such rank and the model is an upper bound); depth
    ⌊log2 n⌋ <= ⌈log2 n⌉ hops each way."""
    for n in (4, 8, 16, 32):
        size = 1.0
        sent = np.zeros(n)
        for mirror in (False, True):
            rank = (lambda i: n - 1 - i) if mirror else (lambda i: i)
            for i in range(1, n):
                parent = (i - 1) // 2
                sent[rank(i)] += size / 2          # reduce: child → parent
                sent[rank(parent)] += size / 2     # broadcast: parent → child
        assert sent.max() <= 2 * size + 1e-12
        assert n < 8 or sent.max() == pytest.approx(2 * size)
        depth = int(math.floor(math.log2(n)))
        topo = Topology(1, n, 10 * GB, 1 * GB, 1e-6, 1e-6)
        assert tree_allreduce_s(topo, 1e9, n) == pytest.approx(2 * math.ceil(math.log2(n)) * 1e-6 + 2e9 / (10 * GB))
        assert depth <= math.ceil(math.log2(n))


def test_bus_bandwidth_of_the_ring_models_tends_to_the_link_bandwidth():
    topo = Topology(1, 8, 100 * GB, 10 * GB, 1e-6, 5e-6)
    big = 1e12
    assert bus_bandwidth("allreduce", 8, big, ring_allreduce_s(topo, big, 8)) == pytest.approx(100 * GB, rel=1e-6)
    assert bus_bandwidth("allgather", 8, big, allgather_s(topo, big, 8)) == pytest.approx(100 * GB, rel=1e-6)
    assert bus_bandwidth("alltoall", 8, big, alltoall_s(topo, big, 8)) == pytest.approx(100 * GB, rel=1e-6)
    assert BUS_BANDWIDTH_FACTOR["allreduce"](4) == 1.5 and BUS_BANDWIDTH_FACTOR["broadcast"](4) == 1.0
    with pytest.raises(ValueError, match="collective 'gather' unknown"):
        bus_bandwidth("gather", 8, 1.0, 1.0)


def test_profiled_collectives_replace_the_formula():
    model = RooflineLatencyModel("h100-sxm")
    topo = Topology.from_hardware("h100-sxm")
    op = Op.make(ALLREDUCE, "ring_allreduce", 0.0, 1e8, 1, bytes=1e8, ranks=8)
    assert collective_s("ring_allreduce", topo, 1e8, 8, latency_model=model) == model.op_seconds(op)
    op = Op.make(ALLTOALL, "alltoall", 0.0, 1e8, 1, bytes=1e8, ranks=8)
    assert collective_s("alltoall", topo, 1e8, 8, latency_model=model) == model.op_seconds(op)
    assert collective_s("allgather", topo, 1e8, 8) == allgather_s(topo, 1e8, 8)
    with pytest.raises(ValueError, match="collective kind 'bcast' unknown"):
        collective_s("bcast", topo, 1.0, 8)


def test_port_limited_exchange_is_set_by_the_busiest_port():
    up = np.array([1e9, 3e9, 2e9])
    out = np.array([0.0, 1e8, 4e8])
    t = port_limited_s(TOPO, up, out)
    assert t == pytest.approx(2e-6 + 7e-6 + max(3e9 / (100 * GB), 4e8 / (10 * GB)))
    assert port_limited_s(TOPO, up, out, pipelined=False) == pytest.approx(
        2e-6 + 7e-6 + 3e9 / (100 * GB) + 4e8 / (10 * GB))
    assert port_limited_s(TOPO, up, out, direct=True) == pytest.approx(
        max(2e-6 + 3e9 / (100 * GB), 7e-6 + 4e8 / (10 * GB)))
    assert port_limited_s(TOPO, np.zeros(3), np.zeros(3)) == 0.0


def test_ep_alltoall_port_model_against_the_fair_share_network():
    """Balanced traffic: the port model equals the makespan of all sends at once on the fluid network;
    skewed traffic: it is a lower bound of that makespan."""
    from models.moe_routing import ExpertPlacement, UniformRouting, ZipfRouting, expected_ep_load, sample_ep_load

    net, per_token = Network(TOPO), 4096.0
    balanced = expected_ep_load(UniformRouting(16), ExpertPlacement.contiguous(16, 8), 1000, 2).send_tokens

    def fluid(m):
        flows = [Flow(i, j, m[i, j] * per_token) for i in range(8) for j in range(8) if i != j and m[i, j] > 0]
        return Network(TOPO).transfers(flows).max()

    assert ep_alltoall_s(TOPO, balanced, per_token) == pytest.approx(fluid(balanced), rel=1e-9)
    rng = np.random.default_rng(0)
    for _ in range(5):
        skewed = sample_ep_load(ZipfRouting(16, 1.3), ExpertPlacement.contiguous(16, 8), 300, 2, rng).send_tokens
        assert ep_alltoall_s(TOPO, skewed, per_token) <= fluid(skewed) * (1 + 1e-9)
    assert ep_alltoall_s(TOPO, np.zeros((4, 4)), per_token) == 0.0
    with pytest.raises(ValueError, match="square matrix"):
        ep_alltoall_s(TOPO, np.zeros((4, 4)), 1.0, first_gpu=6)
    del net
