"""`cluster.engine` (simulator.config.engine; profiles.engine_time.graphs, .host, .support): CUDA-graph
padding charged exactly, eager launch overhead from the op graph's kernel count, host time linear in the
host's calibration time, the speculative step per framework, and the one-line refusals of flags and
combinations a framework version does not have."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

import simulator
from profiles.engine_time.frameworks import EngineSettings, build_engine
from profiles.engine_time.graphs import EAGER, FULL, PIECEWISE, GraphPolicy, default_capture_sizes
from profiles.engine_time.host import HostCpu, default_host, get_host
from profiles.engine_time.model import HOST_FIELDS, PassLayout
from sim_helpers import scenario
from simulator.cli import main as cli
from simulator.errors import ScenarioError

US = 1e-6


def _cost(**engine):
    """The step-cost model of llama-3-8b on one H100 with `engine` (a cluster.engine block)."""
    from simulator.cluster.factory import build_replica_kind
    from simulator.config.engine import EngineConfig
    from simulator.config.scenario import (ConstantAcceptanceConfig, LatencyConfig, MoeConfig, NoDrafterConfig,
                                           ParallelismConfig, SchedulerConfig)
    from simulator.config.speculation import ChainConfig, FixedPolicyConfig
    from pathlib import Path
    kind = build_replica_kind(model="llama-3-8b", hardware="h100-sxm", parallelism=ParallelismConfig(), dtype="bf16",
                              latency=LatencyConfig(framework=engine.get("framework", "vllm")), moe=MoeConfig(),
                              memory_utilization=None, drafter=NoDrafterConfig(), speculation=ChainConfig(),
                              acceptance=ConstantAcceptanceConfig(), policy=FixedPolicyConfig(), acceptance_seed=0,
                              base_dir=Path.cwd(), engine_config=EngineConfig(**engine),
                              scheduler=SchedulerConfig(max_batch_size=256))
    return kind.cost


# ---- CUDA-graph padding ------------------------------------------------------------------------------
def test_capture_sizes_are_the_engines_defaults():
    sizes, unit = default_capture_sizes("vllm", True, "0.14.0", max_num_seqs=256, max_tokens=8192, q=1,
                                        speculating=False, gpu_memory_bytes=80 * 2 ** 30, tp=1)
    assert unit == "tokens" and sizes[:5] == (1, 2, 4, 8, 16) and sizes[-1] == 512 and 264 not in sizes and 272 in sizes
    # max = min(max_num_seqs * (1 + k) * 2, 512, max_num_batched_tokens); speculation rounds up to multiples of 1 + k
    sizes, _ = default_capture_sizes("vllm", True, "0.14.0", max_num_seqs=8, max_tokens=8192, q=4,
                                     speculating=True, gpu_memory_bytes=80 * 2 ** 30, tp=1)
    assert sizes == (4, 8, 16, 24, 32, 40, 48, 56, 64)
    sizes, unit = default_capture_sizes("trtllm", True, "1.0.0", max_num_seqs=256, max_tokens=8192, q=1,
                                        speculating=False, gpu_memory_bytes=80 * 2 ** 30, tp=1)
    assert unit == "seqs" and sizes == tuple(range(1, 32)) + (32, 64, 128)
    sizes, _ = default_capture_sizes("sglang", True, "0.5.3", max_num_seqs=1024, max_tokens=8192, q=1,
                                     speculating=False, gpu_memory_bytes=80 * 2 ** 30, tp=8)
    assert sizes[:6] == (1, 2, 4, 8, 12, 16) and sizes[-1] == 512     # TP >= 4 on an 80 GB GPU: 512 (from 0.5.3)
    assert default_capture_sizes("sglang", True, "0.5.3", max_num_seqs=256, max_tokens=8192, q=5, speculating=True,
                                 gpu_memory_bytes=80 * 2 ** 30, tp=1)[0][:10] == (1, 2, 3, 4, 5, 6, 7, 8, 10, 12)



def _sglang_sizes(version, *, gib=80 * 0.931, tp=1, max_num_seqs=256, speculating=False):
    return default_capture_sizes("sglang", True, version, max_num_seqs=max_num_seqs, max_tokens=8192,
                                 q=4 if speculating else 1, speculating=speculating, gpu_memory_bytes=gib * 2 ** 30, tp=tp)[0]


def test_sglang_capture_sizes_by_gpu_memory_release_and_running_limit_worked_by_hand():
    """SGLang's decode capture list (server_args.py _handle_gpu_memory_settings / arg_groups/memory_hook.py and
    get_batch_sizes_to_capture, read in the PyPI releases named)."""
    # below 20 GiB (T4, 4080): cuda_graph_max_bs 8, in every release read (0.5.6 .. 0.5.23)
    assert _sglang_sizes("0.5.6", gib=15) == (1, 2, 4, 8) == _sglang_sizes("0.5.23", gib=15)
    # 20-35 GiB at TP 1: 24 through 0.5.19, 48 from 0.5.20 (memory_hook.py, the RTX 5090 note)
    assert _sglang_sizes("0.5.19", gib=31) == (1, 2, 4, 8, 12, 16, 24)
    assert _sglang_sizes("0.5.20", gib=31) == (1, 2, 4, 8, 12, 16, 24, 32, 40, 48)
    assert _sglang_sizes("0.5.19", gib=31, tp=4)[-1] == 80 and _sglang_sizes("0.5.20", gib=31, tp=4)[-1] == 160
    # sizes above max_running_requests (req_to_token_pool.size) give way to it: 100 requests -> ..., 88, 96, 100
    assert _sglang_sizes("0.5.14", max_num_seqs=100)[-3:] == (88, 96, 100) and 104 not in _sglang_sizes(
        "0.5.14", max_num_seqs=100)
    assert _sglang_sizes("0.5.14", max_num_seqs=50, speculating=True)[-3:] == (44, 48, 50)
    assert _sglang_sizes("0.5.14", max_num_seqs=48, speculating=True)[-3:] == (40, 44, 48)   # already captured
    assert _sglang_sizes("0.5.14", max_num_seqs=1000)[-1] == 256                             # the GPU's cap


def test_sglang_capture_sizes_before_0_5_3_worked_by_hand():
    """Before v0.5.3 the list is cuda_graph_runner.py get_batch_sizes_to_capture's, up to 160 requests on an 80 GB
    GPU at any TP (profiles.engine_time.sglang_decode_graphs; read in the PyPI wheels named)."""
    # 0.5.2, an 80 GB GPU (74.5 GiB here; an H100's nvidia-smi 81559 MiB is not above 90 GiB either), TP 8: [1, 2, 4, 8] + range(16, 161, 8); cuda_graph_max_bs
    # unset above 35 GiB, so no range(160, 257, 8): a batch of 161 runs eagerly (0.5.3 captures up to 512 here)
    assert _sglang_sizes("0.5.2", tp=8, max_num_seqs=1024) == (1, 2, 4, 8) + tuple(range(16, 161, 8))
    assert _sglang_sizes("0.5.3", tp=8, max_num_seqs=1024)[-1] == 512
    # 0.4.8 - 0.5.2: above 90 GiB (H200) + range(160, 257, 8), above 160,000 MiB (B200) + range(256, 513, 16)
    assert _sglang_sizes("0.5.2", gib=131)[-3:] == (240, 248, 256)
    assert _sglang_sizes("0.5.2", gib=167, max_num_seqs=1024)[-3:] == (480, 496, 512)
    # 0.4.7: the tiers were 96 GiB and 180,000 MiB; 0.4.6: 256 above 81,920 MiB only; 0.4.5: cuda_graph_max_bs 160
    assert _sglang_sizes("0.4.7", gib=167, max_num_seqs=1024)[-1] == 256
    assert _sglang_sizes("0.4.6", gib=167, max_num_seqs=1024)[-1] == 256 and _sglang_sizes("0.4.5", gib=167)[-1] == 160
    # below 35 GiB (0.4.8 - 0.5.2; 25,000 MiB before) cuda_graph_max_bs 8, 80 at TP >= 4; 0.5.3 - 0.5.4: 16 / 80
    assert _sglang_sizes("0.5.2", gib=31) == (1, 2, 4, 8) and _sglang_sizes("0.5.2", gib=31, tp=4)[-1] == 80
    assert _sglang_sizes("0.4.7", gib=31)[-1] == 160 and _sglang_sizes("0.4.7", gib=23)[-1] == 8
    assert _sglang_sizes("0.5.3", gib=31) == (1, 2, 4, 8, 12, 16) and _sglang_sizes("0.5.5", gib=31)[-1] == 24
    # speculation: 0.4.7 - 0.5.2 range(1, 9) + range(10, 33, 2) + [40, 48, 56] + range(80, 161, 16); 0.4.5 - 0.4.6
    # range(40, 161, 16) (to 152); 0.4.3.post3 - 0.4.4.post4 range(1, 33)
    spec = tuple(range(1, 9)) + tuple(range(10, 33, 2)) + (40, 48, 56) + tuple(range(80, 161, 16))
    assert _sglang_sizes("0.5.2", speculating=True) == spec
    assert _sglang_sizes("0.4.6", speculating=True)[-3:] == (120, 136, 152)
    assert _sglang_sizes("0.4.4", speculating=True) == tuple(range(1, 33))
    # the running limit: captured in place of the sizes above it (0.4.6 on), with it minus one (0.4.1 - 0.4.5),
    # only a cut in 0.4.0
    assert _sglang_sizes("0.5.2", max_num_seqs=100)[-3:] == (88, 96, 100)
    assert _sglang_sizes("0.4.1", max_num_seqs=100)[-3:] == (96, 99, 100)
    assert _sglang_sizes("0.4.0", max_num_seqs=100)[-2:] == (88, 96)


def test_sglang_replays_its_widest_batch_unpadded():
    data = scenario(workload={"num_requests": 5}, scheduler={"kind": "vllm", "max_batch_size": 100},
                    cluster={"engine": {"framework": "sglang", "version": "0.5.14"}})
    engine = simulator.run(data).built.kind.engine
    assert engine.launch(0, 97, 1).tokens == 100 == engine.launch(0, 100, 1).tokens   # was 104: 97-100 padded past it


def test_sglang_prefill_graphs_by_release_worked_by_hand():
    """SGLang's prefill (extend) CUDA graphs: server_args.py _handle_piecewise_cuda_graph (v0.5.10 - v0.5.13),
    _disable_tc_piecewise_cudagraph_if_incompatible and model_runner.py init_prefill_cuda_graph (v0.5.14),
    default_prefill_backend and the breakable rules (v0.5.15 - v0.5.23), read in the PyPI releases named."""
    from profiles.engine_time.graphs import PrefillContext, sglang_prefill_sizes
    plain = PrefillContext()

    def on(version, **ctx):
        return bool(sglang_prefill_sizes(version, 8192, PrefillContext(**ctx)))
    assert sglang_prefill_sizes("0.5.9", 8192, plain) == ()                      # enable_piecewise_cuda_graph False
    sizes = sglang_prefill_sizes("0.5.10", 8192, plain)                           # on by default from 0.5.10
    assert sizes[:9] == (4, 8, 12, 16, 20, 24, 28, 32, 48) and sizes[-3:] == (7168, 7680, 8192) and 4352 not in sizes
    assert sglang_prefill_sizes("0.5.14", 1000, plain)[-2:] == (896, 960)         # up to the chunked-prefill size
    # speculation: off in 0.5.10; 0.5.11 - 0.5.14 the EAGLE target prefills eagerly, others keep graphs; 0.5.15 on
    assert not on("0.5.10", drafter="ngram") and on("0.5.11", drafter="ngram") and on("0.5.14", drafter="draft_model")
    assert not on("0.5.14", drafter="eagle") and on("0.5.15", drafter="eagle") and on("0.5.23", drafter="eagle")
    # DP attention: off through 0.5.16; MLA: off 0.5.15 - 0.5.17 (breakable), on before (tc_piecewise) and after
    assert not on("0.5.14", attention_dp=2) and not on("0.5.16", attention_dp=2) and on("0.5.17", attention_dp=2)
    assert on("0.5.14", mla=True) and not on("0.5.17", mla=True) and on("0.5.18", mla=True)
    assert sglang_prefill_sizes("0.5.22", 8192, PrefillContext(mla=True))[-1] == 2048          # MLA: 2048 tokens,
    assert sglang_prefill_sizes("0.5.23", 16384, PrefillContext(mla=True))[-1] == 8192         # min(8192, chunk)
    # pipeline parallelism: off 0.5.10 - 0.5.14, kept by breakable graphs 0.5.15 - 0.5.18, off from 0.5.19
    assert not on("0.5.14", pp=2) and on("0.5.18", pp=2) and not on("0.5.19", pp=2)
    # PD disaggregation: both pools off through 0.5.14; from 0.5.15 only the decode pool
    assert not on("0.5.14", role="prefill") and on("0.5.15", role="prefill") and not on("0.5.15", role="decode")


def test_sglang_prefill_steps_pad_to_a_token_bucket_and_decode_overflow_stays_eager():
    from profiles.engine_time.frameworks import Deployment
    from profiles.engine_time.graphs import PrefillContext

    def engine(version, **ctx):
        return build_engine(EngineSettings("sglang", version),
                            Deployment(max_num_seqs=48, prefill=PrefillContext(**ctx)))
    assert engine("0.5.9").launch(1000, 0, 1).kind == EAGER
    assert engine("0.5.14").launch(1000, 0, 1).kind == PIECEWISE and engine("0.5.14").launch(1000, 0, 1).tokens == 1024
    assert engine("0.5.14").launch(1, 0, 1).tokens == 4                      # no padding limit before 0.5.16
    assert engine("0.5.16").launch(1, 0, 1).kind == EAGER                    # 4 > 2 x 1 token: eager
    assert engine("0.5.16").launch(2, 0, 1).tokens == 4                      # 4 = 2 x 2: replayed
    assert engine("0.5.14").launch(8192, 0, 1).tokens == 8192 and engine("0.5.14").launch(8193, 0, 1).kind == EAGER
    # a decode batch above the decode graphs (48 requests here) runs eagerly, never on a prefill bucket
    assert engine("0.5.14").launch(0, 60, 1).kind == EAGER and engine("0.5.14").launch(0, 60, 1).tokens == 60
    assert engine("0.5.14", drafter="eagle").launch(1000, 0, 1).kind == EAGER


def test_sglang_prefill_padding_is_charged_exactly():
    """A 1,000-token prefill on SGLang 0.5.14 costs the dense ops of 1,024 tokens with the LM head on the one
    real row (the logits processor runs after the prefill graph), plus the real prompt's attention."""
    sg = _cost(framework="sglang", version="0.5.14")
    old = _cost(framework="sglang", version="0.5.9")
    want = sg.target.dense(1024, 1) + sg.target.prefill_attention(1000, 1, 1000 * 1001 // 2)
    got = sg.step(1000, 1, 1000 * 1001 // 2, 0, 0).target
    assert got.flops == pytest.approx(want[1], rel=1e-12) and got.bytes == pytest.approx(want[2], rel=1e-12)
    assert old.step(1000, 1, 1000 * 1001 // 2, 0, 0).target.flops < got.flops   # 0.5.9: eager, unpadded


def test_sglang_prefill_graphs_follow_the_scenario():
    """The run's drafter, pools and parallelism reach sglang_prefill_sizes (simulator.cluster.factory)."""
    def prefill_kind(version, **over):
        data = scenario(workload={"num_requests": 3}, cluster={"engine": {"framework": "sglang", "version": version}},
                        **over)
        return simulator.run(data).built.kind.engine.launch(1000, 0, 1).kind
    eagle = {"drafter": {"kind": "head", "style": "autoregressive", "gamma": 3}}
    assert prefill_kind("0.5.14") == PIECEWISE and prefill_kind("0.5.9") == EAGER
    assert prefill_kind("0.5.14", **eagle) == EAGER and prefill_kind("0.5.15", **eagle) == PIECEWISE
    for version, want in (("0.5.14", {"prefill": EAGER, "decode": EAGER}),
                          ("0.5.15", {"prefill": PIECEWISE, "decode": EAGER})):
        data = scenario(workload={"num_requests": 3}, cluster={
            "engine": {"framework": "sglang", "version": version},
            "disaggregation": {"prefill": {"replicas": 1}, "decode": {"replicas": 1}}})
        pools = {pool.name: pool for pool in simulator.run(data).built.pools}
        assert {name: pools[name].kind.engine.launch(1000, 0, 1).kind for name in want} == want


def test_trtllm_capture_sizes_follow_padding_and_the_executor_limits_worked_by_hand():
    """TensorRT-LLM's CudaGraphConfig._generate_cuda_graph_batch_sizes(128, enable_padding) and
    model_engine._filter_cuda_graph_batch_sizes (tensorrt_llm/llmapi/llm_args.py, _torch/pyexecutor/model_engine.py)."""
    def sizes(padding, max_num_seqs=256, max_tokens=8192, q=1):
        return default_capture_sizes("trtllm", True, "1.2.0", max_num_seqs=max_num_seqs, max_tokens=max_tokens, q=q,
                                     speculating=q > 1, gpu_memory_bytes=80 * 2 ** 30, tp=1, padding=padding)[0]
    assert sizes(False) == tuple(range(1, 32)) + (32, 64, 128)
    assert sizes(True) == (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128)
    # the largest pure-decode batch min(max_batch_size, max_num_tokens // (1 + k)) caps the list; padding
    # captures the cap itself in place of the first size above it
    assert sizes(True, max_num_seqs=100)[-3:] == (88, 96, 100)
    assert sizes(False, max_num_seqs=100)[-3:] == (31, 32, 64)
    assert sizes(True, max_tokens=300, q=4)[-2:] == (72, 75)                  # 300 // 4 = 75
    # the simulator pads with them: 65 requests pad to 72 (not 128) with graph_padding true
    data = scenario(workload={"num_requests": 3}, scheduler={"kind": "vllm", "max_batch_size": 100},
                    cluster={"engine": {"framework": "trtllm", "graph_padding": True}})
    engine = simulator.run(data).built.kind.engine
    assert engine.launch(0, 65, 1).tokens == 72 and engine.launch(0, 97, 1).tokens == 100
    user = scenario(workload={"num_requests": 3}, scheduler={"kind": "vllm", "max_batch_size": 100},
                    cluster={"engine": {"framework": "trtllm", "graph_padding": True, "capture_sizes": [8, 64, 256]}})
    assert simulator.run(user).built.kind.engine.graphs.decode_sizes == (8, 64, 100)


def _vllm_sizes(version, *, max_num_seqs=256, max_tokens=8192, q=1, blackwell=False):
    return default_capture_sizes("vllm", True, version, max_num_seqs=max_num_seqs, max_tokens=max_tokens, q=q,
                                 speculating=q > 1, gpu_memory_bytes=80 * 2 ** 30, tp=1, datacenter_blackwell=blackwell)[0]


def test_vllm_capture_sizes_by_release_worked_by_hand():
    """vLLM's VllmConfig._set_cudagraph_sizes and CompilationConfig.adjust_cudagraph_sizes_for_spec_decode, read
    in the PyPI releases named."""
    # 0.14 / 0.24, k = 4 (q 5): the grid up to 512 (..., 448, 464, 480, 496, 512) rounded up to multiples of 5;
    # 512 -> 515 would pass the largest size (512) and is dropped, so 500 is the largest
    for version in ("0.14.0", "0.24.0"):
        assert _vllm_sizes(version, q=5)[-4:] == (450, 465, 480, 500)
    # 0.21.0 also captures max_num_batched_tokens when it is within the largest size; 0.20.0 does not
    assert _vllm_sizes("0.21.0", max_tokens=100)[-3:] == (88, 96, 100)
    assert _vllm_sizes("0.20.0", max_tokens=100)[-3:] == (80, 88, 96)
    # 0.28.0 raises the 512 ceiling to 1024 on data-center Blackwell only: min(256 * 4 * 2, 1024)
    assert _vllm_sizes("0.28.0", q=4, blackwell=True)[-2:] == (1008, 1024)
    assert _vllm_sizes("0.27.0", q=4, blackwell=True)[-1] == 512 == _vllm_sizes("0.28.0", q=4)[-1]
    # 0.32.0 captures the uniform decode batches: max_num_seqs 100 without speculation ...
    assert 100 in _vllm_sizes("0.32.0", max_num_seqs=100) and 100 not in _vllm_sizes("0.28.0", max_num_seqs=100)
    # ... and n * (1 + k) for n in 1, 2, 4, max_num_seqs with speculation: 5 requests of k = 5 are 30 tokens,
    # which the grid rounded to multiples of 6 lacks (24 and 32 -> 24, 36); the largest size is 56 -> 48
    assert _vllm_sizes("0.28.0", max_num_seqs=5, q=6) == (6, 12, 18, 24, 36, 42, 48)
    assert _vllm_sizes("0.32.0", max_num_seqs=5, q=6) == (6, 12, 18, 24, 30, 36, 42, 48)


def test_vllm_0_32_replays_the_widest_verify_batch_unpadded():
    def engine(version):
        data = scenario(workload={"num_requests": 5}, drafter={"kind": "head", "style": "autoregressive", "gamma": 5},
                        scheduler={"kind": "vllm", "max_batch_size": 5},
                        cluster={"engine": {"framework": "vllm", "version": version}})
        return simulator.run(data).built.kind.engine
    assert engine("0.28.0").launch(0, 5, 6) == engine("0.28.0").launch(0, 6, 6)   # 30 tokens padded to 36
    assert engine("0.32.0").launch(0, 5, 6).tokens == 30 and engine("0.32.0").launch(0, 5, 6).kind == FULL

def test_a_batch_is_padded_up_to_the_next_captured_size():
    p = GraphPolicy("full", (1, 2, 4, 8, 16), "tokens", True, FULL, (1, 2, 4, 8, 16))
    assert p.decode(3, 1).tokens == 4 and p.decode(3, 1).kind == FULL
    assert p.decode(5, 3) == p.decode(16, 1)                                   # 15 tokens: padded to 16
    assert p.mixed(12).kind == PIECEWISE and p.mixed(12).tokens == 16 and p.mixed(40).kind == EAGER
    assert p.decode(17, 1).kind == EAGER and p.decode(17, 1).tokens == 17      # beyond every size: eager, unpadded
    seqs = GraphPolicy("full", (1, 2, 4, 8), "seqs", True, FULL)
    assert seqs.decode(3, 5).tokens == 20                                      # 4 requests × 5 query tokens
    exact = GraphPolicy("full", (1, 2, 4, 8), "seqs", False, FULL)
    assert exact.decode(3, 1).kind == EAGER and exact.decode(4, 1).kind == FULL  # no padding: exact sizes only


def test_padding_is_charged_exactly():
    """A decode step of b requests costs the dense ops of the padded batch plus the attention of the b real
    requests plus the engine time: nothing more, nothing less."""
    cost = _cost(version="0.14.0")
    target = cost.target
    for b in (3, 13, 50):
        padded = cost.engine.launch(0, b, 1).tokens
        assert padded > b
        attention = target.exact_decode(b, 1, b * 700) - target.dense(b, b)        # the real requests' attention
        want = target.dense(padded, b) + attention                                 # vLLM: LM head unpadded
        got = cost.exact_decode_step(b, b * 700)
        assert got[3] - got[6] == pytest.approx(want[0], rel=1e-12)
        assert got[4] == pytest.approx(want[1], rel=1e-12) and got[5] == pytest.approx(want[2], rel=1e-12)
        assert got[4] > (target.dense(b, b) + attention)[1]     # the padded slots' FLOPs are paid
    sg = _cost(framework="sglang")   # SGLang: requests padded, the LM head inside the graph
    padded = sg.engine.launch(0, 13, 1).tokens
    assert padded == 16
    want = sg.target.dense(16, 16) + sg.target.exact_decode(13, 1, 13 * 700) - sg.target.dense(13, 13)
    got = sg.exact_decode_step(13, 13 * 700)
    assert got[3] - got[6] == pytest.approx(want[0], rel=1e-12)


def test_padding_is_what_the_simulator_pays():
    base = scenario(workload={"num_requests": 40}, cluster={"engine": {"version": "0.14.0"}},
                    scheduler={"kind": "vllm", "max_batch_size": 64})
    result = simulator.run(base)
    cost = result.built.replicas[0].cost
    dec = result.steps[(result.steps.prefill_tokens == 0) & (result.steps.decode_seqs == 3)]
    if len(dec):
        row = dec.iloc[0]
        d, t = cost.decode_steps(np.array([3]), np.array([int(row.decode_context_tokens)]))
        assert row.verify_s + row.engine_s == pytest.approx(t[0, 0], rel=1e-12)


# ---- eager launch ------------------------------------------------------------------------------------
def test_eager_overhead_grows_with_the_kernel_count_of_the_op_graph():
    from simulator.cost.step_cost import ForwardCost
    from models.step import Parallelism
    from profiles.select import LatencySourceConfig, select_latency
    from simulator.cluster.factory import resolve_model
    lat = select_latency("h100-sxm", "bf16", LatencySourceConfig("roofline"))
    small, big = resolve_model("llama-68m", None), resolve_model("llama-3-8b", None)
    k_small, c_small = ForwardCost(small, Parallelism(1, 1), lat, "bf16").launches()
    k_big, c_big = ForwardCost(big, Parallelism(1, 1), lat, "bf16").launches()
    assert c_small == c_big == 0 and k_big > k_small > 0
    # a layer of a dense Llama: qkv, o, gate_up, down, two norms, rope, activation, attention (2 kernels)
    assert k_big - k_small == (big.num_layers - small.num_layers) * 10
    _, coll = ForwardCost(big, Parallelism(4, 1), lat, "bf16").launches()
    assert coll == 2 * big.num_layers + 2      # two all-reduces per layer, embedding and logits gathers
    e = build_engine(EngineSettings("vllm", "0.14.0", cuda_graphs="none"))
    layout = PassLayout(0, 1, big.num_layers, k_big, 0)
    device = 1e-3   # shorter than the issue time: host-bound
    wall = e.wall_seconds(device, 0, 0, 1, 1, layout)
    issue = k_big * e.eager_kernel_s
    assert issue > device
    assert wall == pytest.approx(device + e.gaps_seconds(0, 1, 1, layout) + (issue - device)
                                 + max(0.0, e.host_seconds(0, 0, 1, 1, 0) - issue - e.gaps_seconds(0, 1, 1, layout)))
    more = PassLayout(0, 1, big.num_layers, 2 * k_big, 0)
    assert e.wall_seconds(device, 0, 0, 1, 1, more) > wall
    assert e.wall_seconds(1.0, 0, 0, 1, 1, more) == pytest.approx(1.0 + e.gaps_seconds(0, 1, 1, more))  # GPU-bound
    graphs = build_engine(EngineSettings("vllm", "0.14.0"))
    assert graphs.wall_seconds(device, 0, 0, 1, 1, more) < e.wall_seconds(device, 0, 0, 1, 1, more)


def test_vllm_before_0_2_6_runs_every_pass_eagerly_and_synchronously():
    """vLLM got CUDA graphs with PR #1926 (first in v0.2.6): v0.2.3 (DistServe's baseline) issues every pass
    kernel by kernel and runs its steps synchronously; v0.2.6 replays V0's decode graphs."""
    old = build_engine(EngineSettings("vllm", "0.2.3"))
    assert old.graphs.mode == "none" and old.overlap is False
    assert old.launch(0, 8, 1).kind == EAGER and old.launch(512, 0, 1).kind == EAGER
    v0 = build_engine(EngineSettings("vllm", "0.2.6"))
    assert v0.launch(0, 5, 1).kind == FULL and v0.launch(0, 5, 1).tokens == 8 and v0.launch(512, 0, 1).kind == EAGER
    with pytest.raises(ScenarioError) as err:
        simulator.run(scenario(workload={"num_requests": 5}, cluster={"engine": {"version": "0.2.3",
                                                                                  "cuda_graphs": "full"}}))
    assert err.value.field == "cluster.engine.cuda_graphs" and "vllm 0.2.3 has no 'full'" in str(err.value)
    assert "vllm 0.2.6..0.8.0" in str(err.value)


def test_eager_mode_makes_a_small_model_host_bound_at_tp8():
    kw = dict(batch=8, context_tokens=512, scheduler={"max_batch_size": 256})
    eager = simulator.estimate_step("llama-3-8b", "h100-sxm", tp=8, engine={"cuda_graphs": "none"}, **kw)
    graph = simulator.estimate_step("llama-3-8b", "h100-sxm", tp=8, **kw)
    assert eager["seconds"] > 2 * graph["seconds"]


# ---- host CPU ----------------------------------------------------------------------------------------
def test_host_time_scales_linearly_with_the_host_calibration_time():
    ref = default_host()
    one = build_engine(EngineSettings("vllm", "0.12.0", host_cpu=ref.calibration_us))
    for factor in (0.5, 2.0, 3.7):
        e = build_engine(EngineSettings("vllm", "0.12.0", host_cpu=ref.calibration_us * factor))
        for name in HOST_FIELDS:
            assert getattr(e, name) == pytest.approx(getattr(one, name) * factor, rel=1e-12), name
        for kind, (a, b) in one.spec_host_by_drafter.items():
            assert e.spec_host_by_drafter[kind] == pytest.approx((a * factor, b * factor), rel=1e-12)
        for name in ("step_gap_s", "graph_launch_s", "piecewise_per_layer_s", "spec_step_s", "spec_per_pass_s"):
            assert getattr(e, name) == getattr(one, name)   # device-timeline terms do not move
        assert e.host_seconds(0, 0, 32, 1, 0) == pytest.approx(one.host_seconds(0, 0, 32, 1, 0) * factor, rel=1e-12)
    assert one.with_host_scale(2.0).step_s == pytest.approx(2.0 * one.step_s, rel=1e-12)


def test_vllm_host_work_is_rescaled_from_the_host_it_was_measured_on():
    e = build_engine(EngineSettings("vllm", "0.12.0"))
    epyc, server = get_host("dev-vm-amd-epyc"), default_host()
    assert e.step_s == pytest.approx(1304.6e-6 * server.calibration_us / epyc.calibration_us, rel=1e-9)
    same = build_engine(EngineSettings("vllm", "0.12.0", host_cpu="dev-vm-amd-epyc"))
    assert same.step_s == pytest.approx(1304.6e-6, rel=1e-12)
    assert e.host == server.id and HostCpu("x", 2.0).scale_from(HostCpu("y", 1.0)) == 2.0


def test_a_synchronous_engine_pays_host_time_at_the_hosts_speed():
    slow = simulator.run(scenario(workload={"num_requests": 30}, cluster={"engine": {"version": "0.12.0",
                                                                                       "host_cpu": 20000.0}}))
    fast = simulator.run(scenario(workload={"num_requests": 30}, cluster={"engine": {"version": "0.12.0",
                                                                                       "host_cpu": 5000.0}}))
    assert slow.summary["tpot_mean_s"] > fast.summary["tpot_mean_s"]
    assert slow.summary["engine_time"]["host"] == "custom"


# ---- the speculative step per framework --------------------------------------------------------------
def _spec_kind(framework: str, drafter: dict, **engine):
    data = scenario(workload={"num_requests": 10}, drafter=drafter,
                    cluster={"engine": {"framework": framework, **engine}})
    return simulator.run(data).built.kind


EAGLE = {"kind": "head", "style": "autoregressive", "gamma": 3}


def test_vllm_pads_verify_batches_to_multiples_of_one_plus_k():
    kind = _spec_kind("vllm", EAGLE, version="0.14.0")
    sizes = kind.engine.graphs.decode_sizes
    assert all(s % 4 == 0 for s in sizes)
    # the base sizes 1, 2, 4, 8, 16, 24 ... rounded up to multiples of 4: no 12 (3 requests pad to 4)
    assert kind.engine.launch(0, 3, 4).tokens == 16 and kind.engine.launch(0, 5, 4).tokens == 24
    assert kind.engine.overlap is True          # async scheduling with EAGLE from 0.14


def test_sglang_speculation_is_synchronous_unless_spec_v2():
    assert _spec_kind("sglang", EAGLE, version="0.5.10").engine.overlap is False
    v2 = _spec_kind("sglang", EAGLE, version="0.5.6", async_scheduling=True)
    assert v2.engine.overlap is True
    assert v2.engine.graphs.decode_sizes[:9] == (1, 2, 3, 4, 5, 6, 7, 8, 10)   # the speculative capture list



def _sglang_tree(version: str, **engine):
    data = scenario(workload={"num_requests": 10}, drafter={"kind": "head", "style": "autoregressive", "gamma": 3},
                    speculation={"kind": "dynamic_tree", "builder": "eagle2", "top_k": 2, "depth": 3, "budget": 8},
                    acceptance={"kind": "pair", "vocab": 12, "zipf": 1.2, "q_power": 0.6},
                    cluster={"engine": {"framework": "sglang", "version": version, **engine}})
    return simulator.run(data).built.kind


def test_sglang_spec_v2_is_the_default_from_0_5_11_for_chains_and_from_0_5_13_for_trees():
    """SGLang's own sources (PyPI): environ.py SGLANG_ENABLE_SPEC_V2 is EnvBool(False) through v0.5.10 and
    EnvBool(True) from v0.5.11; server_args.py of v0.5.11-v0.5.12 falls back to spec v1 (overlap off) for
    speculative_eagle_topk > 1; v0.5.13's arg_groups/speculative_hook.py has no such fallback; NGRAM turns the
    overlap off through v0.5.13 (_handle_ngram) and overlaps from v0.5.14 (NGRAMWorker(BaseSpecWorker),
    enable_overlap = not disable_overlap_schedule; read through v0.5.23)."""
    draft = {"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3}
    for version, chain, tree, ngram in (("0.5.10", False, False, False), ("0.5.11", True, False, False),
                                        ("0.5.12", True, False, False), ("0.5.13", True, True, False),
                                        ("0.5.14", True, True, True), ("0.5.23", True, True, True)):
        assert _spec_kind("sglang", EAGLE, version=version).engine.overlap is chain, version
        assert _spec_kind("sglang", draft, version=version).engine.overlap is chain, version   # STANDALONE
        assert _sglang_tree(version).engine.overlap is tree, version
        assert _spec_kind("sglang", {"kind": "ngram", "gamma": 3}, version=version).engine.overlap is ngram, version
    with pytest.raises(ScenarioError, match="NGRAM speculation with the overlap scheduler off"):
        _spec_kind("sglang", {"kind": "ngram", "gamma": 3}, version="0.5.13", async_scheduling=True)
    assert _spec_kind("sglang", {"kind": "ngram", "gamma": 3}, version="0.5.14",
                      async_scheduling=True).engine.overlap is True
    assert _spec_kind("sglang", EAGLE).engine.overlap is True      # the H100 tables' SGLang 0.5.14
    with pytest.raises(ScenarioError, match="topk 1"):
        _sglang_tree("0.5.12", async_scheduling=True)
    assert _sglang_tree("0.5.13", async_scheduling=True).engine.overlap is True

def test_trtllm_one_model_drafting_has_no_host_step_of_its_own():
    one = _spec_kind("trtllm", EAGLE)
    two = _spec_kind("trtllm", {"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3})
    assert one.engine.spec_host_step_s == 0.0 and two.engine.spec_host_step_s > 0.0



# ---- which speculation methods vLLM runs with async scheduling, by release ---------------------------------
# Read in vLLM's PyPI releases (vllm/config/vllm.py, VllmConfig.__post_init__): an explicit async_scheduling is
# refused for methods outside the list 'EAGLE/MTP' (v0.14.0 - v0.15.1), 'EAGLE/MTP/Draft Model' (v0.16.0 on, later
# with NGram GPU, DSpark, DFlash); the default path turns async off for draft models up to v0.27.x and keeps it
# on from v0.28.0 (PR #48341). Suffix decoding is in no release's list; Medusa is gone in v0.33.0.
DRAFT = {"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3}
MEDUSA = {"kind": "head", "style": "parallel", "gamma": 3}


def test_vllm_runs_draft_models_overlapped_by_default_from_0_28():
    assert _spec_kind("vllm", DRAFT, version="0.27.1").engine.overlap is False
    assert _spec_kind("vllm", DRAFT, version="0.28.0").engine.overlap is True
    assert _spec_kind("vllm", DRAFT, version="0.32.0").engine.overlap is True
    # the methods still outside the list stay synchronous
    assert _spec_kind("vllm", {"kind": "ngram", "gamma": 3}, version="0.32.0").engine.overlap is False
    assert _spec_kind("vllm", MEDUSA, version="0.32.0").engine.overlap is False


def test_vllm_accepts_async_scheduling_with_a_draft_model_from_0_16():
    assert _spec_kind("vllm", DRAFT, version="0.16.0", async_scheduling=True).engine.overlap is True
    with pytest.raises(ScenarioError) as err:
        _spec_kind("vllm", DRAFT, version="0.15.1", async_scheduling=True)
    assert err.value.field == "cluster.engine.async_scheduling" and "vllm 0.15.1" in str(err.value)


@pytest.mark.parametrize("drafter,version,field,words", [
    ({"kind": "ngram", "gamma": 3}, "0.24.0", "cluster.engine.async_scheduling", ["EAGLE/MTP and draft-model"]),
    (MEDUSA, "0.20.0", "cluster.engine.async_scheduling", ["EAGLE/MTP and draft-model"]),
    (MEDUSA, "0.33.0", "drafter.kind", ["vllm 0.33.0", "no Medusa", "0.32.0"]),
    ({"kind": "ngram", "gamma": 3}, "0.33.0", "cluster.engine.async_scheduling", ["NgramGPUSpeculator"]),
])
def test_vllm_refusals_of_speculation_methods_follow_the_release(drafter, version, field, words):
    engine = {"version": version} if field == "drafter.kind" else {"version": version, "async_scheduling": True}
    with pytest.raises(ScenarioError) as err:
        _spec_kind("vllm", drafter, **engine)
    text = str(err.value)
    assert err.value.field == field and "\n" not in text and all(w in text for w in words), text


def test_vllm_runs_suffix_decoding_synchronously_in_every_release():
    data = scenario(workload={"num_requests": 5}, cluster={"model": "qwen2.5-coder-0.5b",
                                                           "engine": {"version": "0.24.0", "async_scheduling": True}},
                    **SUFFIX)
    with pytest.raises(ScenarioError) as err:
        simulator.run(data)
    assert err.value.field == "cluster.engine.async_scheduling" and "suffix" in str(err.value)


# ---- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine,field,words", [
    ({"version": "0.10.0", "num_scheduler_steps": 8}, "cluster.engine.num_scheduler_steps",
     ["vllm 0.10.0 has no such flag", "vllm 0.6.0 to 0.8.0"]),
    ({"framework": "sglang", "cuda_graphs": "piecewise"}, "cluster.engine.cuda_graphs",
     ["sglang", "vllm 0.8.0..0.10.2"]),
    ({"version": "0.9.0", "cuda_graphs": "full"}, "cluster.engine.cuda_graphs", ["vllm 0.11.0.."]),
    ({"version": "0.9.0", "async_scheduling": True}, "cluster.engine.async_scheduling", ["vllm >= 0.10.0"]),
    ({"graph_padding": False}, "cluster.engine.graph_padding", ["sglang >= 0.4.0", "trtllm >= 1.0.0"]),
    ({"version": "0.1.7"}, "cluster.engine.version", ["0.2.0..0.2.6", "0.2.6..0.8.0", "0.14.0.."]),
    ({"host_cpu": "pentium"}, "cluster.engine.host_cpu", ["h100-server"]),
])
def test_a_flag_a_version_lacks_is_one_line_naming_the_flag_and_the_versions_that_have_it(engine, field, words):
    with pytest.raises(ScenarioError) as err:
        simulator.run(scenario(workload={"num_requests": 5}, cluster={"engine": engine}))
    assert err.value.field == field, str(err.value)
    text = str(err.value)
    assert "\n" not in text and all(w in text for w in words), text


@pytest.mark.parametrize("framework,extra,field,words", [
    ("sglang", {"cluster": {"parallelism": {"tp": 2, "pp": 2}}}, "cluster.parallelism.pp", ["sglang", "Pipeline"]),
    ("vllm", {"cluster": {"parallelism": {"tp": 2, "pp": 2}, "engine": {"version": "0.12.0"}}},
     "cluster.parallelism.pp", ["vllm 0.12.0", "pipeline parallelism"]),
    ("sglang", {"scheduler": {"kind": "sarathi"}}, "scheduler.kind", ["mixed chunked prefill"]),
    # SGLang 0.5.19 keeps mixed chunks with EAGLE but decodes the running requests without drafts in mixed steps
    ("sglang", {"scheduler": {"kind": "sarathi"}, "cluster": {"engine": {"version": "0.5.18"}}}, "scheduler.kind",
     ["sglang 0.5.18 turns mixed chunked prefill off"]),
    ("sglang", {"scheduler": {"kind": "sarathi"}, "cluster": {"engine": {"version": "0.5.19"}}}, "scheduler.kind",
     ["sglang 0.5.19 keeps mixed chunked prefill with EAGLE", "1-token decode", "does not model"]),
    ("sglang", {"scheduler": {"kind": "sarathi"}, "drafter": {"kind": "ngram", "gamma": 3},
                "cluster": {"engine": {"version": "0.5.19"}}}, "scheduler.kind",
     ["sglang 0.5.19 turns mixed chunked prefill off with speculation other than EAGLE"]),
    ("vllm", {"drafter": {"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3},
              "cluster": {"engine": {"version": "0.9.0"}}}, "cluster.engine.version", ["vllm 0.9.0", "draft", ">= 0.15.0"]),
    ("vllm", {"drafter": {"kind": "ngram", "gamma": 3}, "cluster": {"engine": {"async_scheduling": True}}},
     "cluster.engine.async_scheduling", ["EAGLE/MTP"]),
    ("sglang", {"cluster": {"engine": {"version": "0.5.1", "async_scheduling": True}}},
     "cluster.engine.async_scheduling", ["sglang 0.5.1", "spec v2"]),
])
def test_refused_combinations_name_the_engine_its_version_and_the_field(framework, extra, field, words):
    data = scenario(workload={"num_requests": 5}, drafter=EAGLE, cluster={"engine": {"framework": framework}})
    for key, value in extra.items():
        if key == "cluster":
            for k, v in value.items():
                data["cluster"][k] = {**data["cluster"].get(k, {}), **v}
        else:
            data[key] = value
    with pytest.raises(ScenarioError) as err:
        simulator.run(data)
    text = str(err.value)
    assert err.value.field == field and "\n" not in text and all(w in text for w in words), text


SUFFIX = {"drafter": {"kind": "suffix"},
          "acceptance": {"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}}
DSD = {"drafter": {"kind": "eagle3", "gamma": 3},
       "policy": {"kind": "vllm_dynamic", "schedule": [[1, 8, 3], [9, 64, 1]]}}
PROPOSED = {"drafter": {"kind": "ngram", "gamma": 4}, "policy": {"kind": "proposed"},
            "acceptance": {"kind": "sessions", "corpus": "sessions-qwen2.5-coder-0.5b", "workloads": ["code_edit"]}}


@pytest.mark.parametrize("model,engine,extra,field,words", [
    ("qwen2.5-coder-0.5b", {"framework": "sglang"}, SUFFIX, "drafter.kind", ["sglang", "no suffix decoding"]),
    ("qwen2.5-coder-0.5b", {"framework": "trtllm"}, SUFFIX, "drafter.kind", ["trtllm", "no suffix decoding"]),
    ("qwen2.5-coder-0.5b", {"version": "0.11.2"}, SUFFIX, "drafter.kind", ["vllm 0.11.2", "v0.12.0", "#25784"]),
    ("llama-3.1-8b", {"version": "0.23.0"}, DSD, "policy.kind", ["vllm 0.23.0", "Dynamic SD", "v0.24.0"]),
    ("llama-3.1-8b", {"framework": "sglang"}, DSD, "policy.kind", ["sglang", "Dynamic SD", "sglang_adaptive"]),
    ("llama-3.1-8b", {"framework": "trtllm"}, DSD, "policy.kind", ["trtllm", "Dynamic SD", "trtllm_schedule"]),
    # ragged verification (policy proposed) is vLLM's: SGLang's NGRAM worker always verifies
    # speculative_num_draft_tokens per request, TensorRT-LLM pads drafts to max_draft_len
    ("qwen2.5-coder-0.5b", {"framework": "sglang", "version": "0.5.23"}, PROPOSED, "policy.kind",
     ["sglang 0.5.23", "ngram_worker.py", "always enforce", "policy fixed"]),
    ("qwen2.5-coder-0.5b", {"framework": "trtllm", "version": "1.2.1"}, PROPOSED, "policy.kind",
     ["trtllm 1.2.1", "pad_draft_tokens_for_cuda_graph", "policy fixed"]),
])
def test_speculation_methods_an_engine_version_lacks_are_refused(model, engine, extra, field, words):
    """Suffix decoding exists in vLLM from v0.12.0 only, in no SGLang or TensorRT-LLM release; vLLM's Dynamic SD
    from v0.24.0 only (profiles.engine_time.support): one line naming the field, the engine and its version."""
    data = scenario(workload={"num_requests": 5}, cluster={"model": model, "engine": engine}, **extra)
    with pytest.raises(ScenarioError) as err:
        simulator.run(data)
    text = str(err.value)
    assert err.value.field == field and "\n" not in text and all(w in text for w in words), text
    ok = scenario(workload={"num_requests": 5}, cluster={"model": model, "engine": {"version": "0.24.0"}}, **extra)
    assert simulator.run(ok).summary["requests_finished"] == 5     # the release that has it runs it


def _refusal_of_five(data: dict, refused: bool):
    """The ScenarioError (pytest's ExceptionInfo) a run of `data` raises where `refused`; else None, once the run
    has finished its 5 requests."""
    if not refused:
        assert simulator.run(data).summary["requests_finished"] == 5
        return None
    with pytest.raises(ScenarioError) as err:
        simulator.run(data)
    return err


@pytest.mark.parametrize("version,refused", [("0.10.2", True), ("0.11.0", True), ("0.12.0", True), ("0.14.1", True),
                                             ("0.15.0", False), ("0.24.0", False)])
def test_vllm_runs_a_draft_model_from_0_15_only(version, refused):
    """vLLM 0.11.0 through 0.14.x raise NotImplementedError('Speculative decoding with draft model is not supported
    yet') for any draft model (vllm/config/speculative.py, SpeculativeConfig.__post_init__: the method falls through
    to 'draft_model' and raises; read in the v0.11.0, v0.12.0, v0.13.0 and v0.14.0 wheels); v0.15.0 passes
    method draft_model and ships vllm/v1/spec_decode/draft_model.py. Before, 0.11-0.14 ran such a scenario
    (exit 0)."""
    data = scenario(workload={"num_requests": 5}, cluster={"engine": {"version": version}},
                    drafter={"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3})
    err = _refusal_of_five(data, refused)
    if err is None:
        return
    text = str(err.value)
    assert err.value.field == "cluster.engine.version" and "\n" not in text, text
    assert f"vllm {version}" in text and ">= 0.15.0" in text, text


@pytest.mark.parametrize("version,family,method,first", [
    ("0.4.1.post3", "eagle", "eagle", "0.4.1.post4"), ("0.4.3", "eagle", "mtp", "0.4.3.post1"),
    ("0.4.3.post4", "eagle", "eagle3", "0.4.4"), ("0.5.1", "draft_model", "draft_model", "0.5.2"),
    ("0.5.2", "ngram", "ngram", "0.5.3"),
])
def test_sglang_refuses_a_speculative_algorithm_before_the_release_that_added_it(version, family, method, first):
    """SGLang's --speculative-algorithm choices (server_args.py add_cli_args, read in each release's wheel):
    none before v0.4.1.post4; ['EAGLE'] from it; NEXTN (MTP) from v0.4.3.post1; EAGLE3 from v0.4.4.post2 (taken
    as v0.4.4, the release the EAGLE-3 paper names); STANDALONE from v0.5.2; NGRAM from v0.5.3. Before, e.g.
    SGLang 0.5.1 ran a draft model (exit 0)."""
    from profiles.engine_time.frameworks import EngineSettings
    from profiles.engine_time.support import Context, UnsupportedCombination, check
    context = Context(drafter=family, method=method)
    with pytest.raises(UnsupportedCombination) as err:
        check(EngineSettings("sglang", version), version, context, ("full", "none"), {})
    assert err.value.field == "cluster.engine.version" and f"version >= {first}" in err.value.message, err.value
    check(EngineSettings("sglang", first), first, context, ("full", "none"), {})   # the release that added it


@pytest.mark.parametrize("refused,family,method,first", [
    ("0.3.3", "draft_model", "draft_model", "0.4.1"), ("0.4.0.post1", "draft_model", "draft_model", "0.4.1"),
    ("0.4.1", "ngram", "ngram", "0.4.2"), ("0.5.1", "medusa", "medusa", "0.5.2"),
    ("0.8.5", "medusa", "medusa", "0.9.0"), ("0.5.4", "eagle", "eagle", "0.5.5"), ("0.8.2", "eagle", "eagle", "0.8.3"),
    ("0.7.2", "eagle", "mtp", "0.7.3"), ("0.8.5", "eagle", "mtp", "0.9.0"), ("0.8.4", "eagle", "eagle3", "0.8.5"),
    ("0.2.0", "eagle", "eagle3", "0.8.5"), ("0.2.0", "layer_skip", "layer_skip", "0.4.1"),
])
def test_vllm_refuses_a_speculation_method_before_the_release_that_added_it(refused, family, method, first):
    """vLLM's methods by release (PyPI sources of each release, profiles.engine_time.support): V0's
    --speculative-model from v0.4.1, [ngram] v0.4.2, Medusa v0.5.2, EAGLE v0.5.5, DeepSeek MTP v0.7.3; V1 (0.8.0
    on, whose other methods fall back to the V0 engine draftsim does not model there): [ngram] from v0.8.0,
    EAGLE v0.8.3, EAGLE-3 v0.8.5, Medusa and MTP v0.9.0. Before, each ran (exit 0), e.g. EAGLE-3 on vLLM 0.2.0."""
    from profiles.engine_time.frameworks import EngineSettings
    from profiles.engine_time.support import Context, UnsupportedCombination, check
    context = Context(drafter=family, method=method)
    with pytest.raises(UnsupportedCombination) as err:
        check(EngineSettings("vllm", refused), refused, context, ("full", "none"), {})
    assert err.value.field == "cluster.engine.version" and f"vllm {refused} has no" in err.value.message, err.value
    assert f" {first}" in err.value.message and "\n" not in err.value.message, err.value
    check(EngineSettings("vllm", first), first, context, ("full", "none"), {})   # the release that added it


@pytest.mark.parametrize("refused,family,method,first", [
    ("0.7.1", "medusa", "medusa", "0.8.0"), ("0.14.0", "eagle", "eagle", "0.15.0"), ("0.14.0", "ngram", "ngram", "0.15.0"),
    ("0.18.2", "eagle", "eagle3", "0.19.0"), ("0.12.0", "eagle", "eagle3", "0.19.0"), ("0.18.2", "eagle", "mtp", "0.19.0"),
])
def test_trtllm_refuses_a_speculation_method_before_the_final_release_that_added_it(refused, family, method, first):
    """TensorRT-LLM's release notes: Medusa from 0.8.0, EAGLE and prompt lookup from 0.15.0, EAGLE-3 and MTP (PyTorch
    workflow) from 0.19.0. Before, e.g. EAGLE on TensorRT-LLM 0.12.0 and EAGLE-3 on 0.18.2 ran (exit 0). A
    pre-release is not checked (the notes describe final releases)."""
    from profiles.engine_time.frameworks import EngineSettings
    from profiles.engine_time.support import Context, UnsupportedCombination, check
    context = Context(drafter=family, method=method)
    with pytest.raises(UnsupportedCombination) as err:
        check(EngineSettings("trtllm", refused), refused, context, ("full", "none"), {})
    said = err.value.message
    assert err.value.field == "cluster.engine.version" and said.startswith(f"trtllm {refused} has no "), said
    assert said.endswith(f"allowed: a version >= {first}") and "release notes" in said and "\n" not in said, said
    check(EngineSettings("trtllm", first), first, context, ("full", "none"), {})   # the release that added it
    check(EngineSettings("trtllm", f"{first}rc0"), f"{first}rc0", context, ("full", "none"), {})   # not checked


def test_trtllm_eagle3_before_0_19_is_refused_in_a_run():
    data = scenario(workload={"num_requests": 5}, drafter={"kind": "eagle3", "head": "llama-3.1-8b-eagle3", "gamma": 3},
                    cluster={"model": "llama-3.1-8b", "engine": {"framework": "trtllm", "version": "0.18.2"}})
    with pytest.raises(ScenarioError) as err:
        simulator.run(data)
    assert err.value.field == "cluster.engine.version" and "trtllm 0.18.2 has no EAGLE-3" in str(err.value), err.value
    data["cluster"]["engine"]["version"] = "0.19.0"
    assert simulator.run(data).summary["requests_finished"] == 5


def test_sglang_draft_model_before_0_5_2_is_refused_in_a_run():
    data = scenario(workload={"num_requests": 5}, drafter={"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3},
                    cluster={"model": "llama-3.1-8b", "engine": {"framework": "sglang", "version": "0.5.1"}})
    with pytest.raises(ScenarioError) as err:
        simulator.run(data)
    assert err.value.field == "cluster.engine.version" and "sglang 0.5.1" in str(err.value) and "STANDALONE" in str(
        err.value), str(err.value)
    data["cluster"]["engine"]["version"] = "0.5.2"
    assert simulator.run(data).summary["requests_finished"] == 5


def test_a_draft_model_on_the_a100_tables_without_a_version_is_refused_at_their_release():
    """Without cluster.engine.version the engine is the measured tables' release (vLLM 0.14.0 for a100-80gb),
    which has no draft model: refused naming cluster.engine.version; naming 0.15.0 runs it."""
    data = scenario(workload={"num_requests": 5}, cluster={"hardware": "a100-80gb"},
                    drafter={"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3})
    with pytest.raises(ScenarioError) as err:
        simulator.run(data)
    assert err.value.field == "cluster.engine.version" and "vllm 0.14.0" in str(err.value), str(err.value)
    data["cluster"]["engine"] = {"version": "0.15.0"}
    assert simulator.run(data).summary["requests_finished"] == 5


def test_dynamic_sd_with_data_parallelism_is_refused_as_vllm_falls_back_to_static_k():
    """vLLM turns Dynamic SD off when --data-parallel-size > 1 and drafts num_speculative_tokens every step
    (docs/features/speculative_decoding/dynamic_speculative_decoding.md, Limitations): refused, naming policy
    fixed, which is what vLLM runs."""
    data = scenario(workload={"num_requests": 5}, drafter={"kind": "mtp", "gamma": 1},
                    policy={"kind": "vllm_dynamic", "schedule": [[1, 8, 1], [9, 64, 0]]},
                    cluster={"hardware": "h200", "model": "deepseek-v3", "dtype": "fp8",
                             "parallelism": {"tp": 8, "ep": 16}, "engine": {"version": "0.24.0"}})
    with pytest.raises(ScenarioError) as err:
        simulator.run(data)
    assert err.value.field == "policy.kind" and "data parallelism" in str(err.value) and "policy fixed" in str(err.value)


def test_the_cli_refuses_a_missing_flag_with_exit_2_and_one_line(tmp_path, capsys):
    import yaml
    path = tmp_path / "s.yaml"
    data = scenario(workload={"num_requests": 5}, cluster={"engine": {"version": "0.12.0", "num_scheduler_steps": 4}})
    path.write_text(yaml.safe_dump(data))
    assert cli(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cluster.engine.num_scheduler_steps" in err[0] and "vllm 0.6.0" in err[0]
    assert not (tmp_path / "out").exists()


def test_engine_sections_must_agree():
    with pytest.raises(ScenarioError, match="prefix_caching"):
        simulator.run(scenario(workload={"num_requests": 5}, cluster={"engine": {"prefix_caching": True},
                                                                      "kv_cache": {"prefix_caching": False}}))
    with pytest.raises(ScenarioError, match="chunked_prefill"):
        simulator.run(scenario(workload={"num_requests": 5}, cluster={"engine": {"chunked_prefill": True}},
                               scheduler={"kind": "vllm"}))
    on = simulator.run(scenario(workload={"num_requests": 5}, cluster={"engine": {"prefix_caching": True}}))
    assert on.scenario.cluster.kv_cache.prefix_caching is True


def test_engine_sections_agree_on_what_each_reads():
    """`cluster.engine.prefix_caching: "yes"` beside `cluster.kv_cache.prefix_caching: true` (both read as true)
    was refused as 'differ'; the values are compared as the sections read them now. (The text "yes" is no
    boolean since the sections are strict: YAML's unquoted `yes`, which PyYAML reads as true, is.)"""
    from simulator.config.scenario import ClusterConfig
    cluster = ClusterConfig.model_validate({"hardware": "h100-sxm", "model": "llama-3-8b", "engine": {
        "framework": "vllm", "prefix_caching": yaml.safe_load("yes")}, "kv_cache": {"prefix_caching": True}})
    assert cluster.kv_cache.prefix_caching is True and cluster.engine.prefix_caching is True
    assert cluster.latency.framework == "vllm"
    # one release spelt two ways ('v0.11.0' and '0.11.0') was refused as 'differ' as well
    cluster = ClusterConfig.model_validate({"hardware": "h100-sxm", "model": "llama-3-8b", "engine": {
        "version": "v0.11.0"}, "latency": {"engine_version": "0.11.0"}})
    assert cluster.engine.version == cluster.latency.engine_version == "0.11.0"


# ---- multi-step scheduling (vLLM V0 --num-scheduler-steps) ---------------------------------------------
_TRACES = {}


def _multi_step_run(steps: int, arrivals, output=12, step_mode="step"):
    import tempfile
    from pathlib import Path
    key = (tuple(arrivals), output)
    if key not in _TRACES:
        path = Path(tempfile.mkdtemp()) / "trace.csv"
        path.write_text("arrival_s,prompt_tokens,output_tokens\n"
                        + "".join(f"{a},32,{output}\n" for a in arrivals))
        _TRACES[key] = str(path)
    data = scenario(workload={"num_requests": len(arrivals)},
                    cluster={"engine": {"version": "0.6.3", "num_scheduler_steps": steps}},
                    scheduler={"kind": "vllm", "max_batch_size": 8}, simulation={"step_mode": step_mode})
    data["workload"]["arrival"] = {"process": "trace", "trace_csv": _TRACES[key]}
    for k in ("prompt_tokens", "output_tokens"):
        data["workload"].pop(k)
    return simulator.run(data)


def test_multi_step_admits_new_requests_only_at_step_group_boundaries():
    """Hand-worked: A arrives at 0, B while A's first group of 4 decode steps runs. vLLM V0 with
    --num-scheduler-steps 4 (vllm/core/scheduler.py, multi-step): step 1 prefills A; steps 2-5 are A's first
    group (B waits, though the batch has room); step 6 (the boundary) prefills B; steps 7-10 decode A and B."""
    single = _multi_step_run(1, [0.0, 0.015])
    multi = _multi_step_run(4, [0.0, 0.015])
    shape = [(int(r.prefill_seqs), int(r.decode_seqs)) for r in multi.steps.itertuples()]
    assert shape[:10] == [(1, 0), (0, 1), (0, 1), (0, 1), (0, 1), (1, 0), (0, 2), (0, 2), (0, 2), (0, 2)], shape
    b_single = single.requests.loc[1]
    b_multi = multi.requests.loc[1]
    assert b_multi.first_token_s - b_multi.arrival_s > b_single.first_token_s - b_single.arrival_s
    # inside a group the host's scheduling and input preparation are not paid again
    eng = multi.steps.engine_s.to_numpy()
    assert eng[2] < eng[1] and eng[3] == pytest.approx(eng[2], rel=1e-9)


def test_multi_step_groups_restart_after_every_prefill_and_when_the_batch_empties():
    """Hand-worked, groups of 3: A and B (5 tokens each: 1 from the prompt, 4 decode steps) are prefilled
    together; their 4 decode steps are a group of 3 and the start of a second group, which ends when both
    finish (the batch is empty: a boundary); C, arriving later, is then prefilled and decodes 3 + 1."""
    multi = _multi_step_run(3, [0.0, 0.0, 0.2], output=5)
    shape = [(int(r.prefill_seqs), int(r.decode_seqs)) for r in multi.steps.itertuples()]
    assert shape == [(2, 0)] + [(0, 2)] * 4 + [(1, 0)] + [(0, 1)] * 4, shape
    bulk = _multi_step_run(3, [0.0, 0.0, 0.2], output=5, step_mode="bulk")   # bulk mode: the same steps
    assert shape == [(int(r.prefill_seqs), int(r.decode_seqs)) for r in bulk.steps.itertuples()]
    assert multi.steps.duration_s.tolist() == bulk.steps.duration_s.tolist()


def test_multi_step_is_refused_where_the_engine_has_none_or_with_speculation():
    with pytest.raises(ScenarioError, match="cluster.engine.num_scheduler_steps: vllm 0.9.0 has no such flag"):
        simulator.run(scenario(workload={"num_requests": 3},
                               cluster={"engine": {"version": "0.9.0", "num_scheduler_steps": 4}}))
    with pytest.raises(ScenarioError, match="drafter.kind: vllm 0.6.3 refuses speculative decoding with multi-step"):
        simulator.run(scenario(workload={"num_requests": 3}, drafter=EAGLE,
                               cluster={"engine": {"version": "0.6.3", "num_scheduler_steps": 4}}))
    with pytest.raises(ScenarioError, match="scheduler.kind: vllm 0.6.1 refuses chunked prefill with multi-step"):
        simulator.run(scenario(workload={"num_requests": 3}, scheduler={"kind": "sarathi"},
                               cluster={"engine": {"version": "0.6.1", "num_scheduler_steps": 4}}))


# ---- TensorRT-LLM in-flight batching --------------------------------------------------------------------
def _ifb_run(arrivals, prompt=40, output=6, chunked=None, max_tokens=64, util=None, step_mode="step",
             prefix_caching=False, policy=None):
    """(prefix_caching: False, given, as the hand-worked sequences count blocks without TensorRT-LLM's default
    block reuse, simulator.cluster.engine_cache; `policy`: cluster.engine.capacity_scheduler_policy)"""
    import tempfile
    from pathlib import Path
    path = Path(tempfile.mkdtemp()) / "trace.csv"
    outputs = output if isinstance(output, list) else [output] * len(arrivals)
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{a},{prompt},{o}\n"
                                                                         for a, o in zip(arrivals, outputs)))
    engine = {"framework": "trtllm", **({"chunked_prefill": chunked} if chunked is not None else {}),
              **({"capacity_scheduler_policy": policy} if policy is not None else {})}
    data = scenario(workload={"num_requests": len(arrivals)}, cluster={"engine": engine, "kv_cache": {"prefix_caching": prefix_caching}},
                    scheduler={"kind": "trtllm", "max_batch_size": 8, "max_batched_tokens": max_tokens},
                    simulation={"step_mode": step_mode})
    if util is not None:
        data["cluster"]["gpu_memory_utilization"] = util
    data["workload"]["arrival"] = {"process": "trace", "trace_csv": str(path)}
    for k in ("prompt_tokens", "output_tokens"):
        data["workload"].pop(k)
    return simulator.run(data)


def _shape(result):
    return [(int(r.prefill_seqs), int(r.prefill_tokens), int(r.decode_seqs)) for r in result.steps.itertuples()]


def test_trtllm_ifb_schedules_whole_contexts_within_max_num_tokens():
    """Hand-worked, max_num_tokens 64, three 40-token prompts at t = 0, no chunking
    (microBatchScheduler.cpp): step 1 takes A's context (B's 40 tokens do not fit in the 24 left: the walk
    stops); step 2 A generates (1 token) and B's context fits (40 <= 63); step 3 A, B generate and C's
    context fits; then all three generate together."""
    shape = _shape(_ifb_run([0.0, 0.0, 0.0]))
    assert shape[:4] == [(1, 40, 0), (1, 40, 1), (1, 40, 2), (0, 0, 3)], shape


def test_trtllm_ifb_chunks_contexts_in_whole_blocks_when_chunking_is_on():
    """Same requests with enable_chunked_prefill: step 1 takes A's 40 tokens and the first 16-token block of
    B's prompt (24 left, rounded down to whole 16-token blocks); step 2 A generates, B's last 24 tokens and C's
    first 32 (64 - 1 - 24 = 39, rounded down to 32)."""
    shape = _shape(_ifb_run([0.0, 0.0, 0.0], chunked=True))
    assert shape[:2] == [(2, 56, 0), (2, 56, 1)], shape


def test_trtllm_ifb_never_evicts_and_bulk_equals_step():
    step = _ifb_run([0.0] * 6 + [0.05] * 6, prompt=200, output=40, max_tokens=2048)
    bulk = _ifb_run([0.0] * 6 + [0.05] * 6, prompt=200, output=40, max_tokens=2048, step_mode="bulk")
    assert (step.requests.preemptions == 0).all()
    import pandas as pd
    pd.testing.assert_frame_equal(step.requests, bulk.requests)
    pd.testing.assert_frame_equal(step.steps, bulk.steps)


def test_trtllm_ifb_admits_only_what_it_can_guarantee_for_life():
    """GUARANTEED_NO_EVICT (capacityScheduler.cpp): with room for 35 blocks of 16 tokens, two requests of
    200 + 40 tokens reserve 16 blocks each for their whole life; the third waits for a finish although its
    prompt's 13 blocks would fit beside what the first two hold at admission (26 blocks)."""
    from profiles.hardware import get_hardware
    from simulator.cluster.factory import resolve_model
    hw, model = get_hardware("h100-sxm"), resolve_model("llama-3-8b", None)
    per_token = model.kv_bytes_per_token_per_gpu(__import__("models.step", fromlist=["Parallelism"]).Parallelism(1, 1),
                                                 "bf16")
    util = 35.5 * 16 * per_token / (hw.hbm_bytes - model.weight_bytes("bf16"))   # TensorRT-LLM: of what weights leave
    run = _ifb_run([0.0, 0.0, 0.0], prompt=200, output=40, max_tokens=4096, util=util)
    assert run.built.replicas[0].kv.total_blocks == 35
    req = run.requests
    assert (req.preemptions == 0).all()
    first_finish = req.finish_s.iloc[:2].min()
    assert req.admit_s.iloc[2] >= first_finish > req.admit_s.iloc[1]


@pytest.mark.parametrize("step_mode", ["step", "bulk"])
def test_trtllm_ifb_counts_a_running_requests_cached_prompt_blocks_as_held(step_mode):
    """The same three requests with block reuse on (KvCacheConfig.enable_block_reuse, TensorRT-LLM's default):
    their prompts' 12 full blocks are prefix-cache units (RequestState.unit_blocks), held by the request as
    getRemainingBlocksToCompletion counts them; no prompt hits, so the admissions are those without reuse (A and B
    at 0, C at the first finish). The units were left out of what a running request holds, so its prompt was
    reserved twice (A: 15 - 1 private block = 14 instead of 2) and B waited for A's finish."""
    from profiles.hardware import get_hardware
    from simulator.cluster.factory import resolve_model
    hw, model = get_hardware("h100-sxm"), resolve_model("llama-3-8b", None)
    per_token = model.kv_bytes_per_token_per_gpu(__import__("models.step", fromlist=["Parallelism"]).Parallelism(1, 1),
                                                 "bf16")
    util = 35.5 * 16 * per_token / (hw.hbm_bytes - model.weight_bytes("bf16"))   # TensorRT-LLM: of what weights leave
    runs = {on: _ifb_run([0.0, 0.0, 0.0], prompt=200, output=40, max_tokens=4096, util=util, step_mode=step_mode,
                         prefix_caching=on) for on in (False, True)}
    reuse = runs[True].requests
    assert runs[True].summary["prefix_cache_hit_rate"] == 0.0 and (reuse.cached_prompt_tokens == 0).all()
    assert reuse.admit_s.iloc[0] == reuse.admit_s.iloc[1] == 0.0
    assert reuse.admit_s.iloc[2] == reuse.finish_s.iloc[:2].min()
    for col in ("admit_s", "first_token_s", "finish_s"):
        assert reuse[col].tolist() == runs[False].requests[col].tolist()


def test_trtllm_ifb_admits_after_a_finish_in_bulk_mode_as_step_by_step():
    """GUARANTEED_NO_EVICT after a bulk of decode steps: 35 blocks of 16 tokens; A (200 + 40 tokens, life 16
    blocks) and B (200 + 80, life 18) run, C (200 + 40, life 16) waits. When A finishes, B holds 15 blocks
    (context 240 + 1) and still reserves 18 - 15 = 3, so 35 - 15 - 3 = 17 >= 16: C is admitted by the next
    step. Bulk mode read B's blocks as of its join (13: a bulk keeps them in its profile,
    simulator.core.bulk), reserved 5, found 15 < 16 and kept C waiting until B finished (found by fuzzing
    bulk against step-by-step: TTFTs and the step log differed)."""
    from profiles.hardware import get_hardware
    from simulator.cluster.factory import resolve_model
    hw, model = get_hardware("h100-sxm"), resolve_model("llama-3-8b", None)
    per_token = model.kv_bytes_per_token_per_gpu(__import__("models.step", fromlist=["Parallelism"]).Parallelism(1, 1),
                                                 "bf16")
    util = 35.5 * 16 * per_token / (hw.hbm_bytes - model.weight_bytes("bf16"))   # TensorRT-LLM: of what weights leave
    runs = {mode: _ifb_run([0.0, 0.0, 0.0], prompt=200, output=[40, 80, 40], max_tokens=4096, util=util,
                           step_mode=mode) for mode in ("step", "bulk")}
    for run in runs.values():
        assert run.built.replicas[0].kv.total_blocks == 35
        req = run.requests
        a_finish, b_finish = req.finish_s.iloc[0], req.finish_s.iloc[1]
        assert a_finish == req.admit_s.iloc[2] < b_finish
        first = run.steps[run.steps.start_s >= a_finish].iloc[0]   # the step after A's finish admits C
        assert (int(first.prefill_seqs), int(first.decode_seqs)) == (1, 1)
    import pandas as pd
    pd.testing.assert_frame_equal(runs["step"].requests, runs["bulk"].requests)
    pd.testing.assert_frame_equal(runs["step"].steps, runs["bulk"].steps)


def test_trtllm_ifb_admits_at_the_finish_that_frees_its_life_in_bulk_mode_too():
    """GUARANTEED_NO_EVICT (capacityScheduler.cpp) with 33 blocks of 16 tokens: A (200 + 20 tokens) reserves
    ceil(221 / 16) = 14 blocks for life, B (200 + 100) 19, so C (200 + 20, 14 blocks) waits; when A finishes,
    B still needs 19 blocks in all and 19 + 14 = 33 fit, so C starts in the step at A's finish. Bulk mode
    read B's blocks as of the start of its bulk (stale until the bulk profile is written back), counted
    its remaining need a block too high and admitted C only at B's finish (0.72 s instead of 0.147 s)."""
    import tempfile
    from pathlib import Path

    import pandas as pd
    from models.step import Parallelism
    from profiles.hardware import get_hardware
    from simulator.cluster.factory import resolve_model
    hw, model = get_hardware("h100-sxm"), resolve_model("llama-3-8b", None)
    util = 33.5 * 16 * model.kv_bytes_per_token_per_gpu(Parallelism(1, 1), "bf16") \
        / (hw.hbm_bytes - model.weight_bytes("bf16"))   # TensorRT-LLM: a fraction of what the weights leave
    runs = {}
    for mode in ("step", "bulk"):
        path = Path(tempfile.mkdtemp()) / "trace.csv"
        path.write_text("arrival_s,prompt_tokens,output_tokens\n0,200,20\n0,200,100\n0,200,20\n")
        data = scenario(workload={"num_requests": 3}, cluster={"engine": {"framework": "trtllm"},
                                                               "gpu_memory_utilization": util},
                        scheduler={"kind": "trtllm", "max_batch_size": 8, "max_batched_tokens": 4096},
                        simulation={"step_mode": mode})
        data["workload"] = {"arrival": {"process": "trace", "trace_csv": str(path)}}
        runs[mode] = simulator.run(data)
    assert runs["step"].built.replicas[0].kv.total_blocks == 33
    for result in runs.values():
        req = result.requests
        assert req.admit_s.iloc[2] == req.finish_s.iloc[0] < req.finish_s.iloc[1]
    pd.testing.assert_frame_equal(runs["step"].requests, runs["bulk"].requests)
    pd.testing.assert_frame_equal(runs["step"].steps, runs["bulk"].steps)


def _blocks_util(blocks: int) -> float:
    """cluster.gpu_memory_utilization giving llama-3-8b on one H100 `blocks` KV blocks of 16 tokens under
    TensorRT-LLM (a fraction of what the weights leave)."""
    from models.step import Parallelism
    from profiles.hardware import get_hardware
    from simulator.cluster.factory import resolve_model
    hw, model = get_hardware("h100-sxm"), resolve_model("llama-3-8b", None)
    return (blocks + 0.5) * 16 * model.kv_bytes_per_token_per_gpu(Parallelism(1, 1), "bf16") \
        / (hw.hbm_bytes - model.weight_bytes("bf16"))


@pytest.mark.parametrize("step_mode", ["step", "bulk"])
def test_trtllm_max_utilization_pauses_the_last_started_request(step_mode):
    """MAX_UTILIZATION (capacityScheduler.cpp MaxUtilizationScheduler, kvCacheManager.cpp getNeededBlocksOneStep),
    hand-worked with 30 blocks of 16 tokens and three requests of 200 + 80 tokens at t = 0. Step 1: A's and B's
    prompts need 13 blocks each (26 <= 30), C's 13 more do not fit: A and B start. Decode step j asks for 200 + j
    slots per request: 15 blocks each up to j = 40 (30 <= 30), 16 at j = 41 (32 > 30): the walk pauses the last
    started request, B (its 15 blocks freed), and A alone decodes step 42. B comes back as a 241-token context
    (200 + its 41 tokens, LlmRequest::pause), 16 blocks, which fit only when A finishes; C's 13 then fit beside
    them, so both start in the step after A's finish. Their j-th decode step after it asks for 241 + j and 200 + j
    slots: 16 + 14 = 30 blocks up to j = 15, 17 + 14 at j = 16, where C, started last, is paused in turn and B
    decodes alone. GUARANTEED_NO_EVICT on the same deployment: A's life is
    ceil(281 / 16) = 18 blocks, so B (18 more) waits for A's finish and nobody is ever evicted."""
    util = _blocks_util(30)
    runs = {policy: _ifb_run([0.0, 0.0, 0.0], prompt=200, output=80, max_tokens=4096, util=util,
                             step_mode=step_mode, policy=policy)
            for policy in ("max_utilization", "guaranteed_no_evict")}
    mu = runs["max_utilization"]
    assert mu.built.replicas[0].kv.total_blocks == 30
    shape = _shape(mu)
    assert shape[0] == (2, 400, 0) and shape[1:41] == [(0, 0, 2)] * 40 and shape[41] == (0, 0, 1), shape[:43]
    req = mu.requests
    assert req.preemptions.tolist() == [0, 1, 1]
    assert req.admit_s.tolist()[:2] == [0.0, 0.0]
    at = int((mu.steps.start_s < req.finish_s.iloc[0]).sum())   # the first step after A's finish
    assert shape[at] == (2, 241 + 200, 0) and shape[at + 1:at + 16] == [(0, 0, 2)] * 15, shape[at:at + 18]
    assert shape[at + 16] == (0, 0, 1), shape[at:at + 18]
    no_evict = runs["guaranteed_no_evict"].requests
    assert (no_evict.preemptions == 0).all()
    assert no_evict.admit_s.iloc[1] == no_evict.finish_s.iloc[0]


@pytest.mark.parametrize("chunked", [False, True])
def test_trtllm_max_utilization_bulk_equals_step(chunked):
    """MAX_UTILIZATION under KV pressure (requests are paused), Poisson arrivals: bulk and step-by-step runs agree."""
    import pandas as pd
    data = scenario(workload={"num_requests": 60, "arrival": {"process": "poisson", "qps": 30.0},
                              "prompt_tokens": {"kind": "uniform", "low": 100, "high": 400},
                              "output_tokens": {"kind": "uniform", "low": 20, "high": 200}},
                    scheduler={"kind": "trtllm", "max_batch_size": 16, "max_batched_tokens": 640},
                    cluster={"engine": {"framework": "trtllm", "chunked_prefill": chunked,
                                        "capacity_scheduler_policy": "max_utilization"},
                             "gpu_memory_utilization": _blocks_util(60)})
    bulk = simulator.run(data)
    step = simulator.run({**data, "simulation": {"step_mode": "step"}})
    assert bulk.requests.preemptions.sum() > 0
    pd.testing.assert_frame_equal(bulk.requests, step.requests)
    pd.testing.assert_frame_equal(bulk.steps, step.steps)


def test_capacity_scheduler_policy_needs_tensorrt_llms_scheduler():
    with pytest.raises(ScenarioError, match="capacity_scheduler_policy is TensorRT-LLM's capacity scheduler"):
        simulator.run(scenario(workload={"num_requests": 3},
                               cluster={"engine": {"capacity_scheduler_policy": "max_utilization"}}))
    with pytest.raises(ScenarioError, match="cluster.engine.capacity_scheduler_policy: max_utilization pauses requests.*"
                                            "request 0's can reach 239 tokens, above scheduler.max_batched_tokens 64"):
        _ifb_run([0.0], prompt=40, output=200, policy="max_utilization")   # (no chunking: a 239-token context)
    assert _ifb_run([0.0], prompt=40, output=200, chunked=True, policy="max_utilization").requests.finish_s.notna().all()
    with pytest.raises(ScenarioError, match="the scheduler is 'vllm_v1'"):
        simulator.run(scenario(workload={"num_requests": 3}, scheduler={"kind": "vllm_v1"},
                               cluster={"engine": {"framework": "trtllm",
                                                   "capacity_scheduler_policy": "max_utilization"}}))


@pytest.mark.parametrize("drafter", [None, {"kind": "ngram", "gamma": 3},
                                     {"kind": "head", "style": "autoregressive", "gamma": 3}])
def test_sglang_newest_rules_bulk_equals_step(drafter):
    """SGLang 0.5.23 (prefill graphs, n-gram overlapped, EAGLE prefill captured): bulk and step-by-step runs agree."""
    from sim_helpers import assert_bulk_equals_step
    over = {"drafter": drafter} if drafter else {}
    assert_bulk_equals_step(scenario(workload={"num_requests": 40, "arrival": {"process": "poisson", "qps": 20.0}},
                                     scheduler={"kind": "vllm", "max_batch_size": 24},
                                     cluster={"engine": {"framework": "sglang", "version": "0.5.23"}}, **over))


@pytest.mark.parametrize("typed, canonical", [("v0.11.0", "0.11.0"), (" 0.11.0 ", "0.11.0"), ("0.5.3.post3", "0.5.3.post3"),
                                              ("1.3.0rc20", "1.3.0rc20"), ("0.11.0+cpu", "0.11.0+cpu"), ("1.4.0-rc4", "1.4.0rc4")])
def test_versions_are_kept_in_their_canonical_spelling(typed, canonical):
    """A release number as pip compares it (PEP 440): before, " 0.11.0" and "v0.11.0" were kept as typed,
    matched 0.11.0's engine rules (compared as versions) but not its measured tables (compared as text:
    `estimate --version v0.24.0` said 'was not measured' while `--engine-version v0.24.0` ran)."""
    from simulator.config.engine import EngineConfig
    from simulator.config.serving import LatencyConfig
    assert EngineConfig(version=typed).version == canonical
    assert LatencyConfig(source="measured", version=typed).version == canonical


@pytest.mark.parametrize("typed", ["0.11.x", "latest", "0.11.0 beta", ""])
def test_a_version_that_is_no_release_number_is_refused(typed):
    from simulator.config.engine import EngineConfig
    with pytest.raises(ValueError, match="is not a release number"):
        EngineConfig(version=typed)


def test_the_measured_tables_are_found_by_release_not_spelling():
    import simulator
    a = simulator.estimate_step("llama-3-8b", "h100-sxm", batch=1, context_tokens=0, latency={"version": "0.24"})
    b = simulator.estimate_step("llama-3-8b", "h100-sxm", batch=1, context_tokens=0, latency={"version": "0.24.0"})
    assert a["seconds"] == b["seconds"] and a["latency_source"]["version"] == "0.24.0"


@pytest.mark.parametrize("engine,refused", [({"framework": "vllm", "version": "0.6.6"}, True),
                                            ({"framework": "sglang", "version": "0.5.23"}, True),
                                            ({"framework": "trtllm", "version": "1.2.1"}, True),
                                            ({"framework": "sglang"}, True),   # (the tables' release, implied)
                                            ({"framework": "vllm", "version": "0.15.0"}, False)])
def test_the_vllm_pass_layout_of_a_draft_model_needs_vllm_from_0_15(engine, refused):
    """drafter.passes 'vllm' prices vLLM V1's DraftModelProposer (vllm/v1/spec_decode/draft_model.py, from v0.15.0):
    SGLang 0.5.23, TensorRT-LLM 1.2.1 and vLLM V0 (0.6.6) ran with it, exit 0."""
    data = scenario(workload={"num_requests": 5}, cluster={"engine": engine},
                    drafter={"kind": "draft_model", "model": "llama-3.2-1b", "gamma": 3, "passes": "vllm"})
    err = _refusal_of_five(data, refused)
    if err is None:
        return
    text = str(err.value)
    assert err.value.field == "drafter.passes" and "\n" not in text and "DraftModelProposer" in text, text
    assert "expected 'chain' here" in text, text
