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
which changed the same counts of the two disaggregated cases again; requests and steps byte-identical. Issue 26
(`cluster.engine`) re-recorded every GPU case on purpose: batches are padded up to the engine's CUDA-graph
capture sizes and the padding is paid; steps beyond the captured sizes run eagerly (max of kernel and issue
time instead of a per-layer piecewise gap); host time runs at the default host's speed (the H100 server's
host, × 1.164 the development VM's); the summary's engine_time entry describes the graph policy and host.
The two local-CPU validation cases are unchanged; vllm_cpu (an engine profile) moved by 1 ulp in 6 mixed
steps (≤ 4.4e-16 s) and its summary gained the same engine_time fields. Sizes are cut with `--set` overrides so
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
     "a7fda14c138a8986", "b4435819e3dd79d9", "06506942b9173548"),
    ("scenarios/acceptance/qwen_coder_trace.yaml", ['workload.num_requests=150'],
     "75546301c65fcb40", "7b5d568ee0c51b49", "781da36c13e87452"),
    # added with issue 17's cross-vocabulary measured pairs (SmolLM2-135M through TLI; recorded on its branch)
    ("scenarios/acceptance/smollm2_tli_trace.yaml", ['workload.num_requests=150'],
     "cca90e3a5d17d183", "b6226de90a519fbb", "5164fb5c7e9f559b"),
    ("scenarios/acceptance/smollm2_tli_sample.yaml", ['workload.num_requests=150'],
     "2342e6dc52bcc337", "cace978fd1d8d1ec", "184f87026b38fdbb"),
    ("scenarios/benchmarks/sim_speed.yaml", ['workload.num_requests=200'],
     "2954e7e5f196c4fa", "1129aff3a81dcb66", "14ab94b80505a021"),
    ("scenarios/disagg/colocated.yaml", ['workload.num_requests=150'],
     "3a2b593f81d4a591", "30aa4ed4bb96ad4a", "45a31591727d9917"),
    ("scenarios/disagg/disaggregated.yaml", ['workload.num_requests=150'],
     "5b314d30bbc3dff4", "c85ff417146a2983", "ee4e7f569bee11e0"),
    ("scenarios/moe/mixtral_tp8.yaml", ['workload.num_requests=60'],
     "af0eed2304e515e4", "e254816e0797dcb7", "b34b143c630d91b4"),
    ("scenarios/moe/mixtral_tp8_sd.yaml", ['workload.num_requests=60'],
     "2b5bd6670fa0cf99", "408d00adff90802f", "ed8a81151fec6de0"),
    ("scenarios/moe/qwen3_moe_ep16.yaml", ['workload.num_requests=60'],
     "6ec0740884f2bc66", "d771d3b93e596a84", "a8b17458fea4fe1c"),
    ("scenarios/moe/qwen3_moe_ep8_sd_presched.yaml", ['workload.num_requests=60'],
     "b98255e1745009c6", "17a7c8c0337fc564", "163ed9f714129340"),
    ("scenarios/moe/qwen3_moe_tp8x2.yaml", ['workload.num_requests=60'],
     "73cbccf11d445eae", "fbb155b497ef3a88", "ef3cbb9149cadd97"),
    ("scenarios/moe/qwen3_moe_tp8x2_sd.yaml", ['workload.num_requests=60'],
     "70d943830a18f80b", "5149e6435fa5d879", "3e7e479dd172c5c2"),
    ("scenarios/speculation/colocated_draft.yaml", ['workload.num_requests=60'],
     "4818bb323ed0c69b", "f476e268db1b009c", "7ef090f54c6c9d68"),
    ("scenarios/speculation/cpu_draft.yaml", ['workload.num_requests=10'],
     "80c3e7fefb763b8e", "8a18e0029a97d7a8", "df7a8480503db22d"),
    ("scenarios/speculation/eagle_dynamic_tree.yaml", ['workload.num_requests=40'],
     "39c88bcd3ccbcc5a", "4f642215eb571bee", "afb3d067435b9644"),
    ("scenarios/speculation/layer_skip.yaml", ['workload.num_requests=80'],
     "405aff733904e110", "ceef3aabc825b503", "9b4e00cb6d05521f"),
    ("scenarios/speculation/medusa_heads.yaml", ['workload.num_requests=40'],
     "f5122abd4c0eac6e", "9a8e7ff9c247be35", "55edc5ae6717fd4f"),
    ("scenarios/speculation/multidraft.yaml", ['workload.num_requests=60'],
     "73ff99fe92a1d8f3", "f1b5f1b4025a74eb", "c7b946b3b9701806"),
    ("scenarios/speculation/ngram.yaml", ['workload.num_requests=80'],
     "2fd495260ab2914e", "53ee08f85398425c", "692d5bd88d3275df"),
    ("scenarios/speculation/separate_draft.yaml", ['workload.num_requests=60'],
     "4a3d4e36e1f20916", "bef2653b37e5f62d", "9e85d02d00dd2f14"),
    ("scenarios/speculation/sequoia_tree.yaml", ['workload.num_requests=30'],
     "13867beb5abcdd0f", "5c663c3b00fd88ac", "7656abfa780fc119"),
    ("scenarios/speculation/smartspec_policy.yaml", ['workload.num_requests=60'],
     "7c7471996c6af46d", "2e06999c894cdf8f", "6a722b6539e15e0f"),
    ("scenarios/validation/cpu.yaml", [],
     "462dd8d8ec063c6f", "08be09322e0b33dc", "059da98c572fa203"),
    ("scenarios/validation/cpu_quick.yaml", [],
     "48dd60fc9330b0a7", "95c031cdf5cbba27", "d32e43eab86493b1"),
    # added with the one-engine redesign (recorded on its commit, not on dc52e50)
    ("scenarios/disagg/eagle_tree_ep_h100_h200.yaml", ['workload.num_requests=80'],
     "639df487601ac204", "144b42f654fb9c47", "2811d56e4ab3739e"),
    # added with the trace-replay example (issue: reliability and everyday use)
    ("scenarios/traces/replay.yaml", [],
     "5190113d79116b9e", "2b05a322d54d7946", "171a385fb164a5bd"),
    # added with issue 17 (the seed systems: recorded on its branch)
    # prompts capped at 1536 tokens when main began enforcing vicuna-7b's 2048-token context
    ("scenarios/speculation/batch_realign.yaml", ['workload.num_requests=60'],
     "fa0a0dcc276b761f", "eb4e99771bf14527", "37ace1c66f30c0af"),
    ("scenarios/speculation/cascade_drafting.yaml", ['workload.num_requests=40'],
     "b4cfb06ca7a203e6", "1eb20ae12c5f13f6", "ec0ca509b87ad46b"),
    ("scenarios/speculation/clover_heads.yaml", ['workload.num_requests=40'],
     "d3979881d36ddd98", "775612a202cd26d1", "440d9d46cbf45d0b"),
    ("scenarios/speculation/context_dynamic_tree.yaml", ['workload.num_requests=60'],
     "0ed9a272ea6ffb0d", "e8f3bd6fa29eb481", "75ef8dfbf42eeb7e"),
    ("scenarios/speculation/falcon_semi_ar.yaml", ['workload.num_requests=40'],
     "ca1bd5059f133f84", "97081b9ac61c569a", "91d6d8aec7538cb7"),
    ("scenarios/speculation/hydra_heads.yaml", ['workload.num_requests=40'],
     "9e3e66b2916590ae", "1542c731000fc7a9", "11e6649d9106fca6"),
    ("scenarios/speculation/koala_heads.yaml", ['workload.num_requests=40'],
     "74eeed611682b958", "2ec9ad85ebce3054", "5cde79094b5059d0"),
    ("scenarios/speculation/magicdec_long_context.yaml", ['workload.num_requests=4', 'workload.arrival.concurrency=4'],
     "ffd3717581d1a8f6", "bba03a5f9b4b64e7", "e9d4f88f52a2910d"),
    ("scenarios/speculation/multidraft_optimal.yaml", ['workload.num_requests=60'],
     "24a7275015e54f38", "c008b0478de6d9a8", "3cadb41ab3dafd00"),
    ("scenarios/speculation/online_drift.yaml", ['workload.num_requests=200'],
     "eff8e2c56da8fed5", "a8de1ea9fc2605e0", "d27a1df7d045a107"),
    ("scenarios/speculation/specreason.yaml", ['workload.num_requests=6'],
     "4c0e953b1ac96102", "2ed45380e236d630", "f29c22b2e3606b39"),
    ("scenarios/speculation/triforce_hierarchy.yaml", ['workload.num_requests=2', 'workload.arrival.concurrency=2'],
     "a11e49e8557051b4", "6e3346a15327d8ab", "8e9c0edb62c6c7a9"),
    ("scenarios/speculation/easyspec_layer_parallel.yaml", ['workload.num_requests=40'],
     "ff9031977b260625", "82d33d9962b0e5c1", "23ae3997bb79b694"),
    ("scenarios/speculation/ouroboros_phrases.yaml", ['workload.num_requests=40'],
     "74a22676df5e9c18", "30886c3e8f2081d6", "3bf3cf3425cb3d17"),
    # added with issue 16 (trace formats, prefix caching); the summary hashes of this and every case added
    # with issues 15-17 re-recorded at the issue-18 merge: its bulks price only the steps they run, which
    # changes the latency_source shape-count diagnostic only (requests and steps byte-identical)
    ("scenarios/traces/mooncake_prefix_caching.yaml", [],
     "7d37d8ff41c7ebc3", "16487e30de74a231", "a0be855e981b479f"),
    ("scenarios/batching/nanoflow.yaml", ['workload.num_requests=64', 'workload.arrival.concurrency=64'],
     "2a210fb0967f70c3", "ac261b02c89bb6ba", "1c733b6b66d3d492"),
    ("scenarios/long_context/shadowkv.yaml", ['workload.num_requests=8', 'workload.arrival.concurrency=8',
                                              'workload.prompt_tokens.value=16384', 'workload.output_tokens.value=256'],
     "61fd2565fc5670a4", "0159f0c915320816", "d8a4102cdce909f9"),
    ("scenarios/batching/early_exit.yaml", ['workload.num_requests=60'],
     "7cac7a8ed8b49b47", "c6e672e0b6d547dd", "ccc41b8359f6e650"),
    ("scenarios/speculation/thompson_gamma.yaml", ['workload.num_requests=40'],
     "b643a1cee9269f93", "5ed4cd7ef9e2c96e", "0fb6423839d6fb79"),
    # added with issue 17's parallel sampling (workload.parallel_samples; one-sequence runs unchanged)
    ("scenarios/batching/parallel_sampling.yaml", ['workload.num_requests=60'],
     "d932ea03cf0e00b6", "44b9b0b11c83c325", "b5f1794aed5829c5"),
    ("scenarios/speculation/pearl.yaml", ['workload.num_requests=20'],
     "e306aadb5fd3c43f", "5e947979b2c2d33a", "1d140c19ab4d9526"),
    ("scenarios/speculation/ouroboros_reuse.yaml", ['workload.num_requests=40'],
     "57ea4720b71a7c63", "f7cd191e158348cc", "66f797340e9ddf42"),
    ("scenarios/speculation/rasd_retrieval.yaml", ['workload.num_requests=60'],
     "b6a320c9a158a520", "5caaf535d479b880", "2564c2b0da296300"),
    # added with issue 17's RaLMSpec in the DES (retrieval:; runs without it unchanged)
    ("scenarios/speculation/ralmspec.yaml", ['workload.num_requests=60'],
     "b44a59c4e988628b", "9dfea0356c28b4d7", "2569b57357715710"),
    # added with issue 19 (vLLM's engine profile, scheduler and draft proposer)
    ("scenarios/validation/vllm_cpu.yaml", [], "abc07ac258f259be", "c145daf558884a86", "e11749f94ba1c02d"),
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
    not_runs = {"scenarios/plans/llama8b_chat.yaml", "scenarios/sweeps/quickstart_qps_gamma.yaml",
                "scenarios/validation/published/points.yaml", "scenarios/hardware/h20.yaml"}
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "scenarios").rglob("*.yaml")} - not_runs
    assert shipped <= hashed, sorted(shipped - hashed)
