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
the H100/H200 disaggregated case's summary. Sizes are cut with `--set` overrides so that the whole test stays
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
     "3e8748666b20cce7", "09616401ebe46ee7", "71f414a5aa10c972"),
    ("scenarios/acceptance/qwen_coder_trace.yaml", ['workload.num_requests=150'],
     "3ca8582d73490801", "0de0cccd7fdabad2", "e9ce7f4e94545a1f"),
    # added with issue 17's cross-vocabulary measured pairs (SmolLM2-135M through TLI; recorded on its branch)
    ("scenarios/acceptance/smollm2_tli_trace.yaml", ['workload.num_requests=150'],
     "debdc7c2fe1d1d31", "5afbf4ec5ceee1ac", "f560c5b1f47cb3b9"),
    ("scenarios/acceptance/smollm2_tli_sample.yaml", ['workload.num_requests=150'],
     "0bb3bc884f4e2386", "ea48fb8c2a94cf07", "0aa43576b2c4101a"),
    ("scenarios/benchmarks/sim_speed.yaml", ['workload.num_requests=200'],
     "2954e7e5f196c4fa", "1129aff3a81dcb66", "214ce3bed47c6ef4"),
    ("scenarios/disagg/colocated.yaml", ['workload.num_requests=150'],
     "3a2b593f81d4a591", "30aa4ed4bb96ad4a", "f01fd9cdbab98272"),
    ("scenarios/disagg/disaggregated.yaml", ['workload.num_requests=150'],
     "5b314d30bbc3dff4", "c85ff417146a2983", "bedc828c4ae10c98"),
    ("scenarios/moe/mixtral_tp8.yaml", ['workload.num_requests=60'],
     "af0eed2304e515e4", "e254816e0797dcb7", "cffda0e4384f3f27"),
    ("scenarios/moe/mixtral_tp8_sd.yaml", ['workload.num_requests=60'],
     "6fa0bc5111627f6c", "321baf2c4e16ad58", "413f451bc8b2f455"),
    ("scenarios/moe/qwen3_moe_ep16.yaml", ['workload.num_requests=60'],
     "6ec0740884f2bc66", "d771d3b93e596a84", "8d78510051077a58"),
    ("scenarios/moe/qwen3_moe_ep8_sd_presched.yaml", ['workload.num_requests=60'],
     "e76bce140f7217b8", "cecda51460858d1f", "72db6b5aed391567"),
    ("scenarios/moe/qwen3_moe_tp8x2.yaml", ['workload.num_requests=60'],
     "73cbccf11d445eae", "fbb155b497ef3a88", "036f853fbe691d06"),
    ("scenarios/moe/qwen3_moe_tp8x2_sd.yaml", ['workload.num_requests=60'],
     "4461d56cb5a608b4", "3826d0791b62f7ac", "e8961ba3f61f4549"),
    ("scenarios/speculation/colocated_draft.yaml", ['workload.num_requests=60'],
     "d88105f559cd8c51", "d741bdefac0c06d8", "9010fd5413644221"),
    ("scenarios/speculation/cpu_draft.yaml", ['workload.num_requests=10'],
     "65bdd33a90eb4c78", "1e8559fc89cc53eb", "c85fec8c7b6054b0"),
    ("scenarios/speculation/eagle_dynamic_tree.yaml", ['workload.num_requests=40'],
     "7281c44979e1c814", "059cce9ae4f499e7", "4dde371bf42f923d"),
    ("scenarios/speculation/layer_skip.yaml", ['workload.num_requests=80'],
     "635aa102c7e94b38", "1046e90fcf6b6ca6", "a8af5fa85f92b92d"),
    ("scenarios/speculation/medusa_heads.yaml", ['workload.num_requests=40'],
     "ddc035b2d41aa644", "25b7c6fda84f7228", "09acda28b640d298"),
    ("scenarios/speculation/multidraft.yaml", ['workload.num_requests=60'],
     "9e73d9f110ba2d9f", "dc8b5602f788fcf0", "e6e16c94bd8b1967"),
    ("scenarios/speculation/ngram.yaml", ['workload.num_requests=80'],
     "84c63ee33604734a", "d580d15d5697f3e3", "080ea9c0b45a8221"),
    ("scenarios/speculation/separate_draft.yaml", ['workload.num_requests=60'],
     "9243f8b598749aa3", "9281f5627b998ecd", "f4ea40ad2c9d8c9d"),
    ("scenarios/speculation/sequoia_tree.yaml", ['workload.num_requests=30'],
     "12d346409134ad8d", "08a3cb421ca00408", "15c41e41b7f124bd"),
    ("scenarios/speculation/smartspec_policy.yaml", ['workload.num_requests=60'],
     "5ba313677b945d81", "bbfd3f5ff095bb90", "4bb498fbb3da8563"),
    ("scenarios/validation/cpu.yaml", [],
     "e87ed3091bbd8ef4", "74b2cbcec322e5be", "3efd7f2a59bd4106"),
    ("scenarios/validation/cpu_quick.yaml", [],
     "cf1c0e6d24142568", "f1e36c562c0ceaad", "0ec2e5d26422589f"),
    # added with the one-engine redesign (recorded on its commit, not on dc52e50)
    # issue 27 (one step loop for every pool): a disaggregated pool's step ends at start + (draft + target)
    # seconds, as a colocated one's and every bulk's do, not (start + draft) + target: last-digit changes of
    # the decode pool's step-by-step steps, which this speculating case has
    ("scenarios/disagg/eagle_tree_ep_h100_h200.yaml", ['workload.num_requests=80'],
     "e8dbc292b1fc6fa8", "a080a60d95342e1f", "502882da008722fb"),
    # added with the trace-replay example (issue: reliability and everyday use)
    ("scenarios/traces/replay.yaml", [],
     "a95cd515f279f0cb", "5001b0c1fd1d152e", "34566016caac3fbb"),
    # added with issue 17 (the seed systems: recorded on its branch)
    # prompts capped at 1536 tokens when main began enforcing vicuna-7b's 2048-token context
    ("scenarios/speculation/batch_realign.yaml", ['workload.num_requests=60'],
     "3dda0a5870dbdd2b", "7d22386528cf569b", "c789ed0f82e8a0c3"),
    ("scenarios/speculation/cascade_drafting.yaml", ['workload.num_requests=40'],
     "96ead34c3fa3f8a1", "fb80c27733fac886", "3febf6da82020adb"),
    ("scenarios/speculation/clover_heads.yaml", ['workload.num_requests=40'],
     "dfa8a6424d07cc51", "a582ab9306c182f0", "0bc3e63aebca5fa1"),
    ("scenarios/speculation/context_dynamic_tree.yaml", ['workload.num_requests=60'],
     "5e9a986e9c7efcfc", "7876c9f1408b21b6", "c242427b5074ed8b"),
    ("scenarios/speculation/falcon_semi_ar.yaml", ['workload.num_requests=40'],
     "d91a33e2c0ad116a", "dda0933af574ecee", "ebfd1c03cd4d80ad"),
    ("scenarios/speculation/hydra_heads.yaml", ['workload.num_requests=40'],
     "bc004bec20609ca8", "0bcdc69478a89d43", "2a48cef65a7de92e"),
    ("scenarios/speculation/koala_heads.yaml", ['workload.num_requests=40'],
     "e9571ea8ad12b4e5", "a7d3fd12b76701aa", "8dde7ed2890d0902"),
    ("scenarios/speculation/magicdec_long_context.yaml", ['workload.num_requests=4', 'workload.arrival.concurrency=4'],
     "d2aca91d84f3454f", "a9ada1abee39cc3d", "ef61bdcd870a4240"),
    ("scenarios/speculation/multidraft_optimal.yaml", ['workload.num_requests=60'],
     "e20f1aac3a602aef", "d74acf4844700901", "14b1855f5c4ad8e9"),
    ("scenarios/speculation/online_drift.yaml", ['workload.num_requests=200'],
     "068dfe013102bbdf", "667da0e3978e15d4", "bbdc1506003dddea"),
    ("scenarios/speculation/specreason.yaml", ['workload.num_requests=6'],
     "5d2261ccef406ed5", "07eaf4cd2fa5ea50", "499e321df0a9928d"),
    ("scenarios/speculation/triforce_hierarchy.yaml", ['workload.num_requests=2', 'workload.arrival.concurrency=2'],
     "55efd3864012aff1", "d651165f5b71fa28", "54a5c702eb352c83"),
    ("scenarios/speculation/easyspec_layer_parallel.yaml", ['workload.num_requests=40'],
     "393a067a4429f960", "a5f3d838973de7f8", "097300d9397cf2c2"),
    ("scenarios/speculation/ouroboros_phrases.yaml", ['workload.num_requests=40'],
     "9bc861cea65eda3d", "28a57a5850ef2446", "48fcdefc4053e516"),
    # added with issue 16 (trace formats, prefix caching); the summary hashes of this and every case added
    # with issues 15-17 re-recorded at the issue-18 merge: its bulks price only the steps they run, which
    # changes the latency_source shape-count diagnostic only (requests and steps byte-identical)
    ("scenarios/traces/mooncake_prefix_caching.yaml", [],
     "4f6c49cfbed8708c", "6ce1b862d6f9bd1f", "b7c2932393dfca02"),
    ("scenarios/batching/nanoflow.yaml", ['workload.num_requests=64', 'workload.arrival.concurrency=64'],
     "2a210fb0967f70c3", "ac261b02c89bb6ba", "d796f9cb5bf89067"),
    ("scenarios/long_context/shadowkv.yaml", ['workload.num_requests=8', 'workload.arrival.concurrency=8',
                                              'workload.prompt_tokens.value=16384', 'workload.output_tokens.value=256'],
     "61fd2565fc5670a4", "0159f0c915320816", "cffa1b1d9887a030"),
    ("scenarios/batching/early_exit.yaml", ['workload.num_requests=60'],
     "7cac7a8ed8b49b47", "c6e672e0b6d547dd", "c554c4a8a8303aa9"),
    ("scenarios/speculation/thompson_gamma.yaml", ['workload.num_requests=40'],
     "46fdc13a5ec8ad61", "66866653a31f4e6f", "425b331dbfe50b9a"),
    # added with issue 17's parallel sampling (workload.parallel_samples; one-sequence runs unchanged)
    ("scenarios/batching/parallel_sampling.yaml", ['workload.num_requests=60'],
     "4eaf230462d56057", "b00e896c4e27822c", "e7575e2e8bb461ef"),
    ("scenarios/speculation/pearl.yaml", ['workload.num_requests=20'],
     "4889505974da84cd", "e7d4b395a4ddc778", "639c063d530d3fa2"),
    ("scenarios/speculation/ouroboros_reuse.yaml", ['workload.num_requests=40'],
     "8f93e7b0c2223475", "d18a723d4daf0d22", "d21121b876c5453b"),
    ("scenarios/speculation/rasd_retrieval.yaml", ['workload.num_requests=60'],
     "de5b2257fa97a312", "3696b31ad5f3cfd0", "9eba5f559390b13f"),
    # added with issue 17's RaLMSpec in the DES (retrieval:; runs without it unchanged)
    ("scenarios/speculation/ralmspec.yaml", ['workload.num_requests=60'],
     "6f7bc29b91e7a1f8", "41379c47db02990d", "a1920b5d6a2ed05c"),
    # added with issue 19 (vLLM's engine profile, scheduler and draft proposer)
    ("scenarios/validation/vllm_cpu.yaml", [], "abc07ac258f259be", "bc04b67de9d9c840", "686d1f92a1f45e24"),
    # added with issue 31's engine drafters (EAGLE-3 heads, MTP modules; recorded on the spec-drafters branch)
    ("scenarios/speculation/eagle3_llama31_8b_h100.yaml", ['workload.num_requests=60'],
     "13cdf04b785fb67c", "79f8ddb037e616f2", "d53c989173d6acea"),
    # (re-recorded 2026-11-28: the scenario serves gpt-oss-120b in mxfp4 — MXFP4 experts on the measured W4A16
    # MoE table, every other weight bf16 — instead of its int4 stand-in)
    ("scenarios/speculation/eagle3_gpt_oss_120b_h100.yaml", ['workload.num_requests=60'],
     "2fb58813c33ac37e", "8ae583cde80b998d", "878bbfc7e3f6c287"),
    ("scenarios/speculation/mtp_deepseek_v3_h200_ep8.yaml", ['workload.num_requests=60'],
     "2a60d847a9deef7b", "e5dc41147605d8f1", "a87e31e1fc89b2dc"),
    # (re-recorded with issue 27's one step loop: a disaggregated pool's step ends at start + (draft + target))
    ("scenarios/speculation/mtp_deepseek_v3_h200_disagg.yaml", ['workload.num_requests=60'],
     "b910e565986c0dd1", "639905cc9874f399", "c70c105e831a7dd9"),
    # added with issue 28 (hybrid models on H100/H200/B200, an NVFP4 DeepSeek-R1 on B200; recorded on its branch)
    ("scenarios/hybrid/qwen3_next_h100.yaml", ["workload.num_requests=60"],
     "8706740770a8b888", "06af5fcf193c155d", "0639f9248797066e"),
    ("scenarios/hybrid/qwen3_next_h200.yaml", ["workload.num_requests=60"],
     "baa54ccedeb5781d", "129da281c62594cf", "7edb065bed3da335"),
    ("scenarios/hybrid/qwen3_next_b200.yaml", ["workload.num_requests=60"],
     "e6ec45168eb96019", "b56afb9accc7df06", "5a8d91e491b89b98"),
    ("scenarios/hybrid/nemotron_h_h100.yaml", ["workload.num_requests=60"],
     "470d81cb739830fd", "481c34ec354b85f6", "0bebed74bee44609"),
    ("scenarios/hybrid/nemotron_h_h200.yaml", ["workload.num_requests=60"],
     "cd4260e2f292bb25", "8d1072e6e146561d", "0e1c2d6560cd36dd"),
    ("scenarios/hybrid/nemotron_h_b200.yaml", ["workload.num_requests=60"],
     "7815557fb7fc6227", "2b5c5b67c11f42ce", "69b112608a82a588"),
    ("scenarios/fp4/deepseek_r1_nvfp4_b200.yaml", ["workload.num_requests=60"],
     "1bcf5415cbc5d391", "7899162e1367424b", "ff1a54a105530dd9"),
    # added with issue 31's suffix decoding (walks of the real proposer through the shipped session corpus)
    ("scenarios/speculation/suffix_code.yaml", ["workload.num_requests=60"],
     "cd89f6ae44ed19e4", "5d9bbfd2c895cd73", "d618752e4fa0a8cc"),
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
