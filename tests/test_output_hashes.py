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
     "e0d10e52e60617c4", "efeb2bddb3e33cdc", "cd49d41aaf56bc5c"),
    ("scenarios/acceptance/qwen_coder_trace.yaml", ['workload.num_requests=150'],
     "a5d1e4e15fbd78bf", "85d2bf8ce1f008cd", "359a25b708753f49"),
    # added with issue 17's cross-vocabulary measured pairs (SmolLM2-135M through TLI; recorded on its branch)
    ("scenarios/acceptance/smollm2_tli_trace.yaml", ['workload.num_requests=150'],
     "26b5d1dbde4c399d", "7f73a0adc8e993e0", "e9cacf36d392842e"),
    ("scenarios/acceptance/smollm2_tli_sample.yaml", ['workload.num_requests=150'],
     "9854ca46f8c45e8f", "92c9cbfdaab18934", "be158fde33c58c79"),
    ("scenarios/benchmarks/sim_speed.yaml", ['workload.num_requests=200'],
     "3cb6f2424d39c4f0", "6a09b96e78e16c26", "844d2fa2f9c76237"),
    ("scenarios/disagg/colocated.yaml", ['workload.num_requests=150'],
     "399b089040fdb4bd", "15bd5498a280d23f", "65af3f0402723c5f"),
    ("scenarios/disagg/disaggregated.yaml", ['workload.num_requests=150'],
     "b847c7a8bb18696c", "99a4b805f1ab9d6d", "72bf69c55969a0ae"),
    ("scenarios/moe/mixtral_tp8.yaml", ['workload.num_requests=60'],
     "3575355e76700a55", "ccb8439c45e48ce3", "4bd0b31355bc9d77"),
    ("scenarios/moe/mixtral_tp8_sd.yaml", ['workload.num_requests=60'],
     "26662610aa9b2276", "889e7312c65f08da", "1a94c088fce4a326"),
    ("scenarios/moe/qwen3_moe_ep16.yaml", ['workload.num_requests=60'],
     "8d91b7f2b1e4d301", "81eba58edc4a90c5", "b026b48a8be057c4"),
    ("scenarios/moe/qwen3_moe_ep8_sd_presched.yaml", ['workload.num_requests=60'],
     "fb32f21620304538", "247763bfe4cf54a4", "e0dc2e99732c26b8"),
    ("scenarios/moe/qwen3_moe_tp8x2.yaml", ['workload.num_requests=60'],
     "73d93ac1341eceaf", "4d63171b3c15dbb1", "7c7d04681fc88add"),
    ("scenarios/moe/qwen3_moe_tp8x2_sd.yaml", ['workload.num_requests=60'],
     "177a2eaf383653be", "8fbee8ea979cca90", "d861a482af9e3384"),
    ("scenarios/speculation/colocated_draft.yaml", ['workload.num_requests=60'],
     "e887fac3ca29c711", "3babf639f9eb4f1a", "69785985c943a79a"),
    ("scenarios/speculation/cpu_draft.yaml", ['workload.num_requests=10'],
     "91a6ab46665d96a4", "02262b819067b333", "e43f28ccd7bbb2fc"),
    ("scenarios/speculation/eagle_dynamic_tree.yaml", ['workload.num_requests=40'],
     "a5884d31e34d571a", "5eaf5ab02b5a3d5f", "3f25643e97928297"),
    ("scenarios/speculation/layer_skip.yaml", ['workload.num_requests=80'],
     "a9c4658b4e999510", "ca22b39bce28ad4f", "ceb78a2421c62686"),
    ("scenarios/speculation/medusa_heads.yaml", ['workload.num_requests=40'],
     "6cc373d391b2af38", "2dfb08df2e1f137b", "f8f0260859caf0cf"),
    ("scenarios/speculation/multidraft.yaml", ['workload.num_requests=60'],
     "da7cae093e8a0cd4", "48e69080ae0bd5fa", "56f2618b676b2988"),
    ("scenarios/speculation/ngram.yaml", ['workload.num_requests=80'],
     "bf2d1e6b51a4fa60", "97cf169859e2a3c7", "8164fad71309a6da"),
    ("scenarios/speculation/separate_draft.yaml", ['workload.num_requests=60'],
     "639471a6994d87e2", "7a92c86c11987d7b", "16a5d36afa174985"),
    ("scenarios/speculation/sequoia_tree.yaml", ['workload.num_requests=30'],
     "8d956277dfb36063", "44c6bb41db4ff144", "c9d035aed39d6587"),
    ("scenarios/speculation/smartspec_policy.yaml", ['workload.num_requests=60'],
     "1cb21b3905edc68b", "08d7b4eb688a7d3a", "b8ce28ab919c0f12"),
    ("scenarios/validation/cpu.yaml", [],
     "462dd8d8ec063c6f", "08be09322e0b33dc", "059da98c572fa203"),
    ("scenarios/validation/cpu_quick.yaml", [],
     "48dd60fc9330b0a7", "95c031cdf5cbba27", "d32e43eab86493b1"),
    # added with the one-engine redesign (recorded on its commit, not on dc52e50)
    # issue 27 (one step loop for every pool): a disaggregated pool's step ends at start + (draft + target)
    # seconds, as a colocated one's and every bulk's do, not (start + draft) + target: last-digit changes of
    # the decode pool's step-by-step steps, which this speculating case has
    ("scenarios/disagg/eagle_tree_ep_h100_h200.yaml", ['workload.num_requests=80'],
     "726619ee64930e26", "1355360cc64dea02", "fccf149137e42b20"),
    # added with the trace-replay example (issue: reliability and everyday use)
    ("scenarios/traces/replay.yaml", [],
     "f2bf25d2409546d2", "6a8ba7a9bf814771", "8a796f9200d64dba"),
    # added with issue 17 (the seed systems: recorded on its branch)
    # prompts capped at 1536 tokens when main began enforcing vicuna-7b's 2048-token context
    ("scenarios/speculation/batch_realign.yaml", ['workload.num_requests=60'],
     "3715a4f622ea04da", "9b73ace7933587df", "09fcd0c57b27a0f8"),
    ("scenarios/speculation/cascade_drafting.yaml", ['workload.num_requests=40'],
     "a9474f2b2c971a87", "d2b8561ecb7028c3", "20ee223b19b98036"),
    ("scenarios/speculation/clover_heads.yaml", ['workload.num_requests=40'],
     "c704969392cfe927", "481a3d9669bd3498", "7629b84120e0ae0b"),
    ("scenarios/speculation/context_dynamic_tree.yaml", ['workload.num_requests=60'],
     "8edd7ce0c7e2fc50", "c548ea4d3506a984", "39da16cd7f23a84d"),
    ("scenarios/speculation/falcon_semi_ar.yaml", ['workload.num_requests=40'],
     "9610f432873d55cf", "17062d69d805bd65", "c0a0b196a97b34fe"),
    ("scenarios/speculation/hydra_heads.yaml", ['workload.num_requests=40'],
     "865eee2bfe47bf90", "36b3e659ec59ad30", "90303d65b5e333b7"),
    ("scenarios/speculation/koala_heads.yaml", ['workload.num_requests=40'],
     "6e91b723733a5969", "6f645d9017dea4ab", "04739eb483a9f5d8"),
    ("scenarios/speculation/magicdec_long_context.yaml", ['workload.num_requests=4', 'workload.arrival.concurrency=4'],
     "3b5dab9de8c395ff", "add23808ffbe81f5", "9f02d230dcdd01b8"),
    ("scenarios/speculation/multidraft_optimal.yaml", ['workload.num_requests=60'],
     "839aa9f9a5db1aae", "b535e5f0cb276231", "c4e8013e8ca53c6f"),
    ("scenarios/speculation/online_drift.yaml", ['workload.num_requests=200'],
     "bf8980e18c969479", "d90e2ebce3f7960d", "dd78a321f78dc438"),
    ("scenarios/speculation/specreason.yaml", ['workload.num_requests=6'],
     "ec2ccfffae37787b", "d0a1b97e0818bcff", "3172da5d8ec88614"),
    ("scenarios/speculation/triforce_hierarchy.yaml", ['workload.num_requests=2', 'workload.arrival.concurrency=2'],
     "4c802ffbc6bbcdd6", "e72522f635d02622", "04254fd2a9adc197"),
    ("scenarios/speculation/easyspec_layer_parallel.yaml", ['workload.num_requests=40'],
     "041db05d79c83b77", "1465a5b26718c686", "be4a5685d6bbf1a9"),
    ("scenarios/speculation/ouroboros_phrases.yaml", ['workload.num_requests=40'],
     "79900aa9c58089a0", "817ef0eec40d95b7", "29e7e921c2fc40df"),
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
     "d55d2783d3261283", "f0e9845c0f465450", "56539e5c2573762b"),
    # added with issue 17's parallel sampling (workload.parallel_samples; one-sequence runs unchanged)
    ("scenarios/batching/parallel_sampling.yaml", ['workload.num_requests=60'],
     "5c0783270383b00e", "46326fb7b04d03bf", "a05a2e0db1122667"),
    ("scenarios/speculation/pearl.yaml", ['workload.num_requests=20'],
     "512674770822d9e9", "9655a40599dc937f", "52211c9d9286b04f"),
    ("scenarios/speculation/ouroboros_reuse.yaml", ['workload.num_requests=40'],
     "ee723fbebde84970", "1ac7e347da6deeb4", "0a929a53fcda7f34"),
    ("scenarios/speculation/rasd_retrieval.yaml", ['workload.num_requests=60'],
     "b5f0bcfc99f64fff", "45d47931c8839141", "780391c69ecd87e5"),
    # added with issue 17's RaLMSpec in the DES (retrieval:; runs without it unchanged)
    ("scenarios/speculation/ralmspec.yaml", ['workload.num_requests=60'],
     "76db9e009144ac9e", "0709e4e9513a1963", "cd01f4ed737e73bc"),
    # added with issue 19 (vLLM's engine profile, scheduler and draft proposer)
    ("scenarios/validation/vllm_cpu.yaml", [], "abc07ac258f259be", "bc04b67de9d9c840", "a4a4e733c7a46d95"),
    # added with issue 31's engine drafters (EAGLE-3 heads, MTP modules; recorded on the spec-drafters branch)
    ("scenarios/speculation/eagle3_llama31_8b_h100.yaml", ['workload.num_requests=60'],
     "ea54fcf5bf87ce6c", "7f8c3f14b79fd763", "f27099d0a8ffefe4"),
    ("scenarios/speculation/eagle3_gpt_oss_120b_h100.yaml", ['workload.num_requests=60'],
     "58cdd6000b83939f", "4b345fc4691b1b17", "e65e1d1a7f397c6e"),
    ("scenarios/speculation/mtp_deepseek_v3_h200_ep8.yaml", ['workload.num_requests=60'],
     "f8984e0a3cff1d15", "43ac373d27f0ee47", "b68ec70ed6705e1d"),
    # (re-recorded with issue 27's one step loop: a disaggregated pool's step ends at start + (draft + target))
    ("scenarios/speculation/mtp_deepseek_v3_h200_disagg.yaml", ['workload.num_requests=60'],
     "3a9bebbc7ffc99c5", "34d950e9fd575bc7", "6fea2a702e18ff17"),
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
