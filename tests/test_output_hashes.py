"""Output hashes of every shipped scenario and paper reproduction: a refactoring must keep
requests.parquet, steps.parquet and summary.json byte-identical (the `draftsim run` outputs). The hashes
were recorded on commit dc52e50, before the one-engine redesign (issue 13), and updated when it was merged
with the measured-pricing changes made meanwhile on main (separable row-curve interpolation of the measured
tables: last-digit float differences; fused-MoE kernel tables; the disaggregation pair at 16 req/s; Medusa
heads counted as one GPU layer by the engine-time model); a change of output on purpose (a bug fix) updates
them in the same commit and says why there. Sizes are cut with `--set` overrides so
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
     "e0d10e52e60617c4", "efeb2bddb3e33cdc", "e9076a61220dc7f9"),
    ("scenarios/acceptance/qwen_coder_trace.yaml", ['workload.num_requests=150'],
     "a5d1e4e15fbd78bf", "85d2bf8ce1f008cd", "36beb863d782c0f0"),
    ("scenarios/benchmarks/sim_speed.yaml", ['workload.num_requests=200'],
     "3cb6f2424d39c4f0", "6a09b96e78e16c26", "453fc14bfb97c248"),
    ("scenarios/disagg/colocated.yaml", ['workload.num_requests=150'],
     "399b089040fdb4bd", "15bd5498a280d23f", "2c81847127715349"),
    ("scenarios/disagg/disaggregated.yaml", ['workload.num_requests=150'],
     "b847c7a8bb18696c", "99a4b805f1ab9d6d", "65a3ee422ee17187"),
    ("scenarios/moe/mixtral_tp8.yaml", ['workload.num_requests=60'],
     "3575355e76700a55", "ccb8439c45e48ce3", "bd81b285f5a474be"),
    ("scenarios/moe/mixtral_tp8_sd.yaml", ['workload.num_requests=60'],
     "26662610aa9b2276", "889e7312c65f08da", "8a5b831c2dbb0027"),
    ("scenarios/moe/qwen3_moe_ep16.yaml", ['workload.num_requests=60'],
     "8d91b7f2b1e4d301", "069d2d297c35ffc7", "d81f49e2c2222427"),
    ("scenarios/moe/qwen3_moe_ep8_sd_presched.yaml", ['workload.num_requests=60'],
     "fb32f21620304538", "247763bfe4cf54a4", "fe35c446f6af9eff"),
    ("scenarios/moe/qwen3_moe_tp8x2.yaml", ['workload.num_requests=60'],
     "73d93ac1341eceaf", "4d63171b3c15dbb1", "c8e428310d1ae910"),
    ("scenarios/moe/qwen3_moe_tp8x2_sd.yaml", ['workload.num_requests=60'],
     "177a2eaf383653be", "8fbee8ea979cca90", "ad43d72ef2e68ea1"),
    ("scenarios/speculation/colocated_draft.yaml", ['workload.num_requests=60'],
     "e887fac3ca29c711", "3babf639f9eb4f1a", "17dec3fbaaecb86b"),
    ("scenarios/speculation/cpu_draft.yaml", ['workload.num_requests=10'],
     "91a6ab46665d96a4", "02262b819067b333", "d8ab0826d873deca"),
    ("scenarios/speculation/eagle_dynamic_tree.yaml", ['workload.num_requests=40'],
     "a5884d31e34d571a", "5eaf5ab02b5a3d5f", "22782a5ef6fdd02e"),
    ("scenarios/speculation/layer_skip.yaml", ['workload.num_requests=80'],
     "a9c4658b4e999510", "ca22b39bce28ad4f", "0aac9aec1f31d4d1"),
    ("scenarios/speculation/medusa_heads.yaml", ['workload.num_requests=40'],
     "6cc373d391b2af38", "2dfb08df2e1f137b", "5406274e63040726"),
    ("scenarios/speculation/multidraft.yaml", ['workload.num_requests=60'],
     "da7cae093e8a0cd4", "48e69080ae0bd5fa", "a8c4b6bb361c05e7"),
    ("scenarios/speculation/ngram.yaml", ['workload.num_requests=80'],
     "bf2d1e6b51a4fa60", "97cf169859e2a3c7", "e948b9b2207460d4"),
    ("scenarios/speculation/separate_draft.yaml", ['workload.num_requests=60'],
     "639471a6994d87e2", "7a92c86c11987d7b", "3be0ece4d57d6335"),
    ("scenarios/speculation/sequoia_tree.yaml", ['workload.num_requests=30'],
     "8d956277dfb36063", "44c6bb41db4ff144", "c9d035aed39d6587"),
    ("scenarios/speculation/smartspec_policy.yaml", ['workload.num_requests=60'],
     "1cb21b3905edc68b", "08d7b4eb688a7d3a", "b8ce28ab919c0f12"),
    ("scenarios/validation/cpu.yaml", [],
     "462dd8d8ec063c6f", "08be09322e0b33dc", "059da98c572fa203"),
    ("scenarios/validation/cpu_quick.yaml", [],
     "48dd60fc9330b0a7", "95c031cdf5cbba27", "d32e43eab86493b1"),
    # added with the one-engine redesign (recorded on its commit, not on dc52e50)
    ("scenarios/disagg/eagle_tree_ep_h100_h200.yaml", ['workload.num_requests=80'],
     "6607af589f649578", "178071006be9c132", "14f90c07b38b66e9"),
    # added with the trace-replay example (issue: reliability and everyday use)
    ("scenarios/traces/replay.yaml", [],
     "f2bf25d2409546d2", "6a8ba7a9bf814771", "fe55b177aca24b19"),
    # added with issue 17 (the seed systems: recorded on its branch)
    # prompts capped at 1536 tokens when main began enforcing vicuna-7b's 2048-token context
    ("scenarios/speculation/batch_realign.yaml", ['workload.num_requests=60'],
     "3715a4f622ea04da", "9b73ace7933587df", "55f464d56e93b459"),
    ("scenarios/speculation/cascade_drafting.yaml", ['workload.num_requests=40'],
     "a9474f2b2c971a87", "d2b8561ecb7028c3", "6216c30ea5975054"),
    ("scenarios/speculation/clover_heads.yaml", ['workload.num_requests=40'],
     "c704969392cfe927", "481a3d9669bd3498", "41f3453c3cce8995"),
    ("scenarios/speculation/context_dynamic_tree.yaml", ['workload.num_requests=60'],
     "8edd7ce0c7e2fc50", "c548ea4d3506a984", "2c94b5a9ce62ef8c"),
    ("scenarios/speculation/falcon_semi_ar.yaml", ['workload.num_requests=40'],
     "9610f432873d55cf", "17062d69d805bd65", "d536f827e9c9ccc0"),
    ("scenarios/speculation/hydra_heads.yaml", ['workload.num_requests=40'],
     "865eee2bfe47bf90", "36b3e659ec59ad30", "1cbf3963f39823d4"),
    ("scenarios/speculation/koala_heads.yaml", ['workload.num_requests=40'],
     "6e91b723733a5969", "6f645d9017dea4ab", "21cc5ba040ecfa33"),
    ("scenarios/speculation/magicdec_long_context.yaml", ['workload.num_requests=4', 'workload.arrival.concurrency=4'],
     "3b5dab9de8c395ff", "add23808ffbe81f5", "9f02d230dcdd01b8"),
    ("scenarios/speculation/multidraft_optimal.yaml", ['workload.num_requests=60'],
     "839aa9f9a5db1aae", "b535e5f0cb276231", "afea37a7d6a40fb1"),
    ("scenarios/speculation/online_drift.yaml", ['workload.num_requests=200'],
     "bf8980e18c969479", "d90e2ebce3f7960d", "aca5d061caa2986a"),
    ("scenarios/speculation/specreason.yaml", ['workload.num_requests=6'],
     "ec2ccfffae37787b", "d0a1b97e0818bcff", "3172da5d8ec88614"),
    ("scenarios/speculation/triforce_hierarchy.yaml", ['workload.num_requests=2', 'workload.arrival.concurrency=2'],
     "4c802ffbc6bbcdd6", "e72522f635d02622", "04254fd2a9adc197"),
    ("scenarios/speculation/easyspec_layer_parallel.yaml", ['workload.num_requests=40'],
     "041db05d79c83b77", "1465a5b26718c686", "d0ddb3ef5580ef2f"),
    ("scenarios/speculation/ouroboros_phrases.yaml", ['workload.num_requests=40'],
     "79900aa9c58089a0", "817ef0eec40d95b7", "283f8a2e3ef297c6"),
    # added with issue 16 (trace formats, prefix caching)
    ("scenarios/traces/mooncake_prefix_caching.yaml", [],
     "f20f12e4954d8d28", "8544b836b84906bc", "3e16609603da559a"),
    ("scenarios/batching/nanoflow.yaml", ['workload.num_requests=64', 'workload.arrival.concurrency=64'],
     "ca832cb0808dcb9a", "ee38310febd897a3", "f6ba1199f7447799"),
    ("scenarios/long_context/shadowkv.yaml", ['workload.num_requests=8', 'workload.arrival.concurrency=8',
                                              'workload.prompt_tokens.value=16384', 'workload.output_tokens.value=256'],
     "0a79cf7100e31859", "3f78f506e0b180a6", "1351042c2db5bc14"),
    ("scenarios/batching/early_exit.yaml", ['workload.num_requests=60'],
     "a862f982aec6c8a6", "b6efd10305cf373b", "106b98d1b200d5db"),
    ("scenarios/speculation/thompson_gamma.yaml", ['workload.num_requests=40'],
     "d55d2783d3261283", "f0e9845c0f465450", "56539e5c2573762b"),
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
