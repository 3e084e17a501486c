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
kernels and nothing else. Sizes are cut with `--set` overrides so
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
     "aa5c92fb15dc491c", "c78578db31d28bf3", "1d74adef1cb3416a"),
    ("scenarios/acceptance/qwen_coder_trace.yaml", ['workload.num_requests=150'],
     "9392b48d11d9b59d", "9f5cdcdc4a1c370b", "cc1f863705f99a17"),
    # added with issue 17's cross-vocabulary measured pairs (SmolLM2-135M through TLI; recorded on its branch)
    ("scenarios/acceptance/smollm2_tli_trace.yaml", ['workload.num_requests=150'],
     "14c7ecaf08affe1a", "620f8e314b181825", "1c2dbb23f848edc2"),
    ("scenarios/acceptance/smollm2_tli_sample.yaml", ['workload.num_requests=150'],
     "882bfc5f326d78a7", "d2c5b9432dfc4853", "77f5b469daf9e036"),
    ("scenarios/benchmarks/sim_speed.yaml", ['workload.num_requests=200'],
     "3cb6f2424d39c4f0", "6a09b96e78e16c26", "844d2fa2f9c76237"),
    ("scenarios/disagg/colocated.yaml", ['workload.num_requests=150'],
     "399b089040fdb4bd", "15bd5498a280d23f", "65af3f0402723c5f"),
    ("scenarios/disagg/disaggregated.yaml", ['workload.num_requests=150'],
     "b847c7a8bb18696c", "99a4b805f1ab9d6d", "72bf69c55969a0ae"),
    ("scenarios/moe/mixtral_tp8.yaml", ['workload.num_requests=60'],
     "3575355e76700a55", "ccb8439c45e48ce3", "4bd0b31355bc9d77"),
    ("scenarios/moe/mixtral_tp8_sd.yaml", ['workload.num_requests=60'],
     "478f14ab5ebad03d", "eb27845220fe3c2d", "d5de5eaffb8dd524"),
    ("scenarios/moe/qwen3_moe_ep16.yaml", ['workload.num_requests=60'],
     "8d91b7f2b1e4d301", "81eba58edc4a90c5", "b026b48a8be057c4"),
    ("scenarios/moe/qwen3_moe_ep8_sd_presched.yaml", ['workload.num_requests=60'],
     "5809e3fdc14da74b", "63852539d784d2f1", "c25a317648f7580a"),
    ("scenarios/moe/qwen3_moe_tp8x2.yaml", ['workload.num_requests=60'],
     "73d93ac1341eceaf", "4d63171b3c15dbb1", "7c7d04681fc88add"),
    ("scenarios/moe/qwen3_moe_tp8x2_sd.yaml", ['workload.num_requests=60'],
     "e9a32bb03d9592f8", "ca18c20af617f0b3", "29eeabf6dd9818aa"),
    ("scenarios/speculation/colocated_draft.yaml", ['workload.num_requests=60'],
     "3747ad4f4e8ca45f", "33d5c1899d47b8fb", "5def4fea4ecf7cf6"),
    ("scenarios/speculation/cpu_draft.yaml", ['workload.num_requests=10'],
     "ea081c9c7f57a7e4", "499559ae40be6af3", "2856f28b65fcbe74"),
    ("scenarios/speculation/eagle_dynamic_tree.yaml", ['workload.num_requests=40'],
     "cc73dc27088269eb", "4cc597adc883e420", "60c05fdaa9b56cf0"),
    ("scenarios/speculation/layer_skip.yaml", ['workload.num_requests=80'],
     "92502df29d8c88de", "6e609119584090f5", "f8ab43aadae8075d"),
    ("scenarios/speculation/medusa_heads.yaml", ['workload.num_requests=40'],
     "c73f8e90629e085b", "93630bf987757283", "0c508365efd63d31"),
    ("scenarios/speculation/multidraft.yaml", ['workload.num_requests=60'],
     "ed7696ea365cc420", "e8f56f8d04988771", "df710f0059359989"),
    ("scenarios/speculation/ngram.yaml", ['workload.num_requests=80'],
     "6802ea68e2d40b4c", "723da807c138cad2", "178a22b7ac03b9ff"),
    ("scenarios/speculation/separate_draft.yaml", ['workload.num_requests=60'],
     "70041d97c2eb6892", "03f381a7d18c905f", "97e2affd64583d31"),
    ("scenarios/speculation/sequoia_tree.yaml", ['workload.num_requests=30'],
     "874fa62bf7f67eb3", "355ed749851bf330", "34ca4c35709d2533"),
    ("scenarios/speculation/smartspec_policy.yaml", ['workload.num_requests=60'],
     "8a791ae401b6337d", "de6fecbd778bb083", "f210d11a67737129"),
    ("scenarios/validation/cpu.yaml", [],
     "462dd8d8ec063c6f", "08be09322e0b33dc", "059da98c572fa203"),
    ("scenarios/validation/cpu_quick.yaml", [],
     "48dd60fc9330b0a7", "95c031cdf5cbba27", "d32e43eab86493b1"),
    # added with the one-engine redesign (recorded on its commit, not on dc52e50)
    # issue 27 (one step loop for every pool): a disaggregated pool's step ends at start + (draft + target)
    # seconds, as a colocated one's and every bulk's do, not (start + draft) + target: last-digit changes of
    # the decode pool's step-by-step steps, which this speculating case has
    ("scenarios/disagg/eagle_tree_ep_h100_h200.yaml", ['workload.num_requests=80'],
     "8f0ae0d75512a07f", "de642e5cee817872", "e698dcc5a870919b"),
    # added with the trace-replay example (issue: reliability and everyday use)
    ("scenarios/traces/replay.yaml", [],
     "6c3e6c8364efce03", "646d7b1b5cfd40ac", "47459d86336c78d2"),
    # added with issue 17 (the seed systems: recorded on its branch)
    # prompts capped at 1536 tokens when main began enforcing vicuna-7b's 2048-token context
    ("scenarios/speculation/batch_realign.yaml", ['workload.num_requests=60'],
     "2961d6ee55bed9cf", "9d5d445d10315077", "1da99fa371459e51"),
    ("scenarios/speculation/cascade_drafting.yaml", ['workload.num_requests=40'],
     "4d4d5d2d0b33f0e7", "f892e4b69ce8d146", "7917bb9d10c05496"),
    ("scenarios/speculation/clover_heads.yaml", ['workload.num_requests=40'],
     "652e7bd23f6ce23b", "c8ada195d521265a", "78c05559b44bb7ab"),
    ("scenarios/speculation/context_dynamic_tree.yaml", ['workload.num_requests=60'],
     "8325e6ba8a4f60b3", "f96422f66041876e", "9f66384f813f6a34"),
    ("scenarios/speculation/falcon_semi_ar.yaml", ['workload.num_requests=40'],
     "0aea83c18a4a38d2", "30cdb2343fa95248", "3294859d18a89e54"),
    ("scenarios/speculation/hydra_heads.yaml", ['workload.num_requests=40'],
     "ece6e49943957133", "c37473e857a97ac1", "0ae97d8e1e531313"),
    ("scenarios/speculation/koala_heads.yaml", ['workload.num_requests=40'],
     "dd4144ff3ac7f6cb", "2943855a17e56a36", "8e9fd8912dfe59d9"),
    ("scenarios/speculation/magicdec_long_context.yaml", ['workload.num_requests=4', 'workload.arrival.concurrency=4'],
     "5b75327f02929508", "a11276975b0071b2", "ce0612c375a9d3cd"),
    ("scenarios/speculation/multidraft_optimal.yaml", ['workload.num_requests=60'],
     "3695973ebcbddbbc", "aaa328e9ff5c88c1", "52018dcf8f6c17c4"),
    ("scenarios/speculation/online_drift.yaml", ['workload.num_requests=200'],
     "1255b0c1b393b999", "02ec64938653c761", "70e67bbab1728627"),
    ("scenarios/speculation/specreason.yaml", ['workload.num_requests=6'],
     "9d315b3d02d700fc", "df4067b797915151", "a0c13dfe42061e0a"),
    ("scenarios/speculation/triforce_hierarchy.yaml", ['workload.num_requests=2', 'workload.arrival.concurrency=2'],
     "934187b5c239c447", "f3147966b7d02e8d", "53f88857ef60c5ed"),
    ("scenarios/speculation/easyspec_layer_parallel.yaml", ['workload.num_requests=40'],
     "0d22d669c0be91f1", "faaf8b30627e2a48", "0f4a20514f26f089"),
    ("scenarios/speculation/ouroboros_phrases.yaml", ['workload.num_requests=40'],
     "932e1edf0ea712bc", "8593dad89d820a50", "1d7646432140c278"),
    # added with issue 16 (trace formats, prefix caching); the summary hashes of this and every case added
    # with issues 15-17 re-recorded at the issue-18 merge: its bulks price only the steps they run, which
    # changes the latency_source shape-count diagnostic only (requests and steps byte-identical)
    ("scenarios/traces/mooncake_prefix_caching.yaml", [],
     "f20f12e4954d8d28", "8544b836b84906bc", "df7c6bf8cc294d31"),
    ("scenarios/batching/nanoflow.yaml", ['workload.num_requests=64', 'workload.arrival.concurrency=64'],
     "ca832cb0808dcb9a", "ee38310febd897a3", "f6ba1199f7447799"),
    ("scenarios/long_context/shadowkv.yaml", ['workload.num_requests=8', 'workload.arrival.concurrency=8',
                                              'workload.prompt_tokens.value=16384', 'workload.output_tokens.value=256'],
     "0a79cf7100e31859", "3f78f506e0b180a6", "1351042c2db5bc14"),
    ("scenarios/batching/early_exit.yaml", ['workload.num_requests=60'],
     "a862f982aec6c8a6", "b6efd10305cf373b", "2ba7e7261ec6074e"),
    ("scenarios/speculation/thompson_gamma.yaml", ['workload.num_requests=40'],
     "6f867f5968d01baf", "1317235496ba4cdb", "8bfaef522a0c13b3"),
    # added with issue 17's parallel sampling (workload.parallel_samples; one-sequence runs unchanged)
    ("scenarios/batching/parallel_sampling.yaml", ['workload.num_requests=60'],
     "5c0783270383b00e", "46326fb7b04d03bf", "a05a2e0db1122667"),
    ("scenarios/speculation/pearl.yaml", ['workload.num_requests=20'],
     "a3e127d1de36b341", "b37c27f36fe7752a", "2de120794d7fde05"),
    ("scenarios/speculation/ouroboros_reuse.yaml", ['workload.num_requests=40'],
     "38f0e6a13c290971", "7a2154cdf322503e", "650425fd4d74af4a"),
    ("scenarios/speculation/rasd_retrieval.yaml", ['workload.num_requests=60'],
     "9f91d6c04db2819e", "4d44a8aae389b001", "afebf6d28e31f4b9"),
    # added with issue 17's RaLMSpec in the DES (retrieval:; runs without it unchanged)
    ("scenarios/speculation/ralmspec.yaml", ['workload.num_requests=60'],
     "76db9e009144ac9e", "0709e4e9513a1963", "cd01f4ed737e73bc"),
    # added with issue 19 (vLLM's engine profile, scheduler and draft proposer)
    ("scenarios/validation/vllm_cpu.yaml", [], "abc07ac258f259be", "bc04b67de9d9c840", "a4a4e733c7a46d95"),
    # added with issue 31's engine drafters (EAGLE-3 heads, MTP modules; recorded on the spec-drafters branch)
    ("scenarios/speculation/eagle3_llama31_8b_h100.yaml", ['workload.num_requests=60'],
     "37471d47c9261102", "5d2a0892480a06e6", "a4a99cbbc61fa17a"),
    ("scenarios/speculation/eagle3_gpt_oss_120b_h100.yaml", ['workload.num_requests=60'],
     "4c5076f318978d05", "4028ef5409793286", "d059721b3083b959"),
    ("scenarios/speculation/mtp_deepseek_v3_h200_ep8.yaml", ['workload.num_requests=60'],
     "00afb74a714b0433", "ecb85f074728ea87", "447a0e4e7f513d39"),
    # (re-recorded with issue 27's one step loop: a disaggregated pool's step ends at start + (draft + target))
    ("scenarios/speculation/mtp_deepseek_v3_h200_disagg.yaml", ['workload.num_requests=60'],
     "8dddd7e539168203", "df3e796aab8e9e07", "d23556952c591c6f"),
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
