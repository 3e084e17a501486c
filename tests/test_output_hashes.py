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
re-recorded, requests and steps byte-identical. Sizes are cut with `--set` overrides so
that the whole test stays under a minute; the reproductions' data CSVs are checked in
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
     "aa5c92fb15dc491c", "c78578db31d28bf3", "4f919e8486c4d796"),
    ("scenarios/acceptance/qwen_coder_trace.yaml", ['workload.num_requests=150'],
     "9392b48d11d9b59d", "9f5cdcdc4a1c370b", "544fadbb4abe0306"),
    # added with issue 17's cross-vocabulary measured pairs (SmolLM2-135M through TLI; recorded on its branch)
    ("scenarios/acceptance/smollm2_tli_trace.yaml", ['workload.num_requests=150'],
     "14c7ecaf08affe1a", "620f8e314b181825", "9b25c2fe751167d3"),
    ("scenarios/acceptance/smollm2_tli_sample.yaml", ['workload.num_requests=150'],
     "882bfc5f326d78a7", "d2c5b9432dfc4853", "bc0cdf4712981b1a"),
    ("scenarios/benchmarks/sim_speed.yaml", ['workload.num_requests=200'],
     "3cb6f2424d39c4f0", "6a09b96e78e16c26", "46c4d5d56a9a6ab4"),
    ("scenarios/disagg/colocated.yaml", ['workload.num_requests=150'],
     "399b089040fdb4bd", "15bd5498a280d23f", "66b2ad5682e4d902"),
    ("scenarios/disagg/disaggregated.yaml", ['workload.num_requests=150'],
     "b847c7a8bb18696c", "99a4b805f1ab9d6d", "5e330594d581ed89"),
    ("scenarios/moe/mixtral_tp8.yaml", ['workload.num_requests=60'],
     "3575355e76700a55", "ccb8439c45e48ce3", "edbd2cbd2a1d8ed4"),
    ("scenarios/moe/mixtral_tp8_sd.yaml", ['workload.num_requests=60'],
     "478f14ab5ebad03d", "eb27845220fe3c2d", "c64234410f2e5e1b"),
    ("scenarios/moe/qwen3_moe_ep16.yaml", ['workload.num_requests=60'],
     "8d91b7f2b1e4d301", "81eba58edc4a90c5", "f82d67429cd39ea1"),
    ("scenarios/moe/qwen3_moe_ep8_sd_presched.yaml", ['workload.num_requests=60'],
     "5809e3fdc14da74b", "63852539d784d2f1", "bf09e7b15b1a296e"),
    ("scenarios/moe/qwen3_moe_tp8x2.yaml", ['workload.num_requests=60'],
     "73d93ac1341eceaf", "4d63171b3c15dbb1", "a278309d4219ddfb"),
    ("scenarios/moe/qwen3_moe_tp8x2_sd.yaml", ['workload.num_requests=60'],
     "e9a32bb03d9592f8", "ca18c20af617f0b3", "332b7e62445e8649"),
    ("scenarios/speculation/colocated_draft.yaml", ['workload.num_requests=60'],
     "3747ad4f4e8ca45f", "33d5c1899d47b8fb", "5ee14c5f1811244f"),
    ("scenarios/speculation/cpu_draft.yaml", ['workload.num_requests=10'],
     "9599d9883d845ed0", "6476c63b320858fd", "4b60e423f1cbf0ac"),
    ("scenarios/speculation/eagle_dynamic_tree.yaml", ['workload.num_requests=40'],
     "cc73dc27088269eb", "4cc597adc883e420", "66ce16e62736c25c"),
    ("scenarios/speculation/layer_skip.yaml", ['workload.num_requests=80'],
     "92502df29d8c88de", "6e609119584090f5", "115f6cba44029c8f"),
    ("scenarios/speculation/medusa_heads.yaml", ['workload.num_requests=40'],
     "c73f8e90629e085b", "93630bf987757283", "6d1ef6c8206ead52"),
    ("scenarios/speculation/multidraft.yaml", ['workload.num_requests=60'],
     "ed7696ea365cc420", "e8f56f8d04988771", "6aa3e9ed41679c54"),
    ("scenarios/speculation/ngram.yaml", ['workload.num_requests=80'],
     "6802ea68e2d40b4c", "723da807c138cad2", "3f517293557414dc"),
    ("scenarios/speculation/separate_draft.yaml", ['workload.num_requests=60'],
     "70041d97c2eb6892", "03f381a7d18c905f", "0346236818efb923"),
    ("scenarios/speculation/sequoia_tree.yaml", ['workload.num_requests=30'],
     "874fa62bf7f67eb3", "355ed749851bf330", "0bf78f4f5fc84069"),
    ("scenarios/speculation/smartspec_policy.yaml", ['workload.num_requests=60'],
     "8a791ae401b6337d", "de6fecbd778bb083", "7bee36034e9e2086"),
    ("scenarios/validation/cpu.yaml", [],
     "e87ed3091bbd8ef4", "74b2cbcec322e5be", "3efd7f2a59bd4106"),
    ("scenarios/validation/cpu_quick.yaml", [],
     "cf1c0e6d24142568", "f1e36c562c0ceaad", "0ec2e5d26422589f"),
    # added with the one-engine redesign (recorded on its commit, not on dc52e50)
    # issue 27 (one step loop for every pool): a disaggregated pool's step ends at start + (draft + target)
    # seconds, as a colocated one's and every bulk's do, not (start + draft) + target: last-digit changes of
    # the decode pool's step-by-step steps, which this speculating case has
    ("scenarios/disagg/eagle_tree_ep_h100_h200.yaml", ['workload.num_requests=80'],
     "8f0ae0d75512a07f", "de642e5cee817872", "6b451516d8618352"),
    # added with the trace-replay example (issue: reliability and everyday use)
    ("scenarios/traces/replay.yaml", [],
     "6c3e6c8364efce03", "646d7b1b5cfd40ac", "44df7f6c1f142566"),
    # added with issue 17 (the seed systems: recorded on its branch)
    # prompts capped at 1536 tokens when main began enforcing vicuna-7b's 2048-token context
    ("scenarios/speculation/batch_realign.yaml", ['workload.num_requests=60'],
     "2961d6ee55bed9cf", "9d5d445d10315077", "d1e47e7f82f2ebad"),
    ("scenarios/speculation/cascade_drafting.yaml", ['workload.num_requests=40'],
     "4d4d5d2d0b33f0e7", "f892e4b69ce8d146", "1cc54ed343a1e765"),
    ("scenarios/speculation/clover_heads.yaml", ['workload.num_requests=40'],
     "652e7bd23f6ce23b", "c8ada195d521265a", "51ccb956c43510ff"),
    ("scenarios/speculation/context_dynamic_tree.yaml", ['workload.num_requests=60'],
     "8325e6ba8a4f60b3", "f96422f66041876e", "87bae90175085f2e"),
    ("scenarios/speculation/falcon_semi_ar.yaml", ['workload.num_requests=40'],
     "0aea83c18a4a38d2", "30cdb2343fa95248", "7c665f19bd00c74a"),
    ("scenarios/speculation/hydra_heads.yaml", ['workload.num_requests=40'],
     "ece6e49943957133", "c37473e857a97ac1", "68bc139e058f8168"),
    ("scenarios/speculation/koala_heads.yaml", ['workload.num_requests=40'],
     "dd4144ff3ac7f6cb", "2943855a17e56a36", "2ecde11b7075dfc8"),
    ("scenarios/speculation/magicdec_long_context.yaml", ['workload.num_requests=4', 'workload.arrival.concurrency=4'],
     "5b75327f02929508", "a11276975b0071b2", "9a4403c14e8a0354"),
    ("scenarios/speculation/multidraft_optimal.yaml", ['workload.num_requests=60'],
     "3695973ebcbddbbc", "aaa328e9ff5c88c1", "85501be804f3bd88"),
    ("scenarios/speculation/online_drift.yaml", ['workload.num_requests=200'],
     "1255b0c1b393b999", "02ec64938653c761", "e1c17a46ab2181e8"),
    ("scenarios/speculation/specreason.yaml", ['workload.num_requests=6'],
     "9d315b3d02d700fc", "df4067b797915151", "2124236b17182f06"),
    ("scenarios/speculation/triforce_hierarchy.yaml", ['workload.num_requests=2', 'workload.arrival.concurrency=2'],
     "934187b5c239c447", "f3147966b7d02e8d", "b06ee8642ce6b106"),
    ("scenarios/speculation/easyspec_layer_parallel.yaml", ['workload.num_requests=40'],
     "0d22d669c0be91f1", "faaf8b30627e2a48", "3418a79ae5a05cf3"),
    ("scenarios/speculation/ouroboros_phrases.yaml", ['workload.num_requests=40'],
     "932e1edf0ea712bc", "8593dad89d820a50", "ef28f2b8ec7d4566"),
    # added with issue 16 (trace formats, prefix caching); the summary hashes of this and every case added
    # with issues 15-17 re-recorded at the issue-18 merge: its bulks price only the steps they run, which
    # changes the latency_source shape-count diagnostic only (requests and steps byte-identical)
    ("scenarios/traces/mooncake_prefix_caching.yaml", [],
     "f20f12e4954d8d28", "8544b836b84906bc", "41ff22bc7ce08fd9"),
    ("scenarios/batching/nanoflow.yaml", ['workload.num_requests=64', 'workload.arrival.concurrency=64'],
     "ca832cb0808dcb9a", "ee38310febd897a3", "7b61b24bac3982b4"),
    ("scenarios/long_context/shadowkv.yaml", ['workload.num_requests=8', 'workload.arrival.concurrency=8',
                                              'workload.prompt_tokens.value=16384', 'workload.output_tokens.value=256'],
     "0a79cf7100e31859", "3f78f506e0b180a6", "12e608012d6d9250"),
    ("scenarios/batching/early_exit.yaml", ['workload.num_requests=60'],
     "a862f982aec6c8a6", "b6efd10305cf373b", "d49ab2caeed78848"),
    ("scenarios/speculation/thompson_gamma.yaml", ['workload.num_requests=40'],
     "6f867f5968d01baf", "1317235496ba4cdb", "88d19ecb5d794f59"),
    # added with issue 17's parallel sampling (workload.parallel_samples; one-sequence runs unchanged)
    ("scenarios/batching/parallel_sampling.yaml", ['workload.num_requests=60'],
     "5c0783270383b00e", "46326fb7b04d03bf", "c966eec664f01f89"),
    ("scenarios/speculation/pearl.yaml", ['workload.num_requests=20'],
     "a3e127d1de36b341", "b37c27f36fe7752a", "836d94d0d81c7cd4"),
    ("scenarios/speculation/ouroboros_reuse.yaml", ['workload.num_requests=40'],
     "38f0e6a13c290971", "7a2154cdf322503e", "caab6311b2a4b9b2"),
    ("scenarios/speculation/rasd_retrieval.yaml", ['workload.num_requests=60'],
     "9f91d6c04db2819e", "4d44a8aae389b001", "288d2cff9859901d"),
    # added with issue 17's RaLMSpec in the DES (retrieval:; runs without it unchanged)
    ("scenarios/speculation/ralmspec.yaml", ['workload.num_requests=60'],
     "76db9e009144ac9e", "0709e4e9513a1963", "daf0e2570ac6d33e"),
    # added with issue 19 (vLLM's engine profile, scheduler and draft proposer)
    ("scenarios/validation/vllm_cpu.yaml", [], "abc07ac258f259be", "bc04b67de9d9c840", "22edd0765ab37695"),
    # added with issue 31's engine drafters (EAGLE-3 heads, MTP modules; recorded on the spec-drafters branch)
    ("scenarios/speculation/eagle3_llama31_8b_h100.yaml", ['workload.num_requests=60'],
     "37471d47c9261102", "5d2a0892480a06e6", "d7083c6ad61afe7a"),
    ("scenarios/speculation/eagle3_gpt_oss_120b_h100.yaml", ['workload.num_requests=60'],
     "4c5076f318978d05", "4028ef5409793286", "bbdc0933527f01a9"),
    ("scenarios/speculation/mtp_deepseek_v3_h200_ep8.yaml", ['workload.num_requests=60'],
     "00afb74a714b0433", "ecb85f074728ea87", "753cf3af56bfd3fb"),
    # (re-recorded with issue 27's one step loop: a disaggregated pool's step ends at start + (draft + target))
    ("scenarios/speculation/mtp_deepseek_v3_h200_disagg.yaml", ['workload.num_requests=60'],
     "8dddd7e539168203", "df3e796aab8e9e07", "e44b2ac97207718d"),
    # added with issue 28 (hybrid models on H100/H200/B200, an NVFP4 DeepSeek-R1 on B200; recorded on its branch)
    ("scenarios/hybrid/qwen3_next_h100.yaml", ["workload.num_requests=60"],
     "ab366ba8e279c992", "6edc8b8c1ff4015d", "b5871beb94e20061"),
    ("scenarios/hybrid/qwen3_next_h200.yaml", ["workload.num_requests=60"],
     "c20104fd1ea24fa3", "a616855a1f1545a3", "7d868540952b58fb"),
    ("scenarios/hybrid/qwen3_next_b200.yaml", ["workload.num_requests=60"],
     "9af96c9ae0314621", "36e534dfa920b47e", "5bcbd86be5d4934d"),
    ("scenarios/hybrid/nemotron_h_h100.yaml", ["workload.num_requests=60"],
     "29f497796002853b", "4f400124884a7db2", "7e26f94c76d79577"),
    ("scenarios/hybrid/nemotron_h_h200.yaml", ["workload.num_requests=60"],
     "f5f006f925100604", "7f94e030d1c62d7a", "c285588453f78d43"),
    ("scenarios/hybrid/nemotron_h_b200.yaml", ["workload.num_requests=60"],
     "31ab5c410bd210cb", "bfea7d134b070855", "3b6c19f3ec70e8c2"),
    ("scenarios/fp4/deepseek_r1_nvfp4_b200.yaml", ["workload.num_requests=60"],
     "ed826e4c0255491c", "a3e1aaefb9141191", "42816320faec1a3d"),
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
                "scenarios/validation/published/points.yaml", "scenarios/hardware/h20.yaml"}
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "scenarios").rglob("*.yaml")} - not_runs
    assert shipped <= hashed, sorted(shipped - hashed)
