"""KV-cache transfer between replicas (disaggregated prefill/decode): who sends what to whom, and how long
it takes on an idle network and under contention."""
from __future__ import annotations

import pytest

from models import get_model
from models.step import Parallelism
from simulator.cluster.network import Flow, Network, kv_transfer_flows
from simulator.cost.collectives import Topology

GB = 1e9


def _received(flows):
    out = {}
    for f in flows:
        out[f.dst_gpu] = out.get(f.dst_gpu, 0.0) + f.bytes
    return out


@pytest.mark.parametrize("src,dst", [((1, 1), (1, 1)), ((4, 1), (4, 1)), ((2, 1), (4, 2)), ((8, 1), (2, 2)),
                                     ((1, 4), (4, 1))])
def test_every_destination_gets_exactly_its_share_of_the_kv_cache(src, dst):
    spec = get_model("llama-3-70b")   # 8 KV heads, 80 layers
    sp, dp = Parallelism(*src), Parallelism(*dst)
    tokens = 1234
    flows = kv_transfer_flows(spec, tokens, list(range(sp.gpus)), sp, list(range(100, 100 + dp.gpus)), dp)
    got = _received(flows)
    for stage in range(dp.pp):
        layers = (stage + 1) * spec.num_layers // dp.pp - stage * spec.num_layers // dp.pp
        for r in range(dp.tp):
            want = tokens * layers * 2 * (spec.num_kv_heads // dp.tp) * spec.head_dim * 2.0
            assert got[100 + stage * dp.tp + r] == pytest.approx(want)
    # GQA with tp <= kv heads stores every KV byte once: the transfer moves the whole cache once.
    assert sum(got.values()) == pytest.approx(tokens * spec.kv_bytes_per_token())
    assert all(f.src_gpu < sp.gpus for f in flows)


def test_replicated_heads_and_mla_latents_are_sent_to_every_rank_that_keeps_a_copy():
    qwen = get_model("qwen3-30b-a3b")    # 4 KV heads: tp = 8 keeps each head on two ranks
    flows = kv_transfer_flows(qwen, 100, [0, 1, 2, 3], Parallelism(4), list(range(8, 16)), Parallelism(8))
    assert sum(f.bytes for f in flows) == pytest.approx(2 * 100 * qwen.kv_bytes_per_token())
    ds = get_model("deepseek-v3")        # MLA: the latent cache is replicated on every TP rank
    flows = kv_transfer_flows(ds, 10, [0, 1], Parallelism(2), [4, 5, 6, 7], Parallelism(4), dtype="fp8")
    assert sum(f.bytes for f in flows) == pytest.approx(4 * 10 * ds.kv_bytes_per_token("fp8"))
    assert {f.src_gpu for f in flows} == {0, 1}


def test_kv_transfer_time_on_an_idle_network_and_under_contention():
    spec = get_model("llama-2-13b")      # 40 heads, MHA
    topo = Topology(2, 8, 300 * GB, 25 * GB, 1e-6, 5e-6)
    net = Network(topo)
    tokens, par = 512, Parallelism(1)
    nbytes = tokens * spec.kv_bytes_per_token()
    # Prefill GPU 0 (node 0) → decode GPU 8 (node 1): one flow through two NICs.
    idle = net.kv_transfer(spec, tokens, [0], par, [8], par, start_s=1.0)
    assert idle == pytest.approx(1.0 + 5e-6 + nbytes / (25 * GB))
    assert idle == pytest.approx(net.transfer(0, 8, nbytes, 1.0))
    # Two prefill GPUs ship a request each to the same decode GPU at once: its NIC is shared.
    flows = kv_transfer_flows(spec, tokens, [0], par, [8], par) + kv_transfer_flows(spec, tokens, [1], par, [8], par)
    both = net.transfers(flows)
    assert both == pytest.approx([5e-6 + 2 * nbytes / (25 * GB)] * 2)
    # Inside a node the transfer rides the scale-up links.
    assert net.kv_transfer(spec, tokens, [0], par, [1], par) == pytest.approx(1e-6 + nbytes / (300 * GB))


def test_tensor_parallel_replicas_transfer_in_parallel_over_their_nics():
    spec = get_model("llama-3-70b")
    topo = Topology(2, 8, 450 * GB, 50 * GB, 1e-6, 5e-6)
    tokens, par = 2048, Parallelism(4)
    t = Network(topo).kv_transfer(spec, tokens, [0, 1, 2, 3], par, [8, 9, 10, 11], par)
    assert t == pytest.approx(5e-6 + tokens * spec.kv_bytes_per_token() / 4 / (50 * GB))


def test_bad_replica_layouts_are_refused():
    spec = get_model("llama-3-8b")
    with pytest.raises(ValueError, match="src_gpus must list 2 distinct GPUs"):
        kv_transfer_flows(spec, 1, [0], Parallelism(2), [1], Parallelism(1))
    with pytest.raises(ValueError, match="tokens must be an integer >= 0"):
        kv_transfer_flows(spec, -1, [0], Parallelism(1), [1], Parallelism(1))
    with pytest.raises(ValueError, match="tp=3 must divide num_heads"):
        kv_transfer_flows(spec, 1, [0, 1, 2], Parallelism(3), [4], Parallelism(1))
    assert kv_transfer_flows(spec, 0, [0], Parallelism(1), [1], Parallelism(1)) == []
    assert Network(Topology(1, 2, 1.0, 1.0, 0.0, 0.0)).kv_transfer(spec, 0, [0], Parallelism(1), [1],
                                                                  Parallelism(1), start_s=3.0) == 3.0
    assert Flow(0, 1, 1.0).start_s == 0.0
