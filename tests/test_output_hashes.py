"""Output hashes of every shipped scenario and paper reproduction: a refactoring must keep
requests.parquet, steps.parquet and summary.json byte-identical (the `draftsim run` outputs). The hashes
were recorded on commit dc52e50, before the one-engine redesign (issue 13); a change of output on purpose
(a bug fix) updates them in the same commit and says why there. Sizes are cut with `--set` overrides so
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
     "88a9a1d4fa248cfb", "38b5b4b192c3789d", "20968e18b3d6810f"),
    ("scenarios/acceptance/qwen_coder_trace.yaml", ['workload.num_requests=150'],
     "400c352cb48f9e79", "fcabb6c7fd13f4a2", "c5876e7d82a99330"),
    ("scenarios/benchmarks/sim_speed.yaml", ['workload.num_requests=200'],
     "87556096b658d117", "0a977803ff6753d2", "453fc14bfb97c248"),
    ("scenarios/disagg/colocated.yaml", ['workload.num_requests=150'],
     "ea62cd8aaa08968f", "db63e8244de9d518", "0bd10cf14815127b"),
    ("scenarios/disagg/disaggregated.yaml", ['workload.num_requests=150'],
     "a648609ce84635c0", "dbed0e453d903fe6", "d3342a46a51f6aa0"),
    ("scenarios/moe/mixtral_tp8.yaml", ['workload.num_requests=60'],
     "7462f3af22dca47d", "8718c1ca485c7e09", "e6f54338c1f0375e"),
    ("scenarios/moe/mixtral_tp8_sd.yaml", ['workload.num_requests=60'],
     "afd8d7eb0738eafc", "7d645ff439cbac16", "b7f57f7e4cfda94e"),
    ("scenarios/moe/qwen3_moe_ep16.yaml", ['workload.num_requests=60'],
     "49eab9bed5d508fd", "fe487f54e33b4486", "9a925c2b4c83fff4"),
    ("scenarios/moe/qwen3_moe_ep8_sd_presched.yaml", ['workload.num_requests=60'],
     "0051c2bdc01086e3", "a36c27dc0a967b8d", "2a34c835b4c09b3d"),
    ("scenarios/moe/qwen3_moe_tp8x2.yaml", ['workload.num_requests=60'],
     "e888856ac4e6c43a", "baf557111ce38dba", "9b4bfda7422c6fa8"),
    ("scenarios/moe/qwen3_moe_tp8x2_sd.yaml", ['workload.num_requests=60'],
     "59fdd72a3b58baac", "a6f5ae7b116f5899", "729e7256d3cd2526"),
    ("scenarios/speculation/colocated_draft.yaml", ['workload.num_requests=60'],
     "f222d831f990a3e4", "031e9d2404940a3f", "aa5ea7596caf0181"),
    ("scenarios/speculation/cpu_draft.yaml", ['workload.num_requests=10'],
     "49ffc659a401b8f6", "7c51b8fc6745559b", "3b0d52c435455b47"),
    ("scenarios/speculation/eagle_dynamic_tree.yaml", ['workload.num_requests=40'],
     "c652ad941e9580d9", "3844b51294119a35", "22782a5ef6fdd02e"),
    ("scenarios/speculation/layer_skip.yaml", ['workload.num_requests=80'],
     "bced56fa6affa9e9", "82546730e3e6c9bd", "56bdc3d323ffad52"),
    ("scenarios/speculation/medusa_heads.yaml", ['workload.num_requests=40'],
     "a715fc8e1637ca33", "8776461a91ae34c8", "5406274e63040726"),
    ("scenarios/speculation/multidraft.yaml", ['workload.num_requests=60'],
     "58304005769abaf6", "2bff76539bc7d32c", "a799652e645b9414"),
    ("scenarios/speculation/ngram.yaml", ['workload.num_requests=80'],
     "1d9eb942b8df0c61", "0a3b4f553d579e47", "ad1b8981eeed4493"),
    ("scenarios/speculation/separate_draft.yaml", ['workload.num_requests=60'],
     "e4ccdfefacaeab38", "4aa58ef1fdc39daf", "3bbfd81b32c1f31f"),
    ("scenarios/speculation/sequoia_tree.yaml", ['workload.num_requests=30'],
     "8d956277dfb36063", "790922eaf54ae89b", "c9d035aed39d6587"),
    ("scenarios/speculation/smartspec_policy.yaml", ['workload.num_requests=60'],
     "422cf06f3b657c43", "9a817069af970b4d", "55cfed5b5594752f"),
    ("scenarios/validation/cpu.yaml", [],
     "462dd8d8ec063c6f", "08be09322e0b33dc", "059da98c572fa203"),
    ("scenarios/validation/cpu_quick.yaml", [],
     "48dd60fc9330b0a7", "95c031cdf5cbba27", "d32e43eab86493b1"),
    # added with the one-engine redesign (recorded on its commit, not on dc52e50)
    ("scenarios/disagg/eagle_tree_ep_h100_h200.yaml", ['workload.num_requests=80'],
     "399af50912870259", "47d4e99e126c3721", "76c44bf7d5e4a776"),
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
                "scenarios/validation/published/points.yaml"}
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "scenarios").rglob("*.yaml")} - not_runs
    assert shipped <= hashed, sorted(shipped - hashed)
