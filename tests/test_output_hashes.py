"""Output hashes of every shipped scenario and paper reproduction: a refactoring must keep
requests.parquet, steps.parquet and summary.json byte-identical (the `draftsim run` outputs). The hashes
were recorded on commit dc52e50, before the one-engine redesign (issue 13), and updated when it was merged
with the measured-pricing changes made meanwhile on main (separable row-curve interpolation of the measured
tables: last-digit float differences; fused-MoE kernel tables; the disaggregation pair at 16 req/s; Medusa
heads counted as one GPU layer by the engine-time model); a change of output on purpose (a bug fix) updates
them in the same commit and says why there. Issue 18 (bulks planned per replica from decode profiles)
changed only summary.json's `latency_source.op_kinds.attn_decode` counts of distinct shapes priced: decode
steps are no longer priced past the next arrival and discarded; requests and steps are byte-identical. Later in issue 18 a
decode-pool bulk scans only to a guess of its next KV arrival (not to its last finish, to be cut short there),
which changed the same counts of the two disaggregated cases again; requests and steps byte-identical. Issue 29
(2026-11-26, a fresh venv on an Intel Xeon VM instead of the earlier AMD EPYC one): vllm_cpu's engine-profile
pricing moved in its last bits (the NNLS fit and a BLAS matrix-vector product round differently per CPU; the
product is now two element-wise terms), and so did qwen3_moe_ep16's steps — their hashes were re-recorded
here; neither summary.json moved. Hashes
are of this machine class: a BLAS or LP build on another CPU may move last bits. Issue 31 (verify-pass pricing,
profiles.measured.verify) re-priced attention with q > 1 query tokens per request on the measured GPU tables —
the one-query price of the model's own layout plus FA3's extra row tiles, instead of a q×-heads layout looked up
(and in places extrapolated into table holes) — which moved every speculative scenario priced with measured GPU
kernels and nothing else. Issue 25 (2026-11-26): the profile predictor rounds a table row's prefill prefix to
whole tokens (ops.csv's 6-digit attn_pairs had given large chunks prefixes like 0.012, each its own axis value,
so their grid cells were holes filled from neighbours): the three scenarios priced with the CPU profile moved
(cpu_draft TTFT p50 +0.27 %, validation/cpu and cpu_quick by microseconds). Issue 28 (energy and cost,
simulator.results.energy) added the energy, power and $/Mtok fields to every summary.json: all summary hashes
re-recorded, requests and steps byte-identical. Issue 26
(`cluster.engine`) re-recorded every GPU case on purpose: batches are padded up to the engine's CUDA-graph
capture sizes and the padding is paid; steps beyond the captured sizes run eagerly (max of kernel and issue
time instead of a per-layer piecewise gap); host time runs at the default host's speed (the H100 server's
host, × 1.164 the development VM's); the summary's engine_time entry describes the graph policy and host.
The two local-CPU validation cases are unchanged; vllm_cpu (an engine profile) moved by 1 ulp in 6 mixed
steps (≤ 4.4e-16 s) and its summary gained the same engine_time fields.
Issue 30's session of 2026-11-27 (a device lent):
the board's power limit under sustained load (profiles.measured.power_limit, measured on an H100 that day)
slows the dense part of passes priced with measured h100-sxm bf16/fp16 GEMMs by g(S) of their compute-bound
share — every GPU summary.json gained `latency_source.power_limit` (null where none applied) and the h100-sxm
cases whose passes have compute-bound GEMMs (prefills, verifies of many tokens) moved (quickstart TPOT p50
+6.6 %, TTFT p50 +4.7 %); decode-sized passes and other GPUs did not. The same session's H200 run gave
h200 its own curve: the two H200 hybrid cases moved (nemotron_h_h200 TTFT p50 +11.5 %, TPOT p50 +1.9 %), and
the H100/H200 disaggregated case's summary. On 2026-11-28 (re-recorded at 8421634): vLLM's CUDA-graph capture sizes as each
release computes them (with speculation a size that rounds past the largest is dropped, not rounded to 515;
16 cases' requests and steps moved, e.g. quickstart TTFT mean -7.2 %), the engine-time entries split at vLLM
0.28 (every vLLM summary's `engine_time.versions` label), the LazyGrid of draft passes computing only the
rows asked for (fewer `attn_decode` shapes priced: summary counts only), gpt-oss's scenario in mxfp4 and
sliding-window prefill priced from the measured window kernels (its requests and steps). Session 13 of 2026-11-28: vLLM V1's hybrid KV-cache manager frees sliding-window blocks outside the window (simulator.core.kv.sliding_window), so eagle3_gpt_oss_120b_h100's steps (kv_blocks_used: KV max 51.4 -> 29.0 %) and summary moved; its requests did not. Then quantized checkpoints' embeddings and LM head in 16 bits (vLLM's Fp8Config.get_quant_method leaves them unquantized): mtp_deepseek_v3_h200_ep8 (KV tokens -7.05 %, TTFT p50 +2.2 %, TPOT p50 +1.4 %), mtp_deepseek_v3_h200_disagg and deepseek_r1_nvfp4_b200 (TTFT p50 +6.2 %) moved. Sizes are cut with `--set` overrides so that the whole test stays
under a minute; the reproductions' data CSVs are checked in
test_reproduce_papers (`REPRODUCTION_SHA256`)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import simulator
from simulator.results.outputs import summary_json, write_parquet

ROOT = Path(__file__).resolve().parent.parent

# (scenario, overrides, sha256[:16] of requests.parquet, steps.parquet, summary.json)
CASES = [
    ("scenarios/quickstart.yaml", ['workload.num_requests=200'],
     "ed0cab17cc2c5f39", "8f511edd70697538", "3aa83cf9e5ed51c6"),
    ("scenarios/acceptance/qwen_coder_trace.yaml", ['workload.num_requests=150'],
     "c3bf2668ad629bf7", "013240c937779c68", "22305bb13d05b84c"),
    # added with issue 17's cross-vocabulary measured pairs (SmolLM2-135M through TLI; recorded on its branch)
    ("scenarios/acceptance/smollm2_tli_trace.yaml", ['workload.num_requests=150'],
     "debdc7c2fe1d1d31", "5afbf4ec5ceee1ac", "e1a653e32d4728fd"),
    ("scenarios/acceptance/smollm2_tli_sample.yaml", ['workload.num_requests=150'],
     "0bb3bc884f4e2386", "ea48fb8c2a94cf07", "4c4ecebd8017510e"),
    ("scenarios/benchmarks/sim_speed.yaml", ['workload.num_requests=200'],
     "2954e7e5f196c4fa", "1129aff3a81dcb66", "9fafa43441e16b91"),
    ("scenarios/disagg/colocated.yaml", ['workload.num_requests=150'],
     "3a2b593f81d4a591", "30aa4ed4bb96ad4a", "6cb177d509a43f87"),
    ("scenarios/disagg/disaggregated.yaml", ['workload.num_requests=150'],
     "5b314d30bbc3dff4", "c85ff417146a2983", "745de3792abd7307"),
    ("scenarios/moe/mixtral_tp8.yaml", ['workload.num_requests=60'],
     "af0eed2304e515e4", "e254816e0797dcb7", "f3961a2f40c01d53"),
    ("scenarios/moe/mixtral_tp8_sd.yaml", ['workload.num_requests=60'],
     "6fa0bc5111627f6c", "321baf2c4e16ad58", "544205b2fcff50d5"),
    ("scenarios/moe/qwen3_moe_ep16.yaml", ['workload.num_requests=60'],
     "6ec0740884f2bc66", "d771d3b93e596a84", "2b52e565767e27e5"),
    ("scenarios/moe/qwen3_moe_ep8_sd_presched.yaml", ['workload.num_requests=60'],
     "e76bce140f7217b8", "cecda51460858d1f", "a150d1158fa7b5eb"),
    ("scenarios/moe/qwen3_moe_tp8x2.yaml", ['workload.num_requests=60'],
     "73cbccf11d445eae", "fbb155b497ef3a88", "b9e44bf64c825bec"),
    ("scenarios/moe/qwen3_moe_tp8x2_sd.yaml", ['workload.num_requests=60'],
     "4461d56cb5a608b4", "3826d0791b62f7ac", "13940cf369b88807"),
    ("scenarios/speculation/colocated_draft.yaml", ['workload.num_requests=60'],
     "789de3ad723c4a41", "78fa16125d2dc15d", "1c1c473c2ca56390"),
    ("scenarios/speculation/cpu_draft.yaml", ['workload.num_requests=10'],
     "65bdd33a90eb4c78", "1e8559fc89cc53eb", "fae5d51bd3f4bccd"),
    ("scenarios/speculation/eagle_dynamic_tree.yaml", ['workload.num_requests=40'],
     "7281c44979e1c814", "059cce9ae4f499e7", "3147bf1230bafd8e"),
    ("scenarios/speculation/layer_skip.yaml", ['workload.num_requests=80'],
     "635aa102c7e94b38", "1046e90fcf6b6ca6", "32716fc672f942af"),
    ("scenarios/speculation/medusa_heads.yaml", ['workload.num_requests=40'],
     "ddc035b2d41aa644", "25b7c6fda84f7228", "2cbdefcba4b88429"),
    ("scenarios/speculation/multidraft.yaml", ['workload.num_requests=60'],
     "07c873e357aede89", "717b65a7123df0d8", "567832f744ea770e"),
    ("scenarios/speculation/ngram.yaml", ['workload.num_requests=80'],
     "120f2c47a81c47e7", "91c85b35236c270f", "19473f3de2c61169"),
    ("scenarios/speculation/separate_draft.yaml", ['workload.num_requests=60'],
     "5fe01871b5fb4ac8", "b109b5eaacfd9cc3", "9f0343640eb3689f"),
    ("scenarios/speculation/sequoia_tree.yaml", ['workload.num_requests=30'],
     "12d346409134ad8d", "08a3cb421ca00408", "e7041d91bea7a95a"),
    ("scenarios/speculation/smartspec_policy.yaml", ['workload.num_requests=60'],
     "1ff6eaca362a45ac", "d1f5ca8ff3e94fd5", "782aabfe461d2aa8"),
    ("scenarios/validation/cpu.yaml", [],
     "e87ed3091bbd8ef4", "74b2cbcec322e5be", "3efd7f2a59bd4106"),
    ("scenarios/validation/cpu_quick.yaml", [],
     "cf1c0e6d24142568", "f1e36c562c0ceaad", "0ec2e5d26422589f"),
    # added with the one-engine redesign (recorded on its commit, not on dc52e50)
    # issue 27 (one step loop for every pool): a disaggregated pool's step ends at start + (draft + target)
    # seconds, as a colocated one's and every bulk's do, not (start + draft) + target: last-digit changes of
    # the decode pool's step-by-step steps, which this speculating case has
    ("scenarios/disagg/eagle_tree_ep_h100_h200.yaml", ['workload.num_requests=80'],
     "e8dbc292b1fc6fa8", "a080a60d95342e1f", "cdfd475666881a12"),
    # added with the trace-replay example (issue: reliability and everyday use)
    ("scenarios/traces/replay.yaml", [],
     "0c174317139d8545", "0dee4252431479c1", "020159a914523de6"),
    # added with issue 17 (the seed systems: recorded on its branch)
    # prompts capped at 1536 tokens when main began enforcing vicuna-7b's 2048-token context
    ("scenarios/speculation/batch_realign.yaml", ['workload.num_requests=60'],
     "981eef93a772fc48", "ddb40496c471b292", "86bb56363eb3858a"),
    ("scenarios/speculation/cascade_drafting.yaml", ['workload.num_requests=40'],
     "96ead34c3fa3f8a1", "fb80c27733fac886", "11c841338e9ebc38"),
    ("scenarios/speculation/clover_heads.yaml", ['workload.num_requests=40'],
     "dfa8a6424d07cc51", "a582ab9306c182f0", "ea1e1bca3de470b3"),
    ("scenarios/speculation/context_dynamic_tree.yaml", ['workload.num_requests=60'],
     "5e9a986e9c7efcfc", "7876c9f1408b21b6", "e607ddb5a0e66c0b"),
    ("scenarios/speculation/falcon_semi_ar.yaml", ['workload.num_requests=40'],
     "d91a33e2c0ad116a", "dda0933af574ecee", "a2915b8a8b3f4e7a"),
    ("scenarios/speculation/hydra_heads.yaml", ['workload.num_requests=40'],
     "bc004bec20609ca8", "0bcdc69478a89d43", "556b5b9351114d6d"),
    ("scenarios/speculation/koala_heads.yaml", ['workload.num_requests=40'],
     "e9571ea8ad12b4e5", "a7d3fd12b76701aa", "cbbae3ab5ee0e7b6"),
    ("scenarios/speculation/magicdec_long_context.yaml", ['workload.num_requests=4', 'workload.arrival.concurrency=4'],
     "d2aca91d84f3454f", "a9ada1abee39cc3d", "ed1da32394b09932"),
    ("scenarios/speculation/multidraft_optimal.yaml", ['workload.num_requests=60'],
     "9fa115081394d1b0", "75f43904c2b92620", "de3b19a88fa7dd86"),
    ("scenarios/speculation/online_drift.yaml", ['workload.num_requests=200'],
     "68824090cbdfc943", "5d1814d6f4e2aa36", "cce67f389ddc490e"),
    ("scenarios/speculation/specreason.yaml", ['workload.num_requests=6'],
     "5d2261ccef406ed5", "07eaf4cd2fa5ea50", "855d60af337cf043"),
    ("scenarios/speculation/triforce_hierarchy.yaml", ['workload.num_requests=2', 'workload.arrival.concurrency=2'],
     "55efd3864012aff1", "d651165f5b71fa28", "8bf7e5a4cc008369"),
    ("scenarios/speculation/easyspec_layer_parallel.yaml", ['workload.num_requests=40'],
     "393a067a4429f960", "a5f3d838973de7f8", "0b8e1513d553cc1a"),
    ("scenarios/speculation/ouroboros_phrases.yaml", ['workload.num_requests=40'],
     "1023e65340619482", "3e9b3a2635ecff6e", "13014c382689f798"),
    # added with issue 16 (trace formats, prefix caching); the summary hashes of this and every case added
    # with issues 15-17 re-recorded at the issue-18 merge: its bulks price only the steps they run, which
    # changes the latency_source shape-count diagnostic only (requests and steps byte-identical)
    ("scenarios/traces/mooncake_prefix_caching.yaml", [],
     "4f6c49cfbed8708c", "6ce1b862d6f9bd1f", "e1120f0a9b437eb9"),
    ("scenarios/batching/nanoflow.yaml", ['workload.num_requests=64', 'workload.arrival.concurrency=64'],
     "2a210fb0967f70c3", "ac261b02c89bb6ba", "df087d75fd9b6f92"),
    ("scenarios/long_context/shadowkv.yaml", ['workload.num_requests=8', 'workload.arrival.concurrency=8',
                                              'workload.prompt_tokens.value=16384', 'workload.output_tokens.value=256'],
     "61fd2565fc5670a4", "0159f0c915320816", "2fa1e939e9948fd2"),
    ("scenarios/batching/early_exit.yaml", ['workload.num_requests=60'],
     "7cac7a8ed8b49b47", "c6e672e0b6d547dd", "dc48e33aa71f5268"),
    ("scenarios/speculation/thompson_gamma.yaml", ['workload.num_requests=40'],
     "46fdc13a5ec8ad61", "66866653a31f4e6f", "2ea56e5e9a835d51"),
    # added with issue 17's parallel sampling (workload.parallel_samples; one-sequence runs unchanged)
    ("scenarios/batching/parallel_sampling.yaml", ['workload.num_requests=60'],
     "4eaf230462d56057", "b00e896c4e27822c", "05b71fb1b9a9706c"),
    ("scenarios/speculation/pearl.yaml", ['workload.num_requests=20'],
     "d475e76a3a2da909", "95d921bd36d7e9af", "30078d2b2c6c3f46"),
    ("scenarios/speculation/ouroboros_reuse.yaml", ['workload.num_requests=40'],
     "094ee0b5befb4631", "ae49c1cfa092c385", "21026450b0dc8079"),
    ("scenarios/speculation/rasd_retrieval.yaml", ['workload.num_requests=60'],
     "de5b2257fa97a312", "3696b31ad5f3cfd0", "cd54786b3c9d21b1"),
    # added with issue 17's RaLMSpec in the DES (retrieval:; runs without it unchanged)
    ("scenarios/speculation/ralmspec.yaml", ['workload.num_requests=60'],
     "6f7bc29b91e7a1f8", "41379c47db02990d", "3531baa527696048"),
    # added with issue 19 (vLLM's engine profile, scheduler and draft proposer)
    ("scenarios/validation/vllm_cpu.yaml", [], "abc07ac258f259be", "bc04b67de9d9c840", "686d1f92a1f45e24"),
    # added with issue 31's engine drafters (EAGLE-3 heads, MTP modules; recorded on the spec-drafters branch)
    ("scenarios/speculation/eagle3_llama31_8b_h100.yaml", ['workload.num_requests=60'],
     "13cdf04b785fb67c", "79f8ddb037e616f2", "f14261722f593b62"),
    # (re-recorded 2026-11-28: the scenario serves gpt-oss-120b in mxfp4 — MXFP4 experts on the measured W4A16
    # MoE table, every other weight bf16 — instead of its int4 stand-in)
    ("scenarios/speculation/eagle3_gpt_oss_120b_h100.yaml", ['workload.num_requests=60'],
     "ffd3cde1a6991afd", "4fec4fce781e2626", "7a1aca9e544216d6"),
    ("scenarios/speculation/mtp_deepseek_v3_h200_ep8.yaml", ['workload.num_requests=60'],
     "20a1519bb633e280", "ad305ecb649ad0fe", "bab163183314b998"),
    # (re-recorded with issue 27's one step loop: a disaggregated pool's step ends at start + (draft + target))
    ("scenarios/speculation/mtp_deepseek_v3_h200_disagg.yaml", ['workload.num_requests=60'],
     "3f1cb9478df55943", "8e79b63901129025", "a85c658d3e233d7d"),
    # added with issue 28 (hybrid models on H100/H200/B200, an NVFP4 DeepSeek-R1 on B200; recorded on its branch)
    ("scenarios/hybrid/qwen3_next_h100.yaml", ["workload.num_requests=60"],
     "8706740770a8b888", "06af5fcf193c155d", "83e4af8c5e71e593"),
    ("scenarios/hybrid/qwen3_next_h200.yaml", ["workload.num_requests=60"],
     "baa54ccedeb5781d", "129da281c62594cf", "f80faf6776ed0efb"),
    ("scenarios/hybrid/qwen3_next_b200.yaml", ["workload.num_requests=60"],
     "e6ec45168eb96019", "b56afb9accc7df06", "9f416e785279229d"),
    ("scenarios/hybrid/nemotron_h_h100.yaml", ["workload.num_requests=60"],
     "470d81cb739830fd", "481c34ec354b85f6", "2bd66bc12356e03f"),
    ("scenarios/hybrid/nemotron_h_h200.yaml", ["workload.num_requests=60"],
     "cd4260e2f292bb25", "8d1072e6e146561d", "723d84b271675363"),
    ("scenarios/hybrid/nemotron_h_b200.yaml", ["workload.num_requests=60"],
     "7815557fb7fc6227", "2b5c5b67c11f42ce", "f1e2efb3bfa7c40f"),
    ("scenarios/fp4/deepseek_r1_nvfp4_b200.yaml", ["workload.num_requests=60"],
     "10b58ea27ca076f4", "7a5a332ace700eec", "502bcba640612238"),
    # added with issue 31's suffix decoding (walks of the real proposer through the shipped session corpus)
    ("scenarios/speculation/suffix_code.yaml", ["workload.num_requests=60"],
     "bf1c7fd9ff8a7fc6", "ab29dbad74f96b23", "d36548320ec2ac1c"),
]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def output_hashes(result, folder: Path) -> tuple[str, str, str]:
    """The hashes of the three files `draftsim run` writes for `result`."""
    hashes = []
    for name, frame in (("requests", result.requests), ("steps", result.steps)):
        write_parquet(frame, folder / f"{name}.parquet")
        hashes.append(sha((folder / f"{name}.parquet").read_bytes()))
    return hashes[0], hashes[1], sha(summary_json(result.summary).encode())


@pytest.mark.slow  # every shipped scenario end to end (~20 s): run it alone after a refactor
@pytest.mark.parametrize("path,overrides,requests,steps,summary", CASES, ids=[c[0] for c in CASES])
def test_outputs_are_byte_identical_to_the_recorded_ones(tmp_path, path, overrides, requests, steps, summary):
    result = simulator.run(ROOT / path, overrides)
    assert output_hashes(result, tmp_path) == (requests, steps, summary)


def test_every_runnable_shipped_scenario_is_hashed():
    hashed = {c[0] for c in CASES}
    not_runs = {"scenarios/plans/llama8b_chat.yaml", "scenarios/plans/llama31_8b_drafters.yaml",
                "scenarios/sweeps/quickstart_qps_gamma.yaml",
                "scenarios/validation/published/points.yaml", "scenarios/hardware/h20.yaml"} | {
        str(p.relative_to(ROOT)) for p in (ROOT / "scenarios/validation/published").glob("points*.yaml")}
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "scenarios").rglob("*.yaml")} - not_runs
    assert shipped <= hashed, sorted(shipped - hashed)
