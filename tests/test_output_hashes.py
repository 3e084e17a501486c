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
sliding-window prefill priced from the measured window kernels (its requests and steps). Session 13 of 2026-11-28: vLLM V1's hybrid KV-cache manager frees sliding-window blocks outside the window (simulator.core.kv.sliding_window), so eagle3_gpt_oss_120b_h100's steps (kv_blocks_used: KV max 51.4 -> 29.0 %) and summary moved; its requests did not. Then quantized checkpoints' embeddings and LM head in 16 bits (vLLM's Fp8Config.get_quant_method leaves them unquantized): mtp_deepseek_v3_h200_ep8 (KV tokens -7.05 %, TTFT p50 +2.2 %, TPOT p50 +1.4 %), mtp_deepseek_v3_h200_disagg and deepseek_r1_nvfp4_b200 (TTFT p50 +6.2 %) moved. Then vLLM V1's own memory accounting (simulator.cluster.vllm_memory: the memory CUDA reports x gpu_memory_utilization less the weights as loaded, the start-up profile's activation peak and non-torch memory) moved the KV capacity of every vLLM case on a GPU (H100 -12.4 to +7.9 %, H200 +5.8 to +20.4 %): 61 cases' steps (kv_blocks_total/used) and summaries; no case's requests. Then a separate-GPU draft model's GPUs counted (separate_draft and pearl: gpus 4 -> 5, $/Mtok x1.25, summary only), and traces/replay.yaml, which sets no max_batch_size, runs with vLLM's default 1024 on an H100, whose profile run samples 1,024 rows: its KV capacity, steps and summary moved, its requests did not. Session 15 (2026-11-28): the L40S's memory is the total CUDA reports (44.31 GiB, deviceQuery), not the datasheet's decimal 48 GB, so cpu_draft's KV pool went 54,851 -> 54,124 tokens: its steps and summary moved, its requests did not. Session 16 (2026-11-28): vLLM's fp8_block GEMM rows are eager-timed by aiconfigurator's collector and are priced from the same table's graph-timed fp8 rows (profiles.measured.tables.EAGER_GEMM_STAND_INS): the two fp8_block DeepSeek-V3 cases moved (mtp_deepseek_v3_h200_ep8 TPOT p50 31.0 -> 17.3 ms, TTFT p50 162 -> 118 ms; mtp_deepseek_v3_h200_disagg TPOT p50 25.4 -> 15.0 ms). Session 17 (2026-11-28): a scenario naming its engine records that engine's prefix-caching default (summary.json `engine_prefix_caching`, simulator.cluster.engine_cache): the five that name vLLM 0.15.0 gained the record in their summaries; their requests and steps did not move (none shares a prefix). Session 18 (2026-11-28): on an AMD EPYC VM vllm_cpu's requests hashed differently from the Xeon VM's record: its engine profile is fitted at load time by scipy's nnls, whose LAPACK/BLAS last bits differ between CPUs; the fitted coefficients are now rounded to 10 significant digits (profiles.engine_time.engine_profile._portable), and its three hashes were re-recorded (headline metrics unchanged to the digits printed). Session 19 (2026-11-28): the `engine_prefix_caching` record's approximation text of a workload that shares nothing no longer says the cache is kept off so that decode steps advance in bulks (they do under a prefix cache since session 18) but why it is: the five summaries that carry it moved; no requests or steps did. Session 21 (2026-11-29): a run's energy above idle summed only the replicas of the first pool's power model object where two pools share one GPU and dtype (equal models, not one): the decode pools of disagg/disaggregated and mtp_deepseek_v3_h200_disagg were missing from the energy, J/token, power and $/Mtok figures; their summaries moved, no requests or steps did. Sizes are cut with `--set` overrides so that the whole test stays
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
     "ed0cab17cc2c5f39", "bc12d4ff6676779c", "27337438cfab197f"),
    ("scenarios/acceptance/qwen_coder_trace.yaml", ['workload.num_requests=150'],
     "c3bf2668ad629bf7", "3806da11aa7a5bb3", "cc7c6900d26edb13"),
    # added with issue 17's cross-vocabulary measured pairs (SmolLM2-135M through TLI; recorded on its branch)
    ("scenarios/acceptance/smollm2_tli_trace.yaml", ['workload.num_requests=150'],
     "debdc7c2fe1d1d31", "b366b146c3048640", "50209dba509d4df6"),
    ("scenarios/acceptance/smollm2_tli_sample.yaml", ['workload.num_requests=150'],
     "0bb3bc884f4e2386", "f83743ea407421eb", "9da236b837fd56b1"),
    ("scenarios/benchmarks/sim_speed.yaml", ['workload.num_requests=200'],
     "2954e7e5f196c4fa", "84e9af734ec48f34", "3b8ed7580216e88c"),
    ("scenarios/disagg/colocated.yaml", ['workload.num_requests=150'],
     "3a2b593f81d4a591", "9b83e3b84cef2488", "e87b5bcc686912ca"),
    ("scenarios/disagg/disaggregated.yaml", ['workload.num_requests=150'],
     "5b314d30bbc3dff4", "4de32f7def2738a2", "f13521296879a7e2"),
    ("scenarios/moe/mixtral_tp8.yaml", ['workload.num_requests=60'],
     "af0eed2304e515e4", "d8990b21eb0edce3", "a051d497809d5e5c"),
    ("scenarios/moe/mixtral_tp8_sd.yaml", ['workload.num_requests=60'],
     "6fa0bc5111627f6c", "988ff9e1badcda6e", "b8439d468d1e14d0"),
    ("scenarios/moe/qwen3_moe_ep16.yaml", ['workload.num_requests=60'],
     "6ec0740884f2bc66", "99ba325b1d4767d4", "2257d3643b85fc8c"),
    ("scenarios/moe/qwen3_moe_ep8_sd_presched.yaml", ['workload.num_requests=60'],
     "e76bce140f7217b8", "2b1c3fee78e9a4f1", "571e3d7843820c9f"),
    ("scenarios/moe/qwen3_moe_tp8x2.yaml", ['workload.num_requests=60'],
     "73cbccf11d445eae", "b51d402a1e7890d5", "02181a14bdedb15a"),
    ("scenarios/moe/qwen3_moe_tp8x2_sd.yaml", ['workload.num_requests=60'],
     "4461d56cb5a608b4", "4af0e589193d96f5", "dcf746c0acf2fd23"),
    ("scenarios/speculation/colocated_draft.yaml", ['workload.num_requests=60'],
     "789de3ad723c4a41", "cf98a05f6180b2ed", "040af058d2f5011f"),
    ("scenarios/speculation/cpu_draft.yaml", ['workload.num_requests=10'],
     "65bdd33a90eb4c78", "9347e37a7f1d0ab6", "53501541dbaf8cf6"),
    ("scenarios/speculation/eagle_dynamic_tree.yaml", ['workload.num_requests=40'],
     "7281c44979e1c814", "df097161243b29a2", "a073da59bf4b9aa4"),
    ("scenarios/speculation/layer_skip.yaml", ['workload.num_requests=80'],
     "635aa102c7e94b38", "1b9f044647f79064", "cd32c70fb38c0281"),
    ("scenarios/speculation/medusa_heads.yaml", ['workload.num_requests=40'],
     "ddc035b2d41aa644", "78be2131e97b70a0", "af6ca3c4d9b1daf2"),
    ("scenarios/speculation/multidraft.yaml", ['workload.num_requests=60'],
     "07c873e357aede89", "6e0924914088dd2c", "1bd867eb9153ab2b"),
    ("scenarios/speculation/ngram.yaml", ['workload.num_requests=80'],
     "120f2c47a81c47e7", "cfd75c43f6183741", "88d6a6d8795ed17d"),
    ("scenarios/speculation/separate_draft.yaml", ['workload.num_requests=60'],
     "5fe01871b5fb4ac8", "0eaebee7632f6ec0", "a84b7f6315f52944"),
    # session 27: vLLM 0.15.0 drafts no Sequoia tree (nor a tree from a draft model: profiles.engine_time.
    # tree_shapes), so the scenario names no release and adds no engine host time
    ("scenarios/speculation/sequoia_tree.yaml", ['workload.num_requests=30'],
     "2a279db4e5a4587a", "3fbde948e6228fea", "5aa71a9096564b89"),
    ("scenarios/speculation/smartspec_policy.yaml", ['workload.num_requests=60'],
     "1ff6eaca362a45ac", "11e2486d78f6399f", "8b29a0fd8aa76022"),
    ("scenarios/validation/cpu.yaml", [],
     "e87ed3091bbd8ef4", "74b2cbcec322e5be", "3efd7f2a59bd4106"),
    ("scenarios/validation/cpu_quick.yaml", [],
     "cf1c0e6d24142568", "f1e36c562c0ceaad", "0ec2e5d26422589f"),
    # added with the one-engine redesign (recorded on its commit, not on dc52e50)
    # issue 27 (one step loop for every pool): a disaggregated pool's step ends at start + (draft + target)
    # seconds, as a colocated one's and every bulk's do, not (start + draft) + target: last-digit changes of
    # the decode pool's step-by-step steps, which this speculating case has
    ("scenarios/disagg/eagle_tree_ep_h100_h200.yaml", ['workload.num_requests=80'],
     "e8dbc292b1fc6fa8", "af0f6b3683b219aa", "36405b76a7ab182b"),
    # added with the trace-replay example (issue: reliability and everyday use)
    ("scenarios/traces/replay.yaml", [],
     "0c174317139d8545", "68bce696bfbd318d", "fabf0d173ad9351f"),
    # added with issue 17 (the seed systems: recorded on its branch)
    # prompts capped at 1536 tokens when main began enforcing vicuna-7b's 2048-token context
    ("scenarios/speculation/batch_realign.yaml", ['workload.num_requests=60'],
     "981eef93a772fc48", "f15c575ca9adac8d", "2ad52fe5299f84a3"),
    ("scenarios/speculation/cascade_drafting.yaml", ['workload.num_requests=40'],
     "96ead34c3fa3f8a1", "38b51199640388de", "755f51272277505c"),
    ("scenarios/speculation/clover_heads.yaml", ['workload.num_requests=40'],
     "dfa8a6424d07cc51", "00f8d3c6576bab1d", "eef79aa05175ae86"),
    ("scenarios/speculation/context_dynamic_tree.yaml", ['workload.num_requests=60'],
     "5e9a986e9c7efcfc", "37a79f20a3667d17", "8e899f07e794ab35"),
    ("scenarios/speculation/falcon_semi_ar.yaml", ['workload.num_requests=40'],
     "d91a33e2c0ad116a", "d9813445357e2eb6", "42cf1cf6135a7910"),
    ("scenarios/speculation/hydra_heads.yaml", ['workload.num_requests=40'],
     "bc004bec20609ca8", "e8c54d8ed58ffdda", "e248bc60294d9102"),
    ("scenarios/speculation/koala_heads.yaml", ['workload.num_requests=40'],
     "e9571ea8ad12b4e5", "979ad7ae31470cdd", "6a48bccf14d6117b"),
    ("scenarios/speculation/magicdec_long_context.yaml", ['workload.num_requests=4', 'workload.arrival.concurrency=4'],
     "d2aca91d84f3454f", "bf146e3a66ef026d", "e9e2cb2a5ba6446e"),
    ("scenarios/speculation/multidraft_optimal.yaml", ['workload.num_requests=60'],
     "9fa115081394d1b0", "00f4291c19cc3132", "739fd4709623fa3d"),
    ("scenarios/speculation/online_drift.yaml", ['workload.num_requests=200'],
     "68824090cbdfc943", "9e1b93d1aa0c8a5e", "ad783de49b3fda9b"),
    ("scenarios/speculation/specreason.yaml", ['workload.num_requests=6'],
     "5d2261ccef406ed5", "e723d2c13947d780", "4689afd2f6347dc9"),
    ("scenarios/speculation/triforce_hierarchy.yaml", ['workload.num_requests=2', 'workload.arrival.concurrency=2'],
     "55efd3864012aff1", "8c5ff5596c98685b", "aefdd7ef7c50c55a"),
    ("scenarios/speculation/easyspec_layer_parallel.yaml", ['workload.num_requests=40'],
     "393a067a4429f960", "c816076fc147a896", "1ea768bf96bc03f5"),
    ("scenarios/speculation/ouroboros_phrases.yaml", ['workload.num_requests=40'],
     "1023e65340619482", "f269b50d8620d0f8", "a79526a1727ef5a1"),
    # added with issue 16 (trace formats, prefix caching); the summary hashes of this and every case added
    # with issues 15-17 re-recorded at the issue-18 merge: its bulks price only the steps they run, which
    # changes the latency_source shape-count diagnostic only (requests and steps byte-identical)
    ("scenarios/traces/mooncake_prefix_caching.yaml", [],
     "4f6c49cfbed8708c", "00ccffcba3b10834", "e225174662f52a0b"),
    ("scenarios/batching/nanoflow.yaml", ['workload.num_requests=64', 'workload.arrival.concurrency=64'],
     "2a210fb0967f70c3", "0f99ea8fc5639273", "e0e37458c3c77205"),
    ("scenarios/long_context/shadowkv.yaml", ['workload.num_requests=8', 'workload.arrival.concurrency=8',
                                              'workload.prompt_tokens.value=16384', 'workload.output_tokens.value=256'],
     "61fd2565fc5670a4", "4d58dedd9cf27641", "cf69109d918f6227"),
    ("scenarios/batching/early_exit.yaml", ['workload.num_requests=60'],
     "7cac7a8ed8b49b47", "7354c8b07dfeff39", "c328c1195465ac1e"),
    ("scenarios/speculation/thompson_gamma.yaml", ['workload.num_requests=40'],
     "46fdc13a5ec8ad61", "2fa04812cc083cdd", "24951ea7d3d7ddbe"),
    # added with issue 17's parallel sampling (workload.parallel_samples; one-sequence runs unchanged)
    ("scenarios/batching/parallel_sampling.yaml", ['workload.num_requests=60'],
     "4eaf230462d56057", "0dd46e3e817588a1", "5e7b296faab7cd8b"),
    ("scenarios/speculation/pearl.yaml", ['workload.num_requests=20'],
     "d475e76a3a2da909", "fc5aa177f7111a5f", "5c83b3d881307fad"),
    ("scenarios/speculation/ouroboros_reuse.yaml", ['workload.num_requests=40'],
     "094ee0b5befb4631", "aed8c71cc9ce5756", "6cae4d9be99e751d"),
    ("scenarios/speculation/rasd_retrieval.yaml", ['workload.num_requests=60'],
     "de5b2257fa97a312", "5267764225baaec1", "4a8959e1dd3e4935"),
    # added with issue 17's RaLMSpec in the DES (retrieval:; runs without it unchanged)
    ("scenarios/speculation/ralmspec.yaml", ['workload.num_requests=60'],
     "6f7bc29b91e7a1f8", "853789bf76cb190a", "2472af310fe82317"),
    # added with issue 19 (vLLM's engine profile, scheduler and draft proposer)
    ("scenarios/validation/vllm_cpu.yaml", [], "021562a840aed5a4", "0827f68c68e83d5f", "32ec93c056824d06"),
    # added with issue 31's engine drafters (EAGLE-3 heads, MTP modules; recorded on the spec-drafters branch)
    ("scenarios/speculation/eagle3_llama31_8b_h100.yaml", ['workload.num_requests=60'],
     "13cdf04b785fb67c", "2d83fbe72f06bccc", "6d4d8ea3557ffcb6"),
    # (re-recorded 2026-11-28: the scenario serves gpt-oss-120b in mxfp4 — MXFP4 experts on the measured W4A16
    # MoE table, every other weight bf16 — instead of its int4 stand-in)
    ("scenarios/speculation/eagle3_gpt_oss_120b_h100.yaml", ['workload.num_requests=60'],
     "ffd3cde1a6991afd", "eb18386414110444", "0376dd626118cedb"),
    # added 2026-11-29 (fix-eagletree): an EAGLE-3 head drafting vLLM 0.20.2's static kary token tree
    ("scenarios/speculation/eagle3_tree_llama31_8b_h100.yaml", ['workload.num_requests=60'],
     "d6454942e624f5b7", "84dd2994a17e81c0", "74b54d67e8d3d901"),
    ("scenarios/speculation/mtp_deepseek_v3_h200_ep8.yaml", ['workload.num_requests=60'],
     "ab17cc0a101b0e07", "b2afdef58c237de1", "46598aa14deb709e"),
    # (re-recorded with issue 27's one step loop: a disaggregated pool's step ends at start + (draft + target))
    ("scenarios/speculation/mtp_deepseek_v3_h200_disagg.yaml", ['workload.num_requests=60'],
     "46ceeb3ca1884e51", "5f68adb2f8928cdb", "65ff3d652491b9c4"),
    # added with issue 28 (hybrid models on H100/H200/B200, an NVFP4 DeepSeek-R1 on B200; recorded on its branch)
    ("scenarios/hybrid/qwen3_next_h100.yaml", ["workload.num_requests=60"],
     "8706740770a8b888", "977a6bae8884a014", "a80c769814a3bdff"),
    ("scenarios/hybrid/qwen3_next_h200.yaml", ["workload.num_requests=60"],
     "baa54ccedeb5781d", "033af39323af41de", "611fd3a3d0fd473c"),
    ("scenarios/hybrid/qwen3_next_b200.yaml", ["workload.num_requests=60"],
     "e6ec45168eb96019", "3ec4c5f9e09b81c5", "1acead41129ad52f"),
    ("scenarios/hybrid/nemotron_h_h100.yaml", ["workload.num_requests=60"],
     "470d81cb739830fd", "a0f5db9305bce3de", "dff2cb1e802ad5b6"),
    ("scenarios/hybrid/nemotron_h_h200.yaml", ["workload.num_requests=60"],
     "cd4260e2f292bb25", "c2dbbc1b8f5139f0", "c148061aae0fdfbc"),
    ("scenarios/hybrid/nemotron_h_b200.yaml", ["workload.num_requests=60"],
     "7815557fb7fc6227", "feae8cbbc73a2740", "e33c364025717629"),
    ("scenarios/fp4/deepseek_r1_nvfp4_b200.yaml", ["workload.num_requests=60"],
     "10b58ea27ca076f4", "e0099953846d686f", "3f5769a479c28d28"),
    # added with issue 31's suffix decoding (walks of the real proposer through the shipped session corpus)
    ("scenarios/speculation/suffix_code.yaml", ["workload.num_requests=60"],
     "bf1c7fd9ff8a7fc6", "b249765564282eb2", "0910e3b2e9410c06"),
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
