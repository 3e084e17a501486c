"""Which engine releases keep an MTP module's own LM head beside the target's (profiles.engine_time.mtp_lm_head),
each case from the sources its docstring cites, and the weights a run then holds."""
from __future__ import annotations

import pytest

from models import get_model
from models.mtp import weight_bytes_per_gpu
from models.step import Parallelism
from profiles.engine_time.mtp_lm_head import keeps_own_lm_head

DEEPSEEK = get_model("deepseek-v3")
QWEN3_NEXT = get_model("qwen3-next-80b-a3b")


@pytest.mark.parametrize("version,kept", [("0.9.0", True), ("0.10.1", True), ("0.11.0", True), ("0.15.0", True),
                                          ("0.15.1", True), ("0.16.0", False), ("0.24.0", False), ("0.33.0", False)])
def test_vllm_keeps_deepseek_mtps_shared_head_before_0_16_0(version, kept):
    assert keeps_own_lm_head("vllm", version, DEEPSEEK) is kept
    assert keeps_own_lm_head("vllm", version, QWEN3_NEXT) is False   # Qwen3NextMTP's lm_head: replaced by the target's


@pytest.mark.parametrize("framework,version", [("sglang", "0.5.14"), ("sglang", "0.5.23"), ("trtllm", "1.0.0")])
def test_sglang_and_trtllm_share_the_targets_lm_head(framework, version):
    assert keeps_own_lm_head(framework, version, DEEPSEEK) is False


def test_a_kept_head_adds_a_16_bit_vocab_parallel_lm_head_per_module():
    par = Parallelism(8, 1)
    head = 129_280 * 7168 * 2 / 8          # bf16 under fp8_block (Fp8Config leaves ParallelLMHead unquantized)
    for dtype in ("fp8_block", "bf16"):
        assert weight_bytes_per_gpu(DEEPSEEK, 1, par, dtype, True) - weight_bytes_per_gpu(DEEPSEEK, 1, par, dtype) \
            == pytest.approx(head, rel=1e-12)


def test_a_run_on_vllm_0_15_holds_the_mtp_modules_lm_head():
    """DeepSeek-V3 at tp 8 on an H200: vLLM 0.15.0's MTP module weighs one bf16 LM head / 8 more per GPU than
    0.16.0's, and its KV capacity is that many bytes over the per-token KV less."""
    from sim_helpers import replica_kind, scenario

    def kind(version):
        return replica_kind(scenario(cluster={"hardware": "h200", "model": "deepseek-v3", "dtype": "fp8_block",
                                              "parallelism": {"tp": 8}, "engine": {"version": version}},
                                     drafter={"kind": "mtp", "gamma": 2}, acceptance={"kind": "constant", "alpha": 0.8},
                                     scheduler={"kind": "vllm", "max_batch_size": 256, "max_batched_tokens": 8192}))
    old, new = kind("0.15.0"), kind("0.16.0")
    head = 129_280 * 7168 * 2 / 8
    assert old.drafter.weight_bytes_per_gpu - new.drafter.weight_bytes_per_gpu == pytest.approx(head, rel=1e-12)
    per_token = DEEPSEEK.kv_bytes_per_token_per_gpu(Parallelism(8, 1), old.kv_dtype) + \
        old.drafter.kv_bytes_per_token_per_gpu
    assert new.kv_tokens - old.kv_tokens == pytest.approx(head / per_token, abs=1)
